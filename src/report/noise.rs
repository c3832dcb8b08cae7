//! The closing text of each noise thread: its figures over the run as rtla
//! osnoise totals them, the gap percentiles as oslat would, the worst gaps,
//! and whether the gaps' causes were named (the trace's attribution says
//! them in its own closing text).

use crate::result::NoiseResult;

/// A duration in the unit that reads best (ns below 10 µs).
pub fn dur(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..10_000_000 => format!("{:.1} µs", ns as f64 / 1e3),
        10_000_000..1_000_000_000 => format!("{:.1} ms", ns as f64 / 1e6),
        _ => format!("{:.2} s", ns as f64 / 1e9),
    }
}

/// The counter as said: `TSC at 2596.8 MHz`.
pub fn counter(n: &NoiseResult) -> String {
    n.counter_said()
}

/// One noise thread's closing text; `steal_ms`: its CPU's steal over the
/// run (`/proc/stat`), on a VM.
pub fn text(n: &NoiseResult, steal_ms: Option<f64>) -> String {
    let s = &n.summary;
    let mut out = format!(
        "noise_thread[{}] CPU {} ({} {}, {}): runtime {}, noise {} ({:.3}% of the CPU available), {} gaps ≥ {}, largest {}\n",
        n.index,
        n.cpu,
        n.sched.policy.name(),
        n.sched.priority,
        counter(n),
        dur(s.runtime_ns),
        dur(s.noise_ns),
        s.available_percent,
        s.gaps,
        dur(n.threshold_ns),
        dur(s.max_single_ns),
    );
    let pct: Vec<String> = s
        .percentiles
        .iter()
        .map(|p| format!("{} {}", p.name, dur(p.value_ns)))
        .collect();
    out.push_str(&format!(
        "  every gap ({} reads, smallest {}, mean {:.1} ns): {}\n",
        s.reads,
        dur(s.min_gap_ns),
        s.mean_gap_ns,
        pct.join(", ")
    ));
    if !n.worst.is_empty() {
        let worst: Vec<String> = n.worst.iter().take(5).map(|g| dur(g.ns)).collect();
        out.push_str(&format!("  worst gaps: {}\n", worst.join(", ")));
    }
    if let Some(a) = &n.attribution {
        out.push_str(&crate::trace::noise::text::closing(a));
        if let Some(ms) = steal_ms.filter(|ms| *ms > 0.0) {
            out.push_str(&format!(
                "  beside the unseen {}: the hypervisor's steal on CPU {} over the whole run, {ms:.1} ms (time the host ran something else; /proc/stat counts it by ticks)\n",
                dur(a.unseen_ns),
                n.cpu
            ));
        }
    }
    if let Some(why) = &n.attribution_unavailable {
        out.push_str(&format!(
            "  causes not named ({}): these are oslat's figures alone\n",
            crate::text::one_line(why)
        ));
    }
    if let Some(e) = &n.error {
        out.push_str(&format!("  error: {}\n", crate::text::one_line(e)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_their_unit() {
        assert_eq!(dur(25), "25 ns");
        assert_eq!(dur(5_000), "5.0 µs");
        assert_eq!(dur(20_415), "20.4 µs");
        assert_eq!(dur(329_875_198), "329.9 ms");
        assert_eq!(dur(3_000_818_526), "3.00 s");
    }
}

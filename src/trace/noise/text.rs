//! The closing text of the attribution: one line per noise thread, its
//! classes with their main culprits, the time no event covers, and what
//! makes the figures lower bounds.

use super::{Culprit, NoiseAttribution, NoiseClass};

/// Culprits named per class.
const NAMED: usize = 3;

/// `1.2 ms`, `850 ns`.
pub fn duration(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..1_000_000 => format!("{:.1} µs", ns as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} ms", ns as f64 / 1e6),
        _ => format!("{:.2} s", ns as f64 / 1e9),
    }
}

/// `kworker/1:1 pid 33 12`, `local_timer 500`, `sh (4 pids) 9`.
fn culprit(c: &Culprit) -> String {
    let name = crate::text::one_line(&c.name);
    match (c.pids, c.pid) {
        (n, _) if n > 1 => format!("{name} ({n} pids) {}", c.gaps),
        (_, Some(pid)) => format!("{name} pid {pid} {}", c.gaps),
        _ => format!("{name} {}", c.gaps),
    }
}

/// The closing text of one thread's attribution.
pub fn closing(a: &NoiseAttribution) -> String {
    let mut out = format!(
        "noise_thread[{}] on CPU {}: {} gaps ≥ {}, {} in all",
        a.noise,
        a.cpu,
        a.gaps,
        duration(a.threshold_ns),
        duration(a.noise_ns)
    );
    if a.gaps == 0 {
        out.push('\n');
        return out;
    }
    out.push(':');
    let mut classes: Vec<NoiseClass> = NoiseClass::ALL
        .into_iter()
        .filter(|&c| a.classes.get(c).gaps > 0)
        .collect();
    classes.sort_by_key(|&c| std::cmp::Reverse(a.classes.get(c).gaps));
    let parts: Vec<String> = classes
        .iter()
        .map(|&c| {
            let mut rows: Vec<&Culprit> = a
                .culprits
                .iter()
                .filter(|r| r.class == c && r.gaps > 0)
                .collect();
            // By time, as the result lists them: the culprit of the worst
            // gaps first, not the most frequent.
            rows.sort_by_key(|r| std::cmp::Reverse(r.net_ns));
            let named: Vec<String> = rows.into_iter().take(NAMED).map(culprit).collect();
            let gaps = a.classes.get(c).gaps;
            match named.is_empty() {
                true => format!("{} {gaps}", c.name()),
                false => format!("{} {gaps} ({})", c.name(), named.join(", ")),
            }
        })
        .collect();
    out.push_str(&format!(
        " {}; unseen {}\n",
        parts.join(", "),
        duration(a.unseen_ns)
    ));
    if a.classes.throttled.gaps > 0 {
        out.push_str(&format!(
            "  throttled: {} of lower-priority threads ran while the real-time poller was runnable: RT throttling or the fair server held it off (not the OS's noise: move normal threads off the poller's CPU, e.g. a partition)\n",
            duration(a.classes.throttled.net_ns)
        ));
    }
    let mut caveats = Vec::new();
    if a.gaps_dropped > 0 {
        caveats.push(format!(
            "{} gaps not handed over (ring full)",
            a.gaps_dropped
        ));
    }
    if a.lost_events > 0 {
        caveats.push(format!("the kernel lost {} events", a.lost_events));
    }
    if a.gaps_late > 0 {
        caveats.push(format!(
            "{} gaps began before the timeline kept",
            a.gaps_late
        ));
    }
    if !caveats.is_empty() {
        out.push_str(&format!(
            "  (causes are lower bounds: {})\n",
            caveats.join("; ")
        ));
    }
    out
}

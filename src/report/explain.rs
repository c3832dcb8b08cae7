//! The flight recorder's findings as text: the run's culprits after the
//! closing lines, and every explained wake-up for `rtlab explain`.

use crate::trace::explain::TraceReport;
use crate::trace::explain::analyze::Explanation;

fn us(ns: u64) -> String {
    format!("{:.1} µs", ns as f64 / 1000.0)
}

/// The verdict of a run whose output directory is `outdir`: the trace
/// windows named by their path from where rtlab was run (as the result
/// files are), not from the output directory as the result keeps them.
pub fn verdict_in(r: &TraceReport, outdir: &std::path::Path) -> String {
    if outdir.as_os_str().is_empty() || outdir == std::path::Path::new(".") {
        return verdict(r);
    }
    let mut r = r.clone();
    let join = |f: &mut Option<String>| {
        if let Some(name) = f.as_mut() {
            *name = outdir.join(&*name).display().to_string();
        }
    };
    for e in &mut r.explanations {
        join(&mut e.trace_file);
        join(&mut e.trace_text);
    }
    verdict(&r)
}

/// What the flight recorder's reads cost the main thread, in words.
pub fn reads_cost(r: &TraceReport) -> String {
    let ms = |ns: u64| format!("{:.1} ms", ns as f64 / 1e6);
    match r.analysis_ns {
        0 => format!(
            "{} reads of the trace buffer, {} of the main thread's CPU in all",
            r.reads,
            ms(r.read_ns)
        ),
        all => {
            let mut text = format!(
                "{} reads of the trace buffer: {} of the main thread's CPU for the reads, {} with \
                 their analyses (the reads are spaced to hold that to about 5 % of a CPU during \
                 the run; the last, at its end, is not)",
                r.reads,
                ms(r.read_ns),
                ms(all)
            );
            if r.windows_ns > 0 {
                text.push_str(&format!(
                    "; writing the windows at the end, {}",
                    ms(r.windows_ns)
                ));
            }
            if r.symbols_ns > 0 {
                text.push_str(&format!(
                    "; reading the kernel's symbols once, {}",
                    ms(r.symbols_ns)
                ));
            }
            if let Some(each) = all
                .saturating_add(r.windows_ns)
                .checked_div(r.explanations.len() as u64)
            {
                text.push_str(&format!(
                    "; {:.0} µs per explained wake-up in all",
                    each as f64 / 1000.0
                ));
            }
            text
        }
    }
}

/// The verdict: how many wake-ups crossed the threshold, the culprits,
/// and the worst explained wake-up.
pub fn verdict(r: &TraceReport) -> String {
    let mut out = format!("\nWhy late (wake-ups of {} or more):\n", us(r.threshold_ns));
    if let Some(why) = &r.unavailable {
        out.push_str(&format!(
            "  no flight recorder: {why}\n  {} at or above, none explained\n",
            r.over_threshold
        ));
        worst_unexplained(&mut out, r, false);
        return out;
    }
    out.push_str(&format!(
        "  {} at or above, {} explained, {} not (overwritten before a read, more than {} of a timer thread in one read, or trace.max_spikes)\n",
        r.over_threshold,
        r.explanations.len(),
        r.not_explained,
        crate::trace::flight::MAX_PER_READ
    ));
    worst_unexplained(&mut out, r, true);
    if r.reads > 0 {
        out.push_str(&format!("  {}\n", reads_cost(r)));
    }
    if !r.events_missing.is_empty() {
        out.push_str(&format!(
            "  not seen (this kernel lacks them): {}\n",
            r.events_missing.join(", ")
        ));
    }
    if !r.culprits.is_empty() {
        out.push_str("  culprits, most costly first:\n");
    }
    for c in r.culprits.iter().take(8) {
        let who = match c.prio {
            Some(prio) => format!(
                "{}, {}",
                c.who(),
                crate::trace::explain::analyze::prio_words(prio)
            ),
            None => c.who(),
        };
        out.push_str(&format!(
            "    {who:<40} main cause of {:>4}, in {:>4}, total {:>10}, max {:>10}\n",
            c.main_cause,
            c.spikes,
            us(c.total_ns),
            us(c.max_ns)
        ));
    }
    if let Some(worst) = r.explanations.iter().max_by_key(|e| e.latency_ns) {
        out.push_str("  worst explained:\n");
        out.push_str(&explanation(worst, "    "));
    }
    for n in &r.notes {
        out.push_str(&format!("  note: {n}\n"));
    }
    out
}

/// The worst wake-ups not explained, by name (`why`: with the reason).
fn worst_unexplained(out: &mut String, r: &TraceReport, why: bool) {
    if !r.worst_unexplained.is_empty() {
        out.push_str("  worst not explained:\n");
    }
    for u in r.worst_unexplained.iter().take(5) {
        out.push_str(&format!(
            "    T{} sample {}: {} late{}\n",
            u.timer,
            u.sample,
            us(u.latency_ns),
            if why {
                format!(": {}", u.why)
            } else {
                String::new()
            }
        ));
    }
}

/// One explained wake-up: its cause, its parts, its trace window.
pub fn explanation(e: &Explanation, indent: &str) -> String {
    let mut out = format!(
        "{indent}T{} sample {} on CPU {}: {} late; {}\n",
        e.timer,
        e.sample,
        e.cpu,
        us(e.latency_ns),
        e.cause
    );
    let parts: Vec<String> = e
        .parts
        .iter()
        .map(|p| match p.pid {
            Some(pid) => format!("{} (pid {pid}) {}", p.what, us(p.ns)),
            None => format!("{} {}", p.what, us(p.ns)),
        })
        .collect();
    out.push_str(&format!("{indent}  parts: {}\n", parts.join(", ")));
    match (e.woken_after_ns, e.wake_to_switch_ns) {
        (Some(w), Some(s)) => out.push_str(&format!(
            "{indent}  woken {} after the deadline, switched in {} after that\n",
            us(w),
            us(s)
        )),
        (Some(w), None) => out.push_str(&format!(
            "{indent}  woken {} after the deadline (its switch-in is not in the trace)\n",
            us(w)
        )),
        _ => {}
    }
    for k in &e.stacks {
        out.push_str(&stack_line(k, indent));
    }
    if !e.cpus_at_deadline.is_empty() {
        let cpus: Vec<String> = e.cpus_at_deadline.iter().map(cpu_task).collect();
        out.push_str(&format!(
            "{indent}  every CPU at the deadline: {}\n",
            cpus.join("; ")
        ));
    }
    if let Some(f) = &e.trace_file {
        let text = e
            .trace_text
            .as_ref()
            .map(|t| format!(" (as kernel text: {t})"))
            .unwrap_or_default();
        out.push_str(&format!("{indent}  trace window: {f}{text}\n"));
    }
    out
}

/// What a CPU ran at a deadline, in words.
fn cpu_task(c: &crate::trace::explain::analyze::CpuTask) -> String {
    let mut s = format!(
        "CPU {} {} (pid {}",
        c.cpu,
        crate::text::one_line(&c.comm),
        c.pid
    );
    if let Some(p) = c.prio.filter(|_| c.pid != 0) {
        s.push_str(&format!(
            ", {}",
            crate::trace::explain::analyze::prio_words(p)
        ));
    }
    if let Some(r) = c.running_for_ns {
        s.push_str(&format!(", for {}", us(r)));
    }
    s.push(')');
    s
}

/// A kernel stack of an explanation, on one line (terminal-safe).
pub fn stack_line(k: &crate::trace::explain::analyze::KernelStack, indent: &str) -> String {
    let moment = match k.at.as_str() {
        "switch" => "as it let the CPU go",
        _ => "at the timer thread's wake-up",
    };
    let frames: Vec<String> = k
        .frames
        .iter()
        .map(|f| crate::text::one_line(f).into_owned())
        .collect();
    format!(
        "{indent}  kernel stack of {} (pid {}) {moment}, {} after the deadline: {}\n",
        crate::text::one_line(&k.comm),
        k.pid,
        us(k.after_deadline_ns),
        frames.join(" <- ")
    )
}

/// Every explained wake-up, in time order, after the verdict.
pub fn all(r: &TraceReport) -> String {
    let mut out = verdict(r);
    if !r.explanations.is_empty() {
        out.push_str("\nEvery explained wake-up:\n");
    }
    for e in &r.explanations {
        out.push_str(&explanation(e, "  "));
    }
    out
}

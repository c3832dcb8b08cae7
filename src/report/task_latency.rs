//! A task-latency measurement as text: per thread, the wake-ups, the
//! latency from release to switch-in (the timer thread's figure), its
//! parts (timer slack, timer lateness past it, wake-to-run), the cycles' run time and period,
//! deadline misses, who woke it, and the late wake-ups explained.

use crate::stats::Summary;
use crate::trace::task_latency::kernel::BpfThread;
use crate::trace::task_latency::{TaskLatencyResult, TaskThreadResult};

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

/// `min / p50 / p99 / max µs`, or `-` without samples.
fn figures(s: &Summary) -> String {
    if s.samples == 0 {
        return "-".into();
    }
    let p = |name: &str| {
        s.percentiles
            .iter()
            .find(|p| p.name == name)
            .map_or("?".into(), |p| us(p.value_ns))
    };
    format!(
        "{} / {} / {} / {}",
        us(s.min_ns),
        p("p50"),
        p("p99"),
        us(s.max_ns)
    )
}

/// The measurement as the end of a run and `rtlab explain` show it.
pub fn text(m: &TaskLatencyResult) -> String {
    let mut out = format!("\nTask latency L{}: {}\n", m.spec.index, m.spec.task);
    if m.threads.is_empty() {
        out.push_str("  no wake-up of the task was seen\n");
    }
    for t in &m.threads {
        thread(&mut out, m, t);
    }
    if m.lost_events > 0 {
        out.push_str(&format!(
            "  note: the kernel lost {} events (buffer full): the counts are lower bounds\n",
            m.lost_events
        ));
    }
    for n in &m.notes {
        out.push_str(&format!("  note: {n}\n"));
    }
    out.push_str(&bpf_text(m));
    out
}

/// A thread's wake-up to run as the kernel counted it: p50 and p99 are
/// the starts of their buckets (1 µs wide below 100 µs), max exact.
fn bpf_row(k: &BpfThread) -> String {
    format!(
        "    {:<26} - / {} / {} / {}   ({} wake-up{} counted in the kernel)\n",
        "wake-up to run (BPF)",
        us(k.p50_ns),
        us(k.p99_ns),
        us(k.max_ns),
        k.wake_ups,
        if k.wake_ups == 1 { "" } else { "s" }
    )
}

/// Whether the kernel counted the task too: why not, and the threads it
/// counted that the trace saw no wake-up of.
fn bpf_text(m: &TaskLatencyResult) -> String {
    let Some(b) = &m.bpf else {
        return String::new();
    };
    if let Some(why) = &b.refused {
        return format!(
            "  note: not counted in the kernel (BPF): {}; these figures are the trace's alone\n",
            crate::text::one_line(why)
        );
    }
    let mut out = String::new();
    for k in b
        .threads
        .iter()
        .filter(|k| !m.threads.iter().any(|t| t.tid == k.tid))
    {
        out.push_str(&format!(
            "  L{}.{} {} (TID {}): no wake-up in the trace\n",
            m.spec.index,
            k.tid,
            crate::text::one_line(&k.comm),
            k.tid
        ));
        out.push_str(&bpf_row(k));
    }
    if b.lost > 0 {
        out.push_str(&format!(
            "  note: the kernel could not count {} wake-ups (a BPF map full)\n",
            b.lost
        ));
    }
    out
}

/// The trace's row the kernel's count (BPF) is shown under.
const WAKE_TO_RUN: &str = "wake-up to run";

fn thread(out: &mut String, m: &TaskLatencyResult, t: &TaskThreadResult) {
    out.push_str(&format!(
        "  L{}.{} {} (TID {}): {} wake-ups, {} by its own timers\n",
        m.spec.index, t.tid, t.comm, t.tid, t.wake_ups, t.timer_wake_ups
    ));
    let counted = m
        .bpf
        .as_ref()
        .and_then(|b| b.threads.iter().find(|k| k.tid == t.tid));
    if t.switch_ins_inferred > 0 {
        out.push_str(&format!(
            "    note: {} switch-ins were not logged by this kernel (out of idle) and were taken at \
             the thread's next event (its syscall's exit): those latencies are high by the time to \
             it (a few µs, or a preemption before it)\n",
            t.switch_ins_inferred
        ));
    }
    out.push_str("    µs (min / p50 / p99 / max)\n");
    let mut rows = vec![("latency (release to run)", &t.latency)];
    if let Some(slack) = &t.timer_slack {
        rows.push(("timer slack (asked)", slack));
    }
    rows.extend([
        ("timer interrupt late", &t.timer_late),
        (WAKE_TO_RUN, &t.wake_to_run),
        ("run time per cycle", &t.run_time),
        ("period seen", &t.period),
    ]);
    for (what, s) in rows {
        out.push_str(&format!("    {what:<26} {}\n", figures(s)));
        if what == WAKE_TO_RUN
            && let Some(k) = counted
        {
            out.push_str(&bpf_row(k));
        }
    }
    if !t.runs_the_cycle && m.spec.period_ns.is_some() {
        out.push_str(&format!(
            "    the stated period applies to {}, not to this thread\n",
            m.spec.thread.as_ref().map_or(
                "the threads that cycle near it (median period seen within half a period)"
                    .to_string(),
                |named| format!("thread {named}")
            )
        ));
    }
    if let Some(j) = &t.jitter {
        out.push_str(&format!(
            "    {:<26} {}\n",
            "jitter (|period - stated|)",
            figures(j)
        ));
    }
    if let Some(slack) = t.timer_slack.as_ref().filter(|s| s.max_ns > 0) {
        out.push_str(&slack_note(slack));
    }
    if let Some(misses) = t.deadline_misses {
        out.push_str(&format!("    deadline misses: {misses}\n"));
    }
    if !t.wakers.is_empty() {
        let w: Vec<String> = t
            .wakers
            .iter()
            .take(5)
            .map(|(who, n)| format!("{who} ({n})"))
            .collect();
        out.push_str(&format!("    woken otherwise by: {}\n", w.join(", ")));
    }
    explained(out, t);
}

/// The worst late wake-ups explained: who held the CPU, the parts.
fn explained(out: &mut String, t: &TaskThreadResult) {
    for e in t.explained.iter().take(5) {
        let parts: Vec<String> = e
            .parts
            .iter()
            .map(|(what, ns)| format!("{what} {}", us(*ns)))
            .collect();
        out.push_str(&format!(
            "    late wake-up {} µs on CPU {}{}: {}\n",
            us(e.wake_up.latency_ns),
            e.wake_up.cpu,
            e.blame
                .as_ref()
                .map_or(String::new(), |b| format!(", CPU held by {b}")),
            parts.join(" + ")
        ));
    }
}

/// What the timer slack is and how to remove it: the kernel fires a
/// SCHED_OTHER thread's timers up to its slack late on purpose (to batch
/// wake-ups), which no interrupt tuning changes.
fn slack_note(slack: &Summary) -> String {
    let most = if slack.min_ns == slack.max_ns {
        format!("{} µs", us(slack.max_ns))
    } else {
        format!("{} to {} µs", us(slack.min_ns), us(slack.max_ns))
    };
    format!(
        "    note: its timers were armed with {most} of timer slack (expires - softexpires): \
         the kernel may wake it that late on purpose; the slack is the thread's own setting, \
         not interrupt latency: set it with prctl(PR_SET_TIMERSLACK, 1) or \
         /proc/PID/timerslack_ns, or give the thread a real-time policy (0 slack)\n"
    )
}

//! What the walk's segments become once it is done: the stretch before
//! any event after the deadline (unseen), the NMIs and stack walks carved
//! out, and a lower-priority thread's way out of the interrupt given to
//! the timer thread's own path.

use super::{PartKind, Segment};
use crate::trace::event::Event;

/// The stretch of a lower-priority thread from the last handler's exit to
/// its switch to the woken timer thread is the kernel's way out of the
/// interrupt and into the switch, not the thread's doing: it is the timer
/// thread's own path when it is no longer than twice the timer thread's
/// own path from its switch-in to its clock read (the same kind of kernel
/// work on the same machine, the stack walks left out). Longer, the thread
/// kept the CPU in a non-preemptible section, and stays named.
pub(super) fn switch_path(
    segs: &mut [Segment],
    events: &[Event],
    tid: i32,
    woken: u64,
    switched: u64,
) {
    let Some(switch) = events.iter().find(|e| {
        e.ts_ns == switched && e.name == "sched_switch" && e.num("next_pid") == Some(i64::from(tid))
    }) else {
        return;
    };
    let lower = switch
        .num("prev_prio")
        .zip(switch.num("next_prio"))
        .is_some_and(|(prev, next)| prev > next);
    // Its own time after the switch-in: not the stack walks in it.
    let own_path: u64 = segs
        .iter()
        .filter(|s| s.from_ns >= switched && s.kind == PartKind::TimerThread)
        .map(|s| s.to_ns - s.from_ns)
        .sum();
    let prev = switch.num("prev_pid").map(|p| p as i32);
    if let Some(s) = segs.iter_mut().rev().find(|s| s.to_ns == switched)
        && lower
        && s.kind == PartKind::Thread
        && s.pid == prev
        && s.from_ns >= woken
        && s.to_ns - s.from_ns <= own_path.saturating_mul(2)
    {
        s.kind = PartKind::TimerThread;
        s.what = "interrupt exit and switch to it".into();
        s.pid = None;
        s.inferred = false;
    }
}

/// After the wake-up, a stretch of a thread below the timer thread with no
/// event of its own in it (returned from an interrupt, it logged nothing
/// until it let the CPU go, or until the next interrupt) cannot tell a
/// non-preemptible section of it from the kernel's way back from the
/// interrupt or a hypervisor that did not run the CPU: it is unseen, the
/// thread named, never blamed. Unless its kernel stack as it let the CPU
/// go to the timer thread (`trace.stacks`) shows a kernel preemption point
/// (`__cond_resched`, `preempt_schedule`): then it was in the kernel
/// without one until there, and stays named.
pub(super) fn unseen_after_wake(
    segs: &mut [Segment],
    events: &[Event],
    tid: i32,
    woken: u64,
    lower: &dyn Fn(i32) -> bool,
) {
    let yielded = |pid: i32, at: u64| preempted_in_kernel(events, tid, pid, at);
    for s in segs.iter_mut() {
        let Some(pid) = s
            .pid
            .filter(|_| s.kind == PartKind::Thread && s.from_ns >= woken)
        else {
            continue;
        };
        // Its own kernel work logged (a work item's end, a wake-up it
        // made), not an interrupt's entry nor its switch away.
        let logged = events.iter().any(|e| {
            e.pid == pid
                && e.ts_ns > s.from_ns
                && e.ts_ns <= s.to_ns
                && e.name != "sched_switch"
                && e.name != "kernel_stack"
                && super::opens(e).is_none()
        });
        if !lower(pid) || logged || yielded(pid, s.to_ns) {
            continue;
        }
        s.kind = PartKind::Unseen;
        s.what = format!(
            "unseen after the wake-up: the kernel's way back from an interrupt, a hypervisor, \
             or a non-preemptible section ({} held the CPU)",
            s.what
        );
        s.inferred = false;
    }
}

/// Whether `pid`'s kernel stack as it let the CPU go to `tid` at `at`
/// shows a kernel preemption point.
fn preempted_in_kernel(events: &[Event], tid: i32, pid: i32, at: u64) -> bool {
    events.windows(2).any(|w| {
        w[0].ts_ns == at
            && w[0].pid == pid
            && w[0].name == "sched_switch"
            && w[0].num("next_pid") == Some(i64::from(tid))
            && w[1].name == "kernel_stack"
            && w[1].pid == pid
            && crate::trace::text::stack_frames(&w[1]).iter().any(|f| {
                matches!(
                    f.as_str(),
                    "__cond_resched"
                        | "_cond_resched"
                        | "preempt_schedule"
                        | "preempt_schedule_common"
                )
            })
    })
}

/// From the deadline to the first event after it, nothing shows the CPU
/// at work: when a task held it then and the timer interrupt was late, that
/// stretch is unseen (the task is named, never blamed). Once any event is
/// logged (another interrupt, a switch, a softirq), the CPU is seen running.
pub(super) fn unseen(mut segs: Vec<Segment>, events: &[Event], deadline_ns: u64) -> Vec<Segment> {
    // An NMI or a stack walk, carved out next, says nothing of the rest.
    let seen_at = events
        .iter()
        .filter(|e| e.ts_ns > deadline_ns)
        .find(|e| e.name != "nmi_handler" && e.name != "kernel_stack")
        .map_or(u64::MAX, |e| e.ts_ns);
    // A task's (not a softirq's, which is seen running around it).
    for s in segs
        .iter_mut()
        .filter(|s| s.kind == PartKind::TimerLate && s.pid.is_some() && s.to_ns <= seen_at)
    {
        let busy = s
            .what
            .strip_prefix("timer interrupt late (")
            .and_then(|w| w.strip_suffix(')'))
            .unwrap_or("CPU busy");
        s.kind = PartKind::Unseen;
        s.what = format!(
            "unseen: interrupt delivery, a hypervisor, SMI or NMI without a tracepoint, or \
             interrupts off ({busy})"
        );
    }
    segs
}

/// A stretch carved out of the segments: (from, to, kind, what).
pub(super) type Carved = (u64, u64, PartKind, String);

/// The kernel stacks walked in `[from, to]`: from the event that triggered
/// each to the stack's record.
pub(super) fn stack_walks(events: &[Event], from: u64, to: u64) -> Vec<Carved> {
    events
        .windows(2)
        .filter(|p| p[1].name == "kernel_stack" && p[0].pid == p[1].pid && p[0].cpu == p[1].cpu)
        .filter_map(|p| {
            let (start, end) = (p[0].ts_ns.max(from), p[1].ts_ns.min(to));
            (end > start).then(|| {
                let what = "kernel stack walk (trace.stacks)".to_string();
                (start, end, PartKind::Tracing, what)
            })
        })
        .collect()
}

/// The NMI handlers' runs in `[from, to]`: `nmi_handler` is logged as a
/// handler returns, with how long it ran (`delta_ns`).
pub(super) fn nmis(events: &[Event], from: u64, to: u64) -> Vec<Carved> {
    events
        .iter()
        .filter_map(|e| {
            let (handler, delta) = e.nmi_run()?;
            let start = e.ts_ns.saturating_sub(delta);
            let (start, end) = (start.max(from), e.ts_ns.min(to));
            (end > start).then(|| (start, end, PartKind::Nmi, format!("NMI {handler}")))
        })
        .collect()
}

/// Gives each carved stretch (an NMI's run, a stack walk) to its owner,
/// out of the segments it lands in (the other events were logged around
/// it, never inside).
pub(super) fn carve(segs: Vec<Segment>, carved: &[Carved]) -> Vec<Segment> {
    if carved.is_empty() {
        return segs;
    }
    let mut out = Vec::with_capacity(segs.len() + 2 * carved.len());
    for s in segs {
        let mut at = s.from_ns;
        for (from, to, kind, what) in carved.iter().filter(|n| n.0 < s.to_ns && n.1 > s.from_ns) {
            let (from, to) = ((*from).max(at), (*to).min(s.to_ns));
            if from > at {
                out.push(Segment {
                    from_ns: at,
                    to_ns: from,
                    ..s.clone()
                });
            }
            if to > from {
                out.push(Segment {
                    from_ns: from,
                    to_ns: to,
                    kind: *kind,
                    what: what.clone(),
                    pid: None,
                    inferred: false,
                });
            }
            at = at.max(to);
        }
        if s.to_ns > at {
            out.push(Segment { from_ns: at, ..s });
        }
    }
    out
}

/// The timer thread's own timer slack: whatever owned the CPU from the
/// deadline to `deadline + slack` before the wake-up, the timer could not
/// fire there (the kernel may fire it anywhere up to its slack). That
/// stretch is the slack, one segment; what follows keeps its owner.
pub(super) fn slack_first(
    segs: Vec<Segment>,
    deadline_ns: u64,
    slack_ns: u64,
    woken: Option<u64>,
) -> Vec<Segment> {
    let slack_end = deadline_ns
        .saturating_add(slack_ns)
        .min(woken.unwrap_or(u64::MAX));
    if slack_ns == 0 || segs.first().is_none_or(|s| s.from_ns >= slack_end) {
        return segs;
    }
    let mut out = vec![Segment {
        from_ns: deadline_ns,
        to_ns: deadline_ns,
        kind: PartKind::TimerSlack,
        what: format!(
            "timer slack (the timer thread's own, {:.1} µs)",
            slack_ns as f64 / 1000.0
        ),
        pid: None,
        inferred: false,
    }];
    for mut s in segs {
        if s.from_ns < slack_end {
            out[0].to_ns = out[0].to_ns.max(s.to_ns.min(slack_end));
            s.from_ns = slack_end;
        }
        if s.to_ns > s.from_ns {
            out.push(s);
        }
    }
    out
}

//! The main cause of a late wake-up, in a sentence.

use super::{Part, PartKind, prio_words};

/// The main cause: the largest part that is not the timer thread itself.
pub(super) fn cause(parts: &[Part], own_prio: Option<i32>, latency_ns: u64) -> String {
    let Some(p) = parts.iter().find(|p| !p.kind.is_own()).or(parts.first()) else {
        return "no part".into();
    };
    let us = |ns: u64| format!("{:.1} µs", ns as f64 / 1000.0);
    let share = format!("{} of {}", us(p.ns), us(latency_ns));
    let mut sentence = main_cause(p, own_prio, latency_ns, &share);
    let walks: u64 = parts
        .iter()
        .filter(|p| p.kind == PartKind::Tracing)
        .map(|p| p.ns)
        .sum();
    // A walk takes microseconds; the time between an event and its stack
    // record also holds whatever stalled the CPU then (a hypervisor).
    let in_walks = format!(
        "rtlab's kernel stack walks (`trace.stacks`), or a stall of the CPU during them, \
         took {}",
        us(walks)
    );
    if walks > p.ns {
        sentence = format!("{in_walks} of {}; besides, {sentence}", us(latency_ns));
    } else if walks > 0 {
        sentence.push_str(&format!(" ({in_walks} of it)"));
    }
    if p.inferred_ns == 0 {
        return sentence;
    }
    format!(
        "{sentence} ({} of it inferred: the kernel did not log the switch to it, taken from its own events)",
        us(p.inferred_ns)
    )
}

fn main_cause(p: &Part, own_prio: Option<i32>, latency_ns: u64, share: &str) -> String {
    let us = |ns: u64| format!("{:.1} µs", ns as f64 / 1000.0);
    match p.kind {
        PartKind::Thread => thread_cause(p, own_prio, share),
        PartKind::TimerLate => format!(
            "the {} ({share}): interrupts off there, or the hypervisor did not run this CPU; \
             no priority keeps a timer interrupt out",
            p.what
                .replacen("timer interrupt late", "timer interrupt came late", 1)
        ),
        PartKind::TimerSlack => format!(
            "the timer thread's own timer slack ({share}): the kernel may fire a \
             normal-policy (OTHER, BATCH, IDLE) thread's timer up to its slack past the deadline \
             (/proc/TID/timerslack_ns, 50 µs by default); not an interrupt's lateness: \
             set the slack with prctl(PR_SET_TIMERSLACK, 1), or give the timer thread \
             a real-time policy (which has none)"
        ),
        PartKind::TimerLateIdle => format!(
            "the timer interrupt came {} late ({} in all) while the CPU was idle: no event on this CPU explains it (idle exit, or the hypervisor did not run this CPU)",
            us(p.ns),
            us(latency_ns)
        ),
        PartKind::Irq => format!("interrupt handler {} ran {share}", p.what),
        PartKind::Softirq => format!("{} ran {share}", p.what),
        PartKind::TimerThread => {
            format!("the timer thread's own wake-up path took {share} (no other context ran)")
        }
        PartKind::Idle => format!("the CPU idled {share} after the wake-up"),
        PartKind::HeldOff if own_prio.is_some_and(|p| p < 0) => format!(
            "the timer thread was runnable, yet the kernel ran other work or idled for {share}: \
             its SCHED_DEADLINE runtime was spent, throttled until its next period"
        ),
        PartKind::HeldOff => format!(
            "the timer thread was runnable, yet the kernel ran lower-priority work or idled for \
             {share}: RT throttling held the real-time threads off (they had used \
             kernel.sched_rt_runtime_us of the period), or the fair server ran starved normal \
             tasks"
        ),
        PartKind::Nmi => format!(
            "non-maskable interrupt handler {} ran {share}: hardware noise no priority keeps out",
            p.what.trim_start_matches("NMI ")
        ),
        PartKind::Tracing => format!("{} took {share}: rtlab's own cost", p.what),
        PartKind::Unseen if !p.before_wake => format!(
            "{share} unseen after the wake-up: {} held the CPU, below the timer thread, and \
             logged nothing until it let it go: the kernel's way back from an interrupt, a \
             hypervisor that did not run this CPU, or a non-preemptible section of it \
             (`trace.stacks` shows where it let the CPU go)",
            p.what
                .rsplit_once('(')
                .map_or("a thread", |(_, w)| w.trim_end_matches(" held the CPU)"))
        ),
        PartKind::Unseen => format!(
            "{share} unseen: no event was logged while the timer interrupt was late on a busy CPU \
             (a hypervisor that did not run it, an SMI, an NMI without a tracepoint, or \
             interrupts off in code that logs nothing); {}",
            p.what
                .rsplit_once('(')
                .map_or("", |(_, w)| w.trim_end_matches(')'))
        ),
        PartKind::Unknown => {
            format!("{share} before the first event of the window: the trace does not say")
        }
    }
}

/// Why a thread held the CPU after the wake-up, by its priority and the
/// timer thread's.
fn thread_cause(p: &Part, own_prio: Option<i32>, share: &str) -> String {
    let who = format!("{} (pid {})", p.what, p.pid.unwrap_or(0));
    let why = match (p.prio, own_prio) {
        (Some(theirs), Some(ours)) if theirs < ours => format!(
            "{} is above the timer thread's {}",
            prio_words(theirs),
            prio_words(ours)
        ),
        // RT throttling stops every real-time thread: a normal
        // task may then run ahead of a real-time one.
        (Some(theirs), Some(ours)) if theirs >= 100 && ours < 100 => format!(
            "at {} it could only keep the CPU in a non-preemptible section, or while \
             RT throttling held the real-time threads off (kernel.sched_rt_runtime_us)",
            prio_words(theirs)
        ),
        // A real-time thread never preempts one of its own
        // priority: not a kernel matter, a priority to change.
        (Some(theirs), Some(ours)) if theirs == ours && ours < 100 => format!(
            "at {}, the timer thread's own, it kept the CPU: a real-time thread does \
             not preempt one of equal priority (SCHED_FIFO waits until it blocks or \
             yields, SCHED_RR until its time slice ends); give the timer thread a \
             higher priority than every thread on its CPU, or move this one off it",
            prio_words(theirs)
        ),
        // The fair scheduler shares the CPU among normal tasks.
        (Some(theirs), Some(ours)) if ours >= 100 => format!(
            "the timer thread is not real-time ({}): the fair scheduler shares its CPU \
             with this thread at {}; give the timer thread a real-time policy",
            prio_words(ours),
            prio_words(theirs)
        ),
        (Some(theirs), _) => format!(
            "at {} it could only run in a non-preemptible section",
            prio_words(theirs)
        ),
        _ => "its priority is not in the window".to_string(),
    };
    format!("thread {who} ran {share}: {why}")
}

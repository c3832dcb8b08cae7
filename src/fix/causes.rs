//! The causes of a run's late wake-ups, read from its explanations: every
//! part but the timer thread's own, grouped by what a remedy would act on
//! (one IRQ, one thread, the network's softirqs, idle...), weighed by the
//! wake-ups it took part in and the time it cost them.

use super::RemedyClass;
use crate::trace::explain::analyze::{Explanation, PartKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a cause is, as a remedy sees it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Target {
    /// A numbered device IRQ's handler ran on the measured CPU.
    Irq {
        /// The IRQ number.
        irq: u32,
    },
    /// A thread ran: after the wake-up, ahead of the timer thread; or
    /// before it, while the timer interrupt came late.
    Thread {
        /// Its TID (the trace's pid).
        pid: i32,
    },
    /// A softirq (`NET_RX`, `TIMER`...).
    Softirq {
        /// Its name.
        name: String,
    },
    /// An interrupt rtlab names but cannot move (the local timer, IPIs, NMIs).
    Interrupt {
        /// Its name (`local timer interrupt`, `function-call IPI`).
        name: String,
    },
    /// The CPU idled past the deadline.
    Idle,
    /// The kernel held the woken real-time thread off (RT throttling, the
    /// fair server).
    HeldOff,
    /// Nothing logged while the timer interrupt came late on a busy CPU,
    /// and no task to name: the host, an SMI, interrupts off.
    Unseen,
    /// The timer slack a measured task (`task_latency[N]`) armed its timers
    /// with.
    Slack {
        /// The task's thread.
        tid: i32,
    },
}

/// One cause over the explained wake-ups.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cause {
    /// What acts on it.
    pub target: Target,
    /// The class of remedy that answers it.
    pub class: RemedyClass,
    /// Who, in words (the trace's: `IRQ 38 virtio2-input.0`, `rtlab-hog`).
    pub what: String,
    /// How it showed in the wake-ups: the kinds of part it was (`thread`:
    /// ran ahead of the timer thread; `timer_late`: the timer interrupt came
    /// late while it ran; `unseen`: held the CPU unseen...).
    pub seen_as: std::collections::BTreeSet<PartKind>,
    /// A thread's kernel priority, as the trace last gave it (0..99
    /// real-time, 100..139 normal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prio: Option<i32>,
    /// Where a thread let the CPU go to the timer thread, from its kernel
    /// stacks (`innermost <- caller <- ...`, the scheduler's own frames
    /// left out): the path it ran without a preemption point. At most
    /// [`MAX_PATHS`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// In how many explained wake-ups it took part.
    pub spikes: u64,
    /// In how many it was the largest part (the timer thread's own aside).
    pub main_cause: u64,
    /// The time it cost them (ns).
    pub total_ns: u64,
    /// The longest single stretch of it (ns).
    #[serde(default)]
    pub max_ns: u64,
}

/// `18.4 µs`, `2.1 ms`.
pub fn micros(ns: u64) -> String {
    if ns >= 10_000_000 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else {
        format!("{:.1} µs", ns as f64 / 1e3)
    }
}

/// Whether a thread is the kernel's, as the machine says now (`PF_KTHREAD`):
/// None when it cannot say (the thread has ended).
pub type KernelThread<'a> = &'a dyn Fn(i32) -> Option<bool>;

/// The target of one part, and the class of remedy that answers it (None:
/// the timer thread's own time, the trace's, or time nothing recorded).
/// A kernel thread's name (`irq/38-eth0`, `kworker/1:1`, `rcuc/1`) says
/// what it does only when the thread is the kernel's: a user's process may
/// take any name, and is then moved as the thread it is.
fn target_of(
    kind: PartKind,
    what: &str,
    pid: Option<i32>,
    kernel: KernelThread<'_>,
) -> Option<(Target, RemedyClass)> {
    let users = pid.is_some_and(|p| p > 0 && kernel(p) == Some(false));
    let thread = || Target::Thread {
        pid: pid.unwrap_or(0),
    };
    // A threaded IRQ's handler (`irq/38-virtio2-input.0`) follows its IRQ:
    // the remedy is the IRQ's.
    if pid.is_some_and(|p| p > 0)
        && !users
        && let Some(irq) = irq_thread_number(&who(what))
    {
        return Some((Target::Irq { irq }, RemedyClass::Irq));
    }
    Some(match kind {
        // The timer thread's own setting: its policy or slack, not the
        // machine's.
        PartKind::TimerThread | PartKind::TimerSlack | PartKind::Tracing | PartKind::Unknown => {
            return None;
        }
        PartKind::Irq => match irq_number(what) {
            Some(irq) => (Target::Irq { irq }, RemedyClass::Irq),
            None if what == "local timer interrupt" => {
                (Target::Interrupt { name: what.into() }, RemedyClass::Tick)
            }
            None => (Target::Interrupt { name: what.into() }, RemedyClass::Ipi),
        },
        PartKind::Nmi => (Target::Interrupt { name: what.into() }, RemedyClass::Ipi),
        PartKind::Softirq => softirq(what.strip_prefix("softirq ").unwrap_or(what)),
        PartKind::TimerLate => match pid {
            Some(p) if p > 0 => (thread(), thread_class(what, users)),
            _ => match busy_softirq(what) {
                Some(name) => softirq(name),
                None => (Target::Unseen, RemedyClass::Host),
            },
        },
        PartKind::Unseen => match pid {
            Some(p) if p > 0 => (thread(), thread_class(what, users)),
            _ => (Target::Unseen, RemedyClass::Host),
        },
        PartKind::Thread => (thread(), thread_class(what, users)),
        PartKind::TimerLateIdle | PartKind::Idle => (Target::Idle, RemedyClass::Idle),
        PartKind::HeldOff => (Target::HeldOff, RemedyClass::RtThrottling),
    })
}

/// The class of a thread's remedy: kworkers are the workqueues', RCU's
/// and the timers' threads the tick's (boot parameters), others (and a
/// user's thread, `users`, whatever its name) moved off.
fn thread_class(what: &str, users: bool) -> RemedyClass {
    let comm = who(what);
    if users {
        RemedyClass::Thread
    } else if comm.starts_with("kworker/") {
        RemedyClass::Workqueue
    } else if comm.starts_with("rcuc/") || comm.starts_with("ktimers/") {
        // Per-CPU: RCU's callbacks and timers on this CPU (boot parameters).
        // The offload threads (rcuop, rcuog) and rcu_preempt are movable.
        RemedyClass::Tick
    } else {
        RemedyClass::Thread
    }
}

fn softirq(name: &str) -> (Target, RemedyClass) {
    let class = match name {
        "NET_RX" | "NET_TX" => RemedyClass::Net,
        "TIMER" | "HRTIMER" | "RCU" | "SCHED" => RemedyClass::Tick,
        _ => RemedyClass::Ipi,
    };
    (Target::Softirq { name: name.into() }, class)
}

/// `timer interrupt late (CPU busy with softirq NET_RX)` → `NET_RX`.
fn busy_softirq(what: &str) -> Option<&str> {
    what.split_once("(CPU busy with softirq ")
        .map(|(_, rest)| rest.trim_end_matches(')'))
}

/// `irq/38-virtio2-input.0` → 38.
fn irq_thread_number(comm: &str) -> Option<u32> {
    comm.strip_prefix("irq/")?.split('-').next()?.parse().ok()
}

/// `IRQ 36 virtio1-req.0` → 36.
fn irq_number(what: &str) -> Option<u32> {
    what.strip_prefix("IRQ ")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The causes of `explanations`, costliest first; `kernel` tells the
/// kernel's threads from a user's that took their names.
pub fn causes(explanations: &[Explanation], kernel: KernelThread<'_>) -> Vec<Cause> {
    let mut by: BTreeMap<Target, Cause> = BTreeMap::new();
    for e in explanations {
        let main = e
            .parts
            .iter()
            .filter(|p| !p.kind.is_own())
            .max_by_key(|p| p.ns)
            .and_then(|p| target_of(p.kind, &p.what, p.pid, kernel))
            .map(|(t, _)| t);
        let mut seen = std::collections::BTreeSet::new();
        for p in &e.parts {
            let Some((target, class)) = target_of(p.kind, &p.what, p.pid, kernel) else {
                continue;
            };
            let c = by.entry(target.clone()).or_insert_with(|| Cause {
                target: target.clone(),
                class,
                what: who(&p.what),
                seen_as: Default::default(),
                prio: None,
                paths: Vec::new(),
                spikes: 0,
                main_cause: 0,
                total_ns: 0,
                max_ns: 0,
            });
            c.total_ns += p.ns;
            c.max_ns = c.max_ns.max(p.ns);
            c.seen_as.insert(p.kind);
            c.prio = p.prio.or(c.prio);
            if seen.insert(target.clone()) {
                c.spikes += 1;
                c.main_cause += u64::from(main.as_ref() == Some(&target));
            }
        }
        for s in e.stacks.iter().filter(|s| s.at == "switch") {
            let Some(c) = by.get_mut(&Target::Thread { pid: s.pid }) else {
                continue;
            };
            let path = path_of(&s.frames);
            if !path.is_empty() && !c.paths.contains(&path) && c.paths.len() < MAX_PATHS {
                c.paths.push(path);
            }
        }
    }
    let mut out: Vec<Cause> = by.into_values().collect();
    out.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.target.cmp(&b.target)));
    out
}

/// Most paths kept per cause.
pub const MAX_PATHS: usize = 3;

/// The frames of a stack taken as a task let the CPU go, without the
/// scheduler's and the interrupt entry's own: the code it was running
/// (three frames at most).
fn path_of(frames: &[String]) -> String {
    let own = |f: &str| {
        let f = f.trim_start_matches('_');
        [
            "schedule",
            "preempt_schedule",
            "cond_resched",
            "irqentry_exit",
            "asm_",
            "sysvec_",
            "irq_exit",
            "common_interrupt",
        ]
        .iter()
        .any(|p| f.starts_with(p))
            || f == "?"
    };
    let path: Vec<&str> = frames
        .iter()
        .map(|f| f.split('+').next().unwrap_or(f).trim())
        .skip_while(|f| own(f))
        .take(3)
        .collect();
    path.join(" <- ")
}

/// The name inside a part's words: `timer interrupt late (CPU busy with
/// X)` and `unseen ... (X held the CPU)` → X; others as they are.
fn who(what: &str) -> String {
    if let Some((_, rest)) = what.split_once("(CPU busy with ") {
        return rest.strip_suffix(')').unwrap_or(rest).to_string();
    }
    if what.starts_with("unseen after the wake-up")
        && let Some((_, rest)) = what.rsplit_once('(')
    {
        return rest.trim_end_matches(" held the CPU)").to_string();
    }
    what.to_string()
}

/// The timer slack of the tasks a `task_latency[N]` measured: one cause
/// per thread whose explained wake-ups had a slack part.
pub fn slack_causes(tasks: &[crate::trace::task_latency::TaskLatencyResult]) -> Vec<Cause> {
    use crate::trace::task_latency::PART_SLACK;
    let mut out = Vec::new();
    for t in tasks.iter().flat_map(|m| &m.threads) {
        let mut c = Cause {
            target: Target::Slack { tid: t.tid },
            class: RemedyClass::Slack,
            what: format!("timer slack of {} (tid {})", t.comm, t.tid),
            seen_as: Default::default(),
            prio: None,
            paths: Vec::new(),
            spikes: 0,
            main_cause: 0,
            total_ns: 0,
            max_ns: 0,
        };
        for e in &t.explained {
            let Some((_, ns)) = e.parts.iter().find(|(label, _)| label == PART_SLACK) else {
                continue;
            };
            c.spikes += 1;
            c.total_ns += ns;
            c.max_ns = c.max_ns.max(*ns);
            if e.parts.iter().map(|p| p.1).max() == Some(*ns) {
                c.main_cause += 1;
            }
        }
        if c.spikes > 0 {
            out.push(c);
        }
    }
    out
}

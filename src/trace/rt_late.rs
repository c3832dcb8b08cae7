//! Why real-time tasks' wake-ups were late, from the BPF source: each late
//! wake-up the kernel sent (its CPU's recent events,
//! `sys::bpf::LateWakeup`) is read as events ([`super::bpf_events`]) and
//! explained by the one analysis the flight recorder uses
//! ([`super::explain::analyze`]): the same parts and the same sentences,
//! the woken task named where the timer thread would be. Kept bounded:
//! the latest [`MAX_RECENT`] explanations and, per task and main cause,
//! a count ([`MAX_CAUSES`] of them; the rest are folded under `other`).

use crate::sys::bpf::{self, LateWakeup};
use crate::trace::explain::analyze::{self, Part, PartKind};
use crate::trace::rawtrace::Symbols;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};

/// Explanations kept, the latest.
pub const MAX_RECENT: usize = 16;
/// (task, main cause) pairs counted by name.
pub const MAX_CAUSES: usize = 64;

/// One late wake-up, explained.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RtLate {
    /// The task (any bytes it chose: escaped where shown).
    pub comm: String,
    /// Its PID.
    pub pid: i32,
    /// Its policy and real-time priority.
    pub policy: &'static str,
    /// See `policy`.
    pub priority: u32,
    /// The CPU it switched in on.
    pub cpu: u32,
    /// Its wake-up (CLOCK_MONOTONIC, ns).
    pub woken_ns: u64,
    /// From its wake-up to its switch-in (ns).
    pub latency_ns: u64,
    /// The parts, largest first; they add up to the latency.
    pub parts: Vec<Part>,
    /// The main cause, in a sentence.
    pub cause: String,
}

/// A main cause: what kind, and who.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct CauseKey {
    /// The late task's name.
    pub comm: String,
    /// The kind of the main part (`thread`, `irq`, `softirq`...).
    pub kind: String,
    /// Who (`hog`, `IRQ 36 virtio1-req.0`), or `other` once
    /// [`MAX_CAUSES`] are named.
    pub cause: String,
}

/// The late wake-ups explained so far.
#[derive(Debug, Default)]
pub struct LateLog {
    /// The latest explanations, the newest last.
    pub recent: VecDeque<RtLate>,
    /// Late wake-ups by task and main cause.
    pub causes: BTreeMap<CauseKey, u64>,
    /// Explained.
    pub explained: u64,
    /// Sent but not explained: the CPU's ring did not reach back to the
    /// wake-up (more events than it holds came in between).
    pub unexplained: u64,
    /// The explanations' CPU time on the reading thread (ns).
    pub cpu_ns: u64,
}

impl LateLog {
    /// Explains `late` and keeps it.
    pub fn add(&mut self, late: &LateWakeup, symbols: &Symbols) {
        let Some(e) = explain(late, symbols) else {
            self.unexplained += 1;
            return;
        };
        self.explained += 1;
        let main = e
            .parts
            .iter()
            .find(|p| !p.kind.is_own())
            .or(e.parts.first());
        let (kind, what) = main.map_or(("unknown".into(), "?".into()), |p| {
            (kind_name(p), label_of(p))
        });
        let mut key = CauseKey {
            comm: e.comm.clone(),
            kind,
            cause: what,
        };
        if !self.causes.contains_key(&key) && self.causes.len() >= MAX_CAUSES {
            key.cause = "other".into();
        }
        *self.causes.entry(key).or_default() += 1;
        if self.recent.len() == MAX_RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back(e);
    }
}

/// Who a part names, as short as a label wants: a thread's name, an
/// IRQ's; the task named in an `unseen` part's sentence.
fn label_of(p: &Part) -> String {
    match p.kind {
        PartKind::Unseen => p
            .what
            .rsplit_once('(')
            .map(|(_, w)| w.trim_end_matches(')').trim_end_matches(" held the CPU"))
            .unwrap_or("unseen")
            .to_string(),
        _ => p.what.clone(),
    }
}

/// A part's kind as the result writes it (`thread`, `held_off`).
fn kind_name(p: &Part) -> String {
    serde_json::to_value(p.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// `late` explained, or None when its CPU's ring does not reach back to
/// its wake-up (who held the CPU then is not known).
pub fn explain(late: &LateWakeup, symbols: &Symbols) -> Option<RtLate> {
    let first = late.log.first()?;
    if first.ts_ns > late.woken_ns || late.switched_ns < late.woken_ns {
        return None;
    }
    let events = super::bpf_events::events(late, symbols);
    let latency_ns = late.switched_ns - late.woken_ns;
    let mut e = analyze::explain(&events, 0, late.pid, 0, late.woken_ns, latency_ns);
    let mut cause = e.cause.replace("the timer thread", &late.comm);
    if let Some(idle) = idle_exit(&mut e.parts) {
        cause = format!(
            "CPU {} was idle at the wake-up and took {:.1} µs of {:.1} µs to switch to {}: \
             leaving idle (the wake-up's interrupt or IPI, the idle exit), or, on a VM, the host \
             not running this CPU; RT throttling would idle it so only if the real-time tasks had \
             used kernel.sched_rt_runtime_us of its period",
            late.cpu,
            idle as f64 / 1000.0,
            latency_ns as f64 / 1000.0,
            late.comm
        );
    }
    Some(RtLate {
        comm: late.comm.clone(),
        pid: late.pid,
        policy: bpf::policy_name(late.policy),
        priority: late.priority,
        cpu: late.cpu,
        woken_ns: late.woken_ns,
        latency_ns,
        parts: e.parts,
        cause,
    })
}

/// A wake-up on a CPU that no thread held from the wake-up to the
/// switch-in: the analysis says "held off" or "idled after the wake-up"
/// (for a timer thread woken on its own CPU, only throttling idles it),
/// but a task woken on an idle CPU waits for it to leave idle. Renames
/// those parts, and gives their time when they are the main part.
fn idle_exit(parts: &mut [Part]) -> Option<u64> {
    if parts
        .iter()
        .any(|p| matches!(p.kind, PartKind::Thread | PartKind::Unseen))
    {
        return None;
    }
    let main_idle = parts
        .iter()
        .find(|p| !p.kind.is_own())
        .is_some_and(|p| matches!(p.kind, PartKind::HeldOff | PartKind::Idle));
    let mut idle = 0;
    for p in parts
        .iter_mut()
        .filter(|p| matches!(p.kind, PartKind::HeldOff | PartKind::Idle))
    {
        (p.kind, p.what) = (
            PartKind::Idle,
            "idle at the wake-up (its exit, or the host)".into(),
        );
        idle += p.ns;
    }
    main_idle.then_some(idle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::bpf::{Logged, LoggedKind};

    fn hogged() -> LateWakeup {
        crate::trace::bpf_events::tests::hogged()
    }

    #[test]
    fn a_late_wake_up_is_explained_in_the_analysis_sentences() {
        let e = explain(&hogged(), &Symbols::default()).unwrap();
        assert_eq!(
            (e.latency_ns, e.policy, e.priority),
            (2_000_000, "fifo", 43)
        );
        assert_eq!(e.parts.iter().map(|p| p.ns).sum::<u64>(), 2_000_000);
        assert!(
            e.cause.starts_with(
                "thread hog pid=1 (pid 70) ran 1960.0 µs of 2000.0 µs: real-time priority 61 \
                 is above rt-43's real-time priority 43"
            ),
            "{}",
            e.cause
        );
    }

    /// A ring that begins after the wake-up cannot say who held the CPU
    /// then: not explained, counted apart.
    #[test]
    fn a_ring_that_does_not_reach_the_wake_up_is_not_explained() {
        let mut late = hogged();
        late.log.retain(|e| e.ts_ns > 1_000_000);
        let mut log = LateLog::default();
        log.add(&late, &Symbols::default());
        assert_eq!((log.explained, log.unexplained), (0, 1));
        assert!(log.recent.is_empty());
    }

    /// Bounded: the latest explanations, and the causes past the bound
    /// folded under `other`.
    #[test]
    fn the_log_is_bounded() {
        let mut log = LateLog::default();
        for n in 0..(MAX_CAUSES + 10) {
            let mut late = hogged();
            let hog = format!("hog-{n}");
            for e in late.log.iter_mut() {
                if let Logged {
                    kind: LoggedKind::Switch { .. },
                    ..
                } = e
                {
                    if e.next_pid == 70 {
                        e.next_comm.clone_from(&hog);
                    }
                    if e.prev_pid == 70 {
                        e.prev_comm.clone_from(&hog);
                    }
                }
            }
            log.add(&late, &Symbols::default());
        }
        assert_eq!(log.recent.len(), MAX_RECENT);
        assert_eq!(log.causes.len(), MAX_CAUSES + 1);
        let other = log.causes.iter().find(|(k, _)| k.cause == "other").unwrap();
        assert_eq!(*other.1, 10);
        assert_eq!(log.explained, MAX_CAUSES as u64 + 10);
    }

    /// A task woken on an idle CPU that took long to run it: not "held
    /// off" (no thread ran), the CPU's exit from idle or the host.
    #[test]
    fn a_wake_up_on_an_idle_cpu_is_its_idle_exit() {
        let idle = ("swapper/1", 0, 120);
        let me = ("rt-43", 50, 56);
        let mut late = hogged();
        let switch = crate::trace::bpf_events::tests::switch;
        late.log = vec![switch(800_000, me, idle), switch(3_000_000, idle, me)];
        let e = explain(&late, &Symbols::default()).unwrap();
        assert!(
            e.parts.iter().all(|p| p.kind != PartKind::HeldOff),
            "{:?}",
            e.parts
        );
        assert!(
            e.cause
                .starts_with("CPU 1 was idle at the wake-up and took 2000.0 µs of 2000.0 µs"),
            "{}",
            e.cause
        );
    }
}

//! Why real-time tasks' wake-ups were late, from the BPF source: each late
//! wake-up the kernel sent (its CPU's recent events,
//! `sys::bpf::LateWakeup`) is read as events ([`super::bpf_events`]) and
//! explained by the one analysis the flight recorder uses
//! ([`super::explain::analyze`]): the same parts and the same sentences,
//! the woken task named where the timer thread would be. Kept bounded:
//! the latest [`MAX_RECENT`] explanations and, per task and main cause,
//! a count ([`MAX_CAUSES`] of them; the rest are folded under `other`).

use crate::sys::bpf::{self, LateWakeup};
use crate::trace::explain::analyze::{self, Part};
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
            (kind_name(p), p.what.clone())
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
    let e = analyze::explain(&events, 0, late.pid, 0, late.woken_ns, latency_ns);
    Some(RtLate {
        comm: late.comm.clone(),
        pid: late.pid,
        policy: bpf::policy_name(late.policy),
        priority: late.priority,
        cpu: late.cpu,
        woken_ns: late.woken_ns,
        latency_ns,
        parts: e.parts,
        cause: e.cause.replace("the timer thread", &late.comm),
    })
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
}

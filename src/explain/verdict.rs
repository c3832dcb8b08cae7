//! The culprits of a run: every analysed wake-up's parts, summed by who
//! they were, ranked by the time they cost.

use super::analyze::{Explanation, PartKind};
use serde::{Deserialize, Serialize};

/// One culprit over the whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Culprit {
    /// What kind.
    pub kind: PartKind,
    /// Who (`python3`, `IRQ 36 virtio1-req.0`).
    pub what: String,
    /// Its PID, for a thread.
    pub pid: Option<i32>,
    /// Its kernel priority, for a thread (the last seen).
    #[serde(default)]
    pub prio: Option<i32>,
    /// In how many analysed wake-ups it took part.
    pub spikes: u64,
    /// In how many it was the main cause (the largest part).
    pub main_cause: u64,
    /// Time it cost over all of them (ns).
    pub total_ns: u64,
    /// The most it cost one wake-up (ns).
    pub max_ns: u64,
}

/// The culprits of `explanations`, the timer threads themselves left out,
/// most costly first. A culprit with several parts in one wake-up (a thread
/// that ran before and after the wake-up) counts once for it, with their
/// sum.
pub fn culprits(explanations: &[Explanation]) -> Vec<Culprit> {
    let mut out: Vec<Culprit> = Vec::new();
    for e in explanations {
        let main = e.parts.iter().find(|p| !p.kind.is_own());
        // This wake-up's share of each culprit: (index in `out`, ns, main).
        let mut shares: Vec<(usize, u64, bool)> = Vec::new();
        for p in e.parts.iter().filter(|p| !p.kind.is_own()) {
            let is_main = main.is_some_and(|m| std::ptr::eq(m, p));
            let at = match out
                .iter()
                .position(|c| c.kind == p.kind && c.what == p.what && c.pid == p.pid)
            {
                Some(at) => at,
                None => {
                    out.push(Culprit {
                        kind: p.kind,
                        what: p.what.clone(),
                        pid: p.pid,
                        prio: None,
                        spikes: 0,
                        main_cause: 0,
                        total_ns: 0,
                        max_ns: 0,
                    });
                    out.len() - 1
                }
            };
            out[at].prio = p.prio.or(out[at].prio);
            match shares.iter_mut().find(|s| s.0 == at) {
                Some(s) => {
                    s.1 = s.1.saturating_add(p.ns);
                    s.2 |= is_main;
                }
                None => shares.push((at, p.ns, is_main)),
            }
        }
        for (at, ns, is_main) in shares {
            let c = &mut out[at];
            c.spikes += 1;
            c.main_cause += u64::from(is_main);
            c.total_ns = c.total_ns.saturating_add(ns);
            c.max_ns = c.max_ns.max(ns);
        }
    }
    out.sort_by_key(|c| (std::cmp::Reverse(c.total_ns), c.what.clone()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::analyze::Part;

    fn spike(parts: &[(PartKind, &str, u64)]) -> Explanation {
        Explanation {
            timer: 0,
            sample: 0,
            cpu: 1,
            deadline_ns: 0,
            latency_ns: parts.iter().map(|p| p.2).sum(),
            woken_after_ns: None,
            wake_to_switch_ns: None,
            parts: parts
                .iter()
                .map(|&(kind, what, ns)| Part {
                    kind,
                    what: what.into(),
                    pid: None,
                    prio: None,
                    ns,
                    before_wake: false,
                    inferred_ns: 0,
                })
                .collect(),
            cause: String::new(),
            events: 0,
            trace_file: None,
            trace_text: None,
            timeline: Vec::new(),
            stacks: Vec::new(),
            cpus_at_deadline: Vec::new(),
        }
    }

    #[test]
    fn culprits_are_summed_and_ranked_without_the_timer_thread() {
        let runs = [
            spike(&[
                (PartKind::Thread, "hog", 2000),
                (PartKind::TimerThread, "t", 50),
            ]),
            spike(&[
                (PartKind::Irq, "IRQ 36 eth0", 300),
                (PartKind::Thread, "hog", 100),
            ]),
        ];
        let c = culprits(&runs);
        assert_eq!(c.len(), 2);
        assert_eq!(
            (c[0].what.as_str(), c[0].spikes, c[0].main_cause),
            ("hog", 2, 1)
        );
        assert_eq!((c[0].total_ns, c[0].max_ns), (2100, 2000));
        assert_eq!((c[1].what.as_str(), c[1].main_cause), ("IRQ 36 eth0", 1));
    }

    #[test]
    fn a_thread_before_and_after_the_wake_up_counts_once_with_its_sum() {
        let mut one = spike(&[
            (PartKind::Thread, "hog", 2000),
            (PartKind::Irq, "IRQ 36 eth0", 700),
            (PartKind::Thread, "hog", 500),
        ]);
        one.parts[2].before_wake = true;
        let two = spike(&[(PartKind::Thread, "hog", 1000)]);
        let c = culprits(&[one, two]);
        assert_eq!(
            (c[0].what.as_str(), c[0].spikes, c[0].main_cause),
            ("hog", 2, 2)
        );
        assert_eq!((c[0].total_ns, c[0].max_ns), (3500, 2500));
        assert_eq!((c[1].spikes, c[1].main_cause), (1, 0));
    }
}

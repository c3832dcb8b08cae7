//! The culprits of a run: every analysed wake-up's parts, summed by who
//! they were, ranked by the time they cost.

use super::analyze::{Explanation, PartKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One culprit over the whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Culprit {
    /// What kind.
    pub kind: PartKind,
    /// Who (`python3`, `IRQ 36 virtio1-req.0`): a thread by its command,
    /// whatever its PIDs (a loop of short-lived processes is one culprit).
    pub what: String,
    /// Its costliest PID, for a thread.
    pub pid: Option<i32>,
    /// How many PIDs ran under this command (threads).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pids: u64,
    /// The costliest PIDs, most costly first (at most [`MAX_TOP_PIDS`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_pids: Vec<PidCost>,
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

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Most PIDs listed under one culprit.
pub const MAX_TOP_PIDS: usize = 5;

/// What one PID of a culprit cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PidCost {
    /// The PID.
    pub pid: i32,
    /// Time it cost over the analysed wake-ups (ns).
    pub total_ns: u64,
}

impl Culprit {
    /// Who, in words: the command, its PIDs folded in (`dd (480 pids:
    /// 3101, 3107, …)`, `python3 (pid 16134)`).
    pub fn who(&self) -> String {
        let listed: Vec<i32> = self.top_pids.iter().map(|p| p.pid).collect();
        folded(&self.what, self.pids, &listed, self.pid)
    }
}

/// A command with its PIDs folded in, as the culprits and the audit's rows
/// say it: `dd (480 pids: 3101, 3107, …)` (the `listed` ones, `…` when
/// there are more), `python3 (pid 16134)`, or the name alone.
pub fn folded(what: &str, pids: u64, listed: &[i32], pid: Option<i32>) -> String {
    match (pids, pid) {
        (n, _) if n > 1 => {
            let shown: Vec<String> = listed.iter().map(i32::to_string).collect();
            let more = if n as usize > listed.len() {
                ", …"
            } else {
                ""
            };
            format!("{what} ({n} pids: {}{more})", shown.join(", "))
        }
        (_, Some(pid)) => format!("{what} (pid {pid})"),
        _ => what.to_string(),
    }
}

/// The culprits of `explanations`, the timer threads themselves left out,
/// most costly first, a thread by its command (its PIDs folded in). A
/// culprit with several parts in one wake-up (a thread that ran before and
/// after the wake-up, two PIDs of one command) counts once for it, with
/// their sum.
pub fn culprits(explanations: &[Explanation]) -> Vec<Culprit> {
    let mut out: Vec<Culprit> = Vec::new();
    // Each culprit's cost by PID.
    let mut by_pid: Vec<BTreeMap<i32, u64>> = Vec::new();
    for e in explanations {
        let main = e.parts.iter().find(|p| !p.kind.is_own());
        // This wake-up's share of each culprit: (index in `out`, ns, main).
        let mut shares: Vec<(usize, u64, bool)> = Vec::new();
        for p in e.parts.iter().filter(|p| !p.kind.is_own()) {
            let is_main = main.is_some_and(|m| std::ptr::eq(m, p));
            let at = match out
                .iter()
                .position(|c| c.kind == p.kind && c.what == p.what)
            {
                Some(at) => at,
                None => {
                    out.push(Culprit {
                        kind: p.kind,
                        what: p.what.clone(),
                        pid: None,
                        pids: 0,
                        top_pids: Vec::new(),
                        prio: None,
                        spikes: 0,
                        main_cause: 0,
                        total_ns: 0,
                        max_ns: 0,
                    });
                    by_pid.push(BTreeMap::new());
                    out.len() - 1
                }
            };
            out[at].prio = p.prio.or(out[at].prio);
            if let Some(pid) = p.pid {
                let cost = by_pid[at].entry(pid).or_default();
                *cost = cost.saturating_add(p.ns);
            }
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
    for (c, pids) in out.iter_mut().zip(by_pid) {
        let mut costs: Vec<PidCost> = pids
            .into_iter()
            .map(|(pid, total_ns)| PidCost { pid, total_ns })
            .collect();
        costs.sort_by_key(|p| (std::cmp::Reverse(p.total_ns), p.pid));
        c.pids = costs.len() as u64;
        c.pid = costs.first().map(|p| p.pid);
        costs.truncate(MAX_TOP_PIDS);
        c.top_pids = costs;
    }
    out.sort_by_key(|c| (std::cmp::Reverse(c.total_ns), c.what.clone()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::explain::analyze::Part;

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
                    what: what.split('#').next().unwrap_or(what).into(),
                    pid: what.rsplit_once('#').and_then(|(_, p)| p.parse().ok()),
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

    #[test]
    fn the_pids_of_one_command_are_one_culprit() {
        // A loop of short-lived `dd`s: three PIDs, one command.
        let runs = [
            spike(&[
                (PartKind::Thread, "dd#301", 900),
                (PartKind::Irq, "IRQ 9", 50),
            ]),
            spike(&[
                (PartKind::Thread, "dd#302", 700),
                (PartKind::Thread, "dd#301", 100),
            ]),
            spike(&[
                (PartKind::Irq, "IRQ 9", 60),
                (PartKind::Thread, "dd#303", 40),
            ]),
        ];
        let c = culprits(&runs);
        assert_eq!(c.len(), 2, "{c:#?}");
        let dd = &c[0];
        assert_eq!(
            (
                dd.what.as_str(),
                dd.spikes,
                dd.main_cause,
                dd.total_ns,
                dd.max_ns
            ),
            ("dd", 3, 2, 1740, 900)
        );
        assert_eq!((dd.pids, dd.pid), (3, Some(301)));
        let top: Vec<(i32, u64)> = dd.top_pids.iter().map(|p| (p.pid, p.total_ns)).collect();
        assert_eq!(top, [(301, 1000), (302, 700), (303, 40)]);
        assert_eq!(dd.who(), "dd (3 pids: 301, 302, 303)");
        assert_eq!(c[1].who(), "IRQ 9");
    }
}

//! Every real-time task's wake-ups from tracefs: the fallback of the BPF
//! source where BPF cannot run (no BTF, no CAP_BPF, lockdown). The same
//! measure as the BPF program's (`sched_waking` stamps a real-time task,
//! its next switch-in counts the time since; a task preempted loses a
//! stamp it still has), aggregated in the same buckets into the same
//! [`WakeupSnapshot`], which [`super::rt_wakeups`] summarises as for BPF.
//! A consumer of the trace stream: this file and its line in
//! [`super::STREAM_CONSUMERS`] are the whole of it.
//!
//! The trace gives a task's kernel priority, not its policy: the policy
//! is read once per task from `/proc/PID/stat` (`sys::tasks::policy`) as
//! the task is first counted; a task gone by then is counted as `other`.

use crate::sys::SysRoot;
use crate::sys::bpf::{self, Cell, SeriesSum, TaskWorst, WakeupSnapshot};
use crate::trace::consumer::{Consumer, Filter, Learned, StreamEnd, Tracepoint};
use crate::trace::consumer::{StreamResults, StreamSpec};
use crate::trace::event::Event;
use std::collections::{BTreeMap, HashMap};

/// Registers the fallback when the monitor asks for it.
pub fn register(spec: &StreamSpec, out: &mut Vec<Box<dyn Consumer>>) {
    if let Some(all) = spec.rt_wakeups {
        out.push(Box::new(RtWakeupsTrace::new(all)));
    }
}

const TRACEPOINTS: &[Tracepoint] = &[
    Tracepoint::filtered(&["sched/sched_waking", "sched/sched_wakeup"]),
    Tracepoint::filtered(&["sched/sched_switch"]),
];

/// Tasks stamped and not yet switched in, and tasks kept (as the BPF
/// program's maps).
const MAX_WOKEN: usize = 16384;
const MAX_TASKS: usize = 4096;
/// A policy not known (the task gone before it was asked).
const UNKNOWN_POLICY: u32 = u32::MAX;

/// The consumer.
pub struct RtWakeupsTrace {
    all_tasks: bool,
    root: Option<SysRoot>,
    woken: HashMap<i32, u64>,
    /// (cpu, policy, priority, bucket) -> count.
    cells: BTreeMap<(usize, u32, u32, u16), u64>,
    sums: BTreeMap<(usize, u32, u32), u64>,
    tasks: HashMap<i32, TaskWorst>,
    policies: HashMap<i32, u32>,
    counted: u64,
    lost: u64,
    /// Wake-ups whose switch-in the trace did not log.
    unlogged: u64,
}

impl RtWakeupsTrace {
    /// Every real-time task's wake-ups (every task's with `all_tasks`).
    pub fn new(all_tasks: bool) -> Self {
        RtWakeupsTrace {
            all_tasks,
            root: None,
            woken: HashMap::new(),
            cells: BTreeMap::new(),
            sums: BTreeMap::new(),
            tasks: HashMap::new(),
            policies: HashMap::new(),
            counted: 0,
            lost: 0,
            unlogged: 0,
        }
    }

    /// A real-time task by its kernel priority (SCHED_DEADLINE is -1).
    fn wanted(&self, prio: i64) -> bool {
        self.all_tasks || prio < 100
    }

    /// What was counted so far, as the BPF source's maps give it.
    pub fn snapshot(&self) -> WakeupSnapshot {
        WakeupSnapshot {
            cells: self
                .cells
                .iter()
                .map(|(&(cpu, policy, priority, bucket), &count)| Cell {
                    cpu,
                    policy,
                    priority,
                    bucket,
                    count,
                })
                .collect(),
            sums: self
                .sums
                .iter()
                .map(|(&(cpu, policy, priority), &sum_ns)| SeriesSum {
                    cpu,
                    policy,
                    priority,
                    sum_ns,
                })
                .collect(),
            tasks: self.tasks.values().cloned().collect(),
            counted: self.counted,
            lost: self.lost + self.unlogged,
            ..WakeupSnapshot::default()
        }
    }

    /// The task's policy: known, or read now from `/proc/PID/stat`.
    fn policy(&mut self, pid: i32) -> u32 {
        if let Some(&p) = self.policies.get(&pid) {
            return p;
        }
        let read = self
            .root
            .as_ref()
            .and_then(|r| crate::sys::tasks::policy(r, pid))
            .unwrap_or(UNKNOWN_POLICY);
        if self.policies.len() >= MAX_TASKS {
            self.policies.clear();
        }
        self.policies.insert(pid, read);
        read
    }

    fn waking(&mut self, e: &Event) {
        let (Some(pid), Some(prio)) = (e.num("pid"), e.num("prio")) else {
            return;
        };
        if !self.wanted(prio) {
            return;
        }
        let pid = pid as i32;
        if self.woken.len() >= MAX_WOKEN && !self.woken.contains_key(&pid) {
            self.lost += 1;
            return;
        }
        self.woken.insert(pid, e.ts_ns);
    }

    fn switch(&mut self, e: &Event) {
        // A task switched out was running. Preempted, a stamp it still has
        // is of a wake-up while it ran, not of this wait. Blocking, its
        // stamp's switch-in was not logged: the kernel's trace leaves out
        // some switch-ins (docs/ebpf.md, "the tracefs path"), whose
        // wake-ups are counted as not measured.
        if let Some(prev) = e.num("prev_pid").map(|p| p as i32)
            && self.woken.remove(&prev).is_some()
            && !e.field("prev_state").is_some_and(|s| s.starts_with('R'))
        {
            self.unlogged += 1;
        }
        let Some(next) = e.num("next_pid").map(|p| p as i32).filter(|&p| p != 0) else {
            return;
        };
        let Some(at) = self.woken.remove(&next) else {
            return;
        };
        let ns = e.ts_ns.saturating_sub(at);
        let prio = e.num("next_prio").unwrap_or(120);
        let policy = self.policy(next);
        // As `rt_priority` in the kernel: 99 - prio for real-time tasks.
        let priority = if (0..100).contains(&prio) {
            99 - prio as u32
        } else {
            0
        };
        let bucket = bpf::bucket_of_ns(ns);
        *self
            .cells
            .entry((e.cpu, policy, priority, bucket))
            .or_default() += 1;
        let sum = self.sums.entry((e.cpu, policy, priority)).or_default();
        *sum = sum.saturating_add(ns);
        self.counted += 1;
        self.keep_worst(next, e, ns, policy, priority);
    }

    fn keep_worst(&mut self, pid: i32, e: &Event, ns: u64, policy: u32, priority: u32) {
        if !self.tasks.contains_key(&pid) && self.tasks.len() >= MAX_TASKS {
            // Full: the task counted least gives its place.
            if let Some(least) = self.tasks.values().min_by_key(|t| t.count).map(|t| t.pid) {
                self.tasks.remove(&(least as i32));
            }
        }
        let t = self.tasks.entry(pid).or_insert_with(|| TaskWorst {
            pid: pid as u32,
            comm: e.field("next_comm").unwrap_or("?").to_string(),
            ..TaskWorst::default()
        });
        t.count += 1;
        (t.policy, t.priority) = (policy, priority);
        if ns > t.worst_ns {
            t.worst_ns = ns;
            t.cpu = e.cpu as u32;
        }
    }
}

impl Consumer for RtWakeupsTrace {
    fn tracepoints(&self) -> Vec<Tracepoint> {
        TRACEPOINTS.to_vec()
    }

    fn filter(&self, tracepoint: &str) -> Option<Filter> {
        if self.all_tasks {
            return Some(Filter::Everything);
        }
        let term = match tracepoint {
            "sched/sched_switch" => "prev_prio < 100 || next_prio < 100",
            _ => "prio < 100",
        };
        Some(Filter::Terms(vec![term.into()]))
    }

    fn learn(&mut self, run: &Learned) {
        if self.root.is_none() {
            self.root = Some(run.root.clone());
        }
    }

    fn feed(&mut self, e: &Event) {
        match e.name.as_ref() {
            "sched_waking" | "sched_wakeup" => self.waking(e),
            "sched_switch" => self.switch(e),
            _ => {}
        }
    }

    fn finish(self: Box<Self>, _end: &StreamEnd, _into: &mut StreamResults) {
        // Its figures are read live by the monitor, which writes them.
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(text: &str) -> Vec<Event> {
        crate::trace::text::events(text)
    }

    /// Stamped at the wake-up, counted at the switch-in, in the BPF
    /// program's buckets; a normal task is not counted; a preempted
    /// task's stale stamp is dropped (its next switch-in is no wake-up);
    /// a task seen blocking with its stamp had a switch-in the trace did
    /// not log: not measured, counted as lost.
    #[test]
    fn each_real_time_wake_up_is_counted_once_as_bpf_counts_it() {
        let trace = events(
            " <idle>-0 [001] d..2. 1.000000: sched_waking: comm=rt pid=50 prio=56 target_cpu=001\n\
             <idle>-0 [001] d..2. 1.000012: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rt next_pid=50 next_prio=56\n\
             x-60 [000] d..2. 1.000100: sched_waking: comm=y pid=61 prio=120 target_cpu=000\n\
             x-60 [000] d..2. 1.000200: sched_switch: prev_comm=x prev_pid=60 prev_prio=120 prev_state=S ==> next_comm=y next_pid=61 next_prio=120\n\
             rt-50 [001] d..2. 1.000300: sched_waking: comm=rt pid=50 prio=56 target_cpu=001\n\
             rt-50 [001] d..2. 1.000400: sched_switch: prev_comm=rt prev_pid=50 prev_prio=56 prev_state=R+ ==> next_comm=hog next_pid=70 next_prio=38\n\
             hog-70 [001] d..2. 1.002400: sched_switch: prev_comm=hog prev_pid=70 prev_prio=38 prev_state=S ==> next_comm=rt next_pid=50 next_prio=56\n\
             rt-50 [001] d..2. 1.002500: sched_switch: prev_comm=rt prev_pid=50 prev_prio=56 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n\
             <idle>-0 [001] d.h3. 1.003000: sched_waking: comm=rt pid=50 prio=56 target_cpu=001\n\
             rt-50 [001] d..2. 1.003500: sched_switch: prev_comm=rt prev_pid=50 prev_prio=56 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n",
        );
        let mut c = RtWakeupsTrace::new(false);
        c.policies.insert(50, 1);
        for e in &trace {
            c.feed(e);
        }
        let snap = c.snapshot();
        assert_eq!((snap.counted, snap.lost), (1, 1));
        assert_eq!(
            snap.cells,
            [Cell {
                cpu: 1,
                policy: 1,
                priority: 43,
                bucket: 12,
                count: 1
            }]
        );
        assert_eq!(snap.sums[0].sum_ns, 12_000);
        let t = &snap.tasks[0];
        assert_eq!(
            (t.pid, t.comm.as_str(), t.worst_ns, t.count),
            (50, "rt", 12_000, 1)
        );
    }
}

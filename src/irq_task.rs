//! IRQ-to-task latency: how long after an interrupt's handler the task
//! that waits for its data starts to run, from the kernel's tracepoints
//! (`irq_handler_entry`/`exit`, `sched_waking`, `sched_switch`, softirqs,
//! hrtimers), read in time order over every CPU. Pure: the trace stream
//! that feeds it is in [`crate::stream`].
//!
//! Each exit of the IRQ's handler waits for the task's next wake-up:
//! - woken from that interrupt's work (in the handler, in a device softirq
//!   that followed it on any CPU, or by its IRQ thread), the delay from the
//!   handler's exit (and entry) to the task's switch-in is one sample;
//! - the task already running or already woken when the handler ended, the
//!   task sleeping on until the next IRQ, or woken for another cause (a
//!   timer, another interrupt, another task) are counted by reason, never
//!   sampled.

use crate::config::{IrqSelector, TaskSelector};
use crate::explain::parse::Event;
use crate::stats::{self, HdrBucket, Recorder, Summary};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What an `irq_task[N]` measures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IrqTaskSpec {
    /// N.
    pub index: usize,
    /// The interrupt.
    pub irq: IrqSelector,
    /// The task.
    pub task: TaskSelector,
}

/// Softirqs that carry a device's work on from its handler.
const DEVICE_SOFTIRQS: &[&str] = &["HI", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET"];
/// Most distinct "other cause" labels kept (the rest are summed).
const MAX_CAUSES: usize = 32;
/// Highest CPU number followed (events of higher CPUs are ignored).
const MAX_CPU: usize = 4096;
/// Most threads remembered as the task (a program respawned for a week
/// must not grow the set without end: past it, the set starts again).
const MAX_TIDS: usize = 4096;

/// The counts of an IRQ-to-task measurement: every handler exit seen is in
/// exactly one of `matched`, `task_running`, `no_wakeup`, `other_cause`
/// (summed) and `unresolved`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IrqTaskCounts {
    /// Handler exits of the IRQ seen in the trace.
    pub irqs: u64,
    /// Those followed by a wake-up of the task from their work: sampled.
    pub matched: u64,
    /// The task was running, or already woken, when the handler ended.
    pub task_running: u64,
    /// The task slept on: the next handler came before any wake-up.
    pub no_wakeup: u64,
    /// The task woke for another cause, by cause (`a timer`, `IRQ 24`,
    /// `softirq TIMER`, `woken by bash`).
    pub other_cause: Vec<(String, u64)>,
    /// The run ended before the task woke or ran.
    pub unresolved: u64,
    /// Handler exits whose entry was before the trace began (their
    /// entry-based delay is taken from the exit).
    pub entry_missing: u64,
    /// Samples whose switch-in the kernel did not log (some kernels do not
    /// log the switch out of idle on the CPU that woke the task): the
    /// switch-in is taken at the last event of that CPU before the task
    /// was seen running, a lower bound.
    pub switch_in_inferred: u64,
    /// The largest gap between that event and the task's first event (ns):
    /// how far above the lower bound an inferred switch-in can be.
    pub inferred_gap_max_ns: u64,
    /// Those gaps summed (ns), for their mean.
    #[serde(default)]
    pub inferred_gap_total_ns: u64,
}

impl IrqTaskCounts {
    /// The other causes, summed.
    pub fn other_cause_total(&self) -> u64 {
        self.other_cause.iter().map(|c| c.1).sum()
    }
}

/// How many samples had their IRQ on one CPU and their task on another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuPair {
    /// Where the handler ran.
    pub irq_cpu: usize,
    /// Where the task was switched in.
    pub task_cpu: usize,
    /// Samples.
    pub samples: u64,
}

/// One `irq_task[N]` of a run's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IrqTaskResult {
    /// The stanza index N.
    pub index: usize,
    /// The IRQ as the file named it.
    pub irq: IrqSelector,
    /// The task as the file named it.
    pub task: TaskSelector,
    /// IRQ numbers matched, with the name their handler registered.
    pub irq_names: Vec<(u32, String)>,
    /// Threads recognised as the task.
    pub tids: Vec<i32>,
    /// Delay from the handler's exit to the task's switch-in.
    pub from_exit: Summary,
    /// Every sample of it, log-linear (0.1%).
    pub hdr_histogram: Vec<HdrBucket>,
    /// Delay from the handler's entry to the task's switch-in.
    pub from_entry: Summary,
    /// Where the samples' handlers and tasks ran.
    pub cpu_pairs: Vec<CpuPair>,
    /// Every handler exit by what became of it.
    pub counts: IrqTaskCounts,
    /// The IRQ's count in `/proc/interrupts` over the run (the kernel's
    /// own counter, read before the trace started and after it stopped: it
    /// may exceed `counts.irqs` by the interrupts of those moments).
    pub kernel_count: Option<u64>,
    /// The same counter read just after the trace started and just before
    /// it stopped: the trace saw at least this many.
    #[serde(default)]
    pub kernel_count_within: Option<u64>,
    /// Events the kernel could not keep (the counts are then lower bounds).
    #[serde(default)]
    pub lost_events: u64,
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    entry_ns: u64,
    exit_ns: u64,
    cpu: usize,
    /// A thread of the task was running or runnable at the handler's exit.
    busy: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum TaskState {
    Running,
    Runnable,
    Sleeping,
}

/// What a CPU is doing, from its events.
#[derive(Debug, Clone, Default)]
struct CpuContext {
    /// The task the last event ran in.
    current: Option<i32>,
    last_ts: u64,
    /// The IRQ whose handler runs, with its entry.
    irq: Option<(u32, u64)>,
    softirq: Option<String>,
    hrtimer: bool,
    /// A thread of the task woken inside the IRQ's running handler.
    woken_in_handler: Option<i32>,
}

/// The matcher of one `irq_task[N]`, fed every event in time order.
pub struct Matcher {
    spec: IrqTaskSpec,
    /// Threads of the task (by name: learnt from the events).
    tids: BTreeSet<i32>,
    states: HashMap<i32, TaskState>,
    cpus: Vec<CpuContext>,
    pending: Option<Pending>,
    /// Woken from an IRQ's work (when), waiting for their switch-in.
    awaiting: Vec<(i32, Pending, u64)>,
    irq_names: BTreeMap<u32, String>,
    counts: IrqTaskCounts,
    causes: BTreeMap<String, u64>,
    from_exit: Recorder,
    from_entry: Recorder,
    pairs: BTreeMap<(usize, usize), u64>,
}

impl Matcher {
    /// A matcher for `spec`; None if the histograms cannot be made.
    pub fn new(spec: IrqTaskSpec) -> Option<Self> {
        let tids = match spec.task {
            TaskSelector::Pid(pid) => BTreeSet::from([pid]),
            _ => BTreeSet::new(),
        };
        Some(Matcher {
            spec,
            tids,
            states: HashMap::new(),
            cpus: Vec::new(),
            pending: None,
            awaiting: Vec::new(),
            irq_names: BTreeMap::new(),
            counts: IrqTaskCounts::default(),
            causes: BTreeMap::new(),
            from_exit: Recorder::new(1_000).ok()?,
            from_entry: Recorder::new(1_000).ok()?,
            pairs: BTreeMap::new(),
        })
    }

    /// The spec.
    pub fn spec(&self) -> &IrqTaskSpec {
        &self.spec
    }

    /// The threads recognised as the task so far.
    pub fn tids(&self) -> &BTreeSet<i32> {
        &self.tids
    }

    /// Sets the task's threads (a task chosen by PID or program, whose
    /// threads the caller reads from `/proc`). Threads already known stay.
    pub fn add_tids(&mut self, tids: impl IntoIterator<Item = i32>) {
        for tid in tids {
            if self.tids.len() >= MAX_TIDS && !self.tids.contains(&tid) {
                self.forget_old_tids();
            }
            self.tids.insert(tid);
        }
    }

    /// Starts the set of threads again, keeping those awaited or running.
    fn forget_old_tids(&mut self) {
        let keep: BTreeSet<i32> = self
            .awaiting
            .iter()
            .map(|a| a.0)
            .chain(
                self.states
                    .iter()
                    .filter(|s| *s.1 != TaskState::Sleeping)
                    .map(|s| *s.0),
            )
            .collect();
        self.tids.retain(|t| keep.contains(t));
        self.states.retain(|t, _| keep.contains(t));
    }

    fn is_task(&mut self, pid: i32, comm: Option<&str>) -> bool {
        if pid <= 0 {
            return false;
        }
        if self.tids.contains(&pid) {
            return true;
        }
        match (&self.spec.task, comm) {
            (TaskSelector::Name(name), Some(c)) if c == name => {
                self.add_tids([pid]);
                true
            }
            _ => false,
        }
    }

    fn irq_matches(&mut self, irq: u32, name: Option<&str>) -> bool {
        let hit = match &self.spec.irq {
            IrqSelector::Number(n) => *n == irq,
            IrqSelector::Name(want) => {
                name.or(self.irq_names.get(&irq).map(String::as_str)) == Some(want.as_str())
            }
        };
        if hit && let Some(n) = name {
            self.irq_names.entry(irq).or_insert_with(|| n.to_string());
        }
        hit
    }

    fn task_busy(&self) -> bool {
        self.states
            .values()
            .any(|s| matches!(s, TaskState::Running | TaskState::Runnable))
    }

    /// Feeds one event (events must come in time order).
    pub fn feed(&mut self, e: &Event) {
        if e.cpu > MAX_CPU {
            return;
        }
        if self.cpus.len() <= e.cpu {
            self.cpus.resize(e.cpu + 1, CpuContext::default());
        }
        self.follow_current(e);
        match e.name.as_str() {
            "irq_handler_entry" => {
                if let Some(irq) = e.num("irq").and_then(|n| u32::try_from(n).ok()) {
                    self.irq_matches(irq, e.field("name"));
                    self.cpus[e.cpu].irq = Some((irq, e.ts_ns));
                }
            }
            "irq_handler_exit" => self.handler_exit(e),
            "softirq_entry" => {
                self.cpus[e.cpu].softirq = Some(e.field("action").unwrap_or("?").to_string())
            }
            "softirq_exit" => self.cpus[e.cpu].softirq = None,
            "hrtimer_expire_entry" => self.cpus[e.cpu].hrtimer = true,
            "hrtimer_expire_exit" => self.cpus[e.cpu].hrtimer = false,
            "sched_waking" => self.waking(e),
            "sched_switch" => self.switch(e),
            _ => {}
        }
        self.cpus[e.cpu].last_ts = e.ts_ns;
    }

    /// An event shows which task runs on its CPU: a task seen running
    /// without its switch-in (not logged) was switched in after the CPU's
    /// previous event.
    fn follow_current(&mut self, e: &Event) {
        let ctx = &self.cpus[e.cpu];
        if ctx.current == Some(e.pid) {
            return;
        }
        let (known, since) = (ctx.current.is_some(), ctx.last_ts);
        self.cpus[e.cpu].current = Some(e.pid);
        if self.is_task(e.pid, Some(&e.comm)) {
            self.states.insert(e.pid, TaskState::Running);
            if known {
                self.switched_in(e.pid, e.cpu, since, Some(e.ts_ns));
            }
        }
    }

    fn handler_exit(&mut self, e: &Event) {
        let Some(irq) = e.num("irq").and_then(|n| u32::try_from(n).ok()) else {
            return;
        };
        let entry = self.cpus[e.cpu].irq.take();
        if !self.irq_matches(irq, None) {
            return;
        }
        self.counts.irqs += 1;
        if let Some(p) = self.pending.take() {
            self.unwoken(p);
        }
        let entry_ns = match entry {
            Some((n, at)) if n == irq => at,
            _ => {
                self.counts.entry_missing += 1;
                e.ts_ns
            }
        };
        let woken = self.cpus[e.cpu].woken_in_handler.take();
        let p = Pending {
            entry_ns,
            exit_ns: e.ts_ns,
            cpu: e.cpu,
            busy: woken.is_none() && self.task_busy(),
        };
        match woken {
            Some(tid) => self.awaiting.push((tid, p, e.ts_ns)),
            None => self.pending = Some(p),
        }
    }

    /// A handler exit that no wake-up followed.
    fn unwoken(&mut self, p: Pending) {
        if p.busy {
            self.counts.task_running += 1;
        } else {
            self.counts.no_wakeup += 1;
        }
    }

    fn waking(&mut self, e: &Event) {
        let Some(pid) = e.num("pid").and_then(|p| i32::try_from(p).ok()) else {
            return;
        };
        if !self.is_task(pid, e.field("comm")) {
            return;
        }
        self.states.insert(pid, TaskState::Runnable);
        let in_handler = self.cpus[e.cpu]
            .irq
            .is_some_and(|(n, _)| self.irq_matches(n, None));
        if in_handler {
            // The handler now running woke it: an earlier exit woke nothing.
            if let Some(p) = self.pending.take() {
                self.unwoken(p);
            }
            self.cpus[e.cpu].woken_in_handler = Some(pid);
            return;
        }
        let Some(p) = self.pending.take() else {
            return;
        };
        match self.other_cause(e) {
            None => self.awaiting.push((pid, p, e.ts_ns)),
            Some(cause) => {
                let key = if self.causes.len() >= MAX_CAUSES && !self.causes.contains_key(&cause) {
                    "other causes".to_string()
                } else {
                    cause
                };
                *self.causes.entry(key).or_default() += 1;
            }
        }
    }

    /// Why a wake-up is not the IRQ's doing, or None when it is: in its
    /// handler, in a device softirq, or by its IRQ thread.
    fn other_cause(&self, e: &Event) -> Option<String> {
        let ctx = &self.cpus[e.cpu];
        let irq_number = |n: u32| match &self.spec.irq {
            IrqSelector::Number(want) => *want == n,
            IrqSelector::Name(want) => self.irq_names.get(&n) == Some(want),
        };
        if let Some((n, _)) = ctx.irq {
            return (!irq_number(n)).then(|| format!("IRQ {n}"));
        }
        if ctx.hrtimer {
            return Some("a timer (hrtimer)".into());
        }
        if let Some(v) = &ctx.softirq {
            return (!DEVICE_SOFTIRQS.contains(&v.as_str())).then(|| format!("softirq {v}"));
        }
        let threaded = e
            .comm
            .strip_prefix("irq/")
            .and_then(|r| r.split('-').next())
            .and_then(|n| n.parse().ok())
            .is_some_and(irq_number);
        (!threaded).then(|| format!("woken by {}", e.comm))
    }

    fn switch(&mut self, e: &Event) {
        let (Some(prev), Some(next)) = (e.num("prev_pid"), e.num("next_pid")) else {
            return;
        };
        let (prev, next) = (prev as i32, next as i32);
        if self.is_task(prev, e.field("prev_comm")) {
            let runnable = e.field("prev_state").is_some_and(|s| s.starts_with('R'));
            let state = if runnable {
                TaskState::Runnable
            } else {
                TaskState::Sleeping
            };
            self.states.insert(prev, state);
        }
        self.cpus[e.cpu].current = Some(next);
        if self.is_task(next, e.field("next_comm")) {
            self.states.insert(next, TaskState::Running);
            self.switched_in(next, e.cpu, e.ts_ns, None);
        }
    }

    /// `tid` runs on `cpu` from `at`: the sample of the IRQ that woke it.
    /// `seen_at`: the switch-in was not logged, `at` is a lower bound and
    /// the task was seen running at `seen_at`.
    fn switched_in(&mut self, tid: i32, cpu: usize, at: u64, seen_at: Option<u64>) {
        let Some(i) = self.awaiting.iter().position(|a| a.0 == tid) else {
            return;
        };
        let (_, p, woken) = self.awaiting.swap_remove(i);
        // A switch-in inferred before the wake-up cannot be: it was after.
        let at = at.max(woken).max(p.exit_ns);
        self.counts.matched += 1;
        if let Some(gap) = seen_at.map(|s| s.saturating_sub(at)) {
            self.counts.switch_in_inferred += 1;
            self.counts.inferred_gap_max_ns = self.counts.inferred_gap_max_ns.max(gap);
            self.counts.inferred_gap_total_ns =
                self.counts.inferred_gap_total_ns.saturating_add(gap);
        }
        self.from_exit.record(at - p.exit_ns);
        self.from_entry.record(at - p.entry_ns.min(at));
        *self.pairs.entry((p.cpu, cpu)).or_default() += 1;
    }

    /// The result, once every event is fed: what still waits is unresolved.
    pub fn finish(mut self, kernel_count: Option<u64>) -> IrqTaskResult {
        let waiting = u64::from(self.pending.take().is_some()) + self.awaiting.len() as u64;
        self.counts.unresolved += waiting;
        self.counts.other_cause = std::mem::take(&mut self.causes).into_iter().collect();
        self.counts
            .other_cause
            .sort_by_key(|c| std::cmp::Reverse(c.1));
        IrqTaskResult {
            index: self.spec.index,
            irq: self.spec.irq.clone(),
            task: self.spec.task.clone(),
            irq_names: self.irq_names.into_iter().collect(),
            tids: self.tids.into_iter().collect(),
            from_exit: stats::summarize(&self.from_exit),
            hdr_histogram: stats::hdr_buckets(&self.from_exit),
            from_entry: stats::summarize(&self.from_entry),
            cpu_pairs: self
                .pairs
                .into_iter()
                .map(|((irq_cpu, task_cpu), samples)| CpuPair {
                    irq_cpu,
                    task_cpu,
                    samples,
                })
                .collect(),
            counts: self.counts,
            kernel_count,
            kernel_count_within: None,
            lost_events: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::parse;

    fn run(text: &str, irq: IrqSelector, task: TaskSelector) -> IrqTaskResult {
        let mut m = Matcher::new(IrqTaskSpec {
            index: 0,
            irq,
            task,
        })
        .unwrap();
        for e in text.lines().filter_map(parse::line) {
            m.feed(&e);
        }
        m.finish(None)
    }

    /// Brute force over the text: each handler exit of the IRQ, paired with
    /// the next switch-in of `comm` logged after a waking of it.
    fn by_hand(text: &str, irq: &str, comm: &str) -> Vec<u64> {
        let events: Vec<Event> = text.lines().filter_map(parse::line).collect();
        let mut out = Vec::new();
        for (i, e) in events.iter().enumerate() {
            if e.name != "irq_handler_exit" || e.field("irq") != Some(irq) {
                continue;
            }
            let rest = &events[i + 1..];
            let next_irq = rest
                .iter()
                .position(|x| x.name == "irq_handler_exit" && x.field("irq") == Some(irq))
                .unwrap_or(rest.len());
            let Some(w) = rest[..next_irq]
                .iter()
                .position(|x| x.name == "sched_waking" && x.field("comm") == Some(comm))
            else {
                continue;
            };
            if let Some(s) = rest[w..]
                .iter()
                .find(|x| x.name == "sched_switch" && x.field("next_comm") == Some(comm))
            {
                out.push(s.ts_ns - e.ts_ns);
            }
        }
        out
    }

    #[test]
    fn direct_io_on_another_cpu_is_matched_exactly() {
        let text = include_str!("../tests/traces/dio-task-on-other-cpu.txt");
        let r = run(
            text,
            IrqSelector::Name("virtio1-req.0".into()),
            TaskSelector::Name("dd".into()),
        );
        let want = by_hand(text, "36", "dd");
        assert_eq!(r.irq_names, vec![(36, "virtio1-req.0".to_string())]);
        assert_eq!(r.counts.matched as usize, want.len(), "{:?}", r.counts);
        assert_eq!(r.from_exit.max_ns, *want.iter().max().unwrap());
        assert_eq!(r.from_exit.min_ns, *want.iter().min().unwrap());
        let sum: u64 = want.iter().sum();
        assert!((r.from_exit.mean_ns - sum as f64 / want.len() as f64).abs() < 1e-6);
        assert_eq!(r.counts.switch_in_inferred, 0);
        // The handler on CPU 1, dd on CPU 0.
        assert_eq!(r.cpu_pairs.len(), 1);
        assert_eq!((r.cpu_pairs[0].irq_cpu, r.cpu_pairs[0].task_cpu), (1, 0));
        // Every handler exit is accounted for once.
        let c = &r.counts;
        assert_eq!(
            c.irqs,
            c.matched + c.task_running + c.no_wakeup + c.other_cause_total() + c.unresolved
        );
        let exits = text
            .lines()
            .filter(|l| l.contains("irq_handler_exit: irq=36 "))
            .count();
        assert_eq!(c.irqs as usize, exits);
        // From the entry: never shorter than from the exit.
        assert!(r.from_entry.min_ns >= r.from_exit.min_ns);
    }

    #[test]
    fn a_switch_in_the_kernel_did_not_log_is_inferred_and_said() {
        // On the IRQ's CPU this kernel logs no switch from idle to dd:
        // dd's next event is its own switch-out.
        let text = include_str!("../tests/traces/dio-task-on-irq-cpu.txt");
        let r = run(
            text,
            IrqSelector::Number(36),
            TaskSelector::Name("dd".into()),
        );
        let c = &r.counts;
        assert!(c.matched > 10, "{c:?}");
        assert_eq!(c.switch_in_inferred, c.matched);
        assert!(c.inferred_gap_max_ns > 0);
        assert_eq!(r.cpu_pairs[0].irq_cpu, r.cpu_pairs[0].task_cpu);
        // The lower bound: the softirq that woke dd ended, then dd ran.
        let events: Vec<Event> = text.lines().filter_map(parse::line).collect();
        let mut lower = Vec::new();
        for (i, e) in events.iter().enumerate() {
            if e.name == "irq_handler_exit" {
                let rest = &events[i + 1..];
                let Some(run_at) = rest.iter().position(|x| x.comm == "dd") else {
                    continue;
                };
                if rest[..run_at].iter().any(|x| x.name == "sched_waking") {
                    let before = if run_at == 0 { e } else { &rest[run_at - 1] };
                    lower.push(before.ts_ns - e.ts_ns);
                }
            }
        }
        assert_eq!(lower.len() as u64, c.matched);
        assert_eq!(r.from_exit.max_ns, *lower.iter().max().unwrap());
    }

    #[test]
    fn other_causes_and_a_running_task_are_counted_not_sampled() {
        let text = "\
  <idle>-0 [001] d.h1. 10.000100: irq_handler_entry: irq=9 name=dev
  <idle>-0 [001] d.h1. 10.000110: irq_handler_exit: irq=9 ret=handled
  <idle>-0 [001] d.h1. 10.000200: hrtimer_expire_entry: hrtimer=x function=hrtimer_wakeup now=1
  <idle>-0 [001] d.h1. 10.000201: sched_waking: comm=app pid=50 prio=120 target_cpu=001
  <idle>-0 [001] d.h1. 10.000202: hrtimer_expire_exit: hrtimer=x
  <idle>-0 [001] d..2. 10.000210: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=app next_pid=50 next_prio=120
     app-50 [001] d.h1. 10.000300: irq_handler_entry: irq=9 name=dev
     app-50 [001] d.h1. 10.000310: irq_handler_exit: irq=9 ret=handled
     app-50 [001] d..2. 10.000400: sched_switch: prev_comm=app prev_pid=50 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
  <idle>-0 [001] d.h1. 10.000500: irq_handler_entry: irq=9 name=dev
  <idle>-0 [001] d.h1. 10.000510: irq_handler_exit: irq=9 ret=handled
  <idle>-0 [001] d.h1. 10.000600: irq_handler_entry: irq=9 name=dev
  <idle>-0 [001] d.h1. 10.000605: sched_waking: comm=app pid=50 prio=120 target_cpu=001
  <idle>-0 [001] d.h1. 10.000610: irq_handler_exit: irq=9 ret=handled
  <idle>-0 [001] d..2. 10.000650: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=app next_pid=50 next_prio=120
  <idle>-0 [000] d.h1. 10.000700: irq_handler_entry: irq=9 name=dev
  <idle>-0 [000] d.h1. 10.000710: irq_handler_exit: irq=9 ret=handled
";
        let r = run(text, IrqSelector::Number(9), TaskSelector::Pid(50));
        let c = &r.counts;
        // 1: woken by a timer; 2: app running; 3: slept on to the next
        // IRQ; 4: woke app in its handler: 40 µs from its exit to the
        // switch-in; 5: app is running, and the run ends.
        assert_eq!(c.irqs, 5);
        assert_eq!(c.other_cause, vec![("a timer (hrtimer)".to_string(), 1)]);
        assert_eq!(c.task_running, 1);
        assert_eq!(c.no_wakeup, 1);
        assert_eq!(c.matched, 1);
        assert_eq!(c.unresolved, 1);
        assert_eq!((r.from_exit.min_ns, r.from_exit.max_ns), (40_000, 40_000));
        assert_eq!(r.from_entry.max_ns, 50_000);
    }

    #[test]
    fn a_wake_up_in_a_device_softirq_or_the_irq_thread_is_the_irqs() {
        let text = "\
  <idle>-0 [000] d.h1. 20.000100: irq_handler_entry: irq=9 name=dev
  <idle>-0 [000] d.h1. 20.000110: irq_handler_exit: irq=9 ret=handled
  <idle>-0 [000] ..s1. 20.000120: softirq_entry: vec=3 [action=NET_RX]
  <idle>-0 [000] d.s3. 20.000130: sched_waking: comm=app pid=50 prio=120 target_cpu=001
  <idle>-0 [000] ..s1. 20.000140: softirq_exit: vec=3 [action=NET_RX]
  <idle>-0 [001] d..2. 20.000150: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=app next_pid=50 next_prio=120
     app-50 [001] d..2. 20.000200: sched_switch: prev_comm=app prev_pid=50 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
  <idle>-0 [000] d.h1. 20.000300: irq_handler_entry: irq=9 name=dev
  <idle>-0 [000] d.h1. 20.000301: irq_handler_exit: irq=9 ret=wake_thread
 irq/9-dev-77 [000] d..2. 20.000350: sched_waking: comm=app pid=50 prio=120 target_cpu=001
  <idle>-0 [001] d..2. 20.000400: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=app next_pid=50 next_prio=120
";
        let r = run(
            text,
            IrqSelector::Number(9),
            TaskSelector::Name("app".into()),
        );
        assert_eq!(r.counts.matched, 2, "{:?}", r.counts);
        assert_eq!(r.from_exit.min_ns, 40_000);
        assert_eq!(r.from_exit.max_ns, 99_000);
        assert_eq!(r.from_entry.max_ns, 100_000);
        assert_eq!(
            r.cpu_pairs,
            vec![CpuPair {
                irq_cpu: 0,
                task_cpu: 1,
                samples: 2
            }]
        );
    }

    #[test]
    fn a_task_respawned_without_end_keeps_a_bounded_set_of_threads() {
        let mut m = Matcher::new(IrqTaskSpec {
            index: 0,
            irq: IrqSelector::Number(9),
            task: TaskSelector::Name("app".into()),
        })
        .unwrap();
        for pid in 1..=(3 * MAX_TIDS as i32) {
            let line = format!(
                "  <idle>-0 [000] d..2. 1.{pid:06}: sched_switch: prev_comm=app prev_pid={pid} \
                 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120"
            );
            m.feed(&parse::line(&line).unwrap());
            assert!(m.tids().len() <= MAX_TIDS && m.states.len() <= MAX_TIDS + 1);
        }
    }
}

//! IRQ-to-task latency: how long after an interrupt's handler the task
//! that waits for its data starts to run, from the kernel's tracepoints
//! (`irq_handler_entry`/`exit`, `sched_waking`, `sched_switch`, softirqs,
//! hrtimers), read in time order over every CPU. Pure: the trace stream
//! that feeds it is in [`crate::trace::stream`].
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
use crate::stats::{self, HdrBucket, Recorder, Summary};
use crate::trace::consumer::{Consumer, Filter, Learned, StreamEnd, Tracepoint};
use crate::trace::consumer::{StreamResults, StreamSpec};
use crate::trace::event::Event;
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
    /// The run ended before the task woke or ran, or the task was seen
    /// running again without a switch-in to pair (its CPU's earlier events
    /// were not in the trace): never paired with a later switch-in.
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
    /// The worst samples, worst first, with their time: to find an outlier
    /// in a trace (absent in older results, and when none was taken).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub worst: Vec<IrqTaskSample>,
    /// The first and last handler exits seen, on CLOCK_MONOTONIC (ns): the
    /// stretch of a trace recorded beside the run that this one covers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exits_span_ns: Option<(u64, u64)>,
}

/// One kept IRQ-to-task sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IrqTaskSample {
    /// The handler's exit on CLOCK_MONOTONIC (ns): the trace clock.
    pub exit_ns: u64,
    /// The delay from it to the task's switch-in (ns).
    pub latency_ns: u64,
    /// Where the handler ran.
    pub irq_cpu: usize,
    /// Where the task was switched in.
    pub task_cpu: usize,
    /// The thread woken.
    pub tid: i32,
    /// The switch-in was not logged: the delay is a lower bound.
    pub inferred: bool,
}

/// How many of the worst samples an IRQ-to-task measurement keeps.
pub const WORST_KEPT: usize = 20;

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
    worst: Vec<IrqTaskSample>,
    exits_span: Option<(u64, u64)>,
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
            worst: Vec::with_capacity(WORST_KEPT + 1),
            exits_span: None,
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
        match e.name.as_ref() {
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
            // A thread that ended: its number is the task's no more.
            "sched_process_exit" => {
                if let Some(tid) = e.num("pid").and_then(|p| i32::try_from(p).ok()) {
                    self.tids.remove(&tid);
                }
            }
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
            } else {
                // Running, and no earlier event of its CPU to place the
                // switch-in: what waited for it can no longer pair.
                self.drop_awaited(e.pid);
            }
        }
    }

    /// Counts as unresolved what waits for `tid`'s switch-in.
    fn drop_awaited(&mut self, tid: i32) {
        let before = self.awaiting.len();
        self.awaiting.retain(|a| a.0 != tid);
        self.counts.unresolved += (before - self.awaiting.len()) as u64;
    }

    /// `tid`, woken at `woken` by the work of the handler exit `p`, waits
    /// for its switch-in. A wake-up can only follow a sleep, so an older
    /// entry of `tid` is stale (its switch-in went unseen) and never pairs.
    fn await_switch_in(&mut self, tid: i32, p: Pending, woken: u64) {
        self.drop_awaited(tid);
        self.awaiting.push((tid, p, woken));
    }

    fn is_running(&self, tid: i32) -> bool {
        self.states.get(&tid) == Some(&TaskState::Running)
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
        let first = self.exits_span.map_or(e.ts_ns, |s| s.0);
        self.exits_span = Some((first, e.ts_ns));
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
            Some(tid) => self.await_switch_in(tid, p, e.ts_ns),
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
        // Woken while still on its CPU (about to sleep, not yet switched
        // out): it runs on, and no switch-in will come for this wake-up.
        let running = self.is_running(pid);
        if !running {
            self.states.insert(pid, TaskState::Runnable);
        }
        let in_handler = self.cpus[e.cpu]
            .irq
            .is_some_and(|(n, _)| self.irq_matches(n, None));
        if in_handler {
            // The handler now running woke it: an earlier exit woke nothing.
            if let Some(p) = self.pending.take() {
                self.unwoken(p);
            }
            // Running: its exit finds the task busy.
            self.cpus[e.cpu].woken_in_handler = (!running).then_some(pid);
            return;
        }
        let Some(p) = self.pending.take() else {
            return;
        };
        if running {
            self.counts.task_running += 1;
            return;
        }
        match self.other_cause(e) {
            None => self.await_switch_in(pid, p, e.ts_ns),
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
        self.keep_worst(IrqTaskSample {
            exit_ns: p.exit_ns,
            latency_ns: at - p.exit_ns,
            irq_cpu: p.cpu,
            task_cpu: cpu,
            tid,
            inferred: seen_at.is_some(),
        });
    }

    /// Keeps `s` among the [`WORST_KEPT`] worst (ties: the earliest).
    fn keep_worst(&mut self, s: IrqTaskSample) {
        if self.worst.len() == WORST_KEPT
            && self
                .worst
                .last()
                .is_some_and(|w| w.latency_ns >= s.latency_ns)
        {
            return;
        }
        let at = self.worst.partition_point(|w| w.latency_ns >= s.latency_ns);
        self.worst.insert(at, s);
        self.worst.truncate(WORST_KEPT);
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
            worst: self.worst,
            exits_span_ns: self.exits_span,
        }
    }
}

/// Registers one matcher per IRQ-to-task measurement of the spec.
pub fn register(spec: &StreamSpec, out: &mut Vec<Box<dyn Consumer>>) {
    for s in &spec.irq_tasks {
        if let Some(m) = Matcher::new(s.clone()) {
            out.push(Box::new(m));
        }
    }
}

impl Consumer for Matcher {
    /// Every way the IRQ's CPU and the task's are taken, and the task's
    /// syscall exits.
    fn tracepoints(&self) -> Vec<Tracepoint> {
        use crate::trace::event::{CPU_EVENTS, SYS_EXIT};
        CPU_EVENTS.iter().copied().chain([SYS_EXIT]).collect()
    }

    fn filter(&self, tracepoint: &str) -> Option<Filter> {
        (tracepoint == crate::trace::event::SYS_EXIT.name()).then(|| {
            Filter::Terms(crate::trace::consumer::task_terms(
                &self.spec.task,
                &self.tids,
            ))
        })
    }

    fn task(&self) -> Option<&TaskSelector> {
        Some(&self.spec.task)
    }

    fn learn(&mut self, run: &Learned) {
        let tids = (run.threads)(&self.spec.task);
        self.add_tids(tids);
    }

    fn feed(&mut self, e: &Event) {
        Matcher::feed(self, e);
    }

    /// With the kernel's own count of the IRQ over the whole stream and
    /// over the time it was traced.
    fn finish(self: Box<Self>, end: &StreamEnd, into: &mut StreamResults) {
        let numbers: Vec<u32> = match &self.spec.irq {
            IrqSelector::Number(n) => vec![*n],
            IrqSelector::Name(_) => Vec::new(),
        };
        let mut r = Matcher::finish(*self, None);
        let numbers: Vec<u32> = if numbers.is_empty() {
            r.irq_names.iter().map(|(n, _)| *n).collect()
        } else {
            numbers
        };
        let [before, started, before_stop, after] = end.irqs;
        r.kernel_count = kernel_count(before, after, &numbers);
        r.kernel_count_within = kernel_count(started, before_stop, &numbers);
        r.lost_events = end.lost;
        into.irq_tasks.push(r);
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
/// How many times the kernel counted `irqs` between two readings.
fn kernel_count(before: &[(u32, u64)], after: &[(u32, u64)], irqs: &[u32]) -> Option<u64> {
    if irqs.is_empty() {
        return None;
    }
    let total = |t: &[(u32, u64)], n: u32| t.iter().find(|x| x.0 == n).map(|x| x.1);
    irqs.iter()
        .map(|&n| Some(total(after, n)?.saturating_sub(total(before, n)?)))
        .sum()
}

#[cfg(test)]
mod tests;

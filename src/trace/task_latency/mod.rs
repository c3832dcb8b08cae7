//! Task latency: how late any task wakes up, unmodified, from the kernel's
//! tracepoints. For each wake-up of each thread of the task:
//! - woken by a timer it armed itself (`clock_nanosleep`, `nanosleep`,
//!   `timerfd`, POSIX timers, `epoll`/`poll`/`select` timeouts: each arms
//!   an hrtimer from the thread, `hrtimer_start`), the timer slack it was
//!   armed with (`expires - softexpires`: the kernel may fire it that late
//!   on purpose, a per-thread setting), how late the timer's interrupt
//!   handled it past that (expiry handled minus `expires`), how long from
//!   the wake-up to the switch-in, and the total from the requested expiry
//!   (`softexpires`) to the switch-in: the figure a timer thread gives;
//! - woken otherwise, the wake-to-run delay, and who woke it (a thread, an
//!   interrupt, a softirq, another timer);
//! - each cycle's run time (switch-in to the next sleep), the period seen
//!   between switch-ins, and deadline misses against a stated deadline.
//!
//! Each wake-up over the threshold is explained: its delay split into the
//! timer slack used, the timer interrupt's lateness past the slack, and
//! who held the CPU until the switch-in
//! (tasks, interrupts, softirqs), the rest named as such; the parts add up.
//! Pure: the trace stream ([`crate::trace::stream`]) feeds it.

mod cpu;
pub mod kernel;

/// Registers one tracker per task-latency measurement of the spec.
pub fn register(spec: &StreamSpec, out: &mut Vec<Box<dyn Consumer>>) {
    for s in &spec.task_latency {
        out.push(Box::new(Tracker::new(s.clone())));
    }
}

impl Consumer for Tracker {
    /// Every way the task's CPU is taken, its syscall exits and its
    /// timers armed.
    fn tracepoints(&self) -> Vec<Tracepoint> {
        use crate::trace::event::{CPU_EVENTS, SYS_EXIT, TIMER_START};
        CPU_EVENTS
            .iter()
            .copied()
            .chain([SYS_EXIT, TIMER_START])
            .collect()
    }

    /// The syscall exits of the task's threads (or name); its timers armed
    /// by name, or all of them when it is chosen by process: its new
    /// threads arm timers before the next look could add them to a filter.
    fn filter(&self, tracepoint: &str) -> Option<Filter> {
        use crate::trace::event::{SYS_EXIT, TIMER_START};
        let terms = || crate::trace::consumer::task_terms(&self.spec.task, &self.tids);
        if tracepoint == SYS_EXIT.name() {
            return Some(Filter::Terms(terms()));
        }
        (tracepoint == TIMER_START.name()).then(|| match self.spec.task {
            TaskSelector::Name(_) => Filter::Terms(terms()),
            _ => Filter::Everything,
        })
    }

    fn task(&self) -> Option<&TaskSelector> {
        Some(&self.spec.task)
    }

    fn gone_before_start(&mut self) {
        Tracker::gone_before_start(self);
    }

    fn learn(&mut self, run: &Learned) {
        let tids = (run.threads)(&self.spec.task);
        self.add_tids(tids);
    }

    fn feed(&mut self, e: &Event) {
        Tracker::feed(self, e);
    }

    fn finish(self: Box<Self>, end: &StreamEnd, into: &mut StreamResults) {
        into.task_latency
            .push(Tracker::finish(*self, end.lost, end.missing));
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests;

use crate::config::TaskSelector;
use crate::stats::metric_buckets::{METRIC_BUCKETS, metric_bucket};
use crate::stats::{self, HdrBucket, Recorder, Summary};
use crate::trace::consumer::{Consumer, Filter, Learned, StreamEnd, Tracepoint};
use crate::trace::consumer::{StreamResults, StreamSpec};
use crate::trace::event::Event;
use cpu::Occupancy;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What a `task_latency[N]` measures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskLatencySpec {
    /// The stanza index N.
    pub index: usize,
    /// The task.
    pub task: TaskSelector,
    /// The task's stated period (ns): jitter is measured against it.
    pub period_ns: Option<u64>,
    /// Its deadline (ns) from each release (the armed expiry, or the
    /// wake-up): a cycle that ends later is a miss. The period when unset.
    pub deadline_ns: Option<u64>,
    /// Wake-ups later than this are explained.
    pub threshold_ns: Option<u64>,
    /// How many wake-ups to keep one by one (per thread).
    pub samples: usize,
    /// `thread`: the thread (name, or TID) the period and deadline apply
    /// to; None: those that cycle near the period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
}

/// Most threads followed per measurement.
const MAX_THREADS: usize = 256;
/// Most armed timers remembered (a thread arming timers it never lets
/// expire must not grow the table without end).
const MAX_ARMED: usize = 1 << 14;
/// Most wake-ups explained per thread.
const MAX_EXPLAINED: usize = 20;
/// Most wakers named per thread.
const MAX_WAKERS: usize = 32;
/// Most wake-ups kept one by one over all threads of a measurement (each
/// about 100 bytes).
const MAX_SAMPLES_TOTAL: usize = 1_000_000;
/// Histogram range of the per-µs columns (µs).
const HISTO_US: u64 = 1000;
/// The part of a late wake-up that is the timer slack the thread asked for.
pub const PART_SLACK: &str = "timer slack (asked by the thread)";
/// The part that is the timer interrupt's lateness past the slack.
pub const PART_LATE: &str = "timer interrupt late";

/// How a wake-up came.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WakeKind {
    /// By a timer the thread armed.
    Timer,
    /// By anything else.
    Other,
}

/// One wake-up, as kept one by one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WakeUp {
    /// The thread.
    pub tid: i32,
    /// How it came.
    pub kind: WakeKind,
    /// The CPU it ran on.
    pub cpu: usize,
    /// The armed expiry as requested (`softexpires`: the timer's clock,
    /// ns; CLOCK_MONOTONIC for `clock_nanosleep(CLOCK_MONOTONIC)` and
    /// `timerfd`), for a timer.
    pub expiry_ns: Option<u64>,
    /// The timer slack it was armed with (`expires - softexpires`, ns),
    /// for a timer (absent in older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_slack_ns: Option<u64>,
    /// How late the timer's interrupt handled it past the slack (the
    /// handler's `now` minus `expires`, ns; 0 when it came within the
    /// slack), for a timer.
    pub timer_late_ns: Option<u64>,
    /// From the wake-up to the switch-in (ns).
    pub wake_to_run_ns: u64,
    /// From the release (armed expiry, or wake-up) to the switch-in (ns).
    pub latency_ns: u64,
    /// When it was switched in (trace clock, ns).
    pub run_at_ns: u64,
    /// Who woke it.
    pub waker: String,
}

/// A late wake-up explained: its latency split into parts that add up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explained {
    /// The wake-up.
    pub wake_up: WakeUp,
    /// Each part (label, ns), largest first.
    pub parts: Vec<(String, u64)>,
    /// The largest part that is not the timer's lateness or the
    /// unexplained rest: who held the CPU.
    pub blame: Option<String>,
}

/// The figures of one thread of the task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskThreadResult {
    /// The thread.
    pub tid: i32,
    /// Its name.
    pub comm: String,
    /// Wake-ups seen (switch-ins after a wake-up).
    pub wake_ups: u64,
    /// Of them, by its own timer.
    pub timer_wake_ups: u64,
    /// Switch-ins the kernel did not log (out of idle, on some kernels),
    /// taken at the thread's first event after its wake-up (its syscall's
    /// exit): those latencies are high by the time to it (a few µs, or a preemption before it).
    pub switch_ins_inferred: u64,
    /// Release to switch-in, every wake-up.
    pub latency: Summary,
    /// Every sample of it, log-linear (0.1%).
    pub hdr_histogram: Vec<HdrBucket>,
    /// The timer interrupt's lateness past the slack (`now - expires`),
    /// timer wake-ups.
    pub timer_late: Summary,
    /// The timer slack armed (`expires - softexpires`), timer wake-ups
    /// (absent in older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_slack: Option<Summary>,
    /// Wake-up to switch-in, every wake-up.
    pub wake_to_run: Summary,
    /// Switch-in to the next sleep, every cycle.
    pub run_time: Summary,
    /// Switch-in to the next wake-up's switch-in.
    pub period: Summary,
    /// The stated period and deadline apply to it: it is the thread named
    /// by `thread`, or it cycled near the period (its median period seen
    /// within half a period of it), or a deadline alone was stated.
    #[serde(default)]
    pub runs_the_cycle: bool,
    /// |period seen - stated period|, where the period applies.
    pub jitter: Option<Summary>,
    /// Cycles ended past the deadline, where a stated deadline or period
    /// applies.
    pub deadline_misses: Option<u64>,
    /// Who woke it (other than its timers), most first.
    pub wakers: Vec<(String, u64)>,
    /// Its wake-ups over the threshold, explained (the worst kept).
    pub explained: Vec<Explained>,
    /// Its first wake-ups one by one (`samples`).
    pub wake_up_samples: Vec<WakeUp>,
}

/// The figures of a `task_latency[N]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskLatencyResult {
    /// What was measured.
    pub spec: TaskLatencySpec,
    /// Each thread that woke, by TID.
    pub threads: Vec<TaskThreadResult>,
    /// Events the kernel could not keep (the counts are then lower bounds).
    pub lost_events: u64,
    /// Tracepoints missing, or a timer clock this cannot compare.
    pub notes: Vec<String>,
    /// The same task's wake-ups counted in the kernel by the BPF program
    /// (`rtlab task-latency` where it can; absent in results before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf: Option<kernel::TaskLatencyBpf>,
}

/// A timer a thread armed.
#[derive(Debug, Clone, Copy)]
struct Armed {
    tid: i32,
    /// The expiry requested (`softexpires`).
    expiry: u64,
    /// The slack (`expires - softexpires`).
    slack: u64,
}

/// A timer of a thread being handled on a CPU.
#[derive(Debug, Clone, Copy)]
struct Expiring {
    armed: Option<Armed>,
    /// Since the requested expiry (the handler's `now` minus
    /// `softexpires`): the slack used plus the lateness.
    since: u64,
    /// How late past the slack (the handler's `now` minus `expires`).
    late: u64,
    at: u64,
}

/// A wake-up awaiting its switch-in.
#[derive(Debug, Clone)]
struct Pending {
    kind: WakeKind,
    woken: u64,
    expiry: Option<u64>,
    slack: Option<u64>,
    late: Option<u64>,
    /// The slack used: from the release to `expires` or the handling.
    slack_used: u64,
    /// The trace-clock time of the release.
    release: u64,
    waker: String,
}

/// A cycle running: since when, and its release.
#[derive(Debug, Clone, Copy)]
struct Cycle {
    since: u64,
    release: u64,
}

struct Thread {
    comm: String,
    latency: Recorder,
    timer_late: Recorder,
    timer_slack: Recorder,
    wake_to_run: Recorder,
    run_time: Recorder,
    period: Recorder,
    jitter: Recorder,
    wake_ups: u64,
    timer_wake_ups: u64,
    misses: u64,
    inferred: u64,
    pending: Option<Pending>,
    cycle: Option<Cycle>,
    running: bool,
    last_switch_in: Option<u64>,
    wakers: BTreeMap<String, u64>,
    explained: Vec<Explained>,
    samples: Vec<WakeUp>,
    /// The last wake-up's latency (ns), for the live view.
    last_ns: u64,
    /// Latencies per bucket of the metrics' bounds, for monitoring.
    buckets: [u64; METRIC_BUCKETS],
}

/// One thread's figures so far, for the live view and the metrics of a
/// monitoring run: the same samples the result's figures are made of.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ThreadLive {
    /// The thread.
    pub tid: i32,
    /// Its name.
    pub comm: String,
    /// Wake-ups so far.
    pub wake_ups: u64,
    /// Smallest, largest and last latency (ns; 0 before a wake-up).
    pub min_ns: u64,
    /// Largest latency (ns).
    pub max_ns: u64,
    /// The last wake-up's latency (ns).
    pub cur_ns: u64,
    /// Sum of latencies (ns).
    pub sum_ns: u64,
    /// Latencies per bucket of the metrics histogram's bounds, and the rest.
    pub buckets: Vec<u64>,
    /// Cycles ended past the deadline, where the stated period or deadline
    /// applies to the thread as its figures stand now (as the result
    /// decides at the end: [`runs_the_cycle`]).
    pub deadline_misses: Option<u64>,
}

impl Thread {
    fn new(comm: &str) -> Option<Thread> {
        let r = || Recorder::new(HISTO_US).ok();
        Some(Thread {
            comm: comm.to_string(),
            latency: r()?,
            timer_late: r()?,
            timer_slack: r()?,
            wake_to_run: r()?,
            run_time: r()?,
            period: r()?,
            jitter: r()?,
            wake_ups: 0,
            timer_wake_ups: 0,
            misses: 0,
            inferred: 0,
            pending: None,
            cycle: None,
            running: false,
            last_switch_in: None,
            wakers: BTreeMap::new(),
            explained: Vec::new(),
            samples: Vec::new(),
            last_ns: 0,
            buckets: [0; METRIC_BUCKETS],
        })
    }
}

/// Follows one `task_latency[N]` over the trace.
pub struct Tracker {
    spec: TaskLatencySpec,
    tids: BTreeSet<i32>,
    threads: BTreeMap<i32, Thread>,
    /// Timers armed by the task's threads, by the timer's address.
    armed: HashMap<String, Armed>,
    /// Per CPU: the timer being handled, if any.
    expiring: Vec<Option<Expiring>>,
    cpus: Occupancy,
    /// Wake-ups kept one by one so far, over all threads.
    samples_kept: usize,
    /// The process given by PID ended (or was gone at the start): its
    /// number is followed no more.
    ended: Option<Ended>,
}

/// How a process given by PID stopped being followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It was gone when the run started.
    BeforeStart,
    /// It ended during the run (`sched_process_exit`, trace clock, ns).
    At(u64),
}

impl Tracker {
    /// A tracker for `spec`.
    pub fn new(spec: TaskLatencySpec) -> Tracker {
        let tids = match spec.task {
            TaskSelector::Pid(pid) => BTreeSet::from([pid]),
            _ => BTreeSet::new(),
        };
        Tracker {
            spec,
            tids,
            threads: BTreeMap::new(),
            armed: HashMap::new(),
            expiring: Vec::new(),
            cpus: Occupancy::default(),
            samples_kept: 0,
            ended: None,
        }
    }

    /// The process given by PID was gone when the run started: nothing
    /// under its number is the task's.
    pub fn gone_before_start(&mut self) {
        self.tids.clear();
        self.ended = Some(Ended::BeforeStart);
    }

    /// A thread ended (`sched_process_exit`): its number is the task's no
    /// more, whoever gets it next (a thread of the task again is added
    /// back from `/proc`, a process given by PID never: it is pinned).
    fn exited(&mut self, e: &Event) {
        let Some(tid) = e.num("pid").and_then(|p| i32::try_from(p).ok()) else {
            return;
        };
        if self.tids.remove(&tid) && self.spec.task == TaskSelector::Pid(tid) {
            self.ended = Some(Ended::At(e.ts_ns));
        }
        // Its way out is no cycle: its last stretch is not counted.
        if let Some(t) = self.threads.get_mut(&tid) {
            t.cycle = None;
        }
    }

    /// What it measures.
    pub fn spec(&self) -> &TaskLatencySpec {
        &self.spec
    }

    /// The threads recognised as the task so far.
    pub fn tids(&self) -> &BTreeSet<i32> {
        &self.tids
    }

    /// Adds threads of the task (read by the caller from `/proc`).
    pub fn add_tids(&mut self, tids: impl IntoIterator<Item = i32>) {
        for tid in tids {
            if self.tids.len() < MAX_THREADS * 4 {
                self.tids.insert(tid);
            }
        }
    }

    fn is_task(&mut self, pid: i64, comm: Option<&str>) -> bool {
        let Ok(pid) = i32::try_from(pid) else {
            return false;
        };
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

    fn thread(&mut self, tid: i32, comm: &str) -> Option<&mut Thread> {
        if !self.threads.contains_key(&tid) && self.threads.len() < MAX_THREADS {
            self.threads.insert(tid, Thread::new(comm)?);
        }
        let t = self.threads.get_mut(&tid)?;
        if t.comm != comm && !comm.starts_with('<') {
            t.comm = comm.to_string();
        }
        Some(t)
    }

    /// Follows one event (every CPU's, in time order).
    pub fn feed(&mut self, e: &Event) {
        self.cpus.feed(e);
        self.seen_running(e);
        match e.name.as_ref() {
            "hrtimer_start" => self.timer_armed(e),
            "hrtimer_expire_entry" => self.timer_expiring(e),
            "hrtimer_expire_exit" => {
                if let Some(slot) = self.expiring.get_mut(e.cpu) {
                    *slot = None;
                }
            }
            "sched_waking" => self.woken(e),
            "sched_switch" => self.switched(e),
            "sched_process_exit" => self.exited(e),
            _ => {}
        }
    }

    /// A thread woken and not yet switched in that is seen running (an
    /// event of its own, such as its syscall's exit): some kernels log no
    /// switch out of idle, so the switch-in is taken here, a little
    /// late (counted as inferred).
    fn seen_running(&mut self, e: &Event) {
        if e.pid <= 0 || !self.tids.contains(&e.pid) {
            return;
        }
        let Some(t) = self.threads.get_mut(&e.pid) else {
            return;
        };
        if t.running || t.pending.is_none() {
            return;
        }
        t.running = true;
        t.inferred += 1;
        self.ran(e.pid, e.cpu, e.ts_ns);
    }

    fn timer_armed(&mut self, e: &Event) {
        if !self.is_task(i64::from(e.pid), Some(&e.comm)) {
            return;
        }
        // Arming its next wait (a sleeper's timer, `hrtimer_wakeup`) ends
        // the thread's cycle: a loop behind its releases (an absolute sleep
        // already past) is woken while it still runs and never switches
        // out asleep, so its sleep alone would merge a run of missed cycles
        // into one. Other timers armed in its context (the tick restarted
        // at an interrupt's exit, a timer it sets for later) end nothing.
        if e.field("function") == Some("hrtimer_wakeup") {
            self.end_cycle(e.pid, e.ts_ns);
        }
        let (Some(timer), Some(soft)) = (e.field("hrtimer"), e.num("softexpires")) else {
            return;
        };
        // Both readers give both fields; a kernel without `expires` (none
        // known) is taken as armed without slack.
        let hard = e.num("expires").unwrap_or(soft).max(soft);
        if self.armed.len() >= MAX_ARMED {
            self.armed.clear();
        }
        self.armed.insert(
            timer.to_string(),
            Armed {
                tid: e.pid,
                expiry: soft.max(0) as u64,
                slack: hard.saturating_sub(soft).max(0) as u64,
            },
        );
    }

    fn timer_expiring(&mut self, e: &Event) {
        if e.cpu >= cpu::MAX_CPU {
            return;
        }
        if self.expiring.len() <= e.cpu {
            self.expiring.resize(e.cpu + 1, None);
        }
        let armed = e.field("hrtimer").and_then(|t| self.armed.remove(t));
        let now = e.num("now").unwrap_or(0).max(0) as u64;
        let since = armed.map_or(0, |a| now.saturating_sub(a.expiry));
        let late = armed.map_or(0, |a| since.saturating_sub(a.slack));
        self.expiring[e.cpu] = Some(Expiring {
            armed,
            since,
            late,
            at: e.ts_ns,
        });
    }

    /// Who woke a thread, as the wake-up's CPU shows it: the interrupt
    /// it was in, else the task that ran.
    fn waker(&self, e: &Event) -> String {
        self.cpus
            .context(e.cpu)
            .unwrap_or_else(|| cpu::task_label(&e.comm, i64::from(e.pid)))
    }

    fn woken(&mut self, e: &Event) {
        let Some(tid) = e.num("pid") else { return };
        let comm = e.field("comm").unwrap_or("?").to_string();
        if !self.is_task(tid, Some(&comm)) {
            return;
        }
        let tid = tid as i32;
        let expiring = self.expiring.get(e.cpu).copied().flatten();
        let own = expiring.filter(|x| x.armed.is_some_and(|a| a.tid == tid));
        let waker = match (own, expiring) {
            (Some(_), _) => "its timer".to_string(),
            (None, Some(_)) => format!("a timer on CPU {}", e.cpu),
            (None, None) => self.waker(e),
        };
        let Some(t) = self.thread(tid, &comm) else {
            return;
        };
        if t.pending.is_some() {
            return; // Woken twice before it ran: the first counts.
        }
        let pending = match own {
            Some(x) => Pending {
                kind: WakeKind::Timer,
                woken: e.ts_ns,
                expiry: x.armed.map(|a| a.expiry),
                slack: x.armed.map(|a| a.slack),
                late: Some(x.late),
                slack_used: x.since - x.late,
                release: x.at.saturating_sub(x.since),
                waker,
            },
            None => Pending {
                kind: WakeKind::Other,
                woken: e.ts_ns,
                expiry: None,
                slack: None,
                late: None,
                slack_used: 0,
                release: e.ts_ns,
                waker,
            },
        };
        if t.running {
            // Woken before it slept: it runs on at once.
            t.pending = Some(pending);
            self.ran(tid, e.cpu, e.ts_ns);
        } else {
            t.pending = Some(pending);
        }
    }

    fn switched(&mut self, e: &Event) {
        let prev = e.num("prev_pid").unwrap_or(-1);
        if self.is_task(prev, e.field("prev_comm")) {
            let state = e.field("prev_state").unwrap_or("R");
            let slept = !state.starts_with('R');
            self.left(prev as i32, slept, e.ts_ns);
        }
        let next = e.num("next_pid").unwrap_or(-1);
        let comm = e.field("next_comm").unwrap_or("?").to_string();
        if self.is_task(next, Some(&comm)) {
            let tid = next as i32;
            let Some(t) = self.thread(tid, &comm) else {
                return;
            };
            if !t.running {
                t.running = true;
                self.ran(tid, e.cpu, e.ts_ns);
            }
        }
    }

    /// Thread `tid` left its CPU at `at`: asleep (a cycle ends) or
    /// preempted.
    fn left(&mut self, tid: i32, slept: bool, at: u64) {
        let Some(t) = self.threads.get_mut(&tid) else {
            return;
        };
        t.running = false;
        if slept {
            self.end_cycle(tid, at);
        }
    }

    /// Thread `tid`'s cycle, if one is open, ends at `at` (it sleeps, or
    /// arms its next wait): its run time, and a miss past the deadline.
    fn end_cycle(&mut self, tid: i32, at: u64) {
        let deadline = self.spec.deadline_ns.or(self.spec.period_ns);
        let Some(t) = self.threads.get_mut(&tid) else {
            return;
        };
        if let Some(c) = t.cycle.take() {
            t.run_time.record(at.saturating_sub(c.since));
            if deadline.is_some_and(|d| at.saturating_sub(c.release) > d) {
                t.misses += 1;
            }
        }
    }

    /// Thread `tid` runs on `cpu` from `at`: a wake-up ends if one waited.
    fn ran(&mut self, tid: i32, cpu: usize, at: u64) {
        let threshold = self.spec.threshold_ns;
        let (period, keep) = (self.spec.period_ns, self.spec.samples);
        let Some(t) = self.threads.get_mut(&tid) else {
            return;
        };
        let Some(p) = t.pending.take() else { return };
        let wake_to_run = at.saturating_sub(p.woken);
        let latency = at.saturating_sub(p.release);
        let w = WakeUp {
            tid,
            kind: p.kind,
            cpu,
            expiry_ns: p.expiry,
            timer_slack_ns: p.slack,
            timer_late_ns: p.late,
            wake_to_run_ns: wake_to_run,
            latency_ns: latency,
            run_at_ns: at,
            waker: p.waker.clone(),
        };
        t.wake_ups += 1;
        t.latency.record(latency);
        t.last_ns = latency;
        t.buckets[metric_bucket(latency)] += 1;
        t.wake_to_run.record(wake_to_run);
        if let Some(late) = p.late {
            t.timer_wake_ups += 1;
            t.timer_late.record(late);
            t.timer_slack.record(p.slack.unwrap_or(0));
        } else if t.wakers.len() < MAX_WAKERS || t.wakers.contains_key(&p.waker) {
            *t.wakers.entry(p.waker.clone()).or_default() += 1;
        }
        let first = t.last_switch_in.is_none();
        if let Some(last) = t.last_switch_in.replace(at) {
            let seen = at.saturating_sub(last);
            t.period.record(seen);
            if let Some(stated) = period {
                t.jitter.record(seen.abs_diff(stated));
            }
        }
        // A thread's first wake-up that no timer of its own made (a program
        // let go by rtlab's start, its set-up before its first timer) opens
        // no cycle: its release is not known.
        t.cycle = (!first || p.kind == WakeKind::Timer).then_some(Cycle {
            since: at,
            release: p.release,
        });
        if t.samples.len() < keep && self.samples_kept < MAX_SAMPLES_TOTAL {
            t.samples.push(w.clone());
            self.samples_kept += 1;
        }
        if threshold.is_some_and(|th| latency > th) {
            let parts = self.parts(&p, cpu, at);
            self.keep_explained(tid, w, parts);
        }
    }

    /// A late wake-up's parts: the timer slack used and the timer's
    /// lateness past it, then who held the CPU from the wake-up to the
    /// switch-in, then what no event covers.
    fn parts(&self, p: &Pending, cpu: usize, at: u64) -> Vec<(String, u64)> {
        let total = at.saturating_sub(p.release);
        let mut parts = Vec::new();
        let mut from = p.release;
        if let Some(late) = p.late {
            if p.slack_used > 0 {
                parts.push((PART_SLACK.to_string(), p.slack_used));
            }
            parts.push((PART_LATE.to_string(), late));
            from = p.release.saturating_add(p.slack_used).saturating_add(late);
        }
        parts.extend(self.cpus.held(cpu, from, at));
        let covered: u64 = parts.iter().map(|p| p.1).sum();
        if covered < total {
            parts.push(("wake-up and switch (no event)".into(), total - covered));
        }
        parts.sort_by_key(|p| std::cmp::Reverse(p.1));
        parts
    }

    fn keep_explained(&mut self, tid: i32, w: WakeUp, parts: Vec<(String, u64)>) {
        let Some(t) = self.threads.get_mut(&tid) else {
            return;
        };
        // The largest part but the thread's own, when it is someone's: a
        // 9 µs softirq is not what held a wake-up of which 3.4 ms no event
        // covers.
        let blame = parts
            .iter()
            .find(|p| !p.0.ends_with(&format!("-{tid}")))
            .filter(|p| p.0 != PART_LATE && p.0 != PART_SLACK && !p.0.contains("(no event)"))
            .map(|p| p.0.clone());
        let e = Explained {
            wake_up: w,
            parts,
            blame,
        };
        if t.explained.len() < MAX_EXPLAINED {
            t.explained.push(e);
        } else if let Some(min) = t.explained.iter_mut().min_by_key(|x| x.wake_up.latency_ns)
            && min.wake_up.latency_ns < e.wake_up.latency_ns
        {
            *min = e;
        }
    }

    /// Each thread's figures so far (those that woke), by TID.
    pub fn live(&self) -> Vec<ThreadLive> {
        let has_deadline = self.spec.deadline_ns.or(self.spec.period_ns).is_some();
        self.threads
            .iter()
            .filter(|(_, t)| t.wake_ups > 0)
            .map(|(&tid, t)| {
                let applies = has_deadline
                    && runs_the_cycle(&self.spec, tid, &t.comm, &stats::summarize(&t.period));
                ThreadLive {
                    tid,
                    comm: t.comm.clone(),
                    wake_ups: t.wake_ups,
                    min_ns: t.latency.min_ns.min(t.latency.max_ns),
                    max_ns: t.latency.max_ns,
                    cur_ns: t.last_ns,
                    sum_ns: u64::try_from(t.latency.sum_ns).unwrap_or(u64::MAX),
                    buckets: t.buckets.to_vec(),
                    deadline_misses: applies.then_some(t.misses),
                }
            })
            .collect()
    }

    /// The result, once every event is fed.
    pub fn finish(self, lost_events: u64, missing: &[String]) -> TaskLatencyResult {
        let mut notes = Vec::new();
        if !missing.is_empty() {
            notes.push(format!(
                "tracepoints this kernel lacks: {}",
                missing.join(", ")
            ));
        }
        if let (TaskSelector::Pid(pid), Some(ended)) = (&self.spec.task, self.ended) {
            notes.push(match ended {
                Ended::BeforeStart => format!(
                    "process {pid} was gone when the run started: nothing was measured under its number"
                ),
                Ended::At(ns) => format!(
                    "process {pid} ended during the run (trace clock {}.{:06} s): nothing after is counted under its number, which may be another process's",
                    ns / 1_000_000_000,
                    ns % 1_000_000_000 / 1000
                ),
            });
        }
        let spec = self.spec;
        let threads: Vec<TaskThreadResult> = self
            .threads
            .into_iter()
            .filter(|(_, t)| t.wake_ups > 0)
            .map(|(tid, t)| thread_result(&spec, tid, t))
            .collect();
        notes.extend(cycle_note(&spec, &threads));
        TaskLatencyResult {
            spec,
            threads,
            lost_events,
            notes,
            bpf: None,
        }
    }
}

/// Whether the stated period and deadline apply to a thread: the one
/// named by `thread` (its name, or its TID), else each whose median period
/// seen is within half a period of the stated one; a deadline stated
/// without a period applies to every thread.
fn runs_the_cycle(spec: &TaskLatencySpec, tid: i32, comm: &str, period: &Summary) -> bool {
    match (&spec.thread, spec.period_ns) {
        (Some(named), _) => named == comm || named.parse::<i32>() == Ok(tid),
        (None, Some(stated)) => period.samples > 0 && median(period).abs_diff(stated) <= stated / 2,
        (None, None) => true,
    }
}

fn median(s: &Summary) -> u64 {
    s.percentiles
        .iter()
        .find(|p| p.name == "p50")
        .map_or(0, |p| p.value_ns)
}

/// One thread's figures; jitter and deadline misses only where the stated
/// period and deadline apply.
fn thread_result(spec: &TaskLatencySpec, tid: i32, mut t: Thread) -> TaskThreadResult {
    let has_deadline = spec.deadline_ns.or(spec.period_ns).is_some();
    t.explained
        .sort_by_key(|e| std::cmp::Reverse(e.wake_up.latency_ns));
    let mut wakers: Vec<(String, u64)> = t.wakers.into_iter().collect();
    wakers.sort_by_key(|w| std::cmp::Reverse(w.1));
    let period = stats::summarize(&t.period);
    let cycle = runs_the_cycle(spec, tid, &t.comm, &period);
    TaskThreadResult {
        tid,
        comm: t.comm,
        wake_ups: t.wake_ups,
        timer_wake_ups: t.timer_wake_ups,
        switch_ins_inferred: t.inferred,
        latency: stats::summarize(&t.latency),
        hdr_histogram: stats::hdr_buckets(&t.latency),
        timer_late: stats::summarize(&t.timer_late),
        timer_slack: Some(stats::summarize(&t.timer_slack)),
        wake_to_run: stats::summarize(&t.wake_to_run),
        run_time: stats::summarize(&t.run_time),
        period,
        runs_the_cycle: cycle && has_deadline,
        jitter: (cycle && spec.period_ns.is_some()).then(|| stats::summarize(&t.jitter)),
        deadline_misses: (cycle && has_deadline).then_some(t.misses),
        wakers,
        explained: t.explained,
        wake_up_samples: t.samples,
    }
}

/// A note when the stated period (or deadline) applies to no thread.
fn cycle_note(spec: &TaskLatencySpec, threads: &[TaskThreadResult]) -> Option<String> {
    if spec.deadline_ns.or(spec.period_ns).is_none() || threads.iter().any(|t| t.runs_the_cycle) {
        return None;
    }
    if let Some(named) = &spec.thread {
        return Some(format!(
            "no thread named {named:?} (by name or TID) woke: the period and deadline applied to none"
        ));
    }
    let seen: Vec<String> = threads
        .iter()
        .take(8)
        .map(|t| {
            format!(
                "{} (TID {}) {:.1} µs",
                t.comm,
                t.tid,
                median(&t.period) as f64 / 1000.0
            )
        })
        .collect();
    Some(format!(
        "no thread cycled near the stated period (median periods seen: {}): jitter and deadline \
         misses are not counted; name the thread that runs the cycle with `thread` (`--thread`)",
        if seen.is_empty() {
            "none".to_string()
        } else {
            seen.join(", ")
        }
    ))
}

//! The trace stream: for the isolation audit and IRQ-to-task latency,
//! rtlab traces every CPU in a second tracefs instance of its own (not in
//! overwrite mode: events are kept and consumed), reads its `trace_pipe`
//! on the main thread while the run goes on, and feeds each event, in
//! time order, to the audit ([`crate::trace::audit`]) and to each IRQ-to-task
//! matcher ([`crate::trace::irq_task`]). Events the kernel could not keep are
//! counted from its own per-CPU counters.

use crate::config::TaskSelector;
use crate::sys::SysRoot;
use crate::sys::journal::Journal;
use crate::sys::tasks::Pinned;
use crate::sys::trace::{self, Instance, Recording};
use crate::trace::audit::{Audit, AuditReport, Promises, TaskInfo};
use crate::trace::irq_task::{IrqTaskResult, IrqTaskSpec, Matcher};
use crate::trace::source::{Reader, Source};
use crate::trace::task_latency::{TaskLatencyResult, TaskLatencySpec, Tracker};

/// What the stream must feed.
#[derive(Debug, Clone, Default)]
pub struct StreamSpec {
    /// The CPUs the audit watches, if any.
    pub audit_cpus: Option<Vec<usize>>,
    /// The IRQ-to-task measurements.
    pub irq_tasks: Vec<IrqTaskSpec>,
    /// The task-latency measurements.
    pub task_latency: Vec<TaskLatencySpec>,
    /// The timer threads' IRQ side (`irq_latency`).
    pub timer_irq: bool,
}

/// Ring buffer per CPU (KiB): with a look every 20 ms, room for bursts
/// of about 100k events a second per CPU.
pub const BUFFER_KB: u64 = 4096;
/// Most bytes read from the pipe at one look (the rest waits for the
/// next).
const MAX_READ: usize = 16 << 20;

/// What a stream found, once finished.
pub struct StreamResults {
    /// The isolation audit.
    pub audit: Option<AuditReport>,
    /// The IRQ-to-task measurements.
    pub irq_tasks: Vec<IrqTaskResult>,
    /// The task-latency measurements.
    pub task_latency: Vec<TaskLatencyResult>,
    /// The timer threads' IRQ side.
    pub timer_irq: Vec<crate::trace::timer_irq::TimerIrqResult>,
}

/// A running trace stream.
pub struct TraceStream {
    root: SysRoot,
    /// Declared before the instance: fields drop in order, and the
    /// instance cannot be removed while its pipes are open. Its buffers
    /// are kept, with their capacity, from look to look: freeing a large
    /// buffer would make the kernel flush the TLBs of every CPU this
    /// process runs on, an IPI to the measured CPUs.
    source: Source,
    instance: Instance,
    audit: Option<Audit>,
    matchers: Vec<Matcher>,
    trackers: Vec<Tracker>,
    timer_irq: Option<crate::trace::timer_irq::TimerIrq>,
    cpus: Vec<usize>,
    /// `/proc/interrupts` totals per IRQ number before the trace started,
    /// and just after.
    irqs_before: Vec<(u32, u64)>,
    irqs_started: Vec<(u32, u64)>,
    events: u64,
    /// Tracepoints this kernel lacks.
    pub missing: Vec<String>,
    /// The syscall exits' filter in effect (None: not traced).
    task_filter: Option<String>,
    /// The timer arms' filter in effect (None: not traced).
    timer_filter: Option<String>,
    /// What the stream cost the main thread.
    cost: crate::trace::audit::StreamCost,
    /// The processes given by PID, pinned when the stream started (None:
    /// gone by then).
    pins: Vec<(i32, Option<Pinned>)>,
}

/// The tracepoints without which the stream's figures are wrong: the
/// first of [`trace::STREAM_EVENTS`] (the others are another
/// architecture's, or add detail).
pub fn core_events() -> &'static [&'static str] {
    &trace::STREAM_EVENTS[..trace::STREAM_CORE_EVENTS]
}

/// The tasks' syscall exits: each bounds a switch-in not logged.
const SYS_EXIT: &str = "raw_syscalls/sys_exit";
/// The tasks' timers armed: each gives the expiry a timer wake-up is late
/// from (filtered to the tasks' threads).
const TIMER_START: &str = "timer/hrtimer_start";
/// Most threads named in the syscall exits' filter.
const MAX_FILTERED_TIDS: usize = 64;

impl TraceStream {
    /// Mounts tracefs if needed, makes the stream's instance on every
    /// online CPU (both through `journal`) and starts it. Err says why
    /// there is no stream.
    pub fn start(
        root: &SysRoot,
        journal: &mut Journal,
        spec: &StreamSpec,
        online: &[usize],
    ) -> Result<Self, trace::TraceError> {
        let started = std::time::Instant::now();
        let tracefs = trace::mount(root, journal)?;
        let instance = Instance::create(root, journal, &tracefs, "-stream")?;
        let irqs_before = crate::sys::irq::totals(root);
        // Following the IRQ side alone needs the timers' events only.
        let irq_side_only = spec.timer_irq
            && spec.audit_cpus.is_none()
            && spec.irq_tasks.is_empty()
            && spec.task_latency.is_empty();
        let events = match irq_side_only {
            true => trace::IRQ_SIDE_EVENTS,
            false => trace::STREAM_EVENTS,
        };
        let missing = instance.start(&Recording {
            cpus: online.to_vec(),
            buffer_kb: BUFFER_KB,
            overwrite: false,
            events,
            extra: Vec::new(),
        })?;
        let irqs_started = crate::sys::irq::totals(root);
        let matchers: Vec<Matcher> = spec
            .irq_tasks
            .iter()
            .filter_map(|s| Matcher::new(s.clone()))
            .collect();
        let trackers: Vec<Tracker> = spec
            .task_latency
            .iter()
            .map(|s| Tracker::new(s.clone()))
            .collect();
        let timer_irq = spec
            .timer_irq
            .then(crate::trace::timer_irq::TimerIrq::default);
        // The filtered events go on now, before the decoder is made (it
        // reads the kernel's symbols, tens of ms): a task's timers armed
        // meanwhile would be missed.
        let mut missing = missing;
        let (task_filter, timer_filter) = enable_filtered(
            &instance,
            &matchers,
            &trackers,
            timer_irq.as_ref(),
            &mut missing,
        );
        // Decoded: every event of the stream, and those enabled with a
        // filter above.
        let mut decoded = events.to_vec();
        decoded.extend([SYS_EXIT, TIMER_START]);
        let source = Source::open(root, &instance, online, &decoded)?;
        let mut stream = TraceStream {
            root: root.clone(),
            instance,
            source,
            audit: spec.audit_cpus.as_deref().map(Audit::new),
            matchers,
            trackers,
            timer_irq,
            cpus: online.to_vec(),
            irqs_before,
            irqs_started,
            events: 0,
            missing,
            task_filter,
            timer_filter,
            cost: crate::trace::audit::StreamCost::default(),
            pins: Vec::new(),
        };
        stream.pin_tasks();
        stream.cost.reader = match stream.source.reader() {
            Reader::Raw => "binary".into(),
            Reader::Text => "text".into(),
        };
        stream.cost.start_ns = started.elapsed().as_nanos() as u64;
        Ok(stream)
    }

    /// Pins each process given by PID ([`Pinned`]): its threads are read
    /// from `/proc` only while it is the process pinned, and one gone
    /// already is measured not at all.
    fn pin_tasks(&mut self) {
        let pids: Vec<i32> = self
            .matchers
            .iter()
            .map(|m| &m.spec().task)
            .chain(self.trackers.iter().map(|t| &t.spec().task))
            .filter_map(|t| match t {
                TaskSelector::Pid(p) => Some(*p),
                _ => None,
            })
            .collect();
        for pid in pids {
            if !self.pins.iter().any(|(p, _)| *p == pid) {
                self.pins.push((pid, Pinned::pin(&self.root, pid)));
            }
        }
        let gone = |task: &TaskSelector| matches!(task, TaskSelector::Pid(p) if self.pins.iter().any(|(q, pin)| q == p && pin.is_none()));
        for t in &mut self.trackers {
            if gone(&t.spec().task) {
                t.gone_before_start();
            }
        }
    }

    /// The filter of the syscall exits ([`task_filter_of`]).
    fn task_filter(&self) -> String {
        task_filter_of(&self.matchers, &self.trackers)
    }

    /// The filter of the timer arms ([`timer_filter_of`]).
    fn timer_filter(&self) -> String {
        timer_filter_of(&self.trackers, self.timer_irq.as_ref())
    }

    /// Reads what the kernel traced since the last look and feeds it.
    /// `measured` are the timer threads, `programs` the running programs
    /// (index, PID), `timers` the timer threads (index, TID, first
    /// deadline measured).
    pub fn look(
        &mut self,
        measured: &[i32],
        programs: &[(usize, i32)],
        timers: &[(usize, i32, u64)],
    ) {
        let started = std::time::Instant::now();
        if let Some(t) = self.timer_irq.as_mut() {
            t.set_timers(timers);
        }
        self.learn_tasks(programs);
        if let Some(a) = self.audit.as_mut() {
            a.set_measured(measured);
        }
        self.read(false);
        self.describe_new_tasks();
        self.cost.reads += 1;
        self.cost.read_ns += started.elapsed().as_nanos() as u64;
    }

    /// Each timer thread's IRQ side so far (index, metrics buckets, sum
    /// ns), for monitoring.
    pub fn timer_irq_live(&self) -> Vec<(usize, Vec<u64>, u64)> {
        self.timer_irq
            .as_ref()
            .map(crate::trace::timer_irq::TimerIrq::live)
            .unwrap_or_default()
    }

    /// Each task-latency measurement's threads so far (N of
    /// `task_latency[N]`, its threads), for the live view and monitoring.
    pub fn task_latency_live(&self) -> Vec<(usize, Vec<crate::trace::task_latency::ThreadLive>)> {
        self.trackers
            .iter()
            .map(|t| (t.spec().index, t.live()))
            .collect()
    }

    /// Which reader the stream uses.
    pub fn reader(&self) -> Reader {
        self.source.reader()
    }

    /// Feeds what the kernel holds now (`last`: all of it).
    fn read(&mut self, last: bool) {
        let (audit, matchers, events) = (&mut self.audit, &mut self.matchers, &mut self.events);
        let trackers = &mut self.trackers;
        let timer_irq = &mut self.timer_irq;
        self.source.read(MAX_READ, last, |e| {
            if let Some(t) = timer_irq.as_mut() {
                t.feed(e);
            }
            *events += 1;
            if let Some(a) = audit.as_mut() {
                a.feed(e);
            }
            for m in matchers.iter_mut() {
                m.feed(e);
            }
            for t in trackers.iter_mut() {
                t.feed(e);
            }
        });
    }

    /// The threads of tasks chosen by PID or program, as they are now.
    fn learn_tasks(&mut self, programs: &[(usize, i32)]) {
        let (root, pins) = (&self.root, &self.pins);
        for m in &mut self.matchers {
            m.add_tids(threads_of(root, pins, &m.spec().task, programs));
        }
        for t in &mut self.trackers {
            t.add_tids(threads_of(root, pins, &t.spec().task, programs));
        }
        if let Some(old) = &self.task_filter {
            let new = self.task_filter();
            if *old != new && self.instance.set_filter(SYS_EXIT, &new).is_ok() {
                self.task_filter = Some(new);
            }
        }
        if let Some(old) = &self.timer_filter {
            let new = self.timer_filter();
            if *old != new && self.instance.set_filter(TIMER_START, &new).is_ok() {
                self.timer_filter = Some(new);
            }
        }
    }

    /// What `/proc` says of the tasks the audit saw for the first time.
    fn describe_new_tasks(&mut self) {
        let Some(a) = self.audit.as_mut() else {
            return;
        };
        for pid in a.unknown_tasks() {
            let Some(t) = crate::sys::threads::by_tid(&self.root, pid) else {
                continue;
            };
            let info = TaskInfo {
                kernel: t.kernel,
                allowed: crate::cpulist::parse(&t.cpus_allowed).unwrap_or_default(),
                cpuset: self
                    .root
                    .read_opt(&crate::sys::paths::task_cpuset(t.pid))
                    .map(|c| c.trim().to_string()),
            };
            a.learn(pid, info);
        }
    }

    /// Stops tracing, reads the rest and gives the audit and the
    /// measurements (the instance is removed).
    pub fn finish(
        mut self,
        measured: &[i32],
        programs: &[(usize, i32)],
        promises: &Promises,
    ) -> StreamResults {
        let before_stop = crate::sys::irq::totals(&self.root);
        self.instance.stop();
        self.learn_tasks(programs);
        if let Some(a) = self.audit.as_mut() {
            a.set_measured(measured);
        }
        self.read(true);
        self.describe_new_tasks();
        let after = crate::sys::irq::totals(&self.root);
        let lost = self
            .instance
            .lost_events(&self.cpus)
            .max(self.source.lost());
        let reader = self.source.reader();
        // The instance goes now, its pipes first (it cannot be removed while
        // a file of it is open).
        let Self {
            source, instance, ..
        } = self;
        drop(source);
        drop(instance);
        let cost = crate::trace::audit::StreamCost {
            events: self.events,
            ..self.cost.clone()
        };
        let audit = self.audit.take().map(|a| {
            let mut r = a.finish(promises, lost);
            r.stream_cost = Some(cost);
            if !self.missing.is_empty() {
                r.notes.push(format!(
                    "tracepoints this kernel lacks (not counted): {}",
                    self.missing.join(", ")
                ));
            }
            if reader == Reader::Text {
                r.notes.push(
                    "the trace was read as the kernel's text: its binary pages could not be \
                     read or decoded here (or RTLAB_TRACE_READER=text asked for it)"
                        .into(),
                );
            }
            if lost > 0 {
                r.notes.push(format!(
                    "the kernel lost {lost} events (buffer full): the counts are lower bounds"
                ));
            }
            r
        });
        let irqs_before = std::mem::take(&mut self.irqs_before);
        let results = std::mem::take(&mut self.matchers)
            .into_iter()
            .map(|m| {
                let numbers: Vec<u32> = match &m.spec().irq {
                    crate::config::IrqSelector::Number(n) => vec![*n],
                    crate::config::IrqSelector::Name(_) => Vec::new(),
                };
                let mut r = m.finish(None);
                let numbers: Vec<u32> = if numbers.is_empty() {
                    r.irq_names.iter().map(|(n, _)| *n).collect()
                } else {
                    numbers
                };
                r.kernel_count = kernel_count(&irqs_before, &after, &numbers);
                r.kernel_count_within = kernel_count(&self.irqs_started, &before_stop, &numbers);
                r.lost_events = lost;
                r
            })
            .collect();
        let missing = self.missing.clone();
        let task_latency = std::mem::take(&mut self.trackers)
            .into_iter()
            .map(|t| t.finish(lost, &missing))
            .collect();
        StreamResults {
            audit,
            irq_tasks: results,
            task_latency,
            timer_irq: self
                .timer_irq
                .take()
                .map(crate::trace::timer_irq::TimerIrq::finish)
                .unwrap_or_default(),
        }
    }
}

/// Enables the filtered events the measurements need: the syscall exits
/// (IRQ-to-task, task latency) and the timer arms (task latency, the IRQ
/// side). Gives the filters in effect.
fn enable_filtered(
    instance: &Instance,
    matchers: &[Matcher],
    trackers: &[Tracker],
    timer_irq: Option<&crate::trace::timer_irq::TimerIrq>,
    missing: &mut Vec<String>,
) -> (Option<String>, Option<String>) {
    let task_filter = (!matchers.is_empty() || !trackers.is_empty())
        .then(|| {
            enable(
                instance,
                SYS_EXIT,
                task_filter_of(matchers, trackers),
                missing,
            )
        })
        .flatten();
    let timer_filter = (!trackers.is_empty() || timer_irq.is_some())
        .then(|| {
            enable(
                instance,
                TIMER_START,
                timer_filter_of(trackers, timer_irq),
                missing,
            )
        })
        .flatten();
    (task_filter, timer_filter)
}

/// Enables `event` with `filter` in `instance`: the filter in effect, or
/// None (the event noted as missing).
fn enable(
    instance: &Instance,
    event: &str,
    filter: String,
    missing: &mut Vec<String>,
) -> Option<String> {
    match instance.filter_and_enable(event, &filter) {
        Ok(()) => Some(filter),
        Err(_) => {
            missing.push(event.into());
            None
        }
    }
}

/// The filter of the syscall exits: the measured tasks' threads, or names.
fn task_filter_of(matchers: &[Matcher], trackers: &[Tracker]) -> String {
    let irq_tasks = matchers.iter().map(|m| (&m.spec().task, m.tids()));
    let tasks = trackers.iter().map(|t| (&t.spec().task, t.tids()));
    filter_of(irq_tasks.chain(tasks).collect())
}

/// The filter of the timer arms: the measured tasks' names, or none (`0`)
/// when a task is chosen by process: its new threads arm timers before the
/// next look could add them to a filter.
fn timer_filter_of(
    trackers: &[Tracker],
    timer_irq: Option<&crate::trace::timer_irq::TimerIrq>,
) -> String {
    let by_name = trackers
        .iter()
        .all(|t| matches!(t.spec().task, TaskSelector::Name(_)));
    // The timer threads start after the stream: until their TIDs are
    // known, every arm is traced (none of theirs missed).
    let timers_unknown = timer_irq.is_some_and(|t| t.tids().is_empty());
    if !by_name || timers_unknown {
        return "0".into();
    }
    let tasks = trackers.iter().map(|t| (&t.spec().task, t.tids()));
    let mut filter = filter_of(tasks.collect());
    for tid in timer_irq.iter().flat_map(|t| t.tids()) {
        filter.push_str(&format!(" || common_pid == {tid}"));
    }
    filter
}

/// The threads of a task chosen by PID or program (its process first),
/// as `/proc` lists them now; none for a task chosen by name, and none for
/// a process given by PID that is not the one pinned any more (its number
/// may be another process's).
fn threads_of(
    root: &SysRoot,
    pins: &[(i32, Option<Pinned>)],
    task: &TaskSelector,
    programs: &[(usize, i32)],
) -> Vec<i32> {
    let pid = match *task {
        TaskSelector::Pid(pid) => {
            let pinned = pins
                .iter()
                .find(|(p, _)| *p == pid)
                .and_then(|(_, pin)| pin.as_ref());
            let Some(threads) = pinned.and_then(|pin| pin.threads(root)) else {
                return Vec::new();
            };
            let mut tids = vec![pid];
            tids.extend(threads);
            return tids;
        }
        TaskSelector::Program(i) => programs.iter().find(|p| p.0 == i).map(|p| p.1),
        TaskSelector::Name(_) => None,
    };
    let Some(pid) = pid else {
        return Vec::new();
    };
    let mut tids = vec![pid];
    tids.extend(crate::sys::threads::of_process(root, pid));
    tids
}

/// An event filter naming tasks: by name, or each known thread.
fn filter_of(tasks: Vec<(&TaskSelector, &std::collections::BTreeSet<i32>)>) -> String {
    let mut parts: Vec<String> = Vec::new();
    for (task, tids) in tasks {
        match task {
            TaskSelector::Name(name) => parts.push(format!("comm == \"{name}\"")),
            _ => parts.extend(
                tids.iter()
                    .take(MAX_FILTERED_TIDS)
                    .map(|t| format!("common_pid == {t}")),
            ),
        }
    }
    if parts.is_empty() {
        // Nothing yet: the idle task makes no syscall and arms no timer.
        "common_pid == 0".into()
    } else {
        parts.join(" || ")
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

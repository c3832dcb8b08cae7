//! The isolation audit: every interruption of the audited CPUs, counted by
//! its source from the kernel's tracepoints (timer ticks and other timers,
//! each IRQ, softirq, IPI with its sender, work item, kernel thread and
//! task), with its total and largest time; what does not belong on a
//! well-isolated CPU; and what `isolcpus=`, `nohz_full=` and the cpuset
//! partition promised, checked against what came. Fed by the trace stream
//! ([`crate::trace::stream`]) as one of its consumers; its one question to
//! the system is what `/proc` says of a task it sees for the first time
//! (after each read, [`Consumer::settle`]).
//!
//! Times are net: an interrupt nested in another is taken out of the
//! outer one, and interrupts are taken out of the task they interrupted.

use crate::trace::consumer::{Consumer, Learned, StreamEnd, Tracepoint};
pub use crate::trace::consumer::{Promises, StreamCost};
use crate::trace::consumer::{StreamResults, StreamSpec};
use crate::trace::event::Event;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

pub mod fold;

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Most distinct sources kept; the others are summed in one row.
const MAX_SOURCES: usize = 2000;
/// Deepest nesting of interrupts followed on a CPU.
const MAX_DEPTH: usize = 16;
/// Highest CPU number followed.
const MAX_CPU: usize = 4096;
/// Most tasks whose `/proc` facts are kept (past it, only those of tasks in
/// the rows stay: a long run that starts many processes stays bounded).
const MAX_TASKS: usize = 10_000;

/// What kind of source interrupted a CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// The scheduler tick.
    Tick,
    /// Another hrtimer callback.
    Timer,
    /// The CPU's timer interrupt (which runs the timers).
    TimerInterrupt,
    /// A device interrupt.
    Irq,
    /// A softirq.
    Softirq,
    /// An inter-processor interrupt received (reschedule, function call).
    Ipi,
    /// An IPI sent to the CPU, by its sender and call site.
    IpiSent,
    /// Another interrupt vector (IRQ work, thermal, platform).
    Vector,
    /// A non-maskable interrupt's handler (perf, the NMI watchdog).
    Nmi,
    /// A workqueue item.
    WorkItem,
    /// A kernel thread that ran.
    KernelThread,
    /// A user task that ran.
    Task,
}

/// One source of interruption of one CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRow {
    /// The CPU.
    pub cpu: usize,
    /// Its kind.
    pub kind: SourceKind,
    /// What it is (`IRQ 36 virtio1-req.0`, `softirq TIMER`,
    /// `kworker/1:1`, `vmstat_update`).
    pub what: String,
    /// Its PID, for threads and tasks (of a command's many, the costliest).
    pub pid: Option<i32>,
    /// How many PIDs ran under this command (tasks; see [`fold`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pids: u64,
    /// The costliest of them, most costly first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_pids: Vec<i32>,
    /// How many times it came (for threads: switch-ins).
    pub count: u64,
    /// Its total net time (ns; 0 for IPIs sent, which take none there).
    pub total_ns: u64,
    /// Its longest net time at once (ns).
    pub max_ns: u64,
    /// Whether it belongs on a well-isolated CPU.
    pub belongs: bool,
    /// Why it belongs, or why not.
    pub why: String,
}

/// One promise of the machine's isolation, checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromiseCheck {
    /// The CPU.
    pub cpu: usize,
    /// `isolcpus`, `nohz_full` or `partition NAME`.
    pub promise: String,
    /// Whether it held (None: not made for this CPU).
    pub kept: Option<bool>,
    /// What was seen.
    pub detail: String,
}

/// The audit of a run (`audit` in the result).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AuditReport {
    /// The CPUs audited.
    pub cpus: Vec<usize>,
    /// How long they were watched (ns, trace clock).
    pub duration_ns: u64,
    /// Every source, by CPU, most total time first.
    pub rows: Vec<AuditRow>,
    /// Ticks while a task ran (not idle), per CPU: what `nohz_full` stops.
    pub ticks_busy: Vec<(usize, u64)>,
    /// The promises, checked.
    pub promises: Vec<PromiseCheck>,
    /// Events the kernel could not keep (the counts are then lower bounds).
    pub lost_events: u64,
    /// Why there was no audit, when there was none.
    pub unavailable: Option<String>,
    /// What else the reader should know.
    pub notes: Vec<String>,
    /// What the trace stream cost the main thread (absent in older
    /// results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_cost: Option<StreamCost>,
}

impl AuditReport {
    /// The rows that do not belong.
    pub fn intruders(&self) -> impl Iterator<Item = &AuditRow> {
        self.rows.iter().filter(|r| !r.belongs)
    }
}

/// What the stream knows of a task, from `/proc` when first seen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskInfo {
    /// A kernel thread.
    pub kernel: bool,
    /// The CPUs it may run on.
    pub allowed: Vec<usize>,
    /// Its cpuset (`/proc/PID/cpuset`).
    pub cpuset: Option<String>,
}

#[derive(Debug, Clone, Default)]
struct Acc {
    count: u64,
    total_ns: u64,
    max_ns: u64,
}

impl Acc {
    fn add(&mut self, ns: u64) {
        self.count += 1;
        self.total_ns = self.total_ns.saturating_add(ns);
        self.max_ns = self.max_ns.max(ns);
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Key {
    cpu: usize,
    kind: SourceKind,
    what: String,
    pid: Option<i32>,
}

/// An interrupt running on a CPU.
#[derive(Debug, Clone)]
struct Frame {
    kind: SourceKind,
    what: String,
    start: u64,
    /// Time of the interrupts nested in it.
    nested: u64,
    /// For timers: whom the callback woke (PID, comm).
    woke: Vec<(i32, String)>,
    /// For the timer interrupt: it ran a callback that is not a measured
    /// thread's wake-up.
    foreign: bool,
}

#[derive(Debug, Clone, Default)]
struct Cpu {
    /// The task running, its comm and since when.
    current: Option<(i32, String, u64)>,
    /// Interrupt time since the task was switched in.
    interrupted: u64,
    /// Interrupt time on this CPU so far (for work items).
    irq_total: u64,
    stack: Vec<Frame>,
    /// The work item running: function, start, `irq_total` then.
    work: Option<(String, u64, u64)>,
    ticks_busy: u64,
}

/// The audit of some CPUs, fed every event in time order.
pub struct Audit {
    cpus: Vec<usize>,
    /// The measured threads (timer threads): they belong.
    measured: Vec<i32>,
    state: Vec<Cpu>,
    sources: BTreeMap<Key, Acc>,
    dropped_sources: u64,
    tasks: HashMap<i32, TaskInfo>,
    unknown: Vec<i32>,
    first_ts: Option<u64>,
    last_ts: u64,
    /// Names the events' fields give (for a task the reader shows `<...>`).
    names: crate::trace::event::Names,
}

impl Audit {
    /// An audit of `cpus`.
    pub fn new(cpus: &[usize]) -> Self {
        Audit {
            cpus: cpus.to_vec(),
            measured: Vec::new(),
            state: Vec::new(),
            sources: BTreeMap::new(),
            dropped_sources: 0,
            tasks: HashMap::new(),
            unknown: Vec::new(),
            first_ts: None,
            last_ts: 0,
            names: Default::default(),
        }
    }

    /// The measured threads, which belong on the CPU.
    pub fn set_measured(&mut self, tids: &[i32]) {
        self.measured = tids.to_vec();
    }

    /// Tasks seen that the caller has not described yet (drained).
    pub fn unknown_tasks(&mut self) -> Vec<i32> {
        std::mem::take(&mut self.unknown)
    }

    /// What `/proc` says of a task.
    pub fn learn(&mut self, pid: i32, info: TaskInfo) {
        if self.tasks.len() >= MAX_TASKS {
            // Keep what the rows (at most MAX_SOURCES) will be judged by.
            let listed: std::collections::HashSet<i32> =
                self.sources.keys().filter_map(|k| k.pid).collect();
            self.tasks.retain(|pid, _| listed.contains(pid));
        }
        self.tasks.insert(pid, info);
    }

    fn audited(&self, cpu: usize) -> bool {
        self.cpus.contains(&cpu)
    }

    fn add(&mut self, cpu: usize, kind: SourceKind, what: String, pid: Option<i32>, ns: u64) {
        let key = Key {
            cpu,
            kind,
            what,
            pid,
        };
        if !self.sources.contains_key(&key) && self.sources.len() >= MAX_SOURCES {
            self.dropped_sources += 1;
            return;
        }
        self.sources.entry(key).or_default().add(ns);
    }

    /// Feeds one event (events must come in time order).
    pub fn feed(&mut self, e: &Event) {
        self.names.learn(e);
        if e.name.starts_with("ipi_send_cpu") {
            self.ipi_sent(e);
        }
        if !self.audited(e.cpu) || e.cpu > MAX_CPU {
            return;
        }
        self.first_ts.get_or_insert(e.ts_ns);
        self.last_ts = self.last_ts.max(e.ts_ns);
        if self.state.len() <= e.cpu {
            self.state.resize(e.cpu + 1, Cpu::default());
        }
        self.follow_current(e);
        let name = e.name.as_ref();
        if name == "sched_switch" {
            self.switch(e);
        } else if name == "sched_waking" {
            if let (Some(pid), Some(f)) = (e.num("pid"), self.state[e.cpu].stack.last_mut())
                && f.woke.len() < 8
            {
                let comm = e.field("comm").unwrap_or("?").to_string();
                f.woke.push((pid as i32, comm));
            }
        } else if name == "workqueue_execute_start" {
            let func = e.work_function().unwrap_or("?").to_string();
            let cpu = &mut self.state[e.cpu];
            cpu.work = Some((func, e.ts_ns, cpu.irq_total));
        } else if name == "workqueue_execute_end" {
            if let Some((func, start, irq_then)) = self.state[e.cpu].work.take() {
                let irq = self.state[e.cpu].irq_total - irq_then;
                let ns = e.ts_ns.saturating_sub(start).saturating_sub(irq);
                self.add(e.cpu, SourceKind::WorkItem, func, None, ns);
            }
        } else if name == "nmi_handler" {
            // Logged as the handler returns, with how long it ran.
            let (handler, ns) = e.nmi_run().unwrap_or(("?", 0));
            let what = format!("NMI {handler}");
            self.add(e.cpu, SourceKind::Nmi, what, None, ns);
        } else if let Some((kind, what)) = entry(e) {
            self.enter(e, kind, what);
        } else if is_exit(name) {
            self.exit(e);
        }
    }

    fn ipi_sent(&mut self, e: &Event) {
        let targets: Vec<usize> = match e.name.as_ref() {
            "ipi_send_cpu" => e.num("cpu").map(|c| vec![c as usize]).unwrap_or_default(),
            _ => e
                .field("cpumask")
                .and_then(|m| crate::cpulist::parse(m).ok())
                .unwrap_or_default(),
        };
        let site = e.field("callsite").unwrap_or("?");
        let site = site.split('+').next().unwrap_or(site);
        let sender = &e.comm;
        let targets: Vec<usize> = targets.into_iter().filter(|c| self.audited(*c)).collect();
        for cpu in targets {
            let what = format!("{site} from {sender}");
            self.add(cpu, SourceKind::IpiSent, what, None, 0);
        }
    }

    /// A task seen running without its switch-in logged runs from now.
    fn follow_current(&mut self, e: &Event) {
        let cpu = &mut self.state[e.cpu];
        if cpu.current.as_ref().is_some_and(|c| c.0 == e.pid) {
            return;
        }
        if e.name == "sched_switch" && cpu.current.is_none() {
            return;
        }
        self.runs_from(e.cpu, e.pid, e.comm.to_string(), e.ts_ns);
    }

    /// `pid` runs on `cpu` from `at`: the task before it ran until then.
    fn runs_from(&mut self, cpu: usize, pid: i32, comm: String, at: u64) {
        let state = &mut self.state[cpu];
        let ended = state.current.replace((pid, comm, at));
        let interrupted = std::mem::take(&mut state.interrupted);
        if let Some((pid, comm, since)) = ended {
            self.ran(cpu, pid, comm, at.saturating_sub(since + interrupted));
        }
    }

    fn ran(&mut self, cpu: usize, pid: i32, mut comm: String, ns: u64) {
        if pid == 0 {
            return;
        }
        if comm == crate::trace::event::UNKNOWN_TASK
            && let Some(name) = self.names.get(pid)
        {
            comm = name.to_string();
        }
        if !self.tasks.contains_key(&pid) && !self.unknown.contains(&pid) {
            self.unknown.push(pid);
        }
        self.add(cpu, SourceKind::Task, comm, Some(pid), ns);
    }

    fn switch(&mut self, e: &Event) {
        // The task leaving is named as it is now (an exec during its run
        // renamed it: a shell's child that became `dd`).
        if let (Some(current), Some(now)) = (&mut self.state[e.cpu].current, e.field("prev_comm"))
            && e.num("prev_pid") == Some(i64::from(current.0))
            && current.1 != now
        {
            current.1 = now.to_string();
        }
        let next = e.num("next_pid").unwrap_or(0) as i32;
        let comm = e.field("next_comm").unwrap_or("?").to_string();
        self.runs_from(e.cpu, next, comm, e.ts_ns);
    }

    fn enter(&mut self, e: &Event, kind: SourceKind, what: String) {
        let cpu = &mut self.state[e.cpu];
        if cpu.stack.len() >= MAX_DEPTH {
            return;
        }
        cpu.stack.push(Frame {
            kind,
            what,
            start: e.ts_ns,
            nested: 0,
            woke: Vec::new(),
            foreign: false,
        });
    }

    fn exit(&mut self, e: &Event) {
        let busy = self.state[e.cpu].current.as_ref().is_some_and(|c| c.0 != 0);
        let Some(mut f) = self.state[e.cpu].stack.pop() else {
            return;
        };
        let gross = e.ts_ns.saturating_sub(f.start);
        let net = gross.saturating_sub(f.nested);
        let measured_wakeup =
            !f.woke.is_empty() && f.woke.iter().all(|(p, _)| self.measured.contains(p));
        let cpu = &mut self.state[e.cpu];
        match cpu.stack.last_mut() {
            Some(outer) => {
                outer.nested += gross;
                if matches!(f.kind, SourceKind::Timer | SourceKind::Tick) && !measured_wakeup {
                    outer.foreign = true;
                }
            }
            None => {
                cpu.interrupted += gross;
                cpu.irq_total += gross;
            }
        }
        if f.kind == SourceKind::Tick && busy {
            cpu.ticks_busy += 1;
        }
        if f.kind == SourceKind::Timer && f.what == "hrtimer_wakeup" {
            let whom: Vec<String> = f
                .woke
                .iter()
                .map(|(p, comm)| {
                    if self.measured.contains(p) {
                        format!("measured thread {p}")
                    } else {
                        format!("{comm} (PID {p})")
                    }
                })
                .collect();
            f.what = if measured_wakeup {
                "wake-up of a measured thread".into()
            } else if whom.is_empty() {
                "hrtimer_wakeup".into()
            } else {
                format!("wake-up of {}", whom.join(", "))
            };
        }
        if f.kind == SourceKind::TimerInterrupt && !f.foreign {
            f.what = format!("{} (measured threads' timers only)", f.what);
        }
        self.add(e.cpu, f.kind, f.what, None, net);
    }

    /// The report, with each source judged and the promises checked.
    pub fn finish(mut self, promises: &Promises, lost_events: u64) -> AuditReport {
        // The tasks still running ran until the last event.
        for cpu in 0..self.state.len() {
            if let Some((pid, comm, since)) = self.state[cpu].current.take() {
                let ns = self
                    .last_ts
                    .saturating_sub(since + self.state[cpu].interrupted);
                self.ran(cpu, pid, comm, ns);
            }
        }
        let mut rows: Vec<AuditRow> = std::mem::take(&mut self.sources)
            .into_iter()
            .map(|(k, a)| {
                let mut kind = k.kind;
                let info = k.pid.and_then(|p| self.tasks.get(&p));
                if kind == SourceKind::Task && info.is_some_and(|i| i.kernel) {
                    kind = SourceKind::KernelThread;
                }
                let (belongs, why) = self.judge(k.cpu, kind, &k.what, k.pid, info);
                AuditRow {
                    cpu: k.cpu,
                    kind,
                    what: k.what,
                    pid: k.pid,
                    pids: 0,
                    top_pids: Vec::new(),
                    count: a.count,
                    total_ns: a.total_ns,
                    max_ns: a.max_ns,
                    belongs,
                    why,
                }
            })
            .collect();
        rows.sort_by(|a, b| {
            (a.cpu, b.total_ns, b.count, &a.what).cmp(&(b.cpu, a.total_ns, a.count, &b.what))
        });
        let mut notes = Vec::new();
        if self.dropped_sources > 0 {
            notes.push(format!(
                "{} events of sources beyond the first {MAX_SOURCES} were not counted",
                self.dropped_sources
            ));
        }
        let duration_ns = self.first_ts.map_or(0, |f| self.last_ts - f);
        let ticks_busy: Vec<(usize, u64)> = self
            .cpus
            .iter()
            .map(|&c| (c, self.state.get(c).map_or(0, |s| s.ticks_busy)))
            .collect();
        let promises = check_promises(
            &self.cpus,
            promises,
            &rows,
            &ticks_busy,
            duration_ns,
            &self.tasks,
        );
        AuditReport {
            cpus: self.cpus,
            duration_ns,
            rows: fold::by_command(rows),
            ticks_busy,
            promises,
            lost_events,
            unavailable: None,
            notes,
            stream_cost: None,
        }
    }

    /// Whether a source belongs on a well-isolated CPU, and why.
    fn judge(
        &self,
        cpu: usize,
        kind: SourceKind,
        what: &str,
        pid: Option<i32>,
        info: Option<&TaskInfo>,
    ) -> (bool, String) {
        match kind {
            SourceKind::Task | SourceKind::KernelThread => {
                let pid = pid.unwrap_or(0);
                if self.measured.contains(&pid) {
                    return (true, "a measured thread".into());
                }
                if kind == SourceKind::KernelThread && per_cpu_kthread(what, cpu) {
                    return (
                        true,
                        "a per-CPU kernel thread (it cannot run elsewhere)".into(),
                    );
                }
                let why = match (kind, info) {
                    (SourceKind::KernelThread, _) => "a kernel thread not bound to this CPU",
                    (_, None) => "a task (gone before rtlab could read it)",
                    (_, Some(_)) => "a task other than the measured threads",
                };
                (false, why.into())
            }
            SourceKind::Timer if what == "wake-up of a measured thread" => {
                (true, "the measured threads' own timers".into())
            }
            SourceKind::TimerInterrupt if what.ends_with("(measured threads' timers only)") => {
                (true, "it ran only the measured threads' timers".into())
            }
            SourceKind::Tick => (false, "the scheduler tick (nohz_full stops it)".into()),
            SourceKind::Timer => (false, "a timer of someone else".into()),
            SourceKind::TimerInterrupt => (false, "it ran other timers".into()),
            SourceKind::Irq => (false, "a device interrupt (move it: `irq.affinity`)".into()),
            SourceKind::Softirq => (false, "deferred interrupt work".into()),
            SourceKind::Ipi | SourceKind::IpiSent => (false, "an inter-processor interrupt".into()),
            SourceKind::Vector => (false, "an interrupt of the CPU".into()),
            SourceKind::Nmi => (
                false,
                "hardware noise no priority keeps out (the NMI watchdog: `nmi_watchdog=0`; perf sampling)".into(),
            ),
            SourceKind::WorkItem => (false, "kernel work queued on this CPU".into()),
        }
    }
}

/// `migration/1`, `ksoftirqd/1`, `cpuhp/1`, `kworker/1:2`, `kworker/1:0H`
/// on CPU 1: kernel threads bound to the CPU.
pub fn per_cpu_kthread(comm: &str, cpu: usize) -> bool {
    let Some((name, rest)) = comm.split_once('/') else {
        return false;
    };
    let number = rest.split(':').next().unwrap_or("");
    let bound = number.parse::<usize>().is_ok_and(|n| n == cpu);
    bound
        && matches!(
            name,
            "migration" | "ksoftirqd" | "cpuhp" | "kworker" | "rcuc" | "idle_inject" | "watchdog"
        )
}

/// `e` opens a frame of the CPU's time (an interrupt, a softirq, a timer
/// callback): what runs in it is its own, not what it interrupted.
pub fn opens_frame(e: &Event) -> bool {
    entry(e).is_some()
}

/// An event named `name` closes the frame its entry opened.
pub fn closes_frame(name: &str) -> bool {
    is_exit(name)
}

/// The source an `*_entry` event opens, if it is one.
fn entry(e: &Event) -> Option<(SourceKind, String)> {
    let name = e.name.as_ref();
    Some(match name {
        "irq_handler_entry" => (SourceKind::Irq, e.irq_label()),
        "softirq_entry" => (
            SourceKind::Softirq,
            format!("softirq {}", e.field("action").unwrap_or("?")),
        ),
        "hrtimer_expire_entry" => {
            let function = e.field("function").unwrap_or("?");
            let function = function.split('+').next().unwrap_or(function);
            if matches!(function, "tick_nohz_handler" | "tick_sched_timer") {
                (SourceKind::Tick, "scheduler tick".into())
            } else {
                (SourceKind::Timer, function.to_string())
            }
        }
        "local_timer_entry" => (SourceKind::TimerInterrupt, "local timer interrupt".into()),
        "reschedule_entry" => (SourceKind::Ipi, "reschedule IPI".into()),
        "call_function_entry" | "call_function_single_entry" => {
            (SourceKind::Ipi, "function-call IPI".into())
        }
        "ipi_entry" => (
            SourceKind::Ipi,
            format!("IPI {}", e.fields.trim_matches(|c| c == '(' || c == ')')),
        ),
        _ => {
            let vector = name.strip_suffix("_entry")?;
            if !matches!(
                vector,
                "irq_work" | "x86_platform_ipi" | "thermal_apic" | "error_apic" | "spurious_apic"
            ) {
                return None;
            }
            (SourceKind::Vector, vector.replace('_', " "))
        }
    })
}

fn is_exit(name: &str) -> bool {
    matches!(
        name,
        "irq_handler_exit"
            | "softirq_exit"
            | "hrtimer_expire_exit"
            | "local_timer_exit"
            | "reschedule_exit"
            | "call_function_exit"
            | "call_function_single_exit"
            | "ipi_exit"
            | "irq_work_exit"
            | "x86_platform_ipi_exit"
            | "thermal_apic_exit"
            | "error_apic_exit"
            | "spurious_apic_exit"
    )
}

fn check_promises(
    cpus: &[usize],
    p: &Promises,
    rows: &[AuditRow],
    ticks_busy: &[(usize, u64)],
    duration_ns: u64,
    tasks: &HashMap<i32, TaskInfo>,
) -> Vec<PromiseCheck> {
    let mut out = Vec::new();
    for &cpu in cpus {
        let here: Vec<&AuditRow> = rows.iter().filter(|r| r.cpu == cpu).collect();
        let busy = ticks_busy.iter().find(|t| t.0 == cpu).map_or(0, |t| t.1);
        out.push(nohz_full_check(cpu, p, busy, duration_ns));
        out.push(isolcpus_check(cpu, p, &here, tasks));
        out.push(partition_check(cpu, p, &here, tasks));
    }
    out
}

/// The threads of `here` that do not belong there.
fn intruding<'a, 'b>(here: &'b [&'a AuditRow]) -> impl Iterator<Item = &'a AuditRow> + 'b {
    here.iter()
        .copied()
        .filter(|r| matches!(r.kind, SourceKind::Task | SourceKind::KernelThread) && !r.belongs)
}

/// `hog (pid 200), bash (3 pids: 11, 10, 13), IRQ 36 virtio1-req.0` (at
/// most 8, a command's PIDs folded).
fn names<'a>(it: impl Iterator<Item = &'a AuditRow>) -> String {
    let v: Vec<String> = fold::by_command(it.cloned().collect())
        .iter()
        .take(8)
        .map(AuditRow::who)
        .collect();
    v.join(", ")
}

/// nohz_full: no tick while one task runs; the kernel keeps one a second
/// at most.
fn nohz_full_check(cpu: usize, p: &Promises, busy: u64, duration_ns: u64) -> PromiseCheck {
    let allowed = duration_ns / 1_000_000_000 + 1;
    let (kept, detail) = if p.nohz_full.contains(&cpu) {
        (
            Some(busy <= allowed),
            format!(
                "{busy} ticks while a task ran (the kernel keeps at most 1 a second: {allowed} here)"
            ),
        )
    } else {
        (
            None,
            format!("not asked for this CPU: {busy} ticks while a task ran"),
        )
    };
    PromiseCheck {
        cpu,
        promise: "nohz_full".into(),
        kept,
        detail,
    }
}

/// isolcpus: the scheduler places no task there on its own.
fn isolcpus_check(
    cpu: usize,
    p: &Promises,
    here: &[&AuditRow],
    tasks: &HashMap<i32, TaskInfo>,
) -> PromiseCheck {
    let placed: Vec<&AuditRow> = intruding(here)
        .filter(|r| {
            r.pid
                .and_then(|pid| tasks.get(&pid))
                .is_some_and(|i| i.allowed.iter().any(|c| !p.isolcpus.contains(c)))
        })
        .collect();
    let (kept, detail) = if !p.isolcpus.contains(&cpu) {
        (None, "not asked for this CPU".to_string())
    } else if placed.is_empty() {
        (Some(true), "no task allowed elsewhere ran here".to_string())
    } else {
        (
            Some(false),
            format!(
                "tasks allowed on other CPUs ran here: {}",
                names(placed.into_iter())
            ),
        )
    };
    PromiseCheck {
        cpu,
        promise: "isolcpus".into(),
        kept,
        detail,
    }
}

/// The rt partition: only its tasks run there, and IRQs are moved away.
/// Not made when no rt partition holds the CPU.
fn partition_check(
    cpu: usize,
    p: &Promises,
    here: &[&AuditRow],
    tasks: &HashMap<i32, TaskInfo>,
) -> PromiseCheck {
    let Some((name, cpuset, _)) = p.partition.as_ref().filter(|p| p.2.contains(&cpu)) else {
        return PromiseCheck {
            cpu,
            promise: "partition rt".into(),
            kept: None,
            detail: "no rt cpuset partition holds this CPU (`rtlab partition create`)".into(),
        };
    };
    let outsiders: Vec<&AuditRow> = intruding(here)
        .filter(|r| {
            let inside = r
                .pid
                .and_then(|pid| tasks.get(&pid))
                .and_then(|i| i.cpuset.as_deref())
                .is_some_and(|c| c == cpuset || c.starts_with(&format!("{cpuset}/")));
            !inside
        })
        .collect();
    let irqs: Vec<&AuditRow> = here
        .iter()
        .copied()
        .filter(|r| r.kind == SourceKind::Irq)
        .collect();
    let kept = outsiders.is_empty() && irqs.is_empty();
    let mut detail = Vec::new();
    if !outsiders.is_empty() {
        detail.push(format!(
            "tasks outside it ran here: {}",
            names(outsiders.into_iter())
        ));
    }
    if !irqs.is_empty() {
        detail.push(format!("IRQs still came: {}", names(irqs.into_iter())));
    }
    PromiseCheck {
        cpu,
        promise: format!("partition {name}"),
        kept: Some(kept),
        detail: if kept {
            "only its tasks ran, no IRQ came".into()
        } else {
            detail.join("; ")
        },
    }
}

/// Registers the isolation audit, when the spec asks for one.
pub fn register(spec: &StreamSpec, out: &mut Vec<Box<dyn Consumer>>) {
    if let Some(cpus) = &spec.audit_cpus {
        out.push(Box::new(Audit::new(cpus)));
    }
}

impl Consumer for Audit {
    fn tracepoints(&self) -> Vec<Tracepoint> {
        crate::trace::event::CPU_EVENTS.to_vec()
    }

    fn learn(&mut self, run: &Learned) {
        self.set_measured(run.measured);
    }

    /// What `/proc` says of the tasks seen for the first time.
    fn settle(&mut self, run: &Learned) {
        for pid in self.unknown_tasks() {
            let Some(t) = crate::sys::threads::by_tid(run.root, pid) else {
                continue;
            };
            let info = TaskInfo {
                kernel: t.kernel,
                allowed: crate::cpulist::parse(&t.cpus_allowed).unwrap_or_default(),
                cpuset: run
                    .root
                    .read_opt(&crate::sys::paths::task_cpuset(t.pid))
                    .map(|c| c.trim().to_string()),
            };
            self.learn(pid, info);
        }
    }

    fn feed(&mut self, e: &Event) {
        Audit::feed(self, e);
    }

    fn finish(self: Box<Self>, end: &StreamEnd, into: &mut StreamResults) {
        let mut r = Audit::finish(*self, end.promises, end.lost);
        r.stream_cost = Some(end.cost.clone());
        if !end.missing.is_empty() {
            r.notes.push(format!(
                "tracepoints this kernel lacks (not counted): {}",
                end.missing.join(", ")
            ));
        }
        if end.text_reader {
            r.notes.push(
                "the trace was read as the kernel's text: its binary pages could not be \
                 read or decoded here (or RTLAB_TRACE_READER=text asked for it)"
                    .into(),
            );
        }
        if end.lost > 0 {
            r.notes.push(format!(
                "the kernel lost {} events (buffer full): the counts are lower bounds",
                end.lost
            ));
        }
        into.audit = Some(r);
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests;

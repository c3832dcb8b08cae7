//! The conductor: runs a validated [`RunPlan`] and returns its [`RunResult`].
//!
//! Phases, each a function or a type below:
//!
//! 1. recover ([`recover_dead_runs`]): undo what a run that died left;
//! 2. arm ([`MainThread::arm`], [`SignalThread::start`], [`Armed::arm`]):
//!    main thread (cpuset, affinity, policy, mlockall, PM QoS), signals,
//!    journal, tuning, programs, timers, each held by a guard;
//! 3. watch ([`Watch::run`]): live table, CPU load, program supervision,
//!    signals, until the run ends;
//! 4. stop ([`Armed::stop`]): timers, then programs, then the system changes;
//! 5. collect ([`collect`]): the result.
//!
//! Writing outputs is the caller's job ([`write_outputs`]), so that an
//! interrupted run writes the same way as a completed one.

use crate::audit::{AuditReport, Promises};
use crate::config::CpuLoadDisplay;
use crate::flight::FlightRecorder;
use crate::isolate::state::IsolationState;
use crate::load::{self, Supervisor};
use crate::measure::{self, TimerHandle};
use crate::messages;
use crate::monitor::metrics::Metrics;
use crate::plan::RunPlan;
use crate::report::{self, live::LiveRow};
use crate::result::RunTuning;
use crate::result::{EndReason, PmQos, RunResult, SCHEMA, TimerResult};
use crate::result::{Placement, RunIsolation};
use crate::stats::cpu_load::{self, CpuLoad};
use crate::stats::{hdr_buckets, nonzero_buckets, summarize};
use crate::stream::{StreamSpec, TraceStream};
use crate::sys::SysRoot;
use crate::sys::info::SystemSnapshot;
use crate::sys::journal::{self, Journal, Owner};
use crate::sys::os;
use crate::sys::outfile;
use crate::sys::paths;
use crate::sys::proc_stat::{self, ProcStat};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

/// Options of a run that are not in the experiment file.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Write the JSON result here.
    pub json: Option<PathBuf>,
    /// Print every refresh of the live table even when stdout is not a
    /// terminal.
    pub every_refresh: bool,
    /// Root of kernel files.
    pub root: SysRoot,
    /// Directory of the journal of system changes.
    pub journal_dir: PathBuf,
    /// Where the timer threads' wake-ups come from (simulated only in tests).
    pub wake: measure::Wake,
    /// Monitoring: the run goes on until stopped and exports its figures.
    pub monitor: Option<crate::monitor::MonitorSpec>,
}

enum Event {
    Signal(i32),
    /// SIGUSR1: print a snapshot of the live statistics and go on
    /// (cyclictest's behaviour).
    Snapshot,
    Child,
    TimerDone,
}

/// Holds the PM QoS request while alive; the kernel drops it on close.
fn hold_pm_qos(root: &SysRoot, requested: Option<u32>) -> (PmQos, Option<std::fs::File>) {
    let Some(us) = requested else {
        return (
            PmQos {
                requested_us: None,
                held: false,
                error: None,
            },
            None,
        );
    };
    let attempt = root
        .open_rw(paths::DMA_LATENCY)
        .map_err(|e| e.to_string())
        .and_then(|f| {
            os::write_pm_qos(&f, us as i32)
                .map_err(|e| format!("{}: {e}", root.path(paths::DMA_LATENCY).display()))?;
            Ok(f)
        });
    match attempt {
        Ok(f) => (
            PmQos {
                requested_us: Some(us),
                held: true,
                error: None,
            },
            Some(f),
        ),
        Err(e) => (
            PmQos {
                requested_us: Some(us),
                held: false,
                error: Some(e),
            },
            None,
        ),
    }
}

/// Prints the live table, redrawing it in place on a terminal.
struct LiveView {
    tty: bool,
    every_refresh: bool,
    lines_shown: usize,
    display: CpuLoadDisplay,
}

impl LiveView {
    fn show(&mut self, rows: &[LiveRow], load: Option<&CpuLoad>, last: bool, note: Option<String>) {
        if !(self.tty || self.every_refresh || last) {
            return;
        }
        let mut text = report::live::table(rows, load, self.display);
        if let Some(note) = note {
            text.push_str(&note);
            text.push('\n');
        }
        let mut out = std::io::stdout().lock();
        if self.tty && self.lines_shown > 0 {
            let _ = write!(out, "\x1b[{}A", self.lines_shown);
        }
        for line in text.lines() {
            if self.tty {
                let _ = write!(out, "\x1b[2K");
            }
            let _ = writeln!(out, "{}", crate::text::terminal(line));
        }
        if !self.tty && self.every_refresh {
            let _ = writeln!(out);
        }
        let _ = out.flush();
        self.lines_shown = if self.tty { text.lines().count() } else { 0 };
    }
}

fn rows(timers: &[TimerHandle]) -> Vec<LiveRow> {
    timers
        .iter()
        .map(|t| LiveRow {
            index: t.spec.index,
            tid: t.live.tid.load(Ordering::Relaxed),
            snap: t.live.read(),
        })
        .collect()
}

/// Runs the plan in its phases: recover what a dead run left, arm (main
/// thread, signals, journal, tuning, programs, timers), watch, stop, and
/// collect the result. Everything armed is held by a guard that releases it
/// when dropped, in reverse order, however the run ends (completion, a
/// signal, a failure, an early return or a panic); the stop phase releases
/// the same things explicitly, in the order that keeps measurements clean
/// (timers, then programs, then the system changes).
///
/// Errors are failures before anything started; once the run has started,
/// failures end it with [`EndReason::Failed`] and still give a result.
pub fn execute(plan: &RunPlan, opts: &RunOptions) -> anyhow::Result<RunResult> {
    let root = &opts.root;
    let mut warnings = recover_dead_runs(root, &opts.journal_dir);
    let before = Before {
        system: SystemSnapshot::read(root),
        isolation: IsolationState::read(root, &opts.journal_dir),
        online: crate::sys::online_cpus(root).unwrap_or_default(),
    };
    // The endpoint is bound first: an address in use refuses the run before
    // anything is changed.
    let exporting = Exporting::start(opts, &before)?;
    let mut main = MainThread::arm(root, plan, &mut warnings)?;
    let (tx, rx) = mpsc::channel::<Event>();
    let signals = SignalThread::start(tx.clone())?;
    let mut armed = Armed::arm(plan, opts, &before.online, tx, &mut warnings)?;
    let mut watch = Watch::new(plan, opts, armed.run_start);
    watch.exporter = exporting;
    let end = watch.run(&mut armed, &rx, root);
    if let Some(x) = watch.exporter.take() {
        warnings.extend(x.finish(&armed, watch.load.last.as_ref()));
    }
    let stopped = armed.stop(&promises(&before.isolation), &mut warnings);
    watch.finish(&stopped.final_rows, root);
    drop(signals);
    main.release();
    Ok(collect(plan, before, main, stopped, watch, end, warnings))
}

/// A run that died (SIGKILL, power cut of its process) may have left system
/// changes: they are put back before anything is measured. Returns the
/// warnings for the result.
fn recover_dead_runs(root: &SysRoot, journal_dir: &std::path::Path) -> Vec<String> {
    let mut warnings = Vec::new();
    let recovered = journal::restore_all(root, journal_dir, Some(Owner::Run));
    for refusal in &recovered.refused {
        errln!("rtlab: warning: {refusal}");
        warnings.push(refusal.clone());
    }
    if !recovered.journals.is_empty() {
        errln!("rtlab: a run that ended without cleaning up left a journal; restored first:");
        for line in recovered.lines() {
            errln!("{line}");
        }
        warnings.push(format!(
            "restored the changes left by a run that died ({})",
            recovered.journals.join(", ")
        ));
    }
    warnings
}

/// What the machine was before the run touched it.
struct Before {
    system: SystemSnapshot,
    isolation: IsolationState,
    online: Vec<usize>,
}

/// The main thread's setup, held until the run ends: the PM QoS request
/// (the kernel drops it when the file is closed) and locked memory.
struct MainThread {
    pm_qos: PmQos,
    pm_qos_file: Option<std::fs::File>,
    memlock: bool,
    /// The cpuset it ended up in (`/proc/thread-self/cpuset`).
    cpuset: Option<String>,
}

impl MainThread {
    /// Places the main thread first: threads and programs started later
    /// inherit its cpuset and affinity unless they set their own.
    fn arm(root: &SysRoot, plan: &RunPlan, warnings: &mut Vec<String>) -> anyhow::Result<Self> {
        let main = &plan.main;
        if let Some(cs) = &main.cpuset {
            // v1 places one thread; v2 only whole processes.
            let id = if cs.v2 { os::getpid() } else { os::gettid() };
            root.write(&cs.thread_file(), &id.to_string())
                .map_err(|e| {
                    anyhow::anyhow!("cannot put the main thread in cpuset {}: {e}", cs.display())
                })?;
        }
        let cpuset = root.read_opt(paths::THREAD_SELF_CPUSET);
        if let Some(cpus) = &main.cpus {
            os::set_affinity(0, cpus)
                .map_err(|e| anyhow::anyhow!("cannot pin the main thread to CPUs {cpus:?}: {e}"))?;
        }
        os::set_sched(0, main.sched).map_err(|e| {
            anyhow::anyhow!(
                "cannot give the main thread {} {}: {e}",
                main.sched.policy.name(),
                main.sched.priority
            )
        })?;
        if main.memlock {
            os::lock_all_memory().map_err(|e| {
                anyhow::anyhow!("memlock: mlockall failed: {e} (raise `ulimit -l` or run as root)")
            })?;
        }
        let (pm_qos, pm_qos_file) = hold_pm_qos(root, main.dma_latency_us);
        if let Some(e) = &pm_qos.error {
            warnings.push(format!("PM QoS not held: {e}"));
        }
        Ok(MainThread {
            pm_qos,
            pm_qos_file,
            memlock: main.memlock,
            cpuset,
        })
    }

    /// Drops the PM QoS request and unlocks memory; what the result needs
    /// of the main thread stays.
    fn release(&mut self) {
        self.pm_qos_file = None;
        if std::mem::take(&mut self.memlock) {
            os::unlock_all_memory();
        }
    }
}

impl Drop for MainThread {
    fn drop(&mut self) {
        self.release();
    }
}

/// The thread that turns signals into events, stopped when dropped.
struct SignalThread {
    handle: signal_hook::iterator::Handle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SignalThread {
    fn start(tx: mpsc::Sender<Event>) -> std::io::Result<Self> {
        let mut signals = signal_hook::iterator::Signals::new([
            crate::sys::consts::SIGINT,
            crate::sys::consts::SIGTERM,
            crate::sys::consts::SIGHUP,
            crate::sys::consts::SIGCHLD,
            crate::sys::consts::SIGUSR1,
        ])?;
        let handle = signals.handle();
        let thread = std::thread::Builder::new()
            .name("rtlab-signals".into())
            .spawn(move || {
                for sig in signals.forever() {
                    let event = match sig {
                        crate::sys::consts::SIGCHLD => Event::Child,
                        crate::sys::consts::SIGUSR1 => Event::Snapshot,
                        _ => Event::Signal(sig),
                    };
                    if tx.send(event).is_err() {
                        break;
                    }
                }
            })?;
        Ok(SignalThread {
            handle,
            thread: Some(thread),
        })
    }
}

impl Drop for SignalThread {
    fn drop(&mut self) {
        self.handle.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The run's journal: every system change from its opening on is recorded
/// there, and undone when the run ends, however it ends (a SIGKILL leaves it
/// to the next rtlab).
struct RunJournal(Option<Journal>);

impl RunJournal {
    fn open(opts: &RunOptions, warnings: &mut Vec<String>) -> anyhow::Result<Self> {
        match Journal::open(
            &opts.root,
            &opts.journal_dir,
            &format!("run-{}.journal", os::getpid()),
            Owner::Run,
        ) {
            Ok(j) => Ok(RunJournal(Some(j))),
            // A journal directory others could tamper with is not used at
            // all: the run does not start (its changes could not be trusted
            // back).
            Err(e @ journal::JournalError::Untrusted(_)) => anyhow::bail!("{e}"),
            Err(e) => {
                if os::geteuid() == 0 {
                    warnings.push(format!("changes of this run are not journalled: {e}"));
                }
                Ok(RunJournal(None))
            }
        }
    }

    /// Undoes the run's changes; what could not be undone, as warnings.
    fn close(&mut self) -> Vec<String> {
        self.0
            .take()
            .map(|j| {
                j.replay_and_close()
                    .failures()
                    .map(|f| format!("could not restore {}: {}", f.what, f.detail))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for RunJournal {
    fn drop(&mut self) {
        for w in self.close() {
            errln!("rtlab: warning: {w}");
        }
    }
}

/// A timer thread after its end: its spec, its counters, what it measured.
type Joined = (
    measure::TimerSpec,
    Arc<measure::live::LiveCounters>,
    measure::TimerOutcome,
);

/// The timer threads, stopped and joined when dropped.
struct Timers {
    handles: Vec<TimerHandle>,
    stop: Arc<AtomicBool>,
}

impl Timers {
    /// Asks them to stop and wakes them.
    fn stop(&self) {
        measure::stop_all(&self.handles, &self.stop);
    }

    /// Stops them and waits (a few periods at most, 2 s at the very most)
    /// until each has published its last sample.
    fn halt(&self) {
        self.stop();
        let give_up = Instant::now() + Duration::from_secs(2);
        while Instant::now() < give_up
            && self
                .handles
                .iter()
                .any(|t| !t.live.finished.load(Ordering::Acquire))
        {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Stops them and collects what each measured.
    fn join(&mut self) -> Vec<Joined> {
        self.stop();
        self.handles.drain(..).map(TimerHandle::join).collect()
    }
}

impl Drop for Timers {
    fn drop(&mut self) {
        let _ = self.join();
    }
}

/// Applies the `main` tuning keys through the run's journal; refusals and
/// problems become warnings.
fn tune(
    root: &SysRoot,
    journal: &mut RunJournal,
    plan: &RunPlan,
    warnings: &mut Vec<String>,
) -> Vec<crate::tune::Outcome> {
    let (changes, problems) = match journal.0.as_mut() {
        Some(j) if !plan.main.tuning.is_empty() => crate::tune::apply(root, j, &plan.main.tuning),
        None if !plan.main.tuning.is_empty() => (
            Vec::new(),
            vec!["the tuning keys were not applied: no journal to restore them from".into()],
        ),
        _ => (Vec::new(), Vec::new()),
    };
    for o in changes.iter().filter(|o| o.refused()) {
        warnings.push(format!("kernel refused: {}", o.line().trim_end()));
    }
    warnings.extend(problems);
    changes
}

/// Starts the flight recorder when the plan asks for it: on the timer
/// threads' CPUs, through the run's journal. Without it (no journal, no
/// tracefs) the run goes on, and the report says why.
fn start_flight(
    root: &SysRoot,
    journal: &mut RunJournal,
    plan: &RunPlan,
    warnings: &mut Vec<String>,
) -> (Option<FlightRecorder>, Option<crate::explain::TraceReport>) {
    let Some(spec) = &plan.main.trace else {
        return (None, None);
    };
    let mut cpus: Vec<usize> = plan
        .timers
        .iter()
        .flat_map(|t| t.spec.cpus.clone())
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    let started = match journal.0.as_mut() {
        Some(j) => FlightRecorder::start(root, j, spec, &cpus).map_err(|e| e.to_string()),
        None => {
            Err("the flight recorder needs root and the journal of system changes (tracefs)".into())
        }
    };
    match started {
        Ok(f) => {
            let main_off_timers = plan
                .main
                .cpus
                .as_ref()
                .is_some_and(|m| !m.iter().any(|c| cpus.contains(c)));
            if !main_off_timers {
                warnings.push(
                    "the flight recorder reads its trace on the main thread, which may run on a \
                     measured CPU: give `main` a `cpu_affinity` off the timer threads' CPUs"
                        .into(),
                );
            }
            if !f.missing_events().is_empty() {
                warnings.push(format!(
                    "the trace lacks these tracepoints of this kernel: {}",
                    f.missing_events().join(", ")
                ));
            }
            (Some(f), None)
        }
        Err(why) => {
            warnings.push(format!(
                "no flight recorder: {why}; spikes are kept, not explained"
            ));
            (None, Some(FlightRecorder::unavailable(spec, why)))
        }
    }
}

/// Starts the trace stream when the plan audits CPUs or measures
/// IRQ-to-task latency: on every online CPU, through the run's journal.
/// Without it the run goes on, and the result says why.
fn start_stream(
    root: &SysRoot,
    journal: &mut RunJournal,
    plan: &RunPlan,
    online: &[usize],
    warnings: &mut Vec<String>,
) -> (Option<TraceStream>, Option<String>) {
    if !plan.streams() {
        return (None, None);
    }
    let spec = StreamSpec {
        audit_cpus: plan.main.audit_cpus.clone(),
        irq_tasks: plan.irq_tasks.clone(),
    };
    let started = match journal.0.as_mut() {
        Some(j) => TraceStream::start(root, j, &spec, online).map_err(|e| e.to_string()),
        None => Err("the trace stream needs root and the journal of system changes".into()),
    };
    match started {
        Ok(s) => {
            let core: Vec<&String> = s
                .missing
                .iter()
                .filter(|e| crate::stream::core_events().contains(&e.as_str()))
                .collect();
            if !core.is_empty() {
                let names: Vec<&str> = core.iter().map(|e| e.as_str()).collect();
                warnings.push(format!(
                    "the trace stream lacks tracepoints it cannot do without: {}",
                    names.join(", ")
                ));
            }
            (Some(s), None)
        }
        Err(why) => {
            warnings.push(format!("no audit or IRQ-to-task latency: {why}"));
            (None, Some(why))
        }
    }
}

/// The timer threads' TIDs (the measured threads of the audit).
fn measured_tids(timers: &[TimerHandle]) -> Vec<i32> {
    timers
        .iter()
        .map(|t| t.live.tid.load(Ordering::Relaxed))
        .filter(|&t| t > 0)
        .collect()
}

/// What the machine promised the audited CPUs.
fn promises(state: &IsolationState) -> Promises {
    Promises {
        isolcpus: state.isolated.clone(),
        nohz_full: state.nohz_full.clone(),
        partition: state
            .partitions
            .iter()
            .find(|p| p.name == "rt")
            .map(|p| (p.name.clone(), format!("/{}", p.name), p.cpus.clone())),
    }
}

/// Starts the timer threads (released together); each tells the watch
/// loop through `tx` when it is done.
fn start_timers(
    plan: &RunPlan,
    opts: &RunOptions,
    stop: &Arc<AtomicBool>,
    tx: mpsc::Sender<Event>,
    marker: Option<Arc<std::fs::File>>,
    warnings: &mut Vec<String>,
) -> Result<Vec<measure::TimerHandle>, measure::StartError> {
    let specs = plan.timers.iter().map(|t| t.spec.clone()).collect();
    let notify = move || {
        let _ = tx.send(Event::TimerDone);
    };
    if let measure::Wake::Simulated(seed) = opts.wake {
        warnings.push(format!(
            "SIMULATED wake-ups (RTLAB_SIMULATED_WAKE={seed}, for tests): these latencies were not measured"
        ));
    }
    measure::start(specs, &opts.root, stop.clone(), notify, opts.wake, marker)
}

/// Everything a run holds once armed. Rust drops fields in the order they
/// are declared, so they are declared in reverse order of arming: if the
/// run ends without its stop phase (a panic), the timers stop first, then
/// the flight recorder's instance goes, then the programs, and last the
/// journal undoes the tuning (and the tracefs mount).
struct Armed {
    timers: Timers,
    /// The trace stream, when the run audits or measures IRQ-to-task
    /// latency.
    stream: Option<TraceStream>,
    /// The flight recorder, when the run traces.
    flight: Option<FlightRecorder>,
    supervisor: Supervisor,
    journal: RunJournal,
    start_wall: SystemTime,
    run_start: Instant,
    tuning_changes: Vec<crate::tune::Outcome>,
    timers_start: Instant,
    /// Why the run that wanted a trace has none.
    trace_unavailable: Option<crate::explain::TraceReport>,
    /// Why the run that wanted a trace stream has none.
    stream_unavailable: Option<String>,
    /// When `lifetime.duration` ends the run.
    deadline: Option<Instant>,
    /// A monitoring run: timer threads that reach their lifetime do not end
    /// it (only a signal, an abort or `lifetime.duration` do).
    monitor: bool,
    /// Why the run ended while it was being armed (a program or a timer
    /// that could not start).
    failed: Option<EndReason>,
}

impl Armed {
    fn arm(
        plan: &RunPlan,
        opts: &RunOptions,
        online: &[usize],
        tx: mpsc::Sender<Event>,
        warnings: &mut Vec<String>,
    ) -> anyhow::Result<Self> {
        let root = &opts.root;
        let start_wall = SystemTime::now();
        let run_start = Instant::now();
        let mut journal = RunJournal::open(opts, warnings)?;
        let tuning_changes = tune(root, &mut journal, plan, warnings);
        let (flight, trace_unavailable) = start_flight(root, &mut journal, plan, warnings);
        let marker = flight.as_ref().and_then(FlightRecorder::marker);
        let (stream, stream_unavailable) = start_stream(root, &mut journal, plan, online, warnings);
        let mut supervisor = Supervisor::new(
            &plan.programs,
            &plan.cpu_groups,
            root,
            online.to_vec(),
            run_start,
            journal.0.as_mut(),
        );
        let mut failed = supervisor.start_all().err().map(|e| EndReason::Failed {
            error: e.to_string(),
        });
        let mut timers = Timers {
            handles: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
        };
        if failed.is_none() {
            match start_timers(plan, opts, &timers.stop, tx, marker, warnings) {
                Ok(handles) => timers.handles = handles,
                Err(e) => {
                    failed = Some(EndReason::Failed {
                        error: e.to_string(),
                    })
                }
            }
        }
        messages::debug(
            1,
            &format!("{} timer threads released", timers.handles.len()),
        );
        Ok(Armed {
            start_wall,
            run_start,
            journal,
            tuning_changes,
            supervisor,
            timers,
            timers_start: Instant::now(),
            flight,
            trace_unavailable,
            stream,
            stream_unavailable,
            deadline: plan
                .main
                .lifetime_ns
                .map(|ns| run_start + Duration::from_nanos(ns)),
            monitor: opts.monitor.is_some(),
            failed,
        })
    }

    /// Why the run should end now, if it should (a program's end that
    /// aborts it, a timer that failed, every timer done).
    fn ending(&mut self) -> Option<EndReason> {
        if let Some(abort) = self.supervisor.poll() {
            return Some(EndReason::Aborted {
                program: abort.index,
                command: abort.command,
                status: abort.status,
            });
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Some(EndReason::Completed);
        }
        let timers = &self.timers.handles;
        if timers.iter().any(|t| t.live.failed.load(Ordering::Relaxed)) {
            return Some(EndReason::Failed {
                error: "a timer thread could not start".into(),
            });
        }
        if !self.monitor
            && !timers.is_empty()
            && timers
                .iter()
                .all(|t| t.live.finished.load(Ordering::Acquire))
        {
            return Some(EndReason::Completed);
        }
        None
    }

    /// Stops the run: timers first (they measure), then the programs, then
    /// the system changes are undone.
    fn stop(mut self, promises: &Promises, warnings: &mut Vec<String>) -> Stopped {
        self.timers.stop();
        let measured = measured_tids(&self.timers.handles);
        let (audit, irq_tasks) = match self.stream.take() {
            Some(s) => s.finish(&measured, &self.supervisor.running(), promises),
            None => (None, Vec::new()),
        };
        let audit = audit.or_else(|| {
            let why = self.stream_unavailable.clone()?;
            Some(AuditReport {
                unavailable: Some(why),
                ..AuditReport::default()
            })
        });
        // The last announced wake-ups, then the instance goes (before the
        // journal would remove it).
        let (trace, trace_windows) = match self.flight.take() {
            Some(f) => {
                let (report, windows) = f.finish(&self.timers.handles);
                (Some(report), windows)
            }
            None => (self.trace_unavailable.take(), Vec::new()),
        };
        let final_rows = rows(&self.timers.handles);
        let joined = self.timers.join();
        let elapsed_ns = self.timers_start.elapsed().as_nanos() as u64;
        self.supervisor.stop_all();
        // Read before the journal removes the bandwidth groups.
        let cpu_bandwidth = self.supervisor.bandwidth_results();
        warnings.append(&mut self.supervisor.warnings);
        warnings.extend(self.journal.close());
        Stopped {
            start_wall: self.start_wall,
            elapsed_ns,
            final_rows,
            joined,
            cpu_bandwidth,
            programs: self.supervisor.results(),
            tuning_changes: std::mem::take(&mut self.tuning_changes),
            trace,
            trace_windows,
            audit,
            irq_tasks,
        }
    }
}

/// What a stopped run leaves for its result.
struct Stopped {
    start_wall: SystemTime,
    elapsed_ns: u64,
    final_rows: Vec<LiveRow>,
    joined: Vec<Joined>,
    cpu_bandwidth: Vec<crate::tune::bandwidth::GroupResult>,
    programs: Vec<load::ProgramResult>,
    tuning_changes: Vec<crate::tune::Outcome>,
    trace: Option<crate::explain::TraceReport>,
    trace_windows: Vec<(String, String)>,
    audit: Option<AuditReport>,
    irq_tasks: Vec<crate::irq_task::IrqTaskResult>,
}

/// CPU load between samples of `/proc/stat`, kept in a bounded series.
struct LoadSampler {
    prev: Option<(ProcStat, Instant)>,
    series: Vec<CpuLoad>,
    last: Option<CpuLoad>,
    run_start: Instant,
}

impl LoadSampler {
    fn new(root: &SysRoot, run_start: Instant) -> Self {
        LoadSampler {
            prev: proc_stat::read(root).ok().map(|s| (s, Instant::now())),
            series: Vec::new(),
            last: None,
            run_start,
        }
    }

    /// Samples the load since the last sample (the last one stays if
    /// `/proc/stat` cannot be read).
    fn sample(&mut self, root: &SysRoot) {
        let now = Instant::now();
        let Ok(stat) = proc_stat::read(root) else {
            return;
        };
        let Some((before, t0)) = self.prev.replace((stat.clone(), now)) else {
            return;
        };
        let load = cpu_load::between(
            &before,
            &stat,
            now.duration_since(self.run_start).as_secs_f64(),
            now.duration_since(t0).as_secs_f64(),
        );
        cpu_load::push_bounded(&mut self.series, load.clone());
        self.last = Some(load);
    }
}

/// The watch phase: the live table, CPU load, program supervision and
/// signals, until the run ends.
struct Watch {
    /// The exporters of a monitoring run.
    exporter: Option<Exporting>,
    view: LiveView,
    load: LoadSampler,
    period: Duration,
    run_start: Instant,
}

impl Watch {
    fn new(plan: &RunPlan, opts: &RunOptions, run_start: Instant) -> Self {
        Watch {
            exporter: None,
            view: LiveView {
                tty: std::io::stdout().is_terminal(),
                every_refresh: opts.every_refresh,
                lines_shown: 0,
                display: plan.main.cpu_load,
            },
            load: LoadSampler::new(&opts.root, run_start),
            period: Duration::from_nanos(plan.main.stats_period_ns),
            run_start,
        }
    }

    /// Watches until the run ends; returns why it ended.
    fn run(&mut self, armed: &mut Armed, rx: &mpsc::Receiver<Event>, root: &SysRoot) -> EndReason {
        if let Some(failed) = armed.failed.take() {
            return failed;
        }
        let mut next_refresh = Instant::now() + self.period;
        loop {
            let mut wake_at = armed
                .supervisor
                .next_respawn()
                .map_or(next_refresh, |r| r.min(next_refresh));
            if armed.flight.is_some() || armed.stream.is_some() {
                wake_at = wake_at.min(Instant::now() + crate::flight::LOOK_EVERY);
            }
            if let Some(d) = armed.deadline {
                wake_at = wake_at.min(d);
            }
            match rx.recv_timeout(wake_at.saturating_duration_since(Instant::now())) {
                Ok(Event::Signal(sig)) => {
                    return EndReason::Interrupted {
                        signal: load::signal_name(sig).to_string(),
                        number: sig,
                    };
                }
                Ok(Event::Snapshot) => self.snapshot(&armed.timers.handles),
                Ok(Event::Child | Event::TimerDone) | Err(_) => {}
            }
            if let Some(f) = armed.flight.as_mut() {
                f.look(&armed.timers.handles);
            }
            if let Some(s) = armed.stream.as_mut() {
                s.look(
                    &measured_tids(&armed.timers.handles),
                    &armed.supervisor.running(),
                );
            }
            if let Some(end) = armed.ending() {
                return end;
            }
            if Instant::now() >= next_refresh {
                self.load.sample(root);
                if let Some(x) = self.exporter.as_mut() {
                    x.refresh(armed, self.load.last.as_ref());
                }
                let note = armed.flight.as_ref().and_then(FlightRecorder::last_cause);
                self.view.show(
                    &rows(&armed.timers.handles),
                    self.load.last.as_ref(),
                    false,
                    note,
                );
                next_refresh += self.period;
                if next_refresh < Instant::now() {
                    next_refresh = Instant::now() + self.period;
                }
            }
        }
    }

    /// SIGUSR1: the live table on stderr, and the run goes on.
    fn snapshot(&self, timers: &[TimerHandle]) {
        let table = report::live::table(&rows(timers), self.load.last.as_ref(), self.view.display);
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "rtlab: snapshot at {:.1} s (SIGUSR1)\n{table}",
            self.run_start.elapsed().as_secs_f64()
        );
    }

    /// The last load sample and the final table.
    fn finish(&mut self, final_rows: &[LiveRow], root: &SysRoot) {
        self.load.sample(root);
        self.view
            .show(final_rows, self.load.last.as_ref(), true, None);
    }
}

/// A monitoring run's exporters, and what its metrics say of the machine.
struct Exporting {
    exporter: crate::monitor::Exporter,
    machine: crate::monitor::metrics::Machine,
    partitions: Vec<(String, usize)>,
    /// Per timer thread: the max of each refresh of the last minute.
    recent: Vec<std::collections::VecDeque<(Instant, u64)>>,
}

/// How far back the exported recent max looks.
const RECENT: Duration = Duration::from_secs(60);

impl Exporting {
    /// Binds the endpoint and makes the files of a monitoring run.
    fn start(opts: &RunOptions, before: &Before) -> anyhow::Result<Option<Exporting>> {
        let Some(spec) = &opts.monitor else {
            return Ok(None);
        };
        let machine = metrics_machine(&before.system);
        let first = Metrics {
            machine: machine.clone(),
            ..Metrics::default()
        };
        let exporter = crate::monitor::Exporter::start(spec, first)?;
        if let Some(addr) = exporter.listening() {
            errln!("rtlab: metrics at http://{addr}/metrics");
        }
        Ok(Some(Exporting {
            exporter,
            machine,
            recent: Vec::new(),
            partitions: before
                .isolation
                .partitions
                .iter()
                .map(|p| (p.name.clone(), p.cpus.len()))
                .collect(),
        }))
    }

    /// The last figures, once the timer threads have stopped (every sample
    /// in the last window: the same counts as the result's); then the
    /// endpoint closes. Gives the exporters' warnings.
    fn finish(mut self, armed: &Armed, load: Option<&CpuLoad>) -> Vec<String> {
        armed.timers.halt();
        self.refresh(armed, load);
        self.exporter.finish()
    }

    /// Publishes the run's figures now.
    fn refresh(&mut self, armed: &Armed, load: Option<&CpuLoad>) {
        use crate::monitor::metrics::{ProgramMetrics, TimerMetrics};
        self.recent
            .resize(armed.timers.handles.len(), Default::default());
        let now = Instant::now();
        let timers = armed
            .timers
            .handles
            .iter()
            .zip(&mut self.recent)
            .map(|(t, recent)| {
                let s = t.live.read();
                let window_max_ns = t.live.next_window();
                if let Some(m) = window_max_ns {
                    recent.push_back((now, m));
                }
                while recent
                    .front()
                    .is_some_and(|(at, _)| now.duration_since(*at) > RECENT)
                {
                    recent.pop_front();
                }
                TimerMetrics {
                    index: t.spec.index,
                    cpu: (t.spec.cpus.len() == 1).then(|| t.spec.cpus[0]),
                    buckets: t.live.buckets().to_vec(),
                    sum_ns: s.sum_ns,
                    overruns: s.overruns,
                    missed_periods: s.missed_periods,
                    max_ns: s.max_ns,
                    window_max_ns,
                    recent_max_ns: recent.iter().map(|r| r.1).max(),
                    spikes: s.over,
                }
            })
            .collect();
        let programs = armed
            .supervisor
            .results()
            .iter()
            .map(|p| ProgramMetrics {
                index: p.index,
                command: p
                    .argv
                    .first()
                    .map(|a| a.rsplit('/').next().unwrap_or(a).to_string())
                    .unwrap_or_default(),
                starts: p.starts,
                exits: p.exits_total,
            })
            .collect();
        let causes = armed
            .flight
            .as_ref()
            .map(FlightRecorder::causes)
            .unwrap_or_default();
        let tuning_changes = armed
            .tuning_changes
            .iter()
            .filter(|c| matches!(c.status, crate::tune::knob::KnobStatus::Set { .. }))
            .count() as u64;
        self.exporter.update(Metrics {
            machine: self.machine.clone(),
            timers,
            programs,
            cpu_busy: load
                .map(|l| l.per_cpu.iter().map(|&(c, b)| (c, b / 100.0)).collect())
                .unwrap_or_default(),
            causes,
            partitions: self.partitions.clone(),
            tuning_changes,
        });
    }
}

/// The labels of a monitoring run's metrics.
fn metrics_machine(system: &SystemSnapshot) -> crate::monitor::metrics::Machine {
    let p = &system.preemption;
    crate::monitor::metrics::Machine {
        host: system.hostname.clone(),
        kernel: system.kernel_release.clone(),
        preemption: match &p.dynamic_mode {
            Some(mode) => format!("{} ({mode})", p.model),
            None => p.model.clone(),
        },
        version: env!("CARGO_PKG_VERSION").into(),
        cmdline_hash: crate::monitor::metrics::fnv1a(&system.cmdline),
    }
}

/// Assembles the result of a stopped run.
fn collect(
    plan: &RunPlan,
    before: Before,
    main: MainThread,
    stopped: Stopped,
    watch: Watch,
    mut end: EndReason,
    mut warnings: Vec<String>,
) -> RunResult {
    let mut placement = vec![Placement {
        who: "main".into(),
        id: os::getpid(),
        cpuset: main.cpuset.clone(),
        cpus: plan.main.cpus.clone(),
    }];
    let mut timer_results = Vec::new();
    for (tp, (spec, live, outcome)) in plan.timers.iter().zip(stopped.joined) {
        if let Some(e) = &outcome.error {
            let msg = format!("timer_thread[{}]: {e}", spec.index);
            if matches!(end, EndReason::Completed | EndReason::Failed { .. }) {
                end = EndReason::Failed { error: msg.clone() };
            }
            warnings.push(msg);
        }
        placement.push(Placement {
            who: format!("timer_thread[{}]", spec.index),
            id: live.tid.load(Ordering::Relaxed),
            cpuset: outcome.cpuset_seen.clone(),
            cpus: Some(spec.cpus.clone()),
        });
        timer_results.extend(timer_result(tp, &spec, &live, outcome));
    }
    placement.extend(stopped.programs.iter().map(program_placement));
    RunResult {
        schema: SCHEMA.into(),
        rtlab_version: env!("CARGO_PKG_VERSION").into(),
        plan: plan.clone(),
        system: before.system,
        start_time: humantime::format_rfc3339_seconds(stopped.start_wall).to_string(),
        end_time: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        elapsed_ns: stopped.elapsed_ns,
        interrupted: matches!(end, EndReason::Interrupted { .. }),
        end,
        pm_qos: main.pm_qos.clone(),
        timers: timer_results,
        isolation: RunIsolation {
            state: before.isolation,
            placement,
        },
        programs: stopped.programs,
        tuning: RunTuning {
            changes: stopped.tuning_changes,
            cpu_bandwidth: stopped.cpu_bandwidth,
        },
        cpu_load: watch.load.series,
        warnings,
        trace: stopped.trace,
        trace_windows: stopped.trace_windows,
        audit: stopped.audit,
        irq_tasks: stopped.irq_tasks,
    }
}

/// Where a program ran (its first instance).
fn program_placement(p: &crate::load::ProgramResult) -> Placement {
    Placement {
        who: format!("program[{}]", p.index),
        id: p.first_pid.unwrap_or(0),
        cpuset: p.cpuset.clone(),
        cpus: p
            .cpus_allowed
            .as_deref()
            .and_then(|c| crate::cpulist::parse(c).ok()),
    }
}

/// One timer thread's result, if it recorded anything.
fn timer_result(
    tp: &crate::plan::TimerPlan,
    spec: &measure::TimerSpec,
    live: &measure::live::LiveCounters,
    outcome: measure::TimerOutcome,
) -> Option<TimerResult> {
    let rec = outcome.recorder?;
    Some(TimerResult {
        index: spec.index,
        tid: live.tid.load(Ordering::Relaxed),
        cpus: spec.cpus.clone(),
        cpu_first: outcome.cpus_seen.0,
        cpu_last: outcome.cpus_seen.1,
        sched: outcome.sched_seen.unwrap_or(spec.sched),
        period_ns: spec.period_ns,
        // Where the file really is (under --outdir), as systress names it
        // when there is none.
        result_file: tp
            .path
            .strip_prefix(".")
            .unwrap_or(&tp.path)
            .display()
            .to_string(),
        summary: summarize(&rec),
        histo_size_us: rec.histo_size_us(),
        histogram_us: nonzero_buckets(&rec),
        hdr_histogram: hdr_buckets(&rec),
        series: rec.series.intervals(),
        spikes: rec.spikes.list(),
        error: outcome.error,
    })
}

/// Writes every output of a result: the timer threads' result files (into
/// directories made before the run), the JSON document if asked, and the
/// closing lines on stdout. A file that cannot be written does not stop the
/// others: every one that can be is written, then the failures are returned.
pub fn write_outputs(result: &RunResult, json: Option<&std::path::Path>) -> anyhow::Result<()> {
    let plan = &result.plan;
    let mut failures = Vec::new();
    for t in &result.timers {
        let Some(tp) = plan.timers.iter().find(|tp| tp.spec.index == t.index) else {
            continue;
        };
        let text = report::files::render(t, plan.main.stats_format);
        if let Err(e) = outfile::write_whole(&tp.path, text.as_bytes()) {
            failures.push(format!("cannot write {}", e.with_hint()));
        }
    }
    if let Some(path) = json
        && let Err(e) = outfile::write_whole(path, report::json::render(result).as_bytes())
    {
        failures.push(format!("cannot write {}", e.with_hint()));
    }
    for (name, json) in &result.trace_windows {
        let path = plan.outdir.join(name);
        if let Err(e) = outfile::write_whole(&path, json.as_bytes()) {
            failures.push(format!("cannot write {}", e.with_hint()));
        }
    }
    out!("{}", report::live::closing_lines(result));
    if let Some(trace) = &result.trace {
        out!("{}", report::explain::verdict(trace));
    }
    for m in &result.irq_tasks {
        out!("{}", report::audit::irq_task(m));
    }
    if let Some(audit) = &result.audit {
        out!("{}", report::audit::audit(audit));
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(anyhow::anyhow!(failures.join("\n")))
    }
}

#[cfg(test)]
mod drop_order {
    /// Armed's fields drop in declaration order: the timers and the trace
    /// instance must go before the programs, and those before the journal
    /// undoes what they ran on.
    #[test]
    fn armed_releases_in_reverse_order_of_arming() {
        let src = include_str!("run.rs");
        let start = src.find("struct Armed {").unwrap();
        let body = &src[start..start + src[start..].find("\n}").unwrap()];
        let at = |field: &str| {
            body.find(&format!("    {field}: "))
                .unwrap_or_else(|| panic!("{field} not in Armed"))
        };
        assert!(at("timers") < at("stream"));
        assert!(at("stream") < at("flight"));
        assert!(at("flight") < at("supervisor"));
        assert!(at("supervisor") < at("journal"));
    }
}

//! The arm and stop phases: the guards that hold what a run acquires (main
//! thread, signal thread, journal, timer threads) and [`Armed`], which arms
//! them in order and stops them in the order that keeps measurements clean.

use super::traces::{measured_tids, start_flight, start_stream};
use super::watch::rows;
use super::{Nudge, RunOptions};
use crate::measure::{self, TimerHandle};
use crate::messages;
use crate::plan::RunPlan;
use crate::programs::{self, Supervisor};
use crate::report::live::LiveRow;
use crate::result::{CutThread, EndReason, PmQos};
use crate::sys::SysRoot;
use crate::sys::journal::{self, Journal, Owner};
use crate::sys::os;
use crate::sys::paths;
use crate::trace::audit::{AuditReport, Promises};
use crate::trace::flight::FlightRecorder;
use crate::trace::stream::StreamResults;
use crate::trace::stream::TraceStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

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
        .map_err(|e| match e {
            crate::sys::SysError::NotFound(p) => {
                format!("{}: {}", p.display(), crate::sys::pm_qos_missing(root))
            }
            e => e.to_string(),
        })
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

/// The main thread's setup, held until the run ends: the PM QoS request
/// (the kernel drops it when the file is closed) and locked memory.
pub(super) struct MainThread {
    pub(super) pm_qos: PmQos,
    pm_qos_file: Option<std::fs::File>,
    memlock: bool,
    /// The cpuset it ended up in (`/proc/thread-self/cpuset`).
    pub(super) cpuset: Option<String>,
}

impl MainThread {
    /// Places the main thread first: threads and programs started later
    /// inherit its cpuset and affinity unless they set their own.
    pub(super) fn arm(
        root: &SysRoot,
        plan: &RunPlan,
        warnings: &mut Vec<String>,
    ) -> anyhow::Result<Self> {
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
            match os::set_affinity(0, cpus) {
                Err(e) if main.off_audited => warnings.push(format!(
                    "cannot keep the main thread off the audited CPUs (on CPUs {cpus:?}: {e})"
                )),
                r => r.map_err(|e| {
                    anyhow::anyhow!("cannot pin the main thread to CPUs {cpus:?}: {e}")
                })?,
            }
        }
        main_thread_placed(main, warnings);
        os::set_sched(0, main.sched).map_err(|e| {
            anyhow::anyhow!(
                "cannot give the main thread {} {}: {e}",
                main.sched.policy.name(),
                main.sched.priority
            )
        })?;
        if main.memlock {
            let mode = crate::sys::memory::lock_all_memory().map_err(|e| {
                anyhow::anyhow!("memlock: mlockall failed: {e} (raise `ulimit -l` or run as root)")
            })?;
            messages::debug(1, &format!("memory locked: {mode:?}"));
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
    pub(super) fn release(&mut self) {
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

/// Says where the main thread went: off the measured CPUs (a note), or
/// on some of them (a warning: its switches show in the audit, and a
/// measured task may find it on its CPU).
fn main_thread_placed(main: &crate::plan::MainPlan, warnings: &mut Vec<String>) {
    let Some(measured) = main.measured_cpus.as_ref().or(main.audit_cpus.as_ref()) else {
        return;
    };
    let now = os::get_affinity(0).unwrap_or_default();
    let on: Vec<usize> = now
        .iter()
        .copied()
        .filter(|c| measured.contains(c))
        .collect();
    let audited = |c: &usize| main.audit_cpus.as_ref().is_some_and(|a| a.contains(c));
    if on.is_empty() {
        if main.off_audited {
            messages::note(&format!(
                "rtlab's own threads run on CPU(s) {}, off the measured CPU(s) {}",
                crate::cpulist::format(&now),
                crate::cpulist::format(measured)
            ));
        }
    } else if on.iter().all(audited) {
        warnings.push(format!(
            "rtlab's main thread may run on audited CPU(s) {on:?} (every CPU is audited, \
             or `main`'s cpu_affinity or cpuset says so): its switches show in the audit"
        ));
    } else {
        warnings.push(format!(
            "rtlab's main thread may run on measured CPU(s) {on:?} (every CPU is measured, \
             or `main`'s cpu_affinity or cpuset says so): a measured task may find it on its \
             CPU and blame it"
        ));
    }
}

/// The thread that turns signals into events, stopped when dropped.
pub(super) struct SignalThread {
    handle: signal_hook::iterator::Handle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SignalThread {
    pub(super) fn start(tx: mpsc::Sender<Nudge>) -> std::io::Result<Self> {
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
                        crate::sys::consts::SIGCHLD => Nudge::Child,
                        crate::sys::consts::SIGUSR1 => Nudge::Snapshot,
                        _ => Nudge::Signal(sig),
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
pub(super) struct RunJournal(pub(super) Option<Journal>);

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
            messages::warn(&w);
        }
    }
}

/// A timer thread after its end: its spec, its counters, what it measured.
pub(super) type Joined = (
    measure::TimerSpec,
    Arc<measure::live::LiveCounters>,
    measure::TimerOutcome,
);

/// The timer threads, stopped and joined when dropped.
pub(super) struct Timers {
    pub(super) handles: Vec<TimerHandle>,
    stop: Arc<AtomicBool>,
}

impl Timers {
    /// No timer threads (a run that failed before releasing them).
    fn none() -> Self {
        Timers {
            handles: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Starts the timer threads (released together); each tells the watch
    /// loop through `tx` when it is done.
    fn start(
        plan: &RunPlan,
        opts: &RunOptions,
        tx: mpsc::Sender<Nudge>,
        marker: Option<Arc<std::fs::File>>,
        warnings: &mut Vec<String>,
    ) -> Result<Self, measure::StartError> {
        let specs = plan.timers.iter().map(|t| t.spec.clone()).collect();
        let notify = move || {
            let _ = tx.send(Nudge::TimerDone);
        };
        if let measure::Wake::Simulated(seed) = opts.wake {
            warnings.push(format!(
                "SIMULATED wake-ups (RTLAB_SIMULATED_WAKE={seed}, for tests): these latencies were not measured"
            ));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let metrics = opts.monitor.is_some();
        // Start-up code is done with when the threads are ready: what stays
        // resident (and locked) is what the run uses from then on.
        // The noise threads start after the timers: their code is kept too.
        let noise = !plan.noise.is_empty();
        let ready = |hot: &[usize]| {
            let mut hot = hot.to_vec();
            if noise {
                hot.extend(measure::noise::hot_code());
            }
            release_startup_pages(&opts.root, &hot)
        };
        let handles = measure::start(
            specs,
            &opts.root,
            stop.clone(),
            notify,
            measure::StartWith {
                wake: opts.wake,
                marker,
                metrics,
            },
            ready,
        )?;
        Ok(Timers { handles, stop })
    }

    /// Asks them to stop and wakes them.
    fn stop(&self) {
        measure::stop_all(&self.handles, &self.stop);
    }

    /// Stops them and waits (a few periods at most, 2 s at the very most)
    /// until each has published its last sample.
    pub(super) fn halt(&self) {
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

/// Everything a run holds once armed. Rust drops fields in the order they
/// are declared, so they are declared in reverse order of arming: if the
/// run ends without its stop phase (a panic), the timers stop first, then
/// the flight recorder's instance goes, then the programs, and last the
/// journal undoes the tuning (and the tracefs mount).
pub(super) struct Armed {
    /// The noise threads (stopped first, with the timers).
    pub(super) noise: super::noise::Pollers,
    pub(super) timers: Timers,
    /// The trace stream, when the run audits or measures IRQ-to-task
    /// latency.
    pub(super) stream: Option<TraceStream>,
    /// The flight recorder, when the run traces.
    pub(super) flight: Option<FlightRecorder>,
    /// The `on_spike` actions, when the run has any.
    pub(super) spikes: Option<crate::spike_actions::SpikeWatch>,
    pub(super) supervisor: Supervisor,
    journal: RunJournal,
    start_wall: SystemTime,
    pub(super) run_start: Instant,
    pub(super) tuning_changes: Vec<crate::tune::Outcome>,
    timers_start: Instant,
    /// Why the run that wanted a trace has none.
    trace_unavailable: Option<crate::trace::explain::TraceReport>,
    /// Why the run that wanted a trace stream has none.
    stream_unavailable: Option<String>,
    /// Each `task_latency[N]`'s BPF program, watching its task.
    task_probes: super::task_bpf::TaskProbes,
    /// The run audits CPUs (a stream that could not start is then an
    /// audit not done).
    audits: bool,
    /// When `lifetime.duration` ends the run.
    pub(super) deadline: Option<Instant>,
    /// `main`'s `lifetime.duration` (ns), the warm-up not included.
    lifetime_ns: Option<u64>,
    /// A monitoring run: timer threads that reach their lifetime do not end
    /// it (only a signal, an abort or `lifetime.duration` do).
    monitor: bool,
    /// Why the run ended while it was being armed (a program or a timer
    /// that could not start).
    pub(super) failed: Option<EndReason>,
}

/// The CPUs of the supervisor's helpers: the guard and the spike
/// programs, off the measured CPUs too.
fn helper_cpus(plan: &RunPlan) -> Vec<usize> {
    let off_measured = plan.main.cpus.as_ref().filter(|_| plan.main.off_audited);
    plan.main
        .on_spike
        .as_ref()
        .filter(|s| s.runs_programs())
        .map(|s| s.cpus.clone())
        .or_else(|| off_measured.filter(|_| !plan.programs.is_empty()).cloned())
        .unwrap_or_default()
}

/// The trace stream and each `task_latency[N]`'s BPF program: loaded
/// before the stream (the load takes a while), counting from the moment
/// it records (or from their program's start); none without a stream.
fn stream_and_probes(
    root: &SysRoot,
    journal: &mut RunJournal,
    plan: &RunPlan,
    online: &[usize],
    rt_fallback: Option<bool>,
    warnings: &mut Vec<String>,
) -> (
    Option<TraceStream>,
    Option<String>,
    super::task_bpf::TaskProbes,
) {
    let mut probes = super::task_bpf::TaskProbes::start(root, &plan.task_latency);
    let (stream, unavailable) = start_stream(
        root,
        journal,
        plan,
        online,
        rt_fallback,
        &mut || probes.arm(),
        warnings,
    );
    if stream.is_none() {
        probes = super::task_bpf::TaskProbes::default();
    }
    (stream, unavailable, probes)
}

impl Armed {
    pub(super) fn arm(
        plan: &RunPlan,
        opts: &RunOptions,
        online: &[usize],
        tx: mpsc::Sender<Nudge>,
        rt_fallback: Option<bool>,
        warnings: &mut Vec<String>,
    ) -> anyhow::Result<Self> {
        let root = &opts.root;
        let start_wall = SystemTime::now();
        let run_start = Instant::now();
        let mut journal = RunJournal::open(opts, warnings)?;
        let tuning_changes = tune(root, &mut journal, plan, warnings);
        let (flight, trace_unavailable) = start_flight(root, &mut journal, plan, warnings);
        let marker = flight.as_ref().and_then(FlightRecorder::marker);
        let (stream, stream_unavailable, mut task_probes) =
            stream_and_probes(root, &mut journal, plan, online, rt_fallback, warnings);
        let mut supervisor = Supervisor::new(
            &plan.programs,
            &plan.cpu_groups,
            root,
            online.to_vec(),
            run_start,
            journal.0.as_mut(),
            helper_cpus(plan),
        );
        let failure = |error: String| Some(EndReason::Failed { error });
        let mut failed = supervisor
            .start_all()
            .err()
            .and_then(|e| failure(e.to_string()));
        task_probes.learn(&supervisor.running());
        let tx_noise = tx.clone();
        let timers = match failed {
            Some(_) => Timers::none(),
            None => Timers::start(plan, opts, tx.clone(), marker, warnings).unwrap_or_else(|e| {
                failed = failure(e.to_string());
                Timers::none()
            }),
        };
        let noise = match failed {
            Some(_) => super::noise::Pollers::none(),
            None => super::noise::Pollers::start(plan, root, tx_noise, stream.is_some())
                .unwrap_or_else(|e| {
                    failed = failure(e.to_string());
                    super::noise::Pollers::none()
                }),
        };
        let mut stream = stream;
        if let Some(s) = stream.as_mut() {
            s.watch_noise(noise.learned());
        }
        let noise_released = match noise.handles.len() {
            0 => String::new(),
            n => format!(", {n} noise threads"),
        };
        messages::debug(
            1,
            &format!(
                "{} timer threads released{noise_released}",
                timers.handles.len()
            ),
        );
        let timers_start = Instant::now();
        Ok(Armed {
            start_wall,
            run_start,
            journal,
            tuning_changes,
            supervisor,
            noise,
            timers,
            timers_start,
            flight,
            spikes: plan
                .main
                .on_spike
                .as_ref()
                .map(|s| crate::spike_actions::SpikeWatch::new(s, root)),
            trace_unavailable,
            stream,
            stream_unavailable,
            task_probes,
            audits: plan.main.audit_cpus.is_some(),
            // From the timer threads' release, the warm-up first: they
            // measure the whole lifetime.
            deadline: plan
                .run_lifetime_ns()
                .map(|ns| timers_start + Duration::from_nanos(ns)),
            lifetime_ns: plan.main.lifetime_ns,
            monitor: opts.monitor.is_some(),
            failed,
        })
    }

    /// Reads what the traces recorded since the last look: the flight
    /// recorder explains the latest announced late wake-ups, the stream feeds
    /// the audit and the IRQ-to-task matchers.
    pub(super) fn read_traces(&mut self) {
        if let Some(f) = self.flight.as_mut() {
            f.look(&self.timers.handles);
        }
        if let Some(w) = self.spikes.as_mut() {
            w.look(&self.timers.handles, &mut self.supervisor);
        }
        self.task_probes.learn(&self.supervisor.running());
        if let Some(s) = self.stream.as_mut() {
            let timers: Vec<(usize, i32, u64)> = self
                .timers
                .handles
                .iter()
                .map(|t| {
                    let tid = t.live.tid.load(Ordering::Relaxed);
                    let from = t.live.first_deadline_ns.load(Ordering::Relaxed);
                    (t.spec.index, tid, from)
                })
                .collect();
            s.look(
                &measured_tids(&self.timers.handles),
                &self.supervisor.running(),
                &timers,
            );
        }
    }

    /// Why the run should end now, if it should (a program's end that
    /// aborts it, a timer that failed, every timer done).
    pub(super) fn ending(&mut self) -> Option<EndReason> {
        if let Some(abort) = self.supervisor.poll() {
            return Some(EndReason::Aborted {
                program: abort.index,
                command: abort.command,
                status: abort.status,
            });
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Some(self.at_deadline());
        }
        if self.spikes.as_ref().is_some_and(|w| w.stop) {
            return Some(EndReason::SpikeStop);
        }
        let timers = &self.timers.handles;
        if timers.iter().any(|t| t.live.failed.load(Ordering::Relaxed)) {
            return Some(EndReason::Failed {
                error: "a timer thread could not start".into(),
            });
        }
        if self.noise.any_failed() {
            return Some(EndReason::Failed {
                error: "a noise thread could not start".into(),
            });
        }
        // Every measuring thread (timer or noise) has reached its end.
        let timers_done = timers
            .iter()
            .all(|t| t.live.finished.load(Ordering::Acquire));
        let noise_done = self.noise.handles.is_empty() || self.noise.all_done();
        let some = !timers.is_empty() || !self.noise.handles.is_empty();
        if !self.monitor && some && timers_done && noise_done {
            return Some(EndReason::Completed);
        }
        None
    }

    /// The end at `main`'s lifetime: completed, unless a timer thread with
    /// a lifetime of its own has not reached it (its measured time is
    /// filled in when its result is collected).
    fn at_deadline(&self) -> EndReason {
        let threads: Vec<CutThread> = self
            .timers
            .handles
            .iter()
            .filter(|t| !t.live.finished.load(Ordering::Acquire))
            .filter_map(|t| {
                let asked_ns = t.spec.own_lifetime_ns()?;
                Some(CutThread {
                    index: t.spec.index,
                    measured_ns: 0,
                    asked_ns,
                })
            })
            .collect();
        match (self.lifetime_ns, threads.is_empty()) {
            (Some(lifetime_ns), false) => EndReason::CutShort {
                lifetime_ns,
                threads,
            },
            _ => EndReason::Completed,
        }
    }

    /// Stops the run: timers first (they measure), then the programs, then
    /// the system changes are undone.
    pub(super) fn stop(mut self, promises: &Promises, warnings: &mut Vec<String>) -> Stopped {
        // Every live figure read below is final: the timer threads have
        // published their last sample (they publish every 16 samples, and
        // at the end).
        self.timers.halt();
        self.noise.halt();
        let measured = measured_tids(&self.timers.handles);
        self.task_probes.pause();
        let StreamResults {
            audit,
            irq_tasks,
            mut task_latency,
            timer_irq,
            // The noise threads' attribution: the lead wires it in.
            noise: attributions,
            figures,
        } = match self.stream.take() {
            Some(s) => s.finish(&measured, &self.supervisor.running(), promises),
            None => StreamResults::default(),
        };
        std::mem::take(&mut self.task_probes).finish(&mut task_latency);
        let audit = audit.or_else(|| {
            let why = self.stream_unavailable.clone().filter(|_| self.audits)?;
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
            None => {
                // No trace, but the timer threads counted their late
                // wake-ups all the same: none of them is explained.
                let report = self.trace_unavailable.take().map(|mut r| {
                    r.over_threshold = self.timers.handles.iter().map(|t| t.live.read().over).sum();
                    r.not_explained = r.over_threshold;
                    r
                });
                (report, Vec::new())
            }
        };
        let on_spike = self
            .spikes
            .take()
            .map(crate::spike_actions::SpikeWatch::finish);
        let final_rows = rows(&self.timers.handles);
        let final_noise = self.noise.rows();
        let joined = self.timers.join();
        let noise = self.noise.join();
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
            final_noise,
            joined,
            noise,
            noise_unavailable: self.stream_unavailable.clone(),
            attributions,
            cpu_bandwidth,
            programs: self.supervisor.results(),
            tuning_changes: std::mem::take(&mut self.tuning_changes),
            trace,
            trace_windows,
            audit,
            irq_tasks,
            task_latency,
            timer_irq,
            figures,
            on_spike,
        }
    }
}

/// What a stopped run leaves for its result.
pub(super) struct Stopped {
    pub(super) start_wall: SystemTime,
    pub(super) elapsed_ns: u64,
    pub(super) final_rows: Vec<LiveRow>,
    pub(super) final_noise: Vec<crate::report::live::NoiseRow>,
    pub(super) joined: Vec<Joined>,
    pub(super) noise: Vec<super::noise::JoinedNoise>,
    /// Why the trace stream (the noise attribution) did not run.
    pub(super) noise_unavailable: Option<String>,
    /// The noise threads' gaps attributed, by thread.
    pub(super) attributions: Vec<crate::trace::noise::NoiseAttribution>,
    pub(super) cpu_bandwidth: Vec<crate::tune::bandwidth::GroupResult>,
    pub(super) programs: Vec<programs::ProgramResult>,
    pub(super) tuning_changes: Vec<crate::tune::Outcome>,
    pub(super) trace: Option<crate::trace::explain::TraceReport>,
    pub(super) trace_windows: Vec<(String, String)>,
    pub(super) audit: Option<AuditReport>,
    pub(super) irq_tasks: Vec<crate::trace::irq_task::IrqTaskResult>,
    pub(super) task_latency: Vec<crate::trace::task_latency::TaskLatencyResult>,
    pub(super) on_spike: Option<crate::spike_actions::SpikeReport>,
    pub(super) timer_irq: Vec<crate::trace::timer_irq::TimerIrqResult>,
    pub(super) figures: Vec<crate::trace::Figure>,
}

/// Lets go of the binary's pages that start-up touched, but the timer
/// threads' `hot` code (see [`crate::sys::memory::release_startup_pages`]);
/// said at debug level 1.
pub(super) fn release_startup_pages(root: &SysRoot, hot: &[usize]) {
    match crate::sys::memory::release_startup_pages(root, hot) {
        Ok(r) => messages::debug(
            1,
            &format!(
                "start-up pages let go: {} KiB in {} mappings",
                r.kib, r.mappings
            ),
        ),
        Err(e) => messages::debug(1, &format!("start-up pages kept: {e}")),
    }
}

/// The supervisor starts the programs of `on_spike run` as it starts
/// programs, and stops them with the rest.
impl crate::spike_actions::Launcher for Supervisor {
    fn launch(
        &mut self,
        executable: &std::path::Path,
        argv: &[String],
        env: &[(&str, String)],
    ) -> std::io::Result<i32> {
        self.start_helper(executable, argv, env)
    }

    fn alive(&self) -> usize {
        self.helpers_alive()
    }
}

#[cfg(test)]
mod drop_order {
    /// Armed's fields drop in declaration order: the timers and the trace
    /// instance must go before the programs, and those before the journal
    /// undoes what they ran on.
    #[test]
    fn armed_releases_in_reverse_order_of_arming() {
        let src = include_str!("arm.rs");
        let start = src.find("struct Armed {").unwrap();
        let body = &src[start..start + src[start..].find("\n}").unwrap()];
        let at = |field: &str| {
            body.find(&format!(" {field}: "))
                .unwrap_or_else(|| panic!("{field} not in Armed"))
        };
        assert!(at("timers") < at("stream"));
        assert!(at("stream") < at("flight"));
        assert!(at("flight") < at("supervisor"));
        assert!(at("supervisor") < at("journal"));
    }
}

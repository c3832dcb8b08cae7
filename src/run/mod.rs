//! The conductor: runs a validated [`RunPlan`] and returns its [`RunResult`].
//!
//! Phases, each a function or a type, each in its file:
//!
//! 1. recover ([`recover_dead_runs`], here): undo what a run that died left;
//! 2. arm (`arm.rs`: [`MainThread::arm`], [`SignalThread::start`],
//!    [`Armed::arm`]; `traces.rs`): main thread (cpuset, affinity, policy,
//!    mlockall, PM QoS), signals, journal, tuning, traces, programs, timers,
//!    each held by a guard;
//! 3. watch (`watch.rs`: [`Watch::run`]): live table, CPU load, traces,
//!    program supervision, signals, until the run ends; a monitoring run
//!    also publishes its figures (`exporting.rs`);
//! 4. stop (`arm.rs`: [`Armed::stop`]): timers, then traces, then programs,
//!    then the system changes;
//! 5. collect (`collect.rs`: [`collect`]): the result.
//!
//! Writing outputs is the caller's job ([`write_outputs`]), so that an
//! interrupted run writes the same way as a completed one: the caller
//! builds the run's [`ExportSet`] before it starts (`export.rs`: each
//! output with its target, checked), and the set writes them all at the
//! end; then each part's closing text is printed (`closing.rs`).

use crate::isolate::state::IsolationState;
use crate::measure;
use crate::messages;
use crate::plan::RunPlan;
use crate::result::RunResult;
use crate::sys::SysRoot;
use crate::sys::info::SystemSnapshot;
use crate::sys::journal::{self, Owner};
use std::path::PathBuf;
use std::sync::mpsc;

mod arm;
mod closing;
mod collect;
mod export;
mod exporting;
mod noise;
mod rt_tasks;
mod task_bpf;
mod traces;
mod watch;

use arm::{Armed, MainThread, SignalThread};
pub use closing::{CLOSINGS, Closing, closing_texts};
use collect::collect;
pub use collect::write_outputs;
pub use export::{CyclictestHistogram, CyclictestJson, ExportSet, OutputRefused, RunExporter};
use exporting::Exporting;
use traces::promises;
use watch::Watch;

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
    /// `rtlab cyclictest`: cyclictest's live lines instead of the table.
    pub cyclictest: Option<crate::report::cyclictest::View>,
    /// No live table: another tool's outputs own stdout (`rtlab oslat`,
    /// `rtlab hwlat`).
    pub silent: bool,
}

/// What wakes the watch loop before its next refresh (through the run's
/// channel): a signal, SIGUSR1's snapshot request, a program's end, a timer
/// thread's end. (Not a trace event: those are
/// [`crate::trace::event::Event`].)
enum Nudge {
    Signal(i32),
    /// SIGUSR1: print a snapshot of the live statistics and go on
    /// (cyclictest's behaviour).
    Snapshot,
    Child,
    TimerDone,
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
    // Reading the machine's state touched code of its own: let go of it
    // before arming (see `release_early_pages`).
    let _ = crate::sys::memory::release_early_pages(root);
    // The endpoint is bound first: an address in use refuses the run before
    // anything is changed.
    let exporting = Exporting::start(opts, &before)?;
    let mut main = MainThread::arm(root, plan, &mut warnings)?;
    let (tx, rx) = mpsc::channel::<Nudge>();
    let signals = SignalThread::start(tx.clone())?;
    // Where the BPF source cannot run, the trace stream counts instead.
    let rt_fallback = exporting.as_ref().and_then(Exporting::rt_fallback);
    let mut armed = Armed::arm(plan, opts, &before.online, tx, rt_fallback, &mut warnings)?;
    let mut watch = Watch::new(plan, opts, armed.run_start);
    watch.announce_pm_qos(&main.pm_qos);
    watch.exporter = exporting;
    watch.partitions.clone_from(&before.isolation.partitions);
    let end = watch.run(&mut armed, &rx, root);
    let mut rt_wakeups = None;
    if let Some(x) = watch.exporter.take() {
        let (said, figure) = x.finish(&armed, &watch.load);
        warnings.extend(said);
        rt_wakeups = figure;
    }
    let mut stopped = armed.stop(&promises(&before.isolation), &mut warnings);
    stopped.figures.extend(rt_wakeups);
    // Nothing measures any more: what the run touched goes before its end
    // touches more (the closing text, the result).
    let _ = crate::sys::memory::release_early_pages(root);
    watch.check_partitions(root, false);
    watch.finish(
        &stopped.final_rows,
        &stopped.final_noise,
        &stopped.task_latency,
        root,
    );
    drop(signals);
    main.release();
    Ok(collect(plan, before, main, stopped, watch, end, warnings))
}

/// A run that died (SIGKILL, power cut of its process) may have left system
/// changes: they are put back before anything is measured. Returns the
/// warnings for the result.
pub fn recover_dead_runs(root: &SysRoot, journal_dir: &std::path::Path) -> Vec<String> {
    let mut warnings = Vec::new();
    let recovered = journal::restore_all(root, journal_dir, Some(Owner::Run));
    for refusal in &recovered.refused {
        messages::warn(refusal);
        warnings.push(refusal.clone());
    }
    if !recovered.journals.is_empty() {
        messages::note(&format!(
            "a run that ended without cleaning up left a journal; restored first:\n{}",
            recovered.lines().join("\n")
        ));
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

//! The conductor: runs a validated [`RunPlan`] and returns its [`RunResult`].
//!
//! Phases: set up the main thread (affinity, policy, mlockall, PM QoS) →
//! start the programs → release the timer threads → watch (live table, CPU
//! load, program ends, signals) → stop the timers, then the programs →
//! release what was held → build the result. Writing outputs is the caller's
//! job ([`write_outputs`]), so that an interrupted run writes the same way as
//! a completed one.

use crate::config::CpuLoadDisplay;
use crate::isolate::state::IsolationState;
use crate::load::{self, Supervisor};
use crate::measure::{self, TimerHandle};
use crate::messages;
use crate::plan::RunPlan;
use crate::report::{self, live::LiveRow};
use crate::result::RunTuning;
use crate::result::{EndReason, PmQos, RunResult, SCHEMA, TimerResult};
use crate::result::{Placement, RunIsolation};
use crate::stats::cpu_load::{self, CpuLoad};
use crate::stats::{hdr_buckets, nonzero_buckets, summarize};
use crate::sys::SysRoot;
use crate::sys::info::SystemSnapshot;
use crate::sys::journal::{self, Journal, Owner};
use crate::sys::os;
use crate::sys::outfile;
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
        .open_rw("dev/cpu_dma_latency")
        .map_err(|e| e.to_string())
        .and_then(|f| {
            os::write_pm_qos(&f, us as i32)
                .map_err(|e| format!("{}: {e}", root.path("dev/cpu_dma_latency").display()))?;
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
    fn show(&mut self, rows: &[LiveRow], load: Option<&CpuLoad>, last: bool) {
        if !(self.tty || self.every_refresh || last) {
            return;
        }
        let text = report::live::table(rows, load, self.display);
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

/// Runs the plan. Errors are failures before anything started; once the run
/// has started, failures end it with [`EndReason::Failed`] and still give a
/// result.
pub fn execute(plan: &RunPlan, opts: &RunOptions) -> anyhow::Result<RunResult> {
    let root = &opts.root;
    let mut warnings = Vec::new();
    // A run that died (SIGKILL, power cut of its process) may have left
    // system changes: put them back before measuring anything.
    let recovered = journal::restore_all(root, &opts.journal_dir, Some(Owner::Run));
    for refusal in &recovered.refused {
        crate::errln!("rtlab: warning: {refusal}");
        warnings.push(refusal.clone());
    }
    if !recovered.journals.is_empty() {
        crate::errln!(
            "rtlab: a run that ended without cleaning up left a journal; restored first:"
        );
        for line in recovered.lines() {
            crate::errln!("{line}");
        }
        warnings.push(format!(
            "restored the changes left by a run that died ({})",
            recovered.journals.join(", ")
        ));
    }
    let system = SystemSnapshot::read(root);
    let isolation_state = IsolationState::read(root, &opts.journal_dir);
    let online = crate::sys::online_cpus(root).unwrap_or_default();

    // The main thread first: threads and programs started later inherit its
    // cpuset and affinity unless they set their own.
    if let Some(cs) = &plan.main.cpuset {
        // v1 places one thread; v2 only whole processes.
        let id = if cs.v2 { os::getpid() } else { os::gettid() };
        root.write(&cs.thread_file(), &id.to_string())
            .map_err(|e| {
                anyhow::anyhow!("cannot put the main thread in cpuset {}: {e}", cs.display())
            })?;
    }
    let main_cpuset = root.read_opt("proc/thread-self/cpuset");
    if let Some(cpus) = &plan.main.cpus {
        os::set_affinity(0, cpus)
            .map_err(|e| anyhow::anyhow!("cannot pin the main thread to CPUs {cpus:?}: {e}"))?;
    }
    os::set_sched(0, plan.main.sched).map_err(|e| {
        anyhow::anyhow!(
            "cannot give the main thread {} {}: {e}",
            plan.main.sched.policy.name(),
            plan.main.sched.priority
        )
    })?;
    if plan.main.memlock {
        os::lock_all_memory().map_err(|e| {
            anyhow::anyhow!("memlock: mlockall failed: {e} (raise `ulimit -l` or run as root)")
        })?;
    }
    let (pm_qos, pm_qos_file) = hold_pm_qos(root, plan.main.dma_latency_us);
    if let Some(e) = &pm_qos.error {
        warnings.push(format!("PM QoS not held: {e}"));
    }

    let (tx, rx) = mpsc::channel::<Event>();
    let mut signals = signal_hook::iterator::Signals::new([
        libc::SIGINT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGCHLD,
        libc::SIGUSR1,
    ])?;
    let signal_handle = signals.handle();
    let signal_tx = tx.clone();
    let signal_thread = std::thread::Builder::new()
        .name("rtlab-signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                let event = match sig {
                    libc::SIGCHLD => Event::Child,
                    libc::SIGUSR1 => Event::Snapshot,
                    _ => Event::Signal(sig),
                };
                if signal_tx.send(event).is_err() {
                    break;
                }
            }
        })?;

    let start_wall = SystemTime::now();
    let run_start = Instant::now();
    // Every system change from here on is journalled, and undone at the end
    // however the run ends (a SIGKILL leaves it to the next rtlab).
    let mut run_journal = match Journal::open(
        root,
        &opts.journal_dir,
        &format!("run-{}.journal", os::getpid()),
        Owner::Run,
    ) {
        Ok(j) => Some(j),
        // A journal directory others could tamper with is not used at all:
        // the run does not start (its changes could not be trusted back).
        Err(e @ journal::JournalError::Untrusted(_)) => {
            anyhow::bail!("{e}");
        }
        Err(e) => {
            if os::geteuid() == 0 {
                warnings.push(format!("changes of this run are not journalled: {e}"));
            }
            None
        }
    };
    let (tuning_changes, tuning_problems) = match run_journal.as_mut() {
        Some(j) if !plan.main.tuning.is_empty() => crate::tune::apply(root, j, &plan.main.tuning),
        None if !plan.main.tuning.is_empty() => (
            Vec::new(),
            vec!["the tuning keys were not applied: no journal to restore them from".into()],
        ),
        _ => (Vec::new(), Vec::new()),
    };
    for o in tuning_changes.iter().filter(|o| o.refused()) {
        warnings.push(format!("kernel refused: {}", o.line().trim_end()));
    }
    warnings.extend(tuning_problems);
    let mut supervisor = Supervisor::new(
        &plan.programs,
        &plan.cpu_groups,
        root,
        online.clone(),
        run_start,
        run_journal.as_mut(),
    );
    let mut end = match supervisor.start_all() {
        Ok(()) => None,
        Err(e) => Some(EndReason::Failed { error: e }),
    };

    let stop = Arc::new(AtomicBool::new(false));
    let specs = plan.timers.iter().map(|t| t.spec.clone()).collect();
    let done_tx = tx.clone();
    let notify = move || {
        let _ = done_tx.send(Event::TimerDone);
    };
    let timers = if end.is_none() {
        match measure::start(specs, root, stop.clone(), notify) {
            Ok(t) => t,
            Err(e) => {
                end = Some(EndReason::Failed { error: e });
                Vec::new()
            }
        }
    } else {
        Vec::new()
    };
    let timers_start = Instant::now();
    messages::debug(1, &format!("{} timer threads released", timers.len()));

    let mut view = LiveView {
        tty: std::io::stdout().is_terminal(),
        every_refresh: opts.every_refresh,
        lines_shown: 0,
        display: plan.main.cpu_load,
    };
    let period = Duration::from_nanos(plan.main.stats_period_ns);
    let mut cpu_series: Vec<CpuLoad> = Vec::new();
    let mut prev_stat: Option<(ProcStat, Instant)> =
        proc_stat::read(root).ok().map(|s| (s, Instant::now()));
    let mut sample_load = |series: &mut Vec<CpuLoad>| -> Option<CpuLoad> {
        let now = Instant::now();
        let stat = proc_stat::read(root).ok()?;
        let (before, t0) = prev_stat.replace((stat.clone(), now))?;
        let load = cpu_load::between(
            &before,
            &stat,
            now.duration_since(run_start).as_secs_f64(),
            now.duration_since(t0).as_secs_f64(),
        );
        cpu_load::push_bounded(series, load.clone());
        Some(load)
    };
    let mut last_load: Option<CpuLoad> = None;
    let mut next_refresh = Instant::now() + period;

    while end.is_none() {
        let wake_at = supervisor
            .next_respawn()
            .map_or(next_refresh, |r| r.min(next_refresh));
        match rx.recv_timeout(wake_at.saturating_duration_since(Instant::now())) {
            Ok(Event::Signal(sig)) => {
                end = Some(EndReason::Interrupted {
                    signal: load::signal_name(sig).to_string(),
                });
                break;
            }
            Ok(Event::Snapshot) => {
                let table = report::live::table(&rows(&timers), last_load.as_ref(), view.display);
                let mut err = std::io::stderr().lock();
                let _ = writeln!(
                    err,
                    "rtlab: snapshot at {:.1} s (SIGUSR1)\n{table}",
                    run_start.elapsed().as_secs_f64()
                );
            }
            Ok(Event::Child | Event::TimerDone) | Err(_) => {}
        }
        if let Some(abort) = supervisor.poll() {
            end = Some(EndReason::Aborted {
                program: abort.index,
                command: abort.command,
                status: abort.status,
            });
            break;
        }
        if timers.iter().any(|t| t.live.failed.load(Ordering::Relaxed)) {
            end = Some(EndReason::Failed {
                error: "a timer thread could not start".into(),
            });
            break;
        }
        if !timers.is_empty()
            && timers
                .iter()
                .all(|t| t.live.finished.load(Ordering::Acquire))
        {
            end = Some(EndReason::Completed);
            break;
        }
        if Instant::now() >= next_refresh {
            last_load = sample_load(&mut cpu_series).or(last_load);
            view.show(&rows(&timers), last_load.as_ref(), false);
            next_refresh += period;
            if next_refresh < Instant::now() {
                next_refresh = Instant::now() + period;
            }
        }
    }
    let end = end.unwrap_or(EndReason::Completed);

    // Stop: timers first (they measure), then the load.
    measure::stop_all(&timers, &stop);
    let final_rows = rows(&timers);
    let joined: Vec<_> = timers.into_iter().map(TimerHandle::join).collect();
    let elapsed_ns = timers_start.elapsed().as_nanos() as u64;
    supervisor.stop_all();
    let cpu_bandwidth = supervisor.bandwidth_results();
    warnings.append(&mut supervisor.warnings);
    if let Some(j) = run_journal.take() {
        for f in j.replay_and_close().failures() {
            warnings.push(format!("could not restore {}: {}", f.what, f.detail));
        }
    }
    last_load = sample_load(&mut cpu_series).or(last_load);
    view.show(&final_rows, last_load.as_ref(), true);
    drop(pm_qos_file);
    if plan.main.memlock {
        os::unlock_all_memory();
    }
    signal_handle.close();
    let _ = signal_thread.join();

    let mut end = end;
    let mut placement = vec![Placement {
        who: "main".into(),
        id: os::getpid(),
        cpuset: main_cpuset,
        cpus: plan.main.cpus.clone(),
    }];
    let mut timer_results = Vec::new();
    for (tp, (spec, live, outcome)) in plan.timers.iter().zip(joined) {
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
        let Some(rec) = outcome.recorder else {
            continue;
        };
        timer_results.push(TimerResult {
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
            error: outcome.error,
        });
    }

    Ok(RunResult {
        schema: SCHEMA,
        rtlab_version: env!("CARGO_PKG_VERSION"),
        plan: plan.clone(),
        system,
        start_time: humantime::format_rfc3339_seconds(start_wall).to_string(),
        end_time: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        elapsed_ns,
        interrupted: matches!(end, EndReason::Interrupted { .. }),
        end,
        pm_qos,
        timers: timer_results,
        isolation: RunIsolation {
            state: isolation_state,
            placement: {
                let programs = supervisor.results();
                placement.extend(programs.iter().map(|p| {
                    Placement {
                        who: format!("program[{}]", p.index),
                        id: p.first_pid.unwrap_or(0),
                        cpuset: p.cpuset.clone(),
                        cpus: p
                            .cpus_allowed
                            .as_deref()
                            .and_then(|c| crate::cpulist::parse(c).ok()),
                    }
                }));
                placement
            },
        },
        programs: supervisor.results(),
        tuning: RunTuning {
            changes: tuning_changes,
            cpu_bandwidth,
        },
        cpu_load: cpu_series,
        warnings,
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
        && let Err(e) = outfile::write_whole(path, report::json(result).as_bytes())
    {
        failures.push(format!("cannot write {}", e.with_hint()));
    }
    crate::out!("{}", report::live::closing_lines(result));
    if failures.is_empty() {
        Ok(())
    } else {
        Err(anyhow::anyhow!(failures.join("\n")))
    }
}

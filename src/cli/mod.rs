//! The command line: `rtlab run [FILE]`, `rtlab check FILE`, and the systress
//! form `rtlab [-c FILE | --cfg=FILE] [-d N] [-V] [-h]`.
//!
//! Exit statuses (documented in docs/manual.md): 0 completed, 1 failed after
//! start, 2 refused before start (bad file, flag or privileges), 3 ended by an
//! ABORT program, 128+N stopped by signal N (130 SIGINT, 143 SIGTERM).

use crate::config::Diagnostic;
use crate::config::options::OptionGroup;
use crate::plan::{self, PlanOptions, RealMachine};
use crate::run::{self, RunOptions};
use crate::sys::{SysRoot, os};
use crate::{messages, result::EndReason};
use clap::{Args, Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

mod cyclictest;
mod docs;
mod generated;
mod load;
mod monitor;
mod oneoff;
mod partition;
mod show;
mod task_latency;
mod trace;
mod trace_readers;
mod tune;

pub use crate::exit::{FAILED as EXIT_FAILED, REFUSED as EXIT_REFUSED};

/// Refuses (exit status 2, with a hint) unless running as root.
fn need_root(what: &str) -> Result<(), i32> {
    if os::geteuid() == 0 {
        return Ok(());
    }
    errln!(
        "rtlab: {what} needs root: it writes cgroup, /proc and /sys files (uid {})",
        os::geteuid()
    );
    errln!("  hint: run it with sudo");
    Err(EXIT_REFUSED)
}

fn print_json(value: &impl serde::Serialize) {
    match serde_json::to_string_pretty(value) {
        Ok(s) => outln!("{s}"),
        Err(e) => errln!("rtlab: cannot render JSON: {e}"),
    }
}

/// Catches SIGINT, SIGTERM and SIGHUP: the number of the first one that
/// came, so that a command can undo what it did before it exits.
fn catch_signals() -> Arc<AtomicUsize> {
    let caught = Arc::new(AtomicUsize::new(0));
    for sig in [
        crate::sys::consts::SIGINT,
        crate::sys::consts::SIGTERM,
        crate::sys::consts::SIGHUP,
    ] {
        let _ = signal_hook::flag::register_usize(sig, caught.clone(), sig as usize);
    }
    caught
}

/// rtlab: a real-time Linux test bench.
#[derive(Debug, Parser)]
#[command(name = "rtlab", version, about, long_about = None, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// Run this experiment file (systress: `-c cfg_file`, `--cfg=cfg_file`).
    #[arg(short = 'c', long = "cfg", value_name = "FILE")]
    pub cfg: Option<PathBuf>,
    /// Debug level for diagnostics on stderr (overrides `dbg_level`).
    #[arg(short = 'd', long = "dbg-level", value_name = "N", global = true)]
    pub dbg_level: Option<u8>,
    /// What to do.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run an experiment file, or the built-in experiment (one FIFO 99 timer
    /// thread per online CPU at 1 ms for 10 s) when no file is given.
    Run(RunArgs),
    /// Check an experiment file against this machine without running it.
    Check {
        /// The experiment file.
        file: PathBuf,
    },
    /// CPU partitions with cgroup cpusets: `create CPUS`, `show`, `undo`,
    /// `run rt|nrt -- CMD`.
    #[command(subcommand)]
    Partition(partition::PartitionCommand),
    /// Put back every system setting rtlab changed (the partition, and what
    /// a run that died left), from the journal.
    Restore {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Interrupts: counts per CPU, affinities, threads; `--watch` for rates;
    /// `move CPUS [IRQ...|all]`.
    Irq(tune::IrqArgs),
    /// Every thread with its policy, priority, CPUs (`--rt`, `--cpu`,
    /// `--match`); `set PATTERN|TID --policy P --priority N`.
    Threads(tune::ThreadsArgs),
    /// cpufreq policies and governors; `set GOVERNOR`; `ramp`, the governor
    /// experiment.
    Cpufreq(tune::CpufreqArgs),
    /// cpuidle states per CPU; `set --max-latency US`.
    Cstates(tune::CstatesArgs),
    /// What a latency report must state about this machine.
    Sysinfo {
        /// Print as JSON (the snapshot the run result embeds).
        #[arg(long)]
        json: bool,
    },
    /// A CPU hog that prints its loops per second (a load for the CPU
    /// bandwidth experiment).
    Hog(tune::HogArgs),
    /// Built-in loads that print their throughput: cpu (duty cycle),
    /// memory (bandwidth), io (files), ipc (hackbench), net (loopback),
    /// timers; `cmdline rtlab load ipc --groups 10` in an experiment.
    Load(load::LoadArgs),
    /// Draw runs: overlaid histograms (log count axis), percentile curves,
    /// latency over time, as SVG or PNG; `--gnuplot FILE` for a script.
    Plot(show::PlotArgs),
    /// One self-contained HTML report of runs: summary, plots, per-run
    /// latency tables, system, configuration, what rtlab changed.
    Report(show::ReportArgs),
    /// One table, a column per run, with differences against the first;
    /// `--fail-if 'p99>+10%'` gates CI on regressions (exit status 6).
    Compare(show::CompareArgs),
    /// Monitoring: run until stopped (FILE, or one FIFO 99 timer thread per
    /// CPU), exporting metrics for Prometheus (`/metrics`, a node_exporter
    /// textfile) and each window's histogram to a file.
    Monitor(monitor::MonitorArgs),
    /// Isolation audit: count every interruption of CPUS by its source for
    /// a while, and check what isolcpus, nohz_full and the partition
    /// promised.
    Audit(trace::AuditArgs),
    /// IRQ-to-task latency: from each handler of an IRQ to the switch-in of
    /// the task that waits for its data (`-- CMD` starts that task).
    #[command(name = "irq-task")]
    IrqTask(trace::IrqTaskArgs),
    /// How late any task wakes up, unmodified (`--pid`, `--name`, or a
    /// command after `--`): each wake-up's timer lateness, wake-to-run and
    /// latency, run time, period, deadline misses, and who held the CPU.
    #[command(name = "task-latency")]
    TaskLatency(task_latency::TaskLatencyArgs),
    /// One trace buffer read as the kernel's text and as its binary pages,
    /// timed and compared (the binary trace engine's benchmark and check).
    #[command(name = "trace-readers", hide = true)]
    TraceReaders(trace_readers::TraceReadersArgs),
    /// Why wake-ups were late: the culprits of a run with `trace.threshold`
    /// and every explained wake-up, or the worst wake-ups it kept.
    Explain {
        /// rtlab's JSON result (`rtlab run --json`).
        result: PathBuf,
    },
    /// cyclictest's command line and outputs, measured by rtlab
    /// (`rtlab cyclictest -m -p99 -t -a -i 200 -h 400 -q`); also what rtlab
    /// does when installed under the name `cyclictest`.
    #[command(disable_help_flag = true)]
    Cyclictest {
        /// cyclictest's options (`rtlab cyclictest --help` lists them).
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "ARGS"
        )]
        args: Vec<std::ffi::OsString>,
    },
    /// Write the man pages (rtlab.1, rtlab-SUBCOMMAND.1, rtlab.conf.5) into
    /// a man directory.
    Man(docs::ManArgs),
    /// Print the shell completion script (bash, zsh, fish).
    Completions(docs::CompletionsArgs),
    /// Internal: the guard process that cleans up if rtlab is killed.
    #[command(name = "__guard", hide = true)]
    Guard,
}

/// Options of `rtlab run`.
#[derive(Debug, Args, Default)]
pub struct RunArgs {
    /// The experiment file (systress.conf format).
    pub file: Option<PathBuf>,
    /// One-off keys, without a file.
    #[command(flatten)]
    pub oneoff: oneoff::OneOff,
    /// Write the JSON result document to this file.
    #[arg(long, value_name = "FILE", help_heading = OptionGroup::Output.heading())]
    pub json: Option<PathBuf>,
    /// Directory for the timer threads' result files (created if needed).
    #[arg(long, value_name = "DIR", help_heading = OptionGroup::Output.heading())]
    pub outdir: Option<PathBuf>,
    /// Print every refresh of the live table even when stdout is not a terminal.
    #[arg(long, help_heading = OptionGroup::Output.heading())]
    pub every_refresh: bool,
    /// Print the experiment (the file, the built-in one, or the one the
    /// one-off options write) and exit: a file to start from.
    #[arg(long, help_heading = OptionGroup::Output.heading())]
    pub print: bool,
    /// Exit with status 6 when this holds for the run's result: METRIC OP
    /// VALUE, the value itself ('deadline_misses>0', 'max>100us',
    /// 'overruns>0'), as `rtlab compare --fail-if` reads it. Repeatable.
    #[arg(long = "fail-if", value_name = "COND", help_heading = OptionGroup::Actions.heading())]
    pub fail_if: Vec<crate::report::compare::Condition>,
}

fn print_diagnostics(file: &str, diags: &[Diagnostic]) {
    print_diagnostics_from(file, diags, &[]);
}

/// Diagnostics of an experiment generated from command-line options:
/// `origins[line - 1]` names the option that wrote that line, and the
/// diagnostic names it instead of a line of a file the user never saw.
/// An option written on several lines (`--period` on each CPU's timer
/// thread) is refused once.
fn print_diagnostics_from(file: &str, diags: &[Diagnostic], origins: &[Option<String>]) {
    let shown = rendered_diagnostics(file, diags, origins);
    for text in &shown {
        errln!("{text}");
    }
    errln!(
        "rtlab: {} problem{} in {file}; nothing was started",
        shown.len(),
        if shown.len() == 1 { "" } else { "s" }
    );
}

/// Each diagnostic rendered at its place (the option that wrote its line,
/// else FILE:LINE:COL), each text once, in order.
fn rendered_diagnostics(
    file: &str,
    diags: &[Diagnostic],
    origins: &[Option<String>],
) -> Vec<String> {
    let mut shown: Vec<String> = Vec::new();
    for d in diags {
        let origin = d.pos.line.checked_sub(1).and_then(|i| origins.get(i));
        let text = match origin {
            Some(Some(option)) => d.render_at(&format!("{file}: {option}")),
            _ => d.render(file),
        };
        if !shown.contains(&text) {
            shown.push(text);
        }
    }
    shown
}

/// Reads and plans an experiment (or the built-in one). Err = exit status.
fn load_plan(file: Option<&Path>, opts: &PlanOptions) -> Result<plan::RunPlan, i32> {
    let (text, name) = experiment_text(file)?;
    plan_from_text(&text, &name, opts, &[])
}

/// The text and name of an experiment file, or of the built-in experiment.
fn experiment_text(file: Option<&Path>) -> Result<(String, String), i32> {
    let root = SysRoot::real();
    let machine = RealMachine { root: root.clone() };
    let experiment = match file {
        Some(path) => {
            let name = path.display().to_string();
            use crate::sys::infile::{self, InputError};
            let bytes = match infile::read_bounded(path, crate::config::MAX_FILE_BYTES as u64) {
                Ok(b) => b,
                Err(InputError::TooBig(_)) => {
                    print_diagnostics(&name, &[crate::config::too_big()]);
                    return Err(EXIT_REFUSED);
                }
                Err(e) => {
                    errln!("rtlab: {name}: {e}");
                    errln!("  hint: {}", unreadable_hint(&e));
                    return Err(EXIT_REFUSED);
                }
            };
            match crate::config::decode(&bytes) {
                Ok(text) => (text.to_string(), name),
                Err(d) => {
                    print_diagnostics(&name, &[d]);
                    return Err(EXIT_REFUSED);
                }
            }
        }
        None => {
            use plan::Machine;
            (
                plan::builtin_experiment_text(&machine.online_cpus(), &partitions(&root)),
                "<built-in>".to_string(),
            )
        }
    };
    Ok(experiment)
}

/// What to do about an experiment file that cannot be read.
fn unreadable_hint(e: &crate::sys::infile::InputError) -> &'static str {
    use crate::sys::infile::InputError;
    match e {
        InputError::Io(io) if io.kind() == std::io::ErrorKind::NotFound => {
            "give the path of an experiment file (`rtlab run --print > my.cfg` writes one to start from; examples/ has more)"
        }
        InputError::Io(io) if io.kind() == std::io::ErrorKind::PermissionDenied => {
            "give a file you may read (check its and its directories' permissions), or run with sudo"
        }
        InputError::NotAFile => "give an experiment file, not a directory or a device",
        _ => "give a readable experiment file (`rtlab run --print > my.cfg` writes one)",
    }
}

/// Plans `text`; `origins` as in [`print_diagnostics_from`].
fn plan_from_text(
    text: &str,
    name: &str,
    opts: &PlanOptions,
    origins: &[Option<String>],
) -> Result<plan::RunPlan, i32> {
    let machine = RealMachine {
        root: SysRoot::real(),
    };
    plan::plan_text(text, name, &machine, opts).map_err(|diags| {
        print_diagnostics_from(name, &diags, origins);
        EXIT_REFUSED
    })
}

/// Runs an experiment given as text (the trace commands write theirs, with
/// the option that wrote each line: `origins`).
pub(crate) fn run_text(text: &str, name: &str, args: &RunArgs, origins: &[Option<String>]) -> i32 {
    if let Err(code) = check_json(args) {
        return code;
    }
    let opts = PlanOptions {
        outdir: args.outdir.clone(),
        dbg_level: None,
        no_result_files: false,
    };
    match plan_from_text(text, name, &opts, origins) {
        Ok(plan) => run_plan(&plan, args, None),
        Err(code) => code,
    }
}

/// The cpuset partitions (name, CPUs) where a thread can have its own
/// (cgroup v1), for the built-in experiment.
fn partitions(root: &SysRoot) -> Vec<(String, Vec<usize>)> {
    let state =
        crate::isolate::state::IsolationState::read(root, &crate::sys::journal::default_dir());
    if state.cpuset.as_ref().is_none_or(|h| h.is_v2()) {
        return Vec::new();
    }
    state
        .partitions
        .into_iter()
        .map(|p| (p.name, p.cpus))
        .collect()
}

/// A journal directory others could tamper with is refused before anything
/// starts (a run as root journals its changes there); `check` says so too.
fn journal_dir_trusted(dir: &Path) -> Result<(), i32> {
    if os::geteuid() == 0
        && std::fs::symlink_metadata(dir).is_ok()
        && let Err(e) = crate::sys::journal::check_dir(dir)
    {
        errln!("rtlab: {e}");
        return Err(EXIT_REFUSED);
    }
    Ok(())
}

/// `--json FILE` can be written, and each `--fail-if` can be checked on
/// one run (checked before anything starts).
fn check_json(args: &RunArgs) -> Result<(), i32> {
    show::check_run_gate(&args.fail_if)?;
    if let Some(json) = &args.json
        && let Err(e) = crate::sys::outfile::check(json, false)
    {
        errln!("rtlab: --json {}", e.with_hint());
        return Err(EXIT_REFUSED);
    }
    Ok(())
}

fn run_command(args: &RunArgs, dbg_level: Option<u8>) -> i32 {
    let (text, name, origins) = if args.oneoff.given() {
        use plan::Machine;
        let root = SysRoot::real();
        let online = RealMachine { root: root.clone() }.online_cpus();
        match oneoff::experiment(&args.oneoff, &online, &partitions(&root)) {
            Ok(g) => (g.text(), "rtlab run".to_string(), g.origins()),
            Err(code) => return code,
        }
    } else {
        match experiment_text(args.file.as_deref()) {
            Ok((text, name)) => (text, name, Vec::new()),
            Err(code) => return code,
        }
    };
    if args.print {
        out!("{text}");
        return 0;
    }
    if let Err(code) = check_json(args) {
        return code;
    }
    let opts = PlanOptions {
        outdir: args.outdir.clone(),
        dbg_level,
        no_result_files: false,
    };
    match plan_from_text(&text, &name, &opts, &origins) {
        Ok(plan) => run_plan(&plan, args, None),
        Err(code) => code,
    }
}

/// Runs a plan after the checks every run makes before it starts (the
/// journal directory, the result directories); Err = exit status.
fn execute_plan(
    plan: &plan::RunPlan,
    args: &RunArgs,
    monitor: Option<crate::monitor::MonitorSpec>,
    cyclictest: Option<crate::report::cyclictest::View>,
) -> Result<crate::result::RunResult, i32> {
    let journal_dir = crate::sys::journal::default_dir();
    journal_dir_trusted(&journal_dir)?;
    // Made now, not at the end, so that a run never measures for nothing.
    for dir in plan.timers.iter().filter_map(|t| t.path.parent()) {
        if dir.as_os_str().is_empty() {
            continue;
        }
        if let Err(e) = crate::sys::outfile::create_dirs(dir) {
            errln!("rtlab: result directory {}", e.with_hint());
            return Err(EXIT_REFUSED);
        }
    }
    messages::set_level(plan.main.dbg_level);
    let run_opts = RunOptions {
        json: args.json.clone(),
        every_refresh: args.every_refresh,
        root: SysRoot::real(),
        journal_dir,
        // For tests only: a pipeline run on any machine, as any user, with
        // figures a test can predict. The result says so in its warnings.
        wake: std::env::var("RTLAB_SIMULATED_WAKE")
            .ok()
            .and_then(|s| s.parse().ok())
            .map_or(
                crate::measure::Wake::Kernel,
                crate::measure::Wake::Simulated,
            ),
        monitor,
        cyclictest,
    };
    run::execute(plan, &run_opts).map_err(|e| {
        errln!("rtlab: {e:#}");
        // The exporters start before the run changes anything: an
        // address in use or a windows file that is not rtlab's is a
        // refusal.
        if e.downcast_ref::<crate::monitor::MonitorError>().is_some() {
            return EXIT_REFUSED;
        }
        EXIT_FAILED
    })
}

fn run_plan(
    plan: &plan::RunPlan,
    args: &RunArgs,
    monitor: Option<crate::monitor::MonitorSpec>,
) -> i32 {
    let result = match execute_plan(plan, args, monitor, None) {
        Ok(r) => r,
        Err(code) => return code,
    };
    for w in &result.warnings {
        messages::warn(w);
    }
    if let Err(e) = run::write_outputs(&result, args.json.as_deref()) {
        errln!("rtlab: {e:#}");
        return EXIT_FAILED;
    }
    let held = show::run_gate(&result, args.json.as_deref(), &args.fail_if);
    match &result.end {
        EndReason::Completed => {}
        EndReason::Interrupted { signal, .. } => {
            errln!("rtlab: run interrupted by {signal}; results written")
        }
        EndReason::Aborted {
            program,
            command,
            status,
        } => errln!("rtlab: run aborted: program[{program}] (`{command}`) ended with {status}"),
        EndReason::Failed { error } => errln!("rtlab: run failed: {error}"),
        EndReason::SpikeStop => {
            errln!("rtlab: run stopped at a late wake-up (`on_spike stop`); results written")
        }
        EndReason::CutShort { .. } => {
            errln!("rtlab: run {}; results written", result.end.describe())
        }
    }
    // A run that did not complete keeps its own status: the gate's
    // verdicts are printed all the same.
    match result.end.exit_code() {
        0 if held => crate::exit::REGRESSION,
        code => code,
    }
}

/// A command that only reads and prints ends quietly when its output pipe
/// closes. One that changes the system, or cleans up after itself (a
/// load's files), keeps SIGPIPE ignored (its output never panics, see
/// `outln!`) so that it always undoes what it did.
fn only_reads(command: &Option<Command>) -> bool {
    match command {
        Some(
            Command::Check { .. }
            | Command::Sysinfo { .. }
            | Command::Plot(_)
            | Command::Report(_)
            | Command::Compare(_)
            | Command::Explain { .. }
            | Command::Completions(_)
            | Command::Hog(_),
        ) => true,
        Some(Command::Irq(a)) => a.action.is_none(),
        Some(Command::Threads(a)) => a.action.is_none(),
        Some(Command::Cpufreq(a)) => a.action.is_none(),
        Some(Command::Cstates(a)) => a.action.is_none(),
        _ => false,
    }
}

/// `rtlab check FILE`.
fn check_main(file: &Path, dbg_level: Option<u8>) -> i32 {
    let opts = PlanOptions {
        outdir: None,
        dbg_level,
        no_result_files: false,
    };
    match load_plan(Some(file), &opts) {
        Ok(_) if journal_dir_trusted(&crate::sys::journal::default_dir()).is_err() => EXIT_REFUSED,
        Ok(plan) => {
            outln!(
                "{}: OK ({} timer thread{}, {} program{})",
                file.display(),
                plan.timers.len(),
                if plan.timers.len() == 1 { "" } else { "s" },
                plan.programs.len(),
                if plan.programs.len() == 1 { "" } else { "s" }
            );
            0
        }
        Err(code) => code,
    }
}

/// Entry point: parses the command line and returns the exit status.
pub fn main() -> i32 {
    let mut argv = std::env::args_os();
    let called = argv.next().unwrap_or_default();
    if Path::new(&called)
        .file_name()
        .is_some_and(|n| n == "cyclictest")
    {
        return cyclictest::main(&argv.collect::<Vec<_>>());
    }
    let cli = Cli::parse();
    if let Some(level) = cli.dbg_level {
        messages::set_level(level);
    }
    if only_reads(&cli.command) {
        os::default_sigpipe();
    }
    match (&cli.command, &cli.cfg) {
        (Some(Command::Guard), _) => crate::programs::guard::guard_main(),
        (Some(Command::Cyclictest { args }), _) => cyclictest::main(args),
        (Some(Command::Man(args)), _) => docs::man_main(args),
        (Some(Command::Completions(args)), _) => docs::completions_main(args),
        (Some(Command::Partition(cmd)), _) => partition::main(cmd),
        (Some(Command::Restore { json }), _) => partition::restore_main(*json),
        (Some(Command::Run(args)), _) => run_command(args, cli.dbg_level),
        (Some(Command::Irq(args)), _) => tune::irq_main(args),
        (Some(Command::Threads(args)), _) => tune::threads_main(args),
        (Some(Command::Cpufreq(args)), _) => tune::cpufreq_main(args),
        (Some(Command::Cstates(args)), _) => tune::cstates_main(args),
        (Some(Command::Sysinfo { json }), _) => tune::sysinfo_main(*json),
        (Some(Command::Hog(args)), _) => tune::hog_main(args),
        (Some(Command::Load(args)), _) => load::load_main(args),
        (Some(Command::Plot(args)), _) => show::plot_main(args),
        (Some(Command::Report(args)), _) => show::report_main(args),
        (Some(Command::Compare(args)), _) => show::compare_main(args),
        (Some(Command::Explain { result }), _) => show::explain_main(result),
        (Some(Command::Audit(args)), _) => trace::audit_main(args),
        (Some(Command::Monitor(args)), _) => monitor::monitor_main(args, cli.dbg_level),
        (Some(Command::IrqTask(args)), _) => trace::irq_task_main(args),
        (Some(Command::TaskLatency(args)), _) => task_latency::main(args),
        (Some(Command::TraceReaders(args)), _) => trace_readers::main(args),
        (Some(Command::Check { file }), _) => check_main(file, cli.dbg_level),
        (None, Some(file)) => run_command(
            &RunArgs {
                file: Some(file.clone()),
                ..RunArgs::default()
            },
            cli.dbg_level,
        ),
        (None, None) => {
            use clap::CommandFactory;
            let _ = Cli::command().print_help();
            EXIT_REFUSED
        }
    }
}

//! The command line: `rtlab run [FILE]`, `rtlab check FILE`, the other
//! subcommands, and the systress form `rtlab [-c FILE | --cfg=FILE] [-d N]
//! [-V] [-h]`. This file holds the command definitions and `main`'s
//! dispatch, one line per command; what each command does is in a file of
//! its own under `cli/` (`rtlab run` and `check` in `experiment.rs`). A
//! command returns its exit status or a [`Refusal`], which `main` prints.
//!
//! Exit statuses (`crate::exit`, documented in docs/manual.md): 0
//! completed, 1 failed after start, 2 refused before start (bad file, flag
//! or privileges), 3 ended by an ABORT program, 4 the machine lacks the
//! facility, 5 the kernel refused some changes, 6 a `--fail-if` condition
//! held, 127 `partition run`'s command not found, 128+N stopped by signal N
//! (130 SIGINT, 143 SIGTERM).

use crate::config::options::OptionGroup;
use crate::messages;
use crate::sys::os;
use clap::{Args, Parser, Subcommand};
use std::path::{Path, PathBuf};

mod common;
mod cyclictest;
mod docs;
mod experiment;
mod fix;
mod generated;
pub mod hwlat;
mod lava;
mod load;
mod monitor;
mod noise;
mod oneoff;
mod oslat;
mod partition;
mod qualify;
mod refusal;
mod show;
mod task_latency;
mod trace;
mod trace_readers;
mod tune;

pub use crate::exit::{FAILED as EXIT_FAILED, REFUSED as EXIT_REFUSED};
pub use refusal::{Outcome, Refusal};

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
    Run(Deferred<RunArgs>),
    /// Check an experiment file against this machine without running it.
    Check {
        /// The experiment file.
        file: PathBuf,
    },
    /// CPU partitions with cgroup cpusets: `create CPUS`, `show`, `undo`,
    /// `run rt|nrt -- CMD`.
    #[command(subcommand)]
    Partition(DeferredCommands<partition::PartitionCommand>),
    /// Put back every system setting rtlab changed (the partition, and what
    /// a run that died left), from the journal.
    Restore {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Interrupts: counts per CPU, affinities, threads; `--watch` for rates;
    /// `move CPUS [IRQ...|all]`.
    Irq(Deferred<tune::IrqArgs>),
    /// Every thread with its policy, priority, CPUs (`--rt`, `--cpu`,
    /// `--match`); `set PATTERN|TID --policy P --priority N`.
    Threads(Deferred<tune::ThreadsArgs>),
    /// cpufreq policies and governors; `set GOVERNOR`; `ramp`, the governor
    /// experiment.
    Cpufreq(Deferred<tune::CpufreqArgs>),
    /// cpuidle states per CPU; `set --max-latency US`.
    Cstates(Deferred<tune::CstatesArgs>),
    /// What a latency report must state about this machine.
    Sysinfo {
        /// Print as JSON (the snapshot the run result embeds).
        #[arg(long)]
        json: bool,
    },
    /// A CPU hog that prints its loops per second (a load for the CPU
    /// bandwidth experiment).
    Hog(Deferred<tune::HogArgs>),
    /// Built-in loads that print their throughput: cpu (duty cycle),
    /// memory (bandwidth), io (files), ipc (hackbench), net (loopback),
    /// timers; `cmdline rtlab load ipc --groups 10` in an experiment.
    Load(Deferred<load::LoadArgs>),
    /// Draw runs: overlaid histograms (log count axis), percentile curves,
    /// latency over time, as SVG or PNG; `--gnuplot FILE` for a script.
    Plot(Deferred<show::PlotArgs>),
    /// One self-contained HTML report of runs: summary, plots, per-run
    /// latency tables, system, configuration, what rtlab changed.
    Report(Deferred<show::ReportArgs>),
    /// One table, a column per run, with differences against the first;
    /// `--fail-if 'p99>+10%'` gates CI on regressions (exit status 6).
    Compare(Deferred<show::CompareArgs>),
    /// LAVA's test cases of runs, as Linaro's rt-tests parser names and
    /// judges cyclictest's: t<N>-min/avg/max-latency per thread, the max
    /// failing at or above --max-latency (exit status 6); inside a LAVA
    /// test shell each is reported by lava-test-case.
    Lava(Deferred<lava::LavaArgs>),
    /// Monitoring: run until stopped (FILE, or one FIFO 99 timer thread per
    /// CPU), exporting metrics for Prometheus (`/metrics`, a node_exporter
    /// textfile) and each window's histogram to a file.
    Monitor(Deferred<monitor::MonitorArgs>),
    /// Isolation audit: count every interruption of CPUS by its source for
    /// a while, and check what isolcpus, nohz_full and the partition
    /// promised.
    Audit(Deferred<trace::AuditArgs>),
    /// IRQ-to-task latency: from each handler of an IRQ to the switch-in of
    /// the task that waits for its data (`-- CMD` starts that task).
    #[command(name = "irq-task")]
    IrqTask(Deferred<trace::IrqTaskArgs>),
    /// How late any task wakes up, unmodified (`--pid`, `--name`, or a
    /// command after `--`): each wake-up's timer lateness, wake-to-run and
    /// latency, run time, period, deadline misses, and who held the CPU.
    #[command(name = "task-latency")]
    TaskLatency(Deferred<task_latency::TaskLatencyArgs>),
    /// OS noise: one thread per CPU that never sleeps reads the CPU's
    /// counter; every gap is time the OS or the hardware took (oslat's
    /// method), with rtla osnoise's figures per period and, as root, the
    /// cause of every gap (IRQ, softirq, NMI, thread, or unseen).
    Noise(Deferred<noise::NoiseArgs>),
    /// Close the loop: run the experiment with the flight recorder, propose
    /// one remedy per cause of its late wake-ups, apply each through the
    /// journal and keep it only when interleaved rounds prove it helped;
    /// `rtlab restore` undoes what was kept.
    Fix(Deferred<fix::FixArgs>),
    /// One trace buffer read as the kernel's text and as its binary pages,
    /// timed and compared (the binary trace engine's benchmark and check).
    #[command(name = "trace-readers", hide = true)]
    TraceReaders(Deferred<trace_readers::TraceReadersArgs>),
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
    /// oslat's command line and outputs, measured by rtlab's noise threads
    /// (`rtlab oslat --cpu-list 1 --rtprio 1 --duration 10m`); also what
    /// rtlab does when installed under the name `oslat`.
    #[command(disable_help_flag = true)]
    Oslat {
        /// oslat's options (`rtlab oslat --help` lists them).
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "ARGS"
        )]
        args: Vec<std::ffi::OsString>,
    },
    /// hwlatdetect's command line and report, measured by rtlab's noise
    /// threads (`rtlab hwlat --duration 10m --threshold 20us`); also what
    /// rtlab does when installed under the name `hwlatdetect`.
    #[command(disable_help_flag = true)]
    Hwlat {
        /// hwlatdetect's options (`rtlab hwlat --help` lists them).
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "ARGS"
        )]
        args: Vec<std::ffi::OsString>,
    },
    /// Node qualification, as OpenShift's latency tests run it: hwlatdetect,
    /// cyclictest and oslat against limits from the cnf-tests environment
    /// (LATENCY_TEST_RUN, LATENCY_TEST_RUNTIME, LATENCY_TEST_DELAY,
    /// LATENCY_TEST_CPUS, MAXIMUM_LATENCY, CYCLICTEST_MAXIMUM_LATENCY, ...);
    /// `--nfd-file` writes Node Feature Discovery's labels.
    Qualify(Deferred<qualify::QualifyArgs>),
    /// Write the man pages (rtlab.1, rtlab-SUBCOMMAND.1, rtlab.conf.5) into
    /// a man directory.
    Man(Deferred<docs::ManArgs>),
    /// Print the shell completion script (bash, zsh, fish).
    Completions(Deferred<docs::CompletionsArgs>),
    /// Internal: the guard process that cleans up if rtlab is killed.
    #[command(name = "__guard", hide = true)]
    Guard,
}

/// A subcommand's options, built only when that subcommand is the one
/// given (clap's `Command::defer`): `rtlab run` builds its own options,
/// not the thirty other commands'. Their code and memory, touched at
/// start-up, were most of what a run's binary had resident at its peak.
#[derive(Debug, Default)]
pub struct Deferred<T>(pub T);

impl<T> std::ops::Deref for Deferred<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: clap::FromArgMatches> clap::FromArgMatches for Deferred<T> {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(m).map(Deferred)
    }
    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(m)
    }
}

impl<T: Args> Args for Deferred<T> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        match eager() {
            true => with_own_about::<T, false>(cmd),
            false => cmd.defer(with_own_about::<T, false>),
        }
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        match eager() {
            true => with_own_about::<T, true>(cmd),
            false => cmd.defer(with_own_about::<T, true>),
        }
    }
}

/// `T`'s options added to `cmd`, which keeps its own description (the
/// options' type may bring one, which the subcommand's doc replaced when
/// the options came first).
fn with_own_about<T: Args, const UPDATE: bool>(cmd: clap::Command) -> clap::Command {
    let (about, long) = (cmd.get_about().cloned(), cmd.get_long_about().cloned());
    let cmd = match UPDATE {
        false => T::augment_args(cmd),
        true => T::augment_args_for_update(cmd),
    };
    restore_about(cmd, (about, long))
}

/// `T`'s subcommands added to `cmd`, which keeps its own description.
fn with_own_about_sub<T: Subcommand, const UPDATE: bool>(cmd: clap::Command) -> clap::Command {
    let (about, long) = (cmd.get_about().cloned(), cmd.get_long_about().cloned());
    let cmd = match UPDATE {
        false => T::augment_subcommands(cmd),
        true => T::augment_subcommands_for_update(cmd),
    };
    restore_about(cmd, (about, long))
}

/// `cmd` with the descriptions it had before its options were added.
fn restore_about(
    cmd: clap::Command,
    (about, long): (
        Option<clap::builder::StyledStr>,
        Option<clap::builder::StyledStr>,
    ),
) -> clap::Command {
    let cmd = match about {
        Some(about) => cmd.about(about),
        None => cmd,
    };
    match long {
        Some(long) => cmd.long_about(long),
        None => cmd,
    }
}

/// Whether the commands built from now on defer nothing (set for the
/// whole description: the man pages and the completion scripts).
static EAGER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a subcommand's parts are built with it, not when it is used.
fn eager() -> bool {
    EAGER.load(std::sync::atomic::Ordering::Relaxed)
}

/// The whole command line, nothing deferred (what the man pages and the
/// completion scripts describe: `help`'s own tree of subcommands is made
/// from the subcommands there are when the top command is built).
pub(crate) fn whole_command() -> clap::Command {
    EAGER.store(true, std::sync::atomic::Ordering::Relaxed);
    <Cli as clap::CommandFactory>::command()
}

/// A subcommand's own subcommands, built only when it is the one given.
#[derive(Debug)]
pub struct DeferredCommands<T>(pub T);

impl<T> std::ops::Deref for DeferredCommands<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: clap::FromArgMatches> clap::FromArgMatches for DeferredCommands<T> {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(m).map(DeferredCommands)
    }
    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(m)
    }
}

impl<T: Subcommand> Subcommand for DeferredCommands<T> {
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        match eager() {
            true => with_own_about_sub::<T, false>(cmd),
            false => cmd.defer(with_own_about_sub::<T, false>),
        }
    }
    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        match eager() {
            true => with_own_about_sub::<T, true>(cmd),
            false => cmd.defer(with_own_about_sub::<T, true>),
        }
    }
    fn has_subcommand(name: &str) -> bool {
        T::has_subcommand(name)
    }
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
    /// No live table (a drop-in whose stdout is another tool's).
    #[arg(skip)]
    pub silent: bool,
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

/// Entry point: parses the command line, runs the command and returns
/// its exit status; a command's refusal is printed here, and only here.
pub fn main() -> i32 {
    let mut argv = std::env::args_os();
    let called = argv.next().unwrap_or_default();
    // Installed under another tool's name, rtlab is that tool's front end.
    let name = Path::new(&called).file_name().map(|n| n.to_os_string());
    let outcome = match name.as_ref().and_then(|n| n.to_str()) {
        Some("cyclictest") => cyclictest::main(&argv.collect::<Vec<_>>()),
        Some("oslat") => oslat::main(&argv.collect::<Vec<_>>()),
        Some("hwlatdetect") => hwlat::main(&argv.collect::<Vec<_>>()),
        _ => dispatch(&Cli::parse()),
    };
    outcome.unwrap_or_else(|refusal| refusal.print())
}

/// Runs the command asked for.
fn dispatch(cli: &Cli) -> Outcome {
    if let Some(level) = cli.dbg_level {
        messages::set_level(level);
    }
    if only_reads(&cli.command) {
        os::default_sigpipe();
    }
    match (&cli.command, &cli.cfg) {
        (Some(Command::Guard), _) => Ok(crate::programs::guard::guard_main()),
        (Some(Command::Cyclictest { args }), _) => cyclictest::main(args),
        (Some(Command::Oslat { args }), _) => oslat::main(args),
        (Some(Command::Hwlat { args }), _) => hwlat::main(args),
        (Some(Command::Qualify(args)), _) => qualify::main(args),
        (Some(Command::Man(args)), _) => docs::man_main(args),
        (Some(Command::Completions(args)), _) => docs::completions_main(args),
        (Some(Command::Partition(cmd)), _) => partition::main(cmd),
        (Some(Command::Restore { json }), _) => partition::restore_main(*json),
        (Some(Command::Run(args)), _) => experiment::run_main(args, cli.dbg_level),
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
        (Some(Command::Lava(args)), _) => lava::main(args),
        (Some(Command::Explain { result }), _) => show::explain_main(result),
        (Some(Command::Audit(args)), _) => trace::audit_main(args),
        (Some(Command::Monitor(args)), _) => monitor::monitor_main(args, cli.dbg_level),
        (Some(Command::IrqTask(args)), _) => trace::irq_task_main(args),
        (Some(Command::TaskLatency(args)), _) => task_latency::main(args),
        (Some(Command::TraceReaders(args)), _) => trace_readers::main(args),
        (Some(Command::Noise(args)), _) => noise::main(args),
        (Some(Command::Fix(args)), _) => fix::main(args),
        (Some(Command::Check { file }), _) => experiment::check_main(file, cli.dbg_level),
        (None, Some(file)) => experiment::run_main(
            &RunArgs {
                file: Some(file.clone()),
                ..RunArgs::default()
            },
            cli.dbg_level,
        ),
        (None, None) => common::help(),
    }
}

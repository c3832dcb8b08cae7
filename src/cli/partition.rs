//! `rtlab partition create|show|undo|run` and `rtlab restore`: renderers of
//! the [`crate::isolate`] reports, and the exit statuses of docs/manual.md.

use super::{EXIT_FAILED, EXIT_REFUSED, catch_signals, need_root, print_json};
use crate::isolate::{self, IsolateError, state::IsolationState};
use crate::sys::journal::{self, RestoreReport};
use crate::sys::{SysRoot, os};
use clap::Subcommand;
use std::sync::atomic::Ordering;

/// `rtlab partition ...`.
#[derive(Debug, Subcommand)]
pub enum PartitionCommand {
    /// Make the `rt` partition with CPUS (a cpulist such as `3` or `2-3`, or a
    /// mask such as `0x8`) and `nrt` with the other online CPUs; move every
    /// movable task to `nrt`; keep the kernel's housekeeping off `rt`.
    Create {
        /// CPUs of the real-time partition.
        cpus: String,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show the partitions and each CPU's isolation (cpusets and isolcpus=,
    /// nohz_full= side by side).
    Show {
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Undo the partition: every knob back, tasks back, cpusets removed.
    Undo {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run a command inside a partition: `rtlab partition run rt -- CMD ARGS`.
    Run {
        /// `rt` or `nrt`.
        partition: String,
        /// The command and its arguments.
        #[arg(last = true, required = true, value_name = "CMD")]
        command: Vec<String>,
    },
}

fn print_error(e: &IsolateError) -> i32 {
    errln!("rtlab: {e}");
    if let Some(h) = e.hint() {
        errln!("  hint: {h}");
    }
    if let IsolateError::Kernel { rollback, .. } | IsolateError::Interrupted { rollback, .. } = e {
        errln!("rolled back:");
        for l in rollback.lines() {
            errln!("{l}");
        }
    }
    e.exit_code()
}

/// Runs `rtlab partition ...`; returns the exit status.
pub fn main(cmd: &PartitionCommand) -> i32 {
    let root = SysRoot::real();
    match cmd {
        PartitionCommand::Show { json } => {
            let state = IsolationState::read(&root, &journal::default_dir());
            if *json {
                print_json(&state);
            } else {
                out!("{}", state.render());
            }
            0
        }
        PartitionCommand::Create { cpus, json } => {
            if let Err(code) = need_root("partition create") {
                return code;
            }
            let online = crate::sys::online_cpus(&root).unwrap_or_default();
            let rt = match isolate::parse_rt_cpus(cpus, &online) {
                Ok(c) => c,
                Err(e) => return print_error(&e),
            };
            let caught = catch_signals();
            let stop = || match caught.load(Ordering::Relaxed) {
                0 => None,
                s => Some(s as i32),
            };
            match isolate::create(&root, &journal::default_dir(), &rt, &stop) {
                Ok(report) if *json => {
                    print_json(&report);
                    0
                }
                Ok(report) => {
                    out!("{}", render_create(&report));
                    0
                }
                Err(e) => print_error(&e),
            }
        }
        PartitionCommand::Undo { json } => {
            if let Err(code) = need_root("partition undo") {
                return code;
            }
            match isolate::undo(&root, &journal::default_dir()) {
                Ok(report) => print_restore(
                    &report,
                    *json,
                    "no partition made by rtlab: nothing to undo",
                ),
                Err(e) => print_error(&e),
            }
        }
        PartitionCommand::Run { partition, command } => run_in(&root, partition, command),
    }
}

fn render_create(r: &isolate::CreateReport) -> String {
    use crate::cpulist::format;
    let mut out = format!("rtlab: partitions made in {}\n", r.hierarchy.describe());
    out.push_str(&format!("  rt   CPUs {:<8} {}\n", format(&r.rt), r.mode));
    out.push_str(&format!(
        "  nrt  CPUs {:<8} everything else\n",
        format(&r.nrt)
    ));
    if !r.hierarchy.is_v2() {
        out.push_str(&format!(
            "tasks: {} moved to nrt, {} kernel threads bound to their CPU stay (the kernel refuses to move them), {} ended during the move\n",
            r.tasks.moved,
            r.tasks.pinned.len(),
            r.tasks.vanished
        ));
        for f in &r.tasks.failed {
            out.push_str(&format!(
                "  NOT MOVED {} ({}): {}\n",
                f.tid, f.name, f.reason
            ));
        }
    } else {
        out.push_str("tasks: left in their cgroups; the kernel keeps them off rt's CPUs\n");
    }
    out.push_str("knobs:\n");
    for line in isolate::knobs::summary_lines(&r.knobs) {
        out.push_str(&line);
        out.push('\n');
    }
    out.push_str(&format!(
        "undo with `rtlab partition undo` (journal: {})\n",
        r.journal
    ));
    out
}

fn print_restore(report: &RestoreReport, json: bool, nothing: &str) -> i32 {
    if json {
        print_json(report);
    } else if report.journals.is_empty() && report.skipped.is_empty() && report.refused.is_empty() {
        outln!("rtlab: {nothing}");
    } else {
        for l in report.lines() {
            outln!("{l}");
        }
        let failed = report.failures().count();
        if !report.refused.is_empty() {
            outln!(
                "rtlab: {} journal(s) refused and left in place, nothing of them replayed; see why above",
                report.refused.len()
            );
        } else if report.journals.is_empty() {
            outln!(
                "rtlab: nothing restored: the journals are held by an rtlab that is still running"
            );
        } else if failed == 0 {
            outln!("rtlab: restored");
        } else {
            outln!(
                "rtlab: {failed} change(s) could not be undone; the journal is kept, run `rtlab restore` to try again"
            );
        }
    }
    if report.ok() { 0 } else { EXIT_FAILED }
}

/// `rtlab restore`: replays every journal left (partition and dead runs).
pub fn restore_main(json: bool) -> i32 {
    if let Err(code) = need_root("restore") {
        return code;
    }
    let report = journal::restore_all(&SysRoot::real(), &journal::default_dir(), None);
    print_restore(&report, json, "nothing to restore: no journal left")
}

/// `rtlab partition run NAME -- CMD...`: moves this process into the
/// partition and becomes the command (exec), so nothing is left behind.
fn run_in(root: &SysRoot, partition: &str, command: &[String]) -> i32 {
    use std::os::unix::process::CommandExt;
    let procs = match isolate::partition_procs(root, partition) {
        Ok(p) => p,
        Err(e) => return print_error(&e),
    };
    if let Err(e) = root.write(&procs, &os::getpid().to_string()) {
        errln!("rtlab: cannot enter partition {partition}: {e}");
        return EXIT_FAILED;
    }
    let Some((program, args)) = command.split_first() else {
        return EXIT_REFUSED;
    };
    let err = std::process::Command::new(program).args(args).exec();
    errln!("rtlab: cannot run `{program}`: {err}");
    if err.kind() == std::io::ErrorKind::NotFound {
        crate::exit::COMMAND_NOT_FOUND
    } else {
        126
    }
}

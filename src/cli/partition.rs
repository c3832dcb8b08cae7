//! `rtlab partition create|show|undo|run` and `rtlab restore`: renderers of
//! the [`crate::isolate`] reports, and the exit statuses of docs/manual.md.

use super::common::{catch_signals, need_root, print_json};
use super::{EXIT_FAILED, EXIT_REFUSED, Outcome, Refusal};
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

/// A partition error as a refusal: its message, what was rolled back (the
/// errors that roll back have no hint), its hint, its exit status.
fn refusal(e: &IsolateError) -> Refusal {
    let mut message = format!("rtlab: {e}");
    if let IsolateError::Kernel { rollback, .. } | IsolateError::Interrupted { rollback, .. } = e {
        message.push_str("\nrolled back:");
        for l in rollback.lines() {
            message.push_str(&format!("\n{l}"));
        }
    }
    let refusal = Refusal::new(message).status(e.exit_code());
    match e.hint() {
        Some(h) => refusal.hint(h),
        None => refusal,
    }
}

/// Runs `rtlab partition ...`; returns the exit status.
pub fn main(cmd: &PartitionCommand) -> Outcome {
    let root = SysRoot::real();
    match cmd {
        PartitionCommand::Show { json } => {
            let state = IsolationState::read(&root, &journal::default_dir());
            if *json {
                print_json(&state);
            } else {
                out!("{}", state.render());
            }
            Ok(0)
        }
        PartitionCommand::Create { cpus, json } => {
            need_root("partition create")?;
            let online = crate::sys::online_cpus(&root).unwrap_or_default();
            let rt = isolate::parse_rt_cpus(cpus, &online).map_err(|e| refusal(&e))?;
            let caught = catch_signals();
            let stop = || match caught.load(Ordering::Relaxed) {
                0 => None,
                s => Some(s as i32),
            };
            let report = isolate::create(&root, &journal::default_dir(), &rt, &stop)
                .map_err(|e| refusal(&e))?;
            if *json {
                print_json(&report);
            } else {
                out!("{}", render_create(&report));
            }
            Ok(0)
        }
        PartitionCommand::Undo { json } => {
            need_root("partition undo")?;
            let report = isolate::undo(&root, &journal::default_dir()).map_err(|e| refusal(&e))?;
            Ok(print_restore(
                &report,
                *json,
                "no partition made by rtlab: nothing to undo",
            ))
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
pub fn restore_main(json: bool) -> Outcome {
    need_root("restore")?;
    let report = journal::restore_all(&SysRoot::real(), &journal::default_dir(), None);
    Ok(print_restore(
        &report,
        json,
        "nothing to restore: no journal left",
    ))
}

/// `rtlab partition run NAME -- CMD...`: moves this process into the
/// partition and becomes the command (exec), so nothing is left behind.
fn run_in(root: &SysRoot, partition: &str, command: &[String]) -> Outcome {
    use std::os::unix::process::CommandExt;
    let procs = isolate::partition_procs(root, partition).map_err(|e| refusal(&e))?;
    if let Err(e) = root.write(&procs, &os::getpid().to_string()) {
        return Err(Refusal::failed(format!(
            "rtlab: cannot enter partition {partition}: {e}"
        )));
    }
    let Some((program, args)) = command.split_first() else {
        return Err(Refusal::printed(EXIT_REFUSED));
    };
    let err = std::process::Command::new(program).args(args).exec();
    let status = if err.kind() == std::io::ErrorKind::NotFound {
        crate::exit::COMMAND_NOT_FOUND
    } else {
        126
    };
    Err(Refusal::new(format!("rtlab: cannot run `{program}`: {err}")).status(status))
}

//! `rtlab run` and `rtlab check`, and the path every experiment takes from
//! its text to its result: read (a file, the built-in experiment, or the
//! text a command wrote from its options), planned, checked before anything
//! starts, run, its outputs written and its end told. The trace commands,
//! `monitor` and `cyclictest` join this path.

use super::refusal::{Outcome, Refusal};
use super::{RunArgs, oneoff, show};
use crate::config::Diagnostic;
use crate::plan::{self, PlanOptions, RealMachine};
use crate::run::{self, RunOptions};
use crate::sys::{SysRoot, os};
use crate::{messages, result::EndReason};
use std::path::Path;

/// A file's diagnostics as one refusal: each at its place, then their count.
fn diagnostics(file: &str, diags: &[Diagnostic]) -> Refusal {
    diagnostics_from(file, diags, &[])
}

/// Diagnostics of an experiment generated from command-line options:
/// `origins[line - 1]` names the option that wrote that line, and the
/// diagnostic names it instead of a line of a file the user never saw.
/// An option written on several lines (`--period` on each CPU's timer
/// thread) is refused once.
fn diagnostics_from(file: &str, diags: &[Diagnostic], origins: &[Option<String>]) -> Refusal {
    let shown = rendered_diagnostics(file, diags, origins);
    let mut message: String = shown.iter().map(|text| format!("{text}\n")).collect();
    message.push_str(&format!(
        "rtlab: {} problem{} in {file}; nothing was started",
        shown.len(),
        if shown.len() == 1 { "" } else { "s" }
    ));
    Refusal::new(message)
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
            // On the command line `m` is minutes: its hint says so.
            Some(Some(option)) if d.hint.as_deref() == Some(crate::config::values::UNITS_HINT) => {
                let mut d = d.clone();
                d.hint = Some(crate::config::values::CLI_UNITS_HINT.into());
                d.render_at(&format!("{file}: {option}"))
            }
            Some(Some(option)) => d.render_at(&format!("{file}: {option}")),
            _ => d.render(file),
        };
        if !shown.contains(&text) {
            shown.push(text);
        }
    }
    shown
}

/// Reads and plans an experiment (or the built-in one).
pub(super) fn load_plan(file: Option<&Path>, opts: &PlanOptions) -> Result<plan::RunPlan, Refusal> {
    let (text, name) = experiment_text(file)?;
    plan_from_text(&text, &name, opts, &[])
}

/// The text and name of an experiment file, or of the built-in experiment.
pub(super) fn experiment_text(file: Option<&Path>) -> Result<(String, String), Refusal> {
    let Some(path) = file else {
        let root = SysRoot::real();
        let parts = partitions(&root);
        return Ok((
            plan::builtin_experiment_text(&builtin_cpus(&root, &parts), &parts),
            "<built-in>".to_string(),
        ));
    };
    let name = path.display().to_string();
    use crate::sys::infile::{self, InputError};
    let bytes = match infile::read_bounded(path, crate::config::MAX_FILE_BYTES as u64) {
        Ok(b) => b,
        Err(InputError::TooBig(_)) => {
            return Err(diagnostics(&name, &[crate::config::too_big()]));
        }
        Err(e) => {
            return Err(Refusal::new(format!("rtlab: {name}: {e}")).hint(unreadable_hint(&e)));
        }
    };
    match crate::config::decode(&bytes) {
        Ok(text) => Ok((text.to_string(), name)),
        Err(d) => Err(diagnostics(&name, &[d])),
    }
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

/// Plans `text`; `origins` as in [`diagnostics_from`].
pub(super) fn plan_from_text(
    text: &str,
    name: &str,
    opts: &PlanOptions,
    origins: &[Option<String>],
) -> Result<plan::RunPlan, Refusal> {
    let machine = RealMachine {
        root: SysRoot::real(),
    };
    plan::plan_text(text, name, &machine, opts)
        .map_err(|diags| diagnostics_from(name, &diags, origins))
}

/// Runs an experiment given as text (the trace commands write theirs, with
/// the option that wrote each line: `origins`).
pub(crate) fn run_text(
    text: &str,
    name: &str,
    args: &RunArgs,
    origins: &[Option<String>],
) -> Outcome {
    check_json(args)?;
    let opts = PlanOptions {
        outdir: args.outdir.clone(),
        dbg_level: None,
        no_result_files: false,
    };
    let plan = plan_from_text(text, name, &opts, origins)?;
    run_plan(&plan, args, None)
}

/// The cpuset partitions (name, CPUs) where a thread can have its own
/// (cgroup v1), for the built-in experiment.
pub(super) fn partitions(root: &SysRoot) -> Vec<(String, Vec<usize>)> {
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

/// The CPUs of the built-in experiment: each online one, or, without
/// partitions, those of the cpuset rtlab runs in (a container's
/// `--cpuset-cpus`), where it is found and has some.
pub(super) fn builtin_cpus(root: &SysRoot, partitions: &[(String, Vec<usize>)]) -> Vec<usize> {
    use plan::Machine;
    let machine = RealMachine { root: root.clone() };
    let online = machine.online_cpus();
    if !partitions.is_empty() {
        return online;
    }
    let Ok(own) = machine.cpuset(None) else {
        return online;
    };
    let inside: Vec<usize> = online
        .iter()
        .copied()
        .filter(|c| own.cpus.contains(c))
        .collect();
    if inside.is_empty() { online } else { inside }
}

/// A journal directory others could tamper with is refused before anything
/// starts (a run as root journals its changes there); `check` says so too.
fn journal_dir_trusted(dir: &Path) -> Result<(), Refusal> {
    if os::geteuid() == 0
        && std::fs::symlink_metadata(dir).is_ok()
        && let Err(e) = crate::sys::journal::check_dir(dir)
    {
        return Err(Refusal::new(format!("rtlab: {e}")));
    }
    Ok(())
}

/// `--json FILE` can be written, and each `--fail-if` can be checked on
/// one run (checked before anything starts).
pub(super) fn check_json(args: &RunArgs) -> Result<(), Refusal> {
    show::check_run_gate(&args.fail_if)?;
    if let Some(json) = &args.json
        && let Err(e) = crate::sys::outfile::check(json, false)
    {
        return Err(Refusal::output("rtlab: --json ", &e));
    }
    Ok(())
}

/// Lets go of the pages of rtlab's binary that the steps of a run so far
/// touched (the command line, the experiment, the plan; at the end, the
/// run's closing), so that they do not add up to its peak memory (said at
/// debug level 1).
pub(super) fn let_go_of_what_start_up_touched() {
    match crate::sys::memory::release_early_pages(&SysRoot::real()) {
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

/// `rtlab run` (and the systress form `rtlab -c FILE`).
pub(super) fn run_main(args: &RunArgs, dbg_level: Option<u8>) -> Outcome {
    let_go_of_what_start_up_touched();
    let (text, name, origins) = if args.oneoff.given() {
        let root = SysRoot::real();
        let parts = partitions(&root);
        let g = oneoff::experiment(&args.oneoff, &builtin_cpus(&root, &parts), &parts)?;
        (g.text(), "rtlab run".to_string(), g.origins())
    } else {
        let (text, name) = experiment_text(args.file.as_deref())?;
        (text, name, Vec::new())
    };
    if args.print {
        // The one-off options' file is printed once it parses: a value the
        // run would refuse is refused here too, naming its option.
        if args.oneoff.given()
            && let Err(diags) = crate::config::parse(&text)
        {
            return Err(diagnostics_from(&name, &diags, &origins));
        }
        out!("{text}");
        return Ok(0);
    }
    check_json(args)?;
    let opts = PlanOptions {
        outdir: args.outdir.clone(),
        dbg_level,
        no_result_files: false,
    };
    let plan = plan_from_text(&text, &name, &opts, &origins)?;
    run_plan(&plan, args, None)
}

/// Runs a plan after the checks every run makes before it starts (the
/// journal directory, the run's outputs added to `exports`: result
/// directories, JSON, trace windows).
pub(super) fn execute_plan(
    plan: &plan::RunPlan,
    args: &RunArgs,
    monitor: Option<crate::monitor::MonitorSpec>,
    cyclictest: Option<crate::report::cyclictest::View>,
    exports: &mut run::ExportSet,
) -> Result<crate::result::RunResult, Refusal> {
    let_go_of_what_start_up_touched();
    let journal_dir = crate::sys::journal::default_dir();
    journal_dir_trusted(&journal_dir)?;
    let json_option = if cyclictest.is_some() {
        "--rtlab-json"
    } else {
        "--json"
    };
    let json = args.json.as_deref().map(|j| (json_option, j));
    if let Err(refused) = exports.add_run(plan, json) {
        let prefix = format!("rtlab: {} ", refused.what);
        return Err(Refusal::output(&prefix, &refused.error));
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
        silent: args.silent,
    };
    run::execute(plan, &run_opts).map_err(|e| {
        let refusal = Refusal::failed(format!("rtlab: {e:#}"));
        // The exporters start before the run changes anything: an
        // address in use or a windows file that is not rtlab's is a
        // refusal.
        if e.downcast_ref::<crate::monitor::MonitorError>().is_some() {
            return refusal.status(crate::exit::REFUSED);
        }
        refusal
    })
}

/// Runs a plan, writes its outputs and tells how it ended; its exit status.
pub(super) fn run_plan(
    plan: &plan::RunPlan,
    args: &RunArgs,
    monitor: Option<crate::monitor::MonitorSpec>,
) -> Outcome {
    let mut exports = run::ExportSet::new(true);
    let result = execute_plan(plan, args, monitor, None, &mut exports)?;
    for w in &result.warnings {
        messages::warn(w);
    }
    let_go_of_what_start_up_touched();
    run::write_outputs(&result, &exports).map_err(|e| Refusal::failed(format!("rtlab: {e:#}")))?;
    let held = show::run_gate(&result, args.json.as_deref(), &args.fail_if);
    tell_end(&result);
    // A run that did not complete keeps its own status: the gate's
    // verdicts are printed all the same.
    Ok(match result.end.exit_code() {
        0 if held => crate::exit::REGRESSION,
        code => code,
    })
}

/// How a run ended, when it did not complete (on stderr).
fn tell_end(result: &crate::result::RunResult) {
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
}

/// `rtlab check FILE`.
pub(super) fn check_main(file: &Path, dbg_level: Option<u8>) -> Outcome {
    let opts = PlanOptions {
        outdir: None,
        dbg_level,
        no_result_files: false,
    };
    let plan = load_plan(Some(file), &opts)?;
    journal_dir_trusted(&crate::sys::journal::default_dir())?;
    let noise = match plan.noise.len() {
        0 => String::new(),
        1 => ", 1 noise thread".to_string(),
        n => format!(", {n} noise threads"),
    };
    outln!(
        "{}: OK ({} timer thread{}, {} program{}{noise})",
        file.display(),
        plan.timers.len(),
        if plan.timers.len() == 1 { "" } else { "s" },
        plan.programs.len(),
        if plan.programs.len() == 1 { "" } else { "s" }
    );
    Ok(0)
}

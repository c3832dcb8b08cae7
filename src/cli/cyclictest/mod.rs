//! `rtlab cyclictest ARGS...` (and rtlab installed under the name
//! `cyclictest`): cyclictest's command line and outputs, measured by
//! rtlab. The options become an experiment ([`setup`]), which goes through
//! the same plan and run as any file; the outputs are cyclictest's
//! ([`crate::report::cyclictest`]), rendered from the one result. rtlab's
//! extras go to stderr (percentiles, the flight recorder's verdict) or to
//! files asked for (`--rtlab-json`, `--rtlab-outdir`), so that stdout is
//! what cyclictest's parsers expect.
//!
//! Exit statuses: 0 when the run completed or was stopped by SIGINT or
//! SIGTERM (as cyclictest), 2 when refused before the start (an option
//! rtlab does not do, a bad value), 1 when it failed after the start.

use super::common::Measured;
use super::{EXIT_FAILED, Outcome, Refusal, RunArgs};
use crate::plan::PlanOptions;
use crate::report::cyclictest as render;
use crate::result::{EndReason, RunResult};
use crate::run::{CyclictestHistogram, CyclictestJson, ExportSet, RunExporter};
use std::ffi::OsString;
use std::path::Path;

mod args;
mod setup;

/// The front end's command-line definition (its man page).
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    args::CyclictestArgs::command()
}

/// The cyclictest front end; `argv` without the program name.
pub fn main(argv: &[OsString]) -> Outcome {
    measured(argv).map(|m| m.status)
}

/// The front end, with what it measured: each thread's maximum as
/// `# Max Latencies:` prints it.
pub(super) fn measured(argv: &[OsString]) -> Result<Measured, Refusal> {
    let Some(a) = parse(argv)? else {
        return Ok(Measured::nothing(0));
    };
    let cmdline = std::iter::once("cyclictest".to_string())
        .chain(argv.iter().map(|s| s.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ");
    let allowed = crate::sys::os::get_affinity(0).unwrap_or_default();
    let setup = setup::setup(&a, &allowed, &cmdline)
        .map_err(|msg| Refusal::with_hint_line(format!("rtlab cyclictest: {msg}")))?;
    let mut exports = ExportSet::new(a.rtlab_outdir.is_some());
    let plan = plan(&a, &setup, &mut exports)?;
    if a.verbose {
        let root = crate::sys::SysRoot::real();
        let online = crate::sys::online_cpus(&root).map_or(0, |c| c.len());
        let configured = crate::sys::configured_cpus(&root).max(online);
        out!(
            "{}",
            render::verbose_header(&setup.view, configured, online)
        );
    }
    // rtlab's JSON result is the run's own, as `rtlab run --json`.
    let run_args = RunArgs {
        json: a.rtlab_json.clone(),
        ..RunArgs::default()
    };
    let view = Some(setup.view.clone());
    let result = super::experiment::execute_plan(&plan, &run_args, None, view, &mut exports)?;
    Ok(Measured {
        status: outputs(&setup.view, &result, &exports),
        maxima_us: render::max_latencies(&setup.view, &result.timers),
        result: Some(result),
    })
}

/// The options, or None when `--help` was printed.
fn parse(argv: &[OsString]) -> Result<Option<args::CyclictestArgs>, Refusal> {
    let a = args::parse(argv).map_err(|e| {
        let text = e.to_string();
        Refusal::new(format!(
            "rtlab cyclictest: {}",
            text.lines().next().unwrap_or_default()
        ))
        .hint("`rtlab cyclictest --help` lists the options rtlab takes")
    })?;
    if a.help {
        use clap::CommandFactory;
        outln!("{}", args::CyclictestArgs::command().render_help());
        return Ok(None);
    }
    if let Some((option, why)) = a.unsupported() {
        return Err(Refusal::new(format!(
            "rtlab cyclictest: {option} is not supported: {why}"
        ))
        .hint(format!(
            "drop {option}; `rtlab cyclictest --help` lists the options rtlab takes"
        )));
    }
    Ok(Some(a))
}

/// The output files checked (cyclictest's own added to `exports`), the
/// notes said, the experiment planned.
fn plan(
    a: &args::CyclictestArgs,
    setup: &setup::Setup,
    exports: &mut ExportSet,
) -> Result<crate::plan::RunPlan, Refusal> {
    let files = [
        ("--json", a.json.as_deref()),
        ("--histfile", a.histfile.as_deref()),
        ("--rtlab-json", a.rtlab_json.as_deref()),
    ];
    for (option, path) in files {
        if let Some(p) = path
            && let Err(e) = crate::sys::outfile::check(p, false)
        {
            return Err(Refusal::output(&format!("rtlab cyclictest: {option} "), &e));
        }
    }
    // cyclictest's files, in the order written (rtlab's JSON result is the
    // run's own, added with the run's outputs).
    let view = &setup.view;
    let ours: [(&str, Option<&Path>, Box<dyn RunExporter>); 2] = [
        (
            "--histfile",
            view.histogram.as_ref().and_then(|h| h.file.as_deref()),
            Box::new(CyclictestHistogram(view.clone())),
        ),
        (
            "--json",
            view.json.as_deref(),
            Box::new(CyclictestJson(view.clone())),
        ),
    ];
    for (option, path, exporter) in ours {
        if let Some(p) = path
            && let Err(e) = exports.add(exporter, p)
        {
            return Err(Refusal::output(&format!("rtlab cyclictest: {option} "), &e));
        }
    }
    for note in &setup.notes {
        errln!("{note}");
    }
    let text = setup.experiment.text();
    if a.rtlab_print {
        errln!("# the experiment `rtlab cyclictest` runs\n{text}");
    }
    // Made before the plan, which checks the load programs' outputs there.
    if let Some(dir) = &a.rtlab_outdir
        && let Err(e) = crate::sys::outfile::create_dirs(dir)
    {
        return Err(Refusal::output("rtlab cyclictest: --rtlab-outdir ", &e));
    }
    let opts = PlanOptions {
        outdir: a.rtlab_outdir.clone(),
        dbg_level: None,
        no_result_files: a.rtlab_outdir.is_none(),
    };
    let origins = setup.experiment.origins();
    super::experiment::plan_from_text(&text, "rtlab cyclictest", &opts, &origins)
}

/// cyclictest's outputs, rtlab's extras, and the exit status.
fn outputs(view: &render::View, result: &RunResult, exports: &ExportSet) -> i32 {
    for w in &result.warnings {
        crate::messages::warn(w);
    }
    let mut stdout = String::new();
    if view.verbose {
        stdout.push_str(&render::verbose(view, &result.timers));
    }
    // After -v's samples too, as cyclictest prints them.
    if view.quiet && view.histogram.is_none() {
        stdout.push_str(&render::final_lines(view, result));
    }
    if let Some(trigger) = view.spike {
        stdout.push_str(&render::spikes(view, trigger, result));
    }
    // The histogram goes to its file (an export), else here.
    if let Some(h) = view.histogram.as_ref().filter(|h| h.file.is_none()) {
        stdout.push_str(&render::histogram(view, h, &result.timers));
    }
    if let Some(b) = view.breaktrace {
        stdout.push_str(&render::breaks(b, result));
    }
    out!("{stdout}");
    // One loop writes the export set: cyclictest's files (--histfile,
    // --json), then as `rtlab run` writes them the systress result files
    // with --rtlab-outdir, rtlab's JSON result, and the flight recorder's
    // windows of `-b` wake-ups (which its verdict names: in --rtlab-outdir,
    // else the current directory).
    let failures = exports.write(result);
    errln!("{}", render::percentiles(view, result).trim_end());
    if let Some(trace) = &result.trace {
        let verdict = crate::report::explain::verdict_in(trace, &result.plan.outdir);
        errln!("{}", verdict.trim_end());
    }
    for f in &failures {
        errln!("rtlab cyclictest: {f}");
    }
    match &result.end {
        _ if !failures.is_empty() => EXIT_FAILED,
        EndReason::Completed => 0,
        EndReason::Interrupted { number, .. }
            if [crate::sys::consts::SIGINT, crate::sys::consts::SIGTERM].contains(number) =>
        {
            0
        }
        EndReason::Failed { error } => {
            errln!("rtlab cyclictest: run failed: {error}");
            result.end.exit_code()
        }
        other => other.exit_code(),
    }
}

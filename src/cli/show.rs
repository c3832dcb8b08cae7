//! `rtlab plot`, `rtlab report`, `rtlab compare`: finished runs (rtlab's
//! JSON, cyclictest's histogram text or JSON, systress result files) read
//! into [`crate::dataset`] once, then drawn, reported or compared.

use super::{Outcome, Refusal};
use crate::dataset::{self, Run};
use crate::report::compare::{self, Condition};
use crate::report::export::{self, Exporter, GnuplotScript, HtmlReport};
use crate::report::plot::{Panel, PlotOptions};
use crate::sys::outfile;
use clap::Args;
use std::path::{Path, PathBuf};

use crate::exit::REGRESSION as EXIT_REGRESSION;

/// The inputs every one of these commands takes.
#[derive(Debug, Args)]
pub struct Inputs {
    /// Result files: rtlab's --json result, cyclictest's --json file or its
    /// -h/--histfile histogram text, or a systress timer_threadNN.txt/.csv.
    #[arg(required = true, value_name = "RESULT")]
    pub results: Vec<PathBuf>,
    /// Name of each run in legends and columns, in the order of the files
    /// (default: the file name without its extension).
    #[arg(long = "label", value_name = "NAME")]
    pub labels: Vec<String>,
}

/// Options of `rtlab plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    #[command(flatten)]
    inputs: Inputs,
    /// The picture: FILE.svg or FILE.png.
    #[arg(short, long, value_name = "FILE", required_unless_present = "gnuplot")]
    output: Option<PathBuf>,
    /// Also (or only) write a gnuplot script that draws the histograms.
    #[arg(long, value_name = "FILE")]
    gnuplot: Option<PathBuf>,
    /// Panels to draw, top to bottom (default: the three latency panels,
    /// then the two noise panels when a run has noise threads; the noise
    /// panels alone when no run has a latency). Repeatable.
    #[arg(long = "panel", value_enum, value_name = "PANEL")]
    panels: Vec<Panel>,
    #[command(flatten)]
    range: RangeArgs,
    /// The picture's title (default: what the runs measured: "Timer
    /// wake-up latency", "IRQ-to-task latency", or both).
    #[arg(long)]
    title: Option<String>,
    /// Size in pixels, WIDTHxHEIGHT (default 1200x700 for one panel, 400
    /// pixels higher for each further one: 1200x1500 for three).
    #[arg(long, value_name = "WxH", value_parser = parse_size)]
    size: Option<(u32, u32)>,
}

/// The latency range of the plots, shared by `plot` and `report`.
#[derive(Debug, Args)]
pub struct RangeArgs {
    /// Cut the latency axes at this many µs.
    #[arg(long, value_name = "US", conflicts_with = "full_range")]
    max_latency: Option<f64>,
    /// Draw the histogram up to the largest latency (by default it ends at
    /// twice the highest p99.9, and samples past it are counted and marked).
    #[arg(long)]
    full_range: bool,
}

/// Options of `rtlab report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    inputs: Inputs,
    /// The HTML file to write.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// The report's title.
    #[arg(long, default_value = "rtlab latency report")]
    title: String,
    /// One summary column per thread instead of per run.
    #[arg(long)]
    per_thread: bool,
    #[command(flatten)]
    range: RangeArgs,
}

/// Options of `rtlab compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    #[command(flatten)]
    inputs: Inputs,
    /// Exit with status 6 when this holds for a run: METRIC OP VALUE, e.g.
    /// 'p99>+10%' (against the first run), 'max>+20us', 'p99.99>100us'
    /// (every run). Repeatable.
    #[arg(long = "fail-if", value_name = "COND")]
    fail_if: Vec<Condition>,
    /// Print as JSON.
    #[arg(long, conflicts_with = "markdown")]
    json: bool,
    /// Print as a Markdown table.
    #[arg(long)]
    markdown: bool,
    /// One column per thread instead of per run.
    #[arg(long)]
    per_thread: bool,
}

fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("{s:?} is not WIDTHxHEIGHT (e.g. 1600x900)");
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let (w, h): (u32, u32) = (w.parse().map_err(|_| bad())?, h.parse().map_err(|_| bad())?);
    if !(200..=10_000).contains(&w) || !(150..=10_000).contains(&h) {
        return Err(format!("{s}: each side must be 200..10000 pixels"));
    }
    Ok((w, h))
}

/// Loads the inputs, or why not (exit status 2).
pub(super) fn load(inputs: &Inputs) -> Result<Vec<Run>, Refusal> {
    if inputs.labels.len() > inputs.results.len() {
        return Err(Refusal::new(format!(
            "rtlab: {} --label for {} result files",
            inputs.labels.len(),
            inputs.results.len()
        ))
        .hint("give one --label per file, in order"));
    }
    dataset::load_all(&inputs.results, &inputs.labels)
        .map_err(|e| Refusal::with_hint_line(e.to_string()))
}

/// Writes an output file whole, never through a link (see
/// [`crate::sys::outfile`]).
fn write(path: &Path, bytes: &[u8]) -> Result<(), Refusal> {
    outfile::write_whole(path, bytes)
        .map_err(|e| Refusal::output("rtlab: cannot write ", &e).status(crate::exit::FAILED))
}

/// Refuses, before any work, output files that cannot be written safely.
fn check_outputs<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Result<(), Refusal> {
    for path in paths {
        outfile::check(path, false).map_err(|e| Refusal::output("rtlab: ", &e))?;
    }
    Ok(())
}

/// Renders `runs` with `exporter` and writes the file whole.
fn export(path: &Path, exporter: &dyn Exporter, runs: &[dataset::Run]) -> Result<(), Refusal> {
    let bytes = exporter
        .render(runs)
        .map_err(|e| Refusal::failed(format!("rtlab: {}: {e}", path.display())))?;
    write(path, &bytes)
}

/// `rtlab plot`.
pub fn plot_main(args: &PlotArgs) -> Outcome {
    let known = |o: &Path| export::for_path(o, PlotOptions::default()).is_some();
    if args.output.as_deref().is_some_and(|o| !known(o)) {
        return Err(Refusal::new(format!(
            "rtlab: cannot tell the picture's format from {:?}",
            args.output.as_deref().unwrap_or(Path::new(""))
        ))
        .hint("name it FILE.svg or FILE.png"));
    }
    check_outputs(args.output.iter().chain(&args.gnuplot).map(|p| p.as_path()))?;
    let runs = load(&args.inputs)?;
    let panels = if args.panels.is_empty() {
        Panel::default_for(&runs)
    } else {
        args.panels.clone()
    };
    // 700 px for one panel, 400 more for each further one (1500 for three).
    let further = panels.len().saturating_sub(1).min(20) as u32;
    let default_size = (1200, 700 + 400 * further);
    let title = args.title.clone().unwrap_or_else(|| default_title(&runs));
    let opts = PlotOptions {
        size: args.size.unwrap_or(default_size),
        panels,
        max_latency_us: args.range.max_latency,
        full_range: args.range.full_range,
        title: title.clone(),
    };
    if let Some(out) = &args.output
        && let Some(picture) = export::for_path(out, opts)
    {
        export(out, picture.as_ref(), &runs)?;
        outln!("rtlab: wrote {} ({} runs)", out.display(), runs.len());
    }
    if let Some(script) = &args.gnuplot {
        let gnuplot = GnuplotScript { title };
        export(script, &gnuplot, &runs)?;
        outln!(
            "rtlab: wrote {} (gnuplot -p {})",
            script.display(),
            script.display()
        );
    }
    Ok(0)
}

/// `rtlab report`.
pub fn report_main(args: &ReportArgs) -> Outcome {
    check_outputs([args.output.as_path()])?;
    let runs = load(&args.inputs)?;
    let report = HtmlReport {
        title: args.title.clone(),
        per_thread: args.per_thread,
        plot: PlotOptions {
            max_latency_us: args.range.max_latency,
            full_range: args.range.full_range,
            ..PlotOptions::default()
        },
    };
    export(&args.output, &report, &runs)?;
    outln!(
        "rtlab: wrote {} ({}); open it in a browser",
        args.output.display(),
        crate::text::counted(runs.len() as u64, "run", "runs")
    );
    Ok(0)
}

/// `rtlab explain RESULT.json`.
pub fn explain_main(path: &Path) -> Outcome {
    let run = dataset::load(path).map_err(|e| Refusal::with_hint_line(e.to_string()))?;
    if run.format != dataset::Format::Rtlab {
        return Err(Refusal::new(format!(
            "rtlab: {} is a {}, not an rtlab result",
            path.display(),
            run.format.name()
        ))
        .hint("explain reads `rtlab run --json` files"));
    }
    for m in &run.details.irq_tasks {
        out!("{}", crate::report::audit::irq_task(m));
    }
    for m in &run.details.task_latency {
        out!("{}", crate::report::task_latency::text(m));
    }
    if let Some(audit) = &run.details.audit {
        out!("{}", crate::report::audit::audit(audit));
    }
    let other_findings = run.details.audit.is_some()
        || !run.details.irq_tasks.is_empty()
        || !run.details.task_latency.is_empty();
    let no_spikes = run.threads.iter().all(|t| t.spikes.is_empty());
    // The flight recorder explains timer threads' wake-ups: without any
    // (task latency alone) it has nothing to say.
    match run
        .details
        .trace
        .as_ref()
        .filter(|_| run.has_timer_threads())
    {
        Some(trace) => {
            out!("{}", crate::report::explain::all(trace));
            // Without a trace the kept wake-ups are all there is to see.
            if trace.unavailable.is_some() && !no_spikes {
                outln!("Its worst wake-ups:");
                worst_wake_ups(&run);
            }
        }
        None if other_findings && no_spikes => {}
        None => {
            outln!(
                "No flight recorder in this run (`trace.threshold` was not set). Its worst wake-ups:"
            );
            worst_wake_ups(&run);
        }
    }
    Ok(0)
}

/// The worst wake-ups each thread kept, with their time.
fn worst_wake_ups(run: &dataset::Run) {
    for t in &run.threads {
        for s in &t.spikes {
            outln!(
                "  {} sample {} on CPU {}: {:.1} µs at {:.6} s",
                t.name,
                s.sample,
                s.cpu.map_or("?".into(), |c| c.to_string()),
                s.latency_ns as f64 / 1000.0,
                s.offset_ns as f64 / 1e9
            );
        }
    }
}

/// The title of runs' pictures: what their threads measured.
fn default_title(runs: &[dataset::Run]) -> String {
    use dataset::Measures;
    let has = |m: Measures| {
        runs.iter()
            .flat_map(|r| &r.threads)
            .any(|t| t.measures == m)
    };
    let noise = runs.iter().any(|r| !r.noise.is_empty());
    let latency = runs.iter().any(|r| !r.threads.is_empty());
    if noise && !latency {
        return "OS noise (noise threads)".into();
    }
    if noise && has(Measures::WakeUp) && !has(Measures::IrqToTask) {
        return "Timer wake-up latency and OS noise".into();
    }
    match (has(Measures::WakeUp), has(Measures::IrqToTask)) {
        (false, true) => "IRQ-to-task latency (handler exit to task switch-in)".into(),
        (true, true) => "Timer wake-up and IRQ-to-task latency".into(),
        _ if has(Measures::TimerIrq) => {
            "Timer wake-up latency: threads (T<N>) and their interrupts (T<N>.irq)".into()
        }
        _ => "Timer wake-up latency".into(),
    }
}

/// `rtlab compare`.
pub fn compare_main(args: &CompareArgs) -> Outcome {
    let runs = load(&args.inputs)?;
    let columns = compare::columns(&runs, args.per_thread);
    let verdicts = compare::gate(&columns, &args.fail_if);
    if args.json {
        let mut doc = compare::json(&columns, &verdicts);
        if let Some(audits) = compare::audits(&runs) {
            doc["audits"] = serde_json::json!(audits);
        }
        super::common::print_json(&doc);
    } else {
        if args.markdown {
            out!("{}", compare::markdown(&columns));
        } else {
            out!("{}", compare::text(&columns));
        }
        if let Some(audits) = compare::audit_text(&runs) {
            out!("\n{audits}");
        }
        if !verdicts.is_empty() {
            outln!();
        }
        print_verdicts(&verdicts);
    }
    if args
        .fail_if
        .iter()
        .any(|c| !matches!(c.bound, compare::Bound::Absolute(_)))
        && columns.len() < 2
    {
        errln!(
            "rtlab: only one run: a relative --fail-if condition has no baseline, so the gate fails"
        );
    }
    Ok(if verdicts.iter().any(|v| v.failed) {
        EXIT_REGRESSION
    } else {
        0
    })
}

/// `rtlab run --fail-if`: a run has no first run to change from, so each
/// condition must bound the value itself; others are refused before the
/// run starts (status 2).
pub(super) fn check_run_gate(conditions: &[Condition]) -> Result<(), Refusal> {
    let relative = conditions
        .iter()
        .find(|c| !matches!(c.bound, compare::Bound::Absolute(_)));
    if let Some(c) = relative {
        return Err(Refusal::new(format!(
            "rtlab: --fail-if {:?} is a change against a first run, and one run has none",
            c.text
        ))
        .hint(format!(
            "bound the value itself (e.g. 'deadline_misses>0', 'max>100us'), or gate \
             with `rtlab compare baseline.json new.json --fail-if '{}'`",
            c.text
        )));
    }
    Ok(())
}

/// Checks `conditions` on a run's result (its figures as `compare` reads
/// them back from its JSON) and prints each verdict; whether one held.
pub(super) fn run_gate(
    result: &crate::result::RunResult,
    json: Option<&Path>,
    conditions: &[Condition],
) -> bool {
    if conditions.is_empty() {
        return false;
    }
    let run = dataset::of_result(result, json.unwrap_or(Path::new("run")));
    let columns = compare::columns(std::slice::from_ref(&run), false);
    let verdicts = compare::gate(&columns, conditions);
    print_verdicts(&verdicts);
    verdicts.iter().any(|v| v.failed)
}

/// Each `--fail-if` verdict on a line: `FAIL max>100us: ...`.
fn print_verdicts(verdicts: &[compare::Verdict]) {
    for v in verdicts {
        outln!(
            "{} {}: {}",
            if v.failed { "FAIL" } else { "pass" },
            v.condition,
            v.reason
        );
    }
}

//! `rtlab lava RESULT... [--max-latency US]`: finished runs (any result
//! [`crate::dataset`] reads) as LAVA's test cases, named and judged as
//! Linaro's rt-tests parser does cyclictest's ([`crate::report::lava`]),
//! one line each on stdout. Inside a LAVA test shell (`LAVA_RESULT_DIR`
//! set, as LAVA's `lava-test-shell` exports it for every test definition's
//! run) each case is also reported by LAVA's `lava-test-case` helper, run
//! directly (no shell) with each argument an item of its own.
//!
//! Exit status: 0 when no case failed (skipped ones aside), 6 when one
//! failed (a return code not 0; with `--max-latency`, a max at or above
//! it, or a thread without samples), 2 when an input or flag is refused or the helper is wanted and not on the PATH (nothing is
//! printed), 1 when the helper failed for some case (LAVA lacks it).

use super::show::Inputs;
use super::{Outcome, Refusal};
use crate::dataset::{Format, Run, rt_tests};
use crate::report::lava::{self, Case, Verdict, linaro};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};

/// The helper's name, as LAVA puts it on the test shell's PATH.
const HELPER: &str = "lava-test-case";

/// The variable LAVA's `lava-test-shell` exports to every test
/// definition's run (and its helpers write under).
const IN_LAVA: &str = "LAVA_RESULT_DIR";

/// Options of `rtlab lava`.
#[derive(Debug, Args)]
pub struct LavaArgs {
    /// Result files: rtlab's --json result, cyclictest's --json file or its
    /// -h/--histfile histogram text, or a systress timer_threadNN.txt/.csv.
    #[arg(required = true, value_name = "RESULT")]
    results: Vec<PathBuf>,
    /// With several files, the start of each one's case names, in the order
    /// of the files (default: the file name without its extension; any
    /// character but letters, digits, `.`, `_` and `-` becomes `_`).
    #[arg(long = "label", value_name = "NAME")]
    labels: Vec<String>,
    /// MAX_LATENCY of Linaro's rt-tests parser until 2021 (whole µs): a
    /// thread's max-latency case fails when its max is at or above it (min
    /// and avg always pass), each figure in whole µs. Without it the lines
    /// are today's parser's, byte for byte: every figure passes with the
    /// JSON's own value, then the test's line from its return code.
    #[arg(long, value_name = "US")]
    max_latency: Option<u64>,
    /// The test's own line without --max-latency (`cyclictest pass`): the
    /// name Linaro's script gives the parser.
    #[arg(long, value_name = "NAME", default_value = "cyclictest")]
    test_name: String,
    /// Report each case with LAVA's lava-test-case helper: `auto` inside a
    /// LAVA test shell (LAVA_RESULT_DIR set), `always`, or `never` (print
    /// the lines only).
    #[arg(long = "lava-test-case", value_enum, value_name = "WHEN", default_value_t = When::Auto)]
    when: When,
}

/// When to run the helper.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum When {
    /// Inside a LAVA test shell.
    Auto,
    /// Always (refused when it is not on the PATH).
    Always,
    /// Never.
    Never,
}

/// `rtlab lava`.
pub fn main(args: &LavaArgs) -> Outcome {
    let helper = helper(args.when)?;
    let test = lava::prefix(&args.test_name);
    let all = match rt_tests_only(args)? {
        Some(all) => all,
        None => cases_of_runs(args, &test)?,
    };
    report_all(&all, helper.as_deref())
}

/// Without `--max-latency`, when every file is an rt-tests JSON document
/// (pi_stress's holds no thread, which no run loader takes): each read as
/// Linaro's parser reads it, named by its `--label` or its file name.
fn rt_tests_only(args: &LavaArgs) -> Result<Option<Vec<Case>>, Refusal> {
    if args.max_latency.is_some() || args.labels.len() > args.results.len() {
        return Ok(None);
    }
    let mut docs = Vec::new();
    for path in &args.results {
        match rt_tests::load(path) {
            Ok(doc) if doc.is_document() => docs.push(doc),
            _ => return Ok(None),
        }
    }
    let several = docs.len() > 1;
    let test = lava::prefix(&args.test_name);
    let mut all = Vec::new();
    for (i, (doc, path)) in docs.iter().zip(&args.results).enumerate() {
        let label = args.labels.get(i).cloned().unwrap_or_else(|| {
            path.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        let prefix = several.then(|| lava::prefix(&label));
        let doc = linaro::from_rt_tests(doc).map_err(|why| {
            Refusal::new(format!("rtlab: {}: {why}", path.display()))
                .hint("give a whole rt-tests JSON file (Linaro's parser stops on this one too)")
        })?;
        let (cases, left_out) = linaro::cases(&doc, &test, prefix.as_deref());
        for note in &left_out {
            errln!("rtlab: {}: {note}", path.display());
        }
        all.extend(cases);
    }
    Ok(Some(all))
}

/// The cases of the runs the files hold (any result rtlab reads).
fn cases_of_runs(args: &LavaArgs, test: &str) -> Result<Vec<Case>, Refusal> {
    let runs = super::show::load(&Inputs {
        results: args.results.clone(),
        labels: args.labels.clone(),
    })?;
    let several = runs.len() > 1;
    let mut all = Vec::new();
    for (run, path) in runs.iter().zip(&args.results) {
        let prefix = several.then(|| lava::prefix(&run.label));
        let (cases, left_out) = match args.max_latency {
            Some(_) => {
                judged_program(run, path)?;
                let made = lava::cases(run, args.max_latency, prefix.as_deref());
                if made.cases.is_empty() {
                    return Err(no_timer_thread(run));
                }
                (made.cases, made.left_out)
            }
            None => {
                let doc = linaro_document(run, path)?;
                linaro::cases(&doc, test, prefix.as_deref())
            }
        };
        for note in &left_out {
            errln!("rtlab: {}: {note}", run.path);
        }
        all.extend(cases);
    }
    Ok(all)
}

/// Prints each case and reports it through the helper, if any.
fn report_all(all: &[Case], helper: Option<&Path>) -> Outcome {
    let mut helper_failed = 0usize;
    for case in all {
        outln!("{}", case.line());
        if let Some(helper) = helper
            && let Err(why) = report(helper, case)
        {
            errln!("rtlab: {HELPER} {}: {why}", case.name);
            helper_failed += 1;
        }
    }
    if helper_failed > 0 {
        return Err(Refusal::failed(format!(
            "rtlab: {HELPER} failed for {helper_failed} of {} test cases: LAVA lacks them",
            all.len()
        ))
        .hint("the lines above are the cases; see the helper's own messages"));
    }
    Ok(if all.iter().any(|c| c.verdict == Verdict::Fail) {
        crate::exit::REGRESSION
    } else {
        crate::exit::OK
    })
}

/// What today's parser reads of `run`: an rt-tests JSON file as it wrote
/// its figures, any other result as `rtlab cyclictest --json` would have.
fn linaro_document(run: &Run, path: &Path) -> Result<linaro::Document, Refusal> {
    let refused = |why: String| {
        Refusal::new(format!("rtlab: {}: {why}", run.path))
            .hint("give a whole rt-tests JSON file (Linaro's parser stops on this one too)")
    };
    if run.format == Format::CyclictestJson {
        let doc = rt_tests::load(path).map_err(|e| Refusal::with_hint_line(e.to_string()))?;
        return linaro::from_rt_tests(&doc).map_err(refused);
    }
    let (doc, left_out) = linaro::from_run(run);
    for note in &left_out {
        errln!("rtlab: {}: {note}", run.path);
    }
    if doc.threads.is_empty() {
        return Err(no_timer_thread(run));
    }
    Ok(doc)
}

/// `--max-latency` judges cyclictest's threads, as the parser of 2020 read
/// cyclictest's text: an rt-tests file another program wrote (pmqtest's
/// threads count no cycles of their own) is refused, saying what reads it.
fn judged_program(run: &Run, path: &Path) -> Result<(), Refusal> {
    if run.format != Format::CyclictestJson {
        return Ok(());
    }
    let program = rt_tests::load(path)
        .ok()
        .and_then(|d| d.program().map(str::to_string));
    match program.as_deref() {
        Some(p) if p != "cyclictest" && p != "rtlab" => Err(Refusal::new(format!(
            "rtlab: {}: --max-latency judges cyclictest's threads; this file is {}'s",
            run.path,
            lava::prefix(p)
        ))
        .hint("without --max-latency its lines are Linaro's parser's of today")),
        _ => Ok(()),
    }
}

fn no_timer_thread(run: &Run) -> Refusal {
    Refusal::new(format!(
        "rtlab: {}: no timer thread: nothing for LAVA",
        run.path
    ))
    .hint("give a run of timer threads (rtlab's or cyclictest's)")
}

/// The helper to run for each case, if any: refused when it is wanted and
/// not on the PATH.
fn helper(when: When) -> Result<Option<PathBuf>, Refusal> {
    let in_lava = std::env::var_os(IN_LAVA).is_some_and(|v| !v.is_empty());
    let wanted = match when {
        When::Never => return Ok(None),
        When::Always => true,
        When::Auto => in_lava,
    };
    if !wanted {
        return Ok(None);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    match crate::plan::find_in_path(HELPER, &path) {
        Some(found) => Ok(Some(found)),
        None => Err(Refusal::new(format!(
            "rtlab: no {HELPER} on the PATH{}: LAVA would get no results",
            if in_lava {
                format!(" ({IN_LAVA} is set: a LAVA test shell)")
            } else {
                String::new()
            }
        ))
        .hint(format!(
            "run it in a LAVA test definition, or add `--{HELPER} never` to print the lines only"
        ))),
    }
}

/// Runs `helper NAME --result R [--measurement V --units us]`: no shell,
/// each argument an item; its stdout is ours (LAVA reads its signal there).
fn report(helper: &Path, case: &Case) -> Result<(), String> {
    let status = std::process::Command::new(helper)
        .args(case.helper_args())
        .stdin(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot run {}: {e}", helper.display()))?;
    if status.success() {
        return Ok(());
    }
    use std::os::unix::process::ExitStatusExt;
    Err(match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => format!("ended with {status}"),
    })
}

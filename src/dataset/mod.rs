//! Finished runs, read back for plots, reports and comparisons: rtlab's JSON
//! result, cyclictest's histogram text (`-h`/`--histfile`) and `--json`
//! file, and systress-format result files (`txt`/`csv`) all become one
//! [`Run`], whose statistics are computed here once; every renderer
//! ([`crate::report`]) only draws or prints them.

mod cyclictest;
mod metric;
mod rtlab;
mod systress;
mod windows;

mod distribution;
mod model;
mod reading;
pub mod rt_tests;

pub(crate) use distribution::Distribution;
use distribution::{per_us, sum_counts};
pub use metric::Metric;
pub use model::{
    Context, Details, Format, Measures, NoiseStats, NoiseThread, Quantile, Run, Stats, Thread,
    WindowHistograms,
};
pub(crate) use reading::{Kept, ParseError, preemption_from_version};
pub use reading::{LoadError, MAX_FILE_BYTES, MAX_KEPT_JSON, MAX_THREADS};
use reading::{implausible, json_kind, read_bounded, unknown_json, window_of};
use std::path::Path;

/// A run's result, just made, as a run (named after `path`, its JSON
/// file): what `rtlab run --fail-if` gates on, the figures `compare` reads
/// back from that file.
pub fn of_result(result: &crate::result::RunResult, path: &Path) -> Run {
    rtlab::of_result(result, path)
}

/// Reads one run, guessing its format from its content. `FILE@N` names
/// the N-th window of a windows file (when FILE@N itself does not exist).
pub fn load(path: &Path) -> Result<Run, LoadError> {
    if let Some((file, n)) = window_of(path) {
        return match read_bounded(&file) {
            Ok(bytes) => parse_window_bytes(&bytes, &file, n).map_err(|mut e| {
                e.path = path.display().to_string();
                e
            }),
            Err(e) => Err(e.located(path)),
        };
    }
    match read_bounded(path) {
        Ok(bytes) => parse_bytes(&bytes, path),
        Err(e) => Err(e.located(path)),
    }
}

/// The `n`-th window (from 1) of each thread of the windows file whose
/// bytes are `bytes` (`FILE@N`).
pub fn parse_window_bytes(bytes: &[u8], path: &Path, n: usize) -> Result<Run, LoadError> {
    let text = String::from_utf8_lossy(bytes);
    if !windows::looks_like(text.trim_start()) {
        return Err(ParseError::new(
            1,
            1,
            "not a windows file: `@N` picks a window of `rtlab monitor --windows`",
            "name a windows file, or the whole file without `@N`",
        )
        .located(path));
    }
    windows::parse(text.trim_start(), path, Some(n)).map_err(|e| e.located(path))
}

/// Reads one run from the bytes of the file at `path` (named in errors and
/// labels), guessing its format from its content.
pub fn parse_bytes(bytes: &[u8], path: &Path) -> Result<Run, LoadError> {
    let fail = |e: ParseError| e.located(path);
    let text = String::from_utf8_lossy(bytes);
    let trimmed = text.trim_start();
    if windows::looks_like(trimmed) {
        windows::parse(trimmed, path, None).map_err(fail)
    } else if trimmed.starts_with('{') {
        match json_kind(trimmed) {
            Some(Format::Rtlab) => rtlab::parse(&text, path).map_err(fail),
            Some(_) => cyclictest::parse_json(&text, path).map_err(fail),
            None => unknown_json(&text).map_err(fail),
        }
    } else if systress::looks_like(&text) {
        systress::parse(&text, path).map_err(fail)
    } else {
        cyclictest::parse_histogram(&text, path).map_err(fail)
    }
    .and_then(|run| implausible(&run).map_or(Ok(run), |e| Err(fail(e))))
}

/// Reads several runs; labels default to file stems, made unique, or are
/// taken from `labels` in order.
pub fn load_all(paths: &[std::path::PathBuf], labels: &[String]) -> Result<Vec<Run>, LoadError> {
    let mut runs = paths
        .iter()
        .map(|p| load(p))
        .collect::<Result<Vec<_>, _>>()?;
    for (run, label) in runs.iter_mut().zip(labels) {
        run.label = label.clone();
    }
    for i in 1..runs.len() {
        let taken = |l: &str, runs: &[Run]| runs[..i].iter().any(|r| r.label == l);
        if taken(&runs[i].label, &runs) {
            let base = runs[i].label.clone();
            let mut n = 2;
            while taken(&format!("{base}#{n}"), &runs) {
                n += 1;
            }
            runs[i].label = format!("{base}#{n}");
        }
    }
    Ok(runs)
}

#[cfg(test)]
mod comparing_tests;
#[cfg(test)]
mod cyclictest_tests;
#[cfg(test)]
mod refusal_tests;
#[cfg(test)]
mod rtlab_tests;
#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod windows_tests;

//! The machinery of reading a result file: its errors, its bounds (file
//! size, threads, free-form JSON kept), the guess of a JSON's kind, and the
//! refusal of figures that cannot be.

use super::{Format, Run};
use std::path::Path;

/// A file that could not be read as a run.
#[derive(Debug)]
pub struct LoadError {
    /// The file.
    pub path: String,
    /// 1-based line (0 when the whole file is at fault).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
    /// What to do.
    pub hint: String,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.path, self.message)?;
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.path, self.line, self.column, self.message
            )?;
        }
        write!(f, "\n  hint: {}", self.hint)
    }
}

impl std::error::Error for LoadError {}

/// A problem at a place in a file, before the path is known.
#[derive(Debug)]
pub(crate) struct ParseError {
    pub(super) line: usize,
    pub(super) column: usize,
    pub(super) message: String,
    pub(super) hint: String,
}

impl ParseError {
    pub(super) fn new(line: usize, column: usize, message: impl Into<String>, hint: &str) -> Self {
        ParseError {
            line,
            column,
            message: message.into(),
            hint: hint.to_string(),
        }
    }

    /// A JSON reader's refusal of a `what` (`rtlab result`), at the
    /// place the reader stopped: a file that ends early is called cut
    /// short, a syntax error invalid JSON, and a valid JSON that is not a
    /// `what` says which part is wrong. Columns count from 1 (serde_json
    /// says 0 just after a line break).
    pub(super) fn from_json(e: &serde_json::Error, what: &str) -> Self {
        use serde_json::error::Category;
        let full = e.to_string();
        // serde_json ends its message with the place, given here apart.
        let why = full.rsplit_once(" at line ").map_or(full.as_str(), |p| p.0);
        let (message, hint) = match e.classify() {
            Category::Eof => (
                format!("truncated {what}: the JSON ends in the middle ({why})"),
                format!(
                    "the file was cut short (a copy or a run interrupted?): give the whole {what}"
                ),
            ),
            Category::Syntax => (
                format!("invalid JSON in this {what}: {why}"),
                format!("was the {what} edited by hand? give it as written"),
            ),
            Category::Data | Category::Io => (
                format!("not a valid {what}: {why}"),
                "was the file edited by hand, or written by another tool?".to_string(),
            ),
        };
        ParseError::new(e.line().max(1), e.column().max(1), message, &hint)
    }
}

impl ParseError {
    pub(super) fn located(self, path: &Path) -> LoadError {
        LoadError {
            path: path.display().to_string(),
            line: self.line,
            column: self.column,
            message: self.message,
            hint: self.hint,
        }
    }
}

/// `FILE@N` when FILE@N does not exist and FILE does: (FILE, N).
pub(super) fn window_of(path: &Path) -> Option<(std::path::PathBuf, usize)> {
    if path.exists() {
        return None;
    }
    let text = path.to_str()?;
    let (file, n) = text.rsplit_once('@')?;
    let n: usize = n.parse().ok().filter(|&n| n > 0)?;
    let file = std::path::PathBuf::from(file);
    file.exists().then_some((file, n))
}

/// Which JSON result `text` is, by the keys only each writes: rtlab's
/// (`schema`, `rtlab_version`, its first keys) or cyclictest's
/// (`file_version`, its first, or `thread`); None when none is there yet
/// (a file cut short after a few bytes).
pub(super) fn json_kind(text: &str) -> Option<Format> {
    let has = |key: &str| text.contains(&format!("\"{key}\""));
    if has("schema") || has("rtlab_version") {
        Some(Format::Rtlab)
    } else if has("file_version") || has("thread") {
        Some(Format::CyclictestJson)
    } else {
        None
    }
}

/// A JSON object of neither result: refused as cut short or invalid JSON
/// when it is, else as cyclictest's JSON without its keys.
pub(super) fn unknown_json(text: &str) -> Result<Run, ParseError> {
    const WHAT: &str = "JSON result (rtlab's or cyclictest's)";
    match serde_json::from_str::<serde::de::IgnoredAny>(text) {
        Err(e) => Err(ParseError::from_json(&e, WHAT)),
        Ok(_) => Err(ParseError::new(
            1,
            1,
            "a JSON object that is neither an rtlab result (no \"schema\") nor cyclictest's JSON (no \"thread\")",
            "give rtlab's --json result, cyclictest's --json file, cyclictest's -h output or a timer_threadNN.txt",
        )),
    }
}

/// Largest part of a result file kept as free-form JSON for the report
/// (rtlab's `system`, `plan`, `tuning`..., cyclictest's `sysinfo`): a real
/// one is a few kB; a bigger one is left unread (a JSON tree costs many
/// times its text) and the run says so.
pub const MAX_KEPT_JSON: usize = 256 << 10;

/// A free-form JSON part of a result file, read only when it is small.
#[derive(Debug, Default)]
pub(crate) struct Kept {
    /// The part, or null when it was left unread.
    value: serde_json::Value,
    /// Its size when it was left unread.
    dropped: Option<usize>,
}

impl std::ops::Deref for Kept {
    type Target = serde_json::Value;
    fn deref(&self) -> &serde_json::Value {
        &self.value
    }
}

impl Kept {
    /// Says what was left unread, if anything.
    pub(crate) fn note(&self, name: &str) -> Option<String> {
        self.dropped.map(|n| {
            format!("`{name}` ({n} bytes) was not read: larger than {MAX_KEPT_JSON} bytes")
        })
    }
}

impl<'de> serde::Deserialize<'de> for Kept {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let raw = Box::<serde_json::value::RawValue>::deserialize(d)?;
        let text = raw.get();
        if text.len() > MAX_KEPT_JSON {
            return Ok(Kept {
                value: serde_json::Value::Null,
                dropped: Some(text.len()),
            });
        }
        serde_json::from_str(text)
            .map(|value| Kept {
                value,
                dropped: None,
            })
            .map_err(D::Error::custom)
    }
}

/// Largest result file read: far more than any real run writes (a
/// cyclictest histogram of 100000 µs rows for 64 threads is about 45 MB).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// Most timer threads in one result (as in an experiment file).
pub const MAX_THREADS: usize = crate::config::MAX_TIMERS;

/// Reads at most [`MAX_FILE_BYTES`] of a result file (or a pipe): a bigger
/// one, a device or a directory is refused without reading on.
pub(super) fn read_bounded(path: &Path) -> Result<Vec<u8>, ParseError> {
    use crate::sys::infile::{self, InputError};
    infile::read_bounded(path, MAX_FILE_BYTES).map_err(|e| {
        let message = match e {
            InputError::TooBig(_) => format!(
                "larger than {} MiB: no result file is this big",
                MAX_FILE_BYTES >> 20
            ),
            e => e.to_string(),
        };
        ParseError::new(
            0,
            0,
            message,
            "give a result file: rtlab's --json, cyclictest's --json or -h output, or a timer_threadNN.txt",
        )
    })
}

/// Figures that cannot be (a count near 2^64, min above max, a mean outside
/// [min, max], a percentile outside them, a negative or non-finite value):
/// the file was altered or is not what it claims. None when all is well.
pub(super) fn implausible(run: &Run) -> Option<ParseError> {
    const HUGE: u64 = 1 << 62;
    let bad = |what: String| {
        Some(ParseError::new(
            0,
            0,
            format!("implausible figures: {what}"),
            "the file was altered or damaged; rtlab will not draw or compare numbers that cannot be",
        ))
    };
    for t in &run.threads {
        let s = &t.stats;
        let name = &t.name;
        if s.samples >= HUGE || s.beyond_histogram.is_some_and(|b| b >= HUGE) {
            return bad(format!("{name}: {} samples", s.samples));
        }
        if s.overruns.is_some_and(|o| o > s.samples) {
            return bad(format!("{name}: more overruns than samples"));
        }
        if let (Some(min), Some(max)) = (s.min_ns, s.max_ns)
            && min > max
        {
            return bad(format!("{name}: min {min} ns above max {max} ns"));
        }
        if let Some(mean) = s.mean_ns {
            let (lo, hi) = (
                s.min_ns.unwrap_or(0) as f64,
                s.max_ns.map_or(f64::MAX, |m| m as f64),
            );
            // The mean of truncated µs values may sit up to 1 µs below min.
            if !mean.is_finite() || mean < lo - 1000.0 || mean > hi + 1000.0 {
                return bad(format!("{name}: mean {mean} ns outside [min, max]"));
            }
        }
        if s.stddev_ns.is_some_and(|d| !d.is_finite() || d < 0.0) {
            return bad(format!("{name}: standard deviation {:?}", s.stddev_ns));
        }
        if let (Some(min), Some(max)) = (s.min_ns, s.max_ns)
            && let Some(q) = s.percentiles.iter().find(|q| {
                q.value_ns.is_some_and(|v| {
                    v.saturating_add(1000) < min || v > max.saturating_add(max / 100 + 1000)
                })
            })
        {
            return bad(format!("{name}: {} outside [min, max]", q.name));
        }
        if s.samples > 0 && t.distribution.total() > s.samples {
            return bad(format!(
                "{name}: the histogram holds {} samples, more than the {} taken",
                t.distribution.total(),
                s.samples
            ));
        }
    }
    None
}

/// The preemption model named in a `uname -v` string.
pub(crate) fn preemption_from_version(version: &str) -> Option<String> {
    ["PREEMPT_RT", "PREEMPT_DYNAMIC", "PREEMPT_LAZY", "PREEMPT"]
        .into_iter()
        .find(|m| version.split_whitespace().any(|w| w == *m))
        .map(str::to_string)
}

//! LAVA's test cases of a finished run, as Linaro's rt-tests parser
//! (test-definitions, `automated/lib/parse_rt_tests_results.py`) makes
//! them of cyclictest's results, in two forms:
//!
//! - as it is today ([`linaro`]): every figure `pass` with the JSON's own
//!   value, then the test's line from the return code; what `rtlab lava`
//!   prints without `--max-latency`;
//! - judged ([`cases`], `--max-latency`): per timer thread N, in the order
//!   of N, `tN-min-latency`, `tN-avg-latency` and `tN-max-latency`, each
//!   with its figure in whole µs. Only the max can fail: it fails when it
//!   is at or above the threshold (`MAX_LATENCY`, the parser's judgement
//!   until 2021, `int(max) >= int(MAX_LATENCY)`).
//!
//! The judged figures are cyclictest's `T:` lines': whole µs truncated, as
//! cyclictest truncates each sample and as `rtlab cyclictest` prints them
//! (rtlab's ns figures divided by 1000, the mean first cut to whole ns):
//! the avg is the `T:` line's `Avg` (a whole number), not the two decimals
//! of cyclictest's `--json`.
//!
//! A thread without samples fails its three judged cases, without figures;
//! a figure the input does not hold (a windows file keeps the max alone)
//! has its case skipped (`skip`, LAVA's word), without a figure.
//!
//! Names are made here from thread numbers and, with several runs, a
//! prefix of letters, digits, `.`, `_` and `-` only: nothing a result file
//! holds reaches a name or a shell as it is.

use crate::dataset::{Measures, Run, Thread};

/// A test case's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// `pass`.
    Pass,
    /// `fail`.
    Fail,
    /// `skip`: the input does not hold the figure (a windows file keeps
    /// the max alone).
    Skip,
}

impl Verdict {
    /// LAVA's word for it.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Skip => "skip",
        }
    }
}

/// One LAVA test case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// `t0-max-latency` (with several runs, `LABEL-t0-max-latency`).
    pub name: String,
    /// Its result.
    pub verdict: Verdict,
    /// Its figure as the line writes it (`52`, `17.98`); None for a thread
    /// that measured nothing, a figure the input does not hold, or the
    /// test's own line.
    pub measurement: Option<String>,
    /// The figure's units (`us`; pi_stress's inversions: `count`).
    pub units: &'static str,
    /// An empty line follows (the parser's `inversion` line ends so).
    pub blank_after: bool,
}

impl Case {
    /// The result line, as Linaro's parser prints it and its
    /// `send-to-lava.sh` reads it: `t0-max-latency fail 52 us` (`NAME fail`
    /// or `NAME skip` without a figure), with the empty line that follows
    /// it when there is one.
    pub fn line(&self) -> String {
        let mut line = match &self.measurement {
            Some(v) => format!("{} {} {v} {}", self.name, self.verdict.word(), self.units),
            None => format!("{} {}", self.name, self.verdict.word()),
        };
        if self.blank_after {
            line.push('\n');
        }
        line
    }

    /// The arguments of LAVA's `lava-test-case` helper for it, one item
    /// each: `NAME --result R [--measurement V --units U]`.
    pub fn helper_args(&self) -> Vec<String> {
        let mut args = vec![
            self.name.clone(),
            "--result".to_string(),
            self.verdict.word().to_string(),
        ];
        if let Some(v) = &self.measurement {
            args.extend(["--measurement".into(), v.clone()]);
            args.extend(["--units".into(), self.units.into()]);
        }
        args
    }
}

/// The test cases of a run, and the threads left out with the reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cases {
    /// Three per timer thread, in the order of the threads' numbers.
    pub cases: Vec<Case>,
    /// `I0: an IRQ-to-task measurement, not a cyclictest thread`.
    pub left_out: Vec<String>,
}

/// The test cases of `run`: `max_latency_us` is `MAX_LATENCY` (None: every
/// case passes); `prefix` starts every name (see [`prefix`]).
pub fn cases(run: &Run, max_latency_us: Option<u64>, prefix: Option<&str>) -> Cases {
    let mut out = Cases::default();
    let mut numbered: Vec<(u64, &Thread)> = Vec::new();
    for t in &run.threads {
        match number(t) {
            Ok(n) if numbered.iter().any(|(m, _)| *m == n) => out
                .left_out
                .push(format!("{}: a second thread numbered {n}", t.name)),
            Ok(n) => numbered.push((n, t)),
            Err(why) => out.left_out.push(format!("{}: {why}", t.name)),
        }
    }
    numbered.sort_by_key(|(n, _)| *n);
    let head = prefix.map(|p| format!("{p}-")).unwrap_or_default();
    for (n, t) in numbered {
        let [min, avg, max] = figures(t);
        let over = max.zip(max_latency_us).is_some_and(|(m, limit)| m >= limit);
        let nothing = t.stats.samples == 0;
        if nothing {
            out.left_out
                .push(format!("{}: no samples: its cases fail", t.name));
        }
        for (what, value, judged) in [
            ("min", min, Verdict::Pass),
            ("avg", avg, Verdict::Pass),
            ("max", max, if over { Verdict::Fail } else { Verdict::Pass }),
        ] {
            let verdict = match value {
                _ if nothing => Verdict::Fail,
                Some(_) => judged,
                None => {
                    out.left_out.push(format!(
                        "{}: no {what} in this file: its case is skipped",
                        t.name
                    ));
                    Verdict::Skip
                }
            };
            out.cases.push(Case {
                name: format!("{head}t{n}-{what}-latency"),
                verdict,
                measurement: value.filter(|_| !nothing).map(|v| v.to_string()),
                units: "us",
                blank_after: false,
            });
        }
    }
    out
}

/// The number cyclictest gives the thread (`T: 3` for rtlab's `T3`), or
/// why it has none.
fn number(t: &Thread) -> Result<u64, &'static str> {
    match t.measures {
        Measures::WakeUp => {}
        Measures::IrqToTask => return Err("an IRQ-to-task measurement, not a cyclictest thread"),
        Measures::TimerIrq => return Err("a timer's IRQ side, not a cyclictest thread"),
    }
    let digits = t.name.strip_prefix('T').unwrap_or_default();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err("not a timer thread T<N>");
    }
    digits.parse().map_err(|_| "a thread number out of range")
}

/// Min, avg and max in whole µs, truncated; each None when the input does
/// not hold it (or holds a mean that is not a finite, non-negative number).
fn figures(t: &Thread) -> [Option<u64>; 3] {
    let s = &t.stats;
    let mean = s.mean_ns.filter(|m| m.is_finite() && *m >= 0.0);
    // `as` saturates: a mean past u64 (which no loader lets through) is
    // the largest figure, never a panic.
    [
        s.min_ns.map(|v| v / 1000),
        mean.map(|m| m as u64 / 1000),
        s.max_ns.map(|v| v / 1000),
    ]
}

/// A run's label as the start of its cases' names when several runs are
/// reported: letters, digits, `.`, `_` and `-` kept, anything else `_`, at
/// most 64 characters.
pub fn prefix(label: &str) -> String {
    let kept: String = label
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if kept.is_empty() { "run".into() } else { kept }
}

pub mod linaro;

#[cfg(test)]
mod tests;

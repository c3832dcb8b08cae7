//! The lines of Linaro's rt-tests parser as it is today (test-definitions,
//! `automated/lib/parse_rt_tests_results.py`, since 2021): for each thread
//! `0` to `num_threads - 1` (its `receiver` in its place when it has one)
//! `tN-min-latency pass V us`, `tN-avg-latency`, `tN-max-latency`, each V
//! the JSON's value as Python prints it; then rtla's IRQs (`iN-…`) when
//! `num_irqs` is there, else pi_stress's `inversion pass N count` followed
//! by an empty line (the parser's `print` of a text that ends in `\n`);
//! then `TESTNAME pass`, or `fail` when `return_code` is not 0. Every
//! figure passes: that parser judges nothing but the return code.
//!
//! An rt-tests JSON file is read as the file wrote it
//! ([`crate::dataset::rt_tests`]); any other result is given the figures
//! `rtlab cyclictest --json` would have written for it (min and max whole
//! µs truncated, avg in µs rounded to two decimals, return code 0), so the
//! lines equal the parser's on that file.

use super::{Case, Verdict};
use crate::dataset::Run;
use crate::dataset::rt_tests::{Figures, RtTestsJson, python_float, python_text};

/// One thread's (or IRQ's) number and its min, avg and max as the parser
/// prints them (None: not in the file).
pub type Numbered = (u64, [Option<String>; 3]);

/// What the parser reads of one document, each figure as it prints it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Document {
    /// Per thread, in the order of its number: min, avg, max.
    pub threads: Vec<Numbered>,
    /// Per IRQ (rtla timerlat's), in the order of its number.
    pub irqs: Option<Vec<Numbered>>,
    /// pi_stress's inversions (printed only without IRQs).
    pub inversion: Option<String>,
    /// Whether `return_code` is 0.
    pub passed: bool,
}

/// Why a document cannot give the parser's lines (where the parser itself
/// stops with a Python exception).
pub type Refused = String;

/// The parser's view of an rt-tests JSON document.
pub fn from_rt_tests(doc: &RtTestsJson) -> Result<Document, Refused> {
    let mut out = Document::default();
    if let Some(n) = &doc.num_threads {
        let n = count(n, "num_threads")?;
        out.threads = numbered(n, &doc.thread, "thread", true)?;
    }
    match &doc.num_irqs {
        Some(n) => out.irqs = Some(numbered(count(n, "num_irqs")?, &doc.irq, "irq", false)?),
        None => out.inversion = figure(&doc.inversion),
    }
    let code = doc
        .return_code
        .as_ref()
        .ok_or("no return_code: the parser stops there (KeyError)")?;
    out.passed = count(code, "return_code")? == 0;
    Ok(out)
}

/// Entries `0` to `n - 1` of `map`, each its receiver's figures when it has
/// one (threads only, as the parser reads them).
fn numbered(
    n: u64,
    map: &std::collections::BTreeMap<String, Figures>,
    what: &str,
    receiver: bool,
) -> Result<Vec<Numbered>, Refused> {
    // Never more than the file holds: a missing entry ends the parser.
    let mut out = Vec::with_capacity(map.len().min(n as usize));
    for i in 0..n {
        let f = map.get(&i.to_string()).ok_or_else(|| {
            format!("{what} {i} missing (num_{what}s says {n}): the parser stops there (KeyError)")
        })?;
        let f = match (&f.receiver, receiver) {
            (Some(r), true) => r,
            _ => f,
        };
        out.push((i, [figure(&f.min), figure(&f.avg), figure(&f.max)]));
    }
    Ok(out)
}

/// A value as the parser prints it; a text only when it reads as a number
/// (the parser would print any text: a line feed or a word there would
/// make lines, or a measurement, of the file's choosing).
fn figure(v: &Option<serde_json::Value>) -> Option<String> {
    let v = v.as_ref()?;
    if let serde_json::Value::String(s) = v {
        let numeric = |c: char| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E');
        let plain = !s.is_empty() && s.len() <= 40 && s.chars().all(numeric);
        return plain.then(|| s.clone());
    }
    python_text(v)
}

/// Python's `int(value)` for a count or code: an integer, an integral
/// float or a text of digits.
fn count(v: &serde_json::Value, key: &str) -> Result<u64, Refused> {
    let bad = || format!("{key} {v} is not a whole number the parser reads");
    match v {
        serde_json::Value::Number(n) => n
            .as_u64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                    .map(|f| f as u64)
            })
            .ok_or_else(bad),
        serde_json::Value::String(s) => s.trim().parse().map_err(|_| bad()),
        _ => Err(bad()),
    }
}

/// The figures `rtlab cyclictest --json` writes for `run`'s timer threads
/// (numbered `T<N>`; any other measurement is left out with its reason).
pub fn from_run(run: &Run) -> (Document, Vec<String>) {
    let mut left_out = Vec::new();
    let mut threads = Vec::new();
    for t in &run.threads {
        match super::number(t) {
            Ok(n) if threads.iter().any(|(m, _)| *m == n) => {
                left_out.push(format!("{}: a second thread numbered {n}", t.name))
            }
            Ok(n) => {
                let s = &t.stats;
                let mean = s.mean_ns.filter(|m| m.is_finite() && *m >= 0.0);
                // As report::cyclictest::json writes them (µs, not --nsecs).
                let avg = mean.map(|m| python_float((m / 1000.0 * 100.0).round() / 100.0));
                let whole = |v: Option<u64>| v.map(|v| (v / 1000).to_string());
                threads.push((n, [whole(s.min_ns), avg, whole(s.max_ns)]));
            }
            Err(why) => left_out.push(format!("{}: {why}", t.name)),
        }
    }
    threads.sort_by_key(|(n, _)| *n);
    let doc = Document {
        threads,
        irqs: None,
        inversion: None,
        passed: true,
    };
    (doc, left_out)
}

/// The parser's lines of `doc` as cases: `test` is the name its script
/// gives (`cyclictest`), `prefix` starts every name (several runs).
pub fn cases(doc: &Document, test: &str, prefix: Option<&str>) -> (Vec<Case>, Vec<String>) {
    let head = prefix.map(|p| format!("{p}-")).unwrap_or_default();
    let mut cases = Vec::new();
    let mut left_out = Vec::new();
    let mut figures = |tag: char, list: &[Numbered]| {
        for (n, values) in list {
            for (what, value) in ["min", "avg", "max"].iter().zip(values) {
                let name = format!("{head}{tag}{n}-{what}-latency");
                if value.is_none() {
                    left_out.push(format!("{name}: no figure in this file: skipped"));
                }
                cases.push(Case {
                    verdict: if value.is_some() {
                        Verdict::Pass
                    } else {
                        Verdict::Skip
                    },
                    measurement: value.clone(),
                    units: "us",
                    name,
                    blank_after: false,
                });
            }
        }
    };
    figures('t', &doc.threads);
    if let Some(irqs) = &doc.irqs {
        figures('i', irqs);
    }
    if let (None, Some(n)) = (&doc.irqs, &doc.inversion) {
        cases.push(Case {
            name: format!("{head}inversion"),
            verdict: Verdict::Pass,
            measurement: Some(n.clone()),
            units: "count",
            blank_after: true,
        });
    }
    cases.push(Case {
        name: format!("{head}{test}"),
        verdict: if doc.passed {
            Verdict::Pass
        } else {
            Verdict::Fail
        },
        measurement: None,
        units: "",
        blank_after: false,
    });
    (cases, left_out)
}

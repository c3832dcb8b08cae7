//! `rtlab compare`: one column per run (or per thread), every statistic and
//! the context that explains differences, each value with its difference
//! against the first column; and the `--fail-if` gate that turns a
//! regression into an exit status for CI pipelines.

use crate::dataset::{Context, Format, Metric, Run, Stats};
use serde::Serialize;
use std::fmt::Write as _;

/// One column of the comparison.
#[derive(Debug, Clone)]
pub struct Column {
    /// Run label, with the thread when columns are per thread (`idle T1`).
    pub label: String,
    /// The file.
    pub path: String,
    /// Its format.
    pub format: Format,
    /// What explains it.
    pub context: Context,
    /// Its statistics.
    pub stats: Stats,
    /// The resolution of its latencies (ns).
    pub resolution_ns: u64,
    /// The finer resolution it had before it was truncated to the others'.
    pub truncated_from_ns: Option<u64>,
    /// Its buckets' upper bounds, when its latencies are known to a bucket
    /// only (a windows file, or a run put in a windows file's buckets).
    pub buckets_ns: Option<Vec<u64>>,
    /// The timer interrupts' side (`irq_latency`) of a run's column, shown
    /// in rows of their own (a thread column shows its own figures).
    pub irq: Option<Stats>,
}

/// The figures of the interrupt side shown beside the threads' (rtla's
/// "IRQ" and "Thr" columns).
const IRQ_METRICS: [Metric; 5] = [
    Metric::Samples,
    Metric::Median,
    Metric::P99,
    Metric::P999,
    Metric::Max,
];

/// The columns for `runs`: one per run (all its threads together), or one
/// per thread. Runs are compared at the coarsest resolution among them: next
/// to cyclictest's whole µs, rtlab's exact ns are truncated the way
/// cyclictest truncates, so that no difference shown is an artefact of it.
///
/// Beside a windows file, whose latencies are known to a bucket only, every
/// run is put in its buckets (those of the first windows file), so that
/// percentiles are bucket bounds in every column.
pub fn columns(runs: &[Run], per_thread: bool) -> Vec<Column> {
    let coarsest = runs.iter().map(|r| r.resolution_ns).max().unwrap_or(1);
    let buckets = runs.iter().find_map(|r| r.buckets_ns.clone());
    let mut out = Vec::new();
    for run in runs {
        let run = &match &buckets {
            Some(b) => run.bucketed_to(b),
            None => run.truncated_to(coarsest),
        };
        let column = |label: String, stats: &Stats| Column {
            label,
            path: run.path.clone(),
            format: run.format,
            context: run.context.clone(),
            stats: stats.clone(),
            resolution_ns: run.resolution_ns,
            truncated_from_ns: run.truncated_from_ns,
            buckets_ns: run.buckets_ns.clone(),
            irq: None,
        };
        if per_thread && run.threads.len() > 1 {
            for t in &run.threads {
                out.push(column(format!("{} {}", run.label, t.name), &t.stats));
            }
        } else {
            out.push(Column {
                irq: run.timer_irq(),
                ..column(run.label.clone(), &run.all)
            });
        }
    }
    out
}

/// How a `--fail-if` bound is read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// `+10%`: change relative to the first column (a fraction).
    Relative(f64),
    /// `+5us`, `-3`: change against the first column (ns or count).
    Delta(f64),
    /// `50us`, `0`: the value itself, in every column (ns or count).
    Absolute(f64),
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `>`
    Greater,
    /// `>=`
    GreaterEq,
    /// `<`
    Less,
    /// `<=`
    LessEq,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Greater => a > b,
            Op::GreaterEq => a >= b,
            Op::Less => a < b,
            Op::LessEq => a <= b,
        }
    }
}

/// One `--fail-if` condition: the run fails when it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    /// As the user wrote it.
    pub text: String,
    /// Which statistic.
    pub metric: Metric,
    /// How it is compared.
    pub op: Op,
    /// Against what.
    pub bound: Bound,
}

const CONDITION_HINT: &str = "write METRIC OP VALUE, e.g. 'p99>+10%' (relative to the first run), \
'max>+20us' (change against the first run) or 'p99.99>100us' (every run); metrics: \
samples min mean median stddev p90 p99 p99.9 p99.99 max overruns beyond_histogram \
deadline_misses; \
units ns, us, ms (latencies, default us)";

impl std::str::FromStr for Condition {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        // Every refusal names the column (in characters) where it went wrong.
        let column_of = |part: &str| {
            let offset = (part.as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
            text.get(..offset).map_or(1, |s| s.chars().count() + 1)
        };
        let fail_at = |part: &str, why: String| {
            format!(
                "column {}: {why}\n  hint: {CONDITION_HINT}",
                column_of(part)
            )
        };
        let at = text.find(['<', '>']).ok_or_else(|| {
            fail_at(
                &text[text.len()..],
                format!("{text:?} has no comparison (> >= < <=)"),
            )
        })?;
        let name = text[..at].trim();
        let fail = |why: String| fail_at(name, why);
        let metric = Metric::parse(name).ok_or_else(|| {
            let near = Metric::ALL
                .iter()
                .map(|m| m.name())
                .min_by_key(|m| strsim::levenshtein(m, &name.to_ascii_lowercase()))
                .unwrap_or("p99");
            fail(format!("unknown metric {name:?} (did you mean {near}?)"))
        })?;
        let rest = &text[at..];
        let (op, value) = if let Some(v) = rest.strip_prefix(">=") {
            (Op::GreaterEq, v)
        } else if let Some(v) = rest.strip_prefix("<=") {
            (Op::LessEq, v)
        } else if let Some(v) = rest.strip_prefix('>') {
            (Op::Greater, v)
        } else if let Some(v) = rest.strip_prefix('<') {
            (Op::Less, v)
        } else {
            return Err(fail_at(rest, format!("{text:?}: bad comparison")));
        };
        let value = value.trim();
        let fail = |why: String| fail_at(value, why);
        let signed = value.starts_with(['+', '-']);
        let (number, unit) = value
            .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '+' | '-')))
            .map_or((value, ""), |i| value.split_at(i));
        let n: f64 = number
            .parse()
            .ok()
            .filter(|n: &f64| n.is_finite())
            .ok_or_else(|| fail(format!("{value:?} is not a number")))?;
        let scale = match (unit.trim(), metric.is_latency()) {
            ("%", _) if signed => {
                return Ok(Condition {
                    text: text.to_string(),
                    metric,
                    op,
                    bound: Bound::Relative(n / 100.0),
                });
            }
            ("%", _) => return Err(fail(format!("{value:?}: a percentage needs a sign (+10%)"))),
            ("", true) | ("us" | "µs", true) => 1_000.0,
            ("ns", true) => 1.0,
            ("ms", true) => 1_000_000.0,
            ("", false) => 1.0,
            (u, true) => return Err(fail(format!("unknown unit {u:?}"))),
            (u, false) => {
                return Err(fail(format!("{} is a count: no unit {u:?}", metric.name())));
            }
        };
        let bound = if signed {
            Bound::Delta(n * scale)
        } else {
            Bound::Absolute(n * scale)
        };
        Ok(Condition {
            text: text.to_string(),
            metric,
            op,
            bound,
        })
    }
}

/// The outcome of one condition on one column.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// The condition as written.
    pub condition: String,
    /// The column it was checked on.
    pub column: String,
    /// Whether the condition held (the gate fails).
    pub failed: bool,
    /// In words.
    pub reason: String,
}

/// Checks every condition on every column it applies to.
pub fn gate(columns: &[Column], conditions: &[Condition]) -> Vec<Verdict> {
    let mut out = Vec::new();
    let Some(first) = columns.first() else {
        return out;
    };
    for c in conditions {
        let from = match c.bound {
            Bound::Absolute(_) => 0,
            _ => 1,
        };
        if from == 1 && columns.len() < 2 {
            // A change needs a baseline and a run: a CI job that lost one
            // of them must go red, not pass on nothing checked.
            out.push(Verdict {
                condition: c.text.clone(),
                column: first.label.clone(),
                failed: true,
                reason: format!(
                    "{} compares each run with the first, but only one run ({}) was given: nothing to compare",
                    c.text, first.label
                ),
            });
            continue;
        }
        for col in &columns[from..] {
            let (failed, reason) = judge(c, first, col);
            out.push(Verdict {
                condition: c.text.clone(),
                column: col.label.clone(),
                failed,
                reason,
            });
        }
    }
    out
}

/// Whether condition `c` fails on `col` (against `first`, the baseline),
/// and why, in words.
fn judge(c: &Condition, first: &Column, col: &Column) -> (bool, String) {
    let Some(v) = c.metric.value(&col.stats) else {
        return (
            true,
            format!(
                "{} of {} is unknown (beyond its histogram, or not in its format)",
                c.metric.name(),
                col.label
            ),
        );
    };
    let b = match (c.bound, c.metric.value(&first.stats)) {
        (Bound::Absolute(_), _) => 0.0,
        (_, Some(b)) => b,
        (_, None) => {
            return (
                true,
                format!(
                    "{} of {} (the baseline) is unknown",
                    c.metric.name(),
                    first.label
                ),
            );
        }
    };
    let shown = show_unit(c.metric, Some(v));
    let against = |change: String| {
        format!(
            "{} {} is {shown}, {change} against {} {}",
            col.label,
            c.metric.name(),
            first.label,
            show_unit(c.metric, Some(b))
        )
    };
    match c.bound {
        Bound::Absolute(limit) => (
            c.op.holds(v, limit),
            format!("{} {} is {shown}", col.label, c.metric.name()),
        ),
        Bound::Delta(limit) => (
            c.op.holds(v - b, limit),
            against(show_delta(c.metric, v - b)),
        ),
        Bound::Relative(limit) => {
            let change = relative(v, b);
            (c.op.holds(change, limit), against(show_relative(change)))
        }
    }
}

/// (v - b) / b, infinite when b is 0 and v is not.
fn relative(v: f64, b: f64) -> f64 {
    if b == 0.0 {
        if v == 0.0 {
            0.0
        } else {
            f64::INFINITY.copysign(v)
        }
    } else {
        (v - b) / b
    }
}

/// A value for display: µs with one decimal for latencies, counts as is.
pub fn show(metric: Metric, value: Option<f64>) -> String {
    match value {
        // Deadline misses are task latency's: a timer thread has none to
        // count, which is not an unknown.
        None if metric == Metric::DeadlineMisses => "-".to_string(),
        None => "?".to_string(),
        Some(v) if metric.is_latency() => format!("{:.1}", v / 1000.0),
        // A share read at 99.9% and finer.
        Some(v) if metric == Metric::NoiseAvailable => format!("{v:.3}"),
        Some(v) => format!("{v:.0}"),
    }
}

/// [`show`] with the unit of latencies.
fn show_unit(metric: Metric, value: Option<f64>) -> String {
    let s = show(metric, value);
    if metric.is_latency() && value.is_some() {
        s + " µs"
    } else {
        s
    }
}

fn show_delta(metric: Metric, d: f64) -> String {
    if metric.is_latency() {
        format!("{:+.1} µs", d / 1000.0)
    } else if metric == Metric::NoiseAvailable {
        format!("{d:+.3}")
    } else {
        format!("{d:+.0}")
    }
}

fn show_relative(r: f64) -> String {
    if r.is_infinite() {
        if r > 0.0 {
            "+∞%".into()
        } else {
            "-∞%".into()
        }
    } else {
        format!("{:+.1}%", r * 100.0)
    }
}

/// The cell of `metric` in `col`, with its difference against `first`.
fn cell(metric: Metric, col: &Column, first: Option<&Column>) -> String {
    let v = metric.value(&col.stats);
    let mut s = show(metric, v);
    if let (Some(first), Some(v)) = (first, v)
        && let Some(b) = metric.value(&first.stats)
    {
        s.push_str(&format!(" ({})", diff_text(metric, v, b)));
    }
    s
}

fn diff_text(metric: Metric, v: f64, b: f64) -> String {
    // Counts read best as a change in number (overruns 1 → 3: +2).
    if b == 0.0 || !metric.is_latency() {
        show_delta(metric, v - b)
    } else {
        show_relative(relative(v, b))
    }
}

/// `1 ns`, `1 µs`, `10 µs`.
fn resolution_name(ns: u64) -> String {
    if ns >= 1_000 && ns.is_multiple_of(1_000) {
        format!("{} µs", ns / 1_000)
    } else {
        format!("{ns} ns")
    }
}

/// A context row: its name and how to read it from a column.
type ContextRow = (&'static str, fn(&Column) -> Option<String>);

/// The rows of the table: (name, one cell per column).
pub fn rows(columns: &[Column]) -> Vec<(String, Vec<String>)> {
    let mut rows = Vec::new();
    let context: [ContextRow; 10] = [
        ("format", |c| Some(c.format.name().to_string())),
        ("resolution", |c| {
            if let Some(b) = &c.buckets_ns {
                let shown: Vec<String> =
                    b.iter().take(4).map(|ns| (ns / 1000).to_string()).collect();
                let from = c
                    .truncated_from_ns
                    .map_or_else(String::new, |f| format!(" (from {})", resolution_name(f)));
                return Some(format!("buckets ≤{}… µs{from}", shown.join(",")));
            }
            Some(match c.truncated_from_ns {
                Some(from) => format!(
                    "{} (truncated from {})",
                    resolution_name(c.resolution_ns),
                    resolution_name(from)
                ),
                None => resolution_name(c.resolution_ns),
            })
        }),
        ("host", |c| c.context.host.clone()),
        ("kernel", |c| c.context.kernel.clone()),
        ("preemption", |c| c.context.preemption.clone()),
        ("isolation", |c| c.context.isolation.clone()),
        ("load", |c| c.context.load.clone()),
        ("governor", |c| c.context.governor.clone()),
        ("started", |c| c.context.started.clone()),
        ("duration (s)", |c| {
            c.context.duration_s.map(|d| format!("{d:.1}"))
        }),
    ];
    let mut context = context.to_vec();
    // The hypervisor's share of a late wake-up on a VM, when a run says.
    if columns.iter().any(|c| c.context.steal.is_some()) {
        context.push(("steal", |c| c.context.steal.clone()));
    }
    if columns.iter().any(|c| c.context.lower_bounds.is_some()) {
        context.push(("IRQ-to-task lower bounds", |c| {
            Some(c.context.lower_bounds.clone().unwrap_or_else(|| "-".into()))
        }));
    }
    for (name, get) in context {
        rows.push((
            name.to_string(),
            columns
                .iter()
                .map(|c| get(c).unwrap_or_else(|| "?".to_string()))
                .collect(),
        ));
    }
    // Runs that measured no latency (an audit, noise alone) have no
    // latency figures to set side by side: one row says so, not a column
    // of `?`. The noise rows are shown when a column has noise threads.
    let latency = !columns.iter().all(|c| c.stats.samples == 0);
    let noise = columns.iter().any(|c| c.stats.noise.is_some());
    if !latency {
        rows.push((
            "latency".to_string(),
            columns.iter().map(|_| "not measured".to_string()).collect(),
        ));
        if !noise {
            return rows;
        }
    }
    // Deadline misses are counted by task latency alone: their row is
    // shown when a column has them.
    let misses = columns.iter().any(|c| c.stats.deadline_misses.is_some());
    for m in Metric::ALL {
        let shown = match m {
            Metric::DeadlineMisses => misses,
            _ if m.is_noise() => noise,
            _ => latency,
        };
        if !shown {
            continue;
        }
        let name = if m.is_latency() {
            format!("{} (µs)", m.name())
        } else {
            m.name().to_string()
        };
        rows.push((
            name,
            columns
                .iter()
                .enumerate()
                .map(|(i, c)| cell(m, c, (i > 0).then(|| &columns[0])))
                .collect(),
        ));
    }
    if columns.iter().any(|c| c.irq.is_some()) {
        rows.extend(irq_rows(columns));
    }
    rows
}

/// The interrupt side's rows (`irq p99 (µs)`), each against the first
/// column's interrupt side; `-` where a run did not measure it.
fn irq_rows(columns: &[Column]) -> Vec<(String, Vec<String>)> {
    let as_column = |c: &Column| {
        c.irq.as_ref().map(|s| Column {
            stats: s.clone(),
            irq: None,
            ..c.clone()
        })
    };
    let first = columns.first().and_then(as_column);
    IRQ_METRICS
        .iter()
        .map(|&m| {
            let name = match m.is_latency() {
                true => format!("irq {} (µs)", m.name()),
                false => format!("irq {}", m.name()),
            };
            let cells = columns
                .iter()
                .enumerate()
                .map(|(i, c)| match as_column(c) {
                    Some(irq) => cell(m, &irq, first.as_ref().filter(|_| i > 0)),
                    None => "-".to_string(),
                })
                .collect();
            (name, cells)
        })
        .collect()
}

/// The table as aligned text.
pub fn text(columns: &[Column]) -> String {
    let mut table = vec![(
        String::new(),
        columns.iter().map(|c| c.label.clone()).collect::<Vec<_>>(),
    )];
    table.extend(rows(columns));
    let mut out = aligned(&table, columns.len());
    if columns.iter().any(|c| c.buckets_ns.is_some()) {
        out.push_str(
            "note: a windows file knows its latencies to a bucket only: every column is put in \
             its buckets, and percentiles are the buckets' upper bounds\n",
        );
    }
    out
}

/// One source in the audits side by side.
#[derive(Debug, Clone, Serialize)]
pub struct AuditSource {
    /// Whether it belongs on a well-isolated CPU.
    pub belongs: bool,
    /// Its kind (`irq`, `task`...).
    pub kind: crate::trace::audit::SourceKind,
    /// What it is (threads by name, every CPU audited together).
    pub what: String,
    /// Per run: (count, total ns), None when it did not come.
    pub runs: Vec<Option<(u64, u64)>>,
}

/// The isolation audits of several runs side by side.
#[derive(Debug, Clone, Serialize)]
pub struct AuditComparison {
    /// The runs' labels.
    pub labels: Vec<String>,
    /// Per run: how many sources do not belong (None: no audit).
    pub intruders: Vec<Option<usize>>,
    /// Every source, those that do not belong first, most time first.
    pub sources: Vec<AuditSource>,
    /// Each promise (`partition rt (CPU 1)`) per run: `kept`, `broken`,
    /// `not made`, or None (no audit, or not audited on that CPU).
    pub promises: Vec<(String, Vec<Option<&'static str>>)>,
}

/// The isolation audits of runs side by side, when one of them has one.
pub fn audits(runs: &[Run]) -> Option<AuditComparison> {
    use std::collections::BTreeMap;
    if runs.iter().all(|r| r.details.audit.is_none()) {
        return None;
    }
    type Key = (bool, crate::trace::audit::SourceKind, String);
    let mut sources: BTreeMap<Key, Vec<Option<(u64, u64)>>> = BTreeMap::new();
    let mut promises: BTreeMap<String, Vec<Option<&'static str>>> = BTreeMap::new();
    let mut intruders = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let Some(a) = run
            .details
            .audit
            .as_ref()
            .filter(|a| a.unavailable.is_none())
        else {
            intruders.push(None);
            continue;
        };
        intruders.push(Some(a.intruders().count()));
        for r in &a.rows {
            let cells = sources
                .entry((r.belongs, r.kind, without_pid(&r.what)))
                .or_insert_with(|| vec![None; runs.len()]);
            let (n, ns) = cells[i].unwrap_or((0, 0));
            cells[i] = Some((n.saturating_add(r.count), ns.saturating_add(r.total_ns)));
        }
        for p in &a.promises {
            promises
                .entry(format!("{} (CPU {})", p.promise, p.cpu))
                .or_insert_with(|| vec![None; runs.len()])[i] = Some(match p.kept {
                Some(true) => "kept",
                Some(false) => "broken",
                None => "not made",
            });
        }
    }
    let mut sources: Vec<AuditSource> = sources
        .into_iter()
        .map(|((belongs, kind, what), runs)| AuditSource {
            belongs,
            kind,
            what,
            runs,
        })
        .collect();
    sources.sort_by_key(|s| {
        let total: u64 = s.runs.iter().flatten().map(|c| c.1).sum();
        (s.belongs, std::cmp::Reverse(total), s.what.clone())
    });
    Some(AuditComparison {
        labels: runs.iter().map(|r| r.label.clone()).collect(),
        intruders,
        sources,
        promises: promises.into_iter().collect(),
    })
}

/// A source's name without the PIDs a run gives it (`wake-up of app (PID
/// 75)`): a program restarted between runs is the same row.
fn without_pid(what: &str) -> String {
    let mut out = String::with_capacity(what.len());
    let mut rest = what;
    while let Some(at) = rest.find(" (PID ") {
        let after = &rest[at + " (PID ".len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        out.push_str(&rest[..at]);
        if digits > 0 && after[digits..].starts_with(')') {
            rest = &after[digits + 1..];
        } else {
            out.push_str(" (PID ");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The audits side by side as aligned text (see [`audits`]): ✗ marks a
/// source that does not belong.
pub fn audit_text(runs: &[Run]) -> Option<String> {
    let c = audits(runs)?;
    let dash = || "-".to_string();
    let mut table = vec![("isolation audit".to_string(), c.labels.clone())];
    table.push((
        "sources that do not belong".into(),
        c.intruders
            .iter()
            .map(|n| n.map_or_else(dash, |n| n.to_string()))
            .collect(),
    ));
    for s in &c.sources {
        let mark = if s.belongs { "  " } else { "✗ " };
        table.push((
            format!(
                "{mark}{}: {}",
                crate::report::audit::kind_name(s.kind),
                s.what
            ),
            s.runs
                .iter()
                .map(|c| {
                    c.map_or_else(dash, |(n, ns)| format!("{n}× {:.1} µs", ns as f64 / 1000.0))
                })
                .collect(),
        ));
    }
    for (promise, cells) in &c.promises {
        table.push((
            format!("promise {promise}"),
            cells
                .iter()
                .map(|k| match k {
                    Some("broken") => "BROKEN".into(),
                    Some(k) => k.to_string(),
                    None => dash(),
                })
                .collect(),
        ));
    }
    Some(aligned(&table, runs.len()))
}

/// Rows of a name and cells, the cells right-aligned in columns.
fn aligned(table: &[(String, Vec<String>)], columns: usize) -> String {
    let width = |i: Option<usize>| {
        table
            .iter()
            .map(|(name, cells)| i.map_or(name, |i| &cells[i]).chars().count())
            .max()
            .unwrap_or(0)
    };
    let first = width(None);
    let first = first.min(72);
    let widths: Vec<usize> = (0..columns).map(|i| width(Some(i)).min(48)).collect();
    let mut out = String::new();
    for (name, cells) in table {
        let name: String = if name.chars().count() > first {
            name.chars().take(first - 1).chain(['…']).collect()
        } else {
            name.clone()
        };
        let _ = write!(out, "{name:<first$}");
        for (cell, w) in cells.iter().zip(&widths) {
            let cell: String = if cell.chars().count() > *w {
                cell.chars().take(w - 1).chain(['…']).collect()
            } else {
                cell.clone()
            };
            let _ = write!(out, "  {cell:>w$}");
        }
        out.push('\n');
    }
    out
}

/// The table in Markdown.
pub fn markdown(columns: &[Column]) -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let mut out = String::from("| |");
    for c in columns {
        let _ = write!(out, " {} |", esc(&c.label));
    }
    out.push_str("\n|---|");
    out.push_str(&"---:|".repeat(columns.len()));
    out.push('\n');
    for (name, cells) in rows(columns) {
        let _ = write!(out, "| {} |", esc(&name));
        for cell in cells {
            let _ = write!(out, " {} |", esc(&cell));
        }
        out.push('\n');
    }
    out
}

/// The comparison as JSON: every column with its statistics, context and
/// differences against the first, and the gate's verdicts.
pub fn json(columns: &[Column], verdicts: &[Verdict]) -> serde_json::Value {
    let cols: Vec<serde_json::Value> = columns
        .iter()
        .map(|c| {
            let mut metrics = serde_json::Map::new();
            let mut diff = serde_json::Map::new();
            for m in Metric::ALL {
                let v = m.value(&c.stats);
                let key = json_key(m);
                metrics.insert(key.clone(), serde_json::json!(v));
                if let (Some(v), Some(b)) = (v, m.value(&columns[0].stats)) {
                    let rel = relative(v, b);
                    diff.insert(
                        key,
                        serde_json::json!({
                            "absolute": v - b,
                            "relative": rel.is_finite().then_some(rel),
                        }),
                    );
                }
            }
            let irq = c.irq.as_ref().map(|s| {
                let pairs = IRQ_METRICS
                    .iter()
                    .map(|&m| (json_key(m), serde_json::json!(m.value(s))));
                serde_json::Value::Object(pairs.collect())
            });
            serde_json::json!({
                "label": c.label,
                "path": c.path,
                "format": c.format,
                "resolution_ns": c.resolution_ns,
                "truncated_from_ns": c.truncated_from_ns,
                "context": c.context,
                "metrics": metrics,
                "diff_vs_first": diff,
                "irq_metrics": irq,
            })
        })
        .collect();
    serde_json::json!({
        "columns": cols,
        "gate": verdicts,
        "failed": verdicts.iter().any(|v| v.failed),
    })
}

/// A metric's key in the JSON table: latencies in ns (`p99_ns`).
fn json_key(m: Metric) -> String {
    if m.is_latency() {
        format!("{}_ns", m.name())
    } else {
        m.name().to_string()
    }
}

#[cfg(test)]
mod tests;

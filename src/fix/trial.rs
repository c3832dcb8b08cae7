//! The proof: each remedy measured in interleaved rounds against the state
//! without it, kept only when it improves the chosen figures beyond the
//! spread of two runs of the same state (measured first), undone at once
//! otherwise; then the final state against the baseline, side by side, and
//! everything undone if the final state is worse. The measuring and the
//! system are behind [`Bench`], so that the decisions are tested alone.

use super::Cause;
use super::apply::UndoStep;
use super::remedies::Proposal;
use crate::result::RunResult;
use serde::{Deserialize, Serialize};

/// The figures of one measuring run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Figures {
    /// Samples over every timer thread.
    pub samples: u64,
    /// Wake-ups at or above the threshold, over every timer thread.
    pub over: u64,
    /// The worst timer thread's p99 (ns).
    pub p99_ns: u64,
    /// The worst timer thread's p99.9 (ns).
    pub p999_ns: u64,
    /// The largest latency (ns).
    pub max_ns: u64,
}

impl Figures {
    /// The figures of `run` (its timer threads).
    pub fn of(run: &RunResult) -> Figures {
        let pct = |name: &str| {
            run.timers
                .iter()
                .filter_map(|t| t.summary.percentiles.iter().find(|p| p.name == name))
                .map(|p| p.value_ns)
                .max()
                .unwrap_or(0)
        };
        Figures {
            samples: run.timers.iter().map(|t| t.summary.samples).sum(),
            over: run
                .timers
                .iter()
                .map(|t| t.spikes.over_threshold_total)
                .sum(),
            p99_ns: pct("p99"),
            p999_ns: pct("p99.9"),
            max_ns: run
                .timers
                .iter()
                .map(|t| t.summary.max_ns)
                .max()
                .unwrap_or(0),
        }
    }

    /// The value of `f`.
    pub fn get(&self, f: Figure) -> f64 {
        match f {
            Figure::Over => self.over as f64,
            Figure::P99 => self.p99_ns as f64,
            Figure::P999 => self.p999_ns as f64,
            Figure::Max => self.max_ns as f64,
        }
    }
}

/// A figure a remedy must improve (`--figure`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Figure {
    /// The count of wake-ups at or above the threshold.
    Over,
    /// p99.
    #[value(name = "p99")]
    #[serde(rename = "p99")]
    P99,
    /// p99.9.
    #[value(name = "p99.9")]
    #[serde(rename = "p99.9")]
    P999,
    /// The largest latency.
    Max,
}

impl Figure {
    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Figure::Over => "over",
            Figure::P99 => "p99",
            Figure::P999 => "p99.9",
            Figure::Max => "max",
        }
    }

    /// The smallest difference that can mean anything: counts vary by
    /// about their square root run to run, latencies are read to 1 µs.
    fn floor(self, reference: f64) -> f64 {
        match self {
            Figure::Over => (2.0 * reference.sqrt()).max(1.0),
            _ => 1000.0,
        }
    }
}

/// The mean of `f` over `runs`.
pub fn mean(runs: &[Figures], f: Figure) -> f64 {
    if runs.is_empty() {
        return 0.0;
    }
    runs.iter().map(|r| r.get(f)).sum::<f64>() / runs.len() as f64
}

/// The spread of two runs of the same state, per figure, relative to their
/// mean (0.1 = 10%).
pub fn spread(a: &Figures, b: &Figures, f: Figure) -> f64 {
    let (x, y) = (a.get(f), b.get(f));
    let m = (x + y) / 2.0;
    if m <= 0.0 { 0.0 } else { (x - y).abs() / m }
}

/// How a comparison of two states came out, figure by figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Better beyond the margin on at least one figure and worse on none.
    pub better: bool,
    /// Worse beyond the margin on at least one figure.
    pub worse: bool,
    /// Why, in words: each figure, its means and the margin.
    pub why: String,
}

/// The smallest and the largest `f` over `runs`.
fn bounds(runs: &[Figures], f: Figure) -> (f64, f64) {
    runs.iter()
        .map(|r| r.get(f))
        .fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)))
}

/// The range of `f` over `runs` (largest less smallest).
fn range(runs: &[Figures], f: Figure) -> f64 {
    let v = runs.iter().map(|r| r.get(f));
    let (lo, hi) = v.fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
    if runs.len() < 2 { 0.0 } else { hi - lo }
}

/// Compares `with` against `without` on `figures`: a figure is better (or
/// worse) when every round of one state is apart from every round of the
/// other and the means differ by more than the margin, the largest of:
/// the baseline's relative spread of that figure times the value without;
/// the range of the rounds of either state (runs of one state that differ
/// that much say the difference is noise); the figure's floor.
pub fn compare(
    without: &[Figures],
    with: &[Figures],
    figures: &[Figure],
    spreads: &[(Figure, f64)],
) -> Comparison {
    let mut better = false;
    let mut worse = false;
    let mut words = Vec::new();
    for &f in figures {
        let (w, r) = (mean(without, f), mean(with, f));
        let rel = spreads.iter().find(|(g, _)| *g == f).map_or(0.0, |s| s.1);
        let margin = (rel * w)
            .max(range(without, f))
            .max(range(with, f))
            .max(f.floor(w));
        // Lower is better for every figure. Beyond the margin, and every
        // round of one state apart from every round of the other: one odd
        // round does not decide (a p99.9 is the few worst samples).
        let (lo_w, hi_w) = bounds(without, f);
        let (lo_r, hi_r) = bounds(with, f);
        let verdict = if w - r > margin && hi_r < lo_w {
            better = true;
            "better"
        } else if r - w > margin && lo_r > hi_w {
            worse = true;
            "worse"
        } else if (w - r).abs() > margin {
            "rounds overlap"
        } else {
            "within the spread"
        };
        words.push(format!(
            "{} {} -> {} ({verdict}; margin {})",
            f.name(),
            show(f, w),
            show(f, r),
            show(f, margin)
        ));
    }
    Comparison {
        better: better && !worse,
        worse,
        why: words.join(", "),
    }
}

/// A figure's value in words: a count as is, a latency in µs.
pub fn show(f: Figure, v: f64) -> String {
    match f {
        Figure::Over => format!("{v:.1}"),
        _ => format!("{:.1} µs", v / 1000.0),
    }
}

/// What became of a proposal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Applied, measured better, kept.
    Kept,
    /// Applied, measured no better (or worse): undone at once.
    Undone,
    /// The kernel refused it, or took it and did otherwise: undone.
    Refused,
    /// Not applied: advice, or left out by `--only`/`--skip`, or `--dry-run`.
    NotApplied,
    /// Not tried yet (only while the proof goes on).
    Untried,
}

/// What one diagnosis run found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Diagnosed {
    /// Its figures.
    pub figures: Figures,
    /// Wake-ups it explained.
    pub explained: u64,
    /// Their latency, summed (ns).
    pub explained_ns: u64,
    /// The causes, costliest first.
    pub causes: Vec<Cause>,
}

/// A proposal and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// The proposal.
    pub proposal: Proposal,
    /// What became of it.
    pub verdict: Verdict,
    /// Why, in words.
    pub why: String,
    /// The rounds without it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub without: Vec<Figures>,
    /// The rounds with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub with: Vec<Figures>,
    /// The changes it made, while kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub made: Vec<UndoStep>,
}

/// The baseline against the final state, in interleaved rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    /// The rounds of the baseline (every kept remedy undone).
    pub baseline: Vec<Figures>,
    /// The rounds of the final state.
    pub fixed: Vec<Figures>,
    /// The comparison.
    pub comparison: Comparison,
    /// Everything was undone: the final state was worse.
    pub undone: bool,
}

/// What one round measured (the rounds in the order they ran).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// Which state: `baseline`, `without #N`, `with #N` (decision N),
    /// `verify: baseline`, `verify: fixed`.
    pub state: String,
    /// Its figures.
    pub figures: Figures,
}

/// The outcome of `rtlab fix`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FixResult {
    /// Format tag, `rtlab-fix/1`.
    pub schema: String,
    /// The experiment file.
    pub experiment: String,
    /// Wake-ups at least this late were explained and counted (ns).
    pub threshold_ns: u64,
    /// The figures a remedy must improve.
    pub figures: Vec<Figure>,
    /// Rounds per state.
    pub rounds: usize,
    /// Nothing was applied (`--dry-run`).
    pub dry_run: bool,
    /// Each diagnosis run: the first, then one after each pass that kept
    /// a remedy (for the causes the larger ones hid).
    pub diagnoses: Vec<Diagnosed>,
    /// Two runs of the starting state: the spread.
    pub baseline: Vec<Figures>,
    /// The baseline's relative spread per figure.
    pub spreads: Vec<(Figure, f64)>,
    /// Every proposal and what became of it, in the order tried.
    pub decisions: Vec<Decision>,
    /// The baseline against the final state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<Verification>,
    /// Every measuring run, in order.
    pub rounds_run: Vec<Round>,
    /// An experiment file that reproduces the kept state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_experiment: Option<String>,
    /// The journal holding the kept changes (`rtlab restore` undoes them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<String>,
    /// Why the fix stopped early, when it did (a signal, a failed run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

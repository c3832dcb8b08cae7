//! The proof: each remedy measured in interleaved rounds against the state
//! without it, kept only when the rounds say it improves the chosen figures
//! (an exact rank test) by more than the spread of two runs of the same
//! state (measured first), undone at once otherwise; then the final state
//! against the baseline, side by side, and everything undone if the final
//! state is worse. The measuring and the system are behind [`Bench`], so
//! that the decisions are tested alone.

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

/// One measuring run: its figures and, per timer thread, where its
/// samples lie (the upper edge of each HDR bucket in ns, and its count,
/// by value), so that rounds of one state can be pooled ([`Pool`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Measured {
    /// Its figures.
    pub figures: Figures,
    /// Per timer thread, (latency ns, count), sorted by latency.
    pub latencies: Vec<Vec<(u64, u64)>>,
}

impl Measured {
    /// The figures and latencies of `run`.
    pub fn of(run: &RunResult) -> Measured {
        let latencies = run
            .timers
            .iter()
            .map(|t| {
                let max = t.summary.max_ns;
                // As a run's own percentiles: a bucket's upper edge, never above the maximum.
                t.hdr_histogram
                    .iter()
                    .map(|b| (b.high_ns.min(max), b.count))
                    .collect()
            })
            .collect();
        Measured {
            figures: Figures::of(run),
            latencies,
        }
    }
}

/// Every sample of several rounds of one state, by timer thread: the
/// state's percentiles over all of them, as a run's are over its own (a
/// mean of the rounds' p99.9 is no percentile of anything, and one round
/// a host stalled moves it by a third).
#[derive(Debug, Clone, Default)]
pub struct Pool {
    over: u64,
    samples: u64,
    max_ns: u64,
    threads: Vec<std::collections::BTreeMap<u64, u64>>,
}

impl Pool {
    /// Adds a round.
    pub fn add(&mut self, m: &Measured) {
        self.over = self.over.saturating_add(m.figures.over);
        self.samples = self.samples.saturating_add(m.figures.samples);
        self.max_ns = self.max_ns.max(m.figures.max_ns);
        if self.threads.len() < m.latencies.len() {
            self.threads
                .resize_with(m.latencies.len(), Default::default);
        }
        for (pool, thread) in self.threads.iter_mut().zip(&m.latencies) {
            for &(value, count) in thread {
                let c = pool.entry(value).or_default();
                *c = c.saturating_add(count);
            }
        }
    }

    /// The figures of every sample: the count over the threshold in all
    /// rounds, the worst thread's percentiles over all its samples, and the
    /// largest latency.
    pub fn figures(&self) -> Figures {
        let pct = |q: f64| {
            self.threads
                .iter()
                .filter_map(|t| {
                    let buckets: Vec<(u64, u64)> = t.iter().map(|(&v, &c)| (v, c)).collect();
                    let n = buckets.iter().fold(0u64, |n, b| n.saturating_add(b.1));
                    crate::stats::value_at_rank(&buckets, n, q)
                })
                .max()
                .unwrap_or(0)
        };
        Figures {
            samples: self.samples,
            over: self.over,
            p99_ns: pct(0.99),
            p999_ns: pct(0.999),
            max_ns: self.max_ns,
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
    /// More rounds could change the verdict: a figure whose means differ
    /// beyond the margin while its rounds do not say so at the level asked,
    /// leaning worse while the rest says better, or better while nothing
    /// does yet.
    #[serde(default)]
    pub undecided: bool,
    /// Why, in words: each figure, its means, the rank test and the margin.
    pub why: String,
}

/// The level of the first look, at `--rounds` rounds of each state (at 3
/// rounds, every round of one state apart from every round of the other).
pub const FIRST_LOOK: f64 = 0.05;
/// The level of the second look, at twice the rounds, taken only when the
/// first left a figure undecided: at 3 rounds then 6, the two looks
/// together decide a difference that is not there in at most 6.1% of the
/// orders of the rounds (one direction of one figure; counted in the
/// tests), against 5% for the first look alone.
pub const SECOND_LOOK: f64 = 0.025;

/// The one-sided exact Mann-Whitney test that `lower` is below `higher`:
/// the pairs (one round of each) where it is, all the pairs, and the
/// chance of at least that many if both were rounds of one state (every
/// order of the rounds alike). Ties count for neither side.
pub fn rank_test(higher: &[f64], lower: &[f64]) -> (usize, usize, f64) {
    let below = higher
        .iter()
        .map(|h| lower.iter().filter(|l| *l < h).count())
        .sum::<usize>();
    let (n, m) = (higher.len(), lower.len());
    (below, n * m, at_least(n, m, below))
}

/// P(U >= u) for `n` and `m` rounds of one state: the number of orders
/// with each U are the coefficients of the Gaussian binomial [n+m, n]_q,
/// the product over i in 1..=n of (1 - q^(m+i)) / (1 - q^i). Exact in
/// i128 up to 50 rounds of each (C(100, 50) < 2^97); `rtlab fix` runs 40
/// at most.
fn at_least(n: usize, m: usize, u: usize) -> f64 {
    let (n, m) = (n.min(50), m.min(50));
    let top = n * m;
    if u == 0 || top == 0 {
        return 1.0;
    }
    let mut c = vec![0i128; top + 1];
    c[0] = 1;
    for i in 1..=n {
        for k in (m + i..=top).rev() {
            c[k] -= c[k - m - i];
        }
        for k in i..=top {
            c[k] += c[k - i];
        }
    }
    let all: i128 = c.iter().sum();
    let tail: i128 = c.iter().skip(u).sum();
    tail as f64 / all.max(1) as f64
}

/// The values of `f` over `runs`.
fn values(runs: &[Figures], f: Figure) -> Vec<f64> {
    runs.iter().map(|r| r.get(f)).collect()
}

/// How much lower `lower` is than `higher`: the median of the differences
/// of every pair of rounds (the Hodges-Lehmann shift, the rank test's own
/// measure of a difference). One round hit by a host stall moves it by a
/// pair's worth, where it would move a mean by the stall's.
pub fn shift(higher: &[f64], lower: &[f64]) -> f64 {
    let mut d: Vec<f64> = higher
        .iter()
        .flat_map(|h| lower.iter().map(move |l| h - l))
        .collect();
    if d.is_empty() {
        return 0.0;
    }
    d.sort_by(f64::total_cmp);
    let n = d.len();
    if n % 2 == 1 {
        d[n / 2]
    } else {
        (d[n / 2 - 1] + d[n / 2]) / 2.0
    }
}

/// The largest baseline spread a margin is made of: two runs of one state,
/// one of them hit by a host stall, can differ by more than the figure
/// itself, which no remedy could then beat; a remedy that halves a figure
/// is beyond any spread.
const MAX_SPREAD: f64 = 0.5;

/// Compares `with` against `without` on `figures` at `level` (one of the
/// looks above): a figure is better (or worse) when the rank test says so
/// at that level (the rounds interleaved, so that the host's drift falls
/// on both states alike) and the shift ([`shift`]) is larger than the
/// margin, the larger of the baseline's relative spread of that figure (at
/// most [`MAX_SPREAD`]) times the value without, and the figure's floor.
/// One odd round (a p99.9 is a run's few worst samples) moves a rank and
/// the shift by one pair, not a mean's worth.
pub fn compare(
    without: &[Figures],
    with: &[Figures],
    figures: &[Figure],
    spreads: &[(Figure, f64)],
    level: f64,
) -> Comparison {
    let (mut better, mut worse) = (false, false);
    let (mut leans_better, mut leans_worse) = (false, false);
    let mut words = Vec::new();
    for &f in figures {
        let (w, r) = (mean(without, f), mean(with, f));
        let rel = spreads.iter().find(|(g, _)| *g == f).map_or(0.0, |s| s.1);
        let margin = (rel.min(MAX_SPREAD) * w).max(f.floor(w));
        // Lower is better for every figure; the test asks in the direction
        // the shift took.
        let (a, b) = (values(without, f), values(with, f));
        let by = shift(&a, &b);
        let lower = by >= 0.0;
        let (pairs, all, p) = if lower {
            rank_test(&a, &b)
        } else {
            rank_test(&b, &a)
        };
        let verdict = match (by.abs() > margin, p <= level) {
            (true, true) if lower => {
                better = true;
                "better"
            }
            (true, true) => {
                worse = true;
                "worse"
            }
            (true, false) => {
                leans_better |= lower;
                leans_worse |= !lower;
                "rounds overlap"
            }
            _ => "within the spread",
        };
        let side = if lower { "lower" } else { "higher" };
        words.push(format!(
            "{} {} -> {} ({verdict}; {pairs} of {all} pairs of rounds {side}, p {p:.3}; shift {}, margin {})",
            f.name(),
            show(f, w),
            show(f, r),
            show(f, by.abs()),
            show(f, margin)
        ));
    }
    let better = better && !worse;
    Comparison {
        better,
        worse,
        undecided: (better && leans_worse) || (!better && !worse && leans_better),
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
    /// Every sample of the baseline's rounds ([`Pool`]): what the final
    /// state is shown against.
    #[serde(default)]
    pub baseline_all: Figures,
    /// Every sample of the final state's rounds.
    #[serde(default)]
    pub fixed_all: Figures,
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

//! Samples placed by value ([`Distribution`]): the percentiles, moments
//! and curves of a thread, the statistics of several threads together, and
//! a run put at a coarser resolution or in another's buckets to be
//! compared like with like.

use super::{Quantile, Run, Stats, Thread};
use crate::stats::QUANTILES;
use std::path::Path;

/// Samples placed by value, and those the input could not place (beyond
/// its histogram). Percentiles come from here.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Distribution {
    /// (value ns, count), sorted by value. The value is the latency the
    /// bucket stands for: the upper edge of an HDR bucket, or the truncated
    /// µs of a 1-µs bucket (as cyclictest reports it).
    pub(super) buckets: Vec<(u64, u64)>,
    /// Samples above every bucket, value unknown.
    pub(super) beyond: u64,
}

impl Distribution {
    pub(super) fn new(mut buckets: Vec<(u64, u64)>, beyond: u64) -> Self {
        buckets.retain(|b| b.1 > 0);
        buckets.sort_unstable();
        Distribution { buckets, beyond }
    }

    pub(super) fn total(&self) -> u64 {
        sum_counts(self.buckets.iter().map(|b| b.1)).saturating_add(self.beyond)
    }

    /// The value of the sample of rank ceil(q·n) (hdrhistogram's rule),
    /// None when it lies beyond the buckets or there is no sample.
    fn value_at(&self, quantile: f64) -> Option<u64> {
        crate::stats::value_at_rank(&self.buckets, self.total(), quantile)
    }

    pub(super) fn quantiles(&self, max_ns: Option<u64>) -> Vec<Quantile> {
        QUANTILES
            .iter()
            .map(|&(name, q)| Quantile {
                name: name.to_string(),
                quantile: q,
                value_ns: self.value_at(q).map(|v| max_ns.map_or(v, |m| v.min(m))),
            })
            .collect()
    }

    /// Mean and population standard deviation of the placed samples, when
    /// every sample is placed.
    pub(super) fn mean_stddev(&self) -> Option<(f64, f64)> {
        let n = self.total();
        if n == 0 || self.beyond > 0 {
            return None;
        }
        // Exact in u128 for any real histogram; a crafted one that would
        // overflow has no moments rather than a panic.
        let (mut sum, mut sum_sq) = (0u128, 0u128);
        for &(v, c) in &self.buckets {
            let (v, c) = (u128::from(v), u128::from(c));
            sum = sum.checked_add(v * c)?;
            sum_sq = sum_sq.checked_add(v.checked_mul(v)?.checked_mul(c)?)?;
        }
        let mean = sum as f64 / n as f64;
        Some((
            mean,
            (sum_sq as f64 / n as f64 - mean * mean).max(0.0).sqrt(),
        ))
    }

    fn merged<'a>(all: impl Iterator<Item = &'a Distribution>) -> Distribution {
        let mut buckets = Vec::new();
        let mut beyond = 0u64;
        for d in all {
            buckets.extend_from_slice(&d.buckets);
            beyond = beyond.saturating_add(d.beyond);
        }
        buckets.sort_unstable();
        buckets.dedup_by(|b, a| {
            if a.0 == b.0 {
                a.1 = a.1.saturating_add(b.1);
                true
            } else {
                false
            }
        });
        Distribution { buckets, beyond }
    }
}

/// Adds counts without overflow: a crafted file must not make rtlab panic.
pub(super) fn sum_counts(counts: impl IntoIterator<Item = u64>) -> u64 {
    counts.into_iter().fold(0, u64::saturating_add)
}

/// Sums counts of latencies (ns, in increasing order) into 1-µs buckets,
/// the latency truncated as cyclictest counts it.
pub(super) fn per_us(values_ns: impl IntoIterator<Item = (u64, u64)>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (ns, count) in values_ns {
        let us = ns / 1_000;
        match out.last_mut() {
            Some(last) if last.0 == us => last.1 = last.1.saturating_add(count),
            _ => out.push((us, count)),
        }
    }
    out
}

/// Statistics over several threads: exact for samples, min, max, mean,
/// standard deviation (from each thread's mean and deviation), overruns;
/// percentiles from the threads' merged distributions.
pub(super) fn merge_stats(threads: &[Thread]) -> Stats {
    let samples = sum_counts(threads.iter().map(|t| t.stats.samples));
    let with_samples: Vec<&Thread> = threads.iter().filter(|t| t.stats.samples > 0).collect();
    let min_ns = with_samples.iter().filter_map(|t| t.stats.min_ns).min();
    let max_ns = with_samples.iter().filter_map(|t| t.stats.max_ns).max();
    let moments: Option<Vec<(f64, f64, Option<f64>)>> = with_samples
        .iter()
        .map(|t| Some((t.stats.samples as f64, t.stats.mean_ns?, t.stats.stddev_ns)))
        .collect();
    let (mut mean_ns, mut stddev_ns) = (None, None);
    if let Some(m) = moments.filter(|m| !m.is_empty()) {
        let n: f64 = m.iter().map(|x| x.0).sum();
        let mean = m.iter().map(|x| x.0 * x.1).sum::<f64>() / n;
        mean_ns = Some(mean);
        let second: Option<f64> = m
            .iter()
            .map(|&(k, mu, sd)| Some(k * (sd? * sd? + mu * mu)))
            .sum();
        stddev_ns = second.map(|s| (s / n - mean * mean).max(0.0).sqrt());
    }
    let sum_all = |f: fn(&Stats) -> Option<u64>| -> Option<u64> {
        threads
            .iter()
            .try_fold(0u64, |acc, t| Some(acc.saturating_add(f(&t.stats)?)))
    };
    let distribution = Distribution::merged(threads.iter().map(|t| &t.distribution));
    Stats {
        samples,
        min_ns,
        mean_ns,
        max_ns,
        stddev_ns,
        percentiles: distribution.quantiles(max_ns),
        overruns: sum_all(|s| s.overruns),
        beyond_histogram: sum_all(|s| s.beyond_histogram),
        // Summed over the threads that count them (a task's cycle thread
        // beside timer threads, which have no deadline).
        deadline_misses: threads
            .iter()
            .filter_map(|t| t.stats.deadline_misses)
            .reduce(u64::saturating_add),
        noise: None,
    }
}

impl Thread {
    /// The percentile curve: for each bucket, (−log10(1 − q), latency ns)
    /// where q is the fraction of samples below the bucket (so 2 is p99 and
    /// 3 is p99.9), ending at the last sample (1 − q = 1/n). Samples beyond
    /// the input's histogram have no value and end the curve early.
    pub fn percentile_curve(&self) -> Vec<(f64, u64)> {
        let d = &self.distribution;
        let n = d.total();
        let mut out = Vec::with_capacity(d.buckets.len() + 1);
        let mut below = 0u64;
        // No point lies beyond the last sample (1 − q = 1/n), whatever
        // rounding does to fractions near 1.
        let last_x = (n as f64).log10();
        for &(value, count) in &d.buckets {
            out.push((
                (-(1.0 - below as f64 / n as f64).log10()).min(last_x),
                value,
            ));
            below = below.saturating_add(count);
        }
        if let Some(&(last, _)) = d.buckets.last() {
            let end = if below == n {
                last_x
            } else {
                (-(1.0 - below as f64 / n as f64).log10()).min(last_x)
            };
            out.push((end, last));
        }
        out
    }

    fn bucketed_to(&self, bounds_ns: &[u64]) -> Thread {
        let up = |v: u64| bounds_ns.iter().copied().find(|&b| v <= b);
        let d = &self.distribution;
        let mut beyond = d.beyond;
        let mut buckets = Vec::new();
        for &(v, c) in &d.buckets {
            match up(v) {
                Some(b) => buckets.push((b, c)),
                None => beyond = beyond.saturating_add(c),
            }
        }
        let distribution = Distribution::new(buckets, beyond);
        let s = &self.stats;
        let stats = Stats {
            min_ns: s.min_ns.and_then(up),
            mean_ns: None,
            stddev_ns: None,
            percentiles: distribution.quantiles(s.max_ns),
            beyond_histogram: Some(beyond),
            ..s.clone()
        };
        Thread {
            stats,
            distribution,
            ..self.clone()
        }
    }

    fn truncated_to(&self, resolution_ns: u64) -> Thread {
        let down = |v: u64| v - v % resolution_ns;
        let d = &self.distribution;
        let distribution = Distribution::new(
            d.buckets.iter().map(|&(v, c)| (down(v), c)).collect(),
            d.beyond,
        );
        let s = &self.stats;
        let max_ns = s.max_ns.map(down);
        let moments = distribution.mean_stddev();
        let stats = Stats {
            min_ns: s.min_ns.map(down),
            max_ns,
            mean_ns: moments.map(|m| m.0).or(s.mean_ns),
            stddev_ns: moments.map(|m| m.1).or(s.stddev_ns),
            percentiles: distribution.quantiles(max_ns),
            ..s.clone()
        };
        Thread {
            stats,
            distribution,
            ..self.clone()
        }
    }
}

impl Run {
    /// This run with every latency truncated to `resolution_ns` (a whole
    /// number of it, rounded down), the way cyclictest truncates to µs, so
    /// that it compares like with like against a coarser run. min, max and
    /// every percentile are truncated exactly; the mean and deviation are
    /// those of the truncated distribution (for rtlab, its HDR buckets:
    /// within their 0.1 % precision). A run as fine or coarser is returned
    /// as it is.
    pub fn truncated_to(&self, resolution_ns: u64) -> Run {
        if resolution_ns <= self.resolution_ns {
            return self.clone();
        }
        let mut run = self.with_threads(|t| t.truncated_to(resolution_ns));
        run.resolution_ns = resolution_ns;
        run.truncated_from_ns = Some(self.resolution_ns);
        run
    }

    /// The same run (label, context, details) with each thread made anew
    /// by `each`, and its overall figures from them.
    fn with_threads(&self, each: impl Fn(&Thread) -> Thread) -> Run {
        let threads = self.threads.iter().map(each).collect();
        let mut run = Run::new(
            Path::new(&self.path),
            self.format,
            self.context.clone(),
            threads,
            self.details.clone(),
        );
        run.label = self.label.clone();
        run
    }

    /// This run with its latencies put in the buckets of `bounds_ns`
    /// (each counted at its bucket's upper bound, beyond the last bound
    /// unknown), the way a windows file holds them, so that it compares
    /// like with like against one: percentiles are bucket bounds in both.
    pub fn bucketed_to(&self, bounds_ns: &[u64]) -> Run {
        if self.buckets_ns.as_deref() == Some(bounds_ns) || bounds_ns.is_empty() {
            return self.clone();
        }
        let mut run = self.with_threads(|t| t.bucketed_to(bounds_ns));
        run.resolution_ns = self.resolution_ns;
        run.truncated_from_ns = Some(self.resolution_ns);
        run.buckets_ns = Some(bounds_ns.to_vec());
        run
    }
}

//! Latency statistics: the per-thread [`Recorder`] that the hot loop writes
//! into (allocated and pre-touched before the loop starts), and the
//! [`Summary`] computed from it after the thread ends. The recorder also
//! keeps latency over time ([`series`]), the worst wake-ups ([`spikes`])
//! and the first samples one by one; beside it are the CPU load from
//! `/proc/stat` ([`cpu_load`]) and the metrics histogram's buckets
//! ([`metric_buckets`]).
//!
//! Two histograms are kept for every sample:
//! - the systress histogram: one bucket per whole µs (latency truncated, as
//!   cyclictest does) from 0 to `histo_size`, and a count of samples beyond;
//! - an HDR histogram in ns (3 significant digits: every value within 0.1%)
//!   up to one hour, its buckets counted by the hot loop ([`loglin`]) and
//!   made the histogram at the end, from which percentiles over **all**
//!   samples are exact to that precision whatever `histo_size` is.
//!
//! Min, max, mean and standard deviation come from exact integer sums.

pub mod cpu_load;
pub mod loglin;
pub mod metric_buckets;
pub mod noise;
pub mod series;
pub mod spikes;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Largest latency the HDR histogram holds (1 h in ns); beyond, a sample is
/// still counted in min/max/mean and in `hdr_out_of_range`.
pub const HDR_HIGHEST_NS: u64 = 3_600_000_000_000;
/// HDR precision: 3 significant digits (0.1%).
pub const HDR_SIGFIG: u8 = 3;

/// Everything a timer thread records. Owned by the thread while it runs.
#[derive(Debug, Clone)]
pub struct Recorder {
    /// Samples taken.
    pub count: u64,
    /// Smallest latency (ns); u64::MAX before the first sample.
    pub min_ns: u64,
    /// Largest latency (ns).
    pub max_ns: u64,
    /// Sum of latencies (ns).
    pub sum_ns: u128,
    /// Sum of squared latencies (ns²).
    pub sum_sq_ns: u128,
    /// One bucket per µs, 0..=histo_size.
    pub linear: Vec<u64>,
    /// Samples beyond `histo_size`.
    pub beyond_histogram: u64,
    /// All samples, log-linear, ns: the buckets of an HDR histogram (see
    /// [`Recorder::hdr`]).
    pub hdr_counts: loglin::LogCounts,
    /// Samples beyond the HDR range.
    pub hdr_out_of_range: u64,
    /// Wake-ups so late that the next period had already begun.
    pub overruns: u64,
    /// Periods skipped because of overruns.
    pub missed_periods: u64,
    /// Wake-ups before the deadline (impossible on CLOCK_MONOTONIC; counted
    /// as latency 0 rather than wrapped, unlike cyclictest).
    pub early: u64,
    /// Latency over time, per interval.
    pub series: series::TimeSeries,
    /// The worst wake-ups, with their time.
    pub spikes: spikes::Spikes,
    /// The first samples one by one (ns, saturated below `u32::MAX`), as
    /// many as `stats.samples` asks: allocated and written before the
    /// release, filled by the hot loop, cut to the samples taken at the end.
    pub samples: Vec<u32>,
}

impl Recorder {
    /// A recorder with a `histo_size_us` systress histogram, every page of it
    /// already touched so that the hot loop takes no page fault.
    pub fn new(histo_size_us: u64) -> Result<Self, hdrhistogram::CreationError> {
        let len = usize::try_from(histo_size_us).unwrap_or(usize::MAX / 16) + 1;
        let mut linear = vec![1u64; len];
        // Write twice through a black box: the zeroes are really stored, so
        // every page is mapped now (calloc'd pages would fault later).
        std::hint::black_box(&mut linear);
        linear.fill(0);
        // Every counter written now: all of its pages are mapped.
        let hdr_counts = loglin::LogCounts::new(HDR_HIGHEST_NS)?;
        Ok(Recorder {
            count: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            sum_ns: 0,
            sum_sq_ns: 0,
            linear,
            beyond_histogram: 0,
            hdr_counts,
            hdr_out_of_range: 0,
            overruns: 0,
            missed_periods: 0,
            early: 0,
            series: series::TimeSeries::new(),
            spikes: spikes::Spikes::new(spikes::SpikeSpec::default()),
            samples: Vec::new(),
        })
    }

    /// Records one latency. Allocation-free, lock-free, syscall-free.
    #[inline(always)]
    pub fn record(&mut self, latency_ns: u64) {
        self.count += 1;
        self.min_ns = self.min_ns.min(latency_ns);
        self.max_ns = self.max_ns.max(latency_ns);
        let l = u128::from(latency_ns);
        self.sum_ns += l;
        self.sum_sq_ns += l * l;
        let bucket = latency_ns / 1_000;
        match self.linear.get_mut(bucket as usize) {
            Some(c) => *c += 1,
            None => self.beyond_histogram += 1,
        }
        if !self.hdr_counts.record(latency_ns) {
            self.hdr_out_of_range += 1;
        }
    }

    /// Every sample as an HDR histogram (ns, 3 significant digits), made
    /// from the hot loop's counts (None only if it cannot be made).
    pub fn hdr(&self) -> Option<Histogram<u64>> {
        self.hdr_counts.histogram()
    }

    /// The histogram size in µs.
    pub fn histo_size_us(&self) -> u64 {
        self.linear.len() as u64 - 1
    }
}

/// The columns of the systress summary line, in µs.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct SystressColumns {
    /// Every sample taken.
    pub samples: u64,
    /// Smallest latency, whole µs (truncated).
    pub l_min: u64,
    /// Largest latency, whole µs (truncated).
    pub l_max: u64,
    /// Mean over every sample, whole µs (truncated).
    pub l_avg: u64,
    /// Samples inside the histogram (latency <= histo_size).
    pub samples_h: u64,
    /// Mean of the histogram's samples (truncated).
    pub l_avg_h: u64,
    /// Median of the histogram's samples (the lower middle for an even count).
    pub l_med_h: u64,
    /// Population standard deviation of the histogram's samples (truncated).
    pub l_std_h: u64,
    /// Most frequent latencies in the histogram (all of them on a tie).
    pub l_mode_h: Vec<u64>,
}

/// Computes the systress columns from a recorder.
pub fn systress_columns(r: &Recorder) -> SystressColumns {
    let samples_h: u64 = r.linear.iter().sum();
    let (mut sum, mut sum_sq) = (0u128, 0u128);
    for (us, &c) in r.linear.iter().enumerate() {
        let us = us as u128;
        sum += us * u128::from(c);
        sum_sq += us * us * u128::from(c);
    }
    let (l_avg_h, l_std_h) = if samples_h == 0 {
        (0, 0)
    } else {
        let n = samples_h as f64;
        let mean = sum as f64 / n;
        let var = (sum_sq as f64 / n - mean * mean).max(0.0);
        ((sum / u128::from(samples_h)) as u64, var.sqrt() as u64)
    };
    // Lower median: the value at rank ceil(n/2).
    let mut l_med_h = 0;
    if samples_h > 0 {
        let rank = samples_h.div_ceil(2);
        let mut seen = 0;
        for (us, &c) in r.linear.iter().enumerate() {
            seen += c;
            if seen >= rank {
                l_med_h = us as u64;
                break;
            }
        }
    }
    let top = r.linear.iter().copied().max().unwrap_or(0);
    let l_mode_h = if top == 0 {
        Vec::new()
    } else {
        (0..r.linear.len() as u64)
            .filter(|&us| r.linear[us as usize] == top)
            .collect()
    };
    SystressColumns {
        samples: r.count,
        l_min: if r.count == 0 { 0 } else { r.min_ns / 1_000 },
        l_max: r.max_ns / 1_000,
        l_avg: if r.count == 0 {
            0
        } else {
            (r.sum_ns / u128::from(r.count) / 1_000) as u64
        },
        samples_h,
        l_avg_h,
        l_med_h,
        l_std_h,
        l_mode_h,
    }
}

/// The value of the sample of rank ceil(q·n) (hdrhistogram's rule) among
/// `n` samples placed in `buckets` (value, count), sorted by value; None
/// when there is no sample or that rank lies beyond the buckets.
pub fn value_at_rank(buckets: &[(u64, u64)], n: u64, quantile: f64) -> Option<u64> {
    if n == 0 {
        return None;
    }
    let rank = ((quantile * n as f64).ceil() as u64).clamp(1, n);
    let mut seen = 0u64;
    for &(value, count) in buckets {
        seen = seen.saturating_add(count);
        if seen >= rank {
            return Some(value);
        }
    }
    None
}

/// The quantiles reported over all samples.
pub const QUANTILES: [(&str, f64); 5] = [
    ("p50", 0.50),
    ("p90", 0.90),
    ("p99", 0.99),
    ("p99.9", 0.999),
    ("p99.99", 0.9999),
];

/// One percentile over all samples.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Percentile {
    /// Its name (`p99.9`).
    pub name: String,
    /// The quantile (0.999).
    pub quantile: f64,
    /// Its value (ns): the upper edge of the HDR bucket holding the sample of
    /// rank ceil(q·n), so within 0.1% above the exact value, never below.
    pub value_ns: u64,
}

/// A non-empty bucket of the lossless HDR histogram.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HdrBucket {
    /// Lowest latency of the bucket (ns).
    pub low_ns: u64,
    /// Highest latency of the bucket (ns).
    pub high_ns: u64,
    /// Samples in it.
    pub count: u64,
}

/// Statistics over every sample of a timer thread.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Summary {
    /// Samples taken.
    pub samples: u64,
    /// Exact minimum (ns); 0 when there was no sample.
    pub min_ns: u64,
    /// Exact maximum (ns).
    pub max_ns: u64,
    /// Exact mean (ns).
    pub mean_ns: f64,
    /// Exact population standard deviation (ns).
    pub stddev_ns: f64,
    /// p50 .. p99.99 over all samples.
    pub percentiles: Vec<Percentile>,
    /// Samples beyond `histo_size`, missing from the systress histogram.
    pub beyond_histogram: u64,
    /// Wake-ups later than the next period.
    pub overruns: u64,
    /// Periods skipped by those overruns.
    pub missed_periods: u64,
    /// Samples beyond the HDR range (1 h).
    pub hdr_out_of_range: u64,
    /// The systress columns.
    pub systress: SystressColumns,
}

/// Computes the summary of a recorder.
pub fn summarize(r: &Recorder) -> Summary {
    let (mean_ns, stddev_ns) = if r.count == 0 {
        (0.0, 0.0)
    } else {
        let n = r.count as f64;
        let mean = r.sum_ns as f64 / n;
        let var = (r.sum_sq_ns as f64 / n - mean * mean).max(0.0);
        (mean, var.sqrt())
    };
    let hdr = r.hdr().filter(|h| !h.is_empty());
    let percentiles = QUANTILES
        .iter()
        .map(|&(name, q)| Percentile {
            name: name.to_string(),
            quantile: q,
            value_ns: hdr
                .as_ref()
                .map_or(0, |h| h.value_at_quantile(q).min(r.max_ns)),
        })
        .collect();
    Summary {
        samples: r.count,
        min_ns: if r.count == 0 { 0 } else { r.min_ns },
        max_ns: r.max_ns,
        mean_ns,
        stddev_ns,
        percentiles,
        beyond_histogram: r.beyond_histogram,
        overruns: r.overruns,
        missed_periods: r.missed_periods,
        hdr_out_of_range: r.hdr_out_of_range,
        systress: systress_columns(r),
    }
}

/// The non-empty 1-µs buckets of the systress histogram, as (µs, count).
pub fn nonzero_buckets(r: &Recorder) -> Vec<(u64, u64)> {
    r.linear
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(us, c)| (us as u64, *c))
        .collect()
}

/// The non-empty buckets of the HDR histogram (lossless within 0.1%).
pub fn hdr_buckets(r: &Recorder) -> Vec<HdrBucket> {
    let Some(hdr) = r.hdr() else {
        return Vec::new();
    };
    hdr.iter_recorded()
        .map(|v| {
            let high = v.value_iterated_to();
            HdrBucket {
                low_ns: hdr.lowest_equivalent(high),
                high_ns: high,
                count: v.count_at_value(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random generator (xorshift), for test data.
    fn samples(n: usize, seed: u64) -> Vec<u64> {
        let mut x = seed;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Mostly 1..40 µs, a tail up to 5 ms, and a few exact µs edges.
                match i % 1000 {
                    0 => 5_000_000 + x % 1_000,
                    1..=9 => 40_000 + x % 500_000,
                    10 => 20_000,
                    _ => 1_000 + x % 39_000,
                }
            })
            .collect()
    }

    fn record_all(xs: &[u64], histo_us: u64) -> Recorder {
        let mut r = Recorder::new(histo_us).unwrap();
        for &x in xs {
            r.record(x);
        }
        r
    }

    #[test]
    fn exact_stats_match_brute_force() {
        let xs = samples(50_000, 7);
        let r = record_all(&xs, 20);
        let s = summarize(&r);
        let n = xs.len() as f64;
        let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
        assert_eq!(s.samples, xs.len() as u64);
        assert_eq!(s.min_ns, *xs.iter().min().unwrap());
        assert_eq!(s.max_ns, *xs.iter().max().unwrap());
        assert!((s.mean_ns - mean).abs() < 1e-6 * mean);
        assert!((s.stddev_ns - var.sqrt()).abs() < 1e-6 * var.sqrt());
    }

    #[test]
    fn percentiles_within_hdr_precision_of_brute_force() {
        for seed in [1, 2, 3] {
            let xs = samples(100_000, seed);
            let r = record_all(&xs, 20);
            let s = summarize(&r);
            let mut sorted = xs.clone();
            sorted.sort_unstable();
            for p in &s.percentiles {
                let rank = ((p.quantile * sorted.len() as f64).ceil() as usize).max(1);
                let exact = sorted[rank - 1];
                assert!(p.value_ns >= exact, "{} {} < {}", p.name, p.value_ns, exact);
                assert!(
                    (p.value_ns - exact) as f64 <= exact as f64 * 0.001 + 1.0,
                    "{}: {} vs exact {}",
                    p.name,
                    p.value_ns,
                    exact
                );
            }
        }
    }

    #[test]
    fn systress_columns_match_brute_force() {
        let histo = 20;
        let xs = samples(30_000, 11);
        let r = record_all(&xs, histo);
        let c = systress_columns(&r);
        let us: Vec<u64> = xs.iter().map(|x| x / 1000).collect();
        let inside: Vec<u64> = us.iter().copied().filter(|&u| u <= histo).collect();
        let n = inside.len() as u64;
        assert_eq!(c.samples, xs.len() as u64);
        assert_eq!(c.samples_h, n);
        assert_eq!(r.beyond_histogram, xs.len() as u64 - n);
        assert_eq!(c.l_min, xs.iter().min().unwrap() / 1000);
        assert_eq!(c.l_max, xs.iter().max().unwrap() / 1000);
        assert_eq!(
            c.l_avg,
            (xs.iter().map(|&x| x as u128).sum::<u128>() / xs.len() as u128 / 1000) as u64
        );
        assert_eq!(c.l_avg_h, inside.iter().sum::<u64>() / n);
        let mut sorted = inside.clone();
        sorted.sort_unstable();
        assert_eq!(c.l_med_h, sorted[(n as usize).div_ceil(2) - 1]);
        let mean = inside.iter().sum::<u64>() as f64 / n as f64;
        let std = (inside
            .iter()
            .map(|&u| (u as f64 - mean).powi(2))
            .sum::<f64>()
            / n as f64)
            .sqrt();
        assert_eq!(c.l_std_h, std as u64);
        let mut counts = std::collections::BTreeMap::new();
        for u in &inside {
            *counts.entry(*u).or_insert(0u64) += 1;
        }
        let top = *counts.values().max().unwrap();
        let modes: Vec<u64> = counts
            .iter()
            .filter(|(_, c)| **c == top)
            .map(|(u, _)| *u)
            .collect();
        assert_eq!(c.l_mode_h, modes);
    }

    #[test]
    fn ties_give_several_modes_and_empty_is_zero() {
        let r = record_all(&[1_000, 1_500, 3_000, 3_999], 10);
        let c = systress_columns(&r);
        assert_eq!(c.l_mode_h, vec![1, 3]);
        assert_eq!(c.l_med_h, 1);
        let empty = summarize(&Recorder::new(10).unwrap());
        assert_eq!(empty.systress.samples_h, 0);
        assert!(empty.systress.l_mode_h.is_empty());
        assert_eq!(empty.min_ns, 0);
        assert!(empty.percentiles.iter().all(|p| p.value_ns == 0));
    }

    #[test]
    fn hdr_buckets_are_lossless_and_bounded() {
        let xs = samples(10_000, 5);
        let r = record_all(&xs, 20);
        let buckets = hdr_buckets(&r);
        assert_eq!(
            buckets.iter().map(|b| b.count).sum::<u64>(),
            xs.len() as u64
        );
        for b in &buckets {
            assert!(b.low_ns <= b.high_ns);
            assert!((b.high_ns - b.low_ns) as f64 <= b.high_ns as f64 * 0.001 + 1.0);
        }
        // Memory is bounded: the counts never grow with the samples, and a
        // value past the top is counted out of range, not stored.
        let mut r = r;
        let before = r.hdr_counts.clone();
        r.record(u64::MAX);
        assert_eq!(r.hdr_out_of_range, 1);
        assert_eq!(format!("{:?}", r.hdr_counts), format!("{before:?}"));
    }

    #[test]
    fn histogram_edge_is_inclusive() {
        let r = record_all(&[20_999, 21_000], 20);
        assert_eq!(r.linear[20], 1);
        assert_eq!(r.beyond_histogram, 1);
        assert_eq!(r.histo_size_us(), 20);
    }
}

//! What a noise thread records: every gap between two reads of its clock
//! in a histogram (exact to the ns below `linear_ns`, then the HDR
//! histogram's 0.1%), the gaps at or over the threshold (noise) per period
//! as rtla osnoise counts them, and the worst gaps with their time. The
//! gaps over the threshold also go, with their time, into a [`GapRing`]
//! the trace's attribution reads while the run goes on.

use super::loglin::LogCounts;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// One period of a noise thread, as rtla osnoise reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct NoisePeriod {
    /// When it began (CLOCK_MONOTONIC, ns).
    pub start_ns: u64,
    /// How long the loop ran in it (ns).
    pub runtime_ns: u64,
    /// The sum of its gaps at or over the threshold (ns).
    pub noise_ns: u64,
    /// How many gaps were at or over the threshold.
    pub gaps: u64,
    /// Its largest single gap (ns, any size).
    pub max_gap_ns: u64,
}

impl NoisePeriod {
    /// The share of the CPU the loop had in it (%): runtime less noise over
    /// runtime, as rtla osnoise's "% CPU Aval".
    pub fn available_percent(&self) -> f64 {
        if self.runtime_ns == 0 {
            return 0.0;
        }
        100.0 * self.runtime_ns.saturating_sub(self.noise_ns) as f64 / self.runtime_ns as f64
    }
}

/// A gap at or over the threshold: when it ended (CLOCK_MONOTONIC, ns) and
/// how long it was (ns).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gap {
    /// Its end (the read after it), CLOCK_MONOTONIC ns.
    pub end_ns: u64,
    /// Its length (ns).
    pub ns: u64,
}

impl Gap {
    /// Its start (the read before it).
    pub fn start_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.ns)
    }
}

/// A bounded ring of gaps from one noise thread to one reader (the trace's
/// attribution): the thread writes and publishes, the reader takes; a gap
/// that finds the ring full is counted as dropped, never waited for. No
/// lock, no allocation after it is made.
#[derive(Debug)]
pub struct GapRing {
    slots: Box<[(AtomicU64, AtomicU64)]>,
    /// Gaps written (the writer's count).
    head: AtomicUsize,
    /// Gaps taken (the reader's count).
    tail: AtomicUsize,
    /// Gaps that found it full.
    dropped: AtomicU64,
}

impl GapRing {
    /// A ring of `capacity` gaps (0: every gap is dropped).
    pub fn new(capacity: usize) -> Self {
        let slots = (0..capacity)
            .map(|_| (AtomicU64::new(0), AtomicU64::new(0)))
            .collect();
        GapRing {
            slots,
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    /// Writes `gap` (the one writer only).
    pub fn push(&self, gap: Gap) {
        let head = self.head.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Acquire);
        let cap = self.slots.len();
        if cap == 0 || head.wrapping_sub(tail) >= cap {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if let Some((end, ns)) = self.slots.get(head % cap) {
            end.store(gap.end_ns, Ordering::Relaxed);
            ns.store(gap.ns, Ordering::Relaxed);
        }
        self.head.store(head.wrapping_add(1), Ordering::Release);
    }

    /// Takes every gap written so far, oldest first (the one reader only).
    pub fn take(&self, into: &mut Vec<Gap>) {
        let head = self.head.load(Ordering::Acquire);
        let mut tail = self.tail.load(Ordering::Relaxed);
        let cap = self.slots.len();
        while tail != head && cap > 0 {
            if let Some((end, ns)) = self.slots.get(tail % cap) {
                into.push(Gap {
                    end_ns: end.load(Ordering::Relaxed),
                    ns: ns.load(Ordering::Relaxed),
                });
            }
            tail = tail.wrapping_add(1);
        }
        self.tail.store(tail, Ordering::Release);
    }

    /// Gaps that found the ring full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Most periods kept one by one: past it, neighbours are merged two by two
/// (the run's later periods twice as long), so a day's run stays small.
pub const MAX_PERIODS: usize = 4096;

/// Most worst gaps kept with their time.
pub const WORST_GAPS: usize = 32;

/// Everything a noise thread records. Owned by the thread while it runs.
#[derive(Debug, Clone)]
pub struct NoiseRecorder {
    /// Clock reads taken (gaps measured: one fewer per stretch the loop
    /// ran).
    pub reads: u64,
    /// Gaps by ns, exact, below its length.
    pub linear: Vec<u64>,
    /// Every gap at or past `linear`'s length, log-linear (0.1%).
    pub hdr_counts: LogCounts,
    /// Gaps past the HDR range (an hour).
    pub hdr_out_of_range: u64,
    /// The periods, in order (merged two by two past [`MAX_PERIODS`]).
    pub periods: Vec<NoisePeriod>,
    /// How many periods each entry of `periods` holds now.
    pub periods_merged: u64,
    /// How many the last entry holds so far.
    last_holds: u64,
    /// The worst gaps, unordered, at most [`WORST_GAPS`].
    pub worst: Vec<Gap>,
}

impl NoiseRecorder {
    /// A recorder exact to the ns below `linear_ns`, every page written.
    pub fn new(linear_ns: usize) -> Result<Self, hdrhistogram::CreationError> {
        let mut linear = vec![1u64; linear_ns];
        std::hint::black_box(&mut linear);
        linear.fill(0);
        let mut periods = Vec::with_capacity(MAX_PERIODS);
        periods.resize(MAX_PERIODS, NoisePeriod::default());
        std::hint::black_box(&mut periods);
        periods.clear();
        Ok(NoiseRecorder {
            reads: 0,
            linear,
            hdr_counts: LogCounts::new(super::HDR_HIGHEST_NS)?,
            hdr_out_of_range: 0,
            periods,
            periods_merged: 1,
            last_holds: 0,
            worst: Vec::with_capacity(WORST_GAPS),
        })
    }

    /// Counts one gap of `ns` into the histogram.
    #[inline(always)]
    pub fn count(&mut self, ns: u64) {
        match self.linear.get_mut(ns as usize) {
            Some(c) => *c += 1,
            None => {
                if !self.hdr_counts.record(ns) {
                    self.hdr_out_of_range += 1;
                }
            }
        }
    }

    /// The smallest gap counted so far (ns).
    pub fn smallest(&self) -> Option<u64> {
        if let Some(ns) = self.linear.iter().position(|&c| c > 0) {
            return Some(ns as u64);
        }
        let h = self.hdr_counts.histogram()?;
        (!h.is_empty()).then(|| h.min())
    }

    /// Forgets everything counted (after a warm-up).
    pub fn reset(&mut self) {
        self.linear.fill(0);
        self.hdr_counts.clear();
        self.hdr_out_of_range = 0;
        self.periods.clear();
        self.periods_merged = 1;
        self.last_holds = 0;
        self.worst.clear();
    }

    /// Keeps `gap` among the worst if it is.
    #[cold]
    pub fn keep_worst(&mut self, gap: Gap) {
        if self.worst.len() < WORST_GAPS {
            self.worst.push(gap);
            return;
        }
        let smallest = self
            .worst
            .iter_mut()
            .min_by_key(|g| g.ns)
            .filter(|g| g.ns < gap.ns);
        if let Some(slot) = smallest {
            *slot = gap;
        }
    }

    /// Closes a period (never allocates: past [`MAX_PERIODS`] the kept
    /// ones are merged two by two first).
    #[cold]
    pub fn close_period(&mut self, p: NoisePeriod) {
        if self.last_holds < self.periods_merged
            && let Some(last) = self.periods.last_mut()
        {
            last.runtime_ns += p.runtime_ns;
            last.noise_ns += p.noise_ns;
            last.gaps += p.gaps;
            last.max_gap_ns = last.max_gap_ns.max(p.max_gap_ns);
            self.last_holds += 1;
            return;
        }
        if self.periods.len() == MAX_PERIODS {
            // MAX_PERIODS is even: every entry is full and pairs up.
            merge_pairs(&mut self.periods);
            self.periods_merged *= 2;
        }
        self.periods.push(p);
        self.last_holds = 1;
    }
}

/// Merges neighbours two by two, in place (an even count).
fn merge_pairs(periods: &mut Vec<NoisePeriod>) {
    let n = periods.len() / 2;
    for i in 0..n {
        let (a, b) = (periods[2 * i], periods[2 * i + 1]);
        periods[i] = NoisePeriod {
            start_ns: a.start_ns,
            runtime_ns: a.runtime_ns + b.runtime_ns,
            noise_ns: a.noise_ns + b.noise_ns,
            gaps: a.gaps + b.gaps,
            max_gap_ns: a.max_gap_ns.max(b.max_gap_ns),
        };
    }
    periods.truncate(n);
}

/// A noise thread's figures over its whole run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NoiseSummary {
    /// Time polled (ns): the sum of the periods' runtimes.
    pub runtime_ns: u64,
    /// Noise: the sum of the gaps at or over the threshold (ns).
    pub noise_ns: u64,
    /// The share of the CPU the loop had (%), as rtla osnoise's "% CPU
    /// Aval": runtime less noise over runtime.
    pub available_percent: f64,
    /// The largest single gap (ns).
    pub max_single_ns: u64,
    /// Gaps at or over the threshold.
    pub gaps: u64,
    /// Gaps measured (every one, counted in the histogram).
    pub reads: u64,
    /// The smallest gap (ns): the loop's resolution.
    pub min_gap_ns: u64,
    /// The mean gap (ns): runtime over gaps measured.
    pub mean_gap_ns: f64,
    /// Gap percentiles over every gap (ns; within 0.1% above the exact one
    /// past the exact range).
    pub percentiles: Vec<super::Percentile>,
    /// Gaps past the histogram's range (an hour).
    pub out_of_range: u64,
}

/// Every gap's histogram in two parts: exact ns counts below the exact
/// range, as (ns, count); HDR buckets beyond.
pub fn histogram(r: &NoiseRecorder) -> (Vec<(u64, u64)>, Vec<super::HdrBucket>) {
    let exact = r
        .linear
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(ns, c)| (ns as u64, *c))
        .collect();
    let hdr = r.hdr_counts.histogram().map_or_else(Vec::new, |h| {
        h.iter_recorded()
            .map(|v| {
                let high = v.value_iterated_to();
                super::HdrBucket {
                    low_ns: h.lowest_equivalent(high),
                    high_ns: high,
                    count: v.count_at_value(),
                }
            })
            .collect()
    });
    (exact, hdr)
}

/// The summary of a recorder.
pub fn summarize(r: &NoiseRecorder) -> NoiseSummary {
    let (exact, hdr) = histogram(r);
    // Every gap, in order: the exact ones, then the HDR buckets (by their
    // upper edge: never below the exact value).
    let all: Vec<(u64, u64)> = exact
        .iter()
        .copied()
        .chain(hdr.iter().map(|b| (b.high_ns, b.count)))
        .collect();
    let reads: u64 = all.iter().map(|(_, c)| c).sum();
    let sum = |f: fn(&NoisePeriod) -> u64| r.periods.iter().map(f).sum::<u64>();
    let runtime_ns = sum(|p| p.runtime_ns);
    let noise_ns = sum(|p| p.noise_ns);
    // Exact when a gap reached the threshold (the largest is one of them);
    // otherwise the histogram's top (exact below 2048 ns).
    let max_single_ns = r
        .periods
        .iter()
        .map(|p| p.max_gap_ns)
        .max()
        .filter(|&m| m > 0)
        .or_else(|| all.last().map(|(ns, _)| *ns))
        .unwrap_or(0);
    let percentiles = super::QUANTILES
        .iter()
        .map(|&(name, q)| super::Percentile {
            name: name.to_string(),
            quantile: q,
            value_ns: rank_value(&all, reads, q).min(max_single_ns),
        })
        .collect();
    let available_percent = NoisePeriod {
        runtime_ns,
        noise_ns,
        ..NoisePeriod::default()
    }
    .available_percent();
    NoiseSummary {
        runtime_ns,
        noise_ns,
        available_percent,
        max_single_ns,
        gaps: sum(|p| p.gaps),
        reads,
        min_gap_ns: all.first().map_or(0, |(ns, _)| *ns),
        mean_gap_ns: if reads == 0 {
            0.0
        } else {
            runtime_ns as f64 / reads as f64
        },
        percentiles,
        out_of_range: r.hdr_out_of_range,
    }
}

/// The value of rank ceil(q·n) in `counts` (value, count), in order.
fn rank_value(counts: &[(u64, u64)], n: u64, q: f64) -> u64 {
    let rank = ((q * n as f64).ceil() as u64).clamp(1, n.max(1));
    let mut seen = 0;
    for (v, c) in counts {
        seen += c;
        if seen >= rank {
            return *v;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_gives_what_was_pushed_in_order_and_counts_what_did_not_fit() {
        let ring = GapRing::new(3);
        for i in 0..5 {
            ring.push(Gap {
                end_ns: i,
                ns: 10 + i,
            });
        }
        let mut got = Vec::new();
        ring.take(&mut got);
        assert_eq!(got.iter().map(|g| g.end_ns).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(ring.dropped(), 2);
        ring.push(Gap { end_ns: 9, ns: 1 });
        got.clear();
        ring.take(&mut got);
        assert_eq!(got, [Gap { end_ns: 9, ns: 1 }]);
    }

    #[test]
    fn gaps_are_exact_below_the_linear_range_and_hdr_beyond() {
        let mut r = NoiseRecorder::new(100).unwrap();
        for ns in [0, 99, 100, 5000] {
            r.count(ns);
        }
        assert_eq!((r.linear[0], r.linear[99]), (1, 1));
        let h = r.hdr_counts.histogram().unwrap();
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn the_summary_counts_every_gap_and_ranks_them_in_order() {
        let mut r = NoiseRecorder::new(1000).unwrap();
        for ns in [30, 30, 40, 6_000, 30] {
            r.count(ns);
        }
        r.close_period(NoisePeriod {
            start_ns: 0,
            runtime_ns: 1_000_000,
            noise_ns: 6_000,
            gaps: 1,
            max_gap_ns: 6_000,
        });
        let s = summarize(&r);
        assert_eq!(
            (s.reads, s.min_gap_ns, s.max_single_ns, s.gaps),
            (5, 30, 6_000, 1)
        );
        assert!((s.available_percent - 99.4).abs() < 1e-9);
        let p50 = &s.percentiles[0];
        assert_eq!((p50.name.as_str(), p50.value_ns), ("p50", 30));
        let max = s.percentiles.last().unwrap();
        assert!(max.value_ns >= 6_000 && max.value_ns <= 6_006, "{max:?}");
    }

    #[test]
    fn the_worst_gaps_are_kept() {
        let mut r = NoiseRecorder::new(0).unwrap();
        for i in 0..100 {
            r.keep_worst(Gap { end_ns: i, ns: i });
        }
        let mut ns: Vec<u64> = r.worst.iter().map(|g| g.ns).collect();
        ns.sort_unstable();
        assert_eq!(ns, (68..100).collect::<Vec<_>>());
    }

    #[test]
    fn periods_merge_two_by_two_and_keep_their_sums() {
        let mut r = NoiseRecorder::new(0).unwrap();
        let n = MAX_PERIODS as u64 * 3;
        for i in 0..n {
            r.close_period(NoisePeriod {
                start_ns: i * 1000,
                runtime_ns: 1000,
                noise_ns: i,
                gaps: 1,
                max_gap_ns: i,
            });
        }
        assert!(r.periods.len() <= MAX_PERIODS);
        let runtime: u64 = r.periods.iter().map(|p| p.runtime_ns).sum();
        let gaps: u64 = r.periods.iter().map(|p| p.gaps).sum();
        assert_eq!((runtime, gaps), (n * 1000, n));
        assert_eq!(r.periods.iter().map(|p| p.max_gap_ns).max(), Some(n - 1));
        assert!(r.periods.windows(2).all(|w| w[0].start_ns < w[1].start_ns));
        assert_eq!(r.periods_merged, 4);
        // Every entry but the last holds exactly four periods.
        let full = &r.periods[..r.periods.len() - 1];
        assert!(full.iter().all(|p| p.gaps == 4), "{:?}", &full[..3]);
    }
}

//! Latency over time with bounded memory: per interval of the run, the
//! count, min, max and sum of the latencies taken in it.
//!
//! The timer thread writes into a fixed array of [`SLOTS`] intervals,
//! allocated and touched before its hot loop. Intervals start
//! [`FIRST_INTERVAL_NS`] long; when a sample falls past the last slot, pairs
//! of neighbours merge (the interval doubles), so a 10 s run keeps 100
//! intervals of 100 ms, and a week-long run about 370 intervals of 27 min,
//! in the same 16 KiB. Merging is exact for count, min, max and sum.

use serde::{Deserialize, Serialize};

/// Number of interval slots per timer thread.
pub const SLOTS: usize = 512;
/// Length of the intervals when a run starts (ns).
pub const FIRST_INTERVAL_NS: u64 = 100_000_000;

/// One interval while it is being filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// Samples in it.
    pub count: u64,
    /// Smallest latency (ns); u64::MAX while `count` is 0, so that a
    /// sample updates a slot the same way whether it is the first or not.
    pub min_ns: u64,
    /// Largest latency (ns).
    pub max_ns: u64,
    /// Sum of latencies (ns), saturating (584 years of latency).
    pub sum_ns: u64,
}

impl Default for Slot {
    fn default() -> Self {
        Slot {
            count: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            sum_ns: 0,
        }
    }
}

impl Slot {
    fn merge(self, other: Slot) -> Slot {
        match (self.count, other.count) {
            (0, _) => other,
            (_, 0) => self,
            _ => Slot {
                count: self.count + other.count,
                min_ns: self.min_ns.min(other.min_ns),
                max_ns: self.max_ns.max(other.max_ns),
                sum_ns: self.sum_ns.saturating_add(other.sum_ns),
            },
        }
    }
}

/// The recorder's time series.
#[derive(Debug, Clone)]
pub struct TimeSeries {
    interval_ns: u64,
    slots: Vec<Slot>,
    /// The slot the last sample went to, and the times it spans: the next
    /// sample (later, as deadlines are) mostly lands there too, found by
    /// two comparisons instead of a division.
    current: usize,
    current_from_ns: u64,
    current_to_ns: u64,
}

impl Default for TimeSeries {
    fn default() -> Self {
        Self::new()
    }
}

impl TimeSeries {
    /// An empty series whose slots are already touched (no page fault later).
    pub fn new() -> Self {
        let mut slots = vec![
            Slot {
                count: 1,
                ..Slot::default()
            };
            SLOTS
        ];
        std::hint::black_box(&mut slots);
        slots.fill(Slot::default());
        TimeSeries {
            interval_ns: FIRST_INTERVAL_NS,
            slots,
            current: 0,
            current_from_ns: 0,
            current_to_ns: FIRST_INTERVAL_NS,
        }
    }

    /// Records a latency taken `at_ns` after the start. Allocation-free,
    /// lock-free, syscall-free; a merge (every doubling of the run's length
    /// past 51 s) walks the 512 slots once.
    #[inline]
    pub fn record(&mut self, at_ns: u64, latency_ns: u64) {
        if at_ns < self.current_from_ns || at_ns >= self.current_to_ns {
            self.find_slot(at_ns);
        }
        // `find_slot` keeps the index in range; `get_mut` keeps the hot
        // loop free of a panic path all the same.
        if let Some(slot) = self.slots.get_mut(self.current) {
            slot.count += 1;
            slot.min_ns = slot.min_ns.min(latency_ns);
            slot.max_ns = slot.max_ns.max(latency_ns);
            // 2^64 ns is 584 years of latency in one slot: no wrap.
            slot.sum_ns = slot.sum_ns.wrapping_add(latency_ns);
        }
    }

    /// Where the out-of-line code [`Self::record`] calls lies: a timer
    /// thread runs it at every slot change, so it must stay mapped (a cold
    /// function, placed far from the loop).
    pub(crate) fn hot_code() -> usize {
        Self::find_slot as fn(&mut Self, u64) as usize
    }

    /// Points `current` at the slot of `at_ns`, merging pairs of slots
    /// while it lies past the last.
    #[cold]
    #[inline(never)]
    fn find_slot(&mut self, at_ns: u64) {
        let mut index = at_ns / self.interval_ns;
        while index >= SLOTS as u64 {
            self.merge_pairs();
            index = at_ns / self.interval_ns;
        }
        self.current = index as usize;
        self.current_from_ns = index * self.interval_ns;
        self.current_to_ns = self.current_from_ns.saturating_add(self.interval_ns);
    }

    fn merge_pairs(&mut self) {
        let half = SLOTS / 2;
        for i in 0..half {
            self.slots[i] = self.slots[2 * i].merge(self.slots[2 * i + 1]);
        }
        self.slots[half..].fill(Slot::default());
        self.interval_ns = self.interval_ns.saturating_mul(2);
        // The slots moved: the next sample finds its own again.
        self.current_to_ns = 0;
        self.current_from_ns = 1;
    }

    /// The current interval length (ns).
    pub fn interval_ns(&self) -> u64 {
        self.interval_ns
    }

    /// The intervals that hold samples, in time order.
    pub fn intervals(&self) -> LatencySeries {
        LatencySeries {
            interval_ns: self.interval_ns,
            intervals: self
                .slots
                .iter()
                .enumerate()
                .filter(|(_, s)| s.count > 0)
                .map(|(i, s)| Interval {
                    start_ns: i as u64 * self.interval_ns,
                    count: s.count,
                    min_ns: s.min_ns,
                    max_ns: s.max_ns,
                    mean_ns: s.sum_ns as f64 / s.count as f64,
                })
                .collect(),
        }
    }
}

/// One interval of a timer thread's run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Its start, from the release of the timer threads (ns).
    pub start_ns: u64,
    /// Samples taken in it.
    pub count: u64,
    /// Smallest latency (ns).
    pub min_ns: u64,
    /// Largest latency (ns).
    pub max_ns: u64,
    /// Mean latency (ns).
    pub mean_ns: f64,
}

/// Latency over time: the non-empty intervals of equal length.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySeries {
    /// Length of every interval (ns).
    pub interval_ns: u64,
    /// Intervals that hold samples (an interval with none is left out).
    pub intervals: Vec<Interval>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_run_keeps_first_intervals() {
        let mut s = TimeSeries::new();
        // 1 ms period for 1 s: ten intervals of 100 samples.
        for i in 0..1000u64 {
            s.record(i * 1_000_000, 1_000 + i);
        }
        let l = s.intervals();
        assert_eq!(l.interval_ns, FIRST_INTERVAL_NS);
        assert_eq!(l.intervals.len(), 10);
        assert_eq!(l.intervals[3].start_ns, 300_000_000);
        assert_eq!(l.intervals[3].count, 100);
        assert_eq!(l.intervals[3].min_ns, 1_300);
        assert_eq!(l.intervals[3].max_ns, 1_399);
        assert_eq!(l.intervals[3].mean_ns, 1_349.5);
    }

    #[test]
    fn long_run_merges_exactly_and_stays_bounded() {
        // Under emulation (.ci/run's boards) its size takes a minute: the
        // host's run of the same test is the one that counts.
        if std::env::var_os("RTLAB_TEST_EMULATED").is_some() {
            return;
        }
        // A "week" at a 10 ms period, with one spike in the middle.
        let week = 7 * 24 * 3600 * 1_000_000_000u64;
        let period = 10_000_000u64;
        let mut s = TimeSeries::new();
        let (mut n, mut sum, mut t) = (0u64, 0u128, 0u64);
        while t < week {
            let lat = if t == week / 2 {
                5_000_000
            } else {
                2_000 + t % 7
            };
            s.record(t, lat);
            n += 1;
            sum += u128::from(lat);
            t += period;
        }
        let l = s.intervals();
        assert!(l.intervals.len() <= SLOTS);
        assert!(l.intervals.len() > SLOTS / 4);
        assert_eq!(l.interval_ns, FIRST_INTERVAL_NS << 14);
        assert_eq!(l.intervals.iter().map(|i| i.count).sum::<u64>(), n);
        let total: f64 = l.intervals.iter().map(|i| i.mean_ns * i.count as f64).sum();
        assert!((total - sum as f64).abs() < 1e-6 * sum as f64);
        let spike = l.intervals.iter().find(|i| i.max_ns == 5_000_000).unwrap();
        assert!(spike.start_ns <= week / 2 && week / 2 < spike.start_ns + l.interval_ns);
        assert_eq!(l.intervals.iter().filter(|i| i.max_ns > 10_000).count(), 1);
        assert_eq!(l.intervals.iter().map(|i| i.min_ns).min(), Some(2_000));
    }

    #[test]
    fn gaps_are_left_out() {
        let mut s = TimeSeries::new();
        s.record(0, 5);
        s.record(2 * FIRST_INTERVAL_NS + 1, 7);
        let l = s.intervals();
        assert_eq!(
            l.intervals.iter().map(|i| i.start_ns).collect::<Vec<_>>(),
            vec![0, 2 * FIRST_INTERVAL_NS]
        );
    }

    #[test]
    fn every_sample_lands_in_the_interval_brute_force_puts_it_in() {
        // Deadlines that mostly advance by a period, with jumps (a stalled
        // thread), a sample far past the slots (merges) and one out of
        // order: the series equals grouping every sample by brute force
        // under the final interval length.
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut samples = Vec::new();
        let mut at = 0u64;
        for i in 0..20_000u64 {
            at += match next() % 100 {
                0 => next() % 3_000_000_000,
                _ => 1_000_000,
            };
            let when = if i == 7_000 { at / 2 } else { at };
            samples.push((when, next() % 50_000));
        }
        let mut series = TimeSeries::new();
        for &(at, l) in &samples {
            series.record(at, l);
        }
        let got = series.intervals();
        let width = got.interval_ns;
        let mut want: std::collections::BTreeMap<u64, (u64, u64, u64, u64)> = Default::default();
        for &(at, l) in &samples {
            let e = want.entry(at / width).or_insert((0, u64::MAX, 0, 0));
            *e = (e.0 + 1, e.1.min(l), e.2.max(l), e.3 + l);
        }
        assert_eq!(got.intervals.len(), want.len());
        for (g, (k, w)) in got.intervals.iter().zip(&want) {
            assert_eq!(g.start_ns, k * width);
            assert_eq!((g.count, g.min_ns, g.max_ns), (w.0, w.1, w.2));
            assert!((g.mean_ns - w.3 as f64 / w.0 as f64).abs() < 1e-6);
        }
    }
}

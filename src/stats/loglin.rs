//! The hot loop's log-linear counts: the buckets of an HDR histogram of 3
//! significant digits (hdrhistogram's `new_with_bounds(1, HDR_HIGHEST_NS,
//! 3)`), counted with a shift and a leading-zero count instead of the
//! crate's `record` (about 46 instructions a sample, with its checks, its
//! running totals and its min/max, which the recorder keeps anyway). At the
//! end they become that HDR histogram, bucket for bucket, for percentiles.

use hdrhistogram::Histogram;

/// log2 of half the sub-buckets of 3 significant digits (2048 sub-buckets).
const HALF_MAGNITUDE: u32 = 10;
/// The sub-bucket mask (2047): values below it are their own index.
const SUB_MASK: u64 = (1 << (HALF_MAGNITUDE + 1)) - 1;
/// hdrhistogram's `leading_zero_count_base` for a lowest value of 1.
const LEADING_ZERO_BASE: u32 = 64 - HALF_MAGNITUDE - 1;

/// The counts, one per HDR bucket.
#[derive(Debug, Clone)]
pub struct LogCounts {
    counts: Vec<u64>,
    highest: u64,
    sigfig: u8,
}

/// The HDR bucket index of `value` (hdrhistogram's `index_for` with a
/// lowest discernible value of 1 and 3 significant digits).
#[inline(always)]
fn index(value: u64) -> usize {
    let bucket = LEADING_ZERO_BASE - (value | SUB_MASK).leading_zeros();
    let sub = value >> bucket;
    (((bucket as u64 + 1) << HALF_MAGNITUDE) + sub - (1 << HALF_MAGNITUDE)) as usize
}

/// The lowest value of bucket `i`.
fn value_of(i: usize) -> u64 {
    let half = 1usize << HALF_MAGNITUDE;
    let bucket = (i >> HALF_MAGNITUDE) as i64 - 1;
    let mut sub = (i & (half - 1)) + half;
    let bucket = if bucket < 0 {
        sub -= half;
        0
    } else {
        bucket as u32
    };
    (sub as u64) << bucket
}

impl LogCounts {
    /// Counts for values up to `highest` (3 significant digits), every
    /// page written now: the hot loop takes no page fault.
    pub fn new(highest: u64) -> Result<Self, hdrhistogram::CreationError> {
        let sigfig = 3;
        let len = Histogram::<u64>::new_with_bounds(1, highest, sigfig)?.distinct_values();
        let mut counts = vec![1u64; len];
        std::hint::black_box(&mut counts);
        counts.fill(0);
        Ok(LogCounts {
            counts,
            highest,
            sigfig,
        })
    }

    /// Forgets every count (the buckets stay allocated).
    pub fn clear(&mut self) {
        self.counts.fill(0);
    }

    /// Counts `value`; false when it is past the last bucket.
    #[inline(always)]
    pub fn record(&mut self, value: u64) -> bool {
        match self.counts.get_mut(index(value)) {
            Some(c) => {
                *c += 1;
                true
            }
            None => false,
        }
    }

    /// The HDR histogram these counts are (each bucket's count at its
    /// lowest value: the same bucket); None only if the bounds accepted
    /// when the counts were made were refused now.
    pub fn histogram(&self) -> Option<Histogram<u64>> {
        let mut h = Histogram::new_with_bounds(1, self.highest, self.sigfig).ok()?;
        h.auto(false);
        for (i, &c) in self.counts.iter().enumerate().filter(|(_, c)| **c > 0) {
            // In range by construction: `value_of(i)` is in bucket `i`.
            let _ = h.record_n(value_of(i), c);
        }
        Some(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_lands_in_the_bucket_hdrhistogram_puts_it_in() {
        let highest = super::super::HDR_HIGHEST_NS;
        let mut ours = LogCounts::new(highest).unwrap();
        let mut theirs = Histogram::<u64>::new_with_bounds(1, highest, 3).unwrap();
        theirs.auto(false);
        // Every value below 70,000, then log-spread values to past the top.
        let mut values: Vec<u64> = (0..70_000).collect();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x >> (x % 64) as u32);
        }
        values.extend([highest - 1, highest, highest + 1, u64::MAX]);
        let (mut out_ours, mut out_theirs) = (0, 0);
        for &v in &values {
            out_ours += u64::from(!ours.record(v));
            out_theirs += u64::from(theirs.record(v).is_err());
        }
        assert_eq!(out_ours, out_theirs);
        let rebuilt = ours.histogram().unwrap();
        assert_eq!(rebuilt.len(), theirs.len());
        for q in [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0] {
            assert_eq!(
                rebuilt.value_at_quantile(q),
                theirs.value_at_quantile(q),
                "q {q}"
            );
        }
        let a: Vec<(u64, u64)> = rebuilt
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        let b: Vec<(u64, u64)> = theirs
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        assert_eq!(a, b);
    }
}

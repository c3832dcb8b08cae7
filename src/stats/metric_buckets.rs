//! The metrics histogram's buckets (Prometheus' `le` bounds): from a few
//! µs to tens of ms, and the bucket of a latency in a table look-up and one
//! comparison, cheap enough for a timer thread's hot loop. Shared by the
//! timer threads, their IRQ side and task latency.

/// Upper bounds (ns) of the metrics histogram's buckets, from a few µs to
/// tens of ms (a last bucket holds the rest): what real-time work needs to
/// tell apart, few enough for a fleet's time series.
pub const METRIC_BOUNDS_NS: [u64; 14] = [
    2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000,
    5_000_000, 10_000_000, 20_000_000, 50_000_000,
];
/// Buckets of the metrics histogram: one per bound, and the rest.
pub const METRIC_BUCKETS: usize = METRIC_BOUNDS_NS.len() + 1;

/// Per bit length of a latency: how many bounds are shorter, and the bound
/// of that length if there is one (each bound has a bit length of its own).
const BY_BITS: [(u8, u64); 65] = {
    let mut t = [(0u8, u64::MAX); 65];
    let mut bits = 0;
    while bits <= 64 {
        let mut i = 0;
        while i < METRIC_BOUNDS_NS.len() {
            let b = METRIC_BOUNDS_NS[i];
            let len = 64 - b.leading_zeros() as usize;
            if len < bits {
                t[bits].0 += 1;
            } else if len == bits {
                t[bits].1 = b;
            }
            i += 1;
        }
        bits += 1;
    }
    t
};

/// The bucket of a latency: the number of bounds below it, from its bit
/// length (a table) and one comparison, whatever the latency.
#[inline(always)]
pub fn metric_bucket(latency_ns: u64) -> usize {
    let (below, bound) = BY_BITS[64 - latency_ns.leading_zeros() as usize];
    below as usize + usize::from(latency_ns > bound)
}

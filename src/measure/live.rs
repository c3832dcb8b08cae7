//! Live counters of a timer thread: written by the thread after each sample,
//! read by the main thread for the live table, without locks.
//!
//! A seqlock: the writer makes the sequence odd, stores the fields, makes it
//! even again; a reader retries if the sequence was odd or changed while it
//! read. The writer never waits and never issues a locked instruction (plain
//! stores only), so publishing costs the hot loop a few cycles. The struct is
//! cache-line aligned so that threads do not share lines.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering, fence};

pub use crate::stats::metric_buckets::{METRIC_BOUNDS_NS, METRIC_BUCKETS, metric_bucket};

/// A consistent view of a timer thread's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LiveSnapshot {
    /// Samples so far.
    pub samples: u64,
    /// Smallest latency (ns), u64::MAX before the first sample.
    pub min_ns: u64,
    /// Largest latency (ns).
    pub max_ns: u64,
    /// Last latency (ns).
    pub cur_ns: u64,
    /// Sum of latencies (ns), for the mean.
    pub sum_ns: u64,
    /// Wake-ups at or above the flight recorder's threshold so far.
    pub over: u64,
    /// The last of them: its sample number,
    pub over_sample: u64,
    /// its deadline (CLOCK_MONOTONIC, ns),
    pub over_deadline_ns: u64,
    /// its latency (ns),
    pub over_latency_ns: u64,
    /// and the CPU it woke on (`u64::MAX` when unknown).
    pub over_cpu: u64,
    /// Wake-ups so late that the next period had begun.
    pub overruns: u64,
    /// Periods skipped by them.
    pub missed_periods: u64,
    /// The window the next field is for (see [`LiveCounters::next_window`]).
    pub window: u64,
    /// The largest latency of that window (ns).
    pub window_max_ns: u64,
}

impl LiveSnapshot {
    /// Mean latency (ns), 0 before the first sample.
    pub fn mean_ns(&self) -> u64 {
        self.sum_ns.checked_div(self.samples).unwrap_or(0)
    }
}

/// The shared counters of one timer thread.
#[derive(Debug, Default)]
#[repr(C, align(64))]
pub struct LiveCounters {
    seq: AtomicU64,
    samples: AtomicU64,
    min_ns: AtomicU64,
    max_ns: AtomicU64,
    cur_ns: AtomicU64,
    sum_ns: AtomicU64,
    over: AtomicU64,
    over_sample: AtomicU64,
    over_deadline_ns: AtomicU64,
    over_latency_ns: AtomicU64,
    over_cpu: AtomicU64,
    overruns: AtomicU64,
    missed_periods: AtomicU64,
    window_seen: AtomicU64,
    window_max_ns: AtomicU64,
    /// The metrics histogram: samples per bucket of [`METRIC_BOUNDS_NS`].
    /// Written by the timer thread alone (plain load and store).
    buckets: [AtomicU64; METRIC_BUCKETS],
    /// The window being measured, moved on by the main thread.
    window: AtomicU64,
    /// Kernel thread id, set once the thread started.
    pub tid: AtomicI32,
    /// The thread has ended (lifetime reached, stopped, or failed).
    pub finished: AtomicBool,
    /// The thread could not set itself up (affinity or policy refused).
    pub failed: AtomicBool,
    /// The kernel's counts for the thread when it was released (faults,
    /// switches; u64::MAX: unknown): kept here, out of the loop's registers
    /// (a local held across the loop cost 10 instructions a sample).
    usage_at_release: [AtomicU64; 4],
    /// The first deadline measured (CLOCK_MONOTONIC ns; 0 until known):
    /// the warm-up's end.
    pub first_deadline_ns: AtomicU64,
}

impl LiveCounters {
    /// Keeps the calling thread's counts now (at its release).
    #[inline(never)]
    pub fn keep_release_usage(&self) {
        let u = crate::sys::os::thread_usage();
        let values = u.map_or([u64::MAX; 4], |u| {
            [
                u.minor_faults,
                u.major_faults,
                u.voluntary_switches,
                u.involuntary_switches,
            ]
        });
        for (slot, v) in self.usage_at_release.iter().zip(values) {
            slot.store(v, Ordering::Relaxed);
        }
    }

    /// The calling thread's counts since [`Self::keep_release_usage`].
    #[inline(never)]
    pub fn usage_since_release(&self) -> Option<crate::sys::os::ThreadUsage> {
        let [a, b, c, d] = [0, 1, 2, 3].map(|i| self.usage_at_release[i].load(Ordering::Relaxed));
        if a == u64::MAX {
            return None;
        }
        let start = crate::sys::os::ThreadUsage {
            minor_faults: a,
            major_faults: b,
            voluntary_switches: c,
            involuntary_switches: d,
        };
        crate::sys::os::thread_usage().map(|now| now.since(&start))
    }

    /// Publishes new values. Only the owning timer thread may call this.
    #[inline(always)]
    pub fn publish(&self, s: &LiveSnapshot) {
        let seq = self.seq.load(Ordering::Relaxed);
        self.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        self.samples.store(s.samples, Ordering::Relaxed);
        self.min_ns.store(s.min_ns, Ordering::Relaxed);
        self.max_ns.store(s.max_ns, Ordering::Relaxed);
        self.cur_ns.store(s.cur_ns, Ordering::Relaxed);
        self.sum_ns.store(s.sum_ns, Ordering::Relaxed);
        self.over.store(s.over, Ordering::Relaxed);
        self.over_sample.store(s.over_sample, Ordering::Relaxed);
        self.over_deadline_ns
            .store(s.over_deadline_ns, Ordering::Relaxed);
        self.over_latency_ns
            .store(s.over_latency_ns, Ordering::Relaxed);
        self.over_cpu.store(s.over_cpu, Ordering::Relaxed);
        self.overruns.store(s.overruns, Ordering::Relaxed);
        self.missed_periods
            .store(s.missed_periods, Ordering::Relaxed);
        self.window_seen.store(s.window, Ordering::Relaxed);
        self.window_max_ns.store(s.window_max_ns, Ordering::Relaxed);
        self.seq.store(seq.wrapping_add(2), Ordering::Release);
    }

    /// Counts a sample in the metrics histogram. Only the owning timer
    /// thread may call this (one writer: a plain load and store).
    #[inline(always)]
    pub fn count(&self, latency_ns: u64) {
        let b = &self.buckets[metric_bucket(latency_ns)];
        b.store(b.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }

    /// The window the timer thread should measure its max for now.
    #[inline(always)]
    pub fn window(&self) -> u64 {
        self.window.load(Ordering::Relaxed)
    }

    /// The metrics histogram now (a sample may land between two buckets'
    /// reads: the sum of the buckets is the count that goes with them).
    pub fn buckets(&self) -> [u64; METRIC_BUCKETS] {
        std::array::from_fn(|i| self.buckets[i].load(Ordering::Relaxed))
    }

    /// Ends the current max window: the largest latency since the last
    /// call (None when no sample came), and starts the next. Only the main
    /// thread may call this.
    pub fn next_window(&self) -> Option<u64> {
        let current = self.window.load(Ordering::Relaxed);
        let s = self.read();
        self.window
            .store(current.wrapping_add(1), Ordering::Relaxed);
        (s.window == current && s.samples > 0).then_some(s.window_max_ns)
    }

    /// Reads a consistent snapshot (retries while a write is under way).
    pub fn read(&self) -> LiveSnapshot {
        loop {
            let before = self.seq.load(Ordering::Acquire);
            if before % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let s = LiveSnapshot {
                samples: self.samples.load(Ordering::Relaxed),
                min_ns: self.min_ns.load(Ordering::Relaxed),
                max_ns: self.max_ns.load(Ordering::Relaxed),
                cur_ns: self.cur_ns.load(Ordering::Relaxed),
                sum_ns: self.sum_ns.load(Ordering::Relaxed),
                over: self.over.load(Ordering::Relaxed),
                over_sample: self.over_sample.load(Ordering::Relaxed),
                over_deadline_ns: self.over_deadline_ns.load(Ordering::Relaxed),
                over_latency_ns: self.over_latency_ns.load(Ordering::Relaxed),
                over_cpu: self.over_cpu.load(Ordering::Relaxed),
                overruns: self.overruns.load(Ordering::Relaxed),
                missed_periods: self.missed_periods.load(Ordering::Relaxed),
                window: self.window_seen.load(Ordering::Relaxed),
                window_max_ns: self.window_max_ns.load(Ordering::Relaxed),
            };
            fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) == before {
                return s;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn reader_never_sees_a_torn_snapshot() {
        let live = Arc::new(LiveCounters::default());
        let writer = {
            let live = live.clone();
            std::thread::spawn(move || {
                for i in 1..=200_000u64 {
                    // Every field derived from i: a torn read would mix two i.
                    live.publish(&LiveSnapshot {
                        samples: i,
                        min_ns: i,
                        max_ns: i,
                        cur_ns: i,
                        sum_ns: i,
                        over: i,
                        over_sample: i,
                        over_deadline_ns: i,
                        over_latency_ns: i,
                        over_cpu: i,
                        ..LiveSnapshot::default()
                    });
                }
            })
        };
        let mut last = 0;
        while !writer.is_finished() {
            let s = live.read();
            assert!(s.samples == s.min_ns && s.min_ns == s.max_ns && s.max_ns == s.sum_ns);
            assert!(s.over == s.samples && s.over_latency_ns == s.over_deadline_ns);
            assert!(s.samples >= last, "went backwards");
            last = s.samples;
        }
        writer.join().unwrap();
        assert_eq!(live.read().samples, 200_000);
        assert_eq!(live.read().mean_ns(), 1);
    }

    #[test]
    fn buckets_and_windows_count_every_sample_once() {
        let live = LiveCounters::default();
        let latencies = [1_000, 2_000, 2_001, 50_000_000, 50_000_001, u64::MAX];
        for l in latencies {
            live.count(l);
        }
        let b = live.buckets();
        assert_eq!(b.iter().sum::<u64>(), latencies.len() as u64);
        assert_eq!(
            (b[0], b[1], b[METRIC_BUCKETS - 2], b[METRIC_BUCKETS - 1]),
            (2, 1, 1, 2)
        );
        // A window with samples gives their max; one without, none.
        let w = live.window();
        live.publish(&LiveSnapshot {
            samples: 3,
            window: w,
            window_max_ns: 700,
            ..LiveSnapshot::default()
        });
        assert_eq!(live.next_window(), Some(700));
        assert_eq!(live.next_window(), None);
    }

    #[test]
    fn a_latencys_bucket_is_the_first_bound_it_does_not_exceed() {
        let by_scan = |v: u64| {
            METRIC_BOUNDS_NS
                .iter()
                .position(|&b| v <= b)
                .unwrap_or(METRIC_BOUNDS_NS.len())
        };
        let mut values = vec![0, 1, u64::MAX, u64::MAX - 1];
        for &b in &METRIC_BOUNDS_NS {
            values.extend([b - 1, b, b + 1]);
        }
        for bits in 0..64 {
            values.extend([(1u64 << bits) - 1, 1u64 << bits, (1u64 << bits) + 1]);
        }
        values.extend((0..200_000).map(|i| i * 397));
        for v in values {
            assert_eq!(metric_bucket(v), by_scan(v), "{v}");
        }
    }
}

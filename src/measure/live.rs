//! Live counters of a timer thread: written by the thread after each sample,
//! read by the main thread for the live table, without locks.
//!
//! A seqlock: the writer makes the sequence odd, stores the fields, makes it
//! even again; a reader retries if the sequence was odd or changed while it
//! read. The writer never waits and never issues a locked instruction (plain
//! stores only), so publishing costs the hot loop a few cycles. The struct is
//! cache-line aligned so that threads do not share lines.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering, fence};

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
    /// Kernel thread id, set once the thread started.
    pub tid: AtomicI32,
    /// The thread has ended (lifetime reached, stopped, or failed).
    pub finished: AtomicBool,
    /// The thread could not set itself up (affinity or policy refused).
    pub failed: AtomicBool,
}

impl LiveCounters {
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
        self.seq.store(seq.wrapping_add(2), Ordering::Release);
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
}

//! The worst wake-ups of a timer thread, kept with their time: the N
//! largest latencies of the run, and every latency at or above a threshold
//! up to a bound (cyclictest's `--spike` list, without its cost).
//!
//! The hot loop calls [`Spikes::record`] for every sample: an ordinary
//! sample costs one or two comparisons. Both lists are allocated and
//! touched before the loop starts, so keeping a spike allocates nothing.
//! Only a kept sample asks for its CPU (one `getcpu`), so the thread makes
//! no extra call for an ordinary sample once the N worst are filled.

use serde::{Deserialize, Serialize};

/// One kept wake-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spike {
    /// Its place in the thread's samples (0 = the first).
    pub sample: u64,
    /// Its deadline, from the release of the timer threads (ns).
    pub offset_ns: u64,
    /// Its deadline on CLOCK_MONOTONIC (ns): the clock of kernel traces.
    pub deadline_ns: u64,
    /// How late the thread woke (ns).
    pub latency_ns: u64,
    /// The CPU it woke on, when known.
    pub cpu: Option<usize>,
}

/// What to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpikeSpec {
    /// How many of the worst samples to keep (0: none).
    pub worst: usize,
    /// Keep every sample at or above this latency (ns), if set.
    pub threshold_ns: Option<u64>,
    /// At most this many samples above the threshold (the rest are counted).
    pub max_over: usize,
}

impl Default for SpikeSpec {
    fn default() -> Self {
        SpikeSpec {
            worst: DEFAULT_WORST,
            threshold_ns: None,
            max_over: DEFAULT_MAX_OVER,
        }
    }
}

/// `spikes.worst` when not given.
pub const DEFAULT_WORST: usize = 20;
/// `spikes.max` when not given.
pub const DEFAULT_MAX_OVER: usize = 1000;
/// Largest `spikes.worst` and `spikes.max` (bounds memory: 40 bytes each).
pub const MAX_KEPT: usize = 100_000;

/// The kept spikes of one thread, as the result shows them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpikeList {
    /// The worst samples, worst first (ties: earliest first).
    pub worst: Vec<Spike>,
    /// The threshold (ns), if one was set.
    pub threshold_ns: Option<u64>,
    /// Samples at or above it, in time order, up to the bound.
    pub over_threshold: Vec<Spike>,
    /// How many samples were at or above it in all.
    pub over_threshold_total: u64,
}

/// The keeper the hot loop writes into.
#[derive(Debug, Clone)]
pub struct Spikes {
    spec: SpikeSpec,
    /// The worst so far, unordered; `worst.len() == spec.worst` once full.
    worst: Vec<Spike>,
    /// Index of the smallest kept latency, once full.
    floor_at: usize,
    /// The latency a sample must exceed to enter `worst` (0 until full:
    /// every sample enters).
    floor: u64,
    /// The smallest latency [`Spikes::wants`]: one comparison a sample.
    bar: u64,
    over: Vec<Spike>,
    over_total: u64,
}

impl Spikes {
    /// A keeper for `spec`, its memory allocated and touched now.
    pub fn new(spec: SpikeSpec) -> Self {
        let spec = SpikeSpec {
            worst: spec.worst.min(MAX_KEPT),
            max_over: spec.max_over.min(MAX_KEPT),
            ..spec
        };
        let touch = |n: usize| {
            let zero = Spike {
                sample: 0,
                offset_ns: 0,
                deadline_ns: 0,
                latency_ns: 0,
                cpu: None,
            };
            let mut v = vec![zero; n];
            std::hint::black_box(&mut v);
            v.clear();
            v
        };
        let mut s = Spikes {
            worst: touch(spec.worst),
            over: touch(spec.max_over),
            spec,
            floor_at: 0,
            floor: 0,
            bar: 0,
            over_total: 0,
        };
        s.rebar();
        s
    }

    /// The bar from the threshold and the worst kept so far: a sample over
    /// the threshold, or one that enters the worst (any while they are not
    /// full, then one above the smallest kept).
    fn rebar(&mut self) {
        let by_worst = if self.spec.worst == 0 {
            u64::MAX
        } else if self.worst.len() < self.spec.worst {
            0
        } else {
            self.floor.saturating_add(1)
        };
        self.bar = by_worst.min(self.spec.threshold_ns.unwrap_or(u64::MAX));
    }

    /// Whether the sample of `latency_ns` is one to keep: the only test an
    /// ordinary sample pays.
    #[inline(always)]
    pub fn wants(&self, latency_ns: u64) -> bool {
        latency_ns >= self.bar
    }

    /// Keeps `spike` where it belongs (call when [`Spikes::wants`] it).
    pub fn keep(&mut self, spike: Spike) {
        if self
            .spec
            .threshold_ns
            .is_some_and(|t| spike.latency_ns >= t)
        {
            self.over_total += 1;
            if self.over.len() < self.spec.max_over {
                self.over.push(spike);
            }
        }
        if self.spec.worst == 0 {
            return;
        }
        if self.worst.len() < self.spec.worst {
            self.worst.push(spike);
            if self.worst.len() == self.spec.worst {
                self.refloor();
            }
        } else if spike.latency_ns > self.floor {
            self.worst[self.floor_at] = spike;
            self.refloor();
        }
        self.rebar();
    }

    /// Finds the smallest kept latency (the latest of equals, so that ties
    /// keep the earliest samples).
    fn refloor(&mut self) {
        let mut at = 0;
        for (i, s) in self.worst.iter().enumerate() {
            let m = &self.worst[at];
            if (s.latency_ns, std::cmp::Reverse(s.sample))
                < (m.latency_ns, std::cmp::Reverse(m.sample))
            {
                at = i;
            }
        }
        self.floor_at = at;
        self.floor = self.worst.get(at).map_or(0, |s| s.latency_ns);
    }

    /// The kept spikes, worst first.
    pub fn list(&self) -> SpikeList {
        let mut worst = self.worst.clone();
        worst.sort_by_key(|s| (std::cmp::Reverse(s.latency_ns), s.sample));
        SpikeList {
            worst,
            threshold_ns: self.spec.threshold_ns,
            over_threshold: self.over.clone(),
            over_threshold_total: self.over_total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spike(sample: u64, latency_ns: u64) -> Spike {
        Spike {
            sample,
            offset_ns: sample * 1000,
            deadline_ns: 5_000_000 + sample * 1000,
            latency_ns,
            cpu: Some(1),
        }
    }

    fn run(spec: SpikeSpec, xs: &[u64]) -> SpikeList {
        let mut s = Spikes::new(spec);
        for (i, &x) in xs.iter().enumerate() {
            if s.wants(x) {
                s.keep(spike(i as u64, x));
            }
        }
        s.list()
    }

    #[test]
    fn keeps_exactly_the_worst_as_a_sort_would() {
        // Brute force: every sample sorted by (latency desc, sample asc).
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let xs: Vec<u64> = (0..20_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % 5_000 // many ties
            })
            .collect();
        for worst in [0, 1, 7, 20, 500] {
            let got = run(
                SpikeSpec {
                    worst,
                    threshold_ns: None,
                    max_over: 0,
                },
                &xs,
            );
            let mut all: Vec<(u64, u64)> =
                xs.iter().enumerate().map(|(i, &l)| (l, i as u64)).collect();
            all.sort_by_key(|&(l, i)| (std::cmp::Reverse(l), i));
            let want: Vec<(u64, u64)> = all.into_iter().take(worst).collect();
            let have: Vec<(u64, u64)> =
                got.worst.iter().map(|s| (s.latency_ns, s.sample)).collect();
            assert_eq!(have, want, "worst {worst}");
        }
    }

    #[test]
    fn the_threshold_list_is_bounded_and_counts_the_rest() {
        let xs = [5, 100, 3, 100, 250, 99, 400, 100];
        let got = run(
            SpikeSpec {
                worst: 2,
                threshold_ns: Some(100),
                max_over: 3,
            },
            &xs,
        );
        let over: Vec<u64> = got.over_threshold.iter().map(|s| s.sample).collect();
        assert_eq!(over, [1, 3, 4]);
        assert_eq!(got.over_threshold_total, 5);
        let worst: Vec<u64> = got.worst.iter().map(|s| s.latency_ns).collect();
        assert_eq!(worst, [400, 250]);
    }

    #[test]
    fn an_ordinary_sample_is_not_wanted_once_full() {
        let mut s = Spikes::new(SpikeSpec {
            worst: 2,
            threshold_ns: Some(1_000),
            max_over: 10,
        });
        for (i, x) in [50, 60].into_iter().enumerate() {
            assert!(s.wants(x));
            s.keep(spike(i as u64, x));
        }
        assert!(!s.wants(40) && !s.wants(50));
        assert!(s.wants(51) && s.wants(1_000));
    }

    #[test]
    fn the_one_comparison_wants_what_the_rule_wants() {
        // The rule written out: over the threshold, or entering the worst
        // (any while not full, then above the smallest kept).
        let rule = |s: &Spikes, l: u64| {
            (s.spec.worst > 0 && (s.worst.len() < s.spec.worst || l > s.floor))
                || s.spec.threshold_ns.is_some_and(|t| l >= t)
        };
        let mut x = 0x1234_5678_9abc_def1u64;
        for (worst, threshold) in [
            (0, None),
            (0, Some(500)),
            (5, None),
            (5, Some(700)),
            (1, Some(0)),
        ] {
            let mut s = Spikes::new(SpikeSpec {
                worst,
                threshold_ns: threshold,
                max_over: 50,
            });
            for i in 0..5_000u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let l = x % 1000;
                assert_eq!(
                    s.wants(l),
                    rule(&s, l),
                    "worst {worst} threshold {threshold:?} at {i}"
                );
                if s.wants(l) {
                    s.keep(spike(i, l));
                }
            }
        }
    }
}

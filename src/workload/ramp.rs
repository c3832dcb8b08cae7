//! The governor experiment (`rtlab cpufreq ramp`): a real-time thread on one
//! CPU first sleeps (so the governor sees an idle CPU and lowers its speed),
//! then runs back-to-back busy loops, each calibrated to a few hundred µs at
//! full speed, and timestamps every one. Under `ondemand` the first loops are
//! slow until the governor's next sampling raises the frequency: the time
//! until the loops reach full speed is the *ramp latency*.

use super::hog::spin;
use crate::sys::os::{self, Policy, Sched};
use serde::Serialize;
use std::time::Duration;

/// How the loops are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RampOptions {
    /// The CPU of the thread.
    pub cpu: usize,
    /// Its SCHED_FIFO priority.
    pub priority: i32,
    /// Loops per governor.
    pub loops: usize,
    /// Duration of one loop at full speed (µs).
    pub loop_us: u64,
    /// Idle time before the loops (lets the governor drop the speed).
    pub idle: Duration,
}

/// One loop: when it started (µs after the first) and how long it took.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LoopSample {
    /// Start, µs after the first loop's start.
    pub start_us: f64,
    /// Duration (µs).
    pub duration_us: f64,
}

/// The loops under one governor and what they show.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RampRun {
    /// The governor (or `(no cpufreq)`).
    pub governor: String,
    /// Every loop.
    pub loops: Vec<LoopSample>,
    /// Full-speed loop duration: median of the last quarter (µs).
    pub full_speed_us: f64,
    /// The first loop's duration (µs).
    pub first_us: f64,
    /// The slowest loop (µs).
    pub slowest_us: f64,
    /// Time from the first loop until the loops run at full speed (within
    /// [`FULL_SPEED_TOLERANCE`] for [`SETTLED_LOOPS`] loops in a row); None
    /// if they never settle.
    pub ramp_us: Option<f64>,
}

/// A loop within this fraction of the full-speed duration counts as full speed.
pub const FULL_SPEED_TOLERANCE: f64 = 0.10;
/// Consecutive full-speed loops that make the speed settled.
pub const SETTLED_LOOPS: usize = 5;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() { 0.0 } else { v[v.len() / 2] }
}

/// Analyses loop samples taken under `governor`.
pub fn analyse(governor: &str, loops: Vec<LoopSample>) -> RampRun {
    let n = loops.len();
    let mut tail: Vec<f64> = loops[n - n / 4..].iter().map(|l| l.duration_us).collect();
    if tail.is_empty() {
        tail = loops.iter().map(|l| l.duration_us).collect();
    }
    let full = median(&mut tail);
    let fast = |l: &LoopSample| l.duration_us <= full * (1.0 + FULL_SPEED_TOLERANCE);
    let settled = (0..n).find(|&i| loops[i..n.min(i + SETTLED_LOOPS)].iter().all(fast));
    RampRun {
        governor: governor.to_string(),
        full_speed_us: full,
        first_us: loops.first().map_or(0.0, |l| l.duration_us),
        slowest_us: loops.iter().map(|l| l.duration_us).fold(0.0, f64::max),
        ramp_us: settled.map(|i| loops[i].start_us),
        loops,
    }
}

/// Iterations of [`spin`] that take about `loop_us` on this thread now
/// (after a warm-up that brings the CPU to speed).
pub fn calibrate(loop_us: u64) -> u64 {
    let warm_until = os::monotonic_ns() + 200_000_000;
    while os::monotonic_ns() < warm_until {
        std::hint::black_box(spin(10_000));
    }
    let probe = 10_000;
    let best_ns = (0..20)
        .map(|_| {
            let t0 = os::monotonic_ns();
            std::hint::black_box(spin(probe));
            os::monotonic_ns() - t0
        })
        .min()
        .unwrap_or(1)
        .max(1);
    (loop_us * 1000 * probe / best_ns).max(1)
}

/// Runs `loops` loops of `iterations` after `idle`, timestamping each.
/// Allocates before the loops only.
pub fn time_loops(iterations: u64, loops: usize, idle: Duration) -> Vec<LoopSample> {
    let mut stamps: Vec<u64> = Vec::with_capacity(loops + 1);
    std::thread::sleep(idle);
    stamps.push(os::monotonic_ns());
    for _ in 0..loops {
        std::hint::black_box(spin(iterations));
        stamps.push(os::monotonic_ns());
    }
    let t0 = stamps[0];
    stamps
        .windows(2)
        .map(|w| LoopSample {
            start_us: (w[0] - t0) as f64 / 1e3,
            duration_us: (w[1] - w[0]) as f64 / 1e3,
        })
        .collect()
}

/// The experiment's thread: pinned and FIFO, it calibrates once, then for
/// each governor calls `before(governor)` (which sets it) and times the
/// loops. Errors if the thread cannot be placed or scheduled.
pub fn run(
    opts: RampOptions,
    governors: &[String],
    mut before: impl FnMut(&str) -> Result<(), String> + Send,
) -> Result<(u64, Vec<RampRun>), String> {
    std::thread::scope(|s| {
        s.spawn(move || {
            os::set_affinity(0, &[opts.cpu])
                .map_err(|e| format!("cannot pin to CPU {}: {e}", opts.cpu))?;
            os::set_sched(
                0,
                Sched {
                    policy: Policy::Fifo,
                    priority: opts.priority,
                },
            )
            .map_err(|e| format!("cannot take SCHED_FIFO {}: {e}", opts.priority))?;
            let iterations = calibrate(opts.loop_us);
            let mut runs = Vec::new();
            for g in governors {
                before(g)?;
                runs.push(analyse(g, time_loops(iterations, opts.loops, opts.idle)));
            }
            Ok((iterations, runs))
        })
        .join()
        .map_err(|_| "the ramp thread panicked".to_string())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(durations: &[f64]) -> Vec<LoopSample> {
        let mut t = 0.0;
        durations
            .iter()
            .map(|&d| {
                let s = LoopSample {
                    start_us: t,
                    duration_us: d,
                };
                t += d;
                s
            })
            .collect()
    }

    #[test]
    fn finds_the_ramp_of_a_slow_start() {
        let mut d = vec![1000.0, 900.0, 800.0, 600.0];
        d.extend(std::iter::repeat_n(300.0, 20));
        let r = analyse("ondemand", samples(&d));
        assert_eq!(r.full_speed_us, 300.0);
        assert_eq!(r.first_us, 1000.0);
        assert_eq!(r.slowest_us, 1000.0);
        assert_eq!(r.ramp_us, Some(3300.0));
    }

    #[test]
    fn a_noisy_spike_after_full_speed_does_not_move_the_ramp_much() {
        let mut d = vec![300.0; 10];
        d[7] = 900.0;
        d.extend(std::iter::repeat_n(300.0, 10));
        let r = analyse("performance", samples(&d));
        assert_eq!(r.ramp_us, Some(0.0));
    }

    #[test]
    fn loops_are_timed_and_calibrated_near_the_target() {
        let it = calibrate(200);
        assert!(it > 0);
        let s = time_loops(it, 20, Duration::from_millis(1));
        assert_eq!(s.len(), 20);
        assert!(
            s.windows(2)
                .all(|w| w[1].start_us >= w[0].start_us + w[0].duration_us - 1e-6)
        );
        let r = analyse("(no cpufreq)", s);
        assert!(r.full_speed_us > 0.0);
    }
}

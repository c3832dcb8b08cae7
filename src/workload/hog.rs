//! `rtlab hog`: the built-in CPU hog of the bandwidth experiment. It spins
//! on a fixed unit of arithmetic and prints how many units it completed per
//! interval, so that a CFS quota shows as a lower rate: alone, one hog runs
//! at the CPU's full rate; under a 25% quota, at about a quarter of it.

use std::hint::black_box;
use std::io::Write;
use std::time::{Duration, Instant};

/// Iterations of [`spin`] in one hog loop.
pub const LOOP_ITERATIONS: u64 = 1000;

/// A fixed amount of integer work (`iterations` steps of a linear
/// congruential generator) that the compiler cannot remove or shorten.
pub fn spin(iterations: u64) -> u64 {
    let mut x = black_box(0x2545_f491_4f6c_dd1d_u64);
    for _ in 0..iterations {
        x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
    }
    x
}

/// Spins until `duration` (forever when None), writing one line per
/// `interval` to `out`: `hog: <loops/s> loops/s`, then a summary line (as
/// JSON lines with `json`). Stops early when a write fails (its reader is
/// gone).
pub fn run(interval: Duration, duration: Option<Duration>, json: bool, out: &mut dyn Write) {
    let start = Instant::now();
    let (mut loops, mut total) = (0u64, 0u64);
    let mut mark = start;
    loop {
        black_box(spin(LOOP_ITERATIONS));
        loops += 1;
        // Checking the clock every 64 loops keeps its cost out of the rate.
        if loops % 64 != 0 {
            continue;
        }
        let now = Instant::now();
        let done = duration.is_some_and(|d| now - start >= d);
        if now - mark >= interval || done {
            let rate = loops as f64 / (now - mark).as_secs_f64();
            total += loops;
            let at = (now - start).as_secs_f64();
            let line = if json {
                format!("{{\"at_s\":{at:.3},\"loops_per_s\":{rate:.0}}}")
            } else {
                format!("hog: {rate:.0} loops/s")
            };
            if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
                return;
            }
            loops = 0;
            mark = now;
        }
        if done {
            let secs = (now - start).as_secs_f64();
            let mean = total as f64 / secs;
            let _ = if json {
                writeln!(
                    out,
                    "{{\"total_loops\":{total},\"seconds\":{secs:.3},\"mean_loops_per_s\":{mean:.0}}}"
                )
            } else {
                writeln!(
                    out,
                    "hog: total {total} loops in {secs:.3} s, mean {mean:.0} loops/s"
                )
            };
            return;
        }
    }
}

/// Spins for `burst` at the start of every `every`, sleeping in between,
/// until `duration` (forever when None): bursts at known times of a known
/// length, the culprit the flight recorder's tests inject.
pub fn bursts(burst: Duration, every: Duration, duration: Option<Duration>) {
    let start = Instant::now();
    let mut next = start;
    while duration.is_none_or(|d| start.elapsed() < d) {
        let until = next + burst;
        while Instant::now() < until {
            black_box(spin(LOOP_ITERATIONS));
        }
        next += every.max(burst);
        if let Some(rest) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(rest);
        } else {
            next = Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spin_is_deterministic_and_depends_on_its_length() {
        assert_eq!(spin(10), spin(10));
        assert_ne!(spin(10), spin(11));
    }

    #[test]
    fn prints_a_rate_per_interval_and_a_summary() {
        let mut out = Vec::new();
        run(
            Duration::from_millis(20),
            Some(Duration::from_millis(70)),
            false,
            &mut out,
        );
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() >= 3, "{text}");
        assert!(lines[0].starts_with("hog: ") && lines[0].ends_with(" loops/s"));
        assert!(lines.last().unwrap().starts_with("hog: total "));
        let mut out = Vec::new();
        run(
            Duration::from_millis(20),
            Some(Duration::from_millis(50)),
            true,
            &mut out,
        );
        for line in String::from_utf8(out).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(
                v.get("loops_per_s").or(v.get("mean_loops_per_s")).is_some(),
                "{line}"
            );
        }
    }
}

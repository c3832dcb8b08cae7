//! CPU load from two `/proc/stat` readings: data in, percentages out.

use crate::sys::proc_stat::{CpuTimes, ProcStat};
use serde::Serialize;

/// Busy percentage per CPU and overall, over one interval.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct CpuLoad {
    /// Seconds since the start of the run at the end of the interval.
    pub at_s: f64,
    /// Length of the interval (s).
    pub span_s: f64,
    /// (CPU, busy %) for each CPU.
    pub per_cpu: Vec<(usize, f64)>,
    /// Busy % over all CPUs.
    pub global: f64,
}

fn busy_percent(before: CpuTimes, after: CpuTimes) -> f64 {
    let total = after.total.saturating_sub(before.total);
    if total == 0 {
        return 0.0;
    }
    let idle = after.idle.saturating_sub(before.idle).min(total);
    100.0 * (total - idle) as f64 / total as f64
}

/// Each CPU of `after` with its counters in `before` and in `after`; a CPU
/// missing from `before` (brought online since) is taken as unchanged.
fn per_cpu_pairs<'a>(
    before: &'a ProcStat,
    after: &'a ProcStat,
) -> impl Iterator<Item = (usize, CpuTimes, CpuTimes)> + 'a {
    after.per_cpu.iter().map(|&(cpu, a)| {
        let b = before
            .per_cpu
            .iter()
            .find(|(c, _)| *c == cpu)
            .map_or(a, |&(_, b)| b);
        (cpu, b, a)
    })
}

/// The load between two readings.
pub fn between(before: &ProcStat, after: &ProcStat, at_s: f64, span_s: f64) -> CpuLoad {
    let per_cpu = per_cpu_pairs(before, after)
        .map(|(cpu, b, a)| (cpu, busy_percent(b, a)))
        .collect();
    CpuLoad {
        at_s,
        span_s,
        per_cpu,
        global: busy_percent(before.all, after.all),
    }
}

/// Steal time per CPU between two readings, in ms (`ticks_per_s`: USER_HZ):
/// time the hypervisor did not run the vCPU while it wanted to run. A CPU
/// missing from `before` (brought online during the run) shows none.
pub fn steal_ms(before: &ProcStat, after: &ProcStat, ticks_per_s: u64) -> Vec<(usize, f64)> {
    let ms_per_tick = 1000.0 / ticks_per_s.max(1) as f64;
    per_cpu_pairs(before, after)
        .map(|(cpu, b, a)| (cpu, a.steal.saturating_sub(b.steal) as f64 * ms_per_tick))
        .collect()
}

/// Each CPU's steal time since boot, in seconds (`ticks_per_s`: USER_HZ),
/// as `/proc/stat` counts it: what node_exporter exports as
/// `node_cpu_seconds_total{mode="steal"}`.
pub fn steal_seconds(stat: &ProcStat, ticks_per_s: u64) -> Vec<(usize, f64)> {
    let per_s = ticks_per_s.max(1) as f64;
    stat.per_cpu
        .iter()
        .map(|&(cpu, t)| (cpu, t.steal as f64 / per_s))
        .collect()
}

/// Each CPU's steal between two readings, as a share (%) of its time in
/// that interval (0 where no time passed).
pub fn steal_percent(before: &ProcStat, after: &ProcStat) -> Vec<(usize, f64)> {
    per_cpu_pairs(before, after)
        .map(|(cpu, b, a)| {
            let total = a.total.saturating_sub(b.total);
            let steal = a.steal.saturating_sub(b.steal).min(total);
            let pct = if total == 0 {
                0.0
            } else {
                100.0 * steal as f64 / total as f64
            };
            (cpu, pct)
        })
        .collect()
}

/// Most intervals a series keeps; beyond, neighbours merge (so a week-long
/// run stays small).
pub const MAX_SERIES: usize = 4096;

/// Appends `load` to `series`, merging neighbouring intervals pairwise
/// (time-weighted) when the series is full.
pub fn push_bounded(series: &mut Vec<CpuLoad>, load: CpuLoad) {
    if series.len() >= MAX_SERIES {
        let merged: Vec<CpuLoad> = series.chunks(2).map(merge).collect();
        *series = merged;
    }
    series.push(load);
}

fn merge(pair: &[CpuLoad]) -> CpuLoad {
    let total: f64 = pair.iter().map(|l| l.span_s).sum();
    let weight = |l: &CpuLoad| {
        if total > 0.0 {
            l.span_s / total
        } else {
            1.0 / pair.len() as f64
        }
    };
    let last = &pair[pair.len() - 1];
    CpuLoad {
        at_s: last.at_s,
        span_s: total,
        per_cpu: last
            .per_cpu
            .iter()
            .map(|&(cpu, _)| {
                let v = pair
                    .iter()
                    .map(|l| {
                        weight(l)
                            * l.per_cpu
                                .iter()
                                .find(|(c, _)| *c == cpu)
                                .map_or(0.0, |x| x.1)
                    })
                    .sum();
                (cpu, v)
            })
            .collect(),
        global: pair.iter().map(|l| weight(l) * l.global).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::proc_stat::parse;

    #[test]
    fn load_from_two_readings() {
        let a =
            parse("cpu 0 0 0 100 0 0 0 0\ncpu0 0 0 0 50 0 0 0 0\ncpu1 0 0 0 50 0 0 0 0\n").unwrap();
        let b = parse("cpu 50 0 0 150 0 0 0 0\ncpu0 50 0 0 50 0 0 0 0\ncpu1 0 0 0 100 0 0 0 0\n")
            .unwrap();
        let l = between(&a, &b, 1.0, 1.0);
        assert_eq!(l.per_cpu, vec![(0, 100.0), (1, 0.0)]);
        assert_eq!(l.global, 50.0);
        // No time passed: 0%, not NaN.
        assert_eq!(between(&a, &a, 0.0, 0.0).global, 0.0);
    }

    #[test]
    fn steal_since_boot_and_as_a_share_of_an_interval() {
        let at = |steal: [u64; 2], total: [u64; 2]| ProcStat {
            all: CpuTimes::default(),
            per_cpu: (0..2)
                .map(|c| {
                    (
                        c,
                        CpuTimes {
                            idle: 0,
                            total: total[c],
                            steal: steal[c],
                        },
                    )
                })
                .collect(),
        };
        let (a, b) = (at([7, 100], [1000, 2000]), at([7, 130], [1100, 2200]));
        assert_eq!(steal_seconds(&b, 100), vec![(0, 0.07), (1, 1.3)]);
        assert_eq!(steal_percent(&a, &b), vec![(0, 0.0), (1, 15.0)]);
        // Counters that went back (a CPU replaced) or no time passed: none.
        assert_eq!(steal_percent(&b, &a), vec![(0, 0.0), (1, 0.0)]);
        assert_eq!(steal_percent(&b, &b), vec![(0, 0.0), (1, 0.0)]);
    }

    #[test]
    fn steal_between_two_readings_in_ms() {
        let a = parse("cpu 0 0 0 0 0 0 0 5\ncpu0 0 0 0 0 0 0 0 2\ncpu1 0 0 0 0 0 0 0 3\n").unwrap();
        let b = parse(
            "cpu 0 0 0 0 0 0 0 9\ncpu0 0 0 0 0 0 0 0 2\ncpu1 0 0 0 0 0 0 0 6\ncpu2 0 0 0 0 0 0 0 7\n",
        )
        .unwrap();
        // USER_HZ 100: a tick is 10 ms; a CPU that came online shows none.
        assert_eq!(steal_ms(&a, &b, 100), vec![(0, 0.0), (1, 30.0), (2, 0.0)]);
        // A counter that went back (never: but no wrap) gives 0.
        assert_eq!(steal_ms(&b, &a, 100), vec![(0, 0.0), (1, 0.0)]);
    }

    #[test]
    fn series_stays_bounded_and_keeps_the_mean() {
        let mut series = Vec::new();
        for i in 0..(MAX_SERIES * 3) {
            let v = if i % 2 == 0 { 100.0 } else { 0.0 };
            push_bounded(
                &mut series,
                CpuLoad {
                    at_s: i as f64,
                    span_s: 1.0,
                    per_cpu: vec![(0, v)],
                    global: v,
                },
            );
        }
        assert!(series.len() <= MAX_SERIES);
        let total: f64 = series.iter().map(|l| l.span_s).sum();
        assert_eq!(total, (MAX_SERIES * 3) as f64);
        let mean: f64 = series.iter().map(|l| l.global * l.span_s).sum::<f64>() / total;
        assert!((mean - 50.0).abs() < 1e-9);
    }
}

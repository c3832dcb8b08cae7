//! Every real-time task's wake-up latency, computed from what its source
//! aggregated: the kernel's per-CPU histograms and each task's worst
//! ([`crate::sys::bpf::WakeupSnapshot`], the BPF source today). Gives
//! the series a fleet exports, per CPU × policy × priority, with their
//! percentiles, and the worst tasks by name. Pure: the source is read
//! elsewhere (`run/exporting.rs`).
//!
//! Bounded for a fleet's time series: at most [`MAX_PRIORITIES`]
//! (policy, priority) pairs are exported by their own priority per CPU
//! (those with the most wake-ups); the rest are folded, per CPU and
//! policy, into priority `other`. At most [`TOP_TASKS`] tasks are named.

use crate::stats::metric_buckets::{METRIC_BUCKETS, metric_bucket};
use crate::sys::bpf::{self, Cell, SeriesSum, WakeupSnapshot};
use std::collections::BTreeMap;

/// (policy, priority) pairs exported by their own priority.
pub const MAX_PRIORITIES: usize = 32;
/// Tasks named by their worst wake-up.
pub const TOP_TASKS: usize = 10;

/// One series: the wake-ups of one policy and priority on one CPU.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RtSeries {
    /// The CPU the tasks switched in on.
    pub cpu: usize,
    /// The policy's name (`fifo`, `rr`, `deadline`; `normal` and the
    /// others when every task is counted).
    pub policy: &'static str,
    /// The real-time priority, or `other` for the folded ones.
    pub priority: String,
    /// Wake-ups per bucket of the metrics histogram.
    pub buckets: Vec<u64>,
    /// Sum of the latencies (ns).
    pub sum_ns: u64,
    /// Wake-ups.
    pub count: u64,
    /// The median, p99 and p99.9 (ns): the start of the bucket holding
    /// the rank (exact to 1 µs below 100 µs, to its decade's step above).
    pub p50_ns: u64,
    /// See `p50_ns`.
    pub p99_ns: u64,
    /// See `p99_ns`.
    pub p999_ns: u64,
}

/// A task and its worst wake-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RtTask {
    /// Its name (as the kernel has it).
    pub comm: String,
    /// Its PID.
    pub pid: u32,
    /// Its policy's name.
    pub policy: &'static str,
    /// Its real-time priority.
    pub priority: u32,
    /// The CPU of its worst.
    pub cpu: u32,
    /// Its worst wake-up-to-switch-in (ns).
    pub worst_ns: u64,
    /// Its wake-ups (of every task folded in this row).
    pub wakeups: u64,
    /// Tasks (PIDs) folded in this row: those of one name, policy and
    /// priority.
    pub pids: u64,
}

/// Every real-time task's wake-ups at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RtWakeups {
    /// The series, by CPU, policy and priority.
    pub series: Vec<RtSeries>,
    /// How late the timers that woke them fired (expiry to wake-up), by
    /// the same series.
    pub timer_series: Vec<RtSeries>,
    /// IRQ to task (the handler's exit to the switch-in of the task its
    /// work woke), by the same series.
    pub irq_series: Vec<RtSeries>,
    /// The worst tasks, worst first.
    pub tasks: Vec<RtTask>,
    /// Wake-ups the source could not count (its maps full).
    pub lost: u64,
    /// Late wake-ups explained, by task and main cause
    /// ([`crate::trace::rt_late`]; set by the reader).
    pub late_causes: Vec<(crate::trace::rt_late::CauseKey, u64)>,
    /// Late wake-ups sent and not explained: the CPU's ring not reaching
    /// back to the wake-up.
    pub late_not_explained: u64,
    /// Late wake-ups not sent: the ring buffer full, and the rate bound.
    pub late_not_sent: (u64, u64),
}

/// Fine buckets of one series: (bucket, count).
pub(crate) type Fine = BTreeMap<u16, u64>;

/// The series and worst tasks of `snap`.
pub fn summarise(snap: &WakeupSnapshot) -> RtWakeups {
    let mut by_pair: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    for c in &snap.cells {
        *by_pair.entry((c.policy, c.priority)).or_default() += c.count;
    }
    let mut pairs: Vec<((u32, u32), u64)> = by_pair.into_iter().collect();
    pairs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let named: Vec<(u32, u32)> = pairs.iter().take(MAX_PRIORITIES).map(|p| p.0).collect();
    RtWakeups {
        series: series(&snap.cells, &snap.sums, &named),
        timer_series: series(&snap.timer_cells, &snap.timer_sums, &named),
        irq_series: series(&snap.irq_cells, &snap.irq_sums, &named),
        tasks: worst_tasks(snap),
        lost: snap.lost,
        ..RtWakeups::default()
    }
}

/// The series of `cells` and `sums`, the (policy, priority) pairs
/// `named` by their priority and the rest as `other`.
fn series(cells: &[Cell], sums: &[SeriesSum], named: &[(u32, u32)]) -> Vec<RtSeries> {
    let label = |policy: u32, priority: u32| {
        if named.contains(&(policy, priority)) {
            priority.to_string()
        } else {
            "other".to_string()
        }
    };
    let mut fine: BTreeMap<(usize, u32, String), (Fine, u64)> = BTreeMap::new();
    for c in cells {
        let key = (c.cpu, c.policy, label(c.policy, c.priority));
        *fine.entry(key).or_default().0.entry(c.bucket).or_default() += c.count;
    }
    for s in sums {
        let key = (s.cpu, s.policy, label(s.policy, s.priority));
        let sum = &mut fine.entry(key).or_default().1;
        *sum = sum.saturating_add(s.sum_ns);
    }
    fine.into_iter()
        .map(|((cpu, policy, priority), (cells, sum_ns))| {
            series_of(cpu, policy, priority, &cells, sum_ns)
        })
        .collect()
}

/// One series from its fine buckets.
fn series_of(cpu: usize, policy: u32, priority: String, cells: &Fine, sum_ns: u64) -> RtSeries {
    let mut buckets = vec![0u64; METRIC_BUCKETS];
    for (&b, &n) in cells {
        // Every bound of the metrics histogram is an edge of the fine
        // buckets: a fine bucket lies whole within one metrics bucket.
        let end = bpf::bucket_bounds_ns(b).1;
        let i = if end == u64::MAX {
            METRIC_BUCKETS - 1
        } else {
            metric_bucket(end - 1)
        };
        buckets[i] += n;
    }
    let count = cells.values().sum();
    RtSeries {
        cpu,
        policy: bpf::policy_name(policy),
        priority,
        buckets,
        sum_ns,
        count,
        p50_ns: at_quantile(cells, count, 0.5),
        p99_ns: at_quantile(cells, count, 0.99),
        p999_ns: at_quantile(cells, count, 0.999),
    }
}

/// The start of the fine bucket holding rank ceil(q·n).
pub(crate) fn at_quantile(cells: &Fine, n: u64, q: f64) -> u64 {
    let rank = ((q * n as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for (&b, &count) in cells {
        seen += count;
        if seen >= rank {
            return bpf::bucket_bounds_ns(b).0;
        }
    }
    0
}

/// The [`TOP_TASKS`] tasks with the worst wake-ups, worst first; the
/// threads of one name, policy and priority are one row (a series of a
/// fleet's is named by them, not by PIDs that change), with the PID and
/// CPU of their worst.
fn worst_tasks(snap: &WakeupSnapshot) -> Vec<RtTask> {
    let mut rows: BTreeMap<(&str, u32, u32), RtTask> = BTreeMap::new();
    for t in &snap.tasks {
        let row = rows
            .entry((t.comm.as_str(), t.policy, t.priority))
            .or_insert_with(|| RtTask {
                comm: t.comm.clone(),
                pid: t.pid,
                policy: bpf::policy_name(t.policy),
                priority: t.priority,
                cpu: t.cpu,
                worst_ns: t.worst_ns,
                wakeups: 0,
                pids: 0,
            });
        row.wakeups += t.count;
        row.pids += 1;
        if t.worst_ns > row.worst_ns {
            (row.pid, row.cpu, row.worst_ns) = (t.pid, t.cpu, t.worst_ns);
        }
    }
    let mut tasks: Vec<RtTask> = rows.into_values().collect();
    tasks.sort_by(|a, b| b.worst_ns.cmp(&a.worst_ns).then(a.pid.cmp(&b.pid)));
    tasks.truncate(TOP_TASKS);
    tasks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::metric_buckets::METRIC_BOUNDS_NS;
    use crate::sys::bpf::{Cell, SeriesSum, TaskWorst, bucket_of_ns};

    /// A snapshot of `latencies` (ns) of FIFO `priority` on `cpu`, as the
    /// BPF program would count them.
    fn counted(snap: &mut WakeupSnapshot, cpu: usize, priority: u32, latencies: &[u64]) {
        for &ns in latencies {
            let bucket = bucket_of_ns(ns);
            match snap
                .cells
                .iter_mut()
                .find(|c| (c.cpu, c.priority, c.bucket) == (cpu, priority, bucket))
            {
                Some(c) => c.count += 1,
                None => snap.cells.push(Cell {
                    cpu,
                    policy: 1,
                    priority,
                    bucket,
                    count: 1,
                }),
            }
        }
        let sum_ns = latencies.iter().sum();
        snap.sums.push(SeriesSum {
            cpu,
            policy: 1,
            priority,
            sum_ns,
        });
        snap.counted += latencies.len() as u64;
    }

    #[test]
    fn the_series_agree_with_brute_force() {
        // 10 000 latencies from 1 µs to 3 ms, uneven: each exported
        // bucket's count and each percentile against the sorted values.
        let latencies: Vec<u64> = (0..10_000u64)
            .map(|i| 1_000 + (i * 7919 % 10_000) * (i % 7 + 1) * 43)
            .collect();
        let mut snap = WakeupSnapshot::default();
        counted(&mut snap, 1, 80, &latencies);
        let s = &summarise(&snap).series[0];
        assert_eq!((s.cpu, s.policy, s.priority.as_str()), (1, "fifo", "80"));
        assert_eq!(s.count, 10_000);
        assert_eq!(s.sum_ns, latencies.iter().sum::<u64>());
        for (i, &n) in s.buckets.iter().enumerate() {
            let lo = if i == 0 { 0 } else { METRIC_BOUNDS_NS[i - 1] };
            let hi = METRIC_BOUNDS_NS.get(i).copied().unwrap_or(u64::MAX);
            // The BPF program counts whole µs: a latency is in the bucket
            // below the first bound its whole µs are short of.
            let brute = latencies
                .iter()
                .filter(|&&ns| (lo..hi).contains(&(ns / 1000 * 1000)))
                .count() as u64;
            assert_eq!(n, brute, "bucket {i} (le {hi} ns)");
        }
        let mut sorted = latencies.clone();
        sorted.sort_unstable();
        for (q, got) in [(0.5, s.p50_ns), (0.99, s.p99_ns), (0.999, s.p999_ns)] {
            let truth = sorted[(q * 10_000f64).ceil() as usize - 1];
            let (lo, hi) = bpf::bucket_bounds_ns(bucket_of_ns(truth));
            assert!(lo == got && truth < hi, "p{q}: {got} for {truth}");
        }
    }

    #[test]
    fn each_histogram_map_makes_its_own_series() {
        // Wake-ups of FIFO 80 on CPU 1; of them, two woken by an IRQ's
        // work (3 µs and 250 µs after its handler's exit) and one by its
        // timer (2 µs late).
        let mut snap = WakeupSnapshot::default();
        counted(&mut snap, 1, 80, &[4_000, 9_000, 300_000]);
        let mut irq = WakeupSnapshot::default();
        counted(&mut irq, 1, 80, &[3_000, 250_000]);
        let mut timer = WakeupSnapshot::default();
        counted(&mut timer, 1, 80, &[2_000]);
        (snap.irq_cells, snap.irq_sums) = (irq.cells, irq.sums);
        (snap.timer_cells, snap.timer_sums) = (timer.cells, timer.sums);
        let w = summarise(&snap);
        let of = |s: &[RtSeries]| {
            let s = &s[0];
            (s.cpu, s.priority.clone(), s.count, s.sum_ns, s.p50_ns)
        };
        assert_eq!(of(&w.series), (1, "80".into(), 3, 313_000, 9_000));
        assert_eq!(of(&w.irq_series), (1, "80".into(), 2, 253_000, 3_000));
        assert_eq!(w.irq_series[0].p99_ns, 250_000);
        assert_eq!(of(&w.timer_series), (1, "80".into(), 1, 2_000, 2_000));
    }

    #[test]
    fn priorities_past_the_bound_fold_into_other_and_tasks_are_ranked() {
        let mut snap = WakeupSnapshot::default();
        for p in 1..=40u32 {
            counted(&mut snap, 0, p, &vec![5_000; p as usize]);
        }
        let w = summarise(&snap);
        assert_eq!(w.series.len(), MAX_PRIORITIES + 1);
        let other = w.series.iter().find(|s| s.priority == "other").unwrap();
        // Priorities 1-8 had the fewest wake-ups: 36 in all.
        assert_eq!(other.count, 36);
        assert_eq!(w.series.iter().map(|s| s.count).sum::<u64>(), 820);
        snap.tasks = (0..15)
            .map(|i| TaskWorst {
                pid: 100 + i,
                comm: format!("t{i}"),
                policy: 1,
                priority: 50,
                cpu: 0,
                worst_ns: u64::from(i % 5) * 1_000 + u64::from(i),
                count: 1,
            })
            .collect();
        let tasks = summarise(&snap).tasks;
        assert_eq!(tasks.len(), TOP_TASKS);
        assert_eq!(tasks[0].comm, "t14");
        assert!(tasks.windows(2).all(|w| w[0].worst_ns >= w[1].worst_ns));
        // Two threads of one name and priority: one row, their worst.
        snap.tasks[3].comm = "t14".into();
        snap.tasks[3].worst_ns = 1_000_000;
        let tasks = summarise(&snap).tasks;
        assert_eq!((tasks[0].comm.as_str(), tasks[0].pid), ("t14", 103));
        assert_eq!((tasks[0].wakeups, tasks[0].worst_ns), (2, 1_000_000));
        assert_eq!(tasks.iter().filter(|t| t.comm == "t14").count(), 1);
    }
}

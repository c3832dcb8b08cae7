//! A task's wake-ups as the BPF program counted them in the kernel
//! (`sched_waking` to switch-in, at each switch-in it sees: those out of
//! idle that this VM's trace often does not log too, none inferred; the
//! few the trace misses, it misses as well), per thread: the figures
//! beside the trace's `wake_to_run`, from the program's fine buckets
//! (exact to 1 µs below 100 µs) and each thread's exact worst.

use crate::sys::bpf::{TaskWorst, ThreadCells, bucket_bounds_ns};
use crate::trace::rt_wakeups::{Fine, at_quantile};
use serde::{Deserialize, Serialize};

/// The task's wake-ups counted in the kernel, or why they were not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskLatencyBpf {
    /// Why the BPF program did not count them (the trace's figures stand
    /// alone); null when it did.
    pub refused: Option<String>,
    /// Each thread counted, by TID.
    pub threads: Vec<BpfThread>,
    /// Wake-ups the program could not count (a map full).
    pub lost: u64,
}

/// One thread's wake-up to switch-in, counted in the kernel.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BpfThread {
    /// The thread.
    pub tid: i32,
    /// Its name as the kernel had it when first counted.
    pub comm: String,
    /// Its wake-ups counted (each ended by a switch-in).
    pub wake_ups: u64,
    /// Their mean (ns).
    pub mean_ns: u64,
    /// The start of the bucket holding the median (ns): the buckets are
    /// 1 µs wide below 100 µs, ten per decade above.
    pub p50_ns: u64,
    /// The same for p99.
    pub p99_ns: u64,
    /// The same for p99.9.
    pub p999_ns: u64,
    /// The worst, exactly (ns).
    pub max_ns: u64,
}

/// The figures of each thread of `cells`, named and with their worst from
/// `tasks` (the program's per-thread rows).
pub fn summarise(cells: &[ThreadCells], tasks: &[TaskWorst], lost: u64) -> TaskLatencyBpf {
    let threads = cells
        .iter()
        .map(|t| {
            let fine: Fine = t.buckets.iter().copied().collect();
            let wake_ups = t.count();
            let row = tasks.iter().find(|w| w.pid == t.tid);
            // The row is the exact worst; without it (never: both are
            // written at each switch-in), the top bucket's start.
            let top = t.buckets.last().map_or(0, |b| bucket_bounds_ns(b.0).0);
            BpfThread {
                tid: i32::try_from(t.tid).unwrap_or(i32::MAX),
                comm: row.map(|w| w.comm.clone()).unwrap_or_default(),
                wake_ups,
                mean_ns: t.sum_ns.checked_div(wake_ups).unwrap_or(0),
                p50_ns: at_quantile(&fine, wake_ups, 0.5),
                p99_ns: at_quantile(&fine, wake_ups, 0.99),
                p999_ns: at_quantile(&fine, wake_ups, 0.999),
                max_ns: row.map_or(top, |w| w.worst_ns),
            }
        })
        .collect();
    TaskLatencyBpf {
        refused: None,
        threads,
        lost,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_threads_figures_come_from_its_buckets_and_its_worst() {
        // 98 wake-ups in [3, 4) µs, one in [57, 58) µs, one in
        // [200, 210) µs whose exact worst is 204.5 µs.
        let cells = [ThreadCells {
            tid: 41,
            buckets: vec![(3, 98), (57, 1), (110, 1)],
            sum_ns: 98 * 3_500 + 57_500 + 204_500,
        }];
        let tasks = [TaskWorst {
            pid: 41,
            comm: "cyclic".into(),
            worst_ns: 204_500,
            count: 100,
            ..TaskWorst::default()
        }];
        let k = summarise(&cells, &tasks, 2);
        assert_eq!(k.lost, 2);
        let t = &k.threads[0];
        assert_eq!((t.tid, t.comm.as_str(), t.wake_ups), (41, "cyclic", 100));
        assert_eq!((t.p50_ns, t.p99_ns, t.p999_ns), (3_000, 57_000, 200_000));
        assert_eq!(t.max_ns, 204_500);
        assert_eq!(t.mean_ns, (98 * 3_500 + 57_500 + 204_500) / 100);
    }
}

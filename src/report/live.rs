//! The live table (refreshed every `stats.period`) and the closing lines.

use crate::config::CpuLoadDisplay;
use crate::measure::live::LiveSnapshot;
use crate::result::RunResult;
use crate::stats::cpu_load::CpuLoad;

/// One timer thread's row in the live table.
#[derive(Debug, Clone, Copy)]
pub struct LiveRow {
    /// Index N.
    pub index: usize,
    /// Kernel thread id.
    pub tid: i32,
    /// Its counters.
    pub snap: LiveSnapshot,
}

/// One thread of a task-latency measurement in the live table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TaskRow {
    /// N of `task_latency[N]`.
    pub index: usize,
    /// The thread.
    pub tid: i32,
    /// Its name.
    pub comm: String,
    /// Wake-ups so far.
    pub wake_ups: u64,
    /// Smallest latency (ns).
    pub min_ns: u64,
    /// Largest latency (ns).
    pub max_ns: u64,
    /// The last wake-up's latency (ns); None in the final table (the
    /// result keeps no last wake-up).
    pub cur_ns: Option<u64>,
    /// Mean latency (ns).
    pub mean_ns: u64,
    /// Deadline misses, where the period or deadline applies to it.
    pub deadline_misses: Option<u64>,
}

impl TaskRow {
    /// A thread's row from its figures so far.
    pub fn live(index: usize, t: &crate::trace::task_latency::ThreadLive) -> TaskRow {
        TaskRow {
            index,
            tid: t.tid,
            comm: t.comm.clone(),
            wake_ups: t.wake_ups,
            min_ns: t.min_ns,
            max_ns: t.max_ns,
            cur_ns: Some(t.cur_ns),
            mean_ns: t.sum_ns.checked_div(t.wake_ups).unwrap_or(0),
            deadline_misses: t.deadline_misses,
        }
    }

    /// A thread's row in the final table, from the result.
    pub fn of_result(index: usize, t: &crate::trace::task_latency::TaskThreadResult) -> TaskRow {
        TaskRow {
            index,
            tid: t.tid,
            comm: t.comm.clone(),
            wake_ups: t.latency.samples,
            min_ns: t.latency.min_ns,
            max_ns: t.latency.max_ns,
            cur_ns: None,
            mean_ns: t.latency.mean_ns as u64,
            deadline_misses: t.deadline_misses,
        }
    }
}

/// A CPU the hypervisor took time from (steal), in the live table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StealRow {
    /// The CPU.
    pub cpu: usize,
    /// Its steal over the last refresh (% of its time).
    pub percent: f64,
    /// Its steal since the run started (ms).
    pub run_ms: f64,
}

/// One noise thread in the live table: its figures so far.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct NoiseRow {
    /// N of `noise_thread[N]`.
    pub index: usize,
    /// Its CPU.
    pub cpu: usize,
    /// Time polled (ns).
    pub runtime_ns: u64,
    /// Noise (ns).
    pub noise_ns: u64,
    /// The largest gap (ns).
    pub max_gap_ns: u64,
    /// Gaps at or over the threshold.
    pub gaps: u64,
}

/// The noise block: one row per noise thread, as rtla osnoise's top.
fn noise_rows(out: &mut String, noise: &[NoiseRow]) {
    out.push_str("Noise  CPU  Runtime(ms)     Noise(us)  %CPU_aval  Max_single(us)       Gaps\n");
    for n in noise {
        let aval = if n.runtime_ns == 0 {
            0.0
        } else {
            100.0 * n.runtime_ns.saturating_sub(n.noise_ns) as f64 / n.runtime_ns as f64
        };
        out.push_str(&format!(
            "{:>5}{:>5}{:>13.1}{:>14.1}{:>11.5}{:>16.1}{:>11}\n",
            format!("N{}", n.index),
            n.cpu,
            n.runtime_ns as f64 / 1e6,
            n.noise_ns as f64 / 1e3,
            aval,
            n.max_gap_ns as f64 / 1e3,
            n.gaps,
        ));
    }
}

/// What the live table shows beside the timer threads.
#[derive(Debug, Clone, Copy, Default)]
pub struct Beside<'a> {
    /// The noise threads.
    pub noise: &'a [NoiseRow],
    /// The threads of task-latency measurements.
    pub tasks: &'a [TaskRow],
    /// The CPUs with steal time since the start.
    pub steal: &'a [StealRow],
}

/// The task-latency block: one row per thread (latencies in µs).
fn task_rows(out: &mut String, tasks: &[TaskRow]) {
    out.push_str("Task      TID  Samples    L_min    L_max    L_cur    L_avg   Misses  Thread\n");
    for t in tasks {
        let dash =
            |v: Option<u64>, scale: u64| v.map_or_else(|| "-".into(), |v| (v / scale).to_string());
        let comm: String = t.comm.chars().take(16).collect();
        out.push_str(&format!(
            "{:>4}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}  {comm}\n",
            format!("L{}", t.index),
            t.tid,
            t.wake_ups,
            t.min_ns / 1000,
            t.max_ns / 1000,
            dash(t.cur_ns, 1000),
            t.mean_ns / 1000,
            dash(t.deadline_misses, 1),
        ));
    }
}

/// The live table: one row per timer thread, then the noise threads, then
/// the threads of task-latency measurements, then the CPU block if asked, then the CPUs
/// with steal time. A run without timer threads (an audit, IRQ-to-task)
/// has no rows, and no header.
pub fn table(
    rows: &[LiveRow],
    load: Option<&CpuLoad>,
    display: CpuLoadDisplay,
    beside: Beside,
) -> String {
    let mut out = String::new();
    if !rows.is_empty() {
        out.push_str("Index     TID  Samples    L_min    L_max    L_cur    L_avg\n");
    }
    for r in rows {
        let s = &r.snap;
        let min = if s.samples == 0 { 0 } else { s.min_ns / 1000 };
        out.push_str(&format!(
            "{:>5}{:>8}{:>9}{:>9}{:>9}{:>9}{:>9}\n",
            r.index,
            r.tid,
            s.samples,
            min,
            s.max_ns / 1000,
            s.cur_ns / 1000,
            s.mean_ns() / 1000
        ));
    }
    if !beside.noise.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        noise_rows(&mut out, beside.noise);
    }
    if !beside.tasks.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        task_rows(&mut out, beside.tasks);
    }
    if display != CpuLoadDisplay::None {
        out.push('\n');
        if let Some(l) = load {
            if display == CpuLoadDisplay::All {
                for (cpu, busy) in &l.per_cpu {
                    out.push_str(&format!("CPU#{cpu} : {busy:5.1}%\n"));
                }
            }
            out.push_str(&format!("CPU    : {:5.1}%\n", l.global));
        }
    }
    if !beside.steal.is_empty() {
        out.push('\n');
    }
    for s in beside.steal {
        out.push_str(&format!(
            "Steal CPU#{} : {:5.1}% ({:.1} ms since the start)\n",
            s.cpu, s.percent, s.run_ms
        ));
    }
    out
}

/// The lines printed at the end: one per timer thread, then elapsed time.
pub fn closing_lines(result: &RunResult) -> String {
    let mut out = String::new();
    for t in &result.timers {
        out.push_str(&format!(
            "Statistics for timer_thread[{}] in '{}'\n",
            t.index,
            crate::text::one_line(&t.result_file)
        ));
    }
    let minutes = result.elapsed_ns / 60_000_000_000;
    let rest = result.elapsed_ns % 60_000_000_000;
    out.push_str(&format!(
        "\nTotal elapsed time: {minutes} minutes, {rest} nanoseconds\n"
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_matches_the_spec_layout() {
        let rows = [LiveRow {
            index: 0,
            tid: 1005,
            snap: LiveSnapshot {
                samples: 600_000,
                min_ns: 17_900,
                max_ns: 45_200,
                cur_ns: 20_100,
                sum_ns: 600_000 * 21_400,
                ..LiveSnapshot::default()
            },
        }];
        let load = CpuLoad {
            at_s: 1.0,
            span_s: 1.0,
            per_cpu: vec![(0, 54.3), (1, 49.8), (2, 100.0), (3, 0.0)],
            global: 52.3,
        };
        let expected = "Index     TID  Samples    L_min    L_max    L_cur    L_avg\n    0    1005   600000       17       45       20       21\n\nCPU#0 :  54.3%\nCPU#1 :  49.8%\nCPU#2 : 100.0%\nCPU#3 :   0.0%\nCPU    :  52.3%\n";
        assert_eq!(
            table(&rows, Some(&load), CpuLoadDisplay::All, Beside::default()),
            expected
        );
        let global = table(
            &rows,
            Some(&load),
            CpuLoadDisplay::Global,
            Beside::default(),
        );
        assert!(global.ends_with("\n\nCPU    :  52.3%\n"));
        assert!(
            !table(&rows, Some(&load), CpuLoadDisplay::None, Beside::default()).contains("CPU")
        );
    }

    #[test]
    fn a_run_without_timer_threads_has_no_table_header() {
        assert_eq!(
            table(&[], None, CpuLoadDisplay::None, Beside::default()),
            ""
        );
    }

    /// A task-latency measurement's threads come under the timer threads,
    /// each with its deadline misses where the period applies to it (`-`
    /// elsewhere); CPUs with steal come last, only those with some.
    #[test]
    fn noise_threads_show_their_figures_so_far() {
        let noise = [NoiseRow {
            index: 0,
            cpu: 1,
            runtime_ns: 2_007_800_000,
            noise_ns: 831_229_800,
            max_gap_ns: 16_051_900,
            gaps: 722,
        }];
        let beside = Beside {
            noise: &noise,
            ..Beside::default()
        };
        let want = "Noise  CPU  Runtime(ms)     Noise(us)  %CPU_aval  Max_single(us)       Gaps\n   N0    1       2007.8      831229.8   58.59997         16051.9        722\n";
        assert_eq!(table(&[], None, CpuLoadDisplay::None, beside), want);
    }

    #[test]
    fn task_threads_and_steal_are_shown_beside_the_timer_threads() {
        let tasks = [
            TaskRow {
                index: 0,
                tid: 4321,
                comm: "cyclic".into(),
                wake_ups: 3000,
                min_ns: 4_200,
                max_ns: 1_354_900,
                cur_ns: Some(20_100),
                mean_ns: 29_000,
                deadline_misses: Some(7),
            },
            TaskRow {
                index: 0,
                tid: 4322,
                comm: "logger".into(),
                wake_ups: 3,
                min_ns: 50_000,
                max_ns: 70_000,
                cur_ns: None,
                mean_ns: 60_000,
                deadline_misses: None,
            },
        ];
        let steal = [StealRow {
            cpu: 1,
            percent: 0.25,
            run_ms: 40.0,
        }];
        let beside = Beside {
            noise: &[],
            tasks: &tasks,
            steal: &steal,
        };
        let expected = "Task      TID  Samples    L_min    L_max    L_cur    L_avg   Misses  Thread\n  L0     4321     3000        4     1354       20       29        7  cyclic\n  L0     4322        3       50       70        -       60        -  logger\n\nSteal CPU#1 :   0.2% (40.0 ms since the start)\n";
        assert_eq!(table(&[], None, CpuLoadDisplay::None, beside), expected);
        let with_timer = table(
            &[LiveRow {
                index: 0,
                tid: 1,
                snap: LiveSnapshot::default(),
            }],
            None,
            CpuLoadDisplay::None,
            beside,
        );
        assert!(
            with_timer.contains("       0\n\nTask      TID"),
            "{with_timer}"
        );
    }
}

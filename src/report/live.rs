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

/// The live table: one row per timer thread, then the CPU block if asked.
/// A run without timer threads (an audit, IRQ-to-task) has no rows, and
/// no header.
pub fn table(rows: &[LiveRow], load: Option<&CpuLoad>, display: CpuLoadDisplay) -> String {
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
        assert_eq!(table(&rows, Some(&load), CpuLoadDisplay::All), expected);
        let global = table(&rows, Some(&load), CpuLoadDisplay::Global);
        assert!(global.ends_with("\n\nCPU    :  52.3%\n"));
        assert!(!table(&rows, Some(&load), CpuLoadDisplay::None).contains("CPU"));
    }

    #[test]
    fn a_run_without_timer_threads_has_no_table_header() {
        assert_eq!(table(&[], None, CpuLoadDisplay::None), "");
    }
}

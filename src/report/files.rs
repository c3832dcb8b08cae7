//! A timer thread's result file, in the systress `txt` and `csv` formats:
//! the 1-µs histogram, then `#` summary lines (gnuplot and spreadsheets skip
//! them), then rtlab's extra `#` lines: percentiles over all samples, the
//! count beyond the histogram and the overruns, then the worst wake-ups.

use crate::config::StatsFormat;
use crate::result::TimerResult;

/// The systress summary block (every line starts with `#`).
pub fn summary_lines(t: &TimerResult) -> String {
    let c = &t.summary.systress;
    let mode = if c.l_mode_h.is_empty() {
        "-".to_string()
    } else {
        c.l_mode_h
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut out = String::new();
    out.push_str("#                            SUMMARY\n#\n");
    out.push_str("# Index    TID  Samples  L_min  L_max  L_avg  Samples_H  L_avg_H  L_med_H  L_std_H  L_mode_H\n#\n");
    let mut row = String::from("#");
    for (value, width) in [
        (t.index.to_string(), 7),
        (t.tid.to_string(), 6),
        (c.samples.to_string(), 9),
        (c.l_min.to_string(), 7),
        (c.l_max.to_string(), 7),
        (c.l_avg.to_string(), 7),
        (c.samples_h.to_string(), 11),
        (c.l_avg_h.to_string(), 9),
        (c.l_med_h.to_string(), 9),
        (c.l_std_h.to_string(), 9),
        (mode, 10),
    ] {
        row.push_str(&column(&value, width));
    }
    out.push_str(&row);
    out.push('\n');
    out.push_str(&extra_lines(t));
    out
}

/// `value` right-aligned in `width` columns, always after at least one
/// space: the layout of systress when values fit, and columns that stay
/// apart when they do not (a 100 ms stall, a TID of 4194304).
fn column(value: &str, width: usize) -> String {
    format!(" {value:>w$}", w = width.saturating_sub(1))
}

/// rtlab's additions after the summary: percentiles over **all** samples.
fn extra_lines(t: &TimerResult) -> String {
    let s = &t.summary;
    let us = |ns: u64| ns as f64 / 1000.0;
    let mut head = format!("#{:>7}", "Index");
    let mut row = format!("#{}", column(&t.index.to_string(), 7));
    for p in &s.percentiles {
        head.push_str(&format!("{:>10}", p.name));
        row.push_str(&column(&format!("{:.3}", us(p.value_ns)), 10));
    }
    head.push_str(&format!(
        "{:>10}{:>10}{:>10}",
        "max", "Beyond_H", "Overruns"
    ));
    for (value, width) in [
        (format!("{:.3}", us(s.max_ns)), 10),
        (s.beyond_histogram.to_string(), 10),
        (s.overruns.to_string(), 10),
    ] {
        row.push_str(&column(&value, width));
    }
    format!(
        "#\n#                  ALL SAMPLES (rtlab): latency in us, 0.1% precision\n#\n\
         # Percentiles over all {} samples, including the {} beyond histo_size ({} us).\n\
         # Overruns: wake-ups after the next period ({} periods skipped).\n#\n{head}\n#\n{row}\n{}",
        s.samples,
        s.beyond_histogram,
        t.histo_size_us,
        s.missed_periods,
        spike_lines(t)
    )
}

/// The worst wake-ups kept (`spikes.worst`), and the count above
/// `spikes.threshold`.
fn spike_lines(t: &TimerResult) -> String {
    let s = &t.spikes;
    if s.worst.is_empty() && s.threshold_ns.is_none() {
        return String::new();
    }
    let mut out = format!(
        "#\n#                  WORST WAKE-UPS (rtlab): the {} worst, latency in us\n#\n\
         #{:>9}{:>13}{:>5}{:>11}\n#\n",
        s.worst.len(),
        "Sample",
        "Deadline_s",
        "CPU",
        "Latency"
    );
    for k in &s.worst {
        let cpu = k.cpu.map_or("-".to_string(), |c| c.to_string());
        out.push_str(&format!(
            "#{}{}{}{}\n",
            column(&k.sample.to_string(), 9),
            column(&format!("{:.6}", k.offset_ns as f64 / 1e9), 13),
            column(&cpu, 5),
            column(&format!("{:.3}", k.latency_ns as f64 / 1000.0), 11)
        ));
    }
    if let Some(th) = s.threshold_ns {
        out.push_str(&format!(
            "#\n# {} wake-ups at or above {:.3} us ({} kept in the JSON result)\n",
            s.over_threshold_total,
            th as f64 / 1000.0,
            s.over_threshold.len()
        ));
    }
    out
}

/// Iterates the full 0..=histo_size histogram from its sparse form.
fn dense_histogram(t: &TimerResult) -> impl Iterator<Item = (u64, u64)> + '_ {
    let mut sparse = t.histogram_us.iter().peekable();
    (0..=t.histo_size_us).map(move |us| match sparse.peek() {
        Some(&&(b, c)) if b == us => {
            sparse.next();
            (us, c)
        }
        _ => (us, 0),
    })
}

/// The `txt` result file.
pub fn txt(t: &TimerResult) -> String {
    let mut out = String::new();
    for (us, count) in dense_histogram(t) {
        out.push_str(&format!("{us:>8}{count:>9}\n"));
    }
    out.push('\n');
    out.push_str(&summary_lines(t));
    out
}

/// The `csv` result file.
pub fn csv(t: &TimerResult) -> String {
    let mut out = String::from("latency_us,count\n");
    for (us, count) in dense_histogram(t) {
        out.push_str(&format!("{us},{count}\n"));
    }
    out.push_str(&summary_lines(t));
    out
}

/// The result file in `format`.
pub fn render(t: &TimerResult, format: StatsFormat) -> String {
    match format {
        StatsFormat::Txt => txt(t),
        StatsFormat::Csv => csv(t),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::sched::{Policy, Sched};
    use crate::stats::spikes::{Spike, SpikeSpec, Spikes};
    use crate::stats::{Recorder, hdr_buckets, nonzero_buckets, summarize};

    /// A result built from known samples through the real recorder.
    pub fn sample_result() -> TimerResult {
        let mut r = Recorder::new(20).unwrap();
        r.spikes = Spikes::new(SpikeSpec {
            worst: 3,
            threshold_ns: Some(17_500),
            max_over: 2,
        });
        for (i, ns) in [
            2_100, 2_900, 3_000, 17_000, 17_500, 17_999, 18_000, 20_999, 100_000,
        ]
        .into_iter()
        .enumerate()
        {
            r.record(ns);
            r.series.record(ns * 10, ns);
            if r.spikes.wants(ns) {
                let at = i as u64 * 1_000_000;
                r.spikes.keep(Spike {
                    sample: i as u64,
                    offset_ns: at,
                    deadline_ns: 7_000_000_000 + at,
                    latency_ns: ns,
                    cpu: Some(1),
                });
            }
        }
        r.overruns = 1;
        r.missed_periods = 2;
        TimerResult {
            index: 0,
            tid: 13029,
            cpus: vec![1],
            cpu_first: Some(1),
            cpu_last: Some(1),
            sched: Sched {
                policy: Policy::Fifo,
                priority: 99,
            },
            deadline: None,
            period_ns: 1_000_000,
            result_file: "timer_thread00.txt".into(),
            summary: summarize(&r),
            last_ns: None,
            samples_ns: Vec::new(),
            histo_size_us: 20,
            histogram_us: nonzero_buckets(&r),
            hdr_histogram: hdr_buckets(&r),
            series: r.series.intervals(),
            spikes: r.spikes.list(),
            measuring: None,
            error: None,
        }
    }

    #[test]
    fn txt_matches_the_golden_file() {
        if std::env::var_os("RTLAB_BLESS").is_some() {
            let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden");
            std::fs::write(format!("{dir}/timer_thread00.txt"), txt(&sample_result())).unwrap();
            std::fs::write(format!("{dir}/timer_thread00.csv"), csv(&sample_result())).unwrap();
        }
        let golden = include_str!("../../tests/golden/timer_thread00.txt");
        assert_eq!(txt(&sample_result()), golden);
    }

    #[test]
    fn csv_matches_the_golden_file() {
        let golden = include_str!("../../tests/golden/timer_thread00.csv");
        assert_eq!(csv(&sample_result()), golden);
    }

    /// A 2 s stall and the largest TID Linux hands out: every column stays
    /// apart, and the file reads back with the same figures.
    #[test]
    fn huge_latencies_and_tids_stay_in_their_columns_and_read_back() {
        let mut r = Recorder::new(20).unwrap();
        for ns in [3_000, 2_000_000_000] {
            r.record(ns);
        }
        let mut t = sample_result();
        t.tid = 4_194_304;
        t.summary = summarize(&r);
        t.histogram_us = nonzero_buckets(&r);
        let text = txt(&t);
        let row = text.lines().find(|l| l.contains("4194304")).unwrap();
        let words: Vec<&str> = row.trim_start_matches('#').split_whitespace().collect();
        assert_eq!(words[..5], ["0", "4194304", "2", "3", "2000000"], "{row}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("timer_thread00.txt");
        std::fs::write(&path, &text).unwrap();
        let run = crate::dataset::load(&path).unwrap();
        let s = &run.threads[0].stats;
        assert_eq!(s.samples, 2);
        assert_eq!(s.max_ns, Some(2_000_000_000));
        assert_eq!(s.beyond_histogram, Some(1));
    }

    #[test]
    fn summary_columns_line_up_with_the_systress_header() {
        let text = summary_lines(&sample_result());
        let lines: Vec<&str> = text.lines().collect();
        let header = lines[2];
        let row = lines[4];
        // Every column's right edge in the header is the right edge of the row's
        // value, except the first (systress prints `# Index` one column left).
        let edges = |s: &str| -> Vec<usize> {
            let b = s.as_bytes();
            (1..b.len())
                .filter(|&i| b[i] != b' ' && (i + 1 == b.len() || b[i + 1] == b' '))
                .collect()
        };
        assert_eq!(edges(header)[1..], edges(row)[1..]);
        assert_eq!(edges(header)[0] + 1, edges(row)[0]);
    }
}

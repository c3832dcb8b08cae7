//! cyclictest's histogram text (current and legacy layouts, stdout) and
//! its `--json` file read back.

use super::tests::*;
use super::*;

#[test]
fn cyclictest_histogram_current_layout() {
    let dir = tempfile::tempdir().unwrap();
    let run = load(&write(&dir, "old.hist", HIST_CURRENT)).unwrap();
    assert_eq!(run.format, Format::CyclictestHistogram);
    assert_eq!(run.threads.len(), 2);
    let t0 = &run.threads[0].stats;
    assert_eq!(t0.samples, 1000);
    assert_eq!(t0.min_ns, Some(1_000));
    assert_eq!(t0.max_ns, Some(2_000));
    // (812·1 + 188·2) / 1000 = 1.188 µs; cyclictest printed 1 (truncated).
    assert!((t0.mean_ns.unwrap() - 1188.0).abs() < 1e-9);
    assert_eq!(t0.beyond_histogram, Some(0));
    assert!(t0.stddev_ns.is_some());
    let t1 = &run.threads[1].stats;
    assert_eq!(t1.samples, 1001);
    assert_eq!(t1.max_ns, Some(12_000));
    assert_eq!(t1.mean_ns, Some(1_000.0), "overflowed: cyclictest's Avg");
    assert_eq!(t1.stddev_ns, None);
    assert_eq!(t1.beyond_histogram, Some(1));
    let p9999 = t1.percentiles.iter().find(|p| p.name == "p99.99").unwrap();
    assert_eq!(p9999.value_ns, None, "it lies among the overflows");
    let p50 = t1.percentiles.iter().find(|p| p.name == "p50").unwrap();
    assert_eq!(p50.value_ns, Some(1_000));
    assert_eq!(
        run.threads[1].histogram_us,
        vec![(1, 790), (2, 209), (7, 1)]
    );
}

#[test]
fn cyclictest_histogram_legacy_layout_and_t_lines() {
    let mut text = String::from("policy: fifo: loadavg: 0.1 0.1 0.1 1/100 5\n\n");
    text.push_str(
        "T: 0 ( 4321) P:80 I:1000 C:      6 Min:      3 Act:    4 Avg:    4 Max:       6\n",
    );
    text.push_str("# Histogram\n");
    for b in 0..8 {
        let c = match b {
            3 => 2,
            4 => 3,
            6 => 1,
            _ => 0,
        };
        text.push_str(&format!("{b:06} {c:06}\n"));
    }
    text.push_str("# Total: 000000006\n# Min Latencies: 00003\n# Avg Latencies: 00004\n# Max Latencies: 00006\n# Histogram Overflows: 00000\n# Histogram Overflow at cycle number:\n# Thread 0:\n");
    let dir = tempfile::tempdir().unwrap();
    let run = load(&write(&dir, "legacy.txt", &text)).unwrap();
    let s = &run.threads[0].stats;
    assert_eq!(
        (s.samples, s.min_ns, s.max_ns),
        (6, Some(3_000), Some(6_000))
    );
    assert_eq!(s.mean_ns.map(|m| (m / 1000.0).floor()), Some(4.0));
    assert_eq!(run.threads[0].histogram_us, vec![(3, 2), (4, 3), (6, 1)]);
}

/// cyclictest's stdout with `-h` and without `-q`: its last `T:` line was
/// printed before its last samples (C: 1993 of 2000). The histogram's own
/// totals count the run: 1990 placed + 10 overflows = 2000.
#[test]
fn cyclictest_stdout_counts_samples_from_the_histogram_not_the_t_line() {
    let mut text = String::from(
        "T: 0 ( 4321) P:80 I:1000 C:   1993 Min:      3 Act:    4 Avg:    4 Max:      40\n",
    );
    text.push_str("# Histogram\n000003 001000\n000004 000990\n");
    text.push_str("# Total: 000001990\n# Min Latencies: 00003\n# Avg Latencies: 00004\n# Max Latencies: 00051\n# Histogram Overflows: 00010\n# Histogram Overflow at cycle number:\n# Thread 0: 00001\n");
    let dir = tempfile::tempdir().unwrap();
    let run = load(&write(&dir, "ct.out", &text)).unwrap();
    let s = &run.threads[0].stats;
    assert_eq!(s.samples, 2000);
    assert_eq!(s.beyond_histogram, Some(10));
    assert_eq!(
        s.max_ns,
        Some(51_000),
        "the summary's max, not the T: line's"
    );
    // Every percentile is placed among the 2000 samples: p99 = 1980th.
    let p99 = s.percentiles.iter().find(|p| p.name == "p99").unwrap();
    assert_eq!(p99.value_ns, Some(4_000));
    let p999 = s.percentiles.iter().find(|p| p.name == "p99.9").unwrap();
    assert_eq!(p999.value_ns, None, "the 1998th sample is an overflow");

    // Cut short before its summary, or with rows that disagree with
    // `# Total:`, the file is refused rather than shown with holes.
    let cut: String = text.lines().take(4).map(|l| format!("{l}\n")).collect();
    let e = load(&write(&dir, "cut.out", &cut)).unwrap_err().to_string();
    assert!(e.contains("cut short"), "{e}");
    let altered = text.replace("000004 000990", "000004 000980");
    let e = load(&write(&dir, "alt.out", &altered))
        .unwrap_err()
        .to_string();
    assert!(e.contains("`# Total:` says 1990"), "{e}");
}

#[test]
fn cyclictest_json_with_nan_and_ns_resolution() {
    let text = r##"{
  "file_version": 1,
  "cmdline:": "cyclictest -q -h 100 --json=x",
  "rt_test_version:": "2.40",
  "start_time": "Sat, 21 Nov 2026 10:00:00 +0000",
  "end_time": "Sat, 21 Nov 2026 10:00:10 +0000",
  "return_code": 0,
  "sysinfo": {
    "sysname": "Linux",
    "nodename": "board",
    "release": "6.1.0-rt",
    "version": "#1 SMP PREEMPT_RT Debian",
    "machine": "x86_64",
    "realtime": 1
  },
  "num_threads": 2,
  "resolution_in_ns": 0,
  "thread": {
    "0": {
      "histogram": {
        "2": 5,
        "3": 4
      },
      "cycles": 10,
      "min": 2,
      "max": 250,
      "avg": 2.40,
      "cpu": 1,
      "node": 0
    },
    "1": {
      "histogram": {
      },
      "cycles": 0,
      "min": 1000000,
      "max": 0,
      "avg": -nan,
      "cpu": 0,
      "node": 0
    }
  }
}
"##;
    let dir = tempfile::tempdir().unwrap();
    let run = load(&write(&dir, "ct.json", text)).unwrap();
    assert_eq!(run.format, Format::CyclictestJson);
    let s = &run.threads[0].stats;
    assert_eq!(
        (s.samples, s.min_ns, s.max_ns),
        (10, Some(2_000), Some(250_000))
    );
    assert_eq!(s.mean_ns, Some(2_400.0), "one overflow: cyclictest's avg");
    assert_eq!(s.beyond_histogram, Some(1));
    assert_eq!(run.threads[0].cpu, Some(1));
    let empty = &run.threads[1].stats;
    assert_eq!(
        (empty.samples, empty.min_ns, empty.mean_ns),
        (0, None, None)
    );
    assert_eq!(run.context.preemption.as_deref(), Some("PREEMPT_RT"));
    assert_eq!(run.context.host.as_deref(), Some("board"));
    assert_eq!(
        run.details.command.as_deref(),
        Some("cyclictest -q -h 100 --json=x")
    );
    let ns = text.replace("\"resolution_in_ns\": 0", "\"resolution_in_ns\": 1");
    let run = load(&write(&dir, "ns.json", &ns)).unwrap();
    assert_eq!(run.threads[0].stats.max_ns, Some(250));
    assert_eq!(run.threads[0].histogram_us, vec![(0, 9)]);
}

use super::*;
use crate::report::files::{self, tests::sample_result};
use crate::result::TimerResult;
use crate::stats::{Recorder, hdr_buckets, nonzero_buckets, summarize};
use std::path::PathBuf;

pub(crate) fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A real rtlab result (tests/seeds: a run on this machine) made to say
/// what the tests look for, around some timer results: written by the same
/// types that read it.
pub(crate) fn rtlab_doc(timers: &[TimerResult]) -> String {
    use crate::result::{EndReason, Placement, RunResult};
    use crate::tune::knob::KnobStatus;
    let seed = include_str!("../../tests/seeds/rtlab-result.json");
    let mut r: RunResult = serde_json::from_str(seed).expect("the seed is a result");
    r.system.hostname = "board".into();
    r.system.kernel_release = "6.18.0-rt".into();
    r.system.preemption.model = "PREEMPT_RT".into();
    r.system.preemption.dynamic_mode = None;
    r.system.cpus_isolated = "1".into();
    r.system.cpus_nohz_full = String::new();
    r.system.governors = [(0, "performance".into()), (1, "performance".into())].into();
    r.plan.main.tuning.governor = None;
    r.start_time = "2026-11-21T10:00:00Z".into();
    r.elapsed_ns = 60_000_000_000;
    r.end = EndReason::Completed;
    r.pm_qos = crate::result::PmQos {
        requested_us: Some(0),
        held: true,
        error: None,
    };
    r.timers = timers.to_vec();
    r.isolation.placement = vec![Placement {
        who: "timer_thread[0]".into(),
        id: 5,
        cpuset: Some("/rtlab-rt".into()),
        cpus: Some(vec![1]),
    }];
    r.programs =
        vec![serde_json::from_value(serde_json::json!({
        "index": 0, "argv": ["ping", "-f", "localhost"], "starts": 1, "exits_total": 1,
        "exits": [], "spawn_error": null, "first_pid": 7, "cpuset": null, "cpus_allowed": null
    }))
    .expect("a program result")];
    r.tuning.changes = vec![crate::tune::Outcome {
        target: "IRQ 30 virtio0".into(),
        setting: "smp_affinity_list".into(),
        new: "0".into(),
        status: KnobStatus::Set { old: "0-1".into() },
        after: None,
    }];
    r.warnings.clear();
    serde_json::to_string(&r).expect("a result serializes")
}

/// Deterministic latencies (ns): a body around 20 µs and a tail to 3 ms.
pub(crate) fn latencies(n: usize, seed: u64) -> Vec<u64> {
    let mut x = seed;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if i % 500 == 0 {
                200_000 + x % 3_000_000
            } else {
                10_000 + x % 20_000
            }
        })
        .collect()
}

pub(crate) fn timer(index: usize, xs: &[u64]) -> (TimerResult, Recorder) {
    let mut r = Recorder::new(100).unwrap();
    for (i, &x) in xs.iter().enumerate() {
        r.record(x);
        r.series.record(i as u64 * 1_000_000, x);
    }
    let mut t = sample_result();
    t.index = index;
    t.summary = summarize(&r);
    t.histo_size_us = 100;
    t.histogram_us = nonzero_buckets(&r);
    t.hdr_histogram = hdr_buckets(&r);
    t.series = r.series.intervals();
    (t, r)
}

#[test]
fn rtlab_result_reads_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let (t, _) = timer(0, &latencies(20_000, 3));
    let run = load(&write(
        &dir,
        "idle.json",
        &rtlab_doc(std::slice::from_ref(&t)),
    ))
    .unwrap();
    assert_eq!(run.format, Format::Rtlab);
    assert_eq!(run.label, "idle");
    let s = &run.threads[0].stats;
    assert_eq!(s.samples, t.summary.samples);
    assert_eq!(s.min_ns, Some(t.summary.min_ns));
    assert_eq!(s.max_ns, Some(t.summary.max_ns));
    assert_eq!(s.mean_ns, Some(t.summary.mean_ns));
    assert_eq!(s.beyond_histogram, Some(t.summary.beyond_histogram));
    // The percentile rule here is hdrhistogram's: recomputing from the
    // buckets gives the recorder's own values.
    let again = run.threads[0].distribution.quantiles(s.max_ns);
    for (p, q) in t.summary.percentiles.iter().zip(&again) {
        assert_eq!(Some(p.value_ns), q.value_ns, "{}", p.name);
    }
    // The 1-µs view holds every sample, the ones beyond histo_size too.
    let placed: u64 = run.threads[0].histogram_us.iter().map(|b| b.1).sum();
    assert_eq!(placed, t.summary.samples);
    assert!(t.summary.beyond_histogram > 0);
    assert_eq!(run.threads[0].series.as_ref().unwrap().intervals.len(), 200);
    let c = &run.context;
    assert_eq!(c.kernel.as_deref(), Some("6.18.0-rt"));
    assert_eq!(c.preemption.as_deref(), Some("PREEMPT_RT"));
    assert_eq!(
        c.isolation.as_deref(),
        Some("isolcpus 1; timers in cpuset /rtlab-rt")
    );
    assert_eq!(c.load.as_deref(), Some("ping -f localhost"));
    assert_eq!(c.governor.as_deref(), Some("performance"));
    assert_eq!(c.duration_s, Some(60.0));
    assert_eq!(run.details.changes.len(), 2, "{:?}", run.details.changes);
    assert!(run.details.changes[1].contains("was 0-1; restored"));
}

#[test]
fn all_threads_merge_like_one_recorder() {
    let (a, b) = (latencies(30_000, 5), latencies(10_000, 9));
    let dir = tempfile::tempdir().unwrap();
    let (ta, _) = timer(0, &a);
    let (tb, _) = timer(1, &b);
    let run = load(&write(&dir, "two.json", &rtlab_doc(&[ta, tb]))).unwrap();
    let both: Vec<u64> = a.iter().chain(&b).copied().collect();
    let (_, r) = timer(0, &both);
    let whole = summarize(&r);
    let all = &run.all;
    assert_eq!(all.samples, whole.samples);
    assert_eq!(all.min_ns, Some(whole.min_ns));
    assert_eq!(all.max_ns, Some(whole.max_ns));
    assert!((all.mean_ns.unwrap() - whole.mean_ns).abs() < 1e-6 * whole.mean_ns);
    assert!((all.stddev_ns.unwrap() - whole.stddev_ns).abs() < 1e-6 * whole.stddev_ns);
    for (p, q) in whole.percentiles.iter().zip(&all.percentiles) {
        assert_eq!(Some(p.value_ns), q.value_ns, "{}", p.name);
    }
    assert_eq!(all.beyond_histogram, Some(whole.beyond_histogram));
}

/// cyclictest's current layout (rt-tests >= 2.7), 2 threads, -H 10.
pub(crate) const HIST_CURRENT: &str = "# Histogram
000001 000812\t000790\t001602
000002 000188\t000209\t000397
000007 000000\t000001\t000001
# Min Latencies: 00001 00001
# Avg Latencies: 00001 00001
# Max Latencies: 00002 00012 00012
# Histogram Overflows: 00000 00001 00001
# Histogram Overflow at cycle number:
# Thread 0: 
# Thread 1: 00417

";

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

#[test]
fn systress_files_read_back_their_summary() {
    let t = sample_result();
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [("a.txt", files::txt(&t)), ("a.csv", files::csv(&t))] {
        let run = load(&write(&dir, name, &text)).unwrap();
        assert_eq!(run.format, Format::Systress, "{name}");
        let s = &run.threads[0].stats;
        assert_eq!(s.samples, 9);
        assert_eq!(s.min_ns, Some(2_000));
        assert_eq!(s.max_ns, Some(100_000), "from the extra line");
        assert_eq!(s.mean_ns, Some(22_000.0), "L_avg");
        assert_eq!(s.beyond_histogram, Some(1));
        assert_eq!(s.overruns, Some(1));
        assert_eq!(s.stddev_ns, None, "L_std_H covers the histogram only");
        let p50 = s.percentiles.iter().find(|p| p.name == "p50").unwrap();
        assert_eq!(p50.value_ns, Some(17_503));
    }
    // Plain systress (no rtlab lines): percentiles from the histogram.
    let plain: String = files::txt(&t)
        .lines()
        .take_while(|l| !l.contains("ALL SAMPLES"))
        .map(|l| format!("{l}\n"))
        .collect();
    let run = load(&write(&dir, "plain.txt", &plain)).unwrap();
    let s = &run.threads[0].stats;
    assert_eq!(s.overruns, None);
    assert_eq!(s.max_ns, Some(100_000));
    let p50 = s.percentiles.iter().find(|p| p.name == "p50").unwrap();
    assert_eq!(p50.value_ns, Some(17_000));
}

#[test]
fn bad_files_are_refused_with_a_place_and_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("cut.json", "{\"rtlab_version\": \"0.1\", \"schema\": ", 1),
        ("junk.txt", "hello\nworld\n", 1),
        (
            "bad.txt",
            "       0        0\n       1       x1\n\n# Index    TID  Samples  L_min  L_max  L_avg  Samples_H\n#  0 1 1 1 1 1 1\n",
            2,
        ),
    ];
    for (name, text, line) in cases {
        let e = load(&write(&dir, name, text)).unwrap_err();
        assert_eq!(e.line, line, "{name}: {e}");
        assert!(!e.hint.is_empty());
        assert!(
            e.to_string().starts_with(&format!("{}:{line}:", e.path)),
            "{e}"
        );
    }
    let e = load(&dir.path().join("missing.json")).unwrap_err();
    assert!(e.message.contains("cannot read"));
    assert!(
        e.to_string()
            .starts_with(&format!("{}: cannot read", e.path)),
        "{e}"
    );
    let mut doc: serde_json::Value = serde_json::from_str(&rtlab_doc(&[])).unwrap();
    doc["schema"] = "rtlab-result/9".into();
    let e = load(&write(&dir, "new.json", &doc.to_string())).unwrap_err();
    assert!(e.message.contains("rtlab-result/9"), "{e}");
}

#[test]
fn a_cut_json_result_is_called_cut_at_a_1_based_place() {
    let dir = tempfile::tempdir().unwrap();
    let rtlab = include_str!("../../tests/seeds/rtlab-result.json");
    let cyclictest = include_str!("../../tests/seeds/cyclictest.json");
    // (seed, bytes kept, what the message calls it, line, column)
    let cases = [
        (
            rtlab,
            2,
            "truncated JSON result (rtlab's or cyclictest's)",
            2,
            1,
        ),
        (rtlab, 300, "truncated rtlab result", 0, 0),
        (rtlab, rtlab.len() / 2, "truncated rtlab result", 0, 0),
        (
            cyclictest,
            2,
            "truncated JSON result (rtlab's or cyclictest's)",
            2,
            1,
        ),
        (cyclictest, 200, "truncated cyclictest JSON file", 0, 0),
    ];
    for (seed, n, what, line, column) in cases {
        let cut = &seed[..seed.floor_char_boundary(n)];
        let e = load(&write(&dir, "cut.json", cut)).unwrap_err();
        assert!(e.message.starts_with(what), "{n}: {e}");
        assert!(e.hint.contains("cut short"), "{n}: {e}");
        assert!(e.line >= 1 && e.column >= 1, "{n}: {e}");
        if line > 0 {
            assert_eq!((e.line, e.column), (line, column), "{n}: {e}");
        }
        // The place is said once, as FILE:LINE:COL.
        assert!(!e.message.contains(" at line "), "{e}");
    }
    let e = load(&write(&dir, "other.json", "{\"a\": 1}")).unwrap_err();
    assert!(e.message.contains("neither an rtlab result"), "{e}");
    let e = load(&write(&dir, "bad.json", "{\"schema\": x}")).unwrap_err();
    assert!(
        e.message.starts_with("invalid JSON in this rtlab result"),
        "{e}"
    );
}

#[test]
fn no_panic_on_mangled_inputs() {
    let t = sample_result();
    let dir = tempfile::tempdir().unwrap();
    let (big, _) = timer(0, &latencies(300, 1));
    let sources = [
        rtlab_doc(&[big]),
        files::txt(&t),
        files::csv(&t),
        HIST_CURRENT.to_string(),
    ];
    for (k, src) in sources.iter().enumerate() {
        let bytes = src.as_bytes();
        for cut in (0..bytes.len()).step_by(bytes.len() / 97 + 1) {
            let mut mangled = bytes[..cut].to_vec();
            mangled.extend_from_slice(b"9\t#,{\n");
            mangled.extend_from_slice(&bytes[cut..]);
            let p = dir.path().join(format!("m{k}"));
            std::fs::write(&p, &mangled).unwrap();
            let _ = load(&p);
            std::fs::write(&p, &bytes[..cut]).unwrap();
            let _ = load(&p);
        }
    }
}

#[test]
fn huge_numbers_are_refused_as_implausible_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let max = u64::MAX;
    let huge = [
        format!(
            "# Histogram\n{max} {max}\t{max}\n1 {max}\t5\n# Min Latencies: {max} 1\n# Avg Latencies: {max} 1\n# Max Latencies: {max} {max}\n# Histogram Overflows: {max} {max}\n"
        ),
        format!(
            "{{\"thread\": {{\"0\": {{\"histogram\": {{\"{max}\": {max}, \"1\": {max}}}, \"cycles\": 3, \"min\": {max}, \"max\": {max}, \"avg\": 1e308}}}}, \"resolution_in_ns\": 0}}"
        ),
        format!(
            "{max} {max}\n1 {max}\n\n# Index TID Samples L_min L_max L_avg Samples_H L_avg_H L_med_H L_std_H L_mode_H\n#  0 1 {max} {max} {max} {max} 1 {max} 1 {max} 1\n"
        ),
    ];
    for (i, text) in huge.iter().enumerate() {
        let e = load(&write(&dir, &format!("huge{i}"), text)).unwrap_err();
        assert!(e.message.contains("implausible"), "{i}: {e:?}");
    }
    let mut doc: serde_json::Value =
        serde_json::from_str(&rtlab_doc(&[timer(0, &latencies(10, 1)).0])).unwrap();
    doc["timers"][0]["hdr_histogram"] = serde_json::json!([{"low_ns": max, "high_ns": max, "count": max}, {"low_ns": 1, "high_ns": 1, "count": max}]);
    doc["timers"][0]["series"] = serde_json::json!({"interval_ns": max, "intervals": [{"start_ns": max, "count": max, "min_ns": 0, "max_ns": max, "mean_ns": 1e300}]});
    let e = load(&write(&dir, "a.json", &doc.to_string())).unwrap_err();
    assert!(e.message.contains("implausible"), "{e:?}");
}

#[test]
fn impossible_figures_are_refused_with_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        // min above max
        (
            "# Histogram\n000005 3\n# Total: 000000003\n# Min Latencies: 00009\n# Avg Latencies: 00005\n# Max Latencies: 00005\n# Histogram Overflows: 00000\n",
            "min",
        ),
        // a mean outside [min, max] (cyclictest's own Avg, histogram overflowed)
        (
            "# Histogram\n000005 3\n# Total: 000000003\n# Min Latencies: 00005\n# Avg Latencies: 00900\n# Max Latencies: 00200\n# Histogram Overflows: 00001\n",
            "mean",
        ),
    ];
    for (i, (text, what)) in cases.iter().enumerate() {
        let e = load(&write(&dir, &format!("bad{i}"), text)).unwrap_err();
        assert!(
            e.message.contains("implausible") && e.message.contains(what),
            "{i}: {e:?}"
        );
    }
}

#[test]
fn labels_are_unique_and_can_be_given() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let p1 = write(&dir, "a/run.hist", HIST_CURRENT);
    let p2 = write(&dir, "b/run.hist", HIST_CURRENT);
    let runs = load_all(&[p1.clone(), p2.clone()], &[]).unwrap();
    assert_eq!(runs[0].label, "run");
    assert_eq!(runs[1].label, "run#2");
    let runs = load_all(&[p1, p2], &["idle".into()]).unwrap();
    assert_eq!(runs[0].label, "idle");
    assert_eq!(runs[1].label, "run");
}

#[test]
fn metrics_parse_and_read() {
    assert_eq!(Metric::parse("P99.9"), Some(Metric::P999));
    assert_eq!(Metric::parse("p50"), Some(Metric::Median));
    assert_eq!(Metric::parse("beyond"), Some(Metric::Beyond));
    assert_eq!(Metric::parse("p42"), None);
    for m in Metric::ALL {
        assert_eq!(Metric::parse(m.name()), Some(m));
    }
}

/// Three runs for the renderers' tests: two rtlab results (idle with one
/// thread, loaded with two) and an old cyclictest histogram.
pub(crate) fn sample_runs(dir: &tempfile::TempDir) -> Vec<Run> {
    let (idle, _) = timer(0, &latencies(5_000, 1));
    let (l0, _) = timer(
        0,
        &latencies(5_000, 2)
            .iter()
            .map(|x| x * 2)
            .collect::<Vec<_>>(),
    );
    let (l1, _) = timer(
        1,
        &latencies(5_000, 4)
            .iter()
            .map(|x| x * 3)
            .collect::<Vec<_>>(),
    );
    let paths = [
        write(dir, "idle.json", &rtlab_doc(&[idle])),
        write(dir, "loaded.json", &rtlab_doc(&[l0, l1])),
        write(dir, "old.hist", HIST_CURRENT),
    ];
    load_all(&paths, &[]).unwrap()
}

/// Compares `actual` with `tests/golden/NAME`; `RTLAB_BLESS=1` rewrites it.
pub(crate) fn golden(name: &str, actual: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("RTLAB_BLESS").is_some() {
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        actual, expected,
        "{name} differs from tests/golden/{name} (RTLAB_BLESS=1 rewrites it)"
    );
}

/// A systress file whose summary or extra row was cut short is refused with
/// its place, never shown with `?` for the missing columns.
#[test]
fn systress_files_cut_short_are_refused() {
    let whole = include_str!("../../tests/golden/timer_thread00.txt");
    let dir = tempfile::tempdir().unwrap();
    assert!(load(&write(&dir, "whole.txt", whole)).is_ok());
    // The extra row loses its last columns.
    let row_at = whole.find("#      0    17.503").unwrap();
    let row_end = row_at + whole[row_at..].find('\n').unwrap();
    let cut_row = whole[..row_end].rsplit_once(' ').unwrap().0.to_string() + "\n";
    let e = load(&write(&dir, "row.txt", &cut_row))
        .unwrap_err()
        .to_string();
    assert!(e.contains("values for the 9 columns"), "{e}");
    // The file ends after the extra header, before its row.
    let at = whole.find("#  Index       p50").unwrap();
    let end = at + whole[at..].find('\n').unwrap() + 1;
    let e = load(&write(&dir, "head.txt", &whole[..end]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no row under its header"), "{e}");
    // The systress summary row itself cut in the middle.
    let summary = whole.find("#      0 13029").unwrap();
    let mid = summary + 30;
    let e = load(&write(&dir, "mid.txt", &whole[..mid]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("cut short"), "{e}");
}

/// rtlab's exact ns truncated to µs, as cyclictest truncates: checked
/// against the same samples truncated by brute force.
#[test]
fn a_run_truncated_to_us_matches_its_samples_truncated_by_hand() {
    let xs = latencies(5_000, 1);
    let (t, _) = timer(0, &xs);
    let dir = tempfile::tempdir().unwrap();
    let run = load(&write(&dir, "r.json", &rtlab_doc(&[t]))).unwrap();
    assert_eq!(run.resolution_ns, 1);
    let us = run.truncated_to(1_000);
    assert_eq!((us.resolution_ns, us.truncated_from_ns), (1_000, Some(1)));
    let mut floored: Vec<u64> = xs.iter().map(|x| x / 1_000 * 1_000).collect();
    floored.sort_unstable();
    let s = &us.all;
    assert_eq!(s.samples, xs.len() as u64);
    assert_eq!(s.min_ns, floored.first().copied());
    assert_eq!(s.max_ns, floored.last().copied());
    for q in &s.percentiles {
        // Rank ceil(q·n), as the recorder and cyclictest's readers use.
        let rank = ((q.quantile * floored.len() as f64).ceil() as usize).max(1);
        // Exact where the HDR buckets are 1 ns wide (below 2 µs), within
        // their 0.1 % above.
        let (got, want) = (q.value_ns.unwrap() as f64, floored[rank - 1] as f64);
        assert!(
            (got - want).abs() <= want * 0.001,
            "{}: {got} vs {want}",
            q.name
        );
        assert_eq!(got % 1_000.0, 0.0, "{}: whole µs", q.name);
    }
    let mean = floored.iter().sum::<u64>() as f64 / floored.len() as f64;
    // The HDR buckets behind it hold values to 0.1 %.
    let got = s.mean_ns.unwrap();
    assert!((got - mean).abs() <= mean * 0.001, "{got} vs {mean}");
    // A run already in µs, or truncated to a finer resolution, is unchanged.
    assert_eq!(us.truncated_to(1_000).all, us.all);
    assert_eq!(run.truncated_to(1).all, run.all);
}

#[test]
fn a_real_result_is_read_by_the_types_that_wrote_it() {
    // One model: a real run's JSON (tests/seeds) read into RunResult and
    // written again is the same document, every field of it.
    let seed = include_str!("../../tests/seeds/rtlab-result.json");
    let as_written: serde_json::Value = serde_json::from_str(seed).unwrap();
    let model: crate::result::RunResult = serde_json::from_str(seed).unwrap();
    assert_eq!(serde_json::to_value(&model).unwrap(), as_written);
}

#[test]
fn a_result_with_an_audit_and_an_irq_task_reads_back_whole() {
    // A real run (tests/seeds) with a timer thread, an isolation audit and
    // an IRQ-to-task measurement: every field written is read back; the
    // measurement is thread I0 beside T0, and the run's figure is T0's.
    let seed = include_str!("../../tests/seeds/rtlab-result-trace-experiments.json");
    let as_written: serde_json::Value = serde_json::from_str(seed).unwrap();
    let model: crate::result::RunResult = serde_json::from_str(seed).unwrap();
    assert_eq!(serde_json::to_value(&model).unwrap(), as_written);
    let m = &model.irq_tasks[0];
    let c = &m.counts;
    assert_eq!(
        c.irqs,
        c.matched + c.task_running + c.no_wakeup + c.other_cause_total() + c.unresolved
    );
    assert!(model.audit.as_ref().is_some_and(|a| !a.rows.is_empty()));
    let dir = tempfile::tempdir().unwrap();
    let run = load(&write(&dir, "trace.json", seed)).unwrap();
    let names: Vec<&str> = run.threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["T0", "I0"]);
    assert_eq!(run.threads[1].measures, super::Measures::IrqToTask);
    assert_eq!(run.threads[1].stats.samples, c.matched);
    assert_eq!(run.threads[1].stats.max_ns, Some(m.from_exit.max_ns));
    assert_eq!(run.all, run.threads[0].stats);
    assert!(run.details.audit.is_some());
}

#[test]
fn a_timer_threads_irq_side_is_beside_it_and_not_in_the_runs_figure() {
    // A real run with `irq_latency` (tests/seeds): T0 then T0.irq; the
    // run's figure is the thread's alone.
    let seed = include_str!("../../tests/seeds/rtlab-result-irq-latency.json");
    let model: crate::result::RunResult = serde_json::from_str(seed).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = load(&write(&dir, "irq.json", seed)).unwrap();
    let names: Vec<&str> = run.threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["T0", "T0.irq"]);
    assert_eq!(run.threads[1].measures, super::Measures::TimerIrq);
    let irq = &model.timer_irq[0].latency;
    assert_eq!(run.threads[1].stats.samples, irq.samples);
    assert_eq!(run.threads[1].stats.max_ns, Some(irq.max_ns));
    assert_eq!(run.all, run.threads[0].stats);
    assert_eq!(run.all.samples, model.timers[0].summary.samples);
}

#[test]
fn a_result_written_before_spikes_were_kept_still_loads() {
    // A real run of the version before `spikes` (tests/seeds): the new
    // fields take their defaults, the figures are read as written.
    let old = include_str!("../../tests/seeds/rtlab-result-before-spikes.json");
    let model: crate::result::RunResult = serde_json::from_str(old).unwrap();
    assert!(model.timers.iter().all(|t| t.spikes.worst.is_empty()));
    let dir = tempfile::tempdir().unwrap();
    let run = load(&write(&dir, "old.json", old)).unwrap();
    assert_eq!(run.threads.len(), model.timers.len());
}

#[test]
fn a_windows_file_is_a_run_whole_or_window_by_window() {
    let text = "{\"schema\":\"rtlab-windows/1\",\"bounds_ns\":[2000,5000]}\n\
        {\"start\":\"2026-11-22T05:00:00Z\",\"seconds\":60.0,\"thread\":\"T0\",\"cpu\":1,\"samples\":100,\"max_ns\":4000,\"counts\":[90,10,0]}\n\
        {\"start\":\"2026-11-22T05:01:00Z\",\"seconds\":60.0,\"thread\":\"T0\",\"cpu\":1,\"samples\":100,\"max_ns\":9000,\"counts\":[50,49,1]}\n\
        {\"start\":\"2026-11-22T05:02\n";
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "w.jsonl", text);
    let run = load(&path).unwrap();
    assert_eq!(run.format, Format::RtlabWindows);
    let t = &run.threads[0];
    assert_eq!((t.stats.samples, t.stats.max_ns), (200, Some(9000)));
    assert_eq!(t.stats.beyond_histogram, Some(1));
    // p50: rank 100 falls in the first bucket (140 samples up to 2 µs).
    assert_eq!(t.stats.percentiles[0].value_ns, Some(2000));
    let w = t.windows.as_ref().unwrap();
    assert_eq!(w.windows.len(), 2);
    assert_eq!((w.windows[1].0, w.windows[1].1), (60.0, 120.0));
    assert!(run.details.warnings[0].contains("1 lines cut short"));
    // FILE@2: the second window alone.
    let second = load(&dir.path().join("w.jsonl@2")).unwrap();
    assert_eq!(second.label, "w@2");
    assert_eq!(second.threads[0].stats.samples, 100);
    assert_eq!(second.threads[0].stats.max_ns, Some(9000));
    assert!(load(&dir.path().join("w.jsonl@3")).is_err());
    // A window whose counts do not match the buckets is refused.
    let bad = text.replace("[90,10,0]", "[90,10]");
    assert!(load(&write(&dir, "bad.jsonl", &bad)).is_err());
    // And it draws, its histograms along time first.
    let panels = crate::report::plot::Panel::default_for(std::slice::from_ref(&run));
    assert_eq!(panels[0], crate::report::plot::Panel::Windows);
    let opts = crate::report::plot::PlotOptions {
        panels,
        ..crate::report::plot::PlotOptions::default()
    };
    let svg = crate::report::plot::svg(&[run], &opts).unwrap();
    assert!(svg.contains("max per window"));
}

/// A windows file of `n` windows per thread for threads T0 and T1, with
/// counts that differ window by window, and its sums by brute force.
fn big_windows(n: usize) -> (String, Vec<Vec<u64>>, Vec<u64>) {
    let mut text = String::from("{\"schema\":\"rtlab-windows/1\",\"bounds_ns\":[2000,5000]}\n");
    let mut sums = vec![vec![0u64; 3]; 2];
    let mut max = vec![0u64; 2];
    for i in 0..n {
        for (t, sum) in sums.iter_mut().enumerate() {
            let counts = [
                i as u64 % 7,
                (i as u64 * 3 + t as u64) % 11,
                (i % 97 == 0) as u64,
            ];
            let m = 1000 + (i as u64 * 7919 + t as u64) % 9000;
            for (s, c) in sum.iter_mut().zip(counts) {
                *s += c;
            }
            max[t] = max[t].max(m);
            let start = humantime::format_rfc3339_seconds(
                std::time::UNIX_EPOCH
                    + std::time::Duration::from_secs(1_800_000_000 + 60 * i as u64),
            );
            text.push_str(&format!(
                "{{\"start\":\"{start}\",\"seconds\":60.0,\"thread\":\"T{t}\",\"cpu\":{t},\"samples\":{},\"max_ns\":{m},\"counts\":[{},{},{}]}}\n",
                counts.iter().sum::<u64>(), counts[0], counts[1], counts[2]
            ));
        }
    }
    (text, sums, max)
}

#[test]
fn a_large_windows_file_sums_exactly_in_bounded_columns() {
    let n = 100_000;
    let (text, sums, max) = big_windows(n);
    let run = super::parse_bytes(text.as_bytes(), Path::new("w.jsonl")).unwrap();
    assert_eq!(run.threads.len(), 2);
    for (t, thread) in run.threads.iter().enumerate() {
        assert_eq!(thread.stats.samples, sums[t].iter().sum::<u64>());
        assert_eq!(thread.stats.beyond_histogram, Some(sums[t][2]));
        assert_eq!(thread.stats.max_ns, Some(max[t]));
        let w = thread.windows.as_ref().unwrap();
        assert!(
            w.windows.len() <= super::windows::MAX_COLUMNS,
            "{}",
            w.windows.len()
        );
        // The columns hold every sample, in time order, spanning the file.
        let mut col = vec![0u64; 3];
        for c in &w.windows {
            for (s, x) in col.iter_mut().zip(&c.2) {
                *s += x;
            }
        }
        assert_eq!(col, sums[t]);
        assert!(w.windows.windows(2).all(|p| p[0].1 <= p[1].0));
        assert_eq!(w.windows.last().unwrap().1, 60.0 * n as f64);
    }
    assert!(run.details.warnings[0].contains("windows per column"));
    // FILE@N: the N-th window of each thread alone.
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "w.jsonl", &text);
    for k in [1usize, 2, 50_000, n] {
        let one = load(&dir.path().join(format!("w.jsonl@{k}"))).unwrap();
        let i = k - 1;
        let expect = i % 7 + (i * 3) % 11 + (i % 97 == 0) as usize;
        assert_eq!(one.threads[0].stats.samples, expect as u64, "@{k}");
        assert_eq!(
            one.threads[0].stats.max_ns,
            Some(1000 + (i as u64 * 7919) % 9000)
        );
    }
    assert!(load(&dir.path().join(format!("w.jsonl@{}", n + 1))).is_err());
    drop(path);
}

#[test]
fn a_windows_file_is_known_by_its_parsed_header() {
    // As Python's json module writes it: spaces after colons and commas.
    let spaced = "{\"schema\": \"rtlab-windows/1\", \"bounds_ns\": [2000, 5000]}\n\
        {\"start\": \"2026-11-22T05:00:00Z\", \"seconds\": 60.0, \"thread\": \"T0\", \"cpu\": 1, \"samples\": 3, \"max_ns\": 4000, \"counts\": [1, 1, 1]}\n";
    let run = super::parse_bytes(spaced.as_bytes(), Path::new("w.jsonl")).unwrap();
    assert_eq!(run.format, Format::RtlabWindows);
    assert_eq!(run.threads[0].stats.samples, 3);
    // A line too long is refused at its line, never read into a value.
    let long = format!(
        "{}{{\"start\":\"{}\"}}\n",
        spaced,
        "x".repeat(crate::monitor::windows::MAX_LINE)
    );
    let e = super::parse_bytes(long.as_bytes(), Path::new("w.jsonl")).unwrap_err();
    assert_eq!(e.line, 3, "{e:?}");
    assert!(e.message.contains("longer than"), "{e:?}");
    // Bounds that are not increasing, or too many, are refused.
    for bounds in [
        "[5000,2000]",
        "[]",
        &format!(
            "[{}]",
            (1..400)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ),
    ] {
        let text = format!("{{\"schema\":\"rtlab-windows/1\",\"bounds_ns\":{bounds}}}\n");
        assert!(
            super::parse_bytes(text.as_bytes(), Path::new("w.jsonl")).is_err(),
            "{bounds}"
        );
    }
}

#[test]
fn timers_on_a_partitions_cpus_say_so_in_the_context() {
    // A real run (tests/seeds), as if its timers had run on the CPUs of an
    // `rt` partition without entering its cpuset (a v2 isolated partition).
    let seed = include_str!("../../tests/seeds/rtlab-result.json");
    let mut v: serde_json::Value = serde_json::from_str(seed).unwrap();
    v["isolation"]["partitions"] = serde_json::json!([
        {"name": "rt", "path": "/rt", "cpus": [0, 1], "exclusive": null,
         "load_balance": null, "partition": "isolated", "tasks": 3},
    ]);
    let dir = tempfile::tempdir().unwrap();
    let run = load(&write(&dir, "part.json", &v.to_string())).unwrap();
    let iso = run.context.isolation.unwrap();
    assert!(
        iso.contains("timers on the CPUs of partition rt (0-1)"),
        "{iso}"
    );
    // The same run without the partition: none.
    let run = load(&write(&dir, "plain.json", seed)).unwrap();
    assert_eq!(run.context.isolation.as_deref(), Some("none"));
}

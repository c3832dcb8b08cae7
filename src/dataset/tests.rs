//! What the reading's tests (by subject, in the `*_tests.rs` files beside
//! this one) and the renderers' tests share: result files written by the
//! types that read them, sample runs, goldens. Here too, the tests that go
//! through the report's own writers and plots (systress files, mangled
//! inputs, a windows file drawn): `walls` lets only `tests.rs` reach the
//! report, a layer above.

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

/// A noise thread's result as a run writes it: three periods of 1 s, two
/// exact gaps, two HDR buckets, two worst gaps.
pub(crate) fn noise_result(index: usize, cpu: usize) -> crate::result::NoiseResult {
    serde_json::from_value(serde_json::json!({
        "index": index, "tid": 900 + index, "cpu": cpu, "cpu_first": cpu, "cpu_last": cpu,
        "sched": {"policy": "FIFO", "priority": 10},
        "counter": "tsc", "counter_hz": 2_596_100_000u64, "counter_why": "the TSC",
        "threshold_ns": 5000, "period_ns": 1_000_000_000u64,
        "runtime_per_period_ns": 900_000_000u64,
        "summary": {
            "runtime_ns": 2_700_000_000u64, "noise_ns": 270_000, "available_percent": 99.99,
            "max_single_ns": 120_000, "gaps": 30, "reads": 1_000_070, "min_gap_ns": 20,
            "mean_gap_ns": 25.5, "percentiles": [{"name": "p50", "quantile": 0.5, "value_ns": 20}],
            "out_of_range": 0
        },
        "periods": [
            {"start_ns": 5_000_000_000u64, "runtime_ns": 900_000_000u64, "noise_ns": 100_000,
             "gaps": 10, "max_gap_ns": 120_000},
            {"start_ns": 6_000_000_000u64, "runtime_ns": 900_000_000u64, "noise_ns": 0,
             "gaps": 0, "max_gap_ns": 40},
            {"start_ns": 7_000_000_000u64, "runtime_ns": 900_000_000u64, "noise_ns": 170_000,
             "gaps": 20, "max_gap_ns": 9_000}
        ],
        "periods_merged": 2,
        "gaps_exact": [[30, 40], [20, 1_000_000]],
        "gaps_hdr": [
            {"low_ns": 119_936, "high_ns": 120_000, "count": 1},
            {"low_ns": 8_992, "high_ns": 9_000, "count": 29}
        ],
        "worst": [{"end_ns": 5_500_000_000u64, "ns": 120_000},
                  {"end_ns": 7_200_000_000u64, "ns": 9_000}],
        "error": null
    }))
    .expect("a noise result")
}

/// An rtlab result with these timer and noise threads.
pub(crate) fn rtlab_noise_doc(
    timers: &[TimerResult],
    noise: &[crate::result::NoiseResult],
) -> String {
    let mut doc: serde_json::Value = serde_json::from_str(&rtlab_doc(timers)).unwrap();
    doc["noise"] = serde_json::to_value(noise).unwrap();
    doc.to_string()
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

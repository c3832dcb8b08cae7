//! What comparing runs relies on: unique labels, metrics, and a finer run
//! truncated to a coarser one's resolution.

use super::tests::*;
use super::*;

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

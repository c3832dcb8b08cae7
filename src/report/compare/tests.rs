use super::*;
use crate::dataset::Quantile;

/// A column whose latencies are `base` µs scaled by `factor`.
fn column(label: &str, factor: f64, overruns: Option<u64>) -> Column {
    let us = |v: f64| (v * factor * 1000.0).round() as u64;
    Column {
        label: label.into(),
        path: format!("{label}.json"),
        format: Format::Rtlab,
        context: Context {
            kernel: Some("6.18".into()),
            ..Context::default()
        },
        stats: Stats {
            samples: 10_000,
            min_ns: Some(us(2.0)),
            mean_ns: Some(us(5.0) as f64),
            max_ns: Some(us(80.0)),
            stddev_ns: Some(us(1.5) as f64),
            percentiles: [
                ("p50", 0.5, 5.0),
                ("p90", 0.9, 7.0),
                ("p99", 0.99, 10.0),
                ("p99.9", 0.999, 20.0),
                ("p99.99", 0.9999, 50.0),
            ]
            .iter()
            .map(|&(n, q, v)| Quantile {
                name: n.into(),
                quantile: q,
                value_ns: Some(us(v)),
            })
            .collect(),
            overruns,
            beyond_histogram: Some(0),
            deadline_misses: None,
            noise: None,
        },
        resolution_ns: 1,
        truncated_from_ns: None,
        buckets_ns: None,
        irq: None,
    }
}

fn cond(s: &str) -> Condition {
    s.parse().unwrap()
}

fn failed(cols: &[Column], conditions: &[&str]) -> Vec<String> {
    let conditions: Vec<Condition> = conditions.iter().map(|c| cond(c)).collect();
    gate(cols, &conditions)
        .into_iter()
        .filter(|v| v.failed)
        .map(|v| format!("{} {}", v.condition, v.column))
        .collect()
}

#[test]
fn conditions_parse() {
    assert_eq!(cond("p99>+10%").bound, Bound::Relative(0.1));
    assert_eq!(cond("p99 > +10%").op, Op::Greater);
    assert_eq!(cond("max>=+20us").bound, Bound::Delta(20_000.0));
    assert_eq!(cond("max>=+20us").op, Op::GreaterEq);
    assert_eq!(cond("p99.99>100").bound, Bound::Absolute(100_000.0));
    assert_eq!(cond("p99.99>1.5ms").bound, Bound::Absolute(1_500_000.0));
    assert_eq!(cond("mean<-5%").bound, Bound::Relative(-0.05));
    assert_eq!(cond("samples<=-100").bound, Bound::Delta(-100.0));
    assert_eq!(cond("overruns>0").bound, Bound::Absolute(0.0));
    assert_eq!(cond("p50>300ns").metric, Metric::Median);
    for bad in [
        "p99",
        "p98>+10%",
        "p99>>1",
        "p99>10%",
        "p99>+x%",
        "p99>5s",
        "overruns>5us",
        "max>inf",
    ] {
        let e = bad.parse::<Condition>().unwrap_err();
        assert!(e.contains("hint:"), "{bad}: {e}");
    }
    assert!(
        "p98>1"
            .parse::<Condition>()
            .unwrap_err()
            .contains("did you mean p90")
    );
}

#[test]
fn equal_runs_pass_and_a_regression_fails() {
    let equal = [column("a", 1.0, Some(0)), column("b", 1.0, Some(0))];
    let gates = [
        "p99>+10%",
        "max>+20us",
        "p99.99>100us",
        "mean>+0%",
        "overruns>0",
    ];
    assert!(failed(&equal, &gates).is_empty());
    let worse = [column("idle", 1.0, Some(0)), column("loaded", 1.2, Some(3))];
    assert_eq!(
        failed(&worse, &gates),
        vec!["p99>+10% loaded", "mean>+0% loaded", "overruns>0 loaded"]
    );
    // +20% is not above +20%, and the max moved +16 µs only.
    assert!(failed(&worse, &["p99>+20%", "max>+16us"]).is_empty());
    assert_eq!(failed(&worse, &["p99>=+20%"]), vec!["p99>=+20% loaded"]);
    // An improvement gate, and an absolute bound checked on every run.
    let better = [column("old", 1.0, Some(0)), column("new", 0.5, Some(0))];
    assert_eq!(failed(&better, &["p99<-40%"]), vec!["p99<-40% new"]);
    assert_eq!(failed(&better, &["max>50us"]), vec!["max>50us old"]);
}

#[test]
fn unknown_values_fail_the_gate() {
    let mut cyclictest = column("ct", 1.0, None);
    cyclictest.stats.percentiles[4].value_ns = None;
    let cols = [column("rt", 1.0, Some(0)), cyclictest.clone()];
    assert_eq!(
        failed(&cols, &["p99.99>+10%", "overruns>0", "p99>+10%"]),
        vec!["p99.99>+10% ct", "overruns>0 ct"]
    );
    let reversed = [cyclictest, column("rt", 1.0, Some(0))];
    let v = gate(&reversed, &[cond("p99.99>+10%")]);
    assert!(v[0].failed && v[0].reason.contains("baseline"), "{v:?}");
}

#[test]
fn a_relative_condition_with_one_run_fails_the_gate() {
    let one = [column("baseline", 1.0, Some(0))];
    assert_eq!(
        failed(&one, &["p99>+10%", "max>+0us", "max>1000us"]),
        vec!["p99>+10% baseline", "max>+0us baseline"],
        "the absolute bound is checked and passes; the others cannot be"
    );
    let v = gate(&one, &[cond("p99>+10%")]);
    assert!(v[0].reason.contains("only one run"), "{v:?}");
}

#[test]
fn table_has_every_metric_and_the_differences() {
    let cols = [column("idle", 1.0, Some(0)), column("loaded", 1.5, Some(2))];
    let t = text(&cols);
    for row in [
        "kernel",
        "samples",
        "p99.99 (µs)",
        "max (µs)",
        "stddev (µs)",
        "beyond_histogram",
        "overruns",
    ] {
        assert!(
            t.lines().any(|l| l.starts_with(row)),
            "{row} missing in\n{t}"
        );
    }
    let p99 = t.lines().find(|l| l.starts_with("p99 (µs)")).unwrap();
    assert!(
        p99.contains("10.0") && p99.contains("15.0 (+50.0%)"),
        "{p99}"
    );
    let overruns = t.lines().find(|l| l.starts_with("overruns")).unwrap();
    assert!(overruns.contains("2 (+2)"), "{overruns}");
    let md = markdown(&cols);
    assert!(
        md.starts_with("| | idle | loaded |\n|---|---:|---:|\n"),
        "{md}"
    );
    assert!(md.contains("| p99 (µs) | 10.0 | 15.0 (+50.0%) |"), "{md}");
    let j = json(&cols, &gate(&cols, &[cond("p99>+10%")]));
    assert_eq!(j["columns"][1]["metrics"]["p99_ns"], 15_000.0);
    assert_eq!(j["columns"][1]["diff_vs_first"]["p99_ns"]["relative"], 0.5);
    assert_eq!(j["failed"], true);
    assert_eq!(j["gate"][0]["column"], "loaded");
}

#[test]
fn golden_table_markdown_and_gnuplot_script() {
    let dir = tempfile::tempdir().unwrap();
    let runs = crate::dataset::tests::sample_runs(&dir);
    let cols = columns(&runs, false);
    use crate::dataset::tests::golden;
    golden("compare.txt", &text(&cols));
    golden("compare.md", &markdown(&cols));
    // Paths differ per test run: the script names them in its header.
    let script = crate::report::gnuplot::script(&runs, "Idle vs \"loaded\"")
        .replace(&dir.path().display().to_string(), "DIR");
    golden("plot.gp", &script);
}

#[test]
fn audits_are_set_side_by_side_from_each_runs_rows() {
    // A real result with an audit (tests/seeds), and the same run without
    // its audit: every source of the first is in its column, none in the
    // second; the promises likewise.
    let seed = include_str!("../../../tests/seeds/rtlab-result-trace-experiments.json");
    let dir = tempfile::tempdir().unwrap();
    let with = dir.path().join("with.json");
    std::fs::write(&with, seed).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(seed).unwrap();
    doc.as_object_mut().unwrap().remove("audit");
    let without = dir.path().join("without.json");
    std::fs::write(&without, doc.to_string()).unwrap();
    let runs = crate::dataset::load_all(&[with, without], &[]).unwrap();
    let c = audits(&runs).unwrap();
    let audit = runs[0].details.audit.as_ref().unwrap();
    assert_eq!(c.labels, ["with", "without"]);
    assert_eq!(c.intruders, [Some(audit.intruders().count()), None]);
    let total = |f: fn(&(u64, u64)) -> u64| -> u64 {
        c.sources
            .iter()
            .filter_map(|s| s.runs[0].as_ref())
            .map(f)
            .sum()
    };
    assert_eq!(
        total(|x| x.0),
        audit.rows.iter().map(|r| r.count).sum::<u64>()
    );
    assert_eq!(
        total(|x| x.1),
        audit.rows.iter().map(|r| r.total_ns).sum::<u64>()
    );
    assert!(c.sources.iter().all(|s| s.runs[1].is_none()));
    // Those that do not belong come first.
    let first_belonging = c.sources.iter().position(|s| s.belongs).unwrap();
    assert!(c.sources[first_belonging..].iter().all(|s| s.belongs));
    assert_eq!(c.promises.len(), audit.promises.len());
    let text = audit_text(&runs).unwrap();
    assert!(text.lines().nth(1).unwrap().ends_with(" -"), "{text}");
}

#[test]
fn a_program_restarted_between_runs_is_one_row() {
    // The same real result twice, the program's PID changed in the second:
    // its wake-up rows are one source, in both columns.
    let seed = include_str!("../../../tests/seeds/rtlab-result-trace-experiments.json");
    let mut doc: serde_json::Value = serde_json::from_str(seed).unwrap();
    let rows = doc["audit"]["rows"].as_array_mut().unwrap();
    let mut first = rows[0].clone();
    first["kind"] = "timer".into();
    first["what"] = "wake-up of app (PID 75), tool (PID 9)".into();
    first["belongs"] = false.into();
    rows.push(first.clone());
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    std::fs::write(&a, doc.to_string()).unwrap();
    let rows = doc["audit"]["rows"].as_array_mut().unwrap();
    rows.last_mut().unwrap()["what"] = "wake-up of app (PID 4021), tool (PID 9)".into();
    let b = dir.path().join("b.json");
    std::fs::write(&b, doc.to_string()).unwrap();
    let runs = crate::dataset::load_all(&[a, b], &[]).unwrap();
    let c = audits(&runs).unwrap();
    let app: Vec<&AuditSource> = c
        .sources
        .iter()
        .filter(|s| s.what.contains("app"))
        .collect();
    assert_eq!(app.len(), 1, "{app:?}");
    assert_eq!(app[0].what, "wake-up of app, tool");
    assert!(app[0].runs.iter().all(Option::is_some));
    assert_eq!(without_pid("x (PID 7"), "x (PID 7");
    assert_eq!(without_pid("x (PID )"), "x (PID )");
}

#[test]
fn beside_a_windows_file_every_run_is_put_in_its_buckets() {
    // A real result (tests/seeds), and a windows file of the same samples
    // counted into the monitor's buckets by hand from the result's 1-µs
    // histogram (each µs bucket whole in one metric bucket).
    let seed = include_str!("../../../tests/seeds/rtlab-result.json");
    let doc: serde_json::Value = serde_json::from_str(seed).unwrap();
    let t0 = &doc["timers"][0];
    let bounds = crate::measure::live::METRIC_BOUNDS_NS;
    let mut counts = vec![0u64; bounds.len() + 1];
    let mut samples = 0;
    for pair in t0["histogram_us"].as_array().unwrap() {
        let (us, n) = (pair[0].as_u64().unwrap(), pair[1].as_u64().unwrap());
        // [us, us+1) µs: in the first bucket whose bound is ≥ us+1 µs.
        let b = bounds
            .iter()
            .position(|&b| (us + 1) * 1000 <= b)
            .unwrap_or(bounds.len());
        counts[b] += n;
        samples += n;
    }
    let beyond = t0["summary"]["beyond_histogram"].as_u64().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    std::fs::write(&json, seed).unwrap();
    let header = serde_json::json!({"schema": "rtlab-windows/1", "bounds_ns": bounds});
    let window = serde_json::json!({"start": "2026-11-22T03:28:25Z", "seconds": 1.0,
        "thread": "T0", "cpu": 1, "samples": samples, "max_ns": t0["summary"]["max_ns"],
        "counts": counts});
    let windows = dir.path().join("run.windows.jsonl");
    std::fs::write(&windows, format!("{header}\n{window}\n")).unwrap();
    let runs = crate::dataset::load_all(&[json, windows], &[]).unwrap();
    let mut t0_only = runs[0].clone();
    t0_only.threads.truncate(1);
    t0_only.all = t0_only.threads[0].stats.clone();
    let cols = columns(&[t0_only, runs[1].clone()], false);
    // The median in both columns is the same bucket bound, and the brute
    // force's: the bucket holding the middle sample of the histogram.
    let p50 = |c: &Column| c.stats.percentiles[0].value_ns;
    let rank = (samples + beyond).div_ceil(2);
    let mut seen = 0;
    let want = counts
        .iter()
        .zip(bounds)
        .find(|(n, _)| {
            seen += **n;
            seen >= rank
        })
        .map(|(_, b)| b);
    assert_eq!(p50(&cols[1]), want);
    assert_eq!(
        p50(&cols[0]),
        p50(&cols[1]),
        "json {:?} vs windows {:?}",
        cols[0].stats,
        cols[1].stats
    );
    // And the table says the resolution is the buckets, in both columns.
    let table = text(&cols);
    let row = table.lines().find(|l| l.starts_with("resolution")).unwrap();
    assert_eq!(row.matches("buckets ≤2,5,10,20… µs").count(), 2, "{row}");
    assert!(row.contains("(from 1 ns)"), "{row}");
    assert!(table.contains("percentiles are the buckets' upper bounds"));
}

#[test]
fn runs_that_measured_no_latency_say_so_once() {
    // A real run with an audit (tests/seeds), its timer thread and
    // IRQ-to-task measurement taken out: an audit alone.
    let seed = include_str!("../../../tests/seeds/rtlab-result-trace-experiments.json");
    let mut doc: serde_json::Value = serde_json::from_str(seed).unwrap();
    doc["timers"] = serde_json::json!([]);
    doc["irq_tasks"] = serde_json::json!([]);
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("audit.json");
    std::fs::write(&a, doc.to_string()).unwrap();
    let runs = crate::dataset::load_all(&[a.clone(), a], &[]).unwrap();
    let table = text(&columns(&runs, false));
    assert!(!table.contains('?'), "{table}");
    let row = table.lines().find(|l| l.starts_with("latency")).unwrap();
    assert_eq!(row.matches("not measured").count(), 2, "{row}");
    assert!(!table.contains("p99"), "{table}");
}

#[test]
fn the_irq_side_has_rows_of_its_own_beside_the_threads() {
    // A real run with `irq_latency` (tests/seeds) beside one without: the
    // run's figures are the thread's, the IRQ side's rows are its own,
    // `-` where a run did not measure it.
    let seed = include_str!("../../../tests/seeds/rtlab-result-irq-latency.json");
    let plain = include_str!("../../../tests/seeds/rtlab-result.json");
    let dir = tempfile::tempdir().unwrap();
    let (irq, other) = (dir.path().join("irq.json"), dir.path().join("other.json"));
    std::fs::write(&irq, seed).unwrap();
    std::fs::write(&other, plain).unwrap();
    let runs = crate::dataset::load_all(&[irq, other], &[]).unwrap();
    let model: crate::result::RunResult = serde_json::from_str(seed).unwrap();
    let side = &model.timer_irq[0].latency;
    let cols = columns(&runs, false);
    assert_eq!(cols[0].stats.samples, model.timers[0].summary.samples);
    assert_eq!(cols[0].irq.as_ref().unwrap().max_ns, Some(side.max_ns));
    assert!(cols[1].irq.is_none());
    let table = rows(&cols);
    let row = |name: &str| table.iter().find(|r| r.0 == name).unwrap().1.clone();
    assert_eq!(
        row("irq samples"),
        [side.samples.to_string(), "-".to_string()]
    );
    assert_eq!(
        row("irq max (µs)")[0],
        format!("{:.1}", side.max_ns as f64 / 1000.0)
    );
    let doc = json(&cols, &[]);
    assert_eq!(
        doc["columns"][0]["irq_metrics"]["max_ns"],
        serde_json::json!(side.max_ns as f64)
    );
    assert!(doc["columns"][1]["irq_metrics"].is_null());
    // Per thread, T0.irq is a column of its own and no column has rows.
    let per = columns(&runs[..1], true);
    let labels: Vec<&str> = per.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(labels, ["irq T0", "irq T0.irq"]);
    assert!(per.iter().all(|c| c.irq.is_none()));
}

use super::metrics::{
    IrqMetrics, Machine, Metrics, NoiseMetrics, ProgramMetrics, TaskMetrics, TimerMetrics,
};
use super::*;
use crate::measure::live::METRIC_BUCKETS;

const SECOND: std::time::Duration = std::time::Duration::from_secs(1);

fn sample() -> Metrics {
    let mut buckets = vec![0; METRIC_BUCKETS];
    buckets[1] = 900;
    buckets[3] = 99;
    buckets[METRIC_BUCKETS - 1] = 1;
    Metrics {
        machine: Machine {
            host: "board-7".into(),
            kernel: "6.18.44".into(),
            preemption: "PREEMPT_RT".into(),
            version: "0.1.0".into(),
            cmdline_hash: metrics::fnv1a("quiet isolcpus=1"),
        },
        timers: vec![TimerMetrics {
            index: 0,
            cpu: Some(1),
            buckets,
            sum_ns: 7_000_000,
            overruns: 1,
            missed_periods: 60,
            max_ns: 61_000_000,
            window_max_ns: Some(12_000),
            recent_max_ns: Some(30_000),
            spikes: 2,
        }],
        programs: vec![ProgramMetrics {
            index: 0,
            command: "stress-ng".into(),
            starts: 3,
            exits: 2,
        }],
        cpu_busy: vec![(0, 0.5), (1, 0.01)],
        causes: vec![("irq".into(), "IRQ 36 virtio1-req.0".into(), 2)],
        irq: vec![IrqMetrics {
            index: 0,
            cpu: Some(1),
            buckets: {
                let mut b = vec![0; METRIC_BUCKETS];
                b[0] = 990;
                b[2] = 10;
                b
            },
            sum_ns: 2_500_000,
        }],
        partitions: vec![("rt".into(), 1)],
        tuning_changes: 3,
        tasks: vec![
            TaskMetrics {
                index: 0,
                tid: 4321,
                comm: "cyclic".into(),
                buckets: {
                    let mut b = vec![0; METRIC_BUCKETS];
                    b[2] = 95;
                    b[9] = 5;
                    b
                },
                sum_ns: 1_500_000,
                max_ns: 1_900_000,
                deadline_misses: Some(5),
            },
            TaskMetrics {
                index: 0,
                tid: 4322,
                comm: "logger".into(),
                buckets: {
                    let mut b = vec![0; METRIC_BUCKETS];
                    b[4] = 2;
                    b
                },
                sum_ns: 80_000,
                max_ns: 45_000,
                deadline_misses: None,
            },
        ],
        cpu_steal_s: vec![(0, 0.0), (1, 10.78)],
        noise: vec![NoiseMetrics {
            index: 2,
            cpu: 3,
            noise_ns: 1_250_000,
            gaps: 41,
            max_gap_ns: 75_000,
            runtime_ns: 9_000_000_000,
        }],
        rt_wakeups: None,
    }
}

#[test]
fn the_exposition_holds_every_rt_tasks_series_and_worst_tasks() {
    use crate::sys::bpf::{Cell, SeriesSum, TaskWorst, WakeupSnapshot};
    // FIFO 80 on CPU 1: 3 wake-ups of 4 µs, 1 of 150 µs; one task, whose
    // name carries a quote and a newline (escaped by the encoder).
    let cell = |bucket, count| Cell {
        cpu: 1,
        policy: 1,
        priority: 80,
        bucket,
        count,
    };
    let snap = WakeupSnapshot {
        cells: vec![cell(4, 3), cell(105, 1)],
        sums: vec![SeriesSum {
            cpu: 1,
            policy: 1,
            priority: 80,
            sum_ns: 162_000,
        }],
        tasks: vec![TaskWorst {
            pid: 9,
            comm: "a\"b\nc".into(),
            policy: 1,
            priority: 80,
            cpu: 1,
            worst_ns: 150_000,
            count: 4,
        }],
        counted: 4,
        lost: 2,
        ..WakeupSnapshot::default()
    };
    let with = Metrics {
        rt_wakeups: Some(crate::trace::rt_wakeups::summarise(&snap)),
        ..sample()
    };
    let text = metrics::encode(&metrics::registry(Arc::new(Mutex::new(with))));
    let has = |line: &str| assert!(text.contains(line), "no {line:?} in\n{text}");
    let labels = r#"host="board-7",kernel="6.18.44",preemption="PREEMPT_RT",cpu="1",policy="fifo",priority="80""#;
    has(&format!(
        "rtlab_rt_wakeup_latency_seconds_bucket{{le=\"0.000005\",{labels}}} 3"
    ));
    has(&format!(
        "rtlab_rt_wakeup_latency_seconds_bucket{{le=\"0.0001\",{labels}}} 3"
    ));
    has(&format!(
        "rtlab_rt_wakeup_latency_seconds_bucket{{le=\"0.0002\",{labels}}} 4"
    ));
    has(&format!(
        "rtlab_rt_wakeup_latency_seconds_count{{{labels}}} 4"
    ));
    has(&format!(
        "rtlab_rt_wakeup_latency_seconds_sum{{{labels}}} 0.000162"
    ));
    has(&format!("rtlab_rt_wakeup_p99_seconds{{{labels}}} 0.00015"));
    has(&format!("rtlab_rt_wakeup_p999_seconds{{{labels}}} 0.00015"));
    has(r#"comm="a\"b\nc",policy="fifo",priority="80"} 0.00015"#);
    has(
        r#"rtlab_rt_wakeups_lost_total{host="board-7",kernel="6.18.44",preemption="PREEMPT_RT"} 2"#,
    );
    // Without --rt-tasks, none of them.
    let text = metrics::encode(&metrics::registry(Arc::new(Mutex::new(sample()))));
    assert!(!text.contains("rtlab_rt_"), "{text}");
}

#[test]
fn the_exposition_holds_each_noise_threads_figures() {
    let shared: metrics::Shared = Arc::new(Mutex::new(sample()));
    let text = metrics::encode(&metrics::registry(shared));
    let has = |line: &str| assert!(text.contains(line), "no {line:?} in\n{text}");
    let labels = r#"host="board-7",kernel="6.18.44",preemption="PREEMPT_RT",thread="N2",cpu="3""#;
    has("# TYPE rtlab_noise_seconds counter");
    has(&format!("rtlab_noise_seconds_total{{{labels}}} 0.00125"));
    has("# TYPE rtlab_noise_runtime_seconds counter");
    has(&format!(
        "rtlab_noise_runtime_seconds_total{{{labels}}} 9.0"
    ));
    has("# TYPE rtlab_noise_gaps counter");
    has(&format!("rtlab_noise_gaps_total{{{labels}}} 41"));
    has("# TYPE rtlab_noise_max_gap_seconds gauge");
    has(&format!("rtlab_noise_max_gap_seconds{{{labels}}} 0.000075"));
    // Without noise threads, no noise family at all.
    let none = Metrics {
        noise: Vec::new(),
        ..sample()
    };
    let text = metrics::encode(&metrics::registry(Arc::new(Mutex::new(none))));
    assert!(!text.contains("rtlab_noise"), "{text}");
}

#[test]
fn the_exposition_holds_every_figure_with_its_labels() {
    let shared: metrics::Shared = Arc::new(Mutex::new(sample()));
    let text = metrics::encode(&metrics::registry(shared));
    let has = |line: &str| assert!(text.contains(line), "no {line:?} in\n{text}");
    let labels = r#"host="board-7",kernel="6.18.44",preemption="PREEMPT_RT",thread="T0",cpu="1""#;
    // Buckets are cumulative, in seconds; count and sum agree.
    has(&format!(
        "rtlab_latency_seconds_bucket{{le=\"0.000005\",{labels}}} 900"
    ));
    has(&format!(
        "rtlab_latency_seconds_bucket{{le=\"0.00002\",{labels}}} 999"
    ));
    has(&format!(
        "rtlab_latency_seconds_bucket{{le=\"+Inf\",{labels}}} 1000"
    ));
    // The IRQ side, beside it with the same labels.
    has(&format!(
        "rtlab_irq_latency_seconds_bucket{{le=\"0.000002\",{labels}}} 990"
    ));
    has(&format!(
        "rtlab_irq_latency_seconds_bucket{{le=\"0.00001\",{labels}}} 1000"
    ));
    has(&format!("rtlab_irq_latency_seconds_count{{{labels}}} 1000"));
    has(&format!("rtlab_irq_latency_seconds_sum{{{labels}}} 0.0025"));
    has(&format!("rtlab_latency_seconds_count{{{labels}}} 1000"));
    has(&format!("rtlab_latency_seconds_sum{{{labels}}} 0.007"));
    has(&format!("rtlab_overruns_total{{{labels}}} 1"));
    has(&format!("rtlab_missed_periods_total{{{labels}}} 60"));
    has(&format!("rtlab_latency_max_seconds{{{labels}}} 0.061"));
    has(&format!(
        "rtlab_latency_recent_max_seconds{{{labels}}} 0.00003"
    ));
    has("rtlab_program_starts_total{");
    has(r#"command="stress-ng"} 3"#);
    has(r#"cause="IRQ 36 virtio1-req.0"} 2"#);
    has(r#"rtlab_build_info{version="0.1.0""#);
    // Task latency: the same buckets, per thread of the measurement; the
    // deadline misses of the threads the period applies to alone.
    let base = r#"host="board-7",kernel="6.18.44",preemption="PREEMPT_RT""#;
    let cyclic = format!(r#"{base},thread="L0.4321",comm="cyclic""#);
    let logger = format!(r#"{base},thread="L0.4322",comm="logger""#);
    has(&format!(
        "rtlab_task_latency_seconds_bucket{{le=\"0.000005\",{cyclic}}} 0"
    ));
    has(&format!(
        "rtlab_task_latency_seconds_bucket{{le=\"0.00001\",{cyclic}}} 95"
    ));
    has(&format!(
        "rtlab_task_latency_seconds_bucket{{le=\"0.002\",{cyclic}}} 100"
    ));
    has(&format!("rtlab_task_latency_seconds_count{{{cyclic}}} 100"));
    has(&format!(
        "rtlab_task_latency_seconds_sum{{{cyclic}}} 0.0015"
    ));
    has(&format!(
        "rtlab_task_latency_max_seconds{{{cyclic}}} 0.0019"
    ));
    has(&format!("rtlab_task_deadline_misses_total{{{cyclic}}} 5"));
    has(&format!("rtlab_task_latency_seconds_count{{{logger}}} 2"));
    assert!(!text.contains(&format!("rtlab_task_deadline_misses_total{{{logger}}}")));
    // Steal since boot per CPU, a counter of seconds.
    has(&format!(
        "rtlab_cpu_steal_seconds_total{{{base},cpu=\"1\"}} 10.78"
    ));
    has(&format!(
        "rtlab_cpu_steal_seconds_total{{{base},cpu=\"0\"}} 0.0"
    ));
    assert!(text.ends_with("# EOF\n"));
    // The textfile form reads as the Prometheus text format.
    let prom = prometheus_text(&text);
    assert!(!prom.contains("# EOF") && !prom.contains(" info\n"));
    assert!(prom.contains("# TYPE rtlab_overruns_total counter\n"));
    assert!(prom.contains("# HELP rtlab_overruns_total "));
    assert!(prom.contains("# TYPE rtlab_build_info gauge\n"));
}

#[test]
fn windows_hold_each_windows_own_samples() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.jsonl");
    let mut w =
        windows::WindowWriter::create(&path, std::time::Duration::from_secs(3600), SECOND).unwrap();
    let mut m = sample();
    w.observe(&m).unwrap();
    // 500 more samples in bucket 1 before the run ends.
    m.timers[0].buckets[1] += 500;
    m.timers[0].window_max_ns = Some(4_000);
    w.observe(&m).unwrap();
    w.finish().unwrap();
    let f = windows::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let (header, windows) = (f.header, f.windows);
    assert_eq!(header.bounds_ns.len() + 1, METRIC_BUCKETS);
    assert_eq!(windows.len(), 1);
    // The first window holds everything since the start.
    assert_eq!(windows[0].samples, 1500);
    assert_eq!(windows[0].counts[1], 1400);
    assert_eq!(windows[0].max_ns, Some(12_000));
    assert!(windows::parse("{}\n").is_err());
    assert_eq!(windows::parse("").unwrap_err().0, 1);
}

#[test]
fn a_restarted_monitor_goes_on_with_its_windows_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.jsonl");
    let hour = std::time::Duration::from_secs(3600);
    for _ in 0..2 {
        let mut w = windows::WindowWriter::create(&path, hour, SECOND).unwrap();
        w.observe(&sample()).unwrap();
        w.finish().unwrap();
    }
    // A run that died mid-line, then a third.
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"start\":\"2026");
    std::fs::write(&path, &text).unwrap();
    let mut w = windows::WindowWriter::create(&path, hour, SECOND).unwrap();
    w.observe(&sample()).unwrap();
    w.finish().unwrap();
    let f = windows::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(f.windows.len(), 3);
    assert_eq!(f.cut_lines, 1);
    // Another file there (not a windows file) is replaced, not appended to.
    std::fs::write(&path, "not ours\n").unwrap();
    windows::WindowWriter::create(&path, hour, SECOND)
        .unwrap()
        .finish()
        .unwrap();
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .starts_with("{\"schema\"")
    );
    // A link planted there is refused.
    let other = dir.path().join("victim");
    std::fs::write(&other, "keep").unwrap();
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(&other, &path).unwrap();
    assert!(windows::WindowWriter::create(&path, hour, SECOND).is_err());
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "keep");
}

#[test]
fn every_metric_the_shipped_rules_and_dashboard_use_exists() {
    let shared: metrics::Shared = Arc::new(Mutex::new(sample()));
    let exposition = metrics::encode(&metrics::registry(shared));
    for (file, text) in [
        (
            "rtlab-alerts.yml",
            include_str!("../../contrib/prometheus/rtlab-alerts.yml"),
        ),
        (
            "rtlab-dashboard.json",
            include_str!("../../contrib/grafana/rtlab-dashboard.json"),
        ),
    ] {
        let mut rest = text;
        let mut seen = 0;
        while let Some(at) = rest.find("rtlab_") {
            let name: String = rest[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            rest = &rest[at + name.len()..];
            seen += 1;
            assert!(
                exposition.contains(&format!("\n{name}{{")),
                "{file} uses {name}, which rtlab does not export"
            );
        }
        assert!(seen > 3, "{file}");
    }
}

/// An endpoint on a free loopback port, no file.
fn loopback_only() -> MonitorSpec {
    MonitorSpec {
        listen: Some("127.0.0.1:0".parse().unwrap()),
        textfile: None,
        windows_file: None,
        window: Duration::from_secs(60),
        refresh: SECOND,
        rt_tasks: None,
        rt_late: Duration::ZERO,
    }
}

#[test]
fn an_endpoint_that_dies_is_said_once_and_kept_in_the_warnings() {
    let spec = loopback_only();
    let mut x = Publisher::start(&spec, sample()).unwrap();
    assert!(x.endpoint_news().is_empty());
    x.endpoint
        .as_ref()
        .unwrap()
        .mark_dead("waiting for clients failed: EBADF");
    let news = x.endpoint_news();
    assert_eq!(news.len(), 1, "{news:?}");
    assert!(
        news[0].contains("is gone (waiting for clients failed: EBADF)"),
        "{news:?}"
    );
    assert!(x.endpoint_news().is_empty(), "said twice");
    let warnings = x.finish();
    assert!(
        warnings.iter().any(|w| w.contains("is gone")),
        "{warnings:?}"
    );
}

#[test]
fn the_endpoint_stops_at_once_with_a_client_that_never_reads() {
    use std::io::Write;
    let spec = loopback_only();
    let x = Publisher::start(&spec, sample()).unwrap();
    let addr = x.listening().unwrap();
    let mut hog = std::net::TcpStream::connect(addr).unwrap();
    hog.set_nonblocking(true).unwrap();
    for _ in 0..20_000 {
        if hog
            .write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .is_err()
        {
            break;
        }
    }
    // The thread is joined, not left behind: no "did not close" warning.
    let warnings = x.finish();
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn the_shipped_unit_takes_a_stop_as_a_success() {
    let unit = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/contrib/systemd/rtlab-monitor.service"
    ))
    .unwrap();
    let key = |k: &str| {
        unit.lines()
            .filter_map(|l| l.strip_prefix(k)?.strip_prefix('='))
            .flat_map(str::split_whitespace)
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(key("KillSignal"), ["SIGTERM"]);
    let stopped = rtlab_core::exit::signal(crate::sys::consts::SIGTERM).to_string();
    assert!(key("SuccessExitStatus").contains(&stopped), "{unit}");
    // Documentation names what an installed machine has, not a web page.
    for doc in key("Documentation") {
        assert!(
            doc.starts_with("file:///") || doc.starts_with("man:"),
            "{doc}"
        );
    }
}

#[test]
fn windows_end_at_the_refresh_nearest_their_end_and_never_drift() {
    // Refreshes every second, each a little early (the watch loop's
    // schedule began before the writer): a 10 s window ends at the refresh
    // of 9.999 s, not one refresh later; ten windows span 100 s.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.jsonl");
    let mut w = windows::WindowWriter::create(&path, Duration::from_secs(10), SECOND).unwrap();
    let t0 = std::time::Instant::now();
    let mut m = sample();
    for k in 1..=100u64 {
        m.timers[0].buckets[0] += 1;
        let at = t0 + Duration::from_millis(k * 1000) - Duration::from_micros(500);
        w.observe_at(&m, at).unwrap();
    }
    w.finish().unwrap();
    let f = windows::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let lengths: Vec<f64> = f.windows.iter().map(|x| x.seconds).collect();
    assert!(lengths.len() >= 10, "{lengths:?}");
    for l in &lengths[..10] {
        assert!((l - 10.0).abs() < 0.01, "{lengths:?}");
    }
    // Each window holds its ten refreshes' samples (the first, the
    // sample's own counts too).
    assert!(
        f.windows[1..10].iter().all(|x| x.counts[0] == 10),
        "{:?}",
        f.windows
    );
}

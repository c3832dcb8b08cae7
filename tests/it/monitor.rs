//! `rtlab monitor` against a real Prometheus server (Debian's
//! `prometheus` package, started here on 127.0.0.1): the counts it stores
//! are rtlab's exact counts, its histogram quantile falls in the bucket of
//! rtlab's own percentile, a crash-looping program shows in the restart
//! counter, a restart of rtlab shows as a counter reset rather than lost
//! data; the textfile passes `promtool check metrics`; the windows file
//! holds every sample. Runs as any user (SCHED_OTHER timer); without the
//! `prometheus` binary it checks the endpoint and the textfile alone and
//! says so.

use crate::fixtures::{has_command, path_taken, text, wait_until};
use serde_json::Value;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Samples of each run: 10 s at 500 µs, so that Prometheus (whose target
/// discovery takes about 5 s to start scraping) sees it grow.
const SAMPLES: u64 = 20_000;

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// GET http://127.0.0.1:PORT/PATH, the body (None when it fails).
pub fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_string())
}

/// `promtool check metrics` accepts the exposition in `file` (where
/// promtool is installed).
pub fn promtool_accepts(file: &Path) {
    if has_command("promtool") {
        let o = Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(std::fs::File::open(file).unwrap())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
    }
}

/// The value of `name{...thread="T0"...}` in an exposition.
fn exposed(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(&format!("{name}{{")) && l.contains("thread=\"T0\""))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

fn monitor(dir: &Path, port: u16, json: &str) -> Child {
    let cfg = format!(
        "main\n{{\n  stats.period 200 ms\n}}\n\
         timer_thread[0]\n{{\n  timer.period 500 us\n  lifetime.loops {SAMPLES}\n}}\n\
         program[0]\n{{\n  cmdline sh -c \"exit 3\"\n  termination.ko RESPAWN\n}}\n"
    );
    std::fs::write(dir.join("mon.cfg"), cfg).unwrap();
    Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args([
            "monitor",
            "mon.cfg",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--textfile",
            "rtlab.prom",
            "--windows",
            "w.jsonl",
            "--window",
            "1s",
            "--json",
            json,
        ])
        .current_dir(dir)
        .env("RTLAB_JOURNAL_DIR", dir.join("journal"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Stops a monitoring rtlab as a service manager does, and its result.
fn stop(child: Child, dir: &Path, json: &str) -> Value {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(128 + 15), "{}", text(&o));
    serde_json::from_slice(&std::fs::read(dir.join(json)).unwrap()).unwrap()
}

/// Waits until rtlab's own endpoint shows every sample taken.
fn wait_done(port: u16) {
    assert!(
        wait_until(Duration::from_secs(60), || {
            http_get(port, "/metrics").and_then(|t| exposed(&t, "rtlab_latency_seconds_count"))
                == Some(SAMPLES as f64)
        }),
        "the timer thread did not finish its {SAMPLES} samples"
    );
}

/// One instant query of Prometheus: the first result's value.
fn query(port: u16, promql: &str) -> Option<f64> {
    let q: String = promql
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let body = http_get(port, &format!("/api/v1/query?query={q}"))?;
    let v: Value = serde_json::from_str(&body).ok()?;
    v["data"]["result"][0]["value"][1].as_str()?.parse().ok()
}

/// The bucket (lower, upper] of rtlab's metrics histogram holding `ns`.
fn bucket_of(ns: u64) -> (f64, f64) {
    let bounds = rtlab::measure::live::METRIC_BOUNDS_NS;
    let i = rtlab::measure::live::metric_bucket(ns);
    let lower = if i == 0 { 0 } else { bounds[i - 1] };
    let upper = bounds.get(i).map_or(f64::INFINITY, |&b| b as f64 / 1e9);
    (lower as f64 / 1e9, upper)
}

#[test]
fn a_real_prometheus_stores_rtlabs_exact_counts() {
    let _machine = crate::fixtures::machine_shared();
    let test = test_name!();
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let prometheus = if has_command("prometheus") {
        let prom_port = free_port();
        std::fs::write(
            dir.path().join("prometheus.yml"),
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: rtlab\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n"
            ),
        )
        .unwrap();
        let child = Command::new("prometheus")
            .args([
                "--config.file=prometheus.yml",
                "--storage.tsdb.path=data",
                &format!("--web.listen-address=127.0.0.1:{prom_port}"),
            ])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Ready before rtlab starts, so that it scrapes the whole run.
        assert!(
            wait_until(Duration::from_secs(60), || http_get(prom_port, "/-/ready")
                .is_some()),
            "Prometheus did not start"
        );
        Some((child, prom_port))
    } else {
        path_taken(
            test,
            "no prometheus binary: the endpoint, textfile and windows are checked alone",
        );
        None
    };
    let run = monitor(dir.path(), port, "first.json");
    wait_done(port);
    let exposition = http_get(port, "/metrics").unwrap();
    if let Some((_, prom)) = &prometheus {
        // Prometheus stores the exact count, and the program's restarts.
        assert!(
            wait_until(Duration::from_secs(60), || {
                query(*prom, "rtlab_latency_seconds_count") == Some(SAMPLES as f64)
            }),
            "Prometheus never stored {SAMPLES}: {:?}",
            query(*prom, "rtlab_latency_seconds_count")
        );
        assert!(
            wait_until(Duration::from_secs(30), || {
                query(*prom, "rtlab_program_starts_total").is_some_and(|n| n > 1.0)
            }),
            "no restart seen"
        );
    }
    // The p99 as Prometheus computes it, over all samples and over the last
    // minute, asked while rtlab still serves them.
    const P99: [&str; 2] = [
        "histogram_quantile(0.99, rtlab_latency_seconds_bucket)",
        "histogram_quantile(0.99, increase(rtlab_latency_seconds_bucket[1m]))",
    ];
    let prom_p99: Vec<f64> = match &prometheus {
        Some((_, prom)) => P99
            .iter()
            .map(|q| query(*prom, q).unwrap_or(f64::NAN))
            .collect(),
        None => Vec::new(),
    };
    let first = stop(run, dir.path(), "first.json");
    let t = &first["timers"][0]["summary"];
    assert_eq!(t["samples"], SAMPLES);
    let p99 = t["percentiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "p99")
        .unwrap()["value_ns"]
        .as_u64()
        .unwrap();
    let (lower, upper) = bucket_of(p99);
    // The exposition's histogram is rtlab's own.
    assert_eq!(
        exposed(&exposition, "rtlab_latency_seconds_count"),
        Some(SAMPLES as f64)
    );
    assert_eq!(
        exposed(&exposition, "rtlab_latency_max_seconds"),
        Some(t["max_ns"].as_u64().unwrap() as f64 / 1e9)
    );
    // The textfile reads as the Prometheus text format.
    promtool_accepts(&dir.path().join("rtlab.prom"));
    // The windows hold every sample once.
    let windows = std::fs::read_to_string(dir.path().join("w.jsonl")).unwrap();
    let ws = rtlab::monitor::windows::parse(&windows).unwrap().windows;
    assert_eq!(ws.iter().map(|w| w.samples).sum::<u64>(), SAMPLES);
    let Some((mut prom_child, prom)) = prometheus else {
        return;
    };
    // The p99 Prometheus computes over every sample lies in the bucket of
    // rtlab's p99. Over the last minute it is the p99 of the samples since
    // Prometheus's first scrape (its target discovery waits about 5 s), not
    // of every sample: it is only checked to be a latency rtlab measured.
    let (all, minute) = (prom_p99[0], prom_p99[1]);
    assert!(
        all >= lower && all <= upper,
        "{} = {all}, rtlab's p99 {p99} ns is in ({lower}, {upper}]",
        P99[0]
    );
    let max_s = t["max_ns"].as_u64().unwrap() as f64 / 1e9;
    assert!(
        minute.is_finite()
            && minute > 0.0
            && minute <= bucket_of(t["max_ns"].as_u64().unwrap()).1.max(max_s),
        "{} = {minute}",
        P99[1]
    );
    // A restart is a counter reset, not lost data.
    let run = monitor(dir.path(), port, "second.json");
    wait_done(port);
    let seen = wait_until(Duration::from_secs(60), || {
        query(prom, "resets(rtlab_latency_seconds_count[5m])") == Some(1.0)
            && query(prom, "rtlab_latency_seconds_count") == Some(SAMPLES as f64)
    });
    let increase = query(prom, "increase(rtlab_latency_seconds_count[5m])").unwrap_or(0.0);
    stop(run, dir.path(), "second.json");
    let _ = prom_child.kill();
    let _ = prom_child.wait();
    assert!(seen, "Prometheus did not see one reset");
    // Both runs counted: more than one run's worth (the first run was
    // scraped from before its end; the second, from its start).
    assert!(increase > SAMPLES as f64, "increase {increase}");
    path_taken(
        test,
        &format!(
            "Prometheus stored {SAMPLES} samples, p99 in ({lower}, {upper}] s as rtlab's {p99} ns; \
             one reset, increase over both runs {increase:.0}"
        ),
    );
}

#[test]
fn the_shipped_prometheus_files_pass_promtool() {
    let test = test_name!();
    if !has_command("promtool") {
        path_taken(test, "no promtool: not checked");
        return;
    }
    let contrib = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/prometheus");
    for (what, file) in [("rules", "rtlab-alerts.yml"), ("config", "scrape.yml")] {
        let o = Command::new("promtool")
            .args(["check", what])
            .arg(contrib.join(file))
            .output()
            .unwrap();
        assert!(o.status.success(), "{file}: {}", text(&o));
    }
    path_taken(
        test,
        "alerting rules and scrape configuration checked by promtool",
    );
}

/// Resident memory of `pid` (KiB), from `/proc/PID/status`.
pub fn rss_kib(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[test]
fn a_monitor_at_a_high_rate_keeps_its_memory_and_files_bounded() {
    // A short soak (the 24-hour one is `bench/soak.sh`): 25 s at a 100 µs
    // period (250 000 samples) with a 2 s window and 200 ms refreshes.
    // Memory is sampled once the first windows are written; it must not
    // grow after.
    let _machine = crate::fixtures::machine_shared();
    let test = test_name!();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("soak.cfg"),
        "main\n{\n  stats.period 200 ms\n}\ntimer_thread[0]\n{\n  timer.period 100 us\n}\n",
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args([
            "monitor",
            "soak.cfg",
            "--listen",
            "none",
            "--textfile",
            "s.prom",
            "--windows",
            "w.jsonl",
            "--window",
            "2s",
        ])
        .current_dir(dir.path())
        .env("RTLAB_JOURNAL_DIR", dir.path().join("journal"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut rss = Vec::new();
    for second in 0..25 {
        std::thread::sleep(Duration::from_secs(1));
        if second >= 5 {
            rss.extend(rss_kib(pid));
        }
    }
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let _ = child.wait();
    let (first, last, max) = (rss[0], *rss.last().unwrap(), *rss.iter().max().unwrap());
    let prom = std::fs::metadata(dir.path().join("s.prom")).unwrap().len();
    let windows = std::fs::read_to_string(dir.path().join("w.jsonl")).unwrap();
    path_taken(
        test,
        &format!(
            "RSS {first} KiB at 5 s, {last} KiB at 25 s (max {max}); textfile {prom} B; \
             windows file {} B, {} lines",
            windows.len(),
            windows.lines().count()
        ),
    );
    // Flat: the process allocates nothing per sample (a page or two of
    // allocator noise aside).
    assert!(max <= first + 512, "RSS grew from {first} to {max} KiB");
    // The textfile is rewritten, not grown; the windows file grows by one
    // line per window and thread.
    assert!(prom < 16_384, "{prom}");
    assert!(windows.lines().count() <= 1 + 25 / 2 + 2, "{windows}");
}

#[test]
fn a_monitor_that_cannot_listen_is_refused_before_anything_changes() {
    let _machine = crate::fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("m.cfg"),
        "timer_thread[0]\n{\n  lifetime.loops 10\n}\n",
    )
    .unwrap();
    // An address that is not one: refused with a hint (status 2).
    let o = crate::fixtures::rtlab_in(dir.path(), &["monitor", "m.cfg", "--listen", "localhost"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("not an address"), "{}", text(&o));
    // An address in use: the run does not start, no file is written.
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let o = crate::fixtures::rtlab_in(
        dir.path(),
        &["monitor", "m.cfg", "--listen", &addr, "--json", "r.json"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("cannot listen"), "{}", text(&o));
    assert!(!dir.path().join("r.json").exists());
    assert!(!dir.path().join("timer_thread00.txt").exists());
    // A windows file with a second name (a hard link): refused, status 2.
    std::fs::write(dir.path().join("other"), "theirs\n").unwrap();
    std::fs::hard_link(dir.path().join("other"), dir.path().join("w.jsonl")).unwrap();
    let o = crate::fixtures::rtlab_in(
        dir.path(),
        &[
            "monitor",
            "m.cfg",
            "--listen",
            "none",
            "--windows",
            "w.jsonl",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("other")).unwrap(),
        "theirs\n"
    );
}

#[test]
fn a_monitor_exports_the_irq_side_beside_the_thread_latency() {
    let _machine = crate::fixtures::machine_exclusive();
    if !crate::fixtures::is_root() || !crate::trace_experiments::can_trace("monitor_irq") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let cfg = format!(
        "main\n{{\n  stats.period 200 ms\n  irq_latency\n}}\n\
         timer_thread[0]\n{{\n  cpu_affinity {}\n  sched.policy FIFO\n  sched.priority 90\n  \
         timer.period 1 ms\n  lifetime.loops 1000\n}}\n",
        crate::fixtures::measured_cpu()
    );
    std::fs::write(dir.path().join("irq.cfg"), cfg).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args([
            "monitor",
            "irq.cfg",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--json",
            "irq.json",
        ])
        .current_dir(dir.path())
        .env("RTLAB_JOURNAL_DIR", dir.path().join("journal"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the thread's 1000 samples are taken, the IRQ side has them too
    // (the stream is read every 20 ms).
    let mut last = String::new();
    let seen = wait_until(Duration::from_secs(60), || {
        last = http_get(port, "/metrics").unwrap_or_default();
        exposed(&last, "rtlab_latency_seconds_count") == Some(1000.0)
            && exposed(&last, "rtlab_irq_latency_seconds_count") >= Some(999.0)
    });
    let r = stop(child, dir.path(), "irq.json");
    assert!(seen, "{last}");
    // The same figures as the result's (which may hold the last expiry,
    // read at the end).
    let in_result = r["timer_irq"][0]["latency"]["samples"].as_f64().unwrap();
    let scraped = exposed(&last, "rtlab_irq_latency_seconds_count").unwrap();
    assert!(
        in_result == scraped || in_result == scraped + 1.0,
        "{in_result} {scraped}"
    );
    assert!(
        exposed(&last, "rtlab_irq_latency_seconds_sum")
            <= exposed(&last, "rtlab_latency_seconds_sum"),
        "{last}"
    );
}

/// Each CPU's steal ticks in `/proc/stat` now.
fn steal_ticks() -> Vec<(String, u64)> {
    std::fs::read_to_string("/proc/stat")
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((
                f[0].trim_start_matches("cpu").to_string(),
                f.get(8)?.parse().ok()?,
            ))
        })
        .collect()
}

/// The value of the series `name{...label...}` in a classic exposition.
fn series(text: &str, name: &str, label: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(&format!("{name}{{")) && l.contains(label))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

/// A monitoring run with a task-latency measurement of a real cyclic
/// program (1 µs deadline: every cycle misses it): once the program has
/// ended, the scraped histogram, max and deadline misses are the result's
/// own figures (its wake-ups kept one by one, bucketed here), the steal
/// counters lie between two readings of `/proc/stat` around the scrape,
/// and `promtool check metrics` reads the exposition.
#[test]
fn a_monitor_exports_task_latency_and_steal_as_the_result_and_proc_stat_say() {
    let test = test_name!();
    let _machine = crate::fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    if !crate::fixtures::is_root() || !crate::trace_experiments::can_trace(test) {
        return;
    }
    let Some(cyclic) = crate::task_latency::build(dir.path(), "cyclic") else {
        path_taken(test, "no C compiler here: nothing to measure");
        return;
    };
    let port = free_port();
    let cfg = format!(
        "main\n{{\n  stats.period 200 ms\n}}\n\
         task_latency[0]\n{{\n  task.program 0\n  period 1ms\n  deadline 1us\n  samples 100000\n}}\n\
         program[0]\n{{\n  cmdline {} sleep 1000 1000 own.txt 50\n  termination.ok IGNORE\n  \
         termination.ko IGNORE\n  cpu_affinity {}\n}}\n",
        cyclic.display(),
        crate::fixtures::measured_cpu()
    );
    std::fs::write(dir.path().join("task.cfg"), cfg).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args([
            "monitor",
            "task.cfg",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .args(["--windows", "none", "--json", "task.json"])
        .current_dir(dir.path())
        .env("RTLAB_JOURNAL_DIR", dir.path().join("journal"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The program writes its own figures when its 1000 cycles are done;
    // then the scraped figures stop changing.
    let own = dir.path().join("own.txt");
    let ended = wait_until(Duration::from_secs(60), || {
        std::fs::read_to_string(&own).is_ok_and(|t| t.lines().count() == 1000)
    });
    let count = |t: &str| series(t, "rtlab_task_latency_seconds_count", "thread=\"L0.");
    let mut last = String::new();
    let settled = ended
        && wait_until(Duration::from_secs(60), || {
            let before = http_get(port, "/metrics").unwrap_or_default();
            std::thread::sleep(Duration::from_millis(500));
            last = http_get(port, "/metrics").unwrap_or_default();
            count(&before).is_some() && count(&before) == count(&last)
        });
    // USER_HZ, as the C library says it.
    let hz: f64 = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .expect("getconf CLK_TCK");
    // Steal: the exported counter lies between two readings around a scrape.
    let before = steal_ticks();
    let mut scraped = String::new();
    let caught_up = wait_until(Duration::from_secs(30), || {
        scraped = http_get(port, "/metrics").unwrap_or_default();
        before.iter().all(|(cpu, ticks)| {
            series(
                &scraped,
                "rtlab_cpu_steal_seconds_total",
                &format!("cpu=\"{cpu}\""),
            )
            .is_some_and(|s| (s * hz).round() as u64 >= *ticks)
        })
    });
    let after = steal_ticks();
    let r = stop(child, dir.path(), "task.json");
    assert!(ended && settled, "{last}");
    assert!(caught_up, "{scraped}");
    for (cpu, ticks) in &after {
        let s = series(
            &scraped,
            "rtlab_cpu_steal_seconds_total",
            &format!("cpu=\"{cpu}\""),
        )
        .unwrap();
        assert!(
            (s * hz).round() as u64 <= *ticks,
            "CPU {cpu}: {s} s, /proc/stat {ticks} ticks"
        );
    }
    // Task latency: the result's own figures.
    for t in r["task_latency"][0]["threads"].as_array().unwrap() {
        let label = format!("thread=\"L0.{}\"", t["tid"]);
        let lat = &t["latency"];
        assert_eq!(
            series(&last, "rtlab_task_latency_seconds_count", &label),
            lat["samples"].as_f64(),
            "{label}\n{last}"
        );
        assert_eq!(
            series(&last, "rtlab_task_latency_max_seconds", &label),
            Some(lat["max_ns"].as_u64().unwrap() as f64 / 1e9)
        );
        assert_eq!(
            series(&last, "rtlab_task_deadline_misses_total", &label),
            t["deadline_misses"].as_f64()
        );
        // Each bucket: the wake-ups kept one by one, counted here.
        let samples = t["wake_up_samples"].as_array().unwrap();
        assert_eq!(samples.len() as u64, t["wake_ups"].as_u64().unwrap());
        for &bound in &rtlab::measure::live::METRIC_BOUNDS_NS {
            let n = samples
                .iter()
                .filter(|w| w["latency_ns"].as_u64().unwrap() <= bound)
                .count();
            let le = format!("le=\"{}\"", bound as f64 / 1e9);
            let line = last
                .lines()
                .find(|l| {
                    l.starts_with("rtlab_task_latency_seconds_bucket{")
                        && l.contains(&label)
                        && l.contains(&le)
                })
                .unwrap_or_else(|| panic!("no {le} bucket of {label}"));
            assert_eq!(
                line.rsplit(' ').next(),
                Some(n.to_string().as_str()),
                "{line}"
            );
        }
    }
    let misses = series(&last, "rtlab_task_deadline_misses_total", "thread=\"L0.").unwrap();
    assert!(misses > 0.0, "{last}");
    if has_command("promtool") {
        let mut p = Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        p.stdin
            .take()
            .unwrap()
            .write_all(scraped.as_bytes())
            .unwrap();
        let o = p.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
    }
    path_taken(
        test,
        &format!(
            "task latency and {misses} deadline misses as the result says; steal within /proc/stat; promtool: {}",
            has_command("promtool")
        ),
    );
}

/// A Prometheus server scraping 127.0.0.1:`port` every second, ready; None
/// without the binary.
fn start_prometheus(dir: &Path, port: u16) -> Option<(Child, u16)> {
    if !has_command("prometheus") {
        return None;
    }
    let prom_port = free_port();
    std::fs::write(
        dir.join("prometheus.yml"),
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: rtlab\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n"
        ),
    )
    .unwrap();
    let child = Command::new("prometheus")
        .args([
            "--config.file=prometheus.yml",
            "--storage.tsdb.path=data",
            &format!("--web.listen-address=127.0.0.1:{prom_port}"),
        ])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(60), || http_get(prom_port, "/-/ready")
            .is_some()),
        "Prometheus did not start"
    );
    Some((child, prom_port))
}

/// A monitoring run of a noise thread: once it has polled its
/// `lifetime.duration` (its runtime reaches it only at its last look-up,
/// when the figures are published for the last time), the scraped noise,
/// gaps, largest gap and runtime are its result's own figures, Prometheus
/// stores them, and promtool reads the textfile.
#[test]
fn a_monitor_exports_each_noise_thread_as_its_result_says() {
    let test = test_name!();
    let _machine = crate::fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let prometheus = start_prometheus(dir.path(), port);
    let cpu = crate::fixtures::measured_cpu();
    let cfg = format!(
        "main\n{{\n  stats.period 200 ms\n}}\n\
         noise_thread[0]\n{{\n  cpu_affinity {cpu}\n  noise.period 100 ms\n  \
         lifetime.duration 1 s\n}}\n"
    );
    std::fs::write(dir.path().join("noise.cfg"), cfg).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args([
            "monitor",
            "noise.cfg",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .args(["--windows", "none", "--textfile", "rtlab.prom"])
        .args(["--json", "noise.json"])
        .current_dir(dir.path())
        .env("RTLAB_JOURNAL_DIR", dir.path().join("journal"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let label = "thread=\"N0\"";
    let runtime = |t: &str| series(t, "rtlab_noise_runtime_seconds_total", label);
    let mut last = String::new();
    let done = wait_until(Duration::from_secs(60), || {
        last = http_get(port, "/metrics").unwrap_or_default();
        runtime(&last).is_some_and(|s| s >= 1.0)
    });
    let gaps = series(&last, "rtlab_noise_gaps_total", label);
    let stored = prometheus.as_ref().map(|(_, prom)| {
        wait_until(Duration::from_secs(60), || {
            query(*prom, "rtlab_noise_gaps_total") == gaps
                && query(*prom, "rtlab_noise_runtime_seconds_total") == runtime(&last)
        })
    });
    let r = stop(child, dir.path(), "noise.json");
    if let Some((mut p, _)) = prometheus {
        let _ = p.kill();
        let _ = p.wait();
    }
    assert!(done, "{last}");
    assert_ne!(stored, Some(false), "Prometheus did not store {gaps:?}");
    let n = &r["noise"][0];
    let s = &n["summary"];
    let ns = |name: &str| series(&last, name, label).map(|v| (v * 1e9).round() as u64);
    assert_eq!(
        ns("rtlab_noise_seconds_total"),
        s["noise_ns"].as_u64(),
        "{last}"
    );
    assert_eq!(
        ns("rtlab_noise_runtime_seconds_total"),
        s["runtime_ns"].as_u64()
    );
    assert_eq!(gaps, s["gaps"].as_f64());
    let max_gap = n["periods"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["max_gap_ns"].as_u64())
        .max();
    assert_eq!(ns("rtlab_noise_max_gap_seconds"), max_gap);
    assert!(last.contains(&format!("{label},cpu=\"{cpu}\"")), "{last}");
    let textfile = std::fs::read_to_string(dir.path().join("rtlab.prom")).unwrap();
    assert!(textfile.contains("rtlab_noise_gaps_total{"), "{textfile}");
    promtool_accepts(&dir.path().join("rtlab.prom"));
    path_taken(
        test,
        &format!(
            "noise {:?} ns, {gaps:?} gaps as the result says; Prometheus: {}; promtool: {}",
            s["noise_ns"].as_u64(),
            stored.is_some(),
            has_command("promtool")
        ),
    );
}

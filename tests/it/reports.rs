//! Integration tests of `rtlab plot`, `report` and `compare` on real runs:
//! rtlab runs measured here, and cyclictest (Debian's rt-tests) run here too,
//! whose outputs must agree with its own summary lines; the report is opened
//! in headless Chromium; the gnuplot script is drawn by gnuplot. Needs root
//! for the runs (else checks the refusal), `cyclictest`, `chromium` and
//! `gnuplot` (each said and skipped when missing); holds the machine alone,
//! so that rtlab and cyclictest measure the same quiet CPUs.

use crate::fixtures::{load_cpu, measured_cpu, path_taken, root_or_refusal, text};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn rtlab(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// Whether `program` is installed; says which path the test takes.
fn have(test: &str, program: &str, package: &str) -> bool {
    let found = crate::fixtures::has_command(program);
    if !found {
        path_taken(
            test,
            &format!("no {program} (apt-get install {package}): that part is not run"),
        );
    }
    found
}

/// The CPUs cyclictest's threads go on: the load and measured CPUs.
fn cyclictest_cpus() -> String {
    let (l, m) = (load_cpu(), measured_cpu());
    if l == m {
        l.to_string()
    } else {
        format!("{l},{m}")
    }
}

/// cyclictest's own totals at the end of its histogram, per thread:
/// (samples = `# Total:` + `# Histogram Overflows:`, min, avg, max). Not the
/// `T:` lines: the last one is printed before the last samples.
fn histogram_totals(stdout: &str) -> BTreeMap<usize, [u64; 4]> {
    let row = |key: &str| -> Vec<u64> {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("no `{key}` line"))
            .split_whitespace()
            .map(|w| w.parse().unwrap())
            .collect()
    };
    let (total, over) = (row("# Total:"), row("# Histogram Overflows:"));
    let (min, avg, max) = (
        row("# Min Latencies:"),
        row("# Avg Latencies:"),
        row("# Max Latencies:"),
    );
    (0..min.len())
        .map(|i| (i, [total[i] + over[i], min[i], avg[i], max[i]]))
        .collect()
}

fn compare_json(files: &[&str], dir: &Path) -> Value {
    let mut args = vec!["compare", "--json", "--per-thread"];
    args.extend_from_slice(files);
    let o = rtlab(&args, dir);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn cyclictest_outputs_agree_with_its_own_summary() {
    let test = test_name!();
    let dir = tempfile::tempdir().unwrap();
    // A real cyclictest stdout recorded on a 2-CPU VM (`-h 30 -l 2000`, two
    // threads, T: lines and escape sequences included) is read on every
    // machine: exactly 2000 samples per thread, as its totals say.
    let recorded = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/cyclictest-stdout.txt");
    let recorded_text = std::fs::read_to_string(&recorded).unwrap();
    let totals = histogram_totals(&recorded_text);
    let j = compare_json(&[recorded.to_str().unwrap()], dir.path());
    for (i, col) in j["columns"].as_array().unwrap().iter().enumerate() {
        assert_eq!(totals[&i][0], 2000);
        assert_eq!(col["metrics"]["samples"], 2000.0, "recorded T{i}");
        assert_eq!(col["metrics"]["max_ns"], (totals[&i][3] * 1000) as f64);
    }
    if !have(test, "cyclictest", "rt-tests") || !root_or_refusal(test) {
        return;
    }
    path_taken(
        test,
        "cyclictest present: run it here and read its three outputs",
    );
    let _lock = crate::fixtures::machine_exclusive();
    // Two threads, -H (the layout with a sum column), a small histogram so
    // that some samples may overflow it, and the T: lines on stdout (no -q).
    let o = Command::new("cyclictest")
        .args([
            "-m",
            "-p",
            "80",
            "-t",
            "2",
            "-a",
            &cyclictest_cpus(),
            "-i",
            "1000",
            "-l",
            "3000",
            "-H",
            "30",
            "--histfile=ct.hist",
            "--json=ct.json",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let hist = std::fs::read_to_string(dir.path().join("ct.hist")).unwrap();
    let summary = histogram_totals(&hist);
    assert_eq!(summary.len(), 2, "{}", text(&o));
    // cyclictest's two outputs agree with each other (a thread may stop a
    // few cycles short of -l when another ends first: seen here, 2972).
    let ct_json: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("ct.json")).unwrap()).unwrap();
    for (i, [samples, ..]) in &summary {
        assert_eq!(
            Some(*samples),
            ct_json["thread"][i.to_string()]["cycles"].as_u64(),
            "thread {i}: histogram totals vs --json cycles"
        );
        assert!(*samples <= 3000);
    }
    // The histogram on stdout, among the T: lines (no -q, no --histfile):
    // the last T: line may lag; rtlab counts what the histogram says.
    let o = Command::new("cyclictest")
        .args(["-m", "-p", "80", "-t", "2", "-a", &cyclictest_cpus()])
        .args(["-i", "1000", "-l", "2000", "-h", "30"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    std::fs::write(dir.path().join("ct.out"), &o.stdout).unwrap();
    let stdout_totals = histogram_totals(&String::from_utf8_lossy(&o.stdout));
    let j = compare_json(&["ct.out"], dir.path());
    for (i, col) in j["columns"].as_array().unwrap().iter().enumerate() {
        // Under load cyclictest may stop a thread short of -l: the count
        // is its histogram's (# Total + overflows), whatever -l said.
        assert!(stdout_totals[&i][0] <= 2000);
        assert_eq!(
            col["metrics"]["samples"], stdout_totals[&i][0] as f64,
            "ct.out T{i}: {col}"
        );
        assert_eq!(
            col["metrics"]["max_ns"],
            (stdout_totals[&i][3] * 1000) as f64
        );
    }
    for file in ["ct.hist", "ct.json"] {
        let j = compare_json(&[file], dir.path());
        let cols = j["columns"].as_array().unwrap();
        assert_eq!(cols.len(), 2, "{file}: one column per thread");
        for (i, col) in cols.iter().enumerate() {
            let [cycles, min, avg, max] = summary[&i];
            let m = &col["metrics"];
            let what = format!("{file} T{i}: {m}");
            assert_eq!(m["samples"], cycles as f64, "{what}");
            assert_eq!(m["min_ns"], (min * 1000) as f64, "{what}");
            assert_eq!(m["max_ns"], (max * 1000) as f64, "{what}");
            // With samples past the histogram (a host stall in a CI
            // probe: 76 past it, the max 2.1 ms) the mean read from the
            // JSON (23 µs) and the histogram summary's (22) parted: the
            // overflows' own values are not in the buckets.
            let mean_us = m["mean_ns"].as_f64().unwrap() / 1000.0;
            if m["beyond_histogram"].as_f64().unwrap_or(0.0) == 0.0 {
                assert_eq!(mean_us.floor() as u64, avg, "{what}");
            }
            assert_eq!(
                col["format"],
                if file.ends_with("json") {
                    "cyclictest_json"
                } else {
                    "cyclictest_histogram"
                },
                "{what}"
            );
        }
    }
}

/// An experiment of one FIFO timer thread on the measured CPU for 2 s, with
/// optional extra sections.
fn experiment(dir: &Path, name: &str, extra: &str) -> PathBuf {
    let path = dir.join(format!("{name}.cfg"));
    std::fs::write(
        &path,
        format!(
            "timer_thread[0]\n{{\n  sched.policy FIFO\n  sched.priority 99\n  cpu_affinity {}\n  \
             lifetime.duration 2 s\n  stats.histo_size 200 us\n}}\n{extra}",
            measured_cpu()
        ),
    )
    .unwrap();
    path
}

fn run(dir: &Path, name: &str, extra: &str) {
    let cfg = experiment(dir, name, extra);
    let json = format!("{name}.json");
    let o = rtlab(
        &[
            "run",
            cfg.to_str().unwrap(),
            "--json",
            &json,
            "--outdir",
            name,
        ],
        dir,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// Counts the pixels of exactly this colour.
fn pixels(img: &image::RgbImage, rgb: [u8; 3]) -> usize {
    img.pixels().filter(|p| p.0 == rgb).count()
}

/// The first three curve colours (Tableau 10).
const COLOURS: [[u8; 3]; 3] = [[0x1f, 0x77, 0xb4], [0xff, 0x7f, 0x0e], [0x2c, 0xa0, 0x2c]];

/// Scales every latency of an rtlab result (a crafted regression).
fn scaled(doc: &Value, factor: f64) -> Value {
    let mut doc = doc.clone();
    let scale = |v: &mut Value| {
        if let Some(x) = v.as_f64() {
            *v = serde_json::json!((x * factor).round() as u64);
        }
    };
    for t in doc["timers"].as_array_mut().unwrap() {
        let s = &mut t["summary"];
        for key in ["min_ns", "max_ns", "mean_ns", "stddev_ns"] {
            scale(&mut s[key]);
        }
        for p in s["percentiles"].as_array_mut().unwrap() {
            scale(&mut p["value_ns"]);
        }
        for b in t["hdr_histogram"].as_array_mut().unwrap() {
            scale(&mut b["low_ns"]);
            scale(&mut b["high_ns"]);
        }
    }
    doc
}

/// Headless Chromium on `page` (in `dir`) with `extra` options.
fn chromium(dir: &Path, page: &str, extra: &[&str]) -> Output {
    let url = format!("file://{}", dir.join(page).display());
    let profile = dir.join("chromium-profile");
    Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(&url)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// Chromium laid out every table of `page` and its 3 plots, each with a
/// size on screen (the summary, the threads, the worst wake-ups, a table
/// per group of the system and the configuration, the culprits...).
fn rendered_whole(dir: &Path, page: &str) {
    rendered_with(dir, page, 3);
}

/// Chromium laid out every table of `page` and its `plots` plots.
fn rendered_with(dir: &Path, page: &str, plots: usize) {
    let html = std::fs::read_to_string(dir.join(page)).unwrap();
    let tables = html.matches("<table").count();
    let o = chromium(dir, page, &["--dump-dom"]);
    let dom = String::from_utf8_lossy(&o.stdout);
    assert!(
        dom.contains(&format!("data-rendered=\"tables={tables} plots={plots}\"")),
        "the page did not render its {tables} tables and {plots} plots: {}",
        text(&o)
    );
    assert!(dom.contains(&format!(
        "This page rendered {tables} tables and {plots} plots."
    )));
}

/// A traced run on a VM, as `rtlab report` draws it in Chromium: every
/// table and plot on screen, the steal-time box beside the culprits (its
/// background in the screenshot), the worst wake-ups with their causes,
/// the system and configuration as grouped tables. Needs no root: the run
/// is a recorded result with a flight recorder's findings and steal time
/// added.
#[test]
fn a_traced_run_on_a_vm_reads_well_in_chromium() {
    let test = test_name!();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let seed =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/seeds/rtlab-result-irq-latency.json");
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(seed).unwrap()).unwrap();
    let worst = doc["timers"][0]["spikes"]["worst"][0].clone();
    let cpu = doc["timers"][0]["cpus"][0].as_u64().unwrap();
    let (sample, latency) = (
        worst["sample"].clone(),
        worst["latency_ns"].as_u64().unwrap(),
    );
    doc["steal_ms"] = serde_json::json!([[cpu, 24.0]]);
    doc["trace"] = serde_json::json!({
        "threshold_ns": 100_000, "instance": null, "unavailable": null, "events_missing": [],
        "over_threshold": 2, "not_explained": 1, "reads": 1, "read_ns": 1_000_000, "notes": [],
        "explanations": [{
            "timer": 0, "sample": sample, "cpu": cpu, "deadline_ns": 0, "latency_ns": latency,
            "woken_after_ns": null, "wake_to_switch_ns": null, "events": 3, "trace_file": null,
            "parts": [{"kind": "thread", "what": "rtlab-hog", "pid": 7, "prio": 4, "ns": latency,
                       "before_wake": false}],
            "cause": "thread rtlab-hog (pid 7) ran all of it: at real-time priority 95",
            "timeline": [{"after_deadline_ns": 0, "ns": latency, "kind": "thread",
                          "what": "rtlab-hog"}],
        }],
        "culprits": [{"kind": "thread", "what": "rtlab-hog", "pid": 7, "prio": 4,
                      "main_cause": 1, "spikes": 1, "total_ns": latency, "max_ns": latency}],
    });
    std::fs::write(dir.join("vm.json"), doc.to_string()).unwrap();
    let o = rtlab(&["report", "vm.json", "-o", "vm.html"], dir);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let html = std::fs::read_to_string(dir.join("vm.html")).unwrap();
    for part in [
        "<th>cause</th>",
        ">thread rtlab-hog (pid 7) ran all of it</td>",
        "<aside class=\"steal\">",
        "<h4>Machine and kernel</h4>",
        "<h4>Timer threads</h4>",
    ] {
        assert!(html.contains(part), "{part} missing from the report");
    }
    if !have(test, "chromium", "chromium") {
        return;
    }
    rendered_whole(dir, "vm.html");
    let o = chromium(
        dir,
        "vm.html",
        &["--window-size=1280,6000", "--screenshot=vm.png"],
    );
    let shot = image::open(dir.join("vm.png"))
        .unwrap_or_else(|e| panic!("no screenshot ({e}): {}", text(&o)))
        .to_rgb8();
    // The steal box's background, on screen.
    assert!(
        pixels(&shot, [0xff, 0xfa, 0xf3]) > 2000,
        "the steal box is not on screen"
    );
}

/// The "done when", as a new user would do it: an idle run, a
/// loaded run and an old cyclictest run give one PNG, one HTML report that a
/// browser renders from disk, one table; the gate passes equal runs and
/// fails a regression.
#[test]
fn idle_loaded_and_cyclictest_runs_give_png_report_and_table() {
    let test = test_name!();
    if !root_or_refusal(test) {
        return;
    }
    let _lock = crate::fixtures::machine_exclusive();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    run(dir, "idle", "");
    run(
        dir,
        "loaded",
        &format!(
            "program[0]\n{{\n  cmdline rtlab hog\n  output.out /dev/null\n  cpu_affinity {}\n}}\n",
            measured_cpu()
        ),
    );
    if have(test, "cyclictest", "rt-tests") {
        path_taken(test, "the old run is a cyclictest run made here");
        let o = Command::new("cyclictest")
            .args([
                "-q",
                "-m",
                "-p",
                "99",
                "-a",
                &measured_cpu().to_string(),
                "-i",
                "1000",
                "-l",
                "2000",
                "-h",
                "200",
                "--histfile=old.hist",
            ])
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
    } else {
        path_taken(test, "the old run is the recorded cyclictest stdout");
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/cyclictest-stdout.txt"),
            dir.join("old.hist"),
        )
        .unwrap();
    }
    let runs = ["idle.json", "loaded.json", "old.hist"];

    // One PNG, three curves.
    let o = rtlab(
        &[
            &["plot"],
            &runs[..],
            &["-o", "fig.png", "--gnuplot", "fig.gp"],
        ]
        .concat(),
        dir,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let img = image::open(dir.join("fig.png")).unwrap().to_rgb8();
    assert_eq!(img.dimensions(), (1200, 1500));
    for rgb in COLOURS {
        assert!(
            pixels(&img, rgb) > 50,
            "curve colour {rgb:?} missing from the PNG"
        );
    }

    // The gnuplot script draws the three runs.
    if have(test, "gnuplot", "gnuplot-nox") {
        let o = Command::new("gnuplot")
            .args(["-e", "out='gp.svg'", "fig.gp"])
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        let gp = std::fs::read_to_string(dir.join("gp.svg")).unwrap();
        for title in ["idle: max", "loaded: max", "old: max"] {
            assert!(gp.contains(title), "{title} missing from gnuplot's SVG");
        }
    } else {
        let gp = std::fs::read_to_string(dir.join("fig.gp")).unwrap();
        for title in ["idle: max", "loaded: max", "old: max"] {
            assert!(gp.contains(title), "{title} missing from the script");
        }
    }

    // One HTML report that Chromium renders from disk.
    let o = rtlab(
        &[&["report"], &runs[..], &["-o", "report.html"]].concat(),
        dir,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    if have(test, "chromium", "chromium") {
        let chromium = |extra: &[&str]| chromium(dir, "report.html", extra);
        rendered_whole(dir, "report.html");
        let o = chromium(&["--window-size=1300,2400", "--screenshot=shot.png"]);
        let shot = image::open(dir.join("shot.png"))
            .unwrap_or_else(|e| panic!("no screenshot ({e}): {}", text(&o)))
            .to_rgb8();
        for rgb in COLOURS {
            assert!(
                pixels(&shot, rgb) > 20,
                "curve colour {rgb:?} not on screen"
            );
        }
    } else {
        let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
        assert!(html.contains("<svg"), "the report has no plot");
    }

    // One table, a column per run.
    let o = rtlab(&[&["compare"], &runs[..]].concat(), dir);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    let header = table.lines().next().unwrap();
    assert!(header.contains("idle") && header.contains("loaded") && header.contains("old"));
    for row in [
        "p99 (µs)",
        "p99.99 (µs)",
        "max (µs)",
        "stddev (µs)",
        "overruns",
        "load",
        "kernel",
    ] {
        assert!(
            table.lines().any(|l| l.starts_with(row)),
            "{row} missing:\n{table}"
        );
    }
    // rtlab's ns are compared with cyclictest's µs at µs, and it says so.
    let resolution = table.lines().find(|l| l.starts_with("resolution")).unwrap();
    assert_eq!(
        resolution.matches("1 µs (truncated from 1 ns)").count(),
        2,
        "{resolution}"
    );
    let load = table.lines().find(|l| l.starts_with("load")).unwrap();
    assert!(load.contains("rtlab hog"), "{load}");

    // The gate: equal runs pass, a regression fails.
    let gates = [
        "--fail-if",
        "p99>+10%",
        "--fail-if",
        "max>+0us",
        "--fail-if",
        "mean>+5%",
    ];
    let o = rtlab(
        &[&["compare", "idle.json", "idle.json"], &gates[..]].concat(),
        dir,
    );
    assert_eq!(o.status.code(), Some(0), "equal runs: {}", text(&o));
    let idle: Value =
        serde_json::from_slice(&std::fs::read(dir.join("idle.json")).unwrap()).unwrap();
    std::fs::write(dir.join("worse.json"), scaled(&idle, 1.5).to_string()).unwrap();
    let o = rtlab(
        &[&["compare", "idle.json", "worse.json"], &gates[..]].concat(),
        dir,
    );
    assert_eq!(o.status.code(), Some(6), "regression: {}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("FAIL p99>+10%: worse p99 is"), "{out}");
    assert!(out.contains("+50.0%"), "{out}");
    let o = rtlab(
        &[&["compare", "worse.json", "idle.json"], &gates[..]].concat(),
        dir,
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "an improvement passes: {}",
        text(&o)
    );
}

#[test]
fn bad_inputs_are_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("cut.json"),
        "{\"rtlab_version\": \"0.1.0\",\n \"schema\": ",
    )
    .unwrap();
    std::fs::write(dir.join("h.hist"), "# Histogram\n000001 000005\n# Min Latencies: 00001\n# Avg Latencies: 00001\n# Max Latencies: 00001\n# Histogram Overflows: 00000\n").unwrap();
    let cases: [(&[&str], i32, &str); 6] = [
        (
            &["plot", "missing.json", "-o", "x.png"],
            2,
            "missing.json: cannot read",
        ),
        (&["plot", "cut.json", "-o", "x.png"], 2, "cut.json:2:"),
        (
            &["plot", "h.hist", "-o", "x.gif"],
            2,
            "FILE.svg or FILE.png",
        ),
        (
            &["compare", "h.hist", "--fail-if", "p98>1"],
            2,
            "did you mean p90",
        ),
        (
            &[
                "report", "h.hist", "h.hist", "--label", "a", "--label", "b", "--label", "c", "-o",
                "r.html",
            ],
            2,
            "3 --label for 2",
        ),
        (
            &["report", "h.hist", "-o", "no/such/dir/r.html"],
            2,
            "directory `no` does not exist",
        ),
    ];
    for (args, code, message) in cases {
        let o = rtlab(args, dir);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(message),
            "{args:?}: {}",
            text(&o)
        );
    }
    for name in ["x.png", "x.gif", "r.html"] {
        assert!(!dir.join(name).exists(), "{name} written");
    }
    // A valid input in every output format.
    let o = rtlab(&["compare", "h.hist", "--markdown"], dir);
    assert!(
        String::from_utf8_lossy(&o.stdout).starts_with("| | h |\n|---|---:|"),
        "{}",
        text(&o)
    );
    let o = rtlab(
        &["plot", "h.hist", "-o", "h.svg", "--panel", "histogram"],
        dir,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        std::fs::read_to_string(dir.join("h.svg"))
            .unwrap()
            .contains("h: max 1.0 µs")
    );
}

/// A run of a timer thread and a noise thread, and a run of `rtlab noise`
/// alone, drawn: the picture has the noise panels below the latency ones
/// (only them for the noise run), gnuplot draws the script's gap
/// histograms, and the report has each run's noise section with its
/// plots, all on screen in Chromium.
#[test]
fn runs_with_noise_threads_are_drawn_and_reported() {
    let test = test_name!();
    if !root_or_refusal(test) {
        return;
    }
    let _lock = crate::fixtures::machine_exclusive();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let cpu = measured_cpu();
    run(
        dir,
        "mixed",
        &format!("noise_thread[0]\n{{\n  cpu_affinity {cpu}\n  lifetime.duration 1 s\n}}\n"),
    );
    let o = rtlab(
        &[
            "noise",
            &cpu.to_string(),
            "--duration",
            "1s",
            "--json",
            "noise.json",
        ],
        dir,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let noise_titles = [
        "Noise threads: every gap between two clock reads",
        "Noise threads: noise per period",
    ];
    let o = rtlab(&["plot", "mixed.json", "noise.json", "-o", "both.svg"], dir);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let svg = std::fs::read_to_string(dir.join("both.svg")).unwrap();
    for title in noise_titles
        .iter()
        .chain(&["Latency histogram", "Percentile curve"])
    {
        assert!(svg.contains(title), "{title} missing");
    }
    for legend in [
        format!("mixed N0 (CPU {cpu})"),
        format!("noise N0 (CPU {cpu})"),
    ] {
        assert!(svg.contains(&legend), "{legend} missing");
    }
    let o = rtlab(
        &["plot", "noise.json", "-o", "noise.png", "--gnuplot", "n.gp"],
        dir,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // Two panels: 700 pixels and 400 for the second.
    let img = image::open(dir.join("noise.png")).unwrap().to_rgb8();
    assert_eq!(img.dimensions(), (1200, 1100));
    assert!(pixels(&img, COLOURS[0]) > 50, "no noise curve");
    if have(test, "gnuplot", "gnuplot-nox") {
        let o = Command::new("gnuplot")
            .args(["-e", "out='gp.svg'", "n.gp"])
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        let gp = std::fs::read_to_string(dir.join("gp.svg")).unwrap();
        assert!(gp.contains(&format!("noise N0 (CPU {cpu})")), "{gp}");
    }
    let o = rtlab(
        &["report", "mixed.json", "noise.json", "-o", "report.html"],
        dir,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    for section in [
        "id=\"run-0-noise\"",
        "id=\"run-1-noise\"",
        "OS noise, every run",
    ] {
        assert!(html.contains(section), "{section} missing");
    }
    // Three latency plots, the noise plots of both runs together, and two
    // per run.
    let plots = html.matches("<figure>").count();
    assert_eq!(plots, 3 + 2 + 2 * 2);
    if have(test, "chromium", "chromium") {
        rendered_with(dir, "report.html", plots);
    }
}

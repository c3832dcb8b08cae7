//! Integration tests of `rtlab plot`, `report` and `compare` on real runs:
//! rtlab runs measured here, and cyclictest (Debian's rt-tests) run here too,
//! whose outputs must agree with its own summary lines; the report is opened
//! in headless Chromium; the gnuplot script is drawn by gnuplot.

mod common;
use common::text;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

/// Runs measure latency: one at a time, so they do not disturb each other.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn rtlab(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn need(program: &str, package: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "{program} is not installed: apt-get install {package} (.ci/run does it)"
    );
}

/// The last `T:` line of each thread in cyclictest's stdout:
/// (cycles, min, avg, max).
fn t_lines(stdout: &str) -> BTreeMap<usize, [u64; 4]> {
    let mut out = BTreeMap::new();
    for line in stdout.lines() {
        let Some(at) = line.find("T:") else { continue };
        let body = &line[at..];
        let field = |key: &str| -> Option<u64> {
            let rest = &body[body.find(key)? + key.len()..];
            rest.split_whitespace().next()?.parse().ok()
        };
        if let (Some(t), Some(c), Some(min), Some(avg), Some(max)) = (
            field("T:"),
            field("C:"),
            field("Min:"),
            field("Avg:"),
            field("Max:"),
        ) {
            out.insert(t as usize, [c, min, avg, max]);
        }
    }
    out
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
    need("cyclictest", "rt-tests");
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    // Two threads, -H (the layout with a sum column), a small histogram so
    // that some samples may overflow it, and the T: lines on stdout.
    let o = Command::new("cyclictest")
        .args([
            "-m",
            "-p",
            "80",
            "-t",
            "2",
            "-a",
            "0-1",
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
    let summary = t_lines(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(summary.len(), 2, "{}", text(&o));
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
            let mean_us = m["mean_ns"].as_f64().unwrap() / 1000.0;
            assert_eq!(mean_us.floor() as u64, avg, "{what}");
            assert_eq!(
                col["format"],
                if file.ends_with("json") {
                    "cyclictest_json"
                } else {
                    "cyclictest_histogram"
                }
            );
        }
    }
}

/// An experiment of one FIFO timer thread on CPU 1 for 2 s, with optional
/// extra sections.
fn experiment(dir: &Path, name: &str, extra: &str) -> PathBuf {
    let path = dir.join(format!("{name}.cfg"));
    std::fs::write(
        &path,
        format!(
            "timer_thread[0]\n{{\n  sched.policy FIFO\n  sched.priority 99\n  cpu_affinity 1\n  \
             lifetime.duration 2 s\n  stats.histo_size 200 us\n}}\n{extra}"
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

/// The "done when", as a new user would do it: an idle run, a
/// loaded run and an old cyclictest run give one PNG, one HTML report that a
/// browser renders from disk, one table; the gate passes equal runs and
/// fails a regression.
#[test]
fn idle_loaded_and_cyclictest_runs_give_png_report_and_table() {
    need("cyclictest", "rt-tests");
    need("chromium", "chromium");
    need("gnuplot", "gnuplot-nox");
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    run(dir, "idle", "");
    run(
        dir,
        "loaded",
        "program[0]\n{\n  cmdline rtlab hog\n  output.out /dev/null\n  cpu_affinity 1\n}\n",
    );
    let o = Command::new("cyclictest")
        .args([
            "-q",
            "-m",
            "-p",
            "99",
            "-a",
            "1",
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

    // One HTML report that Chromium renders from disk.
    let o = rtlab(
        &[&["report"], &runs[..], &["-o", "report.html"]].concat(),
        dir,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let url = format!("file://{}", dir.join("report.html").display());
    let profile = dir.join("chromium-profile");
    let chromium = |extra: &[&str]| {
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
    };
    let o = chromium(&["--dump-dom"]);
    let dom = String::from_utf8_lossy(&o.stdout);
    // Summary + per rtlab run (threads, system, configuration) + the
    // cyclictest run's threads = 8 tables; 3 plots, each with a size on
    // screen and drawn lines.
    assert!(
        dom.contains("data-rendered=\"tables=8 plots=3\""),
        "the page did not render its tables and plots: {}",
        text(&o)
    );
    assert!(dom.contains("This page rendered 8 tables and 3 plots."));
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
    std::fs::write(dir.join("h.hist"), "# Histogram\n000001 000005\n# Min Latencies: 00001\n# Avg Latencies: 00001\n# Max Latencies: 00001\n").unwrap();
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
            1,
            "cannot write",
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

//! The whole pipeline on any machine and as any user: parse → plan → run →
//! result files → plot, report, compare, with simulated wake-ups
//! (`RTLAB_SIMULATED_WAKE`, a flag only tests use). Needs nothing: no root,
//! no real-time priority, no cgroup; as root it drops to uid 65534 with
//! `setpriv` (util-linux) when it can, so that the non-root path is the one
//! tested. The latencies are drawn from a fixed generator, so every figure
//! is predicted exactly from `rtlab::measure::simulated_latencies`.

use crate::fixtures::{path_taken, text};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

const SEED: u64 = 42;
const PERIOD_NS: u64 = 1_000_000;
const LOOPS: [usize; 2] = [3000, 2000];

const EXPERIMENT: &str = "main\n{\n  spikes.worst 12\n  spikes.threshold 1 ms\n  spikes.max 3\n  trace.threshold 1 ms\n}\n\
                          timer_thread[0]\n{\n  lifetime.loops 3000\n  timer.period 1 ms\n}\n\
                          timer_thread[1]\n{\n  lifetime.loops 2000\n  timer.period 1 ms\n}\n";

/// rtlab as an ordinary user: uid 65534 when run as root and `setpriv`
/// is there, else the caller.
fn rtlab_as_user(test: &str, dir: &Path, args: &[&str]) -> Output {
    let drop_root = crate::fixtures::is_root() && crate::fixtures::has_command("setpriv");
    let mut cmd = if drop_root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(crate::fixtures::exe_for_others_in(dir).unwrap());
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_rtlab"))
    };
    if args.first() == Some(&"run") {
        path_taken(
            test,
            if drop_root {
                "run as uid 65534 (setpriv)"
            } else {
                "run as the calling user"
            },
        );
    }
    cmd.args(args)
        .current_dir(dir)
        .env("RTLAB_SIMULATED_WAKE", SEED.to_string())
        .output()
        .unwrap()
}

#[test]
fn the_whole_pipeline_runs_as_any_user_with_figures_predicted_exactly() {
    let _machine = crate::fixtures::machine_shared();
    let test = test_name!();
    let dir = tempfile::tempdir().unwrap();
    // Writable by the unprivileged user the run may become.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::write(dir.path().join("sim.cfg"), EXPERIMENT).unwrap();
    let o = rtlab_as_user(test, dir.path(), &["run", "sim.cfg", "--json", "r.json"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("SIMULATED wake-ups"));
    let r: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
    assert!(
        r["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("not measured")),
        "the result must say it was simulated"
    );
    // Without root there is no flight recorder: the run went on, and the
    // result says why (as root the test dropped to uid 65534, or ran as
    // a user: either way no journal of system changes).
    if !crate::fixtures::is_root() || crate::fixtures::has_command("setpriv") {
        let why = r["trace"]["unavailable"].as_str().unwrap_or_default();
        assert!(why.contains("needs root"), "{}", r["trace"]);
    }
    for (i, n) in LOOPS.into_iter().enumerate() {
        let want = rtlab::measure::simulated_latencies(SEED, i, n);
        let s = &r["timers"][i]["summary"];
        let overruns = want.iter().filter(|&&l| l > PERIOD_NS).count();
        assert_eq!(s["samples"], n as u64, "T{i}");
        assert_eq!(s["min_ns"], *want.iter().min().unwrap(), "T{i}");
        assert_eq!(s["max_ns"], *want.iter().max().unwrap(), "T{i}");
        assert_eq!(s["overruns"], overruns as u64, "T{i}");
        // The kept spikes by brute force: the 12 worst (ties: earliest),
        // and the first 3 of those at or above 1 ms, with their count.
        let spikes = &r["timers"][i]["spikes"];
        let mut ranked: Vec<(u64, u64)> = want
            .iter()
            .enumerate()
            .map(|(k, &l)| (l, k as u64))
            .collect();
        ranked.sort_by_key(|&(l, k)| (std::cmp::Reverse(l), k));
        let kept: Vec<(u64, u64)> = spikes["worst"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["latency_ns"].as_u64().unwrap(),
                    s["sample"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(kept, ranked[..12], "T{i}");
        let over: Vec<u64> = (0..n as u64)
            .filter(|&k| want[k as usize] >= PERIOD_NS)
            .collect();
        assert_eq!(spikes["over_threshold_total"], over.len() as u64, "T{i}");
        let listed: Vec<u64> = spikes["over_threshold"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["sample"].as_u64().unwrap())
            .collect();
        assert_eq!(listed, over[..over.len().min(3)], "T{i}");
        let mean = want.iter().sum::<u64>() as f64 / n as f64;
        assert!(
            (s["mean_ns"].as_f64().unwrap() - mean).abs() < 1.0,
            "T{i}: {s}"
        );
        // The median by brute force, within the HDR histogram's 0.1 %.
        let mut sorted = want.clone();
        sorted.sort_unstable();
        let median = sorted[n.div_ceil(2) - 1] as f64;
        let p50 = s["percentiles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "p50")
            .unwrap()["value_ns"]
            .as_f64()
            .unwrap();
        assert!(
            (p50 - median).abs() <= median / 1000.0 + 1.0,
            "T{i}: p50 {p50} vs {median}"
        );
        // The systress result file has the same count.
        let txt =
            std::fs::read_to_string(dir.path().join(format!("timer_thread{i:02}.txt"))).unwrap();
        assert!(txt.contains(&format!(" {n} ")), "T{i}: {txt:.500}");
    }
    // The finished run through plot, report and compare, as the same user.
    for args in [
        vec!["plot", "r.json", "-o", "p.svg", "--gnuplot", "p.gp"],
        vec!["report", "r.json", "-o", "r.html"],
    ] {
        let o = rtlab_as_user(test, dir.path(), &args);
        assert!(o.status.success(), "{args:?}: {}", text(&o));
    }
    let svg = std::fs::read_to_string(dir.path().join("p.svg")).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("r T0"),
        "{:.300}",
        &svg
    );
    let html = std::fs::read_to_string(dir.path().join("r.html")).unwrap();
    assert!(
        html.contains("not measured"),
        "the report shows the warning"
    );
    let o = rtlab_as_user(
        test,
        dir.path(),
        &["compare", "--json", "--per-thread", "r.json"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let c: Value = serde_json::from_slice(&o.stdout).unwrap();
    for (i, n) in LOOPS.into_iter().enumerate() {
        let want = rtlab::measure::simulated_latencies(SEED, i, n);
        let m = &c["columns"][i]["metrics"];
        assert_eq!(m["samples"], n as f64);
        assert_eq!(m["max_ns"], *want.iter().max().unwrap() as f64);
    }
}

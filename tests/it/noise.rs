//! Noise threads against an independent truth: a real-time helper on the
//! measured CPU that steals a known slice every 10 ms and times itself.
//! Every one of its slices must show up as a gap at least as long, and the
//! noise must be at least their sum (lower bounds: other noise only adds).

use crate::fixtures::{self, path_taken};
use rtlab::sched::{Policy, Sched};
use rtlab::sys::os;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The helper's slice and period (ns).
const SLICE_NS: u64 = 30_000;
const EVERY_NS: u64 = 10_000_000;

/// Runs 30 µs every 10 ms on `cpu` as FIFO 50 until `stop`: the
/// (start, end) of each slice on CLOCK_MONOTONIC.
fn stealer(cpu: usize, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<(u64, u64)>> {
    std::thread::spawn(move || {
        let mut slices = Vec::new();
        if os::set_affinity(0, &[cpu]).is_err()
            || os::set_sched(
                0,
                Sched {
                    policy: Policy::Fifo,
                    priority: 50,
                },
            )
            .is_err()
        {
            return slices;
        }
        let mut next = os::monotonic_ns() + EVERY_NS;
        while !stop.load(Ordering::Relaxed) {
            os::sleep_until_ns(next);
            let start = os::monotonic_ns();
            while os::monotonic_ns() < start + SLICE_NS {}
            slices.push((start, os::monotonic_ns()));
            next += EVERY_NS;
        }
        slices
    })
}

#[test]
fn every_slice_a_real_time_thread_takes_is_a_gap_and_counted_as_noise() {
    let test = test_name!();
    if !fixtures::is_root() {
        path_taken(test, "not root: no FIFO helper");
        return;
    }
    let _machine = fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let cpu = fixtures::measured_cpu();
    let stop = Arc::new(AtomicBool::new(false));
    let helper = stealer(cpu, stop.clone());
    let out = fixtures::rtlab_in(
        dir.path(),
        &[
            "noise",
            &cpu.to_string(),
            "--duration",
            "2s",
            "--no-attribute",
            "--json",
            "n.json",
        ],
    );
    stop.store(true, Ordering::Relaxed);
    let slices = helper.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", fixtures::text(&out));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("n.json")).unwrap()).unwrap();
    let n = &r["noise"][0];
    let periods = n["periods"].as_array().unwrap();
    let first = periods[0]["start_ns"].as_u64().unwrap();
    let last = periods.last().unwrap();
    let end = last["start_ns"].as_u64().unwrap() + last["runtime_ns"].as_u64().unwrap();
    // The helper's slices while the poller polled.
    let inside: Vec<&(u64, u64)> = slices
        .iter()
        .filter(|(s, e)| *s > first && *e < end)
        .collect();
    assert!(
        inside.len() > 10,
        "{} slices of {}",
        inside.len(),
        slices.len()
    );
    let stolen: u64 = inside.iter().map(|(s, e)| e - s).sum();
    let shortest = inside.iter().map(|(s, e)| e - s).min().unwrap();
    // Gaps at least as long as the shortest slice, from the histogram.
    let long_gaps: u64 = n["gaps_hdr"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["high_ns"].as_u64().unwrap() >= shortest)
        .map(|b| b["count"].as_u64().unwrap())
        .sum();
    assert!(
        long_gaps >= inside.len() as u64,
        "{long_gaps} gaps ≥ {shortest} ns for {} slices",
        inside.len()
    );
    let noise = n["summary"]["noise_ns"].as_u64().unwrap();
    assert!(
        noise >= stolen,
        "noise {noise} ns < the helper's {stolen} ns"
    );
    // Each of the worst gaps lies within the polled time, and the figures
    // add up: the periods' runtime is the summary's.
    let runtime: u64 = periods
        .iter()
        .map(|p| p["runtime_ns"].as_u64().unwrap())
        .sum();
    assert_eq!(runtime, n["summary"]["runtime_ns"].as_u64().unwrap());
    for g in n["worst"].as_array().unwrap() {
        let e = g["end_ns"].as_u64().unwrap();
        assert!(
            e > first && e <= end + 2_000_000,
            "{g} outside [{first}, {end}]"
        );
    }
    path_taken(
        test,
        &format!(
            "{} slices of ≥ {shortest} ns ({stolen} ns) on CPU {cpu}: {long_gaps} gaps as long, noise {noise} ns",
            inside.len()
        ),
    );
}

#[test]
fn a_real_time_poller_whose_runtime_throttling_would_cut_is_refused() {
    let test = test_name!();
    let dir = tempfile::tempdir().unwrap();
    let cfg = "noise_thread[0] {\n cpu_affinity 0\n sched.policy FIFO\n sched.priority 10\n noise.runtime 1 s\n lifetime.duration 1 s\n}\n";
    std::fs::write(dir.path().join("n.cfg"), cfg).unwrap();
    let out = fixtures::rtlab_in(dir.path(), &["check", "n.cfg"]);
    let throttling = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us")
        .ok()
        .and_then(|t| t.trim().parse::<i64>().ok());
    match throttling {
        Some(us) if (0..1_000_000).contains(&us) => {
            assert_ne!(out.status.code(), Some(0), "{}", fixtures::text(&out));
            let text = fixtures::text(&out);
            assert!(
                text.contains("n.cfg:5:16") && text.contains("RT throttling"),
                "{text}"
            );
            path_taken(
                test,
                &format!("sched_rt_runtime_us {us}: refused at its line"),
            );
        }
        _ => path_taken(test, "RT throttling off here: nothing to refuse"),
    }
}

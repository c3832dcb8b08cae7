//! `rtlab hwlat` (hwlatdetect's command line): a real run's report has
//! hwlatdetect's lines and exit rule, and a SCHED_DEADLINE helper's slices
//! on the measured CPU (it preempts the FIFO 99 poller) are counted as OS
//! noise, never as hardware.

use crate::fixtures::{self, path_taken, text};
use rtlab::sched::Deadline;
use rtlab::sys::os;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Spins 30 µs every 10 ms on `cpu` under SCHED_DEADLINE (100 µs every
/// 10 ms), which preempts even the FIFO 99 poller, until `stop`: how many
/// slices it ran (None: this kernel refused it the deadline policy).
fn helper(cpu: usize, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Option<usize>> {
    std::thread::spawn(move || {
        os::set_affinity(0, &[cpu]).ok()?;
        let dl = Deadline {
            runtime_ns: 100_000,
            deadline_ns: 10_000_000,
            period_ns: 10_000_000,
        };
        os::set_deadline(0, dl).ok()?;
        let mut next = os::monotonic_ns() + 10_000_000;
        let mut slices = 0;
        while !stop.load(Ordering::Relaxed) {
            os::sleep_until_ns(next);
            let start = os::monotonic_ns();
            while os::monotonic_ns() < start + 30_000 {}
            slices += 1;
            next += 10_000_000;
        }
        Some(slices)
    })
}

/// The number after `label` on a line of `text`.
fn number_after(text: &str, label: &str) -> Option<u64> {
    let at = text.find(label)? + label.len();
    let digits: String = text[at..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[test]
fn a_real_run_reports_as_hwlatdetect_and_counts_a_threads_slices_as_os_noise() {
    let test = test_name!();
    if !fixtures::root_or_refusal(test) {
        return;
    }
    let _machine = fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let cpu = fixtures::measured_cpu();
    let stop = Arc::new(AtomicBool::new(false));
    // Each slice that lands in a polled window is a gap a thread took.
    let h = helper(cpu, stop.clone());
    let report = dir.path().join("hw.txt");
    let out = fixtures::rtlab_in(
        dir.path(),
        &[
            "hwlat",
            "--duration",
            "3",
            "--cpu-list",
            &cpu.to_string(),
            "--threshold",
            "5",
            "--report",
            report.to_str().unwrap(),
        ],
    );
    stop.store(true, Ordering::Relaxed);
    let slices = h.join().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let Some(slices) = slices else {
        path_taken(
            test,
            "this kernel refused the helper SCHED_DEADLINE: nothing injected",
        );
        return;
    };
    assert!(slices > 0, "the helper never ran");
    for line in [
        "hwlatdetect:  test duration 3 seconds",
        "Starting test",
        "test finished",
        "Max Latency:",
        "Samples recorded:",
        "Samples exceeding threshold:",
    ] {
        assert!(stdout.contains(line), "{line:?} missing: {}", text(&out));
    }
    // hwlatdetect's exit rule: 1 when the largest sample is over the hard
    // limit (the threshold here), else 0.
    let max = number_after(&stdout, "Max Latency:").unwrap_or(0);
    let want = if max > 5 { 1 } else { 0 };
    assert_eq!(out.status.code(), Some(want), "{}", text(&out));
    let samples = number_after(&stdout, "Samples exceeding threshold:").unwrap();
    let lines = std::fs::read_to_string(&report).unwrap_or_default();
    assert_eq!(
        lines.lines().filter(|l| l.starts_with("ts: ")).count() as u64,
        samples
    );
    if stderr.contains("the trace told the gaps apart") {
        // Every slice that landed in a polled window is OS noise (a
        // thread), at least its 30 µs long: the largest OS gap says so.
        let os_largest = number_after(&stderr, "largest").unwrap_or(0);
        assert!(os_largest >= 30, "{stderr}");
        path_taken(
            test,
            &format!(
                "traced on CPU {cpu}: {slices} slices of a FIFO 99 helper, the largest OS gap {os_largest} µs, max hardware sample {max} µs, status {want}"
            ),
        );
    } else {
        path_taken(test, &format!("untraced here: {stderr}"));
    }
}

#[test]
fn without_the_privilege_for_fifo_99_it_is_refused_before_anything_starts() {
    let test = test_name!();
    let dir = tempfile::tempdir().unwrap();
    let out = fixtures::rtlab_in(dir.path(), &["hwlat", "--watch"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--watch"), "{}", text(&out));
    let out = fixtures::rtlab_in(dir.path(), &["hwlat", "--duration", "1x"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    path_taken(test, "--watch and a bad duration refused by name, status 2");
}

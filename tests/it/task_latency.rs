//! Task latency of unmodified programs, checked against each program's own
//! clock: small C programs (built here with `cc`) run cyclic loops on an
//! absolute `clock_nanosleep`, on a `timerfd`, and woken by a condition
//! variable from another thread, each writing its own lateness per cycle
//! (CLOCK_MONOTONIC after the wake-up minus the expiry). rtlab measures
//! them from the kernel's tracepoints: every cycle is found (by its armed
//! expiry, exactly), rtlab's latency never exceeds the program's own (the
//! switch-in comes before the program reads its clock) and agrees with it
//! within the time from the switch-in to that clock read. Under a pinned
//! higher-priority hog, the late wake-ups are blamed on the hog, their
//! parts adding up. And the binary trace engine gives the events the
//! kernel's text gives, on a buffer of whatever kernel runs the tests.
//! Needs root, tracefs and a C compiler, else says so.

use crate::fixtures::{online_cpus, path_taken, rtlab_in as rtlab, text};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The agreement asked of the median wake-up: the program reads its clock
/// a few µs after the switch-in rtlab sees (its syscall's return).
const MEDIAN_AGREEMENT_NS: i64 = 50_000;
/// Held off its CPU this long, a cyclic task under the hog (1.5 ms of
/// every 20 ms, the task's expiries 1 ms apart: each burn delays one
/// wake-up by at least 0.5 ms).
const HELD_NS: i64 = 400_000;
/// How far rtlab's figure may exceed the program's own: the trace clock
/// (`mono`) and CLOCK_MONOTONIC are one clock, read at µs-apart moments.
const CLOCK_SLACK_NS: i64 = 2_000;

/// Builds `tests/support/NAME.c` into `dir`, or None without a compiler.
pub(crate) fn build(dir: &Path, name: &str) -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/support/{name}.c"));
    let out = dir.join(name);
    let ok = Command::new("cc")
        .args(["-O2", "-pthread", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(out)
}

fn ready(test: &str, dir: &Path) -> Option<(PathBuf, PathBuf)> {
    if !crate::trace_experiments::can_trace(test) {
        return None;
    }
    match (build(dir, "cyclic"), build(dir, "hog")) {
        (Some(c), Some(h)) => Some((c, h)),
        _ => {
            path_taken(test, "no C compiler here: nothing to measure");
            None
        }
    }
}

/// Runs `cyclic MODE 1000 CYCLES own.txt 50` (FIFO 50) under `rtlab
/// task-latency`, on `cpu`; gives rtlab's result and the program's own
/// `expiry -> lateness`.
fn measure(
    dir: &Path,
    cyclic: &Path,
    mode: &str,
    cycles: u32,
    cpu: usize,
    extra: &[&str],
) -> (Value, Vec<(i64, i64)>) {
    measure_as(dir, cyclic, (mode, cycles, &["50"]), cpu, extra)
}

/// `measure` with the program's last arguments (`FIFO_PRIO [SLACK_NS]`).
fn measure_as(
    dir: &Path,
    cyclic: &Path,
    (mode, cycles, tail): (&str, u32, &[&str]),
    cpu: usize,
    extra: &[&str],
) -> (Value, Vec<(i64, i64)>) {
    let own = dir.join(format!("{mode}.own"));
    let json = format!("{mode}.json");
    let cpu = cpu.to_string();
    let mut args = vec![
        "task-latency",
        "--duration",
        "4s",
        "--period",
        "1ms",
        "--samples",
        "10000",
        "--cpu",
        &cpu,
        "--json",
        &json,
    ];
    args.extend_from_slice(extra);
    let cycles = cycles.to_string();
    let cmd = [
        cyclic.to_str().unwrap(),
        mode,
        "1000",
        &cycles,
        own.to_str().unwrap(),
    ];
    args.push("--");
    args.extend_from_slice(&cmd);
    args.extend_from_slice(tail);
    let o = rtlab(dir, &args);
    assert!(o.status.success(), "{}", text(&o));
    let r: Value = serde_json::from_slice(&std::fs::read(dir.join(&json)).unwrap()).unwrap();
    let own: Vec<(i64, i64)> = std::fs::read_to_string(&own)
        .unwrap_or_else(|e| panic!("{mode}: the program wrote no figures ({e}): {}", text(&o)))
        .lines()
        .map(|l| {
            let mut w = l.split(' ').map(|x| x.parse::<i64>().unwrap());
            (w.next().unwrap(), w.next().unwrap())
        })
        .collect();
    (r, own)
}

/// The result's threads without their samples and histograms (for a
/// failure's message).
fn brief(r: &Value) -> String {
    let mut threads = r["task_latency"][0]["threads"].clone();
    for t in threads.as_array_mut().into_iter().flatten() {
        for k in ["wake_up_samples", "hdr_histogram"] {
            t[k] = Value::Null;
        }
        for k in [
            "latency",
            "timer_late",
            "timer_slack",
            "wake_to_run",
            "run_time",
            "period",
            "jitter",
        ] {
            t[k]["percentiles"] = Value::Null;
            t[k]["systress"] = Value::Null;
        }
    }
    threads.to_string()
}

/// The thread of the result that woke most.
fn busiest(r: &Value) -> &Value {
    r["task_latency"][0]["threads"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|t| t["wake_ups"].as_u64())
        .unwrap_or_else(|| panic!("no thread measured: {}", r["task_latency"]))
}

/// Each cycle of the program matched to rtlab's wake-up of the same armed
/// expiry: all found, rtlab never above the program, the median close.
fn agrees(mode: &str, r: &Value, own: &[(i64, i64)]) -> Vec<(i64, Value)> {
    let t = busiest(r);
    let by_expiry: HashMap<i64, &Value> = t["wake_up_samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["kind"] == "timer")
        .map(|w| (w["expiry_ns"].as_i64().unwrap(), w))
        .collect();
    let mut diffs = Vec::new();
    let mut matched = Vec::new();
    for &(expiry, lateness) in own {
        // A timerfd (read, or waited on with epoll) that expired again
        // before its task ran (a deadline miss) wakes it once: the program
        // counts from the last expiry, rtlab from the one that woke it,
        // which ran after this one. So does one that expires while its
        // task, woken late in its period, still works: its next read
        // returns at once, no wake-up to see (CI: woken 994 µs late, 4.7
        // µs before the next expiry).
        let coalesced = || {
            by_expiry
                .values()
                .filter(|w| w["expiry_ns"].as_i64() < Some(expiry))
                .max_by_key(|w| w["expiry_ns"].as_i64())
                .filter(|w| {
                    let previous = w["expiry_ns"].as_i64().unwrap_or(0);
                    let late_in_its_period = previous + (expiry - previous) / 2;
                    mode != "sleep" && w["run_at_ns"].as_i64() >= Some(late_in_its_period)
                })
        };
        if !by_expiry.contains_key(&expiry) && coalesced().is_some() {
            eprintln!(
                "{mode}: the cycle of expiry {expiry} began without a wait (a late cycle before it)"
            );
            continue;
        }
        let w = by_expiry
            .get(&expiry)
            .unwrap_or_else(|| panic!("{mode}: no wake-up of expiry {expiry} in {t}"));
        let mine = w["latency_ns"].as_i64().unwrap();
        assert!(
            mine <= lateness + CLOCK_SLACK_NS,
            "{mode}: rtlab {mine} ns > the program's {lateness} ns"
        );
        diffs.push(lateness - mine);
        matched.push((lateness, (*w).clone()));
    }
    diffs.sort_unstable();
    let median = diffs[diffs.len() / 2];
    eprintln!(
        "{mode}: {} cycles, program minus rtlab: min {} median {median} max {} ns",
        own.len(),
        diffs[0],
        diffs[diffs.len() - 1]
    );
    assert!(
        median <= MEDIAN_AGREEMENT_NS,
        "{mode}: median difference {median} ns"
    );
    matched
}

#[test]
fn an_unmodified_cyclic_program_and_a_timerfd_one_agree_with_their_own_clocks() {
    let test = test_name!();
    let _machine = crate::fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let Some((cyclic, _)) = ready(test, dir.path()) else {
        return;
    };
    let cpu = *online_cpus().last().unwrap();
    for mode in ["sleep", "timerfd", "epoll"] {
        let (r, own) = measure(dir.path(), &cyclic, mode, 1000, cpu, &[]);
        assert_eq!(own.len(), 1000);
        agrees(mode, &r, &own);
        kernel_agrees(test, mode, &r, own.len());
        let t = busiest(&r);
        // The cycles are every timer wake-up of the thread from the first
        // cycle's expiry on: the counts match, but for a cycle that ends
        // past the next expiry (a host stall of 300 ms seen in a CI
        // probe): the next wait finds its timer fired and does not sleep.
        let first = own[0].0;
        let cycles = t["wake_up_samples"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["kind"] == "timer" && w["expiry_ns"].as_i64() >= Some(first))
            .count();
        let overran = own.iter().filter(|(_, late)| *late >= 1_000_000).count();
        assert!(
            cycles <= own.len() && cycles + overran >= own.len(),
            "{mode}: {cycles} timer wake-ups of {} cycles, {overran} past the next expiry: {}",
            own.len(),
            brief(&r)
        );
        assert_eq!(
            t["period"]["samples"].as_u64(),
            t["wake_ups"].as_u64().map(|n| n - 1)
        );
    }
}

/// The cycling thread's wake-ups as the BPF program counted them in the
/// kernel (where it loads; else its refusal is said): each cycle once (a
/// few may be missed: docs/ebpf.md, "Known gaps"), no more than the trace
/// saw; the same median wake-up to run as the trace's (within its 1 µs
/// bucket, the trace's few switch-ins taken late aside), and no worst
/// past the trace's (whose switch-ins it did not log are taken later).
fn kernel_agrees(test: &str, mode: &str, r: &Value, cycles: usize) {
    let bpf = &r["task_latency"][0]["bpf"];
    if let Some(why) = bpf["refused"].as_str() {
        assert!(!why.is_empty());
        return path_taken(
            test,
            &format!("BPF refused ({why}): the trace's figures alone"),
        );
    }
    let t = busiest(r);
    let k = bpf["threads"]
        .as_array()
        .unwrap_or_else(|| panic!("{mode}: no BPF figures: {bpf}"))
        .iter()
        .find(|k| k["tid"] == t["tid"])
        .unwrap_or_else(|| panic!("{mode}: thread {} not counted by BPF: {bpf}", t["tid"]));
    let (counted, seen) = (
        k["wake_ups"].as_u64().unwrap(),
        t["wake_ups"].as_u64().unwrap(),
    );
    let p50 = |v: &Value| {
        v["percentiles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "p50")
            .and_then(|p| p["value_ns"].as_i64())
            .unwrap()
    };
    let (k_p50, t_p50) = (k["p50_ns"].as_i64().unwrap(), p50(&t["wake_to_run"]));
    let (k_max, t_max) = (
        k["max_ns"].as_i64().unwrap(),
        t["wake_to_run"]["max_ns"].as_i64().unwrap(),
    );
    eprintln!(
        "{mode}: BPF counted {counted} wake-ups (trace {seen}, {} switch-ins inferred; cycles {cycles}), p50 {k_p50} ns (trace {t_p50}), max {k_max} ns (trace {t_max})",
        t["switch_ins_inferred"]
    );
    let cycles = cycles as u64;
    assert!(
        counted >= cycles - cycles / 50 && counted <= seen,
        "{mode}: {bpf}"
    );
    // The trace's switch-ins it did not log are taken at the thread's
    // next event: where they are more than 1%, its median is later.
    let inferred = t["switch_ins_inferred"].as_u64().unwrap_or(0);
    assert!(k_p50 <= t_p50, "{mode}: {bpf}");
    assert!(
        inferred * 100 > seen || t_p50 < k_p50 + 2_000,
        "{mode}: {bpf}"
    );
    assert!(k_max <= t_max + CLOCK_SLACK_NS, "{mode}: {bpf}");
}

#[test]
fn a_thread_woken_by_a_condition_variable_is_measured_and_its_waker_named() {
    let test = test_name!();
    let _machine = crate::fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let Some((cyclic, _)) = ready(test, dir.path()) else {
        return;
    };
    let cpu = *online_cpus().last().unwrap();
    let (r, own) = measure(dir.path(), &cyclic, "cond", 500, cpu, &[]);
    let threads = r["task_latency"][0]["threads"].as_array().unwrap();
    // The waiter: woken by the signaller once per cycle.
    let waiter = threads
        .iter()
        .find(|t| {
            t["wakers"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w[0].as_str().unwrap().starts_with("signaller-"))
        })
        .unwrap_or_else(|| panic!("no thread woken by the signaller: {}", brief(&r)));
    let by_signaller: u64 = waiter["wakers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w[0].as_str().unwrap().starts_with("signaller-"))
        .map(|w| w[1].as_u64().unwrap())
        .sum();
    // Every cycle that slept (the signal did not come first), exactly.
    let slept = std::fs::read_to_string(dir.path().join("cond.own"))
        .unwrap()
        .lines()
        .filter(|l| l.ends_with(" 1"))
        .count();
    assert_eq!(by_signaller, slept as u64, "{}", waiter["wakers"]);
    // The program's own figure (signal to its clock read) is never below
    // rtlab's wake-to-run, and close on the median.
    let mut mine: Vec<i64> = waiter["wake_up_samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["waker"].as_str().unwrap().starts_with("signaller-"))
        .map(|w| w["wake_to_run_ns"].as_i64().unwrap())
        .collect();
    let mut theirs: Vec<i64> = own.iter().map(|o| o.1).collect();
    mine.sort_unstable();
    theirs.sort_unstable();
    let (m, t) = (mine[mine.len() / 2], theirs[theirs.len() / 2]);
    eprintln!("cond: median wake-to-run {m} ns, the program's own {t} ns");
    assert!(
        m <= t + CLOCK_SLACK_NS && t - m <= MEDIAN_AGREEMENT_NS,
        "rtlab {m} vs own {t}"
    );
    // The signaller itself is a cyclic thread of its own timer.
    let names: Vec<(&Value, &Value)> = threads
        .iter()
        .map(|t| (&t["comm"], &t["timer_wake_ups"]))
        .collect();
    assert!(
        threads
            .iter()
            .any(|t| t["comm"] == "signaller" && t["timer_wake_ups"].as_u64() >= Some(500)),
        "{names:?}"
    );
}

#[test]
fn late_wake_ups_under_a_pinned_higher_priority_hog_are_blamed_on_it() {
    let test = test_name!();
    let _machine = crate::fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let Some((cyclic, hog)) = ready(test, dir.path()) else {
        return;
    };
    let cpu = *online_cpus().last().unwrap();
    // FIFO 60 on the measured CPU, 1.5 ms of every 20 ms, from 0.5 s on.
    let mut hog = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "sleep 0.5; exec taskset -c {cpu} {} 60 1500 20000 2",
            hog.display()
        ))
        .spawn()
        .unwrap();
    let (r, own) = measure(
        dir.path(),
        &cyclic,
        "sleep",
        2000,
        cpu,
        &["--threshold", "500us"],
    );
    let _ = hog.wait();
    let matched = agrees("sleep under a hog", &r, &own);
    let late_by_hog = matched
        .iter()
        .filter(|(own, w)| *own > HELD_NS && w["timer_late_ns"].as_i64() < Some(100_000))
        .count();
    assert!(
        late_by_hog > 0,
        "the hog delayed no wake-up by 0.4 ms: {}",
        brief(&r)
    );
    let t = busiest(&r);
    let explained = t["explained"].as_array().unwrap();
    assert!(!explained.is_empty(), "{}", brief(&r));
    let mut blamed = 0;
    for e in explained {
        let w = &e["wake_up"];
        let parts: u64 = e["parts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[1].as_u64().unwrap())
            .sum();
        assert_eq!(
            Some(parts),
            w["latency_ns"].as_u64(),
            "the parts add up: {e}"
        );
        // Held off its CPU for a millisecond after a timely timer: only the
        // hog, at a higher priority on that CPU, can have done it.
        // A timer wake-up held off its CPU after a timely timer, by a
        // task: only the hog, above it on that CPU, can have done it. (An
        // interrupt or softirq may be named; never another task.)
        let blame = e["blame"].as_str().unwrap_or("");
        // A timer itself late by more than the hold (a vCPU not run, seen
        // in CI: 2.7 ms late, then 1.5 ms of the hog) makes the timer the
        // larger part, and nobody the one to blame.
        let timely = w["timer_late_ns"].as_u64() < Some(HELD_NS as u64);
        if w["kind"] == "timer" && timely && w["wake_to_run_ns"].as_u64() > Some(HELD_NS as u64) {
            let by_irq = blame.starts_with("IRQ ") || blame.starts_with("softirq ");
            // A stretch with no event at all (a vCPU the hypervisor did
            // not run) blames nobody: seen once in CI.
            let unseen = e["blame"].is_null() && e.to_string().contains("(no event)");
            assert!(blame.starts_with("hog-") || by_irq || unseen, "{e}");
            blamed += usize::from(blame.starts_with("hog-"));
        }
    }
    assert!(
        blamed > 0,
        "no explained wake-up was held off by the hog: {}",
        brief(&r)
    );
}

#[test]
fn both_trace_readers_give_the_same_events_on_this_kernels_buffer() {
    let test = test_name!();
    let _machine = crate::fixtures::machine_exclusive();
    if !crate::trace_experiments::can_trace(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let o = rtlab(
        dir.path(),
        &[
            "trace-readers",
            "--buffer-kb",
            "256",
            "--record-ms",
            "300",
            "--rounds",
            "2",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let rows: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert!(!rows.is_empty());
    for r in rows {
        assert_eq!(r["differences"], serde_json::json!([]), "{r}");
        assert_eq!(r["text_events"], r["raw_events"], "{r}");
    }
    // The napping thread's CPU filled its buffer: fields were compared,
    // and what rtlab makes of them: the audit's rows (names included) and
    // the explanations of its wake-ups (the differences above are empty).
    let sum = |key: &str| -> u64 { rows.iter().map(|r| r[key].as_u64().unwrap()).sum() };
    assert!(sum("compared_fields") > 100, "{rows:?}");
    assert!(sum("audit_rows") > 0, "{rows:?}");
    assert!(sum("windows") > 0, "{rows:?}");
}

/// The tracepoints the result says this kernel lacks.
fn lacks(r: &Value, event: &str) -> bool {
    r["task_latency"][0]["notes"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|n| n.as_str().is_some_and(|n| n.contains(event)))
}

#[test]
fn the_timer_slack_a_program_sets_is_reported_as_its_own_part_exactly() {
    let test = test_name!();
    let _machine = crate::fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let Some((cyclic, _)) = ready(test, dir.path()) else {
        return;
    };
    let cpu = *online_cpus().last().unwrap();
    // SCHED_OTHER (a real-time thread has no slack), 200 µs of slack.
    let (r, own) = measure_as(
        dir.path(),
        &cyclic,
        ("sleep", 300, &["0", "200000"]),
        cpu,
        &[],
    );
    if lacks(&r, "hrtimer_start") || lacks(&r, "hrtimer_expire_entry") {
        path_taken(
            test,
            "this kernel lacks the hrtimer tracepoints: no timer to read",
        );
        return;
    }
    // What the kernel gave the program (PR_GET_TIMERSLACK), in ns.
    let set: u64 = std::fs::read_to_string(dir.path().join("sleep.own.slack"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(set, 200_000);
    let t = busiest(&r);
    let by_expiry: HashMap<i64, &Value> = t["wake_up_samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["kind"] == "timer")
        .map(|w| (w["expiry_ns"].as_i64().unwrap(), w))
        .collect();
    // Every cycle is found by its requested expiry, armed with exactly the
    // slack set, and its latency counts from that requested expiry: never
    // above the program's own.
    for &(expiry, lateness) in &own {
        let w = by_expiry
            .get(&expiry)
            .unwrap_or_else(|| panic!("no wake-up of expiry {expiry}: {}", brief(&r)));
        assert_eq!(w["timer_slack_ns"].as_u64(), Some(set), "{w}");
        let latency = w["latency_ns"].as_i64().unwrap();
        assert!(
            latency <= lateness + CLOCK_SLACK_NS,
            "{latency} > {lateness}"
        );
        // The lateness past the slack is part of the latency, the slack
        // used the rest before the wake-up.
        assert!(w["timer_late_ns"].as_i64() <= Some(latency), "{w}");
    }
    let slack = &t["timer_slack"];
    assert_eq!(
        (slack["min_ns"].as_u64(), slack["max_ns"].as_u64()),
        (Some(set), Some(set)),
        "{}",
        brief(&r)
    );
    eprintln!(
        "slack {set} ns: timer late p50 {} ns, latency p50 {} ns",
        t["timer_late"]["percentiles"][0]["value_ns"], t["latency"]["percentiles"][0]["value_ns"]
    );
}

/// rtlab's threads' TIDs, and the CPUs each of its threads and of its
/// children but the measured program may run on (name, CPUs), as the
/// kernel has them now.
fn rtlab_and_helpers(pid: u32, program: &str) -> (Vec<u32>, Vec<(String, Vec<usize>)>) {
    let tasks: Vec<std::path::PathBuf> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|t| t.path())
        .collect();
    let tids = tasks
        .iter()
        .filter_map(|t| t.file_name()?.to_str()?.parse().ok())
        .collect();
    let mut allowed = crate::trace_experiments::allowed_cpus(pid);
    for t in &tasks {
        let children = std::fs::read_to_string(t.join("children")).unwrap_or_default();
        for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
            allowed.extend(
                crate::trace_experiments::allowed_cpus(child)
                    .into_iter()
                    .filter(|(name, _)| name != program),
            );
        }
    }
    (tids, allowed)
}

#[test]
fn rtlab_keeps_its_own_threads_off_the_measured_cpu_and_is_never_blamed() {
    kept_off(test_name!(), false);
}

#[test]
fn rtlab_keeps_off_the_cpu_of_a_task_given_by_pid() {
    // The new-user check: with `--pid`, rtlab's main thread ran on the
    // pinned task's CPU (970 switch-ins in 6 s) and was blamed.
    kept_off(test_name!(), true);
}

/// A child killed and reaped when dropped (a test that fails leaves none).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// task-latency of a SCHED_OTHER loop on the last CPU, started by rtlab
/// (`--cpu`) or by the test, pinned there, and given by PID: rtlab's
/// threads and helpers are never allowed on that CPU nor blamed, and
/// `rtlab explain` of the result says nothing of timer threads.
fn kept_off(test: &str, by_pid: bool) {
    let _machine = crate::fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let Some((cyclic, _)) = ready(test, dir.path()) else {
        return;
    };
    let cpus = online_cpus();
    let measured = *cpus.last().unwrap();
    let own = dir.path().join("own");
    let mut program = None;
    let mut rtlab = Command::new(env!("CARGO_BIN_EXE_rtlab"));
    rtlab
        .args(["task-latency", "--duration", "3s", "--period", "1ms"])
        .args(["--threshold", "1us", "--json", "a.json"]);
    if by_pid {
        let p = Command::new("taskset")
            .args(["-c", &measured.to_string()])
            .arg(&cyclic)
            .args(["sleep", "1000", "6000"])
            .arg(&own)
            .arg("0")
            .spawn()
            .unwrap();
        let pid = p.id();
        rtlab.args(["--pid", &pid.to_string()]);
        program = Some(Killed(p));
        // rtlab plans from the task's affinity: wait for taskset's.
        let pinned = || {
            let threads = crate::trace_experiments::allowed_cpus(pid);
            !threads.is_empty() && threads.iter().all(|(_, cpus)| cpus == &vec![measured])
        };
        let since = std::time::Instant::now();
        while !pinned() && since.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    } else {
        rtlab.args(["--cpu", &measured.to_string(), "--"]);
        rtlab
            .arg(&cyclic)
            .args(["sleep", "1000", "2000"])
            .arg(&own)
            .arg("0");
    }
    let child = rtlab
        .current_dir(dir.path())
        .env("RTLAB_JOURNAL_DIR", dir.path().join("journal"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let (tids, seen) = rtlab_and_helpers(child.id(), "cyclic");
    let out = child.wait_with_output().unwrap();
    drop(program);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");
    let r: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("a.json")).unwrap()).unwrap();
    if cpus.len() == 1 {
        // Nowhere else to go: said, not hidden (a task pinned to the one
        // CPU there is runs anywhere rtlab can).
        let warnings = r["warnings"].to_string();
        assert!(
            by_pid || warnings.contains("may run on measured CPU"),
            "{warnings}"
        );
        path_taken(
            test,
            "one CPU: rtlab stays on the measured CPU, and the run says so",
        );
        return;
    }
    assert!(stderr.contains("off the measured CPU(s)"), "{stderr}");
    assert!(!stderr.contains("may run on a measured CPU"), "{stderr}");
    assert!(seen.iter().any(|(n, _)| n == "rtlab"), "{seen:?}");
    for (name, allowed) in &seen {
        assert!(
            !allowed.contains(&measured),
            "{name} may run on measured CPU {measured}: {allowed:?}"
        );
    }
    // And no explained wake-up names any thread of rtlab.
    let mut explained = 0;
    for t in r["task_latency"][0]["threads"].as_array().unwrap() {
        for e in t["explained"].as_array().unwrap() {
            explained += 1;
            for part in e["parts"].as_array().unwrap() {
                let label = part[0].as_str().unwrap();
                assert!(
                    !tids.iter().any(|tid| label.ends_with(&format!("-{tid}"))),
                    "rtlab is blamed: {e}"
                );
            }
        }
    }
    assert!(explained > 0, "{}", brief(&r));
    let shown = Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args(["explain", "a.json"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout).to_string();
    assert!(
        !shown.contains("Why late"),
        "no timer thread, no verdict on one: {shown}"
    );
    path_taken(
        test,
        &format!(
            "CPU {measured} measured; rtlab's and its helpers' {} threads kept off it, {explained} wake-ups explained without rtlab",
            seen.len()
        ),
    );
}

/// The thread that runs the cycle in a result: (TID, deadline misses).
fn misses_of(r: &Value) -> Vec<(u64, u64)> {
    r["task_latency"][0]["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| Some((t["tid"].as_u64()?, t["deadline_misses"].as_u64()?)))
        .collect()
}

/// `--fail-if 'deadline_misses>0'` on a task-latency run: a 1 µs deadline
/// (the least rtlab takes) is missed by cycles that each hold a timer
/// interrupt, a wake-up and two context switches, so the run fails with
/// status 6 and the verdict gives the result's own count; the final live
/// table shows the same count; a loose deadline's run gets the status its
/// result says (0 when no cycle missed); and on the first result, the gate
/// at its exact count passes with `>` and fails with `>=`.
#[test]
fn a_deadline_miss_gate_fails_the_run_that_misses_and_passes_the_one_that_holds() {
    let test = test_name!();
    let _machine = crate::fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let Some((cyclic, _)) = ready(test, dir.path()) else {
        return;
    };
    let cpu = online_cpus().last().unwrap().to_string();
    let own = dir.path().join("own.txt");
    let run = |deadline: &str, json: &str| {
        rtlab(
            dir.path(),
            &[
                "task-latency",
                "--duration",
                "3s",
                "--period",
                "1ms",
                "--deadline",
                deadline,
                "--cpu",
                &cpu,
                "--json",
                json,
                "--fail-if",
                "deadline_misses>0",
                "--",
                cyclic.to_str().unwrap(),
                "sleep",
                "1000",
                "500",
                own.to_str().unwrap(),
                "50",
            ],
        )
    };
    let read = |json: &str| -> Value {
        serde_json::from_slice(&std::fs::read(dir.path().join(json)).unwrap()).unwrap()
    };
    let o = run("1us", "tight.json");
    let tight = read("tight.json");
    let misses = misses_of(&tight);
    let total: u64 = misses.iter().map(|m| m.1).sum();
    assert!(total > 0, "{}", brief(&tight));
    assert_eq!(o.status.code(), Some(6), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains(&format!(
            "FAIL deadline_misses>0: tight deadline_misses is {total}"
        )),
        "{stdout}"
    );
    // The final table's Misses column is the result's.
    for (tid, n) in &misses {
        let row = stdout
            .lines()
            .find(|l| {
                l.starts_with("  L0") && l.split_whitespace().nth(1) == Some(&tid.to_string())
            })
            .unwrap_or_else(|| panic!("no row of TID {tid} in\n{stdout}"));
        assert_eq!(
            row.split_whitespace().nth(7),
            Some(n.to_string().as_str()),
            "{row}"
        );
    }
    // The same gate on the same figures through compare, at the count.
    let gate = |cond: &str| {
        rtlab(dir.path(), &["compare", "tight.json", "--fail-if", cond])
            .status
            .code()
    };
    assert_eq!(gate(&format!("deadline_misses>{total}")), Some(0));
    assert_eq!(gate(&format!("deadline_misses>={total}")), Some(6));
    // A loose deadline: the status is what its result says.
    let o = run("900ms", "loose.json");
    let loose: u64 = misses_of(&read("loose.json")).iter().map(|m| m.1).sum();
    let expected = if loose == 0 { 0 } else { 6 };
    assert_eq!(o.status.code(), Some(expected), "{}", text(&o));
    let verdict = if loose == 0 { "pass" } else { "FAIL" };
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(&format!(
            "{verdict} deadline_misses>0: loose deadline_misses is {loose}"
        )),
        "{}",
        text(&o)
    );
    path_taken(
        test,
        &format!(
            "1 µs deadline: {total} misses, status 6; 900 ms deadline: {loose} misses, status {expected}"
        ),
    );
}

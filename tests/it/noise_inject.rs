//! Injected interrupts are classified as interrupts: a periodic 1 kHz
//! timerfd armed on the measured CPU (its timer interrupt fires there,
//! re-armed in the interrupt), its reader a SCHED_IDLE thread of that CPU
//! (which the poller's SCHED_OTHER never yields to at a wake-up), measured
//! end to end by `rtlab noise`. Truth: the timer's expiries, known from its
//! arming. A gap of 5 µs or more, shorter than the timer's period, that
//! holds one is injected, unless no event at all ran in it (`hw`: the host
//! held the vCPU across the expiry, and the interrupt came after the gap,
//! counted apart) or another task ran in it (its run held the expiry);
//! at least 95% of the injected must be `irq`. (A gap as
//! long as the period holds an expiry whatever took it.) (Armed there and read from another CPU, the kernel may move
//! the timer off the measured CPU: then the gaps at its expiries are the
//! host's, `hw`, as this VM showed.)

use crate::fixtures::{self, path_taken, text};
use rtlab::sys::os;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Arms a 1 kHz timerfd on `cpu` and reads it there as SCHED_IDLE until
/// `stop`: the first expiry (CLOCK_MONOTONIC ns), how many it read, and
/// its TID.
fn timer_on(cpu: usize, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Option<(u64, u64, i32)>> {
    std::thread::spawn(move || {
        os::set_affinity(0, &[cpu]).ok()?;
        let idle = rtlab::sched::Sched {
            policy: rtlab::sched::Policy::Idle,
            priority: 0,
        };
        os::set_sched(0, idle).ok()?;
        let first = os::monotonic_ns() + 200_000_000;
        let fd = os::timerfd::periodic_timerfd(first, 1_000_000).ok()?;
        let mut expiries = 0;
        while !stop.load(Ordering::Relaxed) {
            expiries += os::timerfd::timerfd_wait(&fd).ok()?;
        }
        Some((first, expiries, os::gettid()))
    })
}

#[test]
fn a_timer_interrupt_injected_on_the_measured_cpu_is_irq_noise() {
    let test = test_name!();
    if !fixtures::is_root() {
        path_taken(test, "not root: no trace, no attribution");
        return;
    }
    let online = fixtures::online_cpus();
    let cpu = fixtures::measured_cpu();
    let _machine = fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let timer = timer_on(cpu, stop.clone());
    let out = fixtures::rtlab_in(
        dir.path(),
        &[
            "noise",
            &cpu.to_string(),
            "--duration",
            "3s",
            "--json",
            "n.json",
        ],
    );
    stop.store(true, Ordering::Relaxed);
    let (first, expiries, reader) = timer.join().unwrap().expect("the timerfd");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("n.json")).unwrap()).unwrap();
    let a = &r["noise"][0]["attribution"];
    if a.is_null() {
        path_taken(
            test,
            &format!(
                "no attribution here: {}",
                r["noise"][0]["attribution_unavailable"]
            ),
        );
        return;
    }
    assert_eq!(a["listed_left_out"].as_u64(), Some(0), "every gap listed");
    let at = |k: u64| first + k * 1_000_000;
    // The gaps that hold an expiry (the interrupt follows it within a few
    // µs; the gap ends after it).
    let mut injected = 0u64;
    let mut irq = 0u64;
    let mut host = 0u64;
    let mut other_tasks = 0u64;
    let mut others = Vec::new();
    for g in a["listed"].as_array().unwrap() {
        let (start, ns) = (g["start_ns"].as_u64().unwrap(), g["ns"].as_u64().unwrap());
        let end = start + ns;
        if end < first {
            continue;
        }
        // The first expiry at or after the gap's start less 20 µs.
        let k = (start.saturating_sub(20_000).saturating_sub(first)).div_ceil(1_000_000);
        if at(k) > end || ns >= 1_000_000 {
            continue;
        }
        if g["class"] == "hw" {
            host += 1;
            continue;
        }
        // Another task's run that an expiry fell into (a build, a
        // kworker) is that task's gap; the reader's own run is counted
        // against the interrupt.
        let pid = g["pid"].as_i64();
        if g["class"] == "thread" && pid.is_some_and(|p| p != i64::from(reader)) {
            other_tasks += 1;
            continue;
        }
        injected += 1;
        match g["class"].as_str() {
            Some("irq") => irq += 1,
            other => others.push((other.map(str::to_string), ns)),
        }
    }
    assert!(expiries > 1000, "{expiries} expiries");
    assert!(
        injected > 0,
        "no gap of 5 µs held an expiry: {}",
        text(&out)
    );
    assert!(
        irq * 100 >= injected * 95,
        "{irq} of {injected} irq; others {others:?}; culprits {}",
        a["culprits"]
    );
    let timer_row = a["culprits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["class"] == "irq" && c["name"] == "local_timer");
    assert!(
        timer_row.is_some() || !online.is_empty() && std::env::consts::ARCH != "x86_64",
        "{a}"
    );
    path_taken(
        test,
        &format!(
            "{expiries} expiries of a 1 kHz timerfd armed on CPU {cpu}: {injected} gaps ≥ 5 µs held one and an event, {irq} of them irq; {host} more held one and no event (the host's), {other_tasks} were other tasks' runs"
        ),
    );
}

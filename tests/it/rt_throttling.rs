//! A timer thread held off by the kernel's RT throttling (a FIFO spinner
//! on the measured CPU uses up `sched_rt_runtime_us`) is explained as held
//! off, never blamed on the spinner; a VM's stalls are told apart by the
//! CPU's steal time. Needs root and tracefs (else says so); holds the
//! machine alone.

use crate::fixtures::{
    fifo_timer as timer, load_cpu, machine_exclusive, measured_cpu, path_taken, run_json as run,
    text,
};
use serde_json::Value;

#[test]
fn a_timer_thread_held_off_by_rt_throttling_is_explained_so() {
    let test = test_name!();
    let _machine = machine_exclusive();
    if !crate::trace_experiments::can_trace(test) {
        return;
    }
    // RT throttling: real-time tasks get sched_rt_runtime_us of every
    // sched_rt_period_us; a FIFO spinner on the measured CPU uses it up,
    // and the kernel then holds every real-time task there off.
    let read = |f: &str| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{f}"))
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
    };
    let (runtime, period) = (read("sched_rt_runtime_us"), read("sched_rt_period_us"));
    if !runtime.zip(period).is_some_and(|(r, p)| r >= 0 && r < p) {
        path_taken(
            test,
            "RT throttling is off on this machine: nothing to hold off",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!(
        "main {{\n cpu_affinity {}\n trace.threshold 2 ms\n}}\n\
         program[0] {{\n cmdline rtlab hog\n output.out /dev/null\n cpu_affinity {}\n \
         sched.policy FIFO\n sched.priority 50\n}}\n{}",
        load_cpu(),
        measured_cpu(),
        timer("lifetime.duration 3 s")
    );
    let steal_before = crate::fixtures::steal_ticks(measured_cpu());
    let (o, r) = run(dir.path(), "throttled", &cfg);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // The hypervisor's own count of the time it did not run this vCPU.
    let host_stalled = crate::fixtures::steal_ticks(measured_cpu()) > steal_before;
    let hog = r["programs"][0]["first_pid"].as_i64().unwrap();
    let long: Vec<&Value> = r["trace"]["explanations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["latency_ns"].as_u64() >= Some(10_000_000))
        .collect();
    if long.is_empty() {
        path_taken(
            test,
            "no wake-up 10 ms late: this kernel did not throttle (the fair server, or no \
             throttling at all)",
        );
        return;
    }
    // The spinner is never the thread that kept the timer thread waiting
    // (it was throttled too): the time is held off, or a normal task ran,
    // which only RT throttling allows. A VM's vCPU the hypervisor did not
    // run is late too: its time is unseen (the spinner named, not blamed),
    // or, when the stall fell inside an interrupt handler, the handler's
    // (a 14.8 ms local timer interrupt in CI): allowed only when the
    // CPU's steal time grew during the run.
    let (mut held, mut stalled) = (0, 0);
    for e in &long {
        let main = e["parts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["kind"] != "timer_thread" && p["kind"] != "tracing")
            .unwrap();
        match main["kind"].as_str() {
            Some("held_off") => held += 1,
            Some("thread") => assert!(
                main["pid"].as_i64() != Some(hog)
                    && main["prio"].as_i64() >= Some(100)
                    && e["cause"].as_str().unwrap().contains("RT throttling"),
                "{e}"
            ),
            Some("unseen" | "timer_late" | "timer_late_idle") => stalled += 1,
            Some("irq") if host_stalled => stalled += 1,
            _ => panic!("a throttled wake-up filed otherwise (steal grew: {host_stalled}): {e}"),
        }
    }
    path_taken(
        test,
        &format!(
            "{} wake-ups 10 ms late or more; {held} explained as held off, {stalled} as a late \
             interrupt or one stalled (the hypervisor; steal grew: {host_stalled})",
            long.len()
        ),
    );
    // Throttling happened (a wake-up 10 ms late that no stall explains):
    // it is said.
    assert!(held > 0 || stalled == long.len(), "{long:?}");
}

//! The IRQ side of each timer thread's wake-up (`irq_latency`) on the real
//! kernel: found for each of the thread's sleeps, below the thread's own
//! latency at every percentile, and beside it in the report. Needs root and
//! tracefs (else says so); holds the machine alone.

use crate::fixtures::{
    fifo_timer as timer, is_root, leftover_instances, load_cpu, machine_exclusive,
    rtlab_in as rtlab, run_json as run, text,
};
use serde_json::Value;

#[test]
fn the_irq_side_of_each_wake_up_is_below_the_threads_own() {
    let _machine = machine_exclusive();
    if !is_root() || !crate::trace_experiments::can_trace("irq_side") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!(
        "main {{\n cpu_affinity {}\n irq_latency\n}}\n{}",
        load_cpu(),
        timer("lifetime.duration 2 s")
    );
    let (o, r) = run(dir.path(), "irq", &cfg);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(leftover_instances(), Vec::<String>::new());
    let thread = &r["timers"][0]["summary"];
    let [irq] = &r["timer_irq"].as_array().unwrap()[..] else {
        panic!("{}", r["timer_irq"])
    };
    let irq = &irq["latency"];
    // Each sleep of the thread is found with its timer's handling: as many
    // as the thread counted, give or take the last one.
    let (n, m) = (
        thread["samples"].as_u64().unwrap(),
        irq["samples"].as_u64().unwrap(),
    );
    assert!(m <= n + 1 && m + 2 >= n, "thread {n}, IRQ side {m}");
    // The interrupt comes before the thread runs: its side is below the
    // thread's own clock at every percentile (the thread reads its clock
    // after the interrupt, the wake-up and the switch).
    let pct = |s: &Value, name: &str| {
        s["percentiles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()["value_ns"]
            .as_u64()
            .unwrap()
    };
    for p in ["p50", "p90", "p99"] {
        assert!(pct(irq, p) <= pct(thread, p), "{p}: {irq} vs {thread}");
    }
    assert!(irq["max_ns"].as_u64() <= thread["max_ns"].as_u64());
    // Beside the thread in every output: the report's table.
    let o = rtlab(dir.path(), &["report", "irq.json", "-o", "irq.html"]);
    assert!(o.status.success(), "{}", text(&o));
    let html = std::fs::read_to_string(dir.path().join("irq.html")).unwrap();
    assert!(html.contains("T0.irq"));
}

//! The warm-up (`main`'s `warmup`) and `main`'s lifetime on the real
//! kernel: the warm-up's wake-ups are not counted, `main`'s lifetime
//! counts after it, and a run cut short by `main`'s lifetime says so.
//! Shares the machine.

use crate::fixtures::{fifo_timer as timer, machine_shared, measured_cpu, run_json as run, text};

#[test]
fn a_warm_up_is_not_counted() {
    let _shared = machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!(
        "main {{\n warmup 300 ms\n}}\n{}",
        timer("lifetime.duration 500 ms")
    );
    let (o, r) = run(dir.path(), "warm", &cfg);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // The lifetime counts from the warm-up's end: 500 deadlines of 1 ms
    // (fewer if the thread overran some).
    let t = &r["timers"][0]["summary"];
    let (samples, missed) = (
        t["samples"].as_u64().unwrap(),
        t["missed_periods"].as_u64().unwrap(),
    );
    assert_eq!(samples + missed, 500, "{t}");
    assert_eq!(r["plan"]["main"]["warmup_ns"], 300_000_000);
}

/// A timer thread of this run at SCHED_OTHER (no root needed).
fn other_timer(extra: &str) -> String {
    format!(
        "timer_thread[0] {{\n cpu_affinity {}\n timer.period 1 ms\n {extra}\n}}\n",
        measured_cpu()
    )
}

/// `main`'s `lifetime.duration` counts after the warm-up: a thread whose
/// 1000 loops (1 s) fit in the 2 s lifetime takes them all after its 1 s
/// warm-up (when the lifetime counted from the start, the run ended at
/// 2 s with the thread short of its loops, and said "completed").
#[test]
fn a_warm_up_comes_before_mains_lifetime() {
    let _shared = machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!(
        "main {{\n warmup 1 s\n lifetime.duration 2 s\n}}\n{}",
        other_timer("lifetime.loops 1000")
    );
    let (o, r) = run(dir.path(), "warm-life", &cfg);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(r["end"]["kind"], "completed", "{}", text(&o));
    assert_eq!(r["plan"]["main"]["warmup_ns"], 1_000_000_000u64);
    assert_eq!(r["plan"]["main"]["lifetime_ns"], 2_000_000_000u64);
    assert_eq!(r["timers"][0]["summary"]["samples"], 1000, "{}", text(&o));
}

/// A run that `main`'s lifetime ends before a timer thread's own never
/// says "completed": the end says what each thread measured (its
/// deadlines times its period, from its own counts) and what it asked.
#[test]
fn a_run_cut_short_by_mains_lifetime_says_so() {
    let _shared = machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!(
        "main {{\n warmup 200 ms\n lifetime.duration 300 ms\n}}\n{}",
        other_timer("lifetime.duration 1 min")
    );
    let (o, r) = run(dir.path(), "cut", &cfg);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let end = &r["end"];
    assert_eq!(end["kind"], "cut_short", "{end}");
    assert_eq!(end["lifetime_ns"], 300_000_000u64, "{end}");
    let cut = &end["threads"][0];
    assert_eq!(
        (cut["index"].as_u64(), cut["asked_ns"].as_u64()),
        (Some(0), Some(60_000_000_000))
    );
    let t = &r["timers"][0]["summary"];
    let deadlines = t["samples"].as_u64().unwrap() + t["missed_periods"].as_u64().unwrap();
    assert_eq!(
        cut["measured_ns"].as_u64(),
        Some(deadlines * 1_000_000),
        "{end}"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            "rtlab: run cut short by main's lifetime.duration 0.3 s: timer_thread[0] measured "
        ),
        "{err}"
    );
    assert!(err.contains(" of the 60.0 s it asked"), "{err}");
    assert!(!text(&o).contains("completed"), "{}", text(&o));
}

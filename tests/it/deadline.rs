//! SCHED_DEADLINE timer threads on the real kernel: one measures like a
//! FIFO one, and a pinned one either runs or is refused before the start
//! (admission control). Needs root (else checks the refusal); shares the
//! machine.

use crate::fixtures::{is_root, machine_shared, measured_cpu, path_taken, run_json as run, text};

#[test]
fn a_deadline_timer_thread_measures_like_a_fifo_one() {
    let _shared = machine_shared();
    let dir = tempfile::tempdir().unwrap();
    // Unpinned: admission control accepts it on any kernel with the policy.
    let cfg = "timer_thread[0] {\n sched.deadline 100us:1ms\n timer.period 1 ms\n lifetime.duration 1 s\n}\n";
    let (o, r) = run(dir.path(), "dl", cfg);
    if !is_root() {
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains("needs root"), "{}", text(&o));
        path_taken("deadline", "not root: the refusal checked");
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = &r["timers"][0];
    assert_eq!(
        t["deadline"],
        serde_json::json!({"runtime_ns": 100_000, "deadline_ns": 1_000_000, "period_ns": 1_000_000})
    );
    let s = &t["summary"];
    assert_eq!(
        s["samples"].as_u64().unwrap() + s["missed_periods"].as_u64().unwrap(),
        1000,
        "{s}"
    );
    assert!(s["min_ns"].as_u64().unwrap() <= s["max_ns"].as_u64().unwrap());
    // Pinned to one CPU: the kernel's admission control refuses it unless
    // it is off (or the CPU is its own root domain); rtlab says so before
    // the start.
    let pinned = format!(
        "timer_thread[0] {{\n cpu_affinity {}\n sched.deadline 100us:1ms\n lifetime.duration 200 ms\n}}\n",
        measured_cpu()
    );
    let (o, r) = run(dir.path(), "pinned", &pinned);
    match o.status.code() {
        Some(0) => {
            assert_eq!(r["timers"][0]["cpus"], serde_json::json!([measured_cpu()]));
            path_taken(
                "deadline",
                "admission control lets a pinned DEADLINE thread run here",
            );
        }
        _ => {
            assert_eq!(o.status.code(), Some(2), "{}", text(&o));
            assert!(text(&o).contains("pinned.cfg:3:"), "{}", text(&o));
            assert!(text(&o).contains("admission control"), "{}", text(&o));
            assert!(r.is_null(), "nothing was started");
        }
    }
}

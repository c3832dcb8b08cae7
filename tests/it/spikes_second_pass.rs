//! The explanation's second pass on the real kernel: actions at a late
//! wake-up (`on_spike`), the IRQ side of each timer thread beside its
//! latency (`irq_latency`), the warm-up, and the kernel stack of a thread
//! in a long kernel section (`trace.stacks`). What needs root and tracefs
//! checks rtlab's refusal elsewhere and says so.

use crate::fixtures::{
    is_root, leftover_instances, load_cpu, machine_exclusive, machine_shared, measured_cpu,
    path_taken, rtlab_in as rtlab, text,
};
use serde_json::Value;
use std::path::Path;

fn run(dir: &Path, name: &str, cfg: &str) -> (std::process::Output, Value) {
    std::fs::write(dir.join(format!("{name}.cfg")), cfg).unwrap();
    let json = format!("{name}.json");
    let o = rtlab(dir, &["run", &format!("{name}.cfg"), "--json", &json]);
    let r = std::fs::read(dir.join(&json))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    (o, r)
}

fn timer(extra: &str) -> String {
    format!(
        "timer_thread[0] {{\n cpu_affinity {}\n sched.policy FIFO\n sched.priority 90\n \
         timer.period 1 ms\n {extra}\n}}\n",
        measured_cpu()
    )
}

#[test]
fn a_command_runs_once_per_round_with_the_spikes_figures() {
    let _shared = machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("spikes.log");
    let script = dir.path().join("on-spike.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$RTLAB_SPIKE_TIMER $RTLAB_SPIKE_SAMPLE $RTLAB_SPIKE_LATENCY_NS\" >> {}\n",
            log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Every wake-up is a spike (1 µs): the rate limit decides the rounds.
    let cfg = format!(
        "main {{\n spikes.threshold 1 us\n on_spike run {}\n on_spike.every 400 ms\n}}\n{}",
        script.display(),
        timer("lifetime.duration 2 s")
    );
    let (o, r) = run(dir.path(), "act", &cfg);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let report = &r["on_spike"];
    let rounds = report["rounds"].as_array().unwrap();
    // At most one round per 400 ms of a 2 s run: the first at once, then
    // one per period at most.
    assert!((1..=6).contains(&rounds.len()), "{report}");
    let samples = r["timers"][0]["summary"]["samples"].as_u64().unwrap();
    assert_eq!(
        report["spikes"].as_u64(),
        Some(samples),
        "every wake-up is one"
    );
    assert_eq!(
        report["suppressed"].as_u64().unwrap() + rounds.len() as u64,
        samples
    );
    // Each round's program ran once (it ended before the run did, or was
    // waited for), with that round's figures in its environment.
    let lines = std::fs::read_to_string(&log).unwrap();
    let mut got: Vec<&str> = lines.lines().collect();
    let mut want: Vec<String> = rounds
        .iter()
        .map(|r| format!("0 {} {}", r["sample"], r["latency_ns"]))
        .collect();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
    assert!(
        rounds
            .iter()
            .all(|r| r["outcomes"][0].as_str().unwrap().contains("started")),
        "{report}"
    );
}

#[test]
fn a_stop_action_ends_the_run_at_the_first_spike_and_writes_its_result() {
    let _shared = machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!(
        "main {{\n spikes.threshold 1 us\n on_spike stop\n}}\n{}",
        timer("lifetime.duration 30 s")
    );
    let (o, r) = run(dir.path(), "stop", &cfg);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(r["end"]["kind"], "spike_stop", "{}", r["end"]);
    assert!(text(&o).contains("on_spike stop"), "{}", text(&o));
    // Stopped long before its 30 s: the main thread looks every 20 ms.
    let samples = r["timers"][0]["summary"]["samples"].as_u64().unwrap();
    assert!((1..29_000).contains(&samples), "{samples}");
}

#[test]
fn on_spike_is_refused_without_a_threshold_and_a_save_without_the_recorder() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!("main {{\n on_spike save\n}}\n{}", timer(""));
    let (o, _) = run(dir.path(), "refused", &cfg);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("refused.cfg:2:"), "{t}");
    assert!(t.contains("none is set"), "{t}");
    assert!(t.contains("no `trace.threshold`"), "{t}");
    let cfg = format!(
        "main {{\n spikes.threshold 1 ms\n on_spike signal 1 USR1\n}}\n{}",
        timer("")
    );
    let (o, _) = run(dir.path(), "signal", &cfg);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("signal.cfg:3:"), "{}", text(&o));
    assert!(text(&o).contains("`signal` needs a process ID above 1"));
}

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

#[test]
fn a_thread_in_a_long_kernel_section_is_shown_with_its_kernel_stack() {
    let _machine = machine_exclusive();
    if !is_root() || !crate::trace_experiments::can_trace("kernel_stack") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A FIFO 50 writer to compact_memory on the measured CPU (below the
    // timer thread): the kernel compacts with few preemption points.
    let script = dir.path().join("compact.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ni=0\nwhile [ $i -lt 2000 ]; do echo 1 > /proc/sys/vm/compact_memory; i=$((i+1)); done\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let hog = format!(
        "program[0] {{\n cmdline {}\n cpu_affinity {}\n sched.policy FIFO\n sched.priority 50\n}}\n",
        script.display(),
        measured_cpu()
    );
    let cfg = format!(
        "main {{\n cpu_affinity {}\n trace.threshold 40 us\n trace.stacks switch\n \
         trace.dump_tasks\n trace.event raw_syscalls/sys_enter\n}}\n{hog}{}",
        load_cpu(),
        timer("lifetime.duration 3 s")
    );
    let (o, r) = run(dir.path(), "stack", &cfg);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(leftover_instances(), Vec::<String>::new());
    let pid = r["programs"][0]["first_pid"].as_i64().unwrap();
    let explained = r["trace"]["explanations"].as_array().unwrap();
    // Every explanation says what each CPU ran at its deadline, once each,
    // the measured one among them.
    let online = crate::fixtures::online_cpus();
    for e in explained {
        let cpus: Vec<u64> = e["cpus_at_deadline"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["cpu"].as_u64().unwrap())
            .collect();
        let mut unique = cpus.clone();
        unique.dedup();
        assert_eq!(unique, cpus, "{e}");
        assert!(cpus.iter().all(|c| online.contains(&(*c as usize))), "{e}");
        assert!(cpus.contains(&(measured_cpu() as u64)), "{e}");
    }
    // The extra tracepoint is in the saved windows, where the kernel has it.
    let missing = r["trace"]["events_missing"].as_array().unwrap();
    if !explained.is_empty() && !missing.iter().any(|m| m == "raw_syscalls/sys_enter") {
        let any = explained.iter().any(|e| {
            let f = e["trace_text"].as_str().unwrap();
            std::fs::read_to_string(dir.path().join(f))
                .unwrap()
                .contains(" sys_enter: ")
        });
        assert!(any, "no window holds the extra tracepoint");
    }
    let stacks: Vec<&Value> = explained
        .iter()
        .flat_map(|e| e["stacks"].as_array().into_iter().flatten())
        .collect();
    if stacks.is_empty() {
        path_taken(
            "kernel_stack",
            "compaction kept no wake-up waiting on this machine: no stack to check",
        );
        return;
    }
    // Every stack is of a task that let the CPU go to the timer thread
    // (never idle), innermost first, from the scheduler, without the
    // tracing machinery's frames; the shell's are in compaction.
    for s in &stacks {
        assert_eq!(s["at"], "switch");
        assert_ne!(s["pid"], 0);
        let frames: Vec<&str> = s["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        assert!(
            !frames.iter().any(|f| f.starts_with("trace_event_raw")),
            "{frames:?}"
        );
        assert!(frames[0].contains("schedule"), "{frames:?}");
    }
    let shell: Vec<&&Value> = stacks.iter().filter(|s| s["pid"] == pid).collect();
    assert!(
        shell.iter().any(|s| s["frames"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f.as_str().unwrap().contains("compact"))),
        "{stacks:?}"
    );
}

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

/// Whether this kernel has the timerlat tracer and rtla is installed.
fn rtla_timerlat() -> Result<(), String> {
    let tracers = [
        "/sys/kernel/tracing/available_tracers",
        "/sys/kernel/debug/tracing/available_tracers",
    ]
    .iter()
    .find_map(|p| std::fs::read_to_string(p).ok())
    .ok_or("no tracefs mounted")?;
    if !tracers.split_whitespace().any(|t| t == "timerlat") {
        return Err(format!(
            "this kernel has no timerlat tracer (available: {})",
            tracers.trim()
        ));
    }
    if !crate::fixtures::has_command("rtla") {
        return Err("rtla is not installed".into());
    }
    Ok(())
}

#[test]
fn rtla_and_rtlab_blame_the_same_thread_for_a_known_spike() {
    let _machine = machine_exclusive();
    if !is_root() {
        path_taken(
            "rtla",
            "not root: rtla and rtlab's flight recorder need root",
        );
        return;
    }
    if let Err(why) = rtla_timerlat() {
        path_taken(
            "rtla",
            &format!("{why}: the side-by-side comparison with rtla is skipped"),
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cpu = measured_cpu();
    // The known spike: a FIFO 95 shell busy in bursts of about 2 ms on
    // the measured CPU, above both measuring threads (FIFO 90).
    let burst = "while :; do i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; sleep 0.05; done";
    let mut hog = std::process::Command::new("chrt")
        .args([
            "-f",
            "95",
            "taskset",
            "-c",
            &cpu.to_string(),
            "sh",
            "-c",
            burst,
        ])
        .spawn()
        .unwrap();
    let hog_pid = hog.id() as i64;
    // rtla: stop at the first thread latency over 500 µs and analyse it.
    let rtla = std::process::Command::new("rtla")
        .args([
            "timerlat",
            "top",
            "-q",
            "-c",
            &cpu.to_string(),
            "-P",
            "f:90",
            "-a",
            "500",
            "-d",
            "20s",
        ])
        .output()
        .unwrap();
    let cfg = format!(
        "main {{\n cpu_affinity {}\n trace.threshold 500 us\n}}\n{}",
        load_cpu(),
        timer("lifetime.duration 5 s")
    );
    let (o, r) = run(dir.path(), "side", &cfg);
    let _ = hog.kill();
    let _ = hog.wait();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let analysis = String::from_utf8_lossy(&rtla.stdout).to_string();
    // rtla names the blocking thread (`Blocking thread: sh:PID`, its stack
    // after); rtlab's main cause of its explained spikes is the same thread.
    let blocking = analysis.split("Blocking thread").nth(1).and_then(|rest| {
        rest.lines()
            .take(3)
            .find(|l| l.contains(':') && l.trim().len() > 1)
    });
    assert!(
        blocking.is_some_and(|b| b.contains("sh") && b.contains(&hog_pid.to_string())),
        "rtla said:\n{analysis}"
    );
    let explained = r["trace"]["explanations"].as_array().unwrap();
    assert!(!explained.is_empty(), "rtlab explained no spike");
    assert!(
        explained
            .iter()
            .any(|e| e["parts"][0]["pid"] == hog_pid && e["parts"][0]["kind"] == "thread"),
        "{explained:?}"
    );
}

/// Puts a sysctl back when dropped.
struct Restore(&'static str, String);

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0, &self.1);
    }
}

#[test]
fn hidden_kernel_addresses_are_said_and_never_shown() {
    let _machine = machine_exclusive();
    if !is_root() || !crate::trace_experiments::can_trace("kptr_restrict") {
        return;
    }
    const KPTR: &str = "/proc/sys/kernel/kptr_restrict";
    let Ok(before) = std::fs::read_to_string(KPTR) else {
        path_taken("kptr_restrict", "no kptr_restrict here");
        return;
    };
    let _restore = Restore(KPTR, before);
    // 2: /proc/kallsyms shows zeros even to root.
    if std::fs::write(KPTR, "2").is_err() {
        path_taken("kptr_restrict", "kptr_restrict cannot be set here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!(
        "main {{\n cpu_affinity {}\n trace.threshold 1 ms\n trace.stacks switch\n}}\n{}",
        load_cpu(),
        timer("lifetime.duration 300 ms")
    );
    let (o, r) = run(dir.path(), "hidden", &cfg);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let notes = r["trace"]["notes"].as_array().unwrap();
    // Said: the text was read, and why.
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("kptr_restrict")),
        "{notes:?}"
    );
    // The kernel's text, which names addresses itself, was read: no
    // frame is a raw address.
    for e in r["trace"]["explanations"].as_array().unwrap() {
        for s in e["stacks"].as_array().into_iter().flatten() {
            for f in s["frames"].as_array().unwrap() {
                let f = f.as_str().unwrap();
                let hex = f
                    .trim_start_matches("0x")
                    .chars()
                    .all(|c| c.is_ascii_hexdigit());
                assert!(!hex || f == "?", "{s}");
            }
        }
    }
}

#[test]
fn a_timer_thread_held_off_by_rt_throttling_is_explained_so() {
    const TEST: &str = "a_timer_thread_held_off_by_rt_throttling_is_explained_so";
    let _machine = machine_exclusive();
    if !crate::trace_experiments::can_trace(TEST) {
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
            TEST,
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
            TEST,
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
        TEST,
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

//! rtlab's flight recorder beside rtla's timerlat analysis (`rtla timerlat
//! top -a`) on one known spike, a FIFO shell busy in bursts on the measured
//! CPU: both blame the same thread. Needs root, the kernel's timerlat
//! tracer and rtla, else says which is missing; holds the machine alone.

use crate::fixtures::{
    fifo_timer as timer, is_root, load_cpu, machine_exclusive, measured_cpu, path_taken,
    run_json as run, text,
};

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

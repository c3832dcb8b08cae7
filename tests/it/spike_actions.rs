//! Actions at a late wake-up (`on_spike`) on the real kernel: a command
//! run once per round with the spike's figures in its environment, a stop
//! that ends the run at the first spike and still writes its result, and
//! the refusals of an action without what it needs. Shares the machine.

use crate::fixtures::{fifo_timer as timer, machine_shared, run_json as run, text};

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

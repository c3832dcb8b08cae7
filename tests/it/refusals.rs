//! Bad input of every family (experiment files, one-off options, the
//! loads' and cyclictest's options, result files) is refused before
//! anything starts: exit status 2, the place (FILE:LINE:COL with 1-based
//! columns, or the option), and a hint saying what would be accepted.
//! Needs nothing of the machine: each refusal comes before any privilege
//! or system setting is looked at.

use crate::fixtures::{self, text};
use std::path::Path;

/// `args` run in `dir`: refused with status 2, `place` and `problem` on
/// the first line, a hint containing `hint`; the whole stderr.
fn refused(dir: &Path, args: &[&str], place: &str, hint: &str) -> String {
    let o = fixtures::rtlab_in(dir, args);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
    let first = stderr.lines().next().unwrap_or_default();
    assert!(first.starts_with(place), "{args:?}: {stderr}");
    let hints: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("  hint: "))
        .collect();
    assert!(
        hints.first().is_some_and(|h| h.contains(hint)),
        "{args:?}: no hint with {hint:?}: {stderr}"
    );
    stderr
}

#[test]
fn bad_experiment_files_are_refused_at_their_place_with_a_hint() {
    let _machine = fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let timer = "timer_thread[0] {\n lifetime.loops 10\n}\n";
    let cases: [(&str, String, &str, &str); 7] = [
        (
            "huge.cfg",
            format!("main {{\n lifetime.duration 99999999999999 s\n}}\n{timer}"),
            "huge.cfg:2:20: error: `lifetime.duration`: duration",
            "584 years",
        ),
        (
            "nul.cfg",
            format!("{timer}program[0] {{\n cmdline echo a\0b\n}}\n"),
            "nul.cfg:5:16: error: a NUL byte",
            "remove the NUL",
        ),
        (
            "every.cfg",
            format!("main {{\n on_spike.every 0 ms\n}}\n{timer}"),
            "every.cfg:2:17: error: `on_spike.every`: must be at least 1ms",
            "`on_spike.every 1ms` or longer",
        ),
        (
            "pid.cfg",
            "task_latency[0] {\n task.pid 0\n}\n".into(),
            "pid.cfg:2:11: error: `task.pid`: 0 is out of range",
            "from 1",
        ),
        (
            "index.cfg",
            "timer_thread[99999999999999999999] {\n lifetime.loops 10\n}\n".into(),
            "index.cfg:1:1: error: `timer_thread[99999999999999999999]`",
            "a whole number from 0 to",
        ),
        (
            "loops.cfg",
            "timer_thread[0] {\n lifetime.loops many\n}\n".into(),
            "loops.cfg:2:17: error: `lifetime.loops`",
            "a whole number from 1 to",
        ),
        (
            "brace.cfg",
            format!("{timer}}}\n"),
            "brace.cfg:4:1: error: `}` without an open stanza",
            "remove this `}`",
        ),
    ];
    for (name, content, place, hint) in &cases {
        std::fs::write(dir.path().join(name), content).unwrap();
        refused(dir.path(), &["check", name], place, hint);
        refused(dir.path(), &["run", name], place, hint);
    }
    refused(
        dir.path(),
        &["run", "nosuch.cfg"],
        "rtlab: nosuch.cfg: cannot read",
        "the path of an experiment file",
    );
    refused(
        dir.path(),
        &["check", "."],
        "rtlab: .: not a regular file",
        "not a directory",
    );
    eprintln!("refusals: {} bad experiment files refused", cases.len() + 2);
}

#[test]
fn an_option_written_on_every_timer_thread_is_refused_once() {
    let _machine = fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    // One timer thread per online CPU, each with `timer.period 2x`.
    let stderr = refused(
        dir.path(),
        &["run", "--period", "2x"],
        "rtlab run: --period 2x: error: `timer.period`: unknown duration unit `x`",
        "durations take a unit",
    );
    assert_eq!(
        stderr.matches("unknown duration unit").count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("rtlab: 1 problem in rtlab run; nothing was started"),
        "{stderr}"
    );
    // A refused policy is the one problem: the default priority (99) is
    // not then judged against the OTHER policy nobody asked for.
    let stderr = refused(
        dir.path(),
        &["run", "--policy", "bogus"],
        "rtlab run: --policy bogus: error: `sched.policy`: unknown scheduling policy",
        "OTHER, FIFO, RR, BATCH, IDLE",
    );
    assert!(
        stderr.contains("rtlab: 1 problem in rtlab run; nothing was started"),
        "{stderr}"
    );
}

#[test]
fn bad_options_of_the_loads_and_cyclictest_are_refused_with_a_hint() {
    let _machine = fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str, &str); 11] = [
        (
            &["fix", "x.cfg", "--rounds", "1"],
            "rtlab: fix: --rounds 1: too few to decide: with 1 round of each state",
            "--rounds from 3 to 20",
        ),
        (
            &["fix", "x.cfg", "--rounds", "2"],
            "rtlab: fix: --rounds 2: too few to decide: with 2 rounds of each state",
            "--rounds from 3 to 20",
        ),
        (
            &["fix", "x.cfg", "--rounds", "21"],
            "rtlab: fix: --rounds 21: more than 20",
            "--rounds from 3 to 20",
        ),
        (
            &["load", "io", "--threads", "0"],
            "rtlab load io: --threads 0",
            "from 1 to 4096",
        ),
        (
            &["load", "io", "--size", "2G"],
            "rtlab load io: --size 2G: more than 1G",
            "--size 1G or less",
        ),
        (
            &["load", "io", "--size", "5G"],
            "rtlab load io: --size 5G: more than 1G",
            "--size 1G or less",
        ),
        (
            &["load", "memory", "--size", "2G"],
            "rtlab load memory: --size 2G",
            "--size 1G or less",
        ),
        (
            &["load", "ipc", "--size", "0"],
            "rtlab load ipc: --size 0",
            "from 1 to 65536",
        ),
        (
            &["load", "ipc", "--groups", "1000"],
            "rtlab load ipc: --groups 1000",
            "from 1 to 102",
        ),
        (
            &["cyclictest", "-i", "0"],
            "rtlab cyclictest: -i 0: ",
            "-i 1000",
        ),
        (
            &["cyclictest", "-r"],
            "rtlab cyclictest: -r/--relative is not supported",
            "drop -r/--relative",
        ),
    ];
    for (args, place, hint) in cases {
        refused(dir.path(), args, place, hint);
    }
    // Nothing was started, so nothing was written (no I/O load directory).
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n != "journal")
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_cut_result_file_is_called_cut_at_a_1_based_place() {
    let _machine = fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let seed = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/seeds/rtlab-result.json"),
    )
    .unwrap();
    std::fs::write(dir.path().join("t2.json"), &seed[..2]).unwrap();
    std::fs::write(dir.path().join("t300.json"), &seed[..300]).unwrap();
    for command in [
        &["compare", "t2.json"][..],
        &["report", "t2.json", "-o", "r.html"],
        &["explain", "t2.json"],
    ] {
        refused(
            dir.path(),
            command,
            "t2.json:2:1: truncated JSON result (rtlab's or cyclictest's)",
            "cut short",
        );
    }
    for command in [
        &["compare", "t300.json"][..],
        &["report", "t300.json", "-o", "r.html"],
        &["explain", "t300.json"],
    ] {
        let stderr = refused(dir.path(), command, "t300.json:", "cut short");
        assert!(stderr.contains(": truncated rtlab result:"), "{stderr}");
        assert!(!stderr.contains(":0:"), "{stderr}");
    }
    assert!(!dir.path().join("r.html").exists());
}

/// A run's outputs are an export set checked before the run starts: a
/// trace-windows directory that is not one refuses the run (status 2) as
/// a JSON target in a missing directory does, before anything is measured
/// or written.
#[test]
fn an_output_that_cannot_be_written_refuses_the_run_before_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("t.cfg"),
        "main\n{\n  trace.threshold 1 ms\n}\n\
         timer_thread[0]\n{\n  sched.policy OTHER\n  sched.priority 0\n  \
         lifetime.duration 1 s\n}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("rtlab-spikes"), "a file, not a directory").unwrap();
    let stderr = refused(
        dir.path(),
        &["run", "t.cfg"],
        "rtlab: trace windows ./rtlab-spikes: `rtlab-spikes` is not a directory",
        "move what is there, or choose another output directory (--outdir)",
    );
    assert_eq!(stderr.lines().count(), 2, "{stderr}");
    let json = dir.path().join("no/such/r.json");
    let stderr = refused(
        dir.path(),
        &["run", "t.cfg", "--json", json.to_str().unwrap()],
        "rtlab: --json ",
        "create it first",
    );
    assert!(stderr.contains("does not exist"), "{stderr}");
    // Nothing was measured or written.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["rtlab-spikes", "t.cfg"]);
}

//! The third audit's attacks on the features added since the second (the
//! built-in loads, `on_spike`, task latency, the trace readers, PIDs given
//! by number, outputs kept aside), each replayed on the real binary as the
//! attacker (`nobody`) would try it. Root-only parts say so and stop
//! otherwise.

use crate::fixtures::{is_root, path_taken, text, wait_output_within};
use std::os::unix::fs::{PermissionsExt, chown};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The attacker: `nobody`.
const NOBODY: u32 = 65534;

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A shell script run as the attacker (`setpriv`), in the background.
fn as_attacker(script: &str) -> std::process::Child {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .args(["sh", "-c", script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// rtlab with `args` in `dir` (its journal there), started: stdout
/// dropped, stderr kept for the messages.
fn in_background(dir: &Path, args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args(args)
        .current_dir(dir)
        .env("RTLAB_JOURNAL_DIR", dir.join("journal"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Every entry under `dir`, recursively, with its content for files.
fn tree(dir: &Path) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let meta = std::fs::symlink_metadata(&p).unwrap();
        if meta.is_dir() {
            out.push((p.display().to_string(), None));
            out.extend(tree(&p));
        } else {
            out.push((p.display().to_string(), std::fs::read_to_string(&p).ok()));
        }
    }
    out.sort();
    out
}

#[test]
fn the_io_load_never_works_through_a_directory_swapped_for_a_link() {
    let test = "the_io_load_never_works_through_a_directory_swapped_for_a_link";
    if !is_root() {
        path_taken(test, "not root: the attacker's rename needs another user");
        return;
    }
    // The attacker owns the load's --dir; root's victim directory holds f0.
    let work = tempfile::tempdir().unwrap();
    let theirs = work.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    chown(&theirs, Some(NOBODY), Some(NOBODY)).unwrap();
    chmod(work.path(), 0o755);
    let victim = tempfile::tempdir().unwrap();
    std::fs::write(victim.path().join("f0"), "precious\n").unwrap();
    std::fs::create_dir(victim.path().join("other")).unwrap();
    let before = tree(victim.path());

    let load = Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args([
            "load",
            "io",
            "--threads",
            "2",
            "--size",
            "4M",
            "--duration",
            "3s",
        ])
        .arg("--dir")
        .arg(&theirs)
        .arg("--interval")
        .arg("1s")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // As soon as the load's directory appears: renamed away, a link to the
    // victim put at its name (a rename within one parent needs no right on
    // the directory moved).
    let attacker = as_attacker(&format!(
        "d='{}'; v='{}'; i=0
         while [ $i -lt 1000 ]; do
           for x in \"$d\"/rtlab-load-io.*; do
             if [ -d \"$x\" ] && [ ! -L \"$x\" ]; then
               mv \"$x\" \"$d/moved\" && ln -s \"$v\" \"$x\" && echo swapped && exit 0
             fi
           done
           sleep 0.005; i=$((i+1))
         done
         echo never; exit 1",
        theirs.display(),
        victim.path().display()
    ));
    let swapped = wait_output_within(attacker, Duration::from_secs(30));
    let o = wait_output_within(load, Duration::from_secs(60));
    assert!(
        String::from_utf8_lossy(&swapped.stdout).contains("swapped"),
        "the attacker never saw the load's directory: {}",
        text(&swapped)
    );
    assert_eq!(
        tree(victim.path()),
        before,
        "the victim's directory changed"
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        out.contains("was moved away or replaced during the load"),
        "{}",
        text(&o)
    );
    // Its own directory, wherever it went, is left empty; the link stays.
    let moved = theirs.join("moved");
    assert_eq!(std::fs::read_dir(&moved).unwrap().count(), 0);
    let left: Vec<_> = std::fs::read_dir(&theirs)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
    // A --dir reached through the attacker's link is refused before
    // anything is made (status 2, as every refusal).
    let link = theirs.join("to-victim");
    std::os::unix::fs::symlink(victim.path(), &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(NOBODY), Some(NOBODY)).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args(["load", "io", "--duration", "1s", "--dir"])
        .arg(&link)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(tree(victim.path()), before);
    path_taken(
        test,
        "root: the directory renamed away and a link planted mid-run; the victim's directory unchanged",
    );
}

/// The processes whose command line is `argv`, now (zombies aside).
fn processes(argv: &[&str]) -> Vec<i32> {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .map(|(_, r)| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        if !zombie && std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want) {
            out.push(pid);
        }
    }
    out
}

/// Kills what a failed test left, so that the next test starts clean.
struct Reaper(&'static [&'static str]);

impl Drop for Reaper {
    fn drop(&mut self) {
        for pid in processes(self.0) {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
    }
}

/// A timer thread on the measured CPU whose every wake-up is a spike.
fn spiking(extra_main: &str, lifetime: &str) -> String {
    format!(
        "main {{\n spikes.threshold 1 us\n on_spike.every 100 ms\n{extra_main}\n}}\n\
         timer_thread[0] {{\n cpu_affinity {}\n sched.policy FIFO\n sched.priority 90\n \
         timer.period 1 ms\n {lifetime}\n}}\n",
        crate::fixtures::measured_cpu()
    )
}

#[test]
fn what_a_spike_program_leaves_in_its_group_is_stopped_when_it_ends() {
    let test = "what_a_spike_program_leaves_in_its_group_is_stopped_when_it_ends";
    let _shared = crate::fixtures::machine_shared();
    const LEFT: &[&str] = &["sleep", "3101"];
    let _reaper = Reaper(LEFT);
    // In its group; then out of it and its session (`setsid`), as a user
    // without root: no tracking cgroup catches it, rtlab (its subreaper)
    // must.
    // Last, one that clears its environment (no mark of the run left) and
    // ignores SIGTERM.
    for (action, as_nobody) in [
        ("sleep 3101 &", false),
        ("setsid sleep 3101 &", true),
        (
            "env -i setsid sh -c 'trap \\\"\\\" TERM; exec sleep 3101' &",
            true,
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = spiking(
            &format!(" on_spike run sh -c \"{action}\""),
            "lifetime.duration 3 s",
        );
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rtlab"));
        if as_nobody && is_root() {
            cfg = unprivileged(&cfg);
            match crate::fixtures::rtlab_unprivileged(dir.path()) {
                Some(c) => cmd = c,
                None => continue,
            }
        }
        std::fs::write(dir.path().join("left.cfg"), cfg).unwrap();
        // Outputs to files: what a program leaves behind holds no pipe of
        // the test's open.
        let log = |name: &str| Stdio::from(std::fs::File::create(dir.path().join(name)).unwrap());
        let mut run = cmd
            .args(["run", "left.cfg", "--json", "left.json"])
            .current_dir(dir.path())
            .env("RTLAB_JOURNAL_DIR", dir.path().join("journal"))
            .stdout(log("out"))
            .stderr(log("err"))
            .spawn()
            .unwrap();
        // While it runs, what the programs left never piles up.
        let mut most = 0;
        let status = loop {
            if let Some(s) = run.try_wait().unwrap() {
                break s;
            }
            most = most.max(processes(LEFT).len());
            std::thread::sleep(Duration::from_millis(20));
        };
        let said = std::fs::read_to_string(dir.path().join("err")).unwrap_or_default();
        assert_eq!(status.code(), Some(0), "{said}");
        let r: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("left.json")).unwrap()).unwrap();
        let report = &r["on_spike"];
        let started = report["programs_started"].as_u64().unwrap();
        assert!(started >= 10, "a program every 100 ms for 3 s: {report}");
        assert!(
            most <= 8,
            "{action}: {most} left at once (at most 8 programs alive at once)"
        );
        let left = processes(LEFT);
        assert!(left.is_empty(), "{action}: left after the run: {left:?}");
        eprintln!(
            "[{test}] `{action}`{}: {started} programs, at most {most} left at once, none after the run",
            if as_nobody { " as nobody" } else { "" }
        );
    }
    path_taken(test, "in their group and out of it: none after the run");
}

/// `cfg` for a user without root: its timer thread SCHED_OTHER.
fn unprivileged(cfg: &str) -> String {
    cfg.replace(" sched.policy FIFO\n sched.priority 90\n", "")
}

#[test]
fn spike_programs_and_their_children_die_with_a_killed_rtlab() {
    let test = "spike_programs_and_their_children_die_with_a_killed_rtlab";
    let _shared = crate::fixtures::machine_shared();
    const LEFT: &[&str] = &["sleep", "3102"];
    let _reaper = Reaper(LEFT);
    for as_nobody in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        // Each program and its child in the background keep running.
        let cfg = spiking(
            " on_spike run sh -c \"sleep 3102 & sleep 3102\"",
            "lifetime.duration 60 s",
        );
        std::fs::write(dir.path().join("kill.cfg"), cfg).unwrap();
        let mut cmd = if as_nobody {
            match crate::fixtures::rtlab_unprivileged(dir.path()) {
                Some(c) => c,
                None => continue,
            }
        } else {
            Command::new(env!("CARGO_BIN_EXE_rtlab"))
        };
        // Unprivileged, the timer thread cannot be FIFO: the run is
        // refused unless it is SCHED_OTHER.
        if as_nobody && is_root() {
            let text = std::fs::read_to_string(dir.path().join("kill.cfg")).unwrap();
            std::fs::write(dir.path().join("kill.cfg"), unprivileged(&text)).unwrap();
        }
        let mut run = cmd
            .args(["run", "kill.cfg"])
            .current_dir(dir.path())
            .env("RTLAB_JOURNAL_DIR", dir.path().join("journal"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let some =
            crate::fixtures::wait_until(Duration::from_secs(20), || processes(LEFT).len() >= 4);
        assert!(some, "the spike programs never started");
        run.kill().unwrap();
        let _ = run.wait();
        let gone =
            crate::fixtures::wait_until(Duration::from_secs(10), || processes(LEFT).is_empty());
        assert!(
            gone,
            "left after SIGKILL ({}): {:?}",
            if as_nobody {
                "as nobody"
            } else {
                "as the test's user"
            },
            processes(LEFT)
        );
    }
    path_taken(
        test,
        "rtlab SIGKILLed with spike programs and their children running: none left, with and without root",
    );
}

#[test]
fn spike_programs_run_as_programs_do_not_as_the_main_thread() {
    let test = "spike_programs_run_as_programs_do_not_as_the_main_thread";
    if !is_root() {
        path_taken(test, "not root: the main thread cannot be FIFO");
        return;
    }
    let _shared = crate::fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let measured = crate::fixtures::measured_cpu();
    let out = dir.path().join("seen");
    let cfg = spiking(
        &format!(
            " sched.policy FIFO\n sched.priority 10\n cpu_affinity {measured}\n \
             on_spike run sh -c \"echo c=$(grep -E '^Cpus_allowed_list' /proc/self/status | cut -f2) \
             p=$(cut -d' ' -f41 /proc/self/stat) >> {o}\"",
            o = out.display()
        ),
        "lifetime.duration 1 s",
    );
    std::fs::write(dir.path().join("as.cfg"), cfg).unwrap();
    let o = crate::fixtures::rtlab_in(dir.path(), &["run", "as.cfg"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let seen = std::fs::read_to_string(&out).unwrap();
    let online = crate::fixtures::online_cpus();
    let others: Vec<usize> = online.iter().copied().filter(|&c| c != measured).collect();
    let want_cpus = if others.is_empty() { online } else { others };
    // One line per program, written whole by one echo once both reads are
    // done: a program the run's end stops midway leaves no half line.
    assert!(!seen.is_empty(), "no spike program ran");
    for line in seen.lines() {
        let cpus = line.strip_prefix("c=").and_then(|l| l.split(' ').next());
        let listed = cpus.and_then(|c| rtlab::cpulist::parse(c).ok());
        assert_eq!(listed, Some(want_cpus.clone()), "{seen}");
        // Field 41 of stat: the policy (0: SCHED_OTHER).
        assert!(line.ends_with(" p=0"), "{seen}");
    }
    path_taken(
        test,
        &format!(
            "main thread FIFO 10 on CPU {measured}: the programs ran SCHED_OTHER on {want_cpus:?}"
        ),
    );
}

#[test]
fn a_signal_action_never_reaches_a_process_that_took_the_number() {
    let test = "a_signal_action_never_reaches_a_process_that_took_the_number";
    if !is_root() {
        path_taken(test, "not root: a PID cannot be handed to another process");
        return;
    }
    let _shared = crate::fixtures::machine_shared();
    const ONE: &[&str] = &["sleep", "3103"];
    const OTHER: &[&str] = &["sleep", "3104"];
    let _reaper = (Reaper(ONE), Reaper(OTHER));
    let dir = tempfile::tempdir().unwrap();
    let mut first = Command::new("sleep").arg("3103").spawn().unwrap();
    let pid = first.id() as i32;
    let cfg = spiking(
        &format!(" on_spike signal {pid} TERM"),
        "lifetime.duration 4 s",
    );
    std::fs::write(dir.path().join("sig.cfg"), cfg).unwrap();
    let run = in_background(dir.path(), &["run", "sig.cfg", "--json", "sig.json"]);
    // The first round signals the process given; it ends (reaped here),
    // and an unrelated process takes its number.
    let ended = crate::fixtures::wait_until(Duration::from_secs(20), || {
        first.try_wait().unwrap().is_some()
    });
    if !ended {
        let _ = first.kill();
        let _ = first.wait();
    }
    assert!(ended, "the first round never signalled process {pid}");
    let second = crate::fixtures::spawn_as_pid(pid, Command::new("sleep").arg("3104"));
    let o = wait_output_within(run, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let Some(mut second) = second else {
        path_taken(
            test,
            "the kernel would not hand the number over: only the first part checked",
        );
        return;
    };
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("sig.json")).unwrap()).unwrap();
    let outcomes: Vec<String> = r["on_spike"]["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["outcomes"][0].as_str().unwrap().to_string())
        .collect();
    let alive = second.try_wait().unwrap().is_none();
    let _ = second.kill();
    let _ = second.wait();
    assert!(
        alive,
        "the process that took number {pid} was signalled: {outcomes:?}"
    );
    assert_eq!(
        outcomes[0],
        format!("signal 15 sent to {pid}"),
        "{outcomes:?}"
    );
    assert!(
        outcomes[1..]
            .iter()
            .all(|o| o.contains("has ended: nothing was sent")),
        "{outcomes:?}"
    );
    assert!(outcomes.len() > 2, "{outcomes:?}");
    path_taken(
        test,
        &format!(
            "{} rounds after process {pid} ended and its number was taken: none signalled it",
            outcomes.len() - 1
        ),
    );
}

/// `rtlab task-latency --pid P` of a cyclic program on `cpu`, while two
/// processes of nobody named `" pid=P"` and `" next_pid=P"` wake and sleep
/// on the same CPU; `reader` forces the text reader when it is `text`.
/// Gives rtlab's result and the program's own expiries.
fn measured_beside_impostors(
    dir: &Path,
    cyclic: &Path,
    named: &Path,
    cpu: usize,
    reader: &str,
) -> (serde_json::Value, Vec<i64>, i32) {
    let own = dir.join(format!("{reader}.own"));
    let cpu = cpu.to_string();
    let mut task = Command::new("taskset")
        .args(["-c", &cpu])
        .arg(cyclic)
        .args(["sleep", "1000", "1500"])
        .arg(&own)
        .spawn()
        .unwrap();
    let pid = task.id() as i32;
    let impostors: Vec<std::process::Child> = [format!(" pid={pid}"), format!(" next_pid={pid}")]
        .iter()
        .map(|name| {
            Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .args(["taskset", "-c", &cpu])
                .arg(named)
                .args([name.as_str(), "4"])
                .spawn()
                .unwrap()
        })
        .collect();
    let json = format!("{reader}.json");
    let pid_text = pid.to_string();
    let o = Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args(["task-latency", "--pid", &pid_text, "--period", "1ms"])
        .args(["--samples", "10000", "--duration", "3s", "--json", &json])
        .current_dir(dir)
        .env("RTLAB_JOURNAL_DIR", dir.join("journal"))
        .env("RTLAB_TRACE_READER", reader)
        .output()
        .unwrap();
    let _ = task.wait();
    for mut i in impostors {
        let _ = i.wait();
    }
    assert!(o.status.success(), "{}", text(&o));
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join(&json)).unwrap()).unwrap();
    let own = std::fs::read_to_string(&own)
        .unwrap()
        .lines()
        .map(|l| l.split(' ').next().unwrap().parse::<i64>().unwrap())
        .collect();
    (r, own, pid)
}

#[test]
fn a_task_named_like_a_field_changes_no_figure_of_another() {
    let test = "a_task_named_like_a_field_changes_no_figure_of_another";
    if !crate::trace_experiments::can_trace(test) {
        return;
    }
    let _shared = crate::fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    chmod(dir.path(), 0o755);
    let (Some(cyclic), Some(named)) = (
        crate::task_latency::build(dir.path(), "cyclic"),
        crate::task_latency::build(dir.path(), "named"),
    ) else {
        path_taken(test, "no C compiler here: nothing to measure");
        return;
    };
    let cpu = crate::fixtures::measured_cpu();
    for reader in ["binary", "text"] {
        let (r, own, pid) = measured_beside_impostors(dir.path(), &cyclic, &named, cpu, reader);
        let m = &r["task_latency"][0];
        let threads = m["threads"].as_array().unwrap();
        // The program's one thread, under its own name.
        assert_eq!(threads.len(), 1, "{reader}: {m}");
        let t = &threads[0];
        assert_eq!(t["tid"].as_i64(), Some(i64::from(pid)), "{reader}");
        assert_eq!(t["comm"], "cyclic", "{reader}: the task was renamed");
        // Every cycle the program ran while rtlab traced it, found by its
        // own expiry, and nothing else.
        let seen: Vec<i64> = t["wake_up_samples"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["kind"] == "timer")
            .filter_map(|w| w["expiry_ns"].as_i64())
            .collect();
        assert!(
            seen.len() >= 1000,
            "{reader}: {} timer wake-ups of {}",
            seen.len(),
            own.len()
        );
        let (first, last) = (seen[0], *seen.last().unwrap());
        let want: Vec<i64> = own
            .iter()
            .copied()
            .filter(|e| (first..=last).contains(e))
            .collect();
        let mut got = seen.clone();
        got.sort_unstable();
        assert_eq!(
            got, want,
            "{reader}: the wake-ups found are not the program's cycles"
        );
        assert_eq!(
            t["timer_wake_ups"].as_u64(),
            Some(seen.len() as u64),
            "{reader}"
        );
        // No wake-up blamed on or woken by a task of no name.
        for w in t["wakers"].as_array().unwrap() {
            let name = w[0].as_str().unwrap();
            assert!(
                !name.trim().is_empty() && !name.starts_with(" ("),
                "{reader}: {w}"
            );
        }
        eprintln!(
            "[{test}] {reader}: {} cycles of pid {pid} found by their expiries, beside \" pid={pid}\" and \" next_pid={pid}\"",
            seen.len()
        );
    }
    path_taken(
        test,
        "both readers: the impostors changed no figure of the task",
    );
}

#[test]
fn an_output_whose_keep_aside_names_are_all_taken_is_kept_where_it_says() {
    let test = "an_output_whose_keep_aside_names_are_all_taken_is_kept_where_it_says";
    if !is_root() {
        path_taken(test, "not root: another user's link cannot be planted");
        return;
    }
    let _shared = crate::fixtures::machine_shared();
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    chmod(d, 0o755);
    // A sticky world-writable directory, as /tmp is.
    let shared = d.join("shared");
    std::fs::create_dir(&shared).unwrap();
    chmod(&shared, 0o1777);
    let out = shared.join("prog.out");
    std::fs::write(
        d.join("exp.cfg"),
        format!(
            "timer_thread[0]\n{{\n  timer.period 1 ms\n  lifetime.duration 3 s\n}}\n\
             program[0]\n{{\n  cmdline sh -c \"echo measured; touch {}; sleep 30\"\n  output.out {}\n}}\n",
            d.join("started").display(),
            out.display()
        ),
    )
    .unwrap();
    let run = in_background(d, &["run", "exp.cfg"]);
    let pid = run.id();
    assert!(crate::fixtures::wait_until(Duration::from_secs(30), || d
        .join("started")
        .exists()));
    // Mid-run, the attacker puts a link at the output's name and takes
    // every name rtlab would keep it under beside it.
    let planted = wait_output_within(
        as_attacker(&format!(
            "cd '{}' && ln -s /etc/hostname prog.out && i=0 && \
             while [ $i -lt 100 ]; do : > prog.out.rtlab-{pid}-$i; i=$((i+1)); done && echo planted",
            shared.display()
        )),
        Duration::from_secs(30),
    );
    assert!(text(&planted).contains("planted"), "{}", text(&planted));
    let o = wait_output_within(run, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    let at = err
        .split("what was written is kept as ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("nothing said kept: {err}"));
    let kept = Path::new(at.trim_end_matches(['.', ';', ',']));
    assert!(
        kept.starts_with(d.join("journal")),
        "kept outside rtlab's own directory: {kept:?}\n{err}"
    );
    // The run's journal was replayed (the run has ended): what it said is
    // kept is there, whole.
    assert_eq!(
        std::fs::read_to_string(kept).unwrap_or_else(|e| panic!("{kept:?}: {e}\n{err}")),
        "measured\n"
    );
    assert!(std::fs::symlink_metadata(&out).unwrap().is_symlink());
    assert_ne!(
        std::fs::read_to_string("/etc/hostname").unwrap(),
        "measured\n"
    );
    let journals: Vec<_> = std::fs::read_dir(d.join("journal"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".journal"))
        .collect();
    assert!(
        journals.is_empty(),
        "the run's journal was left: {journals:?}"
    );
    path_taken(
        test,
        &format!(
            "a link at the output and its 100 keep-aside names taken: kept as {}",
            kept.display()
        ),
    );
}

#[test]
fn a_task_given_by_pid_is_never_merged_with_the_process_that_takes_its_number() {
    let test = "a_task_given_by_pid_is_never_merged_with_the_process_that_takes_its_number";
    if !crate::trace_experiments::can_trace(test) {
        return;
    }
    let _shared = crate::fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let Some(cyclic) = crate::task_latency::build(dir.path(), "cyclic") else {
        path_taken(test, "no C compiler here: nothing to measure");
        return;
    };
    let cpu = crate::fixtures::measured_cpu().to_string();
    let cycles = |own: &Path, n: &str| {
        let mut c = Command::new("taskset");
        c.args(["-c", &cpu])
            .arg(&cyclic)
            .args(["sleep", "1000", n])
            .arg(own);
        c
    };
    let (a_own, b_own) = (dir.path().join("a.own"), dir.path().join("b.own"));
    let mut first = cycles(&a_own, "800").spawn().unwrap();
    let pid = first.id() as i32;
    let pid_text = pid.to_string();
    let run = in_background(
        dir.path(),
        &[
            "task-latency",
            "--pid",
            &pid_text,
            "--period",
            "1ms",
            "--samples",
            "10000",
            "--duration",
            "3s",
            "--json",
            "r.json",
        ],
    );
    // The first ends; another program, cyclic too, takes its number.
    let _ = first.wait();
    let second = crate::fixtures::spawn_as_pid(pid, &mut cycles(&b_own, "1000"));
    let o = wait_output_within(run, Duration::from_secs(60));
    let Some(mut second) = second else {
        path_taken(
            test,
            "the kernel would not hand the number over: nothing to check",
        );
        return;
    };
    let _ = second.wait();
    assert!(o.status.success(), "{}", text(&o));
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
    let m = &r["task_latency"][0];
    let expiries = |own: &Path| -> Vec<i64> {
        std::fs::read_to_string(own)
            .unwrap()
            .lines()
            .map(|l| l.split(' ').next().unwrap().parse().unwrap())
            .collect()
    };
    let (a, b) = (expiries(&a_own), expiries(&b_own));
    let seen: Vec<i64> = m["threads"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["wake_up_samples"].as_array().unwrap().iter())
        .filter_map(|w| w["expiry_ns"].as_i64())
        .collect();
    let merged = seen.iter().filter(|e| b.contains(e)).count();
    assert_eq!(
        merged, 0,
        "{merged} wake-ups of the process that took number {pid} were merged"
    );
    assert!(
        seen.iter().all(|e| a.contains(e)),
        "a wake-up that is not the task's"
    );
    assert!(
        seen.len() >= 400,
        "{} of {} cycles of the task found",
        seen.len(),
        a.len()
    );
    let notes = m["notes"].to_string();
    assert!(
        notes.contains(&format!("process {pid} ended during the run")),
        "{notes}"
    );
    path_taken(
        test,
        &format!(
            "{} cycles of process {pid}, none of the {} of the process that took its number",
            seen.len(),
            b.len()
        ),
    );
}

#[test]
fn trace_buffers_are_checked_against_the_memory_and_a_dead_runs_are_freed() {
    let test = "trace_buffers_are_checked_against_the_memory_and_a_dead_runs_are_freed";
    if !crate::trace_experiments::can_trace(test) {
        return;
    }
    let _shared = crate::fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let cpus = crate::fixtures::online_cpus().len() as u64;
    let available: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("MemAvailable:")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap();
    // The largest buffers a file may ask for: 1 GiB on every CPU.
    let cfg = "main {\n trace.threshold 100 us\n trace.buffer_kb 1048576\n trace.dump_tasks\n}\n\
               timer_thread[0] {\n lifetime.loops 10\n}\n";
    std::fs::write(dir.path().join("big.cfg"), cfg).unwrap();
    let o = crate::fixtures::rtlab_in(dir.path(), &["check", "big.cfg"]);
    let said = if (1 << 20) * cpus > available / 4 {
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains("big.cfg:3:"), "{}", text(&o));
        assert!(text(&o).contains("more than a quarter"), "{}", text(&o));
        "1 GiB × every CPU refused"
    } else {
        assert!(o.status.success(), "{}", text(&o));
        "1 GiB × every CPU is within a quarter of this machine's memory: accepted"
    };
    // A run killed with SIGKILL leaves its instance recording; the next
    // command that traces frees it.
    let cfg = "main {\n trace.threshold 100 us\n}\ntimer_thread[0] {\n lifetime.duration 60 s\n}\n";
    std::fs::write(dir.path().join("long.cfg"), cfg).unwrap();
    let mut run = Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args(["run", "long.cfg"])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let name = format!("rtlab-{}", run.id());
    let made = crate::fixtures::wait_until(Duration::from_secs(20), || {
        crate::fixtures::leftover_instances()
            .iter()
            .any(|i| i.ends_with(&name))
    });
    run.kill().unwrap();
    let _ = run.wait();
    assert!(made, "the run never made its instance");
    assert!(
        crate::fixtures::leftover_instances()
            .iter()
            .any(|i| i.ends_with(&name))
    );
    let o = Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args(["trace-readers", "--record-ms", "100", "--buffer-kb", "64"])
        .output()
        .unwrap();
    assert!(o.status.code() != Some(2), "{}", text(&o));
    let left: Vec<String> = crate::fixtures::leftover_instances()
        .into_iter()
        .filter(|i| i.ends_with(&name))
        .collect();
    assert!(
        left.is_empty(),
        "{left:?} left after trace-readers: {}",
        text(&o)
    );
    path_taken(
        test,
        &format!("{said}; the dead run's instance freed by trace-readers"),
    );
}

#[test]
fn no_child_outlives_rtlab_killed_at_any_moment() {
    let test = "no_child_outlives_rtlab_killed_at_any_moment";
    let _shared = crate::fixtures::machine_shared();
    const PROGRAM: &[&str] = &["sleep", "3105"];
    const SPIKE: &[&str] = &["sleep", "3106"];
    let _reapers = (Reaper(PROGRAM), Reaper(SPIKE));
    let dir = tempfile::tempdir().unwrap();
    // A program that starts children of its own, and a spike program every
    // 50 ms that leaves one behind.
    let cfg = format!(
        "main {{\n spikes.threshold 1 us\n on_spike.every 50 ms\n \
         on_spike run sh -c \"sleep 3106 & setsid sleep 3106 &\"\n}}\n\
         timer_thread[0] {{\n cpu_affinity {}\n timer.period 1 ms\n lifetime.duration 60 s\n}}\n\
         program[0] {{\n cmdline sh -c \"sleep 3105 & setsid sleep 3105 & wait\"\n}}\n",
        crate::fixtures::measured_cpu()
    );
    std::fs::write(dir.path().join("k.cfg"), cfg).unwrap();
    let mut trials = 0;
    // Killed at moments spread over its start and its steady state.
    for (i, delay_ms) in [5u64, 20, 45, 80, 120, 200, 350, 600, 900, 1300]
        .into_iter()
        .enumerate()
    {
        let as_nobody = i % 2 == 1 && is_root();
        let mut cmd = if as_nobody {
            match crate::fixtures::rtlab_unprivileged(dir.path()) {
                Some(c) => c,
                None => continue,
            }
        } else {
            Command::new(env!("CARGO_BIN_EXE_rtlab"))
        };
        let mut run = cmd
            .args(["run", "k.cfg"])
            .current_dir(dir.path())
            .env("RTLAB_JOURNAL_DIR", dir.path().join(format!("journal{i}")))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        run.kill().unwrap();
        let _ = run.wait();
        let gone = crate::fixtures::wait_until(Duration::from_secs(10), || {
            processes(PROGRAM).is_empty() && processes(SPIKE).is_empty()
        });
        assert!(
            gone,
            "killed after {delay_ms} ms ({}): left {:?} {:?}",
            if as_nobody {
                "as nobody"
            } else {
                "as root or the test's user"
            },
            processes(PROGRAM),
            processes(SPIKE)
        );
        trials += 1;
    }
    path_taken(
        test,
        &format!(
            "{trials} SIGKILLs from 5 ms to 1.3 s into a run: no program, spike program or child of either left"
        ),
    );
}

/// `rtlab qualify --nfd-file` into a directory another user (nobody) owns:
/// a link of theirs at the feature file's name is refused before anything
/// runs, and links at the names rtlab stages the file under (its PID
/// handed to it, so that the names are known) are neither followed nor
/// taken over; the victim they point at is never written.
#[test]
fn the_feature_file_never_goes_through_another_users_links() {
    let test = test_name!();
    if !is_root() {
        path_taken(test, "not root: another user's directory cannot be made");
        return;
    }
    // It measures (cyclictest, 1 s): alone.
    let _machine = crate::fixtures::machine_exclusive();
    let victim_dir = tempfile::tempdir().unwrap();
    let victim = victim_dir.path().join("precious");
    std::fs::write(&victim, "precious\n").unwrap();
    let theirs = tempfile::tempdir().unwrap();
    chown(theirs.path(), Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(theirs.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let plant = |name: &str| {
        let link = theirs.path().join(name);
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
    };
    let nfd = theirs.path().join("rtlab");
    let qualify = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rtlab"));
        c.args(["qualify", "cyclictest", "--nfd-file"])
            .arg(&nfd)
            .env("LATENCY_TEST_RUN", "true")
            .env("LATENCY_TEST_RUNTIME", "1")
            .env("LATENCY_TEST_CPUS", "1")
            .env("RTLAB_JOURNAL_DIR", victim_dir.path().join("journal"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    };
    // At the target: refused before anything.
    plant("rtlab");
    let o = qualify().output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("is a symbolic link"),
        "{}",
        text(&o)
    );
    std::fs::remove_file(&nfd).unwrap();
    // At the staging names of the process that will write it.
    let pid = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
        .map(|p| p + 500);
    let mut staged = Vec::new();
    if let Some(pid) = pid {
        for n in 0..8 {
            let name = format!(".rtlab-{pid}-{n}.tmp");
            plant(&name);
            staged.push(name);
        }
    }
    let child = pid.and_then(|pid| crate::fixtures::spawn_as_pid(pid, &mut qualify()));
    let handed = child.is_some();
    let child = child.unwrap_or_else(|| qualify().spawn().unwrap());
    let o = wait_output_within(child, Duration::from_secs(60));
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "precious\n",
        "{}",
        text(&o)
    );
    for name in &staged {
        let link = theirs.path().join(name);
        let meta = std::fs::symlink_metadata(&link).unwrap();
        assert!(
            meta.file_type().is_symlink(),
            "{name} taken over: {}",
            text(&o)
        );
    }
    // Written whole beside their links: its staging name has a part they
    // cannot foretell (a name they could plant refused it once).
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let written = std::fs::symlink_metadata(&nfd).is_ok_and(|m| m.file_type().is_file());
    assert!(written, "{}", text(&o));
    assert!(
        std::fs::read_to_string(&nfd)
            .unwrap()
            .starts_with("# rtlab qualify")
    );
    path_taken(
        test,
        &format!(
            "a link at the target refused; {} staging names taken by links{}: {}",
            staged.len(),
            if handed {
                ", rtlab given their PID"
            } else {
                " (PID not handed: names unknown)"
            },
            if written {
                "the file written beside them".to_string()
            } else {
                format!(
                    "refused: {}",
                    String::from_utf8_lossy(&o.stderr)
                        .lines()
                        .next()
                        .unwrap_or("")
                )
            }
        ),
    );
}

/// Command lines for `rtlab oslat` and `rtlab hwlat`, drawn (seeded) from
/// their options, real and mangled values, and bytes no option has: none
/// panics, none hangs (a run still going after two seconds ends within
/// five of a SIGTERM), and none leaves a process, a trace instance or a
/// journal behind.
#[test]
fn fuzzed_oslat_and_hwlat_command_lines_panic_hang_and_leave_nothing() {
    let test = test_name!();
    let _machine = crate::fixtures::machine_exclusive();
    const OSLAT: &[&str] = &[
        "-D",
        "-D1",
        "2s",
        "-D0",
        "-D1h",
        "-c",
        "0",
        "1",
        "0-1",
        "-f",
        "99",
        "-b",
        "-T",
        "5",
        "-m",
        "1M",
        "-q",
        "-z",
        "-w",
        "--duration",
        "--cpu-list",
        "--rtprio",
        "--bucket-size",
        "--json",
        "out.json",
        "-x",
        "--",
        "-",
        "\u{1b}[2J",
        "9999999999999999999",
        "-1",
        "--workload",
        "memmove",
        "--workload-mem",
        "4G",
        "-s",
    ];
    const HWLAT: &[&str] = &[
        "--duration",
        "1",
        "2s",
        "--threshold",
        "--hardlimit",
        "--window",
        "--width",
        "--report",
        "r.txt",
        "--cpu-list",
        "0",
        "0-1",
        "--debug",
        "--quiet",
        "--watch",
        "--",
        "-",
        "--w",
        "--thr=",
        "--duration=1",
        "--cpu-list=",
        "-5",
        "10ms",
        "1w",
        "\u{7f}",
        "1000000",
        "999999999999",
        "--window=1000",
        "--width=2000",
    ];
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_rtlab")).unwrap();
    let mut seed: u64 = 0x5eed_2026_1129;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as usize % n
    };
    let (mut refused, mut ran, mut stopped) = (0, 0, 0);
    for (tool, words) in [("oslat", OSLAT), ("hwlat", HWLAT)] {
        for _ in 0..12 {
            let line: Vec<&str> = (0..next(6)).map(|_| words[next(words.len())]).collect();
            let dir = tempfile::tempdir().unwrap();
            // Marked, so that rtlab processes of tests running beside this
            // one are not taken for what this line left.
            let mark = format!(
                "RTLAB_FUZZ_LINE={}-{}",
                std::process::id(),
                refused + ran + stopped
            );
            let mut child = Command::new(&exe)
                .arg(tool)
                .args(&line)
                .current_dir(dir.path())
                .env("RTLAB_JOURNAL_DIR", dir.path().join("journal"))
                .env("RTLAB_FUZZ_LINE", &mark["RTLAB_FUZZ_LINE=".len()..])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let done = crate::fixtures::wait_until(Duration::from_secs(2), || {
                matches!(child.try_wait(), Ok(Some(_)))
            });
            if !done {
                // Still running: a run as the line asked, stopped as a user would.
                let _ = Command::new("kill")
                    .args(["-TERM", &child.id().to_string()])
                    .status();
            }
            let o = wait_output_within(child, Duration::from_secs(5));
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert!(!stderr.contains("panicked"), "{tool} {line:?}: {stderr}");
            assert!(
                o.status.code().is_some() || !done,
                "{tool} {line:?}: {}",
                text(&o)
            );
            match (done, o.status.code()) {
                (false, _) => stopped += 1,
                (true, Some(2)) => refused += 1,
                _ => ran += 1,
            }
            let journals: Vec<_> = std::fs::read_dir(dir.path().join("journal"))
                .map(|d| d.flatten().map(|e| e.file_name()).collect())
                .unwrap_or_default();
            assert!(journals.is_empty(), "{tool} {line:?}: {journals:?}");
            assert!(
                crate::fixtures::leftover_instances().is_empty(),
                "{tool} {line:?}: a trace instance left"
            );
            let alive: Vec<_> = std::fs::read_dir("/proc")
                .unwrap()
                .flatten()
                .filter(|e| std::fs::read_link(e.path().join("exe")).is_ok_and(|p| p == exe))
                .filter(|e| {
                    std::fs::read(e.path().join("environ"))
                        .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == mark.as_bytes()))
                })
                .map(|e| e.file_name())
                .collect();
            assert!(alive.is_empty(), "{tool} {line:?}: left running {alive:?}");
        }
    }
    path_taken(
        test,
        &format!(
            "24 command lines: {refused} refused, {ran} ended, {stopped} stopped by SIGTERM; nothing left"
        ),
    );
}

/// CPU time (utime + stime, clock ticks) of process `pid`, from its stat.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// A FIFO 99 noise poller given all of every period (`--runtime` equal to
/// `--period`) is refused before it starts, naming RT throttling; given
/// the most throttling allows, a normal-priority process on its CPU still
/// gets what throttling (or the fair server) keeps for it, by the kernel's
/// own accounting, and the poller dies with a SIGKILLed rtlab.
#[test]
fn a_fifo_99_poller_with_the_whole_period_starves_nothing_throttling_keeps() {
    let test = test_name!();
    if !is_root() {
        path_taken(test, "not root: no FIFO 99");
        return;
    }
    let _machine = crate::fixtures::machine_exclusive();
    let cpu = crate::fixtures::measured_cpu();
    let knob = |name: &str| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
    };
    let (rt_runtime, rt_period) = (
        knob("sched_rt_runtime_us").unwrap_or(-1),
        knob("sched_rt_period_us").unwrap_or(1_000_000),
    );
    if rt_runtime < 0 || rt_runtime >= rt_period {
        path_taken(
            test,
            "RT throttling off here: a FIFO 99 poller may starve its CPU; not run",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let poller = |runtime: &str| -> Vec<String> {
        [
            "noise",
            &cpu.to_string(),
            "--priority",
            "99",
            "--period",
            "1s",
            "--runtime",
            runtime,
        ]
        .into_iter()
        .chain(["--duration", "30s", "--no-attribute"])
        .map(String::from)
        .collect()
    };
    // The whole period: refused, nothing started.
    let whole = poller("1s");
    let args: Vec<&str> = whole.iter().map(String::as_str).collect();
    let o = wait_output_within(in_background(dir.path(), &args), Duration::from_secs(10));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("RT throttling"),
        "{}",
        text(&o)
    );
    // The most throttling allows: it runs, and the normal task runs too.
    let most = poller(&format!("{}us", rt_runtime));
    let args: Vec<&str> = most.iter().map(String::as_str).collect();
    let mut victim = Command::new("taskset")
        .args(["-c", &cpu.to_string(), "sh", "-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    let mut rtlab = in_background(dir.path(), &args);
    std::thread::sleep(Duration::from_secs(1));
    if let Ok(Some(_)) = rtlab.try_wait() {
        let o = wait_output_within(rtlab, Duration::from_secs(5));
        let _ = victim.kill();
        let _ = victim.wait();
        panic!("the most throttling allows was refused: {}", text(&o));
    }
    let before = cpu_ticks(victim.id()).unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let after = cpu_ticks(victim.id()).unwrap();
    let pid = rtlab.id();
    let _ = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
    let o = wait_output_within(rtlab, Duration::from_secs(5));
    let _ = victim.kill();
    let _ = victim.wait();
    assert!(!Path::new(&format!("/proc/{pid}")).exists(), "{}", text(&o));
    // What throttling keeps for others: (period - runtime) of each period;
    // half of it is asked, the kernel's ticks (USER_HZ, 100) being coarse.
    let got = (after - before) as f64 / 100.0 / 3.0;
    let kept = (rt_period - rt_runtime) as f64 / rt_period as f64;
    assert!(
        got >= kept / 2.0,
        "the normal task got {got:.3} of its CPU; throttling keeps {kept:.3}"
    );
    path_taken(
        test,
        &format!(
            "FIFO 99 over the whole period refused; over {rt_runtime} µs of each {rt_period} on CPU {cpu}: \
             a normal task got {:.1}% (throttling keeps {:.1}%); gone with rtlab",
            got * 100.0,
            kept * 100.0
        ),
    );
}

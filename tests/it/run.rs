//! Integration tests: the real binary runs real experiments on this machine
//! (root, SCHED_FIFO, cgroups). Each test works in its own temporary
//! directory and checks behaviour, never timing. Needs root for FIFO
//! threads (else checks the refusal) and `ping` for the example's load;
//! shares the machine with the other runs (`machine_shared`).

use crate::fixtures::{
    load_cpu, measured_cpu, on_this_machine, path_taken, root_or_refusal, text, wait_until,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

fn rtlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rtlab"))
}

/// Writes an experiment file, with `@M`/`@L` replaced by this machine's
/// measured and load CPUs.
fn write_cfg(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, on_this_machine(text)).unwrap();
    p
}

/// The journal directory of a test: its own, so that tests running at the
/// same time never see each other's journals.
fn journal_dir(dir: &Path) -> PathBuf {
    dir.join("journal")
}

fn run_in(dir: &Path, args: &[&str]) -> Output {
    rtlab()
        .args(args)
        .current_dir(dir)
        .env("RTLAB_JOURNAL_DIR", journal_dir(dir))
        .output()
        .unwrap()
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Live (non-zombie) processes whose command line contains `marker`.
fn live_processes_with(marker: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            (cmdline.contains(marker) && is_live(pid)).then(|| format!("{pid}: {cmdline}"))
        })
        .collect()
}

/// Whether `pid` is a running (non-zombie) process.
fn is_live(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'))
    })
}

/// The guard process started by rtlab process `rtlab_pid`.
fn guard_of(rtlab_pid: u32) -> Option<u32> {
    std::fs::read_dir("/proc").unwrap().flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
        let (comm, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
        let ppid: u32 = rest.split_whitespace().nth(1)?.parse().ok()?;
        (comm == "rtlab-guard" && ppid == rtlab_pid).then_some(pid)
    })
}

fn spawn_in(dir: &Path, args: &[&str]) -> Child {
    rtlab()
        .args(args)
        .current_dir(dir)
        .env("RTLAB_JOURNAL_DIR", journal_dir(dir))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn signal(child: &Child, sig: i32) {
    let status = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn fifo_timer_thread_runs_on_the_chosen_cpu() {
    let _machine = crate::fixtures::machine_shared();
    if !root_or_refusal("fifo_timer_thread_runs_on_the_chosen_cpu") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_cfg(
        dir.path(),
        "t.cfg",
        "timer_thread[0]\n{\n cpu_affinity @M\n sched.policy FIFO\n sched.priority 90\n \
         timer.period 500 us\n lifetime.loops 400\n stats.histo_size 50 us\n}\n",
    );
    let o = run_in(
        dir.path(),
        &["run", cfg.to_str().unwrap(), "--json", "r.json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = json(&dir.path().join("r.json"));
    let t = &r["timers"][0];
    assert_eq!(r["schema"], "rtlab-result/1");
    assert_eq!(r["end"]["kind"], "completed");
    let m = measured_cpu();
    assert_eq!(t["cpus"], serde_json::json!([m]));
    assert_eq!(t["cpu_first"], m);
    assert_eq!(t["cpu_last"], m);
    assert_eq!(t["sched"]["policy"], "FIFO");
    assert_eq!(t["sched"]["priority"], 90);
    assert_eq!(t["period_ns"], 500_000);
    assert_eq!(t["summary"]["samples"], 400);
    assert_eq!(r["pm_qos"]["held"], true);
    // The histogram in the JSON and the result file agree on every sample.
    let hdr_total: u64 = t["hdr_histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["count"].as_u64().unwrap())
        .sum();
    assert_eq!(hdr_total, 400);
    let txt = std::fs::read_to_string(dir.path().join("timer_thread00.txt")).unwrap();
    let rows: Vec<&str> = txt.lines().take_while(|l| !l.is_empty()).collect();
    assert_eq!(rows.len(), 51);
    let in_hist: u64 = rows
        .iter()
        .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(
        in_hist + t["summary"]["beyond_histogram"].as_u64().unwrap(),
        400
    );
    assert!(txt.contains("#                            SUMMARY"));
    assert!(txt.contains("p99.99"));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("Statistics for timer_thread[0] in 'timer_thread00.txt'"));
    assert!(stdout.contains("Total elapsed time: 0 minutes, "));
    assert!(stdout.starts_with("Index     TID  Samples    L_min    L_max    L_cur    L_avg\n"));
}

/// Each CPU's steal time over the run is the kernel's own count: within
/// what the counters moved around the run, in whole USER_HZ ticks
/// (`getconf CLK_TCK`), and said as a warning when a measured CPU lost any;
/// the final table's steal lines are the same figures.
#[test]
fn steal_time_is_the_kernels_count_and_said_when_a_measured_cpu_lost_some() {
    let test = test_name!();
    let _machine = crate::fixtures::machine_shared();
    if !root_or_refusal(test) {
        return;
    }
    let hz: f64 = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0);
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_cfg(
        dir.path(),
        "t.cfg",
        "timer_thread[0]\n{\n cpu_affinity @M\n sched.policy FIFO\n sched.priority 90\n \
         timer.period 1 ms\n lifetime.duration 2 s\n}\n",
    );
    let before = crate::fixtures::steal_ticks_all();
    let o = run_in(
        dir.path(),
        &["run", cfg.to_str().unwrap(), "--json", "r.json"],
    );
    let after = crate::fixtures::steal_ticks_all();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = json(&dir.path().join("r.json"));
    let steal = r["steal_ms"].as_array().expect("steal_ms");
    let mut measured_lost = false;
    assert!(!before.is_empty(), "no cpuN line in /proc/stat");
    for &(cpu, was) in &before {
        let ms = steal
            .iter()
            .find(|e| e[0].as_u64() == Some(cpu as u64))
            .and_then(|e| e[1].as_f64())
            .unwrap_or_else(|| panic!("CPU {cpu} missing: {steal:?}"));
        let ticks = ms * hz / 1000.0;
        assert!(
            (ticks - ticks.round()).abs() < 1e-6,
            "CPU {cpu}: {ms} ms is not whole ticks"
        );
        let now = after
            .iter()
            .find_map(|&(c, t)| (c == cpu).then_some(t))
            .unwrap_or(u64::MAX);
        let most = now.saturating_sub(was) as f64;
        assert!(
            ticks >= 0.0 && ticks <= most,
            "CPU {cpu}: {ticks} ticks, the counter moved {most}"
        );
        measured_lost |= cpu == measured_cpu() && ms > 0.0;
        // The final table's steal line is the result's figure, and only
        // a CPU that lost some has one.
        let stdout = String::from_utf8_lossy(&o.stdout);
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("Steal CPU#{cpu} :")));
        match line {
            Some(l) => assert!(
                ms > 0.0 && l.ends_with(&format!("({ms:.1} ms since the start)")),
                "{l} vs {ms} ms"
            ),
            None => assert_eq!(ms, 0.0, "no steal line for CPU {cpu}:\n{stdout}"),
        }
    }
    let said = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap_or("").contains("steal time"));
    assert_eq!(said, measured_lost, "{steal:?} {}", r["warnings"]);
    path_taken(
        test,
        &format!("steal {steal:?} ms at {hz} ticks/s; warned: {said}"),
    );
}

#[test]
fn programs_exit_fail_and_crash_with_respawn_and_backoff() {
    let _machine = crate::fixtures::machine_shared();
    if !root_or_refusal("programs_exit_fail_and_crash_with_respawn_and_backoff") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_cfg(
        dir.path(),
        "p.cfg",
        "timer_thread[0]\n{\n cpu_affinity @M\n sched.policy FIFO\n sched.priority 80\n lifetime.duration 3 s\n}\n\
         program[0]\n{\n cmdline true\n termination.ok RESPAWN\n}\n\
         program[1]\n{\n cmdline false\n termination.ko IGNORE\n}\n\
         program[2]\n{\n cmdline sh -c \"kill -SEGV $$\"\n termination.ko RESPAWN\n}\n\
         program[3]\n{\n cmdline sh -c \"echo out; echo err >&2; grep Cpus_allowed_list /proc/self/status; chrt -p $$\"\n \
         cpu_affinity @L\n sched.policy BATCH\n output.out o.txt\n output.err e.txt\n}\n",
    );
    let o = run_in(
        dir.path(),
        &["run", cfg.to_str().unwrap(), "--json", "r.json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = json(&dir.path().join("r.json"));
    let p = r["programs"].as_array().unwrap();
    // `true` is respawned, but its back-off keeps it from spinning: over 3 s
    // the delays 100, 200, 400, 800, 1600 ms allow about six starts.
    // Behaviour, not speed: respawned at least once, and never more often
    // than the back-off allows (a slow machine only starts it fewer times).
    let starts = p[0]["starts"].as_u64().unwrap();
    assert!((2..=6).contains(&starts), "true started {starts} times");
    assert_eq!(p[0]["exits"][0]["code"], 0);
    // `false` is ignored after its first exit.
    assert_eq!(p[1]["starts"], 1);
    assert_eq!(p[1]["exits"][0]["code"], 1);
    // The crash is seen as a signal and respawned with growing gaps.
    let crashes = p[2]["exits"].as_array().unwrap();
    assert!(crashes.len() >= 3, "{crashes:?}");
    assert!(crashes.iter().all(|e| e["signal"] == 11));
    let at: Vec<f64> = crashes
        .iter()
        .map(|e| e["at_s"].as_f64().unwrap())
        .collect();
    let gaps: Vec<f64> = at.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        gaps.windows(2).all(|g| g[1] > g[0]),
        "back-off gaps should grow: {gaps:?}"
    );
    // The placement table names real processes: the first instance's PID,
    // which is also the PID of its first recorded end.
    let placement = r["isolation"]["placement"].as_array().unwrap();
    let prog3 = placement.iter().find(|p| p["who"] == "program[3]").unwrap();
    assert!(prog3["id"].as_i64().unwrap() > 1, "{prog3}");
    assert_eq!(prog3["id"], p[3]["first_pid"]);
    assert_eq!(p[3]["exits"][0]["pid"], p[3]["first_pid"]);
    let main = placement.iter().find(|p| p["who"] == "main").unwrap();
    assert!(main["id"].as_i64().unwrap() > 1);
    if let Some(mount) = r["isolation"]["cpuset"]["mount"].as_str() {
        assert!(mount.starts_with('/'), "{mount}");
    }
    // Redirection, affinity and policy of a program.
    let out = std::fs::read_to_string(dir.path().join("o.txt")).unwrap();
    assert!(out.starts_with("out\n"), "{out}");
    assert!(
        out.contains(&format!("Cpus_allowed_list:\t{}\n", load_cpu())),
        "{out}"
    );
    assert!(out.contains("SCHED_BATCH"), "{out}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("e.txt")).unwrap(),
        "err\n"
    );
}

#[test]
fn abort_program_ends_the_run_and_names_it() {
    let _machine = crate::fixtures::machine_shared();
    if !root_or_refusal("abort_program_ends_the_run_and_names_it") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_cfg(
        dir.path(),
        "a.cfg",
        "timer_thread[0]\n{\n cpu_affinity @M\n sched.policy FIFO\n sched.priority 80\n}\n\
         program[0]\n{\n cmdline sh -c \"sleep 0.5; exit 3\"\n termination.ko ABORT\n}\n",
    );
    let o = run_in(dir.path(), &["-c", cfg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("program[0] (`sh -c sleep 0.5; exit 3`) ended with exit status 3"),
        "{stderr}"
    );
    let txt = std::fs::read_to_string(dir.path().join("timer_thread00.txt")).unwrap();
    assert!(txt.contains("SUMMARY"));
}

#[test]
fn sigint_mid_run_writes_every_file_and_leaves_no_process() {
    let _machine = crate::fixtures::machine_shared();
    if !root_or_refusal("sigint_mid_run_writes_every_file_and_leaves_no_process") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_cfg(
        dir.path(),
        "i.cfg",
        "main\n{\n stats.format csv\n}\n\
         timer_thread[0]\n{\n cpu_affinity @M\n sched.policy FIFO\n sched.priority 80\n}\n\
         timer_thread[1]\n{\n cpu_affinity @L\n timer.period 2 ms\n}\n\
         program[0]\n{\n cmdline sh -c \"sleep 2718 & sleep 2718\"\n}\n",
    );
    let child = spawn_in(
        dir.path(),
        &["run", cfg.to_str().unwrap(), "--json", "r.json"],
    );
    assert!(wait_until(Duration::from_secs(10), || {
        !live_processes_with("sleep 2718").is_empty()
    }));
    // While it runs, the PM QoS request is held at 0 µs.
    let qos = std::fs::read("/dev/cpu_dma_latency").unwrap();
    assert_eq!(i32::from_ne_bytes(qos[..4].try_into().unwrap()), 0);
    std::thread::sleep(Duration::from_millis(700));
    signal(&child, 2);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    let r = json(&dir.path().join("r.json"));
    assert_eq!(r["interrupted"], true);
    assert_eq!(r["end"]["signal"], "SIGINT");
    for (i, t) in r["timers"].as_array().unwrap().iter().enumerate() {
        assert!(t["summary"]["samples"].as_u64().unwrap() > 0);
        let csv =
            std::fs::read_to_string(dir.path().join(format!("timer_thread{i:02}.csv"))).unwrap();
        assert!(csv.starts_with("latency_us,count\n0,"));
        assert!(csv.contains("SUMMARY"));
    }
    assert!(live_processes_with("sleep 2718").is_empty());
}

#[test]
fn sigkill_of_rtlab_leaves_no_process_behind() {
    let _machine = crate::fixtures::machine_shared();
    if !root_or_refusal("sigkill_of_rtlab_leaves_no_process_behind") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A grandchild in the program's group, and one that escapes it (setsid).
    let cfg = write_cfg(
        dir.path(),
        "k.cfg",
        "timer_thread[0]\n{\n cpu_affinity @M\n sched.policy FIFO\n sched.priority 80\n}\n\
         program[0]\n{\n cmdline sh -c \"sleep 3141 & setsid sleep 3142 & wait\"\n}\n",
    );
    let mut child = spawn_in(dir.path(), &["run", cfg.to_str().unwrap()]);
    assert!(wait_until(Duration::from_secs(10), || live_processes_with(
        "sleep 314"
    )
    .len()
        >= 2));
    let guard = guard_of(child.id()).expect("rtlab started a guard process");
    assert!(is_live(guard));
    signal(&child, 9);
    let _ = child.wait();
    assert!(
        wait_until(Duration::from_secs(10), || live_processes_with("sleep 314")
            .is_empty()),
        "left behind: {:?}",
        live_processes_with("sleep 314")
    );
    // The guard did its work and ended too.
    assert!(
        wait_until(Duration::from_secs(5), || !is_live(guard)),
        "guard {guard} still running"
    );
    // The dead run's journal is still there; the next run restores it first
    // and says so, and leaves no journal behind.
    let journal = journal_dir(dir.path()).join(format!("run-{}.journal", child.id()));
    assert!(journal.exists(), "the killed run left its journal");
    let next = write_cfg(
        dir.path(),
        "n.cfg",
        "timer_thread[0]\n{\n lifetime.loops 10\n}\n",
    );
    let out = run_in(dir.path(), &["run", next.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("restored first"),
        "{}",
        text(&out)
    );
    assert!(!journal.exists());
}

#[test]
fn what_an_ended_program_left_in_its_group_does_not_outlive_the_run() {
    let _machine = crate::fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    // The program ends at once; the sleep it started stays in its group.
    let cfg = write_cfg(
        dir.path(),
        "left.cfg",
        "timer_thread[0]\n{\n cpu_affinity @M\n sched.policy OTHER\n sched.priority 0\n \
         lifetime.duration 1 s\n}\n\
         program[0]\n{\n cmdline sh -c \"sleep 2720 & exit 0\"\n}\n",
    );
    // Without root (as nobody when the tests run as root): no tracking
    // cgroup then, the process group alone must do.
    let Some(mut cmd) = crate::fixtures::rtlab_unprivileged(dir.path()) else {
        path_taken(
            "what_an_ended_program_left_in_its_group_does_not_outlive_the_run",
            "no user nobody to run without root",
        );
        return;
    };
    let o = cmd
        .args(["run", cfg.to_str().unwrap()])
        .current_dir(dir.path())
        .env("RTLAB_JOURNAL_DIR", journal_dir(dir.path()))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // Gone when rtlab is: checked at once, not waited for.
    let left = live_processes_with("sleep 2720");
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn missing_command_is_refused_before_start() {
    let _machine = crate::fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_cfg(
        dir.path(),
        "m.cfg",
        "timer_thread[0]\n{\n lifetime.loops 10\n}\nprogram[0]\n{\n  cmdline sh -c \"touch started\"\n}\n\
         program[1]\n{\n  cmdline no-such-command-xyz --flag\n}\n",
    );
    let o = run_in(dir.path(), &["run", "m.cfg"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("m.cfg:11:11: error: program[1]: command `no-such-command-xyz` not found"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was started"));
    // Nothing ran and nothing was written.
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, vec![cfg.file_name().unwrap().to_owned()]);
}

#[test]
fn an_outdir_that_cannot_be_made_is_refused_before_start() {
    let _machine = crate::fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    write_cfg(
        dir.path(),
        "o.cfg",
        "timer_thread[0]\n{\n lifetime.loops 10\n}\n",
    );
    std::fs::write(dir.path().join("plain-file"), "").unwrap();
    let o = run_in(
        dir.path(),
        &["run", "o.cfg", "--outdir", "plain-file/results"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("o.cfg:1:1: error: plain-file/results: `plain-file` is not a directory"),
        "{err}"
    );
    assert!(o.stdout.is_empty(), "nothing may run: {}", text(&o));
}

#[test]
fn a_bad_file_reports_every_problem_and_exits_2() {
    let _machine = crate::fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let offline = measured_cpu() + 1;
    write_cfg(
        dir.path(),
        "b.cfg",
        &format!(
            "main\n{{\n  stats.period 1500\n}}\ntimer_thread[0]\n{{\n  sched.prority 99\n  cpu_affinity {offline}\n}}\n\
             timer_thread[1]\n{{\n  sched.policy FIFO\n  sched.priority 150\n}}\n\
             program[0]\n{{\n  cmdline no-such-command-xyz\n}}\nprogram[1]\n{{\n  output.out x\n}}\n"
        ),
    );
    let o = run_in(dir.path(), &["--cfg=b.cfg"]);
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("b.cfg:3:20: error: `stats.period`: duration `1500` has no unit"),
        "{stderr}"
    );
    assert!(
        stderr.contains("b.cfg:7:3: error: unknown key `sched.prority`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: did you mean `sched.priority`?"),
        "{stderr}"
    );
    // The machine's part is checked too, at once: the CPU that is not online
    // (one past the last online CPU never is), the command not found.
    assert!(
        stderr.contains(&format!("b.cfg:8:16: error: CPU {offline} is not online")),
        "{stderr}"
    );
    assert!(
        stderr.contains("b.cfg:13:18: error: FIFO priority 150 is out of range 1..99"),
        "{stderr}"
    );
    assert!(
        stderr.contains("b.cfg:17:11: error: program[0]: command `no-such-command-xyz` not found"),
        "{stderr}"
    );
    assert!(
        stderr.contains("b.cfg:19:1: error: program[1] has no `cmdline`"),
        "{stderr}"
    );
    assert!(stderr.contains("6 problems in b.cfg"), "{stderr}");
    // The offline CPU alone, in a file that parses.
    write_cfg(
        dir.path(),
        "c.cfg",
        &format!("timer_thread[0]\n{{\n  cpu_affinity {offline}\n}}\n"),
    );
    let o = run_in(dir.path(), &["run", "c.cfg"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains(&format!("c.cfg:3:16: error: CPU {offline} is not online")),
        "{}",
        text(&o)
    );
}

#[test]
fn example_files_run_or_are_refused_as_their_readme_says() {
    let _machine = crate::fixtures::machine_shared();
    if !root_or_refusal("example_files_run_or_are_refused_as_their_readme_says") {
        return;
    }
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let test = test_name!();
    let online = crate::fixtures::online_cpus();
    let dir = tempfile::tempdir().unwrap();
    // host.cfg and host2.cfg name CPUs 0-7: checked (not run for a minute)
    // where the machine has them, refused with the CPUs named where not.
    for name in ["host.cfg", "host2.cfg"] {
        let o = run_in(
            dir.path(),
            &["check", examples.join(name).to_str().unwrap()],
        );
        if (0..8).all(|c| online.contains(&c)) {
            path_taken(
                test,
                &format!("{name}: CPUs 0-7 online, the file checks OK"),
            );
            assert_eq!(o.status.code(), Some(0), "{name}: {}", text(&o));
        } else {
            path_taken(
                test,
                &format!("{name}: CPUs 0-7 not all online, refusal checked"),
            );
            assert_eq!(o.status.code(), Some(2), "{name}: {}", text(&o));
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert!(
                stderr.contains("is not online") || stderr.contains("are not online"),
                "{stderr}"
            );
            assert!(
                stderr.contains("this machine's online CPUs are"),
                "{stderr}"
            );
        }
    }
    // Where the file cannot run here, its refusal names the reason.
    let refusal = if !(online.contains(&0) && online.contains(&1)) {
        Some(("CPUs 0 and 1 not both online", "not online"))
    } else if !crate::fixtures::has_command("ping") {
        Some(("no `ping`", "`ping` not found"))
    } else {
        None
    };
    if let Some((why, says)) = refusal {
        path_taken(test, &format!("two-cpu.cfg: {why}, refusal checked"));
        let o = run_in(
            dir.path(),
            &["check", examples.join("two-cpu.cfg").to_str().unwrap()],
        );
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(says),
            "{}",
            text(&o)
        );
        return;
    }
    path_taken(test, "two-cpu.cfg: CPUs 0 and 1 online, run for real");
    let o = run_in(
        dir.path(),
        &[
            "run",
            examples.join("two-cpu.cfg").to_str().unwrap(),
            "--json",
            "r.json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "two-cpu.cfg: {}", text(&o));
    let r = json(&dir.path().join("r.json"));
    assert!(r["timers"][0]["summary"]["samples"].as_u64().unwrap() > 0);
    assert_eq!(r["end"]["kind"], "completed");
    assert!(
        r["programs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["starts"].as_u64().unwrap() >= 1)
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("CPU#0 :") && stdout.contains("CPU    :"),
        "{stdout}"
    );
    let txt = std::fs::read_to_string(dir.path().join("timer_thread00.txt")).unwrap();
    assert_eq!(txt.lines().take_while(|l| !l.is_empty()).count(), 21);
}

#[test]
fn builtin_experiment_runs_one_fifo_99_thread_per_cpu() {
    let _machine = crate::fixtures::machine_shared();
    if !root_or_refusal("builtin_experiment_runs_one_fifo_99_thread_per_cpu") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let o = run_in(dir.path(), &["run", "--json", "r.json", "--outdir", "out"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = json(&dir.path().join("r.json"));
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    assert_eq!(r["system"]["cpus_online"], online.trim());
    let timers = r["timers"].as_array().unwrap();
    assert_eq!(timers.len(), r["plan"]["timers"].as_array().unwrap().len());
    for (i, t) in timers.iter().enumerate() {
        assert_eq!(t["sched"]["policy"], "FIFO");
        assert_eq!(t["sched"]["priority"], 99);
        assert_eq!(t["cpu_first"], t["cpus"][0]);
        // As many samples as the histogram holds (how many a loaded VM
        // managed in 10 s is speed, not behaviour).
        let samples = t["summary"]["samples"].as_u64().unwrap();
        assert!(samples > 0);
        let in_hdr: u64 = t["hdr_histogram"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["count"].as_u64().unwrap())
            .sum();
        assert_eq!(in_hdr, samples);
        assert!(
            dir.path()
                .join(format!("out/timer_thread{i:02}.txt"))
                .exists()
        );
    }
}

#[test]
fn systress_command_line() {
    let _machine = crate::fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let o = run_in(dir.path(), &["-V"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!("rtlab {}\n", env!("CARGO_PKG_VERSION"))
    );
    let o = run_in(dir.path(), &["-h"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("-c, --cfg <FILE>"));
    write_cfg(
        dir.path(),
        "s.cfg",
        "timer_thread[0]\n{\n lifetime.loops 20\n}\n",
    );
    for args in [
        &["-c", "s.cfg"][..],
        &["--cfg=s.cfg"],
        &["-d", "2", "-c", "s.cfg"],
    ] {
        let o = run_in(dir.path(), args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains("Statistics for timer_thread[0]"));
    }
    let o = run_in(dir.path(), &["-d", "2", "-c", "s.cfg"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("timer threads released"));
    let o = run_in(dir.path(), &["--no-such-flag"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run_in(dir.path(), &["check", "s.cfg"]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "s.cfg: OK (1 timer thread, 0 programs)\n"
    );
}

#[test]
fn real_time_without_privilege_is_refused_with_cause_and_fix() {
    let _machine = crate::fixtures::machine_shared();
    // Really drop root: run as nobody, with no capabilities. The binary and
    // the file are copied where nobody can reach them whatever the checkout's
    // directory permissions are.
    use std::os::unix::fs::PermissionsExt;
    let base = std::env::temp_dir().join(format!("rtlab-nobody-{}", std::process::id()));
    std::fs::create_dir_all(&base).unwrap();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = base.join("rtlab");
    std::fs::copy(env!("CARGO_BIN_EXE_rtlab"), &exe).unwrap();
    let cfg = base.join("two-cpu.cfg");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/two-cpu.cfg"),
        &cfg,
    )
    .unwrap();
    for f in [&exe, &cfg] {
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let o = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(&exe)
        .args(["check", cfg.to_str().unwrap()])
        .current_dir("/")
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&base);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("two-cpu.cfg:18:18: error: timer_thread[0]: FIFO priority 99 needs root, CAP_SYS_NICE or RLIMIT_RTPRIO >= 99"), "{stderr}");
    assert!(stderr.contains("hint: run with sudo"), "{stderr}");
}

#[test]
fn sigusr1_prints_a_snapshot_and_the_run_goes_on() {
    let _machine = crate::fixtures::machine_shared();
    if !root_or_refusal("sigusr1_prints_a_snapshot_and_the_run_goes_on") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_cfg(
        dir.path(),
        "u.cfg",
        "timer_thread[0]\n{\n cpu_affinity @M\n sched.policy FIFO\n sched.priority 80\n lifetime.duration 3 s\n}\n",
    );
    let child = spawn_in(
        dir.path(),
        &[
            "run",
            cfg.to_str().unwrap(),
            "--json",
            "r.json",
            "--outdir",
            "out",
        ],
    );
    // The run has started when its journal exists (the signal handlers are
    // installed before it).
    assert!(wait_until(Duration::from_secs(10), || {
        std::fs::read_dir(journal_dir(dir.path())).is_ok_and(|mut d| d.next().is_some())
    }));
    signal(&child, 10);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("rtlab: snapshot at"), "{stderr}");
    assert!(stderr.contains("Index     TID  Samples"), "{stderr}");
    let r = json(&dir.path().join("r.json"));
    assert_eq!(r["end"]["kind"], "completed");
    assert_eq!(r["interrupted"], false);
    // The closing line names the file where it really is.
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("Statistics for timer_thread[0] in 'out/timer_thread00.txt'"),
        "{stdout}"
    );
    assert!(dir.path().join("out/timer_thread00.txt").exists());
    assert_eq!(r["timers"][0]["result_file"], "out/timer_thread00.txt");
}

#[test]
fn a_closed_output_pipe_ends_a_command_quietly() {
    let _machine = crate::fixtures::machine_shared();
    // `rtlab threads | head -1`: the rest of the list is lost, nothing else.
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{}' threads | head -1; '{}' irq --watch 20ms --count 100000 | head -1",
            env!("CARGO_BIN_EXE_rtlab"),
            env!("CARGO_BIN_EXE_rtlab")
        ))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.starts_with("    TID"), "{stdout}");
    assert!(o.stderr.is_empty(), "{}", text(&o));
    // The watch loop ends at its next write: by SIGPIPE, never exit 101.
    use std::io::BufRead;
    use std::os::unix::process::ExitStatusExt;
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args(["irq", "--watch", "20ms", "--count", "100000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.signal(), Some(13), "{}", text(&o));
    assert!(o.stderr.is_empty(), "{}", text(&o));
}

#[test]
fn a_gate_with_one_run_fails() {
    let _machine = crate::fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let recorded = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/cyclictest-stdout.txt");
    let o = run_in(
        dir.path(),
        &[
            "compare",
            recorded.to_str().unwrap(),
            "--fail-if",
            "p99>+10%",
        ],
    );
    assert_eq!(o.status.code(), Some(6), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("only one run"),
        "{}",
        text(&o)
    );
    // An absolute bound needs no baseline.
    let o = run_in(
        dir.path(),
        &[
            "compare",
            recorded.to_str().unwrap(),
            "--fail-if",
            "max>1000ms",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// The resident, locked and whole sizes (KiB) of the executable mapping of
/// `exe` in process `pid`.
fn code_sizes(pid: u32, exe: &Path) -> Option<(u64, u64, u64)> {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).ok()?;
    let exe = exe.to_str()?;
    let mut lines = smaps.lines();
    while let Some(line) = lines.next() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 6 || f[1] != "r-xp" || f[5..].join(" ") != exe {
            continue;
        }
        let mut get = |key: &str| -> Option<u64> {
            lines
                .by_ref()
                .find_map(|l| l.strip_prefix(key))?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        };
        // smaps lists Size, Rss, ..., Locked in this order.
        let (size, rss, locked) = (get("Size:")?, get("Rss:")?, get("Locked:")?);
        return Some((rss, locked, size));
    }
    None
}

/// One run of `exe` with `memlock`: its output, its code's resident,
/// locked and whole sizes once they settled (or the last seen), and its
/// timer thread's result.
fn locked_run(exe: &Path) -> (Output, Option<(u64, u64, u64)>, bool, Value) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_cfg(
        dir.path(),
        "m.cfg",
        "main\n{\n memlock\n stats.period 200 ms\n}\ntimer_thread[0]\n{\n cpu_affinity @M\n \
         sched.policy FIFO\n sched.priority 90\n timer.period 200 us\n lifetime.loops 15000\n}\n",
    );
    let child = Command::new(exe)
        .args(["run", "-d", "1", cfg.to_str().unwrap(), "--json", "r.json"])
        .current_dir(dir.path())
        .env("RTLAB_JOURNAL_DIR", journal_dir(dir.path()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let exe = std::fs::canonicalize(exe).unwrap();
    let mut seen = None;
    let settled = wait_until(Duration::from_secs(20), || {
        seen = code_sizes(pid, &exe);
        seen.is_some_and(|(rss, locked, size)| locked == rss && rss > 0 && rss * 2 < size)
    });
    // Past the second let-go (after the first 200 ms refresh), the whole
    // process stopped for 20 ms: the timer thread wakes past its next
    // deadlines and takes the overrun path, whose code and constants must
    // be resident too (they were not: a rodata constant faulted once a run).
    std::thread::sleep(Duration::from_millis(600));
    signal(&child, 19); // SIGSTOP
    std::thread::sleep(Duration::from_millis(20));
    signal(&child, 18); // SIGCONT
    let o = crate::fixtures::wait_output_within(child, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = json(&dir.path().join("r.json"))["timers"][0].clone();
    (o, seen, settled, t)
}

/// Sets `vm.compact_unevictable_allowed` to 0 for a test, and back: with
/// it on (the default but on PREEMPT_RT), compaction may move locked pages,
/// which costs their owner a minor fault.
struct NoCompactionOfLockedPages(Option<String>);

impl NoCompactionOfLockedPages {
    const KNOB: &str = "/proc/sys/vm/compact_unevictable_allowed";

    fn new() -> Self {
        let before = std::fs::read_to_string(Self::KNOB).ok();
        if before.is_some() {
            let _ = std::fs::write(Self::KNOB, "0");
        }
        NoCompactionOfLockedPages(before)
    }
}

impl Drop for NoCompactionOfLockedPages {
    fn drop(&mut self) {
        if let Some(v) = &self.0 {
            let _ = std::fs::write(Self::KNOB, v.trim());
        }
    }
}

/// With `memlock`, what stays locked is what the run uses, not the whole
/// binary (start-up code and plotting are let go, `MCL_ONFAULT`), and the
/// timer thread takes no page fault while it measures: the kernel's own
/// counts say so (its smaps, and getrusage of the thread). Of the release
/// binary as shipped (static x86_64 musl, docs/boards.md): the code kept
/// resident for the timer threads is found by address, which holds for an
/// optimised build. A fault the machine causes (a locked page moved by
/// compaction, with the knob off for the test; NUMA balancing) is rare: a
/// second run must then have none, where a callee missing from the code
/// kept mapped faults in every run. The process is stopped once mid-run
/// so that the overrun path runs too.
#[test]
fn locked_memory_is_what_the_run_uses_and_the_timer_takes_no_fault() {
    let test = test_name!();
    let _machine = crate::fixtures::machine_exclusive();
    if !root_or_refusal(test) {
        return;
    }
    let target = format!("{}-unknown-linux-musl", std::env::consts::ARCH);
    let (exe, release) = match crate::fixtures::release_binary(&target) {
        Ok(bin) => (bin, true),
        Err(why) => {
            path_taken(
                test,
                &format!("{why}: the debug binary, faults not checked"),
            );
            (PathBuf::from(env!("CARGO_BIN_EXE_rtlab")), false)
        }
    };
    let _compaction = NoCompactionOfLockedPages::new();
    let (o, seen, settled, t) = locked_run(&exe);
    let stderr = String::from_utf8_lossy(&o.stderr);
    if stderr.contains("memory locked: Whole") {
        path_taken(test, "MCL_ONFAULT refused: the binary is locked whole");
    } else {
        assert!(
            settled,
            "code resident, locked, whole (KiB): {seen:?}\n{}",
            text(&o)
        );
        path_taken(
            test,
            &format!("code resident, locked, whole (KiB): {seen:?}"),
        );
    }
    assert!(stderr.contains("start-up pages let go"), "{}", text(&o));
    assert_eq!(t["summary"]["samples"], 15000);
    assert!(
        t["summary"]["overruns"].as_u64() > Some(0),
        "stopped for 20 ms, yet no overrun: {}",
        t["summary"]
    );
    let usage = &t["measuring"];
    // Each sample sleeps once, unless its deadline had passed; the stop
    // adds a switch into the stopped state and a sleep restarted after it.
    let voluntary = usage["voluntary_switches"].as_u64().unwrap();
    assert!(voluntary > 0 && voluntary <= 15002, "{usage}");
    let balancing =
        std::fs::read_to_string("/proc/sys/kernel/numa_balancing").is_ok_and(|s| s.trim() != "0");
    let faults =
        |u: &Value| u["minor_faults"].as_u64().unwrap() + u["major_faults"].as_u64().unwrap();
    if balancing || !release {
        path_taken(test, &format!("faults not checked: {usage}"));
    } else if faults(usage) > 0 {
        let again = locked_run(&exe).3;
        path_taken(
            test,
            &format!(
                "faults {usage}, then in a second run {}",
                again["measuring"]
            ),
        );
        assert_eq!(
            faults(&again["measuring"]),
            0,
            "{usage} then {}",
            again["measuring"]
        );
    }
}

#[test]
fn one_off_options_run_what_print_shows() {
    let _machine = crate::fixtures::machine_shared();
    if !root_or_refusal("one_off_options_run_what_print_shows") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cpu = crate::fixtures::measured_cpu().to_string();
    let opts = [
        "--cpus",
        &cpu,
        "--period",
        "500us",
        "--loops",
        "300",
        "--priority",
        "91",
        "--histo-size",
        "250 us",
    ];
    // --print writes the experiment; the same options run it.
    let printed = run_in(dir.path(), &[&["run", "--print"][..], &opts].concat());
    assert_eq!(printed.status.code(), Some(0), "{}", text(&printed));
    std::fs::write(dir.path().join("printed.cfg"), &printed.stdout).unwrap();
    let o = run_in(
        dir.path(),
        &[&["run", "--json", "r.json"][..], &opts].concat(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = json(&dir.path().join("r.json"));
    let t = &r["timers"][0];
    assert_eq!(r["timers"].as_array().unwrap().len(), 1);
    assert_eq!(t["cpus"][0].to_string(), cpu);
    assert_eq!(t["sched"]["priority"], 91);
    assert_eq!(t["period_ns"], 500_000);
    assert_eq!(t["histo_size_us"], 250);
    assert_eq!(t["summary"]["samples"], 300);
    // The printed file runs as the options did.
    let o = run_in(dir.path(), &["check", "printed.cfg"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // A bad value is refused with the option named.
    let o = run_in(dir.path(), &["run", "--cpus", &cpu, "--period", "2x"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--period 2x"),
        "{}",
        text(&o)
    );
}

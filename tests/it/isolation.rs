//! Integration tests of CPU partitions on the real kernel (this machine's
//! cgroup v1 cpuset, as root): create, show, run, undo, SIGKILL then
//! `rtlab restore`, each compared file by file with the state before.
//!
//! Partitions move every task of the machine, so each test holds the
//! machine alone (`machine_exclusive`). Needs root (else checks refusals).

use crate::fixtures::{online_cpus, path_taken, text, wait_until};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const CPUSET: &str = "/sys/fs/cgroup/cpuset";

/// A test's own journal directory; whatever happens, the test ends with
/// `rtlab restore` so that a failure does not leave partitions behind.
struct Bench {
    dir: tempfile::TempDir,
}

impl Bench {
    /// A bench where this machine allows a real partition: root, two CPUs
    /// or more, and the cgroup v1 cpuset hierarchy these tests compare file
    /// by file. Elsewhere it checks what rtlab does instead, says which path
    /// it took, and gives None: the test ends there.
    fn new(test: &str) -> Option<Bench> {
        let bench = Bench {
            dir: tempfile::tempdir().unwrap(),
        };
        let last = online_cpus().last().copied().unwrap_or(0).to_string();
        if !crate::fixtures::is_root() {
            crate::fixtures::assert_refused_without_root(test, &["partition", "create", &last]);
            return None;
        }
        if online_cpus().len() < 2 {
            let o = bench.run(&["partition", "create", &last]);
            assert_eq!(o.status.code(), Some(2), "{}", text(&o));
            path_taken(
                test,
                "one CPU: checked that rtlab refuses to isolate it (status 2)",
            );
            return None;
        }
        if !Path::new(CPUSET).join("cpuset.cpus").exists() {
            // Partitions on cgroup v2 are tested on fake trees
            // (src/isolate/tests.rs); here, the real kernel's answer.
            let o = bench.run(&["partition", "show"]);
            let shown = String::from_utf8_lossy(&o.stdout).to_string();
            let has_v2_cpuset = crate::fixtures::v2_controllers()
                .iter()
                .any(|c| c == "cpuset");
            if has_v2_cpuset {
                assert!(o.status.success(), "{}", text(&o));
                path_taken(
                    test,
                    "cgroup v2 cpuset only: `partition show` checked; create/undo are tested on fake trees",
                );
            } else {
                let o = bench.run(&["partition", "create", &last]);
                assert_ne!(o.status.code(), Some(0), "{}", text(&o));
                assert!(
                    String::from_utf8_lossy(&o.stderr).contains("no cpuset controller"),
                    "{}{shown}",
                    text(&o)
                );
                path_taken(test, "no cpuset controller: checked the refusal");
            }
            return None;
        }
        if let Some(other) = foreign_cpuset_on(rt_cpu()) {
            // A container engine's cpuset (podman's libpod_parent, docker)
            // holding the CPU: an exclusive cpuset cannot share it, and
            // rtlab says which one, changing nothing.
            let before = snapshot();
            let o = bench.run(&["partition", "create", &rt_cpu().to_string()]);
            assert_eq!(o.status.code(), Some(1), "{}", text(&o));
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                err.contains(&format!("cpusets {other} also use these CPUs")),
                "{}",
                text(&o)
            );
            assert_same(&before, &snapshot());
            path_taken(
                test,
                &format!(
                    "the cpuset {other} holds CPU {}: checked the refusal naming it, nothing changed",
                    rt_cpu()
                ),
            );
            return None;
        }
        path_taken(
            test,
            "root, cgroup v1 cpuset, two CPUs or more: real partitions",
        );
        Some(bench)
    }

    fn journal_dir(&self) -> PathBuf {
        self.dir.path().join("journal")
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rtlab"));
        c.args(args)
            .current_dir(self.dir.path())
            .env("RTLAB_JOURNAL_DIR", self.journal_dir());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    fn journals(&self) -> Vec<String> {
        std::fs::read_dir(self.journal_dir())
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        let _ = self.run(&["restore"]);
    }
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn list(dir: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path().display().to_string())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Every file and knob a partition can change, and every task's affinity and
/// cpuset, keyed by TID and start time.
#[derive(Debug)]
struct Snapshot {
    knobs: BTreeMap<String, String>,
    tasks: BTreeMap<(String, String), String>,
}

fn snapshot() -> Snapshot {
    let mut knobs = BTreeMap::new();
    let mut files: Vec<String> = [
        "cpuset.cpus",
        "cpuset.mems",
        "cpuset.cpu_exclusive",
        "cpuset.sched_load_balance",
        "cpuset.effective_cpus",
    ]
    .iter()
    .map(|f| format!("{CPUSET}/{f}"))
    .collect();
    files.extend(
        [
            "/proc/irq/default_smp_affinity",
            "/sys/devices/virtual/workqueue/cpumask",
            "/sys/bus/workqueue/devices/writeback/numa",
            "/proc/sys/kernel/watchdog",
            "/proc/sys/kernel/watchdog_cpumask",
            "/proc/sys/kernel/nmi_watchdog",
            "/proc/sys/kernel/timer_migration",
            "/proc/sys/kernel/sched_rt_runtime_us",
            "/proc/sys/vm/stat_interval",
        ]
        .map(String::from),
    );
    for irq in list("/proc/irq") {
        files.push(format!("{irq}/smp_affinity_list"));
    }
    for wq in list("/sys/devices/virtual/workqueue") {
        files.push(format!("{wq}/cpumask"));
    }
    for mc in list("/sys/devices/system/machinecheck") {
        files.push(format!("{mc}/check_interval"));
    }
    for f in files {
        if let Some(v) = read(&f) {
            knobs.insert(f, v);
        }
    }
    for d in list(CPUSET) {
        if Path::new(&d).is_dir() {
            knobs.insert(d, "cpuset directory".into());
        }
    }
    let mut tasks = BTreeMap::new();
    for proc_dir in list("/proc") {
        for task in list(&format!("{proc_dir}/task")) {
            let Some(stat) = read(&format!("{task}/stat")) else {
                continue;
            };
            let start = stat
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().nth(19))
                .unwrap_or("")
                .to_string();
            let tid = task.rsplit('/').next().unwrap_or("").to_string();
            let cpus = read(&format!("{task}/status"))
                .and_then(|s| {
                    s.lines().find_map(|l| {
                        l.strip_prefix("Cpus_allowed_list:")
                            .map(|v| v.trim().to_string())
                    })
                })
                .unwrap_or_default();
            let cpuset = read(&format!("{task}/cpuset")).unwrap_or_default();
            tasks.insert((tid, start), format!("cpus {cpus} cpuset {cpuset}"));
        }
    }
    Snapshot { knobs, tasks }
}

/// Every knob as before, and every task alive in both snapshots with the
/// same affinity and cpuset.
fn assert_same(before: &Snapshot, after: &Snapshot) {
    assert_eq!(before.knobs, after.knobs, "knobs or cpusets differ");
    let mut differ = Vec::new();
    for (key, was) in &before.tasks {
        if let Some(now) = after.tasks.get(key)
            && now != was
        {
            differ.push(format!("task {}: {was} -> {now}", key.0));
        }
    }
    assert!(differ.is_empty(), "tasks not put back: {differ:#?}");
}

/// A top-level cpuset that is not rtlab's whose CPUs include `cpu`.
fn foreign_cpuset_on(cpu: usize) -> Option<String> {
    list(CPUSET).into_iter().find_map(|path| {
        let name = path.rsplit('/').next().unwrap_or_default().to_string();
        let ours = ["rt", "nrt"].contains(&name.as_str()) || name.starts_with("rtlab");
        let cpus = read(&format!("{path}/cpuset.cpus")).unwrap_or_default();
        (!ours && cpus_of(&cpus).contains(&cpu)).then_some(name)
    })
}

/// The CPUs of a cpulist (`0-1,3`).
fn cpus_of(list: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
            out.extend(a..=b);
        }
    }
    out
}

/// The CPU to isolate: the last online one.
fn rt_cpu() -> usize {
    let online = read("/sys/devices/system/cpu/online").unwrap();
    let last = online.rsplit([',', '-']).next().unwrap();
    last.parse().unwrap()
}

#[test]
fn create_show_run_and_undo_leave_every_knob_as_before() {
    let _one = crate::fixtures::machine_exclusive();
    let Some(bench) = Bench::new("create_show_run_and_undo_leave_every_knob_as_before") else {
        return;
    };
    let rt = rt_cpu();
    let before = snapshot();

    let out = bench.run(&["partition", "create", &rt.to_string()]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&format!("rt   CPUs {rt}")), "{stdout}");
    assert!(
        stdout.contains("exclusive CPUs, no load balancing"),
        "{stdout}"
    );
    assert!(stdout.contains("moved to nrt"), "{stdout}");
    // This very test process was moved too.
    assert_eq!(read("/proc/self/cpuset").as_deref(), Some("/nrt"));
    assert_eq!(
        read(&format!("{CPUSET}/rt/cpuset.cpus")),
        Some(rt.to_string())
    );
    assert_eq!(
        read(&format!("{CPUSET}/rt/cpuset.sched_load_balance")).as_deref(),
        Some("0")
    );
    assert_eq!(
        read(&format!("{CPUSET}/cpuset.sched_load_balance")).as_deref(),
        Some("0")
    );
    assert_eq!(read("/proc/sys/vm/stat_interval").as_deref(), Some("1000"));

    // show, as text and JSON.
    let out = bench.run(&["partition", "show", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let state: Value = serde_json::from_slice(&out.stdout).unwrap();
    let parts = state["partitions"].as_array().unwrap();
    assert_eq!(parts[0]["name"], "rt");
    assert_eq!(parts[0]["cpus"], serde_json::json!([rt]));
    assert_eq!(parts[1]["name"], "nrt");
    assert!(parts[1]["tasks"].as_u64().unwrap() > 0);
    assert_eq!(state["cpus"][rt]["partition"], "rt");
    assert!(state.get("cmdline_isolcpus").is_some() && state.get("isolated").is_some());
    assert!(!state["changed_knobs"].as_array().unwrap().is_empty());
    let out = bench.run(&["partition", "show"]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("isolcpus="), "{shown}");
    assert!(shown.contains(&format!("{rt:<4} rt")), "{shown}");

    // run: a command inside rt sees itself there, on rt's CPU only.
    let out = bench.run(&[
        "partition",
        "run",
        "rt",
        "--",
        "grep",
        "-h",
        "Cpus_allowed_list",
        "/proc/self/status",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .ends_with(&format!("\t{rt}")),
        "{}",
        text(&out)
    );
    let out = bench.run(&["partition", "run", "rt", "--", "cat", "/proc/self/cpuset"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "/rt");
    let out = bench.run(&["partition", "run", "rt", "--", "sh", "-c", "exit 7"]);
    assert_eq!(out.status.code(), Some(7), "the command's own status");

    // An experiment: timer in rt, main and load in nrt.
    let cfg = bench.dir.path().join("iso.cfg");
    std::fs::write(
        &cfg,
        format!(
            "main\n{{\n  cpuset nrt\n}}\ntimer_thread[0]\n{{\n  cpuset rt\n  cpu_affinity {rt}\n  \
             sched.policy FIFO\n  sched.priority 90\n  lifetime.loops 200\n}}\n\
             program[0]\n{{\n  cmdline sleep 30\n  cpuset nrt\n}}\n"
        ),
    )
    .unwrap();
    let out = bench.run(&["run", cfg.to_str().unwrap(), "--json", "r.json"]);
    assert!(out.status.success(), "{}", text(&out));
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(bench.dir.path().join("r.json")).unwrap())
            .unwrap();
    let placement = result["isolation"]["placement"].as_array().unwrap();
    let at = |who: &str| {
        placement
            .iter()
            .find(|p| p["who"] == who)
            .unwrap_or_else(|| panic!("{who} not in {placement:?}"))["cpuset"]
            .clone()
    };
    assert_eq!(at("main"), "/nrt");
    assert_eq!(at("timer_thread[0]"), "/rt");
    assert_eq!(at("program[0]"), "/nrt");
    assert_eq!(result["timers"][0]["cpu_last"], serde_json::json!(rt));
    assert_eq!(result["isolation"]["partitions"][0]["name"], "rt");
    // The run's own journal is gone: it restored what it changed.
    assert_eq!(bench.journals(), vec!["partition.journal".to_string()]);

    let out = bench.run(&["partition", "undo"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("restored"));
    assert_same(&before, &snapshot());
    assert!(bench.journals().is_empty());
    // Idempotent.
    let out = bench.run(&["partition", "undo"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to undo"));
}

#[test]
fn sigkill_of_a_run_in_the_partition_then_restore_puts_everything_back() {
    let _one = crate::fixtures::machine_exclusive();
    let Some(bench) =
        Bench::new("sigkill_of_a_run_in_the_partition_then_restore_puts_everything_back")
    else {
        return;
    };
    let rt = rt_cpu();
    let before = snapshot();
    let out = bench.run(&["partition", "create", &format!("{:#x}", 1u64 << rt)]);
    assert!(out.status.success(), "{}", text(&out));
    let cfg = bench.dir.path().join("k.cfg");
    std::fs::write(
        &cfg,
        "timer_thread[0]\n{\n  cpuset rt\n  sched.policy FIFO\n  sched.priority 90\n}\n\
         program[0]\n{\n  cmdline sleep 2718\n}\n",
    )
    .unwrap();
    let mut child = bench
        .cmd(&["run", cfg.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_until(Duration::from_secs(10), || bench
        .journals()
        .iter()
        .any(|j| j.starts_with("run-"))));
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    let _ = child.wait();
    let out = bench.run(&["restore"]);
    assert!(out.status.success(), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("rtlab: restored"), "{said}");
    assert!(said.contains("cpuset/rt"), "{said}");
    assert!(bench.journals().is_empty(), "{:?}", bench.journals());
    // The guard killed the program; the restore removed the partition.
    assert!(wait_until(Duration::from_secs(5), || {
        !std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c.starts_with(b"sleep\x002718"))
        })
    }));
    assert_same(&before, &snapshot());
    // Idempotent.
    let out = bench.run(&["restore"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to restore"));
}

#[test]
fn sigkill_of_partition_create_itself_then_restore() {
    let _one = crate::fixtures::machine_exclusive();
    let Some(bench) = Bench::new("sigkill_of_partition_create_itself_then_restore") else {
        return;
    };
    let rt = rt_cpu();
    let before = snapshot();
    // Killed wherever it is: before, during or after the task moves. The
    // journal must undo whatever was done.
    for delay_ms in [2, 15] {
        let mut child = bench
            .cmd(&["partition", "create", &rt.to_string()])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap();
        let _ = child.wait();
        let out = bench.run(&["restore"]);
        assert!(out.status.success(), "{}", text(&out));
        assert_same(&before, &snapshot());
    }
}

#[test]
fn mistakes_are_refused_with_a_reason_and_change_nothing() {
    let _one = crate::fixtures::machine_exclusive();
    let Some(bench) = Bench::new("mistakes_are_refused_with_a_reason_and_change_nothing") else {
        return;
    };
    let rt = rt_cpu();
    let before = snapshot();
    let online = read("/sys/devices/system/cpu/online").unwrap();
    for (args, says) in [
        (
            vec!["partition", "create", online.as_str()],
            "nrt needs at least one",
        ),
        (vec!["partition", "create", "999"], "not online"),
        (vec!["partition", "create", "x"], "0x8"),
        (
            vec!["partition", "run", "rt", "--", "true"],
            "no `rt` partition",
        ),
    ] {
        let out = bench.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out)
        );
    }
    // Not root: refused before anything.
    let (exe, _bin) = crate::fixtures::exe_for_others();
    let out = Command::new("setpriv")
        .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
        .arg(exe)
        .args(["partition", "create", &rt.to_string()])
        .env("RTLAB_JOURNAL_DIR", bench.journal_dir())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs root"));
    // Twice: the second is refused and says how to undo.
    assert!(
        bench
            .run(&["partition", "create", &rt.to_string()])
            .status
            .success()
    );
    let out = bench.run(&["partition", "create", &rt.to_string()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("rtlab partition undo"),
        "{}",
        text(&out)
    );
    assert!(bench.run(&["partition", "undo"]).status.success());
    assert_same(&before, &snapshot());
}

#[test]
fn an_audit_of_the_rt_cpu_under_load_lists_what_still_reaches_it() {
    let _one = crate::fixtures::machine_exclusive();
    let test = test_name!();
    let Some(bench) = Bench::new(test) else {
        return;
    };
    if !read("/proc/filesystems").is_some_and(|f| f.contains("tracefs")) {
        path_taken(test, "no tracefs: the audit is not possible here");
        return;
    }
    let rt = rt_cpu();
    let out = bench.run(&["partition", "create", &rt.to_string()]);
    assert!(out.status.success(), "{}", text(&out));
    std::fs::write(bench.dir.path().join("dio.bin"), vec![1u8; 1 << 20]).unwrap();
    // Load everywhere rtlab may put it (nrt): a hog and direct I/O.
    let cfg = format!(
        "main\n{{\n  audit.cpus {rt}\n  lifetime.duration 2 s\n}}\n\
         timer_thread[0]\n{{\n  cpuset rt\n  cpu_affinity {rt}\n  sched.policy FIFO\n  sched.priority 80\n}}\n\
         program[0]\n{{\n  cmdline {} hog --duration 30s\n}}\n\
         program[1]\n{{\n  cmdline dd if=dio.bin of=/dev/null bs=4k iflag=direct\n  termination.ok RESPAWN\n}}\n",
        env!("CARGO_BIN_EXE_rtlab")
    );
    std::fs::write(bench.dir.path().join("part.cfg"), cfg).unwrap();
    let o = bench.run(&["run", "part.cfg", "--json", "part.json"]);
    let undo = bench.run(&["partition", "undo"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(undo.status.success(), "{}", text(&undo));
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(bench.dir.path().join("part.json")).unwrap())
            .unwrap();
    let audit = &r["audit"];
    let rows: Vec<&serde_json::Value> = audit["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["cpu"] == rt)
        .collect();
    // The load stayed in nrt: neither program ran on the rt CPU.
    for p in r["programs"].as_array().unwrap() {
        let pid = &p["first_pid"];
        let listed = |x: &serde_json::Value| {
            x["pid"] == *pid || x["top_pids"].as_array().is_some_and(|t| t.contains(pid))
        };
        assert!(
            rows.iter().all(|x| !listed(x)),
            "{p} ran on CPU {rt}: {audit}"
        );
    }
    // The timer thread is there and belongs.
    let timer = &r["timers"][0]["tid"];
    assert!(
        rows.iter()
            .any(|x| x["pid"] == *timer && x["belongs"] == true),
        "{audit}"
    );
    // The partition's promise is checked, and a broken one names a source
    // the audit listed.
    let promise = audit["promises"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["promise"] == "partition rt" && p["cpu"] == rt)
        .unwrap_or_else(|| panic!("no partition promise: {audit}"));
    if promise["kept"] == false {
        let detail = promise["detail"].as_str().unwrap();
        assert!(
            rows.iter().any(|x| !x["belongs"].as_bool().unwrap()
                && detail.contains(x["what"].as_str().unwrap())),
            "{promise}"
        );
    }
    let intruders: Vec<String> = rows
        .iter()
        .filter(|x| x["belongs"] == false)
        .map(|x| format!("{} {}", x["kind"], x["what"]))
        .collect();
    path_taken(
        test,
        &format!(
            "CPU {rt} in partition rt under load: promise {}; {} sources still reached it: {}",
            promise["kept"],
            intruders.len(),
            intruders.join(", ")
        ),
    );
}

#[test]
fn a_partition_undone_under_a_run_is_told_and_kept_in_the_result() {
    let _one = crate::fixtures::machine_exclusive();
    let Some(bench) = Bench::new("a_partition_undone_under_a_run_is_told_and_kept_in_the_result")
    else {
        return;
    };
    let rt = rt_cpu();
    let before = snapshot();
    let out = bench.run(&["partition", "create", &format!("{:#x}", 1u64 << rt)]);
    assert!(out.status.success(), "{}", text(&out));
    let cfg = bench.dir.path().join("p.cfg");
    let json = bench.dir.path().join("p.json");
    std::fs::write(
        &cfg,
        "main\n{\n  stats.period 100 ms\n}\ntimer_thread[0]\n{\n  cpuset rt\n  lifetime.duration 3 s\n}\n",
    )
    .unwrap();
    let child = bench
        .cmd(&[
            "run",
            cfg.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(wait_until(Duration::from_secs(10), || bench
        .journals()
        .iter()
        .any(|j| j.starts_with("run-"))));
    let out = bench.run(&["partition", "undo"]);
    assert!(out.status.success(), "{}", text(&out));
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let said = format!("partition `rt` (CPUs {rt}) was removed during the run");
    assert!(err.contains(&said), "{err}");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let changed = r["isolation"]["partitions_changed"].as_array().unwrap();
    assert!(
        changed
            .iter()
            .any(|c| c.as_str().unwrap_or("").starts_with(&said)),
        "{changed:?}"
    );
    assert_same(&before, &snapshot());
}

/// The cpuset controller lent to the cgroup v2 hierarchy for a test: on a
/// hybrid machine whose v1 cpuset hierarchy has no child, that hierarchy
/// is unmounted (the kernel then offers the controller in v2), and mounted
/// back when the loan ends.
struct V2CpusetLoan {
    /// The v2 mount point.
    v2: String,
    /// Where the v1 hierarchy was mounted, to mount it back.
    v1: Option<String>,
}

impl V2CpusetLoan {
    /// The loan, or why this machine cannot give it.
    fn take() -> Result<V2CpusetLoan, String> {
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
        let field = |l: &str, i: usize| l.split_whitespace().nth(i).unwrap_or("").to_string();
        let v2 = mounts
            .lines()
            .find(|l| field(l, 2) == "cgroup2")
            .map(|l| field(l, 1))
            .ok_or("no cgroup v2 mount")?;
        let offers = |v2: &str| {
            read(&format!("{v2}/cgroup.controllers"))
                .is_some_and(|c| c.split_whitespace().any(|x| x == "cpuset"))
        };
        if offers(&v2) {
            return Ok(V2CpusetLoan { v2, v1: None });
        }
        let v1 = mounts
            .lines()
            .find(|l| field(l, 2) == "cgroup" && field(l, 3).split(',').any(|o| o == "cpuset"))
            .map(|l| field(l, 1))
            .ok_or("the cpuset controller is neither in v1 nor in v2")?;
        let children = std::fs::read_dir(&v1)
            .map(|d| d.flatten().filter(|e| e.path().is_dir()).count())
            .unwrap_or(0);
        if children > 0 {
            return Err(format!(
                "the v1 cpuset hierarchy at {v1} has cpusets in use"
            ));
        }
        let out = Command::new("umount").arg(&v1).output().unwrap();
        if !out.status.success() {
            let why = String::from_utf8_lossy(&out.stderr);
            return Err(format!("cannot unmount {v1}: {}", why.trim()));
        }
        let loan = V2CpusetLoan {
            v2: v2.clone(),
            v1: Some(v1),
        };
        // The hierarchy is destroyed asynchronously once unmounted.
        if wait_until(Duration::from_secs(20), || offers(&v2)) {
            Ok(loan)
        } else {
            Err("the v2 hierarchy did not offer cpuset after the v1 one was unmounted".into())
        }
    }
}

impl Drop for V2CpusetLoan {
    fn drop(&mut self) {
        let Some(v1) = &self.v1 else { return };
        let control = format!("{}/cgroup.subtree_control", self.v2);
        let _ = std::fs::write(&control, "-cpuset");
        let mounted = wait_until(Duration::from_secs(20), || {
            Command::new("mount")
                .args(["-t", "cgroup", "-o", "cpuset", "cgroup", v1])
                .output()
                .is_ok_and(|o| o.status.success())
        });
        assert!(
            mounted,
            "the v1 cpuset hierarchy could not be mounted back at {v1}"
        );
    }
}

/// The kernel's own isolated partition, for real: rtlab makes the rt
/// cpuset an `isolated` partition on cgroup v2, and the kernel's own files
/// say the CPU left the load balancer (`cpuset.cpus.isolated` of the root,
/// Linux 6.7) and that the partition is valid; a program started in it
/// runs on that CPU; undo puts everything back.
#[test]
fn a_real_v2_cpuset_gets_the_kernels_isolated_partition() {
    let test = test_name!();
    let _machine = crate::fixtures::machine_exclusive();
    if !crate::fixtures::is_root() || online_cpus().len() < 2 {
        path_taken(
            test,
            "not root, or one CPU: the other isolation tests cover it",
        );
        return;
    }
    let loan = match V2CpusetLoan::take() {
        Ok(l) => l,
        Err(why) => {
            path_taken(test, &format!("no v2 cpuset here ({why}): fake trees only"));
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let rtlab = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_rtlab"))
            .args(args)
            .current_dir(dir.path())
            .env("RTLAB_JOURNAL_DIR", dir.path().join("journal"))
            .output()
            .unwrap()
    };
    let cpu = rt_cpu();
    let v2 = loan.v2.clone();
    let o = rtlab(&["partition", "create", &cpu.to_string()]);
    let report = text(&o);
    let undo = |why: &str| {
        let u = rtlab(&["partition", "undo"]);
        format!("{why}\n{report}\nundo: {}", text(&u))
    };
    assert_eq!(o.status.code(), Some(0), "{}", undo("create failed"));
    let mode = read(&format!("{v2}/rt/cpuset.cpus.partition")).unwrap_or_default();
    let effective = read(&format!("{v2}/rt/cpuset.cpus.effective")).unwrap_or_default();
    let isolated = read(&format!("{v2}/cpuset.cpus.isolated"));
    let placed = rtlab(&["partition", "run", "rt", "--", "cat", "/proc/self/status"]);
    let allowed = String::from_utf8_lossy(&placed.stdout)
        .lines()
        .find_map(|l| {
            l.strip_prefix("Cpus_allowed_list:")
                .map(|v| v.trim().to_string())
        });
    let shown = text(&rtlab(&["partition", "show"]));
    let u = rtlab(&["partition", "undo"]);
    assert_eq!(u.status.code(), Some(0), "{}", text(&u));
    assert!(!Path::new(&format!("{v2}/rt")).exists(), "rt left behind");
    path_taken(
        test,
        &format!(
            "CPU {cpu}: partition `{mode}`, effective {effective}, root isolated {isolated:?}"
        ),
    );
    if mode == "isolated" {
        assert!(report.contains("isolated partition"), "{report}");
        if let Some(isolated) = isolated {
            assert_eq!(isolated, cpu.to_string(), "{report}");
        }
    } else {
        // A kernel without isolated partitions (before 6.2): root.
        assert_eq!(mode, "root", "{report}");
        assert!(report.contains("root partition"), "{report}");
    }
    assert_eq!(effective, cpu.to_string());
    assert_eq!(
        allowed.as_deref(),
        Some(cpu.to_string().as_str()),
        "{}",
        text(&placed)
    );
    assert!(shown.contains(&mode), "{shown}");
}

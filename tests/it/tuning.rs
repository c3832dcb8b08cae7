//! Integration tests of inspection and tuning on the real kernel (as root):
//! threads against `ps`, IRQs against /proc/interrupts, IRQ moves and their
//! refusals, C-state limits, thread priorities, cpufreq (absent here),
//! sysinfo, CPU bandwidth with real throttling, and the `main` tuning keys of
//! a run (thread CPUs and packet steering too) — every change compared with
//! the state before once restored.
//!
//! These tests change machine-wide settings, so each holds the machine alone
//! (`machine_exclusive`). Needs root (else checks refusals).

use crate::fixtures::{load_cpu, measured_cpu, on_this_machine, path_taken, text, wait_until};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A tuning command the tests make (and its refusals are checked with).
const SOFTIRQ_FIFO_2: [&str; 7] = [
    "threads",
    "set",
    "ksoftirqd/*",
    "--policy",
    "FIFO",
    "--priority",
    "2",
];

/// A test's own directory and journal; ends with `rtlab restore`.
struct Bench {
    dir: tempfile::TempDir,
    _lock: crate::fixtures::Exclusive,
}

impl Bench {
    /// A bench as root; otherwise checks that rtlab refuses a tuning command
    /// (status 2, "needs root"), says so, and gives None: the test ends.
    fn new(test: &str) -> Option<Bench> {
        let lock = crate::fixtures::machine_exclusive();
        if !crate::fixtures::is_root() {
            crate::fixtures::assert_refused_without_root(test, &SOFTIRQ_FIFO_2);
            return None;
        }
        Some(Bench {
            dir: tempfile::tempdir().unwrap(),
            _lock: lock,
        })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rtlab"));
        c.args(args)
            .current_dir(self.dir.path())
            .env("RTLAB_JOURNAL_DIR", self.path("journal"));
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let o = self.run(args);
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)))
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        let _ = self.run(&["restore"]);
    }
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Every setting these tests may change: IRQ affinities, idle-state
/// `disable` files, and the scheduling of every kernel thread.
fn settings() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir("/proc/irq").unwrap().flatten() {
        let p = e.path().join("smp_affinity_list");
        if p.exists() {
            out.insert(p.display().to_string(), read(&p.display().to_string()));
        }
    }
    for cpu in std::fs::read_dir("/sys/devices/system/cpu/")
        .unwrap()
        .flatten()
    {
        if let Ok(states) = std::fs::read_dir(cpu.path().join("cpuidle")) {
            for s in states.flatten() {
                let p = s.path().join("disable").display().to_string();
                out.insert(p.clone(), read(&p));
            }
        }
    }
    for (tid, (cls, prio)) in ps_classes() {
        out.insert(format!("thread {tid}"), format!("{cls} {prio}"));
    }
    out
}

/// Asserts that every setting is as it was: files exactly, threads where
/// they exist in both readings (tests start and end threads of their own).
fn assert_same(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) {
    let differ: Vec<String> = before
        .iter()
        .filter_map(|(k, old)| match after.get(k) {
            Some(new) if new == old => None,
            None if k.starts_with("thread ") => None,
            new => Some(format!("{k}: {old} -> {new:?}")),
        })
        .chain(
            after
                .keys()
                .filter(|k| !k.starts_with("thread ") && !before.contains_key(*k))
                .map(|k| format!("{k}: new")),
        )
        .collect();
    assert!(differ.is_empty(), "not restored: {differ:#?}");
}

/// `ps -eLo tid,cls,rtprio` as TID -> (class, rtprio).
fn ps_classes() -> BTreeMap<i64, (String, String)> {
    let o = Command::new("ps")
        .args(["-eLo", "tid=,cls=,rtprio="])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((
                f.first()?.parse().ok()?,
                (f.get(1)?.to_string(), f.get(2)?.to_string()),
            ))
        })
        .collect()
}

/// Threads of the two `ps` readings that did not change in between.
fn stable(
    a: &BTreeMap<i64, (String, String)>,
    b: &BTreeMap<i64, (String, String)>,
) -> BTreeMap<i64, (String, String)> {
    a.iter()
        .filter(|(t, v)| b.get(t) == Some(v))
        .map(|(t, v)| (*t, v.clone()))
        .collect()
}

#[test]
fn threads_agree_with_ps_and_rt_lists_exactly_the_rt_classes() {
    let Some(b) = Bench::new("threads_agree_with_ps_and_rt_lists_exactly_the_rt_classes") else {
        return;
    };
    let before = ps_classes();
    let all = b.json(&["threads", "--json"]);
    let rt = b.json(&["threads", "--rt", "--json"]);
    let after = ps_classes();
    let steady = stable(&before, &after);
    let seen: BTreeMap<i64, (String, String)> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let cls = match t["policy"].as_str().unwrap() {
                "OTHER" => "TS",
                "FIFO" => "FF",
                "RR" => "RR",
                "BATCH" => "B",
                "IDLE" => "IDL",
                "DEADLINE" => "DLN",
                other => panic!("policy {other}"),
            };
            let prio = if matches!(cls, "FF" | "RR" | "DLN") {
                t["rt_priority"].to_string()
            } else {
                "-".into()
            };
            (t["tid"].as_i64().unwrap(), (cls.to_string(), prio))
        })
        .collect();
    for (tid, v) in &steady {
        assert_eq!(seen.get(tid), Some(v), "thread {tid}: ps says {v:?}");
    }
    let rt_tids: BTreeSet<i64> = rt
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tid"].as_i64().unwrap())
        .collect();
    let ps_rt: BTreeSet<i64> = steady
        .iter()
        .filter(|(_, (c, _))| matches!(c.as_str(), "FF" | "RR" | "DLN"))
        .map(|(t, _)| *t)
        .collect();
    let steady_tids: BTreeSet<i64> = steady.keys().copied().collect();
    assert_eq!(
        rt_tids
            .intersection(&steady_tids)
            .copied()
            .collect::<BTreeSet<_>>(),
        ps_rt
    );
    assert!(
        !ps_rt.is_empty(),
        "a Linux machine has migration/N at FIFO 99"
    );
    // Filters.
    let cpu = load_cpu().to_string();
    let mine = b.json(&["threads", "--match", "migration/*", "--cpu", &cpu, "--json"]);
    let mine = mine.as_array().unwrap();
    assert!(
        !mine.is_empty(),
        "every online CPU has its migration thread"
    );
    assert!(
        mine.iter()
            .all(|t| t["name"].as_str().unwrap().starts_with("migration/"))
    );
}

#[test]
fn irq_table_matches_proc_interrupts() {
    let Some(b) = Bench::new("irq_table_matches_proc_interrupts") else {
        return;
    };
    let parse = |t: &str| -> BTreeMap<String, Vec<u64>> {
        t.lines()
            .skip(1)
            .filter_map(|l| {
                let (label, rest) = l.split_once(':')?;
                let counts = rest
                    .split_whitespace()
                    .map_while(|w| w.parse().ok())
                    .collect();
                Some((label.trim().to_string(), counts))
            })
            .collect()
    };
    let before = parse(&std::fs::read_to_string("/proc/interrupts").unwrap());
    let table = b.json(&["irq", "--json"]);
    let after = parse(&std::fs::read_to_string("/proc/interrupts").unwrap());
    let rows = table["irqs"].as_array().unwrap();
    let labels: BTreeSet<String> = rows
        .iter()
        .map(|r| r["irq"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(labels, before.keys().cloned().collect());
    for r in rows {
        let label = r["irq"].as_str().unwrap();
        let counts: Vec<u64> = r["counts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .collect();
        for (i, c) in counts.iter().enumerate() {
            assert!(
                before[label][i] <= *c && *c <= after[label][i],
                "IRQ {label} CPU column {i}: {} <= {c} <= {}",
                before[label][i],
                after[label][i]
            );
        }
        if label.parse::<u32>().is_ok() {
            assert_eq!(
                r["affinity"].as_str().unwrap(),
                read(&format!("/proc/irq/{label}/smp_affinity_list"))
            );
        }
    }
    // --watch gives one document per interval, with a rate per IRQ and CPU.
    let o = b.run(&["irq", "--watch", "100ms", "--count", "2", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let docs: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(docs.len(), 2);
    assert_eq!(
        docs[0]["rates_per_s"].as_array().unwrap().len(),
        docs[0]["irqs"].as_array().unwrap().len()
    );
}

#[test]
fn irq_move_reports_refusals_and_restore_puts_every_mask_back() {
    let Some(b) = Bench::new("irq_move_reports_refusals_and_restore_puts_every_mask_back") else {
        return;
    };
    let test = test_name!();
    let before = settings();
    let target = load_cpu().to_string();
    let o = b.run(&["irq", "move", &target, "all", "--json"]);
    let outcomes: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    let outcomes = outcomes.as_array().unwrap();
    let refused: Vec<&Value> = outcomes
        .iter()
        .filter(|o| o["status"] == "refused")
        .collect();
    assert_eq!(
        o.status.code(),
        Some(if refused.is_empty() { 0 } else { 5 }),
        "{}",
        text(&o)
    );
    for r in &refused {
        let reason = r["reason"].as_str().unwrap();
        assert!(
            reason.contains("does not let user space move this interrupt")
                || reason.contains("managed IRQ"),
            "{reason}"
        );
    }
    for moved in outcomes
        .iter()
        .filter(|o| o["status"] == "set" || o["status"] == "already_set")
    {
        let n = moved["target"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .nth(1)
            .unwrap();
        assert_eq!(read(&format!("/proc/irq/{n}/smp_affinity_list")), target);
    }
    path_taken(
        test,
        &format!(
            "{} IRQs moved or already there, {} refused by the kernel",
            outcomes.len() - refused.len(),
            refused.len()
        ),
    );
    // The table says the same in words.
    let o = b.run(&["irq", "move", &target, "all"]);
    if !refused.is_empty() {
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("REFUSED: EPERM")
                || String::from_utf8_lossy(&o.stdout).contains("REFUSED: EIO")
        );
    }
    let o = b.run(&["restore"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_same(&before, &settings());
    // An IRQ that does not exist is refused before anything changes.
    let o = b.run(&["irq", "move", &target, "99999"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn cstates_limit_disables_deeper_states_and_restore_enables_them() {
    let Some(b) = Bench::new("cstates_limit_disables_deeper_states_and_restore_enables_them")
    else {
        return;
    };
    let listed = b.json(&["cstates", "--json"]);
    let states = listed["states"].as_array().unwrap().clone();
    let test = test_name!();
    if states.is_empty() {
        path_taken(test, "no cpuidle states: checked the refusal (status 4)");
        let o = b.run(&["cstates"]);
        assert_eq!(o.status.code(), Some(4), "{}", text(&o));
        let o = b.run(&["cstates", "set", "--max-latency", "0"]);
        assert_eq!(o.status.code(), Some(4), "{}", text(&o));
        return;
    }
    path_taken(
        test,
        &format!("{} cpuidle states: limited for real", states.len()),
    );
    let before = settings();
    let o = b.run(&["cstates", "set", "--max-latency", "0"]);
    assert!(o.status.success(), "{}", text(&o));
    let now = b.json(&["cstates", "--json"]);
    for s in now["states"].as_array().unwrap() {
        let deep = s["latency_us"].as_u64().unwrap() > 0;
        assert_eq!(s["disabled"].as_bool().unwrap(), deep, "{s}");
        let file = format!(
            "/sys/devices/system/cpu/cpu{}/cpuidle/state{}/disable",
            s["cpu"], s["index"]
        );
        assert_eq!(read(&file), if deep { "1" } else { "0" });
    }
    let o = b.run(&["restore"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_same(&before, &settings());
}

#[test]
fn thread_priorities_are_set_and_restored() {
    let Some(b) = Bench::new("thread_priorities_are_set_and_restored") else {
        return;
    };
    let before = settings();
    let o = b.run(&SOFTIRQ_FIFO_2);
    assert!(o.status.success(), "{}", text(&o));
    let ps = ps_classes();
    let soft = b.json(&["threads", "--match", "ksoftirqd/*", "--json"]);
    assert!(!soft.as_array().unwrap().is_empty());
    for t in soft.as_array().unwrap() {
        let tid = t["tid"].as_i64().unwrap();
        assert_eq!(ps[&tid], ("FF".to_string(), "2".to_string()));
    }
    let o = b.run(&["restore"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_same(&before, &settings());
    // Mistakes are refused before anything changes.
    for args in [
        &[
            "threads",
            "set",
            "no-such-thread*",
            "--policy",
            "FIFO",
            "--priority",
            "2",
        ][..],
        &[
            "threads",
            "set",
            "ksoftirqd/*",
            "--policy",
            "FIFO",
            "--priority",
            "100",
        ][..],
    ] {
        let o = b.run(args);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    }
    assert_same(&before, &settings());
}

#[test]
fn cpufreq_absent_is_said_with_status_4_and_the_ramp_loops_still_run() {
    let Some(b) = Bench::new("cpufreq_absent_is_said_with_status_4_and_the_ramp_loops_still_run")
    else {
        return;
    };
    let has_cpufreq = std::fs::read_dir("/sys/devices/system/cpu/cpufreq")
        .map(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("policy"))
        })
        .unwrap_or(false);
    let test = test_name!();
    if has_cpufreq {
        path_taken(
            test,
            "cpufreq present: the ramp is timed under the current governor",
        );
        let o = b.run(&["cpufreq", "--json"]);
        assert!(o.status.success(), "{}", text(&o));
    } else {
        path_taken(test, "no cpufreq: refusals (status 4) checked, loops timed");
        for args in [&["cpufreq"][..], &["cpufreq", "set", "performance"][..]] {
            let o = b.run(args);
            assert_eq!(o.status.code(), Some(4), "{}", text(&o));
            assert!(String::from_utf8_lossy(&o.stderr).contains("no cpufreq"));
        }
    }
    let csv = b.path("ramp.csv");
    let o = b.run(&[
        "cpufreq",
        "ramp",
        "--cpu",
        &measured_cpu().to_string(),
        "--loops",
        "30",
        "--loop-us",
        "100",
        "--idle",
        "20ms",
        "--json",
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    let run = &r["runs"][0];
    assert_eq!(run["loops"].as_array().unwrap().len(), 30);
    assert!(run["full_speed_us"].as_f64().unwrap() > 0.0);
    assert!(run["ramp_us"].is_number(), "{run}");
    let lines = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(lines.lines().count(), 31);
    assert!(lines.starts_with("governor,loop,start_us,duration_us\n"));
    if !has_cpufreq {
        // Governors asked for cannot be set: said, loops still timed, status 4.
        let o = b.run(&[
            "cpufreq",
            "ramp",
            "--cpu",
            &load_cpu().to_string(),
            "--loops",
            "5",
            "--loop-us",
            "100",
            "--idle",
            "1ms",
            "--governors",
            "performance,ondemand",
            "--json",
        ]);
        assert_eq!(o.status.code(), Some(4), "{}", text(&o));
        let r: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(r["runs"][0]["governor"], "(no cpufreq)");
    }
}

#[test]
fn sysinfo_states_everything_a_report_needs() {
    let Some(b) = Bench::new("sysinfo_states_everything_a_report_needs") else {
        return;
    };
    let s = b.json(&["sysinfo", "--json"]);
    for key in [
        "kernel_release",
        "kernel_version",
        "cmdline",
        "cpus_online",
        "clocksource",
    ] {
        assert!(!s[key].as_str().unwrap_or("").is_empty(), "{key}: {s}");
    }
    assert!(s["sched_rt_runtime_us"].is_i64());
    assert!(s["cgroup_version"].is_string());
    let p = &s["preemption"];
    assert!(p["model"].is_string());
    if p["model"] == "PREEMPT_DYNAMIC" && Path::new("/proc/config.gz").exists() {
        assert!(p["dynamic_mode"].is_string(), "{p}");
    }
    if Path::new("/sys/devices/system/cpu/cpu0/cpuidle/state0").exists() {
        assert!(!s["cstates"].as_array().unwrap().is_empty());
        assert!(s["cpuidle"]["driver"].is_string());
    }
    let o = b.run(&["sysinfo"]);
    let shown = String::from_utf8_lossy(&o.stdout);
    for row in [
        "kernel",
        "preemption",
        "cmdline",
        "cpus online",
        "isolcpus",
        "nohz_full",
        "smt",
        "cgroups",
        "cpufreq",
        "c-states",
        "clocksource",
        "rt throttling",
    ] {
        assert!(
            shown.lines().any(|l| l.starts_with(row)),
            "no `{row}` in\n{shown}"
        );
    }
    features_agree_with_the_machine(&s, &shown);
}

/// Each kernel feature `sysinfo` finds agrees with what this test finds
/// itself, and each one short of present is shown with what brings it.
fn features_agree_with_the_machine(s: &Value, shown: &str) {
    let state = |name: &str| -> String {
        s["features"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {s}"))["state"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let yes = |b: bool| if b { "present" } else { "missing" };
    let cpufreq = std::fs::read_dir("/sys/devices/system/cpu/cpufreq").is_ok_and(|d| {
        d.flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("policy"))
    });
    assert_eq!(state("cpufreq"), yes(cpufreq));
    let driver = std::fs::read_to_string("/sys/devices/system/cpu/cpuidle/current_driver")
        .unwrap_or_default();
    let driver = driver.trim();
    assert_eq!(
        state("cpuidle"),
        yes(!driver.is_empty() && driver != "none")
    );
    assert_eq!(
        state("PM QoS"),
        yes(Path::new("/dev/cpu_dma_latency").exists())
    );
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let tracefs_at: Vec<&str> = mounts
        .lines()
        .filter(|l| l.split_whitespace().nth(2) == Some("tracefs"))
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    let tracefs = if tracefs_at.contains(&"/sys/kernel/tracing") {
        "present"
    } else if tracefs_at.contains(&"/sys/kernel/debug/tracing")
        || Path::new("/sys/kernel/tracing").is_dir()
    {
        "partial"
    } else {
        "missing"
    };
    assert_eq!(state("tracefs"), tracefs, "{mounts}");
    let realtime = std::fs::read_to_string("/sys/kernel/realtime").is_ok_and(|r| r.trim() == "1");
    assert_eq!(state("PREEMPT_RT"), yes(realtime));
    for f in s["features"].as_array().unwrap() {
        if f["state"] != "present" {
            let remedy = f["remedy"].as_str().unwrap();
            assert!(!remedy.is_empty(), "{f}");
            assert!(shown.contains(&format!("brought by: {remedy}")), "{shown}");
        }
    }
}

const HOGS: &str = "timer_thread[0] {
  cpu_affinity @M
  sched.policy FIFO
  sched.priority 90
  lifetime.duration 2 s
}
program[0] {
  cmdline rtlab hog --interval 500ms
  cpu.group hogs
  cpu.quota 100 ms
  cpu.period 100 ms
  output.out hog0.txt
}
program[1] {
  cmdline rtlab hog --interval 500ms
  cpu.group hogs
  output.out hog1.txt
}
program[2] {
  cmdline rtlab hog --interval 500ms
  cpu.quota 50 ms
  output.out hog2.txt
}
";

/// rtlab's cgroups left in the cpu hierarchies (v1 `cpu`, or v2).
fn cpu_cgroups() -> Vec<String> {
    [
        "/sys/fs/cgroup/cpu",
        "/sys/fs/cgroup",
        "/sys/fs/cgroup/unified",
    ]
    .iter()
    .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
    .map(|e| e.file_name().to_string_lossy().into_owned())
    .filter(|n| n.starts_with("rtlab-"))
    .collect()
}

/// Whether a cgroup hierarchy offers the cpu controller's bandwidth files.
fn has_cpu_bandwidth() -> bool {
    Path::new("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").exists()
        || crate::fixtures::v2_controllers().iter().any(|c| c == "cpu")
}

#[test]
fn cpu_bandwidth_throttles_hogs_and_reports_it() {
    let Some(b) = Bench::new("cpu_bandwidth_throttles_hogs_and_reports_it") else {
        return;
    };
    let test = test_name!();
    std::fs::write(b.path("hogs.cfg"), on_this_machine(HOGS)).unwrap();
    if !has_cpu_bandwidth() {
        path_taken(test, "no cpu controller: checked the refusal (status 2)");
        let o = b.run(&["check", "hogs.cfg"]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("cpu controller"),
            "{}",
            text(&o)
        );
        return;
    }
    path_taken(test, "cpu controller present: real throttling");
    // Its own PID names its cgroups: other tests' runs may hold theirs.
    let child = b
        .cmd(&["run", "hogs.cfg", "--json", "r.json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let ours = format!("rtlab-{}", child.id());
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let r: Value = serde_json::from_slice(&std::fs::read(b.path("r.json")).unwrap()).unwrap();
    let groups = r["tuning"]["cpu_bandwidth"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "{groups:?}");
    let hogs = &groups[0];
    assert_eq!(hogs["name"], "hogs");
    assert_eq!(hogs["quota_us"], 100_000);
    assert!(hogs["nr_periods"].as_u64().unwrap() > 0, "{hogs}");
    assert!(hogs["nr_throttled"].as_u64().unwrap() > 0, "{hogs}");
    assert!(hogs["throttled_ms"].as_f64().unwrap() > 0.0, "{hogs}");
    assert_eq!(groups[1]["name"], "program2");
    assert_eq!(groups[1]["quota_us"], 50_000);
    assert!(groups[1]["nr_throttled"].as_u64().unwrap() > 0);
    for f in ["hog0.txt", "hog1.txt", "hog2.txt"] {
        let t = std::fs::read_to_string(b.path(f)).unwrap();
        assert!(t.lines().any(|l| l.ends_with(" loops/s")), "{f}: {t}");
    }
    let left = cpu_cgroups();
    assert!(!left.contains(&ours), "left behind: {ours} in {left:?}");
}

const TUNED_RUN: &str = "main {
  irq.affinity @L
  threads.sched ksoftirqd/* FIFO 2
  cstates.max_latency 0 us
}
timer_thread[0] {
  cpu_affinity @M
  sched.policy FIFO
  sched.priority 90
  lifetime.duration 300 ms
}
";

#[test]
fn main_tuning_keys_hold_for_the_run_and_are_restored() {
    let Some(b) = Bench::new("main_tuning_keys_hold_for_the_run_and_are_restored") else {
        return;
    };
    let test = test_name!();
    let before = settings();
    let has_cstates = b.json(&["cstates", "--json"])["states"]
        .as_array()
        .is_some_and(|s| !s.is_empty());
    let mut tuned = on_this_machine(TUNED_RUN);
    if !has_cstates {
        // Refused before anything starts, at the key, with the way out.
        std::fs::write(b.path("tuned.cfg"), &tuned).unwrap();
        let o = b.run(&["run", "tuned.cfg"]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            stderr.contains("tuned.cfg:4:23: error: no cpuidle states"),
            "{stderr}"
        );
        assert!(stderr.contains("pm_qos.cpu_dma_latency"), "{stderr}");
        assert_same(&before, &settings());
        path_taken(
            test,
            "no cpuidle states: cstates.max_latency refused, run without it",
        );
        tuned = tuned.replace("  cstates.max_latency 0 us\n", "");
    }
    std::fs::write(b.path("tuned.cfg"), &tuned).unwrap();
    let o = b.run(&["run", "tuned.cfg", "--json", "r.json"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_same(&before, &settings());
    let r: Value = serde_json::from_slice(&std::fs::read(b.path("r.json")).unwrap()).unwrap();
    let changes = r["tuning"]["changes"].as_array().unwrap();
    let irqs: Vec<&Value> = changes
        .iter()
        .filter(|c| c["setting"] == "smp_affinity_list")
        .collect();
    assert!(!irqs.is_empty(), "no IRQ change reported: {changes:?}");
    match irqs.iter().find(|c| c["status"] == "set") {
        Some(irq) => {
            path_taken(test, "the kernel accepted IRQ moves: checked one");
            assert_eq!(irq["new"], load_cpu().to_string());
            assert!(irq["old"].is_string());
        }
        None => {
            path_taken(
                test,
                "the kernel refused every IRQ move: checked the refusals",
            );
            for c in &irqs {
                assert!(
                    c["status"] == "refused" || c["status"] == "already_set",
                    "{c}"
                );
            }
        }
    }
    let soft = changes
        .iter()
        .find(|c| c["target"].as_str().unwrap().contains("ksoftirqd/"))
        .unwrap();
    assert_eq!(soft["new"], "FIFO 2");
    assert_eq!(soft["old"], "OTHER 0");
    // Killed mid-run: the next `rtlab restore` puts everything back.
    let long = tuned.replace("300 ms", "60 s");
    std::fs::write(b.path("long.cfg"), long).unwrap();
    let mut child = b
        .cmd(&["run", "long.cfg"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let changed = wait_until(Duration::from_secs(10), || {
        ps_classes().values().any(|(c, p)| c == "FF" && p == "2")
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(changed, "the run never set ksoftirqd to FIFO 2");
    std::thread::sleep(Duration::from_millis(300));
    let o = b.run(&["restore"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_same(&before, &settings());
}

/// A CPU list of the kernel (`0-2,5`).
fn cpu_list(text: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        cpus.extend(a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap());
    }
    cpus
}

/// The CPUs of a kernel hex mask (`3`, `00000000,00000002`).
fn mask_cpus(text: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for (i, word) in text.trim().split(',').rev().enumerate() {
        let w = u32::from_str_radix(word, 16).unwrap();
        cpus.extend((0..32).filter(|b| w >> b & 1 == 1).map(|b| i * 32 + b));
    }
    cpus.sort_unstable();
    cpus
}

/// `Cpus_allowed_list` of process `pid`.
fn cpus_allowed(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

/// A `sleep` started under a name of its own: run through a link so named
/// (the kernel names a process after the file it executes), with `sleep`
/// as its argv[0] for multi-call binaries. Killed when dropped.
struct Sleeper {
    child: std::process::Child,
    name: String,
}

impl Sleeper {
    fn start(dir: &Path) -> Sleeper {
        use std::os::unix::process::CommandExt;
        let sleep = std::env::split_paths(&std::env::var_os("PATH").unwrap())
            .map(|d| d.join("sleep"))
            .find(|p| p.is_file())
            .expect("sleep on PATH");
        let name = format!("slp{}", std::process::id());
        let link = dir.join(&name);
        std::os::unix::fs::symlink(&sleep, &link).unwrap();
        let child = Command::new(&link)
            .arg0("sleep")
            .arg("600")
            .spawn()
            .unwrap();
        // The kernel names it during exec, after spawn may have returned
        // (the parent resumes once the new memory is in place): waited for.
        let comm = || std::fs::read_to_string(format!("/proc/{}/comm", child.id())).unwrap();
        crate::fixtures::wait_until(std::time::Duration::from_secs(5), || comm().trim() == name);
        assert_eq!(comm().trim(), name);
        Sleeper { child, name }
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const RPS: &str = "/sys/class/net/lo/queues/rx-0/rps_cpus";

/// The CPU to steer loopback's packets to: an online one that is not
/// isolated (RPS steers to housekeeping CPUs only).
fn steering_cpu() -> usize {
    let isolated = cpu_list(&read("/sys/devices/system/cpu/isolated"));
    crate::fixtures::online_cpus()
        .into_iter()
        .find(|c| !isolated.contains(c))
        .unwrap_or_else(load_cpu)
}

#[test]
fn thread_cpus_and_packet_steering_hold_for_the_run_and_are_restored() {
    let Some(b) = Bench::new("thread_cpus_and_packet_steering_hold_for_the_run_and_are_restored")
    else {
        return;
    };
    let test = test_name!();
    let sleeper = Sleeper::start(b.dir.path());
    let pid = sleeper.child.id();
    let cpus_before = cpus_allowed(pid);
    // The first CPU the sleeper may use now: one its cpuset allows.
    let target = cpu_list(&cpus_before)[0];
    let steer = steering_cpu();
    let rps_before = std::fs::read(RPS).ok();
    // Writing the mask it holds back changes nothing, and says whether
    // this kernel lets RPS be set here.
    let writable = rps_before
        .as_ref()
        .is_some_and(|m| std::fs::write(RPS, m).is_ok());
    let steering = match &rps_before {
        Some(_) => format!("  net.steering lo {steer}\n"),
        None => String::new(),
    };
    let cfg = format!(
        "main {{\n  threads.affinity {} {target}\n{steering}}}\n\
         program[0] {{\n  cmdline sh -c \"grep Cpus_allowed_list /proc/{pid}/status; cat {RPS}\"\n  \
         output.out during.txt\n  termination.ok ABORT\n  termination.ko ABORT\n}}\n",
        sleeper.name
    );
    std::fs::write(b.path("steer.cfg"), cfg).unwrap();
    let o = b.run(&["run", "steer.cfg", "--json", "r.json"]);
    // The program reads the state and ends the run (ABORT: status 3).
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let r: Value = serde_json::from_slice(&std::fs::read(b.path("r.json")).unwrap()).unwrap();
    assert_eq!(r["end"]["status"], "exit status 0", "{}", r["end"]);
    let during = std::fs::read_to_string(b.path("during.txt")).unwrap();
    let mut lines = during.lines();
    let seen = lines
        .next()
        .unwrap()
        .strip_prefix("Cpus_allowed_list:")
        .unwrap();
    assert_eq!(cpu_list(seen), vec![target], "{during}");
    let changes = r["tuning"]["changes"].as_array().unwrap();
    assert_moved(test, changes, &sleeper, &cpus_before, target);
    assert_eq!(
        cpus_allowed(pid),
        cpus_before,
        "the sleeper's CPUs are back"
    );
    match rps_before {
        None => path_taken(test, "loopback has no rps_cpus (a kernel without RPS)"),
        Some(rps_before) => {
            let during = lines.next().unwrap_or_default();
            assert_steering(test, changes, during, steer, writable);
            let after = std::fs::read(RPS).unwrap();
            assert_eq!(after, rps_before, "rps_cpus back byte for byte");
        }
    }
    assert_mistakes_refused(&b);
}

/// The run's one thread outcome: the sleeper, given CPU `target` (or
/// already on it alone).
fn assert_moved(test: &str, changes: &[Value], sleeper: &Sleeper, before: &str, target: usize) {
    let moved: Vec<&Value> = changes
        .iter()
        .filter(|c| c["setting"] == "affinity")
        .collect();
    assert_eq!(
        moved.len(),
        1,
        "the pattern selects the sleeper alone: {changes:?}"
    );
    let pid = sleeper.child.id();
    assert_eq!(moved[0]["target"], format!("thread {pid} {}", sleeper.name));
    assert_eq!(moved[0]["new"], target.to_string());
    if before == target.to_string() {
        path_taken(test, "the sleeper may use one CPU: its CPUs already so");
        assert_eq!(moved[0]["status"], "already_set", "{}", moved[0]);
    } else {
        path_taken(
            test,
            &format!("the sleeper moved from {before} to {target}"),
        );
        assert_eq!(moved[0]["status"], "set", "{}", moved[0]);
        assert_eq!(moved[0]["old"], before);
    }
}

/// A pattern that selects no thread and an interface that does not exist
/// are refused before anything starts, at their place.
fn assert_mistakes_refused(b: &Bench) {
    std::fs::write(
        b.path("bad.cfg"),
        "main {\n  threads.affinity no-such-thread* 0\n  net.steering no-such-dev0 0\n}\n\
         program[0] {\n  cmdline true\n}\n",
    )
    .unwrap();
    let o = b.run(&["check", "bad.cfg"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("bad.cfg:2:20: error: no thread name matches `no-such-thread*`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("bad.cfg:3:16: error: no network interface `no-such-dev0`"),
        "{stderr}"
    );
}

/// Loopback's steering outcomes of the run: its receive queue set to `steer`
/// (the mask the program read during the run, `during`) where the kernel
/// lets RPS be written, refused otherwise; every other queue set or refused
/// with the kernel's reason.
fn assert_steering(test: &str, changes: &[Value], during: &str, steer: usize, writable: bool) {
    let lo: Vec<&Value> = changes
        .iter()
        .filter(|c| c["target"].as_str().unwrap().starts_with("net lo "))
        .collect();
    let rx = lo
        .iter()
        .find(|c| c["target"] == "net lo rx-0" && c["setting"] == "rps_cpus")
        .unwrap_or_else(|| panic!("no rx-0 outcome: {changes:?}"));
    if writable {
        path_taken(
            test,
            &format!("RPS can be set here: loopback steered to CPU {steer}"),
        );
        assert!(
            rx["status"] == "set" || rx["status"] == "already_set",
            "{rx}"
        );
        assert_eq!(mask_cpus(during), vec![steer], "rps_cpus during the run");
    } else {
        path_taken(test, "the kernel refuses RPS here: checked the refusal");
        assert_eq!(rx["status"], "refused", "{rx}");
    }
    for c in &lo {
        match c["status"].as_str().unwrap() {
            "set" | "already_set" => assert_eq!(mask_cpus(c["new"].as_str().unwrap()), vec![steer]),
            "refused" => assert!(!c["reason"].as_str().unwrap().is_empty(), "{c}"),
            other => panic!("{other}: {c}"),
        }
    }
}

#[test]
fn tuning_commands_refuse_unprivileged_users() {
    let Some(b) = Bench::new("tuning_commands_refuse_unprivileged_users") else {
        return;
    };
    let before = settings();
    for args in [
        &["cstates", "set", "--max-latency", "0"][..],
        &["irq", "move", &load_cpu().to_string()][..],
        &SOFTIRQ_FIFO_2[..],
    ] {
        let o = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_rtlab"))
            .args(args)
            .env("RTLAB_JOURNAL_DIR", b.path("journal"))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(String::from_utf8_lossy(&o.stderr).contains("needs root"));
    }
    assert_same(&before, &settings());
}

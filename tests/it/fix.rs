//! `rtlab fix` on this machine, against culprits the test injects on the
//! measured CPU and knows: a FIFO 95 thread in bursts above the FIFO 90
//! timer thread, loopback floods whose packets are steered (RPS) onto the
//! measured CPU, and a normal-priority thread that reads `/proc/kallsyms`
//! in a loop (kernel work that this kernel runs without a preemption
//! point when it is not fully preemptible). The truth is the test's own:
//! the PIDs it started, the masks it set, the files as they were before.

use crate::fixtures::{self, path_taken, text};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The files a remedy may touch, as they read now (and the culprits'
/// allowed CPUs).
fn snapshot(pids: &[u32]) -> Vec<(String, String)> {
    let mut files: Vec<PathBuf> = vec![
        "/sys/devices/virtual/workqueue/cpumask".into(),
        "/sys/devices/virtual/workqueue/writeback/cpumask".into(),
        "/proc/sys/kernel/sched_rt_runtime_us".into(),
    ];
    for dir in ["/proc/irq", "/sys/class/net"] {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            files.push(p.join("smp_affinity_list"));
            for q in std::fs::read_dir(p.join("queues"))
                .into_iter()
                .flatten()
                .flatten()
            {
                files.push(q.path().join("rps_cpus"));
                files.push(q.path().join("xps_cpus"));
            }
        }
    }
    let cpus = std::fs::read_dir("/sys/devices/system/cpu")
        .into_iter()
        .flatten()
        .flatten();
    for c in cpus {
        for s in std::fs::read_dir(c.path().join("cpuidle"))
            .into_iter()
            .flatten()
            .flatten()
        {
            files.push(s.path().join("disable"));
        }
    }
    for pid in pids {
        files.push(format!("/proc/{pid}/status").into());
    }
    files
        .into_iter()
        .filter_map(|f| {
            let t = std::fs::read_to_string(&f).ok()?;
            let t = if f.ends_with("status") {
                t.lines()
                    .find(|l| l.starts_with("Cpus_allowed_list"))?
                    .to_string()
            } else {
                t
            };
            Some((f.display().to_string(), t))
        })
        .collect()
}

/// `rtlab restore` with the test's journal directory when dropped: a test
/// that fails after a fix kept something leaves nothing changed (its
/// journal lives in the test's directory, removed with it).
struct Restore<'a>(&'a Path);

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        let _ = fixtures::rtlab_in(self.0, &["restore"]);
    }
}

/// The injected culprits, stopped (and lo's RPS mask put back) when dropped.
struct Culprits {
    children: Vec<Child>,
    rps: Option<(PathBuf, String)>,
    fifo: u32,
    normal: Option<u32>,
}

impl Drop for Culprits {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some((p, old)) = &self.rps {
            let _ = std::fs::write(p, old);
        }
    }
}

fn spawn(cmd: &mut Command) -> Child {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Starts the culprits on `m`; the flood's sender runs on `l`.
fn inject(test: &str, m: usize, l: usize) -> Culprits {
    let (ms, ls) = (m.to_string(), l.to_string());
    let fifo = hog(m).spawn().unwrap();
    let mut c = Culprits {
        fifo: fifo.id(),
        children: vec![fifo],
        rps: None,
        normal: None,
    };
    if fixtures::has_command("perl") {
        // Named as the measured CPU's kworker (perl sets the thread's name
        // from $0): a user's process is moved as the user thread it is,
        // told apart from the kernel's by its flags, never by its name.
        let kallsyms = format!(
            "$0 = '{}'; while (1) {{ open(my $f, '<', '/proc/kallsyms') or die; while (<$f>) {{}} close $f }}",
            impostor(m)
        );
        let normal = spawn(Command::new("taskset").args(["-c", &ms, "perl", "-e", &kallsyms]));
        c.normal = Some(normal.id());
        c.children.push(normal);
    } else {
        path_taken(test, "no perl: the normal-priority culprit is left out");
    }
    let rps = PathBuf::from("/sys/class/net/lo/queues/rx-0/rps_cpus");
    let old = std::fs::read_to_string(&rps)
        .unwrap_or_default()
        .trim()
        .to_string();
    if std::fs::write(&rps, format!("{:x}", 1u64 << m)).is_ok() {
        c.rps = Some((rps, old));
        // Three floods of 8 kB pings: on this VM one 1 kB flood steered
        // there makes a few dozen late wake-ups in 3 s, too few to tell
        // from noise; three of 8 kB make hundreds.
        for _ in 0..3 {
            let ping = ["-c", &ls, "ping", "-f", "-q", "-s", "8000", "127.0.0.1"];
            c.children.push(spawn(Command::new("taskset").args(ping)));
        }
    } else {
        path_taken(test, "lo's RPS mask cannot be set here: no flood");
    }
    // chrt and taskset set the policy and CPUs, then exec the culprit.
    let comm = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    let started = fixtures::wait_until(Duration::from_secs(10), || {
        comm(c.fifo).trim() == "rtlab-hog" && c.normal.is_none_or(|p| comm(p).trim() == impostor(m))
    });
    assert!(started, "the culprits did not start");
    c
}

/// The normal culprit's name: a per-CPU kernel thread's.
fn impostor(m: usize) -> String {
    format!("kworker/{m}:1H")
}

fn experiment(dir: &Path, m: usize, l: usize) -> PathBuf {
    experiment_of(dir, m, l, "2 s")
}

/// The experiment, its runs `lifetime` long.
fn experiment_of(dir: &Path, m: usize, l: usize, lifetime: &str) -> PathBuf {
    let cfg = dir.join("exp.cfg");
    let text = format!(
        "main\n{{\n  cpu_affinity {l}\n  trace.threshold 50 us\n}}\n\
         timer_thread[0]\n{{\n  cpu_affinity {m}\n  sched.policy FIFO\n  sched.priority 90\n  \
         timer.period 500 us\n  lifetime.duration {lifetime}\n}}\n"
    );
    std::fs::write(&cfg, text).unwrap();
    cfg
}

fn fix(dir: &Path, args: &[&str]) -> (std::process::Output, Value) {
    let mut all = vec!["fix", "exp.cfg", "--json", "fix.json"];
    all.extend(args);
    let _ = std::fs::remove_file(dir.join("fix.json"));
    let o = fixtures::rtlab_in(dir, &all);
    let v = std::fs::read(dir.join("fix.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    (o, v)
}

/// The decisions whose remedy moves thread `pid`.
fn moves(v: &Value, pid: u32) -> Vec<&Value> {
    decisions(v)
        .into_iter()
        .filter(|d| {
            d["proposal"]["actions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|a| a["action"] == "affinity" && a["tid"].as_u64() == Some(pid as u64))
        })
        .collect()
}

fn decisions(v: &Value) -> Vec<&Value> {
    v["decisions"].as_array().into_iter().flatten().collect()
}

fn steering(v: &Value) -> Vec<&Value> {
    decisions(v)
        .into_iter()
        .filter(|d| {
            d["proposal"]["actions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|a| {
                    a["file"]
                        .as_str()
                        .is_some_and(|f| f.ends_with("lo/queues/rx-0/rps_cpus"))
                })
        })
        .collect()
}

fn mean(rounds: &Value, key: &str) -> f64 {
    let r: Vec<f64> = rounds
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x[key].as_f64())
        .collect();
    r.iter().sum::<f64>() / r.len().max(1) as f64
}

/// Needs root, two CPUs and tracefs; says which path it took otherwise.
fn machine_can(test: &str) -> Option<(usize, usize)> {
    if !fixtures::root_or_refusal(test) {
        return None;
    }
    let (m, l) = (fixtures::measured_cpu(), fixtures::load_cpu());
    if m == l {
        path_taken(test, "one CPU: no CPU to move a culprit to");
        return None;
    }
    if fixtures::tracefs_mounts().is_empty() && !Path::new("/sys/kernel/tracing/events").exists() {
        path_taken(test, "no tracefs: the diagnosis cannot run");
        return None;
    }
    Some((m, l))
}

/// `who`'s decisions hold one kept.
fn assert_kept(ds: &[&Value], who: &str, out: &str) {
    assert!(
        ds.iter().any(|d| d["verdict"] == "kept"),
        "{who}: not kept: {ds:#?}\n{out}"
    );
}

/// The normal culprit `p` (named as a kworker) was moved as a normal
/// thread: kept (alone, or with the idle remedy when alone it cut the
/// count and not the tail); or, on a virtual machine whose idle CPU the
/// host wakes late, undone because moving the busy thread off left the
/// CPU idle and the tail worse while the count fell, even with the idle
/// states disabled: what rtlab measured, said.
fn normal_thread_decided(test: &str, v: &Value, p: u32, m: usize, out: &str) {
    let ds = moves(v, p);
    let traded = ds.iter().any(|d| {
        let why = d["why"].as_str().unwrap_or("");
        d["verdict"] == "undone"
            && (why.starts_with("undone: over") || why.starts_with("undone: alone, over"))
            && why.contains("(better")
            && (why.contains("(worse") || why.contains("with disable the idle states"))
    });
    if traded {
        path_taken(
            test,
            "the normal thread's move cut the count and made p99.9 worse here: undone, said so",
        );
    } else {
        assert_kept(&ds, "the normal-priority thread", out);
    }
    // Its kernel-thread name fooled nothing: moved as a normal thread.
    let change = ds
        .first()
        .and_then(|d| d["proposal"]["change"].as_str())
        .unwrap_or("");
    assert!(
        change.starts_with(&format!("{} (pid {p}, OTHER 0)", impostor(m)))
            && change.contains("a normal thread on a measured CPU"),
        "{change}"
    );
}

/// The HTML report, and the kept state as keys of the file, which a run
/// applies for its duration (the FIFO thread moved by its name, lo's
/// steering where it was set), a file `rtlab check` takes.
fn outputs_hold_the_kept_state(dir: &Path, l: usize, rps: bool) {
    let html = std::fs::read_to_string(dir.join("fix.html")).unwrap();
    assert!(
        html.contains("Remedies, before and after") && html.contains("KEPT"),
        "{html}"
    );
    let kept_cfg = std::fs::read_to_string(dir.join("kept.cfg")).unwrap();
    assert!(
        kept_cfg.contains(&format!("threads.affinity rtlab-hog {l}")),
        "{kept_cfg}"
    );
    if rps {
        assert!(kept_cfg.contains("net.steering lo "), "{kept_cfg}");
    }
    let check = fixtures::rtlab_in(dir, &["check", "kept.cfg"]);
    assert!(
        check.status.success(),
        "the kept state's file: {}",
        text(&check)
    );
}

#[test]
fn fix_finds_the_three_culprits_keeps_their_remedies_and_restore_undoes_them() {
    let test = "fix_finds_the_three_culprits";
    let Some((m, l)) = machine_can(test) else {
        return;
    };
    let _machine = fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let c = inject(test, m, l);
    // Dropped before the culprits: rtlab puts back the state it found
    // (lo's injected mask too), then the culprits' guard the original.
    let _restore = Restore(dir.path());
    experiment(dir.path(), m, l);
    let pids: Vec<u32> = [Some(c.fifo), c.normal].into_iter().flatten().collect();
    let before = snapshot(&pids);

    // --dry-run: the plan names every culprit, and nothing changes.
    let (o, dry) = fix(dir.path(), &["--dry-run"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(snapshot(&pids), before, "--dry-run changed a file");
    let planned = decisions(&dry);
    assert!(
        planned.iter().all(|d| d["verdict"] == "not_applied"),
        "{dry:#}"
    );
    assert!(
        !moves(&dry, c.fifo).is_empty(),
        "FIFO culprit not found: {}",
        text(&o)
    );

    // Runs of 2 s, the default three of each state (six where the first
    // three leave a figure undecided). One diagnosis: a second one finds
    // what the host's own threads add (the sandbox's, DAMON's), which
    // this test does not ask about (the proof's passes are unit-tested).
    let (o, v) = fix(
        dir.path(),
        &[
            "--kept",
            "kept.cfg",
            "--html",
            "fix.html",
            "--diagnoses",
            "1",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let runs = v["rounds_run"].as_array().map_or(0, Vec::len);
    let verdicts: Vec<String> = decisions(&v)
        .iter()
        .map(|d| format!("{}", d["verdict"]).replace('"', ""))
        .collect();
    path_taken(test, &format!("{runs} runs; decisions {verdicts:?}"));
    let out = text(&o);
    let kept = |ds: Vec<&Value>, who: &str| assert_kept(&ds, who, &out);
    kept(moves(&v, c.fifo), "the FIFO 95 thread");
    if let Some(p) = c.normal {
        normal_thread_decided(test, &v, p, m, &out);
    }
    if c.rps.is_some() {
        kept(steering(&v), "lo's packet steering");
    }
    // Every remedy not kept says it was undone, and why.
    for d in decisions(&v) {
        if d["verdict"] == "undone" || d["verdict"] == "refused" {
            assert!(
                d["why"].as_str().unwrap_or("").starts_with("undone"),
                "{d:#}"
            );
        }
    }
    final_state_better(&v["verification"]);
    outputs_hold_the_kept_state(dir.path(), l, c.rps.is_some());
    assert_ne!(snapshot(&pids), before, "nothing is kept on the system");

    let r = fixtures::rtlab_in(dir.path(), &["restore"]);
    assert!(r.status.success(), "{}", text(&r));
    assert_eq!(snapshot(&pids), before, "rtlab restore left a file changed");
    drop(c);
}

/// The final state against the baseline, interleaved: measured better and
/// kept, the count a run at least halved (the culprits make it 10 to 30
/// times), the p99.9 over every sample of the rounds lower. Halving the
/// p99.9 is the bench's to show (`bench/fix_repeat.py`): here the other
/// tests run beside this one, and rounds they load can hold a sample in a
/// thousand near the baseline's tail.
fn final_state_better(ver: &Value) {
    pooled_holds_its_rounds(ver);
    let c = &ver["comparison"];
    assert!(c["better"] == true && ver["undone"] == false, "{ver:#}");
    let (b, f) = (mean(&ver["baseline"], "over"), mean(&ver["fixed"], "over"));
    assert!(f * 2.0 <= b, "over: baseline {b}, fixed {f}: {ver:#}");
    let p999 = |side: &str| ver[side]["p999_ns"].as_u64();
    let (b, f) = (p999("baseline_all"), p999("fixed_all"));
    assert!(f < b, "p99.9: {ver:#}");
}

/// Each side's figures over every sample of its rounds agree with the
/// rounds: the counts are their sums, the max their largest, and a
/// percentile of the pool lies between the rounds' own (the pool's
/// distribution is their mean: at the largest round's p99.9 every round
/// holds 99.9% of its samples, below the smallest none does).
fn pooled_holds_its_rounds(ver: &Value) {
    for side in ["baseline", "fixed"] {
        let (rounds, all) = (&ver[side], &ver[format!("{side}_all")]);
        let rounds = rounds.as_array().expect("rounds");
        let of = |k: &'static str| rounds.iter().map(move |r| r[k].as_u64().unwrap_or(0));
        assert_eq!(
            all["samples"].as_u64(),
            Some(of("samples").sum()),
            "{ver:#}"
        );
        assert_eq!(all["over"].as_u64(), Some(of("over").sum()), "{ver:#}");
        assert_eq!(all["max_ns"].as_u64(), of("max_ns").max(), "{ver:#}");
        let p = all["p999_ns"].as_u64().unwrap();
        assert!(
            of("p999_ns").min() <= Some(p) && Some(p) <= of("p999_ns").max(),
            "{ver:#}"
        );
    }
}

/// SIGKILL in each phase of `rtlab fix` (the diagnosis, a remedy's
/// rounds, the verification, the end where the kept state is written),
/// then `rtlab restore` or the next run (a run replays a dead fix's
/// journal; what a finished fix kept waits for `rtlab restore`): every
/// file a remedy may touch, and the culprit's CPUs, as before, byte for
/// byte.
#[test]
fn a_fix_killed_in_any_phase_is_undone_by_restore_or_the_next_run() {
    let test = "a_fix_killed_in_any_phase";
    let Some((m, l)) = machine_can(test) else {
        return;
    };
    let _machine = fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    // Stopped when dropped, the test failing or not.
    let culprit = guarded(hog(m).spawn().unwrap());
    // chrt and taskset set the policy and CPUs, then exec the hog.
    let pid = culprit.fifo;
    let comm = || std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    assert!(
        fixtures::wait_until(Duration::from_secs(10), || comm().trim() == "rtlab-hog"),
        "the culprit did not start"
    );
    let _restore = Restore(dir.path());
    // Runs of 1 s judged on the p99 alone: the phases, not the figures,
    // are what this test asks. The hog's bursts make one wake-up in ten
    // late (p99 near 1.5 ms, tens of µs once moved); a host stall of 8 ms,
    // seen here about one run in six, makes 16 of the 2000 (the p99.9 of
    // one run in six, never the p99); the count over 50 µs moves less on
    // this VM, whose emptied vCPU the host wakes late.
    experiment_of(dir.path(), m, l, "1 s");
    let before = snapshot(&[pid]);
    type Phase = (&'static str, fn(&str) -> bool, &'static str);
    let phases: [Phase; 4] = [
        (
            "the diagnosis",
            |l| l.starts_with("diagnosis run"),
            "restore",
        ),
        ("a remedy's rounds", |l| l.contains("(with #"), "run"),
        ("the verification", |l| l.contains("(verify: fixed)"), "run"),
        (
            "the end, the kept state written",
            |l| l.starts_with("baseline against the final state"),
            "restore",
        ),
    ];
    let mut said = Vec::new();
    for (phase, at, then) in phases {
        let (mut fix, rx) = thread_fix(dir.path(), &["--figure", "p99", "--kept", "kept.cfg"]);
        let mut seen = Vec::new();
        let reached = line_where(&rx, &mut seen, Duration::from_secs(180), at);
        if phase != "the end, the kept state written" {
            // Inside the phase, not at its first line.
            std::thread::sleep(Duration::from_millis(300));
        }
        let _ = fix.kill();
        let _ = fix.wait();
        assert!(reached.is_some(), "{phase} never came: {seen:#?}");
        let journals = std::fs::read_dir(dir.path().join("journal"))
            .map(|d| d.count())
            .unwrap_or(0);
        let o = match then {
            "restore" => fixtures::rtlab_in(dir.path(), &["restore"]),
            _ => fixtures::rtlab_in(
                dir.path(),
                &["run", "--cpus", &l.to_string(), "--duration", "100ms"],
            ),
        };
        assert!(o.status.success(), "{phase}: {}", text(&o));
        assert_eq!(
            snapshot(&[pid]),
            before,
            "killed in {phase}, then `rtlab {then}`: a file is not as before"
        );
        said.push(format!("{phase} ({journals} journal(s), then {then})"));
    }
    drop(culprit);
    path_taken(
        test,
        &format!("SIGKILL in {}: every file as before", said.join("; ")),
    );
}

/// The FIFO 95 culprit, started on `m` (its name `rtlab-hog`).
fn hog(m: usize) -> Command {
    let mut c = Command::new("chrt");
    c.args(["-f", "95", "taskset", "-c", &m.to_string()])
        .arg(env!("CARGO_BIN_EXE_rtlab"))
        .args([
            "hog",
            "--burst",
            "2ms",
            "--every",
            "20ms",
            "--duration",
            "900s",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// `child` (a FIFO culprit), stopped when dropped.
fn guarded(child: Child) -> Culprits {
    Culprits {
        fifo: child.id(),
        children: vec![child],
        rps: None,
        normal: None,
    }
}

/// `rtlab fix exp.cfg --only thread --diagnoses 1 --json fix.json` and
/// `extra` in `dir`, started; its lines as they come.
fn thread_fix(dir: &Path, extra: &[&str]) -> (Child, std::sync::mpsc::Receiver<String>) {
    let mut fix = Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args(["fix", "exp.cfg", "--only", "thread", "--diagnoses", "1"])
        .args(["--json", "fix.json"])
        .args(extra)
        .current_dir(dir)
        .env("RTLAB_JOURNAL_DIR", dir.join("journal"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let rx = lines_of(&mut fix);
    (fix, rx)
}

/// `rtlab fix`'s lines as they come, for a test that acts between them.
fn lines_of(child: &mut Child) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    rx
}

/// The next line of `rx` that `want` takes, within `limit`; every line
/// read is kept in `seen`.
fn line_where(
    rx: &std::sync::mpsc::Receiver<String>,
    seen: &mut Vec<String>,
    limit: Duration,
    mut want: impl FnMut(&str) -> bool,
) -> Option<String> {
    let until = std::time::Instant::now() + limit;
    while let Some(left) = until.checked_duration_since(std::time::Instant::now()) {
        let l = rx.recv_timeout(left).ok()?;
        seen.push(l.clone());
        if want(&l) {
            return Some(l);
        }
    }
    None
}

/// A kallsyms reader on `m` named as rtlab's first timer thread, added to
/// `culprits`; its PID (None without perl).
fn named_as_rtlabs_timer(m: usize, culprits: &mut Culprits) -> Option<u32> {
    if !fixtures::has_command("perl") {
        return None;
    }
    let script = "$0 = 'rtlab-timer0'; while (1) { open(my $f, '<', '/proc/kallsyms') or die; while (<$f>) {} close $f }";
    let child = Command::new("taskset")
        .args(["-c", &m.to_string(), "perl", "-e", script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let p = child.id();
    culprits.children.push(child);
    Some(p)
}

/// fix.json in `dir` holds one decision on moving `pid`, refused as the
/// thread's having ended, with no round run with it.
fn refused_as_ended(dir: &Path, pid: i32, seen: &[String], o: &std::process::Output) {
    let v: Value = serde_json::from_slice(&std::fs::read(dir.join("fix.json")).unwrap_or_default())
        .unwrap_or(Value::Null);
    let d = moves(&v, pid as u32);
    assert_eq!(d.len(), 1, "{v:#}\n{seen:#?}\n{}", text(o));
    assert_eq!(d[0]["verdict"], "refused", "{:#}", d[0]);
    assert_eq!(
        d[0]["why"],
        format!("undone: thread {pid} (rtlab-hog) has ended"),
        "{:#}",
        d[0]
    );
    assert!(
        d[0]["with"].as_array().is_none_or(Vec::is_empty),
        "a round ran with it: {:#}",
        d[0]
    );
}

/// The CPUs process `pid` may run on, as its status says.
fn allowed_cpus(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|c| c.trim().to_string())
}

/// Waits until the remedy of the plan line `planned` (`#N ...`) is
/// decided: a round of another remedy, or the end. The rest of the proof
/// is not the caller's.
fn past_its_rounds(
    rx: &std::sync::mpsc::Receiver<String>,
    seen: &mut Vec<String>,
    planned: Option<&str>,
) {
    let number = planned
        .and_then(|p| p.trim_start().strip_prefix('#'))
        .and_then(|p| p.split(' ').next())
        .unwrap_or("?");
    let own = format!("#{number})");
    let mut past_own = false;
    let _ = line_where(rx, seen, Duration::from_secs(120), |l| {
        let ours = l.contains(&own);
        let done = past_own && l.contains("  run ") && !ours;
        past_own |= ours;
        done
    });
}

/// Between the diagnosis and the remedy, the culprit ends and another
/// process takes its number: same name, same policy, same CPU. Only its
/// start time tells them apart, and rtlab never moves it: the remedy is
/// refused as the culprit's having ended, before any round with it.
#[test]
fn a_culprit_whose_number_another_process_took_is_never_moved() {
    let test = "a_culprit_whose_number_another_process_took_is_never_moved";
    let Some((m, l)) = machine_can(test) else {
        return;
    };
    let _machine = fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let mut culprit = guarded(hog(m).spawn().unwrap());
    let pid = culprit.fifo as i32;
    // Beside it, a normal thread named as rtlab's own first timer thread:
    // rtlab knows its threads by their process, never by their name.
    let own_name = named_as_rtlabs_timer(m, &mut culprit);
    let _restore = Restore(dir.path());
    experiment(dir.path(), m, l);
    let (mut fix, rx) = thread_fix(dir.path(), &[]);
    let mut seen = Vec::new();
    // The plan: the culprit's remedy and its number in the outcome.
    let named = format!("rtlab-hog (pid {pid}, FIFO 95)");
    let planned = line_where(&rx, &mut seen, Duration::from_secs(60), |l| {
        l.contains("remedy [thread]") && l.contains(&named)
    });
    let trying = line_where(&rx, &mut seen, Duration::from_secs(30), |l| {
        l.starts_with("trying ")
    });
    // Only the hog ends (the first child); the one named as rtlab's timer
    // thread was planned as any thread.
    if let Some(p) = own_name {
        let plan = format!("remedy [thread]: rtlab-timer0 (pid {p}, OTHER 0)");
        assert!(
            seen.iter().any(|l| l.contains(&plan)),
            "a thread named as rtlab's own was not planned as a thread: {seen:#?}"
        );
    }
    let _ = culprit.children[0].kill();
    let _ = culprit.children[0].wait();
    let impostor = trying
        .and(planned.clone())
        .and_then(|_| fixtures::spawn_as_pid(pid, &mut hog(m)));
    let Some(impostor) = impostor.map(guarded) else {
        let _ = fix.kill();
        let _ = fix.wait();
        assert!(planned.is_some(), "the culprit was not planned: {seen:#?}");
        path_taken(
            test,
            "the kernel would not hand the number over: nothing checked",
        );
        return;
    };
    past_its_rounds(&rx, &mut seen, planned.as_deref());
    let _ = Command::new("kill")
        .args(["-TERM", &fix.id().to_string()])
        .status();
    let o = fixtures::wait_output_within(fix, Duration::from_secs(60));
    let allowed = allowed_cpus(impostor.fifo);
    drop(impostor);
    refused_as_ended(dir.path(), pid, &seen, &o);
    assert_eq!(
        allowed.as_deref(),
        Some(m.to_string().as_str()),
        "the impostor was moved"
    );
    path_taken(
        test,
        &format!(
            "process {pid} ended after the diagnosis and its number was taken: refused as ended, the impostor left on CPU {m}; {}",
            if own_name.is_some() {
                "a thread named rtlab-timer0 planned as any thread"
            } else {
                "no perl: no thread named as rtlab's"
            }
        ),
    );
}

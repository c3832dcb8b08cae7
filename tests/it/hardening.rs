//! rtlab tried as an attacker would on a shared machine: links planted at
//! every output path by another user, hostile journals in hostile
//! directories, labels that would be code in a gnuplot script or markup in a
//! page, and small pathological files, each handled in bounded time and
//! memory by the real binary. Needs root to plant links owned by another
//! user (the root-only cases say so and stop otherwise).

use crate::fixtures::{is_root, path_taken, text};
use std::os::unix::fs::{PermissionsExt, lchown, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The attacker: `nobody`.
const NOBODY: u32 = 65534;

use crate::fixtures::rtlab_in as rtlab;

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A file outside the attacker's reach that the attacker would like rtlab
/// to overwrite.
struct Victim {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Victim {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("precious");
        std::fs::write(&path, "precious\n").unwrap();
        Victim { _dir: dir, path }
    }

    fn untouched(&self) -> bool {
        std::fs::read_to_string(&self.path).unwrap() == "precious\n"
    }
}

/// `name` in `dir` made a link to `target`, owned by the attacker.
fn plant(dir: &Path, name: &str, target: &Path) -> PathBuf {
    let link = dir.join(name);
    symlink(target, &link).unwrap();
    lchown(&link, Some(NOBODY), Some(NOBODY)).unwrap();
    link
}

const EXPERIMENT: &str = "timer_thread[0]\n{\n  lifetime.loops 50\n}\n\
                          program[0]\n{\n  cmdline echo hello\n  output.out prog.out\n  output.err prog.err\n}\n";

/// Every output path rtlab writes, for one planted link each.
fn outputs() -> Vec<(&'static str, Vec<&'static str>)> {
    vec![
        ("timer_thread00.txt", vec!["run", "exp.cfg"]),
        ("prog.out", vec!["run", "exp.cfg"]),
        ("prog.err", vec!["run", "exp.cfg"]),
        ("out.json", vec!["run", "exp.cfg", "--json", "out.json"]),
        ("pic.svg", vec!["plot", "seed.json", "-o", "pic.svg"]),
        ("pic.png", vec!["plot", "seed.json", "-o", "pic.png"]),
        ("plot.gp", vec!["plot", "seed.json", "--gnuplot", "plot.gp"]),
        ("r.html", vec!["report", "seed.json", "-o", "r.html"]),
        ("kept.cfg", vec!["fix", "exp.cfg", "--kept", "kept.cfg"]),
        ("fix.json", vec!["fix", "exp.cfg", "--json", "fix.json"]),
        ("fix.html", vec!["fix", "exp.cfg", "--html", "fix.html"]),
        ("nfd", vec!["qualify", "cyclictest", "--nfd-file", "nfd"]),
    ]
}

fn seed_result(dir: &Path) {
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/seeds/rtlab-result.json"),
        dir.join("seed.json"),
    )
    .unwrap();
}

#[test]
fn every_output_survives_a_link_planted_in_a_sticky_world_writable_directory() {
    let _machine = crate::fixtures::machine_shared();
    let test = test_name!();
    if !is_root() {
        path_taken(
            test,
            "not root: another user's link cannot be planted; skipped",
        );
        return;
    }
    path_taken(
        test,
        "root: links owned by uid 65534 planted at each output path",
    );
    for (name, args) in outputs() {
        // /tmp as it is: sticky and world-writable.
        let shared = tempfile::tempdir().unwrap();
        chmod(shared.path(), 0o1777);
        std::fs::write(shared.path().join("exp.cfg"), EXPERIMENT).unwrap();
        seed_result(shared.path());
        let victim = Victim::new();
        let link = plant(shared.path(), name, &victim.path);
        let o = rtlab(shared.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("symbolic link"), "{name}: {err}");
        assert!(victim.untouched(), "{name}: the link's target was written");
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // Refused before anything started: nothing else appeared.
        let mut left: Vec<String> = std::fs::read_dir(shared.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut want = vec!["exp.cfg".to_string(), "seed.json".into(), name.into()];
        want.sort();
        assert_eq!(left, want, "{name}");
        // `check` says the same, at the key's place in the file.
        if let Some(line) = EXPERIMENT
            .lines()
            .position(|l| l.starts_with("  output.") && l.ends_with(name))
        {
            let o = rtlab(shared.path(), &["check", "exp.cfg"]);
            assert_eq!(o.status.code(), Some(2), "{}", text(&o));
            let want = format!("exp.cfg:{}:14: error: {name}: is a symbolic link", line + 1);
            assert!(
                String::from_utf8_lossy(&o.stderr).contains(&want),
                "{want}: {}",
                text(&o)
            );
        }
    }
}

/// Every output through `theirs/results` (a link to the victim's
/// directory) is refused with `why`, exit 2, and nothing is written there.
fn refused_through_theirs_results(work: &Path, victim: &Victim, why: &str) {
    let victim_dir = victim.path.parent().unwrap();
    for args in [
        vec!["run", "exp.cfg", "--outdir", "theirs/results"],
        vec!["run", "exp.cfg", "--json", "theirs/results/precious"],
        vec!["plot", "seed.json", "-o", "theirs/results/precious.svg"],
    ] {
        let o = rtlab(work, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(why), "{args:?}: {err}");
        assert!(victim.untouched());
        assert_eq!(
            std::fs::read_dir(victim_dir).unwrap().count(),
            1,
            "{args:?} wrote there"
        );
    }
}

#[test]
fn a_link_in_a_directory_of_another_user_is_not_followed() {
    let _machine = crate::fixtures::machine_shared();
    let test = test_name!();
    if !is_root() {
        path_taken(test, "not root; skipped");
        return;
    }
    path_taken(
        test,
        "root: a directory of uid 65534 (mode 0755, where fs.protected_symlinks does not apply) links to the victim's directory",
    );
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("exp.cfg"), EXPERIMENT).unwrap();
    seed_result(work.path());
    let theirs = work.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    let victim = Victim::new();
    let victim_dir = victim.path.parent().unwrap().to_path_buf();
    plant(&theirs, "results", &victim_dir);
    std::os::unix::fs::chown(&theirs, Some(NOBODY), Some(NOBODY)).unwrap();
    refused_through_theirs_results(work.path(), &victim, "owned by uid 65534");
}

/// Sets `fs.protected_hardlinks`, giving the value it had.
fn protected_hardlinks(value: &str) -> String {
    let path = "/proc/sys/fs/protected_hardlinks";
    let old = std::fs::read_to_string(path).unwrap_or_default();
    std::fs::write(path, value).unwrap();
    old.trim().to_string()
}

#[test]
fn a_hard_link_to_roots_link_is_not_followed() {
    // Changes a sysctl for a moment: alone.
    let _machine = crate::fixtures::machine_exclusive();
    let test = test_name!();
    if !is_root() {
        path_taken(test, "not root; skipped");
        return;
    }
    path_taken(
        test,
        "root: with fs.protected_hardlinks=0, uid 65534 hard-links a root-owned link to the victim's directory into its own directory",
    );
    let work = tempfile::tempdir().unwrap();
    chmod(work.path(), 0o755);
    std::fs::write(work.path().join("exp.cfg"), EXPERIMENT).unwrap();
    seed_result(work.path());
    let victim = Victim::new();
    let victim_dir = victim.path.parent().unwrap().to_path_buf();
    // Root's own link, as `/var/run` is, in root's own directory.
    let roots = work.path().join("roots");
    std::fs::create_dir(&roots).unwrap();
    chmod(&roots, 0o755);
    std::os::unix::fs::symlink(&victim_dir, roots.join("run")).unwrap();
    let theirs = work.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(NOBODY), Some(NOBODY)).unwrap();
    let old = protected_hardlinks("0");
    let linked = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "ln",
            "-P",
        ])
        .arg(roots.join("run"))
        .arg(theirs.join("results"))
        .output();
    protected_hardlinks(&old);
    let linked = linked.unwrap();
    assert!(linked.status.success(), "{}", text(&linked));
    refused_through_theirs_results(work.path(), &victim, "others can write");
}

#[test]
fn outputs_are_written_whole_and_replace_the_callers_own_files() {
    let _machine = crate::fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("exp.cfg"), EXPERIMENT).unwrap();
    std::fs::write(dir.path().join("out.json"), "an older result").unwrap();
    std::fs::write(dir.path().join("prog.out"), "older output").unwrap();
    let o = rtlab(dir.path(), &["run", "exp.cfg", "--json", "out.json"]);
    assert!(o.status.success(), "{}", text(&o));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out.json")).unwrap())
            .unwrap();
    assert_eq!(json["timers"][0]["summary"]["samples"], 50);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("prog.out")).unwrap(),
        "hello\n"
    );
    // No temporary file is left beside them.
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".rtlab-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A journal as an attacker would write it.
fn hostile_journal(dir: &Path, changes: &[String]) {
    let header = serde_json::json!({
        "journal": "rtlab-journal/1", "owner": "run", "pid": 999_999,
        "boot_id": "", "created": "2026-11-22T00:00:00Z", "command": "rtlab run"
    });
    let mut text = format!("{header}\n");
    for c in changes {
        text.push_str(c);
        text.push('\n');
    }
    let path = dir.join("run-999999.journal");
    std::fs::write(&path, text).unwrap();
    chmod(&path, 0o600);
}

#[test]
fn a_hostile_journal_is_refused_and_nothing_is_replayed() {
    let _machine = crate::fixtures::machine_shared();
    let test = test_name!();
    if !is_root() {
        path_taken(test, "not root: `rtlab restore` is refused first; skipped");
        return;
    }
    path_taken(
        test,
        "root: journals replayed by `rtlab restore` and at the start of `rtlab run`",
    );
    let victim = Victim::new();
    let outside = victim
        .path
        .to_string_lossy()
        .trim_start_matches('/')
        .to_string();
    let write = |path: &str| {
        serde_json::json!({"change": "write", "path": path, "old": "pwned", "new": "precious"})
            .to_string()
    };
    // The audit's attack: a v1 hierarchy's `release_agent` (with
    // `notify_on_release`) and a machine-check `trigger`, beside files
    // rtlab does write; at the top of every cgroup mount this machine has.
    let mut runners: Vec<String> = std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f.len() > 2 && f[2].starts_with("cgroup")).then(|| f[1].trim_start_matches('/'))
        })
        .flat_map(|m| {
            [
                format!("{m}/release_agent"),
                format!("{m}/notify_on_release"),
                format!("{m}/rt/notify_on_release"),
            ]
        })
        .collect();
    runners.push("sys/devices/system/machinecheck/machinecheck0/trigger".into());
    let runner = |path: &str| {
        serde_json::json!({"change": "write", "path": path,
            "old": format!("/bin/touch {}", victim.path.display()), "new": ""})
        .to_string()
    };
    let mut cases: Vec<(u32, Vec<String>, &str)> = runners
        .iter()
        .map(|p| (0o700, vec![runner(p)], "not a kernel knob"))
        .collect();
    cases.extend(vec![
        // A directory others can write: refused, whatever it holds.
        (0o777, vec![], "group or others"),
        // A path outside the kernel's knobs.
        (0o700, vec![write(&outside)], "not a kernel knob"),
        // Into them, and out with `..`.
        (
            0o700,
            vec![write(&format!("proc/sys/../../{outside}"))],
            "`..`",
        ),
        // A sysctl rtlab never changes, which would make root run a
        // program on the next crash.
        (
            0o700,
            vec![
                serde_json::json!({"change": "write", "path": "proc/sys/kernel/core_pattern",
                "old": format!("|/bin/touch {}", victim.path.display()), "new": "core"})
                .to_string(),
            ],
            "not a kernel knob",
        ),
        // A valid change, then garbage: refused whole.
        (
            0o700,
            vec![
                serde_json::json!({"change": "write", "path": "proc/sys/vm/stat_interval",
                    "old": "37", "new": "1"})
                .to_string(),
                "garbage".into(),
            ],
            "not a change",
        ),
    ]);
    for (mode, changes, why) in cases {
        let work = tempfile::tempdir().unwrap();
        let jdir = work.path().join("journal");
        std::fs::create_dir(&jdir).unwrap();
        chmod(&jdir, mode);
        hostile_journal(&jdir, &changes);
        let knobs = || {
            ["kernel/core_pattern", "vm/stat_interval"]
                .map(|k| std::fs::read_to_string(format!("/proc/sys/{k}")).unwrap())
        };
        let before = knobs();
        let o = rtlab(work.path(), &["restore"]);
        assert!(!o.status.success(), "{why}: {}", text(&o));
        let out = text(&o);
        assert!(out.contains("REFUSED") && out.contains(why), "{why}: {out}");
        assert!(victim.untouched(), "{why}: replayed");
        assert_eq!(knobs(), before, "{why}: a kernel knob changed");
        assert!(
            jdir.join("run-999999.journal").exists(),
            "{why}: not left in place"
        );
        // A run meets it too, says so, and goes on without replaying it.
        std::fs::write(
            work.path().join("t.cfg"),
            "timer_thread[0]\n{\n lifetime.loops 5\n}\n",
        )
        .unwrap();
        let o = rtlab(work.path(), &["run", "t.cfg"]);
        assert!(victim.untouched());
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(why),
            "{}",
            text(&o)
        );
        // One that changes the system cannot keep its own journal in a
        // directory others can write: it refuses to start.
        std::fs::write(
            work.path().join("tuned.cfg"),
            "main\n{\n threads.sched ksoftirqd/* FIFO 1\n}\ntimer_thread[0]\n{\n lifetime.loops 5\n}\n",
        )
        .unwrap();
        let o = rtlab(work.path(), &["run", "tuned.cfg"]);
        let checked = rtlab(work.path(), &["check", "tuned.cfg"]);
        if mode == 0o777 {
            // `check` refuses what `run` would.
            assert_eq!(checked.status.code(), Some(2), "{}", text(&checked));
            assert!(String::from_utf8_lossy(&checked.stderr).contains("journal directory"));
            assert_eq!(o.status.code(), Some(2), "{}", text(&o));
            assert!(
                String::from_utf8_lossy(&o.stderr).contains("journal directory"),
                "{}",
                text(&o)
            );
        }
        assert!(victim.untouched());
    }
}

#[test]
fn hostile_labels_run_nothing_and_show_as_text() {
    let _machine = crate::fixtures::machine_shared();
    let test = test_name!();
    let dir = tempfile::tempdir().unwrap();
    // Relative: every command runs in `dir`.
    let marker = dir.path().join("pwned");
    let m = "pwned";
    // A file whose name is the payload: its stem is the default label.
    let evil_name = format!("a`touch {m}`$(touch {m})\\");
    seed_result(dir.path());
    std::fs::copy(dir.path().join("seed.json"), dir.path().join(&evil_name)).unwrap();
    let title = format!("t`touch {m}` ' \" \x1b]0;owned\x07 <b>x</b>");
    let label = format!("<script>alert(1)</script>`touch {m}`\x1b[2J");
    let o = rtlab(
        dir.path(),
        &[
            "plot",
            &evil_name,
            "seed.json",
            "--label",
            &label,
            "--label",
            "ok",
            "--title",
            &title,
            "--gnuplot",
            "s.gp",
            "-o",
            "p.svg",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let script = std::fs::read_to_string(dir.path().join("s.gp")).unwrap();
    assert!(
        !script.contains('\x1b'),
        "control characters must be escaped"
    );
    if crate::fixtures::has_command("gnuplot") {
        path_taken(test, "gnuplot installed: the script is run");
        let g = Command::new("gnuplot")
            .arg("-e")
            .arg("out='drawn.svg'")
            .arg("s.gp")
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(g.status.success(), "{}", text(&g));
        assert!(dir.path().join("drawn.svg").exists());
    } else {
        path_taken(test, "no gnuplot: the script is checked as text only");
    }
    assert!(!marker.exists(), "a label ran a command");
    let svg = std::fs::read_to_string(dir.path().join("p.svg")).unwrap();
    assert!(!svg.contains("<script>") && svg.contains("&lt;script&gt;"));
    assert!(!svg.contains('\x1b'));
    let o = rtlab(
        dir.path(),
        &[
            "report", &evil_name, "--label", &label, "--title", &title, "-o", "r.html",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let html = std::fs::read_to_string(dir.path().join("r.html")).unwrap();
    assert!(!html.contains("<script>alert") && !html.contains("<b>x</b>"));
    assert!(!html.contains('\x1b') && !html.contains('\x07'));
    // On the terminal: escape sequences shown, not sent.
    let o = rtlab(
        dir.path(),
        &["compare", &evil_name, "seed.json", "--label", &label],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        !o.stdout.contains(&0x1b),
        "an escape sequence reached the terminal"
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("\\x1b[2J"));
    assert!(!marker.exists());
}

/// The most address space the binary may map while it reads a hostile
/// file (`ulimit -v`): "a few tens of MB". The debug binary with its
/// threads runs in 32 MiB.
const ADDRESS_SPACE_KIB: u32 = 64 * 1024;

/// Runs the binary under the address-space limit and a hang detector (far
/// above what any input takes: not a speed test); returns its output and
/// how long it took.
fn bounded(dir: &Path, args: &[&str]) -> (Output, Duration) {
    let start = Instant::now();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {ADDRESS_SPACE_KIB}; exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_rtlab"))
        .args(args)
        .current_dir(dir)
        .env("RTLAB_JOURNAL_DIR", dir.join("journal"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = child.stderr.take().unwrap();
    let drain = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut err, &mut v);
        v
    });
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("{args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = start.elapsed();
    let output = Output {
        status,
        stdout: Vec::new(),
        stderr: drain.join().unwrap(),
    };
    (output, elapsed)
}

#[test]
fn pathological_files_are_answered_in_bounded_time_and_memory() {
    let _machine = crate::fixtures::machine_shared();
    let test = test_name!();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mb = 1 << 20;
    let fill = |unit: &str, bytes: usize| unit.repeat(bytes / unit.len());
    let files: Vec<(&str, String)> = vec![
        ("garbage.cfg", fill("nonsense line\n", mb - 100)),
        ("stanzas.cfg", fill("timer_thread[0]\n{\n}\n", mb - 100)),
        ("mains.cfg", fill("main\n{\n}\n", mb - 100)),
        (
            "props.cfg",
            format!(
                "main\n{{\n{}}}\n",
                fill(
                    "  threads.sched *a*a*a*a*a*a*a*a*a*a*a*b FIFO 2\n",
                    mb - 200
                )
            ),
        ),
        (
            "cpulist.cfg",
            format!(
                "main\n{{\n  cpu_affinity {}0\n}}\n",
                fill("0-1023,", mb - 100)
            ),
        ),
        (
            "irqs.cfg",
            format!(
                "main\n{{\n  irq.affinity 0 {}\n}}\n",
                fill("4294967295 ", mb - 100)
            ),
        ),
        (
            "longkey.cfg",
            format!("main\n{{\n  {} 1\n}}\n", fill("k", mb - 100)),
        ),
        ("toobig.cfg", fill("# comment\n", 3 * mb)),
    ];
    let results: Vec<(&str, String)> = vec![
        (
            "nested.json",
            format!("{}{}", "[".repeat(mb), "]".repeat(mb)),
        ),
        (
            "deep-rtlab.json",
            format!("{{\"rtlab_version\": {}", "{\"a\":".repeat(mb / 6)),
        ),
        (
            "columns.hist",
            format!("# Histogram\n0 {}\n", fill("1 ", 3 * mb)),
        ),
        (
            "rows.hist",
            format!(
                "# Histogram\n{}",
                (0..300_000).map(|i| format!("{i} 1\n")).collect::<String>()
            ),
        ),
        (
            "tlines.hist",
            (0..100_000)
                .map(|i| format!("T:{i} ( 1) P:80 I:1000 C: 9 Min: 1 Act: 2 Avg: 3 Max: 4\n"))
                .collect(),
        ),
        (
            "threads.json",
            format!(
                "{{\"thread\": {{{}\"x\": 0}}}}",
                (0..200_000)
                    .map(|i| format!("\"{i}\": {{}},"))
                    .collect::<String>()
            ),
        ),
        ("huge.hist", fill("9", 3 * mb)),
    ];
    let mut slowest = (Duration::ZERO, "");
    for (name, body) in &files {
        std::fs::write(d.join(name), body).unwrap();
        let (o, took) = bounded(d, &["check", name]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!("{name}:")) && err.contains("error:"),
            "{name}: {err:.2000}"
        );
        assert!(
            err.len() < 64 * 1024,
            "{name}: {} bytes of diagnostics",
            err.len()
        );
        slowest = slowest.max((took, name));
    }
    for (name, body) in &results {
        std::fs::write(d.join(name), body).unwrap();
        let (o, took) = bounded(d, &["compare", name]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(name),
            "{name}: {}",
            text(&o)
        );
        slowest = slowest.max((took, name));
    }
    // A device that never ends is refused unread; a file past the size
    // limit is refused before it is read (a sparse file: no disk used).
    let (o, took) = bounded(d, &["compare", "/dev/zero"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a regular file"));
    slowest = slowest.max((took, "/dev/zero"));
    let sparse = std::fs::File::create(d.join("sparse.json")).unwrap();
    sparse.set_len(1 << 30).unwrap();
    let (o, _) = bounded(d, &["compare", "sparse.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("larger than 64 MiB"));
    path_taken(
        test,
        &format!(
            "{} files, each refused within {ADDRESS_SPACE_KIB} KiB of address space; slowest {} in {:.2?} (debug build)",
            files.len() + results.len() + 1,
            slowest.1,
            slowest.0
        ),
    );
}

#[test]
fn an_outdir_on_a_pseudo_filesystem_is_refused_before_the_run() {
    let _machine = crate::fixtures::machine_shared();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("exp.cfg"), EXPERIMENT).unwrap();
    let kinds = ["proc", "sysfs", "cgroup", "cgroup2", "tracefs", "debugfs"];
    let mounts: Vec<(String, String)> = std::fs::read_to_string("/proc/self/mounts")
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f.len() > 2 && kinds.contains(&f[2])).then(|| (f[1].to_string(), f[2].to_string()))
        })
        .collect();
    let mut dirs: Vec<(String, String)> = mounts
        .iter()
        .map(|(m, k)| (format!("{m}/rtlab-outdir-test"), k.clone()))
        .collect();
    dirs.push(("/proc/self/rtlab-outdir-test".into(), "proc".into()));
    let instances: Vec<(String, String)> = mounts
        .iter()
        .filter(|(_, k)| k == "tracefs")
        .map(|(m, k)| (format!("{m}/instances/rtlab-outdir-test"), k.clone()))
        .collect();
    dirs.extend(instances);
    path_taken(
        "an_outdir_on_a_pseudo_filesystem_is_refused_before_the_run",
        &format!(
            "{} directories on {:?}",
            dirs.len(),
            mounts
                .iter()
                .map(|m| &m.1)
                .collect::<std::collections::BTreeSet<_>>()
        ),
    );
    for (dir, kind) in dirs {
        let o = rtlab(work.path(), &["run", "exp.cfg", "--outdir", &dir]);
        assert_eq!(o.status.code(), Some(2), "{dir}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(&format!("is on {kind}")), "{dir}: {err}");
        assert!(!Path::new(&dir).exists(), "{dir} was made");
    }
}

#[test]
fn an_output_replaced_during_the_run_keeps_its_data_under_a_name_rtlab_chose() {
    let _machine = crate::fixtures::machine_shared();
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    std::fs::write(
        d.join("exp.cfg"),
        "timer_thread[0]\n{\n  timer.period 1 ms\n  lifetime.loops 3000\n}\n\
         program[0]\n{\n  cmdline sh -c \"echo measured; touch started; sleep 30\"\n  output.out prog.out\n}\n",
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args(["run", "exp.cfg", "--json", "out.json"])
        .current_dir(d)
        .env("RTLAB_JOURNAL_DIR", d.join("journal"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the run has started (its program runs), the names become
    // directories: what the audit's racer left at the end.
    assert!(crate::fixtures::wait_until(Duration::from_secs(30), || d
        .join("started")
        .exists()));
    std::fs::create_dir(d.join("out.json")).unwrap();
    std::fs::create_dir(d.join("prog.out")).unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(1), "{err}");
    let kept = |name: &str| {
        let prefix = format!("{name}.rtlab-");
        let found: Vec<PathBuf> = std::fs::read_dir(d)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .map(|e| e.path())
            .collect();
        assert_eq!(found.len(), 1, "{name}: {found:?}\n{err}");
        assert!(
            err.contains(&format!("kept as {}", found[0].display()))
                || err.contains(&format!(
                    "kept as {}",
                    found[0].file_name().unwrap().to_string_lossy()
                )),
            "{name}: {err}"
        );
        std::fs::read_to_string(&found[0]).unwrap()
    };
    let json: serde_json::Value = serde_json::from_str(&kept("out.json")).unwrap();
    assert_eq!(json["timers"][0]["summary"]["samples"], 3000);
    assert_eq!(kept("prog.out"), "measured\n");
    let tmp: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(tmp.is_empty(), "{tmp:?}");
}

#[test]
fn a_tuning_command_with_an_untrusted_journal_directory_is_refused_with_2() {
    let _machine = crate::fixtures::machine_shared();
    let work = tempfile::tempdir().unwrap();
    let real = work.path().join("real");
    std::fs::create_dir(&real).unwrap();
    chmod(&real, 0o700);
    symlink(&real, work.path().join("journal")).unwrap();
    // `rtlab` here sets RTLAB_JOURNAL_DIR to WORK/journal: a link.
    let o = rtlab(work.path(), &["irq", "move", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(std::fs::read_dir(&real).unwrap().count(), 0);
}

#[test]
fn an_outdir_with_a_line_feed_or_an_invisible_character_is_shown_escaped() {
    let _machine = crate::fixtures::machine_shared();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(
        work.path().join("exp.cfg"),
        "timer_thread[0]\n{\n  lifetime.loops 5\n}\n",
    )
    .unwrap();
    let o = rtlab(
        work.path(),
        &["run", "exp.cfg", "--outdir", "a\nFAKE LINE\u{200b}"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out
        .lines()
        .find(|l| l.starts_with("Statistics for"))
        .unwrap();
    assert!(
        line.contains("a\\nFAKE LINE\\u{200b}/timer_thread00.txt"),
        "{line}"
    );
    assert!(!out.lines().any(|l| l.starts_with("FAKE LINE")), "{out}");
}

/// The staging files (`.rtlab-*.tmp`) in `dir`.
fn staged_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(".rtlab-") && n.ends_with(".tmp"))
        .collect()
}

#[test]
fn a_run_killed_before_its_outputs_are_in_place_leaves_no_staging_file() {
    let _machine = crate::fixtures::machine_shared();
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    std::fs::write(
        d.join("exp.cfg"),
        "timer_thread[0]\n{\n  timer.period 1 ms\n}\n\
         program[0]\n{\n  cmdline sh -c \"echo partial; touch started; sleep 30\"\n  output.out prog.out\n  output.err prog.err\n}\n",
    )
    .unwrap();
    for recovery in ["restore", "run"] {
        let _ = std::fs::remove_file(d.join("started"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_rtlab"))
            .args(["run", "exp.cfg"])
            .current_dir(d)
            .env("RTLAB_JOURNAL_DIR", d.join("journal"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        assert!(crate::fixtures::wait_until(Duration::from_secs(30), || d
            .join("started")
            .exists()));
        child.kill().unwrap();
        child.wait().unwrap();
        let left = staged_in(d);
        assert_eq!(left.len(), 2, "the killed run's output and error: {left:?}");
        // `rtlab restore`, or the next run, replays the dead run's journal.
        let o = if recovery == "restore" {
            rtlab(d, &["restore"])
        } else {
            std::fs::write(
                d.join("quick.cfg"),
                "timer_thread[0]\n{\n  lifetime.loops 5\n}\n",
            )
            .unwrap();
            rtlab(d, &["run", "quick.cfg"])
        };
        assert!(o.status.success(), "{recovery}: {}", text(&o));
        assert!(
            staged_in(d).is_empty(),
            "{recovery}: {:?}\n{}",
            staged_in(d),
            text(&o)
        );
    }
}

#[test]
fn crafted_windows_files_are_read_or_refused_within_bounds() {
    let _machine = crate::fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mb = 1 << 20;
    let fill = |unit: &str, bytes: usize| unit.repeat(bytes / unit.len());
    let mut slowest = (Duration::ZERO, String::new());
    // Windows files as the audit crafted them (smaller): read whole, one
    // window (`@1`), or refused at their line, all within the same bounds.
    let head = "{\"schema\":\"rtlab-windows/1\",\"bounds_ns\":[2000]}\n";
    let line = "{\"start\":\"2026-11-22T05:00:00Z\",\"seconds\":1.0,\"thread\":\"T0\",\"cpu\":0,\"samples\":1,\"max_ns\":1500,\"counts\":[1,0]}\n";
    let windows: Vec<(&str, String, &str, i32)> = vec![
        (
            "many.jsonl",
            format!("{head}{}", fill(line, 3 * mb)),
            "many.jsonl",
            0,
        ),
        ("many.jsonl", String::new(), "many.jsonl@1", 0),
        (
            "longline.jsonl",
            format!("{head}{{\"start\":\"{}\"}}\n", fill("x", 3 * mb)),
            "longline.jsonl",
            2,
        ),
        (
            "threads.jsonl",
            format!(
                "{head}{}",
                (0..2000)
                    .map(|i| line.replace("\"T0\"", &format!("\"T{i}\"")))
                    .collect::<String>()
            ),
            "threads.jsonl",
            2,
        ),
        (
            "counts.jsonl",
            format!(
                "{{\"schema\":\"rtlab-windows/1\",\"bounds_ns\":[{}]}}\n{line}",
                (1..200_000)
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            "counts.jsonl",
            2,
        ),
        (
            "spaced.jsonl",
            format!(
                "{{\"schema\": \"rtlab-windows/1\", \"bounds_ns\": [2000]}}\n{}",
                line.repeat(1000)
            ),
            "spaced.jsonl",
            0,
        ),
    ];
    for (name, body, arg, code) in &windows {
        if !body.is_empty() {
            std::fs::write(d.join(name), body).unwrap();
        }
        let (o, took) = bounded(d, &["compare", arg]);
        assert_eq!(o.status.code(), Some(*code), "{arg}: {}", text(&o));
        slowest = slowest.max((took, arg.to_string()));
    }
    path_taken(
        "crafted_windows_files_are_read_or_refused_within_bounds",
        &format!(
            "{} windows files, each answered within {ADDRESS_SPACE_KIB} KiB of address space; slowest {} in {:.2?} (debug build)",
            windows.len(),
            slowest.1,
            slowest.0
        ),
    );
}

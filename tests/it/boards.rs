//! The boards' binaries (debug builds) under QEMU
//! user-mode emulation (Debian's `qemu-user-static`): a static aarch64
//! musl binary and a 32-bit ARM glibc one run a real experiment (a timer
//! thread and a program), check it, plot and compare the result; the
//! result files and JSON must hold together, and this host's own rtlab
//! must read the board's result to the same figures. Latency under
//! emulation means nothing; behaviour does.
//!
//! Needs `qemu-aarch64-static`/`qemu-arm-static` (`.ci/run` installs them)
//! and the rustup targets; builds the binaries when they are not
//! built yet. Without them it says what is missing.

use crate::fixtures::{has_command, path_taken, text};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A board: its target triple, and how QEMU runs its binary.
struct Board {
    target: &'static str,
    qemu: &'static str,
    /// Arguments before the binary (the ARM glibc loader for armv7).
    prefix: &'static [&'static str],
    machine: &'static str,
}

const BOARDS: [Board; 2] = [
    Board {
        target: "aarch64-unknown-linux-musl",
        qemu: "qemu-aarch64-static",
        prefix: &[],
        machine: "aarch64",
    },
    Board {
        target: "armv7-unknown-linux-gnueabihf",
        qemu: "qemu-arm-static",
        prefix: &[
            "/usr/arm-linux-gnueabihf/lib/ld-linux-armhf.so.3",
            "--library-path",
            "/usr/arm-linux-gnueabihf/lib",
        ],
        machine: "arm",
    },
];

/// The board's debug binary (see [`crate::fixtures::board_binary`]).
fn binary(b: &Board) -> Result<PathBuf, String> {
    crate::fixtures::board_binary(b.target)
}

fn emulated(b: &Board, bin: &Path, dir: &Path, args: &[&str]) -> Output {
    Command::new(b.qemu)
        .args(b.prefix)
        .arg(bin)
        .args(args)
        .current_dir(dir)
        .env("RTLAB_JOURNAL_DIR", dir.join("journal"))
        .output()
        .unwrap()
}

fn check_board(b: &Board, bin: &Path) -> String {
    let dir = tempfile::tempdir().unwrap();
    let cfg = "timer_thread[0]\n{\n  timer.period 1 ms\n  lifetime.loops 300\n  \
               stats.histo_size 100 ms\n}\n\
               program[0]\n{\n  cmdline sh -c 'echo started; sleep 0.1'\n  output.out prog.out\n}\n";
    std::fs::write(dir.path().join("exp.cfg"), cfg).unwrap();
    let o = emulated(b, bin, dir.path(), &["check", "exp.cfg"]);
    assert!(o.status.success(), "{}: check: {}", b.target, text(&o));
    let o = emulated(b, bin, dir.path(), &["run", "exp.cfg", "--json", "r.json"]);
    assert!(o.status.success(), "{}: run: {}", b.target, text(&o));
    let r: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(r["schema"], "rtlab-result/1");
    assert_eq!(r["system"]["machine"], b.machine, "{}", r["system"]);
    let t = &r["timers"][0];
    let samples = t["summary"]["samples"].as_u64().unwrap();
    assert_eq!(samples, 300, "{t}");
    // The result file holds the same samples as the JSON.
    let file = std::fs::read_to_string(dir.path().join("timer_thread00.txt")).unwrap();
    let held: u64 = crate::fixtures::result_histogram(&file)
        .iter()
        .map(|h| h.1)
        .sum();
    assert_eq!(held, samples, "{file}");
    let (min, max) = (
        t["summary"]["min_ns"].as_u64().unwrap(),
        t["summary"]["max_ns"].as_u64().unwrap(),
    );
    assert!(min <= max && max < 100_000_000, "{t}");
    // The program ran and its output was kept.
    assert_eq!(r["programs"][0]["starts"], 1, "{}", r["programs"]);
    let out = std::fs::read_to_string(dir.path().join("prog.out")).unwrap();
    assert!(out.contains("started"), "{out}");
    // Plot and compare on the board...
    let o = emulated(b, bin, dir.path(), &["plot", "r.json", "-o", "r.svg"]);
    assert!(o.status.success(), "{}: plot: {}", b.target, text(&o));
    let svg = std::fs::read_to_string(dir.path().join("r.svg")).unwrap();
    assert!(
        svg.starts_with("<svg") || svg.contains("<svg"),
        "{}",
        &svg[..svg.len().min(200)]
    );
    let on_board = emulated(b, bin, dir.path(), &["compare", "r.json", "r.json"]);
    assert!(on_board.status.success(), "{}", text(&on_board));
    // ...and this host's rtlab reads the board's result to the same table.
    let on_host = Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args(["compare", "r.json", "r.json"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&on_board.stdout),
        String::from_utf8_lossy(&on_host.stdout)
    );
    format!("{}: {samples} samples, max {max} ns under QEMU", b.target)
}

#[test]
fn the_boards_binaries_run_an_experiment_under_emulation() {
    let _machine = crate::fixtures::machine_exclusive();
    let test = test_name!();
    // The boards side by side: each emulation takes one CPU, and the
    // machine is this test's alone (a failed board fails the test).
    let said: Vec<String> = std::thread::scope(|s| {
        let boards: &'static [Board] = &BOARDS;
        let checks: Vec<_> = boards.iter().map(|b| s.spawn(|| one_board(b))).collect();
        checks.into_iter().map(|c| c.join().unwrap()).collect()
    });
    for what in said {
        path_taken(test, &what);
    }
}

/// The check of board `b`, or why this machine cannot run it.
fn one_board(b: &Board) -> String {
    if !has_command(b.qemu) {
        return format!("{}: no {} here", b.target, b.qemu);
    }
    if b.prefix.first().is_some_and(|l| !Path::new(l).exists()) {
        return format!("{}: no ARM glibc (libc6-armhf-cross)", b.target);
    }
    match binary(b) {
        Ok(bin) => check_board(b, &bin),
        Err(why) => format!("{}: {why}", b.target),
    }
}

/// Syscalls newer than the article's 4.19 kernel, or that container
/// profiles refuse, on x86_64: sched_setattr, statx, rseq, pidfd_open,
/// clone3, close_range, openat2, faccessat2.
#[cfg(target_arch = "x86_64")]
const NEWER_SYSCALLS: &str = "314,332,334,434,435,436,437,439";
/// sched_setscheduler on x86_64.
#[cfg(target_arch = "x86_64")]
const SCHED_SETSCHEDULER: &str = "144";

/// `tests/support/nosys.c`, built here: runs a command under a seccomp
/// filter that answers ENOSYS to the syscalls it is given.
fn nosys(dir: &Path) -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/nosys.c");
    let bin = dir.join("nosys");
    let ok = Command::new("cc")
        .arg("-O2")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(bin)
}

#[test]
#[cfg(target_arch = "x86_64")]
fn syscalls_a_filter_refuses_fall_back_or_are_named() {
    let _machine = crate::fixtures::machine_exclusive();
    let test = test_name!();
    let dir = tempfile::tempdir().unwrap();
    let Some(nosys) = nosys(dir.path()) else {
        path_taken(test, "no C compiler to build the seccomp launcher");
        return;
    };
    let fifo = crate::fixtures::is_root();
    let sched = if fifo {
        "  sched.policy FIFO\n  sched.priority 80\n"
    } else {
        ""
    };
    let cfg = format!(
        "timer_thread[0]\n{{\n  timer.period 1 ms\n  lifetime.loops 200\n{sched}}}\n\
         program[0]\n{{\n  cmdline sh -c 'echo started'\n  output.out prog.out\n}}\n"
    );
    std::fs::write(dir.path().join("exp.cfg"), cfg).unwrap();
    let under = |refused: &str, json: &str| {
        Command::new(&nosys)
            .args([refused, "--", env!("CARGO_BIN_EXE_rtlab")])
            .args(["run", "exp.cfg", "--json", json])
            .current_dir(dir.path())
            .env("RTLAB_JOURNAL_DIR", dir.path().join("journal"))
            .output()
            .unwrap()
    };
    // The newer syscalls refused: the C library and std fall back to the
    // older forms, and the run is whole.
    let o = under(NEWER_SYSCALLS, "r.json");
    assert!(o.status.success(), "{}", text(&o));
    let r: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(
        r["timers"][0]["summary"]["samples"], 200,
        "{}",
        r["timers"][0]
    );
    assert_eq!(r["programs"][0]["starts"], 1);
    let out = std::fs::read_to_string(dir.path().join("prog.out")).unwrap();
    assert!(out.contains("started"), "{out}");
    // SCHED_OTHER asked for (what a thread already has) with the scheduling
    // syscall refused: nothing to change, the run goes on.
    let other = "timer_thread[0]\n{\n  timer.period 1 ms\n  lifetime.loops 50\n}\n";
    std::fs::write(dir.path().join("other.cfg"), other).unwrap();
    let o = Command::new(&nosys)
        .args([
            SCHED_SETSCHEDULER,
            "--",
            env!("CARGO_BIN_EXE_rtlab"),
            "run",
            "other.cfg",
        ])
        .current_dir(dir.path())
        .env("RTLAB_JOURNAL_DIR", dir.path().join("journal"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    if !fifo {
        path_taken(test, "not root: the newer syscalls refused, the run whole");
        return;
    }
    // The scheduling syscall itself refused: refused before the run, the
    // syscall and the likely filter named, no RT-time hint.
    let o = under(SCHED_SETSCHEDULER, "s.json");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("sched_setscheduler syscall is not available here (ENOSYS)")
            && err.contains("seccomp")
            && !err.contains("RT_GROUP_SCHED"),
        "{err}"
    );
    path_taken(
        test,
        "newer syscalls refused: the run whole; sched_setscheduler refused: named before the run",
    );
}

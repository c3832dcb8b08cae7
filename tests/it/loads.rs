//! The built-in loads (`rtlab load KIND`), each checked against what the
//! kernel counted for it: the blocks `io` wrote (its getrusage, printed on
//! its kernel line), the loopback interface's bytes for `net`, the
//! voluntary context switches of `timers`; and each ends on SIGTERM with
//! its total, leaving nothing behind.

use crate::fixtures::{self, text};
use std::process::{Command, Stdio};
use std::time::Duration;

struct Ran {
    stdout: String,
    status: i32,
}

/// Runs `rtlab load ARGS` in `dir` to its end.
fn run_load(args: &[&str], dir: &std::path::Path) -> Ran {
    let child = Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .arg("load")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = fixtures::wait_output_within(child, Duration::from_secs(60));
    Ran {
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        status: o.status.code().unwrap_or(-1),
    }
}

/// A figure of the kernel's line (`12 voluntary switches`: "voluntary").
fn kernel(stdout: &str, name: &str) -> u64 {
    let line = stdout
        .lines()
        .find_map(|l| l.split_once(": kernel: ").map(|p| p.1))
        .unwrap_or_else(|| panic!("no kernel line in\n{stdout}"));
    line.split(", ")
        .find_map(|f| {
            let (n, what) = f.split_once(' ')?;
            what.starts_with(name).then(|| n.parse().ok())?
        })
        .unwrap_or_else(|| panic!("no {name} in {line}"))
}

/// The figures of the total line: (total, mean).
fn total(stdout: &str, unit: &str) -> f64 {
    let line = stdout
        .lines()
        .find(|l| l.contains(": total "))
        .unwrap_or_else(|| panic!("no total line in\n{stdout}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "total").unwrap();
    assert_eq!(words[at + 2], unit, "{line}");
    words[at + 1].parse().unwrap()
}

#[test]
fn io_writes_what_the_kernel_counts_and_removes_its_directory() {
    let _machine = fixtures::machine_shared();
    // On disk (the target directory), not tmpfs: the kernel counts the
    // bytes it writes back.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let r = run_load(&["io", "--size", "8M", "--duration", "2s"], dir.path());
    assert_eq!(r.status, 0, "{}", r.stdout);
    let mb = total(&r.stdout, "MB");
    assert!(mb > 0.0, "{}", r.stdout);
    // Half of the total is written (the rest read back), all of it synced.
    let written_blocks = (mb * 1e6 / 2.0 / 512.0) as u64;
    let out = kernel(&r.stdout, "blocks out");
    if out == 0 {
        fixtures::path_taken(
            "io_writes_what_the_kernel_counts_and_removes_its_directory",
            "the kernel counted no written blocks here (no I/O accounting)",
        );
    } else {
        // Every byte the load counts as written was synced to storage.
        assert!(
            out >= written_blocks,
            "kernel {out} blocks, load {written_blocks}: {}",
            r.stdout
        );
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn net_bytes_are_on_the_loopback_interface() {
    let _machine = fixtures::machine_shared();
    let lo = "/sys/class/net/lo/statistics/rx_bytes";
    let Ok(before) = std::fs::read_to_string(lo) else {
        fixtures::path_taken(
            "net_bytes_are_on_the_loopback_interface",
            "no lo statistics",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let r = run_load(&["net", "--duration", "1s"], dir.path());
    let after: u64 = std::fs::read_to_string(lo).unwrap().trim().parse().unwrap();
    assert_eq!(r.status, 0, "{}", r.stdout);
    let mb = total(&r.stdout, "MB");
    // Every byte the load counts crossed lo (other traffic only adds).
    let seen = (after - before.trim().parse::<u64>().unwrap()) as f64 / 1e6;
    assert!(mb > 0.0 && seen >= mb, "lo {seen} MB, load {mb} MB");
}

#[test]
fn each_timer_wake_up_is_a_voluntary_switch() {
    let _machine = fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let r = run_load(
        &["timers", "--threads", "2", "--duration", "1s"],
        dir.path(),
    );
    assert_eq!(r.status, 0, "{}", r.stdout);
    let n = total(&r.stdout, "wake-ups") as u64;
    assert!(n > 0, "{}", r.stdout);
    // Each sleep that ended gave the CPU up once.
    let switches = kernel(&r.stdout, "voluntary");
    assert!(
        switches >= n,
        "kernel {switches} switches, load {n} wake-ups"
    );
}

#[test]
fn every_load_ends_on_sigterm_with_its_total() {
    let _machine = fixtures::machine_shared();
    for args in [
        &["cpu", "--duty", "30"][..],
        &["memory", "--size", "4M"],
        &["io", "--size", "4M"],
        &["ipc", "--groups", "2"],
        &["ipc", "--pipe"],
        &["net"],
        &["timers"],
    ] {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_rtlab"))
            .arg("load")
            .args(args)
            .args(["--interval", "200ms"])
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait for its first line, then stop it.
        std::thread::sleep(Duration::from_millis(600));
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let o = fixtures::wait_output_within(child, Duration::from_secs(30));
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(stdout.contains(": total "), "{args:?}: {stdout}");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert!(left.is_empty(), "{args:?} left {left:?}");
    }
}

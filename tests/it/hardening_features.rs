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
    path_taken(
        test,
        "root: the directory renamed away and a link planted mid-run; the victim's directory unchanged",
    );
}

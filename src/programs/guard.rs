//! The guard: a small helper process (`rtlab __guard`) that outlives rtlab
//! only to clean up after it. rtlab keeps the write end of the guard's stdin;
//! when rtlab dies, even by SIGKILL, the kernel closes it and the guard reads
//! end-of-file. Unless rtlab said `done` first, the guard then kills every
//! process group and the tracking cgroup rtlab told it about.
//!
//! Protocol, one line each: `pgid N`, `forget N`, `cgroup DIR`, `mark
//! VALUE` (every program carries `RTLAB_RUN=VALUE` in its environment, and
//! so does whatever it starts, even outside its group), `done`.
//! Each program writes its own `pgid N` between fork and exec (a write of a
//! few bytes to a pipe is atomic): the guard knows its group before the
//! program can start anything in it.

use crate::sys::cgroup::TrackingCgroup;
use crate::sys::{SysRoot, os};
use std::io::{BufRead, Write};
use std::process::{Child, ChildStdin, Command, Stdio};

/// rtlab's end of the guard.
pub struct Guard {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Guard {
    /// Starts the guard (a copy of this executable), SCHED_OTHER on
    /// `cpus`: it inherits nothing of the main thread's policy or pinning.
    pub fn start(cpus: &[usize]) -> std::io::Result<Guard> {
        let exe = std::env::current_exe()?;
        let mut cmd = Command::new(exe);
        cmd.arg("__guard")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .process_group(0);
        os::prepare_child(
            &mut cmd,
            os::ChildSetup {
                cpus: (!cpus.is_empty()).then(|| cpus.to_vec()),
                sched: Some(crate::sched::Sched::default()),
                ..os::ChildSetup::default()
            },
        )?;
        use std::os::unix::process::CommandExt;
        let mut child = cmd.spawn()?;
        let stdin = child.stdin.take();
        Ok(Guard { child, stdin })
    }

    /// The guard's process id.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Tells the guard one line.
    pub fn tell(&mut self, line: &str) {
        if let Some(s) = self.stdin.as_mut() {
            let _ = writeln!(s, "{line}");
        }
    }

    /// The descriptor of the guard's stdin, for a child to announce its
    /// process group itself before its program starts
    /// ([`crate::sys::os::ChildSetup::announce_to`]).
    pub fn announce_fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        self.stdin.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// Ends the guard without cleanup (rtlab cleaned up itself).
    pub fn finish(mut self) {
        self.tell("done");
        self.stdin.take();
        let _ = self.child.wait();
    }
}

/// Most process groups the guard follows.
const MAX_GROUPS: usize = 1 << 16;

/// The run's mark in a program's environment (`RTLAB_RUN=VALUE`).
pub const MARK: &str = "RTLAB_RUN";

/// Kills every process that carries the run's mark, round after round
/// (one may start another while the first are killed) until a round
/// finds none, 50 rounds at most.
pub fn kill_marked(mark: &str) {
    let root = SysRoot::real();
    for _ in 0..50 {
        let marked = crate::sys::tasks::with_environ(&root, MARK, mark);
        if marked.is_empty() {
            return;
        }
        for pid in marked {
            let _ = os::kill_pid(pid, crate::sys::consts::SIGKILL);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The guard's own main: returns its exit status.
pub fn guard_main() -> i32 {
    // Ctrl-C or a `kill` meant for rtlab must not stop the cleaner.
    for sig in [
        crate::sys::consts::SIGINT,
        crate::sys::consts::SIGTERM,
        crate::sys::consts::SIGHUP,
        crate::sys::consts::SIGQUIT,
    ] {
        os::ignore_signal(sig);
    }
    os::set_thread_name("rtlab-guard");
    let mut pgids: Vec<i32> = Vec::new();
    let mut cgroup: Option<String> = None;
    let mut mark: Option<String> = None;
    let mut done = false;
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let (verb, arg) = line.split_once(' ').unwrap_or((line.as_str(), ""));
        match verb {
            "pgid" => {
                if let Ok(n) = arg.parse::<i32>()
                    && !pgids.contains(&n)
                    && pgids.len() < MAX_GROUPS
                {
                    pgids.push(n);
                }
            }
            "mark" => mark = Some(arg.to_string()),
            "forget" => {
                if let Ok(n) = arg.parse::<i32>() {
                    pgids.retain(|&p| p != n);
                }
            }
            "cgroup" => cgroup = Some(arg.to_string()),
            "done" => done = true,
            _ => {}
        }
    }
    if done {
        return 0;
    }
    for &pgid in &pgids {
        let _ = os::kill_group(pgid, crate::sys::consts::SIGKILL);
    }
    if let Some(mark) = mark {
        kill_marked(&mark);
    }
    if let Some(dir) = cgroup {
        let cg = TrackingCgroup::existing(&SysRoot::real(), &dir);
        if cg
            .kill_and_remove(std::time::Duration::from_secs(5))
            .is_err()
        {
            return crate::exit::FAILED;
        }
    }
    0
}

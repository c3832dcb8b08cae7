//! Facts about one task (thread) from `/proc/<tid>/stat` and `status`:
//! enough to tell the same task from a later one that reuses its TID, and to
//! put its CPU affinity back.

use super::SysRoot;
use serde::{Deserialize, Serialize};

/// A task as it was when rtlab moved it: identity and affinity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// Thread id.
    pub tid: i32,
    /// Start time in clock ticks since boot (field 22 of `stat`): a TID
    /// reused by a new task has a different one.
    pub start: u64,
    /// `Cpus_allowed_list` (cpulist).
    pub cpus: String,
}

/// The start time (clock ticks since boot) of `tid`, if it exists.
pub fn start_time(root: &SysRoot, tid: i32) -> Option<u64> {
    parse_start_time(&root.read(&format!("proc/{tid}/stat")).ok()?)
}

/// Field 22 of a `stat` line. The command name (field 2) may hold spaces
/// and parentheses, so fields are counted after its last `)`.
pub fn parse_start_time(stat: &str) -> Option<u64> {
    let after = &stat[stat.rfind(')')? + 1..];
    // After ")" come fields 3.. ; field 22 is the 20th of them.
    after.split_whitespace().nth(19)?.parse().ok()
}

/// A field of `/proc/<tid>/status` (`Cpus_allowed_list`, `Name`, ...).
pub fn status_field(root: &SysRoot, tid: i32, field: &str) -> Option<String> {
    let text = root.read(&format!("proc/{tid}/status")).ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k == field).then(|| v.trim().to_string())
    })
}

/// Identity and affinity of `tid` now, if it exists.
pub fn record(root: &SysRoot, tid: i32) -> Option<TaskRecord> {
    Some(TaskRecord {
        tid,
        start: start_time(root, tid)?,
        cpus: status_field(root, tid, "Cpus_allowed_list")?,
    })
}

/// Whether `tid` is a kernel thread (its parent is kthreadd, pid 2, or it is
/// kthreadd itself).
pub fn is_kernel_thread(root: &SysRoot, tid: i32) -> bool {
    if tid == 2 {
        return true;
    }
    status_field(root, tid, "PPid").is_some_and(|p| p == "2")
}

/// A process given by its number (`on_spike signal PID`, `task-latency
/// --pid`), held by identity from the moment it is pinned: a pidfd where
/// the kernel offers one, else its start time, read again before each use.
/// Once it has ended, the number is never taken for another process that
/// reuses it.
#[derive(Debug)]
pub struct Pinned {
    pid: i32,
    start: u64,
    pidfd: Option<std::os::fd::OwnedFd>,
}

/// Why a pinned process could not be signalled.
#[derive(Debug, thiserror::Error)]
pub enum SignalError {
    /// It has ended (its number may be someone else's now).
    #[error("process {0} has ended: nothing was sent (its number may be another process's now)")]
    Ended(i32),
    /// The kernel refused.
    #[error("process {pid}: {source}")]
    Refused {
        /// The process.
        pid: i32,
        /// The kernel's answer.
        source: std::io::Error,
    },
}

impl Pinned {
    /// Pins process `pid` as it is now; None when there is none.
    pub fn pin(root: &SysRoot, pid: i32) -> Option<Pinned> {
        // The descriptor first, then the start time: should the process
        // end in between, the descriptor holds the one that ended.
        let pidfd = crate::os::pidfd_open(pid).ok();
        let start = start_time(root, pid)?;
        Some(Pinned { pid, start, pidfd })
    }

    /// Its number.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Whether it holds a pidfd (else its start time is the check).
    pub fn by_pidfd(&self) -> bool {
        self.pidfd.is_some()
    }

    /// Whether it is still the process pinned, alive.
    pub fn alive(&self, root: &SysRoot) -> bool {
        match &self.pidfd {
            Some(fd) => !crate::os::pidfd_ended(fd),
            None => start_time(root, self.pid) == Some(self.start),
        }
    }

    /// Sends it `signal`, never to another process that took its number.
    pub fn signal(&self, root: &SysRoot, signal: i32) -> Result<(), SignalError> {
        let refused = |source| SignalError::Refused {
            pid: self.pid,
            source,
        };
        match &self.pidfd {
            Some(fd) => crate::os::pidfd_send_signal(fd, signal).map_err(|e| {
                if e.raw_os_error() == Some(libc::ESRCH) {
                    SignalError::Ended(self.pid)
                } else {
                    refused(e)
                }
            }),
            None => {
                // Without a pidfd, the start time just before: a number
                // reused in between would need the process to end, be
                // reaped and the PIDs to wrap round in microseconds.
                if !self.alive(root) {
                    return Err(SignalError::Ended(self.pid));
                }
                crate::os::kill_pid(self.pid, signal).map_err(refused)
            }
        }
    }

    /// The threads of the process while it is the one pinned (read, then
    /// its identity checked again: a list read from a reused number is
    /// never given); None once it has ended.
    pub fn threads(&self, root: &SysRoot) -> Option<Vec<i32>> {
        if !self.alive(root) {
            return None;
        }
        let tids = crate::threads::of_process(root, self.pid);
        self.alive(root).then_some(tids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_survives_odd_command_names() {
        let stat = "1234 (a (weird) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 \
                    1 2 0 0 20 0 1 0 98765 1000 10 18446744073709551615";
        assert_eq!(parse_start_time(stat), Some(98765));
        assert_eq!(parse_start_time("garbage"), None);
        assert_eq!(parse_start_time("1 (x) S 1"), None);
    }
}

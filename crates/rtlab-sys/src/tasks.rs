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
    // Lossy: a task's name (in the line) may hold another encoding's bytes.
    parse_start_time(&root.read_lossy(&format!("proc/{tid}/stat")).ok()?)
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
    let text = root.read_lossy(&format!("proc/{tid}/status")).ok()?;
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

/// The processes whose parent is this process now: its own children, and
/// the orphans it adopted as their subreaper (`/proc/self/task/PID/children`
/// of its first thread, where orphans go; else a scan of `/proc`).
pub fn children_of_self(root: &SysRoot) -> Vec<i32> {
    let me = crate::os::getpid();
    if let Ok(list) = root.read(&format!("proc/self/task/{me}/children")) {
        return list
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
    }
    let mut out = Vec::new();
    for name in root.list("proc").unwrap_or_default() {
        let Ok(pid) = name.parse::<i32>() else {
            continue;
        };
        let stat = root
            .read_lossy(&format!("proc/{pid}/stat"))
            .unwrap_or_default();
        if stat_field(&stat, 4).and_then(|p| p.parse::<i32>().ok()) == Some(me) {
            out.push(pid);
        }
    }
    out
}

/// Field `n` (from 3: the ones after the name) of a `stat` line.
fn stat_field(stat: &str, n: usize) -> Option<&str> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(n.checked_sub(3)?)
}

/// Task `tid`'s kernel priority as the trace shows it (0..99 real-time,
/// 100..139 normal, -1 SCHED_DEADLINE): `/proc/TID/stat`'s `priority`
/// field (nice + 20, or -1 - rtprio, or -101) plus 100. None when there is
/// no such task now.
pub fn kernel_prio(root: &SysRoot, tid: i32) -> Option<i32> {
    let stat = root.read_lossy(&format!("proc/{tid}/stat")).ok()?;
    stat_field(&stat, 18)?.parse::<i32>().ok().map(|p| p + 100)
}

/// Each thread of process `pid`: its `Cpus_allowed_list` (cpulist text).
/// None when the process is gone; a thread that ends meanwhile is left
/// out.
pub fn threads_allowed_cpus(root: &SysRoot, pid: i32) -> Option<Vec<String>> {
    let threads = root.list(&format!("proc/{pid}/task")).ok()?;
    Some(
        threads
            .iter()
            .filter_map(|t| t.parse::<i32>().ok())
            .filter_map(|t| status_field(root, t, "Cpus_allowed_list"))
            .collect(),
    )
}

/// Thread `tid`'s timer slack (`/proc/TID/timerslack_ns`, ns): how far
/// past its asked time the kernel may fire the thread's timers, to batch
/// wake-ups. A real-time or DEADLINE thread's sleeps have none (newer
/// kernels show 0 for it, older ones ignore the value it shows). None
/// when the file cannot be read.
pub fn timer_slack_ns(root: &SysRoot, tid: i32) -> Option<u64> {
    let text = root.read_lossy(&format!("proc/{tid}/timerslack_ns")).ok()?;
    text.trim().parse().ok()
}

/// Every process now: (PID, parent's PID, process group), from each
/// `/proc/PID/stat`.
pub fn process_table(root: &SysRoot) -> Vec<(i32, i32, i32)> {
    let mut out = Vec::new();
    for name in root.list("proc").unwrap_or_default() {
        let Ok(pid) = name.parse::<i32>() else {
            continue;
        };
        let Ok(stat) = root.read_lossy(&format!("proc/{pid}/stat")) else {
            continue;
        };
        let num = |n| stat_field(&stat, n).and_then(|v| v.parse::<i32>().ok());
        if let (Some(ppid), Some(pgid)) = (num(4), num(5)) {
            out.push((pid, ppid, pgid));
        }
    }
    out
}

/// The processes descended from `ancestor` in `table` (see
/// [`process_table`]), with their process groups.
pub fn descendants(table: &[(i32, i32, i32)], ancestor: i32) -> Vec<(i32, i32)> {
    let mut out: Vec<(i32, i32)> = Vec::new();
    let mut frontier = vec![ancestor];
    while let Some(parent) = frontier.pop() {
        for &(pid, ppid, pgid) in table {
            if ppid == parent && pid != ancestor && !out.iter().any(|d| d.0 == pid) {
                out.push((pid, pgid));
                frontier.push(pid);
            }
        }
    }
    out
}

/// The processes whose environment holds `name=value` exactly (the run's
/// mark on everything it started, which a process keeps when it leaves
/// its group and its session).
pub fn with_environ(root: &SysRoot, name: &str, value: &str) -> Vec<i32> {
    let want = format!("{name}={value}");
    let mut out = Vec::new();
    for entry in root.list("proc").unwrap_or_default() {
        let Ok(pid) = entry.parse::<i32>() else {
            continue;
        };
        let Ok(bytes) = std::fs::read(root.path(&format!("proc/{pid}/environ"))) else {
            continue;
        };
        if bytes.split(|&b| b == 0).any(|v| v == want.as_bytes()) {
            out.push(pid);
        }
    }
    out
}

/// Task `tid`'s scheduling policy (the kernel's number: 1 FIFO, 2 RR, 6
/// DEADLINE...): `/proc/TID/stat`'s 41st field. None when there is no
/// such task now.
pub fn policy(root: &SysRoot, tid: i32) -> Option<u32> {
    let stat = root.read_lossy(&format!("proc/{tid}/stat")).ok()?;
    stat_field(&stat, 41)?.parse().ok()
}

/// The process group of `pid`, if it exists.
pub fn process_group(root: &SysRoot, pid: i32) -> Option<i32> {
    let stat = root.read_lossy(&format!("proc/{pid}/stat")).ok()?;
    stat_field(&stat, 5)?.parse().ok()
}

/// Whether the environment `pid` started with holds variable `name`.
pub fn environ_has(root: &SysRoot, pid: i32, name: &str) -> bool {
    let Ok(bytes) = std::fs::read(root.path(&format!("proc/{pid}/environ"))) else {
        return false;
    };
    let want = format!("{name}=");
    bytes
        .split(|&b| b == 0)
        .any(|v| v.starts_with(want.as_bytes()))
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
mod tree_tests {
    use super::*;

    #[test]
    fn descendants_are_found_through_every_generation_and_only_them() {
        // 10 -> 11 -> 12 (a group of its own) -> 13; 20 is someone else's.
        let table = [
            (10, 1, 10),
            (11, 10, 11),
            (12, 11, 12),
            (13, 12, 12),
            (20, 1, 20),
            (21, 20, 21),
        ];
        let mut d = descendants(&table, 10);
        d.sort_unstable();
        assert_eq!(d, vec![(11, 11), (12, 12), (13, 12)]);
        assert!(descendants(&table, 13).is_empty());
        // This machine: this process's own table holds it, with its parent.
        let me = crate::os::getpid();
        let real = process_table(&SysRoot::real());
        assert!(real.iter().any(|p| p.0 == me), "{} processes", real.len());
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

    #[test]
    fn a_tasks_kernel_priority_is_its_stat_priority_plus_100() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::at(dir.path());
        // nice 0, FIFO 90, SCHED_DEADLINE, as /proc writes them (field 18).
        for (pid, prio) in [(70, "20"), (71, "-91"), (72, "-101")] {
            std::fs::create_dir_all(dir.path().join(format!("proc/{pid}"))).unwrap();
            let stat = format!(
                "{pid} (a (b) c) S 1 {pid} {pid} 0 -1 4194560 100 0 0 0 1 2 0 0 {prio} 0 1 0 98765"
            );
            std::fs::write(dir.path().join(format!("proc/{pid}/stat")), stat).unwrap();
        }
        assert_eq!(kernel_prio(&root, 70), Some(120));
        assert_eq!(kernel_prio(&root, 71), Some(9));
        assert_eq!(kernel_prio(&root, 72), Some(-1));
        assert_eq!(kernel_prio(&root, 73), None);
        // This process, as the kernel has it.
        let me = kernel_prio(&SysRoot::real(), crate::os::getpid());
        assert!(me.is_some_and(|p| (-1..140).contains(&p)), "{me:?}");
    }

    /// The policy is the 41st field, whatever the name holds; this
    /// process's, as the kernel has it, is SCHED_OTHER (0) or real-time.
    #[test]
    fn a_tasks_policy_is_its_stats_41st_field() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::at(dir.path());
        std::fs::create_dir_all(dir.path().join("proc/70")).unwrap();
        let mut stat = String::from("70 (a) b (c) S");
        for n in 4..=40 {
            stat.push_str(&format!(" {n}"));
        }
        stat.push_str(" 2 0 0\n");
        std::fs::write(dir.path().join("proc/70/stat"), stat).unwrap();
        assert_eq!(policy(&root, 70), Some(2));
        assert_eq!(policy(&root, 71), None);
        let me = policy(&SysRoot::real(), crate::os::getpid());
        assert!(me.is_some_and(|p| p <= 6), "{me:?}");
    }
}

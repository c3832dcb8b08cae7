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

//! Every thread of the machine, as `ps -eLo tid,cls,rtprio,ni,psr` sees it:
//! read from `/proc/<pid>/task/<tid>/stat` and `status`.

use super::SysRoot;
use rtlab_core::sched::{KernelPolicy, Policy, Sched};
use serde::Serialize;

/// `PF_KTHREAD` in the `flags` field of `stat`: a kernel thread.
const PF_KTHREAD: u64 = 0x0020_0000;
/// `PF_NO_SETAFFINITY`: the kernel forbids changing its CPUs (per-CPU
/// kernel threads: migration, ksoftirqd, bound kworkers, cpuhp...).
const PF_NO_SETAFFINITY: u64 = 0x0400_0000;

/// One thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadInfo {
    /// Thread id.
    pub tid: i32,
    /// Process id (thread group).
    pub pid: i32,
    /// Command name (`comm`).
    pub name: String,
    /// A kernel thread.
    pub kernel: bool,
    /// Its policy (shown `OTHER`, `FIFO`, ..., `DEADLINE`, or `?N`).
    pub policy: KernelPolicy,
    /// Real-time priority (0 for non-RT policies).
    pub rt_priority: u32,
    /// Nice value.
    pub nice: i32,
    /// Allowed CPUs (`Cpus_allowed_list`).
    pub cpus_allowed: String,
    /// The CPU it last ran on.
    pub last_cpu: usize,
    /// Start time in clock ticks since boot (tells a reused TID apart).
    pub start: u64,
    /// The kernel forbids changing its CPUs (`PF_NO_SETAFFINITY`).
    #[serde(skip)]
    pub affinity_fixed: bool,
}

impl ThreadInfo {
    /// Whether it has a real-time class (FIFO, RR or DEADLINE), as `ps`
    /// shows with `cls` FF, RR or DLN.
    pub fn is_realtime(&self) -> bool {
        self.policy.is_realtime()
    }

    /// Its scheduling as rtlab sets it (None for DEADLINE and unknown
    /// policies, which rtlab does not change).
    pub fn sched(&self) -> Option<Sched> {
        let KernelPolicy::Settable(policy) = self.policy else {
            return None;
        };
        let priority = match policy {
            Policy::Fifo | Policy::Rr => self.rt_priority as i32,
            Policy::Idle => 0,
            Policy::Other | Policy::Batch => self.nice,
        };
        Some(Sched { policy, priority })
    }

    /// `FIFO 50`, `OTHER 0` (nice for non-RT policies).
    pub fn sched_text(&self) -> String {
        if self.is_realtime() {
            format!("{} {}", self.policy, self.rt_priority)
        } else {
            format!("{} {}", self.policy, self.nice)
        }
    }

    /// The `ps` class abbreviation (`TS`, `FF`, `RR`, `B`, `IDL`, `DLN`).
    pub fn ps_class(&self) -> String {
        self.policy.ps_class()
    }
}

/// Parses one `stat` line (and the allowed CPUs from `status`) into a thread.
/// The command name may hold spaces and parentheses: fields are counted after
/// its last `)`.
pub fn parse_stat(stat: &str, cpus_allowed: String) -> Option<ThreadInfo> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let tid = stat.get(..open)?.trim().parse().ok()?;
    // As the trace shows names: another encoding's bytes and control
    // characters as `?` (a name is the task's own choice).
    let name = rtlab_core::text::task_name(stat.get(open + 1..close)?.as_bytes());
    let f: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    // Field N of stat(5) is f[N - 3].
    let field = |n: usize| f.get(n - 3).copied();
    let flags: u64 = field(9)?.parse().ok()?;
    Some(ThreadInfo {
        tid,
        // Set by the caller, who knows the thread group.
        pid: tid,
        name,
        kernel: flags & PF_KTHREAD != 0,
        affinity_fixed: flags & PF_NO_SETAFFINITY != 0,
        nice: field(19)?.parse().ok()?,
        start: field(22)?.parse().ok()?,
        last_cpu: field(39)?.parse().ok()?,
        rt_priority: field(40)?.parse().ok()?,
        policy: KernelPolicy::from_number(field(41)?.parse().ok()?),
        cpus_allowed,
    })
}

fn ids(root: &SysRoot, rel: &str) -> Vec<i32> {
    let mut ids: Vec<i32> = root
        .list(rel)
        .unwrap_or_default()
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    ids.sort_unstable();
    ids
}

/// One thread of process `pid`, if it still exists.
pub fn read(root: &SysRoot, pid: i32, tid: i32) -> Option<ThreadInfo> {
    let dir = format!("proc/{pid}/task/{tid}");
    // Lossy: a task's name may hold bytes of another encoding.
    let stat = root.read_lossy(&format!("{dir}/stat")).ok()?;
    let status = root
        .read_lossy(&format!("{dir}/status"))
        .unwrap_or_default();
    let cpus = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
        .unwrap_or_default();
    let mut t = parse_stat(&stat, cpus)?;
    t.pid = pid;
    Some(t)
}

/// Every thread now, by PID then TID. Threads that end while being read
/// are left out.
pub fn list(root: &SysRoot) -> Vec<ThreadInfo> {
    ids(root, "proc")
        .into_iter()
        .flat_map(|pid| {
            ids(root, &format!("proc/{pid}/task"))
                .into_iter()
                .filter_map(move |tid| read(root, pid, tid))
        })
        .collect()
}

/// The threads of process `pid` now (empty when it is gone).
pub fn of_process(root: &SysRoot, pid: i32) -> Vec<i32> {
    ids(root, &format!("proc/{pid}/task"))
}

/// A thread by TID alone (its process found through `/proc/<tid>/status`).
pub fn by_tid(root: &SysRoot, tid: i32) -> Option<ThreadInfo> {
    let pid = super::tasks::status_field(root, tid, "Tgid")
        .and_then(|p| p.parse().ok())
        .unwrap_or(tid);
    read(root, pid, tid)
}

/// Whether `name` matches `pattern`: a glob with `*` and `?` (as tuna's
/// thread lists), matched against the whole name.
///
/// Iterative, with one backtrack point (the last `*`): at most
/// `len(pattern) × len(name)` steps and no recursion, whatever the pattern
/// (`*a*a*a*…b` against `aaaa…` included).
pub fn name_matches(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0, 0);
    // Where the last `*` was, and the name position it currently covers to.
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(&c) if c == '?' || c == n[ni] => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                // Let the last `*` take one more character and retry.
                Some((sp, sn)) => {
                    star = Some((sp, sn + 1));
                    pi = sp + 1;
                    ni = sn + 1;
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_real_stat_line_with_an_odd_name() {
        let line = "20498 (a) b (c)) R 20495 20495 19786 0 -1 2097216 99 0 0 0 0 0 0 0 -2 5 \
                    1 0 319399 3133440 380 18446744073709551615 1 2 3 0 0 0 0 0 0 0 0 0 17 1 \
                    42 2 0 0 0";
        let t = parse_stat(line, "0-1".into()).unwrap();
        assert_eq!(t.tid, 20498);
        assert_eq!(t.name, "a) b (c)");
        assert!(t.kernel);
        assert_eq!(t.nice, 5);
        assert_eq!(t.start, 319399);
        assert_eq!(t.last_cpu, 1);
        assert_eq!(t.rt_priority, 42);
        assert_eq!(t.policy.name(), "RR");
        assert_eq!(t.ps_class(), "RR");
        assert!(t.is_realtime());
        assert!(parse_stat("garbage", String::new()).is_none());
        assert!(parse_stat("1 (x) R 0", String::new()).is_none());
    }

    #[test]
    fn globs_match_whole_names() {
        assert!(name_matches("ksoftirqd/*", "ksoftirqd/1"));
        assert!(name_matches("irq/*-virtio?-*", "irq/36-virtio1-req.0"));
        assert!(!name_matches("ksoftirqd", "ksoftirqd/1"));
        assert!(name_matches("*", ""));
        assert!(!name_matches("a?", "a"));
        assert!(name_matches("*a*b", "xxaxxb"));
        assert!(!name_matches("*a*b", "xxaxxbx"));
        assert!(name_matches("a*", "a"));
        assert!(name_matches("**?", "x"));
        assert!(!name_matches("", "x"));
    }

    #[test]
    fn lists_the_threads_of_a_fake_tree() {
        let dir = tempfile::tempdir().unwrap();
        super::super::fake::base_machine(dir.path());
        let root = SysRoot::at(dir.path());
        let all = list(&root);
        assert_eq!(
            all.iter().map(|t| t.tid).collect::<Vec<_>>(),
            vec![1, 2, 3, 100, 101]
        );
        let m = all.iter().find(|t| t.tid == 3).unwrap();
        assert_eq!((m.policy.name().as_str(), m.rt_priority), ("FIFO", 99));
        assert!(m.kernel);
        assert!(!all.iter().find(|t| t.tid == 100).unwrap().kernel);
        assert_eq!(by_tid(&root, 101).unwrap().name, "pinned app");
    }
}

//! The isolation state of the machine, both methods side by side: the
//! kernel's own (`isolcpus=`, `nohz_full=` on the command line, and what the
//! kernel made of them in sysfs) and the cpuset partitions. `partition show`
//! prints it and every run result embeds it, so that an isolcpus run and a
//! cpuset run can be compared later.

use super::cpuset::{Hierarchy, Knob};
use super::{NRT, RT};
use crate::cpulist;
use crate::sys::SysRoot;
use crate::sys::journal::{self, Change};
use serde::Serialize;
use std::path::Path;

/// One partition (cpuset).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Partition {
    /// `rt` or `nrt`.
    pub name: String,
    /// Its directory, absolute.
    pub path: String,
    /// CPUs in effect.
    pub cpus: Vec<usize>,
    /// v1: `cpu_exclusive`.
    pub exclusive: Option<bool>,
    /// v1: `sched_load_balance`.
    pub load_balance: Option<bool>,
    /// v2: `cpuset.cpus.partition` as the kernel reports it.
    pub partition: Option<String>,
    /// Number of tasks (v1: threads; v2: processes) in it.
    pub tasks: usize,
}

/// How one CPU is isolated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CpuIsolation {
    /// CPU number.
    pub cpu: usize,
    /// The partition it belongs to, if any.
    pub partition: Option<String>,
    /// In `/sys/devices/system/cpu/isolated` (isolcpus=).
    pub isolcpus: bool,
    /// In `/sys/devices/system/cpu/nohz_full`.
    pub nohz_full: bool,
}

/// A knob changed by the partition: its value before and now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ChangedKnob {
    /// The file.
    pub path: String,
    /// Value before the partition.
    pub before: String,
    /// Value now.
    pub now: Option<String>,
}

/// The isolation state of the machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct IsolationState {
    /// The cpuset hierarchy, if any.
    pub cpuset: Option<Hierarchy>,
    /// `isolcpus=` from the kernel command line, verbatim.
    pub cmdline_isolcpus: Option<String>,
    /// `nohz_full=` from the kernel command line, verbatim.
    pub cmdline_nohz_full: Option<String>,
    /// `/sys/devices/system/cpu/isolated`.
    pub isolated: Vec<usize>,
    /// `/sys/devices/system/cpu/nohz_full` (empty when absent).
    pub nohz_full: Vec<usize>,
    /// cgroup v2: the root's `cpuset.cpus.isolated` (CPUs of isolated
    /// partitions, whoever made them).
    pub cgroup_isolated: Option<Vec<usize>>,
    /// The `rt` and `nrt` partitions that exist.
    pub partitions: Vec<Partition>,
    /// Per online CPU.
    pub cpus: Vec<CpuIsolation>,
    /// Knobs the partition changed, from its journal.
    pub changed_knobs: Vec<ChangedKnob>,
}

/// The value of `key=` on a kernel command line.
pub fn cmdline_value(cmdline: &str, key: &str) -> Option<String> {
    cmdline
        .split_whitespace()
        .take_while(|w| *w != "--")
        .filter_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .last()
        .map(str::to_string)
}

fn cpus_file(root: &SysRoot, rel: &str) -> Vec<usize> {
    root.read_opt(rel)
        .filter(|t| !t.is_empty() && t != "(null)")
        .and_then(|t| cpulist::parse(&t).ok())
        .unwrap_or_default()
}

fn partition(root: &SysRoot, h: &Hierarchy, name: &str) -> Option<Partition> {
    let dir = h.dir(name);
    if !root.exists(&dir) {
        return None;
    }
    let flag = |k: Knob| h.read(root, &dir, k).map(|v| v == "1");
    Some(Partition {
        name: name.to_string(),
        path: format!("/{dir}"),
        cpus: h.cpus(root, name).unwrap_or_default(),
        exclusive: flag(Knob::CpuExclusive),
        load_balance: flag(Knob::LoadBalance),
        partition: h.read(root, &dir, Knob::Partition),
        tasks: h.tasks(root, &dir).len(),
    })
}

/// How the partitions of `before` (read when a run started) differ now:
/// one line per partition removed or given other CPUs. Reads only each
/// partition's directory and effective CPUs (not its tasks): cheap enough
/// for every refresh of a run.
pub fn partition_changes(root: &SysRoot, before: &[Partition]) -> Vec<String> {
    let h = Hierarchy::find(root);
    before
        .iter()
        .filter_map(|p| {
            let now = h
                .as_ref()
                .filter(|h| root.exists(&h.dir(&p.name)))
                .map(|h| h.cpus(root, &p.name).unwrap_or_default());
            match now {
                None => Some(format!(
                    "partition `{}` (CPUs {}) was removed during the run: what was placed in it ran where the kernel moved it",
                    p.name,
                    cpulist::format(&p.cpus)
                )),
                Some(cpus) if cpus != p.cpus => Some(format!(
                    "partition `{}` changed from CPUs {} to CPUs {} during the run",
                    p.name,
                    cpulist::format(&p.cpus),
                    cpulist::format(&cpus)
                )),
                Some(_) => None,
            }
        })
        .collect()
}

impl IsolationState {
    /// Reads the state; `journal_dir` gives the knobs the partition changed.
    pub fn read(root: &SysRoot, journal_dir: &Path) -> Self {
        let cmdline = root
            .read_opt(crate::sys::paths::CMDLINE)
            .unwrap_or_default();
        let cpu = crate::sys::paths::CPU_DIR;
        let isolated = cpus_file(root, &format!("{cpu}/isolated"));
        let nohz_full = cpus_file(root, &format!("{cpu}/nohz_full"));
        let h = Hierarchy::find(root);
        let partitions: Vec<Partition> = h
            .as_ref()
            .map(|h| {
                [RT, NRT]
                    .iter()
                    .filter_map(|n| partition(root, h, n))
                    .collect()
            })
            .unwrap_or_default();
        let cgroup_isolated = h
            .as_ref()
            .filter(|h| h.is_v2())
            .and_then(|h| root.read_opt(&format!("{}/cpuset.cpus.isolated", h.mount())))
            .map(|t| cpulist::parse(&t).unwrap_or_default());
        let online = crate::sys::online_cpus(root).unwrap_or_default();
        let cpus = online
            .iter()
            .map(|&c| CpuIsolation {
                cpu: c,
                partition: partitions
                    .iter()
                    .find(|p| p.cpus.contains(&c))
                    .map(|p| p.name.clone()),
                isolcpus: isolated.contains(&c),
                nohz_full: nohz_full.contains(&c),
            })
            .collect();
        IsolationState {
            cpuset: h,
            cmdline_isolcpus: cmdline_value(&cmdline, "isolcpus"),
            cmdline_nohz_full: cmdline_value(&cmdline, "nohz_full"),
            isolated,
            nohz_full,
            cgroup_isolated,
            partitions,
            cpus,
            changed_knobs: changed_knobs(root, journal_dir),
        }
    }

    /// The text of `partition show`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let dash = |v: &[usize]| {
            if v.is_empty() {
                "-".to_string()
            } else {
                cpulist::format(v)
            }
        };
        out.push_str(&format!(
            "cpusets: {}\n",
            self.cpuset
                .as_ref()
                .map_or("no cpuset controller".into(), Hierarchy::describe)
        ));
        if self.partitions.is_empty() {
            out.push_str("partitions: none (make them with `rtlab partition create CPUS`)\n");
        } else {
            out.push_str("partition  cpus      tasks  mode\n");
            for p in &self.partitions {
                let mode = match (&p.partition, p.exclusive, p.load_balance) {
                    (Some(kind), _, _) => kind.clone(),
                    (None, ex, lb) => format!(
                        "{}{}",
                        if ex == Some(true) { "exclusive, " } else { "" },
                        if lb == Some(false) {
                            "no load balancing"
                        } else {
                            "load balancing"
                        }
                    ),
                };
                out.push_str(&format!(
                    "{:<10} {:<9} {:>5}  {mode}\n",
                    p.name,
                    dash(&p.cpus),
                    p.tasks
                ));
            }
        }
        out.push_str(&format!(
            "kernel command line: isolcpus={} nohz_full={}\n",
            self.cmdline_isolcpus.as_deref().unwrap_or("(none)"),
            self.cmdline_nohz_full.as_deref().unwrap_or("(none)")
        ));
        out.push_str(&format!(
            "kernel state: isolated={} nohz_full={}{}\n",
            dash(&self.isolated),
            dash(&self.nohz_full),
            self.cgroup_isolated
                .as_ref()
                .map_or(String::new(), |c| format!(
                    " cpuset.cpus.isolated={}",
                    dash(c)
                ))
        ));
        out.push_str("cpu  partition  isolcpus  nohz_full\n");
        for c in &self.cpus {
            out.push_str(&format!(
                "{:<4} {:<10} {:<9} {}\n",
                c.cpu,
                c.partition.as_deref().unwrap_or("-"),
                if c.isolcpus { "yes" } else { "no" },
                if c.nohz_full { "yes" } else { "no" }
            ));
        }
        if !self.changed_knobs.is_empty() {
            out.push_str("knobs changed by the partition (before -> now):\n");
            for k in &self.changed_knobs {
                out.push_str(&format!(
                    "  /{}: {} -> {}\n",
                    k.path,
                    k.before,
                    k.now.as_deref().unwrap_or("(gone)")
                ));
            }
        }
        out
    }
}

/// The knobs the partition changed and that still differ, from its journal
/// (a write the kernel refused changed nothing).
fn changed_knobs(root: &SysRoot, journal_dir: &Path) -> Vec<ChangedKnob> {
    let changes = journal::read(root, &journal_dir.join(journal::PARTITION_FILE))
        .map(|j| j.1)
        .unwrap_or_default();
    changes
        .into_iter()
        .filter_map(|c| match c {
            Change::Write { path, old, .. } => Some(ChangedKnob {
                now: root.read_opt(&path),
                path,
                before: old,
            }),
            _ => None,
        })
        .filter(|k| k.now.as_deref() != Some(k.before.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_values() {
        let c = "root=/dev/sda isolcpus=domain,2-3 nohz_full=2-3 quiet -- isolcpus=9";
        assert_eq!(cmdline_value(c, "isolcpus").as_deref(), Some("domain,2-3"));
        assert_eq!(cmdline_value(c, "nohz_full").as_deref(), Some("2-3"));
        assert_eq!(cmdline_value(c, "rcu_nocbs"), None);
        assert_eq!(cmdline_value("isolcpusx=1", "isolcpus"), None);
    }
}

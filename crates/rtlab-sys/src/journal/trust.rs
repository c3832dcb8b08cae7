//! What a journal may name: the kernel files, cgroups, trace instances and
//! mounts rtlab itself changes, by name. A journal is input like any other
//! (anyone with root, or a bug, may have written it), and replaying it
//! writes as root: every change is checked against these rules first, and
//! one that fails refuses the whole journal.

use super::Change;
use crate::{SysRoot, paths};

/// Cgroups rtlab makes, by their first component below a mount point:
/// the partition's `rt` and `nrt`, and a run's `rtlab-PID` (with its CPU
/// bandwidth groups inside).
fn is_rtlab_cgroup_name(name: &str) -> bool {
    name == "rt"
        || name == "nrt"
        || name.strip_prefix("rtlab-").is_some_and(|pid| {
            !pid.is_empty() && pid.len() <= 10 && pid.bytes().all(|b| b.is_ascii_digit())
        })
}

/// A path of a journal, relative to the system root (rtlab's system layer
/// reads `/x` and `x` alike, and some changes are journalled with the `/`).
pub(super) fn rel(p: &str) -> &str {
    p.strip_prefix('/').unwrap_or(p)
}

/// A clean relative path: no `/` at either end, no empty, `.` or `..`
/// component, no NUL, of a sane length.
fn clean_path(p: &str) -> Result<(), String> {
    if p.is_empty() || p.len() > 4096 || p.contains('\0') || p.starts_with('/') {
        return Err(format!(
            "path `{}` is not a relative kernel path",
            p.escape_debug()
        ));
    }
    if p.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return Err(format!(
            "path `{}` has an empty, `.` or `..` component",
            p.escape_debug()
        ));
    }
    Ok(())
}

/// The components of cgroup path `p` below the cgroup mount point it lies
/// in (empty for the mount point itself), or None outside every mount.
fn cgroup_parts<'a>(p: &'a str, mounts: &[String]) -> Option<Vec<&'a str>> {
    mounts.iter().find_map(|m| {
        let rest = p.strip_prefix(m.as_str())?;
        if rest.is_empty() {
            Some(Vec::new())
        } else {
            Some(rest.strip_prefix('/')?.split('/').collect())
        }
    })
}

/// A cgroup rtlab made: its first component below a mount point is one of
/// rtlab's names.
fn is_rtlab_cgroup(p: &str, mounts: &[String]) -> bool {
    cgroup_parts(p, mounts)
        .is_some_and(|parts| parts.first().is_some_and(|c| is_rtlab_cgroup_name(c)))
}

/// The cgroup mount points of this machine, relative to the system root:
/// what a journal's cgroup paths are checked against.
pub fn cgroup_mounts(root: &SysRoot) -> Vec<String> {
    crate::cgroup::mounts(root)
        .into_iter()
        .map(|m| m.path.trim_matches('/').to_string())
        .filter(|m| !m.is_empty())
        .collect()
}

/// Whether `path` is one of the kernel files rtlab writes and journals,
/// named exactly: the three sysctls, IRQ affinities, the workqueue and
/// writeback masks, machine-check polling intervals, cpufreq governors and
/// cpuidle state switches. An allowlist of file names, never a directory
/// prefix: a file such as machinecheckN/`trigger` or a cgroup's
/// `release_agent` lies beside the knobs and makes root run a program.
fn is_rtlab_knob(path: &str) -> bool {
    if paths::SYSCTLS.contains(&path)
        || path == paths::DEFAULT_SMP_AFFINITY
        || path == paths::WORKQUEUE_CPUMASK
        || path == paths::WRITEBACK_NUMA
    {
        return true;
    }
    let under = |dir: &str| {
        path.strip_prefix(dir)
            .and_then(|p| p.strip_prefix('/'))
            .map(|p| p.split('/').collect::<Vec<_>>())
            .unwrap_or_default()
    };
    let numbered = |s: &str, prefix: &str| {
        s.strip_prefix(prefix).is_some_and(|n| {
            !n.is_empty() && n.len() <= 10 && n.bytes().all(|b| b.is_ascii_digit())
        })
    };
    let name = |s: &str| !s.is_empty() && s.len() <= 64 && !s.starts_with('.');
    match under(paths::IRQ_DIR).as_slice() {
        [n, "smp_affinity_list" | "smp_affinity"] if numbered(n, "") => return true,
        _ => {}
    }
    match under(paths::WORKQUEUE_DIR).as_slice() {
        [wq, "cpumask"] if name(wq) => return true,
        _ => {}
    }
    match under(paths::NET_CLASS_DIR).as_slice() {
        [dev, "queues", q, "rps_cpus"] if name(dev) && numbered(q, "rx-") => return true,
        [dev, "queues", q, "xps_cpus"] if name(dev) && numbered(q, "tx-") => return true,
        _ => {}
    }
    match under(paths::MACHINECHECK_DIR).as_slice() {
        [mc, "check_interval"] if numbered(mc, "machinecheck") => return true,
        _ => {}
    }
    match under(paths::CPUFREQ_DIR).as_slice() {
        [policy, "scaling_governor"] if numbered(policy, "policy") => return true,
        _ => {}
    }
    matches!(under(paths::CPU_DIR).as_slice(),
        [cpu, "cpuidle", state, "disable"] if numbered(cpu, "cpu") && numbered(state, "state"))
}

/// The cgroup files rtlab writes through the journal: the root cpuset's
/// load balancing (cgroup v1, with or without the `cpuset.` prefix), at the
/// top of a hierarchy; nothing else there (`release_agent`,
/// `notify_on_release`, `cgroup.procs` are never rtlab's to write back).
fn is_rtlab_cgroup_knob(path: &str, mounts: &[String]) -> bool {
    cgroup_parts(path, mounts).is_some_and(|parts| {
        matches!(
            parts.as_slice(),
            ["cpuset.sched_load_balance" | "sched_load_balance"]
        )
    })
}

/// `.rtlab-PID-N-R.tmp` (R: 16 hex digits, random), or `.rtlab-PID-N.tmp`
/// as journals before it wrote them: the name of a file rtlab is writing
/// (see `outfile::Staged`).
fn is_staged_name(name: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.len() <= 10 && s.bytes().all(|b| b.is_ascii_digit());
    let random = |s: &str| s.len() == 16 && s.bytes().all(|b| b.is_ascii_hexdigit());
    name.strip_prefix(".rtlab-")
        .and_then(|n| n.strip_suffix(".tmp"))
        .and_then(|n| n.split_once('-'))
        .is_some_and(|(pid, rest)| {
            digits(pid)
                && match rest.split_once('-') {
                    Some((n, r)) => digits(n) && random(r),
                    None => digits(rest),
                }
        })
}

/// Whether `change` stays within the kernel interfaces rtlab changes:
/// sysctl (`proc/sys`), IRQ (`proc/irq`) and `sys` knobs, rtlab's own
/// cgroups, trace instances and staged files; tasks and processes only
/// within cgroups rtlab made.
pub fn check_change(change: &Change, mounts: &[String]) -> Result<(), String> {
    match change {
        Change::Write { path, .. } => {
            let path = rel(path);
            clean_path(path)?;
            if is_rtlab_knob(path) || is_rtlab_cgroup_knob(path, mounts) {
                Ok(())
            } else {
                Err(format!("`{path}` is not a kernel knob rtlab changes"))
            }
        }
        Change::Sched { tid, .. } | Change::Affinity { tid, .. } => {
            if *tid > 0 {
                Ok(())
            } else {
                Err(format!("thread {tid} is not a thread"))
            }
        }
        Change::StagedFile { path } => check_staged(path),
        Change::TraceInstance { path } => check_trace_instance(path),
        Change::MountTracefs { path } => {
            if rel(path) == crate::paths::TRACEFS {
                Ok(())
            } else {
                Err(format!(
                    "`{}` is not where rtlab mounts tracefs",
                    path.escape_debug()
                ))
            }
        }
        cgroup => check_cgroup_change(cgroup, mounts),
    }
}

/// `tasks` or `cgroup.procs`.
fn tasks_file(f: &str) -> Result<(), String> {
    if f == "tasks" || f == "cgroup.procs" {
        Ok(())
    } else {
        Err(format!("`{}` is not a cgroup tasks file", f.escape_debug()))
    }
}

/// A clean path of a cgroup rtlab makes.
fn rtlab_cgroup(p: &str, mounts: &[String]) -> Result<(), String> {
    let p = rel(p);
    clean_path(p)?;
    if is_rtlab_cgroup(p, mounts) {
        Ok(())
    } else {
        Err(format!("`{p}` is not a cgroup rtlab makes"))
    }
}

/// The cgroup changes: directories, task moves, controllers, the tracking
/// cgroup.
fn check_cgroup_change(change: &Change, mounts: &[String]) -> Result<(), String> {
    match change {
        Change::Mkdir {
            path,
            tasks_file: f,
        } => {
            rtlab_cgroup(path, mounts)?;
            tasks_file(f)
        }
        Change::MoveTasks {
            from,
            to,
            tasks_file: f,
            tasks,
        } => {
            let from = rel(from);
            clean_path(from)?;
            if cgroup_parts(from, mounts).is_none() {
                return Err(format!("`{from}` is not a cgroup"));
            }
            rtlab_cgroup(to, mounts)?;
            tasks_file(f)?;
            match tasks
                .iter()
                .find(|t| t.tid <= 0 || rtlab_core::cpulist::parse(&t.cpus).is_err())
            {
                Some(t) => Err(format!(
                    "task {} with CPUs `{}` is not a task",
                    t.tid,
                    t.cpus.escape_debug()
                )),
                None => Ok(()),
            }
        }
        Change::EnableController { path, controller } => {
            let path = rel(path);
            clean_path(path)?;
            let dir = path
                .strip_suffix("/cgroup.subtree_control")
                .ok_or_else(|| format!("`{path}` is not a cgroup.subtree_control"))?;
            if cgroup_parts(dir, mounts).is_none() {
                return Err(format!("`{path}` is not in the cgroup tree"));
            }
            if controller == "cpuset" || controller == "cpu" {
                Ok(())
            } else {
                Err(format!(
                    "controller `{}` is not one rtlab enables",
                    controller.escape_debug()
                ))
            }
        }
        Change::TrackingCgroup { path } => {
            let path = rel(path);
            clean_path(path)?;
            let last = path.rsplit('/').next().unwrap_or_default();
            if cgroup_parts(path, mounts).is_some_and(|p| p.len() == 1)
                && last.starts_with("rtlab-")
                && is_rtlab_cgroup_name(last)
            {
                Ok(())
            } else {
                Err(format!("`{path}` is not a run's tracking cgroup"))
            }
        }
        other => Err(format!("{other:?} is not a cgroup change")),
    }
}

/// An absolute, clean path whose name is one rtlab stages.
fn check_staged(path: &str) -> Result<(), String> {
    let rest = path
        .strip_prefix('/')
        .ok_or_else(|| format!("`{}` is not an absolute path", path.escape_debug()))?;
    clean_path(rest)?;
    let name = rest.rsplit('/').next().unwrap_or_default();
    if is_staged_name(name) {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not a file rtlab stages",
            path.escape_debug()
        ))
    }
}

/// `instances/rtlab-PID[suffix]` under one of tracefs's usual places.
fn check_trace_instance(path: &str) -> Result<(), String> {
    let path = rel(path);
    clean_path(path)?;
    let name = crate::paths::TRACEFS_MOUNTS
        .iter()
        .find_map(|m| path.strip_prefix(&format!("{m}/instances/")));
    let pid = name.and_then(|n| n.strip_prefix("rtlab-")).map(|n| {
        crate::trace::INSTANCE_SUFFIXES
            .iter()
            .filter(|s| !s.is_empty())
            .find_map(|s| n.strip_suffix(s))
            .unwrap_or(n)
    });
    match pid {
        Some(pid) if !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) => Ok(()),
        _ => Err(format!("`{path}` is not a trace instance rtlab makes")),
    }
}

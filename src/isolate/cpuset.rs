//! Where the cpuset controller lives on this machine, and the names of its
//! files: cgroup v1 (the `cpuset` hierarchy, files with or without the
//! `cpuset.` prefix) or cgroup v2 (the unified hierarchy with `cpuset` in
//! `cgroup.controllers`). v1 is preferred when both exist, because a
//! controller bound to v1 cannot be enabled in v2.

use crate::sys::cgroup;
use crate::sys::{SysError, SysRoot};
use serde::Serialize;

/// Writes a root-relative path as the absolute path a user sees.
fn absolute<S: serde::Serializer>(relative: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("/{}", relative.trim_start_matches('/')))
}

/// A cpuset hierarchy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(tag = "version")]
pub enum Hierarchy {
    /// cgroup v1.
    #[serde(rename = "v1")]
    V1 {
        /// Mount point, relative to the system root (absolute in JSON).
        #[serde(serialize_with = "absolute")]
        mount: String,
        /// `cpuset.` or empty (mounted with `noprefix`).
        prefix: String,
    },
    /// cgroup v2.
    #[serde(rename = "v2")]
    V2 {
        /// Mount point, relative to the system root (absolute in JSON).
        #[serde(serialize_with = "absolute")]
        mount: String,
    },
}

/// A file of a cpuset, named independently of the version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Knob {
    /// CPUs asked for.
    Cpus,
    /// CPUs in effect.
    EffectiveCpus,
    /// Memory nodes asked for.
    Mems,
    /// Memory nodes in effect.
    EffectiveMems,
    /// v1: exclusive CPUs.
    CpuExclusive,
    /// v1: load balancing inside the cpuset.
    LoadBalance,
    /// v2: `member`, `root` or `isolated`.
    Partition,
}

impl Hierarchy {
    /// Finds the cpuset controller: a v1 hierarchy mounted with `cpuset`,
    /// else a v2 hierarchy that offers it.
    pub fn find(root: &SysRoot) -> Option<Hierarchy> {
        let mounts = cgroup::mounts(root);
        if let Some(m) = mounts
            .iter()
            .find(|m| !m.v2 && m.options.iter().any(|o| o == "cpuset"))
        {
            let mount = m
                .path
                .trim_start_matches('/')
                .trim_end_matches('/')
                .to_string();
            let prefix = if root.exists(&format!("{mount}/cpuset.cpus")) {
                "cpuset."
            } else {
                ""
            };
            return Some(Hierarchy::V1 {
                mount,
                prefix: prefix.into(),
            });
        }
        mounts.iter().filter(|m| m.v2).find_map(|m| {
            let mount = m
                .path
                .trim_start_matches('/')
                .trim_end_matches('/')
                .to_string();
            let controllers = root.read_opt(&format!("{mount}/cgroup.controllers"))?;
            controllers
                .split_whitespace()
                .any(|c| c == "cpuset")
                .then_some(Hierarchy::V2 { mount })
        })
    }

    /// The mount point (the root cpuset), relative to the system root.
    pub fn mount(&self) -> &str {
        match self {
            Hierarchy::V1 { mount, .. } | Hierarchy::V2 { mount } => mount,
        }
    }

    /// Whether this is cgroup v2.
    pub fn is_v2(&self) -> bool {
        matches!(self, Hierarchy::V2 { .. })
    }

    /// `cgroup v1` or `cgroup v2`, with the mount point.
    pub fn describe(&self) -> String {
        format!(
            "cgroup {} at /{}",
            if self.is_v2() { "v2" } else { "v1" },
            self.mount()
        )
    }

    /// The directory of cpuset `name` (a path below the root cpuset).
    pub fn dir(&self, name: &str) -> String {
        let name = name.trim_matches('/');
        if name.is_empty() {
            self.mount().to_string()
        } else {
            format!("{}/{name}", self.mount())
        }
    }

    /// The file that takes one task at a time: `tasks` (v1, per thread) or
    /// `cgroup.procs` (v2, whole processes).
    pub fn tasks_file(&self) -> &'static str {
        if self.is_v2() {
            "cgroup.procs"
        } else {
            "tasks"
        }
    }

    /// The path of `knob` in cpuset directory `dir`, or None where this
    /// version has no such file.
    pub fn file(&self, dir: &str, knob: Knob) -> Option<String> {
        let name = match (self, knob) {
            (Hierarchy::V1 { prefix, .. }, _) => {
                let base = match knob {
                    Knob::Cpus => "cpus",
                    Knob::EffectiveCpus => "effective_cpus",
                    Knob::Mems => "mems",
                    Knob::EffectiveMems => "effective_mems",
                    Knob::CpuExclusive => "cpu_exclusive",
                    Knob::LoadBalance => "sched_load_balance",
                    Knob::Partition => return None,
                };
                format!("{prefix}{base}")
            }
            (Hierarchy::V2 { .. }, Knob::Cpus) => "cpuset.cpus".into(),
            (Hierarchy::V2 { .. }, Knob::EffectiveCpus) => "cpuset.cpus.effective".into(),
            (Hierarchy::V2 { .. }, Knob::Mems) => "cpuset.mems".into(),
            (Hierarchy::V2 { .. }, Knob::EffectiveMems) => "cpuset.mems.effective".into(),
            (Hierarchy::V2 { .. }, Knob::Partition) => "cpuset.cpus.partition".into(),
            (Hierarchy::V2 { .. }, _) => return None,
        };
        Some(format!("{dir}/{name}"))
    }

    /// Reads `knob` of `dir`.
    pub fn read(&self, root: &SysRoot, dir: &str, knob: Knob) -> Option<String> {
        root.read_opt(&self.file(dir, knob)?)
    }

    /// Writes `knob` of `dir`.
    pub fn write(
        &self,
        root: &SysRoot,
        dir: &str,
        knob: Knob,
        value: &str,
    ) -> Result<(), SysError> {
        let file = self
            .file(dir, knob)
            .ok_or_else(|| SysError::NotFound(root.path(&format!("{dir}/{knob:?}"))))?;
        root.write(&file, value)
    }

    /// The CPUs in effect in cpuset `name`, if it exists.
    pub fn cpus(&self, root: &SysRoot, name: &str) -> Option<Vec<usize>> {
        let text = self.read(root, &self.dir(name), Knob::EffectiveCpus)?;
        if text.is_empty() {
            return Some(Vec::new());
        }
        crate::cpulist::parse(&text).ok()
    }

    /// The task ids listed in the tasks file of `dir`.
    pub fn tasks(&self, root: &SysRoot, dir: &str) -> Vec<i32> {
        root.read(&format!("{dir}/{}", self.tasks_file()))
            .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
            .unwrap_or_default()
    }

    /// The cpusets below the root (relative names), for hints.
    pub fn children(&self, root: &SysRoot) -> Vec<String> {
        root.list(self.mount())
            .unwrap_or_default()
            .into_iter()
            .filter(|n| root.is_dir(&format!("{}/{n}", self.mount())))
            .collect()
    }
}

/// A cpuset a thread or process of a run is put in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CpusetTarget {
    /// Its name (path below the root cpuset; empty for the root).
    pub name: String,
    /// Its directory, relative to the system root.
    pub dir: String,
    /// Its CPUs when the run was planned.
    pub cpus: Vec<usize>,
    /// cgroup v2 (places whole processes only).
    pub v2: bool,
}

/// Why a cpuset cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpusetError {
    /// No cpuset hierarchy is mounted.
    #[error("this machine has no cpuset controller")]
    NoController,
    /// No cpuset has this name.
    #[error("there is no cpuset `{name}` in {hierarchy}{}", listed(others))]
    NotFound {
        /// The name asked for.
        name: String,
        /// The hierarchy looked in.
        hierarchy: String,
        /// The cpusets it has.
        others: Vec<String>,
    },
}

fn listed(others: &[String]) -> String {
    if others.is_empty() {
        String::new()
    } else {
        format!(" (it has: {})", others.join(", "))
    }
}

/// The directory of this process's cpuset `path` (as `/proc/self/cpuset`
/// names it): below the mount point, less the part of the hierarchy the
/// mount does not show (a container's cgroup mounts start at its own
/// cgroup, `/libpod_parent/libpod-ID`).
fn own_dir(root: &SysRoot, h: &Hierarchy, path: &str) -> String {
    let mount = h.mount();
    crate::sys::cgroup::mount_infos(root)
        .iter()
        .filter(|m| m.mount.path.trim_matches('/') == mount)
        .find_map(|m| crate::sys::cgroup::dir_of(m, path))
        .unwrap_or_else(|| h.dir(path))
}

impl CpusetTarget {
    /// Finds cpuset `name` on this machine, or the one this process is in
    /// (`None`, from `/proc/self/cpuset`).
    pub fn find(root: &SysRoot, name: Option<&str>) -> Result<CpusetTarget, CpusetError> {
        let h = Hierarchy::find(root).ok_or(CpusetError::NoController)?;
        let (name, dir) = match name {
            Some(n) => (n.to_string(), h.dir(n)),
            None => {
                let path = root
                    .read_opt(crate::sys::paths::SELF_CPUSET)
                    .unwrap_or_default();
                let dir = own_dir(root, &h, &path);
                (path.trim_matches('/').to_string(), dir)
            }
        };
        if !root.is_dir(&dir) {
            return Err(CpusetError::NotFound {
                name,
                hierarchy: h.describe(),
                others: h.children(root),
            });
        }
        let cpus = h
            .read(root, &dir, Knob::EffectiveCpus)
            .map(|text| crate::cpulist::parse(&text).unwrap_or_default())
            .unwrap_or_default();
        Ok(CpusetTarget {
            cpus,
            name,
            dir,
            v2: h.is_v2(),
        })
    }

    /// The file a thread writes its TID to, to enter (v1 `tasks`; v2 has no
    /// per-thread placement outside threaded cgroups: `cgroup.procs`).
    pub fn thread_file(&self) -> String {
        format!(
            "{}/{}",
            self.dir,
            if self.v2 { "cgroup.procs" } else { "tasks" }
        )
    }

    /// The file a process writes its PID to, to enter with all its threads.
    pub fn process_file(&self) -> String {
        format!("{}/cgroup.procs", self.dir)
    }

    /// `/NAME` as `/proc/PID/cpuset` shows it.
    pub fn display(&self) -> String {
        format!("/{}", self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::fake;

    #[test]
    fn finds_v1_first_then_v2() {
        let dir = tempfile::tempdir().unwrap();
        let (root, _) = fake::v1_machine(dir.path(), fake::Kernel::default());
        let h = Hierarchy::find(&root).unwrap();
        assert_eq!(h.describe(), "cgroup v1 at /sys/fs/cgroup/cpuset");
        assert_eq!(
            h.file("x", Knob::LoadBalance).unwrap(),
            "x/cpuset.sched_load_balance"
        );
        assert_eq!(h.file("x", Knob::Partition), None);
        assert_eq!(h.cpus(&root, "").unwrap(), vec![0, 1, 2, 3]);

        let dir = tempfile::tempdir().unwrap();
        let (root, _) = fake::v2_machine(dir.path(), fake::Kernel::default());
        let h = Hierarchy::find(&root).unwrap();
        assert!(h.is_v2());
        assert_eq!(h.tasks_file(), "cgroup.procs");
        assert_eq!(h.dir("rt"), "sys/fs/cgroup/rt");
    }

    #[test]
    fn no_cpuset_controller_is_none() {
        let dir = tempfile::tempdir().unwrap();
        fake::write_tree(
            dir.path(),
            &[
                (
                    "proc/self/mounts",
                    "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n",
                ),
                ("sys/fs/cgroup/cgroup.controllers", "cpu memory pids\n"),
            ],
        );
        assert_eq!(Hierarchy::find(&SysRoot::at(dir.path())), None);
    }

    #[test]
    fn a_containers_own_cpuset_is_the_top_of_its_mount() {
        let dir = tempfile::tempdir().unwrap();
        let own = "/libpod_parent/libpod-1";
        fake::write_tree(
            dir.path(),
            &[
                (
                    "proc/self/mounts",
                    "cgroup /sys/fs/cgroup/cpuset cgroup ro,nosuid,cpuset 0 0\n",
                ),
                (
                    "proc/self/mountinfo",
                    "92 89 0:31 /libpod_parent/libpod-1 /sys/fs/cgroup/cpuset ro - cgroup cgroup rw,cpuset\n",
                ),
                ("proc/self/cpuset", &format!("{own}\n")),
                ("sys/fs/cgroup/cpuset/cpuset.cpus", "1\n"),
                ("sys/fs/cgroup/cpuset/cpuset.effective_cpus", "1\n"),
            ],
        );
        let root = SysRoot::at(dir.path());
        let t = CpusetTarget::find(&root, None).unwrap();
        assert_eq!(t.dir, "sys/fs/cgroup/cpuset");
        assert_eq!(t.cpus, vec![1]);
        assert_eq!(t.display(), own);
        // Without mountinfo, the path below the mount point: not there.
        std::fs::remove_file(dir.path().join("proc/self/mountinfo")).unwrap();
        assert!(CpusetTarget::find(&root, None).is_err());
    }

    #[test]
    fn v1_without_prefix() {
        let dir = tempfile::tempdir().unwrap();
        fake::write_tree(
            dir.path(),
            &[
                (
                    "proc/self/mounts",
                    "cpuset /dev/cpuset cgroup rw,cpuset,noprefix 0 0\n",
                ),
                ("dev/cpuset/cpus", "0-1\n"),
            ],
        );
        let h = Hierarchy::find(&SysRoot::at(dir.path())).unwrap();
        assert_eq!(h.file("dev/cpuset", Knob::Cpus).unwrap(), "dev/cpuset/cpus");
    }
}

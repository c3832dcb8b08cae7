//! CFS bandwidth for load programs: each `cpu.group` (by default one per
//! program) is a cgroup of the `cpu` controller with a quota per period —
//! v1 `cpu.cfs_quota_us`/`cpu.cfs_period_us`, v2 `cpu.max` — and its
//! throttling is read back from `cpu.stat` at the end of the run.
//!
//! On cgroup v1 the groups live in the `cpu` hierarchy under
//! `rtlab-<pid>/`, independent of the run's tracking cgroup. On cgroup v2 a
//! process is in one cgroup only, so the groups are children of the tracking
//! cgroup (which then holds every program in a leaf: programs without a
//! group go to `tracking/programs`), with `+cpu` enabled on the way down.

use crate::sys::cgroup::{self, Mount};
use crate::sys::journal::{Change, Journal};
use crate::sys::{SysError, SysRoot};
use serde::Serialize;
use std::fs::File;

/// A group's bandwidth: `quota_us` of CPU time per `period_us` (None =
/// unlimited, the group only accounts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Bandwidth {
    /// Runtime per period (µs), summed over all CPUs: 150000 of 100000 is
    /// one and a half CPUs.
    pub quota_us: Option<u64>,
    /// Period (µs).
    pub period_us: u64,
}

/// Default CFS period (the kernel's).
pub const DEFAULT_PERIOD_US: u64 = 100_000;

/// One group to make.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct GroupSpec {
    /// Its name (a path component).
    pub name: String,
    /// Its bandwidth.
    pub bandwidth: Bandwidth,
}

/// Where the `cpu` controller is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuHierarchy {
    /// A v1 hierarchy with the `cpu` controller, at this mount point.
    V1(String),
    /// The v2 hierarchy, at this mount point, with `cpu` available.
    V2(String),
}

/// Finds the `cpu` controller: a v1 mount with it, else the v2 root when
/// its `cgroup.controllers` offers it. Err says why there is none.
pub fn hierarchy(root: &SysRoot) -> Result<CpuHierarchy, BandwidthError> {
    hierarchy_in(root, &cgroup::mounts(root))
}

fn hierarchy_in(root: &SysRoot, mounts: &[Mount]) -> Result<CpuHierarchy, BandwidthError> {
    if let Some(m) = mounts
        .iter()
        .find(|m| !m.v2 && m.options.iter().any(|o| o == "cpu"))
    {
        return Ok(CpuHierarchy::V1(m.path.clone()));
    }
    if let Some(m) = mounts.iter().find(|m| m.v2) {
        let offered = root
            .read_opt(&format!("{}/cgroup.controllers", m.path))
            .unwrap_or_default();
        if offered.split_whitespace().any(|c| c == "cpu") {
            return Ok(CpuHierarchy::V2(m.path.clone()));
        }
        return Err(BandwidthError::NotOffered {
            mount: m.path.clone(),
        });
    }
    Err(BandwidthError::NoController)
}

/// What a group did during the run (from its `cpu.stat`).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct GroupResult {
    /// Its name.
    pub name: String,
    /// Its cgroup directory.
    pub cgroup: String,
    /// Its bandwidth.
    #[serde(flatten)]
    pub bandwidth: Bandwidth,
    /// Enforcement periods that elapsed with the group runnable.
    pub nr_periods: u64,
    /// Periods in which it ran out of quota and was throttled.
    pub nr_throttled: u64,
    /// Total time its tasks were throttled (ms).
    pub throttled_ms: f64,
}

/// Parses `cpu.stat` into (nr_periods, nr_throttled, throttled ms); v1 gives
/// `throttled_time` in ns, v2 `throttled_usec`.
pub fn parse_cpu_stat(text: &str) -> (u64, u64, f64) {
    let get = |key: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == key).then(|| v.trim().parse::<u64>().ok()).flatten()
        })
    };
    let throttled_ms = get("throttled_time")
        .map(|ns| ns as f64 / 1e6)
        .or_else(|| get("throttled_usec").map(|us| us as f64 / 1e3))
        .unwrap_or(0.0);
    (
        get("nr_periods").unwrap_or(0),
        get("nr_throttled").unwrap_or(0),
        throttled_ms,
    )
}

/// The groups of one run, made and limited.
#[derive(Debug)]
pub struct Groups {
    root: SysRoot,
    groups: Vec<(GroupSpec, String, File)>,
    /// v2: the leaf of the tracking cgroup for programs without a group.
    default_leaf: Option<File>,
}

/// Name of the v2 leaf for programs without a group.
pub const DEFAULT_LEAF: &str = "programs";

/// Why CPU bandwidth groups cannot be had or made.
#[derive(Debug, thiserror::Error)]
pub enum BandwidthError {
    /// No hierarchy has the `cpu` controller.
    #[error("no cgroup hierarchy has the cpu controller mounted")]
    NoController,
    /// The v2 hierarchy does not offer `cpu`.
    #[error(
        "the cgroup v2 hierarchy at {mount} does not offer the cpu controller \
         (it is bound to a v1 hierarchy, or the kernel lacks CONFIG_CFS_BANDWIDTH)"
    )]
    NotOffered {
        /// The v2 mount point.
        mount: String,
    },
    /// On v2 the groups live in the tracking cgroup, which is missing.
    #[error(
        "on cgroup v2, CPU bandwidth groups live in the run's tracking cgroup, \
         which could not be made"
    )]
    NoTrackingCgroup,
    /// The kernel refused `+cpu` in a `cgroup.subtree_control`.
    #[error(
        "cannot enable the cpu controller in {file}: {source}{}",
        rt_group_note(source)
    )]
    ControllerRefused {
        /// The `cgroup.subtree_control` file.
        file: String,
        /// The kernel's answer.
        source: SysError,
    },
    /// A cgroup file could not be made, read or written.
    #[error("{what}: {source}")]
    Kernel {
        /// What rtlab was doing.
        what: &'static str,
        /// The kernel's answer.
        source: SysError,
    },
    /// The change could not be journalled first, so it was not made.
    #[error(transparent)]
    Journal(#[from] crate::sys::journal::JournalError),
}

/// Why the kernel may refuse `+cpu`: RT group scheduling.
fn rt_group_note(e: &SysError) -> &'static str {
    if e.errno() == Some(crate::sys::consts::EINVAL) {
        " (with CONFIG_RT_GROUP_SCHED the kernel refuses it while real-time \
         tasks are outside the root cgroup)"
    } else {
        ""
    }
}

fn sys(what: &'static str) -> impl Fn(SysError) -> BandwidthError {
    move |source| BandwidthError::Kernel { what, source }
}

impl Groups {
    /// Makes the groups of `specs` (journalled first, so that a crash
    /// leaves nothing behind that `rtlab restore` cannot remove).
    /// `run_name` is `rtlab-<pid>`; `tracking` the tracking cgroup, needed
    /// on v2.
    pub fn create(
        root: &SysRoot,
        journal: &mut Journal,
        run_name: &str,
        tracking: Option<&str>,
        specs: &[GroupSpec],
    ) -> Result<Groups, BandwidthError> {
        let mut made = Groups {
            root: root.clone(),
            groups: Vec::new(),
            default_leaf: None,
        };
        if specs.is_empty() {
            return Ok(made);
        }
        let (parent, v2) = match hierarchy(root)? {
            CpuHierarchy::V1(mount) => {
                let parent = format!("{}/{run_name}", mount.trim_end_matches('/'));
                mkdir(root, journal, &parent, "tasks")?;
                (parent, false)
            }
            CpuHierarchy::V2(mount) => {
                let tracking = tracking.ok_or(BandwidthError::NoTrackingCgroup)?;
                let mount = mount.trim_end_matches('/');
                let top = format!("{mount}/cgroup.subtree_control");
                enable_cpu(root, Some(journal), &top)?;
                enable_cpu(root, None, &format!("{tracking}/cgroup.subtree_control"))?;
                let leaf = format!("{tracking}/{DEFAULT_LEAF}");
                root.mkdir(&leaf)
                    .map_err(sys("cannot make the programs' leaf"))?;
                made.default_leaf = Some(
                    root.open_write(&format!("{leaf}/cgroup.procs"))
                        .map_err(sys("cannot open the programs' leaf"))?,
                );
                (tracking.to_string(), true)
            }
        };
        for spec in specs {
            let dir = format!("{parent}/{}", spec.name);
            if v2 {
                root.mkdir(&dir).map_err(sys("cannot make a cpu group"))?;
            } else {
                mkdir(root, journal, &dir, "tasks")?;
            }
            limit(root, &dir, spec.bandwidth, v2)?;
            let procs = root
                .open_write(&format!("{dir}/cgroup.procs"))
                .map_err(sys("cannot open a cpu group"))?;
            made.groups.push((spec.clone(), dir, procs));
        }
        Ok(made)
    }

    /// The open `cgroup.procs` of group `name`, for a child to enter.
    pub fn procs(&self, name: &str) -> Option<&File> {
        self.groups
            .iter()
            .find(|(s, _, _)| s.name == name)
            .map(|(_, _, f)| f)
    }

    /// On v2: the leaf for programs without a group (the tracking cgroup
    /// itself may no longer hold processes).
    pub fn default_leaf(&self) -> Option<&File> {
        self.default_leaf.as_ref()
    }

    /// Each group's throttling so far.
    pub fn results(&self) -> Vec<GroupResult> {
        self.groups
            .iter()
            .map(|(spec, dir, _)| {
                let (nr_periods, nr_throttled, throttled_ms) = parse_cpu_stat(
                    &self
                        .root
                        .read(&format!("{dir}/cpu.stat"))
                        .unwrap_or_default(),
                );
                GroupResult {
                    name: spec.name.clone(),
                    cgroup: dir.clone(),
                    bandwidth: spec.bandwidth,
                    nr_periods,
                    nr_throttled,
                    throttled_ms,
                }
            })
            .collect()
    }
}

fn mkdir(
    root: &SysRoot,
    journal: &mut Journal,
    dir: &str,
    tasks_file: &str,
) -> Result<(), BandwidthError> {
    journal.record(&Change::Mkdir {
        path: dir.to_string(),
        tasks_file: tasks_file.to_string(),
    })?;
    root.mkdir(dir).map_err(sys("cannot make a cpu cgroup"))
}

/// Enables `+cpu` in a `cgroup.subtree_control` (journalled when asked).
fn enable_cpu(
    root: &SysRoot,
    journal: Option<&mut Journal>,
    file: &str,
) -> Result<(), BandwidthError> {
    let now = root
        .read(file)
        .map_err(sys("cannot read subtree_control"))?;
    if now.split_whitespace().any(|c| c == "cpu") {
        return Ok(());
    }
    if let Some(j) = journal {
        j.record(&Change::EnableController {
            path: file.to_string(),
            controller: "cpu".into(),
        })?;
    }
    root.write(file, "+cpu")
        .map_err(|source| BandwidthError::ControllerRefused {
            file: file.to_string(),
            source,
        })
}

/// Writes the bandwidth of the group at `dir`. The files are the group's
/// own, removed with it: they need no journal.
fn limit(root: &SysRoot, dir: &str, bw: Bandwidth, v2: bool) -> Result<(), BandwidthError> {
    let write = |file: &str, value: &str| {
        root.write(&format!("{dir}/{file}"), value)
            .map_err(sys("cannot set the CPU bandwidth"))
    };
    if v2 {
        let quota = bw.quota_us.map_or("max".to_string(), |q| q.to_string());
        write("cpu.max", &format!("{quota} {}", bw.period_us))
    } else {
        write("cpu.cfs_period_us", &bw.period_us.to_string())?;
        write(
            "cpu.cfs_quota_us",
            &bw.quota_us.map_or("-1".to_string(), |q| q.to_string()),
        )
    }
}

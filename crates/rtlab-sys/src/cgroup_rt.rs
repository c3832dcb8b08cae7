//! Real-time group scheduling (`CONFIG_RT_GROUP_SCHED`) as this process
//! meets it: the v1 `cpu` cgroups from the top of the hierarchy that is
//! visible here down to this process's own, each with its real-time
//! budget (`cpu.rt_runtime_us` of each `cpu.rt_period_us`). A real-time
//! policy is refused (EPERM) to a thread whose cgroup has a budget of 0,
//! which is what every new cgroup starts with; a group's budget must fit
//! in what its parent has left after its other children.

use super::SysRoot;
use super::cgroup::{self, MountInfo};

/// The budget file of a v1 `cpu` cgroup.
pub const RUNTIME_FILE: &str = "cpu.rt_runtime_us";
/// The period file of a v1 `cpu` cgroup.
pub const PERIOD_FILE: &str = "cpu.rt_period_us";

/// One cgroup on the way from the visible top to this process's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RtGroup {
    /// Its path in the hierarchy, as `/proc/self/cgroup` names it
    /// (`/libpod_parent/libpod-ID`; `/` for the top of a private cgroup
    /// namespace).
    pub cgroup: String,
    /// Its directory, relative to the system root.
    pub dir: String,
    /// `cpu.rt_runtime_us` (-1: no limit), if readable.
    pub runtime_us: Option<i64>,
    /// `cpu.rt_period_us`, if readable.
    pub period_us: Option<i64>,
    /// What its sibling cgroups hold, in µs of this group's period (None
    /// for the top, whose siblings are not seen).
    pub siblings_us: Option<i64>,
}

impl RtGroup {
    /// The budget file, relative to the system root.
    pub fn runtime_file(&self) -> String {
        format!("{}/{RUNTIME_FILE}", self.dir)
    }
}

/// The `cpu` cgroups of this process, top first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RtGroups {
    /// From the top visible here down to this process's own (last).
    pub chain: Vec<RtGroup>,
    /// Whether the first is the hierarchy's root. When not, cgroups above
    /// it exist that this process cannot see: a container's view (the
    /// mount shows only its own cgroup, or a cgroup namespace starts
    /// there), and they are changed on the host.
    pub top_is_root: bool,
}

/// This process's `cpu` cgroups with their real-time budgets; None where
/// there is no v1 `cpu` hierarchy with `cpu.rt_runtime_us` (a kernel
/// without `CONFIG_RT_GROUP_SCHED`, cgroup v2 only) or this process's
/// cgroup is not reachable from its mount.
pub fn rt_groups(root: &SysRoot) -> Option<RtGroups> {
    let mounts = cgroup::mount_infos(root);
    let m = mounts
        .iter()
        .find(|m| !m.mount.v2 && m.mount.options.iter().any(|o| o == "cpu"))?;
    let path = cgroup::parse_self_cgroup(&root.read("proc/self/cgroup").ok()?, Some("cpu"))?;
    let own = cgroup::dir_of(m, &path)?;
    if !root.exists(&format!("{own}/{RUNTIME_FILE}")) {
        return None;
    }
    let chain = chain(root, m, &path);
    let top = chain.first()?;
    let top_is_root = top.cgroup == "/"
        && (root.exists(&format!("{}/release_agent", top.dir))
            || root.exists(&format!("{}/cgroup.sane_behavior", top.dir)));
    Some(RtGroups { chain, top_is_root })
}

/// The groups from `m`'s root down to `path`, with budgets and siblings'.
fn chain(root: &SysRoot, m: &MountInfo, path: &str) -> Vec<RtGroup> {
    let base = m.root.trim_end_matches('/');
    let below = path.strip_prefix(base).unwrap_or("").trim_matches('/');
    let mut cgroup = if base.is_empty() {
        "/".to_string()
    } else {
        base.to_string()
    };
    let mut dir = m.mount.path.trim_matches('/').to_string();
    let mut out = vec![group(root, &cgroup, &dir)];
    for name in below.split('/').filter(|n| !n.is_empty()) {
        let parent = dir.clone();
        cgroup = format!("{}/{name}", cgroup.trim_end_matches('/'));
        dir = format!("{dir}/{name}");
        let mut g = group(root, &cgroup, &dir);
        g.siblings_us = g.period_us.map(|p| siblings_us(root, &parent, name, p));
        out.push(g);
    }
    out
}

fn group(root: &SysRoot, cgroup: &str, dir: &str) -> RtGroup {
    let read = |f: &str| {
        root.read_opt(&format!("{dir}/{f}"))
            .and_then(|v| v.parse::<i64>().ok())
    };
    RtGroup {
        cgroup: cgroup.to_string(),
        dir: dir.to_string(),
        runtime_us: read(RUNTIME_FILE),
        period_us: read(PERIOD_FILE),
        siblings_us: None,
    }
}

/// What the children of `parent` other than `name` hold, in µs of a
/// `period`-µs period (the kernel compares their shares of their periods).
fn siblings_us(root: &SysRoot, parent: &str, name: &str, period: i64) -> i64 {
    let mut sum: i64 = 0;
    for other in root.list(parent).unwrap_or_default() {
        let dir = format!("{parent}/{other}");
        if other == name || !root.is_dir(&dir) {
            continue;
        }
        let g = group(root, "", &dir);
        if let (Some(r), Some(p)) = (g.runtime_us, g.period_us)
            && r > 0
            && p > 0
        {
            // Rounded up: what is left must fit whatever the rounding.
            let scaled = (i128::from(r) * i128::from(period) + i128::from(p) - 1) / i128::from(p);
            sum = sum.saturating_add(i64::try_from(scaled).unwrap_or(i64::MAX));
        }
    }
    sum
}

/// What `parent` has left for `child` (µs of the child's period): its own
/// budget scaled to that period, less what the child's siblings hold;
/// None when a figure is missing. A parent without limit (-1) has the
/// whole period to share among its children.
pub fn left_for(parent: &RtGroup, child: &RtGroup) -> Option<i64> {
    let period = child.period_us.filter(|&p| p > 0)?;
    let runtime = parent.runtime_us?;
    if runtime < 0 {
        return Some(period.saturating_sub(child.siblings_us.unwrap_or(0)));
    }
    let parent_period = parent.period_us.filter(|&p| p > 0)?;
    let scaled = i128::from(runtime) * i128::from(period) / i128::from(parent_period);
    let scaled = i64::try_from(scaled).unwrap_or(i64::MAX).min(period);
    Some(scaled.saturating_sub(child.siblings_us.unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::write_tree;

    const HOST_MOUNTINFO: &str = "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
         41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

    /// A host tree: root 950000, /a 0 with a sibling /b holding 300000
    /// (of a 500000 period: 600000 of a 1 s one), this process in /a/c.
    fn host(tree: &std::path::Path) -> SysRoot {
        let c = "sys/fs/cgroup/cpu";
        write_tree(
            tree,
            &[
                ("proc/self/mountinfo", HOST_MOUNTINFO),
                ("proc/self/cgroup", "2:cpu,cpuacct:/a/c\n0::/\n"),
                (&format!("{c}/release_agent"), "\n"),
                (&format!("{c}/cpu.rt_runtime_us"), "950000\n"),
                (&format!("{c}/cpu.rt_period_us"), "1000000\n"),
                (&format!("{c}/a/cpu.rt_runtime_us"), "0\n"),
                (&format!("{c}/a/cpu.rt_period_us"), "1000000\n"),
                (&format!("{c}/b/cpu.rt_runtime_us"), "300000\n"),
                (&format!("{c}/b/cpu.rt_period_us"), "500000\n"),
                (&format!("{c}/a/c/cpu.rt_runtime_us"), "0\n"),
                (&format!("{c}/a/c/cpu.rt_period_us"), "1000000\n"),
            ],
        );
        SysRoot::at(tree)
    }

    #[test]
    fn a_hosts_chain_from_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let g = rt_groups(&host(dir.path())).unwrap();
        assert!(g.top_is_root);
        let names: Vec<&str> = g.chain.iter().map(|g| g.cgroup.as_str()).collect();
        assert_eq!(names, ["/", "/a", "/a/c"]);
        assert_eq!(
            g.chain[1].runtime_file(),
            "sys/fs/cgroup/cpu/a/cpu.rt_runtime_us"
        );
        assert_eq!(g.chain[1].runtime_us, Some(0));
        assert_eq!(g.chain[1].siblings_us, Some(600_000));
        // 950000 less the sibling's 600000.
        assert_eq!(left_for(&g.chain[0], &g.chain[1]), Some(350_000));
        assert_eq!(left_for(&g.chain[1], &g.chain[2]), Some(0));
    }

    #[test]
    fn a_containers_view_starts_at_its_own_cgroup() {
        let dir = tempfile::tempdir().unwrap();
        let c = "sys/fs/cgroup/cpu";
        write_tree(
            dir.path(),
            &[
                (
                    "proc/self/mountinfo",
                    "90 89 0:29 /libpod_parent/libpod-1 /sys/fs/cgroup/cpu ro - cgroup cgroup rw,cpu\n",
                ),
                ("proc/self/cgroup", "1:cpu:/libpod_parent/libpod-1\n"),
                (&format!("{c}/cpu.rt_runtime_us"), "0\n"),
                (&format!("{c}/cpu.rt_period_us"), "1000000\n"),
            ],
        );
        let g = rt_groups(&SysRoot::at(dir.path())).unwrap();
        assert!(!g.top_is_root);
        assert_eq!(g.chain.len(), 1);
        assert_eq!(g.chain[0].cgroup, "/libpod_parent/libpod-1");
        assert_eq!(g.chain[0].dir, "sys/fs/cgroup/cpu");
        // A private cgroup namespace: `/`, but not the hierarchy's root.
        write_tree(
            dir.path(),
            &[
                (
                    "proc/self/mountinfo",
                    "90 89 0:29 / /sys/fs/cgroup/cpu ro - cgroup cgroup rw,cpu\n",
                ),
                ("proc/self/cgroup", "1:cpu:/\n"),
            ],
        );
        let g = rt_groups(&SysRoot::at(dir.path())).unwrap();
        assert!(!g.top_is_root);
        assert_eq!(g.chain[0].cgroup, "/");
    }

    #[test]
    fn no_rt_group_scheduling_or_no_tree_is_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(rt_groups(&SysRoot::at(dir.path())), None);
        let root = host(dir.path());
        std::fs::remove_file(dir.path().join("sys/fs/cgroup/cpu/a/c/cpu.rt_runtime_us")).unwrap();
        assert_eq!(rt_groups(&root), None);
        write_tree(dir.path(), &[("proc/self/cgroup", "garbage")]);
        assert_eq!(rt_groups(&root), None);
    }

    #[test]
    fn an_unlimited_or_unreadable_parent() {
        let g = |runtime, period| RtGroup {
            cgroup: "/x".into(),
            dir: "x".into(),
            runtime_us: runtime,
            period_us: period,
            siblings_us: Some(0),
        };
        let child = g(Some(0), Some(1_000_000));
        assert_eq!(left_for(&g(Some(-1), None), &child), Some(1_000_000));
        assert_eq!(left_for(&g(None, Some(1)), &child), None);
        assert_eq!(left_for(&g(Some(5), Some(0)), &child), None);
        assert_eq!(
            left_for(&g(Some(i64::MAX), Some(1)), &child),
            Some(1_000_000)
        );
    }
}

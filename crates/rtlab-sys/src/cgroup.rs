//! Cgroup mounts, and the tracking cgroup that holds every process a run
//! starts, so that all of them (grandchildren included, even those that leave
//! their process group) can be found and stopped.
//!
//! The tracking cgroup lives in the cgroup v2 hierarchy when one is mounted
//! (it has `cgroup.kill`), else in a v1 hierarchy (`pids`, `freezer`, or any
//! other), where processes are killed one by one from `cgroup.procs`.

use super::{SysError, SysRoot, os};

/// The cgroup layout of this machine.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupVersion {
    /// Only v1 hierarchies.
    V1,
    /// Only the unified hierarchy.
    V2,
    /// Both (v1 controllers plus a v2 mount).
    Hybrid,
    /// No cgroup filesystem mounted.
    None,
}

/// One mounted cgroup hierarchy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Mount point (absolute, as the kernel reports it).
    pub path: String,
    /// v2 (`cgroup2`) or v1 (`cgroup`).
    pub v2: bool,
    /// Mount options (v1 options name the controllers).
    pub options: Vec<String>,
}

/// Parses `/proc/self/mounts` text into its cgroup mounts.
pub fn parse_mounts(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (path, fstype, opts) = (f.get(1)?, f.get(2)?, f.get(3)?);
            let v2 = match *fstype {
                "cgroup2" => true,
                "cgroup" => false,
                _ => return None,
            };
            Some(Mount {
                path: path.to_string(),
                v2,
                options: opts.split(',').map(str::to_string).collect(),
            })
        })
        .collect()
}

/// The cgroup mounts of this machine.
pub fn mounts(root: &SysRoot) -> Vec<Mount> {
    root.read("proc/self/mounts")
        .map(|t| parse_mounts(&t))
        .unwrap_or_default()
}

/// A cgroup mount as `/proc/self/mountinfo` shows it: the mount, and the
/// cgroup of its hierarchy that appears at its mount point (`root`): `/`
/// on a host; in a container, the container's own cgroup
/// (`/libpod_parent/libpod-ID`), or `/` again inside a private cgroup
/// namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountInfo {
    /// The mount (its point, version and super options).
    pub mount: Mount,
    /// The cgroup shown at the mount point.
    pub root: String,
}

/// Parses `/proc/self/mountinfo` text into its cgroup mounts.
pub fn parse_mountinfo(text: &str) -> Vec<MountInfo> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let l: Vec<&str> = left.split_whitespace().collect();
            let r: Vec<&str> = right.split_whitespace().collect();
            let (root, path) = (l.get(3)?, l.get(4)?);
            let (fstype, opts) = (r.first()?, r.get(2)?);
            let v2 = match *fstype {
                "cgroup2" => true,
                "cgroup" => false,
                _ => return None,
            };
            Some(MountInfo {
                mount: Mount {
                    path: unescape_octal(path),
                    v2,
                    options: opts.split(',').map(str::to_string).collect(),
                },
                root: unescape_octal(root),
            })
        })
        .collect()
}

/// The cgroup mounts of this process, with the cgroup each shows.
pub fn mount_infos(root: &SysRoot) -> Vec<MountInfo> {
    root.read("proc/self/mountinfo")
        .map(|t| parse_mountinfo(&t))
        .unwrap_or_default()
}

/// A path as the kernel writes it in mount tables: space, tab, newline and
/// backslash as `\ooo`.
fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                let v = d.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0'));
                out.push(u8::try_from(v).unwrap_or(b'?'));
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// This process's cgroup in the v1 hierarchy of `controller` (the
/// `/proc/self/cgroup` line that names it), or in the v2 hierarchy (the
/// `0::` line) when `controller` is None.
pub fn parse_self_cgroup(text: &str, controller: Option<&str>) -> Option<String> {
    text.lines().find_map(|line| {
        let mut f = line.splitn(3, ':');
        let (_, names, path) = (f.next()?, f.next()?, f.next()?);
        let hit = match controller {
            Some(c) => names.split(',').any(|n| n == c),
            None => names.is_empty(),
        };
        hit.then(|| path.to_string())
    })
}

/// Where cgroup `path` of the hierarchy mounted as `m` is, relative to the
/// system root: the mount point and the part of `path` below the mount's
/// root. None when `path` is not below it.
pub fn dir_of(m: &MountInfo, path: &str) -> Option<String> {
    let base = m.root.trim_end_matches('/');
    let below = path.strip_prefix(base)?;
    if !below.is_empty() && !below.starts_with('/') {
        return None;
    }
    let below = below.trim_matches('/');
    let mount = m.mount.path.trim_matches('/');
    Some(if below.is_empty() {
        mount.to_string()
    } else {
        format!("{mount}/{below}")
    })
}

/// Which cgroup layout the machine has.
pub fn version(mounts: &[Mount]) -> CgroupVersion {
    let v1 = mounts.iter().any(|m| !m.v2);
    let v2 = mounts.iter().any(|m| m.v2);
    match (v1, v2) {
        (true, true) => CgroupVersion::Hybrid,
        (true, false) => CgroupVersion::V1,
        (false, true) => CgroupVersion::V2,
        (false, false) => CgroupVersion::None,
    }
}

/// Picks the hierarchy for tracking: v2 first, then v1 `pids`, `freezer`, any.
fn tracking_mount(mounts: &[Mount]) -> Option<&Mount> {
    mounts
        .iter()
        .find(|m| m.v2)
        .or_else(|| {
            mounts
                .iter()
                .find(|m| m.options.iter().any(|o| o == "pids"))
        })
        .or_else(|| {
            mounts
                .iter()
                .find(|m| m.options.iter().any(|o| o == "freezer"))
        })
        .or_else(|| mounts.iter().find(|m| !m.v2))
}

/// A cgroup created to hold the processes of one run.
#[derive(Debug, Clone)]
pub struct TrackingCgroup {
    root: SysRoot,
    /// Directory of the cgroup, relative to the root.
    dir: String,
}

impl TrackingCgroup {
    /// Where `NAME` would be made: under the best hierarchy for tracking.
    pub fn dir_for(root: &SysRoot, name: &str) -> Result<String, SysError> {
        let mounts = mounts(root);
        let mount = tracking_mount(&mounts).ok_or_else(|| {
            SysError::NotFound(root.path("sys/fs/cgroup (no cgroup hierarchy is mounted)"))
        })?;
        Ok(format!("{}/{}", mount.path.trim_end_matches('/'), name))
    }

    /// Creates `NAME` under the best hierarchy for tracking.
    pub fn create(root: &SysRoot, name: &str) -> Result<Self, SysError> {
        let dir = Self::dir_for(root, name)?;
        if !root.exists(&dir) {
            root.mkdir(&dir)?;
        }
        Ok(TrackingCgroup {
            root: root.clone(),
            dir,
        })
    }

    /// Re-opens an existing tracking cgroup from its directory (the guard).
    pub fn existing(root: &SysRoot, dir: &str) -> Self {
        TrackingCgroup {
            root: root.clone(),
            dir: dir.to_string(),
        }
    }

    /// The cgroup directory, relative to the root.
    pub fn dir(&self) -> &str {
        &self.dir
    }

    /// Opens `cgroup.procs` for a child to write itself into before exec.
    pub fn open_procs(&self) -> Result<std::fs::File, SysError> {
        self.root.open_write(&format!("{}/cgroup.procs", self.dir))
    }

    /// The cgroup and every cgroup below it, deepest first (on v2, CPU
    /// bandwidth groups are children of the tracking cgroup).
    fn dirs(&self) -> Vec<String> {
        fn walk(root: &SysRoot, dir: &str, out: &mut Vec<String>) {
            for name in root.list(dir).unwrap_or_default() {
                let child = format!("{dir}/{name}");
                if root.is_dir(&child) {
                    walk(root, &child, out);
                }
            }
            out.push(dir.to_string());
        }
        let mut out = Vec::new();
        walk(&self.root, &self.dir, &mut out);
        out
    }

    /// The pids in the cgroup and the cgroups below it now.
    pub fn pids(&self) -> Vec<i32> {
        self.dirs()
            .iter()
            .flat_map(|d| {
                self.root
                    .read(&format!("{d}/cgroup.procs"))
                    .map(|t| {
                        t.lines()
                            .filter_map(|l| l.trim().parse().ok())
                            .collect::<Vec<i32>>()
                    })
                    .unwrap_or_default()
            })
            .collect()
    }

    /// Sends `signal` to every process in the cgroup. SIGKILL uses
    /// `cgroup.kill` where the kernel has it (atomic against forks).
    pub fn signal_all(&self, signal: libc::c_int) {
        let kill_file = format!("{}/cgroup.kill", self.dir);
        if signal == libc::SIGKILL
            && self.root.exists(&kill_file)
            && self.root.write(&kill_file, "1").is_ok()
        {
            return;
        }
        for pid in self.pids() {
            let _ = os::kill_pid(pid, signal);
        }
    }

    /// Kills everything in the cgroup until it is empty (at most `timeout`),
    /// then removes it. Returns the pids still alive if it could not.
    pub fn kill_and_remove(&self, timeout: std::time::Duration) -> Result<(), Vec<i32>> {
        let start = std::time::Instant::now();
        loop {
            let left = self.pids();
            if left.is_empty() {
                // rmdir can race with the last exits being accounted.
                for _ in 0..50 {
                    for d in self.dirs() {
                        let _ = self.root.rmdir(&d);
                    }
                    if !self.root.exists(&self.dir) {
                        return Ok(());
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                return Ok(());
            }
            if start.elapsed() > timeout {
                return Err(left);
            }
            self.signal_all(libc::SIGKILL);
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "tmpfs /sys/fs/cgroup tmpfs rw 0 0\n\
cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n\
cgroup /sys/fs/cgroup/pids cgroup rw,relatime,pids 0 0\n\
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";

    #[test]
    fn parses_mounts_and_versions() {
        let m = parse_mounts(HYBRID);
        assert_eq!(m.len(), 3);
        assert_eq!(version(&m), CgroupVersion::Hybrid);
        assert!(tracking_mount(&m).unwrap().path.ends_with("cgroup/unified"));
        let v1: Vec<Mount> = m.iter().filter(|m| !m.v2).cloned().collect();
        assert_eq!(version(&v1), CgroupVersion::V1);
        assert!(tracking_mount(&v1).unwrap().path.ends_with("cgroup/pids"));
        assert_eq!(version(&[]), CgroupVersion::None);
    }

    #[test]
    fn creates_a_tracking_cgroup_in_a_fake_tree() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        std::fs::create_dir_all(dir.path().join("sys/fs/cgroup/unified")).unwrap();
        std::fs::write(dir.path().join("proc/self/mounts"), HYBRID).unwrap();
        let root = SysRoot::at(dir.path());
        let cg = TrackingCgroup::create(&root, "rtlab-1").unwrap();
        assert_eq!(
            cg.dir(),
            format!("{}/rtlab-1", parse_mounts(HYBRID)[2].path)
        );
        // A fake tree has no kernel to fill cgroup.procs: write it by hand.
        std::fs::write(
            dir.path()
                .join("sys/fs/cgroup/unified/rtlab-1/cgroup.procs"),
            "",
        )
        .unwrap();
        assert!(cg.pids().is_empty());
    }

    /// A podman container on a hybrid host: each v1 hierarchy shows the
    /// container's own cgroup at its mount point.
    const CONTAINER_MOUNTINFO: &str = "79 51 0:40 / / rw,relatime - overlay overlay rw\n\
89 82 0:47 / /sys/fs/cgroup rw,nosuid - tmpfs tmpfs rw,mode=755\n\
90 89 0:29 /libpod_parent/libpod-1de5 /sys/fs/cgroup/cpu ro,nosuid - cgroup cgroup rw,cpu\n\
92 89 0:31 /libpod_parent/libpod-1de5 /sys/fs/cgroup/cpuset ro,nosuid - cgroup cgroup rw,cpuset\n\
99 89 0:38 / /sys/fs/cgroup/my\\040dir rw shared:9 - cgroup2 cgroup2 rw\n";

    #[test]
    fn mountinfo_gives_each_mounts_cgroup() {
        let m = parse_mountinfo(CONTAINER_MOUNTINFO);
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].mount.path.trim_start_matches('/'), "sys/fs/cgroup/cpu");
        assert_eq!(m[0].root, "/libpod_parent/libpod-1de5");
        assert!(m[0].mount.options.iter().any(|o| o == "cpu"));
        // Optional fields before ` - ` and escaped spaces.
        assert_eq!(
            m[2].mount.path.trim_start_matches('/'),
            "sys/fs/cgroup/my dir"
        );
        assert!(m[2].mount.v2);
        let own = "/libpod_parent/libpod-1de5";
        assert_eq!(dir_of(&m[0], own).as_deref(), Some("sys/fs/cgroup/cpu"));
        assert_eq!(
            dir_of(&m[0], &format!("{own}/sub")).as_deref(),
            Some("sys/fs/cgroup/cpu/sub")
        );
        // Not below the mount's cgroup: not reachable here.
        assert_eq!(dir_of(&m[0], "/libpod_parent"), None);
        assert_eq!(dir_of(&m[0], "/libpod_parent/libpod-1de5x"), None);
        assert_eq!(
            dir_of(&m[2], "/a/b").as_deref(),
            Some("sys/fs/cgroup/my dir/a/b")
        );
        // Garbage lines are skipped, never a panic.
        assert!(parse_mountinfo("x - cgroup\n - \n\\\n1 2 3 \\0 /p - cgroup c rw").len() <= 1);
    }

    #[test]
    fn self_cgroup_by_controller() {
        let text = "9:name=systemd:/x\n2:cpu,cpuacct:/a/b\n0::/u\n";
        assert_eq!(
            parse_self_cgroup(text, Some("cpu")).as_deref(),
            Some("/a/b")
        );
        assert_eq!(
            parse_self_cgroup(text, Some("cpuacct")).as_deref(),
            Some("/a/b")
        );
        assert_eq!(parse_self_cgroup(text, None).as_deref(), Some("/u"));
        assert_eq!(parse_self_cgroup(text, Some("cpuset")), None);
        assert_eq!(parse_self_cgroup("garbage", Some("cpu")), None);
    }

    #[test]
    fn no_cgroup_mount_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::at(dir.path());
        assert!(matches!(
            TrackingCgroup::create(&root, "x"),
            Err(SysError::NotFound(_))
        ));
    }
}

//! rtlab's system layer: the root-relative file layer ([`root`]), the
//! syscall layer ([`os`], the only `unsafe` code of rtlab), and readers of
//! kernel facts built on them. The only crate of rtlab that names kernel
//! paths (a test in the binary crate checks) or may use `unsafe`.

#![deny(missing_docs)]
#![deny(unsafe_code)]

pub mod bpf;
pub mod cgroup;
pub mod cgroup_rt;
pub mod counter_choice;
#[cfg(any(test, feature = "fake"))]
pub mod fake;
pub mod features;
pub mod infile;
pub mod info;
pub mod irq;
pub mod journal;
pub mod memory;
pub mod net;
// The syscall layer: the only module where `unsafe` is allowed.
#[allow(unsafe_code)]
pub mod os;
pub mod outfile;
pub mod paths;
pub mod power;
pub mod proc_stat;
pub mod root;
pub mod scratch;
pub mod smi;
pub mod tasks;
pub mod threads;
pub mod trace;

pub use root::{SysError, SysRoot};

/// The kernel's errno and signal numbers the layers above name. They are
/// re-exported here so that only this crate depends on `libc` and `rustix`:
/// the crates above cannot make a system call but through this layer.
pub mod consts {
    pub use libc::{
        EACCES, EBUSY, EINTR, EINVAL, EIO, EMFILE, ENFILE, ENOSYS, EPERM, ESRCH, SIGABRT, SIGALRM,
        SIGBUS, SIGCHLD, SIGFPE, SIGHUP, SIGILL, SIGINT, SIGKILL, SIGPIPE, SIGQUIT, SIGSEGV,
        SIGTERM, SIGUSR1,
    };
}

/// The online CPUs, from `/sys/devices/system/cpu/online`.
pub fn online_cpus(root: &SysRoot) -> Result<Vec<usize>, SysError> {
    let rel = "sys/devices/system/cpu/online";
    let text = root.read_trim(rel)?;
    rtlab_core::cpulist::parse(&text).map_err(|e| SysError::Parse {
        path: root.path(rel),
        what: e.message,
    })
}

/// The CPUs the kernel knows of, online or not (the `cpuN` directories,
/// as glibc counts `_SC_NPROCESSORS_CONF`); 0 when unreadable.
pub fn configured_cpus(root: &SysRoot) -> usize {
    root.list(paths::CPU_DIR).map_or(0, |names| {
        names
            .iter()
            .filter(|n| {
                n.strip_prefix("cpu")
                    .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            })
            .count()
    })
}

/// The size of the last-level cache CPU 0 sees (bytes), from its cache
/// directories in sysfs (`size` as `32768K`); None when not listed.
pub fn llc_bytes(root: &SysRoot) -> Option<u64> {
    let dir = format!("{}/cpu0/cache", paths::CPU_DIR);
    let mut best: Option<(u32, u64)> = None;
    for index in root.list(&dir).ok()? {
        let read = |f: &str| root.read_opt(&format!("{dir}/{index}/{f}"));
        let Some(level) = read("level").and_then(|l| l.trim().parse::<u32>().ok()) else {
            continue;
        };
        let Some(size) = read("size").and_then(|s| cache_size(s.trim())) else {
            continue;
        };
        if best.is_none_or(|(l, s)| (level, size) > (l, s)) {
            best = Some((level, size));
        }
    }
    best.map(|b| b.1)
}

fn cache_size(text: &str) -> Option<u64> {
    let (n, unit) = match text.strip_suffix('K') {
        Some(n) => (n, 1 << 10),
        None => match text.strip_suffix('M') {
            Some(n) => (n, 1 << 20),
            None => (text, 1),
        },
    };
    n.parse::<u64>().ok()?.checked_mul(unit)
}

/// The NUMA node of `cpu` (its `nodeN` link in sysfs), None when the
/// kernel has no NUMA.
pub fn cpu_node(root: &SysRoot, cpu: usize) -> Option<usize> {
    root.list(&format!("{}/cpu{cpu}", paths::CPU_DIR))
        .ok()?
        .iter()
        .find_map(|name| name.strip_prefix("node")?.parse().ok())
}

/// Whether `/dev/cpu_dma_latency` is missing only from this process's
/// `/dev`: the kernel has the device (sysfs says so) but `/dev` is a
/// private one (a `tmpfs`, as a container's), not the kernel's
/// `devtmpfs`, so it was not passed in (`--device`). A board whose `/dev`
/// is a tmpfs (busybox mdev) without the device is not one.
pub fn private_dev(root: &SysRoot) -> bool {
    root.exists(paths::DMA_LATENCY_CLASS) && private_dev_mount(root)
}

fn private_dev_mount(root: &SysRoot) -> bool {
    root.read("proc/self/mounts").is_ok_and(|text| {
        text.lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.get(1) == Some(&"/dev") && f.get(2).is_some_and(|t| *t != "devtmpfs")
        })
    })
}

/// Why `/dev/cpu_dma_latency` is missing, and what brings it.
pub fn pm_qos_missing(root: &SysRoot) -> &'static str {
    if private_dev(root) {
        "not in this container's /dev: pass it in (podman or docker `--device /dev/cpu_dma_latency`)"
    } else {
        "not present on this kernel (CONFIG_PM)"
    }
}

/// Facts about this process's privileges that decide whether real-time
/// scheduling can be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Privileges {
    /// Effective uid is 0.
    pub root: bool,
    /// CAP_SYS_NICE is in the effective set (`CapEff:` of
    /// `/proc/self/status`, bit 23; where that is unreadable, root is taken
    /// to have it and the kernel's answer to a real attempt decides).
    pub cap_sys_nice: bool,
    /// RLIMIT_RTPRIO soft limit.
    pub rtprio_limit: u64,
    /// `/proc/sys/kernel/sched_rt_runtime_us` (-1 = no throttling).
    pub rt_runtime_us: Option<i64>,
    /// A seccomp filter is on this process (`Seccomp: 2`).
    pub seccomp_filter: bool,
    /// This process is in a user namespace: the first line of
    /// `/proc/self/uid_map` when it is not the initial namespace's
    /// `0 0 4294967295` (a rootless container).
    pub user_namespace: Option<String>,
}

/// The effective capability set (`CapEff:`) of a `/proc/PID/status` text.
pub fn effective_caps(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
}

/// The effective-capability bit of CAP_SYS_NICE.
pub const CAP_SYS_NICE: u32 = 23;

impl Privileges {
    /// Reads the privileges of this process.
    pub fn current(root: &SysRoot) -> Self {
        let status = root.read("proc/self/status").unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(str::trim)
        };
        let caps = effective_caps(&status);
        let is_root = os::geteuid() == 0;
        Privileges {
            root: is_root,
            cap_sys_nice: caps.map_or(is_root, |c| c & (1 << CAP_SYS_NICE) != 0),
            rtprio_limit: os::rtprio_limit(),
            rt_runtime_us: root
                .read_opt("proc/sys/kernel/sched_rt_runtime_us")
                .and_then(|v| v.parse().ok()),
            seccomp_filter: field("Seccomp:") == Some("2"),
            user_namespace: user_namespace(&root.read("proc/self/uid_map").unwrap_or_default()),
        }
    }

    /// Whether a thread may take real-time priority `priority` by the rules
    /// alone: CAP_SYS_NICE, or RLIMIT_RTPRIO at least `priority` (root
    /// without the capability, as in a container that dropped it, may
    /// not). The kernel may still refuse: RT group scheduling, a seccomp
    /// filter, a user namespace.
    pub fn allows_rt(&self, priority: i32) -> bool {
        self.cap_sys_nice || u64::try_from(priority).is_ok_and(|p| p <= self.rtprio_limit)
    }
}

/// The uid map's first line when it is not the initial namespace's.
fn user_namespace(uid_map: &str) -> Option<String> {
    let first = uid_map
        .lines()
        .next()?
        .split_whitespace()
        .collect::<Vec<_>>();
    (first != ["0", "0", "4294967295"]).then(|| first.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn online_cpus_from_a_fake_tree() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sys/devices/system/cpu");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("online"), "0-3,6\n").unwrap();
        let root = SysRoot::at(dir.path());
        assert_eq!(online_cpus(&root).unwrap(), vec![0, 1, 2, 3, 6]);
        std::fs::write(p.join("online"), "garbage\n").unwrap();
        assert!(matches!(online_cpus(&root), Err(SysError::Parse { .. })));
    }

    #[test]
    fn a_containers_dev_lacks_the_pm_qos_device() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::at(dir.path());
        assert!(pm_qos_missing(&root).contains("this kernel"));
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        let mounts = dir.path().join("proc/self/mounts");
        std::fs::write(&mounts, "udev /dev devtmpfs rw 0 0\n").unwrap();
        assert!(!private_dev(&root));
        std::fs::write(
            &mounts,
            "overlay / overlay rw 0 0\ntmpfs /dev tmpfs rw 0 0\n",
        )
        .unwrap();
        // A board with busybox's tmpfs /dev and a kernel without the device.
        assert!(!private_dev(&root));
        assert!(pm_qos_missing(&root).contains("this kernel"));
        // A container: the kernel has it (sysfs), its /dev does not.
        std::fs::create_dir_all(dir.path().join("sys/class/misc/cpu_dma_latency")).unwrap();
        assert!(private_dev(&root));
        assert!(pm_qos_missing(&root).contains("--device /dev/cpu_dma_latency"));
    }

    #[test]
    fn privileges_from_a_fake_status() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        std::fs::create_dir_all(dir.path().join("proc/sys/kernel")).unwrap();
        std::fs::write(
            dir.path().join("proc/self/status"),
            "Name:\tx\nCapEff:\t0000000000800000\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("proc/sys/kernel/sched_rt_runtime_us"),
            "-1\n",
        )
        .unwrap();
        let p = Privileges::current(&SysRoot::at(dir.path()));
        assert!(p.cap_sys_nice);
        assert_eq!(p.rt_runtime_us, Some(-1));
        assert!(p.allows_rt(99));
        assert!(!p.seccomp_filter);
        assert_eq!(p.user_namespace, None);
    }

    #[test]
    fn a_container_without_cap_sys_nice() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        // podman's default set: no CAP_SYS_NICE (bit 23), a seccomp filter.
        std::fs::write(
            dir.path().join("proc/self/status"),
            "Name:\tx\nCapEff:\t00000000800405fb\nSeccomp:\t2\nSeccomp_filters:\t1\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("proc/self/uid_map"),
            "         0          0 4294967295\n",
        )
        .unwrap();
        let p = Privileges::current(&SysRoot::at(dir.path()));
        assert!(!p.cap_sys_nice);
        assert!(p.seccomp_filter);
        assert_eq!(p.user_namespace, None);
        // Neither root nor a low RLIMIT_RTPRIO gives priority 99 then.
        let p = Privileges {
            root: true,
            rtprio_limit: 10,
            ..p
        };
        assert!(!p.allows_rt(99));
        assert!(p.allows_rt(10));
        // A rootless container's user namespace.
        std::fs::write(
            dir.path().join("proc/self/uid_map"),
            "0 1000 1\n1 100000 65536\n",
        )
        .unwrap();
        let p = Privileges::current(&SysRoot::at(dir.path()));
        assert_eq!(p.user_namespace.as_deref(), Some("0 1000 1"));
    }
}

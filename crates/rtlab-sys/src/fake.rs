//! A fake kernel behind a fake tree, for unit tests: cgroup v1 and v2
//! cpusets that fill new directories with their files and move tasks between
//! `tasks` files, pinned kernel threads that refuse to move (EINVAL), tasks
//! that end during a move (ESRCH), threads whose CPUs cannot be set
//! (EINVAL), IRQ writes refused with EPERM as on a virtual machine,
//! read-only knobs, and kernels without `isolated` partitions.

use super::SysRoot;
use super::root::FakeKernel;
use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The behaviour of the fake kernel.
#[derive(Debug, Default)]
pub struct Kernel {
    /// Mount point of the v1 cpuset hierarchy (relative), if any.
    pub v1_cpuset: Option<String>,
    /// Mount point of the v2 hierarchy (relative), if any.
    pub v2: Option<String>,
    /// Whether v2 `cpuset.cpus.partition` accepts `isolated`.
    pub isolated_partitions: bool,
    /// Whether writes to `/proc/irq/N/*` fail with EPERM.
    pub irq_eperm: bool,
    /// Managed IRQs: writes to their affinity fail with EIO.
    pub managed_irqs: Vec<u32>,
    /// Mount point of a v1 hierarchy with the `cpu` controller, if any.
    pub v1_cpu: Option<String>,
    /// Tasks that cannot leave their cpuset (EINVAL), as pinned kthreads.
    pub pinned: Vec<i32>,
    /// Tasks that end when someone tries to move them (ESRCH).
    pub vanishing: Mutex<Vec<i32>>,
    /// Files whose writes are refused (EACCES).
    pub read_only: Vec<String>,
    /// Every `sched_setaffinity` call seen.
    pub affinity_calls: Mutex<Vec<(i32, Vec<usize>)>>,
    /// Tasks whose `sched_setaffinity` fails with EINVAL (CPUs outside
    /// their cpuset, or CPUs the kernel keeps fixed).
    pub affinity_refused: Vec<i32>,
}

fn errno(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

fn write_file(tree: &Path, rel: &str, value: &str) -> io::Result<()> {
    let path = tree.join(rel);
    if !path.exists() {
        return Err(errno(libc::ENOENT));
    }
    std::fs::write(path, value)
}

/// Sets `field` in a fake `/proc/<tid>/status`.
fn set_status_field(tree: &Path, tid: i32, field: &str, value: &str) -> io::Result<()> {
    let path = tree.join(format!("proc/{tid}/status"));
    let text = std::fs::read_to_string(&path).map_err(|_| errno(libc::ESRCH))?;
    let out: Vec<String> = text
        .lines()
        .map(|l| {
            if l.split(':').next() == Some(field) {
                format!("{field}:\t{value}")
            } else {
                l.to_string()
            }
        })
        .collect();
    std::fs::write(path, out.join("\n") + "\n")
}

impl Kernel {
    fn hierarchy_of(&self, rel: &str) -> Option<(&str, bool)> {
        if let Some(m) = &self.v1_cpu
            && rel.starts_with(m.as_str())
        {
            return Some((m, false));
        }
        if let Some(m) = &self.v1_cpuset
            && rel.starts_with(m.as_str())
        {
            return Some((m, false));
        }
        if let Some(m) = &self.v2
            && rel.starts_with(m.as_str())
        {
            return Some((m, true));
        }
        None
    }

    fn move_task(&self, tree: &Path, rel: &str, mount: &str, value: &str) -> io::Result<()> {
        let tid: i32 = value.trim().parse().map_err(|_| errno(libc::EINVAL))?;
        let file = rel.rsplit('/').next().unwrap_or("tasks");
        let mut vanishing = self.vanishing.lock().unwrap();
        if let Some(i) = vanishing.iter().position(|&t| t == tid) {
            vanishing.remove(i);
            let _ = std::fs::remove_dir_all(tree.join(format!("proc/{tid}")));
            remove_everywhere(&tree.join(mount), file, tid);
            return Err(errno(libc::ESRCH));
        }
        if !tree.join(format!("proc/{tid}")).exists() {
            return Err(errno(libc::ESRCH));
        }
        let target_dir = rel.rsplit_once('/').map_or("", |(d, _)| d);
        if self.pinned.contains(&tid) && target_dir != mount {
            return Err(errno(libc::EINVAL));
        }
        remove_everywhere(&tree.join(mount), file, tid);
        let path = tree.join(rel);
        let mut text = std::fs::read_to_string(&path)?;
        text.push_str(&format!("{tid}\n"));
        std::fs::write(&path, text)?;
        // As the kernel does on attach: the task's affinity becomes the
        // cpuset's CPUs.
        let cpus_file = if self.v1_cpuset.as_deref() == Some(mount) {
            "cpuset.effective_cpus"
        } else {
            "cpuset.cpus.effective"
        };
        if let Ok(cpus) = std::fs::read_to_string(tree.join(target_dir).join(cpus_file)) {
            let _ = set_status_field(tree, tid, "Cpus_allowed_list", cpus.trim());
        }
        Ok(())
    }
}

fn remove_everywhere(dir: &Path, file: &str, tid: i32) {
    let f = dir.join(file);
    if let Ok(text) = std::fs::read_to_string(&f) {
        let kept: String = text
            .lines()
            .filter(|l| l.trim() != tid.to_string())
            .map(|l| format!("{l}\n"))
            .collect();
        let _ = std::fs::write(&f, kept);
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.path().is_dir() {
                remove_everywhere(&e.path(), file, tid);
            }
        }
    }
}

impl FakeKernel for Kernel {
    fn write(&self, tree: &Path, rel: &str, value: &str) -> Option<io::Result<()>> {
        if self.read_only.iter().any(|r| r == rel) {
            return Some(Err(errno(libc::EACCES)));
        }
        if self.irq_eperm && rel.starts_with("proc/irq/") && !rel.ends_with("default_smp_affinity")
        {
            return Some(Err(errno(libc::EPERM)));
        }
        if let Some(n) = rel
            .strip_prefix("proc/irq/")
            .and_then(|r| r.split('/').next())
            .and_then(|n| n.parse::<u32>().ok())
            && self.managed_irqs.contains(&n)
        {
            return Some(Err(errno(libc::EIO)));
        }
        let (mount, v2) = self.hierarchy_of(rel)?;
        let name = rel.rsplit('/').next().unwrap_or("");
        let dir = rel.rsplit_once('/').map_or("", |(d, _)| d);
        Some(match name {
            "tasks" | "cgroup.procs" => self.move_task(tree, rel, mount, value),
            "cpuset.cpus.partition" if value == "isolated" && !self.isolated_partitions => {
                Err(errno(libc::EINVAL))
            }
            "cgroup.subtree_control" => {
                let now = std::fs::read_to_string(tree.join(rel)).unwrap_or_default();
                let mut set: Vec<String> = now.split_whitespace().map(str::to_string).collect();
                for word in value.split_whitespace() {
                    let (sign, c) = word.split_at(1);
                    set.retain(|x| x != c);
                    if sign == "+" {
                        set.push(c.to_string());
                    }
                }
                write_file(tree, rel, &(set.join(" ") + "\n"))
            }
            "cpuset.cpus" => {
                let effective = if v2 {
                    "cpuset.cpus.effective"
                } else {
                    "cpuset.effective_cpus"
                };
                write_file(tree, rel, value)
                    .and_then(|()| write_file(tree, &format!("{dir}/{effective}"), value))
            }
            _ => return None,
        })
    }

    fn mkdir(&self, tree: &Path, rel: &str) -> Option<io::Result<()>> {
        let (_, v2) = self.hierarchy_of(rel)?;
        let dir = tree.join(rel);
        Some(std::fs::create_dir(&dir).and_then(|()| {
            let files: &[(&str, &str)] = if v2 {
                &[
                    ("cpuset.cpus", ""),
                    ("cpuset.mems", ""),
                    ("cpuset.cpus.effective", ""),
                    ("cpuset.mems.effective", ""),
                    ("cpuset.cpus.partition", "member"),
                    ("cgroup.procs", ""),
                    ("cgroup.threads", ""),
                ]
            } else {
                &[
                    ("cpuset.cpus", ""),
                    ("cpuset.mems", ""),
                    ("cpuset.effective_cpus", ""),
                    ("cpuset.cpu_exclusive", "0"),
                    ("cpuset.sched_load_balance", "1"),
                    ("tasks", ""),
                    ("cgroup.procs", ""),
                ]
            };
            // The cpu controller's files, in every new cgroup.
            let cpu: &[(&str, &str)] = if v2 {
                &[
                    ("cpu.max", "max 100000"),
                    (
                        "cpu.stat",
                        "usage_usec 0\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n",
                    ),
                    ("cgroup.subtree_control", ""),
                ]
            } else {
                &[
                    ("cpu.cfs_period_us", "100000"),
                    ("cpu.cfs_quota_us", "-1"),
                    (
                        "cpu.stat",
                        "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
                    ),
                ]
            };
            for (f, v) in files.iter().chain(cpu) {
                std::fs::write(dir.join(f), v)?;
            }
            Ok(())
        }))
    }

    fn rmdir(&self, tree: &Path, rel: &str) -> Option<io::Result<()>> {
        self.hierarchy_of(rel)?;
        let dir = tree.join(rel);
        for f in ["tasks", "cgroup.procs"] {
            if std::fs::read_to_string(dir.join(f)).is_ok_and(|t| !t.trim().is_empty()) {
                return Some(Err(errno(libc::EBUSY)));
            }
        }
        if !dir.exists() {
            return Some(Err(errno(libc::ENOENT)));
        }
        Some(std::fs::remove_dir_all(dir))
    }

    fn set_affinity(&self, tree: &Path, tid: i32, cpus: &[usize]) -> io::Result<()> {
        self.affinity_calls
            .lock()
            .unwrap()
            .push((tid, cpus.to_vec()));
        if self.affinity_refused.contains(&tid) {
            return Err(errno(libc::EINVAL));
        }
        set_status_field(
            tree,
            tid,
            "Cpus_allowed_list",
            &rtlab_core::cpulist::format(cpus),
        )
    }

    fn set_sched(&self, tree: &Path, tid: i32, sched: super::os::Sched) -> io::Result<()> {
        if self.pinned.contains(&tid) {
            return Err(errno(libc::EPERM));
        }
        let path = tree.join(format!("proc/{tid}/stat"));
        let text = std::fs::read_to_string(&path).map_err(|_| errno(libc::ESRCH))?;
        let close = text.rfind(')').ok_or_else(|| errno(libc::EIO))?;
        let mut f: Vec<String> = text[close + 1..]
            .split_whitespace()
            .map(str::to_string)
            .collect();
        let (policy, rt, nice) = match sched.policy {
            super::os::Policy::Other => (0, 0, sched.priority),
            super::os::Policy::Fifo => (1, sched.priority, 0),
            super::os::Policy::Rr => (2, sched.priority, 0),
            super::os::Policy::Batch => (3, 0, sched.priority),
            super::os::Policy::Idle => (5, 0, 0),
        };
        f[19 - 3] = nice.to_string();
        f[40 - 3] = rt.to_string();
        f[41 - 3] = policy.to_string();
        std::fs::write(path, format!("{} {}\n", &text[..=close], f.join(" ")))
    }
}

/// A `stat` line with the fields rtlab reads (stat(5) numbering): state 3,
/// ppid 4, flags 9, nice 19, start time 22, processor 39, rt_priority 40,
/// policy 41.
pub fn stat_line(tid: i32, name: &str, ppid: i32, kernel: bool, sched: (u32, u32, i32)) -> String {
    let (policy, rt_priority, nice) = sched;
    let flags = if kernel { 0x0020_0040 } else { 0x0040_0000 };
    let mut f: Vec<String> = vec!["0".to_string(); 50];
    f[3] = "S".into();
    f[4] = ppid.to_string();
    f[9] = flags.to_string();
    f[19] = nice.to_string();
    f[22] = (1000 + tid).to_string();
    f[39] = "0".into();
    f[40] = rt_priority.to_string();
    f[41] = policy.to_string();
    format!("{tid} ({name}) {}\n", f[3..].join(" "))
}

/// A fake task: its `stat` and `status` files, and `task/<tid>` pointing
/// back at itself (one thread per process). Kernel threads (children of
/// kthreadd) named `migration/N` run FIFO 99, as on a real kernel.
pub fn add_task(tree: &Path, tid: i32, name: &str, ppid: i32, cpus: &str) {
    let kernel = ppid == 2 || tid == 2;
    let sched = if kernel && name.starts_with("migration/") {
        (1, 99, 0)
    } else {
        (0, 0, 0)
    };
    let dir = tree.join(format!("proc/{tid}"));
    std::fs::create_dir_all(dir.join("task")).unwrap();
    std::fs::write(dir.join("stat"), stat_line(tid, name, ppid, kernel, sched)).unwrap();
    std::fs::write(
        dir.join("status"),
        format!("Name:\t{name}\nTgid:\t{tid}\nPPid:\t{ppid}\nCpus_allowed_list:\t{cpus}\n"),
    )
    .unwrap();
    let _ = std::os::unix::fs::symlink("..", dir.join(format!("task/{tid}")));
}

/// Marks fake task `tid` as one whose CPUs the kernel keeps fixed
/// (`PF_NO_SETAFFINITY` in its `stat` flags, as a per-CPU kernel thread).
pub fn fix_affinity(tree: &Path, tid: i32) {
    let path = tree.join(format!("proc/{tid}/stat"));
    let text = std::fs::read_to_string(&path).unwrap();
    let close = text.rfind(')').unwrap();
    let mut f: Vec<String> = text[close + 1..]
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let flags: u64 = f[9 - 3].parse().unwrap();
    f[9 - 3] = (flags | 0x0400_0000).to_string();
    std::fs::write(path, format!("{} {}\n", &text[..=close], f.join(" "))).unwrap();
}

/// Writes `files` (relative path, content) under `tree`, making directories.
pub fn write_tree(tree: &Path, files: &[(&str, &str)]) {
    for (rel, content) in files {
        let p = tree.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
}

/// The common part of a 4-CPU machine: CPUs, IRQs, noise knobs, tasks.
/// Tasks: 1 (init), 2 (kthreadd), 3 (pinned kthread), 100 and 101 (user).
pub fn base_machine(tree: &Path) {
    write_tree(
        tree,
        &[
            ("sys/devices/system/cpu/online", "0-3\n"),
            ("sys/devices/system/cpu/isolated", "\n"),
            ("proc/cmdline", "root=/dev/vda quiet\n"),
            ("proc/sys/kernel/random/boot_id", "fake-boot\n"),
            ("proc/irq/default_smp_affinity", "f\n"),
            ("proc/irq/24/smp_affinity_list", "0-3\n"),
            ("proc/irq/25/smp_affinity_list", "2-3\n"),
            ("proc/irq/26/smp_affinity_list", "0\n"),
            ("proc/sys/kernel/timer_migration", "1\n"),
            ("proc/sys/kernel/watchdog_cpumask", "0-3\n"),
            ("proc/sys/vm/stat_interval", "1\n"),
            ("sys/devices/virtual/workqueue/cpumask", "f\n"),
            ("sys/devices/virtual/workqueue/writeback/cpumask", "f\n"),
            (
                "sys/devices/system/machinecheck/machinecheck0/check_interval",
                "300\n",
            ),
        ],
    );
    add_task(tree, 1, "init", 0, "0-3");
    add_task(tree, 2, "kthreadd", 0, "0-3");
    add_task(tree, 3, "migration/0", 2, "0");
    add_task(tree, 100, "sshd", 1, "0-3");
    add_task(tree, 101, "pinned app", 1, "3");
}

/// A machine with the cpuset controller on cgroup v1.
pub fn v1_machine(tree: &Path, kernel: Kernel) -> (SysRoot, Arc<Kernel>) {
    base_machine(tree);
    let m = "sys/fs/cgroup/cpuset";
    write_tree(
        tree,
        &[
            (
                "proc/self/mounts",
                "cgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0\n\
                 cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n",
            ),
            (&format!("{m}/cpuset.cpus"), "0-3\n"),
            (&format!("{m}/cpuset.effective_cpus"), "0-3\n"),
            (&format!("{m}/cpuset.mems"), "0\n"),
            (&format!("{m}/cpuset.cpu_exclusive"), "1\n"),
            (&format!("{m}/cpuset.sched_load_balance"), "1\n"),
            (&format!("{m}/tasks"), "1\n2\n3\n100\n101\n"),
            (&format!("{m}/cgroup.procs"), "1\n2\n3\n100\n101\n"),
        ],
    );
    let kernel = Arc::new(Kernel {
        v1_cpuset: Some(m.into()),
        ..kernel
    });
    (SysRoot::simulated(tree, kernel.clone()), kernel)
}

/// A machine with only cgroup v2, cpuset available.
pub fn v2_machine(tree: &Path, kernel: Kernel) -> (SysRoot, Arc<Kernel>) {
    base_machine(tree);
    let m = "sys/fs/cgroup";
    write_tree(
        tree,
        &[
            (
                "proc/self/mounts",
                "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n",
            ),
            (
                &format!("{m}/cgroup.controllers"),
                "cpuset cpu io memory pids\n",
            ),
            (&format!("{m}/cgroup.subtree_control"), "memory pids\n"),
            (&format!("{m}/cpuset.cpus.effective"), "0-3\n"),
            (&format!("{m}/cpuset.mems.effective"), "0\n"),
            (&format!("{m}/cpuset.cpus.isolated"), "\n"),
            (&format!("{m}/cgroup.procs"), "1\n2\n3\n100\n101\n"),
        ],
    );
    let kernel = Arc::new(Kernel {
        v2: Some(m.into()),
        ..kernel
    });
    (SysRoot::simulated(tree, kernel.clone()), kernel)
}

/// Every file of the tree with its content (task lists sorted: the kernel
/// lists them in no promised order).
pub fn snapshot(tree: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![tree.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            let kind = e.file_type().unwrap();
            if kind.is_symlink() {
                // `proc/N/task/N` points back at its task.
                continue;
            }
            if kind.is_dir() {
                out.insert(
                    p.strip_prefix(tree).unwrap().display().to_string() + "/",
                    String::new(),
                );
                stack.push(p);
                continue;
            }
            let mut text = std::fs::read_to_string(&p).unwrap();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if name == "tasks" || name == "cgroup.procs" {
                let mut lines: Vec<&str> = text.lines().collect();
                lines.sort();
                text = lines.join("\n");
            }
            out.insert(
                p.strip_prefix(tree).unwrap().display().to_string(),
                text.trim().to_string(),
            );
        }
    }
    out
}

/// A journal directory as rtlab requires it (mode 0700; a temporary
/// directory is made 0755 less the umask).
pub fn journal_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

/// Makes a FIFO at `path` (as someone could plant one).
pub fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo").arg(path).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", path.display());
}

const CPU: &str = "sys/devices/system/cpu";

/// A 4-CPU fake tree with cpufreq (two policies) and three idle states
/// per CPU (POLL, C1 at 2 µs, C6 at 133 µs).
pub fn power_machine(tree: &std::path::Path) {
    base_machine(tree);
    for (p, cpus) in [(0, "0 1"), (2, "2 3")] {
        let d = format!("{CPU}/cpufreq/policy{p}");
        write_tree(
            tree,
            &[
                (&format!("{d}/scaling_governor"), "schedutil\n"),
                (
                    &format!("{d}/scaling_available_governors"),
                    "performance powersave schedutil\n",
                ),
                (&format!("{d}/affected_cpus"), &format!("{cpus}\n")),
                (&format!("{d}/scaling_driver"), "acpi-cpufreq\n"),
                (&format!("{d}/scaling_cur_freq"), "800000\n"),
                (&format!("{d}/scaling_min_freq"), "800000\n"),
                (&format!("{d}/scaling_max_freq"), "3000000\n"),
                (&format!("{d}/cpuinfo_max_freq"), "3000000\n"),
            ],
        );
    }
    for cpu in 0..4 {
        for (k, name, lat) in [(0, "POLL", 0), (1, "C1", 2), (2, "C6", 133)] {
            let d = format!("{CPU}/cpu{cpu}/cpuidle/state{k}");
            write_tree(
                tree,
                &[
                    (&format!("{d}/name"), &format!("{name}\n")),
                    (&format!("{d}/desc"), "fake\n"),
                    (&format!("{d}/latency"), &format!("{lat}\n")),
                    (&format!("{d}/residency"), &format!("{}\n", lat * 3)),
                    (&format!("{d}/usage"), "10\n"),
                    (&format!("{d}/time"), "100\n"),
                    (&format!("{d}/disable"), "0\n"),
                ],
            );
        }
    }
    write_tree(
        tree,
        &[
            (&format!("{CPU}/cpuidle/current_driver"), "intel_idle\n"),
            (&format!("{CPU}/cpuidle/current_governor"), "menu\n"),
        ],
    );
}

//! What the planner knows of the machine: the [`Machine`] facts it asks
//! for, the real one that reads the kernel, and command lookup on PATH.

use crate::isolate::cpuset::{CpusetError, CpusetTarget};
use crate::sys::os::{self, Sched};
use crate::sys::{Privileges, SysRoot};
use crate::tune::bandwidth::BandwidthError;
use std::path::{Path, PathBuf};

use super::tuning;

/// What the planner needs to know about the machine. The real one reads the
/// kernel; tests use a fake.
pub trait Machine {
    /// The experiment is read, the checks against the machine come: the
    /// real machine lets go of the binary's pages that reading touched
    /// (see [`crate::sys::memory::release_early_pages`]).
    fn read_done(&self) {}
    /// Online CPUs.
    fn online_cpus(&self) -> Vec<usize>;
    /// Privileges of this process.
    fn privileges(&self) -> Privileges;
    /// This process's cpu cgroups with their RT time (RT group
    /// scheduling), read when a real-time policy was refused.
    fn rt_groups(&self) -> Option<crate::sys::cgroup_rt::RtGroups> {
        None
    }
    /// Tries `sched` on a throw-away thread.
    fn probe_sched(&self, sched: Sched) -> std::io::Result<()>;
    /// Tries SCHED_DEADLINE `dl` on a throw-away thread pinned to `cpus`.
    fn probe_deadline(&self, cpus: &[usize], dl: crate::sched::Deadline) -> std::io::Result<()>;
    /// Finds a command on PATH (or checks a path with a `/`).
    fn find_command(&self, name: &str) -> Option<PathBuf>;
    /// The cpuset `name`, or the one this process is in (`None`).
    fn cpuset(&self, name: Option<&str>) -> Result<CpusetTarget, CpusetError>;
    /// The IRQ numbers of `/proc/irq`, each with its handlers' names.
    fn irqs(&self) -> Vec<(u32, Vec<String>)>;
    /// The cpufreq policies, or why there are none.
    fn freq_policies(&self) -> Result<Vec<crate::sys::power::FreqPolicy>, String>;
    /// The cpuidle states of `cpus`.
    fn idle_states(&self, cpus: &[usize]) -> Vec<crate::sys::power::IdleState>;
    /// The names of every thread now.
    fn thread_names(&self) -> Vec<String>;
    /// Every thread now but rtlab's own: its TID and name.
    fn other_threads(&self) -> Vec<(i32, String)>;
    /// The network interfaces (`eth0`, `lo`).
    fn net_interfaces(&self) -> Vec<String>;
    /// Whether CPU bandwidth groups can be made (Err: why not).
    fn cpu_bandwidth(&self) -> Result<(), BandwidthError>;
    /// Whether process `pid` exists now.
    fn process_exists(&self, pid: i32) -> bool;
    /// The CPUs the threads of process `pid` may run on now (the union of
    /// their affinities), if it exists.
    fn process_cpus(&self, _pid: i32) -> Option<Vec<usize>> {
        None
    }
    /// The memory available now (`MemAvailable`, KiB), if known.
    fn mem_available_kib(&self) -> Option<u64>;
    /// The counter a noise loop reads here (CLOCK_MONOTONIC unless told).
    fn counter(&self) -> crate::sys::counter_choice::CounterFacts {
        crate::sys::counter_choice::CounterFacts {
            kind: crate::sys::os::counter::CounterKind::Monotonic,
            hz: 1_000_000_000,
            why: "CLOCK_MONOTONIC".into(),
        }
    }
}

/// The machine rtlab runs on.
pub struct RealMachine {
    /// Root of kernel files.
    pub root: SysRoot,
}

impl Machine for RealMachine {
    fn read_done(&self) {
        let _ = crate::sys::memory::release_early_pages(&self.root);
    }

    fn counter(&self) -> crate::sys::counter_choice::CounterFacts {
        crate::sys::counter_choice::choose(&self.root)
    }

    fn online_cpus(&self) -> Vec<usize> {
        crate::sys::online_cpus(&self.root).unwrap_or_else(|_| {
            (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect()
        })
    }

    fn privileges(&self) -> Privileges {
        Privileges::current(&self.root)
    }

    fn rt_groups(&self) -> Option<crate::sys::cgroup_rt::RtGroups> {
        crate::sys::cgroup_rt::rt_groups(&self.root)
    }

    fn probe_sched(&self, sched: Sched) -> std::io::Result<()> {
        std::thread::spawn(move || os::set_sched(0, sched))
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("probe thread panicked")))
    }

    fn probe_deadline(&self, cpus: &[usize], dl: crate::sched::Deadline) -> std::io::Result<()> {
        let cpus = cpus.to_vec();
        std::thread::spawn(move || {
            os::set_affinity(0, &cpus)?;
            os::set_deadline(0, dl)
        })
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("probe thread panicked")))
    }

    fn find_command(&self, name: &str) -> Option<PathBuf> {
        // `rtlab hog` and friends run this very binary, on PATH or not.
        if name == "rtlab" {
            return std::env::current_exe().ok();
        }
        find_in_path(name, &std::env::var_os("PATH").unwrap_or_default())
    }

    fn cpuset(&self, name: Option<&str>) -> Result<CpusetTarget, CpusetError> {
        CpusetTarget::find(&self.root, name)
    }

    fn irqs(&self) -> Vec<(u32, Vec<String>)> {
        crate::sys::irq::handler_names(&self.root)
    }

    fn freq_policies(&self) -> Result<Vec<crate::sys::power::FreqPolicy>, String> {
        tuning::real::freq_policies(&self.root)
    }

    fn idle_states(&self, cpus: &[usize]) -> Vec<crate::sys::power::IdleState> {
        crate::sys::power::idle_states(&self.root, cpus)
    }

    fn thread_names(&self) -> Vec<String> {
        tuning::real::thread_names(&self.root)
    }

    fn other_threads(&self) -> Vec<(i32, String)> {
        tuning::real::other_threads(&self.root)
    }

    fn net_interfaces(&self) -> Vec<String> {
        crate::sys::net::interfaces(&self.root)
    }

    fn cpu_bandwidth(&self) -> Result<(), BandwidthError> {
        crate::tune::bandwidth::hierarchy(&self.root).map(|_| ())
    }

    fn process_exists(&self, pid: i32) -> bool {
        crate::sys::tasks::start_time(&self.root, pid).is_some()
    }

    fn process_cpus(&self, pid: i32) -> Option<Vec<usize>> {
        let lists = crate::sys::tasks::threads_allowed_cpus(&self.root, pid)?;
        let mut cpus: Vec<usize> = lists
            .iter()
            .filter_map(|list| crate::cpulist::parse(list.trim()).ok())
            .flatten()
            .collect();
        cpus.sort_unstable();
        cpus.dedup();
        Some(cpus).filter(|c| !c.is_empty())
    }

    fn mem_available_kib(&self) -> Option<u64> {
        crate::sys::memory::available_kib(&self.root)
    }
}

/// Why command `name` cannot be run, and a hint: a path that is there
/// but is not an executable file (a directory, no execute permission) is
/// said so, not "not found".
pub(super) fn command_missing(name: &str) -> (String, String) {
    if !name.contains('/') {
        return (
            format!("command `{name}` not found"),
            format!("install `{name}` or give its full path; PATH is searched as a shell would"),
        );
    }
    match Path::new(name).metadata() {
        Ok(_) => (
            format!("`{name}` is not an executable file"),
            "give the path of an executable file (a directory, or a file without execute permission, cannot run)".into(),
        ),
        Err(_) => (
            format!("command `{name}` not found"),
            "check the path, and that the file is executable".into(),
        ),
    }
}

/// Resolves a command name like `execvp` does.
pub fn find_in_path(name: &str, path_var: &std::ffi::OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        let p = PathBuf::from(name);
        return executable(&p).then_some(p);
    }
    std::env::split_paths(path_var)
        .map(|dir| dir.join(name))
        .find(|p| executable(p))
}

//! A snapshot of the facts a latency result must state about the machine:
//! kernel, preemption model, command line, CPUs and their isolation, cgroup
//! layout, governors, clock source, RT throttling.

use super::{SysRoot, cgroup};
use serde::Serialize;
use std::collections::BTreeMap;

/// How preemptible the kernel is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Preemption {
    /// `PREEMPT_RT`, `PREEMPT_DYNAMIC`, `PREEMPT` or `NONE_OR_VOLUNTARY`
    /// (from the kernel version string).
    pub model: String,
    /// With PREEMPT_DYNAMIC: the active mode from debugfs when readable.
    pub dynamic_mode: Option<String>,
    /// `/sys/kernel/realtime` reads 1.
    pub realtime: bool,
}

/// Derives the preemption model from `uname -v` and the optional debugfs
/// `sched/preempt` text (`none voluntary (full) lazy`).
pub fn preemption(version: &str, realtime: bool, preempt_file: Option<&str>) -> Preemption {
    let words: Vec<&str> = version.split_whitespace().collect();
    let model = if realtime || words.contains(&"PREEMPT_RT") {
        "PREEMPT_RT"
    } else if words.contains(&"PREEMPT_DYNAMIC") {
        "PREEMPT_DYNAMIC"
    } else if words.contains(&"PREEMPT") {
        "PREEMPT"
    } else {
        "NONE_OR_VOLUNTARY"
    };
    let dynamic_mode = preempt_file.and_then(|t| {
        t.split_whitespace()
            .find(|w| w.starts_with('('))
            .map(|w| w.trim_matches(|c| c == '(' || c == ')').to_string())
    });
    Preemption {
        model: model.to_string(),
        dynamic_mode,
        realtime,
    }
}

/// What the machine is, as a latency report must state it.
#[derive(Debug, Clone, Serialize)]
pub struct SystemSnapshot {
    /// Host name.
    pub hostname: String,
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -v`.
    pub kernel_version: String,
    /// CPU architecture.
    pub machine: String,
    /// Preemption model.
    pub preemption: Preemption,
    /// `/proc/cmdline`.
    pub cmdline: String,
    /// Online CPUs (cpulist).
    pub cpus_online: String,
    /// CPUs isolated by `isolcpus=` (cpulist, empty when none).
    pub cpus_isolated: String,
    /// CPUs in `nohz_full` (cpulist, empty when none or not built in).
    pub cpus_nohz_full: String,
    /// SMT control state.
    pub smt: Option<String>,
    /// cgroup layout.
    pub cgroup_version: cgroup::CgroupVersion,
    /// cpufreq governor per CPU; empty when the machine has no cpufreq.
    pub governors: BTreeMap<usize, String>,
    /// Current clock source.
    pub clocksource: Option<String>,
    /// `sched_rt_runtime_us` (-1 = RT throttling off).
    pub sched_rt_runtime_us: Option<i64>,
    /// `sched_rt_period_us`.
    pub sched_rt_period_us: Option<i64>,
}

impl SystemSnapshot {
    /// Reads the snapshot from the machine behind `root`. Missing files give
    /// empty fields, never an error: a snapshot must always be possible.
    pub fn read(root: &SysRoot) -> Self {
        let cpu = "sys/devices/system/cpu";
        let online = super::online_cpus(root).unwrap_or_default();
        let governors = online
            .iter()
            .filter_map(|&c| {
                root.read_opt(&format!("{cpu}/cpu{c}/cpufreq/scaling_governor"))
                    .map(|g| (c, g))
            })
            .collect();
        let version = root.read_opt("proc/sys/kernel/version").unwrap_or_default();
        let realtime = root.read_opt("sys/kernel/realtime").as_deref() == Some("1");
        let preempt_file = root.read_opt("sys/kernel/debug/sched/preempt");
        SystemSnapshot {
            hostname: root
                .read_opt("proc/sys/kernel/hostname")
                .unwrap_or_default(),
            kernel_release: root
                .read_opt("proc/sys/kernel/osrelease")
                .unwrap_or_default(),
            preemption: preemption(&version, realtime, preempt_file.as_deref()),
            kernel_version: version,
            machine: std::env::consts::ARCH.to_string(),
            cmdline: root.read_opt("proc/cmdline").unwrap_or_default(),
            cpus_online: crate::cpulist::format(&online),
            cpus_isolated: root
                .read_opt(&format!("{cpu}/isolated"))
                .unwrap_or_default(),
            cpus_nohz_full: root
                .read_opt(&format!("{cpu}/nohz_full"))
                .filter(|s| s != "(null)")
                .unwrap_or_default(),
            smt: root.read_opt(&format!("{cpu}/smt/control")),
            cgroup_version: cgroup::version(&cgroup::mounts(root)),
            governors,
            clocksource: root
                .read_opt("sys/devices/system/clocksource/clocksource0/current_clocksource"),
            sched_rt_runtime_us: root
                .read_opt("proc/sys/kernel/sched_rt_runtime_us")
                .and_then(|v| v.parse().ok()),
            sched_rt_period_us: root
                .read_opt("proc/sys/kernel/sched_rt_period_us")
                .and_then(|v| v.parse().ok()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preemption_models_from_version_strings() {
        let p = preemption(
            "#1 SMP PREEMPT_DYNAMIC @0",
            false,
            Some("none voluntary (full) lazy"),
        );
        assert_eq!(p.model, "PREEMPT_DYNAMIC");
        assert_eq!(p.dynamic_mode.as_deref(), Some("full"));
        assert_eq!(
            preemption("#1 SMP PREEMPT_RT Thu", false, None).model,
            "PREEMPT_RT"
        );
        assert_eq!(
            preemption("#1 SMP PREEMPT Thu", false, None).model,
            "PREEMPT"
        );
        assert_eq!(
            preemption("#1 SMP Thu", false, None).model,
            "NONE_OR_VOLUNTARY"
        );
        assert_eq!(preemption("#1 SMP", true, None).model, "PREEMPT_RT");
    }

    #[test]
    fn snapshot_of_an_empty_tree_is_empty_not_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let s = SystemSnapshot::read(&SysRoot::at(dir.path()));
        assert_eq!(s.cpus_online, "");
        assert!(s.governors.is_empty());
        assert_eq!(s.cgroup_version, cgroup::CgroupVersion::None);
    }
}

//! A snapshot of the facts a latency result must state about the machine:
//! kernel, preemption model, command line, CPUs and their isolation, cgroup
//! layout, governors, clock source, RT throttling.

use super::{SysRoot, cgroup, power};
use serde::Serialize;
use std::collections::BTreeMap;

/// How preemptible the kernel is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Preemption {
    /// `PREEMPT_RT`, `PREEMPT_DYNAMIC`, `PREEMPT` or `NONE_OR_VOLUNTARY`
    /// (from the kernel version string).
    pub model: String,
    /// With PREEMPT_DYNAMIC: the active mode (`none`, `voluntary`, `full`,
    /// `lazy`).
    pub dynamic_mode: Option<String>,
    /// Where `dynamic_mode` was read: `debugfs` (the live value),
    /// `cmdline` (`preempt=`), or `config` (the kernel's built-in default,
    /// from /proc/config.gz, when debugfs is not mounted: live unless someone
    /// changed it through debugfs since boot).
    pub dynamic_mode_source: Option<String>,
    /// `/sys/kernel/realtime` reads 1.
    pub realtime: bool,
}

/// The PREEMPT_DYNAMIC boot default from kernel config text.
pub fn config_preempt_mode(config: &str) -> Option<&'static str> {
    [
        ("CONFIG_PREEMPT_NONE=y", "none"),
        ("CONFIG_PREEMPT_VOLUNTARY=y", "voluntary"),
        ("CONFIG_PREEMPT=y", "full"),
        ("CONFIG_PREEMPT_LAZY=y", "lazy"),
    ]
    .into_iter()
    .find(|(line, _)| config.lines().any(|l| l.trim() == *line))
    .map(|(_, mode)| mode)
}

/// The `CONFIG_PREEMPT*` lines of `/proc/config.gz`, when the kernel
/// offers it: decompressed a line at a time, the rest of the kernel's
/// configuration (a quarter of a megabyte) never held.
fn kernel_config(root: &SysRoot) -> Option<String> {
    use std::io::BufRead;
    let file = std::fs::File::open(root.path("proc/config.gz")).ok()?;
    let mut lines = std::io::BufReader::new(flate2::read::GzDecoder::new(file));
    let (mut line, mut kept) = (Vec::new(), String::new());
    loop {
        line.clear();
        match lines.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) if line.starts_with(b"CONFIG_PREEMPT") => {
                kept.push_str(&String::from_utf8_lossy(&line));
            }
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    Some(kept)
}

/// The PREEMPT_DYNAMIC mode and where it was found: debugfs, `preempt=`
/// on the command line, or the config default.
fn dynamic_mode(
    debugfs: Option<&str>,
    cmdline: &str,
    config: impl FnOnce() -> Option<String>,
) -> Option<(String, &'static str)> {
    if let Some(live) = debugfs.and_then(|t| {
        t.split_whitespace()
            .find(|w| w.starts_with('('))
            .map(|w| w.trim_matches(|c| c == '(' || c == ')').to_string())
    }) {
        return Some((live, "debugfs"));
    }
    if let Some(arg) = cmdline
        .split_whitespace()
        .find_map(|w| w.strip_prefix("preempt="))
    {
        return Some((arg.to_string(), "cmdline"));
    }
    config()
        .as_deref()
        .and_then(config_preempt_mode)
        .map(|m| (m.to_string(), "config"))
}

/// Derives the preemption model from `uname -v`, `/sys/kernel/realtime`,
/// and for PREEMPT_DYNAMIC the mode (debugfs `sched/preempt` text such as
/// `none voluntary (full) lazy`, else `preempt=`, else the config default).
pub fn preemption(
    version: &str,
    realtime: bool,
    preempt_file: Option<&str>,
    cmdline: &str,
    config: impl FnOnce() -> Option<String>,
) -> Preemption {
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
    let mode = if model == "PREEMPT_DYNAMIC" {
        dynamic_mode(preempt_file, cmdline, config)
    } else {
        None
    };
    Preemption {
        model: model.to_string(),
        dynamic_mode: mode.as_ref().map(|(m, _)| m.clone()),
        dynamic_mode_source: mode.map(|(_, s)| s.to_string()),
        realtime,
    }
}

/// The idle states of one CPU, in short.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CpuIdle {
    /// The CPU.
    pub cpu: usize,
    /// Its states: name, exit latency (µs), disabled.
    pub states: Vec<IdleStateBrief>,
}

/// One idle state, in short.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct IdleStateBrief {
    /// Name.
    pub name: String,
    /// Exit latency (µs).
    pub latency_us: u64,
    /// Disabled by user space.
    pub disabled: bool,
}

/// What the machine is, as a latency report must state it.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
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
    /// `smt/active`: SMT siblings are running.
    pub smt_active: Option<bool>,
    /// cpufreq governor per CPU; empty when the machine has no cpufreq.
    pub governors: BTreeMap<usize, String>,
    /// cpufreq policies (driver, governor, frequencies); empty without cpufreq.
    pub cpufreq: Vec<power::FreqPolicy>,
    /// cpuidle driver and governor.
    pub cpuidle: power::IdleDriver,
    /// Idle states per online CPU.
    pub cstates: Vec<CpuIdle>,
    /// A PM QoS limit in force on `/dev/cpu_dma_latency` is not readable from
    /// user space; per-CPU `power/pm_qos_resume_latency_us` is (0 = none).
    pub pm_qos_resume_latency_us: BTreeMap<usize, String>,
    /// Current clock source.
    pub clocksource: Option<String>,
    /// `sched_rt_runtime_us` (-1 = RT throttling off).
    pub sched_rt_runtime_us: Option<i64>,
    /// `sched_rt_period_us`.
    pub sched_rt_period_us: Option<i64>,
    /// The kernel features rtlab uses, each with what brings it when it is
    /// missing (absent in older results).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<crate::features::Feature>,
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
        let cmdline = root.read_opt("proc/cmdline").unwrap_or_default();
        let mut cstates: Vec<CpuIdle> = online
            .iter()
            .map(|&cpu| CpuIdle {
                cpu,
                states: Vec::new(),
            })
            .collect();
        for s in power::idle_states(root, &online) {
            if let Some(c) = cstates.iter_mut().find(|c| c.cpu == s.cpu) {
                c.states.push(IdleStateBrief {
                    name: s.name,
                    latency_us: s.latency_us,
                    disabled: s.disabled,
                });
            }
        }
        cstates.retain(|c| !c.states.is_empty());
        SystemSnapshot {
            hostname: root
                .read_opt("proc/sys/kernel/hostname")
                .unwrap_or_default(),
            kernel_release: root
                .read_opt("proc/sys/kernel/osrelease")
                .unwrap_or_default(),
            preemption: preemption(
                &version,
                realtime,
                preempt_file.as_deref(),
                &cmdline,
                || kernel_config(root),
            ),
            kernel_version: version,
            machine: std::env::consts::ARCH.to_string(),
            cmdline,
            cpus_online: rtlab_core::cpulist::format(&online),
            cpus_isolated: root
                .read_opt(&format!("{cpu}/isolated"))
                .unwrap_or_default(),
            cpus_nohz_full: root
                .read_opt(&format!("{cpu}/nohz_full"))
                .filter(|s| s != "(null)")
                .unwrap_or_default(),
            smt: root.read_opt(&format!("{cpu}/smt/control")),
            smt_active: root
                .read_opt(&format!("{cpu}/smt/active"))
                .map(|a| a == "1"),
            cpufreq: power::freq_policies(root),
            cpuidle: power::idle_driver(root),
            cstates,
            pm_qos_resume_latency_us: online
                .iter()
                .filter_map(|&c| {
                    root.read_opt(&format!("{cpu}/cpu{c}/power/pm_qos_resume_latency_us"))
                        .map(|v| (c, v))
                })
                .collect(),
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
            features: crate::features::detect(root),
        }
    }
}

impl SystemSnapshot {
    /// The snapshot as readable lines (`rtlab sysinfo`).
    pub fn render(&self) -> String {
        let or_none = |s: &str| {
            if s.is_empty() {
                "none".to_string()
            } else {
                s.to_string()
            }
        };
        let rows = [
            ("host", self.hostname.clone()),
            (
                "kernel",
                format!("{} {}", self.kernel_release, self.kernel_version),
            ),
            ("arch", self.machine.clone()),
            ("preemption", self.preemption_text()),
            ("cmdline", self.cmdline.clone()),
            ("cpus online", self.cpus_online.clone()),
            ("isolcpus", or_none(&self.cpus_isolated)),
            ("nohz_full", or_none(&self.cpus_nohz_full)),
            (
                "smt",
                match (&self.smt, self.smt_active) {
                    (Some(c), Some(a)) => format!("{c}, active {a}"),
                    (Some(c), None) => c.clone(),
                    _ => "not reported".into(),
                },
            ),
            (
                "cgroups",
                format!("{:?}", self.cgroup_version).to_lowercase(),
            ),
            ("cpufreq", self.governors_text()),
            (
                "cpuidle",
                format!(
                    "driver {}, governor {}",
                    self.cpuidle.driver.as_deref().unwrap_or("none"),
                    self.cpuidle.governor.as_deref().unwrap_or("none")
                ),
            ),
            ("c-states", self.cstates_text()),
            (
                "clocksource",
                self.clocksource.clone().unwrap_or_else(|| "unknown".into()),
            ),
            ("rt throttling", self.rt_throttling_text()),
        ];
        rows.iter().map(|(k, v)| format!("{k:<14} {v}\n")).collect()
    }

    /// The preemption model, its PREEMPT_DYNAMIC mode and where it was read.
    fn preemption_text(&self) -> String {
        let p = &self.preemption;
        let mode = match (&p.dynamic_mode, &p.dynamic_mode_source) {
            (Some(m), Some(src)) => format!(", mode {m} (from {src})"),
            _ if p.model == "PREEMPT_DYNAMIC" => {
                ", mode unknown (debugfs not mounted, no preempt= and no /proc/config.gz)".into()
            }
            _ => String::new(),
        };
        let realtime = if p.realtime {
            ", /sys/kernel/realtime = 1"
        } else {
            ""
        };
        format!("{}{mode}{realtime}", p.model)
    }

    /// Each cpufreq policy: CPUs, governor, driver, maximum.
    fn governors_text(&self) -> String {
        if self.cpufreq.is_empty() {
            return "no cpufreq (no policy in /sys/devices/system/cpu/cpufreq)".to_string();
        }
        self.cpufreq
            .iter()
            .map(|f| {
                format!(
                    "{} CPUs {} {} ({}, max {} MHz)",
                    f.policy,
                    rtlab_core::cpulist::format(&f.cpus),
                    f.governor,
                    f.driver.as_deref().unwrap_or("?"),
                    f.hw_max_khz.map_or("?".into(), |k| (k / 1000).to_string())
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// Each CPU's idle states with their exit latency.
    fn cstates_text(&self) -> String {
        let cpus: Vec<String> = self
            .cstates
            .iter()
            .map(|c| {
                let states: Vec<String> = c
                    .states
                    .iter()
                    .map(|s| {
                        let off = if s.disabled { ",off" } else { "" };
                        format!("{}({}us{off})", s.name, s.latency_us)
                    })
                    .collect();
                format!("cpu{} {}", c.cpu, states.join(" "))
            })
            .collect();
        if cpus.is_empty() {
            "none".into()
        } else {
            cpus.join("; ")
        }
    }

    /// RT throttling: off, or its runtime per period.
    fn rt_throttling_text(&self) -> String {
        match self.sched_rt_runtime_us {
            Some(-1) => "off (sched_rt_runtime_us = -1)".to_string(),
            Some(r) => format!(
                "{r} us per {} us",
                self.sched_rt_period_us
                    .map_or("?".into(), |p| p.to_string())
            ),
            None => "unknown".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preemption_models_from_version_strings() {
        let none = || None;
        let dynamic = "#1 SMP PREEMPT_DYNAMIC @0";
        let p = preemption(dynamic, false, Some("none voluntary (full) lazy"), "", none);
        assert_eq!(p.model, "PREEMPT_DYNAMIC");
        assert_eq!(p.dynamic_mode.as_deref(), Some("full"));
        assert_eq!(p.dynamic_mode_source.as_deref(), Some("debugfs"));
        let p = preemption(dynamic, false, None, "quiet preempt=voluntary", none);
        assert_eq!(
            (p.dynamic_mode.as_deref(), p.dynamic_mode_source.as_deref()),
            (Some("voluntary"), Some("cmdline"))
        );
        let config = || Some("# CONFIG_PREEMPT is not set\nCONFIG_PREEMPT_NONE=y\n".to_string());
        let p = preemption(dynamic, false, None, "quiet", config);
        assert_eq!(
            (p.dynamic_mode.as_deref(), p.dynamic_mode_source.as_deref()),
            (Some("none"), Some("config"))
        );
        assert_eq!(
            preemption(dynamic, false, None, "", none).dynamic_mode,
            None
        );
        assert_eq!(
            preemption("#1 SMP PREEMPT_RT Thu", false, None, "", none).model,
            "PREEMPT_RT"
        );
        assert_eq!(
            preemption("#1 SMP PREEMPT Thu", false, None, "", none).model,
            "PREEMPT"
        );
        assert_eq!(
            preemption("#1 SMP Thu", false, None, "", none).model,
            "NONE_OR_VOLUNTARY"
        );
        assert_eq!(
            preemption("#1 SMP", true, None, "", none).model,
            "PREEMPT_RT"
        );
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

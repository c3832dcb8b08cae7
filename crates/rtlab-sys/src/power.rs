//! CPU power management as the kernel exposes it: cpufreq policies
//! (`/sys/devices/system/cpu/cpufreq/policyN`) and cpuidle states
//! (`/sys/devices/system/cpu/cpuN/cpuidle/stateK`).

use super::SysRoot;
use serde::Serialize;

const CPU: &str = "sys/devices/system/cpu";

/// One cpufreq policy (a set of CPUs that change frequency together).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct FreqPolicy {
    /// `policyN`.
    pub policy: String,
    /// The CPUs it covers (`affected_cpus`, as a cpulist).
    pub cpus: Vec<usize>,
    /// `scaling_driver`.
    pub driver: Option<String>,
    /// `scaling_governor`.
    pub governor: String,
    /// `scaling_available_governors`.
    pub available_governors: Vec<String>,
    /// `scaling_cur_freq` (kHz).
    pub cur_khz: Option<u64>,
    /// `scaling_min_freq` (kHz).
    pub min_khz: Option<u64>,
    /// `scaling_max_freq` (kHz).
    pub max_khz: Option<u64>,
    /// `cpuinfo_max_freq` (kHz): the hardware's top speed.
    pub hw_max_khz: Option<u64>,
}

impl FreqPolicy {
    /// The directory of the policy, relative to the root.
    pub fn dir(&self) -> String {
        format!("{CPU}/cpufreq/{}", self.policy)
    }
}

fn number(root: &SysRoot, rel: &str) -> Option<u64> {
    root.read_opt(rel)?.parse().ok()
}

/// The cpufreq policies; empty when the machine has no cpufreq driver.
pub fn freq_policies(root: &SysRoot) -> Vec<FreqPolicy> {
    let mut names: Vec<String> = root
        .list(&format!("{CPU}/cpufreq"))
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n.starts_with("policy"))
        .collect();
    names.sort_by_key(|n| n["policy".len()..].parse::<usize>().unwrap_or(usize::MAX));
    names
        .into_iter()
        .filter_map(|policy| {
            let dir = format!("{CPU}/cpufreq/{policy}");
            let governor = root.read_opt(&format!("{dir}/scaling_governor"))?;
            let cpus = root
                .read_opt(&format!("{dir}/affected_cpus"))
                .map(|t| {
                    t.split_whitespace()
                        .filter_map(|c| c.parse().ok())
                        .collect()
                })
                .unwrap_or_default();
            Some(FreqPolicy {
                cpus,
                driver: root.read_opt(&format!("{dir}/scaling_driver")),
                governor,
                available_governors: root
                    .read_opt(&format!("{dir}/scaling_available_governors"))
                    .unwrap_or_default()
                    .split_whitespace()
                    .map(str::to_string)
                    .collect(),
                cur_khz: number(root, &format!("{dir}/scaling_cur_freq")),
                min_khz: number(root, &format!("{dir}/scaling_min_freq")),
                max_khz: number(root, &format!("{dir}/scaling_max_freq")),
                hw_max_khz: number(root, &format!("{dir}/cpuinfo_max_freq")),
                policy,
            })
        })
        .collect()
}

/// Why there is no cpufreq, in words, for a machine without policies.
pub fn no_cpufreq_reason(root: &SysRoot) -> String {
    if root.is_dir(&format!("{CPU}/cpufreq")) {
        format!(
            "{} has no policy: no cpufreq driver drives these CPUs (usual in virtual \
             machines, where the host sets the speed); it needs {}",
            root.path(&format!("{CPU}/cpufreq")).display(),
            crate::features::remedy::CPUFREQ
        )
    } else {
        format!(
            "{} does not exist: this kernel has no cpufreq support; it needs {}",
            root.path(&format!("{CPU}/cpufreq")).display(),
            crate::features::remedy::CPUFREQ
        )
    }
}

/// One cpuidle state of one CPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IdleState {
    /// The CPU.
    pub cpu: usize,
    /// K in `stateK`.
    pub index: usize,
    /// `name` (`POLL`, `C1`, `haltpoll`).
    pub name: String,
    /// `desc`.
    pub desc: String,
    /// Exit latency (µs).
    pub latency_us: u64,
    /// Target residency (µs).
    pub residency_us: u64,
    /// Times entered.
    pub usage: u64,
    /// Time spent in it (µs).
    pub time_us: u64,
    /// Disabled by user space (`disable` = 1).
    pub disabled: bool,
}

impl IdleState {
    /// Its `disable` file, relative to the root.
    pub fn disable_file(&self) -> String {
        format!("{CPU}/cpu{}/cpuidle/state{}/disable", self.cpu, self.index)
    }
}

/// The cpuidle driver and governor (`current_driver`, `current_governor`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default, serde::Deserialize)]
pub struct IdleDriver {
    /// `current_driver` (`intel_idle`, `acpi_idle`, `haltpoll`, `none`).
    pub driver: Option<String>,
    /// `current_governor` (`menu`, `teo`, `ladder`, `haltpoll`).
    pub governor: Option<String>,
}

/// The cpuidle driver and governor.
pub fn idle_driver(root: &SysRoot) -> IdleDriver {
    IdleDriver {
        driver: root.read_opt(&format!("{CPU}/cpuidle/current_driver")),
        governor: root
            .read_opt(&format!("{CPU}/cpuidle/current_governor"))
            .or_else(|| root.read_opt(&format!("{CPU}/cpuidle/current_governor_ro"))),
    }
}

/// The idle states of `cpus`, by CPU then depth.
pub fn idle_states(root: &SysRoot, cpus: &[usize]) -> Vec<IdleState> {
    let mut out = Vec::new();
    for &cpu in cpus {
        let dir = format!("{CPU}/cpu{cpu}/cpuidle");
        let mut indexes: Vec<usize> = root
            .list(&dir)
            .unwrap_or_default()
            .iter()
            .filter_map(|n| n.strip_prefix("state")?.parse().ok())
            .collect();
        indexes.sort_unstable();
        for index in indexes {
            let s = format!("{dir}/state{index}");
            let Some(name) = root.read_opt(&format!("{s}/name")) else {
                continue;
            };
            out.push(IdleState {
                cpu,
                index,
                name,
                desc: root.read_opt(&format!("{s}/desc")).unwrap_or_default(),
                latency_us: number(root, &format!("{s}/latency")).unwrap_or(0),
                residency_us: number(root, &format!("{s}/residency")).unwrap_or(0),
                usage: number(root, &format!("{s}/usage")).unwrap_or(0),
                time_us: number(root, &format!("{s}/time")).unwrap_or(0),
                disabled: root.read_opt(&format!("{s}/disable")).as_deref() == Some("1"),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::power_machine;

    #[test]
    fn reads_policies_and_idle_states() {
        let dir = tempfile::tempdir().unwrap();
        power_machine(dir.path());
        let root = SysRoot::at(dir.path());
        let p = freq_policies(&root);
        assert_eq!(p.len(), 2);
        assert_eq!(p[1].cpus, vec![2, 3]);
        assert_eq!(p[0].available_governors.len(), 3);
        assert_eq!(p[0].max_khz, Some(3_000_000));
        let s = idle_states(&root, &[1, 3]);
        assert_eq!(s.len(), 6);
        assert_eq!(
            (s[5].cpu, s[5].name.as_str(), s[5].latency_us),
            (3, "C6", 133)
        );
        assert_eq!(idle_driver(&root).governor.as_deref(), Some("menu"));
    }

    #[test]
    fn a_machine_without_cpufreq_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::at(dir.path());
        assert!(freq_policies(&root).is_empty());
        assert!(no_cpufreq_reason(&root).contains("no cpufreq support"));
        std::fs::create_dir_all(dir.path().join(CPU).join("cpufreq")).unwrap();
        assert!(no_cpufreq_reason(&root).contains("no policy"));
    }
}

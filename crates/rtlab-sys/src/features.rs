//! The kernel features rtlab uses, each detected on the machine behind a
//! root, and for each one missing, the one thing that brings it: a kernel
//! option, a boot parameter or a mount. Kernels from 4.19 on differ here
//! (tracefs under debugfs, cgroup v1, v2 or both, partitions with or
//! without `isolated`, tracepoints renamed, drivers or none), and so do the
//! machines they run on (a VM has no cpufreq; many ARM IRQ chips do not say
//! where they deliver). `rtlab sysinfo` lists them; the messages of the
//! commands that need one say the same remedy.

use crate::{SysRoot, cgroup, paths, trace};
use serde::{Deserialize, Serialize};

/// Whether the machine has a feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// There, as rtlab wants it.
    Present,
    /// There in an older or narrower form that rtlab uses instead.
    Partial,
    /// Not there: what rtlab does without it is said in `detail`.
    Missing,
}

/// One feature, as found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feature {
    /// Short name (`tracefs`, `cpufreq`...).
    pub name: String,
    /// Whether it is there.
    pub state: State,
    /// What was found, or what rtlab does without it.
    pub detail: String,
    /// What brings it (kernel option, boot parameter, mount); empty when
    /// present.
    pub remedy: String,
}

/// The remedy for each feature rtlab may miss: the one place these texts
/// live, so that every message naming a remedy says the same.
pub mod remedy {
    /// tracefs.
    pub const TRACEFS: &str = "CONFIG_FTRACE=y (tracefs: Linux 4.1 and later), mounted at \
                               /sys/kernel/tracing (rtlab mounts it for a run if it can)";
    /// The scheduling and IRQ tracepoints.
    pub const TRACEPOINTS: &str = "CONFIG_TRACEPOINTS=y with CONFIG_FTRACE=y \
                                   (sched_waking: Linux 4.3 and later)";
    /// The IPI tracepoints under their newer names.
    pub const IPI_EVENTS: &str = "Linux 6.6 and later (ipi_send_cpu, ipi_send_cpumask)";
    /// The timerlat and osnoise tracers.
    pub const TIMERLAT: &str =
        "CONFIG_TIMERLAT_TRACER=y and CONFIG_OSNOISE_TRACER=y (Linux 5.14 and later)";
    /// Cpusets.
    pub const CPUSET: &str = "CONFIG_CPUSETS=y, and the cpuset controller mounted \
                              (a v1 hierarchy, or v2 when no v1 hierarchy holds it)";
    /// Isolated cpuset partitions.
    pub const ISOLATED_PARTITION: &str = "cgroup v2 with the cpuset controller \
        (systemd.unified_cgroup_hierarchy=1, or cgroup_no_v1=cpuset) on Linux 6.2 and later \
        (root partitions: 5.11 and later)";
    /// CPU bandwidth control.
    pub const CFS_BANDWIDTH: &str = "CONFIG_CFS_BANDWIDTH=y and the cpu controller mounted";
    /// cpuidle.
    pub const CPUIDLE: &str = "CONFIG_CPU_IDLE=y and a driver: intel_idle, acpi_idle, \
                               psci_idle (ARM), or cpuidle-haltpoll in a KVM guest \
                               (CONFIG_HALTPOLL_CPUIDLE=y)";
    /// cpufreq.
    pub const CPUFREQ: &str = "CONFIG_CPU_FREQ=y and a driver for the hardware \
                               (intel_pstate, amd-pstate, acpi-cpufreq, cppc, cpufreq-dt); \
                               most virtual machines have none";
    /// PREEMPT_RT.
    pub const PREEMPT_RT: &str =
        "CONFIG_PREEMPT_RT=y (mainline from Linux 6.12; before, the -rt patch set)";
    /// isolcpus and nohz_full.
    pub const ISOLCPUS: &str = "boot parameters isolcpus=domain,managed_irq,CPUS and \
                                nohz_full=CPUS (CONFIG_NO_HZ_FULL=y), or an rtlab partition";
    /// Where an IRQ is really delivered.
    pub const EFFECTIVE_AFFINITY: &str = "an IRQ chip that reports it \
        (CONFIG_GENERIC_IRQ_EFFECTIVE_AFF_MASK: x86 and GICv3 do, many ARM chips do not)";
    /// The PM QoS device.
    pub const PM_QOS: &str = "CONFIG_PM=y (the /dev/cpu_dma_latency device)";
    /// In a container whose `/dev` lacks it.
    pub const PM_QOS_CONTAINER: &str =
        "the host's device passed in: podman or docker `--device /dev/cpu_dma_latency`";
}

fn feature(name: &str, state: State, detail: impl Into<String>, remedy: &str) -> Feature {
    Feature {
        name: name.into(),
        state,
        detail: detail.into(),
        remedy: if state == State::Present {
            String::new()
        } else {
            remedy.into()
        },
    }
}

/// Every feature rtlab uses, as the machine behind `root` has it.
pub fn detect(root: &SysRoot) -> Vec<Feature> {
    let mounts = cgroup::mounts(root);
    let tracefs = trace::mounted(root);
    let mut found = vec![tracefs_feature(root, tracefs.as_deref())];
    if let Some(at) = &tracefs {
        found.extend(tracing_features(root, at));
    }
    found.extend(cgroup_features(root, &mounts));
    found.extend(power_features(root));
    found.extend(isolation_features(root));
    found
}

fn tracefs_feature(root: &SysRoot, mounted: Option<&str>) -> Feature {
    match mounted {
        Some(at) if at.starts_with("sys/kernel/debug") => feature(
            "tracefs",
            State::Partial,
            format!("under debugfs (/{at}), the older place: used there"),
            "mount -t tracefs nodev /sys/kernel/tracing",
        ),
        Some(at) => feature("tracefs", State::Present, format!("/{at}"), ""),
        None if root.exists(paths::TRACEFS) => feature(
            "tracefs",
            State::Partial,
            "not mounted: a run mounts it at /sys/kernel/tracing and unmounts it at the end",
            "mount -t tracefs nodev /sys/kernel/tracing",
        ),
        None => feature(
            "tracefs",
            State::Missing,
            "no trace: runs keep their worst wake-ups but explain none",
            remedy::TRACEFS,
        ),
    }
}

/// The tracepoints and tracers, where tracefs is mounted at `at`.
fn tracing_features(root: &SysRoot, at: &str) -> Vec<Feature> {
    let has = |event: &str| root.exists(&format!("{at}/events/{event}"));
    let core = [
        "sched/sched_switch",
        "sched/sched_waking",
        "irq/irq_handler_entry",
        "irq/softirq_entry",
        "timer/hrtimer_expire_entry",
    ];
    let missing: Vec<&str> = core.into_iter().filter(|e| !has(e)).collect();
    let events = if missing.is_empty() {
        feature("tracepoints", State::Present, "sched, irq, timer", "")
    } else {
        feature(
            "tracepoints",
            State::Missing,
            format!("lacks {}: spikes are explained in part", missing.join(", ")),
            remedy::TRACEPOINTS,
        )
    };
    let ipi = if has("ipi/ipi_send_cpu") {
        feature("IPI tracepoints", State::Present, "ipi_send_cpu", "")
    } else if has("ipi/ipi_raise") {
        feature(
            "IPI tracepoints",
            State::Partial,
            "ipi_raise (the name before Linux 6.6, ARM): IPIs counted by their entry",
            remedy::IPI_EVENTS,
        )
    } else {
        feature(
            "IPI tracepoints",
            State::Missing,
            "none: an IPI's sender is not named (x86's vector events still count them)",
            remedy::IPI_EVENTS,
        )
    };
    let tracers = root
        .read_opt(&format!("{at}/available_tracers"))
        .unwrap_or_default();
    let timerlat = if tracers.split_whitespace().any(|t| t == "timerlat") {
        feature(
            "timerlat tracer",
            State::Present,
            "for rtla beside rtlab",
            "",
        )
    } else {
        feature(
            "timerlat tracer",
            State::Missing,
            "rtla timerlat cannot run here; rtlab needs only tracepoints",
            remedy::TIMERLAT,
        )
    };
    vec![events, ipi, timerlat]
}

/// Cpusets, isolated partitions and CPU bandwidth.
fn cgroup_features(root: &SysRoot, mounts: &[cgroup::Mount]) -> Vec<Feature> {
    let v1 = |c: &str| {
        mounts
            .iter()
            .find(|m| !m.v2 && m.options.iter().any(|o| o == c))
    };
    let v2 = mounts.iter().find(|m| m.v2);
    let v2_has = |c: &str| {
        v2.and_then(|m| {
            root.read_opt(&format!(
                "{}/cgroup.controllers",
                m.path.trim_start_matches('/')
            ))
        })
        .is_some_and(|t| t.split_whitespace().any(|x| x == c))
    };
    let release = root
        .read_opt("proc/sys/kernel/osrelease")
        .unwrap_or_default();
    let version = kernel_version(&release);
    let (cpuset, partition) = if v2_has("cpuset") {
        let partition = match version {
            Some(v) if v >= (6, 2) => feature(
                "isolated partitions",
                State::Present,
                "cpuset.cpus.partition = isolated",
                "",
            ),
            Some(v) if v >= (5, 11) => feature(
                "isolated partitions",
                State::Partial,
                "root partitions only (no `isolated` before Linux 6.2): load balancing stays on",
                remedy::ISOLATED_PARTITION,
            ),
            _ => feature(
                "isolated partitions",
                State::Missing,
                format!("kernel {release}: a partition is a plain cpuset"),
                remedy::ISOLATED_PARTITION,
            ),
        };
        (
            feature("cpuset", State::Present, "cgroup v2", ""),
            partition,
        )
    } else if let Some(m) = v1("cpuset") {
        (
            feature(
                "cpuset",
                State::Present,
                format!("cgroup v1 at {}", m.path),
                "",
            ),
            feature(
                "isolated partitions",
                State::Partial,
                "v1: an exclusive cpuset with sched_load_balance = 0 instead",
                remedy::ISOLATED_PARTITION,
            ),
        )
    } else {
        let no = "no cpuset mounted: `partition` and `cpuset` keys are refused";
        (
            feature("cpuset", State::Missing, no, remedy::CPUSET),
            feature("isolated partitions", State::Missing, no, remedy::CPUSET),
        )
    };
    let bandwidth = if v2_has("cpu") {
        feature("CPU bandwidth", State::Present, "v2 cpu.max", "")
    } else if let Some(m) = v1("cpu").filter(|m| {
        root.exists(&format!(
            "{}/cpu.cfs_quota_us",
            m.path.trim_start_matches('/')
        ))
    }) {
        let at = format!("v1 cpu.cfs_quota_us at {}", m.path);
        feature("CPU bandwidth", State::Present, at, "")
    } else {
        let no = "`cpu.*` keys of programs are refused";
        feature("CPU bandwidth", State::Missing, no, remedy::CFS_BANDWIDTH)
    };
    vec![cpuset, partition, bandwidth]
}

/// `uname -r`'s major and minor.
fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// cpuidle, cpufreq, PM QoS.
fn power_features(root: &SysRoot) -> Vec<Feature> {
    let driver = root.read_opt("sys/devices/system/cpu/cpuidle/current_driver");
    let cpuidle = match driver.as_deref() {
        Some(d) if d != "none" && !d.is_empty() => {
            feature("cpuidle", State::Present, format!("driver {d}"), "")
        }
        _ => feature(
            "cpuidle",
            State::Missing,
            "no driver: idle is the architecture's default, no C-state to limit",
            remedy::CPUIDLE,
        ),
    };
    let policies = crate::power::freq_policies(root);
    let cpufreq = match policies.first() {
        Some(p) => {
            let driver = p.driver.clone().unwrap_or_else(|| "?".into());
            let what = format!("{} policies, driver {driver}", policies.len());
            feature("cpufreq", State::Present, what, "")
        }
        None => feature(
            "cpufreq",
            State::Missing,
            "the clock is the hardware's own: no governor to set",
            remedy::CPUFREQ,
        ),
    };
    let pm_qos = if root.exists(paths::DMA_LATENCY) {
        let at = format!("/{}", paths::DMA_LATENCY);
        feature("PM QoS", State::Present, at, "")
    } else if super::private_dev(root) {
        let no = "no wake-up latency request can be held: not in this container's /dev";
        feature("PM QoS", State::Missing, no, remedy::PM_QOS_CONTAINER)
    } else {
        let no = "no wake-up latency request can be held";
        feature("PM QoS", State::Missing, no, remedy::PM_QOS)
    };
    vec![cpuidle, cpufreq, pm_qos]
}

/// PREEMPT_RT, isolcpus/nohz_full, IRQ effective affinity.
fn isolation_features(root: &SysRoot) -> Vec<Feature> {
    let rt = if root.read_opt("sys/kernel/realtime").as_deref() == Some("1") {
        feature(
            "PREEMPT_RT",
            State::Present,
            "the kernel says realtime = 1",
            "",
        )
    } else {
        let no = "not a real-time kernel: long non-preemptible sections stay";
        feature("PREEMPT_RT", State::Missing, no, remedy::PREEMPT_RT)
    };
    let isolated = root
        .read_opt("sys/devices/system/cpu/isolated")
        .unwrap_or_default();
    let isolcpus = if isolated.is_empty() {
        let no = "no CPU isolated at boot";
        feature("isolcpus", State::Missing, no, remedy::ISOLCPUS)
    } else {
        feature("isolcpus", State::Present, format!("CPUs {isolated}"), "")
    };
    let reported = crate::irq::numbers(root)
        .iter()
        .any(|n| root.exists(&crate::paths::irq_effective_affinity_list(*n)));
    let effective = if reported {
        feature("IRQ effective affinity", State::Present, "reported", "")
    } else {
        let no = "not reported: where an IRQ goes is taken from smp_affinity";
        feature(
            "IRQ effective affinity",
            State::Missing,
            no,
            remedy::EFFECTIVE_AFFINITY,
        )
    };
    vec![rt, isolcpus, effective]
}

/// The features as lines for `rtlab sysinfo`: each missing or partial one
/// with what brings it.
pub fn render(features: &[Feature]) -> String {
    let width = features.iter().map(|f| f.name.len()).max().unwrap_or(0);
    let mut out = String::from("kernel features:\n");
    for f in features {
        let mark = match f.state {
            State::Present => "yes",
            State::Partial => "part",
            State::Missing => "no",
        };
        out.push_str(&format!("  {:<width$}  {mark:<4}  {}\n", f.name, f.detail));
        if !f.remedy.is_empty() {
            out.push_str(&format!(
                "  {:<width$}        brought by: {}\n",
                "", f.remedy
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::write_tree;

    fn states(features: &[Feature]) -> Vec<(String, State)> {
        features.iter().map(|f| (f.name.clone(), f.state)).collect()
    }

    fn state(features: &[Feature], name: &str) -> State {
        features
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("{name} not in {features:?}"))
            .state
    }

    const EVENTS: [&str; 5] = [
        "sched/sched_switch",
        "sched/sched_waking",
        "irq/irq_handler_entry",
        "irq/softirq_entry",
        "timer/hrtimer_expire_entry",
    ];

    fn events(tree: &std::path::Path, at: &str, extra: &[&str]) {
        for e in EVENTS.iter().chain(extra) {
            write_tree(tree, &[(&format!("{at}/events/{e}/enable"), "0\n")]);
        }
    }

    /// A Raspberry Pi 3 on 4.19 (the article's board): cgroup v1 only,
    /// tracefs under debugfs, ARM's `ipi_raise`, a cpufreq-dt driver, no
    /// cpuidle driver, an IRQ chip that does not report where it delivers.
    #[test]
    fn a_4_19_board_with_cgroup_v1_and_tracefs_under_debugfs() {
        let tree = tempfile::tempdir().unwrap();
        let t = tree.path();
        let dbg = "sys/kernel/debug/tracing";
        write_tree(
            t,
            &[
                (
                    "proc/self/mounts",
                    "debugfs /sys/kernel/debug debugfs rw 0 0\n\
                     tracefs /sys/kernel/debug/tracing tracefs rw 0 0\n\
                     cgroup /sys/fs/cgroup/cpuset cgroup rw,nosuid,cpuset 0 0\n\
                     cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n",
                ),
                ("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n"),
                (
                    "sys/kernel/debug/tracing/available_tracers",
                    "function nop\n",
                ),
                ("proc/sys/kernel/osrelease", "4.19.66-v7+\n"),
                (
                    "sys/devices/system/cpu/cpufreq/policy0/scaling_governor",
                    "ondemand\n",
                ),
                (
                    "sys/devices/system/cpu/cpufreq/policy0/scaling_driver",
                    "cpufreq-dt\n",
                ),
                (
                    "sys/devices/system/cpu/cpufreq/policy0/affected_cpus",
                    "0 1 2 3\n",
                ),
                ("sys/devices/system/cpu/cpuidle/current_driver", "none\n"),
                ("sys/devices/system/cpu/isolated", "\n"),
                ("proc/irq/17/smp_affinity_list", "0-3\n"),
                ("dev/cpu_dma_latency", ""),
            ],
        );
        events(t, dbg, &["ipi/ipi_raise"]);
        let f = detect(&SysRoot::at(t));
        use State::*;
        let want = [
            ("tracefs", Partial),
            ("tracepoints", Present),
            ("IPI tracepoints", Partial),
            ("timerlat tracer", Missing),
            ("cpuset", Present),
            ("isolated partitions", Partial),
            ("CPU bandwidth", Present),
            ("cpuidle", Missing),
            ("cpufreq", Present),
            ("PM QoS", Present),
            ("PREEMPT_RT", Missing),
            ("isolcpus", Missing),
            ("IRQ effective affinity", Missing),
        ];
        let want: Vec<(String, State)> = want.iter().map(|(n, s)| (n.to_string(), *s)).collect();
        assert_eq!(states(&f), want);
        // Each feature short of present names what brings it, and the text
        // says it.
        let text = render(&f);
        for m in f.iter().filter(|m| m.state != Present) {
            assert!(!m.remedy.is_empty(), "{m:?}");
            assert!(text.contains(&m.remedy), "{text}");
        }
        assert!(text.contains("CONFIG_CPU_IDLE=y"), "{text}");
        assert!(
            text.contains("CONFIG_GENERIC_IRQ_EFFECTIVE_AFF_MASK"),
            "{text}"
        );
    }

    /// An x86 server on 5.15 with the -rt patch, hybrid cgroups (cpuset in
    /// v1, an empty v2 mount), no IPI tracepoints yet, isolcpus at boot.
    #[test]
    fn a_5_15_rt_server_with_hybrid_cgroups() {
        let tree = tempfile::tempdir().unwrap();
        let t = tree.path();
        write_tree(
            t,
            &[
                (
                    "proc/self/mounts",
                    "tracefs /sys/kernel/tracing tracefs rw 0 0\n\
                     cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n\
                     cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\n\
                     cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n",
                ),
                ("sys/fs/cgroup/unified/cgroup.controllers", "\n"),
                ("sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n"),
                (
                    "sys/kernel/tracing/available_tracers",
                    "timerlat osnoise nop\n",
                ),
                ("proc/sys/kernel/osrelease", "5.15.0-1032-realtime\n"),
                ("sys/kernel/realtime", "1\n"),
                (
                    "sys/devices/system/cpu/cpuidle/current_driver",
                    "intel_idle\n",
                ),
                (
                    "sys/devices/system/cpu/cpufreq/policy0/scaling_governor",
                    "performance\n",
                ),
                (
                    "sys/devices/system/cpu/cpufreq/policy0/scaling_driver",
                    "intel_pstate\n",
                ),
                ("sys/devices/system/cpu/isolated", "2-3\n"),
                ("proc/irq/24/effective_affinity_list", "0\n"),
                ("dev/cpu_dma_latency", ""),
            ],
        );
        events(t, "sys/kernel/tracing", &[]);
        let f = detect(&SysRoot::at(t));
        use State::*;
        for (name, want) in [
            ("tracefs", Present),
            ("IPI tracepoints", Missing),
            ("timerlat tracer", Present),
            ("cpuset", Present),
            ("isolated partitions", Partial),
            ("CPU bandwidth", Present),
            ("cpuidle", Present),
            ("PREEMPT_RT", Present),
            ("isolcpus", Present),
            ("IRQ effective affinity", Present),
        ] {
            assert_eq!(state(&f, name), want, "{name}: {f:?}");
        }
        let cpuset = f.iter().find(|x| x.name == "cpuset").unwrap();
        assert_eq!(cpuset.detail, "cgroup v1 at /sys/fs/cgroup/cpuset");
    }

    /// cgroup v2 alone, tracefs not mounted, no cpufreq or cpuidle (a VM):
    /// isolated partitions from 6.2, root ones from 5.11, none before.
    #[test]
    fn v2_only_kernels_of_three_generations() {
        use State::*;
        for (release, partitions) in [
            ("6.12.3", Present),
            ("5.15.0", Partial),
            ("5.10.0", Missing),
        ] {
            let tree = tempfile::tempdir().unwrap();
            let t = tree.path();
            write_tree(
                t,
                &[
                    (
                        "proc/self/mounts",
                        "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n",
                    ),
                    (
                        "sys/fs/cgroup/cgroup.controllers",
                        "cpuset cpu io memory pids\n",
                    ),
                    ("sys/kernel/tracing/.keep", ""),
                    ("proc/sys/kernel/osrelease", release),
                ],
            );
            let f = detect(&SysRoot::at(t));
            assert_eq!(state(&f, "isolated partitions"), partitions, "{release}");
            assert_eq!(state(&f, "tracefs"), Partial, "{f:?}");
            assert!(!f.iter().any(|x| x.name == "tracepoints"), "{f:?}");
            assert_eq!(state(&f, "cpuset"), Present);
            assert_eq!(state(&f, "CPU bandwidth"), Present);
            assert_eq!(state(&f, "cpuidle"), Missing);
            assert_eq!(state(&f, "cpufreq"), Missing);
            assert_eq!(state(&f, "PM QoS"), Missing);
        }
    }

    /// No cgroup and no tracefs at all: each refusal names its option.
    #[test]
    fn a_kernel_without_cgroups_or_tracing_names_the_options() {
        let tree = tempfile::tempdir().unwrap();
        write_tree(
            tree.path(),
            &[("proc/self/mounts", "proc /proc proc rw 0 0\n")],
        );
        let f = detect(&SysRoot::at(tree.path()));
        let remedy = |name: &str| f.iter().find(|x| x.name == name).unwrap().remedy.clone();
        assert_eq!(remedy("tracefs"), remedy::TRACEFS);
        assert_eq!(remedy("cpuset"), remedy::CPUSET);
        assert_eq!(remedy("CPU bandwidth"), remedy::CFS_BANDWIDTH);
        assert_eq!(kernel_version("6.18.44-fc-v595"), Some((6, 18)));
        assert_eq!(kernel_version("4.19.66-v7+"), Some((4, 19)));
        assert_eq!(kernel_version("junk"), None);
    }
}

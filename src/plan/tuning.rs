//! Planning of the system settings a run holds (`main`'s `cpufreq.*`,
//! `cstates.*`, `irq.affinity`, `threads.sched`, `threads.affinity`,
//! `net.steering`) and of the programs' CPU bandwidth groups: each checked
//! against this machine, with its position.

use super::Planner;
use crate::config::{Diagnostic, Experiment, Pos, Spanned, TuningConfig};
use crate::tune::TuningSpec;
use crate::tune::bandwidth::{self, Bandwidth, GroupSpec};

impl Planner<'_> {
    fn refuse(&mut self, pos: Pos, message: String, hint: impl Into<String>) {
        self.diags
            .push(Diagnostic::new(pos, message).with_hint(Some(hint.into())));
    }

    /// A key that needs another one.
    fn needs<T, U>(&mut self, key: &Option<Spanned<T>>, name: &str, other: &Option<U>, hint: &str) {
        if let (Some(k), None) = (key, other) {
            self.refuse(k.pos, format!("`{name}` alone changes nothing"), hint);
        }
    }

    /// Checks the tuning keys of `main` against the machine.
    pub(super) fn tuning(&mut self, t: &TuningConfig) -> TuningSpec {
        self.tuning_needs_root(t);
        self.needs(
            &t.governor_cpus,
            "cpufreq.cpus",
            &t.governor,
            "add `cpufreq.governor NAME`",
        );
        self.needs(
            &t.cstate_cpus,
            "cstates.cpus",
            &t.cstate_max_latency_us,
            "add `cstates.max_latency DURATION`",
        );
        TuningSpec {
            governor: self.governor(t),
            cstate_max_latency_us: self.cstates(t),
            irq_affinity: self.irq_affinity(t),
            thread_sched: self.thread_patterns(t),
            thread_affinity: self.thread_affinity(t),
            net_steering: self.net_steering(t),
        }
    }

    /// Tuning keys need root: the first one is refused otherwise.
    fn tuning_needs_root(&mut self, t: &TuningConfig) {
        if !self.machine.privileges().root {
            let first = t
                .governor
                .as_ref()
                .map(|g| g.pos)
                .or(t.cstate_max_latency_us.as_ref().map(|c| c.pos))
                .or(t.irq_affinity.first().map(|i| i.pos))
                .or(t.thread_sched.first().map(|s| s.pos))
                .or(t.thread_affinity.first().map(|s| s.pos))
                .or(t.net_steering.first().map(|s| s.pos));
            if let Some(pos) = first {
                self.refuse(
                    pos,
                    "changing governors, C-states, IRQs, thread priorities or CPUs, or packet steering needs root".into(),
                    "run with sudo, or leave the key out",
                );
            }
        }
    }

    /// `cpufreq.governor`: offered by every policy it covers.
    fn governor(&mut self, t: &TuningConfig) -> Option<(String, Option<Vec<usize>>)> {
        let g = t.governor.as_ref()?;
        let cpus = self.cpus(&t.governor_cpus);
        match self.machine.freq_policies() {
            Err(reason) => self.refuse(
                g.pos,
                "this machine has no cpufreq: the governor cannot be set".into(),
                format!("{reason}; leave `cpufreq.governor` out"),
            ),
            Ok(policies) => {
                let covered = policies.iter().filter(|p| {
                    cpus.as_ref()
                        .is_none_or(|c| p.cpus.iter().any(|x| c.contains(x)))
                });
                if let Some(p) = covered
                    .clone()
                    .find(|p| !p.available_governors.contains(&g.value))
                {
                    self.refuse(
                        g.pos,
                        format!("governor `{}` is not available on {}", g.value, p.policy),
                        format!("available: {}", p.available_governors.join(", ")),
                    );
                }
            }
        }
        Some((g.value.clone(), cpus))
    }

    /// `cstates.max_latency`: the CPUs must have cpuidle states.
    fn cstates(&mut self, t: &TuningConfig) -> Option<(u64, Option<Vec<usize>>)> {
        let c = t.cstate_max_latency_us.as_ref()?;
        let cpus = self.cpus(&t.cstate_cpus);
        let on = cpus.clone().unwrap_or_else(|| self.online.clone());
        if self.machine.idle_states(&on).is_empty() {
            self.refuse(
                c.pos,
                format!("no cpuidle states on CPUs {}", crate::cpulist::format(&on)),
                format!(
                    "this kernel has no cpuidle driver here; `pm_qos.cpu_dma_latency` limits idle for the run instead (a driver needs {})",
                    crate::sys::features::remedy::CPUIDLE
                ),
            );
        }
        Some((c.value, cpus))
    }

    /// `irq.affinity`: every IRQ named must exist.
    fn irq_affinity(&mut self, t: &TuningConfig) -> Vec<(Vec<usize>, Vec<u32>)> {
        let mut plan = Vec::new();
        let present: Vec<u32> = self.machine.irqs().into_iter().map(|i| i.0).collect();
        for entry in &t.irq_affinity {
            let (cpus, irqs) = &entry.value;
            self.cpus(&Some(Spanned {
                value: cpus.clone(),
                pos: entry.pos,
            }));
            let mut missing: Vec<u32> = irqs
                .iter()
                .filter(|n| !present.contains(n))
                .copied()
                .collect();
            missing.sort_unstable();
            missing.dedup();
            if !missing.is_empty() {
                let shown: Vec<String> = missing.iter().take(10).map(u32::to_string).collect();
                let more = match missing.len() {
                    n if n > 10 => format!(" and {} more", n - 10),
                    _ => String::new(),
                };
                self.refuse(
                    entry.pos,
                    format!("no IRQ {}{more} on this machine", shown.join(", ")),
                    "`rtlab irq` lists the IRQs",
                );
            }
            plan.push(entry.value.clone());
        }
        plan
    }

    /// `threads.sched`: every pattern must match a thread now.
    fn thread_patterns(&mut self, t: &TuningConfig) -> Vec<(String, crate::sched::Sched)> {
        let mut plan = Vec::new();
        let names = self.machine.thread_names();
        for entry in &t.thread_sched {
            let (pattern, _) = &entry.value;
            if !names
                .iter()
                .any(|n| crate::sys::threads::name_matches(pattern, n))
            {
                self.refuse(
                    entry.pos,
                    format!("no thread name matches `{pattern}`"),
                    "patterns are globs on the whole name (`ksoftirqd/*`, `irq/*-eth0*`); `rtlab threads --match PATTERN` shows what one selects",
                );
            }
            plan.push(entry.value.clone());
        }
        plan
    }

    /// `threads.affinity`: online CPUs, and a pattern (or TID) that selects
    /// a thread now, rtlab's own aside (they are never moved).
    fn thread_affinity(&mut self, t: &TuningConfig) -> Vec<(String, Vec<usize>)> {
        use crate::tune::ThreadSelector;
        let mut plan = Vec::new();
        if t.thread_affinity.is_empty() {
            return plan;
        }
        let threads = self.machine.other_threads();
        for entry in &t.thread_affinity {
            let (selector, cpus) = &entry.value;
            self.cpus(&Some(cpus.clone()));
            let chosen = ThreadSelector::parse(selector);
            let found = threads.iter().any(|(tid, name)| match &chosen {
                ThreadSelector::Tid(t) => tid == t,
                ThreadSelector::Pattern(p) => crate::sys::threads::name_matches(p, name),
            });
            if !found {
                let (message, hint) = match &chosen {
                    ThreadSelector::Tid(t) => (
                        format!("no thread {t}"),
                        "`rtlab threads` lists the threads; rtlab never moves its own",
                    ),
                    ThreadSelector::Pattern(p) => (
                        format!("no thread name matches `{p}`"),
                        "patterns are globs on the whole name (`ksoftirqd/*`, `irq/*-eth0*`); `rtlab threads --match PATTERN` shows what one selects; rtlab never moves its own threads",
                    ),
                };
                self.refuse(entry.pos, message, hint);
            }
            plan.push((selector.clone(), cpus.value.clone()));
        }
        plan
    }

    /// `net.steering`: an interface of this machine, and online CPUs.
    fn net_steering(&mut self, t: &TuningConfig) -> Vec<(String, Vec<usize>)> {
        let mut plan = Vec::new();
        if t.net_steering.is_empty() {
            return plan;
        }
        let devs = self.machine.net_interfaces();
        for entry in &t.net_steering {
            let (dev, cpus) = &entry.value;
            self.cpus(&Some(cpus.clone()));
            if !devs.contains(dev) {
                let shown: Vec<&str> = devs.iter().take(20).map(String::as_str).collect();
                self.refuse(
                    entry.pos,
                    format!("no network interface `{dev}` on this machine"),
                    match shown.len() {
                        0 => "this machine has no network interface".to_string(),
                        _ => format!("its interfaces are {}", shown.join(", ")),
                    },
                );
            }
            plan.push((dev.clone(), cpus.value.clone()));
        }
        plan
    }

    /// Resolves each program's CPU bandwidth group: programs naming the same
    /// `cpu.group` share one cgroup and its quota; `cpu.quota` alone makes a
    /// group `programN`. Returns the group of each program (by position)
    /// and the groups to make.
    pub(super) fn bandwidth_groups(
        &mut self,
        exp: &Experiment,
    ) -> (Vec<Option<String>>, Vec<GroupSpec>) {
        let mut groups: Vec<(GroupSpec, bool, Pos)> = Vec::new();
        let mut of_program = Vec::new();
        let mut hierarchy_checked = false;
        for prog in &exp.programs {
            let bw = &prog.bandwidth;
            let first_key = bw
                .quota_us
                .as_ref()
                .map(|q| q.pos)
                .or(bw.period_us.as_ref().map(|p| p.pos))
                .or(bw.group.as_ref().map(|g| g.pos));
            let Some(key_pos) = first_key else {
                of_program.push(None);
                continue;
            };
            self.check_bandwidth_program(prog, key_pos, &mut hierarchy_checked);
            let name = bw
                .group
                .as_ref()
                .map_or_else(|| format!("program{}", prog.index), |g| g.value.clone());
            if name == bandwidth::DEFAULT_LEAF {
                self.refuse(
                    key_pos,
                    format!("`{name}` is reserved"),
                    "choose another `cpu.group` name",
                );
            }
            let explicit = bw.quota_us.is_some() || bw.period_us.is_some();
            let wanted = Bandwidth {
                quota_us: bw.quota_us.as_ref().map(|q| q.value),
                period_us: bw
                    .period_us
                    .as_ref()
                    .map_or(bandwidth::DEFAULT_PERIOD_US, |p| p.value),
            };
            match groups.iter_mut().find(|(g, _, _)| g.name == name) {
                None => groups.push((
                    GroupSpec {
                        name: name.clone(),
                        bandwidth: wanted,
                    },
                    explicit,
                    key_pos,
                )),
                Some((g, has_explicit, first)) => {
                    if explicit && *has_explicit && g.bandwidth != wanted {
                        let line = first.line;
                        self.refuse(
                            key_pos,
                            format!("group `{name}` already has another quota or period"),
                            format!("the bandwidth belongs to the group: give it once (line {line}) or the same in every program of the group"),
                        );
                    } else if explicit && !*has_explicit {
                        g.bandwidth = wanted;
                        *has_explicit = true;
                    }
                }
            }
            of_program.push(Some(name));
        }
        (of_program, groups.into_iter().map(|(g, _, _)| g).collect())
    }

    /// A program's `cpu.*` keys against the machine (checked once) and its
    /// policy.
    fn check_bandwidth_program(
        &mut self,
        prog: &crate::config::ProgramConfig,
        key_pos: Pos,
        hierarchy_checked: &mut bool,
    ) {
        let bw = &prog.bandwidth;
        if bw.group.is_none() && bw.quota_us.is_none() {
            self.refuse(
                key_pos,
                "`cpu.period` alone changes nothing".into(),
                "add `cpu.quota DURATION` (the CPU time allowed per period)",
            );
        }
        if !*hierarchy_checked {
            *hierarchy_checked = true;
            if !self.machine.privileges().root {
                self.refuse(
                    key_pos,
                    "CPU bandwidth groups are cgroups: making them needs root".into(),
                    "run with sudo, or leave the `cpu.*` keys out",
                );
            } else if let Err(why) = self.machine.cpu_bandwidth() {
                self.refuse(
                    key_pos,
                    format!("no CPU bandwidth control: {why}"),
                    "leave the `cpu.*` keys out, or mount the cpu controller",
                );
            }
        }
        if prog.sched.value.policy.is_realtime() {
            self.refuse(
                key_pos,
                format!("program[{}]: CPU bandwidth limits only OTHER, BATCH and IDLE tasks", prog.index),
                "real-time tasks are limited by RT throttling (sched_rt_runtime_us), not by cpu.quota; drop `sched.policy` or the `cpu.*` keys",
            );
        }
    }
}

/// Machine facts the tuning checks need, for the real machine.
pub(super) mod real {
    use crate::sys::{SysRoot, power, threads};

    pub fn freq_policies(root: &SysRoot) -> Result<Vec<power::FreqPolicy>, String> {
        let p = power::freq_policies(root);
        if p.is_empty() {
            Err(power::no_cpufreq_reason(root))
        } else {
            Ok(p)
        }
    }

    pub fn thread_names(root: &SysRoot) -> Vec<String> {
        threads::list(root).into_iter().map(|t| t.name).collect()
    }

    /// Every thread but those of this process (rtlab's own).
    pub fn other_threads(root: &SysRoot) -> Vec<(i32, String)> {
        let own = std::process::id() as i32;
        threads::list(root)
            .into_iter()
            .filter(|t| t.pid != own)
            .map(|t| (t.tid, t.name))
            .collect()
    }
}

#[cfg(test)]
#[path = "tuning_tests.rs"]
mod tests;

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
mod tests {
    use super::super::tests::fake;
    use super::super::{PlanOptions, plan_text};
    use crate::config::Pos;
    use crate::sched::Policy;

    fn errors(text: &str) -> Vec<(Pos, String)> {
        plan_text(text, "f", &fake(), &PlanOptions::default())
            .unwrap_err()
            .into_iter()
            .map(|d| (d.pos, d.message))
            .collect()
    }

    const TIMER: &str = "timer_thread[0] {\n  lifetime.loops 1\n}\n";

    #[test]
    fn tuning_keys_make_a_plan_in_file_order() {
        let text = format!(
            "main {{\n  irq.affinity 0\n  irq.affinity 1 36 24\n  threads.sched ksoftirqd/* FIFO 2\n  \
             cstates.max_latency 0 us\n  cstates.cpus 1\n}}\n{TIMER}"
        );
        let plan = plan_text(&text, "f", &fake(), &PlanOptions::default()).unwrap();
        let t = &plan.main.tuning;
        assert_eq!(
            t.irq_affinity,
            vec![(vec![0], vec![]), (vec![1], vec![36, 24])]
        );
        assert_eq!(t.thread_sched[0].0, "ksoftirqd/*");
        assert_eq!(t.thread_sched[0].1.policy, Policy::Fifo);
        assert_eq!(t.cstate_max_latency_us, Some((0, Some(vec![1]))));
        assert!(t.governor.is_none());
        let plain = plan_text(TIMER, "f", &fake(), &PlanOptions::default()).unwrap();
        assert!(plain.main.tuning.is_empty());
    }

    #[test]
    fn tuning_mistakes_are_refused_at_their_position() {
        let text = format!(
            "main {{\n  cpufreq.governor performance\n  irq.affinity 0 99\n  \
             threads.sched nosuch/* FIFO 2\n  cstates.cpus 1\n  irq.affinity 5\n}}\n{TIMER}"
        );
        let e = errors(&text);
        let at = |line: usize| {
            e.iter()
                .find(|(p, _)| p.line == line)
                .map(|(_, m)| m.as_str())
                .unwrap_or_else(|| panic!("nothing at line {line}: {e:?}"))
        };
        assert!(at(2).contains("no cpufreq"));
        assert_eq!(at(3), "no IRQ 99 on this machine");
        assert_eq!(at(4), "no thread name matches `nosuch/*`");
        assert_eq!(at(5), "`cstates.cpus` alone changes nothing");
        assert_eq!(at(6), "CPU 5 is not online");
        // Syntax of the repeatable keys.
        let e = errors(&format!(
            "main {{\n  threads.sched x FIFO\n  irq.affinity 0 x\n}}\n{TIMER}"
        ));
        assert!(
            e[0].1
                .contains("needs a name pattern, a policy and a priority")
        );
        assert_eq!(e[1].0, Pos { line: 3, col: 18 });
        let e = errors(&format!("main {{\n  irq.affinity 0 all 36\n}}\n{TIMER}"));
        assert!(e[0].1.contains("`all` and IRQ numbers together"), "{e:?}");
        let e = errors(&format!("main {{\n  threads.sched x FIFO 0\n}}\n{TIMER}"));
        assert_eq!(e[0].0, Pos { line: 2, col: 24 }, "{e:?}");
    }

    #[test]
    fn thread_cpus_and_steering_make_a_plan_in_file_order() {
        let text = format!(
            "main {{\n  threads.affinity ksoftirqd/* 1\n  net.steering eth0 0-1\n  \
             threads.affinity 500 0\n  net.steering lo 1\n}}\n{TIMER}"
        );
        let plan = plan_text(&text, "f", &fake(), &PlanOptions::default()).unwrap();
        let t = &plan.main.tuning;
        assert_eq!(
            t.thread_affinity,
            vec![("ksoftirqd/*".into(), vec![1]), ("500".into(), vec![0])]
        );
        assert_eq!(
            t.net_steering,
            vec![("eth0".into(), vec![0, 1]), ("lo".into(), vec![1])]
        );
        assert!(!t.is_empty());
    }

    #[test]
    fn thread_cpus_and_steering_mistakes_are_refused_at_their_position() {
        let text = format!(
            "main {{\n  threads.affinity nosuch* 0\n  threads.affinity 77 1\n  \
             threads.affinity app 0-5\n  net.steering wlan0 0\n  net.steering eth0 7\n}}\n{TIMER}"
        );
        let d = plan_text(&text, "f", &fake(), &PlanOptions::default()).unwrap_err();
        let found: Vec<(Pos, &str)> = d.iter().map(|d| (d.pos, d.message.as_str())).collect();
        let at = |line, col| Pos { line, col };
        assert_eq!(
            found,
            vec![
                (at(2, 20), "no thread name matches `nosuch*`"),
                (at(3, 20), "no thread 77"),
                (at(4, 24), "CPU 2-5 are not online"),
                (at(5, 16), "no network interface `wlan0` on this machine"),
                (at(6, 21), "CPU 7 is not online"),
            ]
        );
        assert!(d[0].hint.as_ref().unwrap().contains("never moves its own"));
        assert_eq!(d[3].hint.as_deref(), Some("its interfaces are eth0, lo"));
        // rtlab's own threads are not among the machine's others: its own
        // TID or name is refused as a thread that does not exist.
        let e = errors(&format!("main {{\n  threads.affinity 1 0\n}}\n{TIMER}"));
        assert_eq!(e[0].1, "no thread 1");
    }

    #[test]
    fn tuning_needs_root() {
        let mut m = fake();
        m.root = false;
        for key in [
            "irq.affinity 0",
            "threads.affinity ksoftirqd/* 0",
            "net.steering lo 0",
        ] {
            let text = format!("main {{\n  {key}\n}}\n{TIMER}");
            let d = plan_text(&text, "f", &m, &PlanOptions::default()).unwrap_err();
            assert!(d[0].message.contains("needs root"), "{key}: {d:?}");
            assert_eq!(
                d[0].pos,
                Pos {
                    line: 2,
                    col: 4 + key.find(' ').unwrap()
                }
            );
        }
        let text = "program[0] {\n  cmdline sh\n  cpu.quota 10 ms\n}\n";
        let d = plan_text(text, "f", &m, &PlanOptions::default()).unwrap_err();
        assert!(d[0].message.contains("needs root"), "{d:?}");
    }

    #[test]
    fn programs_share_a_group_and_its_quota() {
        let text = "program[0] {\n  cmdline sh\n  cpu.group hogs\n}\n\
                    program[1] {\n  cmdline sh\n  cpu.group hogs\n  cpu.quota 150 ms\n}\n\
                    program[2] {\n  cmdline sh\n  cpu.quota 25 ms\n  cpu.period 50 ms\n}\n\
                    program[3] {\n  cmdline sh\n}\n";
        let plan = plan_text(text, "f", &fake(), &PlanOptions::default()).unwrap();
        let groups: Vec<Option<&str>> = plan
            .programs
            .iter()
            .map(|p| p.cpu_group.as_deref())
            .collect();
        assert_eq!(
            groups,
            vec![Some("hogs"), Some("hogs"), Some("program2"), None]
        );
        assert_eq!(plan.cpu_groups.len(), 2);
        assert_eq!(plan.cpu_groups[0].bandwidth.quota_us, Some(150_000));
        assert_eq!(plan.cpu_groups[0].bandwidth.period_us, 100_000);
        assert_eq!(plan.cpu_groups[1].bandwidth.period_us, 50_000);
    }

    #[test]
    fn bandwidth_mistakes_are_refused() {
        let text = "program[0] {\n  cmdline sh\n  cpu.group g\n  cpu.quota 10 ms\n}\n\
                    program[1] {\n  cmdline sh\n  cpu.group g\n  cpu.quota 20 ms\n}\n\
                    program[2] {\n  cmdline sh\n  cpu.period 50 ms\n}\n\
                    program[3] {\n  cmdline sh\n  sched.policy FIFO\n  sched.priority 1\n  cpu.quota 10 ms\n}\n\
                    program[4] {\n  cmdline sh\n  cpu.group programs\n}\n";
        let e = errors(text);
        let msgs: Vec<&str> = e.iter().map(|(_, m)| m.as_str()).collect();
        assert!(
            msgs[0].contains("group `g` already has another quota"),
            "{msgs:?}"
        );
        assert_eq!(e[0].0.line, 9);
        assert!(
            msgs.contains(&"`cpu.period` alone changes nothing"),
            "{msgs:?}"
        );
        assert!(
            msgs.iter().any(|m| m.contains("limits only OTHER")),
            "{msgs:?}"
        );
        assert!(
            msgs.iter().any(|m| m.contains("`programs` is reserved")),
            "{msgs:?}"
        );
        // Values outside the kernel's limits are refused by the parser.
        let e = errors(
            "program[0] {\n  cmdline sh\n  cpu.quota 500 us\n  cpu.period 2 s\n  cpu.group a/b\n}\n",
        );
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(e[0].1.contains("at least 1 ms"));
        assert!(e[1].1.contains("between 1 ms and 1 s"));
        assert!(e[2].1.contains("not a group name"));
    }
}

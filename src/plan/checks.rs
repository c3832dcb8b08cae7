//! The checks of the whole experiment against the machine: something to
//! run, the privileges its policies need (tried for real), and the
//! SCHED_DEADLINE reservations the kernel admits.

use crate::config::{Diagnostic, Experiment, Pos, Spanned};
use crate::sys::os::{Policy, Sched};

use super::Planner;

impl Planner<'_> {
    /// A run must have something to run, and traces need root.
    pub(super) fn check_something_runs(&mut self, exp: &Experiment) {
        let traces = exp.main.audit_cpus.is_some()
            || exp.main.irq_latency
            || !exp.irq_tasks.is_empty()
            || !exp.task_latency.is_empty();
        if traces && !self.machine.privileges().root {
            let pos = exp
                .irq_tasks
                .first()
                .map(|m| m.pos)
                .or(exp.task_latency.first().map(|m| m.pos))
                .or(exp.main.audit_cpus.as_ref().map(|a| a.pos))
                .unwrap_or_default();
            self.diags.push(
                Diagnostic::new(pos, "the isolation audit, IRQ latency, IRQ-to-task and task latency read kernel tracepoints: they need root")
                    .with_hint(Some("run with sudo (rtlab traces in its own tracefs instance and removes it at the end)".into())),
            );
        }
        if exp.timers.is_empty() && exp.programs.is_empty() && exp.noise.is_empty() && !traces {
            self.diags.push(
                Diagnostic::new(Pos { line: 1, col: 1 }, "the experiment has no timer_thread and no program: nothing to run")
                    .with_hint(Some("add a `timer_thread[0] { ... }` stanza, or run `rtlab run` without a file for the built-in experiment".into())),
            );
        }
    }
}

/// Refuses real-time policies this process cannot get, with cause and fix.
/// Every FIFO/RR request is checked by the rules, then by a real attempt.
pub(super) fn check_privileges(p: &mut Planner, exp: &Experiment) {
    let mut wanted: Vec<(&str, usize, &Spanned<Sched>)> = vec![("main", 0, &exp.main.sched)];
    wanted.extend(
        exp.timers
            .iter()
            .map(|t| ("timer_thread", t.index, &t.sched)),
    );
    wanted.extend(exp.programs.iter().map(|g| ("program", g.index, &g.sched)));
    wanted.extend(
        exp.noise
            .iter()
            .map(|n| ("noise_thread", n.index, &n.sched)),
    );
    let privileges = p.machine.privileges();
    // Read once, at the first refusal.
    let mut rt_groups = None;
    for (kind, index, sched) in wanted {
        let s = sched.value;
        let who = if kind == "main" {
            "main".to_string()
        } else {
            format!("{kind}[{index}]")
        };
        let needs_privilege =
            s.policy.is_realtime() || (s.priority < 0 && s.policy != Policy::Idle);
        if !needs_privilege {
            continue;
        }
        if s.policy.is_realtime() && privileges.rt_runtime_us == Some(0) {
            p.diags.push(
                Diagnostic::new(sched.pos, format!("{who}: RT throttling gives real-time threads no CPU time (kernel.sched_rt_runtime_us = 0)"))
                    .with_hint(Some("restore it: `sysctl kernel.sched_rt_runtime_us=950000` (or -1 to disable throttling)".into())),
            );
            continue;
        }
        if s.policy.is_realtime() && !privileges.allows_rt(s.priority) {
            let (message, hint) = super::refused_rt::no_capability(&who, s, &privileges);
            p.diags
                .push(Diagnostic::new(sched.pos, message).with_hint(Some(hint)));
            continue;
        }
        if let Err(e) = p.machine.probe_sched(s) {
            let (why, hint) = if s.policy.is_realtime() {
                let groups = rt_groups.get_or_insert_with(|| p.machine.rt_groups());
                super::refused_rt::kernel_refusal(&e, &privileges, s.priority, groups.as_ref())
            } else {
                super::refused_rt::nice_refusal(s.priority)
            };
            p.diags.push(
                Diagnostic::new(
                    sched.pos,
                    format!(
                        "{who}: the kernel refuses {} priority {}: {e}: {why}",
                        s.policy.name(),
                        s.priority
                    ),
                )
                .with_hint(Some(hint)),
            );
        }
    }
}

/// Tries each timer thread's SCHED_DEADLINE reservation on a throw-away
/// thread pinned as it will be: the kernel's admission control refuses a
/// thread pinned to fewer CPUs than its root domain, said before the start
/// with the ways out.
pub(super) fn check_deadlines(p: &mut Planner, exp: &Experiment) {
    for t in &exp.timers {
        let Some(dl) = &t.deadline else {
            continue;
        };
        let cpus = t
            .cpu_affinity
            .as_ref()
            .map_or_else(|| p.machine.online_cpus(), |c| c.value.clone());
        let Err(e) = p.machine.probe_deadline(&cpus, dl.value) else {
            continue;
        };
        let hint = match e.raw_os_error() {
            Some(crate::sys::consts::ENOSYS) => "the sched_setattr syscall is not available here (ENOSYS): a seccomp filter or an emulator refuses it".to_string(),
            _ if !p.machine.privileges().root => "SCHED_DEADLINE needs root (or CAP_SYS_NICE)".to_string(),
            _ => format!(
                "the kernel's admission control: a SCHED_DEADLINE thread must be allowed on every CPU of its root domain, and this one is pinned to {}; put its CPU in an exclusive partition (`rtlab partition create`), or turn admission control off (`sysctl kernel.sched_rt_runtime_us=-1`, which also ends RT throttling), or leave out `cpu_affinity`; the reservation must also fit the CPUs' bandwidth",
                crate::cpulist::format(&cpus)
            ),
        };
        p.diags.push(
            Diagnostic::new(
                dl.pos,
                format!(
                    "timer_thread[{}]: the kernel refuses {}: {e}",
                    t.index,
                    dl.value.describe()
                ),
            )
            .with_hint(Some(hint)),
        );
    }
}

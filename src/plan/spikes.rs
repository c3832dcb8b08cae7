//! `on_spike`, checked against the file and the machine: each action needs
//! its key (a threshold; `save` the flight recorder), a `run` program must
//! exist as a `cmdline` must, and a `signal` process must exist now. The
//! programs run on the CPUs no timer thread measures.

use super::{Planner, TimerPlan};
use crate::config::{Diagnostic, Experiment, Spanned, SpikeAction};
use crate::spike_actions::SpikeActions;
use std::path::PathBuf;

/// The `on_spike` actions as the run does them, or None without any.
pub(super) fn plan(
    p: &mut Planner,
    exp: &Experiment,
    timers: &[TimerPlan],
) -> Option<SpikeActions> {
    let main = &exp.main;
    let first = main.on_spike.first()?;
    needs_its_keys(p, exp, first);
    let mut programs = Vec::new();
    for a in &main.on_spike {
        match &a.value {
            SpikeAction::Run { argv } => programs.push(executable(p, a, argv)),
            SpikeAction::Signal { pid, .. } if !p.machine.process_exists(*pid) => {
                p.diags.push(
                    Diagnostic::new(a.pos, format!("there is no process {pid}"))
                        .with_hint(Some(
                            "give the PID of a process running now (it is pinned when the run starts: should it end, nothing is sent to whoever takes its number)"
                                .into(),
                        )),
                );
            }
            _ => {}
        }
    }
    let measured: Vec<usize> = timers
        .iter()
        .flat_map(|t| t.spec.cpus.iter().copied())
        .collect();
    let mut cpus: Vec<usize> = p
        .online
        .iter()
        .copied()
        .filter(|c| !measured.contains(c))
        .collect();
    if cpus.is_empty() {
        cpus = p.online.clone();
    }
    Some(SpikeActions {
        actions: main.on_spike.iter().map(|a| a.value.clone()).collect(),
        every_ns: main.on_spike_every_ns,
        programs,
        cpus,
    })
}

/// `on_spike` acts on the wake-ups over a threshold, and `save` keeps the
/// flight recorder's window: each needs its key.
fn needs_its_keys(p: &mut Planner, exp: &Experiment, first: &Spanned<SpikeAction>) {
    let main = &exp.main;
    if main.trace_threshold_ns.is_none() && main.spikes_threshold_ns.is_none() {
        p.diags.push(
            Diagnostic::new(
                first.pos,
                "`on_spike` acts on wake-ups over a threshold, and none is set",
            )
            .with_hint(Some(
                "set `trace.threshold` (explained spikes) or `spikes.threshold`".into(),
            )),
        );
    }
    let save = main.on_spike.iter().find(|a| a.value == SpikeAction::Save);
    if let Some(save) = save.filter(|_| main.trace_threshold_ns.is_none()) {
        p.diags.push(
            Diagnostic::new(save.pos, "`on_spike save` keeps the flight recorder's trace window, and no `trace.threshold` starts it")
                .with_hint(Some("set `trace.threshold DURATION` in main".into())),
        );
    }
}

/// A `run` action's program, found as a `cmdline`'s is.
fn executable(p: &mut Planner, at: &Spanned<SpikeAction>, argv: &[String]) -> PathBuf {
    let name = argv.first().cloned().unwrap_or_default();
    p.machine.find_command(&name).unwrap_or_else(|| {
        let (why, hint) = super::machine::command_missing(&name);
        p.diags
            .push(Diagnostic::new(at.pos, format!("on_spike run: {why}")).with_hint(Some(hint)));
        PathBuf::from(&name)
    })
}

#[cfg(test)]
mod tests {
    use crate::plan::{
        PlanOptions, build,
        tests::{fake, refusals},
    };

    const TIMER: &str = "timer_thread[0]\n{\n cpu_affinity 0\n lifetime.loops 10\n}\n";

    #[test]
    fn a_missing_program_and_a_process_that_does_not_exist_are_refused_at_their_place() {
        let text = format!(
            "main\n{{\n spikes.threshold 1 ms\n on_spike run /no/such/program\n on_spike signal 999999 USR1\n}}\n{TIMER}"
        );
        let r = refusals(&text);
        assert!(
            r.iter()
                .any(|m| m.starts_with("4:") && m.contains("`/no/such/program` not found")),
            "{r:?}"
        );
        assert!(
            r.iter()
                .any(|m| m.starts_with("5:") && m.contains("no process 999999")),
            "{r:?}"
        );
        // A path that is there but cannot run is said so.
        let text = format!("main\n{{\n spikes.threshold 1 ms\n on_spike run /\n}}\n{TIMER}");
        let r = refusals(&text);
        assert!(
            r.iter()
                .any(|m| m.starts_with("4:") && m.contains("is not an executable file")),
            "{r:?}"
        );
        let ok = format!(
            "main\n{{\n spikes.threshold 1 ms\n on_spike run sh -c true\n on_spike signal 4242 USR1\n}}\n{TIMER}"
        );
        assert_eq!(refusals(&ok), Vec::<String>::new());
    }

    #[test]
    fn programs_run_where_no_timer_thread_measures() {
        let text =
            format!("main\n{{\n spikes.threshold 1 ms\n on_spike run sh -c true\n}}\n{TIMER}");
        let exp = crate::config::parse(&text).unwrap();
        let plan = build(&exp, &text, &fake(), &PlanOptions::default()).unwrap();
        let spikes = plan.main.on_spike.unwrap();
        assert!(!spikes.cpus.contains(&0), "{:?}", spikes.cpus);
        assert!(!spikes.cpus.is_empty());
        assert_eq!(
            spikes.programs,
            vec![std::path::PathBuf::from("/usr/bin/sh")]
        );
    }
}

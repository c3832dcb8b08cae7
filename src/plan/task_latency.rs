//! The `task_latency[N]` stanzas, checked against the rest of the file.

use crate::config::{Diagnostic, Experiment, Spanned, TaskSelector};
use crate::trace::task_latency::TaskLatencySpec;

/// Each `task_latency[N]` as the stream measures it: a program it names
/// must be in the file, a process it names must exist; wake-ups later than
/// `trace.threshold` are explained.
pub(super) fn specs(p: &mut super::Planner, exp: &Experiment) -> Vec<TaskLatencySpec> {
    let mut out = Vec::new();
    for m in &exp.task_latency {
        no_such_process(p, &m.task);
        let diags = &mut p.diags;
        if let TaskSelector::Program(i) = m.task.value
            && !exp.programs.iter().any(|g| g.index == i)
        {
            diags.push(
                Diagnostic::new(m.task.pos, format!("there is no program[{i}] in this file"))
                    .with_hint(Some(
                        "name a program of the file, or the task by `task.name` or `task.pid`"
                            .into(),
                    )),
            );
        }
        if let (Some(p), Some(d)) = (m.period_ns, m.deadline_ns)
            && d > p.saturating_mul(1000)
        {
            diags.push(
                Diagnostic::new(m.pos, "the deadline is more than 1000 periods").with_hint(Some(
                    "a deadline is counted from each release: give it in the period's order".into(),
                )),
            );
        }
        out.push(TaskLatencySpec {
            index: m.index,
            task: m.task.value.clone(),
            period_ns: m.period_ns,
            deadline_ns: m.deadline_ns,
            threshold_ns: exp.main.trace_threshold_ns,
            samples: m.samples,
            thread: m.thread.clone(),
        });
    }
    out
}

/// The CPUs measured through a task: those of each program a
/// `task_latency[N]` or `irq_task[N]` measures (its `cpu_affinity`, the
/// online ones). rtlab's own threads are kept off them as off the audited
/// CPUs. A task given by name has no CPUs known before the run; one given
/// by PID has its own ([`pinned_pid_cpus`]).
pub(super) fn measured_cpus(exp: &Experiment, online: &[usize]) -> Vec<usize> {
    let tasks = exp
        .task_latency
        .iter()
        .map(|m| &m.task.value)
        .chain(exp.irq_tasks.iter().map(|m| &m.task.value));
    let mut cpus: Vec<usize> = tasks
        .filter_map(|t| match t {
            TaskSelector::Program(i) => exp.programs.iter().find(|g| g.index == *i),
            _ => None,
        })
        .filter_map(|g| g.cpu_affinity.as_ref())
        .flat_map(|a| a.value.iter().copied())
        .filter(|c| online.contains(c))
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// The CPUs of each task given by PID (`task.pid`, `--pid`) that is
/// pinned: rtlab's own threads are kept off them as off a program's. A
/// task allowed on every online CPU cannot be kept clear of.
pub(super) fn pinned_pid_cpus(
    exp: &Experiment,
    online: &[usize],
    cpus_of: &dyn Fn(i32) -> Option<Vec<usize>>,
) -> Vec<usize> {
    let tasks = exp
        .task_latency
        .iter()
        .map(|m| &m.task.value)
        .chain(exp.irq_tasks.iter().map(|m| &m.task.value));
    let mut out = Vec::new();
    for task in tasks {
        let TaskSelector::Pid(pid) = task else {
            continue;
        };
        let Some(cpus) = cpus_of(*pid) else { continue };
        let cpus: Vec<usize> = cpus.into_iter().filter(|c| online.contains(c)).collect();
        if cpus.len() < online.len() {
            out.extend(cpus);
        }
    }
    out
}

/// Refuses a task given by a PID no process has now (`task.pid`).
pub(super) fn no_such_process(p: &mut super::Planner, task: &Spanned<TaskSelector>) {
    if let TaskSelector::Pid(pid) = task.value
        && !p.machine.process_exists(pid)
    {
        p.diags.push(
            Diagnostic::new(task.pos, format!("there is no process {pid}")).with_hint(Some(
                "give the PID of a process running now (it is pinned when the run starts: should it end, nothing under its number is counted after)"
                    .into(),
            )),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::plan::{PlanOptions, build, tests::fake};

    #[test]
    fn rtlab_keeps_off_the_cpus_a_task_given_by_pid_is_pinned_to() {
        // 4242 is pinned to CPU 1 of the fake machine, 4243 runs anywhere.
        let main = |pid: i32| {
            let text = format!("task_latency[0]\n{{\n task.pid {pid}\n}}\n");
            let exp = crate::config::parse(&text).expect("parses");
            let plan = build(&exp, &text, &fake(), &PlanOptions::default()).expect("plans");
            (plan.main.cpus, plan.main.measured_cpus)
        };
        assert_eq!(main(4242), (Some(vec![0]), Some(vec![1])));
        assert_eq!(main(4243), (None, None));
    }

    #[test]
    fn a_process_that_does_not_exist_is_refused_at_its_place() {
        for stanza in ["task_latency[0]\n{", "irq_task[0]\n{\n irq 36"] {
            let text =
                format!("main\n{{\n trace.threshold 1 ms\n}}\n{stanza}\n task.pid 999999\n}}\n");
            let exp = crate::config::parse(&text).expect("parses");
            let d = build(&exp, &text, &fake(), &PlanOptions::default()).unwrap_err();
            assert!(
                d.iter().any(|d| d.message == "there is no process 999999"),
                "{stanza}: {d:?}"
            );
            let ok = text.replace("999999", "4242");
            let exp = crate::config::parse(&ok).expect("parses");
            if let Err(d) = build(&exp, &ok, &fake(), &PlanOptions::default()) {
                assert!(!d.iter().any(|d| d.message.contains("no process")), "{d:?}");
            }
        }
    }
}

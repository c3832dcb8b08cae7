//! The `task_latency[N]` stanzas, checked against the rest of the file.

use crate::config::{Diagnostic, Experiment, TaskSelector};
use crate::task_latency::TaskLatencySpec;

/// Each `task_latency[N]` as the stream measures it: a program it names
/// must be in the file; wake-ups later than `trace.threshold` are
/// explained.
pub(super) fn specs(diags: &mut Vec<Diagnostic>, exp: &Experiment) -> Vec<TaskLatencySpec> {
    let mut out = Vec::new();
    for m in &exp.task_latency {
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
        });
    }
    out
}

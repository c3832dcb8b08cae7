//! The closing texts of a run, printed on stdout after its files are
//! written: each part of the result that has one gives it (a [`Closing`]),
//! and [`CLOSINGS`] lists them in the order printed. A part with a closing
//! text of its own is one function and one line in that list.

use crate::report;
use crate::result::RunResult;

/// A part's closing text, from the result; None when it has nothing to
/// say.
pub type Closing = fn(&RunResult) -> Option<String>;

/// The closing texts, in the order printed.
pub const CLOSINGS: &[Closing] = &[
    timer_threads,
    noise_threads,
    explain_verdict,
    irq_tasks,
    task_latency,
    isolation_audit,
    trace_figures,
    spike_actions,
];

/// What the `on_spike` actions did: rounds, programs started and not, and
/// the signals not sent (a process given by PID that ended), which the
/// result alone said before.
fn spike_actions(result: &RunResult) -> Option<String> {
    let s = result.on_spike.as_ref()?;
    let rounds = s.rounds.len() as u64 + s.rounds_not_listed;
    let mut out = format!(
        "\nOn late wake-ups ({}): {} announced, {rounds} rounds of actions, {} passed over by the rate limit\n",
        s.actions.join("; "),
        s.spikes,
        s.suppressed
    );
    if s.programs_started + s.programs_not_started > 0 {
        out.push_str(&format!(
            "  programs started {}, not started {} (at most {} alive at once, {} a run)\n",
            s.programs_started,
            s.programs_not_started,
            crate::spike_actions::MAX_ALIVE,
            crate::spike_actions::MAX_PROGRAM_RUNS
        ));
    }
    let not_sent: Vec<&String> = s
        .rounds
        .iter()
        .flat_map(|r| &r.outcomes)
        .filter(|o| o.contains(" not sent: "))
        .collect();
    if let Some(first) = not_sent.first() {
        out.push_str(&format!(
            "  {} signals not sent in the listed rounds, the first: {first}\n",
            not_sent.len()
        ));
    }
    Some(out)
}

/// Every closing text of `result`, in order, as printed.
pub fn closing_texts(result: &RunResult) -> String {
    CLOSINGS.iter().filter_map(|c| c(result)).collect()
}

/// Prints the closing texts.
pub fn print_closings(result: &RunResult) {
    for text in CLOSINGS.iter().filter_map(|c| c(result)) {
        out!("{text}");
    }
}

/// Where each timer thread's statistics are, and the elapsed time.
fn timer_threads(result: &RunResult) -> Option<String> {
    Some(report::live::closing_lines(result))
}

/// Each noise thread.
fn noise_threads(result: &RunResult) -> Option<String> {
    let n = &result.noise;
    let steal = |cpu: usize| {
        result
            .steal_ms
            .iter()
            .find(|(c, _)| *c == cpu)
            .map(|(_, ms)| *ms)
    };
    (!n.is_empty()).then(|| {
        n.iter()
            .map(|t| report::noise::text(t, steal(t.cpu)))
            .collect()
    })
}

/// The flight recorder explains the timer threads' wake-ups: a run
/// without any (task latency alone) has no verdict to print.
fn explain_verdict(result: &RunResult) -> Option<String> {
    let trace = result
        .trace
        .as_ref()
        .filter(|_| !result.timers.is_empty())?;
    Some(report::explain::verdict_in(trace, &result.plan.outdir))
}

/// Each IRQ-to-task measurement.
fn irq_tasks(result: &RunResult) -> Option<String> {
    let m = &result.irq_tasks;
    (!m.is_empty()).then(|| m.iter().map(report::audit::irq_task).collect())
}

/// Each task-latency measurement.
fn task_latency(result: &RunResult) -> Option<String> {
    let m = &result.task_latency;
    (!m.is_empty()).then(|| m.iter().map(report::task_latency::text).collect())
}

/// The isolation audit.
fn isolation_audit(result: &RunResult) -> Option<String> {
    result.audit.as_ref().map(report::audit::audit)
}

/// The closing texts the trace consumers without a part of their own
/// gave when they finished (`trace::Figure`), in their order.
fn trace_figures(result: &RunResult) -> Option<String> {
    let text: String = result.figures.iter().map(|f| f.closing.as_str()).collect();
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The closing texts as `write_outputs` printed them by hand before
    /// the list: the timer threads, the verdict (with timer threads), the
    /// IRQ-to-task and task-latency texts, the audit.
    fn by_hand(r: &RunResult) -> String {
        let mut out = report::live::closing_lines(r);
        if let Some(trace) = r.trace.as_ref().filter(|_| !r.timers.is_empty()) {
            out.push_str(&report::explain::verdict(trace));
        }
        for m in &r.irq_tasks {
            out.push_str(&report::audit::irq_task(m));
        }
        for m in &r.task_latency {
            out.push_str(&report::task_latency::text(m));
        }
        if let Some(a) = &r.audit {
            out.push_str(&report::audit::audit(a));
        }
        // Added since, last: what the spike actions did.
        out.extend(spike_actions(r));
        out
    }

    #[test]
    fn the_list_prints_what_the_hand_list_printed_in_its_order() {
        let seeds = [
            include_str!("../../tests/seeds/rtlab-result.json"),
            include_str!("../../tests/seeds/rtlab-result-trace-experiments.json"),
            include_str!("../../tests/seeds/rtlab-result-irq-latency.json"),
        ];
        for seed in seeds {
            let mut r: RunResult = serde_json::from_str(seed).unwrap();
            assert_eq!(closing_texts(&r), by_hand(&r));
            // Task latency alone: no verdict, whatever the trace says.
            r.timers.clear();
            r.trace = Some(Default::default());
            assert_eq!(closing_texts(&r), by_hand(&r));
        }
        let r: RunResult = serde_json::from_str(seeds[1]).unwrap();
        let text = closing_texts(&r);
        let irq = report::audit::irq_task(&r.irq_tasks[0]);
        let audit = report::audit::audit(r.audit.as_ref().unwrap());
        assert!(text.find(&irq).unwrap() < text.find(&audit).unwrap());
    }
}

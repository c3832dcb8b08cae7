//! Arming the run's traces: the flight recorder (why wake-ups were late)
//! and the trace stream (the isolation audit, IRQ-to-task latency). Either
//! one missing leaves the run going, with the reason in its result.

use super::arm::RunJournal;
use crate::isolate::state::IsolationState;
use crate::measure::TimerHandle;
use crate::plan::RunPlan;
use crate::sys::SysRoot;
use crate::trace::audit::Promises;
use crate::trace::flight::FlightRecorder;
use crate::trace::stream::{StreamSpec, TraceStream};
use std::sync::atomic::Ordering;

/// Starts the flight recorder when the plan asks for it: on the timer
/// threads' CPUs, through the run's journal. Without it (no journal, no
/// tracefs) the run goes on, and the report says why.
pub(super) fn start_flight(
    root: &SysRoot,
    journal: &mut RunJournal,
    plan: &RunPlan,
    warnings: &mut Vec<String>,
) -> (
    Option<FlightRecorder>,
    Option<crate::trace::explain::TraceReport>,
) {
    let Some(spec) = &plan.main.trace else {
        return (None, None);
    };
    // Every CPU when the explanations say what each ran.
    let mut cpus: Vec<usize> = match spec.dump_tasks {
        true => crate::sys::online_cpus(root).unwrap_or_default(),
        false => Vec::new(),
    };
    cpus.extend(plan.timers.iter().flat_map(|t| t.spec.cpus.clone()));
    cpus.sort_unstable();
    cpus.dedup();
    let started = match journal.0.as_mut() {
        Some(j) => FlightRecorder::start(root, j, spec, &cpus).map_err(|e| e.to_string()),
        None => {
            Err("the flight recorder needs root and the journal of system changes (tracefs)".into())
        }
    };
    match started {
        Ok(f) => {
            // The timer threads' CPUs (not every one `dump_tasks` reads).
            let timer_cpus: Vec<usize> = plan
                .timers
                .iter()
                .flat_map(|t| t.spec.cpus.clone())
                .collect();
            let main_off_timers = timer_cpus.is_empty()
                || plan
                    .main
                    .cpus
                    .as_ref()
                    .is_some_and(|m| !m.iter().any(|c| timer_cpus.contains(c)));
            if !main_off_timers {
                warnings.push(
                    "the flight recorder reads its trace on the main thread, which may run on a \
                     measured CPU: give `main` a `cpu_affinity` off the timer threads' CPUs"
                        .into(),
                );
            }
            if !f.missing_events().is_empty() {
                warnings.push(format!(
                    "the trace lacks these tracepoints of this kernel: {}",
                    f.missing_events().join(", ")
                ));
            }
            (Some(f), None)
        }
        Err(why) => {
            warnings.push(format!(
                "no flight recorder: {why}; spikes are kept, not explained"
            ));
            (None, Some(FlightRecorder::unavailable(spec, why)))
        }
    }
}

/// Starts the trace stream when the plan audits CPUs or measures
/// IRQ-to-task latency: on every online CPU, through the run's journal.
/// Without it the run goes on, and the result says why.
pub(super) fn start_stream(
    root: &SysRoot,
    journal: &mut RunJournal,
    plan: &RunPlan,
    online: &[usize],
    rt_fallback: Option<bool>,
    recording: &mut dyn FnMut(),
    warnings: &mut Vec<String>,
) -> (Option<TraceStream>, Option<String>) {
    if !plan.streams() && rt_fallback.is_none() {
        return (None, None);
    }
    let spec = StreamSpec {
        audit_cpus: plan.main.audit_cpus.clone(),
        irq_tasks: plan.irq_tasks.clone(),
        task_latency: plan.task_latency.clone(),
        timer_irq: plan.main.irq_latency,
        noise: plan
            .noise
            .iter()
            .filter(|n| n.attribute)
            .map(|n| n.spec.clone())
            .collect(),
        rt_wakeups: rt_fallback,
    };
    let started = match journal.0.as_mut() {
        Some(j) => {
            TraceStream::start_then(root, j, &spec, online, recording).map_err(|e| e.to_string())
        }
        None => Err("the trace stream needs root and the journal of system changes".into()),
    };
    match started {
        Ok(s) => {
            let core = s.required_missing();
            if !core.is_empty() {
                let names: Vec<&str> = core.iter().map(|e| e.as_str()).collect();
                warnings.push(format!(
                    "the trace stream lacks tracepoints it cannot do without: {}",
                    names.join(", ")
                ));
            }
            (Some(s), None)
        }
        Err(why) => {
            warnings.push(format!(
                "no trace stream (audit, IRQ-to-task and task latency, noise attribution): {why}"
            ));
            (None, Some(why))
        }
    }
}

/// The timer threads' TIDs (the measured threads of the audit).
pub(super) fn measured_tids(timers: &[TimerHandle]) -> Vec<i32> {
    timers
        .iter()
        .map(|t| t.live.tid.load(Ordering::Relaxed))
        .filter(|&t| t > 0)
        .collect()
}

/// What the machine promised the audited CPUs.
pub(super) fn promises(state: &IsolationState) -> Promises {
    Promises {
        isolcpus: state.isolated.clone(),
        nohz_full: state.nohz_full.clone(),
        partition: state
            .partitions
            .iter()
            .find(|p| p.name == "rt")
            .map(|p| (p.name.clone(), format!("/{}", p.name), p.cpus.clone())),
    }
}

/// Each timer thread's IRQ side so far (index, metrics buckets, sum ns),
/// for monitoring.
pub(super) fn timer_irq_live(stream: &TraceStream) -> Vec<(usize, Vec<u64>, u64)> {
    use crate::trace::timer_irq::TimerIrq;
    stream
        .consumers::<TimerIrq>()
        .flat_map(TimerIrq::live)
        .collect()
}

/// Each task-latency measurement's threads so far (N of
/// `task_latency[N]`, its threads), for the live view and monitoring.
pub(super) fn task_latency_live(
    stream: &TraceStream,
) -> Vec<(usize, Vec<crate::trace::task_latency::ThreadLive>)> {
    stream
        .consumers::<crate::trace::task_latency::Tracker>()
        .map(|t| (t.spec().index, t.live()))
        .collect()
}

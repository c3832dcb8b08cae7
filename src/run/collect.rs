//! The collect phase, and the outputs: the result assembled from what the
//! stopped run left, then written (the export set, then the closing texts).

use super::Before;
use super::arm::MainThread;
use super::arm::{Joined, Stopped};
use super::export::ExportSet;
use super::watch::Watch;
use crate::measure;
use crate::plan::RunPlan;
use crate::result::RunTuning;
use crate::result::{EndReason, RunResult, SCHEMA, TimerResult};
use crate::result::{Placement, RunIsolation};
use crate::stats::{hdr_buckets, nonzero_buckets, summarize};
use crate::sys::os;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

/// Assembles the result of a stopped run.
pub(super) fn collect(
    plan: &RunPlan,
    before: Before,
    main: MainThread,
    stopped: Stopped,
    watch: Watch,
    mut end: EndReason,
    mut warnings: Vec<String>,
) -> RunResult {
    let mut placement = vec![Placement {
        who: "main".into(),
        id: os::getpid(),
        cpuset: main.cpuset.clone(),
        cpus: plan.main.cpus.clone(),
    }];
    let timer_results = timer_results(
        plan,
        stopped.joined,
        &mut end,
        &mut warnings,
        &mut placement,
    );
    let noise = super::noise::results(
        plan,
        stopped.noise,
        stopped.attributions,
        stopped.noise_unavailable.as_deref(),
    );
    let steal_ms = watch.load.steal_ms();
    warnings.extend(steal_warning(&steal_ms, &timer_results));
    placement.extend(stopped.programs.iter().map(program_placement));
    warnings.extend(watch.partitions_changed.iter().cloned());
    let mut trace = stopped.trace;
    if let Some(t) = &mut trace {
        let worst: Vec<(usize, u64, Option<usize>, u64, u64)> = timer_results
            .iter()
            .flat_map(|r| {
                r.spikes
                    .worst
                    .iter()
                    .map(|s| (r.index, s.sample, s.cpu, s.deadline_ns, s.latency_ns))
            })
            .collect();
        t.find_worst_unexplained(&worst);
    }
    RunResult {
        schema: SCHEMA.into(),
        rtlab_version: env!("CARGO_PKG_VERSION").into(),
        plan: plan.clone(),
        system: before.system,
        start_time: humantime::format_rfc3339_seconds(stopped.start_wall).to_string(),
        end_time: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        elapsed_ns: stopped.elapsed_ns,
        interrupted: matches!(end, EndReason::Interrupted { .. }),
        end,
        pm_qos: main.pm_qos.clone(),
        timers: timer_results,
        isolation: RunIsolation {
            state: before.isolation,
            placement,
            partitions_changed: watch.partitions_changed.clone(),
        },
        programs: stopped.programs,
        tuning: RunTuning {
            changes: stopped.tuning_changes,
            cpu_bandwidth: stopped.cpu_bandwidth,
        },
        cpu_load: watch.load.series,
        steal_ms,
        warnings,
        trace,
        trace_windows: stopped.trace_windows,
        audit: stopped.audit,
        irq_tasks: stopped.irq_tasks,
        task_latency: stopped.task_latency,
        on_spike: stopped.on_spike,
        timer_irq: stopped.timer_irq,
        figures: stopped.figures,
        noise,
    }
}

/// Said when the hypervisor took time from a CPU a timer thread ran on:
/// a late wake-up there may be the host's, which no trace of this kernel
/// shows (the explanation's `unseen`, or an interrupt handler that seems
/// to run for milliseconds).
fn steal_warning(steal_ms: &[(usize, f64)], timers: &[TimerResult]) -> Option<String> {
    let stolen: Vec<String> = crate::result::steal(steal_ms, timers)
        .iter()
        .filter(|s| s.ms > 0.0 && s.measured)
        .map(|s| format!("CPU {} {:.0} ms", s.cpu, s.ms))
        .collect();
    (!stolen.is_empty()).then(|| {
        format!(
            "the hypervisor did not run measured CPUs for part of the run (steal time: {}): a \
             wake-up late by up to that much may be the host's, not this machine's",
            stolen.join(", ")
        )
    })
}

/// The timer threads' results and placements. A thread that failed fails
/// a run that would otherwise have completed.
fn timer_results(
    plan: &RunPlan,
    joined: Vec<Joined>,
    end: &mut EndReason,
    warnings: &mut Vec<String>,
    placement: &mut Vec<Placement>,
) -> Vec<TimerResult> {
    let mut results = Vec::new();
    for (tp, (spec, live, outcome)) in plan.timers.iter().zip(joined) {
        if let Some(e) = &outcome.error {
            let msg = format!("timer_thread[{}]: {e}", spec.index);
            if matches!(
                end,
                EndReason::Completed | EndReason::CutShort { .. } | EndReason::Failed { .. }
            ) {
                *end = EndReason::Failed { error: msg.clone() };
            }
            warnings.push(msg);
        }
        let faults = outcome.usage.map_or(0, |u| u.minor_faults + u.major_faults);
        if plan.main.memlock && faults > 0 {
            // Memory locked for nothing: time the measuring thread spent in
            // the kernel that the machine did not impose (the counts are in
            // `measuring` whether locked or not).
            warnings.push(format!(
                "timer_thread[{}] took {faults} page faults while measuring, memory locked \
                 (compaction moves locked pages unless vm.compact_unevictable_allowed = 0)",
                spec.index
            ));
        }
        placement.push(Placement {
            who: format!("timer_thread[{}]", spec.index),
            id: live.tid.load(Ordering::Relaxed),
            cpuset: outcome.cpuset_seen.clone(),
            cpus: Some(spec.cpus.clone()),
        });
        results.extend(timer_result(tp, &spec, &live, outcome));
    }
    if let EndReason::CutShort { threads, .. } = end {
        for cut in threads.iter_mut() {
            cut.measured_ns = results
                .iter()
                .find(|t| t.index == cut.index)
                .map_or(0, measured_ns);
        }
    }
    results
}

/// How long a timer thread measured (ns): its deadlines, sampled or
/// missed, times its period.
fn measured_ns(t: &TimerResult) -> u64 {
    let deadlines = t.summary.samples.saturating_add(t.summary.missed_periods);
    deadlines.saturating_mul(t.period_ns)
}

/// Where a program ran (its first instance).
fn program_placement(p: &crate::programs::ProgramResult) -> Placement {
    Placement {
        who: format!("program[{}]", p.index),
        id: p.first_pid.unwrap_or(0),
        cpuset: p.cpuset.clone(),
        cpus: p
            .cpus_allowed
            .as_deref()
            .and_then(|c| crate::cpulist::parse(c).ok()),
    }
}

/// One timer thread's result, if it recorded anything.
fn timer_result(
    tp: &crate::plan::TimerPlan,
    spec: &measure::TimerSpec,
    live: &measure::live::LiveCounters,
    outcome: measure::TimerOutcome,
) -> Option<TimerResult> {
    let mut rec = outcome.recorder?;
    let taken = usize::try_from(rec.count).unwrap_or(usize::MAX);
    rec.samples.truncate(taken);
    Some(TimerResult {
        index: spec.index,
        tid: live.tid.load(Ordering::Relaxed),
        cpus: spec.cpus.clone(),
        cpu_first: outcome.cpus_seen.0,
        cpu_last: outcome.cpus_seen.1,
        sched: outcome.sched_seen.unwrap_or(spec.sched),
        deadline: outcome.deadline_seen,
        period_ns: spec.period_ns,
        // Where the file really is (under --outdir), as systress names it
        // when there is none.
        result_file: tp
            .path
            .strip_prefix(".")
            .unwrap_or(&tp.path)
            .display()
            .to_string(),
        summary: summarize(&rec),
        last_ns: (rec.count > 0).then(|| live.read().cur_ns),
        samples_ns: std::mem::take(&mut rec.samples),
        histo_size_us: rec.histo_size_us(),
        histogram_us: nonzero_buckets(&rec),
        hdr_histogram: hdr_buckets(&rec),
        series: rec.series.intervals(),
        spikes: rec.spikes.list(),
        measuring: outcome.usage,
        error: outcome.error,
    })
}

/// Writes every output of a result (one loop over `exports`), then the
/// closing texts on stdout; Err lists the files that could not be written.
pub fn write_outputs(result: &RunResult, exports: &ExportSet) -> anyhow::Result<()> {
    let failures = exports.write(result);
    super::closing::print_closings(result);
    if failures.is_empty() {
        Ok(())
    } else {
        Err(anyhow::anyhow!(failures.join("\n")))
    }
}

#[cfg(test)]
mod tests {
    use super::steal_warning;
    use crate::result::RunResult;

    /// Steal on a CPU a timer thread ran on is said, naming it; steal on
    /// another CPU, or none, is not.
    #[test]
    fn steal_on_a_measured_cpu_is_said() {
        let seed: RunResult = serde_json::from_str(include_str!(
            "../../tests/seeds/rtlab-result-irq-latency.json"
        ))
        .unwrap();
        let measured = seed.timers[0].cpus[0];
        let other = measured + 1;
        let w = steal_warning(&[(measured, 20.0), (other, 10.0)], &seed.timers).unwrap();
        assert!(w.contains(&format!("CPU {measured} 20 ms")), "{w}");
        assert!(!w.contains(&format!("CPU {other} ")), "{w}");
        assert_eq!(steal_warning(&[(other, 30.0)], &seed.timers), None);
        assert_eq!(steal_warning(&[(measured, 0.0)], &seed.timers), None);
        assert_eq!(steal_warning(&[], &seed.timers), None);
    }
}

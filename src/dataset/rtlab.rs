//! rtlab's own JSON result (`docs/result-schema.md`), read back into the
//! very types that wrote it ([`RunResult`]): one model of a result, so a
//! field renamed on one side cannot be forgotten on the other (a test
//! round-trips a real run and compares every byte).

use super::{Context, Details, Distribution, Format, ParseError, Quantile, Run, Stats, Thread};
use crate::result::{RunResult, TimerResult};
use crate::tune::knob::KnobStatus;
use serde::Deserialize;
use std::path::Path;

/// The part of a document read first: its schema, so that a result of
/// another schema is refused as such rather than as a missing field.
#[derive(Deserialize)]
struct Schema {
    schema: String,
}

/// Parses rtlab's JSON result.
pub(super) fn parse(text: &str, path: &Path) -> Result<Run, ParseError> {
    let head: Schema =
        serde_json::from_str(text).map_err(|e| ParseError::from_json(&e, "rtlab result"))?;
    if head.schema != crate::result::SCHEMA {
        return Err(ParseError::new(
            1,
            1,
            format!(
                "schema {:?}, this rtlab reads {:?}",
                head.schema,
                crate::result::SCHEMA
            ),
            "read it with the rtlab version that wrote it (rtlab_version in the file)",
        ));
    }
    let result: RunResult =
        serde_json::from_str(text).map_err(|e| ParseError::from_json(&e, "rtlab result"))?;
    if result.timers.len() > super::MAX_THREADS {
        return Err(ParseError::new(
            1,
            1,
            format!("more than {} timer threads", super::MAX_THREADS),
            "no rtlab run has this many; the file was altered",
        ));
    }
    if result.irq_tasks.len() > crate::config::MAX_IRQ_TASKS {
        return Err(ParseError::new(
            1,
            1,
            format!(
                "more than {} IRQ-to-task measurements",
                crate::config::MAX_IRQ_TASKS
            ),
            "no rtlab run has this many; the file was altered",
        ));
    }
    let task_threads: usize = result.task_latency.iter().map(|m| m.threads.len()).sum();
    if result.task_latency.len() > crate::config::MAX_TASK_LATENCY
        || task_threads > super::MAX_THREADS
    {
        return Err(ParseError::new(
            1,
            1,
            "more task-latency measurements or threads than rtlab keeps".to_string(),
            "no rtlab run has this many; the file was altered",
        ));
    }
    let periods: usize = result.noise.iter().map(|n| n.periods.len()).sum();
    if result.noise.len() > crate::config::MAX_NOISE
        || periods > crate::config::MAX_NOISE * 2 * crate::stats::noise::MAX_PERIODS
        || result
            .noise
            .iter()
            .any(|n| n.periods.len() > 2 * crate::stats::noise::MAX_PERIODS)
    {
        return Err(ParseError::new(
            1,
            1,
            "more noise threads or periods than rtlab keeps".to_string(),
            "no rtlab run has this many; the file was altered",
        ));
    }
    if result.timer_irq.len() > result.timers.len() {
        return Err(ParseError::new(
            1,
            1,
            "more IRQ-side measurements than timer threads".to_string(),
            "no rtlab run has this many; the file was altered",
        ));
    }
    Ok(of_result(&result, path))
}

/// A run's result (read back, or just made) as a run of the dataset.
pub(super) fn of_result(result: &RunResult, path: &Path) -> Run {
    // Each timer thread, then its IRQ side: the two side by side.
    let mut threads: Vec<Thread> = Vec::new();
    for t in &result.timers {
        threads.push(thread(t));
        if let Some(irq) = result.timer_irq.iter().find(|i| i.timer == t.index) {
            let cpu = t.cpu_first.or_else(|| t.cpus.first().copied());
            let name = format!("T{}.irq", t.index);
            threads.push(summary_thread(name, cpu, &irq.latency, &irq.hdr_histogram).timer_irq());
        }
    }
    threads.extend(result.irq_tasks.iter().map(irq_task));
    for m in &result.task_latency {
        threads.extend(m.threads.iter().map(|t| task_thread(m.spec.index, t)));
    }
    let context = context(result);
    let details = details(result);
    let mut run = Run::new(path, Format::Rtlab, context, threads, details);
    run.all.noise = noise_stats(&result.noise);
    run.noise = result.noise.iter().map(noise_thread).collect();
    run
}

/// A noise thread as the run's: its figures as stated, its gaps' two
/// histograms (exact, HDR) as one, by length.
fn noise_thread(n: &crate::result::NoiseResult) -> super::NoiseThread {
    let mut gaps: Vec<(u64, u64, u64)> = n
        .gaps_exact
        .iter()
        .map(|&(ns, count)| (ns, ns, count))
        .chain(n.gaps_hdr.iter().map(|b| (b.low_ns, b.high_ns, b.count)))
        .collect();
    gaps.sort_by_key(|g| (g.0, g.1));
    super::NoiseThread {
        name: format!("N{}", n.index),
        cpu: n.cpu,
        counter: n.counter_said(),
        threshold_ns: n.threshold_ns,
        summary: n.summary.clone(),
        gaps,
        periods: n.periods.clone(),
        period_ns: n.period_ns.saturating_mul(n.periods_merged.max(1)),
        worst: n.worst.clone(),
        attribution: n.attribution.clone(),
        attribution_unavailable: n.attribution_unavailable.clone(),
        error: n.error.clone(),
    }
}

/// An IRQ-to-task measurement as a thread of the run: its delays from the
/// handler's exit, with the CPU of its task when it was one.
fn irq_task(m: &crate::trace::irq_task::IrqTaskResult) -> Thread {
    let mut task_cpus = m.cpu_pairs.iter().map(|p| p.task_cpu);
    let first = task_cpus.next();
    let cpu = first.filter(|c| task_cpus.all(|x| x == *c));
    summary_thread(format!("I{}", m.index), cpu, &m.from_exit, &m.hdr_histogram).irq_to_task()
}

/// A measurement of a summary and its HDR buckets as a thread of the run
/// (no overruns: it has no period of its own).
fn summary_thread(
    name: String,
    cpu: Option<usize>,
    s: &crate::stats::Summary,
    hdr: &[crate::stats::HdrBucket],
) -> Thread {
    let (stats, distribution) = summary_stats(s, hdr);
    let histogram_us = super::per_us(hdr.iter().map(|b| (b.low_ns, b.count)));
    Thread::new(
        name,
        cpu,
        Stats {
            overruns: None,
            ..stats
        },
        histogram_us,
        None,
        distribution,
    )
}

/// A thread of a `task_latency[N]` as a thread of the run (`L0.TID`): its
/// latencies from release to switch-in, as a timer thread's, and its
/// deadline misses where the period or deadline applies to it.
fn task_thread(index: usize, t: &crate::trace::task_latency::TaskThreadResult) -> Thread {
    let mut thread = summary_thread(
        format!("L{index}.{}", t.tid),
        None,
        &t.latency,
        &t.hdr_histogram,
    );
    thread.stats.deadline_misses = t.deadline_misses;
    thread
}

/// The statistics and distribution of a summary and its HDR buckets.
fn summary_stats(
    s: &crate::stats::Summary,
    hdr: &[crate::stats::HdrBucket],
) -> (Stats, Distribution) {
    let some = |v: u64| (s.samples > 0).then_some(v);
    let stats = Stats {
        samples: s.samples,
        min_ns: some(s.min_ns),
        mean_ns: (s.samples > 0).then_some(s.mean_ns),
        max_ns: some(s.max_ns),
        stddev_ns: (s.samples > 0).then_some(s.stddev_ns),
        percentiles: s
            .percentiles
            .iter()
            .map(|p| Quantile {
                name: p.name.clone(),
                quantile: p.quantile,
                value_ns: some(p.value_ns),
            })
            .collect(),
        overruns: Some(s.overruns),
        beyond_histogram: Some(s.beyond_histogram),
        deadline_misses: None,
        noise: None,
    };
    let distribution = Distribution::new(
        hdr.iter()
            .map(|b| (b.high_ns.min(s.max_ns), b.count))
            .collect(),
        s.hdr_out_of_range,
    );
    (stats, distribution)
}

fn thread(t: &TimerResult) -> Thread {
    let (stats, distribution) = summary_stats(&t.summary, &t.hdr_histogram);
    // The HDR histogram holds every sample: the 1-µs view is made from it,
    // so the plot shows samples beyond histo_size too.
    let histogram_us = super::per_us(t.hdr_histogram.iter().map(|b| (b.low_ns, b.count)));
    Thread::new(
        format!("T{}", t.index),
        t.cpu_first.or_else(|| t.cpus.first().copied()),
        stats,
        histogram_us,
        Some(t.series.clone()).filter(|s| !s.intervals.is_empty()),
        distribution,
    )
    .with_spikes(t.spikes.worst.clone())
}

/// `Some(text)` unless it is empty.
fn given(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_string())
}

fn context(r: &RunResult) -> Context {
    let p = &r.system.preemption;
    let preemption = given(&p.model).map(|m| match &p.dynamic_mode {
        Some(mode) => format!("{m} ({mode})"),
        None => m,
    });
    Context {
        host: given(&r.system.hostname),
        kernel: given(&r.system.kernel_release),
        preemption,
        isolation: Some(isolation(r)),
        load: Some(if r.programs.is_empty() {
            "none".to_string()
        } else {
            let argvs: Vec<String> = r.programs.iter().map(|p| p.argv.join(" ")).collect();
            argvs.join("; ")
        }),
        governor: Some(governor(r)),
        started: given(&r.start_time),
        duration_s: Some(r.elapsed_ns as f64 / 1e9),
        lower_bounds: lower_bounds(r),
        steal: steal(r),
    }
}

/// The steal time of the measured CPUs: `24 ms (CPU 1)`, `30 ms (CPU 0
/// 6, CPU 1 24)`, `0 ms`; None when the result has none recorded.
fn steal(r: &RunResult) -> Option<String> {
    if r.steal_ms.is_empty() {
        return None;
    }
    let measured: Vec<_> = crate::result::steal(&r.steal_ms, &r.timers)
        .into_iter()
        .filter(|s| s.measured)
        .collect();
    let total: f64 = measured.iter().map(|s| s.ms).sum();
    let stolen: Vec<_> = measured.iter().filter(|s| s.ms > 0.0).collect();
    Some(match stolen[..] {
        [] => "0 ms".to_string(),
        [one] => format!("{total:.0} ms (CPU {})", one.cpu),
        _ => {
            let each: Vec<String> = stolen
                .iter()
                .map(|s| format!("CPU {} {:.0}", s.cpu, s.ms))
                .collect();
            format!("{total:.0} ms ({})", each.join(", "))
        }
    })
}

/// `I0 12 of 3072; I1 0 of 40`: how many IRQ-to-task samples are lower
/// bounds.
fn lower_bounds(r: &RunResult) -> Option<String> {
    let parts: Vec<String> = r
        .irq_tasks
        .iter()
        .map(|m| {
            format!(
                "I{} {} of {}",
                m.index, m.counts.switch_in_inferred, m.counts.matched
            )
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn isolation(r: &RunResult) -> String {
    let mut parts = Vec::new();
    if let Some(cpus) = given(&r.system.cpus_isolated) {
        parts.push(format!("isolcpus {cpus}"));
    }
    if let Some(cpus) = given(&r.system.cpus_nohz_full) {
        parts.push(format!("nohz_full {cpus}"));
    }
    let mut cpusets: Vec<String> = r
        .isolation
        .placement
        .iter()
        .filter(|p| p.who.starts_with("timer"))
        .filter_map(|p| p.cpuset.clone())
        .filter(|c| !c.is_empty() && c != "/")
        .collect();
    cpusets.sort();
    cpusets.dedup();
    if !cpusets.is_empty() {
        parts.push(format!("timers in cpuset {}", cpusets.join(", ")));
    }
    // A partition whose CPUs hold timer threads placed there by CPU only
    // (a v2 isolated partition keeps the others off by itself).
    for p in &r.isolation.state.partitions {
        let inside = r.isolation.placement.iter().any(|t| {
            t.who.starts_with("timer")
                && t.cpus
                    .as_ref()
                    .is_some_and(|c| !c.is_empty() && c.iter().all(|c| p.cpus.contains(c)))
                && t.cpuset.as_deref() != Some(p.path.as_str())
                && t.cpuset.as_deref() != Some(&format!("/{}", p.name))
        });
        if inside && p.name != "nrt" {
            parts.push(format!(
                "timers on the CPUs of partition {} ({})",
                p.name,
                crate::cpulist::format(&p.cpus)
            ));
        }
    }
    if !r.isolation.partitions_changed.is_empty() {
        // The partition above did not hold for the whole run.
        parts.push(r.isolation.partitions_changed.join("; "));
    }
    if parts.is_empty() {
        "none".to_string()
    } else {
        parts.join("; ")
    }
}

fn governor(r: &RunResult) -> String {
    if let Some((set, _)) = &r.plan.main.tuning.governor {
        return format!("{set} (set for the run)");
    }
    let mut govs: Vec<String> = r.system.governors.values().cloned().collect();
    govs.sort();
    govs.dedup();
    if govs.is_empty() {
        "no cpufreq".to_string()
    } else {
        govs.join(", ")
    }
}

fn details(r: &RunResult) -> Details {
    let mut changes = Vec::new();
    if r.pm_qos.held {
        changes.push(format!(
            "PM QoS: cpu_dma_latency held at {} µs for the run (released when the run ended)",
            r.pm_qos
                .requested_us
                .map_or_else(|| "?".into(), |us| us.to_string())
        ));
    }
    for c in &r.tuning.changes {
        let what = format!("{} {}: {}", c.target, c.setting, c.new);
        changes.push(match &c.status {
            KnobStatus::Set { old } => format!("{what} (was {old}; restored at the end)"),
            KnobStatus::Refused { reason } => {
                format!("{what}: refused by the kernel ({reason})")
            }
            KnobStatus::AlreadySet => format!("{what} (already set)"),
            KnobStatus::NotOffered => format!("{what} (not offered)"),
        });
    }
    for g in &r.tuning.cpu_bandwidth {
        changes.push(format!(
            "CPU bandwidth group {} ({}): quota {} µs per {} µs, throttled in {} of {} periods ({} ms); removed at the end",
            g.name,
            g.cgroup,
            g.bandwidth
                .quota_us
                .map_or_else(|| "max".into(), |q| q.to_string()),
            g.bandwidth.period_us,
            g.nr_throttled,
            g.nr_periods,
            g.throttled_ms,
        ));
    }
    let programs = r
        .programs
        .iter()
        .map(|p| {
            format!(
                "{}: started {}, ended {}{}",
                p.argv.join(" "),
                crate::text::times(p.starts),
                crate::text::times(p.exits_total),
                p.spawn_error
                    .as_ref()
                    .map(|e| format!(", could not start: {e}"))
                    .unwrap_or_default()
            )
        })
        .collect();
    let end = Some(r.end.describe());
    Details {
        system: serde_json::to_value(&r.system).ok(),
        configuration: serde_json::to_value(&r.plan).ok(),
        command: None,
        changes,
        programs,
        end,
        warnings: r.warnings.clone(),
        steal: crate::result::steal(&r.steal_ms, &r.timers),
        trace: r.trace.clone(),
        audit: r.audit.clone(),
        irq_tasks: r.irq_tasks.clone(),
        task_latency: r.task_latency.clone(),
    }
}

/// The noise threads' figures together; None without noise threads.
fn noise_stats(noise: &[crate::result::NoiseResult]) -> Option<super::NoiseStats> {
    if noise.is_empty() {
        return None;
    }
    // Saturating: a result file is untrusted, and its sums must not wrap.
    let sum = |f: fn(&crate::stats::noise::NoiseSummary) -> u64| {
        noise
            .iter()
            .fold(0u64, |acc, n| acc.saturating_add(f(&n.summary)))
    };
    Some(super::NoiseStats {
        max_single_ns: noise
            .iter()
            .map(|n| n.summary.max_single_ns)
            .max()
            .unwrap_or(0),
        noise_ns: sum(|s| s.noise_ns),
        runtime_ns: sum(|s| s.runtime_ns),
        gaps: sum(|s| s.gaps),
    })
}

//! rtlab's JSON results read back: exact figures, merged threads, the
//! audit, IRQ-to-task and IRQ sides, older results, the context.

use super::tests::*;
use super::*;
use crate::stats::summarize;

#[test]
fn rtlab_result_reads_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let (t, _) = timer(0, &latencies(20_000, 3));
    let run = load(&write(
        &dir,
        "idle.json",
        &rtlab_doc(std::slice::from_ref(&t)),
    ))
    .unwrap();
    assert_eq!(run.format, Format::Rtlab);
    assert_eq!(run.label, "idle");
    let s = &run.threads[0].stats;
    assert_eq!(s.samples, t.summary.samples);
    assert_eq!(s.min_ns, Some(t.summary.min_ns));
    assert_eq!(s.max_ns, Some(t.summary.max_ns));
    assert_eq!(s.mean_ns, Some(t.summary.mean_ns));
    assert_eq!(s.beyond_histogram, Some(t.summary.beyond_histogram));
    // The percentile rule here is hdrhistogram's: recomputing from the
    // buckets gives the recorder's own values.
    let again = run.threads[0].distribution.quantiles(s.max_ns);
    for (p, q) in t.summary.percentiles.iter().zip(&again) {
        assert_eq!(Some(p.value_ns), q.value_ns, "{}", p.name);
    }
    // The 1-µs view holds every sample, the ones beyond histo_size too.
    let placed: u64 = run.threads[0].histogram_us.iter().map(|b| b.1).sum();
    assert_eq!(placed, t.summary.samples);
    assert!(t.summary.beyond_histogram > 0);
    assert_eq!(run.threads[0].series.as_ref().unwrap().intervals.len(), 200);
    let c = &run.context;
    assert_eq!(c.kernel.as_deref(), Some("6.18.0-rt"));
    assert_eq!(c.preemption.as_deref(), Some("PREEMPT_RT"));
    assert_eq!(
        c.isolation.as_deref(),
        Some("isolcpus 1; timers in cpuset /rtlab-rt")
    );
    assert_eq!(c.load.as_deref(), Some("ping -f localhost"));
    assert_eq!(c.governor.as_deref(), Some("performance"));
    assert_eq!(c.duration_s, Some(60.0));
    assert_eq!(run.details.changes.len(), 2, "{:?}", run.details.changes);
    assert!(run.details.changes[1].contains("was 0-1; restored"));
}

#[test]
fn all_threads_merge_like_one_recorder() {
    let (a, b) = (latencies(30_000, 5), latencies(10_000, 9));
    let dir = tempfile::tempdir().unwrap();
    let (ta, _) = timer(0, &a);
    let (tb, _) = timer(1, &b);
    let run = load(&write(&dir, "two.json", &rtlab_doc(&[ta, tb]))).unwrap();
    let both: Vec<u64> = a.iter().chain(&b).copied().collect();
    let (_, r) = timer(0, &both);
    let whole = summarize(&r);
    let all = &run.all;
    assert_eq!(all.samples, whole.samples);
    assert_eq!(all.min_ns, Some(whole.min_ns));
    assert_eq!(all.max_ns, Some(whole.max_ns));
    assert!((all.mean_ns.unwrap() - whole.mean_ns).abs() < 1e-6 * whole.mean_ns);
    assert!((all.stddev_ns.unwrap() - whole.stddev_ns).abs() < 1e-6 * whole.stddev_ns);
    for (p, q) in whole.percentiles.iter().zip(&all.percentiles) {
        assert_eq!(Some(p.value_ns), q.value_ns, "{}", p.name);
    }
    assert_eq!(all.beyond_histogram, Some(whole.beyond_histogram));
}

#[test]
fn a_real_result_is_read_by_the_types_that_wrote_it() {
    // One model: a real run's JSON (tests/seeds) read into RunResult and
    // written again is the same document, every field of it.
    let seed = include_str!("../../tests/seeds/rtlab-result.json");
    let as_written: serde_json::Value = serde_json::from_str(seed).unwrap();
    let model: crate::result::RunResult = serde_json::from_str(seed).unwrap();
    assert_eq!(serde_json::to_value(&model).unwrap(), as_written);
}

#[test]
fn a_result_with_an_audit_and_an_irq_task_reads_back_whole() {
    // A real run (tests/seeds) with a timer thread, an isolation audit and
    // an IRQ-to-task measurement: every field written is read back; the
    // measurement is thread I0 beside T0, and the run's figure is T0's.
    let seed = include_str!("../../tests/seeds/rtlab-result-trace-experiments.json");
    let as_written: serde_json::Value = serde_json::from_str(seed).unwrap();
    let model: crate::result::RunResult = serde_json::from_str(seed).unwrap();
    assert_eq!(serde_json::to_value(&model).unwrap(), as_written);
    let m = &model.irq_tasks[0];
    let c = &m.counts;
    assert_eq!(
        c.irqs,
        c.matched + c.task_running + c.no_wakeup + c.other_cause_total() + c.unresolved
    );
    assert!(model.audit.as_ref().is_some_and(|a| !a.rows.is_empty()));
    let dir = tempfile::tempdir().unwrap();
    let run = load(&write(&dir, "trace.json", seed)).unwrap();
    let names: Vec<&str> = run.threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["T0", "I0"]);
    assert_eq!(run.threads[1].measures, super::Measures::IrqToTask);
    assert_eq!(run.threads[1].stats.samples, c.matched);
    assert_eq!(run.threads[1].stats.max_ns, Some(m.from_exit.max_ns));
    assert_eq!(run.all, run.threads[0].stats);
    assert!(run.details.audit.is_some());
}

#[test]
fn a_timer_threads_irq_side_is_beside_it_and_not_in_the_runs_figure() {
    // A real run with `irq_latency` (tests/seeds): T0 then T0.irq; the
    // run's figure is the thread's alone.
    let seed = include_str!("../../tests/seeds/rtlab-result-irq-latency.json");
    let model: crate::result::RunResult = serde_json::from_str(seed).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = load(&write(&dir, "irq.json", seed)).unwrap();
    let names: Vec<&str> = run.threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["T0", "T0.irq"]);
    assert_eq!(run.threads[1].measures, super::Measures::TimerIrq);
    let irq = &model.timer_irq[0].latency;
    assert_eq!(run.threads[1].stats.samples, irq.samples);
    assert_eq!(run.threads[1].stats.max_ns, Some(irq.max_ns));
    assert_eq!(run.all, run.threads[0].stats);
    assert_eq!(run.all.samples, model.timers[0].summary.samples);
}

#[test]
fn a_result_written_before_spikes_were_kept_still_loads() {
    // A real run of the version before `spikes` (tests/seeds): the new
    // fields take their defaults, the figures are read as written.
    let old = include_str!("../../tests/seeds/rtlab-result-before-spikes.json");
    let model: crate::result::RunResult = serde_json::from_str(old).unwrap();
    assert!(model.timers.iter().all(|t| t.spikes.worst.is_empty()));
    let dir = tempfile::tempdir().unwrap();
    let run = load(&write(&dir, "old.json", old)).unwrap();
    assert_eq!(run.threads.len(), model.timers.len());
}

#[test]
fn timers_on_a_partitions_cpus_say_so_in_the_context() {
    // A real run (tests/seeds), as if its timers had run on the CPUs of an
    // `rt` partition without entering its cpuset (a v2 isolated partition).
    let seed = include_str!("../../tests/seeds/rtlab-result.json");
    let mut v: serde_json::Value = serde_json::from_str(seed).unwrap();
    v["isolation"]["partitions"] = serde_json::json!([
        {"name": "rt", "path": "/rt", "cpus": [0, 1], "exclusive": null,
         "load_balance": null, "partition": "isolated", "tasks": 3},
    ]);
    let dir = tempfile::tempdir().unwrap();
    let run = load(&write(&dir, "part.json", &v.to_string())).unwrap();
    let iso = run.context.isolation.unwrap();
    assert!(
        iso.contains("timers on the CPUs of partition rt (0-1)"),
        "{iso}"
    );
    // The same run without the partition: none.
    let run = load(&write(&dir, "plain.json", seed)).unwrap();
    assert_eq!(run.context.isolation.as_deref(), Some("none"));
}

#[test]
fn noise_threads_read_back_as_their_result_states_them() {
    let dir = tempfile::tempdir().unwrap();
    let (t, _) = timer(0, &latencies(2_000, 3));
    let noise = [noise_result(0, 1), noise_result(1, 3)];
    let run = load(&write(&dir, "n.json", &rtlab_noise_doc(&[t], &noise))).unwrap();
    assert_eq!(run.noise.len(), 2);
    let n = &run.noise[1];
    assert_eq!((n.name.as_str(), n.cpu), ("N1", 3));
    assert_eq!(n.counter, "TSC at 2596.1 MHz");
    assert_eq!(n.threshold_ns, 5000);
    assert_eq!(n.summary, noise[1].summary);
    assert_eq!(n.periods, noise[1].periods);
    // Two periods in each entry: each entry is 2 s long.
    assert_eq!(n.period_ns, 2_000_000_000);
    assert_eq!(n.worst, noise[1].worst);
    // The exact gaps and the HDR buckets, as one histogram by length.
    assert_eq!(
        n.gaps,
        vec![
            (20, 20, 1_000_000),
            (30, 30, 40),
            (8_992, 9_000, 29),
            (119_936, 120_000, 1)
        ]
    );
    // The timer thread is still the run's latency.
    assert_eq!(run.threads.len(), 1);
    assert_eq!(run.all.noise.unwrap().gaps, 60);
}

#[test]
fn a_result_without_noise_threads_has_none_and_hostile_sums_do_not_wrap() {
    let dir = tempfile::tempdir().unwrap();
    let (t, _) = timer(0, &latencies(2_000, 3));
    let run = load(&write(&dir, "t.json", &rtlab_doc(&[t]))).unwrap();
    assert!(run.noise.is_empty() && run.all.noise.is_none());
    let mut big = [noise_result(0, 1), noise_result(1, 2)];
    for n in &mut big {
        n.summary.noise_ns = u64::MAX;
        n.summary.runtime_ns = u64::MAX;
        n.periods_merged = u64::MAX;
    }
    let run = load(&write(&dir, "big.json", &rtlab_noise_doc(&[], &big))).unwrap();
    assert_eq!(run.all.noise.unwrap().noise_ns, u64::MAX);
    assert_eq!(run.noise[0].period_ns, u64::MAX);
}

#[test]
fn a_real_noise_result_is_read_by_the_types_that_wrote_it() {
    // A real run of a timer thread and a noise thread on one CPU: every
    // field of its noise part written again as it was read, and the run's
    // noise threads are its figures.
    let seed = include_str!("../../tests/seeds/rtlab-result-noise.json");
    let as_written: serde_json::Value = serde_json::from_str(seed).unwrap();
    let model: crate::result::RunResult = serde_json::from_str(seed).unwrap();
    assert_eq!(serde_json::to_value(&model).unwrap(), as_written);
    let run = parse_bytes(seed.as_bytes(), std::path::Path::new("noise.json")).unwrap();
    assert_eq!(run.noise.len(), 1);
    let (n, r) = (&run.noise[0], &model.noise[0]);
    assert_eq!(n.summary, r.summary);
    assert_eq!(n.periods, r.periods);
    let counted: u64 = n.gaps.iter().map(|g| g.2).sum();
    assert_eq!(counted, r.summary.reads);
    assert!(n.gaps.windows(2).all(|w| w[0].0 <= w[1].0));
}

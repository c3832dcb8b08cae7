//! The metrics of a monitoring run, as Prometheus reads them: one
//! [`Metrics`] state that the run's main thread refreshes, encoded by the
//! official client (`prometheus-client`) for the `/metrics` endpoint and
//! the node_exporter textfile alike.

use crate::measure::live::METRIC_BOUNDS_NS;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::sync::{Arc, Mutex};

/// Labels of every series: what slices a fleet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Machine {
    /// Host name.
    pub host: String,
    /// Kernel release.
    pub kernel: String,
    /// Preemption model (`PREEMPT_RT`, `PREEMPT_DYNAMIC (full)`...).
    pub preemption: String,
    /// rtlab's version.
    pub version: String,
    /// A hash of the kernel command line (FNV-1a, hex): boards booted
    /// alike share it.
    pub cmdline_hash: String,
}

/// One timer thread's figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TimerMetrics {
    /// `T<N>`.
    pub index: usize,
    /// The CPU it is pinned to, when one.
    pub cpu: Option<usize>,
    /// Samples per bucket of [`METRIC_BOUNDS_NS`] and the rest.
    pub buckets: Vec<u64>,
    /// Sum of latencies (ns).
    pub sum_ns: u64,
    /// Overruns and missed periods.
    pub overruns: u64,
    /// Periods skipped by overruns.
    pub missed_periods: u64,
    /// Largest latency since the start (ns).
    pub max_ns: u64,
    /// Largest latency of the last refresh (ns), None when it had no
    /// sample (what the windows file's max per window is made of).
    pub window_max_ns: Option<u64>,
    /// Largest latency of the last minute, sliding (ns): a scrape every
    /// minute or more often sees every spike through it.
    pub recent_max_ns: Option<u64>,
    /// Wake-ups at or above the flight recorder's threshold.
    pub spikes: u64,
}

/// One timer thread's IRQ side (`irq_latency`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IrqMetrics {
    /// `T<N>`.
    pub index: usize,
    /// The CPU it is pinned to, when one.
    pub cpu: Option<usize>,
    /// Samples per bucket of [`METRIC_BOUNDS_NS`] and the rest.
    pub buckets: Vec<u64>,
    /// Sum of latencies (ns).
    pub sum_ns: u64,
}

/// One thread of a task-latency measurement (`task_latency[N]`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskMetrics {
    /// N of `task_latency[N]`.
    pub index: usize,
    /// The thread.
    pub tid: i32,
    /// Its name (`comm`).
    pub comm: String,
    /// Latencies per bucket of [`METRIC_BOUNDS_NS`] and the rest.
    pub buckets: Vec<u64>,
    /// Sum of latencies (ns).
    pub sum_ns: u64,
    /// Largest latency since the start (ns).
    pub max_ns: u64,
    /// Cycles ended past the deadline, where the stated period or
    /// deadline applies to the thread.
    pub deadline_misses: Option<u64>,
}

/// One noise thread's figures so far (`noise_thread[N]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NoiseMetrics {
    /// N of `noise_thread[N]`.
    pub index: usize,
    /// The CPU it polls.
    pub cpu: usize,
    /// Noise so far: the sum of its gaps at or over the threshold (ns).
    pub noise_ns: u64,
    /// Its gaps at or over the threshold so far.
    pub gaps: u64,
    /// Its largest gap so far (ns).
    pub max_gap_ns: u64,
    /// Time it polled so far (ns).
    pub runtime_ns: u64,
}

/// One load program's figures.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProgramMetrics {
    /// N of `program[N]`.
    pub index: usize,
    /// Its command name (argv[0]'s file name).
    pub command: String,
    /// Times started (the first start and every respawn).
    pub starts: u64,
    /// Times it ended.
    pub exits: u64,
}

/// Everything a scrape shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    /// The machine's labels.
    pub machine: Machine,
    /// Per timer thread.
    pub timers: Vec<TimerMetrics>,
    /// Per program.
    pub programs: Vec<ProgramMetrics>,
    /// Busy fraction (0..1) per CPU over the last refresh.
    pub cpu_busy: Vec<(usize, f64)>,
    /// The flight recorder's culprits: (kind, what, main cause of how many).
    pub causes: Vec<(String, String, u64)>,
    /// Each timer thread's IRQ side (`irq_latency`).
    pub irq: Vec<IrqMetrics>,
    /// CPUs of each cpuset partition (`rt`, `nrt`).
    pub partitions: Vec<(String, usize)>,
    /// System settings the run holds changed.
    pub tuning_changes: u64,
    /// Each thread of each task-latency measurement.
    pub tasks: Vec<TaskMetrics>,
    /// Each CPU's steal time since boot (s), as `/proc/stat` counts it.
    pub cpu_steal_s: Vec<(usize, f64)>,
    /// Each noise thread.
    pub noise: Vec<NoiseMetrics>,
    /// Every real-time task's wake-ups (`--rt-tasks`).
    pub rt_wakeups: Option<crate::trace::rt_wakeups::RtWakeups>,
}

/// The shared state a scrape reads.
pub type Shared = Arc<Mutex<Metrics>>;

/// FNV-1a of `text`, as hex: a stable, dependency-free fingerprint.
pub fn fnv1a(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[derive(Debug)]
struct MetricsCollector(Shared);

type Labels = Vec<(String, String)>;

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

impl Metrics {
    fn base(&self) -> Labels {
        let m = &self.machine;
        vec![
            ("host".into(), m.host.clone()),
            ("kernel".into(), m.kernel.clone()),
            ("preemption".into(), m.preemption.clone()),
        ]
    }

    fn timer_labels(&self, t: &TimerMetrics) -> Labels {
        let mut l = self.base();
        l.push(("thread".into(), format!("T{}", t.index)));
        l.push((
            "cpu".into(),
            t.cpu.map_or_else(|| "any".into(), |c| c.to_string()),
        ));
        l
    }
}

/// Encodes a histogram of samples per bucket of [`METRIC_BOUNDS_NS`].
fn histogram(
    m: &mut prometheus_client::encoding::MetricEncoder<'_>,
    per_bucket: &[u64],
    sum_ns: u64,
) -> std::fmt::Result {
    let buckets: Vec<(f64, u64)> = per_bucket
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let le = METRIC_BOUNDS_NS.get(i).map_or(f64::INFINITY, |&b| secs(b));
            (le, n)
        })
        .collect();
    let count = per_bucket.iter().sum();
    m.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
        secs(sum_ns),
        count,
        &buckets,
        None,
    )
}

/// Encodes one family: a descriptor, then each (labels, value) with `f`.
fn family<T>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    rows: &[(Labels, T)],
    mut f: impl FnMut(&mut prometheus_client::encoding::MetricEncoder, &T) -> std::fmt::Result,
) -> std::fmt::Result {
    if rows.is_empty() {
        return Ok(());
    }
    let mut d = encoder.encode_descriptor(name, help, None, kind)?;
    for (labels, v) in rows {
        let mut m = d.encode_family(labels)?;
        f(&mut m, v)?;
    }
    Ok(())
}

fn counter(m: &mut prometheus_client::encoding::MetricEncoder, v: &u64) -> std::fmt::Result {
    m.encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(v, None)
}

fn gauge(m: &mut prometheus_client::encoding::MetricEncoder, v: &f64) -> std::fmt::Result {
    m.encode_gauge(v)
}

impl Collector for MetricsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        let s = self.0.lock().map_err(|_| std::fmt::Error)?.clone();
        s.encode_build(&mut encoder)?;
        s.encode_timers(&mut encoder)?;
        s.encode_tasks(&mut encoder)?;
        s.encode_noise(&mut encoder)?;
        s.encode_rt_wakeups(&mut encoder)?;
        s.encode_causes_and_programs(&mut encoder)?;
        s.encode_machine(&mut encoder)
    }
}

impl Metrics {
    /// rtlab_build: the version and the machine.
    fn encode_build(&self, encoder: &mut DescriptorEncoder) -> std::fmt::Result {
        let m = &self.machine;
        let info: Labels = vec![
            ("version".into(), m.version.clone()),
            ("host".into(), m.host.clone()),
            ("kernel".into(), m.kernel.clone()),
            ("preemption".into(), m.preemption.clone()),
            ("cmdline_hash".into(), m.cmdline_hash.clone()),
        ];
        let mut d = encoder.encode_descriptor(
            "rtlab_build",
            "rtlab and the machine it runs on",
            None,
            MetricType::Info,
        )?;
        d.encode_info(&info)
    }

    /// Each timer thread's histogram, overruns, spikes and maxima.
    fn encode_timers(&self, encoder: &mut DescriptorEncoder) -> std::fmt::Result {
        let s = self;
        let per_timer = |f: &dyn Fn(&TimerMetrics) -> Option<f64>| -> Vec<(Labels, f64)> {
            s.timers
                .iter()
                .filter_map(|t| Some((s.timer_labels(t), f(t)?)))
                .collect()
        };
        let hist: Vec<(Labels, &TimerMetrics)> =
            s.timers.iter().map(|t| (s.timer_labels(t), t)).collect();
        family(
            encoder,
            "rtlab_latency_seconds",
            "wake-up latency of each timer thread: from its deadline to its clock read",
            MetricType::Histogram,
            &hist,
            |m, t| histogram(m, &t.buckets, t.sum_ns),
        )?;
        let irq: Vec<(Labels, &IrqMetrics)> = s
            .irq
            .iter()
            .map(|i| {
                let labels = s.timer_labels(&TimerMetrics {
                    index: i.index,
                    cpu: i.cpu,
                    ..TimerMetrics::default()
                });
                (labels, i)
            })
            .collect();
        family(
            encoder,
            "rtlab_irq_latency_seconds",
            "the timer interrupt's side of each timer thread's wake-up: from its deadline to its timer's handling (irq_latency)",
            MetricType::Histogram,
            &irq,
            |m, i| histogram(m, &i.buckets, i.sum_ns),
        )?;
        let counts = |f: fn(&TimerMetrics) -> u64| -> Vec<(Labels, u64)> {
            s.timers.iter().map(|t| (s.timer_labels(t), f(t))).collect()
        };
        family(
            encoder,
            "rtlab_overruns",
            "wake-ups so late that the next period had begun",
            MetricType::Counter,
            &counts(|t| t.overruns),
            counter,
        )?;
        family(
            encoder,
            "rtlab_missed_periods",
            "periods skipped by overruns",
            MetricType::Counter,
            &counts(|t| t.missed_periods),
            counter,
        )?;
        family(
            encoder,
            "rtlab_spikes",
            "wake-ups at or above the flight recorder's threshold (trace.threshold)",
            MetricType::Counter,
            &counts(|t| t.spikes),
            counter,
        )?;
        family(
            encoder,
            "rtlab_latency_max_seconds",
            "largest wake-up latency since the start",
            MetricType::Gauge,
            &per_timer(&|t| (t.buckets.iter().sum::<u64>() > 0).then(|| secs(t.max_ns))),
            gauge,
        )?;
        family(
            encoder,
            "rtlab_latency_recent_max_seconds",
            "largest wake-up latency of the last minute (sliding)",
            MetricType::Gauge,
            &per_timer(&|t| t.recent_max_ns.map(secs)),
            gauge,
        )?;
        Ok(())
    }

    /// Each task-latency thread's histogram, max and deadline misses.
    fn encode_tasks(&self, encoder: &mut DescriptorEncoder) -> std::fmt::Result {
        let labels = |t: &TaskMetrics| {
            let mut l = self.base();
            l.push(("thread".into(), format!("L{}.{}", t.index, t.tid)));
            l.push(("comm".into(), t.comm.clone()));
            l
        };
        let hist: Vec<(Labels, &TaskMetrics)> = self.tasks.iter().map(|t| (labels(t), t)).collect();
        family(
            encoder,
            "rtlab_task_latency_seconds",
            "wake-up latency of each thread of a measured task: from its release (its timer's expiry, or its wake-up) to its switch-in (task_latency)",
            MetricType::Histogram,
            &hist,
            |m, t| histogram(m, &t.buckets, t.sum_ns),
        )?;
        let max: Vec<(Labels, f64)> = self
            .tasks
            .iter()
            .map(|t| (labels(t), secs(t.max_ns)))
            .collect();
        family(
            encoder,
            "rtlab_task_latency_max_seconds",
            "largest wake-up latency of each thread of a measured task since the start",
            MetricType::Gauge,
            &max,
            gauge,
        )?;
        let misses: Vec<(Labels, u64)> = self
            .tasks
            .iter()
            .filter_map(|t| Some((labels(t), t.deadline_misses?)))
            .collect();
        family(
            encoder,
            "rtlab_task_deadline_misses",
            "cycles of a measured task's thread that ended past the deadline (the threads the period or deadline applies to)",
            MetricType::Counter,
            &misses,
            counter,
        )
    }

    /// Every real-time task's wake-ups (`--rt-tasks`): a histogram per
    /// CPU, policy and priority (and of their timers' lateness), their p99
    /// and p99.9, the worst tasks by name, the wake-ups not counted, and
    /// the late ones' causes.
    fn encode_rt_wakeups(&self, encoder: &mut DescriptorEncoder) -> std::fmt::Result {
        let Some(w) = &self.rt_wakeups else {
            return Ok(());
        };
        let labels = |s: &crate::trace::rt_wakeups::RtSeries| {
            let mut l = self.base();
            l.push(("cpu".into(), s.cpu.to_string()));
            l.push(("policy".into(), s.policy.into()));
            l.push(("priority".into(), s.priority.clone()));
            l
        };
        let timers: Vec<_> = w.timer_series.iter().map(|s| (labels(s), s)).collect();
        family(
            encoder,
            "rtlab_rt_timer_late_seconds",
            "how late the timers that woke them fired, from a CLOCK_MONOTONIC timer's expiry to the wake-up in its callback, per CPU, policy and priority of the woken task (BPF)",
            MetricType::Histogram,
            &timers,
            |m, s| histogram(m, &s.buckets, s.sum_ns),
        )?;
        let irqs: Vec<_> = w.irq_series.iter().map(|s| (labels(s), s)).collect();
        family(
            encoder,
            "rtlab_rt_irq_to_task_seconds",
            "IRQ to task: from the exit of the interrupt handler whose work woke a task (in the handler, in a device softirq that handler raised, or by the IRQ's thread) to the task's switch-in, per CPU, policy and priority of the woken task (BPF)",
            MetricType::Histogram,
            &irqs,
            |m, s| histogram(m, &s.buckets, s.sum_ns),
        )?;
        let hist: Vec<_> = w.series.iter().map(|s| (labels(s), s)).collect();
        family(
            encoder,
            "rtlab_rt_wakeup_latency_seconds",
            "wake-up latency of every real-time task (every task with --all-tasks), from sched_waking to its switch-in, per CPU, policy and priority (BPF, aggregated in the kernel; tracefs where BPF cannot run)",
            MetricType::Histogram,
            &hist,
            |m, s| histogram(m, &s.buckets, s.sum_ns),
        )?;
        for (name, help, of) in [
            (
                "rtlab_rt_wakeup_p99_seconds",
                "p99 of each series of rtlab_rt_wakeup_latency_seconds, from the kernel's 1 µs buckets (the start of the bucket holding the rank)",
                (|s| s.p99_ns) as fn(&crate::trace::rt_wakeups::RtSeries) -> u64,
            ),
            (
                "rtlab_rt_wakeup_p999_seconds",
                "p99.9 of each series of rtlab_rt_wakeup_latency_seconds, from the kernel's 1 µs buckets (the start of the bucket holding the rank)",
                |s| s.p999_ns,
            ),
        ] {
            let rows: Vec<(Labels, f64)> =
                w.series.iter().map(|s| (labels(s), secs(of(s)))).collect();
            family(encoder, name, help, MetricType::Gauge, &rows, gauge)?;
        }
        let worst: Vec<(Labels, f64)> = w
            .tasks
            .iter()
            .map(|t| {
                let mut l = self.base();
                l.push(("comm".into(), t.comm.clone()));
                l.push(("policy".into(), t.policy.into()));
                l.push(("priority".into(), t.priority.to_string()));
                (l, secs(t.worst_ns))
            })
            .collect();
        family(
            encoder,
            "rtlab_rt_task_worst_latency_seconds",
            "the worst wake-up latency of the tasks counted (real-time ones; every task with --all-tasks) with the worst ones (at most 10 rows, one per name, policy and priority)",
            MetricType::Gauge,
            &worst,
            gauge,
        )?;
        family(
            encoder,
            "rtlab_rt_wakeups_lost",
            "wake-ups not in the histograms: the source's maps full (more than 16384 tasks woken and not yet run, or 16384 cells), or, from tracefs, a switch-in the kernel's trace did not log",
            MetricType::Counter,
            &[(self.base(), w.lost)],
            counter,
        )?;
        self.encode_rt_late(w, encoder)
    }

    /// The late real-time wake-ups (`--rt-late`): explained, by task and
    /// main cause; not explained; not sent, by reason.
    fn encode_rt_late(
        &self,
        w: &crate::trace::rt_wakeups::RtWakeups,
        encoder: &mut DescriptorEncoder,
    ) -> std::fmt::Result {
        let late: Vec<(Labels, u64)> = w
            .late_causes
            .iter()
            .map(|(k, n)| {
                let mut l = self.base();
                l.push(("comm".into(), k.comm.clone()));
                l.push(("kind".into(), k.kind.clone()));
                l.push(("cause".into(), k.cause.clone()));
                (l, *n)
            })
            .collect();
        family(
            encoder,
            "rtlab_rt_late_wakeups",
            "late real-time wake-ups (--rt-late) explained from the kernel's record of their CPU, by task and main cause (at most 64 pairs named, the rest as cause=\"other\"; at most one per CPU per 10 ms, and each CPU's worst so far)",
            MetricType::Counter,
            &late,
            counter,
        )?;
        family(
            encoder,
            "rtlab_rt_late_wakeups_not_explained",
            "late real-time wake-ups sent and not explained (the CPU's last 64 events not reaching back to the wake-up)",
            MetricType::Counter,
            &[(self.base(), w.late_not_explained)],
            counter,
        )?;
        let (ring_full, bounded) = w.late_not_sent;
        let reason = |r: &str| {
            let mut l = self.base();
            l.push(("reason".into(), r.into()));
            l
        };
        family(
            encoder,
            "rtlab_rt_late_wakeups_not_sent",
            "late real-time wake-ups not sent to be explained: reason=\"rate_bound\" (at most one per CPU per 10 ms, each CPU's worst always sent), reason=\"ring_full\" (the ring buffer full)",
            MetricType::Counter,
            &[
                (reason("rate_bound"), bounded),
                (reason("ring_full"), ring_full),
            ],
            counter,
        )
    }

    /// Each noise thread's noise, gaps, largest gap and runtime so far.
    fn encode_noise(&self, encoder: &mut DescriptorEncoder) -> std::fmt::Result {
        let rows = |f: fn(&NoiseMetrics) -> u64| -> Vec<(Labels, u64)> {
            self.noise
                .iter()
                .map(|n| {
                    let mut l = self.base();
                    l.push(("thread".into(), format!("N{}", n.index)));
                    l.push(("cpu".into(), n.cpu.to_string()));
                    (l, f(n))
                })
                .collect()
        };
        let seconds = |f: fn(&NoiseMetrics) -> u64| -> Vec<(Labels, f64)> {
            rows(f).into_iter().map(|(l, ns)| (l, secs(ns))).collect()
        };
        let seconds_counter = |m: &mut prometheus_client::encoding::MetricEncoder, v: &f64| {
            m.encode_counter::<prometheus_client::encoding::NoLabelSet, f64, u64>(v, None)
        };
        family(
            encoder,
            "rtlab_noise_seconds",
            "noise of each noise thread: the sum of its gaps at or over the threshold (noise.threshold), as rtla osnoise counts it",
            MetricType::Counter,
            &seconds(|n| n.noise_ns),
            seconds_counter,
        )?;
        family(
            encoder,
            "rtlab_noise_runtime_seconds",
            "time each noise thread polled its CPU (1 - noise/runtime: the share of the CPU available)",
            MetricType::Counter,
            &seconds(|n| n.runtime_ns),
            seconds_counter,
        )?;
        family(
            encoder,
            "rtlab_noise_gaps",
            "gaps of each noise thread at or over the threshold (noise.threshold)",
            MetricType::Counter,
            &rows(|n| n.gaps),
            counter,
        )?;
        family(
            encoder,
            "rtlab_noise_max_gap_seconds",
            "largest gap between two clock reads of each noise thread since the start",
            MetricType::Gauge,
            &seconds(|n| n.max_gap_ns),
            gauge,
        )
    }

    /// The flight recorder's causes and the load programs' starts and ends.
    fn encode_causes_and_programs(&self, encoder: &mut DescriptorEncoder) -> std::fmt::Result {
        let s = self;
        let causes: Vec<(Labels, u64)> = s
            .causes
            .iter()
            .map(|(kind, what, n)| {
                let mut l = s.base();
                l.push(("kind".into(), kind.clone()));
                l.push(("cause".into(), what.clone()));
                (l, *n)
            })
            .collect();
        family(
            encoder,
            "rtlab_spike_causes",
            "explained late wake-ups by their main cause (the flight recorder)",
            MetricType::Counter,
            &causes,
            counter,
        )?;
        let programs = |f: fn(&ProgramMetrics) -> u64| -> Vec<(Labels, u64)> {
            s.programs
                .iter()
                .map(|p| {
                    let mut l = s.base();
                    l.push(("program".into(), p.index.to_string()));
                    l.push(("command".into(), p.command.clone()));
                    (l, f(p))
                })
                .collect()
        };
        family(
            encoder,
            "rtlab_program_starts",
            "load program starts, respawns included",
            MetricType::Counter,
            &programs(|p| p.starts),
            counter,
        )?;
        family(
            encoder,
            "rtlab_program_exits",
            "load program ends",
            MetricType::Counter,
            &programs(|p| p.exits),
            counter,
        )?;
        Ok(())
    }

    /// CPU load, partitions and the settings the run holds changed.
    fn encode_machine(&self, encoder: &mut DescriptorEncoder) -> std::fmt::Result {
        let s = self;
        let busy: Vec<(Labels, f64)> = s
            .cpu_busy
            .iter()
            .map(|(cpu, b)| {
                let mut l = s.base();
                l.push(("cpu".into(), cpu.to_string()));
                (l, *b)
            })
            .collect();
        family(
            encoder,
            "rtlab_cpu_busy_ratio",
            "busy fraction of each CPU over the last refresh",
            MetricType::Gauge,
            &busy,
            gauge,
        )?;
        let partitions: Vec<(Labels, f64)> = s
            .partitions
            .iter()
            .map(|(name, n)| {
                let mut l = s.base();
                l.push(("partition".into(), name.clone()));
                (l, *n as f64)
            })
            .collect();
        family(
            encoder,
            "rtlab_partition_cpus",
            "CPUs of each cpuset partition",
            MetricType::Gauge,
            &partitions,
            gauge,
        )?;
        let steal: Vec<(Labels, f64)> = s
            .cpu_steal_s
            .iter()
            .map(|(cpu, secs)| {
                let mut l = s.base();
                l.push(("cpu".into(), cpu.to_string()));
                (l, *secs)
            })
            .collect();
        family(
            encoder,
            "rtlab_cpu_steal_seconds",
            "time the hypervisor ran something else while each vCPU wanted to run, since boot (/proc/stat's steal; node_cpu_seconds_total{mode=\"steal\"})",
            MetricType::Counter,
            &steal,
            |m, v| m.encode_counter::<prometheus_client::encoding::NoLabelSet, f64, u64>(v, None),
        )?;
        family(
            encoder,
            "rtlab_tuning_changes",
            "system settings the run holds changed (restored at its end)",
            MetricType::Gauge,
            &[(s.base(), s.tuning_changes as f64)],
            gauge,
        )?;
        Ok(())
    }
}

/// A registry that encodes `shared` on each scrape.
pub fn registry(shared: Shared) -> Registry {
    let mut r = Registry::default();
    r.register_collector(Box::new(MetricsCollector(shared)));
    r
}

/// The exposition text (OpenMetrics) of `registry`.
pub fn encode(registry: &Registry) -> String {
    let mut out = String::new();
    // Writing to a String fails only if a collector fails (a poisoned
    // lock): the scrape then gets what was written.
    let _ = prometheus_client::encoding::text::encode(&mut out, registry);
    out
}

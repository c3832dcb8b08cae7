//! A monitoring run's exporters: the figures the watch phase publishes at
//! each refresh for Prometheus, the textfile and the windows file.

use super::arm::Armed;
use super::watch::LoadSampler;
use super::{Before, RunOptions};
use crate::measure::TimerHandle;
use crate::messages;
use crate::monitor::metrics::{Metrics, NoiseMetrics, ProgramMetrics, TaskMetrics, TimerMetrics};
use crate::programs::ProgramResult;
use crate::sys::info::SystemSnapshot;
use crate::trace::flight::FlightRecorder;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// A monitoring run's exporters, and what its metrics say of the machine.
pub(super) struct Exporting {
    exporter: crate::monitor::Publisher,
    machine: crate::monitor::metrics::Machine,
    partitions: Vec<(String, usize)>,
    /// Per timer thread: the max of each refresh of the last minute.
    recent: Vec<VecDeque<(Instant, u64)>>,
    /// The BPF source of every real-time task's wake-ups (`--rt-tasks`).
    rt_tasks: Option<super::rt_tasks::RtTasksSource>,
}

/// How far back the exported recent max looks.
const RECENT: Duration = Duration::from_secs(60);

impl Exporting {
    /// Binds the endpoint and makes the files of a monitoring run.
    pub(super) fn start(opts: &RunOptions, before: &Before) -> anyhow::Result<Option<Exporting>> {
        let Some(spec) = &opts.monitor else {
            return Ok(None);
        };
        let machine = metrics_machine(&before.system);
        let first = Metrics {
            machine: machine.clone(),
            ..Metrics::default()
        };
        let mut exporter = crate::monitor::Publisher::start(spec, first)?;
        if let Some(addr) = exporter.listening() {
            messages::note(&format!("metrics at http://{addr}/metrics"));
        }
        let rt_tasks =
            super::rt_tasks::RtTasksSource::start(&opts.root, spec, &mut exporter.warnings);
        Ok(Some(Exporting {
            exporter,
            machine,
            rt_tasks,
            recent: Vec::new(),
            partitions: before
                .isolation
                .partitions
                .iter()
                .map(|p| (p.name.clone(), p.cpus.len()))
                .collect(),
        }))
    }

    /// Every task's (`Some(true)`) or every real-time task's wake-ups to
    /// count from the trace stream: BPF was refused.
    pub(super) fn rt_fallback(&self) -> Option<bool> {
        self.rt_tasks.as_ref().and_then(|s| s.trace_fallback())
    }

    /// The last figures, once the timer threads have stopped (every sample
    /// in the last window: the same counts as the result's); then the
    /// endpoint closes. Gives the exporters' warnings, and the BPF
    /// source's figure.
    pub(super) fn finish(
        mut self,
        armed: &Armed,
        load: &LoadSampler,
    ) -> (Vec<String>, Option<crate::trace::Figure>) {
        armed.timers.halt();
        armed.noise.halt();
        self.refresh(armed, load);
        let stream = armed.stream.as_ref();
        let figure = self.rt_tasks.take().map(|s| s.figure(stream));
        (self.exporter.finish(), figure)
    }

    /// Publishes the run's figures now. Gives what went wrong with the
    /// endpoint since the last refresh (each problem once).
    pub(super) fn refresh(&mut self, armed: &Armed, sampler: &LoadSampler) -> Vec<String> {
        let load = sampler.last.as_ref();
        self.recent
            .resize(armed.timers.handles.len(), Default::default());
        let now = Instant::now();
        let timers = armed
            .timers
            .handles
            .iter()
            .zip(&mut self.recent)
            .map(|(t, recent)| timer_metrics(t, recent, now))
            .collect();
        let programs = armed
            .supervisor
            .results()
            .iter()
            .map(program_metrics)
            .collect();
        let causes = armed
            .flight
            .as_ref()
            .map(FlightRecorder::causes)
            .unwrap_or_default();
        let irq = armed
            .stream
            .as_ref()
            .map(super::traces::timer_irq_live)
            .unwrap_or_default()
            .into_iter()
            .map(
                |(index, buckets, sum_ns)| crate::monitor::metrics::IrqMetrics {
                    index,
                    cpu: armed
                        .timers
                        .handles
                        .iter()
                        .find(|t| t.spec.index == index)
                        .and_then(|t| (t.spec.cpus.len() == 1).then(|| t.spec.cpus[0])),
                    buckets,
                    sum_ns,
                },
            )
            .collect();
        let tuning_changes = armed
            .tuning_changes
            .iter()
            .filter(|c| matches!(c.status, crate::tune::knob::KnobStatus::Set { .. }))
            .count() as u64;
        self.exporter.update(Metrics {
            machine: self.machine.clone(),
            timers,
            programs,
            cpu_busy: load
                .map(|l| l.per_cpu.iter().map(|&(c, b)| (c, b / 100.0)).collect())
                .unwrap_or_default(),
            causes,
            irq,
            partitions: self.partitions.clone(),
            tuning_changes,
            tasks: task_metrics(armed),
            cpu_steal_s: sampler.steal_since_boot(),
            noise: armed.noise.handles.iter().map(noise_metrics).collect(),
            rt_wakeups: self
                .rt_tasks
                .as_mut()
                .and_then(|s| s.read(armed.stream.as_ref())),
        });
        self.exporter.endpoint_news()
    }
}

/// One timer thread's figures now; `recent` keeps the max of each refresh
/// of the last [`RECENT`], from which the recent max is taken.
fn timer_metrics(
    t: &TimerHandle,
    recent: &mut VecDeque<(Instant, u64)>,
    now: Instant,
) -> TimerMetrics {
    let s = t.live.read();
    let window_max_ns = t.live.next_window();
    if let Some(m) = window_max_ns {
        recent.push_back((now, m));
    }
    while recent
        .front()
        .is_some_and(|(at, _)| now.duration_since(*at) > RECENT)
    {
        recent.pop_front();
    }
    TimerMetrics {
        index: t.spec.index,
        cpu: (t.spec.cpus.len() == 1).then(|| t.spec.cpus[0]),
        buckets: t.live.buckets().to_vec(),
        sum_ns: s.sum_ns,
        overruns: s.overruns,
        missed_periods: s.missed_periods,
        max_ns: s.max_ns,
        window_max_ns,
        recent_max_ns: recent.iter().map(|r| r.1).max(),
        spikes: s.over,
    }
}

/// One noise thread's figures now (its live counters, published by the
/// thread once a millisecond).
fn noise_metrics(n: &crate::measure::noise::NoiseHandle) -> NoiseMetrics {
    use std::sync::atomic::Ordering::Relaxed;
    let l = &n.live;
    NoiseMetrics {
        index: n.spec.index,
        cpu: n.spec.cpu,
        noise_ns: l.noise_ns.load(Relaxed),
        gaps: l.gaps.load(Relaxed),
        max_gap_ns: l.max_gap_ns.load(Relaxed),
        runtime_ns: l.runtime_ns.load(Relaxed),
    }
}

/// Each task-latency thread's figures now.
fn task_metrics(armed: &Armed) -> Vec<TaskMetrics> {
    let live = armed
        .stream
        .as_ref()
        .map(super::traces::task_latency_live)
        .unwrap_or_default();
    live.into_iter()
        .flat_map(|(index, threads)| {
            threads.into_iter().map(move |t| TaskMetrics {
                index,
                tid: t.tid,
                comm: t.comm,
                buckets: t.buckets,
                sum_ns: t.sum_ns,
                max_ns: t.max_ns,
                deadline_misses: t.deadline_misses,
            })
        })
        .collect()
}

/// One program's starts and exits, under its command's base name.
fn program_metrics(p: &ProgramResult) -> ProgramMetrics {
    ProgramMetrics {
        index: p.index,
        command: p
            .argv
            .first()
            .map(|a| a.rsplit('/').next().unwrap_or(a).to_string())
            .unwrap_or_default(),
        starts: p.starts,
        exits: p.exits_total,
    }
}

/// The labels of a monitoring run's metrics.
fn metrics_machine(system: &SystemSnapshot) -> crate::monitor::metrics::Machine {
    let p = &system.preemption;
    crate::monitor::metrics::Machine {
        host: system.hostname.clone(),
        kernel: system.kernel_release.clone(),
        preemption: match &p.dynamic_mode {
            Some(mode) => format!("{} ({mode})", p.model),
            None => p.model.clone(),
        },
        version: env!("CARGO_PKG_VERSION").into(),
        cmdline_hash: crate::monitor::metrics::fnv1a(&system.cmdline),
    }
}

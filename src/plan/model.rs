//! The plan itself: a validated run ([`RunPlan`]) with its main thread's
//! and timer threads' parts, and the command-line options that shape it.

use crate::config::{CpuLoadDisplay, StatsFormat};
use crate::isolate::cpuset::CpusetTarget;
use crate::measure::TimerSpec;
use crate::programs::ProgramSpec;
use crate::sys::os::Sched;
use serde::Serialize;
use std::path::PathBuf;

use super::TuningSpec;

/// Options from the command line that shape the plan.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// Directory for result files (default: current directory).
    pub outdir: Option<PathBuf>,
    /// Debug level override (`-d`).
    pub dbg_level: Option<u8>,
    /// The run writes no result files (`rtlab cyclictest` without
    /// `--rtlab-outdir`): their paths are not checked.
    pub no_result_files: bool,
}

/// The main thread's part of the plan.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct MainPlan {
    /// CPUs of the main thread (None: left as inherited).
    pub cpus: Option<Vec<usize>>,
    /// `cpus` were chosen by rtlab to keep the main thread off the audited
    /// and measured CPUs (`main` gave no `cpu_affinity`): failing to pin is
    /// a warning.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub off_audited: bool,
    /// The CPUs rtlab keeps its own threads off: the audited ones and
    /// those of the programs a task-latency or IRQ-to-task measurement
    /// measures (absent when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_cpus: Option<Vec<usize>>,
    /// Its scheduling.
    pub sched: Sched,
    /// Live-table refresh period (ns).
    pub stats_period_ns: u64,
    /// Result-file format.
    pub stats_format: StatsFormat,
    /// CPU load display.
    pub cpu_load: CpuLoadDisplay,
    /// mlockall.
    pub memlock: bool,
    /// PM QoS request on /dev/cpu_dma_latency (µs), None = untouched.
    pub dma_latency_us: Option<u32>,
    /// Diagnostics verbosity.
    pub dbg_level: u8,
    /// Cpuset the main thread enters (v2: the whole process).
    pub cpuset: Option<CpusetTarget>,
    /// System settings held for the duration of the run.
    pub tuning: TuningSpec,
    /// The flight recorder, when `trace.threshold` is set (absent in older
    /// results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::trace::flight::TraceSpec>,
    /// `lifetime.duration`: the run ends after this long (ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime_ns: Option<u64>,
    /// `audit.cpus`: the CPUs the isolation audit watches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_cpus: Option<Vec<usize>>,
    /// `on_spike`: what the main thread does at a late wake-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_spike: Option<crate::spike_actions::SpikeActions>,
    /// `warmup` (ns): the timer threads' first wake-ups not counted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warmup_ns: u64,
    /// `irq_latency`: each timer thread's IRQ side, from the trace stream.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub irq_latency: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A timer thread's part of the plan: what the measurement layer needs,
/// plus where its result goes.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct TimerPlan {
    /// The thread itself.
    #[serde(flatten)]
    pub spec: TimerSpec,
    /// The result file name as written in the closing lines.
    pub filename: String,
    /// Where it is written.
    pub path: PathBuf,
}

/// A run, validated against the machine: everything needed to start it.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct RunPlan {
    /// The experiment file, or `<built-in>`.
    pub source: String,
    /// Directory of result files.
    pub outdir: PathBuf,
    /// The conductor.
    pub main: MainPlan,
    /// Timer threads by index.
    pub timers: Vec<TimerPlan>,
    /// Programs by index.
    pub programs: Vec<ProgramSpec>,
    /// CPU bandwidth groups of the programs.
    pub cpu_groups: Vec<crate::tune::bandwidth::GroupSpec>,
    /// IRQ-to-task measurements (absent in older results).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub irq_tasks: Vec<crate::trace::irq_task::IrqTaskSpec>,
    /// Task-latency measurements (absent in older results).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub task_latency: Vec<crate::trace::task_latency::TaskLatencySpec>,
    /// Noise threads by index (absent in older results).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub noise: Vec<NoisePlan>,
}

/// A noise thread's part of the plan.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct NoisePlan {
    /// The thread itself.
    #[serde(flatten)]
    pub spec: crate::measure::noise::NoiseSpec,
    /// Its gaps are attributed from the trace stream (`attribute`).
    pub attribute: bool,
    /// Why the counter was chosen.
    pub counter_why: String,
}

impl RunPlan {
    /// Whether the run reads a trace stream (an audit, an IRQ-to-task or
    /// a task-latency measurement).
    pub fn streams(&self) -> bool {
        self.main.audit_cpus.is_some()
            || self.main.irq_latency
            || !self.irq_tasks.is_empty()
            || !self.task_latency.is_empty()
            || self.noise.iter().any(|n| n.attribute)
    }

    /// When `main`'s `lifetime.duration` ends the run, from the timer
    /// threads' release (ns): the warm-up first, then the lifetime, so
    /// that the timer threads measure the whole of it.
    pub fn run_lifetime_ns(&self) -> Option<u64> {
        let life = self.main.lifetime_ns?;
        Some(life.saturating_add(self.main.warmup_ns))
    }

    /// How long the run lasts from the timer threads' release when nothing
    /// stops it (ns): `main`'s lifetime, or the longest timer thread's
    /// when each has one, the warm-up included.
    pub fn planned_length_ns(&self) -> Option<u64> {
        let own: Option<Vec<u64>> = self
            .timers
            .iter()
            .map(|t| t.spec.own_lifetime_ns())
            .collect();
        let longest = own
            .and_then(|o| o.into_iter().max())
            .map(|ns| ns.saturating_add(self.main.warmup_ns));
        match (self.run_lifetime_ns(), longest) {
            (Some(life), Some(t)) => Some(life.min(t)),
            (life, t) => life.or(t),
        }
    }
}

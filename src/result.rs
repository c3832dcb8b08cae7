//! The result of a run: the one model every output renders (result files,
//! closing lines, JSON). Nothing is computed by the renderers that is not
//! here. Its JSON form is versioned by [`SCHEMA`] and documented in
//! `docs/result-schema.md`.

use crate::isolate::state::IsolationState;
use crate::plan::RunPlan;
use crate::programs::ProgramResult;
use crate::sched::Sched;
use crate::stats::cpu_load::CpuLoad;
use crate::stats::series::LatencySeries;
use crate::stats::spikes::SpikeList;
use crate::stats::{HdrBucket, Summary};
use crate::sys::info::SystemSnapshot;
use serde::Serialize;

/// Version tag of the JSON result document.
pub const SCHEMA: &str = "rtlab-result/1";

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EndReason {
    /// Every timer thread reached its lifetime.
    Completed,
    /// A signal (SIGINT, SIGTERM, SIGHUP) stopped it.
    Interrupted {
        /// The signal's name.
        signal: String,
        /// Its number (the exit status is 128 + it).
        number: i32,
    },
    /// A program with an ABORT action ended.
    Aborted {
        /// Program index.
        program: usize,
        /// Its command line.
        command: String,
        /// How it ended.
        status: String,
    },
    /// An `on_spike stop` action ended it (cyclictest `-b`).
    SpikeStop,
    /// `main`'s `lifetime.duration` ended the run before some timer
    /// threads reached their own lifetime: they measured less than they
    /// asked.
    CutShort {
        /// `main`'s `lifetime.duration` (ns), counted after the warm-up.
        lifetime_ns: u64,
        /// Each timer thread cut short.
        threads: Vec<CutThread>,
    },
    /// Something failed after the start (a timer thread, a respawn).
    Failed {
        /// What.
        error: String,
    },
}

/// A timer thread that `main`'s `lifetime.duration` stopped before its own
/// lifetime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CutThread {
    /// Its index N.
    pub index: usize,
    /// What it measured (ns): its deadlines (samples and missed periods)
    /// times its period.
    pub measured_ns: u64,
    /// What it asked (ns): its `lifetime.duration`, or `lifetime.loops`
    /// periods, whichever is shorter.
    pub asked_ns: u64,
}

impl EndReason {
    /// How the run ended, in a few words (the closing lines, the report).
    /// A run that measured less than it asked never reads "completed".
    pub fn describe(&self) -> String {
        let s = |ns: u64| format!("{:.1} s", ns as f64 / 1e9);
        match self {
            EndReason::Completed => "completed".to_string(),
            EndReason::Interrupted { signal, .. } => format!("interrupted by {signal}"),
            EndReason::Aborted {
                command, status, ..
            } => format!("aborted: {command} ended ({status})"),
            EndReason::Failed { error } => format!("failed: {error}"),
            EndReason::SpikeStop => "stopped at a late wake-up (on_spike stop)".to_string(),
            EndReason::CutShort {
                lifetime_ns,
                threads,
            } => {
                let each: Vec<String> = threads
                    .iter()
                    .map(|t| {
                        format!(
                            "timer_thread[{}] measured {} of the {} it asked",
                            t.index,
                            s(t.measured_ns),
                            s(t.asked_ns)
                        )
                    })
                    .collect();
                format!(
                    "cut short by main's lifetime.duration {}: {}",
                    s(*lifetime_ns),
                    each.join(", ")
                )
            }
        }
    }

    /// The process exit status for this end (see `docs/manual.md`).
    pub fn exit_code(&self) -> i32 {
        use crate::exit;
        match self {
            // Cut short as the file asked: said, not a failure.
            EndReason::Completed | EndReason::SpikeStop | EndReason::CutShort { .. } => exit::OK,
            EndReason::Failed { .. } => exit::FAILED,
            EndReason::Aborted { .. } => exit::ABORTED,
            EndReason::Interrupted { number, .. } => exit::signal(*number),
        }
    }
}

/// The state of the PM QoS request on /dev/cpu_dma_latency during the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PmQos {
    /// Requested latency (µs), None when the file asked to leave it alone.
    pub requested_us: Option<u32>,
    /// Whether the request was held for the run.
    pub held: bool,
    /// Why it could not be held.
    pub error: Option<String>,
}

/// One timer thread's result.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct TimerResult {
    /// Index N.
    pub index: usize,
    /// Kernel thread id.
    pub tid: i32,
    /// CPUs it was pinned to.
    pub cpus: Vec<usize>,
    /// CPU it ran on at the start and at the end.
    pub cpu_first: Option<usize>,
    /// CPU at the end.
    pub cpu_last: Option<usize>,
    /// The scheduling it had.
    pub sched: Sched,
    /// Its SCHED_DEADLINE reservation, when it had one (`sched` then says
    /// OTHER: the policy has no priority).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<crate::sched::Deadline>,
    /// Period (ns).
    pub period_ns: u64,
    /// Result file where it was written (with `--outdir`, under it), as
    /// named in the closing lines.
    pub result_file: String,
    /// Statistics over every sample.
    pub summary: Summary,
    /// The last sample's latency (ns): cyclictest's `Act` (absent in
    /// older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_ns: Option<u64>,
    /// The first samples' latencies in order (ns), as many as
    /// `stats.samples` asked; absent without it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples_ns: Vec<u32>,
    /// Systress histogram size (µs).
    pub histo_size_us: u64,
    /// Non-empty 1-µs buckets as (µs, count).
    pub histogram_us: Vec<(u64, u64)>,
    /// Every sample, log-linear (0.1%).
    pub hdr_histogram: Vec<HdrBucket>,
    /// Latency over time: min, mean, max and count per interval (empty in
    /// results written before it existed).
    #[serde(default)]
    pub series: LatencySeries,
    /// The worst wake-ups with their time (absent in older results).
    #[serde(default)]
    pub spikes: SpikeList,
    /// What the kernel counted for the thread while it measured (page
    /// faults, context switches); absent in older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measuring: Option<crate::sys::os::ThreadUsage>,
    /// What went wrong, if anything.
    pub error: Option<String>,
}

/// Where one thread or process of the run was placed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Placement {
    /// `main`, `timer_thread[N]` or `program[N]`.
    pub who: String,
    /// Thread id (timer threads), process id (main), process id of the
    /// first instance (programs; a respawned program's others are in its
    /// `exits`); 0 when it never started.
    pub id: i32,
    /// The cpuset it ran in, as `/proc/.../cpuset` showed it.
    pub cpuset: Option<String>,
    /// The CPUs it was pinned to or allowed.
    pub cpus: Option<Vec<usize>>,
}

/// Isolation of the run: the machine's state and where each part ran.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct RunIsolation {
    /// isolcpus, nohz_full and cpuset partitions when the run started.
    #[serde(flatten)]
    pub state: IsolationState,
    /// Where each thread and program ran.
    pub placement: Vec<Placement>,
    /// Partitions of the start removed or changed while the run went on
    /// (then the figures are not those of the partition above).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions_changed: Vec<String>,
}

/// What the run changed on the system for its duration (each change with
/// the value it replaced, all restored at the end), and the programs' CPU
/// bandwidth groups with their throttling.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct RunTuning {
    /// Governors, C-states, IRQ affinities, thread priorities.
    pub changes: Vec<crate::tune::Outcome>,
    /// Each `cpu.group` with its quota and `cpu.stat` throttling.
    pub cpu_bandwidth: Vec<crate::tune::bandwidth::GroupResult>,
}

/// A whole run.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct RunResult {
    /// [`SCHEMA`].
    pub schema: String,
    /// rtlab's version.
    pub rtlab_version: String,
    /// The resolved configuration.
    pub plan: RunPlan,
    /// The machine.
    pub system: SystemSnapshot,
    /// Start (RFC 3339, UTC).
    pub start_time: String,
    /// End (RFC 3339, UTC).
    pub end_time: String,
    /// From the release of the timer threads to their end (ns).
    pub elapsed_ns: u64,
    /// How it ended.
    pub end: EndReason,
    /// Shortcut: the run was stopped by a signal.
    pub interrupted: bool,
    /// /dev/cpu_dma_latency.
    pub pm_qos: PmQos,
    /// Timer threads by index.
    pub timers: Vec<TimerResult>,
    /// Isolation: machine state and placement.
    pub isolation: RunIsolation,
    /// Programs by index.
    pub programs: Vec<ProgramResult>,
    /// System settings changed for the run, and CPU bandwidth.
    pub tuning: RunTuning,
    /// CPU load per refresh period.
    pub cpu_load: Vec<CpuLoad>,
    /// Each CPU's steal time over the run, `[cpu, ms]`: time the
    /// hypervisor did not run that vCPU while it wanted to run (`/proc/stat`;
    /// zeros on bare metal; absent in older results).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steal_ms: Vec<(usize, f64)>,
    /// Problems that did not stop the run.
    pub warnings: Vec<String>,
    /// Why wake-ups were late: the flight recorder's findings, when
    /// `trace.threshold` was set (absent otherwise and in older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::trace::explain::TraceReport>,
    /// The trace window of each explained wake-up (its path in the output
    /// directory, `rtlab-spikes/…`; its text), written in that directory;
    /// not part of the document.
    #[serde(skip)]
    pub trace_windows: Vec<(String, String)>,
    /// The isolation audit, when `audit.cpus` was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<crate::trace::audit::AuditReport>,
    /// The IRQ-to-task measurements (`irq_task[N]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub irq_tasks: Vec<crate::trace::irq_task::IrqTaskResult>,
    /// The task-latency measurements (`task_latency[N]`), absent in older
    /// results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub task_latency: Vec<crate::trace::task_latency::TaskLatencyResult>,
    /// What the `on_spike` actions did, absent in older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_spike: Option<crate::spike_actions::SpikeReport>,
    /// Each timer thread's IRQ side (`irq_latency`), absent in older
    /// results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timer_irq: Vec<crate::trace::timer_irq::TimerIrqResult>,
    /// The figures of trace consumers with no part of their own (each
    /// under its key), absent in older results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub figures: Vec<crate::trace::Figure>,
    /// Noise threads by index (`noise_thread[N]`), absent in older
    /// results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub noise: Vec<NoiseResult>,
}

/// One noise thread's result.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct NoiseResult {
    /// Index N.
    pub index: usize,
    /// Kernel thread id.
    pub tid: i32,
    /// The CPU it polled.
    pub cpu: usize,
    /// CPU it ran on at the start.
    pub cpu_first: Option<usize>,
    /// CPU at the end.
    pub cpu_last: Option<usize>,
    /// The scheduling it had.
    pub sched: Sched,
    /// The counter it read.
    pub counter: crate::sys::os::counter::CounterKind,
    /// Its frequency (Hz).
    pub counter_hz: u64,
    /// Why that counter.
    pub counter_why: String,
    /// A gap at least this long is noise (ns).
    pub threshold_ns: u64,
    /// The period figures are kept by (ns).
    pub period_ns: u64,
    /// Polled in each period (ns).
    pub runtime_per_period_ns: u64,
    /// Its figures over the run.
    pub summary: crate::stats::noise::NoiseSummary,
    /// Each period's figures, in order.
    pub periods: Vec<crate::stats::noise::NoisePeriod>,
    /// How many periods each entry of `periods` holds (a long run's are
    /// merged two by two).
    pub periods_merged: u64,
    /// Gaps by ns, exact, below `stats.exact_below`: (ns, count).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps_exact: Vec<(u64, u64)>,
    /// The other gaps, in HDR buckets (0.1%).
    pub gaps_hdr: Vec<HdrBucket>,
    /// The worst gaps with their time, worst first.
    pub worst: Vec<crate::stats::noise::Gap>,
    /// The smallest gap of its warm-up (`noise.warmup`), when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_min_gap_ns: Option<u64>,
    /// The gap that ended the run (`noise.stop_above`), if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<crate::stats::noise::Gap>,
    /// The cause of every gap over the threshold, from the trace (absent
    /// without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<crate::trace::noise::NoiseAttribution>,
    /// Why the gaps were not attributed, when they were asked to be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution_unavailable: Option<String>,
    /// What went wrong, if anything.
    pub error: Option<String>,
}

impl NoiseResult {
    /// The counter it read, in words: `TSC at 2596.8 MHz`.
    pub fn counter_said(&self) -> String {
        use crate::sys::os::counter::CounterKind;
        let name = match self.counter {
            CounterKind::Tsc => "TSC",
            CounterKind::ArmVirtual => "arm64 virtual counter",
            CounterKind::Monotonic => "CLOCK_MONOTONIC",
        };
        format!("{name} at {:.1} MHz", self.counter_hz as f64 / 1e6)
    }
}

/// One CPU's steal time over a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Steal {
    /// The CPU.
    pub cpu: usize,
    /// Time the hypervisor did not run it while it wanted to run (ms).
    pub ms: f64,
    /// A timer thread ran there (pinned to it, or seen on it).
    pub measured: bool,
}

/// Each CPU's steal time (`steal_ms`), saying which CPUs a timer thread
/// ran on: the one reading of it that the warning, the report and compare
/// show.
pub fn steal(steal_ms: &[(usize, f64)], timers: &[TimerResult]) -> Vec<Steal> {
    let measured = |cpu: usize| {
        timers
            .iter()
            .any(|t| t.cpus.contains(&cpu) || t.cpu_first == Some(cpu) || t.cpu_last == Some(cpu))
    };
    steal_ms
        .iter()
        .map(|&(cpu, ms)| Steal {
            cpu,
            ms,
            measured: measured(cpu),
        })
        .collect()
}

//! What a run read back is: its format, context, statistics, threads and
//! details, and how a [`Run`] is made from its threads.

use super::distribution::{Distribution, merge_stats};
use crate::stats::series::LatencySeries;
use serde::Serialize;
use std::path::Path;

/// The format a run was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// rtlab's JSON result (`rtlab run --json`).
    Rtlab,
    /// cyclictest's histogram text (`-h`/`-H`, stdout or `--histfile`).
    CyclictestHistogram,
    /// cyclictest's `--json` file.
    CyclictestJson,
    /// A systress-format result file (`timer_threadNN.txt` or `.csv`).
    Systress,
    /// rtlab monitor's windows file (`rtlab-windows.jsonl`).
    RtlabWindows,
}

impl Format {
    /// A short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Format::Rtlab => "rtlab JSON",
            Format::CyclictestHistogram => "cyclictest histogram",
            Format::CyclictestJson => "cyclictest JSON",
            Format::Systress => "systress result file",
            Format::RtlabWindows => "rtlab windows file",
        }
    }
}

/// What explains a difference between runs. Unknown fields are None (a
/// cyclictest histogram says nothing of its machine).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Context {
    /// Host name.
    pub host: Option<String>,
    /// Kernel release.
    pub kernel: Option<String>,
    /// Preemption model (with the PREEMPT_DYNAMIC mode when known).
    pub preemption: Option<String>,
    /// Isolated CPUs, cpusets or partitions the timers ran in.
    pub isolation: Option<String>,
    /// Load programs.
    pub load: Option<String>,
    /// cpufreq governors.
    pub governor: Option<String>,
    /// When the run started.
    pub started: Option<String>,
    /// How long it measured (s).
    pub duration_s: Option<f64>,
    /// IRQ-to-task samples that are lower bounds (switch-ins the kernel
    /// did not log), per measurement: `I0 12 of 3072`. None: no such
    /// measurement.
    pub lower_bounds: Option<String>,
    /// Steal time on the CPUs the timer threads ran on, over the run
    /// (`24 ms (CPU 1)`); None when the format does not record it.
    pub steal: Option<String>,
}

/// Latency statistics of one thread, or of all threads of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    /// Samples taken.
    pub samples: u64,
    /// Smallest latency (ns).
    pub min_ns: Option<u64>,
    /// Mean latency (ns).
    pub mean_ns: Option<f64>,
    /// Largest latency (ns).
    pub max_ns: Option<u64>,
    /// Population standard deviation (ns); None when the input cannot give
    /// it over every sample (a histogram that overflowed).
    pub stddev_ns: Option<f64>,
    /// p50 .. p99.99; a value is None when it falls among samples beyond
    /// the input's histogram.
    pub percentiles: Vec<Quantile>,
    /// Wake-ups after the next deadline (rtlab inputs only).
    pub overruns: Option<u64>,
    /// Samples beyond the input's fixed histogram.
    pub beyond_histogram: Option<u64>,
    /// Cycles ended past their deadline: a task-latency thread's that runs
    /// the cycle (the sum of them for a run); None where nothing counted
    /// them.
    pub deadline_misses: Option<u64>,
    /// The noise threads' figures together (rtlab runs with noise threads
    /// only; set on the run's `all`).
    pub noise: Option<NoiseStats>,
}

/// The noise threads of a run, together.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NoiseStats {
    /// The largest single gap of any of them (ns).
    pub max_single_ns: u64,
    /// Their noise summed (ns).
    pub noise_ns: u64,
    /// Their runtime summed (ns).
    pub runtime_ns: u64,
    /// Their gaps at or over the threshold.
    pub gaps: u64,
}

impl NoiseStats {
    /// The share of the CPUs the pollers had (%): the least of any of them
    /// would be finer; this is runtime less noise over runtime, together.
    pub fn available_percent(&self) -> f64 {
        if self.runtime_ns == 0 {
            return 0.0;
        }
        100.0 * self.runtime_ns.saturating_sub(self.noise_ns) as f64 / self.runtime_ns as f64
    }
}

/// One quantile of a [`Stats`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Quantile {
    /// `p99.9`.
    pub name: String,
    /// 0.999.
    pub quantile: f64,
    /// Its latency (ns).
    pub value_ns: Option<u64>,
}

/// What a thread of a run measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Measures {
    /// A timer thread's wake-up latency.
    #[default]
    WakeUp,
    /// The delay from an IRQ handler's exit to a task's switch-in
    /// (`irq_task[N]`).
    IrqToTask,
    /// A timer thread's interrupt: from the deadline to the expiry's
    /// handling (`irq_latency`, thread `T<N>.irq`). Shown beside its
    /// thread, never merged into the run's figure.
    TimerIrq,
}

/// One timer thread of a run, or one IRQ-to-task measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Thread {
    /// `T0`, `T1`, … (the thread's index); `I0`, … for an IRQ-to-task
    /// measurement.
    pub name: String,
    /// What it measured.
    pub measures: Measures,
    /// The CPU it ran on, when known.
    pub cpu: Option<usize>,
    /// Its statistics.
    pub stats: Stats,
    /// Samples per 1-µs bucket (latency truncated, as cyclictest counts),
    /// non-empty buckets only, over every sample the input placed.
    pub histogram_us: Vec<(u64, u64)>,
    /// Latency over time (rtlab inputs only).
    pub series: Option<LatencySeries>,
    /// Its worst wake-ups, worst first (rtlab inputs only).
    pub spikes: Vec<crate::stats::spikes::Spike>,
    /// Its histogram window by window (windows files only).
    pub windows: Option<WindowHistograms>,
    #[serde(skip)]
    pub(super) distribution: Distribution,
}

/// A thread's histogram window by window (rtlab monitor's windows file).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowHistograms {
    /// Upper bounds of the buckets (ns); one more bucket holds the rest.
    pub bounds_ns: Vec<u64>,
    /// Each window: (from, to) in seconds since the first window's start,
    /// its counts per bucket, its largest latency (ns).
    pub windows: Vec<(f64, f64, Vec<u64>, Option<u64>)>,
}

/// What rtlab knows of a run beyond its numbers (for the report).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Details {
    /// The system snapshot (rtlab's `system`, cyclictest's `sysinfo`).
    pub system: Option<serde_json::Value>,
    /// The configuration (rtlab's resolved plan).
    pub configuration: Option<serde_json::Value>,
    /// The command line that made the run (cyclictest JSON).
    pub command: Option<String>,
    /// What rtlab changed on the system for the run, one line each.
    pub changes: Vec<String>,
    /// Load programs: command, starts, ends.
    pub programs: Vec<String>,
    /// How the run ended.
    pub end: Option<String>,
    /// Warnings of the run.
    pub warnings: Vec<String>,
    /// Each CPU's steal time over the run (rtlab runs; empty when not
    /// recorded).
    pub steal: Vec<crate::result::Steal>,
    /// Why wake-ups were late (rtlab runs with the flight recorder).
    pub trace: Option<crate::trace::explain::TraceReport>,
    /// The isolation audit (rtlab runs with `audit.cpus`).
    pub audit: Option<crate::trace::audit::AuditReport>,
    /// The IRQ-to-task measurements, with their counts.
    pub irq_tasks: Vec<crate::trace::irq_task::IrqTaskResult>,
    /// The task-latency measurements.
    pub task_latency: Vec<crate::trace::task_latency::TaskLatencyResult>,
}

/// A finished run, read from a file.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// Its name in legends and columns (file stem unless given).
    pub label: String,
    /// The file it came from.
    pub path: String,
    /// Its format.
    pub format: Format,
    /// What explains it.
    pub context: Context,
    /// Its timer threads.
    pub threads: Vec<Thread>,
    /// Statistics over every thread together.
    pub all: Stats,
    /// Everything else the file said.
    pub details: Details,
    /// The resolution of its latencies (ns): 1 for rtlab's exact values,
    /// 1000 for cyclictest and systress, which truncate to whole µs.
    pub resolution_ns: u64,
    /// When its figures were truncated to a coarser resolution to be
    /// compared with other runs: the resolution it had.
    pub truncated_from_ns: Option<u64>,
    /// The upper bounds of its buckets when it only has those (a windows
    /// file): its latencies are known to a bucket, its percentiles are
    /// bucket bounds, and a run compared with it is put in the same
    /// buckets.
    pub buckets_ns: Option<Vec<u64>>,
    /// Its noise threads (rtlab runs with `noise_thread[N]`), as their
    /// result states them.
    pub noise: Vec<NoiseThread>,
}

/// One noise thread of a run, as its result states it: read, never
/// recomputed (the plots and the report draw and table these figures).
#[derive(Debug, Clone, Serialize)]
pub struct NoiseThread {
    /// `N0`, `N1`, … (its index).
    pub name: String,
    /// The CPU it polled.
    pub cpu: usize,
    /// The counter it read, in words (`TSC at 2596.8 MHz`).
    pub counter: String,
    /// A gap at least this long is noise (ns).
    pub threshold_ns: u64,
    /// Its figures over the run.
    pub summary: crate::stats::noise::NoiseSummary,
    /// Every gap, by length: (shortest ns, longest ns, count) per bucket,
    /// the exact ones (one ns each) then the HDR buckets.
    pub gaps: Vec<(u64, u64, u64)>,
    /// Its periods in order (each `period_ns` long).
    pub periods: Vec<crate::stats::noise::NoisePeriod>,
    /// How long each entry of `periods` is (ns): the period, times how
    /// many a long run's merging put together.
    pub period_ns: u64,
    /// Its worst gaps, worst first.
    pub worst: Vec<crate::stats::noise::Gap>,
    /// The gaps' causes, from the trace (as the result has them).
    pub attribution: Option<crate::trace::noise::NoiseAttribution>,
    /// Why the gaps' causes were not named, when they were asked for.
    pub attribution_unavailable: Option<String>,
    /// What went wrong, if anything.
    pub error: Option<String>,
}

impl Thread {
    pub(crate) fn new(
        name: String,
        cpu: Option<usize>,
        stats: Stats,
        histogram_us: Vec<(u64, u64)>,
        series: Option<LatencySeries>,
        distribution: Distribution,
    ) -> Self {
        Thread {
            name,
            measures: Measures::WakeUp,
            cpu,
            stats,
            histogram_us,
            series,
            spikes: Vec::new(),
            windows: None,
            distribution,
        }
    }

    /// The same, as an IRQ-to-task measurement.
    pub(crate) fn irq_to_task(mut self) -> Self {
        self.measures = Measures::IrqToTask;
        self
    }

    /// The thread as a timer thread's interrupt side.
    pub(crate) fn timer_irq(mut self) -> Self {
        self.measures = Measures::TimerIrq;
        self
    }

    /// The thread with its worst wake-ups.
    pub(crate) fn with_spikes(mut self, spikes: Vec<crate::stats::spikes::Spike>) -> Self {
        self.spikes = spikes;
        self
    }
}

impl Run {
    /// Whether it has timer threads (`T<N>`), the flight recorder's
    /// subject: a task-latency or IRQ-to-task run alone has none.
    pub fn has_timer_threads(&self) -> bool {
        self.threads
            .iter()
            .any(|t| t.measures == Measures::WakeUp && t.name.starts_with('T'))
    }

    /// The timer threads' interrupt side (`irq_latency`), all of them
    /// together; None when the run did not measure it.
    pub fn timer_irq(&self) -> Option<Stats> {
        let irq: Vec<Thread> = self
            .threads
            .iter()
            .filter(|t| t.measures == Measures::TimerIrq)
            .cloned()
            .collect();
        match irq.len() {
            0 => None,
            1 => Some(irq[0].stats.clone()),
            _ => Some(merge_stats(&irq)),
        }
    }

    pub(crate) fn new(
        path: &Path,
        format: Format,
        context: Context,
        threads: Vec<Thread>,
        details: Details,
    ) -> Self {
        // The run's figure is its timer threads' (an IRQ-to-task delay is
        // another quantity), or its IRQ-to-task measurements' without timers.
        let timers: Vec<Thread> = threads
            .iter()
            .filter(|t| t.measures == Measures::WakeUp)
            .cloned()
            .collect();
        let counted = if timers.is_empty() { &threads } else { &timers };
        let all = if counted.len() == 1 {
            counted[0].stats.clone()
        } else {
            merge_stats(counted)
        };
        Run {
            label: default_label(path),
            path: path.display().to_string(),
            resolution_ns: match format {
                Format::Rtlab => 1,
                _ => 1_000,
            },
            truncated_from_ns: None,
            buckets_ns: None,
            noise: Vec::new(),
            format,
            context,
            threads,
            all,
            details,
        }
    }
}

fn default_label(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

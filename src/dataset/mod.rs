//! Finished runs, read back for plots, reports and comparisons: rtlab's JSON
//! result, cyclictest's histogram text (`-h`/`--histfile`) and `--json`
//! file, and systress-format result files (`txt`/`csv`) all become one
//! [`Run`], whose statistics are computed here once; every renderer
//! ([`crate::report`]) only draws or prints them.

mod cyclictest;
mod metric;
mod rtlab;
mod systress;
mod windows;

use crate::stats::QUANTILES;
use crate::stats::series::LatencySeries;
pub use metric::Metric;
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
    distribution: Distribution,
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
}

/// A file that could not be read as a run.
#[derive(Debug)]
pub struct LoadError {
    /// The file.
    pub path: String,
    /// 1-based line (0 when the whole file is at fault).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
    /// What to do.
    pub hint: String,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.path, self.message)?;
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.path, self.line, self.column, self.message
            )?;
        }
        write!(f, "\n  hint: {}", self.hint)
    }
}

impl std::error::Error for LoadError {}

/// A problem at a place in a file, before the path is known.
#[derive(Debug)]
pub(crate) struct ParseError {
    line: usize,
    column: usize,
    message: String,
    hint: String,
}

impl ParseError {
    fn new(line: usize, column: usize, message: impl Into<String>, hint: &str) -> Self {
        ParseError {
            line,
            column,
            message: message.into(),
            hint: hint.to_string(),
        }
    }

    /// A JSON reader's refusal of a `what` (`rtlab result`), at the
    /// place the reader stopped: a file that ends early is called cut
    /// short, a syntax error invalid JSON, and a valid JSON that is not a
    /// `what` says which part is wrong. Columns count from 1 (serde_json
    /// says 0 just after a line break).
    fn from_json(e: &serde_json::Error, what: &str) -> Self {
        use serde_json::error::Category;
        let full = e.to_string();
        // serde_json ends its message with the place, given here apart.
        let why = full.rsplit_once(" at line ").map_or(full.as_str(), |p| p.0);
        let (message, hint) = match e.classify() {
            Category::Eof => (
                format!("truncated {what}: the JSON ends in the middle ({why})"),
                format!(
                    "the file was cut short (a copy or a run interrupted?): give the whole {what}"
                ),
            ),
            Category::Syntax => (
                format!("invalid JSON in this {what}: {why}"),
                format!("was the {what} edited by hand? give it as written"),
            ),
            Category::Data | Category::Io => (
                format!("not a valid {what}: {why}"),
                "was the file edited by hand, or written by another tool?".to_string(),
            ),
        };
        ParseError::new(e.line().max(1), e.column().max(1), message, &hint)
    }
}

/// Samples placed by value, and those the input could not place (beyond
/// its histogram). Percentiles come from here.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Distribution {
    /// (value ns, count), sorted by value. The value is the latency the
    /// bucket stands for: the upper edge of an HDR bucket, or the truncated
    /// µs of a 1-µs bucket (as cyclictest reports it).
    buckets: Vec<(u64, u64)>,
    /// Samples above every bucket, value unknown.
    beyond: u64,
}

impl Distribution {
    fn new(mut buckets: Vec<(u64, u64)>, beyond: u64) -> Self {
        buckets.retain(|b| b.1 > 0);
        buckets.sort_unstable();
        Distribution { buckets, beyond }
    }

    fn total(&self) -> u64 {
        sum_counts(self.buckets.iter().map(|b| b.1)).saturating_add(self.beyond)
    }

    /// The value of the sample of rank ceil(q·n) (hdrhistogram's rule),
    /// None when it lies beyond the buckets or there is no sample.
    fn value_at(&self, quantile: f64) -> Option<u64> {
        let n = self.total();
        if n == 0 {
            return None;
        }
        let rank = ((quantile * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0u64;
        for &(value, count) in &self.buckets {
            seen = seen.saturating_add(count);
            if seen >= rank {
                return Some(value);
            }
        }
        None
    }

    fn quantiles(&self, max_ns: Option<u64>) -> Vec<Quantile> {
        QUANTILES
            .iter()
            .map(|&(name, q)| Quantile {
                name: name.to_string(),
                quantile: q,
                value_ns: self.value_at(q).map(|v| max_ns.map_or(v, |m| v.min(m))),
            })
            .collect()
    }

    /// Mean and population standard deviation of the placed samples, when
    /// every sample is placed.
    fn mean_stddev(&self) -> Option<(f64, f64)> {
        let n = self.total();
        if n == 0 || self.beyond > 0 {
            return None;
        }
        // Exact in u128 for any real histogram; a crafted one that would
        // overflow has no moments rather than a panic.
        let (mut sum, mut sum_sq) = (0u128, 0u128);
        for &(v, c) in &self.buckets {
            let (v, c) = (u128::from(v), u128::from(c));
            sum = sum.checked_add(v * c)?;
            sum_sq = sum_sq.checked_add(v.checked_mul(v)?.checked_mul(c)?)?;
        }
        let mean = sum as f64 / n as f64;
        Some((
            mean,
            (sum_sq as f64 / n as f64 - mean * mean).max(0.0).sqrt(),
        ))
    }

    fn merged<'a>(all: impl Iterator<Item = &'a Distribution>) -> Distribution {
        let mut buckets = Vec::new();
        let mut beyond = 0u64;
        for d in all {
            buckets.extend_from_slice(&d.buckets);
            beyond = beyond.saturating_add(d.beyond);
        }
        buckets.sort_unstable();
        buckets.dedup_by(|b, a| {
            if a.0 == b.0 {
                a.1 = a.1.saturating_add(b.1);
                true
            } else {
                false
            }
        });
        Distribution { buckets, beyond }
    }
}

impl Thread {
    /// The percentile curve: for each bucket, (−log10(1 − q), latency ns)
    /// where q is the fraction of samples below the bucket (so 2 is p99 and
    /// 3 is p99.9), ending at the last sample (1 − q = 1/n). Samples beyond
    /// the input's histogram have no value and end the curve early.
    pub fn percentile_curve(&self) -> Vec<(f64, u64)> {
        let d = &self.distribution;
        let n = d.total();
        let mut out = Vec::with_capacity(d.buckets.len() + 1);
        let mut below = 0u64;
        // No point lies beyond the last sample (1 − q = 1/n), whatever
        // rounding does to fractions near 1.
        let last_x = (n as f64).log10();
        for &(value, count) in &d.buckets {
            out.push((
                (-(1.0 - below as f64 / n as f64).log10()).min(last_x),
                value,
            ));
            below = below.saturating_add(count);
        }
        if let Some(&(last, _)) = d.buckets.last() {
            let end = if below == n {
                last_x
            } else {
                (-(1.0 - below as f64 / n as f64).log10()).min(last_x)
            };
            out.push((end, last));
        }
        out
    }

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

/// Adds counts without overflow: a crafted file must not make rtlab panic.
fn sum_counts(counts: impl IntoIterator<Item = u64>) -> u64 {
    counts.into_iter().fold(0, u64::saturating_add)
}

/// Sums counts of latencies (ns, in increasing order) into 1-µs buckets,
/// the latency truncated as cyclictest counts it.
fn per_us(values_ns: impl IntoIterator<Item = (u64, u64)>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (ns, count) in values_ns {
        let us = ns / 1_000;
        match out.last_mut() {
            Some(last) if last.0 == us => last.1 = last.1.saturating_add(count),
            _ => out.push((us, count)),
        }
    }
    out
}

/// Statistics over several threads: exact for samples, min, max, mean,
/// standard deviation (from each thread's mean and deviation), overruns;
/// percentiles from the threads' merged distributions.
fn merge_stats(threads: &[Thread]) -> Stats {
    let samples = sum_counts(threads.iter().map(|t| t.stats.samples));
    let with_samples: Vec<&Thread> = threads.iter().filter(|t| t.stats.samples > 0).collect();
    let min_ns = with_samples.iter().filter_map(|t| t.stats.min_ns).min();
    let max_ns = with_samples.iter().filter_map(|t| t.stats.max_ns).max();
    let moments: Option<Vec<(f64, f64, Option<f64>)>> = with_samples
        .iter()
        .map(|t| Some((t.stats.samples as f64, t.stats.mean_ns?, t.stats.stddev_ns)))
        .collect();
    let (mut mean_ns, mut stddev_ns) = (None, None);
    if let Some(m) = moments.filter(|m| !m.is_empty()) {
        let n: f64 = m.iter().map(|x| x.0).sum();
        let mean = m.iter().map(|x| x.0 * x.1).sum::<f64>() / n;
        mean_ns = Some(mean);
        let second: Option<f64> = m
            .iter()
            .map(|&(k, mu, sd)| Some(k * (sd? * sd? + mu * mu)))
            .sum();
        stddev_ns = second.map(|s| (s / n - mean * mean).max(0.0).sqrt());
    }
    let sum_all = |f: fn(&Stats) -> Option<u64>| -> Option<u64> {
        threads
            .iter()
            .try_fold(0u64, |acc, t| Some(acc.saturating_add(f(&t.stats)?)))
    };
    let distribution = Distribution::merged(threads.iter().map(|t| &t.distribution));
    Stats {
        samples,
        min_ns,
        mean_ns,
        max_ns,
        stddev_ns,
        percentiles: distribution.quantiles(max_ns),
        overruns: sum_all(|s| s.overruns),
        beyond_histogram: sum_all(|s| s.beyond_histogram),
        // Summed over the threads that count them (a task's cycle thread
        // beside timer threads, which have no deadline).
        deadline_misses: threads
            .iter()
            .filter_map(|t| t.stats.deadline_misses)
            .reduce(u64::saturating_add),
    }
}

impl Run {
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
            format,
            context,
            threads,
            all,
            details,
        }
    }

    /// This run with every latency truncated to `resolution_ns` (a whole
    /// number of it, rounded down), the way cyclictest truncates to µs, so
    /// that it compares like with like against a coarser run. min, max and
    /// every percentile are truncated exactly; the mean and deviation are
    /// those of the truncated distribution (for rtlab, its HDR buckets:
    /// within their 0.1 % precision). A run as fine or coarser is returned
    /// as it is.
    pub fn truncated_to(&self, resolution_ns: u64) -> Run {
        if resolution_ns <= self.resolution_ns {
            return self.clone();
        }
        let mut run = self.with_threads(|t| t.truncated_to(resolution_ns));
        run.resolution_ns = resolution_ns;
        run.truncated_from_ns = Some(self.resolution_ns);
        run
    }
}

impl Run {
    /// The same run (label, context, details) with each thread made anew
    /// by `each`, and its overall figures from them.
    fn with_threads(&self, each: impl Fn(&Thread) -> Thread) -> Run {
        let threads = self.threads.iter().map(each).collect();
        let mut run = Run::new(
            Path::new(&self.path),
            self.format,
            self.context.clone(),
            threads,
            self.details.clone(),
        );
        run.label = self.label.clone();
        run
    }

    /// This run with its latencies put in the buckets of `bounds_ns`
    /// (each counted at its bucket's upper bound, beyond the last bound
    /// unknown), the way a windows file holds them, so that it compares
    /// like with like against one: percentiles are bucket bounds in both.
    pub fn bucketed_to(&self, bounds_ns: &[u64]) -> Run {
        if self.buckets_ns.as_deref() == Some(bounds_ns) || bounds_ns.is_empty() {
            return self.clone();
        }
        let mut run = self.with_threads(|t| t.bucketed_to(bounds_ns));
        run.resolution_ns = self.resolution_ns;
        run.truncated_from_ns = Some(self.resolution_ns);
        run.buckets_ns = Some(bounds_ns.to_vec());
        run
    }
}

impl Thread {
    fn bucketed_to(&self, bounds_ns: &[u64]) -> Thread {
        let up = |v: u64| bounds_ns.iter().copied().find(|&b| v <= b);
        let d = &self.distribution;
        let mut beyond = d.beyond;
        let mut buckets = Vec::new();
        for &(v, c) in &d.buckets {
            match up(v) {
                Some(b) => buckets.push((b, c)),
                None => beyond = beyond.saturating_add(c),
            }
        }
        let distribution = Distribution::new(buckets, beyond);
        let s = &self.stats;
        let stats = Stats {
            min_ns: s.min_ns.and_then(up),
            mean_ns: None,
            stddev_ns: None,
            percentiles: distribution.quantiles(s.max_ns),
            beyond_histogram: Some(beyond),
            ..s.clone()
        };
        Thread {
            stats,
            distribution,
            ..self.clone()
        }
    }

    fn truncated_to(&self, resolution_ns: u64) -> Thread {
        let down = |v: u64| v - v % resolution_ns;
        let d = &self.distribution;
        let distribution = Distribution::new(
            d.buckets.iter().map(|&(v, c)| (down(v), c)).collect(),
            d.beyond,
        );
        let s = &self.stats;
        let max_ns = s.max_ns.map(down);
        let moments = distribution.mean_stddev();
        let stats = Stats {
            min_ns: s.min_ns.map(down),
            max_ns,
            mean_ns: moments.map(|m| m.0).or(s.mean_ns),
            stddev_ns: moments.map(|m| m.1).or(s.stddev_ns),
            percentiles: distribution.quantiles(max_ns),
            ..s.clone()
        };
        Thread {
            stats,
            distribution,
            ..self.clone()
        }
    }
}

fn default_label(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// A run's result, just made, as a run (named after `path`, its JSON
/// file): what `rtlab run --fail-if` gates on, the figures `compare` reads
/// back from that file.
pub fn of_result(result: &crate::result::RunResult, path: &Path) -> Run {
    rtlab::of_result(result, path)
}

/// Reads one run, guessing its format from its content. `FILE@N` names
/// the N-th window of a windows file (when FILE@N itself does not exist).
pub fn load(path: &Path) -> Result<Run, LoadError> {
    if let Some((file, n)) = window_of(path) {
        return match read_bounded(&file) {
            Ok(bytes) => parse_window_bytes(&bytes, &file, n).map_err(|mut e| {
                e.path = path.display().to_string();
                e
            }),
            Err(e) => Err(e.located(path)),
        };
    }
    match read_bounded(path) {
        Ok(bytes) => parse_bytes(&bytes, path),
        Err(e) => Err(e.located(path)),
    }
}

/// The `n`-th window (from 1) of each thread of the windows file whose
/// bytes are `bytes` (`FILE@N`).
pub fn parse_window_bytes(bytes: &[u8], path: &Path, n: usize) -> Result<Run, LoadError> {
    let text = String::from_utf8_lossy(bytes);
    if !windows::looks_like(text.trim_start()) {
        return Err(ParseError::new(
            1,
            1,
            "not a windows file: `@N` picks a window of `rtlab monitor --windows`",
            "name a windows file, or the whole file without `@N`",
        )
        .located(path));
    }
    windows::parse(text.trim_start(), path, Some(n)).map_err(|e| e.located(path))
}

/// `FILE@N` when FILE@N does not exist and FILE does: (FILE, N).
fn window_of(path: &Path) -> Option<(std::path::PathBuf, usize)> {
    if path.exists() {
        return None;
    }
    let text = path.to_str()?;
    let (file, n) = text.rsplit_once('@')?;
    let n: usize = n.parse().ok().filter(|&n| n > 0)?;
    let file = std::path::PathBuf::from(file);
    file.exists().then_some((file, n))
}

impl ParseError {
    fn located(self, path: &Path) -> LoadError {
        LoadError {
            path: path.display().to_string(),
            line: self.line,
            column: self.column,
            message: self.message,
            hint: self.hint,
        }
    }
}

/// Reads one run from the bytes of the file at `path` (named in errors and
/// labels), guessing its format from its content.
pub fn parse_bytes(bytes: &[u8], path: &Path) -> Result<Run, LoadError> {
    let fail = |e: ParseError| e.located(path);
    let text = String::from_utf8_lossy(bytes);
    let trimmed = text.trim_start();
    if windows::looks_like(trimmed) {
        windows::parse(trimmed, path, None).map_err(fail)
    } else if trimmed.starts_with('{') {
        match json_kind(trimmed) {
            Some(Format::Rtlab) => rtlab::parse(&text, path).map_err(fail),
            Some(_) => cyclictest::parse_json(&text, path).map_err(fail),
            None => unknown_json(&text).map_err(fail),
        }
    } else if systress::looks_like(&text) {
        systress::parse(&text, path).map_err(fail)
    } else {
        cyclictest::parse_histogram(&text, path).map_err(fail)
    }
    .and_then(|run| implausible(&run).map_or(Ok(run), |e| Err(fail(e))))
}

/// Which JSON result `text` is, by the keys only each writes: rtlab's
/// (`schema`, `rtlab_version`, its first keys) or cyclictest's
/// (`file_version`, its first, or `thread`); None when none is there yet
/// (a file cut short after a few bytes).
fn json_kind(text: &str) -> Option<Format> {
    let has = |key: &str| text.contains(&format!("\"{key}\""));
    if has("schema") || has("rtlab_version") {
        Some(Format::Rtlab)
    } else if has("file_version") || has("thread") {
        Some(Format::CyclictestJson)
    } else {
        None
    }
}

/// A JSON object of neither result: refused as cut short or invalid JSON
/// when it is, else as cyclictest's JSON without its keys.
fn unknown_json(text: &str) -> Result<Run, ParseError> {
    const WHAT: &str = "JSON result (rtlab's or cyclictest's)";
    match serde_json::from_str::<serde::de::IgnoredAny>(text) {
        Err(e) => Err(ParseError::from_json(&e, WHAT)),
        Ok(_) => Err(ParseError::new(
            1,
            1,
            "a JSON object that is neither an rtlab result (no \"schema\") nor cyclictest's JSON (no \"thread\")",
            "give rtlab's --json result, cyclictest's --json file, cyclictest's -h output or a timer_threadNN.txt",
        )),
    }
}

/// Largest part of a result file kept as free-form JSON for the report
/// (rtlab's `system`, `plan`, `tuning`..., cyclictest's `sysinfo`): a real
/// one is a few kB; a bigger one is left unread (a JSON tree costs many
/// times its text) and the run says so.
pub const MAX_KEPT_JSON: usize = 256 << 10;

/// A free-form JSON part of a result file, read only when it is small.
#[derive(Debug, Default)]
pub(crate) struct Kept {
    /// The part, or null when it was left unread.
    value: serde_json::Value,
    /// Its size when it was left unread.
    dropped: Option<usize>,
}

impl std::ops::Deref for Kept {
    type Target = serde_json::Value;
    fn deref(&self) -> &serde_json::Value {
        &self.value
    }
}

impl Kept {
    /// Says what was left unread, if anything.
    pub(crate) fn note(&self, name: &str) -> Option<String> {
        self.dropped.map(|n| {
            format!("`{name}` ({n} bytes) was not read: larger than {MAX_KEPT_JSON} bytes")
        })
    }
}

impl<'de> serde::Deserialize<'de> for Kept {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let raw = Box::<serde_json::value::RawValue>::deserialize(d)?;
        let text = raw.get();
        if text.len() > MAX_KEPT_JSON {
            return Ok(Kept {
                value: serde_json::Value::Null,
                dropped: Some(text.len()),
            });
        }
        serde_json::from_str(text)
            .map(|value| Kept {
                value,
                dropped: None,
            })
            .map_err(D::Error::custom)
    }
}

/// Largest result file read: far more than any real run writes (a
/// cyclictest histogram of 100000 µs rows for 64 threads is about 45 MB).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// Most timer threads in one result (as in an experiment file).
pub const MAX_THREADS: usize = crate::config::MAX_TIMERS;

/// Reads at most [`MAX_FILE_BYTES`] of a result file (or a pipe): a bigger
/// one, a device or a directory is refused without reading on.
fn read_bounded(path: &Path) -> Result<Vec<u8>, ParseError> {
    use crate::sys::infile::{self, InputError};
    infile::read_bounded(path, MAX_FILE_BYTES).map_err(|e| {
        let message = match e {
            InputError::TooBig(_) => format!(
                "larger than {} MiB: no result file is this big",
                MAX_FILE_BYTES >> 20
            ),
            e => e.to_string(),
        };
        ParseError::new(
            0,
            0,
            message,
            "give a result file: rtlab's --json, cyclictest's --json or -h output, or a timer_threadNN.txt",
        )
    })
}

/// Figures that cannot be (a count near 2^64, min above max, a mean outside
/// [min, max], a percentile outside them, a negative or non-finite value):
/// the file was altered or is not what it claims. None when all is well.
fn implausible(run: &Run) -> Option<ParseError> {
    const HUGE: u64 = 1 << 62;
    let bad = |what: String| {
        Some(ParseError::new(
            0,
            0,
            format!("implausible figures: {what}"),
            "the file was altered or damaged; rtlab will not draw or compare numbers that cannot be",
        ))
    };
    for t in &run.threads {
        let s = &t.stats;
        let name = &t.name;
        if s.samples >= HUGE || s.beyond_histogram.is_some_and(|b| b >= HUGE) {
            return bad(format!("{name}: {} samples", s.samples));
        }
        if s.overruns.is_some_and(|o| o > s.samples) {
            return bad(format!("{name}: more overruns than samples"));
        }
        if let (Some(min), Some(max)) = (s.min_ns, s.max_ns)
            && min > max
        {
            return bad(format!("{name}: min {min} ns above max {max} ns"));
        }
        if let Some(mean) = s.mean_ns {
            let (lo, hi) = (
                s.min_ns.unwrap_or(0) as f64,
                s.max_ns.map_or(f64::MAX, |m| m as f64),
            );
            // The mean of truncated µs values may sit up to 1 µs below min.
            if !mean.is_finite() || mean < lo - 1000.0 || mean > hi + 1000.0 {
                return bad(format!("{name}: mean {mean} ns outside [min, max]"));
            }
        }
        if s.stddev_ns.is_some_and(|d| !d.is_finite() || d < 0.0) {
            return bad(format!("{name}: standard deviation {:?}", s.stddev_ns));
        }
        if let (Some(min), Some(max)) = (s.min_ns, s.max_ns)
            && let Some(q) = s.percentiles.iter().find(|q| {
                q.value_ns.is_some_and(|v| {
                    v.saturating_add(1000) < min || v > max.saturating_add(max / 100 + 1000)
                })
            })
        {
            return bad(format!("{name}: {} outside [min, max]", q.name));
        }
        if s.samples > 0 && t.distribution.total() > s.samples {
            return bad(format!(
                "{name}: the histogram holds {} samples, more than the {} taken",
                t.distribution.total(),
                s.samples
            ));
        }
    }
    None
}

/// Reads several runs; labels default to file stems, made unique, or are
/// taken from `labels` in order.
pub fn load_all(paths: &[std::path::PathBuf], labels: &[String]) -> Result<Vec<Run>, LoadError> {
    let mut runs = paths
        .iter()
        .map(|p| load(p))
        .collect::<Result<Vec<_>, _>>()?;
    for (run, label) in runs.iter_mut().zip(labels) {
        run.label = label.clone();
    }
    for i in 1..runs.len() {
        let taken = |l: &str, runs: &[Run]| runs[..i].iter().any(|r| r.label == l);
        if taken(&runs[i].label, &runs) {
            let base = runs[i].label.clone();
            let mut n = 2;
            while taken(&format!("{base}#{n}"), &runs) {
                n += 1;
            }
            runs[i].label = format!("{base}#{n}");
        }
    }
    Ok(runs)
}

/// The preemption model named in a `uname -v` string.
pub(crate) fn preemption_from_version(version: &str) -> Option<String> {
    ["PREEMPT_RT", "PREEMPT_DYNAMIC", "PREEMPT_LAZY", "PREEMPT"]
        .into_iter()
        .find(|m| version.split_whitespace().any(|w| w == *m))
        .map(str::to_string)
}

#[cfg(test)]
pub(crate) mod tests;

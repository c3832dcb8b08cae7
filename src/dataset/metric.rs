//! The quantities of a run that `compare` sets side by side and `--fail-if`
//! gates on.

use super::Stats;

/// A comparable quantity of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Samples taken.
    Samples,
    /// Smallest latency.
    Min,
    /// Mean latency.
    Mean,
    /// Median (p50).
    Median,
    /// Standard deviation.
    Stddev,
    /// 90th percentile.
    P90,
    /// 99th percentile.
    P99,
    /// 99.9th percentile.
    P999,
    /// 99.99th percentile.
    P9999,
    /// Largest latency.
    Max,
    /// Wake-ups after the next deadline.
    Overruns,
    /// Samples beyond the fixed histogram.
    Beyond,
    /// Cycles of a task-latency thread ended past their deadline.
    DeadlineMisses,
    /// The noise threads' largest single gap.
    NoiseMaxSingle,
    /// The noise threads' noise, summed.
    NoiseTotal,
    /// The share of the CPU the noise threads had (%).
    NoiseAvailable,
    /// The noise threads' gaps at or over their threshold.
    NoiseGaps,
}

impl Metric {
    /// Every metric, in table order.
    pub const ALL: [Metric; 17] = [
        Metric::Samples,
        Metric::Min,
        Metric::Mean,
        Metric::Median,
        Metric::Stddev,
        Metric::P90,
        Metric::P99,
        Metric::P999,
        Metric::P9999,
        Metric::Max,
        Metric::Overruns,
        Metric::Beyond,
        Metric::DeadlineMisses,
        Metric::NoiseMaxSingle,
        Metric::NoiseTotal,
        Metric::NoiseAvailable,
        Metric::NoiseGaps,
    ];

    /// Its name in tables, JSON and `--fail-if`.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Samples => "samples",
            Metric::Min => "min",
            Metric::Mean => "mean",
            Metric::Median => "median",
            Metric::Stddev => "stddev",
            Metric::P90 => "p90",
            Metric::P99 => "p99",
            Metric::P999 => "p99.9",
            Metric::P9999 => "p99.99",
            Metric::Max => "max",
            Metric::Overruns => "overruns",
            Metric::Beyond => "beyond_histogram",
            Metric::DeadlineMisses => "deadline_misses",
            Metric::NoiseMaxSingle => "noise.max_single",
            Metric::NoiseTotal => "noise.total",
            Metric::NoiseAvailable => "noise.available",
            Metric::NoiseGaps => "noise.gaps",
        }
    }

    /// The metric of a name (`p50` is the median).
    pub fn parse(name: &str) -> Option<Metric> {
        let name = name.trim().to_ascii_lowercase();
        match name.as_str() {
            "p50" => Some(Metric::Median),
            "beyond" => Some(Metric::Beyond),
            _ => Metric::ALL.into_iter().find(|m| m.name() == name),
        }
    }

    /// Whether it is a latency (ns) rather than a count.
    pub fn is_latency(self) -> bool {
        !matches!(
            self,
            Metric::Samples
                | Metric::Overruns
                | Metric::Beyond
                | Metric::DeadlineMisses
                | Metric::NoiseAvailable
                | Metric::NoiseGaps
        )
    }

    /// Whether it is a figure of the noise threads.
    pub fn is_noise(self) -> bool {
        matches!(
            self,
            Metric::NoiseMaxSingle
                | Metric::NoiseTotal
                | Metric::NoiseAvailable
                | Metric::NoiseGaps
        )
    }

    /// Its value in `stats` (ns for latencies).
    pub fn value(self, stats: &Stats) -> Option<f64> {
        let quantile = |name: &str| {
            stats
                .percentiles
                .iter()
                .find(|q| q.name == name)
                .and_then(|q| q.value_ns)
                .map(|v| v as f64)
        };
        match self {
            Metric::Samples => Some(stats.samples as f64),
            Metric::Min => stats.min_ns.map(|v| v as f64),
            Metric::Mean => stats.mean_ns,
            Metric::Median => quantile("p50"),
            Metric::Stddev => stats.stddev_ns,
            Metric::P90 => quantile("p90"),
            Metric::P99 => quantile("p99"),
            Metric::P999 => quantile("p99.9"),
            Metric::P9999 => quantile("p99.99"),
            Metric::Max => stats.max_ns.map(|v| v as f64),
            Metric::Overruns => stats.overruns.map(|v| v as f64),
            Metric::Beyond => stats.beyond_histogram.map(|v| v as f64),
            Metric::DeadlineMisses => stats.deadline_misses.map(|v| v as f64),
            Metric::NoiseMaxSingle => stats.noise.map(|n| n.max_single_ns as f64),
            Metric::NoiseTotal => stats.noise.map(|n| n.noise_ns as f64),
            Metric::NoiseAvailable => stats.noise.map(|n| n.available_percent()),
            Metric::NoiseGaps => stats.noise.map(|n| n.gaps as f64),
        }
    }
}

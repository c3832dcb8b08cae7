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
}

impl Metric {
    /// Every metric, in table order.
    pub const ALL: [Metric; 13] = [
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
            Metric::Samples | Metric::Overruns | Metric::Beyond | Metric::DeadlineMisses
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
        }
    }
}

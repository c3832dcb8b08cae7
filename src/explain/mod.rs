//! Why wake-ups were late, from plain kernel tracepoints: the text of a
//! tracefs buffer read back ([`parse`]), each late wake-up decomposed into
//! what owned its CPU from the deadline to the wake-up ([`analyze`]), and
//! the culprits of a whole run ranked ([`verdict`]). Pure: the flight
//! recorder that fills the buffer is in `sys::trace` and the run.

pub mod analyze;
pub mod parse;
pub mod verdict;

use serde::{Deserialize, Serialize};

/// What the flight recorder found in a run (`trace` in the result).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceReport {
    /// Wake-ups at least this late were explained (ns).
    pub threshold_ns: u64,
    /// The tracefs instance used (relative to `/`), when there was one.
    pub instance: Option<String>,
    /// Why there was no trace, when there was none (the spikes are still
    /// kept): no root, no tracefs...
    pub unavailable: Option<String>,
    /// Tracepoints this kernel lacks: the analysis cannot see them.
    pub events_missing: Vec<String>,
    /// Wake-ups at or above the threshold, over all timer threads.
    pub over_threshold: u64,
    /// Those explained, in the order they happened.
    pub explanations: Vec<analyze::Explanation>,
    /// Those not explained: overwritten in the buffer before it was read,
    /// more than the most explained from one read, or `trace.max_spikes`
    /// reached.
    pub not_explained: u64,
    /// Reads of a CPU's buffer (each explains the wake-ups marked there).
    #[serde(default)]
    pub reads: u64,
    /// The time those reads took on the main thread (ns): the kernel
    /// formats the whole buffer for each.
    #[serde(default)]
    pub read_ns: u64,
    /// The culprits over the explained wake-ups, most costly first.
    pub culprits: Vec<verdict::Culprit>,
    /// What else the reader should know (a window cut short...).
    pub notes: Vec<String>,
}

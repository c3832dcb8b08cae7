//! Why wake-ups were late, from plain kernel tracepoints: the text of a
//! tracefs buffer read back ([`parse`]), each late wake-up decomposed into
//! what owned its CPU from the deadline to the wake-up ([`analyze`]), and
//! the culprits of a whole run ranked ([`verdict`]). Pure: the flight
//! recorder that fills the buffer is in `sys::trace` and the run.

pub mod analyze;
pub mod fields;
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
    /// Wake-ups read but not explained, with why (the window held no event,
    /// or its start was overwritten): at most [`MAX_UNEXPLAINED`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unexplained: Vec<Unexplained>,
    /// The timer threads' worst wake-ups over the threshold that were not
    /// explained, worst first, with why when known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub worst_unexplained: Vec<Unexplained>,
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

/// Most unexplained wake-ups listed with why.
pub const MAX_UNEXPLAINED: usize = 100;

/// A late wake-up that is not explained, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unexplained {
    /// The timer thread's index.
    pub timer: usize,
    /// The sample's place in the thread's samples.
    pub sample: u64,
    /// The deadline (CLOCK_MONOTONIC, ns).
    pub deadline_ns: u64,
    /// The measured latency (ns).
    pub latency_ns: u64,
    /// Why it is not explained.
    pub why: String,
}

impl TraceReport {
    /// Lists, among `worst` (a timer thread's worst wake-ups: (timer,
    /// sample, deadline, latency)), those over the threshold that no
    /// explanation covers, worst first, with the reason the recorder knew.
    pub fn find_worst_unexplained(&mut self, worst: &[(usize, u64, u64, u64)]) {
        let explained: std::collections::BTreeSet<(usize, u64)> = self
            .explanations
            .iter()
            .map(|e| (e.timer, e.sample))
            .collect();
        let mut out: Vec<Unexplained> = worst
            .iter()
            .filter(|w| w.3 >= self.threshold_ns && !explained.contains(&(w.0, w.1)))
            .map(|&(timer, sample, deadline_ns, latency_ns)| {
                let why = self
                    .unexplained
                    .iter()
                    .find(|u| (u.timer, u.sample) == (timer, sample))
                    .map_or_else(
                        || match &self.unavailable {
                            Some(why) => format!("no trace: {why}"),
                            None => "not read: the buffer was not read before it was \
                                     overwritten, or the reads were rationed"
                                .to_string(),
                        },
                        |u| u.why.clone(),
                    );
                Unexplained {
                    timer,
                    sample,
                    deadline_ns,
                    latency_ns,
                    why,
                }
            })
            .collect();
        out.sort_by_key(|u| (std::cmp::Reverse(u.latency_ns), u.timer, u.sample));
        out.truncate(MAX_UNEXPLAINED);
        self.worst_unexplained = out;
    }
}

//! Why wake-ups were late, from plain kernel tracepoints: the text of a
//! tracefs buffer read back ([`crate::trace::text`]), each late wake-up decomposed into
//! what owned its CPU from the deadline to the wake-up ([`analyze`]), and
//! the culprits of a whole run ranked ([`verdict`]). Pure: the flight
//! recorder that fills the buffer is in `sys::trace` and the run.

pub mod analyze;
pub mod verdict;
mod wire;

use crate::trace::consumer::Tracepoint;
use serde::{Deserialize, Serialize};

/// The tracepoints the flight recorder keeps for the explanations, by
/// `events/` directory. Those this kernel lacks are named in the result.
pub const TRACEPOINTS: &[Tracepoint] = &[
    Tracepoint::required(&["sched/sched_switch"]),
    Tracepoint::required(&["sched/sched_waking"]),
    Tracepoint::detail(&["sched/sched_wakeup"]),
    // A process's first wake-up (fork): idle that takes it leaves at once.
    Tracepoint::detail(&["sched/sched_wakeup_new"]),
    Tracepoint::required(&["irq/irq_handler_entry"]),
    Tracepoint::required(&["irq/irq_handler_exit"]),
    Tracepoint::required(&["irq/softirq_entry"]),
    Tracepoint::required(&["irq/softirq_exit"]),
    Tracepoint::required(&["timer/hrtimer_expire_entry"]),
    Tracepoint::required(&["timer/hrtimer_expire_exit"]),
    Tracepoint::detail(&["power/cpu_idle"]),
    Tracepoint::detail(&["ipi/ipi_send_cpu"]),
    Tracepoint::detail(&["ipi/ipi_entry"]),
    Tracepoint::detail(&["ipi/ipi_exit"]),
    Tracepoint::detail(&["workqueue/workqueue_execute_start"]),
    Tracepoint::detail(&["workqueue/workqueue_execute_end"]),
    // x86's local APIC timer interrupt and its IRQ-work/reschedule vectors.
    Tracepoint::detail(&["irq_vectors/local_timer_entry"]),
    Tracepoint::detail(&["irq_vectors/local_timer_exit"]),
    Tracepoint::detail(&["irq_vectors/reschedule_entry"]),
    Tracepoint::detail(&["irq_vectors/reschedule_exit"]),
    Tracepoint::detail(&["irq_vectors/call_function_single_entry"]),
    Tracepoint::detail(&["irq_vectors/call_function_single_exit"]),
    // Hardware noise the other events cannot see: each NMI handler's run.
    Tracepoint::detail(&["nmi/nmi_handler"]),
];

/// The names of [`TRACEPOINTS`], as the flight recorder enables them.
pub fn tracepoint_names() -> Vec<&'static str> {
    TRACEPOINTS.iter().map(Tracepoint::name).collect()
}

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
    /// or its start was overwritten; or not chosen: more than a read
    /// explains): the worst [`MAX_UNEXPLAINED`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unexplained: Vec<Unexplained>,
    /// The timer threads' worst wake-ups over the threshold that were not
    /// explained, worst first, with why when known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub worst_unexplained: Vec<Unexplained>,
    /// Reads of a CPU's buffer (each explains the wake-ups marked there).
    #[serde(default)]
    pub reads: u64,
    /// The CPU time those reads took on the main thread (ns): the kernel
    /// formats the whole buffer for each.
    #[serde(default)]
    pub read_ns: u64,
    /// The CPU time of the reads with their analyses (explanations,
    /// `dump_tasks`) on the main thread (ns): what the read budget counts
    /// (0 in older results).
    #[serde(default)]
    pub analysis_ns: u64,
    /// The events those reads brought (the binary reader's new records;
    /// the text reader's whole buffer each time; 0 in older results).
    #[serde(default)]
    pub events_read: u64,
    /// The CPU time of reading and indexing the kernel's symbols (ns):
    /// once, when the first window is decoded (the binary reader; 0 in
    /// older results and with the text reader).
    #[serde(default)]
    pub symbols_ns: u64,
    /// The CPU time of writing the explained windows' trace files (ns),
    /// done once at the end of the run (0 in older results).
    #[serde(default)]
    pub windows_ns: u64,
    /// When each CPU's buffer was read (at most [`MAX_READS_KEPT`]): they
    /// tell why a wake-up was not explained.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reads_at: Vec<ReadAt>,
    /// The culprits over the explained wake-ups, most costly first.
    pub culprits: Vec<verdict::Culprit>,
    /// What else the reader should know (a window cut short...).
    pub notes: Vec<String>,
}

/// Most unexplained wake-ups listed with why.
pub const MAX_UNEXPLAINED: usize = 100;

/// Most reads kept in [`TraceReport::reads_at`] (past it, the reasons of
/// later wake-ups not explained say less).
pub const MAX_READS_KEPT: usize = 10_000;

/// A read of one CPU's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadAt {
    /// The CPU.
    pub cpu: usize,
    /// The newest event the buffer held (CLOCK_MONOTONIC, ns): about when
    /// it was read.
    pub at_ns: u64,
}

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
    /// Notes a read of `cpu`'s buffer whose newest event is at `at_ns`.
    pub fn note_read(&mut self, cpu: usize, at_ns: u64) {
        if self.reads_at.len() < MAX_READS_KEPT {
            self.reads_at.push(ReadAt { cpu, at_ns });
        }
    }

    /// Notes a wake-up not explained, and why; past [`MAX_UNEXPLAINED`],
    /// the least late goes: the worst are kept.
    pub fn note_unexplained(&mut self, u: Unexplained) {
        if self.unexplained.len() >= MAX_UNEXPLAINED {
            let least = self
                .unexplained
                .iter()
                .enumerate()
                .min_by_key(|(_, u)| u.latency_ns);
            match least {
                Some((at, l)) if l.latency_ns < u.latency_ns => {
                    self.unexplained.remove(at);
                }
                _ => return,
            }
        }
        self.unexplained.push(u);
    }

    /// Why a wake-up on `cpu` ending at `end_ns`, that no read chose or
    /// could explain, was not explained: a read came after it (the buffer
    /// no longer held it), or none did.
    fn why_not_read(&self, cpu: Option<usize>, deadline_ns: u64, end_ns: u64) -> String {
        let buffer = cpu.map_or("the".to_string(), |c| format!("CPU {c}'s"));
        let next = self
            .reads_at
            .iter()
            .filter(|r| cpu.is_none_or(|c| r.cpu == c) && r.at_ns >= end_ns)
            .map(|r| r.at_ns)
            .min();
        match next {
            Some(at) => format!(
                "overwritten before it was read: the next read of {buffer} buffer, {:.1} ms \
                 after the deadline, no longer held it (more events than the buffer holds \
                 between reads, which are spaced to keep them and their analyses within 5 % \
                 of a CPU: a larger `trace.buffer_kb`, fewer events, or a higher \
                 `trace.threshold`)",
                at.saturating_sub(deadline_ns) as f64 / 1e6
            ),
            None if self.reads_at.len() >= MAX_READS_KEPT => format!(
                "not read, or overwritten before a read of {buffer} buffer (past the first \
                 {MAX_READS_KEPT} reads, their times are not kept)"
            ),
            None => format!(
                "not read: no read of {buffer} buffer came after it (reads are held to 10 a \
                 second and 5 % of a CPU)"
            ),
        }
    }

    /// Lists, among `worst` (a timer thread's worst wake-ups: (timer,
    /// sample, cpu, deadline, latency)), those over the threshold that no
    /// explanation covers, worst first, with why.
    pub fn find_worst_unexplained(&mut self, worst: &[(usize, u64, Option<usize>, u64, u64)]) {
        let explained: std::collections::BTreeSet<(usize, u64)> = self
            .explanations
            .iter()
            .map(|e| (e.timer, e.sample))
            .collect();
        let mut out: Vec<Unexplained> = worst
            .iter()
            .filter(|w| w.4 >= self.threshold_ns && !explained.contains(&(w.0, w.1)))
            .map(|&(timer, sample, cpu, deadline_ns, latency_ns)| {
                let why = self
                    .unexplained
                    .iter()
                    .find(|u| (u.timer, u.sample) == (timer, sample))
                    .map_or_else(
                        || match &self.unavailable {
                            Some(why) => format!("no trace: {why}"),
                            None => self.why_not_read(
                                cpu,
                                deadline_ns,
                                deadline_ns.saturating_add(latency_ns),
                            ),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_up_not_explained_is_told_not_chosen_overwritten_or_not_read() {
        let mut r = TraceReport {
            threshold_ns: 10_000,
            ..TraceReport::default()
        };
        // CPU 1 read at 100 ms and 310 ms; sample 1 was read, not chosen.
        r.note_read(1, 100_000_000);
        r.note_read(1, 310_000_000);
        r.note_unexplained(Unexplained {
            timer: 0,
            sample: 1,
            deadline_ns: 95_000_000,
            latency_ns: 50_000,
            why: "read, not chosen".into(),
        });
        let worst = [
            (0, 1, Some(1), 95_000_000, 50_000),
            (0, 2, Some(1), 200_000_000, 40_000),
            (0, 3, Some(1), 400_000_000, 30_000),
            (0, 4, Some(1), 500_000_000, 5_000),
        ];
        r.find_worst_unexplained(&worst);
        let why: Vec<&str> = r.worst_unexplained.iter().map(|u| u.why.as_str()).collect();
        assert_eq!(why.len(), 3, "below the threshold: not listed");
        assert_eq!(why[0], "read, not chosen");
        assert!(
            why[1].starts_with(
                "overwritten before it was read: the next read of CPU 1's buffer, 110.0 ms \
                 after the deadline, no longer held it"
            ),
            "{}",
            why[1]
        );
        assert!(why[2].starts_with("not read: no read of CPU 1's buffer came after it"));
    }

    #[test]
    fn the_worst_unexplained_are_kept() {
        let mut r = TraceReport::default();
        for i in 0..(MAX_UNEXPLAINED as u64 + 50) {
            r.note_unexplained(Unexplained {
                timer: 0,
                sample: i,
                deadline_ns: i,
                latency_ns: (i * 7919) % 1000,
                why: String::new(),
            });
        }
        let mut kept: Vec<u64> = r.unexplained.iter().map(|u| u.latency_ns).collect();
        let mut all: Vec<u64> = (0..(MAX_UNEXPLAINED as u64 + 50))
            .map(|i| (i * 7919) % 1000)
            .collect();
        all.sort_unstable_by(|a, b| b.cmp(a));
        all.truncate(MAX_UNEXPLAINED);
        kept.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(kept, all);
    }
}

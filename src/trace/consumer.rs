//! The consumer interface of the trace stream: each analysis declares the
//! tracepoints it reads, is fed the events in time order, is told what the
//! run learned (the timer threads, the programs, the tasks' threads), and
//! finishes into its own part of the result. The stream runs whatever is
//! registered in [`super::STREAM_CONSUMERS`] and names none of them; the
//! tracepoints it enables are the union of their declarations.

use crate::config::TaskSelector;
use crate::sys::SysRoot;
use crate::trace::audit::AuditReport;
use crate::trace::event::Event;
pub use crate::trace::event::Tracepoint;
use crate::trace::irq_task::{IrqTaskResult, IrqTaskSpec};
use crate::trace::task_latency::{TaskLatencyResult, TaskLatencySpec};
use serde::{Deserialize, Serialize};
use std::any::Any;

/// What the machine promised the audited CPUs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Promises {
    /// `/sys/devices/system/cpu/isolated`.
    pub isolcpus: Vec<usize>,
    /// `/sys/devices/system/cpu/nohz_full`.
    pub nohz_full: Vec<usize>,
    /// A cpuset partition: its name (`rt`), its cpuset path as
    /// `/proc/PID/cpuset` shows it (`/rt`) and its CPUs.
    pub partition: Option<(String, String, Vec<usize>)>,
}

/// The trace stream's time on the main thread.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamCost {
    /// The reader: `binary` (pages) or `text`.
    pub reader: String,
    /// Starting it: the instance, the formats, the kernel's symbols (ns).
    pub start_ns: u64,
    /// Its reads while the run went on, and their time (ns), decoding and
    /// feeding the audit and measurements included.
    pub reads: u64,
    /// The time of those reads (ns).
    pub read_ns: u64,
    /// Events fed.
    pub events: u64,
}

/// What the stream must feed.
#[derive(Debug, Clone, Default)]
pub struct StreamSpec {
    /// The CPUs the audit watches, if any.
    pub audit_cpus: Option<Vec<usize>>,
    /// The IRQ-to-task measurements.
    pub irq_tasks: Vec<IrqTaskSpec>,
    /// The task-latency measurements.
    pub task_latency: Vec<TaskLatencySpec>,
    /// The timer threads' IRQ side (`irq_latency`).
    pub timer_irq: bool,
    /// The noise threads whose gaps are attributed.
    pub noise: Vec<crate::measure::noise::NoiseSpec>,
    /// Every real-time task's wake-ups from tracefs, where the BPF source
    /// cannot run (`Some(true)`: every task's).
    pub rt_wakeups: Option<bool>,
}

/// What a stream found, once finished: each consumer fills its own part.
#[derive(Default)]
pub struct StreamResults {
    /// The isolation audit.
    pub audit: Option<AuditReport>,
    /// The IRQ-to-task measurements.
    pub irq_tasks: Vec<IrqTaskResult>,
    /// The task-latency measurements.
    pub task_latency: Vec<TaskLatencyResult>,
    /// The timer threads' IRQ side.
    pub timer_irq: Vec<crate::trace::timer_irq::TimerIrqResult>,
    /// What each noise thread's gaps were.
    pub noise: Vec<crate::trace::noise::NoiseAttribution>,
    /// Figures of consumers with no part of their own in the result model.
    pub figures: Vec<crate::trace::Figure>,
}

/// Which events of a filtered tracepoint one consumer needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    /// Every event (a task whose new threads would be missed until the
    /// next look could name them).
    Everything,
    /// The events matching any of these terms (`comm == "x"`,
    /// `common_pid == 12`).
    Terms(Vec<String>),
}

/// A noise thread as the stream's consumers learn it.
#[derive(Debug, Clone)]
pub struct NoiseLearned {
    /// N of `noise_thread[N]`.
    pub index: usize,
    /// Its TID.
    pub tid: i32,
    /// Its gaps over the threshold, as it measures them.
    pub ring: std::sync::Arc<crate::stats::noise::GapRing>,
}

/// What the run learned since the last look.
pub struct Learned<'a> {
    /// The timer threads' TIDs (they belong on their CPUs).
    pub measured: &'a [i32],
    /// The timer threads: (index, TID, first deadline measured).
    pub timers: &'a [(usize, i32, u64)],
    /// The noise threads, once started.
    pub noise: &'a [NoiseLearned],
    /// The threads, as `/proc` lists them now, of a task chosen by PID or
    /// program (its process first); none for a task chosen by name.
    pub threads: &'a dyn Fn(&TaskSelector) -> Vec<i32>,
    /// Where `/proc` is (what a consumer must ask of a task it saw).
    pub root: &'a SysRoot,
}

/// How the stream ended, for the consumers' results.
pub struct StreamEnd<'a> {
    /// Events the kernel could not keep.
    pub lost: u64,
    /// Tracepoints this kernel lacks.
    pub missing: &'a [String],
    /// The trace was read as the kernel's text (its binary pages could
    /// not be read or decoded).
    pub text_reader: bool,
    /// What the stream cost the main thread.
    pub cost: &'a StreamCost,
    /// The kernel's IRQ counts (`/proc/interrupts`: number, total) before
    /// the trace started, once it had, just before it stopped and after.
    pub irqs: [&'a [(u32, u64)]; 4],
    /// What the machine promised the audited CPUs.
    pub promises: &'a Promises,
}

/// An analysis fed by the trace stream.
pub trait Consumer: Any {
    /// The tracepoints it reads.
    fn tracepoints(&self) -> Vec<Tracepoint>;

    /// Which events of `tracepoint` (one it declared filtered) it needs
    /// now; None: none.
    fn filter(&self, _tracepoint: &str) -> Option<Filter> {
        None
    }

    /// The task it follows, if any (a process given by PID is pinned by
    /// the stream when it starts).
    fn task(&self) -> Option<&TaskSelector> {
        None
    }

    /// Its task, given by PID, was gone when the stream started.
    fn gone_before_start(&mut self) {}

    /// What the run learned, before each read.
    fn learn(&mut self, run: &Learned);

    /// After each read: what it must ask of the tasks it saw.
    fn settle(&mut self, _run: &Learned) {}

    /// One event (in time order).
    fn feed(&mut self, e: &Event);

    /// Its part of the stream's results.
    fn finish(self: Box<Self>, end: &StreamEnd, into: &mut StreamResults);

    /// Itself, for a caller that wants one kind's live figures.
    fn as_any(&self) -> &dyn Any;
}

/// Registers a consumer kind: the consumers `spec` asks for, in order.
pub type Register = fn(&StreamSpec, &mut Vec<Box<dyn Consumer>>);

/// Every tracepoint `consumers` declare, once, in the order first
/// declared: (the tracepoint, required by any).
pub fn union(consumers: &[Box<dyn Consumer>]) -> Vec<Tracepoint> {
    let mut out: Vec<Tracepoint> = Vec::new();
    for t in consumers.iter().flat_map(|c| c.tracepoints()) {
        match out.iter_mut().find(|o| o.names == t.names) {
            Some(o) => o.required |= t.required,
            None => out.push(t),
        }
    }
    out
}

/// The filter of `tracepoint` that keeps what every consumer needs; None
/// when no consumer wants it.
pub fn filter_of(consumers: &[Box<dyn Consumer>], tracepoint: &str) -> Option<String> {
    let mut terms: Vec<String> = Vec::new();
    let mut wanted = false;
    for f in consumers.iter().filter_map(|c| c.filter(tracepoint)) {
        wanted = true;
        match f {
            // `0` clears an event's filter: every event passes.
            Filter::Everything => return Some("0".into()),
            Filter::Terms(t) => terms.extend(t),
        }
    }
    if !wanted {
        return None;
    }
    if terms.is_empty() {
        // Nothing yet: the idle task makes no syscall and arms no timer.
        return Some("common_pid == 0".into());
    }
    Some(terms.join(" || "))
}

/// The filter terms naming a task: by name, or each known thread (at most
/// [`MAX_FILTERED_TIDS`]).
pub fn task_terms(task: &TaskSelector, tids: &std::collections::BTreeSet<i32>) -> Vec<String> {
    match task {
        TaskSelector::Name(name) => vec![format!("comm == \"{name}\"")],
        _ => tids
            .iter()
            .take(MAX_FILTERED_TIDS)
            .map(|t| format!("common_pid == {t}"))
            .collect(),
    }
}

/// Most threads of one task named in a filter.
pub const MAX_FILTERED_TIDS: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    struct Wants(&'static [Tracepoint], Option<Filter>);

    impl Consumer for Wants {
        fn tracepoints(&self) -> Vec<Tracepoint> {
            self.0.to_vec()
        }
        fn filter(&self, _: &str) -> Option<Filter> {
            self.1.clone()
        }
        fn learn(&mut self, _: &Learned) {}
        fn feed(&mut self, _: &Event) {}
        fn finish(self: Box<Self>, _: &StreamEnd, _: &mut StreamResults) {}
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    const A: &[Tracepoint] = &[
        Tracepoint::detail(&["irq/softirq_entry"]),
        Tracepoint::required(&["sched/sched_switch"]),
    ];
    const B: &[Tracepoint] = &[
        Tracepoint::required(&["irq/softirq_entry"]),
        Tracepoint::filtered(&["raw_syscalls/sys_exit"]),
    ];

    /// The union keeps the first declaration's place, and a tracepoint
    /// one consumer requires is required.
    #[test]
    fn the_union_is_each_tracepoint_once_in_order_required_by_any() {
        let c: Vec<Box<dyn Consumer>> = vec![Box::new(Wants(A, None)), Box::new(Wants(B, None))];
        let u = union(&c);
        let names: Vec<&str> = u.iter().map(Tracepoint::name).collect();
        assert_eq!(
            names,
            [
                "irq/softirq_entry",
                "sched/sched_switch",
                "raw_syscalls/sys_exit"
            ]
        );
        assert!(u[0].required && u[1].required && !u[2].required);
    }

    /// Terms are joined; one consumer wanting everything clears the
    /// filter; terms wanted but none known yet pass the idle task only.
    #[test]
    fn filters_join_the_consumers_terms() {
        let terms = |t: &[&str]| Some(Filter::Terms(t.iter().map(|s| s.to_string()).collect()));
        let c: Vec<Box<dyn Consumer>> = vec![
            Box::new(Wants(A, terms(&["comm == \"a\""]))),
            Box::new(Wants(B, terms(&["common_pid == 7"]))),
        ];
        assert_eq!(
            filter_of(&c, "x").as_deref(),
            Some("comm == \"a\" || common_pid == 7")
        );
        let c: Vec<Box<dyn Consumer>> = vec![
            Box::new(Wants(A, terms(&["comm == \"a\""]))),
            Box::new(Wants(B, Some(Filter::Everything))),
        ];
        assert_eq!(filter_of(&c, "x").as_deref(), Some("0"));
        let c: Vec<Box<dyn Consumer>> = vec![Box::new(Wants(A, terms(&[])))];
        assert_eq!(filter_of(&c, "x").as_deref(), Some("common_pid == 0"));
        let c: Vec<Box<dyn Consumer>> = vec![Box::new(Wants(A, None))];
        assert_eq!(filter_of(&c, "x"), None);
    }
}

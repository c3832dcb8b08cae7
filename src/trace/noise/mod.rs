//! What each noise thread's gaps were (`rtlab noise`), as rtla osnoise
//! says, from plain tracepoints: on each noise CPU the interference
//! timeline ([`timeline`]: IRQs by name and number, x86 vectors, softirqs
//! by vector, NMIs, and the threads that ran while the noise thread was
//! switched out, each net of what interrupted it), and each gap the thread
//! measured over its threshold ([`crate::stats::noise::GapRing`]) laid on
//! it: the time each cause covers inside the gap, the rest unseen
//! (hardware, firmware, a hypervisor: never spread over the others). Its
//! class is its main cause's; a gap no event covers is `hw`. Summed per
//! thread ([`tally`]): per class, per culprit, the worst gaps, per period.
//!
//! The rings are drained after each read of the trace (`settle`); a gap is
//! attributed once an event newer than its end was read on its CPU (the
//! events inside it are in by then), the later ones wait for the next
//! read; at the end every gap left is. The timeline is kept from the
//! oldest gap waiting (or the thread's last gap's end, at most
//! [`HORIZON_NS`] back) on. A consumer of the trace stream: this directory
//! and its line in [`crate::trace::STREAM_CONSUMERS`] are the whole figure.

pub mod tally;
pub mod timeline;

use crate::stats::noise::{Gap, GapRing};
use crate::trace::consumer::{Consumer, Learned, StreamEnd, Tracepoint};
use crate::trace::consumer::{StreamResults, StreamSpec};
use crate::trace::event::{Event, Names};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use tally::Tally;
use timeline::{Causes, CpuLine};

/// What a gap's main cause was, as rtla osnoise counts noise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseClass {
    /// No event covers any of it: hardware, firmware, a hypervisor.
    Hw,
    /// A non-maskable interrupt's handler.
    Nmi,
    /// A device IRQ, or an interrupt vector (local timer, IPIs).
    Irq,
    /// A softirq.
    Softirq,
    /// Another thread that ran on the CPU.
    Thread,
    /// A lower-priority thread that ran while a real-time task of the CPU
    /// (the noise thread) was runnable: RT throttling or the fair server
    /// (`dl_server`) held it off. Said, not counted as the OS's noise.
    Throttled,
}

impl NoiseClass {
    /// Every class, in the order shown.
    pub const ALL: [NoiseClass; 6] = [
        NoiseClass::Hw,
        NoiseClass::Nmi,
        NoiseClass::Irq,
        NoiseClass::Softirq,
        NoiseClass::Thread,
        NoiseClass::Throttled,
    ];

    /// Its name (`irq`).
    pub fn name(self) -> &'static str {
        match self {
            NoiseClass::Hw => "hw",
            NoiseClass::Nmi => "nmi",
            NoiseClass::Irq => "irq",
            NoiseClass::Softirq => "softirq",
            NoiseClass::Thread => "thread",
            NoiseClass::Throttled => "throttled",
        }
    }
}

/// A class's sums over a thread's gaps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassTotal {
    /// Gaps it was the main cause of.
    pub gaps: u64,
    /// The net time its causes covered inside all the gaps (ns; for `hw`:
    /// the length of the gaps no event covered).
    pub net_ns: u64,
}

/// Each class's sums.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassTotals {
    /// No event covered the gap.
    pub hw: ClassTotal,
    /// NMIs.
    pub nmi: ClassTotal,
    /// IRQs and vectors.
    pub irq: ClassTotal,
    /// Softirqs.
    pub softirq: ClassTotal,
    /// Threads.
    pub thread: ClassTotal,
    /// Threads that ran while the real-time noise thread was held off.
    #[serde(default)]
    pub throttled: ClassTotal,
}

impl ClassTotals {
    /// Class `c`'s sums.
    pub fn get(&self, c: NoiseClass) -> &ClassTotal {
        match c {
            NoiseClass::Hw => &self.hw,
            NoiseClass::Nmi => &self.nmi,
            NoiseClass::Irq => &self.irq,
            NoiseClass::Softirq => &self.softirq,
            NoiseClass::Thread => &self.thread,
            NoiseClass::Throttled => &self.throttled,
        }
    }

    fn get_mut(&mut self, c: NoiseClass) -> &mut ClassTotal {
        match c {
            NoiseClass::Hw => &mut self.hw,
            NoiseClass::Nmi => &mut self.nmi,
            NoiseClass::Irq => &mut self.irq,
            NoiseClass::Softirq => &mut self.softirq,
            NoiseClass::Thread => &mut self.thread,
            NoiseClass::Throttled => &mut self.throttled,
        }
    }
}

/// Gaps per class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassCounts {
    /// `hw` gaps.
    pub hw: u64,
    /// `nmi` gaps.
    pub nmi: u64,
    /// `irq` gaps.
    pub irq: u64,
    /// `softirq` gaps.
    pub softirq: u64,
    /// `thread` gaps.
    pub thread: u64,
    /// `throttled` gaps.
    #[serde(default)]
    pub throttled: u64,
}

impl ClassCounts {
    fn add(&mut self, c: NoiseClass) {
        match c {
            NoiseClass::Hw => self.hw += 1,
            NoiseClass::Nmi => self.nmi += 1,
            NoiseClass::Irq => self.irq += 1,
            NoiseClass::Softirq => self.softirq += 1,
            NoiseClass::Thread => self.thread += 1,
            NoiseClass::Throttled => self.throttled += 1,
        }
    }

    fn merge(&mut self, o: &ClassCounts) {
        self.hw += o.hw;
        self.nmi += o.nmi;
        self.irq += o.irq;
        self.softirq += o.softirq;
        self.thread += o.thread;
        self.throttled += o.throttled;
    }
}

/// One culprit: an IRQ, vector, softirq vector, NMI handler or command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Culprit {
    /// Its class.
    pub class: NoiseClass,
    /// `IRQ 36 virtio1-req.0`, `local_timer`, `TIMER` (a softirq's
    /// vector), `NMI perf_event_nmi_handler`, a thread's command.
    pub name: String,
    /// A thread's PID (of a command's many, the costliest).
    pub pid: Option<i32>,
    /// How many PIDs ran under this command (threads).
    pub pids: u64,
    /// Gaps it was the main cause of.
    pub gaps: u64,
    /// Its net time inside the gaps (ns).
    pub net_ns: u64,
}

/// One cause's part of one gap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CauseTime {
    /// Its class.
    pub class: NoiseClass,
    /// What it is (as [`Culprit::name`]).
    pub name: String,
    /// A thread's PID.
    pub pid: Option<i32>,
    /// Its net time inside the gap (ns).
    pub net_ns: u64,
}

/// One of the worst gaps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorstGap {
    /// Its start (CLOCK_MONOTONIC ns).
    pub start_ns: u64,
    /// Its length (ns).
    pub ns: u64,
    /// Its class.
    pub class: NoiseClass,
    /// Its causes, most net time first (at most 8).
    pub causes: Vec<CauseTime>,
    /// The time no event covers (ns).
    pub unseen_ns: u64,
}

/// One gap with its class, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedGap {
    /// Its start (CLOCK_MONOTONIC ns).
    pub start_ns: u64,
    /// Its length (ns).
    pub ns: u64,
    /// Its class.
    pub class: NoiseClass,
    /// The time no event covers (ns).
    pub unseen_ns: u64,
    /// Its main cause (as [`Culprit::name`]); none for `hw`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// Its main cause's PID, when a thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
}

/// The gaps of one period, by class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeriodClasses {
    /// Its start (CLOCK_MONOTONIC ns).
    pub start_ns: u64,
    /// Its gaps by class.
    pub gaps: ClassCounts,
}

/// What one noise thread's gaps were (`noise_attribution[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoiseAttribution {
    /// N of `noise_thread[N]`.
    pub noise: usize,
    /// Its CPU.
    pub cpu: usize,
    /// Its TID (None: it never started).
    pub tid: Option<i32>,
    /// Its threshold (ns).
    pub threshold_ns: u64,
    /// Gaps attributed.
    pub gaps: u64,
    /// Their length in all (ns).
    pub noise_ns: u64,
    /// Per class.
    pub classes: ClassTotals,
    /// The time of all the gaps no event covers (ns).
    pub unseen_ns: u64,
    /// The culprits, most net time first, a command's PIDs folded (at
    /// most 50).
    pub culprits: Vec<Culprit>,
    /// Rows of one PID folded into their command's.
    pub culprits_folded: u64,
    /// Culprit rows past the 50 given, and their net time (ns).
    pub culprits_left_out: u64,
    /// Their net time (ns).
    pub culprits_left_out_ns: u64,
    /// The worst gaps (at most 20), worst first.
    pub worst: Vec<WorstGap>,
    /// The length of each entry of `periods` (ns): the thread's period,
    /// doubled each time they were merged two by two (past 4096).
    pub period_ns: u64,
    /// Where the periods are counted from: the first gap's start (the
    /// thread's own periods start when it does; the attribution sees its
    /// gaps only). None: no gap.
    pub period_origin_ns: Option<u64>,
    /// The periods with gaps, in order (those without are left out).
    pub periods: Vec<PeriodClasses>,
    /// Gaps that began before the timeline kept: causes before it were
    /// let go, their time counted unseen.
    pub gaps_late: u64,
    /// The first 10000 gaps, in the order attributed, each with its class
    /// and main cause.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listed: Vec<ListedGap>,
    /// Gaps past those listed.
    #[serde(default)]
    pub listed_left_out: u64,
    /// Gaps waiting for newer events (live figures only; 0 at the end).
    pub gaps_waiting: u64,
    /// Gaps the thread could not hand over (its ring was full).
    pub gaps_dropped: u64,
    /// Events the kernel could not keep (then the causes are incomplete).
    pub lost_events: u64,
}

/// The interruptions and the thread switches.
const TRACEPOINTS: &[Tracepoint] = &[
    Tracepoint::required(&["sched/sched_switch"]),
    Tracepoint::required(&["irq/irq_handler_entry"]),
    Tracepoint::required(&["irq/irq_handler_exit"]),
    Tracepoint::required(&["irq/softirq_entry"]),
    Tracepoint::required(&["irq/softirq_exit"]),
    Tracepoint::detail(&["nmi/nmi_handler"]),
    // arm64's IPIs; x86's vectors.
    Tracepoint::detail(&["ipi/ipi_entry"]),
    Tracepoint::detail(&["ipi/ipi_exit"]),
    Tracepoint::detail(&["irq_vectors/local_timer_entry"]),
    Tracepoint::detail(&["irq_vectors/local_timer_exit"]),
    Tracepoint::detail(&["irq_vectors/reschedule_entry"]),
    Tracepoint::detail(&["irq_vectors/reschedule_exit"]),
    Tracepoint::detail(&["irq_vectors/call_function_entry"]),
    Tracepoint::detail(&["irq_vectors/call_function_exit"]),
    Tracepoint::detail(&["irq_vectors/call_function_single_entry"]),
    Tracepoint::detail(&["irq_vectors/call_function_single_exit"]),
    Tracepoint::detail(&["irq_vectors/irq_work_entry"]),
    Tracepoint::detail(&["irq_vectors/irq_work_exit"]),
    Tracepoint::detail(&["irq_vectors/x86_platform_ipi_entry"]),
    Tracepoint::detail(&["irq_vectors/x86_platform_ipi_exit"]),
    Tracepoint::detail(&["irq_vectors/thermal_apic_entry"]),
    Tracepoint::detail(&["irq_vectors/thermal_apic_exit"]),
    Tracepoint::detail(&["irq_vectors/error_apic_entry"]),
    Tracepoint::detail(&["irq_vectors/error_apic_exit"]),
    Tracepoint::detail(&["irq_vectors/spurious_apic_entry"]),
    Tracepoint::detail(&["irq_vectors/spurious_apic_exit"]),
];

/// How far back the timeline is kept when no gap waits (ns): a gap read
/// from its ring at the next look may have begun that long before the
/// newest event.
pub const HORIZON_NS: u64 = 2_000_000_000;
/// Kept before the oldest gap waiting (ns): the gap's clock is read just
/// after it ends.
const SKEW_NS: u64 = 100_000;
/// Most gaps waiting per thread (past it, the oldest are attributed with
/// the events read so far).
const MAX_WAITING: usize = 1 << 16;

/// A noise thread to attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Watch {
    /// N of `noise_thread[N]`.
    pub index: usize,
    /// Its CPU.
    pub cpu: usize,
    /// Its threshold (ns).
    pub threshold_ns: u64,
    /// Its period (ns).
    pub period_ns: u64,
}

impl From<&crate::measure::noise::NoiseSpec> for Watch {
    fn from(s: &crate::measure::noise::NoiseSpec) -> Self {
        Watch {
            index: s.index,
            cpu: s.cpu,
            threshold_ns: s.threshold_ns,
            period_ns: s.period_ns,
        }
    }
}

/// One thread followed.
#[derive(Debug)]
struct Watched {
    watch: Watch,
    tid: Option<i32>,
    ring: Option<Arc<GapRing>>,
    waiting: VecDeque<Gap>,
    last_end: u64,
    tally: Tally,
}

/// The consumer.
#[derive(Debug)]
pub struct NoiseAttr {
    threads: Vec<Watched>,
    lines: BTreeMap<usize, CpuLine>,
    causes: Causes,
    names: Names,
    scratch: Vec<Gap>,
}

/// Registers the attribution when the spec has noise threads.
pub fn register(spec: &StreamSpec, out: &mut Vec<Box<dyn Consumer>>) {
    if !spec.noise.is_empty() {
        let watch: Vec<Watch> = spec.noise.iter().map(Watch::from).collect();
        out.push(Box::new(NoiseAttr::new(&watch)));
    }
}

impl NoiseAttr {
    /// The attribution of `threads`' gaps.
    pub fn new(threads: &[Watch]) -> Self {
        NoiseAttr {
            threads: threads
                .iter()
                .map(|&watch| Watched {
                    watch,
                    tid: None,
                    ring: None,
                    waiting: VecDeque::new(),
                    last_end: 0,
                    tally: Tally::default(),
                })
                .collect(),
            lines: threads
                .iter()
                .map(|t| (t.cpu, CpuLine::default()))
                .collect(),
            causes: Causes::default(),
            names: Names::default(),
            scratch: Vec::new(),
        }
    }

    /// Thread `index` runs as `tid` and hands its gaps over in `ring`.
    pub fn started(&mut self, index: usize, tid: i32, ring: &Arc<GapRing>) {
        for w in self.threads.iter_mut().filter(|w| w.watch.index == index) {
            w.tid = Some(tid);
            if w.ring.is_none() {
                w.ring = Some(ring.clone());
            }
        }
    }

    /// Takes the gaps handed over and attributes those whose events are
    /// in (`last`: all), then lets go of the timeline no gap needs.
    pub fn drain(&mut self, last: bool) {
        let NoiseAttr {
            threads,
            lines,
            causes,
            scratch,
            ..
        } = self;
        for w in threads.iter_mut() {
            if let Some(ring) = &w.ring {
                scratch.clear();
                ring.take(scratch);
                w.waiting.extend(scratch.iter().copied());
            }
            let line = lines.entry(w.watch.cpu).or_default();
            while let Some(&gap) = w.waiting.front() {
                let over = w.waiting.len() > MAX_WAITING;
                if !(last || over || gap.end_ns <= line.newest) {
                    break;
                }
                w.waiting.pop_front();
                // At the end, what ran last on the CPU is taken to run on.
                let upto = if last {
                    line.newest.max(gap.end_ns)
                } else {
                    line.newest
                };
                let tid = w.tid;
                let own = |id: u32| {
                    causes.get(id).is_some_and(|c| {
                        c.class == NoiseClass::Thread && c.pid.is_some() && c.pid == tid
                    })
                };
                let parts = line.covered(gap.start_ns(), gap.end_ns, upto, own);
                let a = tally::attribute(gap, parts, causes);
                if line.kept_from > gap.start_ns() {
                    w.tally.late += 1;
                }
                w.tally.add(a, causes, w.watch.period_ns);
                w.last_end = w.last_end.max(gap.end_ns);
            }
        }
        // A thread's next gap begins after its last one ended, and at most
        // the horizon before the newest event; one waiting needs its whole
        // timeline.
        for (cpu, line) in lines.iter_mut() {
            let horizon = line.newest.saturating_sub(HORIZON_NS);
            let keep = threads
                .iter()
                .filter(|w| w.watch.cpu == *cpu)
                .map(|w| match w.waiting.front() {
                    Some(g) => g.start_ns().saturating_sub(SKEW_NS),
                    None => w.last_end.saturating_sub(SKEW_NS).max(horizon),
                })
                .min()
                .unwrap_or(horizon);
            line.prune(keep);
        }
    }

    /// Each thread's figures so far (the live view), by index.
    pub fn attributions(&self) -> Vec<NoiseAttribution> {
        self.threads
            .iter()
            .map(|w| {
                let who = (w.watch.index, w.watch.cpu, w.tid);
                let mut a = w.tally.result(who, &self.causes, w.watch.period_ns);
                a.threshold_ns = w.watch.threshold_ns;
                a.gaps_waiting = w.waiting.len() as u64;
                a.gaps_dropped = w.ring.as_ref().map_or(0, |r| r.dropped());
                a
            })
            .collect()
    }

    /// Stretches the timelines hold now.
    pub fn held(&self) -> usize {
        self.lines.values().map(CpuLine::held).sum()
    }
}

impl Consumer for NoiseAttr {
    fn tracepoints(&self) -> Vec<Tracepoint> {
        TRACEPOINTS.to_vec()
    }

    fn learn(&mut self, run: &Learned) {
        for n in run.noise {
            self.started(n.index, n.tid, &n.ring);
        }
    }

    fn settle(&mut self, run: &Learned) {
        self.learn(run);
        self.drain(false);
    }

    fn feed(&mut self, e: &Event) {
        self.names.learn(e);
        if let Some(line) = self.lines.get_mut(&e.cpu) {
            line.feed(e, &mut self.causes, &self.names);
        }
    }

    fn finish(mut self: Box<Self>, end: &StreamEnd, into: &mut StreamResults) {
        self.drain(true);
        for mut a in self.attributions() {
            a.lost_events = end.lost;
            into.noise.push(a);
        }
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

pub mod text;

#[cfg(test)]
mod tests;

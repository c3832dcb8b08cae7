//! The explanation as it is written into the result JSON: its parts, the
//! tasks on each CPU, kernel stacks and timeline slices, and the bounds of
//! what one holds.

use serde::{Deserialize, Serialize};

/// What a part of a latency was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartKind {
    /// The CPU idled past the deadline: the timer interrupt came late
    /// (idle exit, or a hypervisor that did not run this CPU).
    TimerLateIdle,
    /// The timer interrupt came late while the CPU was busy (a thread, a
    /// softirq, the timer thread itself): interrupts off in it, or the
    /// hypervisor. Whoever ran is named, but a thread cannot delay an
    /// interrupt by its priority: the lateness is the interrupt's.
    TimerLate,
    /// The timer thread's own timer slack: a SCHED_OTHER thread's timer
    /// may fire up to its slack (`/proc/TID/timerslack_ns`, 50 µs by
    /// default) past the deadline, the kernel batching wake-ups. Not an
    /// interrupt's lateness and no thread's doing: a per-thread setting,
    /// counted in the culprits under its own name.
    TimerSlack,
    /// A hardware interrupt handler (device IRQ, local timer, IPI).
    Irq,
    /// A softirq.
    Softirq,
    /// Another thread ran.
    Thread,
    /// The timer thread itself, in the kernel (wake-up, switch, return).
    TimerThread,
    /// Idle after the thread was woken.
    Idle,
    /// After its wake-up the real-time timer thread was runnable, yet the
    /// kernel switched to a lower-priority task or kept idling through an
    /// interrupt: it held the thread off (RT throttling, the fair server,
    /// or a spent SCHED_DEADLINE runtime). Whoever ran is not to blame.
    HeldOff,
    /// A non-maskable interrupt's handler (`nmi:nmi_handler`): hardware
    /// noise (perf, the NMI watchdog) that no priority keeps out.
    Nmi,
    /// The timer interrupt came late while the CPU was busy and no event at
    /// all was logged in that stretch: a hypervisor that did not run this
    /// CPU, an SMI, an NMI without a tracepoint, or interrupts off in code
    /// that logs nothing. The trace cannot say which; never given to the
    /// thread that happened to be running.
    Unseen,
    /// The trace's own work in the window: a kernel stack walked for
    /// `trace.stacks` (its cost is rtlab's, said apart).
    Tracing,
    /// Before the first event of the window: nothing recorded says.
    Unknown,
}

impl PartKind {
    /// The timer thread's own time, or the trace's: never a culprit.
    pub fn is_own(self) -> bool {
        matches!(self, PartKind::TimerThread | PartKind::Tracing)
    }
}

/// One part of a latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    /// What kind.
    pub kind: PartKind,
    /// Who, in words (`python3`, `IRQ 36 virtio1-req.0`, `softirq NET_RX`).
    pub what: String,
    /// The thread's PID (threads).
    pub pid: Option<i32>,
    /// The thread's kernel priority (0..99 real-time, 100..139 others).
    pub prio: Option<i32>,
    /// How long (ns; the trace's text gives µs).
    pub ns: u64,
    /// It ran before the timer thread was woken: the timer interrupt came
    /// late while it ran.
    pub before_wake: bool,
    /// How much of it is inferred: the kernel did not log the switch to
    /// the task, which was taken from the task's own events (ns).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub inferred_ns: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One wake-up, explained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    /// The timer thread's index.
    pub timer: usize,
    /// The sample's place in the thread's samples.
    pub sample: u64,
    /// The CPU traced.
    pub cpu: usize,
    /// The deadline (CLOCK_MONOTONIC, ns).
    pub deadline_ns: u64,
    /// The measured latency (ns).
    pub latency_ns: u64,
    /// The timer thread's wake-up, after the deadline (ns), if recorded.
    pub woken_after_ns: Option<u64>,
    /// From its wake-up to its switch-in (ns), if recorded.
    pub wake_to_switch_ns: Option<u64>,
    /// The parts, largest first; they add up to the latency.
    pub parts: Vec<Part>,
    /// The main cause, in a sentence.
    pub cause: String,
    /// Events read in the window.
    pub events: usize,
    /// The window as trace-event JSON: its path in the output directory
    /// (`rtlab-spikes/…`).
    pub trace_file: Option<String>,
    /// The window as the kernel's own text (ftrace/systrace format, which
    /// Perfetto and trace-cmd users read): its path in the output
    /// directory (`rtlab-spikes/…`).
    #[serde(default)]
    pub trace_text: Option<String>,
    /// Who owned the CPU from the deadline to the wake-up, in order (at
    /// most [`MAX_SLICES`]; the rest are in the parts).
    #[serde(default)]
    pub timeline: Vec<Slice>,
    /// Kernel stacks the trace recorded in the window (`trace.stacks`):
    /// where each task was as it let the CPU go to the timer thread, and
    /// at the timer thread's wake-up.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stacks: Vec<KernelStack>,
    /// What every traced CPU was running at the deadline
    /// (`trace.dump_tasks`, rtla's `--dump-tasks`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus_at_deadline: Vec<CpuTask>,
}

/// The task a CPU was running at a moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuTask {
    /// The CPU.
    pub cpu: usize,
    /// The task (`<idle>` for idle).
    pub comm: String,
    /// Its PID.
    pub pid: i32,
    /// Its kernel priority, when its switch-in is in the trace.
    pub prio: Option<i32>,
    /// How long it had run (ns), when its switch-in is in the trace.
    pub running_for_ns: Option<u64>,
}

/// Most stacks kept in an explanation.
pub const MAX_STACKS: usize = 4;
/// Most frames kept of a stack.
pub const MAX_STACK_FRAMES: usize = 32;

/// A task's kernel stack at a moment of a late wake-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelStack {
    /// The task whose stack it is (the one running then).
    pub comm: String,
    /// Its PID.
    pub pid: i32,
    /// The moment: `switch` (it let the CPU go to the timer thread) or
    /// `wake` (the timer thread's wake-up: the waker, or what its
    /// interrupt interrupted).
    pub at: String,
    /// When, after the deadline (ns; 0 if before it).
    pub after_deadline_ns: u64,
    /// The frames, innermost first (`?` where `/proc/kallsyms` hides the
    /// names).
    pub frames: Vec<String>,
}

/// Most slices kept in an explanation's timeline.
pub const MAX_SLICES: usize = 64;

/// A stretch of a wake-up's latency and who owned the CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slice {
    /// Its start, after the deadline (ns).
    pub after_deadline_ns: u64,
    /// Its length (ns).
    pub ns: u64,
    /// What kind of owner.
    pub kind: PartKind,
    /// Who.
    pub what: String,
    /// Its owner is inferred (a switch the kernel did not log).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inferred: bool,
}

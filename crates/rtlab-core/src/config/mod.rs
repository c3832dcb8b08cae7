//! The experiment file (systress.conf format): text in, a typed
//! [`Experiment`] out, or every problem found as a [`Diagnostic`].
//!
//! Pure: no file, clock or machine fact is consulted here. Checks that need
//! the machine (online CPUs, commands on PATH, privileges) belong to
//! [`crate::plan`], which keeps the positions recorded here for its messages.

mod apply;
pub use apply::MAX_KEPT_SAMPLES;
pub mod keys;
pub mod options;
mod parse;
pub mod values;

use crate::sched::Sched;
pub use parse::{parse, parse_all};
pub use values::Action;

/// Largest experiment file read (a real one is a few kB): bigger files are
/// refused before they are parsed.
pub const MAX_FILE_BYTES: usize = 1 << 20;
/// Most `timer_thread[N]` stanzas (one per CPU of the largest machine the
/// kernel's `cpu_set_t` describes).
pub const MAX_TIMERS: usize = 1024;
/// Most `program[N]` stanzas.
pub const MAX_PROGRAMS: usize = 256;
/// Most `irq_task[N]` stanzas.
pub const MAX_IRQ_TASKS: usize = 64;
/// Most `noise_thread[N]` stanzas.
pub const MAX_NOISE: usize = 1024;
/// Most `task_latency[N]` stanzas.
pub const MAX_TASK_LATENCY: usize = 64;
/// Most properties in one stanza (repeatable keys included).
pub const MAX_PROPERTIES: usize = 512;
/// Longest thread-name pattern (`threads.sched`, `threads.affinity`):
/// thread names have at most 15 characters.
pub const MAX_PATTERN: usize = 256;

/// `spikes.worst` when not given.
pub const DEFAULT_SPIKES_WORST: usize = 20;
/// `spikes.max` when not given.
pub const DEFAULT_SPIKES_MAX: usize = 1000;
/// `trace.max_spikes` when not given.
pub const DEFAULT_TRACE_MAX_SPIKES: usize = 100;
/// Largest `spikes.worst` and `spikes.max`.
pub const MAX_SPIKES: usize = 100_000;

/// The refusal of a file larger than [`MAX_FILE_BYTES`].
pub fn too_big() -> Diagnostic {
    Diagnostic::new(
        Pos { line: 1, col: 1 },
        format!(
            "the file has more than {MAX_FILE_BYTES} bytes; an experiment file has a few thousand"
        ),
    )
    .with_hint(Some(
        "is this the experiment file? result files go to `plot`, `compare` and `report`".into(),
    ))
}

/// The text of an experiment file's bytes, or a diagnostic: too big, not
/// UTF-8, or holding a NUL byte (which no path, name or argument can
/// hold), at the line and column of the first bad byte.
pub fn decode(bytes: &[u8]) -> Result<&str, Diagnostic> {
    if bytes.len() > MAX_FILE_BYTES {
        return Err(too_big());
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        Diagnostic::new(
            pos_of_byte(bytes, e.valid_up_to()),
            format!(
                "invalid UTF-8 (byte 0x{:02x})",
                bytes.get(e.valid_up_to()).copied().unwrap_or(0)
            ),
        )
        .with_hint(Some("save the file as UTF-8 (plain ASCII is UTF-8)".into()))
    })?;
    match bytes.iter().position(|&b| b == 0) {
        Some(at) => Err(
            Diagnostic::new(pos_of_byte(bytes, at), "a NUL byte (0x00)").with_hint(Some(
                "an experiment file is text: remove the NUL (is this the experiment file?)".into(),
            )),
        ),
        None => Ok(text),
    }
}

/// The line and column of byte `at`, whose prefix is valid UTF-8.
fn pos_of_byte(bytes: &[u8], at: usize) -> Pos {
    let good = &bytes[..at.min(bytes.len())];
    let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
    let start = good.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    // The valid prefix decodes; its characters count the column.
    let col = std::str::from_utf8(&good[start..]).map_or(1, |s| s.chars().count() + 1);
    Pos { line, col }
}

/// A position in the file, 1-based (columns count characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, PartialOrd, Ord)]
pub struct Pos {
    /// Line number.
    pub line: usize,
    /// Column number.
    pub col: usize,
}

/// A value with the position it was read at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spanned<T> {
    /// The value.
    pub value: T,
    /// Where it was read.
    pub pos: Pos,
}

/// A problem in the file, printed as `FILE:LINE:COL: message` and a hint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Where.
    pub pos: Pos,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
}

impl Diagnostic {
    /// A diagnostic at `pos`.
    pub fn new(pos: Pos, message: impl Into<String>) -> Self {
        Diagnostic {
            pos,
            message: message.into(),
            hint: None,
        }
    }

    /// Adds a hint.
    pub fn with_hint(mut self, hint: Option<String>) -> Self {
        self.hint = hint;
        self
    }

    /// Renders it for `file` (`FILE:LINE:COL: error: message` + hint line).
    /// A message or hint quoting a huge part of the file is cut short.
    pub fn render(&self, file: &str) -> String {
        self.render_at(&format!("{file}:{}:{}", self.pos.line, self.pos.col))
    }

    /// The diagnostic at `place` (a command-line option that wrote the
    /// line, for experiments generated from one).
    pub fn render_at(&self, place: &str) -> String {
        let mut out = format!("{place}: error: {}", shortened(&self.message));
        if let Some(hint) = &self.hint {
            out.push_str(&format!("\n  hint: {}", shortened(hint)));
        }
        out
    }
}

/// `text` cut to its first 400 characters, saying how many were left out.
fn shortened(text: &str) -> std::borrow::Cow<'_, str> {
    const MAX: usize = 400;
    match text.char_indices().nth(MAX) {
        None => text.into(),
        Some((cut, _)) => format!(
            "{}… ({} more characters)",
            &text[..cut],
            text[cut..].chars().count()
        )
        .into(),
    }
}

/// Format of a timer thread's result file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StatsFormat {
    /// Text, gnuplot-ready.
    Txt,
    /// CSV.
    Csv,
}

/// Which CPU load to show in the live table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuLoadDisplay {
    /// Per CPU and global.
    All,
    /// Global only.
    Global,
    /// Nothing.
    None,
}

/// The `main` stanza.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MainConfig {
    /// Where the stanza starts (default position when absent).
    pub pos: Pos,
    /// Diagnostics verbosity.
    pub dbg_level: u8,
    /// CPUs of the main thread.
    pub cpu_affinity: Option<Spanned<Vec<usize>>>,
    /// Main-thread scheduling.
    pub sched: Spanned<Sched>,
    /// Refresh period of the live table (ns).
    pub stats_period_ns: u64,
    /// Result-file format.
    pub stats_format: StatsFormat,
    /// CPU load display.
    pub cpu_load: CpuLoadDisplay,
    /// mlockall before measuring.
    pub memlock: bool,
    /// PM QoS request held on /dev/cpu_dma_latency (µs); None = leave alone.
    pub dma_latency_us: Option<u32>,
    /// Cpuset to put the main thread in.
    pub cpuset: Option<Spanned<String>>,
    /// System settings held for the duration of the run.
    pub tuning: TuningConfig,
    /// `spikes.worst`: how many of each thread's worst samples to keep.
    pub spikes_worst: usize,
    /// `spikes.threshold` (ns): keep every sample at or above it.
    pub spikes_threshold_ns: Option<u64>,
    /// `spikes.max`: at most this many samples above the threshold.
    pub spikes_max: usize,
    /// `trace.threshold` (ns): the flight recorder explains wake-ups at
    /// least this late.
    pub trace_threshold_ns: Option<u64>,
    /// `trace.max_spikes`: most wake-ups it explains in a run.
    pub trace_max_spikes: usize,
    /// `lifetime.duration` (ns): the run ends after this long.
    pub lifetime_ns: Option<u64>,
    /// `audit.cpus`: the CPUs the isolation audit watches.
    pub audit_cpus: Option<Spanned<Vec<usize>>>,
    /// `trace.stacks`: which kernel stacks the flight recorder keeps.
    pub trace_stacks: TraceStacks,
    /// `trace.buffer_kb`: the flight recorder's buffer per CPU (KiB), and
    /// where it was given (the stanza's start when it was not).
    pub trace_buffer_kb: Spanned<u64>,
    /// `trace.event`: tracepoints the user adds (`SYSTEM/EVENT`).
    pub trace_events: Vec<Spanned<String>>,
    /// `warmup` (ns): samples of the timer threads' first moments are not
    /// counted.
    pub warmup_ns: u64,
    /// `on_spike`: what to do at each late wake-up.
    pub on_spike: Vec<Spanned<SpikeAction>>,
    /// `on_spike.every` (ns): at most one round of actions this often.
    pub on_spike_every_ns: u64,
    /// `irq_latency`: each timer thread's interrupt latency too.
    pub irq_latency: bool,
    /// `trace.dump_tasks`: what every traced CPU ran at each deadline.
    pub trace_dump_tasks: bool,
}

/// Which kernel stacks the flight recorder records (`trace.stacks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceStacks {
    /// None.
    #[default]
    Off,
    /// A task's, as it lets the CPU go to a timer thread (not idle's).
    Switch,
    /// Those, and the waker's at each timer thread's wake-up.
    All,
}

/// An action at a late wake-up (`on_spike`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpikeAction {
    /// Keep the trace window (the flight recorder does it).
    Save,
    /// End the run (cyclictest `-b`).
    Stop,
    /// Send `signal` to process `pid`.
    Signal {
        /// The process.
        pid: i32,
        /// The signal's number.
        signal: i32,
    },
    /// Run a program (no shell), the spike's figures in its environment.
    Run {
        /// The program and its arguments.
        argv: Vec<String>,
    },
}

/// `on_spike.every` when not given.
pub const DEFAULT_ON_SPIKE_EVERY_NS: u64 = 1_000_000_000;
/// `trace.buffer_kb` when not given.
pub const DEFAULT_TRACE_BUFFER_KB: u64 = 512;
/// Most `trace.event` keys.
pub const MAX_TRACE_EVENTS: usize = 32;

/// The `main` keys that change the system for the duration of a run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TuningConfig {
    /// `cpufreq.governor`.
    pub governor: Option<Spanned<String>>,
    /// `cpufreq.cpus`.
    pub governor_cpus: Option<Spanned<Vec<usize>>>,
    /// `cstates.max_latency` (µs).
    pub cstate_max_latency_us: Option<Spanned<u64>>,
    /// `cstates.cpus`.
    pub cstate_cpus: Option<Spanned<Vec<usize>>>,
    /// Each `irq.affinity CPUS [IRQ...]` (no IRQ = all).
    pub irq_affinity: Vec<Spanned<(Vec<usize>, Vec<u32>)>>,
    /// Each `threads.sched PATTERN POLICY PRIORITY`.
    pub thread_sched: Vec<Spanned<(String, Sched)>>,
    /// Each `threads.affinity PATTERN|TID CPULIST`: the pattern or TID
    /// where the value starts, the CPUs where they stand.
    pub thread_affinity: Vec<Spanned<(String, Spanned<Vec<usize>>)>>,
    /// Each `net.steering DEV CPULIST`: the interface where the value
    /// starts, the CPUs where they stand.
    pub net_steering: Vec<Spanned<(String, Spanned<Vec<usize>>)>>,
}

/// A program's CPU bandwidth keys.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BandwidthConfig {
    /// `cpu.quota` (µs per period).
    pub quota_us: Option<Spanned<u64>>,
    /// `cpu.period` (µs).
    pub period_us: Option<Spanned<u64>>,
    /// `cpu.group`.
    pub group: Option<Spanned<String>>,
}

impl Default for MainConfig {
    fn default() -> Self {
        MainConfig {
            pos: Pos::default(),
            dbg_level: 0,
            cpu_affinity: None,
            sched: Spanned {
                value: Sched::default(),
                pos: Pos::default(),
            },
            stats_period_ns: 1_000_000_000,
            stats_format: StatsFormat::Txt,
            cpu_load: CpuLoadDisplay::None,
            memlock: false,
            dma_latency_us: Some(0),
            cpuset: None,
            tuning: TuningConfig::default(),
            spikes_worst: DEFAULT_SPIKES_WORST,
            spikes_threshold_ns: None,
            spikes_max: DEFAULT_SPIKES_MAX,
            trace_threshold_ns: None,
            trace_max_spikes: DEFAULT_TRACE_MAX_SPIKES,
            lifetime_ns: None,
            audit_cpus: None,
            trace_stacks: TraceStacks::Off,
            trace_buffer_kb: Spanned {
                value: DEFAULT_TRACE_BUFFER_KB,
                pos: Pos::default(),
            },
            trace_events: Vec::new(),
            warmup_ns: 0,
            on_spike: Vec::new(),
            on_spike_every_ns: DEFAULT_ON_SPIKE_EVERY_NS,
            irq_latency: false,
            trace_dump_tasks: false,
        }
    }
}

/// A `timer_thread[N]` stanza.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerConfig {
    /// N.
    pub index: usize,
    /// Where the stanza starts.
    pub pos: Pos,
    /// CPUs of the thread.
    pub cpu_affinity: Option<Spanned<Vec<usize>>>,
    /// Scheduling.
    pub sched: Spanned<Sched>,
    /// Timer period (ns).
    pub period_ns: u64,
    /// `sched.deadline`: SCHED_DEADLINE instead of `sched.policy`.
    pub deadline: Option<Spanned<crate::sched::Deadline>>,
    /// Measure for this long (ns).
    pub duration_ns: Option<u64>,
    /// Or take this many samples.
    pub loops: Option<u64>,
    /// Largest latency kept in the 1-µs histogram (µs).
    pub histo_size_us: u64,
    /// Keep the first N samples' latencies (0: none).
    pub keep_samples: u64,
    /// Result file name.
    pub filename: Option<Spanned<String>>,
    /// Cpuset to put the thread in.
    pub cpuset: Option<Spanned<String>>,
}

/// A `program[N]` stanza.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramConfig {
    /// N.
    pub index: usize,
    /// Where the stanza starts.
    pub pos: Pos,
    /// argv (never run through a shell).
    pub argv: Spanned<Vec<String>>,
    /// CPUs (inherited by its children).
    pub cpu_affinity: Option<Spanned<Vec<usize>>>,
    /// Scheduling.
    pub sched: Spanned<Sched>,
    /// stdout target.
    pub out: Option<Spanned<String>>,
    /// stderr target.
    pub err: Option<Spanned<String>>,
    /// On exit status 0.
    pub on_ok: Action,
    /// On non-zero exit or death by signal.
    pub on_ko: Action,
    /// Time between SIGTERM and SIGKILL at the end (ns).
    pub grace_ns: u64,
    /// Cpuset to put the process in.
    pub cpuset: Option<Spanned<String>>,
    /// CPU bandwidth.
    pub bandwidth: BandwidthConfig,
}

/// Which interrupt an `irq_task[N]` measures from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IrqSelector {
    /// By number.
    Number(u32),
    /// By the name its handler registered (`/proc/interrupts`' last column).
    Name(String),
}

impl std::fmt::Display for IrqSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IrqSelector::Number(n) => write!(f, "IRQ {n}"),
            IrqSelector::Name(n) => write!(f, "IRQ {n}"),
        }
    }
}

/// Which task an `irq_task[N]` waits for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskSelector {
    /// Every thread of this name (`comm`).
    Name(String),
    /// Every thread of this process.
    Pid(i32),
    /// Every thread of `program[N]`.
    Program(usize),
}

impl std::fmt::Display for TaskSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskSelector::Name(n) => write!(f, "{n}"),
            TaskSelector::Pid(p) => write!(f, "PID {p}"),
            TaskSelector::Program(i) => write!(f, "program[{i}]"),
        }
    }
}

/// An `irq_task[N]` stanza.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrqTaskConfig {
    /// N.
    pub index: usize,
    /// Where the stanza starts.
    pub pos: Pos,
    /// The interrupt.
    pub irq: Spanned<IrqSelector>,
    /// The task.
    pub task: Spanned<TaskSelector>,
}

/// A `task_latency[N]` stanza.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskLatencyConfig {
    /// N.
    pub index: usize,
    /// Where the stanza starts.
    pub pos: Pos,
    /// The task.
    pub task: Spanned<TaskSelector>,
    /// Its stated period (ns).
    pub period_ns: Option<u64>,
    /// Its deadline from each release (ns).
    pub deadline_ns: Option<u64>,
    /// Wake-ups kept one by one, per thread.
    pub samples: usize,
    /// `thread`: the thread (comm, or TID when all digits) the period and
    /// deadline apply to; None: the threads that cycle near the period.
    pub thread: Option<String>,
}

/// A `noise_thread[N]` stanza.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoiseConfig {
    /// N.
    pub index: usize,
    /// Where the stanza starts.
    pub pos: Pos,
    /// Its one CPU.
    pub cpu: Spanned<usize>,
    /// Scheduling.
    pub sched: Spanned<Sched>,
    /// Cpuset to put the thread in.
    pub cpuset: Option<Spanned<String>>,
    /// A gap at least this long is noise (ns).
    pub threshold_ns: u64,
    /// Figures per period (ns).
    pub period_ns: u64,
    /// Polled in each period (ns; None: the policy's default).
    pub runtime_ns: Option<Spanned<u64>>,
    /// Poll for this long (ns).
    pub duration_ns: Option<u64>,
    /// Attribute gaps from the trace.
    pub attribute: bool,
    /// Gaps below this are counted exact to the ns.
    pub exact_below_ns: u64,
    /// Sleep after the release (ns).
    pub offset_ns: u64,
    /// Poll first without counting (ns).
    pub warmup_ns: u64,
    /// A gap this long ends the run (ns).
    pub stop_above_ns: Option<u64>,
    /// Bytes copied between two reads.
    pub memmove_bytes: u64,
}

/// A whole experiment, as written in the file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Experiment {
    /// The conductor.
    pub main: MainConfig,
    /// Timer threads, ordered by index.
    pub timers: Vec<TimerConfig>,
    /// Programs, ordered by index.
    pub programs: Vec<ProgramConfig>,
    /// IRQ-to-task measurements, ordered by index.
    pub irq_tasks: Vec<IrqTaskConfig>,
    /// Task-latency measurements, ordered by index.
    pub task_latency: Vec<TaskLatencyConfig>,
    /// Noise threads, ordered by index.
    pub noise: Vec<NoiseConfig>,
}

//! How each key's value lands in its stanza: one function per key, named
//! by the key's row in [`super::keys::KEYS`]. The parser looks a key up in
//! the rows and calls its function on the stanza's [`Draft`]; there is no
//! other list of keys.

use super::parse::{Builder, Prop, SchedKeys};
use super::values::{self, ValueError};
use super::{
    Action, BandwidthConfig, CpuLoadDisplay, IrqSelector, MainConfig, Pos, Spanned, StatsFormat,
    TaskSelector, TimerConfig,
};

/// How a key is applied: checks the value (diagnostics go to the builder)
/// and sets the draft's field.
pub(super) type Apply = fn(&mut Builder<'_>, &Prop, &mut Draft);

/// What the keys of one stanza set, before the stanza is assembled. Every
/// field starts at its key's documented default.
pub(super) struct Draft {
    /// `cpu_affinity` (every stanza).
    pub affinity: Option<Spanned<Vec<usize>>>,
    /// `sched.policy`, `sched.priority` (every stanza), checked together.
    pub sched: SchedKeys,
    /// `cpuset` (every stanza).
    pub cpuset: Option<Spanned<String>>,
    /// The keys of `main` alone.
    pub main: MainConfig,
    /// The keys of `timer_thread[N]` alone.
    pub timer: TimerConfig,
    /// The keys of `program[N]` alone.
    pub program: ProgramDraft,
    /// The keys of `irq_task[N]` alone.
    pub irq_task: IrqTaskDraft,
    /// The keys of `task_latency[N]` alone.
    pub task_latency: TaskLatencyDraft,
    /// The keys of `noise_thread[N]` alone.
    pub noise: NoiseDraft,
}

/// The keys of `noise_thread[N]` alone.
pub(super) struct NoiseDraft {
    pub threshold_ns: u64,
    pub period_ns: u64,
    pub runtime_ns: Option<Spanned<u64>>,
    pub duration_ns: Option<u64>,
    pub attribute: bool,
    pub exact_below_ns: u64,
    pub offset_ns: u64,
    pub warmup_ns: u64,
    pub stop_above_ns: Option<u64>,
    pub memmove_bytes: u64,
}

/// `noise.threshold` when not given: 5 µs (rtla osnoise's).
pub const DEFAULT_NOISE_THRESHOLD_NS: u64 = 5_000;
/// `noise.period` when not given: 1 s.
pub const DEFAULT_NOISE_PERIOD_NS: u64 = 1_000_000_000;

/// The keys of `task_latency[N]` alone.
#[derive(Default)]
pub(super) struct TaskLatencyDraft {
    /// Each `task.*` key given (exactly one is valid).
    pub task: Vec<Spanned<TaskSelector>>,
    pub period_ns: Option<u64>,
    pub deadline_ns: Option<u64>,
    pub samples: usize,
    pub thread: Option<String>,
}

/// The keys of `irq_task[N]` alone.
#[derive(Default)]
pub(super) struct IrqTaskDraft {
    pub irq: Option<Spanned<IrqSelector>>,
    /// Each `task.*` key given (exactly one is valid).
    pub task: Vec<Spanned<TaskSelector>>,
}

/// The keys of `program[N]` alone.
pub(super) struct ProgramDraft {
    pub argv: Option<Spanned<Vec<String>>>,
    pub out: Option<Spanned<String>>,
    pub err: Option<Spanned<String>>,
    pub on_ok: Action,
    pub on_ko: Action,
    pub grace_ns: u64,
    pub bandwidth: BandwidthConfig,
}

/// `timer.period` when not given: 1 ms.
pub const DEFAULT_PERIOD_NS: u64 = 1_000_000;
/// `stats.histo_size` when not given: 100 µs.
pub const DEFAULT_HISTO_SIZE_US: u64 = 100;
/// `termination.grace` when not given: 2 s.
pub const DEFAULT_GRACE_NS: u64 = 2_000_000_000;

impl Draft {
    /// The defaults of every key, for the stanza `index` at `pos`.
    pub fn new(index: usize, pos: Pos) -> Self {
        Draft {
            affinity: None,
            sched: SchedKeys::default(),
            cpuset: None,
            main: MainConfig {
                pos,
                ..MainConfig::default()
            },
            timer: TimerConfig {
                index,
                pos,
                cpu_affinity: None,
                sched: Spanned {
                    value: Default::default(),
                    pos,
                },
                period_ns: DEFAULT_PERIOD_NS,
                deadline: None,
                duration_ns: None,
                loops: None,
                histo_size_us: DEFAULT_HISTO_SIZE_US,
                keep_samples: 0,
                filename: None,
                cpuset: None,
            },
            program: ProgramDraft {
                argv: None,
                out: None,
                err: None,
                on_ok: Action::Ignore,
                on_ko: Action::Ignore,
                grace_ns: DEFAULT_GRACE_NS,
                bandwidth: BandwidthConfig::default(),
            },
            irq_task: IrqTaskDraft::default(),
            task_latency: TaskLatencyDraft::default(),
            noise: NoiseDraft {
                threshold_ns: DEFAULT_NOISE_THRESHOLD_NS,
                period_ns: DEFAULT_NOISE_PERIOD_NS,
                runtime_ns: None,
                duration_ns: None,
                attribute: true,
                exact_below_ns: 0,
                offset_ns: 0,
                warmup_ns: 0,
                stop_above_ns: None,
                memmove_bytes: 0,
            },
        }
    }
}

fn spanned<T>(prop: &Prop, value: T) -> Spanned<T> {
    Spanned {
        value,
        pos: prop.value_pos,
    }
}

// Keys of every stanza.

pub(super) fn cpu_affinity(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.affinity = b.cpu_list(prop);
}

pub(super) fn sched_policy(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.sched.policy = b
        .get(prop, values::policy(&prop.value))
        .map(|p| (p, prop.value_pos));
    d.sched.policy_refused = d.sched.policy.is_none();
}

pub(super) fn sched_priority(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    // The range depends on the policy (1..99 or a nice value): checked with
    // it once the stanza is read, naming the right one.
    d.sched.priority = b
        .get(prop, values::integer(&prop.value, -1_000_000, 1_000_000))
        .map(|p| (p, prop.value_pos));
}

pub(super) fn cpuset(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.cpuset = b.cpuset(prop);
}

// Keys of `main`.

pub(super) fn dbg_level(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(n) = b.get(prop, values::integer(&prop.value, 0, 9)) {
        d.main.dbg_level = n as u8;
    }
}

pub(super) fn stats_period(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(ns) = b.duration(prop, 1_000_000) {
        d.main.stats_period_ns = ns;
    }
}

pub(super) fn stats_format(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    match prop.value.to_ascii_lowercase().as_str() {
        "txt" => d.main.stats_format = StatsFormat::Txt,
        "csv" => d.main.stats_format = StatsFormat::Csv,
        _ => b.value_error(
            prop,
            ValueError::new(format!("unknown format `{}`", prop.value)).hint("use `txt` or `csv`"),
        ),
    }
}

pub(super) fn stats_cpu_load(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    match prop.value.to_ascii_lowercase().as_str() {
        "all" => d.main.cpu_load = CpuLoadDisplay::All,
        "global" => d.main.cpu_load = CpuLoadDisplay::Global,
        "none" => d.main.cpu_load = CpuLoadDisplay::None,
        _ => b.value_error(
            prop,
            ValueError::new(format!("unknown CPU load display `{}`", prop.value))
                .hint("use `all`, `global` or `none`"),
        ),
    }
}

pub(super) fn memlock(_: &mut Builder<'_>, _: &Prop, d: &mut Draft) {
    d.main.memlock = true;
}

pub(super) fn dma_latency(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if prop.value.eq_ignore_ascii_case("off") {
        d.main.dma_latency_us = None;
    } else if let Some(ns) = b.duration(prop, 0) {
        if ns % 1000 != 0 || ns / 1000 > i32::MAX as u64 {
            b.value_error(
                prop,
                ValueError::new("must be a whole number of microseconds")
                    .hint("e.g. `0 us`, `10 us`, or `off`"),
            );
        } else {
            d.main.dma_latency_us = Some((ns / 1000) as u32);
        }
    }
}

pub(super) fn governor(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.main.tuning.governor = Some(b.path(prop));
}

pub(super) fn governor_cpus(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.main.tuning.governor_cpus = b.cpu_list(prop);
}

pub(super) fn cstate_max_latency(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.main.tuning.cstate_max_latency_us = b.whole_us(prop).map(|us| spanned(prop, us));
}

pub(super) fn cstate_cpus(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.main.tuning.cstate_cpus = b.cpu_list(prop);
}

pub(super) fn irq_affinity(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(v) = b.irq_affinity(prop) {
        d.main.tuning.irq_affinity.push(v);
    }
}

pub(super) fn thread_sched(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(v) = b.thread_sched(prop) {
        d.main.tuning.thread_sched.push(v);
    }
}

pub(super) fn thread_affinity(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(v) = b.thread_affinity(prop) {
        d.main.tuning.thread_affinity.push(v);
    }
}

pub(super) fn net_steering(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(v) = b.net_steering(prop) {
        d.main.tuning.net_steering.push(v);
    }
}

/// A count key's value in `min..=max`, if valid.
fn count(b: &mut Builder<'_>, prop: &Prop, min: usize, max: usize) -> Option<usize> {
    b.get(prop, values::integer(&prop.value, min as i64, max as i64))
        .map(|n| n as usize)
}

/// A threshold key: `off` (None) or a duration of at least 1 µs; None
/// when the value is invalid (and said so).
fn threshold(b: &mut Builder<'_>, prop: &Prop) -> Option<Option<u64>> {
    if prop.value.eq_ignore_ascii_case("off") {
        Some(None)
    } else {
        b.duration(prop, 1_000).map(Some)
    }
}

pub(super) fn spikes_worst(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(n) = count(b, prop, 0, super::MAX_SPIKES) {
        d.main.spikes_worst = n;
    }
}

pub(super) fn spikes_threshold(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(t) = threshold(b, prop) {
        d.main.spikes_threshold_ns = t;
    }
}

pub(super) fn spikes_max(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(n) = count(b, prop, 1, super::MAX_SPIKES) {
        d.main.spikes_max = n;
    }
}

pub(super) fn trace_threshold(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(t) = threshold(b, prop) {
        d.main.trace_threshold_ns = t;
    }
}

pub(super) fn trace_max_spikes(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(n) = count(b, prop, 1, 10_000) {
        d.main.trace_max_spikes = n;
    }
}

pub(super) fn trace_stacks(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.main.trace_stacks = match prop.value.to_ascii_lowercase().as_str() {
        "off" => super::TraceStacks::Off,
        "switch" => super::TraceStacks::Switch,
        "all" => super::TraceStacks::All,
        _ => {
            return b.value_error(
                prop,
                ValueError::new(format!("unknown stack choice `{}`", prop.value))
                    .hint("use `off`, `switch` or `all`"),
            );
        }
    };
}

pub(super) fn trace_buffer_kb(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(n) = b.get(prop, values::integer(&prop.value, 64, 1 << 20)) {
        d.main.trace_buffer_kb = spanned(prop, n as u64);
    }
}

pub(super) fn trace_event(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    let v = prop.value.trim().replacen(':', "/", 1);
    let word = |w: &str| {
        !w.is_empty() && w.len() <= 64 && w.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
    };
    match v.split_once('/') {
        Some((system, event)) if word(system) && word(event) => {
            if d.main.trace_events.len() >= super::MAX_TRACE_EVENTS {
                return b.value_error(
                    prop,
                    ValueError::new(format!(
                        "more than {} extra tracepoints",
                        super::MAX_TRACE_EVENTS
                    ))
                    .hint(format!(
                        "keep the {} that matter most",
                        super::MAX_TRACE_EVENTS
                    )),
                );
            }
            d.main.trace_events.push(Spanned {
                value: v,
                pos: prop.value_pos,
            });
        }
        _ => b.value_error(
            prop,
            ValueError::new(format!("`{}` is not a tracepoint name", prop.value)).hint(
                "write SYSTEM/EVENT as under tracefs `events/`, e.g. `sched/sched_migrate_task`",
            ),
        ),
    }
}

pub(super) fn warmup(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(ns) = b.duration(prop, 0) {
        d.main.warmup_ns = ns;
    }
}

pub(super) fn on_spike(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(action) = b.get(prop, values::spike_action(&prop.value)) {
        d.main.on_spike.push(Spanned {
            value: action,
            pos: prop.value_pos,
        });
    }
}

pub(super) fn on_spike_every(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(ns) = b.duration(prop, 1_000_000) {
        d.main.on_spike_every_ns = ns;
    }
}

pub(super) fn trace_dump_tasks(_: &mut Builder<'_>, _: &Prop, d: &mut Draft) {
    d.main.trace_dump_tasks = true;
}

pub(super) fn irq_latency(_: &mut Builder<'_>, _: &Prop, d: &mut Draft) {
    d.main.irq_latency = true;
}

pub(super) fn main_lifetime(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(ns) = b.duration(prop, 1_000_000) {
        d.main.lifetime_ns = Some(ns);
    }
}

pub(super) fn audit_cpus(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.main.audit_cpus = b.cpu_list(prop);
}

// Keys of `irq_task[N]`.

pub(super) fn irq_task_irq(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    let v = prop.value.trim();
    let irq = if v.bytes().all(|c| c.is_ascii_digit()) {
        match b.get(prop, values::integer(v, 0, i64::from(u32::MAX))) {
            Some(n) => IrqSelector::Number(n as u32),
            None => return,
        }
    } else if v.len() > 64 || v.chars().any(|c| c.is_whitespace() || c.is_control()) {
        b.value_error(
            prop,
            ValueError::new("not an IRQ number or name").hint(
                "an IRQ is a number or the name `/proc/interrupts` ends its line with (`rtlab irq` lists them)",
            ),
        );
        return;
    } else {
        IrqSelector::Name(v.to_string())
    };
    d.irq_task.irq = Some(spanned(prop, irq));
}

/// A `task.name` value: a task name the kernel could have.
fn task_name(b: &mut Builder<'_>, prop: &Prop) -> Option<Spanned<TaskSelector>> {
    let v = prop.value.trim();
    if v.len() > 15 || v.chars().any(|c| c.is_control() || c == '"' || c == '\\') {
        b.value_error(
            prop,
            ValueError::new("a task name (comm) has at most 15 characters, no quote or backslash")
                .hint("the kernel cuts a task's name to 15 bytes: write those (`ps -o comm`)"),
        );
        return None;
    }
    Some(spanned(prop, TaskSelector::Name(v.to_string())))
}

fn task_pid(b: &mut Builder<'_>, prop: &Prop) -> Option<Spanned<TaskSelector>> {
    let pid = b.get(
        prop,
        values::integer(&prop.value, 1, i64::from(i32::MAX)).map_err(|e| {
            e.hint("a process ID: a whole number from 1 (`pidof NAME` gives a program's)")
        }),
    )?;
    Some(spanned(prop, TaskSelector::Pid(pid as i32)))
}

fn task_program(b: &mut Builder<'_>, prop: &Prop) -> Option<Spanned<TaskSelector>> {
    let n = count(b, prop, 0, super::MAX_PROGRAMS - 1)?;
    Some(spanned(prop, TaskSelector::Program(n)))
}

pub(super) fn irq_task_name(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.irq_task.task.extend(task_name(b, prop));
}

pub(super) fn irq_task_pid(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.irq_task.task.extend(task_pid(b, prop));
}

pub(super) fn irq_task_program(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.irq_task.task.extend(task_program(b, prop));
}

// Keys of `task_latency[N]`.

pub(super) fn task_latency_name(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.task_latency.task.extend(task_name(b, prop));
}

pub(super) fn task_latency_pid(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.task_latency.task.extend(task_pid(b, prop));
}

pub(super) fn task_latency_program(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.task_latency.task.extend(task_program(b, prop));
}

pub(super) fn task_latency_period(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.task_latency.period_ns = task_duration(b, prop);
}

pub(super) fn task_latency_deadline(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.task_latency.deadline_ns = task_duration(b, prop);
}

/// A task's period or deadline: from 1 µs to 1 h.
fn task_duration(b: &mut Builder<'_>, prop: &Prop) -> Option<u64> {
    let ns = b.duration(prop, 1_000)?;
    if ns == 0 || ns > 3_600_000_000_000 {
        b.value_error(
            prop,
            ValueError::new("must be from 1 us to 1 h").hint("e.g. `1 ms`, `200 us` or `1 s`"),
        );
        return None;
    }
    Some(ns)
}

/// `thread NAME|TID`: the thread the period and deadline apply to.
pub(super) fn task_latency_thread(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(Spanned {
        value: TaskSelector::Name(v),
        ..
    }) = task_name(b, prop)
    {
        if v.is_empty() {
            b.value_error(
                prop,
                ValueError::new("name a thread (its comm) or give its TID")
                    .hint("`thread NAME` or `thread TID` (`ps -L -o tid,comm -p PID` lists them)"),
            );
            return;
        }
        d.task_latency.thread = Some(v);
    }
}

pub(super) fn task_latency_samples(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(n) = count(b, prop, 0, 1_000_000) {
        d.task_latency.samples = n;
    }
}

// Keys of `timer_thread[N]`.

pub(super) fn timer_period(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(ns) = b.duration(prop, 1_000) {
        if ns > 3_600_000_000_000 {
            b.value_error(
                prop,
                ValueError::new("must be at most 1 h")
                    .hint("a period from 1 us to 1 h, e.g. `1 ms`"),
            );
        } else {
            d.timer.period_ns = ns;
        }
    }
}

pub(super) fn sched_deadline(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(value) = b.get(prop, values::deadline(&prop.value)) {
        d.timer.deadline = Some(Spanned {
            value,
            pos: prop.value_pos,
        });
    }
}

pub(super) fn lifetime_duration(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.timer.duration_ns = b.duration(prop, 1);
}

pub(super) fn lifetime_loops(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.timer.loops = b
        .get(prop, values::integer(&prop.value, 1, i64::MAX))
        .map(|n| n as u64);
}

pub(super) fn histo_size(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(ns) = b.duration(prop, 1_000) {
        if ns % 1_000 != 0 || ns > 1_000_000_000 {
            b.value_error(
                prop,
                ValueError::new("must be a whole number of microseconds, at most 1 s")
                    .hint("the histogram has one bucket per µs, e.g. `20 us`, `1 ms`"),
            );
        } else {
            d.timer.histo_size_us = ns / 1_000;
        }
    }
}

/// Most samples a thread keeps one by one (4 MB of them).
pub const MAX_KEPT_SAMPLES: i64 = 1_000_000;

pub(super) fn stats_samples(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(n) = b.get(prop, values::integer(&prop.value, 1, MAX_KEPT_SAMPLES)) {
        d.timer.keep_samples = n as u64;
    }
}

pub(super) fn stats_filename(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.timer.filename = Some(b.path(prop));
}

// Keys of `program[N]`.

pub(super) fn cmdline(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.program.argv = b
        .get(prop, values::cmdline(&prop.value))
        .map(|v| spanned(prop, v));
}

pub(super) fn output_out(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.program.out = Some(b.path(prop));
}

pub(super) fn output_err(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.program.err = Some(b.path(prop));
}

pub(super) fn on_ok(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(a) = b.get(prop, values::action(&prop.value)) {
        d.program.on_ok = a;
    }
}

pub(super) fn on_ko(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(a) = b.get(prop, values::action(&prop.value)) {
        d.program.on_ko = a;
    }
}

pub(super) fn grace(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(ns) = b.duration(prop, 0) {
        d.program.grace_ns = ns;
    }
}

pub(super) fn cpu_quota(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.program.bandwidth.quota_us = b.bandwidth_us(prop, false);
}

pub(super) fn cpu_period(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.program.bandwidth.period_us = b.bandwidth_us(prop, true);
}

pub(super) fn cpu_group(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.program.bandwidth.group = b
        .get(prop, values::group_name(&prop.value))
        .map(|v| spanned(prop, v));
}

// Keys of `noise_thread[N]`.

/// A duration from `min_ns` to `max_ns`, or a diagnostic naming the range.
fn bounded_duration(
    b: &mut Builder<'_>,
    prop: &Prop,
    min_ns: u64,
    max_ns: u64,
    range: &str,
) -> Option<u64> {
    let ns = b.duration(prop, 1)?;
    if ns < min_ns || ns > max_ns {
        b.value_error(
            prop,
            ValueError::new(format!("must be from {range}")).hint("e.g. `5 us`, `1 ms` or `1 s`"),
        );
        return None;
    }
    Some(ns)
}

pub(super) fn noise_threshold(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(ns) = bounded_duration(b, prop, 1, 1_000_000_000, "1 ns to 1 s") {
        d.noise.threshold_ns = ns;
    }
}

pub(super) fn noise_period(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(ns) = bounded_duration(b, prop, 1_000_000, 3_600_000_000_000, "1 ms to 1 h") {
        d.noise.period_ns = ns;
    }
}

pub(super) fn noise_runtime(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(ns) = bounded_duration(b, prop, 1_000_000, 3_600_000_000_000, "1 ms to 1 h") {
        d.noise.runtime_ns = Some(spanned(prop, ns));
    }
}

pub(super) fn noise_duration(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.noise.duration_ns = b.duration(prop, 1);
}

pub(super) fn noise_attribute(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    match prop.value.to_ascii_lowercase().as_str() {
        "yes" | "on" => d.noise.attribute = true,
        "no" | "off" => d.noise.attribute = false,
        _ => b.value_error(
            prop,
            ValueError::new(format!("`{}` is not yes or no", prop.value))
                .hint("write `yes` or `no`"),
        ),
    }
}

pub(super) fn noise_exact_below(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(ns) = b.duration(prop, 0) {
        if ns > 1_000_000 {
            b.value_error(
                prop,
                ValueError::new("must be at most 1 ms")
                    .hint("the exact counts take 8 bytes per ns of range"),
            );
        } else {
            d.noise.exact_below_ns = ns;
        }
    }
}

pub(super) fn noise_offset(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(ns) = b.duration(prop, 0) {
        d.noise.offset_ns = ns;
    }
}

pub(super) fn noise_warmup(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    if let Some(ns) = b.duration(prop, 0) {
        if ns > 3_600_000_000_000 {
            b.value_error(
                prop,
                ValueError::new("must be at most 1 h").hint("e.g. `1 s`"),
            );
        } else {
            d.noise.warmup_ns = ns;
        }
    }
}

pub(super) fn noise_stop_above(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    d.noise.stop_above_ns = bounded_duration(b, prop, 1, 3_600_000_000_000, "1 ns to 1 h");
}

pub(super) fn noise_memmove(b: &mut Builder<'_>, prop: &Prop, d: &mut Draft) {
    match values::size_bytes(&prop.value) {
        Ok(n) if n <= 1 << 30 => d.noise.memmove_bytes = n,
        Ok(_) => b.value_error(
            prop,
            ValueError::new("must be at most 1 GiB").hint("e.g. `16K` (oslat's default) or `1M`"),
        ),
        Err(e) => b.value_error(prop, e),
    }
}

//! The event vocabulary every trace reader gives and every analysis reads:
//! one event ([`Event`]), its fields read by the kernel's print formats
//! ([`super::fields`]), and the task names the events themselves tell.

use super::fields;

/// One event of the buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The task that was running (`rtlab-timer0`, `<idle>`): shared, as
    /// the binary reader gives the same name to many events.
    pub comm: std::sync::Arc<str>,
    /// Its PID (0 for idle).
    pub pid: i32,
    /// The CPU.
    pub cpu: usize,
    /// When, on the trace clock (ns; the text gives µs).
    pub ts_ns: u64,
    /// The event's name (`sched_switch`): borrowed from the binary
    /// reader's formats, owned from the text.
    pub name: std::borrow::Cow<'static, str>,
    /// Its fields as written (`prev_comm=... ==> next_comm=...`).
    pub fields: String,
    /// Where each field lies in `fields`, as its reader found it (never
    /// by searching the text: see [`fields`]).
    pub spans: fields::Spans,
}

/// What a reader shows for a task whose name it does not know (the
/// kernel's text for a PID missing from its saved names; the binary
/// reader likewise).
pub const UNKNOWN_TASK: &str = "<...>";

/// Task names learned from the events' own fields (a switch's `prev_comm`
/// and `next_comm`, a wake-up's `comm`): they name a task whose events
/// the reader could only show as `<...>` (a process started after the
/// kernel last saved its names). At most [`Names::MAX`] (then forgotten
/// and learned again).
#[derive(Debug, Default)]
pub struct Names(std::collections::HashMap<i32, std::sync::Arc<str>>);

impl Names {
    /// Most names kept.
    pub const MAX: usize = 1 << 16;

    /// Learns the names `e`'s fields give.
    pub fn learn(&mut self, e: &Event) {
        let pairs: [(&str, &str); 2] = match e.name.as_ref() {
            "sched_switch" => [("prev_pid", "prev_comm"), ("next_pid", "next_comm")],
            "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => [("pid", "comm"); 2],
            _ => return,
        };
        for (pid, comm) in pairs {
            if let (Some(pid), Some(comm)) = (e.num(pid), e.field(comm))
                && pid > 0
                && comm != UNKNOWN_TASK
                && self.0.get(&(pid as i32)).is_none_or(|c| &**c != comm)
            {
                if self.0.len() >= Self::MAX {
                    self.0.clear();
                }
                self.0.insert(pid as i32, comm.into());
            }
        }
    }

    /// The name learned for `pid`.
    pub fn get(&self, pid: i32) -> Option<&std::sync::Arc<str>> {
        self.0.get(&pid)
    }
}

/// Names the events of tasks shown as `<...>` from what the events' own
/// fields say of them (anywhere in `events`, before or after).
pub fn name_tasks(events: &mut [Event]) {
    if !events.iter().any(|e| &*e.comm == UNKNOWN_TASK) {
        return;
    }
    let mut names = Names::default();
    events.iter().for_each(|e| names.learn(e));
    for e in events.iter_mut().filter(|e| &*e.comm == UNKNOWN_TASK) {
        if let Some(name) = names.get(e.pid) {
            e.comm = name.clone();
        }
    }
}

impl Event {
    /// The value of field `key`, if the event has it.
    pub fn field(&self, key: &str) -> Option<&str> {
        self.spans.value(&self.fields, key)
    }

    /// The function of a `workqueue_execute_start`: its `function=` field
    /// (the binary reader's), or what follows `function ` in the kernel's
    /// text (`work struct 00000000deadbeef: function vmstat_update`).
    pub fn work_function(&self) -> Option<&str> {
        self.field("function").or_else(|| {
            let (_, f) = self.fields.split_once("function ")?;
            f.split_whitespace().next()
        })
    }

    /// Each `(key, value)` of the event, in order.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.spans.pairs(&self.fields)
    }

    /// An `irq_handler_entry`'s IRQ as the tables name it:
    /// `IRQ 36 virtio1-req.0`.
    pub fn irq_label(&self) -> String {
        let name = self.field("name").unwrap_or("");
        format!("IRQ {} {name}", self.field("irq").unwrap_or("?"))
            .trim_end()
            .to_string()
    }

    /// A numeric field.
    pub fn num(&self, key: &str) -> Option<i64> {
        self.field(key)?.parse().ok()
    }

    /// An `nmi_handler`'s handler and how long it ran (ns): the event is
    /// logged as the handler returns. The binary reader gives its fields
    /// (`handler=perf_event_nmi_handler delta_ns=4200 handled=1`); the
    /// kernel's text has none (`perf_event_nmi_handler() delta_ns: 4200
    /// handled: 1`). None for another event, or a negative or missing
    /// length.
    pub fn nmi_run(&self) -> Option<(&str, u64)> {
        if self.name != "nmi_handler" {
            return None;
        }
        let delta = self.num("delta_ns").or_else(|| {
            let after = self.fields.split_once("delta_ns: ")?.1;
            after.split(' ').next()?.parse().ok()
        })?;
        let handler = self
            .field("handler")
            .or_else(|| self.fields.split_once("()").map(|(h, _)| h))
            .unwrap_or("?");
        Some((handler, u64::try_from(delta).ok()?))
    }
}

/// A tracepoint a consumer reads, by `events/` directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tracepoint {
    /// Its names, the newest first: the first this kernel has is enabled
    /// (`sched/sched_waking`, else `sched/sched_wakeup` before Linux 4.3).
    pub names: &'static [&'static str],
    /// Without it the consumer's figures are wrong (the run says so when
    /// the kernel lacks it); the others add detail, or are another
    /// architecture's.
    pub required: bool,
    /// Enabled with a filter (`Consumer::filter`): the kernel keeps only
    /// the events of the tasks followed.
    pub filtered: bool,
}

impl Tracepoint {
    /// A tracepoint the consumer cannot do without.
    pub const fn required(names: &'static [&'static str]) -> Self {
        Tracepoint {
            names,
            required: true,
            filtered: false,
        }
    }

    /// A tracepoint that adds detail.
    pub const fn detail(names: &'static [&'static str]) -> Self {
        Tracepoint {
            names,
            required: false,
            filtered: false,
        }
    }

    /// A tracepoint enabled with the consumers' filter.
    pub const fn filtered(names: &'static [&'static str]) -> Self {
        Tracepoint {
            names,
            required: false,
            filtered: true,
        }
    }

    /// The name it is known by (its newest).
    pub fn name(&self) -> &'static str {
        self.names.first().copied().unwrap_or_default()
    }
}

/// Every way a CPU is interrupted or handed to another task, the
/// indispensable first: what the analyses that account for a CPU's time
/// (the isolation audit, IRQ-to-task, task latency) read. A thread's end
/// last: its number stops being the measured task's.
pub const CPU_EVENTS: &[Tracepoint] = &[
    Tracepoint::required(&["sched/sched_switch"]),
    // Linux 4.3 added sched_waking (at the wake-up's start); before it,
    // sched_wakeup is the first sign.
    Tracepoint::required(&["sched/sched_waking", "sched/sched_wakeup"]),
    Tracepoint::required(&["irq/irq_handler_entry"]),
    Tracepoint::required(&["irq/irq_handler_exit"]),
    Tracepoint::required(&["irq/softirq_entry"]),
    Tracepoint::required(&["irq/softirq_exit"]),
    Tracepoint::required(&["timer/hrtimer_expire_entry"]),
    Tracepoint::required(&["timer/hrtimer_expire_exit"]),
    // Linux 6.6 and later name the IPI's sender; before, ipi_raise (a
    // mask the analyses do not read) and nothing is said of the sender.
    Tracepoint::detail(&["ipi/ipi_send_cpu"]),
    Tracepoint::detail(&["ipi/ipi_send_cpumask"]),
    Tracepoint::detail(&["ipi/ipi_entry"]),
    Tracepoint::detail(&["ipi/ipi_exit"]),
    Tracepoint::detail(&["workqueue/workqueue_execute_start"]),
    Tracepoint::detail(&["workqueue/workqueue_execute_end"]),
    // x86's local APIC timer interrupt and its other vectors.
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
    // Hardware noise the other events cannot see: each NMI handler's run.
    Tracepoint::detail(&["nmi/nmi_handler"]),
    Tracepoint::detail(&["sched/sched_process_exit"]),
];

/// The tasks' syscall exits, filtered to the tasks followed: each bounds
/// a switch-in the kernel did not log.
pub const SYS_EXIT: Tracepoint = Tracepoint::filtered(&["raw_syscalls/sys_exit"]);
/// The timers armed, filtered to the tasks followed: each gives the
/// expiry a timer wake-up is late from.
pub const TIMER_START: Tracepoint = Tracepoint::filtered(&["timer/hrtimer_start"]);

/// A late wake-up as its timer thread marked it in the trace
/// (`tracing_mark_write: rtlab T0 sample N deadline NS latency NS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marker {
    /// The timer thread's index.
    pub timer: usize,
    /// The thread that wrote it.
    pub pid: i32,
    /// The sample's number.
    pub sample: u64,
    /// Its deadline (CLOCK_MONOTONIC, ns).
    pub deadline_ns: u64,
    /// How late it woke (ns).
    pub latency_ns: u64,
}

/// The name both readers give a `trace_marker` write.
const MARK_WRITE: &str = "tracing_mark_write";

impl Marker {
    /// The marker event `e` holds, if it is one.
    pub fn of(e: &Event) -> Option<Marker> {
        if e.name != MARK_WRITE {
            return None;
        }
        Marker::parse(e.pid, &e.fields)
    }

    /// The marker written by task `pid` as `text` (`rtlab T0 sample N
    /// deadline NS latency NS`), if the text is one.
    pub fn parse(pid: i32, text: &str) -> Option<Marker> {
        let mut words = text.strip_prefix("rtlab T")?.split(' ');
        let timer = words.next()?.parse().ok()?;
        let mut value = |key: &str| -> Option<u64> {
            (words.next()? == key).then_some(())?;
            words.next()?.trim_end().parse().ok()
        };
        let sample = value("sample")?;
        let deadline_ns = value("deadline")?;
        let latency_ns = value("latency")?;
        Some(Marker {
            timer,
            pid,
            sample,
            deadline_ns,
            latency_ns,
        })
    }
}

/// One CPU's recent events, in time order, as the flight recorder holds
/// them: each wake-up's window is a slice found by time (two binary
/// searches), never read or parsed again.
#[derive(Debug, Clone, Copy)]
pub struct Recent<'a> {
    events: &'a [Event],
}

impl<'a> Recent<'a> {
    /// The events of one CPU, in the order its buffer gave them (time).
    pub fn new(events: &'a [Event]) -> Self {
        Recent { events }
    }

    /// The times of its oldest and newest events (ns), if it holds any.
    pub fn span(&self) -> Option<(u64, u64)> {
        Some((self.events.first()?.ts_ns, self.events.last()?.ts_ns))
    }

    /// The events in `[from_ns, to_ns]`, at most `max` (those nearest the
    /// end of the window are dropped).
    pub fn window(&self, from_ns: u64, to_ns: u64, max: usize) -> &'a [Event] {
        let start = self.events.partition_point(|e| e.ts_ns < from_ns);
        self.from(start, to_ns, max)
    }

    /// The events from index `start` up to time `to_ns`, at most `max`.
    fn from(&self, start: usize, to_ns: u64, max: usize) -> &'a [Event] {
        let rest = &self.events[start.min(self.events.len())..];
        let through = rest.partition_point(|e| e.ts_ns <= to_ns).min(max);
        &rest[..through]
    }

    /// The events of a wake-up's window: from `lookback_ns` before
    /// `deadline_ns` to `to_ns`, and from the last event at or before the
    /// deadline if the lookback holds none (a CPU quiet for longer: its
    /// last event says who owned it), at most `max`: a lookback that holds
    /// more (a flood) starts later, never past that last event, so that
    /// the events after the deadline are kept.
    pub fn window_around(
        &self,
        deadline_ns: u64,
        lookback_ns: u64,
        to_ns: u64,
        max: usize,
    ) -> &'a [Event] {
        let at = |t: u64| self.events.partition_point(|e| e.ts_ns <= t);
        let by_lookback = self
            .events
            .partition_point(|e| e.ts_ns < deadline_ns.saturating_sub(lookback_ns));
        let last_before = at(deadline_ns).saturating_sub(1);
        let through = at(to_ns);
        let start = by_lookback.max(through.saturating_sub(max));
        self.from(start.min(last_before), to_ns, max)
    }

    /// Switches into idle and out of it that the buffer logs: a kernel
    /// that logs the first and never the second hides which task ran after
    /// idle (this VM's 6.18 kernel on one of its CPUs).
    pub fn idle_switches(&self) -> (usize, usize) {
        let switches = self.events.iter().filter(|e| e.name == "sched_switch");
        let (mut into, mut out_of) = (0, 0);
        for e in switches {
            into += usize::from(e.num("next_pid") == Some(0));
            out_of += usize::from(e.num("prev_pid") == Some(0));
        }
        (into, out_of)
    }

    /// The late wake-ups marked at or after `since_ns`, oldest first,
    /// with the time of each marker.
    pub fn markers_since(&self, since_ns: u64) -> impl Iterator<Item = (u64, Marker)> + 'a {
        let start = self.events.partition_point(|e| e.ts_ns < since_ns);
        let events = &self.events[start..];
        events
            .iter()
            .filter_map(|e| Some((e.ts_ns, Marker::of(e)?)))
    }

    /// The late wake-ups marked in it, oldest first.
    pub fn markers(&self) -> impl Iterator<Item = Marker> + 'a {
        self.markers_since(0).map(|(_, m)| m)
    }
}

//! The text of a tracefs buffer (`per_cpu/cpuN/trace`), one event per
//! line: `COMM-PID [CPU] FLAGS SECONDS.MICROS: EVENT: FIELDS`. Lines that
//! are not events (the `#` header, a line cut short) are skipped.

use crate::trace::event::Event;
use crate::trace::fields;

/// The parts of an event line, borrowed: task, PID, CPU, time (ns) and
/// the rest (`EVENT: FIELDS`). No allocation: the window is found by time
/// before any line is kept.
///
/// The kernel writes the task's name right-aligned in 16 columns, then
/// `-PID` (`%16s-%-7d`): where the line is laid out so, the name is taken
/// from there, whatever it holds (` [1] 2.0: x:` included). Other lines
/// (written by hand, or by older tools) are split at the first ` [`.
fn split(text: &str) -> Option<(&str, i32, usize, u64, &str)> {
    if let Some(head) = split_kernel(text) {
        return Some(head);
    }
    let text = text.trim_start();
    if text.starts_with('#') {
        return None;
    }
    let open = text.find(" [")?;
    let dash = text[..open].rfind('-')?;
    after_name(text, &text[..dash], dash + 1)
}

/// [`split`] of a line in the kernel's layout: the name's 16 columns, a
/// dash, the rest.
fn split_kernel(text: &str) -> Option<(&str, i32, usize, u64, &str)> {
    if text.as_bytes().get(NAME_COLUMNS) != Some(&b'-') || !text.is_char_boundary(NAME_COLUMNS) {
        return None;
    }
    let name = text[..NAME_COLUMNS].trim_start_matches(' ');
    after_name(text, name, NAME_COLUMNS + 1)
}

/// The columns the kernel gives a task's name before `-PID`.
const NAME_COLUMNS: usize = 16;

/// The rest of a head from `at`, just after the dash: `PID [CPU] FLAGS
/// SECONDS.MICROS: `, then `EVENT: FIELDS`.
fn after_name<'a>(
    text: &'a str,
    comm: &'a str,
    at: usize,
) -> Option<(&'a str, i32, usize, u64, &'a str)> {
    let rest = &text[at..];
    let open = rest.find(" [")?;
    let close = open + rest[open..].find(']')?;
    let pid = rest[..open].trim().parse().ok()?;
    let cpu = rest[open + 2..close].trim().parse().ok()?;
    // After the CPU: the flags (absent without irq-info), the timestamp.
    let mut rest = rest[close + 1..].trim_start();
    for _ in 0..2 {
        let (word, after) = rest.split_once(' ')?;
        if let Some(stamp) = word.strip_suffix(':') {
            return Some((
                comm.trim_matches(' '),
                pid,
                cpu,
                timestamp_ns(stamp)?,
                after,
            ));
        }
        rest = after.trim_start();
    }
    None
}

/// What follows the head of a line in the kernel's layout (the name in its
/// 16 columns, then `-PID`...): `EVENT: FIELDS`; None for another line.
pub(in crate::trace) fn kernel_rest(line: &str) -> Option<&str> {
    split_kernel(line).map(|h| h.4)
}

/// An event line's `EVENT: FIELDS` part, if it is an event line.
pub(in crate::trace) fn head_and_rest(line: &str) -> Option<&str> {
    split(line).map(|h| h.4)
}

/// Whether `line` may be the first piece of an event line whose task's
/// name holds a line feed: the name's columns up to it.
pub(in crate::trace) fn could_be_piece(line: &str) -> bool {
    (1..=NAME_COLUMNS).contains(&line.len()) && !line.starts_with('#')
}

/// Parses one line, or None when it is not an event. Its fields are read
/// as its event's print format lays them out ([`fields::read`]): a line
/// whose task-name fields fit it in more than one way gets none.
pub fn line(text: &str) -> Option<Event> {
    let (comm, pid, cpu, ts_ns, rest) = split(text)?;
    let (name, fields) = rest.split_once(':')?;
    let name = name.trim();
    // A task's name may hold a line feed: shown as `?`, in place.
    let fields = rtlab_core::text::ascii_controls_shown(fields.trim());
    let spans = match fields::read(name, &fields) {
        fields::Read::Fields(s) => s,
        fields::Read::Refused => fields::Spans::default(),
    };
    Some(Event {
        comm: rtlab_core::text::task_name(comm.as_bytes()).into(),
        pid,
        cpu,
        ts_ns,
        name: name.to_string().into(),
        fields: fields.to_string(),
        spans,
    })
}

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

/// The marker of a late wake-up on this line, if it holds one.
pub fn marker(text: &str) -> Option<Marker> {
    let (_, pid, _, _, rest) = split(text)?;
    let mark = rest.strip_prefix("tracing_mark_write: rtlab T")?;
    let mut words = mark.split(' ');
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

/// The kernel's text shows a `stacktrace` trigger's record as a
/// `<stack trace>` line followed by one ` => function` line per frame:
/// folded here into one event line, `kernel_stack: => a => b`, as the
/// binary reader gives it. Text without stacks is returned as it is.
pub fn fold_stacks(text: String) -> String {
    if !text.contains(": <stack trace>") {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut in_stack = false;
    for l in text.lines() {
        if let Some(frame) = l.strip_prefix(" => ") {
            if in_stack {
                out.pop(); // The newline: the frame joins the stack's line.
                out.push_str(" => ");
                out.push_str(frame.trim());
                out.push('\n');
            }
            continue;
        }
        in_stack = false;
        match l.strip_suffix(": <stack trace>") {
            Some(head) if split(l).is_some() => {
                out.push_str(head);
                out.push_str(": kernel_stack:");
                in_stack = true;
            }
            _ => out.push_str(l),
        }
        out.push('\n');
    }
    out
}

/// A folded stack line back in the kernel's text (for the saved window).
pub fn unfold_stack(line: &str) -> Option<String> {
    let (head, frames) = line.split_once(": kernel_stack:")?;
    let mut out = format!("{head}: <stack trace>");
    for f in frames.split("=>").map(str::trim).filter(|f| !f.is_empty()) {
        out.push_str("\n => ");
        out.push_str(f);
    }
    Some(out)
}

/// The frames of a `kernel_stack` event, innermost first, without the
/// tracing machinery's own (`trace_event_raw_event_*`, `__traceiter_*`...).
pub fn stack_frames(e: &Event) -> Vec<String> {
    let all: Vec<&str> = e
        .fields
        .split("=>")
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .collect();
    let tracing = |f: &str| {
        f.starts_with("trace_event_raw_event_")
            || f.starts_with("__traceiter_")
            || f.starts_with("trace_")
            || f.starts_with("event_triggers_call")
            || f.starts_with("__trace_stack")
            || f.starts_with("ftrace_")
    };
    let first = all.iter().position(|f| !tracing(f)).unwrap_or(all.len());
    all[first..].iter().map(|f| f.to_string()).collect()
}

/// `11692.596950` (seconds, micro- or nanoseconds) in ns.
fn timestamp_ns(text: &str) -> Option<u64> {
    let (s, frac) = text.split_once('.')?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let s: u64 = s.parse().ok()?;
    let scale = 10u64.pow(9 - frac.len() as u32);
    let frac: u64 = frac.parse().ok()?;
    s.checked_mul(1_000_000_000)?.checked_add(frac * scale)
}

/// A CPU's buffer text, its event lines indexed by time once, so that
/// each window and each marker is found without reading the text again.
pub struct Buffer<'a> {
    /// Each event line with its time (ns), in the buffer's (time) order.
    lines: Vec<(u64, &'a str)>,
}

impl<'a> Buffer<'a> {
    /// The times of its oldest and newest events (ns), if it holds any.
    pub fn span(&self) -> Option<(u64, u64)> {
        Some((self.lines.first()?.0, self.lines.last()?.0))
    }

    /// Indexes the event lines of `text` (at most `max` of them: a CPU's
    /// buffer holds far fewer; past it the newest are dropped).
    pub fn new(text: &'a str, max: usize) -> Self {
        let lines = fields::event_lines(text)
            .0
            .into_iter()
            .filter_map(|l| {
                let (_, _, _, ts, rest) = split(l)?;
                rest.contains(':').then_some((ts, l))
            })
            .take(max)
            .collect();
        Buffer { lines }
    }

    /// The event lines in `[from_ns, to_ns]`, as the kernel wrote them, at
    /// most `max` (those nearest the end of the window are dropped).
    pub fn window(&self, from_ns: u64, to_ns: u64, max: usize) -> Vec<&'a str> {
        let start = self.lines.partition_point(|&(ts, _)| ts < from_ns);
        self.lines_from(start, to_ns, max)
    }

    /// The lines from index `start` up to time `to_ns`, at most `max`.
    fn lines_from(&self, start: usize, to_ns: u64, max: usize) -> Vec<&'a str> {
        self.lines[start..]
            .iter()
            .take_while(|&&(ts, _)| ts <= to_ns)
            .take(max)
            .map(|&(_, l)| l)
            .collect()
    }

    /// The event lines of a wake-up's window: from `lookback_ns` before
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
    ) -> Vec<&'a str> {
        let by_lookback = self
            .lines
            .partition_point(|&(ts, _)| ts < deadline_ns.saturating_sub(lookback_ns));
        let last_before = self
            .lines
            .partition_point(|&(ts, _)| ts <= deadline_ns)
            .saturating_sub(1);
        let through = self.lines.partition_point(|&(ts, _)| ts <= to_ns);
        let start = by_lookback.max(through.saturating_sub(max));
        self.lines_from(start.min(last_before), to_ns, max)
    }

    /// Switches into idle and out of it that the buffer logs: a kernel
    /// that logs the first and never the second hides which task ran after
    /// idle (this VM's 6.18 kernel on one of its CPUs).
    pub fn idle_switches(&self) -> (usize, usize) {
        let (mut into, mut out_of) = (0, 0);
        for (_, l) in &self.lines {
            if !l.contains(" sched_switch: ") {
                continue;
            }
            if let Some(e) = line(l).filter(|e| e.name == "sched_switch") {
                into += usize::from(e.num("next_pid") == Some(0));
                out_of += usize::from(e.num("prev_pid") == Some(0));
            }
        }
        (into, out_of)
    }

    /// The late wake-ups marked in the buffer, oldest first.
    pub fn markers(&self) -> impl Iterator<Item = Marker> + '_ {
        self.lines
            .iter()
            .filter(|(_, l)| l.contains("tracing_mark_write: rtlab T"))
            .filter_map(|&(_, l)| marker(l))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::event::{Names, UNKNOWN_TASK, name_tasks};

    #[test]
    fn a_task_shown_unknown_is_named_from_the_events_fields() {
        let text = "\
 <...>-70 [002] d.h1. 5.000100: local_timer_entry: vector=236
 <...>-70 [002] d..2. 5.000200: sched_switch: prev_comm=dd prev_pid=70 prev_prio=120 prev_state=S ==> next_comm=swapper/2 next_pid=0 next_prio=120
 <...>-71 [002] d..2. 5.000300: local_timer_entry: vector=236
";
        let mut events: Vec<Event> = text.lines().filter_map(line).collect();
        name_tasks(&mut events);
        let comms: Vec<&str> = events.iter().map(|e| &*e.comm).collect();
        // 71 is named nowhere: it stays unknown.
        assert_eq!(comms, ["dd", "dd", UNKNOWN_TASK]);
        let mut names = Names::default();
        events.iter().for_each(|e| names.learn(e));
        assert_eq!(names.get(0), None, "idle is not a name to learn");
    }

    #[test]
    fn reads_a_late_wake_ups_marker() {
        let m = marker("    rtlab-timer0-16157   [001] ..... 11692.598950: tracing_mark_write: rtlab T3 sample 8767 deadline 11692596928077 latency 2075000").unwrap();
        assert_eq!(
            m,
            Marker {
                timer: 3,
                pid: 16157,
                sample: 8767,
                deadline_ns: 11_692_596_928_077,
                latency_ns: 2_075_000
            }
        );
        for other in [
            "x-1 [001] ..... 1.000000: tracing_mark_write: hello T3 sample 1 deadline 2 latency 3",
            "x-1 [001] ..... 1.000000: tracing_mark_write: rtlab T3 sample 1 deadline 2",
            "x-1 [001] ..... 1.000000: tracing_mark_write: rtlab T3 sample 1 latency 2 deadline 3",
            "x-1 [001] ..... 1.000000: sched_switch: rtlab T3 sample 1 deadline 2 latency 3",
        ] {
            assert_eq!(marker(other), None, "{other}");
        }
    }

    #[test]
    fn reads_the_kernel_line_format() {
        let e = line(
            "    rtlab-timer0-16157   [001] d..2. 11692.596950: sched_switch: prev_comm=rtlab-timer0 prev_pid=16157 prev_prio=9 prev_state=R ==> next_comm=python3 next_pid=16134 next_prio=4",
        )
        .unwrap();
        assert_eq!((e.comm.as_ref(), e.pid, e.cpu), ("rtlab-timer0", 16157, 1));
        assert_eq!(e.ts_ns, 11_692_596_950_000);
        assert_eq!(e.name, "sched_switch");
        assert_eq!(e.field("next_comm"), Some("python3"));
        assert_eq!(e.num("next_pid"), Some(16134));
        assert_eq!(e.num("prev_prio"), Some(9));
        let idle = line("          <idle>-0       [001] ..s1. 11693.144016: softirq_entry: vec=7 [action=SCHED]").unwrap();
        assert_eq!((idle.comm.as_ref(), idle.pid), ("<idle>", 0));
        assert_eq!(idle.field("action"), Some("SCHED"));
        // A dash in the command name, no irq-info column.
        let d =
            line("kworker/u4:1-x-77 [000] 5.000001: workqueue_execute_start: work=1 function=f")
                .unwrap();
        assert_eq!(
            (d.comm.as_ref(), d.pid, d.ts_ns),
            ("kworker/u4:1-x", 77, 5_000_001_000)
        );
    }

    #[test]
    fn other_lines_are_skipped_not_misread() {
        for bad in [
            "# tracer: nop",
            "",
            "   rtlab-timer0-16157   [001] d..2. 11692.5969",
            "x [z] 1.0: a: b",
            "a-1 [0] 99999999999999999999.1: e: f",
        ] {
            assert_eq!(line(bad), None, "{bad:?}");
        }
    }
}

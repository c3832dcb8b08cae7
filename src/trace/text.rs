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

pub use super::event::Marker;

/// The marker of a late wake-up on this line, if it holds one.
pub fn marker(text: &str) -> Option<Marker> {
    let (_, pid, _, _, rest) = split(text)?;
    Marker::parse(pid, rest.strip_prefix("tracing_mark_write: ")?)
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

/// The events of a CPU's buffer text (the text reader's whole buffer),
/// in its order, tasks shown as `<...>` named from the events' own fields.
pub fn events(text: &str) -> Vec<Event> {
    let mut events: Vec<Event> = fields::event_lines(text)
        .0
        .into_iter()
        .filter_map(line)
        .collect();
    crate::trace::event::name_tasks(&mut events);
    events
}

/// Appends event `e` as the kernel's text shows it, one line: a task may
/// name itself with a line break (and forge a marker line with it), which
/// is shown as `?`; the name right-aligned in 16 columns, as the kernel
/// writes it, so that the text reader takes the name from there, whatever
/// it holds. Written piece by piece (no formatting machinery: the saved
/// windows hold thousands of lines).
pub fn kernel_line(e: &Event, out: &mut String) {
    kernel_head(e, out);
    out.push_str(": ");
    out.push_str(&e.name);
    out.push_str(": ");
    one_line(&e.fields, out);
    out.push('\n');
}

/// Appends event `e` as the kernel's text shows it, a `kernel_stack`
/// (folded into one event by the readers) as the kernel does: a `<stack
/// trace>` line, then one ` => function` line per frame.
pub fn kernel_text(e: &Event, out: &mut String) {
    if e.name != "kernel_stack" {
        return kernel_line(e, out);
    }
    kernel_head(e, out);
    out.push_str(": <stack trace>\n");
    for f in e
        .fields
        .split("=>")
        .map(str::trim)
        .filter(|f| !f.is_empty())
    {
        out.push_str(" => ");
        one_line(f, out);
        out.push('\n');
    }
}

/// `COMM-PID [CPU] ..... SECONDS.NANOS`, as the kernel's text begins.
fn kernel_head(e: &Event, out: &mut String) {
    let comm = if e.comm.contains(['\n', '\r']) {
        e.comm.replace(['\n', '\r'], "?").into()
    } else {
        std::borrow::Cow::Borrowed(&*e.comm)
    };
    let mut cut = comm.len().min(NAME_COLUMNS);
    while !comm.is_char_boundary(cut) {
        cut -= 1;
    }
    // Padded to its width in bytes, as the kernel's `%16s` does (a `char`
    // count would put a name of multi-byte letters out of its columns).
    out.extend(std::iter::repeat_n(' ', NAME_COLUMNS - cut));
    out.push_str(&comm[..cut]);
    out.push('-');
    let mut number = itoa::Buffer::new();
    out.push_str(number.format(e.pid));
    out.push_str(" [");
    zero_padded(out, e.cpu as u64, 3);
    out.push_str("] ..... ");
    out.push_str(number.format(e.ts_ns / 1_000_000_000));
    out.push('.');
    zero_padded(out, e.ts_ns % 1_000_000_000, 9);
}

/// `n` in decimal, with leading zeros up to `width` digits.
fn zero_padded(out: &mut String, n: u64, width: usize) {
    let mut number = itoa::Buffer::new();
    let digits = number.format(n);
    out.extend(std::iter::repeat_n('0', width.saturating_sub(digits.len())));
    out.push_str(digits);
}

/// `text` with its line breaks shown as `?`.
fn one_line(text: &str, out: &mut String) {
    match text.contains(['\n', '\r']) {
        true => out.push_str(&text.replace(['\n', '\r'], "?")),
        false => out.push_str(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::event::{Names, UNKNOWN_TASK, name_tasks};

    #[test]
    fn a_decoded_event_read_back_as_text_keeps_every_field_whatever_its_task_is_named() {
        for name in [
            " next_pid=5",
            "a [1] 2.0: x:",
            "\u{e9}t\u{e9} 42",
            "a\nb",
            "<idle>",
            "x-1 [0] 1.0: e:",
        ] {
            let fields = format!(
                "prev_comm={name} prev_pid=77 prev_prio=120 prev_state=S next_comm=rtlab-timer0 next_pid=4243 next_prio=9"
            );
            let spans = match crate::trace::fields::read("sched_switch", &fields) {
                crate::trace::fields::Read::Fields(s) => s,
                other => panic!("{other:?}"),
            };
            let e = Event {
                comm: name.into(),
                pid: 77,
                cpu: 1,
                ts_ns: 12_000_000_001,
                name: "sched_switch".into(),
                fields,
                spans,
            };
            let mut line = String::new();
            kernel_line(&e, &mut line);
            let back = super::line(line.trim_end()).unwrap_or_else(|| panic!("{line}"));
            let shown = name.replace('\n', "?");
            assert_eq!(back.comm.as_ref(), shown.trim_start(), "{line}");
            assert_eq!(
                (back.pid, back.cpu, back.ts_ns),
                (77, 1, 12_000_000_001),
                "{line}"
            );
            assert_eq!(back.num("next_pid"), Some(4243), "{line}");
            assert_eq!(back.num("prev_pid"), Some(77), "{line}");
            assert_eq!(back.field("next_comm"), Some("rtlab-timer0"), "{line}");
            assert_eq!(back.field("prev_comm"), Some(shown.trim()), "{line}");
        }
    }

    #[test]
    fn a_stack_is_written_as_the_kernel_does_and_read_back_folded() {
        let e = Event {
            comm: "dd".into(),
            pid: 4377,
            cpu: 1,
            ts_ns: 5_000_000_123,
            name: "kernel_stack".into(),
            fields: "=> __schedule => __cond_resched => vfs_write".into(),
            spans: Default::default(),
        };
        let mut out = String::new();
        kernel_text(&e, &mut out);
        assert_eq!(
            out,
            "              dd-4377 [001] ..... 5.000000123: <stack trace>\n => __schedule\n => \
             __cond_resched\n => vfs_write\n"
        );
        let back = events(&fold_stacks(out));
        assert_eq!(back.len(), 1);
        assert_eq!(
            (&*back[0].comm, back[0].pid, back[0].ts_ns),
            ("dd", 4377, 5_000_000_123)
        );
        assert_eq!(back[0].name, "kernel_stack");
        assert_eq!(back[0].fields, e.fields);
    }

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

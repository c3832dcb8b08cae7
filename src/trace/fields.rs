//! An event's `key=value` fields, found as the kernel's print format lays
//! them out, never by searching the text for `key=`: a task names itself
//! (`prctl(PR_SET_NAME)`, up to 15 bytes of anything but NUL), and a name
//! such as `" pid=4242"` or `" next_pid=1"` would otherwise be read as
//! another task's field.
//!
//! - The binary reader knows where it wrote each value ([`Spans::push`]).
//! - The text reader parses the events that carry task names by their
//!   print formats ([`TEMPLATES`]), from the fixed fields around the names:
//!   a name is at most 16 bytes, the numbers are digits, a task state is
//!   letters. A line those fields fit in more than one way is ambiguous and
//!   its fields are refused (none is given); none fits on any line a kernel
//!   wrote, since the fields after a name need more than its 15 bytes.
//!   Fields appended by a later kernel (`group_dead=`) are read after them.
//! - Other events carry no text a task chooses (numbers, symbols, IRQ
//!   names from drivers): their `key=value` pairs are read in order.
//!
//! The kernel prints names as they are, line feeds included:
//! [`event_lines`] joins the pieces of such a line back.

/// Most fields kept per event (past it, the rest are not found).
pub const MAX_FIELDS: usize = 16;

/// Where each `key=value` of an event's text lies: the key's start and the
/// value's end, as byte offsets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spans {
    len: u8,
    at: [(u16, u16); MAX_FIELDS],
}

impl Spans {
    /// Notes a field whose key starts at `key` and whose value ends at
    /// `end`; ignored past [`MAX_FIELDS`] or 64 KiB of text.
    pub fn push(&mut self, key: usize, end: usize) {
        let (Ok(key), Ok(end)) = (u16::try_from(key), u16::try_from(end)) else {
            return;
        };
        if let Some(slot) = self.at.get_mut(self.len as usize) {
            *slot = (key, end);
            self.len += 1;
        }
    }

    /// How many fields.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Each `(key, value)` of `text` (the text these spans were made for),
    /// in order.
    pub fn pairs(self, text: &str) -> impl Iterator<Item = (&str, &str)> {
        (0..self.len()).filter_map(move |i| {
            let (start, end) = self.at[i];
            let (key, value) = text.get(start as usize..end as usize)?.split_once('=')?;
            Some((key, value.trim_matches(' ')))
        })
    }

    /// The value of `key` in `text` (the text these spans were made for).
    /// Blanks at a value's ends are left out (a task's name is shown as
    /// the head of the kernel's lines shows it: unpadded).
    pub fn value<'a>(&self, text: &'a str, key: &str) -> Option<&'a str> {
        self.at[..self.len()].iter().find_map(|&(start, end)| {
            let (start, end) = (start as usize, end as usize);
            let rest = text.get(start..end)?;
            Some(rest.strip_prefix(key)?.strip_prefix('=')?.trim_matches(' '))
        })
    }
}

/// What a value may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A task's name: any bytes, at most 16.
    Comm,
    /// A decimal number, maybe negative.
    Int,
    /// A hexadecimal number.
    Hex,
    /// A task state: letters, `|` and `+` (`R+`, `D|K`).
    State,
}

/// One field of a print format: the texts that may come before its key,
/// its key, what its value holds.
type Field = (&'static [&'static str], &'static str, Kind);

/// Before the first field.
const FIRST: &[&str] = &[""];
/// Between fields.
const BLANK: &[&str] = &[" "];
/// Before a switch's next task: the kernel's text has the arrow; the
/// binary reader's lines (which show the `key=` conversions only) do not.
const ARROW: &[&str] = &[" ==> ", " "];

/// The print formats of the events that carry task names, as the kernel
/// defines them (`include/trace/events/sched.h`, `task.h`).
const TEMPLATES: &[(&str, &[Field])] = &[
    (
        "sched_switch",
        &[
            (FIRST, "prev_comm", Kind::Comm),
            (BLANK, "prev_pid", Kind::Int),
            (BLANK, "prev_prio", Kind::Int),
            (BLANK, "prev_state", Kind::State),
            (ARROW, "next_comm", Kind::Comm),
            (BLANK, "next_pid", Kind::Int),
            (BLANK, "next_prio", Kind::Int),
        ],
    ),
    ("sched_waking", WAKEUP),
    ("sched_wakeup", WAKEUP),
    ("sched_wakeup_new", WAKEUP),
    (
        "sched_migrate_task",
        &[
            (FIRST, "comm", Kind::Comm),
            (BLANK, "pid", Kind::Int),
            (BLANK, "prio", Kind::Int),
            (BLANK, "orig_cpu", Kind::Int),
            (BLANK, "dest_cpu", Kind::Int),
        ],
    ),
    ("sched_process_exit", PROCESS),
    ("sched_process_free", PROCESS),
    ("sched_wait_task", PROCESS),
    (
        "sched_process_fork",
        &[
            (FIRST, "comm", Kind::Comm),
            (BLANK, "pid", Kind::Int),
            (BLANK, "child_comm", Kind::Comm),
            (BLANK, "child_pid", Kind::Int),
        ],
    ),
    (
        "sched_pi_setprio",
        &[
            (FIRST, "comm", Kind::Comm),
            (BLANK, "pid", Kind::Int),
            (BLANK, "oldprio", Kind::Int),
            (BLANK, "newprio", Kind::Int),
        ],
    ),
    (
        "sched_kthread_stop",
        &[(FIRST, "comm", Kind::Comm), (BLANK, "pid", Kind::Int)],
    ),
    (
        "task_newtask",
        &[
            (FIRST, "pid", Kind::Int),
            (BLANK, "comm", Kind::Comm),
            (BLANK, "clone_flags", Kind::Hex),
            (BLANK, "oom_score_adj", Kind::Int),
        ],
    ),
    (
        "task_rename",
        &[
            (FIRST, "pid", Kind::Int),
            (BLANK, "oldcomm", Kind::Comm),
            (BLANK, "newcomm", Kind::Comm),
            (BLANK, "oom_score_adj", Kind::Int),
        ],
    ),
];

const WAKEUP: &[Field] = &[
    (FIRST, "comm", Kind::Comm),
    (BLANK, "pid", Kind::Int),
    (BLANK, "prio", Kind::Int),
    (BLANK, "target_cpu", Kind::Int),
];

const PROCESS: &[Field] = &[
    (FIRST, "comm", Kind::Comm),
    (BLANK, "pid", Kind::Int),
    (BLANK, "prio", Kind::Int),
];

/// A task name's longest text (TASK_COMM_LEN less its NUL, with room).
const MAX_COMM: usize = 16;

/// How a text was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// Its fields were found.
    Fields(Spans),
    /// Its event carries task names and its text fits the format in more
    /// than one way, or in none: no field is given.
    Refused,
}

/// Whether event `name` carries task names (its text is read by format).
pub fn has_template(name: &str) -> bool {
    TEMPLATES.iter().any(|(n, _)| *n == name)
}

/// The fields of event `name`'s text `fields`.
pub fn read(name: &str, fields: &str) -> Read {
    match TEMPLATES.iter().find(|(n, _)| *n == name) {
        Some((_, template)) => by_template(template, fields),
        None => Read::Fields(in_order(fields)),
    }
}

/// `key=value` pairs in order: a key at the start or after a blank or `[`,
/// its value up to the next blank or `]`.
fn in_order(text: &str) -> Spans {
    let mut spans = Spans::default();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let starts = i == 0 || matches!(bytes[i - 1], b' ' | b'[');
        let key_len = bytes[i..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
            .count();
        if starts && key_len > 0 && bytes.get(i + key_len) == Some(&b'=') {
            let value = i + key_len + 1;
            let end = bytes[value..]
                .iter()
                .position(|b| matches!(b, b' ' | b']'))
                .map_or(bytes.len(), |n| value + n);
            spans.push(i, end);
            i = end;
        } else {
            i += key_len.max(1);
        }
    }
    spans
}

/// The fields of `text` by `template`: the one way they fit, else refused.
fn by_template(template: &[Field], text: &str) -> Read {
    let mut found = Spans::default();
    let mut ways = 0;
    fit(template, text, 0, Spans::default(), &mut ways, &mut found);
    if ways == 1 {
        Read::Fields(found)
    } else {
        Read::Refused
    }
}

/// Tries field `template[0]` at `at` (and the rest after it), counting in
/// `ways` each whole fit (at most 2: one more than is wanted) and keeping
/// the first in `found`.
fn fit(
    template: &[Field],
    text: &str,
    at: usize,
    spans: Spans,
    ways: &mut usize,
    found: &mut Spans,
) {
    let Some(&(befores, key, kind)) = template.first() else {
        // Past the format's own fields: nothing, or fields a later kernel
        // appended (` key=value` with no blank in the value).
        let rest = &text[at..];
        if let Some(extra) = appended(rest) {
            let mut spans = spans;
            for (k, e) in extra.at[..extra.len()].iter() {
                spans.push(at + *k as usize, at + *e as usize);
            }
            *ways += 1;
            if *ways == 1 {
                *found = spans;
            }
        }
        return;
    };
    for before in befores {
        let Some(rest) = text[at..].strip_prefix(before) else {
            continue;
        };
        let key_at = at + before.len();
        let Some(value) = rest.strip_prefix(key).and_then(|r| r.strip_prefix('=')) else {
            continue;
        };
        let value_at = key_at + key.len() + 1;
        for len in lengths(kind, value).filter(|&n| value.is_char_boundary(n)) {
            let mut next = spans;
            next.push(key_at, value_at + len);
            fit(&template[1..], text, value_at + len, next, ways, found);
            if *ways > 1 {
                return;
            }
        }
    }
}

/// The lengths a value of `kind` may have at the start of `text`, as a
/// range (no allocation: every switch and wake-up of a text trace comes
/// here); an empty range when it has none.
fn lengths(kind: Kind, text: &str) -> std::ops::Range<usize> {
    let run = |ok: fn(u8) -> bool| text.bytes().take_while(|&b| ok(b)).count();
    let one = |n: usize| if n > 0 { n..n + 1 } else { 0..0 };
    match kind {
        // Those not on a character boundary are skipped by the caller.
        Kind::Comm => 0..MAX_COMM.min(text.len()) + 1,
        Kind::Int => {
            let sign = usize::from(text.starts_with('-'));
            let digits = text[sign..].bytes().take_while(u8::is_ascii_digit).count();
            one(if digits > 0 { sign + digits } else { 0 })
        }
        Kind::Hex => one(run(|b| b.is_ascii_hexdigit())),
        Kind::State => one(run(|b| b.is_ascii_alphabetic() || b == b'|' || b == b'+')),
    }
}

/// Fields appended after a format's own: empty, or ` key=value` pairs whose
/// values hold no blank. None for anything else.
fn appended(rest: &str) -> Option<Spans> {
    if rest.is_empty() {
        return Some(Spans::default());
    }
    let body = rest.strip_prefix(' ')?;
    let spans = in_order(body);
    let pairs = body.split(' ').count();
    let well_formed = body.split(' ').all(|p| {
        p.split_once('=').is_some_and(|(k, _)| {
            !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        })
    });
    (well_formed && spans.len() == pairs).then(|| {
        let mut shifted = Spans::default();
        for &(k, e) in &spans.at[..spans.len()] {
            shifted.push(k as usize + 1, e as usize + 1);
        }
        shifted
    })
}

/// Most physical lines one event may span (a name of 15 line feeds, twice
/// in a switch, and the line's own).
const MAX_PIECES: usize = 48;

/// The events of a trace's text, one slice each. Where a task's name holds
/// a line feed, the kernel's line comes in pieces: a piece that cannot
/// start an event line (the kernel starts each with the task name right-
/// aligned in 16 columns, then `-PID`) is joined to the one before, as is
/// the rest of an event whose fields did not fit its format yet. The last
/// slice may be an event still missing pieces (its fields then refused):
/// `complete` says whether it is whole.
pub fn event_lines(text: &str) -> (Vec<&str>, bool) {
    let mut out = Vec::new();
    // The event being gathered: its start and end, its pieces, whether
    // more may join it.
    let mut open: Option<(usize, usize, usize, bool)> = None;
    let mut at = 0;
    for piece in text.split_inclusive('\n') {
        let (start, end) = (at, at + piece.trim_end_matches('\n').len());
        at += piece.len();
        let line = &text[start..end];
        // Read once: the head in the kernel's layout, and what follows it.
        let rest = super::text::kernel_rest(line);
        match open {
            Some((s, _, n, true)) if n < MAX_PIECES && rest.is_none() => {
                let joined = &text[s..end];
                open = Some((
                    s,
                    end,
                    n + 1,
                    wanting(joined, super::text::kernel_rest(joined)),
                ));
            }
            _ => {
                if let Some((s, e, _, _)) = open.take() {
                    out.push(&text[s..e]);
                }
                open = Some((start, end, 1, wanting(line, rest)));
            }
        }
    }
    let complete = open.is_none_or(|o| !o.3);
    if let Some((s, e, _, _)) = open {
        out.push(&text[s..e]);
    }
    out.retain(|l| !l.is_empty());
    (out, complete)
}

/// Whether the rest of `line` may come in the next pieces: a kernel event
/// line (`rest`: what follows its head) whose task-name fields do not fit
/// its format yet, or the first piece of such a line (the name's columns
/// up to a line feed). Lines not in the kernel's layout (written by hand)
/// are never joined.
fn wanting(line: &str, rest: Option<&str>) -> bool {
    let Some(rest) = rest else {
        return super::text::could_be_piece(line) && super::text::head_and_rest(line).is_none();
    };
    match rest.split_once(':') {
        Some((name, fields)) if has_template(name.trim()) => {
            !matches!(read(name.trim(), fields.trim()), Read::Fields(_))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value<'a>(name: &str, text: &'a str, key: &str) -> Option<&'a str> {
        match read(name, text) {
            Read::Fields(s) => s.value(text, key),
            Read::Refused => panic!("refused: {text}"),
        }
    }

    #[test]
    fn a_name_holding_key_text_changes_no_other_field() {
        for (prev, next) in [
            (" pid=4242", "rtlab-timer0"),
            (" next_pid=4242", " prev_pid=7"),
            ("a prev_pid=1", "x next_pid=1"),
            ("b prev_state=R", " ==> next_comm="),
            ("", ""),
            ("x next_prio=9", "next_prio=9 n"),
        ] {
            let text = format!(
                "prev_comm={prev} prev_pid=77 prev_prio=120 prev_state=S ==> next_comm={next} next_pid=4243 next_prio=9"
            );
            // Blanks at a name's ends are left out, as the lines' heads
            // show names.
            assert_eq!(
                value("sched_switch", &text, "prev_comm"),
                Some(prev.trim()),
                "{text}"
            );
            assert_eq!(
                value("sched_switch", &text, "next_comm"),
                Some(next.trim()),
                "{text}"
            );
            assert_eq!(
                value("sched_switch", &text, "prev_pid"),
                Some("77"),
                "{text}"
            );
            assert_eq!(
                value("sched_switch", &text, "next_pid"),
                Some("4243"),
                "{text}"
            );
            assert_eq!(
                value("sched_switch", &text, "next_prio"),
                Some("9"),
                "{text}"
            );
            assert_eq!(
                value("sched_switch", &text, "prev_state"),
                Some("S"),
                "{text}"
            );
        }
        for comm in [" pid=4242", "a pid=5 prio=1", " target_cpu=1", "x=y z"] {
            let text = format!("comm={comm} pid=77 prio=120 target_cpu=001");
            assert_eq!(value("sched_waking", &text, "comm"), Some(comm.trim()));
            assert_eq!(value("sched_waking", &text, "pid"), Some("77"));
            assert_eq!(value("sched_waking", &text, "target_cpu"), Some("001"));
        }
        // A field a later kernel appended is read after the format's own.
        let text = "comm=a pid=9 prio=120 group_dead=true";
        assert_eq!(
            value("sched_process_exit", text, "group_dead"),
            Some("true")
        );
        assert_eq!(value("sched_process_exit", text, "pid"), Some("9"));
        // Names of 16 bytes at most: a longer "name" is not one.
        assert_eq!(
            read(
                "sched_waking",
                "comm=0123456789abcdefg pid=1 prio=2 target_cpu=000"
            ),
            Read::Refused
        );
    }

    #[test]
    fn other_events_are_read_in_order() {
        let text = "vec=7 [action=SCHED]";
        let Read::Fields(s) = read("softirq_entry", text) else {
            panic!()
        };
        assert_eq!(s.value(text, "vec"), Some("7"));
        assert_eq!(s.value(text, "action"), Some("SCHED"));
        assert_eq!(s.value(text, "act"), None);
        let text = "irq=36 name=virtio1-req.0";
        let Read::Fields(s) = read("irq_handler_entry", text) else {
            panic!()
        };
        assert_eq!(s.value(text, "name"), Some("virtio1-req.0"));
        assert_eq!(s.value(text, "irq"), Some("36"));
    }

    #[test]
    fn a_line_feed_in_a_name_is_joined_back() {
        let text = "    rtlab-timer0-16157   [001] d..2. 11692.596950: sched_switch: prev_comm=rtlab-timer0 prev_pid=16157 prev_prio=9 prev_state=S ==> next_comm=a\nb prev_pid=3 next_pid=16134 next_prio=120\n\
                    \x20         <idle>-0       [001] d..2. 11692.596951: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=x next_pid=5 next_prio=120\n";
        let (lines, complete) = event_lines(text);
        assert!(complete);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].ends_with("next_prio=120") && lines[0].contains("a\nb prev_pid=3"));
        let e = super::super::text::line(lines[0]).unwrap();
        // The line feed shown as `?`, in place.
        assert_eq!(e.field("next_comm"), Some("a?b prev_pid=3"));
        assert_eq!(e.num("next_pid"), Some(16134));
        // The same in the task's own name, before its PID.
        let text = " a\nbcdefghijklm-4242    [000] ..... 1.000001: sched_waking: comm=x pid=1 prio=120 target_cpu=000\n";
        let (lines, _) = event_lines(text);
        assert_eq!(lines.len(), 1, "{lines:?}");
        let e = super::super::text::line(lines[0]).unwrap();
        assert_eq!((e.comm.as_ref(), e.pid), ("a?bcdefghijklm", 4242));
        // An event still missing its end is said to be.
        let (lines, complete) = event_lines(
            "    rtlab-timer0-16157   [001] d..2. 1.000000: sched_switch: prev_comm=a\n",
        );
        assert_eq!(lines.len(), 1);
        assert!(!complete);
    }
}

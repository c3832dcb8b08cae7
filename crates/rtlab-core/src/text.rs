//! Text from outside (experiment files, result files, thread names, command
//! lines) made safe for the medium it is shown in. Pure.
//!
//! A terminal interprets control characters and escape sequences: a thread
//! name or a label holding `ESC ] ... BEL` could retitle the window, move the
//! cursor or hide lines. Everything rtlab prints goes through [`terminal`],
//! which shows such characters as visible escapes (`\x1b`, `\u{9b}`) instead.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `bytes` as text, each byte that is not part of valid UTF-8 shown as
/// `?`: unlike `from_utf8_lossy`, the text has as many bytes as the input
/// (a task's name stays within its 15 bytes, a trace line's columns stay
/// where the kernel put them).
pub fn lossy(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => {
            let mut out = String::with_capacity(bytes.len());
            for chunk in bytes.utf8_chunks() {
                out.push_str(chunk.valid());
                out.extend(std::iter::repeat_n('?', chunk.invalid().len()));
            }
            Cow::Owned(out)
        }
    }
}

/// `s` with each ASCII control character (a line feed, a tab, ESC...) shown
/// as `?`, byte for byte: for text a task chose (its name), which would
/// otherwise break a line of rtlab's own output, and whose place in a
/// trace line must not move.
pub fn ascii_controls_shown(s: &str) -> Cow<'_, str> {
    if s.bytes().any(|b| b.is_ascii_control()) {
        Cow::Owned(s.replace(|c: char| c.is_ascii_control(), "?"))
    } else {
        Cow::Borrowed(s)
    }
}

/// A task's name as rtlab shows it: bytes that are not UTF-8 and ASCII
/// control characters as `?`, one each, blanks at its ends left out (the
/// kernel's text pads names with blanks: both trace readers give the same
/// name).
pub fn task_name(bytes: &[u8]) -> String {
    ascii_controls_shown(&lossy(bytes))
        .trim_matches(' ')
        .to_string()
}

/// Whether `c` does something on a terminal or in a document instead of
/// showing a glyph: C0 controls, DEL, C1 controls, the Unicode direction
/// marks, overrides and isolates (which can reorder what is shown), and
/// the invisible ones (zero-width spaces and joiners, the line and
/// paragraph separators, the byte-order mark), which make two different
/// names look the same.
pub fn is_active(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{2069}'
            | '\u{061c}'
            | '\u{180e}'
            | '\u{feff}')
}

fn escape_char(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x100 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

fn escaped(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(|c| is_active(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_active(c) && !keep(c) {
            escape_char(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Text for a terminal: line feeds and tabs kept, every other control
/// character shown escaped.
pub fn terminal(s: &str) -> Cow<'_, str> {
    escaped(s, |c| c == '\n' || c == '\t')
}

/// One line of text (a label, a title, a name): every control character,
/// line feeds included, shown escaped.
pub fn one_line(s: &str) -> Cow<'_, str> {
    escaped(s, |_| false)
}

/// Writes formatted text to `out` for a terminal ([`terminal`]), with a
/// line feed when asked; a closed pipe or a full disk loses the text, never
/// the caller's cleanup. What `out!`, `outln!` and `errln!` expand to.
pub fn emit(mut out: impl std::io::Write, args: std::fmt::Arguments, newline: bool) {
    let text = args.to_string();
    let end = if newline { "\n" } else { "" };
    let _ = write!(out, "{}{end}", terminal(&text));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_names_keep_their_bytes_places_and_lose_only_their_padding() {
        assert_eq!(lossy(b"ab\xffc"), "ab?c");
        assert_eq!(lossy(b"\xe9t\xc3\xa9").len(), 4);
        assert_eq!(ascii_controls_shown("a\nb\tc\x1b"), "a?b?c?");
        assert!(matches!(ascii_controls_shown("plain"), Cow::Borrowed(_)));
        assert_eq!(task_name(b"  pid=4242 "), "pid=4242");
        assert_eq!(task_name(b"\xff\xfe ==> x\n"), "?? ==> x?");
        assert_eq!(task_name(b"rtlab-timer0"), "rtlab-timer0");
    }

    #[test]
    fn control_characters_are_shown_not_interpreted() {
        assert_eq!(terminal("plain µs\n\tok"), "plain µs\n\tok");
        assert_eq!(terminal("a\x1b]0;pwned\x07b"), "a\\x1b]0;pwned\\x07b");
        assert_eq!(terminal("\u{9b}31m\u{7f}\r"), "\\x9b31m\\x7f\\r");
        assert_eq!(one_line("two\nlines"), "two\\nlines");
        assert_eq!(one_line("rlo\u{202e}txt"), "rlo\\u{202e}txt");
        assert_eq!(terminal("zero\u{200b}width"), "zero\\u{200b}width");
        assert_eq!(terminal("a\u{2028}b\u{feff}"), "a\\u{2028}b\\u{feff}");
        assert!(matches!(terminal("nothing to do"), Cow::Borrowed(_)));
    }
}

/// `1 run`, `2 runs`: a count with its noun in the right number.
pub fn counted(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// `once`, `twice`, `3 times`.
pub fn times(n: u64) -> String {
    match n {
        1 => "once".into(),
        2 => "twice".into(),
        n => format!("{n} times"),
    }
}

#[cfg(test)]
mod count_tests {
    use super::*;

    #[test]
    fn counts_take_the_number_of_their_noun() {
        assert_eq!(counted(1, "run", "runs"), "1 run");
        assert_eq!(counted(0, "run", "runs"), "0 runs");
        assert_eq!(counted(3, "run", "runs"), "3 runs");
        assert_eq!(
            (times(1), times(2), times(0), times(7)),
            (
                "once".into(),
                "twice".into(),
                "0 times".into(),
                "7 times".into()
            )
        );
    }
}

//! Text from outside (experiment files, result files, thread names, command
//! lines) made safe for the medium it is shown in. Pure.
//!
//! A terminal interprets control characters and escape sequences: a thread
//! name or a label holding `ESC ] ... BEL` could retitle the window, move the
//! cursor or hide lines. Everything rtlab prints goes through [`terminal`],
//! which shows such characters as visible escapes (`\x1b`, `\u{9b}`) instead.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` does something on a terminal or in a document instead of
/// showing a glyph: C0 controls, DEL, C1 controls, and the Unicode
/// direction overrides and isolates (which can reorder what is shown).
pub fn is_active(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_not_interpreted() {
        assert_eq!(terminal("plain µs\n\tok"), "plain µs\n\tok");
        assert_eq!(terminal("a\x1b]0;pwned\x07b"), "a\\x1b]0;pwned\\x07b");
        assert_eq!(terminal("\u{9b}31m\u{7f}\r"), "\\x9b31m\\x7f\\r");
        assert_eq!(one_line("two\nlines"), "two\\nlines");
        assert_eq!(one_line("rlo\u{202e}txt"), "rlo\\u{202e}txt");
        assert!(matches!(terminal("nothing to do"), Cow::Borrowed(_)));
    }

    #[test]
    fn every_print_goes_through_the_escaping_macros() {
        // Rule: stdout and stderr are written by out!/outln!/errln! only.
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut offenders = Vec::new();
        let mut stack = vec![src];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                if path.ends_with("src/lib.rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                // Spelled in pieces so that this file does not match itself.
                for needle in ["ln!", "!("].map(|end| format!("print{end}")) {
                    if text.contains(&needle) {
                        offenders.push(format!("{} has {needle}", path.display()));
                    }
                }
            }
        }
        assert!(offenders.is_empty(), "{offenders:?}");
    }

    #[test]
    fn unsafe_is_allowed_in_the_syscall_layer_alone() {
        // The crate denies unsafe_code; only `sys/mod.rs` may lift it, for
        // `mod os`. Spelled in pieces so that this file does not match.
        let needle = ["allow(", "unsafe_code)"].concat();
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut found = Vec::new();
        let mut stack = vec![src];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if std::fs::read_to_string(&path).unwrap().contains(&needle) {
                    found.push(path.display().to_string());
                }
            }
        }
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].ends_with("src/sys/mod.rs"), "{found:?}");
        let lib =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/lib.rs")).unwrap();
        assert!(lib.contains(&["#![deny(", "unsafe_code)]"].concat()));
    }
}

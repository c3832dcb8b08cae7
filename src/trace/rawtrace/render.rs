//! A record's fields as the kernel's text shows them (`key=value`), and
//! the kernel's symbols for the addresses it shows by name.

use super::format::{EventFormat, Field, Render, Storage};
use super::page::uint_at;
use crate::trace::fields::Spans;
use std::collections::HashMap;
use std::fmt::Write;

/// The kernel's text symbols (`/proc/kallsyms`), sorted by address: their
/// names in one string, each symbol its address and its name's place in
/// it (120 000 symbols on a desktop kernel: one allocation, not one each).
#[derive(Debug, Default, Clone)]
pub struct Symbols {
    /// Each symbol's name, `name` or `name [module]`, one after another.
    names: String,
    /// Each symbol's address and the span of its name in `names`.
    sorted: Vec<(u64, u32, u32)>,
    /// Addresses already named (`%ps`, `%pS`): a trace names the same
    /// few functions again and again.
    named: HashMap<(u64, bool), String, std::hash::BuildHasherDefault<super::PidHasher>>,
    /// The decoder's scratch line (kept here: every render has it).
    scratch: String,
}

/// Most names remembered (past it the memory starts again).
const MAX_NAMED: usize = 4096;

impl Symbols {
    /// Reads `/proc/kallsyms` text. Addresses hidden (all zero, as
    /// `kptr_restrict` makes them) give an empty table.
    pub fn parse(kallsyms: &str) -> Symbols {
        let mut names = String::with_capacity(kallsyms.len() / 2);
        let mut sorted = Vec::with_capacity(kallsyms.len() / 40);
        for l in kallsyms.lines() {
            let mut w = l.split_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (w.next(), w.next(), w.next()) else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            if addr == 0 || !matches!(kind, "t" | "T" | "w" | "W") {
                continue;
            }
            let start = names.len();
            names.push_str(name);
            if let Some(module) = w.next() {
                names.push(' ');
                names.push_str(module);
            }
            let (Ok(start), Ok(end)) = (u32::try_from(start), u32::try_from(names.len())) else {
                break;
            };
            sorted.push((addr, start, end));
        }
        sorted.sort_unstable_by_key(|s| s.0);
        sorted.dedup_by_key(|s| s.0);
        Symbols {
            names,
            sorted,
            named: HashMap::default(),
            scratch: String::new(),
        }
    }

    /// Whether the table is empty (addresses are shown in hex).
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// The function `addr` lies in (`name`, `name [module]`), or `?`
    /// when the table is empty (the addresses hidden).
    pub fn function(&self, addr: u64) -> String {
        if self.is_empty() {
            return "?".into();
        }
        let mut out = String::new();
        self.lookup(addr, false, &mut out);
        out
    }

    /// `addr` as `%ps` (`name`) or `%pS` (`name+0xOFF/0xSIZE`) show it.
    fn name(&mut self, addr: u64, offset: bool, out: &mut String) {
        if let Some(n) = self.named.get(&(addr, offset)) {
            out.push_str(n);
            return;
        }
        let mut n = String::new();
        self.lookup(addr, offset, &mut n);
        out.push_str(&n);
        if self.named.len() >= MAX_NAMED {
            self.named.clear();
        }
        self.named.insert((addr, offset), n);
    }

    fn lookup(&self, addr: u64, offset: bool, out: &mut String) {
        let at = self.sorted.partition_point(|s| s.0 <= addr);
        let Some(&(start, from, to)) = at.checked_sub(1).map(|i| &self.sorted[i]) else {
            let _ = write!(out, "0x{addr:x}");
            return;
        };
        let name = self.names.get(from as usize..to as usize).unwrap_or("?");
        let (name, module) = match name.split_once(' ') {
            Some((n, m)) => (n, Some(m)),
            None => (name, None),
        };
        out.push_str(name);
        if offset {
            let size = self.sorted.get(at).map_or(0, |n| n.0 - start);
            let _ = write!(out, "+0x{:x}/0x{size:x}", addr - start);
        }
        if let Some(m) = module {
            out.push(' ');
            out.push_str(m);
        }
    }
}

/// The event's fields' text, where each field lies in it, and its name
/// when it is not the format's: the ftrace `print` event (a `trace_marker`
/// write) is named by its caller, as the text does, and its fields are the
/// written text (no field).
pub fn event(
    format: &EventFormat,
    data: &[u8],
    symbols: &mut Symbols,
) -> Option<(Option<String>, String, Spans)> {
    if format.name == "print"
        && let (Some(ip), Some(buf)) = (format.field("ip"), format.field("buf"))
    {
        let mut name = String::new();
        let addr = int(&format.fields[ip], data)? as u64;
        if symbols.is_empty() {
            name.push_str("tracing_mark_write");
        } else {
            symbols.name(addr, false, &mut name);
        }
        let text = text(&format.fields[buf], data)?;
        return Some((
            Some(name),
            text.trim_end_matches('\n').to_string(),
            Spans::default(),
        ));
    }
    if format.name == "kernel_stack" {
        return Some((None, stack(format, data, symbols)?, Spans::default()));
    }
    // Written in a scratch buffer, then copied at its size: a few dozen
    // bytes per event, not a growing string's capacity.
    let mut out = std::mem::take(&mut symbols.scratch);
    out.clear();
    let mut spans = Spans::default();
    for (key, render) in &format.keys {
        let at = out.len();
        if !out.is_empty() {
            out.push(' ');
        }
        let key_at = out.len();
        out.push_str(key);
        out.push('=');
        if value(format, render, data, symbols, &mut out).is_none() {
            out.truncate(at);
        } else {
            spans.push(key_at, out.len());
        }
    }
    let fields = out.as_str().to_owned();
    symbols.scratch = out;
    Some((None, fields, spans))
}

/// A `stacktrace` trigger's record (`size` return addresses from `caller`,
/// innermost first) as the fields the text reader folds the kernel's
/// `<stack trace>` lines into: ` => name` each. Addresses `/proc/kallsyms`
/// hides (`kptr_restrict`) are shown as `?`, never raw.
fn stack(format: &EventFormat, data: &[u8], symbols: &mut Symbols) -> Option<String> {
    let size = int(&format.fields[format.field("size")?], data)?;
    let caller = &format.fields[format.field("caller")?];
    // `unsigned long caller[8]`: the word size is the kernel's.
    let word = match caller.size {
        32 => 4,
        _ => 8,
    };
    let count = usize::try_from(size).ok()?.min(MAX_FRAMES);
    let mut out = String::new();
    for i in 0..count {
        let at = caller.offset.checked_add(i.checked_mul(word)?)?;
        let Some(addr) = uint_at(data, at, word) else {
            break;
        };
        if addr == 0 || addr == u64::MAX {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str("=> ");
        if symbols.is_empty() {
            out.push('?');
        } else {
            symbols.name(addr, false, &mut out);
        }
    }
    Some(out)
}

/// Most frames read from one kernel stack (the kernel keeps fewer).
pub const MAX_FRAMES: usize = 64;

/// Appends one value. None when the record does not hold it, or the text
/// shows what the record cannot (a string behind a kernel pointer).
fn value(
    format: &EventFormat,
    render: &Render,
    data: &[u8],
    symbols: &mut Symbols,
    out: &mut String,
) -> Option<()> {
    let field = &format.fields[render.field()];
    match render {
        Render::Number {
            hex: false, pad: 0, ..
        } => {
            out.push_str(itoa::Buffer::new().format(int(field, data)?));
        }
        Render::Number {
            hex: false, pad, ..
        } => {
            let _ = write!(out, "{:0pad$}", int(field, data)?);
        }
        Render::Number { hex: true, pad, .. } => {
            let _ = write!(out, "{:0pad$x}", int(field, data)? as u64);
        }
        Render::Text { .. } => push_text(out, text_bytes(field, data)?),
        Render::Symbolic { table, .. } => {
            let v = int(field, data)?;
            match table.iter().find(|(k, _)| *k as i64 == v) {
                Some((_, name)) => out.push_str(name),
                None => {
                    let _ = write!(out, "{v}");
                }
            }
        }
        Render::Choice { set, unset, .. } => {
            out.push_str(if int(field, data)? != 0 { set } else { unset });
        }
        Render::TaskState { flags, .. } => task_state(int(field, data)? as u64, flags, out),
        Render::Symbol { offset, .. } => symbols.name(int(field, data)? as u64, *offset, out),
        Render::Pointer { .. } => {
            let _ = write!(out, "{:016x}", int(field, data)? as u64);
        }
        Render::Bitmask { .. } => bitmask(dynamic(field, data)?, out),
    }
    Some(())
}

/// An integer field, sign-extended when signed. None for other storage.
pub(super) fn int(field: &Field, data: &[u8]) -> Option<i64> {
    let Storage::Int { signed } = field.storage else {
        return None;
    };
    let v = uint_at(data, field.offset, field.size)?;
    let bits = field.size as u32 * 8;
    Some(if signed && bits < 64 {
        ((v << (64 - bits)) as i64) >> (64 - bits)
    } else {
        v as i64
    })
}

/// A text field's bytes, up to its first NUL.
fn text_bytes<'a>(field: &Field, data: &'a [u8]) -> Option<&'a [u8]> {
    let bytes = match field.storage {
        Storage::Chars => data.get(field.offset..field.offset.checked_add(field.size)?)?,
        Storage::Tail => data.get(field.offset..)?,
        Storage::Dynamic { .. } => dynamic(field, data)?,
        Storage::Int { .. } => return None,
    };
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    Some(&bytes[..end])
}

/// A text field, up to its first NUL.
fn text(field: &Field, data: &[u8]) -> Option<String> {
    Some(String::from_utf8_lossy(text_bytes(field, data)?).into_owned())
}

/// Appends text bytes as the text reader reads them: bytes that are not
/// UTF-8 and ASCII control characters as `?`, one each.
fn push_text(out: &mut String, bytes: &[u8]) {
    out.push_str(&rtlab_core::text::ascii_controls_shown(
        &rtlab_core::text::lossy(bytes),
    ));
}

/// The bytes of a `__data_loc`/`__rel_loc` field.
fn dynamic<'a>(field: &Field, data: &'a [u8]) -> Option<&'a [u8]> {
    let Storage::Dynamic { relative } = field.storage else {
        return None;
    };
    let word = uint_at(data, field.offset, 4)?;
    let (mut offset, len) = ((word & 0xffff) as usize, (word >> 16) as usize);
    if relative {
        offset = offset.checked_add(field.offset)?.checked_add(field.size)?;
    }
    data.get(offset..offset.checked_add(len)?)
}

/// `prev_state`: the letters of its flags joined by `|`, `R` when none is
/// set, then `+` when the preempted bit (just above the flags) is.
pub(super) fn task_state(state: u64, flags: &[(u64, String)], out: &mut String) {
    let top = flags.iter().map(|f| f.0).max().unwrap_or(0);
    let preempted = top.checked_mul(2).unwrap_or(0).max(1);
    let mask = preempted - 1;
    let set: Vec<&str> = flags
        .iter()
        .filter(|(bit, _)| state & mask & bit != 0)
        .map(|(_, name)| name.as_str())
        .collect();
    if set.is_empty() {
        out.push('R');
    } else {
        out.push_str(&set.join("|"));
    }
    if state & preempted != 0 {
        out.push('+');
    }
}

/// A bitmap as the kernel's `%*pb`: 32-bit hex chunks, most significant
/// first, joined by commas.
pub(super) fn bitmask(bytes: &[u8], out: &mut String) {
    let chunks: Vec<u32> = bytes
        .chunks(4)
        .map(|c| {
            let mut w = [0u8; 4];
            w[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(w)
        })
        .collect();
    for (i, c) in chunks.iter().rev().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{c:08x}");
    }
}

/// The task names a record carries: `(prev_pid, prev_comm)`,
/// `(next_pid, next_comm)`, `(pid, comm)`, as bytes (no copy).
pub fn comms<'a>(
    format: &'a EventFormat,
    data: &'a [u8],
) -> impl Iterator<Item = (i32, &'a [u8])> + 'a {
    format.comm_pairs.iter().filter_map(move |&(p, c)| {
        let pid = int(&format.fields[p], data)? as i32;
        let field = &format.fields[c];
        let bytes = data.get(field.offset..field.offset.checked_add(field.size)?)?;
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Some((pid, &bytes[..end]))
    })
}

//! Where a consumed trace's events come from: the binary per-CPU pages
//! (`trace_pipe_raw`, decoded by [`crate::trace::rawtrace`]), or the kernel's
//! text (`trace_pipe`) where the pages cannot be had or decoded. Both give
//! the same [`Event`]s, in time order across CPUs.
//!
//! `RTLAB_TRACE_READER=text` forces the text reader (to compare the two).

use crate::sys::SysRoot;
use crate::sys::trace::{self, Instance, Pipe, RawPipes};
use crate::trace::event::Event;
use crate::trace::fields;
use crate::trace::rawtrace::{Decoder, Symbols};
use crate::trace::text;

/// Events newer than this (ns before the read began) wait for the next
/// read: another CPU may not have committed its events of that moment yet.
const HOLD_NS: u64 = 2_000_000;
/// A line longer than this is not an event: it is dropped.
const MAX_LINE: usize = 4096;
/// Most decoded events held back: past it the oldest go (a trace clock
/// that is not CLOCK_MONOTONIC would hold everything).
const MAX_HELD: usize = 1 << 20;

/// Which reader a source uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// The binary pages.
    Raw,
    /// The kernel's text.
    Text,
}

/// A consumed trace of an instance.
pub enum Source {
    /// Binary pages: the pipes, their decoder, and decoded events held
    /// back until every CPU has committed past them.
    Raw {
        /// One pipe per CPU.
        pipes: RawPipes,
        /// The decoder.
        decoder: Box<Decoder>,
        /// Decoded, not yet given.
        held: Vec<Event>,
        /// The read buffer, kept from read to read.
        buf: Vec<u8>,
    },
    /// The text pipe.
    Text {
        /// The pipe.
        pipe: Pipe,
        /// Bytes read and not yet parsed (after the last whole line).
        buf: Vec<u8>,
        /// `[LOST N EVENTS]` lines.
        lost: u64,
    },
}

impl Source {
    /// The binary pages of `cpus` where they can be read and decoded,
    /// else the text pipe. `events` are the instance's tracepoints.
    pub fn open(
        root: &SysRoot,
        instance: &Instance,
        cpus: &[usize],
        events: &[&'static str],
    ) -> Result<Source, trace::TraceError> {
        let forced_text = std::env::var("RTLAB_TRACE_READER").is_ok_and(|v| v == "text");
        if !forced_text {
            match Self::raw(root, instance, cpus, events, &[]) {
                Ok(raw) => return Ok(raw),
                Err(why) => crate::messages::debug(1, &format!("trace read as text: {why}")),
            }
        }
        Ok(Source::Text {
            pipe: instance.pipe()?,
            buf: Vec::new(),
            lost: 0,
        })
    }

    pub(crate) fn raw(
        root: &SysRoot,
        instance: &Instance,
        cpus: &[usize],
        events: &[&'static str],
        extra: &[String],
    ) -> Result<Source, String> {
        let all: Vec<&str> = events
            .iter()
            .copied()
            .chain(extra.iter().map(String::as_str))
            .collect();
        let formats = instance.formats(&all).map_err(|e| e.to_string())?;
        // Addresses are named as the text names them: by the kernel's
        // symbols (read once; hidden addresses give hex).
        let symbols = trace::kallsyms(root)
            .map(|k| Symbols::parse(&k))
            .unwrap_or_default();
        // Without names, the pages' addresses (functions, stacks) could
        // only be shown raw: the kernel's text names them itself.
        if symbols.is_empty() {
            return Err(
                "the kernel hides its addresses in kallsyms (kernel.kptr_restrict): the kernel's \
                 text, which names them itself, is read instead"
                    .into(),
            );
        }
        let mut decoder = Decoder::new(&formats.header_page, &formats.events, symbols, events)
            .ok_or("the page layout (events/header_page) is not one rtlab reads")?;
        decoder.learn_comms(&instance.saved_cmdlines());
        let pipes = instance.raw_pipes(cpus).map_err(|e| e.to_string())?;
        Ok(Source::Raw {
            pipes,
            decoder: Box::new(decoder),
            held: Vec::new(),
            buf: Vec::new(),
        })
    }

    /// Which reader this is.
    pub fn reader(&self) -> Reader {
        match self {
            Source::Raw { .. } => Reader::Raw,
            Source::Text { .. } => Reader::Text,
        }
    }

    /// Events the reader saw reported lost (the pages' headers, the
    /// text's `[LOST]` lines).
    pub fn lost(&self) -> u64 {
        match self {
            Source::Raw { decoder, .. } => decoder.missed,
            Source::Text { lost, .. } => *lost,
        }
    }

    /// Reads what the kernel holds now, at most `max` bytes per CPU, and
    /// gives the events in time order to `feed`. `last`: the tracing has
    /// stopped, nothing is held back.
    pub fn read(&mut self, max: usize, last: bool, mut feed: impl FnMut(&Event)) {
        match self {
            Source::Raw {
                pipes,
                decoder,
                held,
                buf,
            } => {
                let began = crate::sys::os::monotonic_ns();
                for (index, cpu) in pipes.cpus().into_iter().enumerate() {
                    buf.clear();
                    if pipes.read_into(index, buf, max).is_ok() {
                        decoder.pages(cpu, buf, held);
                    }
                }
                held.sort_by_key(|e| e.ts_ns);
                let ready = if last {
                    held.len()
                } else {
                    let until = began.saturating_sub(HOLD_NS);
                    let ready = held.partition_point(|e| e.ts_ns < until);
                    ready.max(held.len().saturating_sub(MAX_HELD))
                };
                for e in held.drain(..ready) {
                    feed(&e);
                }
            }
            Source::Text { pipe, buf, lost } => {
                if pipe.read_into(buf, max).is_ok() {
                    let whole = buf.iter().rposition(|&b| b == b'\n').map_or(0, |n| n + 1);
                    let text = rtlab_core::text::lossy(&buf[..whole]);
                    // An event whose task's name holds a line feed may
                    // still miss its last pieces: kept for the next read.
                    let (lines, complete) = fields::event_lines(&text);
                    let held = match lines.last() {
                        Some(l) if !complete && !last => l.len() + 1,
                        _ => 0,
                    };
                    let used = whole.saturating_sub(held);
                    let lines = &lines[..lines.len() - usize::from(held > 0)];
                    for line in lines {
                        text_line(line, lost, &mut feed);
                    }
                    buf.drain(..used);
                    if buf.len() > MAX_LINE {
                        buf.clear();
                    }
                }
            }
        }
    }
}

/// One event of the text pipe: an event, or a `CPU:1 [LOST 123 EVENTS]`.
fn text_line(text: &str, lost: &mut u64, feed: &mut impl FnMut(&Event)) {
    if let Some(n) = text
        .strip_prefix("CPU:")
        .and_then(|t| t.split_once(" [LOST "))
        .and_then(|(_, r)| r.split_whitespace().next())
        .and_then(|n| n.parse::<u64>().ok())
    {
        *lost = lost.saturating_add(n);
        return;
    }
    if let Some(e) = text::line(text) {
        feed(&e);
    }
}

/// Appends event `e` as the kernel's text shows it, one line: a task may
/// name itself with a line break (and forge a marker line with it), which
/// is shown as `?`; the name right-aligned in 16 columns, as the kernel
/// writes it, so that the text reader takes the name from there, whatever
/// it holds.
fn kernel_line(e: &Event, out: &mut String) {
    use std::fmt::Write;
    let one = |s: &str| s.replace(['\n', '\r'], "?");
    let mut comm = one(&e.comm);
    let mut cut = comm.len().min(16);
    while !comm.is_char_boundary(cut) {
        cut -= 1;
    }
    comm.truncate(cut);
    let _ = writeln!(
        out,
        "{:>16}-{} [{:03}] ..... {}.{:09}: {}: {}",
        Padded(&comm),
        e.pid,
        e.cpu,
        e.ts_ns / 1_000_000_000,
        e.ts_ns % 1_000_000_000,
        e.name,
        one(&e.fields)
    );
}

/// A name padded to its width in bytes, as the kernel's `%16s` does (a
/// `char` count would put a name of multi-byte letters out of its
/// columns).
struct Padded<'a>(&'a str);

impl std::fmt::Display for Padded<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let width = f.width().unwrap_or(0);
        for _ in self.0.len()..width {
            f.write_str(" ")?;
        }
        f.write_str(self.0)
    }
}

/// A CPU's recent events as the flight recorder reads them: its binary
/// pages consumed at each read and decoded, kept as the kernel's text
/// lines (ns timestamps), at most `max_bytes` (the oldest go first). The
/// text reader's `per_cpu/cpuN/trace` formatted the whole buffer at every
/// read; this formats only what came since the last.
pub struct Tails {
    pipes: RawPipes,
    decoder: Box<Decoder>,
    /// Per CPU of the pipes: the text kept.
    kept: Vec<String>,
    /// Reused between reads.
    raw: Vec<u8>,
    events: Vec<Event>,
    max_bytes: usize,
}

impl Tails {
    /// The binary pages of `cpus` (an overwrite-mode instance), or why not.
    pub fn open(
        root: &SysRoot,
        instance: &Instance,
        cpus: &[usize],
        events: &[&'static str],
        extra: &[String],
        max_bytes: usize,
    ) -> Result<Tails, String> {
        let Source::Raw { pipes, decoder, .. } = Source::raw(root, instance, cpus, events, extra)?
        else {
            return Err("no binary pages".into());
        };
        Ok(Tails {
            kept: vec![String::new(); cpus.len()],
            pipes,
            decoder,
            raw: Vec::new(),
            events: Vec::new(),
            max_bytes,
        })
    }

    /// CPU `cpu`'s events up to now, as text lines, lent: give them back
    /// with [`Tails::give_back`] (the next read appends to them).
    pub fn read_cpu(&mut self, cpu: usize) -> Result<String, String> {
        let index = self
            .pipes
            .cpus()
            .iter()
            .position(|&c| c == cpu)
            .ok_or_else(|| format!("CPU {cpu} is not traced"))?;
        self.raw.clear();
        self.events.clear();
        self.pipes
            .read_into(index, &mut self.raw, self.max_bytes)
            .map_err(|e| format!("cannot read the binary trace pipe: {e}"))?;
        self.decoder.pages(cpu, &self.raw, &mut self.events);
        let kept = &mut self.kept[index];
        for e in &self.events {
            kernel_line(e, kept);
        }
        if let Some(cut) = kept.len().checked_sub(self.max_bytes).filter(|c| *c > 0) {
            let at = kept[cut..].find('\n').map_or(kept.len(), |n| cut + n + 1);
            kept.drain(..at);
        }
        Ok(std::mem::take(kept))
    }

    /// Takes back what [`Tails::read_cpu`] lent.
    pub fn give_back(&mut self, cpu: usize, text: String) {
        if let Some(index) = self.pipes.cpus().iter().position(|&c| c == cpu) {
            self.kept[index] = text;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let back = text::line(line.trim_end()).unwrap_or_else(|| panic!("{line}"));
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
}

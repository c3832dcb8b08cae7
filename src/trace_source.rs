//! Where a consumed trace's events come from: the binary per-CPU pages
//! (`trace_pipe_raw`, decoded by [`crate::rawtrace`]), or the kernel's
//! text (`trace_pipe`) where the pages cannot be had or decoded. Both give
//! the same [`Event`]s, in time order across CPUs.
//!
//! `RTLAB_TRACE_READER=text` forces the text reader (to compare the two).

use crate::explain::parse::{self, Event};
use crate::rawtrace::{Decoder, Symbols};
use crate::sys::SysRoot;
use crate::sys::trace::{self, Instance, Pipe, RawPipes};

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
                    for line in buf[..whole].split(|&b| b == b'\n') {
                        text_line(line, lost, &mut feed);
                    }
                    buf.drain(..whole);
                    if buf.len() > MAX_LINE {
                        buf.clear();
                    }
                }
            }
        }
    }
}

/// One line of the text pipe: an event, or a `CPU:1 [LOST 123 EVENTS]`.
fn text_line(line: &[u8], lost: &mut u64, feed: &mut impl FnMut(&Event)) {
    let Ok(text) = std::str::from_utf8(line) else {
        return;
    };
    if let Some(n) = text
        .strip_prefix("CPU:")
        .and_then(|t| t.split_once(" [LOST "))
        .and_then(|(_, r)| r.split_whitespace().next())
        .and_then(|n| n.parse::<u64>().ok())
    {
        *lost += n;
        return;
    }
    if let Some(e) = parse::line(text) {
        feed(&e);
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
            use std::fmt::Write;
            // One event, one line: a task may name itself with a line
            // break (and forge a marker line with it).
            let one = |s: &str| s.replace(['\n', '\r'], "?");
            let _ = writeln!(
                kept,
                "{}-{} [{:03}] ..... {}.{:09}: {}: {}",
                one(&e.comm),
                e.pid,
                e.cpu,
                e.ts_ns / 1_000_000_000,
                e.ts_ns % 1_000_000_000,
                e.name,
                one(&e.fields)
            );
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

//! Where a consumed trace's events come from: the binary per-CPU pages
//! (`trace_pipe_raw`, decoded by [`crate::trace::rawtrace`]), or the kernel's
//! text (`trace_pipe`) where the pages cannot be had or decoded. Both give
//! the same [`Event`]s, in time order across CPUs.
//!
//! `RTLAB_TRACE_READER=text` forces the text reader (to compare the two).

use crate::sys::SysRoot;
use crate::sys::trace::{self, Instance, Pipe, RAW_PAGE, RawPipes};
use crate::trace::event::{Event, Marker, Recent};
use crate::trace::fields;
use crate::trace::rawtrace::{Decoder, Found, Located, Symbols};
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
            match Self::raw(root, instance, cpus, events, &[], false) {
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
        symbols_later: bool,
    ) -> Result<Source, String> {
        let all: Vec<&str> = events
            .iter()
            .copied()
            .chain(extra.iter().map(String::as_str))
            .collect();
        let formats = instance.formats(&all).map_err(|e| e.to_string())?;
        // Addresses are named as the text names them: by the kernel's
        // symbols (read once; hidden addresses give hex). Later: only
        // whether they are shown is read now.
        let kallsyms = match symbols_later {
            false => trace::kallsyms(root),
            true => trace::kallsyms_head(root),
        };
        let shown = kallsyms.map(|k| Symbols::parse(&k)).unwrap_or_default();
        // Without names, the pages' addresses (functions, stacks) could
        // only be shown raw: the kernel's text names them itself.
        if shown.is_empty() {
            return Err(
                "the kernel hides its addresses in kallsyms (kernel.kptr_restrict): the kernel's \
                 text, which names them itself, is read instead"
                    .into(),
            );
        }
        let symbols = match symbols_later {
            false => shown,
            true => Symbols::default(),
        };
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

/// The flight recorder's CPUs, as their binary pages came: each read
/// consumes the pages written since the last and keeps them (the oldest
/// go first), with every record located (its time, its place) but not
/// decoded, and the trace-marker writes found. A window's records are
/// decoded when it is wanted: a read costs a few dozen nanoseconds per
/// new event, an explanation the events of its window. The text reader's
/// `per_cpu/cpuN/trace` formatted, and rtlab parsed, the whole buffer at
/// every read.
pub struct Tails {
    pipes: RawPipes,
    decoder: Box<Decoder>,
    /// Per CPU of the pipes.
    kept: Vec<CpuPages>,
    /// Reused between reads.
    raw: Vec<u8>,
    /// Most bytes of pages read at once (the buffer's size: more pages
    /// than it holds are newer than the read).
    max_read: usize,
    /// Pages kept per CPU.
    keep_pages: usize,
    /// Where the kernel's symbols are read, the first time a window is
    /// decoded (a run without a late wake-up never reads them: formatting
    /// and indexing them costs 50 to 90 ms).
    symbols_from: Option<SysRoot>,
    /// The CPU time reading and indexing them took (ns; 0 until then).
    pub symbols_ns: u64,
}

/// One CPU's kept pages, their records located, its markers.
#[derive(Default)]
pub struct CpuPages {
    /// The pages, oldest first; `first` numbers the oldest.
    pages: std::collections::VecDeque<Vec<u8>>,
    first: u64,
    /// Every record of the pages, in time order, with its page's number.
    records: std::collections::VecDeque<(u64, Located)>,
    /// The trace-marker writes, with their times.
    markers: std::collections::VecDeque<(u64, Marker)>,
    /// Switches into idle and out of it, since the start.
    idle_switches: (usize, usize),
}

impl Tails {
    /// The binary pages of `cpus` (an overwrite-mode instance), or why
    /// not: reads of at most `max_read` bytes, `keep_pages` pages kept per
    /// CPU.
    pub fn open(
        root: &SysRoot,
        instance: &Instance,
        cpus: &[usize],
        (events, extra): (&[&'static str], &[String]),
        max_read: usize,
        keep_pages: usize,
    ) -> Result<Tails, String> {
        let raw = Source::raw(root, instance, cpus, events, extra, true)?;
        let Source::Raw { pipes, decoder, .. } = raw else {
            return Err("no binary pages".into());
        };
        Ok(Tails {
            symbols_from: Some(root.clone()),
            symbols_ns: 0,
            kept: (0..cpus.len()).map(|_| CpuPages::default()).collect(),
            pipes,
            decoder,
            raw: Vec::new(),
            max_read,
            keep_pages: keep_pages.max(1),
        })
    }

    fn index(&self, cpu: usize) -> Result<usize, String> {
        let cpus = self.pipes.cpus();
        cpus.iter()
            .position(|&c| c == cpu)
            .ok_or_else(|| format!("CPU {cpu} is not traced"))
    }

    /// Consumes the pages CPU `cpu` wrote since the last read and locates
    /// their records: its events up to now are then at hand
    /// ([`Tails::held`]). Ok: how many records came.
    pub fn read_cpu(&mut self, cpu: usize) -> Result<u64, String> {
        let index = self.index(cpu)?;
        let began = crate::sys::os::monotonic_ns();
        let kept = &mut self.kept[index];
        let mut located = Vec::new();
        let mut came = 0;
        // A page at a time, at most the buffer's pages, and no further
        // than the moment the read began: what comes after is the read's
        // own trace (a tracepoint on the reading CPU feeds itself).
        for _ in 0..self.max_read / RAW_PAGE {
            self.raw.clear();
            let read = self.pipes.read_into(index, &mut self.raw, RAW_PAGE);
            let read = read.map_err(|e| format!("cannot read the binary trace pipe: {e}"))?;
            if read == 0 {
                break;
            }
            located.clear();
            let number = kept.first + kept.pages.len() as u64;
            let (markers, idle) = (&mut kept.markers, &mut kept.idle_switches);
            self.decoder
                .locate(cpu, &self.raw, &mut located, |found| match found {
                    Found::Mark(e) => {
                        if let Some(m) = Marker::of(&e) {
                            markers.push_back((e.ts_ns, m));
                        }
                    }
                    Found::Switch { from_idle, to_idle } => {
                        idle.0 += usize::from(to_idle);
                        idle.1 += usize::from(from_idle);
                    }
                });
            came += located.len() as u64;
            kept.records.extend(located.iter().map(|l| (number, *l)));
            kept.pages.push_back(self.raw.clone());
            if located.last().is_none_or(|l| l.ts >= began) {
                break;
            }
        }
        while kept.pages.len() > self.keep_pages {
            kept.pages.pop_front();
            kept.first += 1;
        }
        while kept.records.front().is_some_and(|r| r.0 < kept.first) {
            kept.records.pop_front();
        }
        let oldest = kept.records.front().map_or(u64::MAX, |r| r.1.ts);
        while kept.markers.front().is_some_and(|m| m.0 < oldest) {
            kept.markers.pop_front();
        }
        Ok(came)
    }

    /// CPU `cpu`'s events as its last read left them.
    pub fn held(&mut self, cpu: usize) -> Result<Held<'_>, String> {
        let index = self.index(cpu)?;
        if let Some(root) = self.symbols_from.take() {
            let started = crate::sys::os::thread_cpu_ns();
            let symbols = trace::kallsyms(&root).map(|k| Symbols::parse(&k));
            self.decoder.set_symbols(symbols.unwrap_or_default());
            self.symbols_ns = crate::sys::os::thread_cpu_ns().saturating_sub(started);
        }
        Ok(Held::Pages {
            decoder: &mut self.decoder,
            cpu,
            kept: &self.kept[index],
        })
    }
}

/// One CPU's recent events as a read of the flight recorder holds them:
/// the text reader's whole buffer, parsed, or the binary reader's kept
/// pages, decoded a window at a time.
pub enum Held<'a> {
    /// Parsed events, in time order.
    Parsed(Recent<'a>),
    /// Located records.
    Pages {
        /// The decoder of the window's records.
        decoder: &'a mut Decoder,
        /// The CPU.
        cpu: usize,
        /// Its pages.
        kept: &'a CpuPages,
    },
}

impl Held<'_> {
    /// The times of its oldest and newest events (ns), if it holds any.
    pub fn span(&self) -> Option<(u64, u64)> {
        match self {
            Held::Parsed(r) => r.span(),
            Held::Pages { kept, .. } => {
                Some((kept.records.front()?.1.ts, kept.records.back()?.1.ts))
            }
        }
    }

    /// The late wake-ups marked at or after `since_ns`, oldest first, with
    /// the time of each marker.
    pub fn markers_since(&self, since_ns: u64) -> Vec<(u64, Marker)> {
        match self {
            Held::Parsed(r) => r.markers_since(since_ns).collect(),
            Held::Pages { kept, .. } => {
                let from = kept.markers.partition_point(|m| m.0 < since_ns);
                kept.markers.range(from..).copied().collect()
            }
        }
    }

    /// The events of a wake-up's window (as [`Recent::window_around`]).
    pub fn window_around(
        &mut self,
        deadline_ns: u64,
        lookback_ns: u64,
        to_ns: u64,
        max: usize,
    ) -> std::borrow::Cow<'_, [Event]> {
        match self {
            Held::Parsed(r) => r.window_around(deadline_ns, lookback_ns, to_ns, max).into(),
            Held::Pages { decoder, cpu, kept } => {
                let records = &kept.records;
                let at = |t: u64| records.partition_point(|r| r.1.ts <= t);
                let by_lookback =
                    records.partition_point(|r| r.1.ts < deadline_ns.saturating_sub(lookback_ns));
                let last_before = at(deadline_ns).saturating_sub(1);
                let through = at(to_ns);
                let start = by_lookback
                    .max(through.saturating_sub(max))
                    .min(last_before);
                let end = through.min(start.saturating_add(max)).max(start);
                let mut out = Vec::with_capacity(end - start);
                for (number, at) in records.range(start..end) {
                    let page = number
                        .checked_sub(kept.first)
                        .and_then(|i| kept.pages.get(i as usize));
                    if let Some(e) = page.and_then(|p| decoder.decode_at(*cpu, p, at)) {
                        out.push(e);
                    }
                }
                out.into()
            }
        }
    }

    /// Switches into idle and out of it that the buffer logs (as
    /// [`Recent::idle_switches`]; the binary reader's, since the start).
    pub fn idle_switches(&self) -> (usize, usize) {
        match self {
            Held::Parsed(r) => r.idle_switches(),
            Held::Pages { kept, .. } => kept.idle_switches,
        }
    }
}

//! The binary trace engine: events decoded from the kernel's ring-buffer
//! pages (`per_cpu/cpuN/trace_pipe_raw`) by the instance's `format` files,
//! instead of the text the kernel formats and rtlab parses back. Each
//! decoded event is the same [`Event`] the text reader gives: same name,
//! task, CPU and time, and the same `key=value` for every field the text
//! shows (the fixtures test holds both readers to it).
//!
//! Pure: the system layer hands over the bytes and the files' text.

pub mod format;
pub mod page;
mod render;
#[cfg(test)]
mod tests;

use crate::trace::event::Event;
use format::EventFormat;
use page::PageLayout;
use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// A hasher for PIDs and kernel addresses: one multiplication (the
/// default hasher costs more than the rest of an event's decoding).
#[derive(Default)]
pub(crate) struct PidHasher(u64);

impl Hasher for PidHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_i32(&mut self, v: i32) {
        self.0 = u64::from(v as u32).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    // Addresses (the symbols' names): one multiplication too, its high
    // bits folded down (aligned addresses have no low ones).
    fn write_u64(&mut self, v: u64) {
        let x = (self.0 ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = x ^ (x >> 32);
    }
}

type Pids<V> = HashMap<i32, V, BuildHasherDefault<PidHasher>>;

pub use render::Symbols;

/// The names tasks had, as the trace shows them, bounded.
const MAX_COMMS: usize = 1 << 16;

/// Notes task `pid`'s name (bounded: past [`MAX_COMMS`] the table starts
/// again).
fn remember(comms: &mut Pids<Arc<str>>, pid: i32, comm: &[u8]) {
    if pid <= 0 || comms.get(&pid).is_some_and(|c| c.as_bytes() == comm) {
        return;
    }
    let name = rtlab_core::text::task_name(comm);
    if comms.get(&pid).is_some_and(|c| **c == *name) {
        return;
    }
    if comms.len() >= MAX_COMMS {
        comms.clear();
    }
    comms.insert(pid, name.into());
}

/// A record of a page, located and not decoded: its time and where its
/// bytes lie in the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Located {
    /// The trace clock's time (ns).
    pub ts: u64,
    /// Where its bytes start in the page.
    pub at: u16,
    /// How many.
    pub len: u16,
}

/// What [`Decoder::locate`] tells of the records it locates.
#[derive(Debug)]
pub enum Found {
    /// A trace-marker write, decoded.
    Mark(Event),
    /// A task switch, from idle or to it (or neither).
    Switch {
        /// The task that left is idle.
        from_idle: bool,
        /// The task that came is idle.
        to_idle: bool,
    },
}

/// Decodes pages of one instance into events.
pub struct Decoder {
    layout: PageLayout,
    /// The formats, found by ID (a few dozen: a scan is fastest).
    formats: Vec<EventFormat>,
    symbols: Symbols,
    /// Each task's name, learned from the events that carry it.
    comms: Pids<Arc<str>>,
    /// The events' names, shared by every event of each (by format ID).
    names: Vec<(u16, Cow<'static, str>)>,
    idle: Arc<str>,
    unknown_task: Arc<str>,
    /// Records of no known format, and pages that lied.
    pub unknown: u64,
    /// Events the kernel reported lost, from the pages' headers.
    pub missed: u64,
}

impl Decoder {
    /// A decoder for pages laid out as `header_page` says, of the events
    /// whose `format` files are given. `known` are the events' paths
    /// (`sched/sched_switch`): their names are shared, not copied, by the
    /// decoded events.
    pub fn new(
        header_page: &str,
        formats: &[String],
        symbols: Symbols,
        known: &[&'static str],
    ) -> Option<Decoder> {
        let layout = PageLayout::parse(header_page)?;
        let formats: Vec<EventFormat> = formats
            .iter()
            .filter_map(|f| EventFormat::parse(f))
            .collect();
        let names = formats
            .iter()
            .map(|f| {
                let known = known
                    .iter()
                    .filter_map(|k| k.rsplit('/').next())
                    .find(|k| *k == f.name);
                (
                    f.id,
                    known.map_or_else(|| Cow::Owned(f.name.clone()), Cow::Borrowed),
                )
            })
            .collect();
        Some(Decoder {
            layout,
            formats,
            symbols,
            comms: Pids::default(),
            names,
            idle: "<idle>".into(),
            unknown_task: crate::trace::event::UNKNOWN_TASK.into(),
            unknown: 0,
            missed: 0,
        })
    }

    /// Seeds task names (`saved_cmdlines`: `PID COMM` lines).
    pub fn learn_comms(&mut self, saved_cmdlines: &str) {
        for line in saved_cmdlines.lines() {
            if let Some((pid, comm)) = line.split_once(' ')
                && let Ok(pid) = pid.parse()
            {
                self.remember(pid, comm);
            }
        }
    }

    fn remember(&mut self, pid: i32, comm: &str) {
        remember(&mut self.comms, pid, comm.as_bytes());
    }

    /// Names addresses by `symbols` from now on (a table read when first
    /// needed).
    pub fn set_symbols(&mut self, symbols: Symbols) {
        self.symbols = symbols;
    }

    /// The name task `pid` has had in the events decoded so far.
    pub fn comm(&self, pid: i32) -> Option<&Arc<str>> {
        self.comms.get(&pid)
    }

    /// The page size of these pages (header and data).
    pub fn page_size(&self) -> usize {
        4096
    }

    /// Decodes one page of CPU `cpu`, appending its events to `out`.
    pub fn page(&mut self, cpu: usize, bytes: &[u8], out: &mut Vec<Event>) {
        let (head, records) = page::records(&self.layout, bytes);
        self.missed = self.missed.saturating_add(head.missed.unwrap_or(0));
        for r in records {
            match self.record(cpu, r) {
                Some(e) => out.push(e),
                None => self.unknown = self.unknown.saturating_add(1),
            }
        }
    }

    /// The records of one page, each located (its time, where it lies),
    /// not decoded: what the flight recorder keeps until a window is
    /// wanted. The task names the records carry are learnt and the events
    /// lost before the page counted, as decoding would; each trace-marker
    /// write is decoded and given to `found`, and each switch into or out
    /// of idle told (read from its PIDs alone).
    pub fn locate(
        &mut self,
        cpu: usize,
        bytes: &[u8],
        out: &mut Vec<Located>,
        mut found: impl FnMut(Found),
    ) {
        let (head, records) = page::records(&self.layout, bytes);
        self.missed = self.missed.saturating_add(head.missed.unwrap_or(0));
        for r in records {
            let (Ok(at), Ok(len)) = (u16::try_from(r.at), u16::try_from(r.data.len())) else {
                continue;
            };
            let id = page::uint_at(r.data, 0, 2).map(|id| id as u16);
            let Some(format) = id.and_then(|id| self.formats.iter().find(|f| f.id == id)) else {
                self.unknown = self.unknown.saturating_add(1);
                continue;
            };
            match format.name.as_str() {
                "print" => {
                    if let Some(e) = self.record(cpu, r) {
                        found(Found::Mark(e));
                    }
                }
                name => {
                    if name == "sched_switch" {
                        let pid = |key: &str| {
                            let field = &format.fields[format.field(key)?];
                            render::int(field, r.data)
                        };
                        if let (Some(prev), Some(next)) = (pid("prev_pid"), pid("next_pid")) {
                            found(Found::Switch {
                                from_idle: prev == 0,
                                to_idle: next == 0,
                            });
                        }
                    }
                    for (p, c) in render::comms(format, r.data) {
                        remember(&mut self.comms, p, c);
                    }
                }
            }
            out.push(Located { ts: r.ts, at, len });
        }
    }

    /// The record `at` locates in `page` (where [`Decoder::locate`] found
    /// it), decoded; None (counted unknown) if it is not one.
    pub fn decode_at(&mut self, cpu: usize, page: &[u8], at: &Located) -> Option<Event> {
        let start = usize::from(at.at);
        let data = page.get(start..start + usize::from(at.len));
        let e = data.and_then(|data| {
            let r = page::Record {
                ts: at.ts,
                data,
                at: start,
            };
            self.record(cpu, r)
        });
        if e.is_none() {
            self.unknown = self.unknown.saturating_add(1);
        }
        e
    }

    /// Decodes a run of whole pages (what `trace_pipe_raw` reads give).
    pub fn pages(&mut self, cpu: usize, bytes: &[u8], out: &mut Vec<Event>) {
        // About one event per 35 bytes of pages: grown once.
        out.reserve(bytes.len() / 32);
        for chunk in bytes.chunks(self.page_size()) {
            self.page(cpu, chunk, out);
        }
    }

    fn record(&mut self, cpu: usize, r: page::Record) -> Option<Event> {
        let id = page::uint_at(r.data, 0, 2)? as u16;
        let format = self.formats.iter().find(|f| f.id == id)?;
        let pid = page::uint_at(r.data, 4, 4)? as u32 as i32;
        let (name, fields, spans) = render::event(format, r.data, &mut self.symbols)?;
        for (p, c) in render::comms(format, r.data) {
            remember(&mut self.comms, p, c);
        }
        let comm = match pid {
            0 => self.idle.clone(),
            p => self.comms.get(&p).unwrap_or(&self.unknown_task).clone(),
        };
        let name = match name {
            Some(own) => Cow::Owned(own),
            None => self
                .names
                .iter()
                .find(|n| n.0 == id)
                .map_or(Cow::Borrowed("?"), |n| n.1.clone()),
        };
        Some(Event {
            comm,
            pid,
            cpu,
            ts_ns: r.ts,
            name,
            fields,
            spans,
        })
    }
}

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

use crate::explain::parse::Event;
use format::EventFormat;
use page::PageLayout;
use std::collections::HashMap;

pub use render::Symbols;

/// The names tasks had, as the trace shows them, bounded.
const MAX_COMMS: usize = 1 << 16;

/// Decodes pages of one instance into events.
pub struct Decoder {
    layout: PageLayout,
    formats: HashMap<u16, EventFormat>,
    symbols: Symbols,
    /// Each task's name, learned from the events that carry it.
    comms: HashMap<i32, String>,
    /// Records of no known format, and pages that lied.
    pub unknown: u64,
    /// Events the kernel reported lost, from the pages' headers.
    pub missed: u64,
}

impl Decoder {
    /// A decoder for pages laid out as `header_page` says, of the events
    /// whose `format` files are given.
    pub fn new(header_page: &str, formats: &[String], symbols: Symbols) -> Option<Decoder> {
        let layout = PageLayout::parse(header_page)?;
        let formats = formats
            .iter()
            .filter_map(|f| EventFormat::parse(f))
            .map(|f| (f.id, f))
            .collect();
        Some(Decoder {
            layout,
            formats,
            symbols,
            comms: HashMap::new(),
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
        if pid <= 0 || self.comms.get(&pid).is_some_and(|c| c == comm) {
            return;
        }
        if self.comms.len() >= MAX_COMMS {
            self.comms.clear();
        }
        self.comms.insert(pid, comm.to_string());
    }

    /// The page size of these pages (header and data).
    pub fn page_size(&self) -> usize {
        4096
    }

    /// Decodes one page of CPU `cpu`, appending its events to `out`.
    pub fn page(&mut self, cpu: usize, bytes: &[u8], out: &mut Vec<Event>) {
        let (head, records) = page::records(&self.layout, bytes);
        self.missed += head.missed.unwrap_or(0);
        for r in records {
            match self.record(cpu, r) {
                Some(e) => out.push(e),
                None => self.unknown += 1,
            }
        }
    }

    /// Decodes a run of whole pages (what `trace_pipe_raw` reads give).
    pub fn pages(&mut self, cpu: usize, bytes: &[u8], out: &mut Vec<Event>) {
        for chunk in bytes.chunks(self.page_size()) {
            self.page(cpu, chunk, out);
        }
    }

    fn record(&mut self, cpu: usize, r: page::Record) -> Option<Event> {
        let id = page::uint_at(r.data, 0, 2)? as u16;
        let format = self.formats.get(&id)?;
        let pid = page::uint_at(r.data, 4, 4)? as u32 as i32;
        let (name, fields) = render::event(format, r.data, &self.symbols)?;
        let learned = render::comms(format, r.data);
        for (p, c) in learned {
            self.remember(p, &c);
        }
        let comm = match pid {
            0 => "<idle>".to_string(),
            p => self
                .comms
                .get(&p)
                .cloned()
                .unwrap_or_else(|| "<...>".into()),
        };
        Some(Event {
            comm,
            pid,
            cpu,
            ts_ns: r.ts,
            name,
            fields,
        })
    }
}

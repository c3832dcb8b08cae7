//! `rtlab trace-readers`: one trace buffer of this machine read both ways,
//! as the kernel's text (`per_cpu/cpuN/trace`, what the flight recorder
//! read before) and as its binary pages (`trace_pipe_raw`, decoded by the
//! instance's format files), timed and compared event by event, then by
//! what rtlab makes of them (the audit's rows, the explanations' parts:
//! the names a reader gives reach the user there). The
//! benchmark of the binary trace engine (`bench/trace_readers.py`) and its
//! check on whatever kernel runs it. Hidden: a developer's tool.

use super::{Outcome, Refusal};
use crate::sys::journal::{self, Journal, Owner};
use crate::sys::trace::{self, Instance, Recording};
use crate::sys::{SysRoot, os};
use crate::trace::rawtrace::{Decoder, Symbols};
use crate::trace::text;
use clap::Args;
use serde::Serialize;
use std::time::Instant;

mod outputs;

/// `rtlab trace-readers`.
#[derive(Debug, Args)]
pub struct TraceReadersArgs {
    /// Ring buffer per CPU (KiB).
    #[arg(long, default_value_t = 2048)]
    pub buffer_kb: u64,
    /// How long to record (ms) before reading; a thread of rtlab sleeps
    /// and wakes meanwhile, so that the buffer fills.
    #[arg(long, default_value_t = 1000)]
    pub record_ms: u64,
    /// How many times to record and read.
    #[arg(long, default_value_t = 1)]
    pub rounds: u32,
}

/// One CPU's buffer read both ways.
#[derive(Debug, Serialize)]
struct CpuReading {
    /// The round (0: the first, with the binary reader's buffers cold).
    round: u32,
    cpu: usize,
    text_bytes: usize,
    text_events: usize,
    text_ns: u64,
    raw_bytes: usize,
    raw_events: usize,
    raw_ns: u64,
    /// Of `raw_ns`, the reads alone (the rest is decoding).
    raw_read_ns: u64,
    /// Events whose time, task, name or a field differ (the first few),
    /// then the audit's rows and the explanations' parts that differ.
    differences: Vec<String>,
    compared_fields: usize,
    /// The audit's rows compared (its sources on this CPU).
    audit_rows: usize,
    /// The explanations compared (the sleeper's wake-ups on this CPU).
    windows: usize,
}

/// `rtlab trace-readers`: exit 0 when both readers agree on every CPU.
pub fn main(args: &TraceReadersArgs) -> Outcome {
    if os::geteuid() != 0 {
        return Err(Refusal::new(
            "rtlab: trace-readers needs root (it makes a tracefs instance)",
        ));
    }
    let root = SysRoot::real();
    let cpus = crate::sys::online_cpus(&root).map(|c| c.len()).unwrap_or(1) as u64;
    let asked = args.buffer_kb.saturating_mul(cpus);
    if let Some(available) = crate::sys::memory::available_kib(&root)
        && asked > available / crate::plan::TRACE_MEMORY_SHARE
    {
        return Err(Refusal::new(format!(
            "rtlab: --buffer-kb {} × {cpus} CPUs is {asked} KiB, more than {} KiB, a quarter of the {available} KiB available",
            args.buffer_kb,
            available / crate::plan::TRACE_MEMORY_SHARE
        ))
        .hint("give a smaller --buffer-kb"));
    }
    let dir = journal::default_dir();
    // What a run that died left (its trace instances among it) goes first.
    let _said = crate::run::recover_dead_runs(&root, &dir);
    let name = format!("run-{}.journal", os::getpid());
    let mut journal = Journal::open(&root, &dir, &name, Owner::Run)
        .map_err(|e| Refusal::new(format!("rtlab: {e}")))?;
    let result = readings(&root, &mut journal, args);
    let undone = journal.replay_and_close();
    for l in undone.lines() {
        errln!("rtlab: {l}");
    }
    let r =
        result.map_err(|e| Refusal::new(format!("rtlab: {e}")).status(crate::exit::UNAVAILABLE))?;
    outln!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
    Ok(i32::from(r.iter().any(|c| {
        !c.differences.is_empty() || c.text_events != c.raw_events
    })))
}

fn readings(
    root: &SysRoot,
    journal: &mut Journal,
    args: &TraceReadersArgs,
) -> Result<Vec<CpuReading>, String> {
    let cpus = crate::sys::online_cpus(root).map_err(|e| e.to_string())?;
    let tracefs = trace::mount(root, journal).map_err(|e| e.to_string())?;
    let instance = Instance::create(root, journal, &tracefs, "").map_err(|e| e.to_string())?;
    let recording = Recording {
        cpus: cpus.clone(),
        buffer_kb: args.buffer_kb,
        overwrite: true,
        events: crate::trace::explain::tracepoint_names(),
        extra: Vec::new(),
    };
    let formats = instance
        .formats(&crate::trace::explain::tracepoint_names())
        .map_err(|e| e.to_string())?;
    let symbols = Symbols::parse(&trace::kallsyms(root).unwrap_or_default());
    let mut decoder = Decoder::new(
        &formats.header_page,
        &formats.events,
        symbols,
        &crate::trace::explain::tracepoint_names(),
    )
    .ok_or("the page layout (events/header_page) is not one rtlab reads")?;
    let mut pipes = instance.raw_pipes(&cpus).map_err(|e| e.to_string())?;
    // The binary reader's buffers are kept from read to read, as the
    // stream keeps them: only the first read pays for their pages.
    let (mut raw, mut raw_events) = (Vec::new(), Vec::new());
    let mut out = Vec::new();
    for round in 0..args.rounds.max(1) {
        instance.start(&recording).map_err(|e| e.to_string())?;
        busy_sleeper(args.record_ms);
        instance.stop();
        decoder.learn_comms(&instance.saved_cmdlines());
        for (index, &cpu) in cpus.iter().enumerate() {
            // The text first: reading it consumes nothing.
            let started = Instant::now();
            let text = instance
                .read_cpu(cpu, usize::MAX)
                .map_err(|e| e.to_string())?;
            let text_events: Vec<crate::trace::event::Event> =
                crate::trace::fields::event_lines(&text)
                    .0
                    .into_iter()
                    .filter_map(text::line)
                    .collect();
            let text_ns = started.elapsed().as_nanos() as u64;
            raw.clear();
            raw_events.clear();
            let started = Instant::now();
            pipes
                .read_into(index, &mut raw, usize::MAX / 2)
                .map_err(|e| e.to_string())?;
            let raw_read_ns = started.elapsed().as_nanos() as u64;
            decoder.pages(cpu, &raw, &mut raw_events);
            let raw_ns = started.elapsed().as_nanos() as u64;
            let (mut differences, compared_fields) = compare(&text_events, &raw_events);
            let (audit_rows, audits) = outputs::audits(cpu, &text_events, &raw_events);
            let (windows, explained) =
                outputs::explanations(os::gettid(), &text_events, &raw_events);
            differences.extend(audits.into_iter().chain(explained).take(10));
            out.push(CpuReading {
                round,
                cpu,
                text_bytes: text.len(),
                text_events: text_events.len(),
                text_ns,
                raw_bytes: raw.len(),
                raw_events: raw_events.len(),
                raw_ns,
                raw_read_ns,
                differences,
                compared_fields,
                audit_rows,
                windows,
            });
        }
    }
    Ok(out)
}

/// Sleeps and wakes for `ms` (50 µs naps): scheduler and timer events on
/// every CPU it runs on.
fn busy_sleeper(ms: u64) {
    let end = Instant::now() + std::time::Duration::from_millis(ms);
    while Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
}

/// The events of the two readers side by side: the same name, task, CPU
/// and time (µs, as the text shows it), and the same value of every field
/// the text shows that the pages can (not the hashed `%p` pointers, nor
/// strings behind kernel pointers). Task names may differ when a task was
/// renamed (exec) between the event and the text's reading.
fn compare(
    text: &[crate::trace::event::Event],
    raw: &[crate::trace::event::Event],
) -> (Vec<String>, usize) {
    let mut differences = Vec::new();
    let mut compared = 0;
    if text.len() != raw.len() {
        differences.push(format!(
            "{} events as text, {} from the pages",
            text.len(),
            raw.len()
        ));
    }
    for (t, r) in text.iter().zip(raw) {
        let same = (r.ts_ns + 500) / 1000 == t.ts_ns / 1000
            && (t.cpu, t.pid, &t.name) == (r.cpu, r.pid, &r.name);
        let mut bad = (!same).then(|| "time, task or name".to_string());
        for (key, value) in r.pairs() {
            if hashed(&t.name, key) {
                continue;
            }
            if let Some(want) = t.field(key) {
                compared += 1;
                if want != value && bad.is_none() {
                    bad = Some(format!("{key}={value}, the text says {want}"));
                }
            }
        }
        if t.name == "tracing_mark_write" && t.fields != r.fields {
            bad = Some("the marker's text".into());
        }
        if let Some(why) = bad
            && differences.len() < 10
        {
            differences.push(format!(
                "{why}: text `{} {}` pages `{} {}`",
                t.name, t.fields, r.name, r.fields
            ));
        }
    }
    (differences, compared)
}

/// Fields the text shows hashed (`%p`) or by constants' names the format
/// file does not give (`hrtimer_start`'s `mode`).
fn hashed(event: &str, key: &str) -> bool {
    matches!(key, "hrtimer" | "work") || (event == "hrtimer_start" && key == "mode")
}

//! rtlab's windows file (`rtlab monitor --windows`): all its windows, or
//! the one chosen with `FILE@N` (the N-th window, from 1), as a run whose
//! threads hold the summed bucket counts. Its percentiles are the upper
//! bounds of the buckets they fall in (2, 5, 10, 20... µs): coarse, and
//! said so; min, mean and deviation are not known.
//!
//! Read in one pass, each line typed as it comes (no JSON value tree), in
//! memory bounded whatever the file: the sums are exact over every window,
//! and each thread keeps at most [`MAX_COLUMNS`] windows for the long-term
//! plot (past that, neighbours are merged in pairs: the plot's columns get
//! wider, never wrong).

use super::{Context, Details, Distribution, Format, ParseError, Run, Stats, Thread};
use crate::monitor::windows::{self, Window};
use std::collections::HashMap;
use std::path::Path;

/// Windows kept per thread for the long-term plot.
pub const MAX_COLUMNS: usize = 2048;

/// Seconds since the epoch of an RFC 3339 time (0 when it is not one).
fn start_s(text: &str) -> f64 {
    humantime::parse_rfc3339(text)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Whether `text` is a windows file: its first line parses as the header
/// of the windows schema (however it is spaced).
pub(super) fn looks_like(text: &str) -> bool {
    windows::header(text).is_some()
}

/// One plot column: (from, to) in seconds since the thread's first
/// window, counts per bucket, largest latency.
type Column = (f64, f64, Vec<u64>, Option<u64>);

/// One thread's windows, summed as they are read.
struct Acc {
    name: String,
    cpu: Option<usize>,
    /// Windows of this thread seen so far (taken or not).
    seen: usize,
    counts: Vec<u64>,
    max_ns: Option<u64>,
    seconds: f64,
    origin: Option<f64>,
    first_start: Option<String>,
    columns: Vec<Column>,
    /// Windows per column now, and the column being filled.
    per_column: usize,
    filling: Option<(Column, usize)>,
}

fn merge(a: &mut Column, b: &Column) {
    a.0 = a.0.min(b.0);
    a.1 = a.1.max(b.1);
    for (x, y) in a.2.iter_mut().zip(&b.2) {
        *x = x.saturating_add(*y);
    }
    a.3 = a.3.max(b.3);
}

impl Acc {
    fn new(name: String, cpu: Option<usize>, buckets: usize) -> Acc {
        Acc {
            name,
            cpu,
            seen: 0,
            counts: vec![0; buckets],
            max_ns: None,
            seconds: 0.0,
            origin: None,
            first_start: None,
            columns: Vec::new(),
            per_column: 1,
            filling: None,
        }
    }

    fn take(&mut self, w: Window) {
        for (c, n) in self.counts.iter_mut().zip(&w.counts) {
            *c = c.saturating_add(*n);
        }
        self.max_ns = self.max_ns.max(w.max_ns);
        self.seconds += w.seconds.max(0.0);
        let start = start_s(&w.start);
        let origin = *self.origin.get_or_insert(start);
        self.first_start.get_or_insert(w.start);
        let from = start - origin;
        let column = (from, from + w.seconds.max(0.0), w.counts, w.max_ns);
        match self.filling.as_mut() {
            Some((c, n)) => {
                merge(c, &column);
                *n += 1;
            }
            None => self.filling = Some((column, 1)),
        }
        if self
            .filling
            .as_ref()
            .is_some_and(|f| f.1 >= self.per_column)
        {
            self.close_column();
        }
    }

    fn close_column(&mut self) {
        let Some((c, _)) = self.filling.take() else {
            return;
        };
        self.columns.push(c);
        if self.columns.len() >= MAX_COLUMNS {
            // Halve: each pair of columns becomes one, and so do the next.
            let old = std::mem::take(&mut self.columns);
            for pair in old.chunks(2) {
                let mut c = pair[0].clone();
                if let Some(b) = pair.get(1) {
                    merge(&mut c, b);
                }
                self.columns.push(c);
            }
            self.per_column *= 2;
        }
    }
}

/// Reads every window of `text` into per-thread sums; `only` takes the
/// N-th window (1-based) of each thread alone.
fn accumulate(
    text: &str,
    only: Option<usize>,
) -> Result<(windows::Header, Vec<Acc>, usize, usize), ParseError> {
    let mut accs: Vec<Acc> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut taken = 0usize;
    let mut buckets = 0;
    let read = windows::read(text, |line, w| {
        buckets = w.counts.len();
        let i = match index.get(&w.thread) {
            Some(&i) => i,
            None => {
                if accs.len() >= super::MAX_THREADS {
                    return Err((line, "too many threads".into()));
                }
                index.insert(w.thread.clone(), accs.len());
                accs.push(Acc::new(w.thread.clone(), w.cpu, buckets));
                accs.len() - 1
            }
        };
        let acc = &mut accs[i];
        acc.seen += 1;
        if only.is_none_or(|n| n == acc.seen) {
            acc.take(w);
            taken += 1;
        }
        Ok(())
    });
    let (header, cut) = read.map_err(|(line, message)| {
        ParseError::new(
            line,
            1,
            message,
            "was the file edited, or written by another tool?",
        )
    })?;
    accs.retain(|a| a.first_start.is_some());
    for a in &mut accs {
        a.close_column();
    }
    Ok((header, accs, taken, cut))
}

/// Parses a windows file; `only` picks one window (1-based, per thread).
pub(super) fn parse(text: &str, path: &Path, only: Option<usize>) -> Result<Run, ParseError> {
    let (header, accs, taken, cut_lines) = accumulate(text, only)?;
    if let Some(n) = only
        && accs.is_empty()
    {
        return Err(ParseError::new(
            0,
            0,
            format!("there is no window {n} in this file"),
            "windows are numbered from 1, per thread, in the order written",
        ));
    }
    let bounds = &header.bounds_ns;
    let context = Context {
        started: accs.first().and_then(|a| a.first_start.clone()),
        duration_s: accs.first().map(|a| a.seconds),
        ..Context::default()
    };
    let merged = accs.iter().map(|a| a.per_column).max().unwrap_or(1);
    let threads = accs.into_iter().map(|a| thread(a, bounds)).collect();
    let mut warning = format!(
        "percentiles of a windows file are the upper bounds of its buckets ({taken} windows"
    );
    if cut_lines > 0 {
        warning.push_str(&format!(", {cut_lines} lines cut short skipped"));
    }
    if merged > 1 {
        warning.push_str(&format!(
            "; the long-term plot shows {merged} windows per column"
        ));
    }
    warning.push(')');
    let details = Details {
        warnings: vec![warning],
        ..Details::default()
    };
    let mut run = Run::new(path, Format::RtlabWindows, context, threads, details);
    run.buckets_ns = Some(bounds.clone());
    if let Some(n) = only {
        run.label = format!("{}@{n}", run.label);
    }
    Ok(run)
}

/// One thread of the run: its summed histogram and its plot columns.
fn thread(a: Acc, bounds: &[u64]) -> Thread {
    let samples = a.counts.iter().fold(0u64, |x, &y| x.saturating_add(y));
    let beyond = *a.counts.last().unwrap_or(&0);
    let distribution = Distribution::new(
        bounds
            .iter()
            .copied()
            .zip(a.counts.iter().copied())
            .collect(),
        beyond,
    );
    let stats = Stats {
        samples,
        min_ns: None,
        mean_ns: None,
        max_ns: a.max_ns,
        stddev_ns: None,
        percentiles: distribution.quantiles(a.max_ns),
        overruns: None,
        beyond_histogram: Some(beyond),
        deadline_misses: None,
        noise: None,
    };
    let histogram_us = bounds
        .iter()
        .zip(&a.counts)
        .filter(|(_, c)| **c > 0)
        .map(|(b, c)| (b / 1000, *c))
        .collect();
    let mut thread = Thread::new(a.name, a.cpu, stats, histogram_us, None, distribution);
    thread.windows = Some(super::WindowHistograms {
        bounds_ns: bounds.to_vec(),
        windows: a.columns,
    });
    thread
}

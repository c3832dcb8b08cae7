//! rtlab's windows file (`rtlab monitor --windows`): all its windows, or
//! the one chosen with `FILE@N` (the N-th window, from 1), as a run whose
//! threads hold the summed bucket counts. Its percentiles are the upper
//! bounds of the buckets they fall in (2, 5, 10, 20... µs): coarse, and
//! said so; min, mean and deviation are not known.

use super::{Context, Details, Distribution, Format, ParseError, Run, Stats, Thread};
use crate::monitor::windows::{self, Window};
use std::path::Path;

/// Seconds since the epoch of an RFC 3339 time (0 when it is not one).
fn start_s(text: &str) -> f64 {
    humantime::parse_rfc3339(text)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Whether `text` is a windows file (its first line names the schema).
pub(super) fn looks_like(text: &str) -> bool {
    text.lines()
        .next()
        .is_some_and(|l| l.contains(&format!("\"schema\":\"{}\"", windows::SCHEMA)))
}

/// Parses a windows file; `only` picks one window (1-based, per thread).
pub(super) fn parse(text: &str, path: &Path, only: Option<usize>) -> Result<Run, ParseError> {
    let file = windows::parse(text).map_err(|(line, message)| {
        ParseError::new(
            line,
            1,
            message,
            "was the file edited, or written by another tool?",
        )
    })?;
    let bounds = &file.header.bounds_ns;
    let mut names: Vec<String> = Vec::new();
    for w in &file.windows {
        if !names.contains(&w.thread) {
            if names.len() >= super::MAX_THREADS {
                return Err(ParseError::new(
                    1,
                    1,
                    "too many threads",
                    "the file was altered",
                ));
            }
            names.push(w.thread.clone());
        }
    }
    let pick = |thread: &str| -> Vec<&Window> {
        let all: Vec<&Window> = file.windows.iter().filter(|w| w.thread == thread).collect();
        match only {
            Some(n) => all.get(n.wrapping_sub(1)).copied().into_iter().collect(),
            None => all,
        }
    };
    if let Some(n) = only
        && names.iter().all(|t| pick(t).is_empty())
    {
        return Err(ParseError::new(
            0,
            0,
            format!("there is no window {n} in this file"),
            "windows are numbered from 1, per thread, in the order written",
        ));
    }
    let mut threads = Vec::new();
    for name in &names {
        let ws = pick(name);
        if ws.is_empty() {
            continue;
        }
        let mut counts = vec![0u64; bounds.len() + 1];
        for w in &ws {
            for (c, n) in counts.iter_mut().zip(&w.counts) {
                *c = c.saturating_add(*n);
            }
        }
        let samples = counts.iter().fold(0u64, |a, &b| a.saturating_add(b));
        let max_ns = ws.iter().filter_map(|w| w.max_ns).max();
        let beyond = *counts.last().unwrap_or(&0);
        let distribution = Distribution::new(
            bounds.iter().copied().zip(counts.iter().copied()).collect(),
            beyond,
        );
        let stats = Stats {
            samples,
            min_ns: None,
            mean_ns: None,
            max_ns,
            stddev_ns: None,
            percentiles: distribution.quantiles(max_ns),
            overruns: None,
            beyond_histogram: Some(beyond),
        };
        let histogram_us = bounds
            .iter()
            .zip(&counts)
            .filter(|(_, c)| **c > 0)
            .map(|(b, c)| (b / 1000, *c))
            .collect();
        let origin = start_s(&ws[0].start);
        let per_window = ws
            .iter()
            .map(|w| {
                let from = start_s(&w.start) - origin;
                (from, from + w.seconds.max(0.0), w.counts.clone(), w.max_ns)
            })
            .collect();
        let mut thread = Thread::new(
            name.clone(),
            ws[0].cpu,
            stats,
            histogram_us,
            None,
            distribution,
        );
        thread.windows = Some(super::WindowHistograms {
            bounds_ns: bounds.clone(),
            windows: per_window,
        });
        threads.push(thread);
    }
    let first = file
        .windows
        .iter()
        .filter(|w| only.is_none() || pick(&w.thread).contains(w))
        .collect::<Vec<_>>();
    let context = Context {
        started: first.first().map(|w| w.start.clone()),
        duration_s: names
            .first()
            .map(|n| pick(n).iter().map(|w| w.seconds).sum()),
        ..Context::default()
    };
    let details = Details {
        warnings: vec![format!(
            "percentiles of a windows file are the upper bounds of its buckets ({} windows{})",
            first.len(),
            if file.cut_lines > 0 {
                format!(", {} lines cut short skipped", file.cut_lines)
            } else {
                String::new()
            }
        )],
        ..Details::default()
    };
    let mut run = Run::new(path, Format::RtlabWindows, context, threads, details);
    if let Some(n) = only {
        run.label = format!("{}@{n}", run.label);
    }
    Ok(run)
}

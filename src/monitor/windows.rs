//! The windows file: every window (an hour by default) each timer
//! thread's histogram of that window, its sample count and its largest
//! latency, appended as one JSON line, so that a month-long run draws as
//! OSADL's long-term plot (histograms stacked along time) and its max per
//! window. The first line names the schema and the bucket bounds.
//!
//! ```text
//! {"schema":"rtlab-windows/1","bounds_ns":[2000,5000,...]}
//! {"start":"2026-11-22T05:00:00Z","seconds":3600.0,"thread":"T0","cpu":1,"samples":3600000,"max_ns":41230,"counts":[...]}
//! ```

use super::metrics::Metrics;
use crate::measure::live::{METRIC_BOUNDS_NS, METRIC_BUCKETS};
use crate::sys::outfile::{Appender, OutputError};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

/// The schema of the windows file.
pub const SCHEMA: &str = "rtlab-windows/1";

/// The first line of the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// [`SCHEMA`].
    pub schema: String,
    /// Upper bounds (ns) of the buckets; one more bucket holds the rest.
    pub bounds_ns: Vec<u64>,
}

/// One thread's window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// When it started (RFC 3339, UTC).
    pub start: String,
    /// How long it lasted (s).
    pub seconds: f64,
    /// `T<N>`.
    pub thread: String,
    /// The thread's CPU, when pinned to one.
    pub cpu: Option<usize>,
    /// Samples in the window.
    pub samples: u64,
    /// Its largest latency (ns), absent without samples.
    pub max_ns: Option<u64>,
    /// Samples per bucket.
    pub counts: Vec<u64>,
}

/// Writes windows as the run goes.
pub struct WindowWriter {
    file: Appender,
    window: Duration,
    started: Instant,
    started_wall: SystemTime,
    /// Per timer: its buckets when the window started, and its max so far.
    base: Vec<(usize, Vec<u64>, Option<u64>)>,
    last: Option<Metrics>,
}

impl WindowWriter {
    /// Makes the file (its header line), whole, at `path`, or goes on with
    /// the one there when it is rtlab's windows file of the same buckets.
    pub fn create(path: &Path, window: Duration) -> Result<WindowWriter, OutputError> {
        let header = Header {
            schema: SCHEMA.into(),
            bounds_ns: METRIC_BOUNDS_NS.to_vec(),
        };
        let line = format!("{}\n", serde_json::to_string(&header).unwrap_or_default());
        // A restarted monitor (after a reboot) goes on with its file.
        let (mut file, continued) = Appender::continue_or_create(path, line.as_bytes())?;
        if continued {
            // A line the previous run left cut short stays alone on its line.
            file.append(b"\n")?;
        }
        Ok(WindowWriter {
            file,
            window: window.max(Duration::from_secs(1)),
            started: Instant::now(),
            started_wall: SystemTime::now(),
            base: Vec::new(),
            last: None,
        })
    }

    /// Takes a refresh's figures; writes the windows when one ends.
    pub fn observe(&mut self, m: &Metrics) -> Result<(), OutputError> {
        for t in &m.timers {
            match self.base.iter_mut().find(|b| b.0 == t.index) {
                Some(b) => b.2 = b.2.max(t.window_max_ns),
                None => self
                    .base
                    .push((t.index, vec![0; METRIC_BUCKETS], t.window_max_ns)),
            }
        }
        self.last = Some(m.clone());
        if self.started.elapsed() >= self.window {
            self.write()?;
        }
        Ok(())
    }

    /// Writes the window that ends now, and starts the next.
    fn write(&mut self) -> Result<(), OutputError> {
        let Some(m) = self.last.as_ref() else {
            return Ok(());
        };
        let seconds = self.started.elapsed().as_secs_f64();
        let start = humantime::format_rfc3339_seconds(self.started_wall).to_string();
        let mut text = String::new();
        for t in &m.timers {
            let Some(base) = self.base.iter_mut().find(|b| b.0 == t.index) else {
                continue;
            };
            let counts: Vec<u64> = t
                .buckets
                .iter()
                .zip(base.1.iter().chain(std::iter::repeat(&0)))
                .map(|(now, before)| now.saturating_sub(*before))
                .collect();
            let samples = counts.iter().sum();
            let w = Window {
                start: start.clone(),
                seconds,
                thread: format!("T{}", t.index),
                cpu: t.cpu,
                samples,
                max_ns: base.2.filter(|_| samples > 0),
                counts,
            };
            text.push_str(&serde_json::to_string(&w).unwrap_or_default());
            text.push('\n');
            base.1.clone_from(&t.buckets);
            base.2 = None;
        }
        self.started = Instant::now();
        self.started_wall = SystemTime::now();
        self.file.append(text.as_bytes())
    }

    /// Writes the last window (however short).
    pub fn finish(mut self) -> Result<(), OutputError> {
        self.write()
    }
}

/// A windows file read back.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowsFile {
    /// Its header.
    pub header: Header,
    /// Its windows, in order.
    pub windows: Vec<Window>,
    /// Lines that were not JSON (a line cut short when a run died).
    pub cut_lines: usize,
}

/// Reads a windows file. A header that is not rtlab's, and a JSON line
/// that is not a window, are errors with their line number; a line that is
/// not JSON at all (cut short) is counted and skipped.
pub fn parse(text: &str) -> Result<WindowsFile, (usize, String)> {
    let mut lines = text.lines().enumerate();
    let (_, first) = lines.next().ok_or((1, "empty file".to_string()))?;
    let header: Header =
        serde_json::from_str(first).map_err(|e| (1, format!("not a windows header: {e}")))?;
    if header.schema != SCHEMA {
        return Err((1, format!("schema {:?}, not {SCHEMA:?}", header.schema)));
    }
    let mut windows = Vec::new();
    let mut cut_lines = 0;
    for (i, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else {
            cut_lines += 1;
            continue;
        };
        let w: Window =
            serde_json::from_value(value).map_err(|e| (i + 1, format!("not a window: {e}")))?;
        if w.counts.len() != header.bounds_ns.len() + 1 {
            return Err((i + 1, "its counts do not match the header's buckets".into()));
        }
        windows.push(w);
    }
    Ok(WindowsFile {
        header,
        windows,
        cut_lines,
    })
}

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
    /// When the window ends, from `origin` (a fixed schedule: no drift).
    ends_at: Duration,
    origin: Instant,
    /// Half a refresh: a window ends at the refresh nearest its end.
    slack: Duration,
    /// Per timer: its buckets when the window started, and its max so far.
    base: Vec<(usize, Vec<u64>, Option<u64>)>,
    last: Option<Metrics>,
}

impl WindowWriter {
    /// Makes the file (its header line), whole, at `path`, or goes on with
    /// the one there when it is rtlab's windows file of the same buckets.
    pub fn create(
        path: &Path,
        window: Duration,
        refresh: Duration,
    ) -> Result<WindowWriter, OutputError> {
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
        let window = window.max(Duration::from_secs(1));
        let now = Instant::now();
        Ok(WindowWriter {
            file,
            window,
            started: now,
            started_wall: SystemTime::now(),
            ends_at: window,
            origin: now,
            slack: refresh / 2,
            base: Vec::new(),
            last: None,
        })
    }

    /// Takes a refresh's figures; writes the windows when one ends.
    pub fn observe(&mut self, m: &Metrics) -> Result<(), OutputError> {
        self.observe_at(m, Instant::now())
    }

    /// [`WindowWriter::observe`] at `now`. Figures come at refreshes only,
    /// so a window ends at the refresh nearest its scheduled end (within
    /// half a refresh), and the next is scheduled from that end, not from
    /// the refresh: windows keep their length on average, never drifting
    /// a refresh longer.
    pub fn observe_at(&mut self, m: &Metrics, now: Instant) -> Result<(), OutputError> {
        for t in &m.timers {
            match self.base.iter_mut().find(|b| b.0 == t.index) {
                Some(b) => b.2 = b.2.max(t.window_max_ns),
                None => self
                    .base
                    .push((t.index, vec![0; METRIC_BUCKETS], t.window_max_ns)),
            }
        }
        self.last = Some(m.clone());
        let since = now.saturating_duration_since(self.origin);
        if since + self.slack >= self.ends_at {
            self.write(now)?;
            self.ends_at += self.window;
            if self.ends_at <= since {
                // Stalled past whole windows: the next starts now.
                self.ends_at = since + self.window;
            }
        }
        Ok(())
    }

    /// Writes the window that ends now, and starts the next.
    fn write(&mut self, now: Instant) -> Result<(), OutputError> {
        let Some(m) = self.last.as_ref() else {
            return Ok(());
        };
        let seconds = now.saturating_duration_since(self.started).as_secs_f64();
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
        self.started_wall += now.saturating_duration_since(self.started);
        self.started = now;
        self.file.append(text.as_bytes())
    }

    /// Writes the last window (however short).
    pub fn finish(mut self) -> Result<(), OutputError> {
        self.write(Instant::now())
    }
}

/// Longest line the reader takes (a window of rtlab's 15 buckets is about
/// 300 bytes): a longer one is an error, never a buffer grown to fit.
pub const MAX_LINE: usize = 64 << 10;
/// Most buckets a header may declare.
pub const MAX_BUCKETS: usize = 256;
/// Longest thread name.
pub const MAX_THREAD_NAME: usize = 64;

/// A windows file read back whole (for tests and small files; the
/// dataset reader goes through [`read`] and keeps what it needs).
#[derive(Debug, Clone, PartialEq)]
pub struct WindowsFile {
    /// Its header.
    pub header: Header,
    /// Its windows, in order.
    pub windows: Vec<Window>,
    /// Lines that were not JSON (a line cut short when a run died).
    pub cut_lines: usize,
}

/// The header of `text` when its first line is a windows file's: parsed,
/// so spacing does not matter (None otherwise, or when that line is longer
/// than [`MAX_LINE`]).
pub fn header(text: &str) -> Option<Header> {
    let first = text.lines().next()?;
    if first.len() > MAX_LINE {
        return None;
    }
    let h: Header = serde_json::from_str(first).ok()?;
    (h.schema == SCHEMA).then_some(h)
}

/// Reads a windows file line by line, giving each window (with its line
/// number) to `each`, in one pass and typed: nothing of a line is kept but
/// what `each` keeps. A header that is not rtlab's, a JSON line that is
/// not a window, a line longer than [`MAX_LINE`] are errors with their
/// line number; a line that is not JSON at all (cut short) is counted and
/// skipped. Gives the header and the count of lines skipped.
pub fn read(
    text: &str,
    mut each: impl FnMut(usize, Window) -> Result<(), (usize, String)>,
) -> Result<(Header, usize), (usize, String)> {
    let mut lines = text.lines().enumerate();
    let (_, first) = lines.next().ok_or((1, "empty file".to_string()))?;
    if first.len() > MAX_LINE {
        return Err((1, format!("line longer than {MAX_LINE} bytes")));
    }
    let header: Header =
        serde_json::from_str(first).map_err(|e| (1, format!("not a windows header: {e}")))?;
    if header.schema != SCHEMA {
        return Err((1, format!("schema {:?}, not {SCHEMA:?}", header.schema)));
    }
    let b = &header.bounds_ns;
    if b.is_empty() || b.len() > MAX_BUCKETS || b.windows(2).any(|w| w[0] >= w[1]) {
        return Err((
            1,
            format!("bucket bounds must be 1 to {MAX_BUCKETS} increasing values"),
        ));
    }
    let mut cut_lines = 0;
    for (i, line) in lines {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        if line.len() > MAX_LINE {
            return Err((n, format!("line longer than {MAX_LINE} bytes")));
        }
        let w: Window = match serde_json::from_str(line) {
            Ok(w) => w,
            Err(e) if e.is_eof() || e.is_syntax() => {
                cut_lines += 1;
                continue;
            }
            Err(e) => return Err((n, format!("not a window: {e}"))),
        };
        if w.counts.len() != header.bounds_ns.len() + 1 {
            return Err((n, "its counts do not match the header's buckets".into()));
        }
        if w.thread.is_empty() || w.thread.len() > MAX_THREAD_NAME {
            return Err((n, format!("thread names are 1 to {MAX_THREAD_NAME} bytes")));
        }
        if !w.seconds.is_finite() {
            return Err((n, "its length in seconds is not a number".into()));
        }
        each(n, w)?;
    }
    Ok((header, cut_lines))
}

/// Reads a whole windows file into memory (see [`read`]).
pub fn parse(text: &str) -> Result<WindowsFile, (usize, String)> {
    let mut windows = Vec::new();
    let (header, cut_lines) = read(text, |_, w| {
        windows.push(w);
        Ok(())
    })?;
    Ok(WindowsFile {
        header,
        windows,
        cut_lines,
    })
}

//! The flight recorder: while the run goes on, rtlab traces the measured
//! CPUs in its own tracefs instance (overwrite mode: only the last moments
//! are kept) and, each time a timer thread announces a wake-up at least
//! `trace.threshold` late, takes the window from before its deadline to
//! its wake-up out of the buffer and explains it ([`crate::explain`]). The
//! analysis runs on the main thread, bounded: at most 10 a second and
//! `trace.max_spikes` a run, each reading one CPU's buffer.

use crate::explain::{TraceReport, analyze, parse, verdict};
use crate::measure::TimerHandle;
use crate::sys::SysRoot;
use crate::sys::journal::Journal;
use crate::sys::trace::{self, Instance, Recording};
use std::fs::File;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the flight recorder must do.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TraceSpec {
    /// Explain wake-ups at least this late (ns).
    pub threshold_ns: u64,
    /// Explain at most this many in a run.
    pub max_spikes: usize,
}

/// Ring buffer per traced CPU (KiB): about a second of this machine's
/// events at 1 kHz timers, read back in a few milliseconds.
pub const BUFFER_KB: u64 = 512;
/// How often the watch loop calls [`FlightRecorder::look`].
pub const LOOK_EVERY: Duration = Duration::from_millis(20);
/// At most this many explanations a second (a flood is counted, not read).
const MIN_GAP: Duration = Duration::from_millis(100);
/// The window starts this long before the deadline (what ran then decides
/// who owned the CPU at the deadline).
const LOOKBACK_NS: u64 = 2_000_000;
/// Most events read from one window.
const MAX_EVENTS: usize = 20_000;
/// Most bytes of one CPU's buffer text read.
const MAX_BUFFER_TEXT: usize = 32 << 20;

/// A running flight recorder.
pub struct FlightRecorder {
    instance: Instance,
    marker: Option<Arc<File>>,
    spec: TraceSpec,
    report: TraceReport,
    /// Per timer thread: the `over` count already handled.
    seen: Vec<u64>,
    last_look: Option<Instant>,
    /// The trace-event JSON of each explained window, by file name.
    windows: Vec<(String, String)>,
}

impl FlightRecorder {
    /// Mounts tracefs if needed and starts an instance on `cpus`, both
    /// through `journal`. Err says why there is no trace (the run goes on).
    pub fn start(
        root: &SysRoot,
        journal: &mut Journal,
        spec: &TraceSpec,
        cpus: &[usize],
    ) -> Result<Self, trace::TraceError> {
        let tracefs = trace::mount(root, journal)?;
        let instance = Instance::create(root, journal, &tracefs, "")?;
        let missing = instance.start(&Recording {
            cpus: cpus.to_vec(),
            buffer_kb: BUFFER_KB,
            overwrite: true,
            events: trace::EVENTS,
        })?;
        let marker = instance.marker().ok().map(Arc::new);
        let mut notes = Vec::new();
        if marker.is_none() {
            notes.push(
                "the trace marker could not be opened: spikes are not marked in the trace".into(),
            );
        }
        Ok(FlightRecorder {
            report: TraceReport {
                threshold_ns: spec.threshold_ns,
                instance: Some(format!("/{}", instance.dir())),
                events_missing: missing,
                notes,
                ..TraceReport::default()
            },
            instance,
            marker,
            spec: spec.clone(),
            seen: Vec::new(),
            last_look: None,
            windows: Vec::new(),
        })
    }

    /// The report of a run that wanted a trace and could not have one.
    pub fn unavailable(spec: &TraceSpec, why: String) -> TraceReport {
        TraceReport {
            threshold_ns: spec.threshold_ns,
            unavailable: Some(why),
            ..TraceReport::default()
        }
    }

    /// The tracepoints this kernel lacks.
    pub fn missing_events(&self) -> &[String] {
        &self.report.events_missing
    }

    /// The marker the timer threads write a late wake-up to.
    pub fn marker(&self) -> Option<Arc<File>> {
        self.marker.clone()
    }

    /// The culprits so far, as (kind, what, main cause of how many), for
    /// the metrics of a monitoring run.
    pub fn causes(&self) -> Vec<(String, String, u64)> {
        verdict::culprits(&self.report.explanations)
            .into_iter()
            .filter(|c| c.main_cause > 0)
            .map(|c| {
                let kind = serde_json::to_value(c.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                (kind, c.what, c.main_cause)
            })
            .collect()
    }

    /// The last explained wake-up's main cause, for the live view.
    pub fn last_cause(&self) -> Option<String> {
        let e = self.report.explanations.last()?;
        let mut cause = e.cause.clone();
        if let Some((cut, _)) = cause.char_indices().nth(110) {
            cause.truncate(cut);
            cause.push('…');
        }
        Some(format!(
            "last late wake-up: T{} {:.1} µs: {cause}",
            e.timer,
            e.latency_ns as f64 / 1000.0
        ))
    }

    /// Looks for wake-ups announced since the last look and explains the
    /// latest of each thread, within the rate limit.
    pub fn look(&mut self, timers: &[TimerHandle]) {
        self.seen.resize(timers.len(), 0);
        for (i, t) in timers.iter().enumerate() {
            let s = t.live.read();
            let new = s.over.saturating_sub(self.seen[i]);
            if new == 0 {
                continue;
            }
            self.seen[i] = s.over;
            self.report.over_threshold += new;
            // Only the latest can still be in the buffer for sure.
            self.report.not_explained += new - 1;
            let limited = self.report.explanations.len() >= self.spec.max_spikes
                || self.last_look.is_some_and(|l| l.elapsed() < MIN_GAP);
            if limited {
                self.report.not_explained += 1;
                continue;
            }
            self.last_look = Some(Instant::now());
            let tid = t.live.tid.load(std::sync::atomic::Ordering::Relaxed);
            // The CPU it woke on (a thread allowed on several may move).
            let cpu = usize::try_from(s.over_cpu)
                .ok()
                .filter(|&c| s.over_cpu != u64::MAX && t.spec.cpus.contains(&c))
                .or_else(|| t.spec.cpus.first().copied())
                .unwrap_or(0);
            self.explain(
                t.spec.index,
                tid,
                cpu,
                s.over_sample,
                s.over_deadline_ns,
                s.over_latency_ns,
            );
        }
    }

    fn explain(
        &mut self,
        timer: usize,
        tid: i32,
        cpu: usize,
        sample: u64,
        deadline: u64,
        latency: u64,
    ) {
        let text = match self.instance.read_cpu(cpu, MAX_BUFFER_TEXT) {
            Ok(t) => t,
            Err(e) => {
                self.report.not_explained += 1;
                if self.report.notes.len() < 10 {
                    self.report.notes.push(format!("CPU {cpu}: {e}"));
                }
                return;
            }
        };
        let from = deadline.saturating_sub(LOOKBACK_NS);
        let to = deadline.saturating_add(latency).saturating_add(50_000);
        let lines = parse::window_lines(&text, from, to, MAX_EVENTS);
        let events: Vec<parse::Event> = lines.iter().filter_map(|l| parse::line(l)).collect();
        let mut e = analyze::explain(&events, timer, tid, sample, deadline, latency);
        let stem = format!("rtlab-spike-T{timer}-{sample}");
        let json = format!("{stem}.json");
        let raw = format!("{stem}.trace.txt");
        self.windows
            .push((json.clone(), trace_events(&events, tid, deadline, latency)));
        self.windows.push((raw.clone(), ftrace_text(&lines)));
        e.trace_file = Some(json);
        e.trace_text = Some(raw);
        self.report.explanations.push(e);
    }

    /// Stops tracing (the instance is removed) and gives the report and the
    /// windows to write beside the result.
    pub fn finish(mut self, timers: &[TimerHandle]) -> (TraceReport, Vec<(String, String)>) {
        self.look(timers);
        self.report.culprits = verdict::culprits(&self.report.explanations);
        (self.report, self.windows)
    }
}

/// The window's lines with the header of the kernel's text format, as
/// `trace-cmd report` and Perfetto's systrace import read it.
pub fn ftrace_text(lines: &[&str]) -> String {
    let mut out = String::from(
        "# tracer: nop\n#\n# rtlab flight recorder: one CPU's events around a late wake-up\n\
         #           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n",
    );
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// The track of a window's "who owned the CPU" slices (no task has this id).
const OWNER_TRACK: i64 = -1;

/// The window in the trace-event JSON format that Perfetto and Chrome's
/// trace viewer open: one process per CPU; on its first track who owned
/// the CPU from the deadline to the wake-up, as consecutive slices, with
/// the deadline and the wake-up as instants; then a track per task with
/// its events as instants (their fields as arguments).
pub fn trace_events(events: &[parse::Event], tid: i32, deadline: u64, latency: u64) -> String {
    let (segments, _, _) = analyze::segments(events, tid, deadline, latency);
    let us = |ns: u64| ns as f64 / 1000.0;
    let cpu = events.first().map_or(0, |e| e.cpu);
    let mut out: Vec<serde_json::Value> = vec![
        serde_json::json!({"name": "process_name", "ph": "M", "pid": cpu,
                           "args": {"name": format!("CPU {cpu}")}}),
        serde_json::json!({"name": "thread_name", "ph": "M", "pid": cpu, "tid": OWNER_TRACK,
                           "args": {"name": "who owned the CPU (rtlab)"}}),
        serde_json::json!({"name": "thread_sort_index", "ph": "M", "pid": cpu, "tid": OWNER_TRACK,
                           "args": {"sort_index": -1}}),
    ];
    let mut named = std::collections::BTreeSet::new();
    for e in events {
        if named.insert(e.pid) {
            out.push(
                serde_json::json!({"name": "thread_name", "ph": "M", "pid": cpu, "tid": e.pid,
                                        "args": {"name": format!("{}-{}", e.comm, e.pid)}}),
            );
        }
    }
    for s in &segments {
        out.push(serde_json::json!({
            "name": s.what, "cat": format!("{:?}", s.kind), "ph": "X",
            "ts": us(s.from_ns), "dur": us(s.to_ns - s.from_ns),
            "pid": cpu, "tid": OWNER_TRACK, "args": {"pid": s.pid},
        }));
    }
    for (name, at) in [
        ("deadline", deadline),
        ("wake-up (clock read)", deadline + latency),
    ] {
        out.push(serde_json::json!({
            "name": name, "ph": "i", "s": "t", "ts": us(at), "pid": cpu, "tid": OWNER_TRACK,
        }));
    }
    for e in events {
        out.push(serde_json::json!({
            "name": e.name, "ph": "i", "s": "t", "ts": us(e.ts_ns), "pid": e.cpu, "tid": e.pid,
            "args": {"fields": e.fields},
        }));
    }
    serde_json::json!({
        "traceEvents": out,
        "displayTimeUnit": "ns",
        "otherData": {"generator": "rtlab", "clock": "CLOCK_MONOTONIC"},
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_trace_event_json_with_named_tracks_and_the_latency_covered() {
        let text = include_str!("../tests/traces/fifo-hog-preempts.txt");
        let events: Vec<parse::Event> = text.lines().filter_map(parse::line).collect();
        let (deadline, latency) = (11_692_596_928_077, 2_075_000);
        let doc: serde_json::Value =
            serde_json::from_str(&trace_events(&events, 16157, deadline, latency)).unwrap();
        let all = doc["traceEvents"].as_array().unwrap();
        let slices: Vec<&serde_json::Value> = all.iter().filter(|e| e["ph"] == "X").collect();
        // The owner track covers the latency, in µs, without gaps.
        let dur: f64 = slices.iter().map(|s| s["dur"].as_f64().unwrap()).sum();
        assert!((dur - latency as f64 / 1000.0).abs() < 1e-6, "{dur}");
        assert!(
            slices
                .iter()
                .all(|s| s["tid"] == OWNER_TRACK && s["pid"] == 1)
        );
        assert!(slices.iter().any(|s| s["name"] == "python3"));
        // Every track that holds events has a name.
        let named: Vec<&serde_json::Value> = all
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| &e["tid"])
            .collect();
        for e in all.iter().filter(|e| e["ph"] == "i") {
            assert!(named.contains(&&e["tid"]), "{e}");
        }
        let raw = ftrace_text(
            &text
                .lines()
                .filter(|l| parse::line(l).is_some())
                .collect::<Vec<_>>(),
        );
        assert!(raw.starts_with("# tracer: nop\n"));
        assert_eq!(raw.lines().filter_map(parse::line).count(), events.len());
    }
}

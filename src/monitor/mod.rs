//! Monitoring: a run that goes on until it is stopped, its figures
//! exported for Prometheus (an HTTP `/metrics` endpoint, and/or a
//! node_exporter textfile written whole every refresh) and its histogram
//! kept on disk window by window. The run's main thread refreshes one
//! [`metrics::Metrics`] through the [`Publisher`]; the endpoint's thread ([`endpoint`]) only encodes
//! it, once per refresh, whatever the number of scrapes.

pub mod endpoint;
pub mod metrics;
pub mod windows;

use crate::sys::outfile;
use metrics::{Metrics, Shared};
use prometheus_client::registry::Registry;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a monitoring run exports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorSpec {
    /// Serve `/metrics` here (None: no endpoint).
    pub listen: Option<SocketAddr>,
    /// Write the node_exporter textfile here (`.prom`), every refresh.
    pub textfile: Option<PathBuf>,
    /// Append each window's histogram to this file.
    pub windows_file: Option<PathBuf>,
    /// How long a window of the windows file lasts.
    pub window: Duration,
    /// How often the figures refresh (`stats.period`): a window ends at the
    /// refresh nearest its end.
    pub refresh: Duration,
    /// Also export every real-time task's wake-up latency (the BPF
    /// source), or every task's.
    pub rt_tasks: Option<RtTasks>,
    /// With `rt_tasks`: explain each wake-up at least this late (zero:
    /// none).
    pub rt_late: Duration,
}

/// Whose wake-ups `--rt-tasks` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtTasks {
    /// SCHED_FIFO, SCHED_RR and SCHED_DEADLINE tasks.
    RealTime,
    /// Every task (`--all-tasks`).
    All,
}

/// Why monitoring cannot start.
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    /// The address could not be listened on.
    #[error("cannot listen on {addr}: {why}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// The system's answer.
        why: String,
    },
    /// An output file could not be made.
    #[error(transparent)]
    Output(#[from] outfile::OutputError),
}

/// A monitoring run's figures going out, each refresh: to the `/metrics`
/// endpoint, the node_exporter textfile and the windows file. (Not an
/// exporter of finished runs: those are [`crate::report::export::Exporter`].)
pub struct Publisher {
    shared: Shared,
    registry: Arc<Registry>,
    generation: Arc<AtomicU64>,
    endpoint: Option<endpoint::Endpoint>,
    /// What of the endpoint's health was already said.
    told: endpoint::Health,
    textfile: Option<PathBuf>,
    windows: Option<windows::WindowWriter>,
    /// Problems met while exporting (a textfile that could not be written,
    /// an endpoint that died), the first few.
    pub warnings: Vec<String>,
}

impl Publisher {
    /// Starts the endpoint and makes the output files.
    pub fn start(spec: &MonitorSpec, first: Metrics) -> Result<Publisher, MonitorError> {
        let shared: Shared = Arc::new(Mutex::new(first));
        let registry = Arc::new(metrics::registry(shared.clone()));
        let generation = Arc::new(AtomicU64::new(0));
        let endpoint = match spec.listen {
            Some(addr) => Some(
                endpoint::Endpoint::start(
                    addr,
                    endpoint::Source {
                        registry: registry.clone(),
                        generation: generation.clone(),
                    },
                )
                .map_err(|e| MonitorError::Listen {
                    addr,
                    why: e.to_string(),
                })?,
            ),
            None => None,
        };
        let windows = match &spec.windows_file {
            Some(path) => Some(windows::WindowWriter::create(
                path,
                spec.window,
                spec.refresh,
            )?),
            None => None,
        };
        Ok(Publisher {
            shared,
            registry,
            generation,
            endpoint,
            told: endpoint::Health::default(),
            textfile: spec.textfile.clone(),
            windows,
            warnings: Vec::new(),
        })
    }

    /// The address the endpoint listens on.
    pub fn listening(&self) -> Option<SocketAddr> {
        self.endpoint.as_ref().map(endpoint::Endpoint::addr)
    }

    /// Publishes fresh figures: to the endpoint, the textfile and, when a
    /// window ends, the windows file.
    pub fn update(&mut self, m: Metrics) {
        if let Some(w) = self.windows.as_mut()
            && let Err(e) = w.observe(&m)
        {
            self.warn(e.with_hint());
        }
        if let Ok(mut s) = self.shared.lock() {
            *s = m;
        }
        self.generation.fetch_add(1, Ordering::Relaxed);
        if let Some(path) = &self.textfile {
            let text = prometheus_text(&metrics::encode(&self.registry));
            if let Err(e) = outfile::write_whole(path, text.as_bytes()) {
                let msg = e.with_hint();
                self.warn(msg);
            }
        }
    }

    /// What went wrong with the endpoint since the last call, as messages
    /// (each said once): a death, descriptors run out.
    pub fn endpoint_news(&mut self) -> Vec<String> {
        let Some(e) = &self.endpoint else {
            return Vec::new();
        };
        let now = e.health();
        let mut news = Vec::new();
        if let (Some(why), None) = (&now.died, &self.told.died) {
            news.push(format!(
                "the metrics endpoint http://{}/metrics is gone ({why}): Prometheus sees the target down; the run goes on and its results are written",
                e.addr()
            ));
        }
        if now.out_of_descriptors > 0 && self.told.out_of_descriptors == 0 {
            news.push(format!(
                "the metrics endpoint ran out of file descriptors (EMFILE) and closed its oldest connections to go on; raise `ulimit -n` (it holds at most {} connections)",
                endpoint::MAX_CONNECTIONS
            ));
        }
        self.told = now;
        for n in &news {
            self.warn(n.clone());
        }
        news
    }

    fn warn(&mut self, msg: String) {
        if self.warnings.len() < 5 && !self.warnings.contains(&msg) {
            self.warnings.push(msg);
        }
    }

    /// Stops the endpoint (never waiting on a client); the windows file
    /// gets the last, partial window.
    pub fn finish(mut self) -> Vec<String> {
        if let Some(w) = self.windows.take()
            && let Err(e) = w.finish()
        {
            self.warn(e.with_hint());
        }
        self.endpoint_news();
        if let Some(e) = self.endpoint.take()
            && let Some(late) = e.stop()
        {
            self.warn(late);
        }
        std::mem::take(&mut self.warnings)
    }
}

/// OpenMetrics text made readable by the Prometheus text parser (what the
/// node_exporter textfile collector and `promtool check metrics` read):
/// counters and info metrics are typed by the names their samples carry,
/// and the OpenMetrics-only lines go.
pub fn prometheus_text(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, ""));
            let (suffix, kind) = match kind {
                "counter" => ("_total", "counter"),
                "info" => ("_info", "gauge"),
                other => ("", other),
            };
            out.push_str(&format!("# TYPE {name}{suffix} {kind}\n"));
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    // HELP comes before TYPE: it takes the name TYPE was given.
    fix_help_order(&out)
}

/// In OpenMetrics text HELP precedes TYPE, so the renaming above missed
/// it: each `# HELP x` directly followed by `# TYPE y` with y ≠ x takes y.
fn fix_help_order(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::with_capacity(text.len());
    for (i, line) in lines.iter().enumerate() {
        if let (Some(help), Some(next)) = (line.strip_prefix("# HELP "), lines.get(i + 1))
            && let Some(ty) = next.strip_prefix("# TYPE ")
        {
            let name = ty.split(' ').next().unwrap_or("");
            let (old, rest) = help.split_once(' ').unwrap_or((help, ""));
            if name != old && name.starts_with(old) {
                out.push_str(&format!("# HELP {name} {rest}\n"));
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;

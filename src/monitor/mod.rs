//! Monitoring: a run that goes on until it is stopped, its figures
//! exported for Prometheus (an HTTP `/metrics` endpoint, and/or a
//! node_exporter textfile written whole every refresh) and its histogram
//! kept on disk window by window. The run's main thread refreshes one
//! [`metrics::Metrics`]; the HTTP server's thread only encodes it.

pub mod metrics;
pub mod windows;

use crate::sys::outfile;
use metrics::{Metrics, Shared};
use prometheus_client::registry::Registry;
use std::net::SocketAddr;
use std::path::PathBuf;
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

/// The running exporters.
pub struct Exporter {
    shared: Shared,
    registry: Arc<Registry>,
    server: Option<(Arc<tiny_http::Server>, std::thread::JoinHandle<()>)>,
    textfile: Option<PathBuf>,
    windows: Option<windows::WindowWriter>,
    /// Problems met while exporting (a textfile that could not be written),
    /// the first few.
    pub warnings: Vec<String>,
}

/// The content type of the endpoint: the OpenMetrics text that
/// `prometheus-client` writes.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

impl Exporter {
    /// Starts the endpoint and makes the output files.
    pub fn start(spec: &MonitorSpec, first: Metrics) -> Result<Exporter, MonitorError> {
        let shared: Shared = Arc::new(Mutex::new(first));
        let registry = Arc::new(metrics::registry(shared.clone()));
        let server = match spec.listen {
            Some(addr) => Some(serve(addr, registry.clone())?),
            None => None,
        };
        let windows = match &spec.windows_file {
            Some(path) => Some(windows::WindowWriter::create(path, spec.window)?),
            None => None,
        };
        Ok(Exporter {
            shared,
            registry,
            server,
            textfile: spec.textfile.clone(),
            windows,
            warnings: Vec::new(),
        })
    }

    /// The address the endpoint listens on.
    pub fn listening(&self) -> Option<SocketAddr> {
        self.server
            .as_ref()
            .and_then(|(s, _)| s.server_addr().to_ip())
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
        if let Some(path) = &self.textfile {
            let text = prometheus_text(&metrics::encode(&self.registry));
            if let Err(e) = outfile::write_whole(path, text.as_bytes()) {
                let msg = e.with_hint();
                self.warn(msg);
            }
        }
    }

    fn warn(&mut self, msg: String) {
        if self.warnings.len() < 5 && !self.warnings.contains(&msg) {
            self.warnings.push(msg);
        }
    }

    /// Stops the endpoint; the windows file gets the last, partial window.
    pub fn finish(mut self) -> Vec<String> {
        if let Some(w) = self.windows.take()
            && let Err(e) = w.finish()
        {
            self.warn(e.with_hint());
        }
        if let Some((server, thread)) = self.server.take() {
            server.unblock();
            let _ = thread.join();
        }
        std::mem::take(&mut self.warnings)
    }
}

impl Drop for Exporter {
    /// A run that ends without `finish` (an error while arming) closes the
    /// endpoint too.
    fn drop(&mut self) {
        if let Some((server, _)) = self.server.take() {
            server.unblock();
        }
    }
}

/// Serves `/metrics` on `addr` from a thread of its own.
fn serve(
    addr: SocketAddr,
    registry: Arc<Registry>,
) -> Result<(Arc<tiny_http::Server>, std::thread::JoinHandle<()>), MonitorError> {
    let server = tiny_http::Server::http(addr).map_err(|e| MonitorError::Listen {
        addr,
        why: e.to_string(),
    })?;
    let server = Arc::new(server);
    let serving = server.clone();
    let thread = std::thread::Builder::new()
        .name("rtlab-metrics".into())
        .spawn(move || {
            for request in serving.incoming_requests() {
                let response =
                    if request.url() == "/metrics" && *request.method() == tiny_http::Method::Get {
                        let body = tiny_http::Response::from_string(metrics::encode(&registry));
                        match tiny_http::Header::from_bytes("Content-Type", CONTENT_TYPE) {
                            Ok(header) => body.with_header(header),
                            Err(()) => body,
                        }
                    } else {
                        tiny_http::Response::from_string("rtlab: the metrics are at /metrics\n")
                            .with_status_code(404)
                    };
                let _ = request.respond(response);
            }
        })
        .map_err(|e| MonitorError::Listen {
            addr,
            why: e.to_string(),
        })?;
    Ok((server, thread))
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

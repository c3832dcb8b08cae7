//! The `/metrics` endpoint: one thread, non-blocking sockets and `poll(2)`,
//! so that no client can hold it, exhaust it or delay the end of a run.
//!
//! - Every limit is fixed: [`MAX_CONNECTIONS`] connections (a new one
//!   closes the one that has made no progress for longest), request heads
//!   of at most [`MAX_HEAD`] bytes parsed by `httparse`, [`HEAD_TIME`] to
//!   send a head once begun, [`IDLE_TIME`] between requests, [`WRITE_TIME`]
//!   to take a response. No request body is read.
//! - A client that never reads costs one connection until [`WRITE_TIME`]:
//!   the thread never blocks on a socket, and pipelined requests wait in
//!   the kernel's buffers while a response is being taken.
//! - Out of descriptors (EMFILE), the endpoint closes its oldest connection,
//!   pauses accepting for a moment, counts it, and goes on.
//! - [`Endpoint::stop`] returns within [`TICK`] plus one pass of the loop.
//!
//! HEAD answers as GET does without the body; other methods get 405.
//! Content is negotiated as Prometheus exporters do: OpenMetrics only to a
//! client that prefers it (Prometheus itself does), the classic text
//! format 0.0.4 to any other.

use super::metrics;
use prometheus_client::registry::Registry;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// Connections held at once.
pub const MAX_CONNECTIONS: usize = 32;
/// Largest request head (request line and headers).
pub const MAX_HEAD: usize = 8 << 10;
/// Most headers in one request.
const MAX_HEADERS: usize = 32;
/// Time to send a whole request head once its first byte came.
pub const HEAD_TIME: Duration = Duration::from_secs(10);
/// Time a connection may wait, idle, for its next request.
pub const IDLE_TIME: Duration = Duration::from_secs(30);
/// Time a client has to take a whole response.
pub const WRITE_TIME: Duration = Duration::from_secs(10);
/// Longest wait of the loop: how soon it sees a stop.
pub const TICK: Duration = Duration::from_millis(100);
/// How long accepting pauses after the process ran out of descriptors.
const FD_PAUSE: Duration = Duration::from_millis(200);

/// The OpenMetrics content type.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The classic Prometheus text format's content type.
pub const TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What went wrong with the endpoint while it served.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Health {
    /// Why it stopped serving before it was asked to, if it did.
    pub died: Option<String>,
    /// Connections it could not accept for want of file descriptors.
    pub out_of_descriptors: u64,
}

/// The figures' generation and their OpenMetrics and classic encodings.
type Bodies = (u64, Arc<Vec<u8>>, Arc<Vec<u8>>);

/// The serving thread and how to stop it.
pub struct Endpoint {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    health: Arc<Mutex<Health>>,
    done: mpsc::Receiver<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The bodies the thread encodes, once per generation of the figures.
pub struct Source {
    /// The registry to encode.
    pub registry: Arc<Registry>,
    /// Bumped by each update of the figures.
    pub generation: Arc<AtomicU64>,
}

impl Endpoint {
    /// Listens on `addr` and serves `source` from a thread of its own.
    pub fn start(addr: SocketAddr, source: Source) -> std::io::Result<Endpoint> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let health = Arc::new(Mutex::new(Health::default()));
        let (tx, done) = mpsc::channel();
        let (s, h) = (stop.clone(), health.clone());
        let thread = std::thread::Builder::new()
            .name("rtlab-metrics".into())
            .spawn(move || {
                let ended = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    Server::new(listener, source, h.clone()).run(&s)
                }));
                if !s.load(Ordering::Relaxed) {
                    let why = match ended {
                        Ok(Ok(())) => "it stopped".to_string(),
                        Ok(Err(e)) => format!("waiting for clients failed: {e}"),
                        Err(_) => "its thread panicked".to_string(),
                    };
                    if let Ok(mut h) = h.lock() {
                        h.died = Some(why);
                    }
                }
                let _ = tx.send(());
            })?;
        Ok(Endpoint {
            addr,
            stop,
            health,
            done,
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What went wrong so far.
    pub fn health(&self) -> Health {
        self.health.lock().map(|h| h.clone()).unwrap_or_default()
    }

    /// Marks the endpoint dead, as its thread does when it fails (for the
    /// tests of what is said then).
    #[cfg(test)]
    pub(crate) fn mark_dead(&self, why: &str) {
        if let Ok(mut h) = self.health.lock() {
            h.died = Some(why.into());
        }
    }

    /// Closes the endpoint and every connection. Waits at most a second
    /// for the thread (it sees the stop within [`TICK`]); a thread still
    /// busy then is left to end on its own, and said so.
    pub fn stop(mut self) -> Option<String> {
        self.stop.store(true, Ordering::Relaxed);
        let thread = self.thread.take()?;
        match self.done.recv_timeout(Duration::from_secs(1)) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                let _ = thread.join();
                None
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                Some("the metrics endpoint did not close within 1 s; left to end".into())
            }
        }
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A response being taken by its client: its own head, then a body
/// shared by every connection answered in the same refresh.
struct Sending {
    head: Vec<u8>,
    body: Arc<Vec<u8>>,
    sent: usize,
    close: bool,
}

impl Sending {
    /// What is left to send, from the head or the body.
    fn rest(&self) -> &[u8] {
        match self.sent.checked_sub(self.head.len()) {
            None => &self.head[self.sent..],
            Some(in_body) => self.body.get(in_body..).unwrap_or_default(),
        }
    }

    /// The whole response, for the tests.
    #[cfg(test)]
    fn bytes(&self) -> Vec<u8> {
        [self.head.as_slice(), self.body.as_slice()].concat()
    }
}

/// One client.
struct Conn {
    stream: TcpStream,
    /// Bytes of the next request head(s), at most [`MAX_HEAD`].
    head: Vec<u8>,
    sending: Option<Sending>,
    /// When the current phase (idle, head begun, response) must end.
    deadline: Instant,
    /// When it last moved: the connection evicted first is the stalest.
    progress: Instant,
    done: bool,
}

impl Conn {
    fn new(stream: TcpStream, now: Instant) -> Conn {
        Conn {
            stream,
            head: Vec::new(),
            sending: None,
            deadline: now + IDLE_TIME,
            progress: now,
            done: false,
        }
    }
}

/// The loop's state.
struct Server {
    listener: TcpListener,
    source: Source,
    health: Arc<Mutex<Health>>,
    conns: Vec<Conn>,
    paused_until: Option<Instant>,
    /// (generation, OpenMetrics, classic text) last encoded.
    cache: Option<Bodies>,
}

impl Server {
    fn new(listener: TcpListener, source: Source, health: Arc<Mutex<Health>>) -> Server {
        Server {
            listener,
            source,
            health,
            conns: Vec::new(),
            paused_until: None,
            cache: None,
        }
    }

    fn note(&self, f: impl FnOnce(&mut Health)) {
        if let Ok(mut h) = self.health.lock() {
            f(&mut h);
        }
    }

    fn run(&mut self, stop: &AtomicBool) -> std::io::Result<()> {
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            let accepting = self.paused_until.is_none_or(|t| now >= t);
            let ready = {
                let mut waits = Vec::with_capacity(self.conns.len() + 1);
                waits.push(crate::sys::os::Wait {
                    fd: self.listener.as_fd(),
                    read: accepting,
                    write: false,
                });
                for c in &self.conns {
                    waits.push(crate::sys::os::Wait {
                        fd: c.stream.as_fd(),
                        read: c.sending.is_none(),
                        write: c.sending.is_some(),
                    });
                }
                crate::sys::os::poll(&waits, TICK)?
            };
            let now = Instant::now();
            for (c, r) in self.conns.iter_mut().zip(ready.iter().skip(1)) {
                if r.read || r.write || r.broken {
                    c.progress_io(now, &mut self.cache, &self.source);
                }
            }
            if accepting && ready.first().is_some_and(|r| r.read) {
                self.accept(now);
            }
            self.conns.retain(|c| !c.done && now < c.deadline);
        }
        Ok(())
    }

    /// Takes every waiting connection (bounded per pass).
    fn accept(&mut self, now: Instant) {
        for _ in 0..MAX_CONNECTIONS {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    if stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    if self.conns.len() >= MAX_CONNECTIONS {
                        self.evict_stalest();
                    }
                    self.conns.push(Conn::new(stream, now));
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::ConnectionAborted => {}
                Err(e) => {
                    // EMFILE, ENFILE: the stalest connection gives its
                    // descriptor to the new one. Nothing to close, or
                    // another error (ENOBUFS...): pause, so the listener's
                    // readiness does not spin the loop.
                    let out_of_fds = matches!(e.raw_os_error(),
                        Some(n) if n == crate::sys::consts::EMFILE || n == crate::sys::consts::ENFILE);
                    if out_of_fds {
                        self.note(|h| h.out_of_descriptors += 1);
                    }
                    if !out_of_fds || self.conns.is_empty() {
                        self.paused_until = Some(now + FD_PAUSE);
                        return;
                    }
                    self.evict_stalest();
                }
            }
        }
    }

    fn evict_stalest(&mut self) {
        if let Some(i) = (0..self.conns.len()).min_by_key(|&i| self.conns[i].progress) {
            self.conns.swap_remove(i);
        }
    }
}

impl Conn {
    /// Reads, answers and writes what the socket allows now, never waiting.
    fn progress_io(&mut self, now: Instant, cache: &mut Option<Bodies>, source: &Source) {
        if self.sending.is_none() {
            self.read_head(now);
        }
        // A response, then the next pipelined request, while it goes.
        while !self.done {
            if self.sending.is_none() && !self.answer(now, cache, source) {
                return;
            }
            if !self.write(now) {
                return;
            }
        }
    }

    /// Reads until the socket has nothing more or the head is full.
    fn read_head(&mut self, now: Instant) {
        let mut chunk = [0u8; 2048];
        while self.head.len() <= MAX_HEAD {
            match self.stream.read(&mut chunk) {
                Ok(0) => {
                    self.done = true;
                    return;
                }
                Ok(n) => {
                    if self.head.is_empty() {
                        self.deadline = now + HEAD_TIME;
                    }
                    let room = (MAX_HEAD + 1).saturating_sub(self.head.len());
                    self.head.extend_from_slice(&chunk[..n.min(room)]);
                    self.progress = now;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    self.done = true;
                    return;
                }
            }
        }
    }

    /// Parses a buffered head and starts its response; false when no whole
    /// head is buffered yet.
    fn answer(&mut self, now: Instant, cache: &mut Option<Bodies>, source: &Source) -> bool {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        let (used, response) = match req.parse(&self.head) {
            Ok(httparse::Status::Complete(used)) => match framing(&req, &self.head[..used]) {
                Ok(()) => {
                    let ask = Asked::from(&req);
                    (used, ask.respond(|om| body(cache, source, om)))
                }
                Err(why) => (self.head.len(), error(400, why)),
            },
            Ok(httparse::Status::Partial) if self.head.len() > MAX_HEAD => {
                (self.head.len(), error(431, "request head too large"))
            }
            Ok(httparse::Status::Partial) => return false,
            Err(httparse::Error::TooManyHeaders) => {
                (self.head.len(), error(431, "too many headers"))
            }
            Err(_) => (self.head.len(), error(400, "not an HTTP request")),
        };
        self.head.drain(..used.min(self.head.len()));
        self.sending = Some(response);
        self.deadline = now + WRITE_TIME;
        true
    }

    /// Writes what the socket takes; true when the response is all sent.
    fn write(&mut self, now: Instant) -> bool {
        let Some(s) = self.sending.as_mut() else {
            return true;
        };
        while !s.rest().is_empty() {
            match self.stream.write(s.rest()) {
                Ok(0) => {
                    self.done = true;
                    return false;
                }
                Ok(n) => {
                    s.sent += n;
                    self.progress = now;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    self.done = true;
                    return false;
                }
            }
        }
        self.done = s.close;
        self.sending = None;
        self.deadline = now
            + if self.head.is_empty() {
                IDLE_TIME
            } else {
                HEAD_TIME
            };
        true
    }
}

/// The figures as `openmetrics` or classic text, encoded once per
/// generation.
fn body(cache: &mut Option<Bodies>, source: &Source, openmetrics: bool) -> Arc<Vec<u8>> {
    let generation = source.generation.load(Ordering::Relaxed);
    let fresh = match cache {
        Some((g, om, text)) if *g == generation => (om.clone(), text.clone()),
        _ => {
            let om = metrics::encode(&source.registry);
            let text = super::prometheus_text(&om);
            let bodies = (Arc::new(om.into_bytes()), Arc::new(text.into_bytes()));
            *cache = Some((generation, bodies.0.clone(), bodies.1.clone()));
            bodies
        }
    };
    if openmetrics { fresh.0 } else { fresh.1 }
}

/// Refuses a head whose framing two HTTP parsers could read differently
/// (request smuggling, RFC 9112 §6.3 and §2.2): `Content-Length` values
/// that differ or are not numbers, `Content-Length` beside
/// `Transfer-Encoding`, and a line ended by a bare LF (a proxy in front may
/// not end the line there). The connection closes after the 400.
fn framing(req: &httparse::Request<'_, '_>, head: &[u8]) -> Result<(), &'static str> {
    let bare_lf = head
        .iter()
        .enumerate()
        .any(|(i, &b)| b == b'\n' && (i == 0 || head[i - 1] != b'\r'));
    if bare_lf {
        return Err("a line of the request ends without CR LF");
    }
    let named = |name: &'static str| {
        req.headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
    };
    let mut length: Option<&[u8]> = None;
    for value in named("content-length").map(|h| h.value) {
        // A list (`5, 5`) counts as its values.
        for v in value.split(|&b| b == b',') {
            let v = v.trim_ascii();
            if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
                return Err("a Content-Length that is not a number");
            }
            if length.is_some_and(|l| l != v) {
                return Err("Content-Length values that differ");
            }
            length = Some(v);
        }
    }
    if length.is_some() && named("transfer-encoding").next().is_some() {
        return Err("both Content-Length and Transfer-Encoding");
    }
    Ok(())
}

/// What a request asks, as far as the endpoint cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    /// The method.
    pub method: String,
    /// The path, without its query.
    pub path: String,
    /// The Accept header, empty when absent.
    pub accept: String,
    /// Whether the client wants the connection closed after the answer.
    pub close: bool,
    /// Whether it sends a body (never read: the connection then closes).
    pub has_body: bool,
}

impl Asked {
    fn from(req: &httparse::Request<'_, '_>) -> Asked {
        let header = |name: &str| {
            req.headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
        };
        let connection = header("connection").unwrap_or_default();
        let http10 = req.version == Some(0);
        Asked {
            method: req.method.unwrap_or_default().to_string(),
            path: req
                .path
                .unwrap_or_default()
                .split('?')
                .next()
                .unwrap_or_default()
                .to_string(),
            accept: header("accept").unwrap_or_default(),
            close: connection.contains("close") || (http10 && !connection.contains("keep-alive")),
            has_body: header("transfer-encoding").is_some()
                || header("content-length").is_some_and(|l| l != "0"),
        }
    }

    /// The whole response to this request; `body(openmetrics)` gives the
    /// figures in the chosen format.
    fn respond(&self, body: impl FnOnce(bool) -> Arc<Vec<u8>>) -> Sending {
        let close = self.close || self.has_body;
        let (status, kind, content, extra): (u16, &str, Arc<Vec<u8>>, &str) =
            match (self.method.as_str(), self.path.as_str()) {
                ("GET" | "HEAD", "/metrics") => {
                    let om = wants_openmetrics(&self.accept);
                    let kind = if om { OPENMETRICS } else { TEXT };
                    (200, kind, body(om), "")
                }
                (_, "/metrics") => (
                    405,
                    "text/plain; charset=utf-8",
                    Arc::new(b"rtlab: /metrics answers GET and HEAD\n".to_vec()),
                    "Allow: GET, HEAD\r\n",
                ),
                _ => (
                    404,
                    "text/plain; charset=utf-8",
                    Arc::new(b"rtlab: the metrics are at /metrics\n".to_vec()),
                    "",
                ),
            };
        let head = format!(
            "HTTP/1.1 {status} {}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n{extra}{}\r\n",
            reason(status),
            content.len(),
            if close { "Connection: close\r\n" } else { "" }
        )
        .into_bytes();
        Sending {
            head,
            body: if self.method == "HEAD" {
                Arc::default()
            } else {
                content
            },
            sent: 0,
            close,
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        _ => "Error",
    }
}

/// An error answer; the connection closes after it.
fn error(status: u16, why: &str) -> Sending {
    let text = format!("rtlab: {why}\n");
    Sending {
        head: format!(
            "HTTP/1.1 {status} {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
            reason(status),
            text.len()
        )
        .into_bytes(),
        body: Arc::default(),
        sent: 0,
        close: true,
    }
}

/// Whether an Accept header prefers OpenMetrics to the classic text format
/// (by their `q` weights; ties go to OpenMetrics, as Prometheus's own
/// client libraries decide). No Accept header: the classic text.
pub fn wants_openmetrics(accept: &str) -> bool {
    let (mut om, mut text) = (0.0f64, 0.0f64);
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let kind = parts.next().unwrap_or_default().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.strip_prefix("q="))
            .find_map(|q| q.parse::<f64>().ok())
            .filter(|q| (0.0..=1.0).contains(q))
            .unwrap_or(1.0);
        match kind.as_str() {
            "application/openmetrics-text" => om = om.max(q),
            "text/plain" | "text/*" | "*/*" => text = text.max(q),
            _ => {}
        }
    }
    om > 0.0 && om >= text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_negotiated_as_prometheus_exporters_do() {
        // What Prometheus 2.x and 3.x send: OpenMetrics preferred.
        assert!(wants_openmetrics(
            "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
        ));
        assert!(wants_openmetrics("application/openmetrics-text"));
        // The classic format, asked or by default.
        assert!(!wants_openmetrics("text/plain;version=0.0.4"));
        assert!(!wants_openmetrics(""));
        assert!(!wants_openmetrics("*/*"));
        assert!(!wants_openmetrics(
            "application/openmetrics-text;q=0.2,text/plain;q=0.9"
        ));
        assert!(!wants_openmetrics("application/openmetrics-text;q=0"));
        assert!(!wants_openmetrics("application/json"));
    }

    fn asked(method: &str, path: &str) -> Asked {
        Asked {
            method: method.into(),
            path: path.into(),
            accept: String::new(),
            close: false,
            has_body: false,
        }
    }

    #[test]
    fn head_answers_as_get_without_the_body_and_other_methods_get_405() {
        let figures = || Arc::new(b"x 1\n".to_vec());
        let get =
            String::from_utf8(asked("GET", "/metrics").respond(|_| figures()).bytes()).unwrap();
        let head =
            String::from_utf8(asked("HEAD", "/metrics").respond(|_| figures()).bytes()).unwrap();
        assert!(get.starts_with("HTTP/1.1 200 OK\r\n"), "{get}");
        assert!(get.ends_with("\r\n\r\nx 1\n"), "{get}");
        assert_eq!(head, get.trim_end_matches("x 1\n"));
        assert!(head.contains(&format!("Content-Type: {TEXT}")));
        for m in ["POST", "PUT", "DELETE", "OPTIONS", "TRACE", "BREW"] {
            let r = String::from_utf8(asked(m, "/metrics").respond(|_| figures()).bytes()).unwrap();
            assert!(
                r.starts_with("HTTP/1.1 405 ") && r.contains("Allow: GET, HEAD"),
                "{r}"
            );
        }
        let r = String::from_utf8(asked("GET", "/").respond(|_| figures()).bytes()).unwrap();
        assert!(r.starts_with("HTTP/1.1 404 "), "{r}");
        // A body is never read: the connection closes after the answer.
        let mut post = asked("POST", "/metrics");
        post.has_body = true;
        assert!(post.respond(|_| figures()).close);
    }

    fn framed(head: &str) -> Result<(), &'static str> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(head.as_bytes()) {
            Ok(httparse::Status::Complete(used)) => framing(&req, &head.as_bytes()[..used]),
            other => panic!("{head:?}: {other:?}"),
        }
    }

    #[test]
    fn heads_two_parsers_could_frame_differently_are_refused() {
        for ok in [
            "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
            "POST /metrics HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
            "POST /metrics HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n",
            "POST /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
        ] {
            assert_eq!(framed(ok), Ok(()), "{ok:?}");
        }
        for (bad, why) in [
            (
                "GET /metrics HTTP/1.1\r\nContent-Length: 0\r\nContent-Length: 50\r\n\r\n",
                "differ",
            ),
            (
                "GET /metrics HTTP/1.1\r\nContent-Length: 0, 50\r\n\r\n",
                "differ",
            ),
            (
                "GET /metrics HTTP/1.1\r\nContent-Length: +5\r\n\r\n",
                "not a number",
            ),
            (
                "GET /metrics HTTP/1.1\r\nContent-Length: \r\n\r\n",
                "not a number",
            ),
            (
                "POST /metrics HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
                "both",
            ),
            ("GET /metrics HTTP/1.1\nHost: a\n\n", "CR LF"),
            ("GET /metrics HTTP/1.1\r\nHost: a\n\r\n", "CR LF"),
        ] {
            let refused = framed(bad).unwrap_err();
            assert!(refused.contains(why), "{bad:?}: {refused}");
        }
    }
}

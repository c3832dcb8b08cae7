//! The attacks of the hardening audit on `rtlab monitor`'s endpoint,
//! replayed on loopback, each bounded in count and time: a client that
//! pipelines requests and never reads (the run must still end, restore and
//! write its results), a header line without end (memory stays flat),
//! hundreds of idle and half-sent connections under a small `ulimit -n`
//! (the endpoint goes on, with a bounded number of threads, and says it
//! ran out of descriptors), and the protocol as Prometheus speaks it (HEAD,
//! 405, content negotiation, `promtool check metrics` on the classic
//! text). Runs as any user (SCHED_OTHER timer).

use crate::fixtures::{has_command, path_taken, text, wait_output_within, wait_until};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The endpoint's own bound on a client that does not take its response
/// (`rtlab::monitor::endpoint::WRITE_TIME`): an end that waited on the
/// client would come after it.
const WRITE_TIME: Duration = rtlab::monitor::endpoint::WRITE_TIME;

/// Starts `rtlab monitor` on a free port, with `ulimit -n` set when asked;
/// gives the child and its port once the endpoint answers.
fn start(dir: &Path, nofile: Option<u32>) -> (Child, u16) {
    std::fs::write(
        dir.join("m.cfg"),
        "main\n{\n  stats.period 200 ms\n}\ntimer_thread[0]\n{\n  timer.period 1 ms\n}\n",
    )
    .unwrap();
    let port = super::monitor::free_port();
    let limit = nofile.map_or(String::new(), |n| format!("ulimit -n {n} && "));
    let child = Command::new("sh")
        .args([
            "-c",
            &format!("{limit}exec \"$0\" monitor m.cfg --listen 127.0.0.1:{port} --json r.json"),
            env!("CARGO_BIN_EXE_rtlab"),
        ])
        .current_dir(dir)
        .env("RTLAB_JOURNAL_DIR", dir.join("journal"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(30), || super::monitor::http_get(
            port, "/metrics"
        )
        .is_some()),
        "the endpoint never answered"
    );
    (child, port)
}

/// Sends `signal` and waits (60 s at most) for the end; the output and how
/// long the end took.
fn end(child: Child, signal: &str) -> (Output, Duration) {
    let pid = child.id().to_string();
    let t0 = Instant::now();
    let _ = Command::new("kill").args([signal, &pid]).status();
    let o = wait_output_within(child, Duration::from_secs(60));
    (o, t0.elapsed())
}

fn status_line(port: u16, request: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

fn rss_kib(pid: u32) -> u64 {
    super::monitor::rss_kib(pid).unwrap_or(0)
}

fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count())
}

#[test]
fn a_client_that_never_reads_cannot_hold_the_end_of_a_run() {
    let _machine = crate::fixtures::machine_shared();
    for signal in ["-TERM", "-INT"] {
        let dir = tempfile::tempdir().unwrap();
        let (child, port) = start(dir.path(), None);
        // Pipelined requests, never a byte read: bounded in count, and in
        // time by the socket filling up.
        let mut hog = TcpStream::connect(("127.0.0.1", port)).unwrap();
        hog.set_nonblocking(true).unwrap();
        let request = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
        let mut sent = 0;
        let until = Instant::now() + Duration::from_secs(5);
        while sent < 50_000 && Instant::now() < until {
            match hog.write(request) {
                Ok(_) => sent += 1,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Err(_) => break,
            }
        }
        // Another client is still served meanwhile.
        assert!(super::monitor::http_get(port, "/metrics").is_some());
        let (o, took) = end(child, signal);
        eprintln!("{signal}: {sent} requests pipelined and never read; rtlab ended in {took:?}");
        let code = if signal == "-TERM" { 143 } else { 130 };
        assert_eq!(o.status.code(), Some(code), "{}", text(&o));
        assert!(
            took < WRITE_TIME,
            "the end waited on the client: {took:?}\n{}",
            text(&o)
        );
        assert!(dir.path().join("r.json").exists(), "{}", text(&o));
        drop(hog);
    }
}

#[test]
fn a_header_without_end_does_not_grow_memory() {
    let _machine = crate::fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let (child, port) = start(dir.path(), None);
    let before = rss_kib(child.id());
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nX-Long: ").unwrap();
    let chunk = vec![b'a'; 64 << 10];
    let mut sent = 0usize;
    let until = Instant::now() + Duration::from_secs(10);
    while sent < (256 << 20) && Instant::now() < until {
        match s.write(&chunk) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let after = rss_kib(child.id());
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut answer = vec![0u8; 256];
    let n = s.read(&mut answer).unwrap_or(0);
    let answer = String::from_utf8_lossy(&answer[..n]).to_string();
    eprintln!(
        "{} KiB sent without CRLF; RSS {before} -> {after} KiB; answer {:?}",
        sent >> 10,
        answer.lines().next()
    );
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer:?}");
    assert!(
        after < before + 4096,
        "RSS grew from {before} to {after} KiB"
    );
    assert!(super::monitor::http_get(port, "/metrics").is_some());
    let (o, _) = end(child, "-TERM");
    assert_eq!(o.status.code(), Some(143), "{}", text(&o));
}

#[test]
fn idle_connections_cannot_take_every_descriptor() {
    let _machine = crate::fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    // 24 descriptors: the run's own (about 11) and fewer connections than
    // the endpoint's cap, so that accepting runs into EMFILE.
    let (child, port) = start(dir.path(), Some(24));
    let pid = child.id();
    // Counted once the run has started all its threads: a first scrape
    // answered, and the count the same twice 100 ms apart.
    assert!(wait_until(Duration::from_secs(10), || {
        super::monitor::http_get(port, "/metrics").is_some()
    }));
    let mut before = threads(pid);
    let settled = Instant::now() + Duration::from_secs(5);
    while Instant::now() < settled {
        std::thread::sleep(Duration::from_millis(100));
        let now = threads(pid);
        if now == before {
            break;
        }
        before = now;
    }
    let mut held = Vec::new();
    let until = Instant::now() + Duration::from_secs(20);
    while held.len() < 600 && Instant::now() < until {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        if let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
            // Half of them begin a request and never finish it.
            if held.len() % 2 == 1 {
                let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nHost: ");
            }
            held.push(s);
        }
    }
    let during = threads(pid);
    eprintln!(
        "{} connections held open; rtlab's threads {before} -> {during}",
        held.len()
    );
    assert_eq!(during, before, "a thread per connection");
    assert!(
        wait_until(Duration::from_secs(10), || super::monitor::http_get(
            port, "/metrics"
        )
        .is_some()),
        "a scrape was not answered with {} connections held",
        held.len()
    );
    let (o, _) = end(child, "-TERM");
    drop(held);
    assert_eq!(o.status.code(), Some(143), "{}", text(&o));
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
    let warned = result["warnings"].as_array().unwrap().iter().any(|w| {
        w.as_str()
            .unwrap_or("")
            .contains("ran out of file descriptors")
    });
    assert!(warned, "{}", result["warnings"]);
    assert!(
        text(&o).contains("ran out of file descriptors"),
        "{}",
        text(&o)
    );
}

#[test]
fn the_endpoint_speaks_http_as_prometheus_expects() {
    let _machine = crate::fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let (child, port) = start(dir.path(), None);
    let ask = |method: &str, accept: Option<&str>| {
        let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
        status_line(
            port,
            &format!("{method} /metrics HTTP/1.1\r\nHost: x\r\n{accept}Connection: close\r\n\r\n"),
        )
    };
    let classic = ask("GET", Some("text/plain;version=0.0.4"));
    assert!(classic.starts_with("HTTP/1.1 200"), "{classic}");
    assert!(
        classic.contains("Content-Type: text/plain; version=0.0.4"),
        "{classic}"
    );
    assert!(!classic.contains("# EOF"), "{classic}");
    let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    let om = ask("GET", Some(prometheus));
    assert!(
        om.contains("Content-Type: application/openmetrics-text"),
        "{om}"
    );
    assert!(om.trim_end().ends_with("# EOF"), "{om}");
    let head = ask("HEAD", None);
    let (head_head, head_body) = head.split_once("\r\n\r\n").unwrap();
    assert!(head_head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head_body.is_empty(), "{head}");
    assert!(head_head.contains("Content-Length: "), "{head}");
    for method in ["POST", "PUT", "DELETE", "OPTIONS"] {
        let r = ask(method, None);
        assert!(r.starts_with("HTTP/1.1 405"), "{method}: {r}");
        assert!(r.contains("Allow: GET, HEAD"), "{method}: {r}");
    }
    assert!(status_line(port, "nonsense\r\n\r\n").starts_with("HTTP/1.1 400"));
    if has_command("promtool") {
        path_taken(
            "the_endpoint_speaks_http_as_prometheus_expects",
            "promtool checks the classic scrape",
        );
        let body = classic.split_once("\r\n\r\n").unwrap().1;
        let mut check = Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        check
            .stdin
            .take()
            .unwrap()
            .write_all(body.as_bytes())
            .unwrap();
        let o = check.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
    } else {
        path_taken(
            "the_endpoint_speaks_http_as_prometheus_expects",
            "no promtool: the classic scrape's format checked by its headers alone",
        );
    }
    let (o, _) = end(child, "-TERM");
    assert_eq!(o.status.code(), Some(143), "{}", text(&o));
}

#[test]
fn requests_two_parsers_could_frame_differently_are_refused_and_closed() {
    let _machine = crate::fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let (child, port) = start(dir.path(), None);
    // Each smuggles a second request (a 404) after the first's framing.
    let second = "GET /smuggled HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let n = second.len();
    for first in [
        // The audit's: the first length served, the body read as a request.
        format!("GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: {n}\r\n\r\n"),
        format!("GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0, {n}\r\n\r\n"),
        "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n".into(),
        "GET /metrics HTTP/1.1\nHost: x\nContent-Length: 0\n\n".into(),
    ] {
        let answer = status_line(port, &format!("{first}{second}"));
        assert!(answer.starts_with("HTTP/1.1 400"), "{first:?}: {answer}");
        assert_eq!(answer.matches("HTTP/1.1").count(), 1, "{first:?}: {answer}");
        assert!(answer.contains("Connection: close"), "{answer}");
    }
    // A request framed one way only is still served, and the next with it.
    let fine = status_line(
        port,
        &format!("GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n{second}"),
    );
    assert!(fine.starts_with("HTTP/1.1 200"), "{fine}");
    assert!(fine.contains("HTTP/1.1 404"), "{fine}");
    let (o, _) = end(child, "-TERM");
    assert_eq!(o.status.code(), Some(143), "{}", text(&o));
}

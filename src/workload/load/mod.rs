//! `rtlab load KIND`: built-in loads that need no other package, each a
//! program of its own (so that an experiment file starts it with `cmdline
//! rtlab load ipc --groups 10` and stays systress-compatible), each
//! printing its throughput:
//!
//! - `cpu`: a spin loop with a duty cycle (`--duty 50` spins half of each
//!   `--period`);
//! - `memory`: copies between two buffers larger than the last-level cache
//!   (4 × its size by default), so that every copy goes to memory;
//! - `io`: writes, syncs, reads back and deletes files of bounded size in a
//!   private directory it makes and removes;
//! - `ipc`: hackbench's pattern: groups of 20 senders and 20 receivers, each
//!   sender writing 100-byte messages to every receiver of its group, over
//!   socket pairs (or pipes);
//! - `net`: a TCP stream over loopback (the softirq path of a network
//!   load);
//! - `timers`: threads sleeping short relative sleeps (the hrtimer path).
//!
//! Workers count their units in one atomic each; the main thread prints
//! `load KIND: RATE UNIT/s` every `--interval` and a total at the end
//! (`--duration`, SIGTERM or SIGINT), and stops the workers.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

mod kinds;

pub use kinds::{GROUP_FDS, Kind};

/// The standard mix for `cpus` CPUs, rteval's loaded conditions without
/// another package: hackbench's groups as rteval runs them (3 per CPU,
/// 1000-byte messages), a kernel compile's CPU, memory and file-system
/// load as spinning at half duty on every CPU, memory copies beyond the
/// cache and synced files, and the network and timer paths. Each is the
/// arguments of `rtlab` for one program.
pub fn standard_mix(cpus: usize) -> Vec<Vec<String>> {
    let cpus = cpus.max(1).to_string();
    let groups = (3 * cpus.parse::<usize>().unwrap_or(1)).to_string();
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        words(&["load", "ipc", "--groups", &groups, "--size", "1000"]),
        words(&["load", "cpu", "--threads", &cpus, "--duty", "50"]),
        words(&["load", "memory"]),
        words(&["load", "io", "--size", "64M"]),
        words(&["load", "net"]),
        words(&["load", "timers"]),
    ]
}

/// The same conditions from stress-ng, where it is installed: one
/// program's whole command line.
pub fn stress_ng_mix(cpus: usize) -> Vec<String> {
    let cpus = cpus.max(1).to_string();
    [
        "stress-ng",
        "--cpu",
        &cpus,
        "--cpu-load",
        "50",
        "--sock",
        "1",
        "--vm",
        "1",
        "--vm-bytes",
        "256M",
        "--hdd",
        "1",
        "--hdd-bytes",
        "64M",
        "--timer",
        "1",
        "--metrics-brief",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// What every load shares: how long, how often it reports.
#[derive(Debug, Clone)]
pub struct Common {
    /// Report every this long.
    pub interval: Duration,
    /// Stop after this long (None: until a signal).
    pub duration: Option<Duration>,
    /// Worker threads (or groups for `ipc`).
    pub workers: usize,
}

/// What the workers share with the reporter.
#[derive(Debug, Default)]
pub struct Shared {
    /// Units done (loops, bytes, messages, wake-ups).
    pub done: AtomicU64,
    /// Set when the load must stop (by SIGTERM and SIGINT too).
    pub stop: Arc<AtomicBool>,
    /// The first error a worker met (the load ends with it).
    pub error: std::sync::Mutex<Option<String>>,
}

impl Shared {
    /// Counts `n` units.
    pub fn add(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }

    /// Whether the load must stop.
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Keeps the first error and stops the load.
    pub fn fail(&self, what: String) {
        if let Ok(mut e) = self.error.lock() {
            e.get_or_insert(what);
        }
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// How a load reports its units.
pub struct Unit {
    /// Singular name for the lines (`loops`, `MB`, `messages`).
    pub name: &'static str,
    /// Units per counted unit (bytes → MB: 1e-6).
    pub scale: f64,
}

/// Runs `kind` with `common`, printing to `out`; returns the exit status
/// (0, or 1 when a worker failed).
pub fn run(kind: &Kind, common: &Common, out: &mut dyn Write) -> i32 {
    let shared = Arc::new(Shared::default());
    for sig in [crate::sys::consts::SIGTERM, crate::sys::consts::SIGINT] {
        let _ = signal_hook::flag::register(sig, shared.stop.clone());
    }
    let started = match kinds::start(kind, common, &shared) {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(out, "load {}: cannot start: {e}", kind.name());
            return 1;
        }
    };
    let unit = kind.unit();
    report(kind.name(), &unit, common, &shared, out);
    shared.stop.store(true, Ordering::Relaxed);
    if let Some(left) = started.finish() {
        let _ = writeln!(out, "load {}: {left}", kind.name());
    }
    // What the kernel counted for the load, its workers included: a check
    // of the throughput from another source (a wake-up is a voluntary
    // switch, a synced byte a written block).
    if let Some(u) = crate::sys::os::process_usage() {
        let _ = writeln!(
            out,
            "load {}: kernel: {} voluntary switches, {} involuntary, {} blocks in, {} blocks out, {:.2} s of CPU",
            kind.name(),
            u.voluntary_switches,
            u.involuntary_switches,
            u.blocks_in,
            u.blocks_out,
            u.cpu_us as f64 / 1e6
        );
        let _ = out.flush();
    }
    let error = shared.error.lock().ok().and_then(|e| e.clone());
    match error {
        Some(e) => {
            let _ = writeln!(out, "load {}: {e}", kind.name());
            1
        }
        None => 0,
    }
}

/// Prints the rate every interval until the duration or a stop, then the
/// total.
fn report(name: &str, unit: &Unit, common: &Common, shared: &Shared, out: &mut dyn Write) {
    let start = Instant::now();
    let (mut mark, mut counted) = (start, 0u64);
    loop {
        let next = mark + common.interval;
        let end = common.duration.map(|d| start + d);
        let wake = end.map_or(next, |e| e.min(next));
        while Instant::now() < wake && !shared.stopping() {
            std::thread::sleep(Duration::from_millis(10).min(wake - Instant::now()));
        }
        let now = Instant::now();
        let done = shared.done.load(Ordering::Relaxed);
        let finished = shared.stopping() || end.is_some_and(|e| now >= e);
        if now > mark {
            let rate = (done - counted) as f64 * unit.scale / (now - mark).as_secs_f64();
            let line = format!("load {name}: {} {}/s", rate_text(rate), unit.name);
            if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
                return;
            }
        }
        (mark, counted) = (now, done);
        if finished {
            let secs = (now - start).as_secs_f64().max(1e-9);
            let total = done as f64 * unit.scale;
            let _ = writeln!(
                out,
                "load {name}: total {} {} in {secs:.1} s, mean {} {}/s",
                rate_text(total),
                unit.name,
                rate_text(total / secs),
                unit.name
            );
            let _ = out.flush();
            return;
        }
    }
}

fn rate_text(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

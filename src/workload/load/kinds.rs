//! The loads' workers. Each counts its units in [`Shared::add`] and
//! returns when [`Shared::stopping`]; a worker that meets an error stops
//! the load with it ([`Shared::fail`]).

use super::{Common, Shared, Unit};
use crate::sys::scratch::{Removed, ScratchDir};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A load and its parameters.
#[derive(Debug, Clone)]
pub enum Kind {
    /// Spin `duty` % of each `period`.
    Cpu {
        /// Percent spinning.
        duty: u32,
        /// The cycle.
        period: Duration,
    },
    /// Copy between two buffers.
    Memory {
        /// Each buffer's size.
        bytes: usize,
    },
    /// Write, sync, read back and delete files in a directory of its own.
    Io {
        /// Where that directory is made.
        dir: PathBuf,
        /// Each file's size.
        bytes: u64,
    },
    /// hackbench: groups of 20 senders and 20 receivers.
    Ipc {
        /// Pipes rather than socket pairs.
        pipes: bool,
        /// Bytes per message.
        size: usize,
    },
    /// A TCP stream over loopback.
    Net,
    /// Relative sleeps.
    Timers {
        /// Each sleep.
        sleep: Duration,
    },
}

/// Senders and receivers per hackbench group.
pub const GROUP_FDS: usize = 20;

impl Kind {
    /// Its name in the output lines.
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Cpu { .. } => "cpu",
            Kind::Memory { .. } => "memory",
            Kind::Io { .. } => "io",
            Kind::Ipc { .. } => "ipc",
            Kind::Net => "net",
            Kind::Timers { .. } => "timers",
        }
    }

    /// How its throughput is printed.
    pub fn unit(&self) -> Unit {
        let (name, scale) = match self {
            Kind::Cpu { .. } => ("loops", 1.0),
            Kind::Memory { .. } | Kind::Io { .. } | Kind::Net => ("MB", 1e-6),
            Kind::Ipc { .. } => ("messages", 1.0),
            Kind::Timers { .. } => ("wake-ups", 1.0),
        };
        Unit { name, scale }
    }
}

/// The running workers, and what to clean up after them.
pub struct Started {
    workers: Vec<JoinHandle<()>>,
    /// Closes what makes blocked workers return (ipc's write ends).
    wake: Vec<Box<dyn FnOnce() + Send>>,
    /// What the load made (io's directory), removed at the end.
    cleanup: Option<Arc<ScratchDir>>,
}

impl Started {
    /// Waits for the workers (after the stop flag), then cleans up. Says
    /// what could not be cleaned up.
    pub fn finish(self) -> Option<String> {
        for w in self.wake {
            w();
        }
        for w in self.workers {
            let _ = w.join();
        }
        let scratch = Arc::into_inner(self.cleanup?)?;
        let path = scratch.path().display().to_string();
        match scratch.remove() {
            Ok(Removed::Whole) => None,
            Ok(Removed::MovedAway) => Some(format!(
                "{path} was moved away or replaced during the load: its files were removed through the directory rtlab made, and the directory, empty, is left where it is now"
            )),
            Ok(Removed::SwappedAtTheEnd) => Some(format!(
                "{path} was swapped for another empty directory as rtlab removed it: that one was removed (empty; the owner of its parent could remove it anyway), and the directory rtlab made, emptied, is left where it was moved"
            )),
            Err(e) => Some(format!("{path}: cannot remove it: {e}")),
        }
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("rtlab-load-{name}"))
        .stack_size(128 * 1024)
        .spawn(f)
}

/// Starts the workers of `kind`.
pub fn start(kind: &Kind, c: &Common, shared: &Arc<Shared>) -> std::io::Result<Started> {
    let mut started = Started {
        workers: Vec::new(),
        wake: Vec::new(),
        cleanup: None,
    };
    match kind {
        Kind::Ipc { pipes, size } => ipc(&mut started, c.workers, *pipes, *size, shared)?,
        Kind::Io { dir, bytes } => {
            let mine = Arc::new(ScratchDir::create(dir, "rtlab-load-io")?);
            started.cleanup = Some(mine.clone());
            for i in 0..c.workers {
                let (s, scratch, n) = (shared.clone(), mine.clone(), *bytes);
                started
                    .workers
                    .push(spawn("io", move || io(&s, &scratch, &format!("f{i}"), n))?);
            }
        }
        Kind::Net => {
            for _ in 0..c.workers {
                let (reader, writer) = loopback_pair()?;
                let s = shared.clone();
                started
                    .workers
                    .push(spawn("net-rx", move || drain(&s, reader, 1))?);
                let s = shared.clone();
                started
                    .workers
                    .push(spawn("net-tx", move || stream(&s, writer))?);
            }
        }
        _ => {
            for _ in 0..c.workers {
                let (s, k) = (shared.clone(), kind.clone());
                started
                    .workers
                    .push(spawn(kind.name(), move || simple(&s, &k))?);
            }
        }
    }
    Ok(started)
}

/// cpu, memory and timers: one worker alone.
fn simple(s: &Shared, kind: &Kind) {
    match kind {
        Kind::Cpu { duty, period } => cpu(s, *duty, *period),
        Kind::Memory { bytes } => memory(s, *bytes),
        Kind::Timers { sleep } => {
            while !s.stopping() {
                std::thread::sleep(*sleep);
                s.add(1);
            }
        }
        _ => {}
    }
}

fn cpu(s: &Shared, duty: u32, period: Duration) {
    let busy = period * duty / 100;
    while !s.stopping() {
        let start = Instant::now();
        while start.elapsed() < busy {
            std::hint::black_box(crate::workload::hog::spin(
                crate::workload::hog::LOOP_ITERATIONS,
            ));
            s.add(1);
        }
        if let Some(rest) = period.checked_sub(start.elapsed())
            && duty < 100
        {
            std::thread::sleep(rest);
        }
    }
}

/// A copy's step: between two steps the worker counts and looks for the
/// stop, so that a buffer of a gigabyte (4 × a large cache) neither hides
/// the rate of a short run nor holds its end.
const MEMORY_STEP: usize = 1 << 20;

fn memory(s: &Shared, bytes: usize) {
    let step = MEMORY_STEP.min(bytes.max(1));
    // Zeroed buffers are mapped lazily; each page is written once, a step
    // at a time, before copying (a page never written reads as the shared
    // zero page, which is cache, not memory).
    let (mut a, mut b) = (vec![0u8; bytes], vec![0u8; bytes]);
    for (x, y) in a.chunks_mut(step).zip(b.chunks_mut(step)) {
        if s.stopping() {
            return;
        }
        x.fill(1);
        y.fill(2);
    }
    while !s.stopping() {
        for (from, to) in a.chunks(step).zip(b.chunks_mut(step)) {
            if s.stopping() {
                return;
            }
            to.copy_from_slice(from);
            std::hint::black_box(&mut *to);
            s.add(from.len() as u64);
        }
        std::mem::swap(&mut a, &mut b);
    }
}

/// One worker's pass after pass: write file `name` in the load's own
/// directory, sync it, read it back, delete it. Everything goes through the
/// directory's descriptor ([`ScratchDir`]): renaming the directory away and
/// planting a link at its name changes nothing.
fn io(s: &Shared, scratch: &ScratchDir, name: &str, bytes: u64) {
    let chunk = vec![0x5au8; 1 << 20];
    let mut back = vec![0u8; 1 << 20];
    while !s.stopping() {
        let result = (|| -> std::io::Result<u64> {
            let mut f = scratch.create_file(name)?;
            let mut written = 0;
            while written < bytes && !s.stopping() {
                let n = chunk.len().min((bytes - written) as usize);
                f.write_all(&chunk[..n])?;
                written += n as u64;
            }
            f.sync_all()?;
            let mut f = scratch.open_file(name)?;
            let mut read = 0;
            loop {
                let n = f.read(&mut back)?;
                if n == 0 {
                    break;
                }
                read += n as u64;
            }
            scratch.remove_file(name)?;
            Ok(written + read)
        })();
        match result {
            Ok(n) => s.add(n),
            Err(e) => return s.fail(format!("{}/{name}: {e}", scratch.path().display())),
        }
    }
}

fn loopback_pair() -> std::io::Result<(std::net::TcpStream, std::net::TcpStream)> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    let writer = std::net::TcpStream::connect(listener.local_addr()?)?;
    let (reader, _) = listener.accept()?;
    Ok((reader, writer))
}

/// Reads until EOF, counting bytes / `unit`.
fn drain(s: &Shared, mut from: impl Read, unit: u64) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => s.add(n as u64 / unit),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return s.fail(format!("read: {e}")),
        }
    }
}

fn stream(s: &Shared, mut to: std::net::TcpStream) {
    let buf = vec![0xa5u8; 64 * 1024];
    while !s.stopping() {
        if let Err(e) = to.write_all(&buf) {
            return s.fail(format!("write: {e}"));
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}

/// A receiver's end and the senders' shared end of one channel.
type Channel = (Box<dyn Read + Send>, Arc<dyn SharedWrite>);

/// A write end that many senders share (`&UnixStream`, `&PipeWriter`).
trait SharedWrite: Send + Sync {
    fn send(&self, bytes: &[u8]) -> std::io::Result<()>;
}

impl SharedWrite for std::os::unix::net::UnixStream {
    fn send(&self, bytes: &[u8]) -> std::io::Result<()> {
        (&*self).write_all(bytes)
    }
}

impl SharedWrite for std::io::PipeWriter {
    fn send(&self, bytes: &[u8]) -> std::io::Result<()> {
        (&*self).write_all(bytes)
    }
}

fn channel(pipes: bool) -> std::io::Result<Channel> {
    if pipes {
        let (r, w) = std::io::pipe()?;
        Ok((Box::new(r), Arc::new(w)))
    } else {
        let (r, w) = std::os::unix::net::UnixStream::pair()?;
        Ok((Box::new(r), Arc::new(w)))
    }
}

/// hackbench's groups: each receiver has a channel; each sender writes a
/// message to every receiver of its group in turn, until the stop.
fn ipc(
    started: &mut Started,
    groups: usize,
    pipes: bool,
    size: usize,
    shared: &Arc<Shared>,
) -> std::io::Result<()> {
    for _ in 0..groups {
        let mut ends = Vec::new();
        for _ in 0..GROUP_FDS {
            let (read, write) = channel(pipes)?;
            let s = shared.clone();
            started
                .workers
                .push(spawn("ipc-rx", move || drain(&s, read, size as u64))?);
            ends.push(write);
        }
        let ends = Arc::new(ends);
        let mut senders = Vec::new();
        for _ in 0..GROUP_FDS {
            let (s, ends) = (shared.clone(), ends.clone());
            senders.push(spawn("ipc-tx", move || send_all(&s, &ends, size))?);
        }
        // Receivers block on reads: once the senders are done, the last
        // write ends go, and the receivers read EOF.
        started.wake.push(Box::new(move || {
            for w in senders {
                let _ = w.join();
            }
            drop(ends);
        }));
    }
    Ok(())
}

fn send_all(s: &Shared, ends: &[Arc<dyn SharedWrite>], size: usize) {
    let message = vec![0x42u8; size];
    while !s.stopping() {
        for end in ends {
            if let Err(e) = end.send(&message) {
                return s.fail(format!("send: {e}"));
            }
        }
    }
}

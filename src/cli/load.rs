//! `rtlab load KIND`: the built-in loads ([`crate::workload::load`]), each a
//! program that prints its throughput, for experiment files
//! (`cmdline rtlab load ipc --groups 10`) and for the shell.

use crate::workload::load::{self, Common, Kind};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

fn duration(text: &str) -> Result<Duration, String> {
    crate::config::values::duration_ns(text)
        .map(Duration::from_nanos)
        .map_err(|e| e.message)
}

/// A size in bytes: a number with an optional K, M or G (powers of 1024).
fn size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (number, shift) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 10),
        Some((i, 'M' | 'm')) => (&t[..i], 20),
        Some((i, 'G' | 'g')) => (&t[..i], 30),
        _ => (t, 0),
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1u64 << shift))
        .filter(|n| *n > 0 && *n <= 1 << 40)
        .ok_or_else(|| format!("{text:?} is not a size (a number with K, M or G: 64M)"))
}

/// `rtlab load`.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// The load.
    #[command(subcommand)]
    pub kind: LoadKind,
    /// Print the throughput every INTERVAL.
    #[arg(long, default_value = "1s", value_parser = duration, global = true)]
    pub interval: Duration,
    /// Stop after this long (default: until SIGTERM or SIGINT).
    #[arg(long, value_parser = duration, global = true)]
    pub duration: Option<Duration>,
}

/// The loads.
#[derive(Debug, Subcommand)]
pub enum LoadKind {
    /// Spin loops with a duty cycle: `--duty 50` spins half of each period.
    Cpu {
        /// Percent of each period spent spinning (1..100).
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100))]
        duty: u32,
        /// The duty cycle's period.
        #[arg(long, default_value = "100ms", value_parser = duration)]
        period: Duration,
        /// Spinning threads.
        #[arg(long, default_value_t = 1)]
        threads: usize,
    },
    /// Memory bandwidth: copies between two buffers of SIZE each (default:
    /// 4 × the last-level cache, so that every copy goes to memory).
    Memory {
        /// Each buffer's size (64M, 1G).
        #[arg(long, value_parser = size)]
        size: Option<u64>,
        /// Copying threads.
        #[arg(long, default_value_t = 1)]
        threads: usize,
    },
    /// File-system I/O: writes, syncs, reads back and deletes a file of SIZE
    /// per thread, in a directory of its own made in DIR and removed at the
    /// end.
    Io {
        /// Where (default: the current directory; /tmp is often tmpfs, which
        /// is memory).
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// Each file's size (at most 1G).
        #[arg(long, default_value = "64M", value_parser = size)]
        size: u64,
        /// Threads, each with its file.
        #[arg(long, default_value_t = 1)]
        threads: usize,
    },
    /// Scheduler and IPC (hackbench's pattern): GROUPS groups of 20 senders
    /// and 20 receivers exchanging 100-byte messages over socket pairs.
    Ipc {
        /// Groups (rteval runs 3 per CPU).
        #[arg(long, default_value_t = 1)]
        groups: usize,
        /// Pipes instead of socket pairs (hackbench -p).
        #[arg(long)]
        pipe: bool,
        /// Bytes per message.
        #[arg(long, default_value_t = 100)]
        size: usize,
    },
    /// Loopback network: TCP streams over 127.0.0.1.
    Net {
        /// Streams (a sender and a receiver thread each).
        #[arg(long, default_value_t = 1)]
        streams: usize,
    },
    /// Timers: threads sleeping short relative sleeps.
    Timers {
        /// Sleeping threads.
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// Each sleep.
        #[arg(long, default_value = "100us", value_parser = duration)]
        sleep: Duration,
    },
}

/// Most threads (or groups × 40) a load starts.
const MAX_WORKERS: usize = 4096;

/// The buffers of `memory` when the cache size is unknown.
const DEFAULT_MEMORY_BYTES: u64 = 64 << 20;

fn kind_of(k: &LoadKind) -> (Kind, usize) {
    match k {
        LoadKind::Cpu {
            duty,
            period,
            threads,
        } => (
            Kind::Cpu {
                duty: *duty,
                period: *period,
            },
            *threads,
        ),
        LoadKind::Memory { size, threads } => {
            let llc = crate::sys::llc_bytes(&crate::sys::SysRoot::real());
            let bytes = size.unwrap_or_else(|| llc.map_or(DEFAULT_MEMORY_BYTES, |c| 4 * c));
            let bytes = usize::try_from(bytes.min(1 << 30)).unwrap_or(1 << 30);
            (Kind::Memory { bytes }, *threads)
        }
        LoadKind::Io { dir, size, threads } => (
            Kind::Io {
                dir: dir.clone(),
                bytes: (*size).min(1 << 30),
            },
            *threads,
        ),
        LoadKind::Ipc { groups, pipe, size } => (
            Kind::Ipc {
                pipes: *pipe,
                size: (*size).clamp(1, 1 << 16),
            },
            *groups,
        ),
        LoadKind::Net { streams } => (Kind::Net, *streams),
        LoadKind::Timers { threads, sleep } => (Kind::Timers { sleep: *sleep }, *threads),
    }
}

/// `rtlab load KIND`.
pub fn load_main(a: &LoadArgs) -> i32 {
    let (kind, workers) = kind_of(&a.kind);
    let threads = if matches!(kind, Kind::Ipc { .. }) {
        workers.saturating_mul(2 * load::GROUP_FDS)
    } else {
        workers
    };
    if workers == 0 || threads > MAX_WORKERS {
        errln!(
            "rtlab load {}: {workers} is not a number of workers this load can start (1 to {MAX_WORKERS} threads)",
            kind.name()
        );
        return super::EXIT_REFUSED;
    }
    // A directory that cannot be reached safely (a link someone else can
    // change, a pseudo-filesystem) is refused before anything is made.
    if let Kind::Io { dir, .. } = &kind
        && let Err(e) = crate::sys::outfile::open_held_dir(dir)
    {
        errln!("rtlab load io: --dir {}", e.with_hint());
        return super::EXIT_REFUSED;
    }
    crate::sys::os::set_thread_name(&format!("rtlab-load-{}", kind.name()));
    let common = Common {
        interval: a.interval,
        duration: a.duration,
        workers,
    };
    load::run(&kind, &common, &mut std::io::stdout())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_with_units() {
        assert_eq!(size("64M"), Ok(64 << 20));
        assert_eq!(size("4096"), Ok(4096));
        assert_eq!(size("1g"), Ok(1 << 30));
        assert!(size("0").is_err());
        assert!(size("12Q").is_err());
        assert!(size("99999999999G").is_err());
    }
}

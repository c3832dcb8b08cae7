//! `rtlab load KIND`: the built-in loads ([`crate::workload::load`]), each a
//! program that prints its throughput, for experiment files
//! (`cmdline rtlab load ipc --groups 10`) and for the shell.

use super::Refusal;
use crate::workload::load::{self, Common, Kind};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

fn duration(text: &str) -> Result<Duration, String> {
    super::common::cli_duration(text)
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
    /// 4 × the last-level cache, so that every copy goes to memory, within
    /// a sixteenth of the available memory per thread).
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
        /// Each file's size (at most 1G; a larger one is refused).
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

/// Largest `--size` of `io` (each thread's file) and of `memory` (each of
/// a thread's two buffers).
const MAX_SIZE: u64 = 1 << 30;

/// Largest `--size` of `ipc` (bytes per message).
const MAX_MESSAGE: usize = 1 << 16;

/// A size as written on the command line: `2G`, `64M`, `4096`.
fn shown_size(bytes: u64) -> String {
    [(30, "G"), (20, "M"), (10, "K")]
        .into_iter()
        .find(|&(shift, _)| bytes >= 1 << shift && bytes.is_multiple_of(1 << shift))
        .map_or(bytes.to_string(), |(shift, unit)| {
            format!("{}{unit}", bytes >> shift)
        })
}

/// The first option of `k` out of range: the option and its value, what
/// is wrong, and a hint naming what is accepted.
fn out_of_range(k: &LoadKind) -> Option<(String, String, String)> {
    let max = shown_size(MAX_SIZE);
    match k {
        LoadKind::Memory {
            size: Some(size), ..
        } if *size > MAX_SIZE => Some((
            format!("--size {}", shown_size(*size)),
            format!("more than {max}, the largest buffer this load copies"),
            format!(
                "give --size {max} or less (each thread copies between two buffers of SIZE); for more traffic, add --threads"
            ),
        )),
        LoadKind::Io { size, .. } if *size > MAX_SIZE => Some((
            format!("--size {}", shown_size(*size)),
            format!("more than {max}, the largest file this load writes"),
            format!(
                "give --size {max} or less; for more I/O, add --threads (each thread writes a file of its own)"
            ),
        )),
        LoadKind::Ipc { size, .. } if !(1..=MAX_MESSAGE).contains(size) => Some((
            format!("--size {size}"),
            "not a message size this load sends".into(),
            format!("give --size from 1 to {MAX_MESSAGE} bytes"),
        )),
        _ => None,
    }
}

/// The option that sets how many workers `k` starts, its largest value,
/// and what one worker is.
fn workers_option(k: &LoadKind) -> (&'static str, usize, String) {
    match k {
        LoadKind::Ipc { .. } => (
            "--groups",
            MAX_WORKERS / (2 * load::GROUP_FDS),
            format!(
                "each group is {} threads, at most {MAX_WORKERS} in all",
                2 * load::GROUP_FDS
            ),
        ),
        LoadKind::Net { .. } => (
            "--streams",
            MAX_WORKERS,
            "a sender and a receiver thread each".into(),
        ),
        _ => ("--threads", MAX_WORKERS, "one worker thread each".into()),
    }
}

/// The buffers of `memory` when the cache size is unknown.
const DEFAULT_MEMORY_BYTES: u64 = 64 << 20;

/// Each buffer's default size: 4 × the last-level cache (64M when unknown),
/// at most MAX_SIZE, and at most a sixteenth of the available memory per
/// thread (two buffers each: an eighth in all), so that a board with a
/// large cache and little memory is loaded, not pushed into reclaim.
fn default_memory_bytes(llc: Option<u64>, available: Option<u64>, threads: usize) -> u64 {
    let cache = llc.map_or(DEFAULT_MEMORY_BYTES, |c| 4 * c).min(MAX_SIZE);
    let share = available.map_or(u64::MAX, |a| a / 16 / threads.max(1) as u64);
    cache.min(share).max(1 << 20)
}

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
            let root = crate::sys::SysRoot::real();
            let bytes = size.unwrap_or_else(|| {
                let llc = crate::sys::llc_bytes(&root);
                let available = crate::sys::memory::available_kib(&root).map(|k| k * 1024);
                default_memory_bytes(llc, available, *threads)
            });
            // A larger --size was refused.
            let bytes = usize::try_from(bytes.min(MAX_SIZE)).unwrap_or(1 << 30);
            (Kind::Memory { bytes }, *threads)
        }
        LoadKind::Io { dir, size, threads } => (
            Kind::Io {
                dir: dir.clone(),
                bytes: (*size).min(MAX_SIZE),
            },
            *threads,
        ),
        LoadKind::Ipc { groups, pipe, size } => (
            Kind::Ipc {
                pipes: *pipe,
                size: (*size).clamp(1, MAX_MESSAGE),
            },
            *groups,
        ),
        LoadKind::Net { streams } => (Kind::Net, *streams),
        LoadKind::Timers { threads, sleep } => (Kind::Timers { sleep: *sleep }, *threads),
    }
}

/// `rtlab load KIND`.
pub fn load_main(a: &LoadArgs) -> super::Outcome {
    let (kind, workers) = kind_of(&a.kind);
    if let Some((option, why, hint)) = out_of_range(&a.kind) {
        return Err(
            Refusal::new(format!("rtlab load {}: {option}: {why}", kind.name())).hint(hint),
        );
    }
    let (option, most, what) = workers_option(&a.kind);
    if !(1..=most).contains(&workers) {
        return Err(Refusal::new(format!(
            "rtlab load {}: {option} {workers}: not a number this load can start",
            kind.name()
        ))
        .hint(format!("give {option} from 1 to {most} ({what})")));
    }
    // A directory that cannot be reached safely (a link someone else can
    // change, a pseudo-filesystem) is refused before anything is made.
    if let Kind::Io { dir, .. } = &kind
        && let Err(e) = crate::sys::outfile::open_held_dir(dir)
    {
        return Err(Refusal::output("rtlab load io: --dir ", &e));
    }
    crate::sys::os::set_thread_name(&format!("rtlab-load-{}", kind.name()));
    let common = Common {
        interval: a.interval,
        duration: a.duration,
        workers,
    };
    Ok(load::run(&kind, &common, &mut std::io::stdout()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_default_is_four_caches_within_the_memory() {
        // 4 × a 256M cache is 1G, the limit.
        assert_eq!(default_memory_bytes(Some(256 << 20), None, 2), 1 << 30);
        assert_eq!(
            default_memory_bytes(Some(8 << 20), Some(24 << 30), 2),
            32 << 20
        );
        assert_eq!(default_memory_bytes(None, None, 1), 64 << 20);
        // A board of 512M available, 2 threads: 16M each.
        assert_eq!(
            default_memory_bytes(Some(64 << 20), Some(512 << 20), 2),
            16 << 20
        );
        assert_eq!(default_memory_bytes(Some(1 << 20), Some(0), 0), 1 << 20);
    }

    #[test]
    fn sizes_with_units() {
        assert_eq!(size("64M"), Ok(64 << 20));
        assert_eq!(size("4096"), Ok(4096));
        assert_eq!(size("1g"), Ok(1 << 30));
        assert!(size("0").is_err());
        assert!(size("12Q").is_err());
        assert!(size("99999999999G").is_err());
    }

    #[test]
    fn sizes_beyond_the_largest_are_refused_with_it() {
        let io = |size| LoadKind::Io {
            dir: ".".into(),
            size,
            threads: 1,
        };
        assert_eq!(out_of_range(&io(1 << 30)), None);
        for big in [2 << 30, 5 << 30] {
            let (option, _, hint) = out_of_range(&io(big)).unwrap();
            assert_eq!(option, format!("--size {}G", big >> 30));
            assert!(hint.contains("--size 1G or less"), "{hint}");
        }
        let memory = LoadKind::Memory {
            size: Some(3 << 29),
            threads: 1,
        };
        assert_eq!(out_of_range(&memory).unwrap().0, "--size 1536M");
        let ipc = |size| LoadKind::Ipc {
            groups: 1,
            pipe: false,
            size,
        };
        assert!(out_of_range(&ipc(0)).is_some());
        assert!(out_of_range(&ipc(MAX_MESSAGE + 1)).is_some());
        assert_eq!(out_of_range(&ipc(MAX_MESSAGE)), None);
    }
}

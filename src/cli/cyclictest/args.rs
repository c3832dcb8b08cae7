//! cyclictest's command line, parsed as cyclictest (rt-tests 2.x) parses
//! it: short options glued (`-Sp90`, `-qmu`, `-i100`), long options with
//! `=` or a separate value, abbreviations of long options (`--interv=`),
//! and the optional values of `-a` and `-t`, taken from the next word when
//! it is a number or a CPU list (`-t 4`, `-a 0`) as cyclictest does.
//!
//! Every option of cyclictest is known here. Those rtlab does not do are
//! refused with the reason ([`CyclictestArgs::unsupported`]), never
//! ignored.

use clap::Parser;
use std::path::PathBuf;

/// cyclictest's options, and rtlab's extras (`--rtlab-*`).
#[derive(Debug, Parser, Default)]
#[command(
    name = "rtlab cyclictest",
    about = "cyclictest's command line, measured by rtlab: the same options, the same outputs",
    disable_help_flag = true,
    disable_version_flag = true,
    infer_long_args = true
)]
pub struct CyclictestArgs {
    /// Pin thread N to the N-th CPU of CPUSET (all allowed CPUs without
    /// it), round robin; also pins the main thread.
    #[arg(short = 'a', long = "affinity", num_args = 0..=1, default_missing_value = "", value_name = "CPUSET")]
    pub affinity: Option<String>,
    /// Explain the wake-ups later than USEC (cyclictest stops there; rtlab
    /// goes on and its flight recorder says why).
    #[arg(short = 'b', long = "breaktrace", value_name = "USEC")]
    pub breaktrace: Option<u64>,
    /// Clock: 0 = CLOCK_MONOTONIC (the only one rtlab measures with).
    #[arg(short = 'c', long = "clock", value_name = "CLOCK")]
    pub clock: Option<u32>,
    /// Leave PM QoS alone (no /dev/cpu_dma_latency request).
    #[arg(long = "default-system")]
    pub default_system: bool,
    /// Distance of the thread intervals (µs, default 500; 0 with -h).
    #[arg(short = 'd', long = "distance", value_name = "DIST")]
    pub distance: Option<u64>,
    /// Length of the run: seconds, or with an m, h or d suffix.
    #[arg(short = 'D', long = "duration", value_name = "TIME")]
    pub duration: Option<String>,
    /// Histogram of US 1-µs buckets after the run.
    #[arg(short = 'h', long = "histogram", value_name = "US")]
    pub histogram: Option<u64>,
    /// Like -h, with a summary column.
    #[arg(short = 'H', long = "histofall", value_name = "US")]
    pub histofall: Option<u64>,
    /// Write the histogram to PATH instead of stdout.
    #[arg(long = "histfile", value_name = "PATH")]
    pub histfile: Option<PathBuf>,
    /// Base interval of the threads (µs, default 1000).
    #[arg(short = 'i', long = "interval", value_name = "INTV")]
    pub interval: Option<u64>,
    /// Write the results to FILE in cyclictest's JSON format.
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Leave PM QoS alone (cyclictest's battery-saving mode).
    #[arg(long = "laptop")]
    pub laptop: bool,
    /// Value held on /dev/cpu_dma_latency (µs, default 0).
    #[arg(long = "latency", value_name = "PM_QOS")]
    pub latency: Option<u32>,
    /// Number of loops (the run ends when the first thread reaches it).
    #[arg(short = 'l', long = "loops", value_name = "LOOPS")]
    pub loops: Option<u64>,
    /// CPUs of the main thread.
    #[arg(long = "mainaffinity", value_name = "CPUSET")]
    pub mainaffinity: Option<String>,
    /// clock_nanosleep (older cyclictest's option; rtlab always sleeps
    /// with it, and cyclictest 2.x dropped it).
    #[arg(short = 'n', long = "nanosleep")]
    pub nanosleep: bool,
    /// Lock memory (rtlab's `memlock`).
    #[arg(short = 'm', long = "mlockall")]
    pub mlockall: bool,
    /// Redraw the live lines only when a maximum grows.
    #[arg(short = 'M', long = "refresh_on_max")]
    pub refresh_on_max: bool,
    /// Print latencies in ns.
    #[arg(short = 'N', long = "nsecs")]
    pub nsecs: bool,
    /// Priority of the highest-priority thread (SCHED_FIFO unless --policy rr).
    #[arg(short = 'p', long = "priority", value_name = "PRIO")]
    pub priority: Option<i32>,
    /// Policy of the threads: other, normal, batch, idle, fifo or rr.
    #[arg(long = "policy", value_name = "NAME")]
    pub policy: Option<String>,
    /// Priorities one lower for each next thread.
    #[arg(long = "priospread")]
    pub priospread: bool,
    /// Print a summary only at the end.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// One thread per allowed CPU, pinned, all at one priority (-a -t).
    #[arg(short = 'S', long = "smp")]
    pub smp: bool,
    /// Record the wake-ups later than TRIGGER µs.
    #[arg(long = "spike", value_name = "TRIGGER")]
    pub spike: Option<u64>,
    /// Most spikes recorded (default 1024).
    #[arg(long = "spike-nodes", value_name = "NUM")]
    pub spike_nodes: Option<u64>,
    /// Number of threads (one per CPU without NUM; 1 without -t).
    #[arg(short = 't', long = "threads", num_args = 0..=1, default_missing_value = "", value_name = "NUM")]
    pub threads: Option<String>,
    /// Mark the trace at a -b wake-up (rtlab's flight recorder always does).
    #[arg(long = "tracemark")]
    pub tracemark: bool,
    /// Unbuffered output (rtlab's output is never held back).
    #[arg(short = 'u', long = "unbuffered")]
    pub unbuffered: bool,
    /// Every sample as thread:cycle:latency (needs -l).
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
    /// Print this help.
    #[arg(long = "help")]
    pub help: bool,

    /// Also write rtlab's JSON result (percentiles, spikes, system) to FILE.
    #[arg(long = "rtlab-json", value_name = "FILE")]
    pub rtlab_json: Option<PathBuf>,
    /// Also write rtlab's per-thread result files into DIR.
    #[arg(long = "rtlab-outdir", value_name = "DIR")]
    pub rtlab_outdir: Option<PathBuf>,
    /// Load the machine while it measures: `standard` (rtlab's built-in
    /// loads, rteval's conditions) or `stress-ng` (the same from stress-ng).
    #[arg(long = "rtlab-load", value_name = "MIX", value_parser = ["standard", "stress-ng"])]
    pub rtlab_load: Option<String>,
    /// Print the experiment file the command line makes, and run it.
    #[arg(long = "rtlab-print")]
    pub rtlab_print: bool,
    /// `-v` came before `-a LIST` on the command line: cyclictest, which
    /// reads its options in order, then says `Using N cpus.` as it reads
    /// `-a` too (before `Max CPUs =`).
    #[arg(skip)]
    pub verbose_before_affinity: bool,

    // cyclictest options rtlab does not do: parsed to be refused.
    #[arg(short = 'A', long = "aligned", hide = true)]
    aligned: Option<String>,
    #[arg(short = 'F', long = "fifo", hide = true)]
    fifo: Option<String>,
    #[arg(short = 'o', long = "oscope", hide = true)]
    oscope: Option<String>,
    #[arg(short = 'r', long = "relative", hide = true)]
    relative: bool,
    #[arg(short = 'R', long = "resolution", hide = true)]
    resolution: bool,
    #[arg(long = "secaligned", num_args = 0..=1, default_missing_value = "", hide = true)]
    secaligned: Option<String>,
    #[arg(short = 's', long = "system", hide = true)]
    system: bool,
    #[arg(long = "smi", hide = true)]
    smi: bool,
    #[arg(short = 'x', long = "posix_timers", hide = true)]
    posix_timers: bool,
    #[arg(long = "dbg_cyclictest", hide = true)]
    dbg_cyclictest: bool,
    #[arg(short = 'X', long = "dbg", hide = true)]
    dbg: bool,
}

impl CyclictestArgs {
    /// The first option given that rtlab does not do, with the reason.
    pub fn unsupported(&self) -> Option<(&'static str, &'static str)> {
        let refused: [(bool, &str, &str); 11] = [
            (
                self.aligned.is_some(),
                "-A/--aligned",
                "rtlab's threads start together from one release; aligned offsets are not measured",
            ),
            (
                self.fifo.is_some(),
                "-F/--fifo",
                "use --json or --rtlab-json for machine-readable results",
            ),
            (
                self.oscope.is_some(),
                "-o/--oscope",
                "the oscilloscope mode is not done; --rtlab-json has the latency over time",
            ),
            (
                self.relative,
                "-r/--relative",
                "rtlab sleeps to absolute deadlines only (the cyclictest default)",
            ),
            (
                self.resolution,
                "-R/--resolution",
                "the clock resolution check is not done",
            ),
            (
                self.secaligned.is_some(),
                "--secaligned",
                "rtlab's threads start together from one release, not on a second",
            ),
            (
                self.system,
                "-s/--system",
                "rtlab measures clock_nanosleep only (the cyclictest default)",
            ),
            (
                self.smi,
                "--smi",
                "SMI counting is not done; `rtlab sysinfo` and the flight recorder show other interference",
            ),
            (
                self.posix_timers,
                "-x/--posix_timers",
                "rtlab measures clock_nanosleep only (the cyclictest default)",
            ),
            (
                self.dbg_cyclictest,
                "--dbg_cyclictest",
                "use rtlab's -d N debug level",
            ),
            (self.dbg, "-X/--dbg", "use rtlab's -d N debug level"),
        ];
        refused
            .into_iter()
            .find(|(given, _, _)| *given)
            .map(|(_, option, why)| (option, why))
    }
}

/// Parses cyclictest's arguments (without the program name).
pub fn parse(args: &[std::ffi::OsString]) -> Result<CyclictestArgs, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let argv = std::iter::once(std::ffi::OsString::from("cyclictest")).chain(args.iter().cloned());
    let matches = CyclictestArgs::command().try_get_matches_from(argv)?;
    let mut a = CyclictestArgs::from_arg_matches(&matches)?;
    // The first -v against the last -a (the one whose list counts).
    let first = |id: &str| matches.indices_of(id).and_then(|mut i| i.next());
    let last = |id: &str| matches.indices_of(id).and_then(Iterator::last);
    a.verbose_before_affinity = matches!(
        (first("verbose"), last("affinity")),
        (Some(v), Some(f)) if v < f
    );
    Ok(a)
}

/// A `-D`/`--duration` value in seconds: a whole number with an optional
/// `s`, `m`, `h` or `d` suffix. cyclictest reads `1.5h` as 1 second;
/// rtlab refuses it rather than measure for a time nobody asked for.
pub fn duration_s(text: &str) -> Result<u64, String> {
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(digits);
    let n: u64 = number.parse().map_err(|_| {
        format!(
            "-D {text:?}: not a whole number of seconds, minutes, hours or days\n  hint: {D_HINT}"
        )
    })?;
    let unit = match suffix {
        "" | "s" | "S" => 1,
        "m" | "M" => 60,
        "h" | "H" => 3600,
        "d" | "D" => 86400,
        _ => {
            return Err(format!(
                "-D {text:?}: the suffix must be s, m, h or d, after a whole number\n  hint: {D_HINT}"
            ));
        }
    };
    n.checked_mul(unit)
        .ok_or_else(|| format!("-D {text:?}: too long\n  hint: {D_HINT}"))
}

/// What `-D` accepts.
const D_HINT: &str =
    "a whole number with an optional suffix s, m, h or d: -D 60, -D 90m (not 1.5h), -D 2d";

#[cfg(test)]
mod tests {
    use super::*;

    fn p(line: &str) -> CyclictestArgs {
        let args: Vec<std::ffi::OsString> = line.split_whitespace().map(Into::into).collect();
        parse(&args).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    #[test]
    fn glued_short_options_and_optional_values_as_cyclictest_reads_them() {
        let a = p("-l100000000 -m -Sp90 -i200 -h400 -q");
        assert_eq!(a.loops, Some(100_000_000));
        assert!(a.mlockall && a.smp && a.quiet);
        assert_eq!(
            (a.priority, a.interval, a.histogram),
            (Some(90), Some(200), Some(400))
        );
        let a = p("-i100 -qmu -h 3500 -p95 -t2 -a0-1");
        assert_eq!(a.threads.as_deref(), Some("2"));
        assert_eq!(a.affinity.as_deref(), Some("0-1"));
        assert!(a.quiet && a.mlockall && a.unbuffered);
        // The value of -t and -a as the next word.
        let a = p("-q -p 98 -i 1000 -t 1 -a 0 -D 1m");
        assert_eq!(a.threads.as_deref(), Some("1"));
        assert_eq!(a.affinity.as_deref(), Some("0"));
        // Without a value.
        let a = p("-a -t -p99");
        assert_eq!(a.threads.as_deref(), Some(""));
        assert_eq!(a.affinity.as_deref(), Some(""));
        assert_eq!(a.priority, Some(99));
        // Long forms, `=`, and abbreviations.
        let a = p("--mlockall --smp --priority=80 --interv=200 --distance=0 --histfile=x.txt");
        assert_eq!((a.interval, a.distance), (Some(200), Some(0)));
        assert_eq!(a.histfile, Some(PathBuf::from("x.txt")));
    }

    #[test]
    fn the_order_of_v_and_a_is_kept() {
        assert!(p("-v -a 0 -l 2").verbose_before_affinity);
        assert!(p("-mv -a0 -l 2").verbose_before_affinity);
        assert!(p("--verbose --affinity=0 -l 2").verbose_before_affinity);
        assert!(!p("-a 0 -v -l 2").verbose_before_affinity);
        assert!(!p("-v -l 2").verbose_before_affinity);
        assert!(!p("-a 0 -l 2").verbose_before_affinity);
    }

    #[test]
    fn options_rtlab_does_not_do_are_named() {
        assert_eq!(
            p("-x -p 80").unsupported().map(|u| u.0),
            Some("-x/--posix_timers")
        );
        assert_eq!(
            p("--secaligned 250").unsupported().map(|u| u.0),
            Some("--secaligned")
        );
        assert_eq!(p("-p 80 -q").unsupported(), None);
        assert!(parse(&["--bogus".into()]).is_err());
    }

    #[test]
    fn durations_with_cyclictests_suffixes() {
        assert_eq!(duration_s("60"), Ok(60));
        assert_eq!(duration_s("1m"), Ok(60));
        assert_eq!(duration_s("24h"), Ok(86400));
        assert_eq!(duration_s("2d"), Ok(172800));
        assert!(duration_s("1.5h").unwrap_err().contains("90m"));
        assert!(duration_s("").is_err());
        assert!(duration_s("99999999999999999999d").is_err());
    }
}

//! oslat's command line, read as oslat (rt-tests 2.4) reads it: glibc's
//! `getopt_long` with `b:Bc:C:D:f:hm:qsw:T:vz` (and rt-tests ≥ 2.5's
//! `W:`): short options glued (`-qz`, `-c1`, `-D10m`), a short option's
//! value attached or the next word (whatever it is: `-D -q` takes `-q`),
//! long options with `=` or the next word, unambiguous abbreviations of
//! long options (`--dur 60`; `--cpu` is ambiguous), `--` ending the
//! options. Each value is checked as it is read, the first bad one
//! refused, as oslat does.
//!
//! Where oslat reads a value loosely (`strtol`: `-b 32x` is 32, `-D 1.5h`
//! is 1 second, `-m 4096` is refused but `-m 0` silently keeps 16 KiB),
//! rtlab refuses it with a hint rather than run something not asked for.

use crate::cpulist;

/// What `rtlab oslat` will run: oslat's options, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct OslatRun {
    /// `-c`: the CPUs to measure (None: all, oslat's default).
    pub cpus: Option<Vec<usize>>,
    /// `-c` as written (`CPU list:`), `all` without it.
    pub cpu_list_text: String,
    /// `-C`: the main thread's CPU (oslat: 0 by default).
    pub main_cpu: usize,
    /// `-f`: SCHED_FIFO priority of the measuring threads.
    pub rtprio: Option<u8>,
    /// `-D`: how long the measured run lasts (ns; oslat's default 1 s).
    pub duration_ns: u64,
    /// `-b`: the number of buckets (5 to 1024; 32).
    pub bucket_size: usize,
    /// `-W`: a bucket's width (ns; 1000). rt-tests ≥ 2.5.
    pub bucket_width_ns: u64,
    /// `-B`: shift the buckets by the pre-heat's minimum.
    pub bias: bool,
    /// `-w memmove`: bytes moved per loop (`-m`, 16 KiB by default).
    pub workload: Option<u64>,
    /// `-T`: stop when a gap reaches this (ns: oslat's `us >= T`, its µs
    /// truncated plus one, is a gap of at least `(T - 1)` µs).
    pub trace_threshold_ns: Option<u64>,
    /// `-T` as given (µs), for oslat's message.
    pub trace_threshold_us: Option<u64>,
    /// `-z`.
    pub zero_omit: bool,
    /// `--json=FILE`.
    pub json_path: Option<std::path::PathBuf>,
    /// `-q`.
    pub quiet: bool,
    /// `-s`: one thread in the pre-heat.
    pub single_preheat: bool,
}

impl Default for OslatRun {
    fn default() -> Self {
        OslatRun {
            cpus: None,
            cpu_list_text: "all".into(),
            main_cpu: 0,
            rtprio: None,
            duration_ns: 1_000_000_000,
            bucket_size: 32,
            bucket_width_ns: 1000,
            bias: false,
            workload: None,
            trace_threshold_ns: None,
            trace_threshold_us: None,
            zero_omit: false,
            json_path: None,
            quiet: false,
            single_preheat: false,
        }
    }
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// Run this.
    Run(OslatRun),
    /// `-h`/`--help`: print the usage, exit 0.
    Help,
    /// `-v`/`--version`: the banner only, exit 0.
    Version,
}

/// A command line oslat's way would refuse or misread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadArgs {
    /// What is wrong, naming the option.
    pub message: String,
    /// What to write instead.
    pub hint: String,
}

fn bad(message: impl Into<String>, hint: impl Into<String>) -> BadArgs {
    BadArgs {
        message: message.into(),
        hint: hint.into(),
    }
}

/// Whether an option takes a value.
#[derive(Clone, Copy, PartialEq)]
enum Arg {
    No,
    Required,
}

/// oslat's options: short letter (or none), long name, value.
const OPTIONS: &[(Option<char>, &str, Arg)] = &[
    (Some('b'), "bucket-size", Arg::Required),
    (Some('W'), "bucket-width", Arg::Required),
    (Some('c'), "cpu-list", Arg::Required),
    (Some('C'), "cpu-main-thread", Arg::Required),
    (Some('D'), "duration", Arg::Required),
    (None, "json", Arg::Required),
    (Some('f'), "rtprio", Arg::Required),
    (Some('h'), "help", Arg::No),
    (Some('T'), "trace-threshold", Arg::Required),
    (Some('w'), "workload", Arg::Required),
    (Some('m'), "workload-mem", Arg::Required),
    (Some('B'), "bias", Arg::No),
    (Some('q'), "quiet", Arg::No),
    (Some('s'), "single-preheat", Arg::No),
    (Some('z'), "zero-omit", Arg::No),
    (Some('v'), "version", Arg::No),
];

const HELP_HINT: &str = "`rtlab oslat --help` lists oslat's options";

/// The options in order: (long name, value), as getopt_long gives them.
fn getopt(argv: &[String]) -> Result<Vec<(&'static str, Option<String>)>, BadArgs> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(word) = argv.get(i) {
        // oslat acts on -h and -v as it meets them: what follows is unread.
        if out
            .iter()
            .any(|o: &(&str, _)| ["help", "version"].contains(&o.0))
        {
            break;
        }
        i += 1;
        if word == "--" {
            if let Some(rest) = argv.get(i) {
                return Err(positional(rest));
            }
            break;
        }
        if let Some(long) = word.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let (full, arg) = find_long(name)?;
            let value = match (arg, attached) {
                (Arg::No, Some(_)) => {
                    return Err(bad(
                        format!("option '--{full}' doesn't allow an argument"),
                        HELP_HINT,
                    ));
                }
                (Arg::No, None) => None,
                (Arg::Required, Some(v)) => Some(v),
                (Arg::Required, None) => Some(next_value(argv, &mut i, &format!("--{full}"))?),
            };
            out.push((full, value));
        } else if let Some(letters) = word.strip_prefix('-').filter(|l| !l.is_empty()) {
            shorts(letters, argv, &mut i, &mut out)?;
        } else {
            return Err(positional(word));
        }
    }
    Ok(out)
}

/// The options of one word of glued short options (`-qzc1`).
fn shorts(
    letters: &str,
    argv: &[String],
    i: &mut usize,
    out: &mut Vec<(&'static str, Option<String>)>,
) -> Result<(), BadArgs> {
    for (at, c) in letters.char_indices() {
        let Some(&(_, long, arg)) = OPTIONS.iter().find(|o| o.0 == Some(c)) else {
            return Err(bad(
                format!(
                    "invalid option -- '{}'",
                    crate::text::one_line(&c.to_string())
                ),
                HELP_HINT,
            ));
        };
        if arg == Arg::No {
            out.push((long, None));
            if ["help", "version"].contains(&long) {
                break;
            }
            continue;
        }
        let rest = &letters[at + c.len_utf8()..];
        let value = if rest.is_empty() {
            next_value(argv, i, &format!("-{c}"))?
        } else {
            rest.to_string()
        };
        out.push((long, Some(value)));
        break;
    }
    Ok(())
}

fn next_value(argv: &[String], i: &mut usize, option: &str) -> Result<String, BadArgs> {
    let v = argv
        .get(*i)
        .cloned()
        .ok_or_else(|| bad(format!("option '{option}' requires an argument"), HELP_HINT))?;
    *i += 1;
    Ok(v)
}

fn positional(word: &str) -> BadArgs {
    bad(
        format!(
            "unexpected argument '{}': oslat takes options only (it ignores other words; rtlab refuses them)",
            crate::text::one_line(word)
        ),
        HELP_HINT,
    )
}

/// A long option by its name or an unambiguous abbreviation.
fn find_long(name: &str) -> Result<(&'static str, Arg), BadArgs> {
    if let Some(o) = OPTIONS.iter().find(|o| o.1 == name) {
        return Ok((o.1, o.2));
    }
    let matches: Vec<_> = OPTIONS
        .iter()
        .filter(|o| !name.is_empty() && o.1.starts_with(name))
        .collect();
    match matches.as_slice() {
        [one] => Ok((one.1, one.2)),
        [] => Err(bad(
            format!("unrecognized option '--{}'", crate::text::one_line(name)),
            HELP_HINT,
        )),
        many => Err(bad(
            format!(
                "option '--{}' is ambiguous; possibilities: {}",
                crate::text::one_line(name),
                many.iter()
                    .map(|o| format!("'--{}'", o.1))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            "write the option's whole name",
        )),
    }
}

/// Reads oslat's command line (without the program name). `ncores` is
/// the machine's configured CPU count (oslat's bound for `-C`).
pub fn parse(argv: &[String], ncores: usize) -> Result<Parsed, BadArgs> {
    let mut run = OslatRun::default();
    let mut workload_memmove = false;
    let mut mem: Option<u64> = None;
    for (option, value) in getopt(argv)? {
        let v = value.unwrap_or_default();
        match option {
            "help" => return Ok(Parsed::Help),
            "version" => return Ok(Parsed::Version),
            "workload" => workload_memmove = workload(&v)?,
            "workload-mem" => mem = Some(mem_size(&v)?),
            other => apply(&mut run, other, &v, ncores)?,
        }
    }
    if workload_memmove {
        run.workload = Some(mem.unwrap_or(16 * 1024));
    }
    Ok(Parsed::Run(run))
}

/// One option with a value (or a flag) into the run.
fn apply(run: &mut OslatRun, option: &str, v: &str, ncores: usize) -> Result<(), BadArgs> {
    match option {
        "bucket-size" => run.bucket_size = bucket_size(v)?,
        "bucket-width" => run.bucket_width_ns = whole(v, "-W", "ns").and_then(positive_w)?,
        "bias" => run.bias = true,
        "cpu-list" => {
            run.cpus = cpu_list(v)?;
            run.cpu_list_text = v.to_string();
        }
        "cpu-main-thread" => run.main_cpu = main_cpu(v, ncores)?,
        "duration" => run.duration_ns = duration_s(v)?.saturating_mul(1_000_000_000),
        "json" => run.json_path = Some(v.into()),
        "rtprio" => run.rtprio = Some(rtprio(v)?),
        "trace-threshold" => {
            let us = trace_threshold(v)?;
            run.trace_threshold_us = Some(us);
            run.trace_threshold_ns = Some((us - 1).saturating_mul(1000));
        }
        "quiet" => run.quiet = true,
        "single-preheat" => run.single_preheat = true,
        "zero-omit" => run.zero_omit = true,
        _ => {}
    }
    Ok(())
}

/// A whole number, all of the word.
fn whole(v: &str, option: &str, what: &str) -> Result<u64, BadArgs> {
    v.parse::<u64>().map_err(|_| {
        bad(
            format!(
                "{option} {}: not a whole number of {what}",
                crate::text::one_line(v)
            ),
            format!("{option} takes a whole number of {what}, digits only"),
        )
    })
}

fn positive_w(w: u64) -> Result<u64, BadArgs> {
    if w == 0 {
        return Err(bad(
            "Illegal bucket width: 0",
            "-W takes a width in ns, at least 1",
        ));
    }
    Ok(w)
}

fn bucket_size(v: &str) -> Result<usize, BadArgs> {
    match whole(v, "-b", "buckets") {
        Ok(n @ 5..=1024) => Ok(n as usize),
        _ => Err(bad(
            format!(
                "Illegal bucket size: {} (should be: 4-1024)",
                crate::text::one_line(v)
            ),
            "oslat takes 5 to 1024 buckets (its message says 4, which it refuses)",
        )),
    }
}

fn rtprio(v: &str) -> Result<u8, BadArgs> {
    match whole(v, "-f", "priorities") {
        Ok(p @ 1..=99) => Ok(p as u8),
        _ => Err(bad(
            format!(
                "Illegal RT priority: {} (should be: 1-99)",
                crate::text::one_line(v)
            ),
            "-f takes a SCHED_FIFO priority, 1 to 99",
        )),
    }
}

fn main_cpu(v: &str, ncores: usize) -> Result<usize, BadArgs> {
    match whole(v, "-C", "CPUs") {
        Ok(c) if (c as usize) < ncores.max(1) => Ok(c as usize),
        _ => Err(bad(
            format!(
                "Illegal core for main thread: {} (should be: 0-{})",
                crate::text::one_line(v),
                ncores.saturating_sub(1)
            ),
            "-C takes one CPU number of this machine",
        )),
    }
}

fn trace_threshold(v: &str) -> Result<u64, BadArgs> {
    match whole(v, "-T", "µs") {
        Ok(t) if t > 0 => Ok(t),
        _ => Err(bad(
            "Parameter --trace-threshold needs to be positive",
            "-T takes a whole number of µs, at least 1",
        )),
    }
}

/// `-c`: a CPU list, or `all` (None).
fn cpu_list(v: &str) -> Result<Option<Vec<usize>>, BadArgs> {
    if v == "all" {
        return Ok(None);
    }
    match cpulist::parse(v) {
        Ok(cpus) if !cpus.is_empty() => Ok(Some(cpus)),
        _ => Err(bad(
            format!("-c {}: not a CPU list", crate::text::one_line(v)),
            "-c takes a list like 1,3,5,7-15 (or all); libnuma's ! and + forms are not taken",
        )),
    }
}

/// `-w`: true for memmove.
fn workload(v: &str) -> Result<bool, BadArgs> {
    match v {
        "no" => Ok(false),
        "memmove" => Ok(true),
        _ => Err(bad(
            format!(
                "Unknown workload '{}'.  Please choose from: 'no', 'memmove'",
                crate::text::one_line(v)
            ),
            "-w takes no or memmove",
        )),
    }
}

/// `-m`: a size with a suffix b, k, m or g (KiB units), as oslat takes
/// it. oslat refuses a bare number (its parser returns the number as an
/// error) and keeps 16 KiB for `0`; rtlab refuses both, and sizes of
/// 2 GiB or more, which overflow oslat's `int`.
pub fn mem_size(v: &str) -> Result<u64, BadArgs> {
    let hint = "-m takes a whole number with a suffix b, k, m or g: 4K, 1M";
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (number, suffix) = v.split_at(digits);
    let unit = match suffix {
        "b" | "B" => 1,
        "k" | "K" => 1 << 10,
        "m" | "M" => 1 << 20,
        "g" | "G" => 1 << 30,
        _ => {
            return Err(bad(
                format!(
                    "Unknown workload memory size '{}'.",
                    crate::text::one_line(v)
                ),
                hint,
            ));
        }
    };
    let bytes = number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .filter(|b| (1..(1u64 << 31)).contains(b));
    bytes.ok_or_else(|| {
        bad(
            format!(
                "-m {}: not a size from 1 byte to 2 GiB",
                crate::text::one_line(v)
            ),
            hint,
        )
    })
}

/// `-D`: seconds, with a suffix m, h or d (s too, which oslat reads as
/// seconds by ignoring it). oslat reads only the number and the letter
/// after it: rtlab takes the rest only when it changes nothing (Go's
/// `1m0s`, which OpenShift tools write), and refuses `1.5h` (oslat: 1
/// second) or `1h30m` (oslat: 1 hour).
pub fn duration_s(v: &str) -> Result<u64, BadArgs> {
    let hint =
        "a whole number with an optional suffix s, m, h or d: -D 60, -D 20m, -D 2H (not 1.5h)";
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (number, rest) = v.split_at(digits);
    let mut chars = rest.chars();
    let unit = match chars.next() {
        None | Some('s' | 'S') => 1,
        Some('m' | 'M') => 60,
        Some('h' | 'H') => 3600,
        Some('d' | 'D') => 86_400,
        Some(_) => 0,
    };
    let tail = chars.as_str();
    let tail_is_zero = tail.is_empty() || zero_components(tail);
    let n = number
        .parse::<u64>()
        .ok()
        .filter(|_| unit > 0 && tail_is_zero);
    match n.map(|n| n.checked_mul(unit)) {
        Some(Some(0)) => Err(bad(
            format!("Illegal runtime: {}", crate::text::one_line(v)),
            hint,
        )),
        Some(Some(s)) if s <= i32::MAX as u64 => Ok(s),
        Some(_) => Err(bad(
            format!("-D {}: longer than oslat can run", crate::text::one_line(v)),
            hint,
        )),
        None => Err(bad(
            format!("Illegal runtime: {}", crate::text::one_line(v)),
            hint,
        )),
    }
}

/// `0s`, `0m0s`: Go's duration text after its first unit, all zero.
fn zero_components(tail: &str) -> bool {
    let mut rest = tail;
    while !rest.is_empty() {
        let zeros = rest.find(|c: char| c != '0').unwrap_or(rest.len());
        if zeros == 0 {
            return false;
        }
        rest = &rest[zeros..];
        match rest.chars().next() {
            Some('h' | 'm' | 's') => rest = &rest[1..],
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
#[path = "args_tests.rs"]
mod tests;

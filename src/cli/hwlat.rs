//! `rtlab hwlat ARGS...` (and rtlab installed under the name
//! `hwlatdetect`): hwlatdetect's command line (rt-tests 2.4) and outputs,
//! measured by rtlab's noise threads instead of the kernel's hwlat tracer.
//!
//! The options are read as hwlatdetect's argparse reads them: long options
//! only, `--opt VALUE` or `--opt=VALUE`, unambiguous abbreviations
//! (`--thr 20`), an empty value taken as not given, the last of a repeated
//! option winning, `-h`/`--help`. The values take hwlatdetect's units:
//! `--threshold`, `--hardlimit`, `--window`, `--width` in µs, or with `us`,
//! `ms` or `s`; `--duration` in seconds, or with `s`, `m`, `h`, `d` or `w`.
//! The defaults are those of the kernel's hwlat tracer and of hwlatdetect:
//! threshold 10 µs, window 1 s, width 0.5 s, duration 120 s, hard limit
//! the threshold. `--watch` is refused by name: a gap is told OS noise or
//! hardware once the trace around it is read, and the samples are listed
//! when the run ends.
//!
//! The measurement ([`hwlat_plan`]): one SCHED_FIFO 99 noise thread per
//! CPU, each polling for `width` of each `window`, the CPUs taking turns as
//! the tracer's thread moves between them (its period is `window` × the
//! number of CPUs, its offset `window` × its place). What a gap is (OS
//! noise, hardware, or a candidate when no trace can tell) and the report
//! are [`crate::report::hwlat`]'s; docs/manual.md, "hwlat drop-in", says
//! what differs from the tracer.
//!
//! Exit statuses: hwlatdetect's, 0 when the largest sample is within the
//! hard limit and 1 when over it ([`crate::report::hwlat::exit_status`]);
//! 2 when refused before the start (a bad value, an option rtlab does not
//! do), as argparse refuses a bad command line.

use super::{Outcome, Refusal};
use crate::measure::noise::{CounterChoice, NoiseSpec};
use crate::plan::NoisePlan;
use crate::report::hwlat::{Detection, Header, Smis};
use crate::sched::{Policy, Sched};
use crate::sys::SysRoot;
use crate::sys::counter_choice::CounterFacts;
use crate::sys::smi::SmiCounts;
use std::ffi::OsString;
use std::path::PathBuf;

mod run;

#[cfg(test)]
mod tests;

/// The hwlatdetect front end; `argv` without the program name.
pub fn main(argv: &[OsString]) -> Outcome {
    measured(argv).map(|m| m.status)
}

/// The front end, with what it measured: the largest sample.
pub(super) fn measured(argv: &[OsString]) -> Result<super::common::Measured, Refusal> {
    let a = match parse(argv)? {
        Parsed::Help => {
            out!("{USAGE}");
            return Ok(super::common::Measured::nothing(0));
        }
        Parsed::Run(a) => a,
    };
    if let Some(path) = &a.report
        && let Err(e) = crate::sys::outfile::check(path, false)
    {
        return Err(Refusal::output("rtlab hwlat: --report ", &e));
    }
    let root = SysRoot::real();
    let online = crate::sys::online_cpus(&root)
        .map_err(|e| Refusal::new(format!("rtlab hwlat: the online CPUs: {e}")))?;
    let detection = detection(&root);
    let counter = crate::sys::counter_choice::choose(&root);
    let plans = hwlat_plan(&a, &online, &counter, detection == Detection::Traced)?;
    run::measure(&a, &plans, &detection)
}

/// Whether the trace can tell OS noise from hardware here: it takes root
/// and tracefs.
pub fn detection(root: &SysRoot) -> Detection {
    if !crate::sys::Privileges::current(root).root {
        return Detection::Untraced("not root: the trace takes root".into());
    }
    if crate::sys::trace::mounted(root).is_none() && !root.exists(crate::sys::paths::TRACEFS) {
        return Detection::Untraced("no tracefs on this kernel".into());
    }
    Detection::Traced
}

/// The SMIs during the run, from the counts before and after.
pub fn smis_during(before: &SmiCounts, after: &SmiCounts) -> Smis {
    match (before, after) {
        (SmiCounts::Read(b), SmiCounts::Read(a)) => {
            Smis::Counted(crate::sys::smi::smis_between(b, a))
        }
        (SmiCounts::Unavailable(why), _) | (_, SmiCounts::Unavailable(why)) => {
            Smis::Unavailable(why.clone())
        }
    }
}

/// The CPUs' steal time over the run (`RunResult::steal_ms`) when a
/// hypervisor runs this machine, else None (bare metal: no table).
pub fn steal_if_guest(root: &SysRoot, steal_ms: &[(usize, f64)]) -> Option<Vec<(usize, f64)>> {
    crate::sys::smi::under_hypervisor(root).then(|| steal_ms.to_vec())
}

/// CLOCK_REALTIME less CLOCK_MONOTONIC now (ns): taken once at the start,
/// it turns the noise threads' times into the tracer's wall-clock stamps.
pub fn realtime_offset_ns() -> i128 {
    let real = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    real - i128::from(crate::sys::os::monotonic_ns())
}

/// hwlatdetect's options, their values converted and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HwlatArgs {
    /// Length of the test (s; default 120).
    pub duration_s: u64,
    /// A window whose largest gap is over this is a sample (µs; default 10).
    pub threshold_us: u64,
    /// A sample over this fails the test (µs; default the threshold).
    pub hardlimit_us: u64,
    /// Each CPU's turn: the time from one sampling start to the next (µs;
    /// default 1 000 000).
    pub window_us: u64,
    /// The part of a window that is polled (µs; default 500 000).
    pub width_us: u64,
    /// `--cpu-list` as given (hwlatdetect prints it; `None` when absent).
    pub cpu_list: Option<String>,
    /// The CPUs of `--cpu-list` (None: every online CPU).
    pub cpus: Option<Vec<usize>>,
    /// `--report`: the file of samples.
    pub report: Option<PathBuf>,
    /// `--debug`.
    pub debug: bool,
    /// `--quiet`.
    pub quiet: bool,
    /// hwlatdetect's debugging prints of its options, in its order, after
    /// `debugging prints turned on` (shown with `--debug`).
    pub debug_lines: Vec<String>,
}

impl HwlatArgs {
    /// The report's header: the parameters as hwlatdetect prints them.
    pub fn header(&self) -> Header {
        Header {
            duration_s: self.duration_s,
            cpu_list: self.cpu_list.clone(),
            threshold_us: self.threshold_us,
            window_us: self.window_us,
            width_us: self.width_us,
            report: self.report.as_ref().map(|p| p.display().to_string()),
            debug: self.debug,
            quiet: self.quiet,
            debug_lines: self.debug_lines.clone(),
        }
    }
}

/// What the command line asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// `-h`/`--help`: print the usage, exit 0.
    Help,
    /// Measure.
    Run(HwlatArgs),
}

/// hwlatdetect's usage, as argparse prints it for `-h`.
pub const USAGE: &str = "\
usage: hwlatdetect [-h] [--duration DURATION] [--threshold THRESHOLD]
                   [--hardlimit HARDLIMIT] [--window WINDOW] [--width WIDTH]
                   [--report REPORT] [--cpu-list CPULIST] [--debug] [--quiet]
                   [--watch]

hwlatdetect's command line, measured by rtlab's noise threads (SCHED_FIFO 99,
one CPU at a time): gaps no OS event explains are hardware latency.

options:
  -h, --help            show this help message and exit
  --duration DURATION   total time to test for hardware latency: <n>{smdw}
  --threshold THRESHOLD
                        value above which is considered an hardware latency
                        (us, or with us, ms, s; default 10)
  --hardlimit HARDLIMIT
                        value above which the test is considered to fail
                        (default: the threshold)
  --window WINDOW       time between samples (default 1000000us)
  --width WIDTH         time to actually measure (default 500000us)
  --report REPORT       filename for sample data
  --cpu-list CPULIST    the CPUs for hwlat thread to move across
  --debug               turn on debugging prints
  --quiet               turn off all screen output
  --watch               refused: rtlab lists the samples when the run ends
";

/// The front end's command-line definition, for its man page (the
/// options are parsed by [`parse`], as argparse parses them).
pub fn command() -> clap::Command {
    let help = [
        (
            "duration",
            "DURATION",
            "Total time to test: seconds, or with s, m, h, d, w (default 120)",
        ),
        (
            "threshold",
            "THRESHOLD",
            "A window's largest gap over this (us, or with us, ms, s) is a sample (default 10)",
        ),
        (
            "hardlimit",
            "HARDLIMIT",
            "A sample over this fails the test, exit status 1 (default: the threshold)",
        ),
        (
            "window",
            "WINDOW",
            "Each CPU's turn, from one sampling start to the next (default 1000000us)",
        ),
        (
            "width",
            "WIDTH",
            "The part of the window polled (default 500000us)",
        ),
        ("report", "REPORT", "Write the sample lines to this file"),
        (
            "cpu-list",
            "CPULIST",
            "The CPUs measured, in turn (default: every online CPU)",
        ),
    ];
    let flags = [
        (
            "debug",
            "Print hwlatdetect's debugging prints of the options",
        ),
        (
            "quiet",
            "Print only the SMI lines, the report line and the samples",
        ),
        ("watch", "Refused: the samples are listed when the run ends"),
    ];
    let mut cmd = clap::Command::new("rtlab hwlat")
        .about("hwlatdetect's command line and report, measured by rtlab's noise threads")
        .disable_version_flag(true);
    for (long, value, text) in help {
        cmd = cmd.arg(clap::Arg::new(long).long(long).value_name(value).help(text));
    }
    for (long, text) in flags {
        cmd = cmd.arg(
            clap::Arg::new(long)
                .long(long)
                .action(clap::ArgAction::SetTrue)
                .help(text),
        );
    }
    cmd
}

/// The options: their names and whether they take a value.
const OPTIONS: [(&str, bool); 11] = [
    ("--help", false),
    ("--duration", true),
    ("--threshold", true),
    ("--hardlimit", true),
    ("--window", true),
    ("--width", true),
    ("--report", true),
    ("--cpu-list", true),
    ("--debug", false),
    ("--quiet", false),
    ("--watch", false),
];

/// The options hwlatdetect has that rtlab does not do, and why.
const UNSUPPORTED: [(&str, &str); 1] = [(
    "--watch",
    "a gap is told OS noise or hardware once the trace around it is read, so rtlab lists \
     the samples when the run ends, not as they arrive",
)];

/// The raw values, as argparse stores them (the last one given).
#[derive(Debug, Default)]
struct Raw {
    values: std::collections::BTreeMap<&'static str, String>,
    flags: std::collections::BTreeSet<&'static str>,
}

/// The refusal of a bad command line (exit status 2, as argparse's).
fn usage_error(msg: impl std::fmt::Display) -> Refusal {
    Refusal::new(format!("rtlab hwlat: {msg}"))
        .hint("`rtlab hwlat --help` lists hwlatdetect's options")
}

/// The option `word` names (`--name`, or an unambiguous abbreviation).
fn option_named(word: &str) -> Result<Option<(&'static str, bool)>, Refusal> {
    if let Some(&exact) = OPTIONS.iter().find(|(n, _)| *n == word) {
        return Ok(Some(exact));
    }
    let matches: Vec<_> = OPTIONS
        .iter()
        .filter(|(n, _)| n.starts_with(word))
        .collect();
    match matches.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(**one)),
        many => Err(usage_error(format!(
            "ambiguous option: {word} could match {}",
            many.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// Whether argparse would take `word` as an option's value (not an
/// option): anything but a word starting with `-` that is not a negative
/// number.
fn is_value(word: &str) -> bool {
    if !word.starts_with('-') {
        return true;
    }
    let rest = &word[1..];
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match rest.split_once('.') {
        None => digits(rest),
        Some((int, frac)) => (int.is_empty() || digits(int)) && digits(frac),
    }
}

/// The words of the command line as argparse sorts them: options with
/// their values, and what it does not recognise. `Ok(None)`: `--help`.
fn scan(argv: &[OsString]) -> Result<Option<Raw>, Refusal> {
    let mut raw = Raw::default();
    let mut unknown = Vec::new();
    let words: Vec<String> = argv
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    let mut i = 0;
    while let Some(word) = words.get(i) {
        i += 1;
        if word == "--" {
            unknown.extend(words[i..].iter().cloned());
            break;
        }
        if word == "-h" {
            return Ok(None);
        }
        if !word.starts_with("--") || word.len() == 2 {
            unknown.push(word.clone());
            continue;
        }
        let (name, inline) = match word.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (word.as_str(), None),
        };
        let Some((option, takes)) = option_named(name)? else {
            unknown.push(word.clone());
            continue;
        };
        match (takes, inline) {
            (false, Some(v)) => {
                return Err(usage_error(format!(
                    "argument {option}: ignored explicit argument '{v}'"
                )));
            }
            (false, None) if option == "--help" => return Ok(None),
            (false, None) => {
                raw.flags.insert(option);
            }
            (true, Some(v)) => {
                raw.values.insert(option, v);
            }
            (true, None) => match words.get(i).filter(|w| is_value(w)) {
                Some(v) => {
                    raw.values.insert(option, v.clone());
                    i += 1;
                }
                None => {
                    return Err(usage_error(format!(
                        "argument {option}: expected one argument"
                    )));
                }
            },
        }
    }
    if !unknown.is_empty() {
        return Err(usage_error(format!(
            "unrecognized arguments: {}",
            unknown.join(" ")
        )));
    }
    Ok(Some(raw))
}

/// Parses hwlatdetect's command line (`argv` without the program name).
pub fn parse(argv: &[OsString]) -> Result<Parsed, Refusal> {
    let Some(raw) = scan(argv)? else {
        return Ok(Parsed::Help);
    };
    for (option, why) in UNSUPPORTED {
        if raw.flags.contains(option) {
            return Err(
                Refusal::new(format!("rtlab hwlat: {option} is not supported: {why}"))
                    .hint(format!("drop {option}; the samples are printed at the end")),
            );
        }
    }
    convert(&raw).map(Parsed::Run)
}

/// A value hwlatdetect takes (argparse's default is None, and hwlatdetect
/// tests the string: an empty value is as if not given).
fn given<'a>(raw: &'a Raw, option: &str) -> Option<&'a str> {
    raw.values
        .get(option)
        .map(String::as_str)
        .filter(|v| !v.is_empty())
}

/// The refusal of a value hwlatdetect cannot convert.
fn bad_value(option: &str, msg: String) -> Refusal {
    Refusal::new(format!("rtlab hwlat: {option}: {msg}")).hint(match option {
        "--duration" => "seconds, or with a suffix s, m, h, d or w: --duration 10m",
        _ => "microseconds, or with a suffix us, ms or s: --threshold 20us, --window 1s",
    })
}

/// The values converted in hwlatdetect's order, the window and width
/// adjusted to each other as it does, its debugging prints kept.
fn convert(raw: &Raw) -> Result<HwlatArgs, Refusal> {
    let mut debug_lines = Vec::new();
    let mut say = |line: String| debug_lines.push(line);
    let us = |option: &'static str| -> Result<Option<u64>, Refusal> {
        given(raw, option)
            .map(|v| microseconds(v).map_err(|m| bad_value(option, m)))
            .transpose()
    };
    let threshold_us = match us("--threshold")? {
        Some(t) => {
            say(format!("threshold set to {t}us"));
            t
        }
        None => DEFAULT_THRESHOLD_US,
    };
    let hardlimit_us = us("--hardlimit")?.unwrap_or(threshold_us);
    say(format!("hardlimit set to {hardlimit_us}us"));
    let (window_us, width_us) = window_and_width(us("--window")?, us("--width")?, &mut say);
    let duration_s = match given(raw, "--duration") {
        Some(v) => seconds(v).map_err(|m| bad_value("--duration", m))?,
        None => DEFAULT_DURATION_S,
    };
    say(format!("test duration is {duration_s}s"));
    let cpu_list = raw.values.get("--cpu-list").cloned();
    let cpus = match given(raw, "--cpu-list") {
        Some(text) => Some(cpus_of(text)?),
        None => None,
    };
    if let Some(c) = &cpus {
        say(format!("set tracing_cpumask to {}", hex_mask(c)));
    }
    check_sizes(duration_s, window_us, width_us)?;
    Ok(HwlatArgs {
        duration_s,
        threshold_us,
        hardlimit_us,
        window_us,
        width_us,
        cpu_list,
        cpus,
        report: given(raw, "--report").map(PathBuf::from),
        debug: raw.flags.contains("--debug"),
        quiet: raw.flags.contains("--quiet"),
        debug_lines,
    })
}

/// The kernel's hwlat tracer's defaults (µs), which hwlatdetect reads back.
pub const DEFAULT_THRESHOLD_US: u64 = 10;
/// The tracer's default window (µs).
pub const DEFAULT_WINDOW_US: u64 = 1_000_000;
/// The tracer's default width (µs).
pub const DEFAULT_WIDTH_US: u64 = 500_000;
/// hwlatdetect's default duration (s).
pub const DEFAULT_DURATION_S: u64 = 120;

/// The window and width as hwlatdetect sets them: the window first (the
/// width halved to fit a smaller window), then the width (the window
/// doubled to hold a larger width). hwlatdetect 2.4 writes the halved
/// width as a Python float, which the kernel refuses; rtlab rounds down.
fn window_and_width(
    window: Option<u64>,
    width: Option<u64>,
    say: &mut impl FnMut(String),
) -> (u64, u64) {
    let (mut window_us, mut width_us) = (DEFAULT_WINDOW_US, DEFAULT_WIDTH_US);
    if let Some(w) = window {
        if w < width_us {
            say(format!(
                "shrinking width to {} for new window of {w}",
                w / 2
            ));
            width_us = w / 2;
        }
        say(format!("window parameter = {w}"));
        window_us = w;
        say(format!("window for sampling set to {w}us"));
    }
    if let Some(w) = width {
        if w > window_us {
            let doubled = w.saturating_mul(2);
            say(format!("widening window to {doubled} for new width of {w}"));
            window_us = doubled;
        }
        say(format!("width parameter = {w}"));
        width_us = w;
        say(format!("sample width set to {w}us"));
    }
    (window_us, width_us)
}

/// Sizes rtlab cannot measure with (hwlatdetect would start and sample
/// nothing, or the kernel would refuse them).
fn check_sizes(duration_s: u64, window_us: u64, width_us: u64) -> Result<(), Refusal> {
    let refuse = |what: &str| {
        Refusal::new(format!("rtlab hwlat: {what}: nothing would be sampled"))
            .hint("hwlatdetect's defaults: --window 1000000 --width 500000 --duration 120")
    };
    if duration_s == 0 {
        return Err(refuse("a duration of 0 s"));
    }
    if width_us == 0 {
        return Err(refuse("a sample width of 0 us"));
    }
    // Each turn is kept in ns by the noise threads.
    if window_us > u64::MAX / 1000 / 4096 || duration_s > u64::MAX / 1_000_000_000 {
        return Err(
            Refusal::new("rtlab hwlat: the window or the duration is too long")
                .hint("a window under 52 days, a duration under 584 years"),
        );
    }
    Ok(())
}

/// `--cpu-list`'s CPUs (a kernel CPU list: `0-3,6`).
fn cpus_of(text: &str) -> Result<Vec<usize>, Refusal> {
    match crate::cpulist::parse(text) {
        Ok(c) if !c.is_empty() => Ok(c),
        Ok(_) => Err(bad_value_cpus(text, "no CPU")),
        Err(e) => Err(bad_value_cpus(text, &e.message)),
    }
}

fn bad_value_cpus(text: &str, why: &str) -> Refusal {
    Refusal::new(format!(
        "rtlab hwlat: --cpu-list {}: {why}",
        crate::text::one_line(text)
    ))
    .hint("a CPU list: --cpu-list 0-3,6")
}

/// The CPUs as the hex mask hwlatdetect writes to `tracing_cpumask`.
fn hex_mask(cpus: &[usize]) -> String {
    let top = cpus.iter().max().copied().unwrap_or(0);
    let mut nibbles = vec![0u8; top / 4 + 1];
    for &c in cpus {
        nibbles[c / 4] |= 1 << (c % 4);
    }
    let text: String = nibbles
        .iter()
        .rev()
        .map(|n| char::from_digit(u32::from(*n), 16).unwrap_or('0'))
        .collect();
    let trimmed = text.trim_start_matches('0');
    if trimmed.is_empty() { "0" } else { trimmed }.to_string()
}

/// A decimal integer as Python's `int()` reads one: spaces around, a sign,
/// underscores between digits. None when it is not one.
fn py_int(text: &str) -> Option<i128> {
    let t = text.trim();
    let (neg, digits) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let ok = !digits.is_empty()
        && !digits.starts_with('_')
        && !digits.ends_with('_')
        && !digits.contains("__")
        && digits.bytes().all(|b| b.is_ascii_digit() || b == b'_');
    if !ok {
        return None;
    }
    let mut n: i128 = 0;
    for b in digits.bytes().filter(u8::is_ascii_digit) {
        n = n.checked_mul(10)?.checked_add(i128::from(b - b'0'))?;
    }
    Some(if neg { -n } else { n })
}

/// `n` × `unit` as a non-negative u64.
fn scaled(n: Option<i128>, unit: u64, invalid: impl Fn() -> String) -> Result<u64, String> {
    let n = n.ok_or_else(&invalid)?;
    if n < 0 {
        return Err(format!("{} is negative", invalid()));
    }
    n.checked_mul(i128::from(unit))
        .and_then(|v| u64::try_from(v).ok())
        .ok_or_else(|| format!("{}: too large", invalid()))
}

/// hwlatdetect's `microseconds()`: digits (µs), or with `ms`, `us` or `s`.
pub fn microseconds(text: &str) -> Result<u64, String> {
    let invalid = || format!("invalid input for microseconds: '{text}'");
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return scaled(py_int(text), 1, invalid);
    }
    if let Some(n) = text.strip_suffix("ms") {
        return scaled(py_int(n), 1000, invalid);
    }
    if let Some(n) = text.strip_suffix("us") {
        return scaled(py_int(n), 1, invalid);
    }
    if let Some(n) = text.strip_suffix('s') {
        return scaled(py_int(n), 1_000_000, invalid);
    }
    Err(invalid())
}

/// hwlatdetect's `seconds()`: digits, or with `s`, `m`, `h`, `d` or `w`
/// (a letter before the suffix is refused: `10ms`).
pub fn seconds(text: &str) -> Result<u64, String> {
    let invalid = || format!("invalid input for seconds: '{text}'");
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return scaled(py_int(text), 1, invalid);
    }
    let chars: Vec<char> = text.chars().collect();
    let [.., before, suffix] = chars.as_slice() else {
        return Err(invalid());
    };
    if before.is_alphabetic() {
        return Err(format!("illegal suffix for seconds: '{before}'"));
    }
    let unit = match suffix {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        'w' => 7 * 86_400,
        _ => return Err(invalid()),
    };
    let number: String = chars[..chars.len() - 1].iter().collect();
    scaled(py_int(&number), unit, invalid)
}

/// The noise threads that measure as the hwlat tracer samples: one per
/// CPU of `--cpu-list` (all of `online` without it), SCHED_FIFO 99, each
/// polling `width` of its turns of `window`, the turns going round the
/// CPUs in order (period `window` × CPUs, offset `window` × place). A CPU
/// whose first turn would start after the end has no thread. `attribute`:
/// the trace can tell OS noise from hardware (root and tracefs).
pub fn hwlat_plan(
    args: &HwlatArgs,
    online: &[usize],
    counter: &CounterFacts,
    attribute: bool,
) -> Result<Vec<NoisePlan>, Refusal> {
    let cpus = plan_cpus(args.cpus.as_deref(), online)?;
    let window_ns = args.window_us.saturating_mul(1000);
    let duration_ns = args.duration_s.saturating_mul(1_000_000_000);
    let period_ns = window_ns.saturating_mul(cpus.len() as u64);
    let plans = cpus
        .iter()
        .enumerate()
        .map(|(place, &cpu)| (place, cpu, window_ns.saturating_mul(place as u64)))
        .take_while(|&(_, _, offset_ns)| offset_ns < duration_ns)
        .map(|(index, cpu, offset_ns)| NoisePlan {
            spec: NoiseSpec {
                index,
                cpu,
                sched: Sched {
                    policy: Policy::Fifo,
                    priority: 99,
                },
                threshold_ns: threshold_ns(args.threshold_us).min(NOISE_THRESHOLD_MAX_NS),
                period_ns,
                runtime_ns: args.width_us.saturating_mul(1000).min(window_ns),
                duration_ns: Some(duration_ns - offset_ns),
                warmup_ns: 0,
                stop_above_ns: None,
                memmove_bytes: 0,
                offset_ns,
                linear_ns: LINEAR_NS,
                counter: CounterChoice {
                    kind: counter.kind,
                    hz: counter.hz,
                },
                cpuset: None,
            },
            attribute,
            counter_why: counter.why.clone(),
        })
        .collect();
    Ok(plans)
}

/// The CPUs measured: `--cpu-list`'s, each online, or every online CPU.
fn plan_cpus(asked: Option<&[usize]>, online: &[usize]) -> Result<Vec<usize>, Refusal> {
    let cpus = match asked {
        Some(asked) => {
            let offline: Vec<String> = asked
                .iter()
                .filter(|c| !online.contains(c))
                .map(usize::to_string)
                .collect();
            if !offline.is_empty() {
                return Err(Refusal::new(format!(
                    "rtlab hwlat: --cpu-list: CPU {} not online",
                    offline.join(", ")
                ))
                .hint(format!("online CPUs: {}", crate::cpulist::format(online))));
            }
            asked.to_vec()
        }
        None => online.to_vec(),
    };
    if cpus.is_empty() {
        return Err(Refusal::new("rtlab hwlat: no online CPU to measure"));
    }
    Ok(cpus)
}

/// The noise threads' exact range (ns): hwlat's gaps are read in µs.
pub const LINEAR_NS: u64 = 10_000;

/// The largest `noise.threshold` an experiment takes (1 s). hwlatdetect
/// takes any threshold (the tracer's `tracing_thresh`); a larger one is
/// planned at this, and the report keeps only the samples over the
/// threshold given, so the output is the same (`rtlab qualify` passes a
/// limit of up to 2^31-1 µs as the threshold).
pub const NOISE_THRESHOLD_MAX_NS: u64 = 1_000_000_000;

/// The noise threshold for hwlat's: the tracer keeps a window whose
/// largest gap, in whole µs, is over the threshold, that is a gap of at
/// least threshold + 1 µs.
pub fn threshold_ns(threshold_us: u64) -> u64 {
    threshold_us.saturating_add(1).saturating_mul(1000)
}

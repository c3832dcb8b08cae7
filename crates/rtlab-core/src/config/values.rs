//! Value kinds of the experiment file: durations, policies, actions, command
//! lines. Each parser returns the value or a [`ValueError`] with the byte
//! offset of the problem inside the value and a hint.

use crate::sched::Policy;

/// A value that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueError {
    /// Byte offset inside the value text.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
}

impl ValueError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        ValueError {
            offset: 0,
            message: message.into(),
            hint: None,
        }
    }

    pub(crate) fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub(crate) fn at(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }
}

/// Duration units and their length in nanoseconds.
pub const DURATION_UNITS: [(&str, u128); 6] = [
    ("ns", 1),
    ("us", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("min", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// The hint of a duration in an experiment file.
pub const UNITS_HINT: &str =
    "durations take a unit: ns, us, ms, s, min, h (e.g. `1500 ms`, `1.5s`)";

/// Parses a duration (`1500 ms`, `1.5s`, `10 min`) into nanoseconds.
/// Decimals are exact (no floating point); sub-nanosecond parts are dropped.
pub fn duration_ns(text: &str) -> Result<u64, ValueError> {
    let number_len = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, rest) = text.split_at(number_len);
    let unit = rest.trim();
    if number.is_empty() {
        return Err(ValueError::new(format!("`{text}` is not a duration")).hint(UNITS_HINT));
    }
    if unit.is_empty() {
        return Err(ValueError::new(format!("duration `{text}` has no unit"))
            .at(number_len)
            .hint(UNITS_HINT));
    }
    let Some(&(_, unit_ns)) = DURATION_UNITS.iter().find(|(u, _)| *u == unit) else {
        return Err(ValueError::new(format!("unknown duration unit `{unit}`"))
            .at(text.len() - rest.trim_start().len())
            .hint(UNITS_HINT));
    };
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    if frac_part.contains('.') || (int_part.is_empty() && frac_part.is_empty()) {
        return Err(ValueError::new(format!("`{number}` is not a number")).hint(UNITS_HINT));
    }
    let parse = |digits: &str| -> Result<u128, ValueError> {
        if digits.is_empty() {
            return Ok(0);
        }
        digits
            .parse::<u128>()
            .map_err(|_| ValueError::new(format!("`{number}` is too large")).hint(LONGEST_HINT))
    };
    if frac_part.len() > 18 {
        return Err(ValueError::new(format!("`{number}` has too many decimals"))
            .hint("write at most 18 decimals, or a smaller unit (`1.5 ms`, `1500 us`)"));
    }
    let whole = parse(int_part)?.checked_mul(unit_ns);
    let frac = parse(frac_part)? * unit_ns / 10u128.pow(frac_part.len() as u32);
    whole
        .and_then(|w| w.checked_add(frac))
        .and_then(|ns| u64::try_from(ns).ok())
        .ok_or_else(|| ValueError::new(format!("duration `{text}` is too long")).hint(LONGEST_HINT))
}

/// The hint of a duration given on the command line.
pub const CLI_UNITS_HINT: &str =
    "durations take a unit: ns, us, ms, s, m (or min), h, d (e.g. `500us`, `1.5s`, `10m`)";

/// Parses a duration given on the command line: the experiment file's
/// units, and `m` for minutes (as cyclictest's `-D`, Prometheus and most
/// tools write them) and `d` for days. Files keep systress's grammar, in
/// which `m` is not a unit (`min` is).
pub fn cli_duration_ns(text: &str) -> Result<u64, ValueError> {
    let t = text.trim();
    let number = t
        .trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .trim_end();
    let unit = t[number.len()..].trim();
    let (scale, unit) = match unit {
        _ if number.is_empty() => return duration_ns(t),
        "m" => (1u128, "min"),
        "d" => (24, "h"),
        _ => {
            return duration_ns(t).map_err(|mut e| {
                if e.hint.as_deref() == Some(UNITS_HINT) {
                    e.hint = Some(CLI_UNITS_HINT.to_string());
                }
                e
            });
        }
    };
    let ns = duration_ns(&format!("{number} {unit}"))?;
    u64::try_from(u128::from(ns) * scale)
        .map_err(|_| ValueError::new(format!("duration `{t}` is too long")).hint(LONGEST_HINT))
}

/// A duration given on the command line, as an experiment file writes it
/// (`10m` is `10min`, `1d` is `24h`): what the options of `rtlab run` and
/// of the commands that write an experiment put in it.
pub fn cli_duration_for_file(text: &str) -> Result<String, ValueError> {
    cli_duration_ns(text).map(format_duration)
}

/// The hint of a duration beyond what a `u64` of nanoseconds holds.
const LONGEST_HINT: &str =
    "a duration is at most 18446744073 s (about 584 years), e.g. `10 min` or `24 h`";

/// Formats nanoseconds as the shortest exact duration (`1500 ms` → `1500ms`).
pub fn format_duration(ns: u64) -> String {
    let ns = u128::from(ns);
    for &(unit, len) in DURATION_UNITS.iter().rev() {
        if ns != 0 && ns % len == 0 {
            return format!("{}{unit}", ns / len);
        }
    }
    format!("{ns}ns")
}

/// Parses a size in bytes: digits, then an optional `K`, `M` or `G`
/// (powers of 1024, as rt-tests reads them), `B`/`iB` allowed after.
pub fn size_bytes(text: &str) -> Result<u64, ValueError> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let bad = || {
        ValueError::new(format!("`{text}` is not a size"))
            .hint("write bytes, or a number with K, M or G (powers of 1024): `16K`, `1M`")
    };
    let n: u64 = number.parse().map_err(|_| bad())?;
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => return Err(bad()),
    };
    n.checked_mul(1u64 << shift).ok_or_else(bad)
}

/// Parses a scheduling policy name, case-insensitively.
pub fn policy(text: &str) -> Result<Policy, ValueError> {
    match text.to_ascii_uppercase().as_str() {
        "OTHER" | "NORMAL" => Ok(Policy::Other),
        "FIFO" => Ok(Policy::Fifo),
        "RR" => Ok(Policy::Rr),
        "BATCH" => Ok(Policy::Batch),
        "IDLE" => Ok(Policy::Idle),
        _ => Err(
            ValueError::new(format!("unknown scheduling policy `{text}`"))
                .hint("use one of OTHER, FIFO, RR, BATCH, IDLE"),
        ),
    }
}

/// An `on_spike` value: `save`, `stop`, `signal PID SIGNAL` or `run
/// PROGRAM [ARG...]` (split into words as `cmdline` is, quotes grouping,
/// never given to a shell).
pub fn spike_action(text: &str) -> Result<super::SpikeAction, ValueError> {
    use super::SpikeAction;
    let mut words = text.split_whitespace();
    let hint = "use `save`, `stop`, `signal PID SIGNAL` or `run PROGRAM [ARG...]`";
    let action = match words.next().map(str::to_ascii_lowercase).as_deref() {
        Some("save") => SpikeAction::Save,
        Some("stop") => SpikeAction::Stop,
        Some("signal") => {
            let pid = words
                .next()
                .and_then(|p| p.parse::<i32>().ok())
                .filter(|&p| p > 1)
                .ok_or_else(|| {
                    ValueError::new("`signal` needs a process ID above 1")
                        .hint("`signal 1234 USR1`")
                })?;
            let signal = words.next().and_then(signal_number).ok_or_else(|| {
                ValueError::new("`signal` needs a signal")
                    .hint("a name (`USR1`, `TERM`) or a number 1..64")
            })?;
            SpikeAction::Signal { pid, signal }
        }
        Some("run") => {
            let rest = text.trim_start().get(3..).unwrap_or("");
            if rest.trim().is_empty() {
                return Err(
                    ValueError::new("`run` needs a program").hint("`run /usr/local/bin/notify`")
                );
            }
            return Ok(SpikeAction::Run {
                argv: cmdline(rest)?,
            });
        }
        _ => return Err(ValueError::new(format!("unknown action `{text}`")).hint(hint)),
    };
    match words.next() {
        Some(extra) => Err(ValueError::new(format!("unexpected `{extra}`")).hint(hint)),
        None => Ok(action),
    }
}

/// A `sched.deadline` value: `RUNTIME:PERIOD` or
/// `RUNTIME:DEADLINE:PERIOD` (rtla's `-P d:...`), durations with units
/// (`200us:1ms`). The kernel's rules: 1 µs <= runtime <= deadline <=
/// period <= 4 s (the kernel caps periods at `sched_deadline_period_max_us`,
/// 4 s by default).
pub fn deadline(text: &str) -> Result<crate::sched::Deadline, ValueError> {
    let hint = "write RUNTIME:PERIOD or RUNTIME:DEADLINE:PERIOD, e.g. `200us:1ms`";
    let parts: Vec<&str> = text.split(':').map(str::trim).collect();
    let ns = |t: &str| duration_ns(t).map_err(|e| ValueError::new(e.message).hint(hint));
    let (runtime, deadline, period) = match parts[..] {
        [r, p] => (ns(r)?, ns(p)?, ns(p)?),
        [r, d, p] => (ns(r)?, ns(d)?, ns(p)?),
        _ => return Err(ValueError::new(format!("`{text}` is not a reservation")).hint(hint)),
    };
    if runtime < 1_000 || runtime > deadline || deadline > period || period > 4_000_000_000 {
        return Err(
            ValueError::new("needs 1 µs <= runtime <= deadline <= period <= 4 s").hint(hint),
        );
    }
    Ok(crate::sched::Deadline {
        runtime_ns: runtime,
        deadline_ns: deadline,
        period_ns: period,
    })
}

/// A signal by name (`USR1`, `SIGUSR1`) or number (1..64).
pub fn signal_number(text: &str) -> Option<i32> {
    if let Ok(n) = text.parse::<i32>() {
        return (1..=64).contains(&n).then_some(n);
    }
    let upper = text.to_ascii_uppercase();
    let name = upper.strip_prefix("SIG").unwrap_or(&upper);
    // The numbers every Linux architecture rtlab builds for shares.
    let n = match name {
        "HUP" => 1,
        "INT" => 2,
        "QUIT" => 3,
        "KILL" => 9,
        "USR1" => 10,
        "USR2" => 12,
        "ALRM" => 14,
        "TERM" => 15,
        "CONT" => 18,
        "STOP" => 19,
        _ => return None,
    };
    Some(n)
}

/// What to do when a program ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Action {
    /// Start it again.
    Respawn,
    /// Leave it stopped.
    Ignore,
    /// Stop the whole run.
    Abort,
}

/// Parses a termination action, case-insensitively.
pub fn action(text: &str) -> Result<Action, ValueError> {
    match text.to_ascii_uppercase().as_str() {
        "RESPAWN" => Ok(Action::Respawn),
        "IGNORE" => Ok(Action::Ignore),
        "ABORT" => Ok(Action::Abort),
        _ => Err(ValueError::new(format!("unknown action `{text}`"))
            .hint("use one of RESPAWN, IGNORE, ABORT")),
    }
}

/// Parses an integer in `min..=max`; the hint of a refusal says the range.
pub fn integer(text: &str, min: i64, max: i64) -> Result<i64, ValueError> {
    let hint = || format!("write a whole number from {min} to {max}");
    let n: i64 = text
        .parse()
        .map_err(|_| ValueError::new(format!("`{text}` is not a whole number")).hint(hint()))?;
    if n < min || n > max {
        return Err(ValueError::new(format!("{n} is out of range ({min}..{max})")).hint(hint()));
    }
    Ok(n)
}

/// A cpuset name: a path below the root cpuset (`rt`, `nrt`, `lab/rt`),
/// of letters, digits, `_`, `-`, `.` and `/`, without `..`.
pub fn cpuset_name(text: &str) -> Result<String, ValueError> {
    let name = text.trim().trim_matches('/');
    if name.is_empty() {
        return Err(ValueError::new("empty cpuset name").hint("e.g. `rt` or `nrt`"));
    }
    let lead = text.len() - text.trim_start().len();
    if let Some((i, c)) = text
        .trim()
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_alphanumeric() || "_-./".contains(c)))
    {
        let mut e = ValueError::new(format!("`{c}` cannot be in a cpuset name"))
            .hint("a cpuset is named by its path below the root cpuset, e.g. `rt`");
        e.offset = lead + i;
        return Err(e);
    }
    if name
        .split('/')
        .any(|part| part == ".." || part == "." || part.is_empty())
    {
        return Err(
            ValueError::new(format!("`{name}` is not a path below the root cpuset"))
                .hint("e.g. `rt`, or `lab/rt` for a nested one"),
        );
    }
    Ok(name.to_string())
}

/// A CPU bandwidth group name: one path component of letters, digits,
/// `_`, `-` and `.` (not leading), at most 64 characters.
pub fn group_name(text: &str) -> Result<String, ValueError> {
    let name = text.trim();
    let valid = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
    if !valid {
        return Err(ValueError::new(format!("`{name}` is not a group name"))
            .hint("letters, digits, `_`, `-` and `.`, e.g. `hogs`"));
    }
    Ok(name.to_string())
}

/// Splits a command line into argv as a shell splits words (quotes group,
/// backslash escapes), without running a shell: `;`, `|`, `{}` are plain
/// arguments.
pub fn cmdline(text: &str) -> Result<Vec<String>, ValueError> {
    let argv = shell_words::split(text).map_err(|_| {
        ValueError::new("unbalanced quote in command line")
            .hint("close the quote, or escape it with a backslash")
    })?;
    if argv.is_empty() {
        return Err(ValueError::new("empty command line")
            .hint("write the program and its arguments, e.g. `ping -i 0.2 localhost`"));
    }
    Ok(argv)
}

/// An argv written as a `cmdline` value that [`cmdline`] splits back to
/// it, or None when it cannot be written on one line of a file (a control
/// character, a quote inside an argument, an empty argument).
pub fn quote_cmdline(argv: &[String]) -> Option<String> {
    let writable = |a: &String| {
        !a.is_empty() && !a.contains(['\'', '"', '\\']) && !a.chars().any(char::is_control)
    };
    if argv.is_empty() || !argv.iter().all(writable) {
        return None;
    }
    let text = shell_words::join(argv);
    (cmdline(&text).ok()? == argv).then_some(text)
}

/// Whether a command line (an `on_spike run` action, a `cmdline`) written
/// after its key on one line of an experiment file reads back as itself:
/// no control character, no comment outside quotes, its quotes balanced.
pub fn cmdline_on_a_line(value: &str) -> bool {
    // A `{` or `}` ending it would read as a stanza's brace.
    !value.trim().is_empty()
        && !value.trim_end().ends_with(['{', '}'])
        && !value.chars().any(char::is_control)
        && super::parse::comment_start(value) == value.len()
        && shell_words::split(value).is_ok()
}

/// An argv quoted as `sh` reads it back, whatever it holds (where
/// [`quote_cmdline`] cannot write it as a `cmdline`, the words stay
/// apart).
pub fn shell_join(argv: &[String]) -> String {
    shell_words::join(argv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_command_line_is_written_on_a_line_unless_it_would_read_otherwise() {
        assert!(cmdline_on_a_line(r#"run sh -c "echo hi""#));
        assert!(cmdline_on_a_line("run sh -c 'echo #1'"));
        assert!(!cmdline_on_a_line("run echo # comment"));
        assert!(!cmdline_on_a_line("run sh -c 'echo"));
        assert!(!cmdline_on_a_line("run a\nb"), "a line break");
        assert!(cmdline_on_a_line(r"run echo a\ b"), "an escaped blank");
        assert!(!cmdline_on_a_line(" "));
        assert!(!cmdline_on_a_line("run echo {"));
    }

    #[test]
    fn an_argv_with_quotes_is_joined_as_sh_reads_it() {
        let argv: Vec<String> = ["sh", "-c", "trap '' TERM; sleep 3002 &"]
            .map(String::from)
            .to_vec();
        let text = shell_join(&argv);
        assert_eq!(shell_words::split(&text).unwrap(), argv, "{text}");
    }

    #[test]
    fn an_argv_is_quoted_back_to_itself_or_refused() {
        let argv: Vec<String> = ["dd", "if=a b", "#x", "$HOME", "a;b"]
            .map(String::from)
            .to_vec();
        let text = quote_cmdline(&argv).unwrap();
        assert_eq!(cmdline(&text).unwrap(), argv);
        assert_eq!(quote_cmdline(&["it's".to_string()]), None);
        assert_eq!(quote_cmdline(&["a\nb".to_string()]), None);
        assert_eq!(quote_cmdline(&[]), None);
    }

    #[test]
    fn cpuset_names() {
        assert_eq!(cpuset_name("rt").unwrap(), "rt");
        assert_eq!(cpuset_name("/lab/rt/").unwrap(), "lab/rt");
        let e = cpuset_name("r t").unwrap_err();
        assert_eq!(e.offset, 1);
        assert!(cpuset_name("../x").is_err());
        assert!(cpuset_name("").is_err());
        assert!(cpuset_name("a//b").is_err());
    }

    #[test]
    fn durations_of_every_unit_and_form() {
        assert_eq!(duration_ns("1500 ms").unwrap(), 1_500_000_000);
        assert_eq!(duration_ns("1.5s").unwrap(), 1_500_000_000);
        assert_eq!(duration_ns("10 min").unwrap(), 600_000_000_000);
        assert_eq!(duration_ns("200 us").unwrap(), 200_000);
        assert_eq!(duration_ns("2 s").unwrap(), 2_000_000_000);
        assert_eq!(duration_ns("1h").unwrap(), 3_600_000_000_000);
        assert_eq!(duration_ns("7ns").unwrap(), 7);
        assert_eq!(duration_ns("0.1 ms").unwrap(), 100_000);
        assert_eq!(duration_ns(".5 s").unwrap(), 500_000_000);
    }

    #[test]
    fn duration_errors_say_which_units_exist() {
        let e = duration_ns("1500").unwrap_err();
        assert!(e.message.contains("no unit"));
        assert!(e.hint.unwrap().contains("ns, us, ms, s, min, h"));
        let e = duration_ns("3 days").unwrap_err();
        assert_eq!(e.offset, 2);
        assert!(e.message.contains("`days`"));
        assert!(duration_ns("ms").is_err());
        assert!(duration_ns("1.2.3 s").is_err());
        assert!(duration_ns("99999999999999999999999 h").is_err());
    }

    #[test]
    fn the_command_line_reads_m_as_minutes_and_d_as_days() {
        for (text, ns) in [
            ("1m", 60_000_000_000u64),
            ("1.5m", 90_000_000_000),
            ("10 m", 600_000_000_000),
            ("2d", 172_800_000_000_000),
            ("10min", 600_000_000_000),
            ("500ms", 500_000_000),
            ("1h", 3_600_000_000_000),
        ] {
            assert_eq!(cli_duration_ns(text).unwrap(), ns, "{text}");
        }
        assert_eq!(cli_duration_for_file("1m").unwrap(), "1min");
        assert_eq!(cli_duration_for_file("1d").unwrap(), "24h");
        assert_eq!(cli_duration_for_file("90s").unwrap(), "90s");
        // What it writes, the file reads as the same duration.
        for text in ["1m", "0.25m", "3d", "7us", "1.5s"] {
            let file = cli_duration_for_file(text).unwrap();
            assert_eq!(
                duration_ns(&file).unwrap(),
                cli_duration_ns(text).unwrap(),
                "{text}"
            );
        }
        // The file's grammar has no `m`: its hint names `min`.
        assert!(duration_ns("1m").unwrap_err().hint.unwrap().contains("min"));
        let e = cli_duration_ns("2x").unwrap_err();
        assert!(e.hint.unwrap().contains("m (or min)"));
        for bad in ["m", "1", "1mm", "1.2.3m", "999999999999999d", ""] {
            assert!(cli_duration_ns(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_read_as_rt_tests_reads_them() {
        assert_eq!(size_bytes("16K").unwrap(), 16384);
        assert_eq!(size_bytes("1m").unwrap(), 1 << 20);
        assert_eq!(size_bytes("4096").unwrap(), 4096);
        assert_eq!(size_bytes("2 GiB").unwrap(), 2 << 30);
        for bad in ["", "K", "1T", "-1", "99999999999999999999G", "1.5M"] {
            assert!(size_bytes(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_format_back() {
        assert_eq!(format_duration(1_500_000_000), "1500ms");
        assert_eq!(format_duration(60_000_000_000), "1min");
        assert_eq!(format_duration(0), "0ns");
        for text in ["1ms", "20us", "10s", "3h", "7ns"] {
            assert_eq!(format_duration(duration_ns(text).unwrap()), text);
        }
    }

    #[test]
    fn policies_and_actions_are_case_insensitive() {
        assert_eq!(policy("fifo").unwrap(), Policy::Fifo);
        assert_eq!(policy("Rr").unwrap(), Policy::Rr);
        assert_eq!(policy("OTHER").unwrap(), Policy::Other);
        assert_eq!(policy("batch").unwrap(), Policy::Batch);
        assert_eq!(policy("idle").unwrap(), Policy::Idle);
        assert!(
            policy("deadline")
                .unwrap_err()
                .hint
                .unwrap()
                .contains("FIFO")
        );
        assert_eq!(action("respawn").unwrap(), Action::Respawn);
        assert_eq!(action("IGNORE").unwrap(), Action::Ignore);
        assert_eq!(action("Abort").unwrap(), Action::Abort);
        assert!(action("restart").is_err());
    }

    #[test]
    fn integers_in_range() {
        assert_eq!(integer("99", 1, 99).unwrap(), 99);
        assert!(
            integer("100", 1, 99)
                .unwrap_err()
                .message
                .contains("out of range")
        );
        assert!(integer("x", 1, 99).is_err());
    }

    #[test]
    fn cmdline_splits_like_a_shell_without_one() {
        assert_eq!(
            cmdline("find / -type d -exec /bin/ls {} ; -print").unwrap(),
            [
                "find", "/", "-type", "d", "-exec", "/bin/ls", "{}", ";", "-print"
            ]
        );
        assert_eq!(
            cmdline(r#"sh -c "find / -type d -print0 | tar --null -cvzf - -T -""#).unwrap(),
            [
                "sh",
                "-c",
                "find / -type d -print0 | tar --null -cvzf - -T -"
            ]
        );
        assert_eq!(cmdline(r"echo a\ b 'c d'").unwrap(), ["echo", "a b", "c d"]);
        assert!(cmdline("echo \"open").is_err());
        assert!(cmdline("   ").is_err());
    }
}

//! oslat's outputs (rt-tests 2.4), rendered from the noise threads'
//! histograms: the banner, the settings oslat prints before its run, the
//! per-core table (`Core:`, `Counter Freq:`, one line per bucket,
//! `Minimum:` ... `Duration:`) and the `--json` document of rt-tests'
//! common writer. What `rtlab oslat` prints on stdout is what oslat's
//! parsers expect; rtlab's extras go elsewhere.
//!
//! How oslat 2.4 puts a gap into a bucket (`insert_bucket`): its gap in
//! whole µs, truncated (counter ticks divided by the counter's whole MHz),
//! is `index`; the µs it records for the minimum and the maximum are
//! `index + 1`; with `-B` the bias (the smallest of those minima in the
//! pre-heat, in µs) is taken off `index` (never below 0); an `index` past
//! the last bucket counts in the last one (`(including overflows)`), and
//! `index - buckets` is added to an overflow sum. Bucket `j` is labelled
//! `bias + j + 1` µs. The average is the histogram's: each bucket's count
//! times its label, plus the overflow sum, over the count. Here the gap is
//! rtlab's exact ns, so `index` is `(ns - bias_ns) / width_ns` with
//! `width_ns` 1000 unless `-W` (rt-tests ≥ 2.5's bucket width) says
//! otherwise.
//!
//! Kept as oslat 2.4 has it: the average of every thread adds the overflow
//! sum of the first thread (`sum += t->overflow_sum`, not `t[i]`), and the
//! JSON `avg` is printed `%3lf` (six decimals).

use std::fmt::Write;

/// The version oslat prints (`oslat V 2.40`): rt-tests 2.4's, whose
/// outputs these are.
pub const VERSION: &str = "2.40";

/// What oslat's outputs say about the run's settings, and how they shape
/// the table.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// `-D` in seconds (`Total runtime:`).
    pub runtime_s: u64,
    /// `-f`: SCHED_FIFO priority (`Thread priority:`); None: default.
    pub rtprio: Option<u8>,
    /// `-c` as given, or `all` (`CPU list:`).
    pub cpu_list: String,
    /// `-C` (`CPU for main thread:`).
    pub main_cpu: usize,
    /// `-w memmove`: the bytes each thread moves per loop (`-m`).
    pub memmove_bytes: Option<u64>,
    /// Threads of the pre-heat (`Preheat cores:`): 1 with `-s`.
    pub preheat_cores: usize,
    /// `-b`: the number of buckets.
    pub bucket_size: usize,
    /// `-W` in ns (1000 without it).
    pub bucket_width_ns: u64,
    /// `-B`.
    pub bias: bool,
    /// `-z`.
    pub zero_omit: bool,
    /// `-q`.
    pub quiet: bool,
}

impl View {
    /// Whether labels and extremes are printed to the ns (a `-W` that is
    /// not a whole number of µs, as rt-tests ≥ 2.5 prints them).
    pub fn ns_precision(&self) -> bool {
        !self.bucket_width_ns.is_multiple_of(1000)
    }

    fn width(&self) -> u64 {
        self.bucket_width_ns.max(1)
    }
}

/// One noise thread's figures, as oslat's outputs need them. Filled from
/// the run's result (`NoiseResult`) by one function of the caller.
#[derive(Debug, Clone, Copy)]
pub struct OslatThread<'a> {
    /// The CPU it polled.
    pub cpu: usize,
    /// The counter's frequency in whole MHz (oslat: truncated).
    pub counter_mhz: u64,
    /// Gaps counted exactly: (ns, count).
    pub exact: &'a [(u64, u64)],
    /// Gaps past the exact range: (lowest ns of the bucket, count).
    pub beyond: &'a [(u64, u64)],
    /// The smallest gap (ns).
    pub min_ns: u64,
    /// The largest gap (ns).
    pub max_ns: u64,
    /// How long it polled (ns).
    pub duration_ns: u64,
}

/// The bias `-B` sets after the pre-heat, in ns: the smallest of the
/// threads' minima as oslat records them (whole µs, truncated, plus one;
/// to the ns with a `-W` of ns). 0 without `-B` or without a thread.
pub fn bias_ns(view: &View, preheat_min_ns: impl IntoIterator<Item = u64>) -> u64 {
    if !view.bias {
        return 0;
    }
    let least = preheat_min_ns.into_iter().min();
    match least {
        Some(ns) if view.ns_precision() => ns,
        Some(ns) => (ns / 1000).saturating_add(1).saturating_mul(1000),
        None => 0,
    }
}

/// `oslat V 2.40`, the first line oslat prints whatever its options.
pub fn banner() -> String {
    format!("oslat V {VERSION}\n")
}

/// The warning oslat prints when CPU 0 is measured at a FIFO priority.
pub fn cpu0_warning() -> &'static str {
    "WARNING: Running SCHED_FIFO workload on CPU 0 may hang the thread\n"
}

/// The settings and the pre-heat line, before the pre-heat (not with -q).
pub fn globals(view: &View) -> String {
    if view.quiet {
        return String::new();
    }
    let prio = match view.rtprio {
        Some(p) => format!("SCHED_FIFO:{p}"),
        None => "default".into(),
    };
    let (workload, kib) = match view.memmove_bytes {
        Some(b) => ("memmove", b / 1024),
        None => ("no", 0),
    };
    let mut s = String::new();
    let _ = writeln!(s, "Total runtime: \t\t{} seconds", view.runtime_s);
    let _ = writeln!(s, "Thread priority: \t{prio}");
    let _ = writeln!(s, "CPU list: \t\t{}", view.cpu_list);
    let _ = writeln!(s, "CPU for main thread: \t{}", view.main_cpu);
    let _ = writeln!(s, "Workload: \t\t{workload}");
    let _ = writeln!(s, "Workload mem: \t\t{kib} (KiB)");
    let _ = writeln!(s, "Preheat cores: \t\t{}", view.preheat_cores);
    s.push_str("\nPre-heat for 1 seconds...\n");
    s
}

/// `Global bias set to N (us)` after the pre-heat (with -B, even with -q).
pub fn bias_line(view: &View, bias_ns: u64) -> String {
    if !view.bias {
        return String::new();
    }
    format!("Global bias set to {} (us)\n", us_text(view, bias_ns))
}

/// The line before the measured run (not with -q).
pub fn starts(view: &View) -> &'static str {
    if view.quiet { "" } else { "Test starts...\n" }
}

/// The line after it (not with -q).
pub fn completed(view: &View) -> &'static str {
    if view.quiet {
        ""
    } else {
        "Test completed.\n\n"
    }
}

/// ns as oslat prints a bias or a bucket label: whole µs, or µs to three
/// decimals with a `-W` of ns.
fn us_text(view: &View, ns: u64) -> String {
    if view.ns_precision() {
        format!("{:.3}", ns as f64 / 1000.0)
    } else {
        (ns / 1000).to_string()
    }
}

/// One thread's histogram as oslat fills it.
#[derive(Debug, Clone, PartialEq)]
pub struct Filled {
    /// Count per bucket (the last one with the overflows).
    pub buckets: Vec<u64>,
    /// The overflows' sum of `index - buckets` (in bucket widths).
    pub overflow_sum: u64,
}

/// Puts a thread's gaps into oslat's buckets.
pub fn fill(view: &View, bias_ns: u64, t: &OslatThread) -> Filled {
    let size = view.bucket_size.max(1);
    let mut buckets = vec![0u64; size];
    let mut overflow_sum = 0u64;
    let gaps = t.exact.iter().chain(t.beyond.iter());
    for &(ns, count) in gaps {
        let mut index = ns.saturating_sub(bias_ns) / view.width();
        if index >= size as u64 {
            let extra = index - size as u64;
            overflow_sum = overflow_sum.saturating_add(extra.saturating_mul(count));
            index = size as u64 - 1;
        }
        if let Some(b) = buckets.get_mut(index as usize) {
            *b = b.saturating_add(count);
        }
    }
    Filled {
        buckets,
        overflow_sum,
    }
}

/// Bucket `j`'s upper edge in ns: its label.
fn label_ns(view: &View, bias_ns: u64, j: usize) -> u64 {
    bias_ns.saturating_add((j as u64 + 1).saturating_mul(view.width()))
}

/// The average oslat prints (µs): each bucket's count times its label,
/// plus `overflow_sum` (oslat 2.4 adds the first thread's to every
/// thread's), over the count.
fn average(view: &View, bias_ns: u64, f: &Filled, overflow_sum: u64) -> f64 {
    let mut sum = 0.0;
    let mut count = 0u64;
    for (j, &n) in f.buckets.iter().enumerate() {
        sum += n as f64 * label_ns(view, bias_ns, j) as f64 / 1000.0;
        count = count.saturating_add(n);
    }
    sum += overflow_sum as f64 * view.width() as f64 / 1000.0;
    sum / count as f64
}

/// A thread's extreme as oslat records it: whole µs truncated plus one, or
/// ns with a `-W` of ns.
fn extreme(view: &View, ns: u64) -> u64 {
    if view.ns_precision() {
        ns
    } else {
        (ns / 1000).saturating_add(1)
    }
}

fn extreme_text(view: &View, v: u64) -> String {
    if view.ns_precision() {
        format!("{:.3}", v as f64 / 1000.0)
    } else {
        v.to_string()
    }
}

/// A float as C's printf prints it (`-nan` for the 0/0 of an empty
/// histogram, as glibc on x86 does).
fn c_float(v: f64, decimals: usize) -> String {
    if v.is_nan() {
        "-nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf".into() } else { "-inf".into() }
    } else {
        format!("{v:.decimals$}")
    }
}

/// oslat's `Duration`: the counter's ticks over its MHz, a C `float`.
fn duration_s(t: &OslatThread) -> f64 {
    f64::from((t.duration_ns as f64 / 1e9) as f32)
}

/// The figures of every thread, computed once for the table and the JSON.
struct Computed {
    filled: Vec<Filled>,
    averages: Vec<f64>,
}

fn compute(view: &View, bias_ns: u64, threads: &[OslatThread]) -> Computed {
    let filled: Vec<Filled> = threads.iter().map(|t| fill(view, bias_ns, t)).collect();
    let first_overflow = filled.first().map_or(0, |f| f.overflow_sum);
    let averages = filled
        .iter()
        .map(|f| average(view, bias_ns, f, first_overflow))
        .collect();
    Computed { filled, averages }
}

/// One line of the table: the label right-aligned in 12, a tab, each
/// thread's value after a space, the end.
fn field(out: &mut String, label: &str, values: impl Iterator<Item = String>, end: &str) {
    let _ = write!(out, "{label:>12}:\t");
    for v in values {
        out.push(' ');
        out.push_str(&v);
    }
    out.push_str(end);
    out.push('\n');
}

/// Each thread's `Maximum:` as the table prints it (µs): what cnf-tests'
/// latency test compares with its limit.
pub fn maxima(view: &View, threads: &[OslatThread]) -> Vec<u64> {
    threads.iter().map(|t| extreme(view, t.max_ns)).collect()
}

/// The per-core table oslat prints at the end, and its empty line.
pub fn summary(view: &View, bias_ns: u64, threads: &[OslatThread]) -> String {
    let c = compute(view, bias_ns, threads);
    let mut out = String::new();
    field(
        &mut out,
        "Core",
        threads.iter().map(|t| t.cpu.to_string()),
        "",
    );
    let mhz = threads.iter().map(|t| t.counter_mhz.to_string());
    field(&mut out, "Counter Freq", mhz, " (Mhz)");
    buckets(&mut out, view, bias_ns, &c.filled);
    let mins: Vec<u64> = threads.iter().map(|t| extreme(view, t.min_ns)).collect();
    let maxs = maxima(view, threads);
    let text = |v: &u64| extreme_text(view, *v);
    field(&mut out, "Minimum", mins.iter().map(text), " (us)");
    let avgs = c.averages.iter().map(|a| c_float(*a, 3));
    field(&mut out, "Average", avgs, " (us)");
    field(&mut out, "Maximum", maxs.iter().map(text), " (us)");
    let spans = mins.iter().zip(&maxs).map(|(lo, hi)| hi.wrapping_sub(*lo));
    field(
        &mut out,
        "Max-Min",
        spans.map(|v| extreme_text(view, v)),
        " (us)",
    );
    let durations = threads.iter().map(|t| c_float(duration_s(t), 3));
    field(&mut out, "Duration", durations, " (sec)");
    out.push('\n');
    out
}

/// The bucket lines, `    ...` for each run of all-zero buckets with -z
/// (the last bucket always printed).
fn buckets(out: &mut String, view: &View, bias_ns: u64, filled: &[Filled]) {
    let size = view.bucket_size.max(1);
    let mut dots = false;
    for j in 0..size {
        let zero = filled
            .iter()
            .all(|f| f.buckets.get(j).copied().unwrap_or(0) == 0);
        if j < size - 1 && view.zero_omit && zero {
            dots = true;
            continue;
        }
        if dots {
            out.push_str("    ...\n");
            dots = false;
        }
        let label_ns = label_ns(view, bias_ns, j);
        let label = if view.ns_precision() {
            format!("{:03.3} (us)", label_ns as f64 / 1000.0)
        } else {
            format!("{:03} (us)", label_ns / 1000)
        };
        let end = if j == size - 1 {
            " (including overflows)"
        } else {
            ""
        };
        let counts = filled
            .iter()
            .map(|f| f.buckets.get(j).copied().unwrap_or(0).to_string());
        field(out, &label, counts, end);
    }
}

/// What rt-tests' JSON writer puts before the tool's part.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JsonHead {
    /// The command line, words joined by spaces.
    pub cmdline: String,
    /// When it started and ended (`Thu, 26 Nov 2026 17:24:18 +0000`, see
    /// [`timestamp`]).
    pub start_time: String,
    /// See `start_time`.
    pub end_time: String,
    /// oslat writes 0.
    pub return_code: i32,
    /// `uname`'s fields.
    pub sysname: String,
    /// See `sysname`.
    pub nodename: String,
    /// See `sysname`.
    pub release: String,
    /// See `sysname`.
    pub version: String,
    /// See `sysname`.
    pub machine: String,
    /// `/sys/kernel/realtime` reads 1.
    pub realtime: bool,
}

/// A JSON string (oslat writes its strings unescaped; rtlab escapes them,
/// so the file is JSON whatever the command line holds).
fn js(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// oslat's `--json` document, laid out as rt-tests' writer lays it out.
pub fn json(view: &View, bias_ns: u64, head: &JsonHead, threads: &[OslatThread]) -> String {
    let mut f = String::new();
    f.push_str("{\n  \"file_version\": 1,\n");
    let _ = writeln!(f, "  \"cmdline:\": {},", js(&head.cmdline));
    let _ = writeln!(f, "  \"rt_test_version:\": \"{VERSION}\",");
    let _ = writeln!(f, "  \"start_time\": {},", js(&head.start_time));
    let _ = writeln!(f, "  \"end_time\": {},", js(&head.end_time));
    let _ = writeln!(f, "  \"return_code\": {},", head.return_code);
    f.push_str("  \"sysinfo\": {\n");
    let uname = [
        ("sysname", &head.sysname),
        ("nodename", &head.nodename),
        ("release", &head.release),
        ("version", &head.version),
        ("machine", &head.machine),
    ];
    for (key, value) in uname {
        let _ = writeln!(f, "    \"{key}\": {},", js(value));
    }
    let _ = writeln!(f, "    \"realtime\": {}", u8::from(head.realtime));
    f.push_str("  },\n");
    json_threads(&mut f, view, bias_ns, threads);
    f.push_str("}\n");
    f
}

/// oslat's part: `num_threads` and `thread`, each with its non-empty
/// buckets.
fn json_threads(f: &mut String, view: &View, bias_ns: u64, threads: &[OslatThread]) {
    let c = compute(view, bias_ns, threads);
    let _ = writeln!(f, "  \"num_threads\": {},", threads.len());
    f.push_str("  \"thread\": {\n");
    for (i, t) in threads.iter().enumerate() {
        let _ = writeln!(f, "    \"{i}\": {{");
        let _ = writeln!(f, "      \"cpu\": {},", t.cpu);
        let _ = writeln!(f, "      \"freq\": {},", t.counter_mhz);
        let _ = writeln!(f, "      \"min\": {},", extreme(view, t.min_ns));
        let avg = c.averages.get(i).copied().unwrap_or(f64::NAN);
        // Not `-nan`: the file stays JSON.
        let avg = if avg.is_finite() { avg } else { 0.0 };
        let _ = writeln!(f, "      \"avg\": {avg:.6},");
        let _ = writeln!(f, "      \"max\": {},", extreme(view, t.max_ns));
        let _ = writeln!(f, "      \"duration\": {},", c_float(duration_s(t), 3));
        f.push_str("      \"histogram\": {");
        let mut comma = false;
        let buckets = c.filled.get(i).map_or(&[][..], |b| &b.buckets);
        for (j, &n) in buckets.iter().enumerate().filter(|b| *b.1 != 0) {
            f.push_str(if comma { ",\n" } else { "\n" });
            let label = us_text(view, label_ns(view, bias_ns, j));
            let _ = write!(f, "        \"{label}\": {n}");
            comma = true;
        }
        if comma {
            f.push('\n');
        }
        f.push_str("      }\n");
        let last = i + 1 == threads.len();
        let _ = writeln!(f, "    }}{}", if last { "" } else { "," });
    }
    f.push_str("  }\n");
}

/// A time as rt-tests writes `start_time` and `end_time` (RFC 2822, the
/// local time: `%a, %d %b %Y %T %z`), from seconds since the epoch and the
/// local offset from UTC in seconds.
pub fn timestamp(unix_s: i64, utc_offset_s: i32) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let local = unix_s.saturating_add(i64::from(utc_offset_s));
    let days = local.div_euclid(86_400);
    let secs = local.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let weekday = DAYS[days.rem_euclid(7) as usize];
    let month = MONTHS[(m - 1).clamp(0, 11) as usize];
    let sign = if utc_offset_s < 0 { '-' } else { '+' };
    let off = utc_offset_s.unsigned_abs() / 60;
    format!(
        "{weekday}, {d:02} {month} {y} {:02}:{:02}:{:02} {sign}{:02}{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        off / 60,
        off % 60
    )
}

/// (year, month 1-12, day 1-31) of a day since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests;

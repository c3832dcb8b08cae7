//! cyclictest's outputs (rt-tests 2.4, the format its users' scripts
//! parse), rendered from rtlab's result: the live `T:` lines, the
//! histogram block, the `--spike` lines, the `-b` lines and the `--json`
//! document. Figures are in whole µs, truncated as cyclictest truncates
//! each sample (ns with `-N`).

use crate::report::live::LiveRow;
use crate::result::{RunResult, TimerResult};
use crate::stats::spikes::Spike;
use serde::Serialize;
use std::fmt::Write;
use std::path::PathBuf;

/// What the cyclictest outputs need beyond the result: the command line's
/// choices.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// The command line, as the JSON document quotes it.
    pub cmdline: String,
    /// `-q`: no live lines.
    pub quiet: bool,
    /// `-N`: ns instead of µs.
    pub nsecs: bool,
    /// `-M`: redraw only when a maximum grew.
    pub refresh_on_max: bool,
    /// The live header's policy (`fifo`, `other/other`).
    pub policy_label: String,
    /// Each thread's priority and interval (µs), by index.
    pub threads: Vec<(i32, u64)>,
    /// `-h`/`-H`: the histogram.
    pub histogram: Option<Histogram>,
    /// `--spike`: the trigger (µs).
    pub spike: Option<u64>,
    /// `--spike-nodes`.
    pub spike_nodes: u64,
    /// `-b`: the break value (µs).
    pub breaktrace: Option<u64>,
    /// `--json`.
    pub json: Option<PathBuf>,
    /// `-v`: every sample.
    pub verbose: bool,
    /// `-d` as applied (µs): `-v` prints each interval plus it.
    pub distance: u64,
    /// `-a LIST` (not `-a` alone, not with `-S`): the CPUs the threads go
    /// round robin on, which `-v` names (`Using N cpus.`, `Thread N using
    /// cpu C.`).
    pub affinity_list: Option<Vec<usize>>,
    /// `-v` before `-a LIST`: cyclictest says `Using N cpus.` once more,
    /// as it reads `-a`, before `Max CPUs =`.
    pub using_cpus_early: bool,
}

/// The histogram of `-h N` / `-H N`.
#[derive(Debug, Clone, Default)]
pub struct Histogram {
    /// Buckets of 1 µs: 0..buckets.
    pub buckets: u64,
    /// `-H`: a column summing the threads.
    pub sum_column: bool,
    /// `--histfile`.
    pub file: Option<PathBuf>,
}

/// How many overflow cycle numbers cyclictest lists per thread.
pub const OVERFLOWS_LISTED: usize = 20;

impl View {
    fn unit(&self, ns: u64) -> u64 {
        if self.nsecs { ns } else { ns / 1000 }
    }

    fn unit_f(&self, ns: f64) -> f64 {
        if self.nsecs { ns } else { ns / 1000.0 }
    }
}

/// One `T:` line.
#[allow(clippy::too_many_arguments)]
fn t_line(
    view: &View,
    index: usize,
    tid: i32,
    cycles: u64,
    min: u64,
    act: u64,
    avg: u64,
    max: u64,
) -> String {
    let (prio, interval) = view.threads.get(index).copied().unwrap_or_default();
    if view.nsecs {
        format!(
            "T:{index:2} ({tid:5}) P:{prio:2} I:{interval} C:{cycles:7} Min:{min:7} Act:{act:8} Avg:{avg:8} Max:{max:8}"
        )
    } else {
        format!(
            "T:{index:2} ({tid:5}) P:{prio:2} I:{interval} C:{cycles:7} Min:{min:7} Act:{act:5} Avg:{avg:5} Max:{max:8}"
        )
    }
}

/// The live block: the policy and load line, a blank line, a `T:` line per
/// thread. `loadavg` is /proc/loadavg's line.
pub fn live_block(view: &View, rows: &[LiveRow], loadavg: &str) -> String {
    let mut out = format!(
        "policy: {}: loadavg: {}          \n\n",
        view.policy_label,
        loadavg.trim_end()
    );
    for row in rows {
        let s = &row.snap;
        let line = if s.samples == 0 {
            // cyclictest's initial minimum, before the first sample.
            t_line(view, row.index, 0, 0, 1_000_000, 0, 0, 0)
        } else {
            t_line(
                view,
                row.index,
                row.tid,
                s.samples,
                view.unit(s.min_ns),
                view.unit(s.cur_ns),
                view.unit(s.sum_ns / s.samples),
                view.unit(s.max_ns),
            )
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// `-v`'s lines before the run, as cyclictest prints them: `Using N
/// cpus.` when it reads `-a LIST` after `-v`, the CPU counts, and `Using N
/// cpus.` again as it pins the main thread to the `-a` list.
pub fn verbose_header(view: &View, max_cpus: usize, online_cpus: usize) -> String {
    let using = view
        .affinity_list
        .as_ref()
        .map(|cpus| format!("Using {} cpus.\n", cpus.len()));
    let mut out = String::new();
    if view.using_cpus_early {
        out.push_str(using.as_deref().unwrap_or_default());
    }
    let _ = write!(out, "Max CPUs = {max_cpus}\nOnline CPUs = {online_cpus}\n");
    out.push_str(using.as_deref().unwrap_or_default());
    out
}

/// `-v`: each thread's CPU (with `-a LIST`) and interval lines
/// (cyclictest prints the interval plus the distance), then every sample
/// as `thread:cycle:latency`.
pub fn verbose(view: &View, timers: &[TimerResult]) -> String {
    let mut out = String::new();
    for t in timers {
        if let Some(cpus) = view.affinity_list.as_ref().filter(|c| !c.is_empty()) {
            let _ = writeln!(
                out,
                "Thread {} using cpu {}.",
                t.index,
                cpus[t.index % cpus.len()]
            );
        }
        let interval = view.threads.get(t.index).map_or(0, |t| t.1);
        let _ = writeln!(
            out,
            "Thread {} Interval: {}",
            t.index,
            interval + view.distance
        );
    }
    for t in timers {
        for (cycle, ns) in t.samples_ns.iter().enumerate() {
            let _ = writeln!(
                out,
                "{:8}:{cycle:8}:{:8}",
                t.index,
                view.unit(u64::from(*ns))
            );
        }
    }
    out
}

/// The closing `T:` lines of `-q` (without a histogram).
pub fn final_lines(view: &View, result: &RunResult) -> String {
    let mut out = String::new();
    for t in &result.timers {
        let s = &t.summary;
        let line = t_line(
            view,
            t.index,
            t.tid,
            s.samples,
            view.unit(s.min_ns),
            view.unit(t.last_ns.unwrap_or(0)),
            view.unit(s.mean_ns as u64),
            view.unit(s.max_ns),
        );
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The wake-ups of thread `t` later than `trigger` µs (cyclictest's `>`),
/// in the order they came.
fn later_than(t: &TimerResult, trigger_us: u64) -> Vec<&Spike> {
    let mut kept: Vec<&Spike> = t
        .spikes
        .over_threshold
        .iter()
        .filter(|s| s.latency_ns / 1000 > trigger_us)
        .collect();
    kept.sort_by_key(|s| s.sample);
    kept
}

/// Each thread's maximum as `# Max Latencies:` prints it (µs, or ns with
/// `-N`): what cnf-tests' latency test compares with its limit.
pub fn max_latencies(view: &View, timers: &[TimerResult]) -> Vec<u64> {
    timers.iter().map(|t| view.unit(t.summary.max_ns)).collect()
}

/// The histogram block (cyclictest 2.4: every row, then the totals).
pub fn histogram(view: &View, h: &Histogram, timers: &[TimerResult]) -> String {
    let mut out = String::from("# Histogram\n");
    let counts: Vec<std::collections::HashMap<u64, u64>> = timers
        .iter()
        .map(|t| t.histogram_us.iter().copied().collect())
        .collect();
    for bucket in 0..h.buckets {
        let _ = write!(out, "{bucket:06}");
        let mut sum = 0;
        for (i, c) in counts.iter().enumerate() {
            let n = c.get(&bucket).copied().unwrap_or(0);
            sum += n;
            out.push_str(if i == 0 { " " } else { "\t" });
            let _ = write!(out, "{n:06}");
        }
        if h.sum_column {
            let _ = write!(out, "\t{sum:06}");
        }
        out.push('\n');
    }
    let inside = |t: &TimerResult| t.summary.samples - overflows(t, h);
    let column =
        |out: &mut String, name: &str, width: usize, values: Vec<u64>, sum: Option<u64>| {
            out.push_str(name);
            for v in values.iter().chain(sum.as_ref()) {
                let _ = write!(out, " {v:0width$}");
            }
            out.push('\n');
        };
    let totals: Vec<u64> = timers.iter().map(inside).collect();
    let sum = h.sum_column.then(|| totals.iter().sum());
    column(&mut out, "# Total:", 9, totals, sum);
    let mins = timers.iter().map(|t| view.unit(t.summary.min_ns)).collect();
    column(&mut out, "# Min Latencies:", 5, mins, None);
    let avgs = timers
        .iter()
        .map(|t| view.unit(t.summary.mean_ns as u64))
        .collect();
    column(&mut out, "# Avg Latencies:", 5, avgs, None);
    let maxs = max_latencies(view, timers);
    let max = h
        .sum_column
        .then(|| maxs.iter().copied().max().unwrap_or(0));
    column(&mut out, "# Max Latencies:", 5, maxs, max);
    let over: Vec<u64> = timers.iter().map(|t| overflows(t, h)).collect();
    let sum = h.sum_column.then(|| over.iter().sum());
    column(&mut out, "# Histogram Overflows:", 5, over, sum);
    out.push_str("# Histogram Overflow at cycle number:\n");
    for t in timers {
        let _ = write!(out, "# Thread {}:", t.index);
        let listed = later_than(t, h.buckets.saturating_sub(1));
        for s in listed.iter().take(OVERFLOWS_LISTED) {
            let _ = write!(out, " {:05}", s.sample);
        }
        let others = overflows(t, h).saturating_sub(OVERFLOWS_LISTED as u64);
        if others > 0 {
            let _ = write!(out, " # {others:05} others");
        }
        out.push('\n');
    }
    out.push('\n');
    out
}

/// Samples at or beyond the last bucket.
fn overflows(t: &TimerResult, h: &Histogram) -> u64 {
    let inside: u64 = t
        .histogram_us
        .iter()
        .filter(|(us, _)| *us < h.buckets)
        .map(|(_, n)| n)
        .sum();
    t.summary.samples - inside.min(t.summary.samples)
}

/// `--spike`: a line per recorded spike, then their count.
pub fn spikes(view: &View, trigger_us: u64, result: &RunResult) -> String {
    let mut out = String::from("\n");
    let mut count = 0u64;
    for t in &result.timers {
        let later = later_than(t, trigger_us);
        for s in later.iter().take(view.spike_nodes as usize) {
            let ts_us = (s.deadline_ns + s.latency_ns) / 1000;
            let _ = writeln!(
                out,
                "T:{:2} Spike:{:8}: TS: {ts_us:12}",
                t.index,
                view.unit(s.latency_ns)
            );
        }
        count += spike_count(t, trigger_us, later.len() as u64);
    }
    let _ = writeln!(out, "spikes = {count}\n");
    out
}

/// The wake-ups later than `trigger_us`: the keeper's total
/// when its threshold is the trigger's, else the ones it kept (all of them
/// unless it dropped some).
fn spike_count(t: &TimerResult, trigger_us: u64, kept: u64) -> u64 {
    let l = &t.spikes;
    if l.threshold_ns == Some((trigger_us + 1) * 1000) {
        l.over_threshold_total
    } else {
        kept
    }
}

/// `-b`: the threads, and the first wake-up later than the break value.
pub fn breaks(trigger_us: u64, result: &RunResult) -> String {
    let mut out = String::from("# Thread Ids:");
    for t in &result.timers {
        let _ = write!(out, " {}", t.tid);
    }
    out.push('\n');
    let first = result
        .timers
        .iter()
        .filter_map(|t| later_than(t, trigger_us).first().map(|s| (t.tid, *s)))
        .min_by_key(|(_, s)| s.deadline_ns);
    if let Some((tid, s)) = first {
        let _ = writeln!(out, "# Break thread: {tid}");
        let _ = writeln!(out, "# Break value: {}", s.latency_ns / 1000);
    }
    out
}

/// rtlab's extra (on stderr): each thread's percentiles over every
/// sample.
pub fn percentiles(view: &View, result: &RunResult) -> String {
    let unit = if view.nsecs { "ns" } else { "us" };
    let mut out = String::new();
    for t in &result.timers {
        let s = &t.summary;
        let _ = write!(out, "rtlab: T:{:2} {} samples:", t.index, s.samples);
        for p in &s.percentiles {
            let _ = write!(out, " {} {}", p.name, view.unit(p.value_ns));
        }
        let _ = writeln!(out, " max {} ({unit})", view.unit(s.max_ns));
    }
    out
}

/// cyclictest's `--json` document.
pub fn json(view: &View, result: &RunResult, nodes: &dyn Fn(usize) -> usize) -> String {
    let threads: Vec<(String, JsonThread)> = result
        .timers
        .iter()
        .map(|t| {
            let histogram = match &view.histogram {
                Some(h) => t
                    .histogram_us
                    .iter()
                    .filter(|(us, n)| *us < h.buckets && *n > 0)
                    .map(|(us, n)| (us.to_string(), *n))
                    .collect(),
                None => Vec::new(),
            };
            let cpu = t.cpu_last.or(t.cpus.first().copied()).unwrap_or(0);
            let avg = view.unit_f(t.summary.mean_ns);
            let thread = JsonThread {
                histogram: Ordered(histogram),
                cycles: t.summary.samples,
                min: view.unit(t.summary.min_ns),
                max: view.unit(t.summary.max_ns),
                avg: (avg * 100.0).round() / 100.0,
                cpu,
                node: nodes(cpu),
            };
            (t.index.to_string(), thread)
        })
        .collect();
    let s = &result.system;
    let doc = JsonDoc {
        file_version: 1,
        cmdline: view.cmdline.clone(),
        rt_test_version: format!("rtlab {}", env!("CARGO_PKG_VERSION")),
        start_time: rfc2822(&result.start_time),
        end_time: rfc2822(&result.end_time),
        return_code: 0,
        sysinfo: JsonSysinfo {
            sysname: "Linux",
            nodename: s.hostname.clone(),
            release: s.kernel_release.clone(),
            version: s.kernel_version.clone(),
            machine: s.machine.clone(),
            realtime: u8::from(s.preemption.model == "PREEMPT_RT"),
        },
        num_threads: result.timers.len(),
        resolution_in_ns: u8::from(view.nsecs),
        thread: Ordered(threads),
    };
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

/// `2026-11-24T11:21:45Z` as cyclictest writes times (`%a, %d %b %Y
/// %H:%M:%S %z`, UTC); anything else is given back unchanged.
pub fn rfc2822(rfc3339: &str) -> String {
    let field = |r: std::ops::Range<usize>| rfc3339.get(r).and_then(|f| f.parse::<i64>().ok());
    let (Some(y), Some(m), Some(d), Some(time)) =
        (field(0..4), field(5..7), field(8..10), rfc3339.get(11..19))
    else {
        return rfc3339.to_string();
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return rfc3339.to_string();
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    // Sakamoto's day of the week.
    const OFFSETS: [i64; 12] = [0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4];
    let yy = if m < 3 { y - 1 } else { y };
    let wd = (yy + yy / 4 - yy / 100 + yy / 400 + OFFSETS[(m - 1) as usize] + d).rem_euclid(7);
    format!(
        "{}, {d:02} {} {y} {time} +0000",
        DAYS[wd as usize],
        MONTHS[(m - 1) as usize]
    )
}

/// A JSON object whose keys keep their order.
#[derive(Debug)]
struct Ordered<T>(Vec<(String, T)>);

impl<T: Serialize> Serialize for Ordered<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

#[derive(Serialize)]
struct JsonDoc {
    file_version: u32,
    #[serde(rename = "cmdline:")]
    cmdline: String,
    #[serde(rename = "rt_test_version:")]
    rt_test_version: String,
    start_time: String,
    end_time: String,
    return_code: i32,
    sysinfo: JsonSysinfo,
    num_threads: usize,
    resolution_in_ns: u8,
    thread: Ordered<JsonThread>,
}

#[derive(Serialize)]
struct JsonSysinfo {
    sysname: &'static str,
    nodename: String,
    release: String,
    version: String,
    machine: String,
    realtime: u8,
}

#[derive(Serialize)]
struct JsonThread {
    histogram: Ordered<u64>,
    cycles: u64,
    min: u64,
    max: u64,
    avg: f64,
    cpu: usize,
    node: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::spikes::{SpikeSpec, Spikes};
    use crate::stats::{Recorder, hdr_buckets, nonzero_buckets, summarize};

    /// A thread's result from `latencies` through the real recorder, kept
    /// as `rtlab cyclictest -h buckets` keeps them.
    fn thread(index: usize, latencies: &[u64], buckets: u64) -> TimerResult {
        let mut r = Recorder::new(buckets - 1).unwrap();
        r.spikes = Spikes::new(SpikeSpec {
            worst: 3,
            threshold_ns: Some(buckets * 1000),
            max_over: 1024,
        });
        for (i, &ns) in latencies.iter().enumerate() {
            r.record(ns);
            if r.spikes.wants(ns) {
                r.spikes.keep(Spike {
                    sample: i as u64,
                    offset_ns: 0,
                    deadline_ns: 1_000_000 * i as u64,
                    latency_ns: ns,
                    cpu: None,
                });
            }
        }
        let mut t = crate::report::files::tests::sample_result();
        t.index = index;
        t.summary = summarize(&r);
        t.histo_size_us = r.histo_size_us();
        t.histogram_us = nonzero_buckets(&r);
        t.hdr_histogram = hdr_buckets(&r);
        t.spikes = r.spikes.list();
        t
    }

    fn latencies(seed: u64, n: usize) -> Vec<u64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Mostly 5..40 µs, some far beyond the histogram.
                if x.is_multiple_of(17) {
                    30_000 + x % 900_000
                } else {
                    5_000 + x % 35_000
                }
            })
            .collect()
    }

    #[test]
    fn the_histogram_block_counts_what_brute_force_counts() {
        let buckets = 30;
        let samples = [latencies(7, 5000), latencies(99, 3000)];
        let timers: Vec<TimerResult> = samples
            .iter()
            .enumerate()
            .map(|(i, l)| thread(i, l, buckets))
            .collect();
        let h = Histogram {
            buckets,
            sum_column: true,
            file: None,
        };
        let text = histogram(&View::default(), &h, &timers);
        let rows: Vec<Vec<u64>> = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| l.split_whitespace().map(|w| w.parse().unwrap()).collect())
            .collect();
        assert_eq!(rows.len(), buckets as usize);
        let line = |name: &str| -> Vec<u64> {
            let l = text.lines().find_map(|l| l.strip_prefix(name)).unwrap();
            l.split('#')
                .next()
                .unwrap()
                .split_whitespace()
                .map(|w| w.parse().unwrap())
                .collect()
        };
        let mut all_over = 0;
        for (i, l) in samples.iter().enumerate() {
            for row in &rows {
                let truth = l.iter().filter(|ns| *ns / 1000 == row[0]).count() as u64;
                assert_eq!(row[i + 1], truth, "thread {i} bucket {}", row[0]);
            }
            let over: Vec<usize> = (0..l.len()).filter(|&k| l[k] / 1000 >= buckets).collect();
            all_over += over.len() as u64;
            assert_eq!(line("# Total:")[i], (l.len() - over.len()) as u64);
            assert_eq!(line("# Histogram Overflows:")[i], over.len() as u64);
            assert_eq!(line("# Min Latencies:")[i], l.iter().min().unwrap() / 1000);
            assert_eq!(line("# Max Latencies:")[i], l.iter().max().unwrap() / 1000);
            let mean = l.iter().sum::<u64>() / l.len() as u64 / 1000;
            assert_eq!(line("# Avg Latencies:")[i], mean);
            let listed = line(&format!("# Thread {i}:"));
            let first: Vec<u64> = over.iter().take(20).map(|&k| k as u64).collect();
            assert_eq!(listed, first);
            let others = format!("# {:05} others", over.len() - 20);
            assert!(text.contains(&others), "{others}");
        }
        // The summary column: sums, and the largest maximum.
        for row in &rows {
            assert_eq!(row[3], row[1] + row[2]);
        }
        assert_eq!(line("# Histogram Overflows:")[2], all_over);
        let maxima = line("# Max Latencies:");
        assert_eq!(maxima[2], maxima[0].max(maxima[1]));
    }

    #[test]
    fn times_as_cyclictest_writes_them() {
        assert_eq!(
            rfc2822("2026-11-24T11:21:45Z"),
            "Tue, 24 Nov 2026 11:21:45 +0000"
        );
        assert_eq!(
            rfc2822("2000-02-29T00:00:00Z"),
            "Tue, 29 Feb 2000 00:00:00 +0000"
        );
        assert_eq!(
            rfc2822("2038-01-19T03:14:08Z"),
            "Tue, 19 Jan 2038 03:14:08 +0000"
        );
        assert_eq!(rfc2822("garbage"), "garbage");
    }
}

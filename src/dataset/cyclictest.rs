//! cyclictest's outputs (the formats are described in docs/manual.md): the
//! histogram text of `-h`/`-H` (both the current layout, which leaves out
//! empty rows, and the legacy one with every row and `# Total:`), with any
//! `T:` lines around it, and the `--json` file.
//!
//! The sample count of a histogram text is its own totals (`# Total:` plus
//! `# Histogram Overflows:`), never a `T:` line: cyclictest prints its last
//! `T:` line before its last samples, so that line can be a few short.
//! Min and max are cyclictest's own. The mean is computed from the
//! histogram when no sample overflowed it: cyclictest sums the same
//! truncated µs values, so this is its `Avg` before truncation; otherwise it
//! is cyclictest's `Avg` itself.

use super::{Context, Details, Distribution, Format, ParseError, Run, Stats, Thread, sum_counts};
use serde_json::Value;
use std::path::Path;

/// One thread as cyclictest reported it, in its unit (µs, or ns with -N).
#[derive(Debug, Default)]
struct Reported {
    buckets: Vec<(u64, u64)>,
    overflows: Option<u64>,
    cycles: Option<u64>,
    min: Option<u64>,
    avg: Option<f64>,
    max: Option<u64>,
    cpu: Option<usize>,
}

/// Builds a thread from what cyclictest said; `unit_ns` is 1000 for µs.
fn thread(index: usize, mut r: Reported, unit_ns: u64) -> Thread {
    r.buckets.retain(|b| b.1 > 0);
    let placed = sum_counts(r.buckets.iter().map(|b| b.1));
    let samples = r
        .cycles
        .unwrap_or(placed.saturating_add(r.overflows.unwrap_or(0)));
    let beyond = r.overflows.unwrap_or(samples.saturating_sub(placed));
    let distribution = Distribution::new(
        r.buckets
            .iter()
            .map(|&(v, c)| (v.saturating_mul(unit_ns), c))
            .collect(),
        beyond,
    );
    let has = samples > 0;
    let moments = if has && !r.buckets.is_empty() {
        distribution.mean_stddev()
    } else {
        None
    };
    let max_ns = r.max.filter(|_| has).map(|v| v.saturating_mul(unit_ns));
    let histogram_us = super::per_us(
        r.buckets
            .iter()
            .map(|&(v, c)| (v.saturating_mul(unit_ns), c)),
    );
    let stats = Stats {
        samples,
        min_ns: r.min.filter(|_| has).map(|v| v.saturating_mul(unit_ns)),
        mean_ns: moments
            .map(|m| m.0)
            .or_else(|| r.avg.filter(|_| has).map(|a| a * unit_ns as f64)),
        max_ns,
        stddev_ns: moments.map(|m| m.1),
        percentiles: distribution.quantiles(max_ns),
        overruns: None,
        beyond_histogram: Some(beyond),
        deadline_misses: None,
        noise: None,
    };
    Thread::new(
        format!("T{index}"),
        r.cpu,
        stats,
        histogram_us,
        None,
        distribution,
    )
}

fn numbers(rest: &str, line: usize, column: usize) -> Result<Vec<u64>, ParseError> {
    rest.split_whitespace()
        .map(|w| {
            w.parse::<u64>().map_err(|_| {
                ParseError::new(
                    line,
                    column,
                    format!("{w:?} is not a count"),
                    "cyclictest prints these lines as numbers only",
                )
            })
        })
        .collect()
}

/// The fields of a `T: 0 ( 1234) P:80 I:1000 C: 2000 Min: 3 Act: 5 Avg: 4
/// Max: 30` line.
fn t_line(line: &str) -> Option<(usize, Reported)> {
    let body = &line[line.find("T:")?..];
    let field = |key: &str| -> Option<u64> {
        let at = body.find(key)? + key.len();
        body[at..].split_whitespace().next()?.parse().ok()
    };
    let index = field("T:")? as usize;
    Some((
        index,
        Reported {
            cycles: field("C:"),
            min: field("Min:"),
            avg: field("Avg:").map(|v| v as f64),
            max: field("Max:"),
            ..Reported::default()
        },
    ))
}

/// The summary lines rtlab reads, in the order of [`Scan::summary`].
const KEYS: [&str; 5] = [
    "# Min Latencies:",
    "# Avg Latencies:",
    "# Max Latencies:",
    "# Histogram Overflows:",
    "# Total:",
];

/// What one pass over a histogram text found.
#[derive(Default)]
struct Scan {
    /// The rows, read straight into one bucket list per thread (no copy
    /// of the table): memory in proportion to the non-empty buckets.
    per_thread: Vec<Vec<(u64, u64)>>,
    any_row: bool,
    /// The values of each of [`KEYS`].
    summary: [Option<Vec<u64>>; 5],
    /// The last `T:` line of each thread.
    t_lines: Vec<(usize, Reported)>,
}

fn too_many(lineno: usize) -> ParseError {
    ParseError::new(
        lineno,
        1,
        format!("more than {} threads", super::MAX_THREADS),
        "cyclictest runs one thread per CPU; this is not one of its files",
    )
}

impl Scan {
    fn line(&mut self, line: &str, lineno: usize) -> Result<(), ParseError> {
        if let Some(k) = KEYS.iter().position(|k| line.starts_with(k)) {
            let values = numbers(&line[KEYS[k].len()..], lineno, KEYS[k].len() + 1)?;
            if values.len() > super::MAX_THREADS {
                return Err(too_many(lineno));
            }
            self.summary[k] = Some(values);
        } else if line.contains("T:") && !line.starts_with('#') {
            if let Some(t) = t_line(line) {
                if t.0 >= super::MAX_THREADS {
                    return Err(too_many(lineno));
                }
                self.t_lines.retain(|(i, _)| *i != t.0);
                self.t_lines.push(t);
            }
        } else if line.starts_with(|c: char| c.is_ascii_digit()) {
            self.row(line, lineno)?;
        }
        // Anything else (`# Histogram`, overflow cycle numbers, `policy:`
        // lines, PM QoS notes) carries nothing rtlab needs.
        Ok(())
    }

    /// A row: the bucket, then one count per thread.
    fn row(&mut self, line: &str, lineno: usize) -> Result<(), ParseError> {
        let bucket = line.split_whitespace().next().unwrap_or_default();
        let bucket = bucket.parse::<u64>().map_err(|_| {
            ParseError::new(
                lineno,
                1,
                format!("{bucket:?} is not a histogram bucket"),
                "a histogram row is the bucket, then one count per thread",
            )
        })?;
        let rest = &line[line.find(char::is_whitespace).unwrap_or(line.len())..];
        let counts = numbers(rest, lineno, 8)?;
        if counts.len() > super::MAX_THREADS {
            return Err(too_many(lineno));
        }
        if self.per_thread.len() < counts.len() {
            self.per_thread.resize_with(counts.len(), Vec::new);
        }
        for (i, &count) in counts.iter().enumerate() {
            if count > 0 {
                self.per_thread[i].push((bucket, count));
            }
        }
        self.any_row = true;
        Ok(())
    }

    /// A histogram is only whole with its summary: without it the samples
    /// beyond the histogram, the min and the max are unknown.
    fn check_whole(&self, lines_in_file: usize) -> Result<(), ParseError> {
        if !self.any_row {
            return Ok(());
        }
        match [0, 2, 3].into_iter().find(|&k| self.summary[k].is_none()) {
            Some(k) => Err(ParseError::new(
                lines_in_file,
                1,
                format!(
                    "the histogram ends without its `{}` line: the file is cut short",
                    KEYS[k].trim_start_matches("# ").trim_end_matches(':')
                ),
                "cyclictest writes its summary lines when the run ends; give the whole file",
            )),
            None => Ok(()),
        }
    }

    /// Thread `i`'s figures; Err when its rows and `# Total:` disagree.
    fn thread(&mut self, i: usize, lines_in_file: usize) -> Result<Reported, ParseError> {
        let summary = &self.summary;
        let pick = |k: usize| summary[k].as_ref().and_then(|v| v.get(i)).copied();
        let from_t = self.t_lines.iter().find(|t| t.0 == i).map(|t| &t.1);
        let buckets = self
            .per_thread
            .get_mut(i)
            .map(std::mem::take)
            .unwrap_or_default();
        if let Some(total) = pick(4) {
            let placed = sum_counts(buckets.iter().map(|b| b.1));
            if placed != total {
                return Err(ParseError::new(
                    lines_in_file,
                    1,
                    format!(
                        "thread {i}: the histogram rows hold {placed} samples but `# Total:` says {total}"
                    ),
                    "the file was altered or cut short; give cyclictest's file as it wrote it",
                ));
            }
        }
        Ok(Reported {
            buckets,
            overflows: pick(3),
            // With a histogram, its totals count the samples: the last `T:`
            // line can be printed before the last samples.
            cycles: if !self.any_row && summary[3].is_none() {
                from_t.and_then(|t| t.cycles)
            } else {
                None
            },
            min: pick(0).or(from_t.and_then(|t| t.min)),
            avg: pick(1).map(|v| v as f64).or(from_t.and_then(|t| t.avg)),
            max: pick(2).or(from_t.and_then(|t| t.max)),
            cpu: None,
        })
    }
}

/// Parses cyclictest's histogram text (a `--histfile`, or its stdout).
pub(super) fn parse_histogram(text: &str, path: &Path) -> Result<Run, ParseError> {
    let mut scan = Scan::default();
    let lines_in_file = text.lines().count().max(1);
    for (n, raw) in text.lines().enumerate() {
        scan.line(raw.trim_end(), n + 1)?;
    }
    let threads_seen = scan.summary[0]
        .as_ref()
        .map(Vec::len)
        .unwrap_or(scan.per_thread.len());
    if threads_seen == 0 {
        return Err(ParseError::new(
            1,
            1,
            "no cyclictest histogram rows or `# Min Latencies:` line in this file",
            "give cyclictest's -h/-H output (stdout or --histfile), its --json file, rtlab's --json result or a timer_threadNN.txt",
        ));
    }
    scan.check_whole(lines_in_file)?;
    let mut threads = Vec::new();
    for i in 0..threads_seen {
        let r = scan.thread(i, lines_in_file)?;
        threads.push(thread(i, r, 1_000));
    }
    Ok(Run::new(
        path,
        Format::CyclictestHistogram,
        Context::default(),
        threads,
        Details::default(),
    ))
}

/// cyclictest's `--json` document: only what rtlab reads is typed, so the
/// memory held is the histogram's (a JSON tree costs many times its text).
#[derive(serde::Deserialize)]
struct JsonDoc {
    thread: Option<JsonThreads>,
    resolution_in_ns: Option<u64>,
    #[serde(default)]
    sysinfo: super::Kept,
    #[serde(rename = "cmdline:")]
    cmdline: Option<String>,
    start_time: Option<String>,
    return_code: Option<i64>,
}

#[derive(serde::Deserialize)]
struct JsonThread {
    #[serde(default)]
    histogram: JsonBuckets,
    cycles: Option<u64>,
    min: Option<u64>,
    avg: Option<f64>,
    max: Option<u64>,
    cpu: Option<i64>,
}

/// A JSON object keyed by numbers (`{"0": ..., "1": ...}`) read straight
/// into (number, value) pairs, at most `MAX` of them; keys that are not
/// numbers are skipped.
struct ByNumber<K, V, const MAX: usize>(Vec<(K, V)>);

impl<K, V, const MAX: usize> Default for ByNumber<K, V, MAX> {
    fn default() -> Self {
        ByNumber(Vec::new())
    }
}

/// `"thread": {"0": {...}, "1": {...}}`, at most [`super::MAX_THREADS`].
type JsonThreads = ByNumber<usize, JsonThread, { super::MAX_THREADS }>;

/// `"histogram": {"3": 5, "4": 10}` as (bucket, count).
type JsonBuckets = ByNumber<u64, u64, { usize::MAX }>;

impl<'de, K, V, const MAX: usize> serde::Deserialize<'de> for ByNumber<K, V, MAX>
where
    K: std::str::FromStr,
    V: serde::Deserialize<'de>,
{
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<K, V, const MAX: usize>(std::marker::PhantomData<(K, V)>);
        impl<'de, K, V, const MAX: usize> serde::de::Visitor<'de> for Visit<K, V, MAX>
        where
            K: std::str::FromStr,
            V: serde::Deserialize<'de>,
        {
            type Value = ByNumber<K, V, MAX>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object keyed by numbers")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                use serde::de::Error;
                let mut pairs = Vec::new();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    let value: V = map.next_value()?;
                    if let Ok(number) = key.parse::<K>() {
                        if pairs.len() == MAX {
                            return Err(A::Error::custom(format!("more than {MAX} entries")));
                        }
                        pairs.push((number, value));
                    }
                }
                Ok(ByNumber(pairs))
            }
        }
        d.deserialize_map(Visit::<K, V, MAX>(std::marker::PhantomData))
    }
}

/// Parses cyclictest's `--json` file. cyclictest writes `nan` for the mean
/// of a thread without cycles (invalid JSON): read as null.
pub(super) fn parse_json(text: &str, path: &Path) -> Result<Run, ParseError> {
    let fixed = text.replace(": -nan", ": null").replace(": nan", ": null");
    let doc: JsonDoc = serde_json::from_str(&fixed)
        .map_err(|e| ParseError::from_json(&e, "cyclictest JSON file"))?;
    let Some(ByNumber(mut indexed)) = doc.thread else {
        return Err(ParseError::new(
            1,
            1,
            "no \"thread\" object: not a cyclictest --json file",
            "give cyclictest's --json file, rtlab's --json result, cyclictest's -h output or a timer_threadNN.txt",
        ));
    };
    let unit_ns = if doc.resolution_in_ns == Some(1) {
        1
    } else {
        1_000
    };
    indexed.sort_by_key(|t| t.0);
    let threads = indexed
        .into_iter()
        .map(|(i, t)| {
            let buckets = t.histogram.0;
            let cycles = t.cycles;
            let placed = sum_counts(buckets.iter().map(|b| b.1));
            let r = Reported {
                // Samples >= the histogram size are only in the text's
                // overflow line; here they are the cycles not placed.
                overflows: (!buckets.is_empty())
                    .then(|| cycles.map(|c| c.saturating_sub(placed)))
                    .flatten(),
                buckets,
                cycles,
                min: t.min,
                avg: t.avg,
                max: t.max,
                cpu: t.cpu.and_then(|c| usize::try_from(c).ok()),
            };
            thread(i, r, unit_ns)
        })
        .collect();
    let sys: &Value = &doc.sysinfo;
    let str_of = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_string);
    let preemption = if sys["realtime"].as_i64() == Some(1) {
        Some("PREEMPT_RT".to_string())
    } else {
        sys["version"]
            .as_str()
            .and_then(super::preemption_from_version)
    };
    let context = Context {
        host: str_of(&sys["nodename"]),
        kernel: str_of(&sys["release"]),
        preemption,
        started: doc.start_time.clone().filter(|s| !s.is_empty()),
        ..Context::default()
    };
    let details = Details {
        system: Some(sys.clone()).filter(|v| !v.is_null()),
        command: doc.cmdline.clone().filter(|s| !s.is_empty()),
        end: doc.return_code.map(|c| format!("return code {c}")),
        warnings: doc.sysinfo.note("sysinfo").into_iter().collect(),
        ..Details::default()
    };
    let mut run = Run::new(path, Format::CyclictestJson, context, threads, details);
    // `-N` files are in ns.
    run.resolution_ns = unit_ns;
    Ok(run)
}

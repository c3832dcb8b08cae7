//! From cyclictest's options to an experiment file (rtlab's plan checks it
//! like any other, and a refusal names the option that wrote the line) and
//! to the [`View`] its outputs need. cyclictest's rules, as rt-tests 2.4
//! applies them:
//!
//! - threads: 1; `-t` alone or `-S`: one per allowed CPU (per CPU of the
//!   `-a` set when one is given); `-t N`: N;
//! - placement: none without `-a`; `-a` alone or `-S`: thread i on the
//!   i-th allowed CPU; `-a LIST`: round robin over LIST, and the main
//!   thread on LIST too (`--mainaffinity` decides for it otherwise);
//! - intervals: thread i at `-i + i × -d` (`-d` 500 µs by default, 0 with
//!   a histogram);
//! - policy: OTHER without `-p`; `-p N` is FIFO N (RR with `--policy rr`);
//!   `-p 0` or `--policy fifo|rr` alone: priority threads + 1; with
//!   `--priospread` each next thread one lower;
//! - `-l N`: the run ends when the first thread has N samples: thread 0
//!   takes N, thread i those whose deadline falls within N × thread 0's
//!   interval;
//! - latencies compared as cyclictest does, in truncated µs: `--spike T`
//!   and `-b T` keep the wake-ups later than T µs (T + 1 µs and more), `-h
//!   N` counts 0..N-1 µs and overflows from N µs.

use super::args::{self, CyclictestArgs};
use crate::cli::generated::Generated;
use crate::report::cyclictest::{Histogram, View};

/// What rtlab runs for a cyclictest command line.
#[derive(Debug)]
pub struct Setup {
    /// The experiment.
    pub experiment: Generated,
    /// What the outputs need.
    pub view: View,
    /// Said on stderr before the run, as cyclictest says it.
    pub notes: Vec<String>,
}

/// A refusal: the option and its problem, then the hint's line.
fn refused(problem: impl std::fmt::Display, hint: &str) -> String {
    format!("{problem}\n  hint: {hint}")
}

/// Most spikes cyclictest keeps by default (`--spike-nodes`).
const SPIKE_NODES: u64 = 1024;

/// The experiment and view of `a`; `allowed` are the CPUs rtlab may run
/// on. Err is a message naming the option.
pub fn setup(a: &CyclictestArgs, allowed: &[usize], cmdline: &str) -> Result<Setup, String> {
    let mut notes = Vec::new();
    if let Some(clock) = a.clock.filter(|c| *c != 0) {
        return Err(refused(
            format!("-c {clock}: rtlab measures on CLOCK_MONOTONIC only"),
            "leave -c out, or give -c 0 (cyclictest's default)",
        ));
    }
    let affinity = affinity(a, allowed)?;
    let count = thread_count(a, affinity.as_deref(), allowed)?;
    let histogram = histogram(a)?;
    let interval = a.interval.unwrap_or(1000);
    if interval == 0 {
        return Err(refused(
            "-i 0: the interval must be at least 1 µs",
            "give -i in µs from 1, e.g. -i 1000 (cyclictest's default) or -i 200",
        ));
    }
    let distance = if histogram.is_some() {
        0
    } else {
        a.distance.unwrap_or(500)
    };
    let (policy, label) = policy(a)?;
    let priority = first_priority(a, policy, count, &mut notes)?;
    let shape = Shape {
        affinity,
        interval,
        distance,
        policy,
        label: label.clone(),
        duration_s: a.duration.as_deref().map(args::duration_s).transpose()?,
        keep: verbose_samples(a)?,
        histogram: histogram.clone(),
    };
    let mut g = Generated::default();
    main_stanza(&mut g, a, shape.affinity.as_deref());
    let mut threads = Vec::new();
    for i in 0..count {
        // --priospread: each next thread one lower, down to 1.
        let prio = if a.priospread {
            (priority - i32::try_from(i).unwrap_or(i32::MAX)).max(1)
        } else {
            priority
        };
        threads.push(timer_stanza(&mut g, a, &shape, i, prio)?);
    }
    if let Some(mix) = &a.rtlab_load {
        load_programs(&mut g, mix, allowed.len(), a.rtlab_outdir.as_deref())?;
    }
    let view = View {
        cmdline: cmdline.to_string(),
        quiet: a.quiet,
        nsecs: a.nsecs,
        refresh_on_max: a.refresh_on_max,
        policy_label: label,
        threads,
        histogram,
        spike: a.spike,
        spike_nodes: a.spike_nodes.unwrap_or(SPIKE_NODES),
        breaktrace: a.breaktrace,
        json: a.json.clone(),
        verbose: a.verbose,
        distance,
        affinity_list: listed_affinity(a, shape.affinity.as_deref()),
        using_cpus_early: a.verbose_before_affinity,
    };
    Ok(Setup {
        experiment: g,
        view,
        notes,
    })
}

/// What every timer stanza is made of.
struct Shape {
    affinity: Option<Vec<usize>>,
    interval: u64,
    distance: u64,
    policy: &'static str,
    label: String,
    duration_s: Option<u64>,
    keep: u64,
    histogram: Option<Histogram>,
}

/// The first thread's priority: `-p`, or threads + 1 for a real-time
/// policy without one (said as cyclictest says it), or 0.
fn first_priority(
    a: &CyclictestArgs,
    policy: &str,
    count: usize,
    notes: &mut Vec<String>,
) -> Result<i32, String> {
    Ok(match a.priority {
        Some(p) if !(0..=99).contains(&p) => {
            return Err(refused(
                format!("-p {p}: a priority is 0..99"),
                "give -p from 0 to 99, e.g. -p 99 (-p 0 with --policy other)",
            ));
        }
        Some(p) if p > 0 => p,
        _ if policy == "FIFO" || policy == "RR" => {
            let p = i32::try_from(count + 1).unwrap_or(99).min(99);
            notes.push(format!("defaulting realtime priority to {p}"));
            p
        }
        _ => 0,
    })
}

/// Thread `i`'s stanza; its priority and interval (µs) for the view.
fn timer_stanza(
    g: &mut Generated,
    a: &CyclictestArgs,
    s: &Shape,
    i: usize,
    priority: i32,
) -> Result<(i32, u64), String> {
    let period = s.interval + i as u64 * s.distance;
    g.line("").line(format!("timer_thread[{i}]")).line("{");
    if let Some(cpus) = &s.affinity {
        let cpu = cpus[i % cpus.len()];
        g.from(format!("  cpu_affinity {cpu}"), "-a", &cpulist(cpus));
    }
    g.from(format!("  sched.policy {}", s.policy), "--policy", &s.label);
    g.from(
        format!("  sched.priority {priority}"),
        "-p",
        &priority.to_string(),
    );
    g.from(
        format!("  timer.period {period} us"),
        "-i",
        &period.to_string(),
    );
    if s.keep > 0 {
        // cyclictest -v: every thread takes its N samples.
        g.from(
            format!("  lifetime.loops {}", s.keep),
            "-l",
            &s.keep.to_string(),
        );
        g.from(format!("  stats.samples {}", s.keep), "-v", "");
    } else {
        lifetime(g, a.loops, s.duration_s, s.interval, i)?;
    }
    if let Some(h) = &s.histogram {
        let size = h.buckets - 1;
        g.from(
            format!("  stats.histo_size {size} us"),
            "-h",
            &h.buckets.to_string(),
        );
    }
    g.line("}");
    Ok((priority, period))
}

/// The program stanzas of `--rtlab-load MIX`, their output in `outdir`
/// when there is one.
fn load_programs(
    g: &mut Generated,
    mix: &str,
    cpus: usize,
    outdir: Option<&std::path::Path>,
) -> Result<(), String> {
    let programs = if mix == "stress-ng" {
        vec![crate::workload::load::stress_ng_mix(cpus)]
    } else {
        let exe = std::env::current_exe().map_err(|e| {
            refused(
                format!("--rtlab-load: where is rtlab's own binary? {e}"),
                "run rtlab by its path, or give --rtlab-load stress-ng",
            )
        })?;
        let exe = exe.to_string_lossy().into_owned();
        crate::workload::load::standard_mix(cpus)
            .into_iter()
            .map(|args| std::iter::once(exe.clone()).chain(args).collect())
            .collect()
    };
    for (i, argv) in programs.iter().enumerate() {
        let cmdline = crate::config::values::quote_cmdline(argv).ok_or_else(|| {
            refused(
                format!(
                    "--rtlab-load {mix}: `{}` cannot be written in an experiment file",
                    argv.join(" ")
                ),
                "run rtlab from a path without quotes, backslashes or control characters",
            )
        })?;
        g.line("").line(format!("program[{i}]")).line("{");
        g.from(format!("  cmdline {cmdline}"), "--rtlab-load", mix);
        if let Some(dir) = outdir.and_then(|d| d.to_str()) {
            let name = argv.get(2).map_or("stress-ng", String::as_str);
            let out = crate::config::values::quote_cmdline(&[format!("{dir}/load-{name}-{i}.txt")])
                .ok_or_else(|| {
                    refused(
                        "--rtlab-outdir: its path cannot be written in an experiment file",
                        "give a directory without blanks, quotes, backslashes or control characters",
                    )
                })?;
            g.from(format!("  output.out {out}"), "--rtlab-outdir", dir);
        }
        g.line("}");
    }
    Ok(())
}

/// `-v`: the samples each thread keeps (its `-l`), 0 without `-v`.
fn verbose_samples(a: &CyclictestArgs) -> Result<u64, String> {
    if !a.verbose {
        return Ok(0);
    }
    const MAX: u64 = crate::config::MAX_KEPT_SAMPLES as u64;
    match a.loops {
        Some(n) if (1..=MAX).contains(&n) => Ok(n),
        _ => Err(refused(
            "-v needs -l N: rtlab keeps each sample in memory and prints them at the end",
            &format!("add -l N with N from 1 to {MAX}, e.g. -v -l 10000"),
        )),
    }
}

fn cpulist(cpus: &[usize]) -> String {
    crate::cpulist::format(cpus)
}

/// The CPUs the threads go round robin on (None: not pinned).
fn affinity(a: &CyclictestArgs, allowed: &[usize]) -> Result<Option<Vec<usize>>, String> {
    match a.affinity.as_deref() {
        _ if a.smp => Ok(Some(allowed.to_vec())),
        None => Ok(None),
        Some("") => Ok(Some(allowed.to_vec())),
        Some(list) => {
            let cpus = crate::cpulist::parse(list).map_err(|e| {
                refused(
                    format!("-a {list:?}: {}", e.message),
                    "CPU lists look like `3`, `0-2` or `0,2-3`",
                )
            })?;
            if let Some(c) = cpus.iter().find(|c| !allowed.contains(c)) {
                return Err(refused(
                    format!("-a {list}: CPU {c} is not one rtlab may run on"),
                    &format!("give CPUs of {}", cpulist(allowed)),
                ));
            }
            Ok(Some(cpus))
        }
    }
}

/// The CPUs of `-a LIST`, which `-v` names (cyclictest's
/// AFFINITY_SPECIFIED): None for `-a` alone, `-S` (which ignores `-a`) or
/// no `-a`.
fn listed_affinity(a: &CyclictestArgs, affinity: Option<&[usize]>) -> Option<Vec<usize>> {
    let listed = a.affinity.as_deref().is_some_and(|l| !l.is_empty());
    (listed && !a.smp).then(|| affinity.unwrap_or_default().to_vec())
}

fn thread_count(
    a: &CyclictestArgs,
    affinity: Option<&[usize]>,
    allowed: &[usize],
) -> Result<usize, String> {
    let per_cpu = affinity.unwrap_or(allowed).len();
    let n = match a.threads.as_deref() {
        _ if a.smp => per_cpu,
        None => 1,
        Some("") => per_cpu,
        Some(n) => n
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=4096).contains(n))
            .ok_or_else(|| {
                refused(
                    format!("-t {n:?}: not a number of threads"),
                    "give -t from 1 to 4096, or -t alone for one thread per CPU",
                )
            })?,
    };
    Ok(n.max(1))
}

fn histogram(a: &CyclictestArgs) -> Result<Option<Histogram>, String> {
    let (buckets, sum_column) = match (a.histogram, a.histofall) {
        (_, Some(n)) => (n, true),
        (Some(n), None) => (n, false),
        (None, None) => {
            if a.histfile.is_some() {
                return Err(refused(
                    "--histfile without -h: there is no histogram to write",
                    "add -h N (the histogram's buckets of 1 µs, e.g. -h 400)",
                ));
            }
            return Ok(None);
        }
    };
    if !(1..=1_000_000).contains(&buckets) {
        return Err(refused(
            format!("-h {buckets}: rtlab's histogram has 1..1000000 buckets of 1 µs"),
            "give -h from 1 to 1000000, e.g. -h 400",
        ));
    }
    if a.nsecs {
        return Err(refused(
            "-N with -h: rtlab's histogram has 1-µs buckets",
            "drop -N (rtlab's percentiles, in --rtlab-json, are to 0.1 %)",
        ));
    }
    Ok(Some(Histogram {
        buckets,
        sum_column,
        file: a.histfile.clone(),
    }))
}

/// The threads' policy (rtlab's name) and cyclictest's live label.
fn policy(a: &CyclictestArgs) -> Result<(&'static str, String), String> {
    let named = match a.policy.as_deref() {
        None => None,
        Some("other" | "normal") => Some("OTHER"),
        Some("batch") => Some("BATCH"),
        Some("idle") => Some("IDLE"),
        Some("fifo") => Some("FIFO"),
        Some("rr") => Some("RR"),
        Some(other) => {
            return Err(refused(
                format!("--policy {other:?}: not a policy"),
                "give one of other, normal, batch, idle, fifo, rr",
            ));
        }
    };
    let policy = match (named, a.priority) {
        (Some(p @ ("FIFO" | "RR")), _) => p,
        (Some(p), Some(n)) if n > 0 => {
            return Err(refused(
                format!(
                    "--policy {} with -p {n}: {p} threads have no real-time priority",
                    a.policy.as_deref().unwrap_or_default()
                ),
                "drop -p, or give --policy fifo or rr",
            ));
        }
        (Some(p), _) => p,
        (None, Some(_)) => "FIFO",
        (None, None) => "OTHER",
    };
    let label = match policy {
        "FIFO" => "fifo".to_string(),
        "RR" => "rr".to_string(),
        other => format!("{}/other", other.to_lowercase()),
    };
    Ok((policy, label))
}

fn main_stanza(g: &mut Generated, a: &CyclictestArgs, affinity: Option<&[usize]>) {
    g.line("# written by `rtlab cyclictest` from cyclictest's options")
        .line("main")
        .line("{")
        .line("  stats.period 100 ms")
        .line("  spikes.worst 20");
    if a.mlockall {
        g.from("  memlock", "-m", "");
    }
    if a.default_system || a.laptop {
        g.from("  pm_qos.cpu_dma_latency off", "--default-system", "");
    } else if let Some(us) = a.latency {
        g.from(
            format!("  pm_qos.cpu_dma_latency {us} us"),
            "--latency",
            &us.to_string(),
        );
    }
    match (&a.mainaffinity, affinity) {
        (Some(list), _) => {
            g.from(format!("  cpu_affinity {list}"), "--mainaffinity", list);
        }
        (None, Some(cpus)) if a.affinity.as_deref().is_some_and(|l| !l.is_empty()) => {
            g.from(
                format!("  cpu_affinity {}", cpulist(cpus)),
                "-a",
                &cpulist(cpus),
            );
        }
        _ => {}
    }
    // The wake-ups to keep: later than the lowest of the spike trigger,
    // the break value and the histogram's last bucket.
    let triggers = [
        a.spike.map(|t| t + 1),
        a.breaktrace.map(|b| b + 1),
        a.histogram.or(a.histofall),
    ];
    if let Some(min) = triggers.into_iter().flatten().min() {
        g.line(format!("  spikes.threshold {min} us"));
        // At least the overflow cycle numbers the histogram lists.
        let nodes = a
            .spike_nodes
            .unwrap_or(SPIKE_NODES)
            .max(crate::report::cyclictest::OVERFLOWS_LISTED as u64)
            .min(100_000);
        g.from(
            format!("  spikes.max {nodes}"),
            "--spike-nodes",
            &nodes.to_string(),
        );
    }
    if let Some(b) = a.breaktrace {
        g.from(
            format!("  trace.threshold {} us", b + 1),
            "-b",
            &b.to_string(),
        );
    }
    g.line("}");
}

/// `-l` and `-D` for thread `i`.
fn lifetime(
    g: &mut Generated,
    loops: Option<u64>,
    duration_s: Option<u64>,
    interval_us: u64,
    i: usize,
) -> Result<(), String> {
    if let Some(n) = loops.filter(|n| *n > 0) {
        g.from(format!("  lifetime.loops {n}"), "-l", &n.to_string());
        if i > 0 {
            // The run ends when thread 0 has its N samples.
            let us = n.checked_mul(interval_us).ok_or_else(|| {
                refused(
                    format!("-l {n}: too many loops at -i {interval_us}"),
                    "give fewer loops, or -D for a duration",
                )
            })?;
            let capped = duration_s.map_or(us, |s| us.min(s.saturating_mul(1_000_000)));
            g.from(
                format!("  lifetime.duration {capped} us"),
                "-l",
                &n.to_string(),
            );
            return Ok(());
        }
    }
    if let Some(s) = duration_s.filter(|s| *s > 0) {
        g.from(format!("  lifetime.duration {s} s"), "-D", &format!("{s}s"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(line: &str, allowed: &[usize]) -> Result<Setup, String> {
        let args: Vec<std::ffi::OsString> = line.split_whitespace().map(Into::into).collect();
        setup(&args::parse(&args).unwrap(), allowed, line)
    }

    /// The value of `key` in each timer stanza.
    fn per_thread(s: &Setup, key: &str) -> Vec<String> {
        let text = s.experiment.text();
        text.split("timer_thread[")
            .skip(1)
            .map(|stanza| {
                stanza
                    .lines()
                    .find_map(|l| l.trim().strip_prefix(key).map(|v| v.trim().to_string()))
                    .unwrap_or_default()
            })
            .collect()
    }

    #[test]
    fn threads_placement_and_intervals_follow_cyclictest() {
        let allowed = [2, 3, 5];
        let s = of("-a -t -p99", &allowed).unwrap();
        assert_eq!(per_thread(&s, "cpu_affinity"), ["2", "3", "5"]);
        assert_eq!(
            per_thread(&s, "timer.period"),
            ["1000 us", "1500 us", "2000 us"]
        );
        // -a LIST -t N: round robin; the main thread on the list.
        let s = of("-a 3,5 -t 3 -p 80 -d 0", &allowed).unwrap();
        assert_eq!(per_thread(&s, "cpu_affinity"), ["3", "5", "3"]);
        assert!(
            s.experiment.text().contains("main\n{\n")
                && s.experiment.text().contains("  cpu_affinity 3,5\n")
        );
        // -t alone with a list: one per CPU of the list. A histogram forces -d 0.
        let s = of("-t -a 2,3 -p 80 -h 50", &allowed).unwrap();
        assert_eq!(per_thread(&s, "timer.period"), ["1000 us", "1000 us"]);
        assert_eq!(per_thread(&s, "stats.histo_size"), ["49 us", "49 us"]);
        // No -a: not pinned; no -t: one thread.
        let s = of("-p 80", &allowed).unwrap();
        assert_eq!(per_thread(&s, "cpu_affinity"), [""]);
        assert!(of("-a 7", &allowed).unwrap_err().contains("CPU 7"));
    }

    #[test]
    fn policies_and_priorities_follow_cyclictest() {
        let s = of("-t 2", &[0, 1]).unwrap();
        assert_eq!(per_thread(&s, "sched.policy"), ["OTHER", "OTHER"]);
        assert_eq!(s.view.policy_label, "other/other");
        let s = of("--policy=fifo -t 2", &[0, 1]).unwrap();
        assert_eq!(per_thread(&s, "sched.priority"), ["3", "3"]);
        assert_eq!(s.notes, ["defaulting realtime priority to 3"]);
        let s = of("--policy=rr -p 50 -t 3 --priospread", &[0, 1]).unwrap();
        assert_eq!(per_thread(&s, "sched.priority"), ["50", "49", "48"]);
        assert_eq!(per_thread(&s, "sched.policy"), ["RR", "RR", "RR"]);
        assert_eq!(s.view.policy_label, "rr");
        let s = of("--policy=batch", &[0]).unwrap();
        assert_eq!(s.view.policy_label, "batch/other");
        assert!(of("--policy=batch -p 5", &[0]).is_err());
        assert!(of("-p 120", &[0]).is_err());
        assert!(of("-c 1", &[0]).unwrap_err().contains("CLOCK_MONOTONIC"));
        assert!(of("-c 0 -p 80", &[0]).is_ok());
    }

    #[test]
    fn every_refusal_names_the_option_and_carries_a_hint() {
        let cases = [
            ("-i 0", "-i 0: ", "-i 1000"),
            ("-c 1", "-c 1: ", "-c 0"),
            ("-p 120", "-p 120: ", "0 to 99"),
            ("-a 7", "-a 7: ", "0-1"),
            ("-a x", "-a \"x\": ", "CPU lists"),
            ("-t 0", "-t \"0\": ", "1 to 4096"),
            ("-h 0", "-h 0: ", "1 to 1000000"),
            ("-h 10 -N", "-N with -h", "drop -N"),
            ("--histfile=h.txt", "--histfile without -h", "add -h"),
            ("--policy=deadline", "--policy \"deadline\"", "fifo, rr"),
            ("--policy=batch -p 5", "--policy batch with -p 5", "drop -p"),
            ("-v", "-v needs -l", "1 to 1000000"),
            ("-D 1.5h", "-D \"1.5h\"", "90m"),
        ];
        for (line, problem, hint) in cases {
            let e = of(line, &[0, 1]).unwrap_err();
            let (first, rest) = e.split_once("\n  hint: ").unwrap_or((&e, ""));
            assert!(first.starts_with(problem), "{line}: {e}");
            assert!(rest.contains(hint), "{line}: {e}");
        }
    }

    #[test]
    fn loops_end_the_run_when_the_first_thread_has_them() {
        let s = of("-t 3 -p 80 -l 100", &[0, 1, 2]).unwrap();
        assert_eq!(per_thread(&s, "lifetime.loops"), ["100", "100", "100"]);
        // Thread 0 at 1 ms takes its 100 samples in 100 ms.
        assert_eq!(
            per_thread(&s, "lifetime.duration"),
            ["", "100000 us", "100000 us"]
        );
        let s = of("-p 80 -D 2m", &[0]).unwrap();
        assert_eq!(per_thread(&s, "lifetime.duration"), ["120 s"]);
        // Triggers: later than T µs is T + 1 µs and more.
        let s = of("-p 80 --spike 30 -b 50 -h 40", &[0]).unwrap();
        let text = s.experiment.text();
        assert!(text.contains("spikes.threshold 31 us"), "{text}");
        assert!(text.contains("trace.threshold 51 us"), "{text}");
    }

    /// `-v`'s header, as rt-tests 2.4 prints it (seen on this machine:
    /// `cyclictest -v -a 0,1 -t 3 -l 2` and the orders below).
    #[test]
    fn verbose_names_the_cpus_of_an_affinity_list_as_cyclictest() {
        use crate::report::cyclictest::{verbose, verbose_header};
        let threads = |n: usize| -> Vec<crate::result::TimerResult> {
            (0..n)
                .map(|i| {
                    let mut t = crate::report::files::tests::sample_result();
                    t.index = i;
                    t.samples_ns.clear();
                    t
                })
                .collect()
        };
        let s = of("-v -a 0,1 -t 3 -l 2 -p 80", &[0, 1]).unwrap();
        assert_eq!(
            verbose_header(&s.view, 2, 2),
            "Using 2 cpus.\nMax CPUs = 2\nOnline CPUs = 2\nUsing 2 cpus.\n"
        );
        assert_eq!(
            verbose(&s.view, &threads(3)),
            "Thread 0 using cpu 0.\nThread 0 Interval: 1500\n\
             Thread 1 using cpu 1.\nThread 1 Interval: 2000\n\
             Thread 2 using cpu 0.\nThread 2 Interval: 2500\n"
        );
        // -a before -v: cyclictest was not verbose yet when it read -a.
        let s = of("-a 1 -v -l 2 -p 80", &[0, 1]).unwrap();
        assert_eq!(
            verbose_header(&s.view, 4, 2),
            "Max CPUs = 4\nOnline CPUs = 2\nUsing 1 cpus.\n"
        );
        assert!(verbose(&s.view, &threads(1)).starts_with("Thread 0 using cpu 1.\n"));
        // -a alone and -S: every CPU, no line about them.
        for line in ["-v -a -t -l 2 -p 80", "-v -S -l 2 -p 80", "-v -S -a 1 -l 2"] {
            let s = of(line, &[0, 1]).unwrap();
            assert_eq!(
                verbose_header(&s.view, 2, 2),
                "Max CPUs = 2\nOnline CPUs = 2\n",
                "{line}"
            );
            assert!(
                !verbose(&s.view, &threads(2)).contains("using cpu"),
                "{line}"
            );
        }
    }
}

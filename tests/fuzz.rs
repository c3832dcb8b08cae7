//! The fuzz harness, run by `cargo test`: every parser of outside input
//! (experiment file and planner, CPU lists, thread-name patterns, the
//! `--fail-if` grammar, every result-file reader, the journal's reader, the
//! binary trace decoder with its format files and pages, the trace's text
//! reader) fed
//! generated and mutated
//! inputs with proptest, each input checked for
//!
//! - no panic,
//! - no hang: a watchdog aborts the test binary, naming the input, if one
//!   input takes more than [`HANG_LIMIT`] (a hang detector, far above the
//!   microseconds an input takes: not a speed test),
//! - bounded memory: while an input is handled the test binary's allocator
//!   (the `cap` crate) refuses to hold more than [`MEMORY_LIMIT`] above what
//!   was held before it, and a refused allocation aborts the binary,
//! - a position for every refusal.
//!
//! `RTLAB_FUZZ_CASES=N` sets the inputs per target (default 2000; the long
//! run of docs/hardening.md used 2 000 000 per target);
//! `RTLAB_FUZZ_TARGETS=trace_binary,trace_text` runs only those targets.

use cap::Cap;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The longest one input may take before the watchdog calls it a hang.
const HANG_LIMIT: Duration = Duration::from_secs(5);
/// The most memory one input may hold at once (the inputs are < 64 kB):
/// an allocation past it fails, which aborts the test binary.
const MEMORY_LIMIT: usize = 32 << 20;

/// The system allocator, counting what the process holds and refusing
/// more than the limit set for the input at hand.
#[global_allocator]
static ALLOCATOR: Cap<std::alloc::System> = Cap::new(std::alloc::System, usize::MAX);

/// The input being handled now, with its start time.
static RUNNING: Mutex<Option<(Instant, String)>> = Mutex::new(None);

fn start_watchdog() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        std::thread::spawn(|| {
            loop {
                std::thread::sleep(Duration::from_millis(200));
                let running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
                if let Some((since, input)) =
                    running.as_ref().filter(|r| r.0.elapsed() > HANG_LIMIT)
                {
                    eprintln!(
                        "fuzz: an input took more than {HANG_LIMIT:?} ({:?}): {input}",
                        since.elapsed()
                    );
                    std::process::abort();
                }
            }
        });
    });
}

/// Runs `f` on one input under the watchdog and the memory limit.
fn guarded<T>(input: &dyn std::fmt::Debug, f: impl FnOnce() -> T) -> Result<T, TestCaseError> {
    start_watchdog();
    *RUNNING.lock().unwrap_or_else(|e| e.into_inner()) =
        Some((Instant::now(), format!("{input:.2000?}")));
    let _ = ALLOCATOR.set_limit(ALLOCATOR.allocated() + MEMORY_LIMIT);
    let out = f();
    let _ = ALLOCATOR.set_limit(usize::MAX);
    *RUNNING.lock().unwrap_or_else(|e| e.into_inner()) = None;
    Ok(out)
}

fn cases(default: u32) -> u32 {
    std::env::var("RTLAB_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn runner(default: u32) -> TestRunner {
    TestRunner::new(Config {
        cases: cases(default),
        failure_persistence: None,
        ..Config::default()
    })
}

/// Text made of the format's own pieces (more likely to go deep than
/// random characters), or any string at all.
fn soup(pieces: &'static [&'static str], max: usize) -> BoxedStrategy<String> {
    prop_oneof![
        4 => prop::collection::vec(prop::sample::select(pieces), 0..max).prop_map(|v| v.concat()),
        1 => any::<String>(),
    ]
    .boxed()
}

const EXPERIMENT_PIECES: &[&str] = &[
    "main",
    "{",
    "}",
    "timer_thread[",
    "]",
    "program[",
    "0",
    "1",
    "7",
    " ",
    "\n",
    "\n",
    "#",
    "\"",
    "'",
    "\\",
    "cmdline ",
    "sleep 1",
    "sched.policy ",
    "sched.priority ",
    "FIFO",
    "RR",
    "OTHER",
    "99",
    "1.5",
    "ms",
    "us",
    "é",
    "-",
    ",",
    "\t",
    "memlock",
    "cpu_affinity ",
    "0-1",
    "stats.period ",
    "lifetime.loops ",
    "lifetime.duration ",
    "stats.filename ",
    "output.out ",
    "output.err ",
    "/dev/null",
    "x.txt",
    "irq.affinity ",
    "threads.sched ",
    "threads.affinity ",
    "net.steering ",
    "lo ",
    "ksoftirqd/*",
    "*a*a*a*b",
    "all",
    "cpuset ",
    "on_ok ",
    "on_ko ",
    "restart",
    "stop",
    "cpu.bandwidth ",
    "50%",
    "dbg_level ",
    "\u{1b}[31m",
    "18446744073709551616",
    "-1",
    "0x",
    "stats.format ",
    "csv",
    "\0",
    "99999999999999 s",
    "task_latency[",
    "task.pid ",
    "on_spike.every ",
];

fn check_positions(text: &str, diags: &[rtlab::config::Diagnostic]) -> Result<(), TestCaseError> {
    let lines = text.lines().count().max(1);
    for d in diags {
        prop_assert!(
            d.pos.line >= 1 && d.pos.line <= lines + 1 && d.pos.col >= 1,
            "refusal without a place in the file: {d:?}"
        );
        prop_assert!(d.hint.is_some(), "refusal without a hint: {d:?}");
    }
    Ok(())
}

fn experiment_parser_and_planner() {
    let machine = rtlab::plan::RealMachine {
        root: rtlab::sys::SysRoot::real(),
    };
    let opts = rtlab::plan::PlanOptions::default();
    runner(2000)
        .run(&soup(EXPERIMENT_PIECES, 80), |text| {
            let (parsed, planned) = guarded(&text, || {
                (
                    rtlab::config::parse_all(&text),
                    rtlab::plan::plan_text(&text, "fuzz.cfg", &machine, &opts),
                )
            })?;
            check_positions(&text, &parsed.1)?;
            if let Err(diags) = planned {
                prop_assert!(!diags.is_empty());
                check_positions(&text, &diags)?;
            }
            Ok(())
        })
        .unwrap();
}

/// The cpulist rule written the plainest way, for comparison.
fn cpulist_by_hand(text: &str) -> Option<Vec<usize>> {
    let mut set = std::collections::BTreeSet::new();
    if text.trim().is_empty() {
        return None;
    }
    for part in text.split(',') {
        let num = |s: &str| {
            s.trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| n <= rtlab::cpulist::MAX_CPU)
        };
        match part.trim().split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi) = (num(lo)?, num(hi)?);
                if hi < lo {
                    return None;
                }
                set.extend(lo..=hi);
            }
            None => {
                set.insert(num(part)?);
            }
        }
    }
    Some(set.into_iter().collect())
}

fn cpu_lists_agree_with_a_plain_reading() {
    let pieces: &'static [&'static str] = &[
        "0",
        "1",
        "2",
        "3",
        "9",
        "1023",
        "1024",
        "-",
        ",",
        " ",
        "x",
        "0x",
        "f",
        "99999999999999999999",
    ];
    runner(5000)
        .run(&soup(pieces, 20), |text| {
            let (list, mask) = guarded(&text, || {
                (
                    rtlab::cpulist::parse(&text),
                    rtlab::cpulist::parse_list_or_mask(&text),
                )
            })?;
            match (&list, cpulist_by_hand(&text)) {
                (Ok(got), Some(want)) => prop_assert_eq!(got, &want),
                (Err(e), None) => prop_assert!(e.offset <= text.len(), "{e:?}"),
                (got, want) => prop_assert!(false, "{text:?}: {got:?} but by hand {want:?}"),
            }
            if let Ok(cpus) = mask {
                prop_assert!(cpus.windows(2).all(|w| w[0] < w[1]));
                prop_assert!(cpus.iter().all(|&c| c <= rtlab::cpulist::MAX_CPU));
            }
            Ok(())
        })
        .unwrap();
}

/// Glob matching written as its definition (exponential: small inputs only).
fn glob_by_definition(p: &[char], n: &[char]) -> bool {
    match (p.first(), n.first()) {
        (None, None) => true,
        (Some('*'), _) => {
            glob_by_definition(&p[1..], n) || (!n.is_empty() && glob_by_definition(p, &n[1..]))
        }
        (Some('?'), Some(_)) => glob_by_definition(&p[1..], &n[1..]),
        (Some(a), Some(b)) if a == b => glob_by_definition(&p[1..], &n[1..]),
        _ => false,
    }
}

fn thread_patterns_agree_with_the_definition() {
    let pattern = prop::collection::vec(prop::sample::select(vec!['a', 'b', '*', '?']), 0..12);
    let name = prop::collection::vec(prop::sample::select(vec!['a', 'b', '/']), 0..14);
    runner(20_000)
        .run(&(pattern, name), |(p, n)| {
            let (ps, ns): (String, String) = (p.iter().collect(), n.iter().collect());
            let got = guarded(&(&ps, &ns), || rtlab::sys::threads::name_matches(&ps, &ns))?;
            prop_assert_eq!(got, glob_by_definition(&p, &n), "{:?} vs {:?}", ps, ns);
            Ok(())
        })
        .unwrap();
}

fn fail_if_conditions() {
    let pieces: &'static [&'static str] = &[
        "p99", "p99.9", "max", "samples", "mean", ">", ">=", "<", "<=", "+", "-", "10", "1.5", "%",
        "us", "µs", "ms", "ns", " ", "e308", ".", "x",
    ];
    runner(5000)
        .run(&soup(pieces, 12), |text| {
            let parsed = guarded(&text, || text.parse::<rtlab::report::compare::Condition>())?;
            if let Err(e) = parsed {
                prop_assert!(e.starts_with("column "), "{e}");
            }
            Ok(())
        })
        .unwrap();
}

/// A byte-level change to a seed file.
#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, &'static str),
    Delete(usize, usize),
    Cut(usize),
}

const TOKENS: &[&str] = &[
    "18446744073709551615",
    "18446744073709551616",
    "-1",
    "1e308",
    "nan",
    "0",
    "{",
    "}",
    "[",
    "]",
    "\"",
    ",",
    "\n",
    "\t",
    "#",
    "# Total: 5\n",
    "# Min Latencies: 9 9 9\n",
    "T: 5000 ( 1) P:80 I:1000 C: 9 Min: 1 Act: 2 Avg: 3 Max: 4\n",
    "\u{1b}]0;x\u{7}",
    "../",
    "/etc/shadow",
    "kernel/core_pattern",
    "\"samples\": 18446744073709551615,",
    "%",
    "%065536d",
    "%0999999999999999999999x",
    "\u{e9}",
    " pid=1",
    " next_pid=0",
    " ==> ",
    "\n",
    "__data_loc char[] ",
    "REC->",
    "\u{0}\u{0}\u{0}\u{0}\u{ff}\u{ff}",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
];

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Mutation::Flip(at, b)),
        (any::<usize>(), prop::sample::select(TOKENS)).prop_map(|(at, t)| Mutation::Insert(at, t)),
        (any::<usize>(), 0..64usize).prop_map(|(at, n)| Mutation::Delete(at, n)),
        any::<usize>().prop_map(Mutation::Cut),
    ]
}

fn mutate(seed: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for m in mutations {
        let len = b.len().max(1);
        match *m {
            Mutation::Flip(at, x) => {
                if let Some(byte) = b.get_mut(at % len) {
                    *byte ^= x;
                }
            }
            Mutation::Insert(at, t) => {
                let at = at % (b.len() + 1);
                b.splice(at..at, t.bytes());
            }
            Mutation::Delete(at, n) => {
                let at = at % len;
                let end = (at + n).min(b.len());
                if at < end {
                    b.drain(at..end);
                }
            }
            Mutation::Cut(at) => b.truncate(at % len),
        }
    }
    b
}

const CYCLICTEST_JSON: &str = r#"{"file_version": 1, "cmdline:": "cyclictest -h 100 --json=x",
 "sysinfo": {"nodename": "board", "release": "6.1.0-rt", "realtime": 1}, "return_code": 0,
 "resolution_in_ns": 0, "thread": {"0": {"histogram": {"3": 5, "4": 10, "7": 1},
 "cycles": 16, "min": 3, "max": 7, "avg": 3.9, "cpu": 1},
 "1": {"histogram": {"2": 4}, "cycles": 5, "min": 2, "max": 150, "avg": -nan, "cpu": 0}}}"#;

/// Real files: rtlab runs (one with a noise thread) and a cyclictest run
/// of this machine (`tests/seeds`), cyclictest's stdout, systress txt and
/// csv.
fn reader_seeds() -> Vec<(&'static str, String)> {
    let file = |dir: &str, name: &str| {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests")
                .join(dir)
                .join(name),
        )
        .unwrap_or_default()
    };
    vec![
        ("rtlab.json", file("seeds", "rtlab-result.json")),
        (
            "rtlab-trace.json",
            file("seeds", "rtlab-result-trace-experiments.json"),
        ),
        ("rtlab-noise.json", file("seeds", "rtlab-result-noise.json")),
        ("rtlab-windows.jsonl", file("seeds", "rtlab-windows.jsonl")),
        ("cyclictest.json", file("seeds", "cyclictest.json")),
        ("cyclictest-nan.json", CYCLICTEST_JSON.to_string()),
        ("cyclictest.hist", file("golden", "cyclictest-stdout.txt")),
        ("timer_thread00.txt", file("seeds", "timer_thread00.txt")),
        ("timer_thread00.csv", file("golden", "timer_thread00.csv")),
    ]
}

fn result_file_readers() {
    let seeds = reader_seeds();
    for (name, seed) in &seeds {
        assert!(
            rtlab::dataset::parse_bytes(seed.as_bytes(), Path::new(name)).is_ok(),
            "the seed {name} must read"
        );
    }
    let strategy = (0..seeds.len(), prop::collection::vec(mutation(), 1..6));
    runner(2000)
        .run(&strategy, |(k, mutations)| {
            let (name, seed) = &seeds[k];
            let bytes = mutate(seed.as_bytes(), &mutations);
            let lines = bytes.split(|&b| b == b'\n').count();
            guarded(&(name, &mutations), || {
                if name.ends_with(".jsonl") {
                    // FILE@N: one window of each thread.
                    for n in [1, 2, 7] {
                        let _ = rtlab::dataset::parse_window_bytes(&bytes, Path::new(name), n);
                    }
                }
                match rtlab::dataset::parse_bytes(&bytes, Path::new(name)) {
                    Ok(run) => {
                        // What was read must render.
                        let runs = [run];
                        let columns = rtlab::report::compare::columns(&runs, true);
                        let _ = rtlab::report::compare::text(&columns);
                        let _ = rtlab::report::gnuplot::script(&runs, "t");
                        if !runs[0].noise.is_empty() {
                            // The noise panels draw whatever was read.
                            let opts = rtlab::report::plot::PlotOptions {
                                panels: rtlab::report::plot::Panel::NOISE.to_vec(),
                                size: (400, 300),
                                ..Default::default()
                            };
                            let _ = rtlab::report::plot::svg(&runs, &opts);
                        }
                        Ok(())
                    }
                    Err(e) => {
                        if e.line > lines + 1 {
                            return Err(TestCaseError::fail(format!(
                                "line {} of {lines}: {e:?}",
                                e.line
                            )));
                        }
                        Ok(())
                    }
                }
            })?
        })
        .unwrap();
}

const JOURNAL: &str = concat!(
    r#"{"journal":"rtlab-journal/1","owner":"partition","pid":7,"boot_id":"b","created":"2026-11-22T00:00:00Z","command":"rtlab partition create 1"}"#,
    "\n",
    r#"{"change":"mkdir","path":"sys/fs/cgroup/cpuset/rt","tasks_file":"tasks"}"#,
    "\n",
    r#"{"change":"write","path":"proc/sys/vm/stat_interval","old":"1","new":"1000"}"#,
    "\n",
    r#"{"change":"move_tasks","from":"sys/fs/cgroup/cpuset","to":"sys/fs/cgroup/cpuset/nrt","tasks_file":"tasks","tasks":[{"tid":5,"start":9,"cpus":"0-1"}]}"#,
    "\n",
    r#"{"change":"enable_controller","path":"sys/fs/cgroup/unified/cgroup.subtree_control","controller":"cpuset"}"#,
    "\n",
    r#"{"change":"tracking_cgroup","path":"sys/fs/cgroup/unified/rtlab-12"}"#,
    "\n",
    r#"{"change":"sched","tid":5,"start":9,"name":"ksoftirqd/1","old":{"policy":"OTHER","priority":0},"new":{"policy":"FIFO","priority":2}}"#,
    "\n",
    r#"{"change":"staged_file","path":"/var/lib/rtlab/.rtlab-7-0.tmp"}"#,
    "\n",
);

/// The journal's reader: what it accepts stays within rtlab's knobs and
/// cgroups (checked again here, independently of the reader's own rule).
fn journal_reader() {
    let mounts = [
        "sys/fs/cgroup/cpuset".to_string(),
        "sys/fs/cgroup/unified".to_string(),
    ];
    let seed = rtlab::sys::journal::parse(JOURNAL.as_bytes(), &mounts);
    assert!(seed.is_ok(), "the seed must read: {:?}", seed.err());
    runner(2000)
        .run(&prop::collection::vec(mutation(), 1..6), |mutations| {
            let bytes = mutate(JOURNAL.as_bytes(), &mutations);
            let parsed = guarded(&mutations, || rtlab::sys::journal::parse(&bytes, &mounts))?;
            use rtlab::sys::journal::Change;
            for change in parsed.map(|j| j.1).unwrap_or_default() {
                if let Change::StagedFile { path } = &change {
                    // Anywhere, but only a file rtlab stages, by a clean path.
                    let name = path.rsplit('/').next().unwrap_or_default();
                    prop_assert!(
                        name.starts_with(".rtlab-") && name.ends_with(".tmp"),
                        "{change:?}"
                    );
                    prop_assert!(path.starts_with('/'), "{change:?}");
                    prop_assert!(
                        !path[1..]
                            .split('/')
                            .any(|c| c == ".." || c == "." || c.is_empty()),
                        "{change:?}"
                    );
                    continue;
                }
                let paths: Vec<&str> = match &change {
                    Change::Write { path, .. }
                    | Change::Mkdir { path, .. }
                    | Change::EnableController { path, .. }
                    | Change::TrackingCgroup { path }
                    | Change::TraceInstance { path }
                    | Change::MountTracefs { path } => vec![path],
                    Change::MoveTasks { from, to, .. } => vec![from, to],
                    Change::Sched { .. } | Change::Affinity { .. } | Change::StagedFile { .. } => {
                        vec![]
                    }
                };
                for p in paths {
                    let p = p.trim_start_matches('/');
                    prop_assert!(
                        p.starts_with("proc/sys/")
                            || p.starts_with("proc/irq/")
                            || p.starts_with("sys/"),
                        "{change:?}"
                    );
                    prop_assert!(
                        !p.split('/').any(|c| c == ".." || c.is_empty()),
                        "{change:?}"
                    );
                    prop_assert!(!p.contains("core_pattern"), "{change:?}");
                }
            }
            Ok(())
        })
        .unwrap();
}

/// This kernel's trace fixture (`tests/traces/raw-6.18`): its page
/// header, format files, symbols and pages.
fn trace_fixture() -> (String, Vec<String>, String, Vec<u8>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/traces/raw-6.18");
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let mut formats = Vec::new();
    for system in std::fs::read_dir(dir.join("formats")).unwrap().flatten() {
        if system.path().is_dir() {
            for f in std::fs::read_dir(system.path()).unwrap().flatten() {
                formats.push(read(&f.path()));
            }
        }
    }
    formats.sort();
    let mut pages = std::fs::read(dir.join("cpu0.raw")).unwrap();
    pages.extend(std::fs::read(dir.join("cpu1.raw")).unwrap());
    (
        read(&dir.join("formats/header_page")),
        formats,
        read(&dir.join("kallsyms")),
        pages,
    )
}

/// Whether `value` follows `key=` somewhere in `fields`, blanks between
/// them allowed: the readers give a value without the blanks at its ends
/// (a task's name unpadded), never anything that is not in the text.
fn lies_in(fields: &str, key: &str, value: &str) -> bool {
    let head = format!("{key}=");
    fields.match_indices(&head).any(|(at, _)| {
        let rest = fields[at + head.len()..].trim_start_matches(' ');
        rest.starts_with(value) && !value.starts_with(' ') && !value.ends_with(' ')
    })
}

/// The binary trace decoder: one of this kernel's format files, or its
/// pages, mutated; the pages decoded. Every field an event gives lies in
/// its text, and no value is wider than the record could make it.
fn binary_trace_decoder() {
    let (header, formats, kallsyms, pages) = trace_fixture();
    let symbols = rtlab::trace::rawtrace::Symbols::parse(&kallsyms);
    let known = rtlab::trace::explain::tracepoint_names();
    let strategy = (0..=formats.len(), prop::collection::vec(mutation(), 1..6));
    runner(2000)
        .run(&strategy, |(k, mutations)| {
            let mut formats = formats.clone();
            let mut pages = pages.clone();
            match formats.get_mut(k) {
                Some(f) => {
                    *f = String::from_utf8_lossy(&mutate(f.as_bytes(), &mutations)).into_owned()
                }
                None => pages = mutate(&pages, &mutations),
            }
            let (events, located) = guarded(&(k, &mutations), || {
                let decoder = || {
                    rtlab::trace::rawtrace::Decoder::new(&header, &formats, symbols.clone(), &known)
                };
                let mut out = Vec::new();
                if let Some(mut d) = decoder() {
                    d.pages(0, &pages, &mut out);
                }
                // The flight recorder's way: located first, decoded later.
                let mut later = Vec::new();
                if let Some(mut d) = decoder() {
                    for page in pages.chunks(4096) {
                        let mut at = Vec::new();
                        d.locate(0, page, &mut at, |_| ());
                        later.extend(at.iter().filter_map(|a| d.decode_at(0, page, a)));
                    }
                }
                (out, later)
            })?;
            prop_assert_eq!(events.len(), located.len());
            for (e, l) in events.iter().zip(&located) {
                prop_assert_eq!(
                    (e.ts_ns, e.pid, &e.name, &e.fields),
                    (l.ts_ns, l.pid, &l.name, &l.fields)
                );
            }
            for e in &events {
                prop_assert!(e.fields.len() <= 64 << 10, "{} bytes", e.fields.len());
                for (key, value) in e.pairs() {
                    prop_assert!(lies_in(&e.fields, key, value), "{e:?}");
                }
            }
            Ok(())
        })
        .unwrap();
}

/// The trace's text reader: recorded windows of this kernel mutated (task
/// names that look like fields, line feeds, other encodings among the
/// insertions), read as the flight recorder reads a buffer.
fn trace_text_reader() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/traces");
    let seeds: Vec<String> = [
        "raw-6.18/cpu0.txt",
        "fifo-hog-preempts.txt",
        "compaction-stack.txt",
    ]
    .iter()
    .map(|n| std::fs::read_to_string(dir.join(n)).unwrap())
    .collect();
    let strategy = (0..seeds.len(), prop::collection::vec(mutation(), 1..6));
    runner(2000)
        .run(&strategy, |(k, mutations)| {
            let bytes = mutate(seeds[k].as_bytes(), &mutations);
            let text = rtlab::text::lossy(&bytes).into_owned();
            guarded(&(k, &mutations), || {
                use rtlab::trace::{fields, text as parse};
                let folded = parse::fold_stacks(text.clone());
                let (lines, _) = fields::event_lines(&folded);
                for l in lines {
                    if let Some(e) = parse::line(l) {
                        for (key, value) in e.pairs() {
                            assert!(lies_in(&e.fields, key, value), "{e:?}");
                        }
                    }
                }
                let events = parse::events(&folded);
                let buffer = rtlab::trace::event::Recent::new(&events);
                let _ = buffer.idle_switches();
                let _ = buffer.markers().count();
                let _ = buffer.window(0, u64::MAX, 1000);
                let _ = buffer.window_around(u64::MAX / 2, u64::MAX, u64::MAX, 1000);
                let mut text = String::new();
                for e in &events {
                    parse::kernel_text(e, &mut text);
                }
            })
        })
        .unwrap();
}

/// One test, the targets in turn: the memory limit is the process's, so
/// nothing else may run beside them.
#[test]
fn fuzz_every_parser_of_outside_input() {
    let t = Instant::now();
    // The limit is in force while an input is handled, and lifted after.
    // (The limit is the process's: what the test harness's own thread frees
    // meanwhile adds a few kB of slack, hence twice the limit here.)
    let refused = guarded(&"limit check", || {
        Vec::<u8>::new().try_reserve(2 * MEMORY_LIMIT).is_err()
    });
    assert!(refused.unwrap(), "the memory limit does not hold");
    assert!(Vec::<u8>::new().try_reserve(2 * MEMORY_LIMIT).is_ok());
    let targets: [(&str, fn()); 8] = [
        ("experiment", experiment_parser_and_planner),
        ("cpulist", cpu_lists_agree_with_a_plain_reading),
        ("patterns", thread_patterns_agree_with_the_definition),
        ("fail_if", fail_if_conditions),
        ("results", result_file_readers),
        ("journal", journal_reader),
        ("trace_binary", binary_trace_decoder),
        ("trace_text", trace_text_reader),
    ];
    // `RTLAB_FUZZ_TARGETS=trace_binary,trace_text`: only those (a long run
    // of one reader).
    let only = std::env::var("RTLAB_FUZZ_TARGETS").unwrap_or_default();
    for (name, target) in targets {
        if only.is_empty() || only.split(',').any(|t| t == name) {
            let started = Instant::now();
            target();
            eprintln!("fuzz: {name} in {:.1?}", started.elapsed());
        }
    }
    eprintln!(
        "fuzz: {} inputs per target ({} for patterns) in {:.1?}",
        cases(2000),
        cases(20_000),
        t.elapsed()
    );
}

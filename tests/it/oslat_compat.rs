//! `rtlab oslat` against the real oslat (Debian's rt-tests 2.4, which
//! `.ci/run` installs): command lines taken from real scripts and
//! documents, each named with its source, run through both, and their
//! outputs compared by shape (the same lines in the same order with the
//! numbers blanked, the same number of bucket lines, the same JSON keys
//! and value types; the values may differ). Needs root (most lines ask
//! for SCHED_FIFO) and shares the machine (the lines poll one or a few
//! CPUs for about two seconds each).
//!
//! The real half runs now: each line's real output is checked against
//! what the line asks for, and two real runs of a line against each
//! other, which holds the checker to real outputs. The rtlab half waits
//! for `rtlab oslat` to be wired to a run ([`run_rtlab_oslat`]).

use crate::fixtures::{self, text};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

/// A command line from a real script or document: where it comes from,
/// as written there, and as the test runs it (a second instead of
/// minutes; `{main}` the first online CPU, `{cpus}` the others (all of
/// them on a one-CPU machine), `{cpu}` the last online one, `{dir}` the
/// test's directory).
pub struct Line {
    pub source: &'static str,
    pub written: &'static str,
    pub run: &'static str,
}

pub const LINES: &[Line] = &[
    Line {
        // cnf-features-deploy, cnf-tests/pod-utils/oslat-runner/main.go:
        // oslatArgs := {"--duration", *runtime (default "10m"), "--rtprio",
        // *rtPriority (default "1"), "--cpu-list", ..., "--cpu-main-thread", ...}
        source: "openshift-kni/cnf-features-deploy, cnf-tests/pod-utils/oslat-runner/main.go (OpenShift's latency tests)",
        written: "oslat --duration 10m --rtprio 1 --cpu-list <pod cpus but the first and its siblings> --cpu-main-thread <first>",
        run: "--duration 1 --rtprio 1 --cpu-list {cpus} --cpu-main-thread {main}",
    },
    Line {
        // container-perf-tools, oslat/cmd.sh: command="oslat -D
        // ${RUNTIME_SECONDS} --rtprio ${PRIO} --cpu-list ${cyccore}
        // --cpu-main-thread ${cpus[0]} ${extra_args}" (defaults 10 and 1)
        source: "redhat-nfvpe/container-perf-tools, oslat/cmd.sh (Red Hat's oslat container)",
        written: "oslat -D 10 --rtprio 1 --cpu-list <cpus but the first> --cpu-main-thread <first>",
        run: "-D 1 --rtprio 1 --cpu-list {cpus} --cpu-main-thread {main}",
    },
    Line {
        // The same, with TRACE_THRESHOLD set:
        // extra_args="--trace-threshold=$TRACE_THRESHOLD"
        source: "redhat-nfvpe/container-perf-tools, oslat/cmd.sh with TRACE_THRESHOLD",
        written: "oslat -D 10 --rtprio 1 --cpu-list <cpus> --cpu-main-thread <first> --trace-threshold=<us>",
        run: "-D 1 --rtprio 1 --cpu-list {cpus} --cpu-main-thread {main} --trace-threshold=10000000",
    },
    Line {
        // openshift/origin, test/extended/kernel/tools.go, runOslat:
        // "--cpu-list", "%d-%d", "--cpu-main-thread", ..., "--rtprio", "1",
        // "--duration", "600", "--json", oslatReportFile (parsed: thread.*.cpu, max)
        source: "openshift/origin, test/extended/kernel/tools.go (runOslat; reads thread.*.max of the JSON)",
        written: "oslat --cpu-list <reserved+1>-<n-1> --cpu-main-thread <reserved+1> --rtprio 1 --duration 600 --json /tmp/oslatresults.json",
        run: "--cpu-list {cpus} --cpu-main-thread {main} --rtprio 1 --duration 1 --json {dir}/oslat.json",
    },
    Line {
        // kiagnose/kubevirt-realtime-checkup, the oslat executor's test:
        // oslatRunCmd = "taskset -c 1-2 oslat --cpu-list 1-2 --rtprio 1
        // --duration 1m0s --workload memmove --workload-mem 4K"
        source: "kiagnose/kubevirt-realtime-checkup, pkg/internal/checkup/executor/oslat (KubeVirt's real-time checkup)",
        written: "oslat --cpu-list 1-2 --rtprio 1 --duration 1m0s --workload memmove --workload-mem 4K",
        run: "--cpu-list {cpus} --rtprio 1 --duration 1 --workload memmove --workload-mem 4K",
    },
    Line {
        // Red Hat's kernel-tests, rt-tests/us/rt-tests/oslat/runtest.sh:
        // oslat_cmd="oslat --cpu-list ${cpu_list} --rtprio 1
        // ${duration_flag} ${RUN_TIME}" (RUN_TIME=10m; a kernel-rt)
        source: "Red Hat kernel-tests (coiby/kernel-tests mirror), rt-tests/us/rt-tests/oslat/runtest.sh, on kernel-rt",
        written: "oslat --cpu-list <isolated cpus> --rtprio 1 --duration 10m",
        run: "--cpu-list {cpus} --rtprio 1 --duration 1",
    },
    Line {
        // The same script on a stock kernel: oslat_cmd="oslat --cpu-list
        // ${cpu_list} ${duration_flag} ${RUN_TIME}"
        source: "Red Hat kernel-tests, rt-tests/us/rt-tests/oslat/runtest.sh, on a stock kernel",
        written: "oslat --cpu-list <isolated cpus> --duration 10m",
        run: "--cpu-list {cpus} --duration 1",
    },
    Line {
        // Red Hat kernel-tests, rt-tests/us/rt-tests/sanity/runtest.sh:
        // oneliner "oslat --cpu-list 1 --rtprio 1 $duration_flag 30s"
        source: "Red Hat kernel-tests, rt-tests/us/rt-tests/sanity/runtest.sh (the rt-tests sanity run)",
        written: "oslat --cpu-list 1 --rtprio 1 --duration 30s",
        run: "--cpu-list {cpu} --rtprio 1 --duration 1s",
    },
    Line {
        // Linux, the commit message of "timers: Exclude isolated cpus from
        // timer migration" (Gabriele Monaco): "# oslat -c
        // 1-31,33-63,65-95,97-127 -D 62s", before and after.
        source: "Linux kernel, commit message of 'timers: Exclude isolated cpus from timer migration'",
        written: "oslat -c 1-31,33-63,65-95,97-127 -D 62s",
        run: "-c {cpus} -D 1s",
    },
    Line {
        // A Korean low-latency tuning guide (42jerrykim.github.io, the
        // OS-runtime track): "# oslat — OS 레이턴시 측정" then this line.
        source: "42jerrykim.github.io, a Korean low-latency OS tuning guide (the latency check)",
        written: "oslat --cpu-list 8-15 --duration 60",
        run: "--cpu-list {cpus} --duration 1",
    },
    Line {
        source: "composed from oslat(8)'s options (not a quoted line): quiet, zero-omit, bias, JSON",
        written: "oslat -c <cpu> -D 60 -q -z -B --json=oslat.json",
        run: "-c {cpu} -D 1 -q -z -B --json={dir}/oslat.json",
    },
    Line {
        source: "composed from oslat(8)'s options (not a quoted line): 8 buckets, single pre-heat, memmove",
        written: "oslat -c <cpus> -D 60 -b 8 -s -w memmove -m 4K",
        run: "-c {cpus} -D 1 -b 8 -s -w memmove -m 4K",
    },
];

/// The words of a line to run, with this machine's CPUs and `dir`.
fn words(run: &str, dir: &Path) -> Vec<String> {
    let online = fixtures::online_cpus();
    let main = online[0];
    let others: Vec<String> = online
        .iter()
        .filter(|c| online.len() == 1 || **c != main)
        .map(ToString::to_string)
        .collect();
    run.replace("{cpus}", &others.join(","))
        .replace("{main}", &main.to_string())
        .replace("{cpu}", &fixtures::measured_cpu().to_string())
        .replace("{dir}", dir.to_str().unwrap())
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

fn run_with(program: &str, pre: &[&str], args: &[String], dir: &Path) -> Output {
    let child = Command::new(program)
        .args(pre)
        .args(args)
        .current_dir(dir)
        .env("RTLAB_JOURNAL_DIR", dir.join("journal"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    fixtures::wait_output_within(child, std::time::Duration::from_secs(60))
}

/// The real oslat on `args` in `dir`.
fn run_real_oslat(args: &[String], dir: &Path) -> Output {
    run_with("oslat", &[], args, dir)
}

/// `rtlab oslat` on `args` in `dir`.
///
/// TODO(lead, issue 37): once `rtlab oslat` runs its noise threads, this
/// is all it takes: the comparison below does the rest. Until then
/// `rtlab oslat` reads the line and ends with status 4 and "not yet
/// wired", and [`rtlab_oslat_gives_oslats_outputs_on_real_lines`] fails
/// saying so.
pub fn run_rtlab_oslat(args: &[String], dir: &Path) -> Output {
    run_with(env!("CARGO_BIN_EXE_rtlab"), &["oslat"], args, dir)
}

/// A line's shape: numbers (digits with their dots) blanked to `N`, runs
/// of numbers and spaces to one `N`, so that two outputs of different
/// values and thread counts have one shape.
pub fn line_shape(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|d| d.is_ascii_digit() || *d == '.' || *d == ' ')
            {
                chars.next();
            }
            if !out.ends_with('N') {
                out.push('N');
            }
            continue;
        }
        if c == ' ' && out.ends_with('N') {
            continue;
        }
        out.push(c);
    }
    out
}

/// The shape of an oslat stdout: every line's shape, in order, each run
/// of bucket lines (and of `-z`'s `    ...`, whose place depends on the
/// values) but the last bucket's one `BUCKETS` entry.
pub fn text_shape(stdout: &[u8]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in String::from_utf8_lossy(stdout).lines() {
        let shape = line_shape(line);
        let row = shape.starts_with("    N(us):") && !shape.contains("overflows");
        let bucket = row || line == "    ...";
        if !bucket {
            out.push(shape);
        } else if out.last().is_none_or(|l| l != "BUCKETS") {
            out.push("BUCKETS".into());
        }
    }
    out
}

fn has_dots(stdout: &[u8]) -> bool {
    String::from_utf8_lossy(stdout)
        .lines()
        .any(|l| l == "    ...")
}

/// The table's rows of an oslat stdout: (label, values).
pub fn table_rows(stdout: &[u8]) -> Vec<(String, Vec<String>)> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| {
            let (label, rest) = l.split_once(":\t")?;
            let values = rest
                .split_whitespace()
                .filter(|w| !w.starts_with('('))
                .take_while(|w| w.parse::<f64>().is_ok() || *w == "-nan")
                .map(str::to_string)
                .collect();
            Some((label.trim().to_string(), values))
        })
        .collect()
}

/// Compares two oslat stdouts by shape: the same lines in the same order
/// (numbers blanked), the same bucket lines, each table row with one
/// number per thread. Err says where they part.
pub fn compare_text(ours: &[u8], theirs: &[u8]) -> Result<(), String> {
    let (a, b) = (text_shape(ours), text_shape(theirs));
    if a != b {
        let at = a.iter().zip(&b).position(|(x, y)| x != y);
        return Err(format!(
            "line shapes differ (at line {at:?}):\n{a:#?}\nagainst\n{b:#?}"
        ));
    }
    let labels = |o: &[u8]| -> Vec<String> { table_rows(o).into_iter().map(|r| r.0).collect() };
    // Which buckets `-z` leaves out depends on the values.
    let comparable = !has_dots(ours) && !has_dots(theirs);
    if comparable && labels(ours) != labels(theirs) {
        return Err(format!(
            "table rows differ: {:?} against {:?}",
            labels(ours),
            labels(theirs)
        ));
    }
    for (label, values) in table_rows(ours).iter().chain(&table_rows(theirs)) {
        if values.is_empty() {
            return Err(format!("row {label:?} has no number"));
        }
    }
    let threads = |o: &[u8]| table_rows(o).first().map_or(0, |r| r.1.len());
    for (label, values) in table_rows(ours) {
        if values.len() != threads(ours) {
            return Err(format!("row {label:?}: {values:?}, not one per thread"));
        }
    }
    Ok(())
}

/// The JSON document's shape: every key path with its value's type; the
/// histogram's keys (µs) and the threads' indexes left out.
pub fn json_shape(v: &serde_json::Value, at: &str, out: &mut BTreeSet<String>) {
    use serde_json::Value;
    let kind = match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    out.insert(format!("{at}: {kind}"));
    if let Value::Object(map) = v {
        for (k, v) in map {
            if at.ends_with(".histogram") {
                out.insert(format!("{at}.N: {}", v.is_u64()));
                continue;
            }
            let k = if at == ".thread" { "N" } else { k.as_str() };
            json_shape(v, &format!("{at}.{k}"), out);
        }
    }
}

/// Compares two oslat JSON files by shape: the same keys in the same
/// nesting with values of the same types, as many threads.
pub fn compare_json(ours: &str, theirs: &str) -> Result<(), String> {
    let parse = |s: &str| serde_json::from_str::<serde_json::Value>(s).map_err(|e| e.to_string());
    let (a, b) = (parse(ours)?, parse(theirs)?);
    let (mut sa, mut sb) = (BTreeSet::new(), BTreeSet::new());
    json_shape(&a, "", &mut sa);
    json_shape(&b, "", &mut sb);
    if sa != sb {
        return Err(format!(
            "JSON shapes differ: ours only {:?}, theirs only {:?}",
            sa.difference(&sb).collect::<Vec<_>>(),
            sb.difference(&sa).collect::<Vec<_>>()
        ));
    }
    if a["num_threads"] != b["num_threads"] {
        return Err(format!(
            "num_threads {} against {}",
            a["num_threads"], b["num_threads"]
        ));
    }
    Ok(())
}

/// The bucket count a line asks for (`-b`, 32 by default).
fn buckets_asked(args: &[String]) -> usize {
    let at = args.iter().position(|a| a == "-b" || a == "--bucket-size");
    at.and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(32)
}

/// Both tools' outputs of one line compared; the JSON files too.
fn compare(line: &Line, ours: (&Output, &Path), theirs: (&Output, &Path)) -> Result<(), String> {
    let what = format!("{} ({})\n  run: {}", line.written, line.source, line.run);
    if ours.0.status.code() != theirs.0.status.code() {
        return Err(format!(
            "{what}: statuses\nours: {}\ntheirs: {}",
            text(ours.0),
            text(theirs.0)
        ));
    }
    compare_text(&ours.0.stdout, &theirs.0.stdout).map_err(|e| format!("{what}: {e}"))?;
    let (a, b) = (ours.1.join("oslat.json"), theirs.1.join("oslat.json"));
    if a.exists() != b.exists() {
        return Err(format!("{what}: oslat.json written by one only"));
    }
    if b.exists() {
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        compare_json(&read(&a), &read(&b)).map_err(|e| format!("{what}: {e}"))?;
    }
    Ok(())
}

/// What the checker needs: root (the lines ask for FIFO) and the real
/// oslat.
fn can_run(test: &str) -> bool {
    if !fixtures::has_command("oslat") {
        fixtures::path_taken(test, "no oslat on this machine (.ci/run installs rt-tests)");
        return false;
    }
    fixtures::root_or_refusal(test)
}

#[test]
fn real_oslat_outputs_have_the_shape_the_checker_expects() {
    let test = test_name!();
    if !can_run(test) {
        return;
    }
    let _machine = fixtures::machine_shared();
    let quoted = LINES
        .iter()
        .filter(|l| !l.source.starts_with("composed"))
        .count();
    assert!(quoted >= 10, "{quoted} quoted lines");
    for (i, line) in LINES.iter().enumerate() {
        let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let args = words(line.run, d1.path());
        let first = run_real_oslat(&args, d1.path());
        assert_eq!(
            first.status.code(),
            Some(0),
            "{}: {}",
            line.run,
            text(&first)
        );
        // The bucket lines are the ones asked for, a number per thread.
        let rows = table_rows(&first.stdout);
        let buckets = rows.iter().filter(|r| r.0.ends_with("(us)")).count();
        if has_dots(&first.stdout) {
            assert!(buckets <= buckets_asked(&args), "{}", line.run);
        } else {
            assert_eq!(buckets, buckets_asked(&args), "{}", line.run);
        }
        // A second run: other values, the same shape (on every third line:
        // the checker's tolerance, not each line's, is what it shows; the
        // suite's time is kept).
        if i % 3 != 0 {
            continue;
        }
        let second = run_real_oslat(&words(line.run, d2.path()), d2.path());
        if let Err(e) = compare(line, (&second, d2.path()), (&first, d1.path())) {
            panic!("the checker parts two real runs: {e}");
        }
    }
}

#[test]
fn the_checker_tells_shapes_apart() {
    let golden = |name: &str| {
        let path = format!("{}/tests/golden/oslat/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let plain = golden("c1-D3.txt");
    assert_eq!(compare_text(&plain, &plain), Ok(()));
    // Other values, one shape.
    let other = String::from_utf8_lossy(&plain).replace("13642", "77");
    assert_eq!(compare_text(other.as_bytes(), &plain), Ok(()));
    // A missing bucket, a quiet output, a number turned to a word.
    let fewer =
        String::from_utf8_lossy(&plain).replace("    032 (us):\t 1313 (including overflows)\n", "");
    assert!(compare_text(fewer.as_bytes(), &plain).is_err());
    assert!(compare_text(&golden("D1-b8-q.txt"), &plain).is_err());
    let word = String::from_utf8_lossy(&plain).replace(" 2597 (Mhz)", " x (Mhz)");
    assert!(compare_text(word.as_bytes(), &plain).is_err());
    // JSON: two real files of different runs have one shape; a key less
    // does not.
    let a = String::from_utf8_lossy(&golden("c0-1-D2-q-z-B.json")).into_owned();
    let b = String::from_utf8_lossy(&golden("c1-D1-f1-memmove-4K-s.json")).into_owned();
    assert!(compare_json(&a, &a).is_ok());
    assert!(compare_json(&a, &b).unwrap_err().contains("num_threads"));
    let less: String = a
        .lines()
        .filter(|l| !l.contains("\"freq\""))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(compare_json(&less, &a).is_err());
}

#[test]
fn rtlab_oslat_gives_oslats_outputs_on_real_lines() {
    let test = test_name!();
    if !can_run(test) {
        return;
    }
    let _machine = fixtures::machine_shared();
    for line in LINES {
        let (ours_dir, theirs_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let theirs = run_real_oslat(&words(line.run, theirs_dir.path()), theirs_dir.path());
        let ours = run_rtlab_oslat(&words(line.run, ours_dir.path()), ours_dir.path());
        if let Err(e) = compare(line, (&ours, ours_dir.path()), (&theirs, theirs_dir.path())) {
            panic!("{e}");
        }
        // rtlab's own words (the counter it read) stay on stderr.
        let err = String::from_utf8_lossy(&ours.stderr);
        assert!(err.contains("rtlab oslat: thread on CPU"), "{err}");
        assert!(!String::from_utf8_lossy(&ours.stdout).contains("rtlab"));
    }
    fixtures::path_taken(
        test,
        &format!(
            "{} command lines: rtlab oslat's stdout and JSON have oslat's shape",
            LINES.len()
        ),
    );
}

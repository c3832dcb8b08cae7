//! `rtlab cyclictest` against the real cyclictest (Debian's rt-tests,
//! which `.ci/run` installs): the same command lines, taken from real
//! scripts and documents, run through both, and their outputs compared by
//! structure (line kinds with the numbers blanked, histogram rows, JSON
//! keys, exit statuses); then the parsers those scripts use read rtlab's
//! output. Needs root (the lines ask for FIFO priorities) and the machine
//! alone (both tools put a FIFO thread on every CPU).

use crate::fixtures::{self, text};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

/// A command line from a real script or document: where it comes from,
/// as written there, and as the test runs it (a bounded length instead of
/// hours, `{cpu}` a CPU of this machine, `{n}` its CPU count, `{cpus}`
/// its CPU list, `{dir}` the test's directory).
struct Line {
    source: &'static str,
    written: &'static str,
    run: &'static str,
}

const LINES: &[Line] = &[
    Line {
        source: "rteval, rteval/modules/measurement/cyclictest.py (its standard run)",
        written: "cyclictest -i100 -qmu -h 3500 -p95 -t<ncpu> -a<cpulist>",
        run: "-i100 -qmu -h 3500 -p95 -t{n} -a{cpus} -l 2000",
    },
    Line {
        source: "rteval, cyclictest.py with --cyclictest-default-system",
        written: "cyclictest -i100 -qmu -h 3500 -p95 -t<ncpu> -a<cpulist> --default-system",
        run: "-i100 -qmu -h 3500 -p95 -t{n} -a{cpus} --default-system -l 2000",
    },
    Line {
        source: "OSADL, mklatencyplot.bash (the latency plots of the QA farm)",
        written: "cyclictest -l100000000 -m -Sp90 -i200 -h400 -q",
        run: "-l2000 -m -Sp90 -i200 -h400 -q",
    },
    Line {
        source: "a Raspberry Pi latency-plot script (plot.bash, after OSADL's)",
        written: "cyclictest -l100000 -m -Sp90 -i200 -h400 -q >output",
        run: "-l2000 -m -Sp90 -i200 -h400 -q",
    },
    Line {
        source: "a periodic-scheduler README (`sudo apt install rt-tests` then)",
        written: "cyclictest -l100000 -m -S -p90 -i1000 -h1000 -q > output.txt",
        run: "-l300 -m -S -p90 -i1000 -h1000 -q",
    },
    Line {
        source: "Linaro test-definitions, automated/linux/cyclictest/cyclictest.sh",
        written: "cyclictest -q -p 98 -i 1000 -t 1 -a 0 -D 1m -m --json=<file>",
        run: "-q -p 98 -i 1000 -t 1 -a {cpu} -D 1 -m --json={dir}/out.json",
    },
    Line {
        source: "Linaro test-definitions, cyclictest.sh with its histogram option",
        written: "cyclictest -q -p 98 -i 1000 -t 1 -a 0 -D 1m -h 100 -m --json=<file>",
        run: "-q -p 98 -i 1000 -t 1 -a {cpu} -D 1 -h 100 -m --json={dir}/out.json",
    },
    Line {
        source: "rt-tests README",
        written: "cyclictest -a -t -p99",
        run: "-a -t -p99 -l 300",
    },
    Line {
        source: "Linux Foundation RT wiki, cyclictest page (the SMP test case); Ubuntu real-time docs",
        written: "cyclictest --mlockall --smp --priority=80 --interval=200 --distance=0",
        run: "--mlockall --smp --priority=80 --interval=200 --distance=0 --loops=1000",
    },
    Line {
        source: "pbench, agent/bench-scripts (parses `# Max Latencies:` field 4)",
        written: "cyclictest -m -n -q -p99 -h60 -D 1m",
        run: "-m -n -q -p99 -h60 -D 1",
    },
    Line {
        source: "container-perf-tools, cyclictest/cmd.sh",
        written: "cyclictest -q -D 24h -p 1 -t <n> -a <cpus> -h 30 -i 1000 --mainaffinity <c0> -m",
        run: "-q -D 1 -p 1 -t {n} -a {cpus} -h 30 -i 1000 --mainaffinity {cpu} -m",
    },
    Line {
        source: "Intel/Yocto real-time tutorial (fixed number of iterations)",
        written: "cyclictest -l 10000",
        run: "-l 300",
    },
    Line {
        source: "a load-test script (cyclictest in the background under stress)",
        written: "./cyclictest -l 10000 -t -p99 &",
        run: "-l 300 -t -p99",
    },
    Line {
        source: "RT notes (worst-case latency on CPU 0)",
        written: "cyclictest -l 10000 -m -n -a 0 -t 1 -p 99 -i 1000",
        run: "-l 300 -m -n -a {cpu} -t 1 -p 99 -i 1000",
    },
    Line {
        source: "a preflight script (`| grep \"Max Latencies\" | awk '{print $NF}'`)",
        written: "cyclictest -l5000 -m -n -a0 -t1 -p99 -i200 -q",
        run: "-l1000 -m -n -a{cpu} -t1 -p99 -i200 -q",
    },
    Line {
        source: "a kernel-tuning guide (`-l 100000 -m -S -p 99`)",
        written: "cyclictest -l 100000 -m -S -p 99",
        run: "-l 300 -m -S -p 99",
    },
    Line {
        source: "composed from cyclictest(8)'s options (not a quoted line): --histofall, a summary column",
        written: "cyclictest -m -p 90 -t 2 -H 50 -q",
        run: "-m -p 90 -t 2 -H 50 -q -l 300",
    },
    Line {
        source: "composed from cyclictest(8)'s options (not a quoted line): --histfile (the histogram in a file)",
        written: "cyclictest --mlockall --smp --priority=98 --histogram=1000 --histfile=output.txt",
        run: "--mlockall --smp --priority=98 --histogram=1000 --histfile={dir}/hist.txt -l 300",
    },
    Line {
        source: "composed from cyclictest(8)'s options (not a quoted line): --spike (record the spikes above a trigger)",
        written: "cyclictest -m -p 95 -q --spike=30",
        run: "-m -p 95 -q --spike=1 -l 200",
    },
    Line {
        source: "composed from cyclictest(8)'s options (not a quoted line): RR threads with spread priorities",
        written: "cyclictest --policy=rr -p 80 --priospread -t 2 -q",
        run: "--policy=rr -p 80 --priospread -t 2 -q -l 200",
    },
    Line {
        source: "composed from cyclictest(8)'s options (not a quoted line): -N (ns) and --laptop",
        written: "cyclictest -N -p 80 -q --laptop",
        run: "-N -p 80 -q --laptop -l 200",
    },
    Line {
        source: "composed from cyclictest(8)'s options (not a quoted line): SCHED_OTHER (no -p), live lines",
        written: "cyclictest -t 2 -i 500",
        run: "-t 2 -i 500 -l 200",
    },
    Line {
        source: "ChromiumOS, the audio latency test (parses the -v lines)",
        written: "cyclictest --verbose --distance=0 --policy=rr --interval=10000 --threads=N --loops=6000",
        run: "--verbose --distance=0 --policy=rr --interval=10000 --threads={n} --loops=60",
    },
    Line {
        source: "composed from cyclictest(8)'s options (not a quoted line): -M (redraw on a new maximum) and --latency",
        written: "cyclictest -M -p 80 --latency=10",
        run: "-M -p 80 --latency=10 -l 200",
    },
    Line {
        source: "a Japanese PREEMPT_RT article (30 s, one thread per core)",
        written: "sudo cyclictest -m -S -p90 -i1000 -D30s",
        run: "-m -S -p90 -i1000 -D1s",
    },
    Line {
        source: "a tool-comparison table (\"worst-case scheduler latency floor\")",
        written: "cyclictest -m -p90 -i1000 -l10000",
        run: "-m -p90 -i1000 -l300",
    },
    Line {
        source: "kernel notes on seqlock latency",
        written: "cyclictest -m -p 99 -t 4 -i 100 -l 10000",
        run: "-m -p 99 -t 4 -i 100 -l 1000",
    },
    Line {
        source: "an RT kernel setup guide (Chinese), the baseline check",
        written: "cyclictest -m -p 99 -i 1000 -l 100000",
        run: "-m -p 99 -i 1000 -l 300",
    },
    Line {
        source: "an ALSA audio machine's setup notes (realtime health)",
        written: "sudo cyclictest -m -p80 -n -i 200 -h 400 -l 100000",
        run: "-m -p80 -n -i 200 -h 400 -l 1000",
    },
    Line {
        source: "RT inference tuning notes (validation row)",
        written: "cyclictest -m -p99 -t8 -i200 -D24h",
        run: "-m -p99 -t8 -i200 -D1",
    },
    Line {
        source: "TI Processor SDK docs (cyclictest beside stress-ng)",
        written: "cyclictest -m -Sp80 -D6h -h400 -i200 -M -q",
        run: "-m -Sp80 -D1 -h400 -i200 -M -q",
    },
    Line {
        source: "a Raspberry Pi 4 audio-over-WiFi test plan",
        written: "cyclictest -m -S -p 95 -i 200 -d 0 -h 400",
        run: "-m -S -p 95 -i 200 -d 0 -h 400 -l 1000",
    },
];

/// The words of a line to run, with this machine's CPUs and `dir`.
fn words(run: &str, dir: &Path) -> Vec<String> {
    let cpus = fixtures::online_cpus();
    let list: Vec<String> = cpus.iter().map(ToString::to_string).collect();
    run.replace("{n}", &cpus.len().to_string())
        .replace("{cpus}", &list.join(","))
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

/// Line kinds in the order they first appear: redraws (`ESC[nA`) split,
/// runs of spaces and digits blanked to `N`, the overflow cycle lists
/// (how many depends on the run) reduced to their thread.
fn kinds(stdout: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(stdout);
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for line in text.split('\n').flat_map(|l| l.split("\x1b[")) {
        let line = strip_cursor_move(line);
        let mut kind = blank_numbers(line);
        if kind.starts_with("# ThreadN:") {
            kind = "# ThreadN:".into();
        }
        if seen.insert(kind.clone()) {
            out.push(kind);
        }
    }
    out
}

/// `4Apolicy: ...` (what follows `ESC[`) without its `4A`.
fn strip_cursor_move(s: &str) -> &str {
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    match s[digits..].strip_prefix('A') {
        Some(rest) if digits > 0 => rest,
        _ => s,
    }
}

fn blank_numbers(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    let mut pending_spaces = String::new();
    while let Some(c) = chars.next() {
        if c == ' ' {
            pending_spaces.push(c);
            continue;
        }
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|d| d.is_ascii_digit() || *d == '.')
            {
                chars.next();
            }
            pending_spaces.clear();
            if !out.ends_with('N') {
                out.push('N');
            }
            continue;
        }
        out.push_str(&pending_spaces);
        pending_spaces.clear();
        out.push(c);
    }
    out.push_str(pending_spaces.trim_end());
    out
}

/// The JSON document's shape: every key path with its value's type, the
/// histogram's buckets and the threads' numbers left out.
fn shape(v: &serde_json::Value, at: &str, out: &mut BTreeSet<String>) {
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
                continue;
            }
            let k = if at == ".thread" { "N" } else { k.as_str() };
            shape(v, &format!("{at}.{k}"), out);
        }
    }
}

fn json_shape(path: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    shape(&read_json(path), "", &mut out);
    out
}

/// cyclictest 2.4 no longer takes `-n` (it prints its help and measures
/// nothing); rtlab takes it as older versions did, so cyclictest runs the
/// line without it.
fn for_cyclictest(args: &[String]) -> Vec<String> {
    args.iter()
        .filter(|a| *a != "-n")
        .map(|a| a.replace("-n", ""))
        .collect()
}

/// `rtlab cyclictest LINE` in `dir` (`{dir}` and the CPUs filled in): its
/// output, after checking that it completed.
fn rtlab_ct(line: &str, dir: &Path) -> Output {
    let args = words(line, dir);
    let o = run_with(env!("CARGO_BIN_EXE_rtlab"), &["cyclictest"], &args, dir);
    assert_eq!(o.status.code(), Some(0), "{line}: {}", text(&o));
    o
}

fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

struct Both {
    rtlab: Output,
    cyclictest: Output,
    rtlab_dir: tempfile::TempDir,
    cyclictest_dir: tempfile::TempDir,
}

fn run_both(line: &Line) -> Both {
    let rtlab_dir = tempfile::tempdir().unwrap();
    let cyclictest_dir = tempfile::tempdir().unwrap();
    let ours = words(line.run, rtlab_dir.path());
    let theirs = for_cyclictest(&words(line.run, cyclictest_dir.path()));
    let cyclictest = run_with("cyclictest", &[], &theirs, cyclictest_dir.path());
    let rtlab = run_with(
        env!("CARGO_BIN_EXE_rtlab"),
        &["cyclictest"],
        &ours,
        rtlab_dir.path(),
    );
    Both {
        rtlab,
        cyclictest,
        rtlab_dir,
        cyclictest_dir,
    }
}

fn compare(line: &Line, both: &Both) {
    let what = format!("{} ({})\n  run: {}", line.written, line.source, line.run);
    let (r, c) = (&both.rtlab, &both.cyclictest);
    assert_eq!(
        r.status.code(),
        c.status.code(),
        "{what}\nrtlab: {}\ncyclictest: {}",
        text(r),
        text(c)
    );
    assert_eq!(
        kinds(&r.stdout),
        kinds(&c.stdout),
        "{what}\nrtlab: {}\ncyclictest: {}",
        text(r),
        text(c)
    );
    let rows = |o: &Output| {
        let s = String::from_utf8_lossy(&o.stdout).into_owned();
        s.lines()
            .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
            .count()
    };
    assert_eq!(rows(r), rows(c), "{what}: histogram rows");
    for file in ["out.json", "hist.txt"] {
        let (ours, theirs) = (
            both.rtlab_dir.path().join(file),
            both.cyclictest_dir.path().join(file),
        );
        assert_eq!(ours.exists(), theirs.exists(), "{what}: {file}");
        if !theirs.exists() {
            continue;
        }
        if file.ends_with(".json") {
            assert_eq!(json_shape(&ours), json_shape(&theirs), "{what}: {file}");
        } else {
            let read = |p: &Path| std::fs::read(p).unwrap();
            assert_eq!(kinds(&read(&ours)), kinds(&read(&theirs)), "{what}: {file}");
        }
    }
}

#[test]
fn real_command_lines_give_cyclictests_outputs() {
    if !fixtures::has_command("cyclictest") {
        fixtures::path_taken(
            "real_command_lines_give_cyclictests_outputs",
            "no cyclictest on this machine: nothing to compare with (.ci/run installs rt-tests)",
        );
        return;
    }
    if !fixtures::root_or_refusal("real_command_lines_give_cyclictests_outputs") {
        return;
    }
    let _machine = fixtures::machine_exclusive();
    // At least twenty quoted from real scripts and documents, beside the
    // lines composed to cover more options.
    let quoted = LINES
        .iter()
        .filter(|l| !l.source.starts_with("composed"))
        .count();
    assert!(quoted >= 20, "{quoted} quoted lines");
    for line in LINES {
        let both = run_both(line);
        compare(line, &both);
    }
}

/// The histogram rows of a cyclictest output, as rteval reads them: `#`
/// lines skipped (rteval keeps `# Break value:` and `# Max Latencies:`),
/// every other line split on white space, the first word the bucket and
/// word i + 1 the count of CPU i.
fn rteval_buckets(stdout: &str, threads: usize) -> Vec<Vec<(u64, u64)>> {
    let mut per_thread = vec![Vec::new(); threads];
    for line in stdout.lines().filter(|l| !l.starts_with('#')) {
        let vals: Vec<&str> = line.split_whitespace().collect();
        let Some(Ok(bucket)) = vals.first().map(|v| v.parse::<u64>()) else {
            continue;
        };
        for (i, counts) in per_thread.iter_mut().enumerate() {
            let n: u64 = vals[i + 1].parse().expect("a count per thread");
            if n > 0 {
                counts.push((bucket, n));
            }
        }
    }
    per_thread
}

/// The numbers of a `# NAME:` line.
fn hash_line(stdout: &str, name: &str) -> Vec<u64> {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(&format!("# {name}:")))
        .unwrap_or_else(|| panic!("no `# {name}:` line in\n{stdout}"));
    line.split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect()
}

fn sh(script: &str, dir: &Path) -> String {
    let o = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{script}: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn the_parsers_of_real_scripts_read_rtlabs_output() {
    if !fixtures::root_or_refusal("the_parsers_of_real_scripts_read_rtlabs_output") {
        return;
    }
    let _machine = fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let n = fixtures::online_cpus().len();
    let loops = 2000u64;
    // OSADL's mklatencyplot.bash, its shell lines as they are.
    let o = rtlab_ct(&format!("-l{loops} -m -Sp90 -i200 -h400 -q"), dir.path());
    std::fs::write(dir.path().join("output"), &o.stdout).unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let max = sh(
        r#"grep "Max Latencies" output | tr " " "\n" | sort -n | tail -1 | sed s/^0*//"#,
        dir.path(),
    );
    let maxima = hash_line(&stdout, "Max Latencies");
    assert_eq!(
        max.trim().parse::<u64>().unwrap(),
        *maxima.iter().max().unwrap()
    );
    let rows = sh(
        r#"grep -v -e "^#" -e "^$" output | tr " " "\t""#,
        dir.path(),
    );
    assert_eq!(rows.lines().count(), 400, "one row per µs bucket");
    assert!(
        rows.lines().all(|l| l.split('\t').count() == n + 1),
        "{rows}"
    );
    // rteval's reading of the same output: each thread's buckets and
    // overflows make its loops; the extremes bound the buckets.
    let totals = hash_line(&stdout, "Total");
    let overflows = hash_line(&stdout, "Histogram Overflows");
    let minima = hash_line(&stdout, "Min Latencies");
    for (i, buckets) in rteval_buckets(&stdout, n).iter().enumerate() {
        let inside: u64 = buckets.iter().map(|b| b.1).sum();
        assert_eq!(inside, totals[i], "thread {i}");
        if i == 0 {
            assert_eq!(inside + overflows[i], loops, "thread 0 takes -l samples");
        }
        if let (Some(first), Some(last)) = (buckets.first(), buckets.last()) {
            assert!(
                minima[i] <= first.0 && last.0 <= maxima[i],
                "thread {i}: {buckets:?}"
            );
        }
    }
    // pbench (`# Max Latencies:` field 4) and a preflight script ($NF).
    let field4 = sh(
        r#"grep "Max Latencies" output | awk '{print $4}'"#,
        dir.path(),
    );
    assert_eq!(field4.trim().parse::<u64>().unwrap(), maxima[0]);
}

/// Linaro's parser reads the JSON document: num_threads and each thread's
/// min, avg and max, the same figures as the histogram block.
#[test]
fn linaros_json_reading_agrees_with_the_histogram() {
    if !fixtures::root_or_refusal("linaros_json_reading_agrees_with_the_histogram") {
        return;
    }
    let _machine = fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let loops = 2000u64;
    // Linaro's parser reads the JSON document: num_threads and each
    // thread's min, avg and max, the same figures as the histogram.
    let o = rtlab_ct(
        &format!("-q -p 98 -i 1000 -t 2 -h 200 -l {loops} -m --json={{dir}}/out.json"),
        dir.path(),
    );
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let doc = read_json(&dir.path().join("out.json"));
    assert_eq!(doc["num_threads"], 2);
    assert_eq!(doc["return_code"], 0);
    let maxima = hash_line(&stdout, "Max Latencies");
    let minima = hash_line(&stdout, "Min Latencies");
    for i in 0..2 {
        let t = &doc["thread"][i.to_string()];
        assert_eq!(t["max"], maxima[i]);
        assert_eq!(t["min"], minima[i]);
        let avg = t["avg"].as_f64().unwrap();
        assert!(minima[i] as f64 <= avg && avg <= maxima[i] as f64, "{t}");
        let in_json: u64 = t["histogram"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(in_json, hash_line(&stdout, "Total")[i]);
    }
    assert_eq!(doc["thread"]["0"]["cycles"], loops);
}

/// ChromiumOS's audio test reads the -v lines.
#[test]
fn chromiumos_verbose_reading_gets_every_sample() {
    if !fixtures::root_or_refusal("chromiumos_verbose_reading_gets_every_sample") {
        return;
    }
    let _machine = fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    // ChromiumOS's audio test: the -v lines by its regular expression,
    // every sample of every thread, their extremes those of the JSON.
    let o = rtlab_ct(
        "-v -q --policy=rr -p 80 -i 1000 -t 2 -l 500 --json={dir}/v.json",
        dir.path(),
    );
    let doc = read_json(&dir.path().join("v.json"));
    let mut per_thread = vec![Vec::new(); 2];
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        if let Some(v) = verbose_line(line) {
            assert_eq!(
                v[1],
                per_thread[v[0] as usize].len() as u64,
                "cycles in order"
            );
            per_thread[v[0] as usize].push(v[2]);
        }
    }
    for (i, samples) in per_thread.iter().enumerate() {
        let t = &doc["thread"][i.to_string()];
        assert_eq!(samples.len(), 500, "thread {i}");
        assert_eq!(
            samples.iter().max().copied(),
            t["max"].as_u64(),
            "thread {i}"
        );
        assert_eq!(
            samples.iter().min().copied(),
            t["min"].as_u64(),
            "thread {i}"
        );
    }
}

/// A `-v` line as ChromiumOS matches it, `^[ \t]+\d+:[ \t]+\d+:[ \t]*\d+$`:
/// thread, cycle, latency.
fn verbose_line(line: &str) -> Option<[u64; 3]> {
    let fields: Vec<&str> = line.split(':').collect();
    if fields.len() != 3 {
        return None;
    }
    let mut out = [0; 3];
    for (i, f) in fields.iter().enumerate() {
        let digits = f.trim_start_matches([' ', '\t']);
        let blank_before = digits.len() < f.len();
        if (i < 2 && !blank_before)
            || digits.is_empty()
            || !digits.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        out[i] = digits.parse().ok()?;
    }
    Some(out)
}

/// `-v`'s lines other than the samples (`Using N cpus.` before and after
/// the CPU counts, `Thread N using cpu C.` before each interval, the PM QoS
/// line, and with `-q` the closing `T:` lines after the samples) are
/// cyclictest's, word for word and in its order, on stdout; the samples
/// are as many. The placements compared: `-a LIST` after `-v`
/// (cyclictest says `Using` twice) and before it (once), `-a` alone and
/// `-S` (no word about the CPUs).
#[test]
fn verbose_header_lines_are_cyclictests() {
    let name = "verbose_header_lines_are_cyclictests";
    if !fixtures::has_command("cyclictest") {
        fixtures::path_taken(
            name,
            "no cyclictest on this machine: nothing to compare with",
        );
        return;
    }
    if !fixtures::root_or_refusal(name) {
        return;
    }
    let _machine = fixtures::machine_exclusive();
    let lines = [
        "-v -a {cpus} -t {n} -l 3 -m -p 80",
        "-v -a {cpu} -t 2 -l 3 -p 80",
        "-a {cpu} -v -l 3 -p 80",
        "-v -a -t -l 3 -p 80",
        "-v -S -l 3 -p 80 -q",
    ];
    let split = |o: &Output| {
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        let (samples, other): (Vec<&str>, Vec<&str>) =
            text.lines().partition(|l| verbose_line(l).is_some());
        // The closing `T:` lines of -q: their figures are the run's.
        let other: Vec<String> = other
            .iter()
            .map(|l| {
                if l.starts_with("T:") {
                    blank_numbers(l)
                } else {
                    l.to_string()
                }
            })
            .collect();
        (samples.len(), other)
    };
    for line in lines {
        let both = run_both(&Line {
            source: "composed: -v with the CPU placements",
            written: line,
            run: line,
        });
        let (r, c) = (&both.rtlab, &both.cyclictest);
        assert_eq!(r.status.code(), c.status.code(), "{line}: {}", text(r));
        assert_eq!(
            split(r),
            split(c),
            "{line}\nrtlab: {}\ncyclictest: {}",
            text(r),
            text(c)
        );
    }
}

/// Options rtlab does not do are refused before anything starts, with the
/// option named; never ignored.
#[test]
fn options_rtlab_does_not_do_are_refused_by_name() {
    let cases: [(&str, &[&str]); 5] = [
        // cyclictest(8)'s example line.
        (
            "--secaligned",
            &[
                "--default-system",
                "--secaligned",
                "--interval=250",
                "--smp",
                "--priority=98",
            ],
        ),
        // -v prints the samples at the end: a bounded run only.
        (
            "-v needs -l",
            &[
                "--verbose",
                "--distance=0",
                "--policy=rr",
                "--interval=10000",
            ],
        ),
        ("-x/--posix_timers", &["-x", "-p", "80"]),
        ("--bogus", &["--bogus"]),
        ("-N with -h", &["-N", "-h", "100"]),
    ];
    for (named, args) in cases {
        let dir = tempfile::tempdir().unwrap();
        let o = fixtures::rtlab_in(dir.path(), &[&["cyclictest"], args].concat());
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains(named), "{args:?}: {stderr}");
        assert!(o.stdout.is_empty(), "{args:?}: {}", text(&o));
    }
}

/// rteval's run with its loads, from rtlab alone: the built-in standard
/// mix (and stress-ng's, where it is installed) loads the machine while
/// rteval's cyclictest line measures; each load printed its throughput,
/// none outlives the run, and rteval's reading of the output holds.
#[test]
fn an_rteval_like_loaded_run_needs_nothing_but_rtlab() {
    if !fixtures::root_or_refusal("an_rteval_like_loaded_run_needs_nothing_but_rtlab") {
        return;
    }
    let _machine = fixtures::machine_exclusive();
    let n = fixtures::online_cpus().len();
    let mut mixes = vec!["standard"];
    if fixtures::has_command("stress-ng") {
        mixes.push("stress-ng");
    } else {
        fixtures::path_taken(
            "an_rteval_like_loaded_run_needs_nothing_but_rtlab",
            "no stress-ng here: the standard mix only",
        );
    }
    for mix in mixes {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        // 2 s: a load stopped before it has set its own SIGTERM handler
        // (a start slowed by the other loads) ends without its totals; 0.5 s
        // left the memory load's file empty once in CI.
        let line = format!(
            "-i100 -qmu -h 3500 -p95 -t{{n}} -a{{cpus}} -l 20000 --rtlab-load {mix} --rtlab-outdir {{dir}}/out"
        );
        let o = rtlab_ct(&line, dir.path());
        let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
        let totals = hash_line(&stdout, "Total");
        let overflows = hash_line(&stdout, "Histogram Overflows");
        let buckets = rteval_buckets(&stdout, n);
        assert_eq!(
            buckets[0].iter().map(|b| b.1).sum::<u64>() + overflows[0],
            20000
        );
        assert_eq!(buckets.len(), totals.len());
        let outputs: Vec<_> = std::fs::read_dir(dir.path().join("out"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("load-"))
            .collect();
        let expected = if mix == "standard" { 6 } else { 1 };
        assert_eq!(outputs.len(), expected, "{mix}: {outputs:?}");
        for f in &outputs {
            let text = std::fs::read_to_string(f.path()).unwrap();
            if mix == "standard" {
                // Stopped by the end of the run (SIGTERM): its total said.
                assert!(
                    text.contains(": total ") && text.contains(": kernel: "),
                    "{f:?}: {text}"
                );
            }
        }
        // The io load's directory is gone, and no load outlives the run.
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("rtlab-load-io"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        let ps = Command::new("pgrep")
            .args(["-f", "rtlab load|stress-ng"])
            .output()
            .unwrap();
        assert!(
            ps.stdout.is_empty(),
            "{mix}: left {}",
            String::from_utf8_lossy(&ps.stdout)
        );
    }
}

/// `-b`: cyclictest stops at the first wake-up later than the break value;
/// rtlab goes on, explains (where it can trace) and prints the `-b` lines
/// of the first such wake-up, the one its JSON result keeps first.
#[test]
fn breaktrace_lines_name_the_first_late_wake_up_and_the_run_goes_on() {
    if !fixtures::root_or_refusal(
        "breaktrace_lines_name_the_first_late_wake_up_and_the_run_goes_on",
    ) {
        return;
    }
    let _machine = fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let o = rtlab_ct(
        "-q -p 90 -a {cpu} -t 1 -i 500 -l 400 -b 1 --tracemark --rtlab-json {dir}/r.json",
        dir.path(),
    );
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let r = read_json(&dir.path().join("r.json"));
    let t = &r["timers"][0];
    // The run went on to its 400 samples.
    assert_eq!(t["summary"]["samples"], 400, "{stdout}");
    let tid = t["tid"].as_u64().unwrap();
    assert_eq!(hash_line(&stdout, "Thread Ids"), [tid]);
    let late: Vec<&serde_json::Value> = t["spikes"]["over_threshold"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["latency_ns"].as_u64().unwrap() / 1000 > 1)
        .collect();
    let first = late.iter().min_by_key(|s| s["sample"].as_u64().unwrap());
    match first {
        Some(s) => {
            assert_eq!(hash_line(&stdout, "Break thread"), [tid]);
            let value = s["latency_ns"].as_u64().unwrap() / 1000;
            assert_eq!(hash_line(&stdout, "Break value"), [value]);
        }
        None => assert!(!stdout.contains("# Break thread:"), "{stdout}"),
    }
    let stderr = String::from_utf8_lossy(&o.stderr);
    let traced = r["trace"].is_object() && r["trace"]["unavailable"].is_null();
    fixtures::path_taken(
        "breaktrace_lines_name_the_first_late_wake_up_and_the_run_goes_on",
        if traced {
            "traced: the flight recorder explained the late wake-ups"
        } else {
            "no trace here: the -b lines from the kept wake-ups"
        },
    );
    if traced {
        assert!(stderr.contains("Why late"), "{stderr}");
    }
    // The windows go in rtlab-spikes/ of the current directory (no
    // --rtlab-outdir), none beside it.
    for e in r["trace"]["explanations"].as_array().into_iter().flatten() {
        let f = e["trace_file"].as_str().unwrap();
        assert!(f.starts_with("rtlab-spikes/"), "{e}");
        assert!(dir.path().join(f).is_file(), "{f}");
    }
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.starts_with("rtlab-spike-"), "{name}");
    }
}

/// Installed under the name `cyclictest`, rtlab is the front end.
#[test]
fn rtlab_called_cyclictest_is_the_front_end() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("cyclictest");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_rtlab"), &link).unwrap();
    let o = Command::new(&link)
        .args(["-x", "-p", "80"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("rtlab cyclictest: -x/--posix_timers"),
        "{}",
        text(&o)
    );
    let o = Command::new(&link).arg("--help").output().unwrap();
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout).contains("--histofall"),
        "{}",
        text(&o)
    );
}

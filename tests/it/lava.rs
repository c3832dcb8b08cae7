//! `rtlab lava` and `contrib/lava` against Linaro's reading of cyclictest:
//! the test cases Linaro's rt-tests parser makes of cyclictest's text (its
//! `MAX_LATENCY` era, before test-definitions' commit fd3a2149 of 2020),
//! implemented here on its own from its rules, compared with `rtlab lava
//! --max-latency` over the same run: the real cyclictest's `--json` file,
//! and rtlab's `--rtlab-json`; and the parser as it is today, run by
//! python3 (tests/support/linaro), compared byte for byte with `rtlab
//! lava` on the same files. Then the test definition run as LAVA runs it, with a
//! fake `lava-test-case`, and hostile inputs. The measuring tests need root
//! and the machine alone (FIFO threads on every CPU).

use crate::fixtures::{self, text};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// The lines Linaro's parser printed for cyclictest's text with
/// `MAX_LATENCY` `limit`: the last non-empty block of the output (blocks
/// start at an ESC byte, their escape sequence ending at its first `A`;
/// without one, the whole text), each line starting `T:` split on runs of
/// space, `:` and newline, words lowercased, the word after each of `t`,
/// `min`, `avg`, `max` taken; then `t{t}-{key}-latency {label} {value} us`
/// for min, avg and max, the label `fail` only for a max whose integer is
/// at or above the limit's.
fn linaro_cases(text: &str, limit: i64) -> Vec<String> {
    let mut out = Vec::new();
    for line in last_block(text).split('\n') {
        if !line.starts_with("T:") {
            continue;
        }
        let words: Vec<String> = line
            .split([' ', ':', '\n'])
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let mut found = std::collections::HashMap::new();
        let mut it = words.iter();
        while let Some(w) = it.next() {
            if ["t", "min", "avg", "max"].contains(&w.as_str()) {
                let value = it.next().unwrap_or_else(|| panic!("{line:?}: {w} ends it"));
                found.insert(w.clone(), value.clone());
            }
        }
        for key in ["min", "avg", "max"] {
            let value = &found[key];
            let over = value.parse::<i64>().expect("an integer") >= limit;
            let label = if key == "max" && over { "fail" } else { "pass" };
            out.push(format!("t{}-{key}-latency {label} {value} us", found["t"]));
        }
    }
    out
}

/// The block Linaro's parser reads: the last one with more than newlines.
fn last_block(text: &str) -> &str {
    let mut blocks: Vec<&str> = text.split('\x1b').skip(1).collect();
    while let Some(block) = blocks.pop() {
        let body = &block[block.find('A').map_or(0, |a| a + 1)..];
        if !body.trim_matches('\n').is_empty() {
            return body;
        }
    }
    text
}

#[test]
fn linaros_reading_is_implemented_as_it_was() {
    // A redrawn run: the last block counts, its escape sequence dropped.
    let text = "policy: fifo\n\x1b[2A\nT: 0 ( 11) P:98 I:1000 C: 5 Min: 9 Act: 9 Avg: 9 Max: 99\n\
                \x1b[2A\nT: 0 ( 11) P:98 I:1000 C: 9 Min: 2 Act: 3 Avg: 3 Max: 23\n\
                T:10 ( 12) P:98 I:1500 C: 6 Min: 4 Act: 5 Avg: 6 Max: 50\n\x1b[2A\n\n";
    assert_eq!(
        linaro_cases(text, 50),
        [
            "t0-min-latency pass 2 us",
            "t0-avg-latency pass 3 us",
            "t0-max-latency pass 23 us",
            "t10-min-latency pass 4 us",
            "t10-avg-latency pass 6 us",
            "t10-max-latency fail 50 us",
        ]
    );
}

/// `rtlab lava FILE --max-latency LIMIT`, printing only: its lines and
/// its exit status.
fn rtlab_lava(file: &Path, limit: Option<u64>) -> (Vec<String>, Option<i32>) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rtlab"));
    cmd.arg("lava")
        .arg(file)
        .args(["--lava-test-case", "never"]);
    if let Some(l) = limit {
        cmd.args(["--max-latency", &l.to_string()]);
    }
    let o = cmd.env_remove("LAVA_RESULT_DIR").output().unwrap();
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("panicked"),
        "{}",
        text(&o)
    );
    let lines = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    (lines, o.status.code())
}

/// Thresholds that make both verdicts, from the run's own figures: at
/// thread 0's max (failed by `>=`), above every max, below every min.
fn thresholds(cases: &[String]) -> Vec<u64> {
    let figure = |kind: &str| -> Vec<u64> {
        cases
            .iter()
            .filter(|l| l.contains(&format!("-{kind}-latency ")))
            .map(|l| l.split(' ').nth(2).unwrap().parse().unwrap())
            .collect()
    };
    let (minima, maxima) = (figure("min"), figure("max"));
    let lowest = *minima.iter().min().unwrap();
    vec![maxima[0], maxima.iter().max().unwrap() + 1, lowest]
}

/// Name, verdict and figure of a line.
fn parts(line: &str) -> (&str, &str, &str) {
    let w: Vec<&str> = line.split(' ').collect();
    assert_eq!(w.len(), 4, "{line:?}");
    assert_eq!(w[3], "us", "{line:?}");
    (w[0], w[1], w[2])
}

/// Runs `program args` in `dir` (rtlab's journal there), within a minute.
fn run_in(dir: &Path, program: &str, args: &[&str]) -> Output {
    let child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("RTLAB_JOURNAL_DIR", dir.join("journal"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    fixtures::wait_output_within(child, Duration::from_secs(60))
}

#[test]
fn the_real_cyclictests_run_gives_linaros_cases_and_verdicts() {
    let name = test_name!();
    if !fixtures::has_command("cyclictest") {
        fixtures::path_taken(name, "no cyclictest here (.ci/run installs rt-tests)");
        return;
    }
    if !fixtures::root_or_refusal(name) {
        return;
    }
    let _machine = fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("ct.json");
    let json_arg = format!("--json={}", json.display());
    let args = [
        "-q", "-p", "98", "-i", "1000", "-t", "2", "-a", "-D", "3", "-m", &json_arg,
    ];
    let o = run_in(dir.path(), "cyclictest", &args);
    if !o.status.success() || !json.exists() {
        fixtures::path_taken(name, &format!("cyclictest refused to run: {}", text(&o)));
        return;
    }
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let unjudged = linaro_cases(&stdout, i64::MAX);
    assert_eq!(unjudged.len(), 6, "two threads: {stdout}");
    todays_parser_agrees(name, &json, &[&json]);
    // cyclictest's own two outputs may disagree: its text's last `T:` line
    // can count one wake-up more than its JSON (C: 2859 against cycles
    // 2858, Max 499890 against 4910, seen once on a loaded machine). rtlab
    // reads the JSON; then it is held to the JSON's figures alone.
    if let Some(differs) = text_and_json_differ(&unjudged, &doc) {
        json_figures_only(&json, &unjudged, &doc);
        fixtures::path_taken(
            name,
            &format!("cyclictest's text and JSON disagree ({differs}): rtlab held to its JSON"),
        );
        return;
    }
    for limit in thresholds(&unjudged) {
        let theirs = linaro_cases(&stdout, limit as i64);
        let (ours, status) = rtlab_lava(&json, Some(limit));
        assert_eq!(ours.len(), theirs.len(), "{ours:?}\n{theirs:?}");
        for (a, b) in ours.iter().zip(&theirs) {
            let ((name_a, verdict_a, v_a), (name_b, verdict_b, v_b)) = (parts(a), parts(b));
            assert_eq!((name_a, verdict_a), (name_b, verdict_b), "limit {limit}");
            if name_a.ends_with("-avg-latency") {
                same_avg(name_a, v_a, v_b, &doc);
            } else {
                assert_eq!(v_a, v_b, "limit {limit}: {a} against {b}");
            }
        }
        let failed = theirs.iter().any(|l| l.contains(" fail "));
        assert_eq!(status, Some(if failed { 6 } else { 0 }), "limit {limit}");
    }
}

/// Without a threshold `rtlab lava` prints what Linaro's parser as it is
/// today (tests/support/linaro) prints of the rt-tests JSON file `json`,
/// byte for byte, for each of `files` (that file, or rtlab's result of the
/// same run); where python3 is missing, the names and verdicts it gives.
fn todays_parser_agrees(test: &str, json: &Path, files: &[&Path]) {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let theirs = if fixtures::has_command("python3") {
        let parser = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/support/linaro/parse_rt_tests_results.py");
        let o = Command::new("python3")
            .arg(parser)
            .arg("cyclictest")
            .arg(json)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        Some(o.stdout)
    } else {
        fixtures::path_taken(
            test,
            "no python3: Linaro's parser not run, its names checked",
        );
        None
    };
    for file in files {
        let o = Command::new(env!("CARGO_BIN_EXE_rtlab"))
            .arg("lava")
            .arg(file)
            .args(["--lava-test-case", "never"])
            .env_remove("LAVA_RESULT_DIR")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        match &theirs {
            Some(theirs) => assert_eq!(
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(theirs),
                "{}",
                file.display()
            ),
            None => {
                let threads = doc["num_threads"].as_u64().unwrap();
                let mut names: Vec<String> = (0..threads)
                    .flat_map(|t| ["min", "avg", "max"].map(|k| format!("t{t}-{k}-latency pass")))
                    .collect();
                names.push("cyclictest pass".into());
                let ours: Vec<String> = String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .map(|l| l.split(' ').take(2).collect::<Vec<_>>().join(" "))
                    .collect();
                assert_eq!(ours, names, "{}", file.display());
            }
        }
    }
    if theirs.is_some() {
        fixtures::path_taken(
            test,
            &format!(
                "Linaro's parser run: the same bytes from {} files",
                files.len()
            ),
        );
    }
}

/// Where cyclictest's text (Linaro's cases of it) and its JSON give a
/// thread another min or max.
fn text_and_json_differ(cases: &[String], doc: &serde_json::Value) -> Option<String> {
    cases.iter().find_map(|line| {
        let (case, _, v) = parts(line);
        let tid = case.trim_start_matches('t').split('-').next()?;
        let key = case.split('-').nth(1)?;
        let json = doc["thread"][tid][key].as_f64()? as u64;
        (key != "avg" && v.parse::<u64>().ok()? != json)
            .then(|| format!("{case}: text {v}, JSON {json}"))
    })
}

/// rtlab's cases of cyclictest's JSON against the JSON's own figures.
fn json_figures_only(json: &Path, cases: &[String], doc: &serde_json::Value) {
    for limit in thresholds(cases) {
        let (ours, status) = rtlab_lava(json, Some(limit));
        let mut failed = false;
        for line in &ours {
            let (case, verdict, v) = parts(line);
            let tid = case.trim_start_matches('t').split('-').next().unwrap();
            let key = case.split('-').nth(1).unwrap();
            let figure = doc["thread"][tid][key].as_f64().unwrap() as u64;
            assert_eq!(
                v.parse::<u64>().unwrap(),
                figure,
                "{line}: its JSON {figure}"
            );
            let fail = key == "max" && figure >= limit;
            failed |= fail;
            let want = if fail { "fail" } else { "pass" };
            assert_eq!(verdict, want, "{line}, limit {limit}");
        }
        assert_eq!(status, Some(if failed { 6 } else { 0 }), "limit {limit}");
    }
}

/// rtlab's avg from cyclictest's JSON is the JSON's two-decimal mean
/// truncated; the text's is the exact mean truncated. They differ only when
/// the mean sits within 0.005 µs below a whole µs, which the JSON rounds up
/// to `N.00` (docs/lava.md).
fn same_avg(name: &str, ours: &str, text: &str, doc: &serde_json::Value) {
    let tid = name.trim_start_matches('t').split('-').next().unwrap();
    let json_avg = doc["thread"][tid]["avg"].as_f64().unwrap();
    let (ours, text): (u64, u64) = (ours.parse().unwrap(), text.parse().unwrap());
    assert_eq!(ours, json_avg as u64, "{name}: JSON avg {json_avg}");
    assert!(
        ours == text || (ours == text + 1 && json_avg.fract() == 0.0),
        "{name}: rtlab {ours}, cyclictest's text {text}, its JSON {json_avg}"
    );
}

#[test]
fn rtlabs_own_run_gives_the_cases_linaro_reads_in_its_text() {
    let name = test_name!();
    if !fixtures::root_or_refusal(name) {
        return;
    }
    let _machine = fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let result = dir.path().join("r.json");
    let json = dir.path().join("ct.json");
    let args = [
        "cyclictest",
        "-q",
        "-p",
        "98",
        "-i",
        "1000",
        "-t",
        "2",
        "-a",
        "-D",
        "2",
        "-m",
        "--json",
        json.to_str().unwrap(),
        "--rtlab-json",
        result.to_str().unwrap(),
    ];
    let o = run_in(dir.path(), env!("CARGO_BIN_EXE_rtlab"), &args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let unjudged = linaro_cases(&stdout, i64::MAX);
    assert_eq!(unjudged.len(), 6, "two threads: {stdout}");
    for limit in thresholds(&unjudged) {
        // The same figures, truncated alike: the very same lines.
        let (ours, status) = rtlab_lava(&result, Some(limit));
        let theirs = linaro_cases(&stdout, limit as i64);
        assert_eq!(ours, theirs, "limit {limit}");
        let failed = theirs.iter().any(|l| l.contains(" fail "));
        assert_eq!(status, Some(if failed { 6 } else { 0 }), "limit {limit}");
    }
    // Its cyclictest JSON and its own result: today's parser's lines.
    todays_parser_agrees(name, &json, &[&json, &result]);
}

/// The directory `rtlab-cyclictest.sh` looks in for this machine's rtlab
/// (`uname -m` as the script maps it).
fn arch_dir() -> &'static str {
    match std::env::consts::ARCH {
        "arm" => "armv7",
        other => other,
    }
}

/// A copy of `contrib/lava` in `root/contrib/lava`, with this rtlab as its
/// one artifact in `bin/ARCH/rtlab`.
fn test_definition(root: &Path) -> PathBuf {
    let def = root.join("contrib/lava");
    std::fs::create_dir_all(def.join("bin").join(arch_dir())).unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/lava");
    for file in ["rtlab-cyclictest.yaml", "rtlab-cyclictest.sh"] {
        std::fs::copy(source.join(file), def.join(file)).unwrap();
    }
    let bin = def.join("bin").join(arch_dir()).join("rtlab");
    std::fs::copy(env!("CARGO_BIN_EXE_rtlab"), bin).unwrap();
    def
}

/// A fake `lava-test-case` in `dir`: each call's arguments on a line of
/// `calls`, separated by the unit separator.
fn fake_helper(dir: &Path, calls: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let helper = dir.join("lava-test-case");
    let script = format!(
        "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\037' \"$a\"; done >> '{}'\necho >> '{}'\n\
         echo \"<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=$1>\"\n",
        calls.display(),
        calls.display()
    );
    std::fs::write(&helper, script).unwrap();
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The calls the fake helper recorded.
fn recorded(calls: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(calls)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            l.split('\x1f')
                .filter(|a| !a.is_empty())
                .map(str::to_string)
                .collect()
        })
        .collect()
}

/// The test definition's parameters (`params:`), as `KEY` and value.
fn params(yaml: &str) -> Vec<(String, String)> {
    let start = yaml.find("\nparams:\n").expect("a params: section");
    let end = yaml.find("\nrun:\n").expect("a run: section");
    yaml[start..end]
        .lines()
        .filter_map(|l| {
            let (key, value) = l.strip_prefix("    ")?.split_once(": ")?;
            let value = value.strip_prefix('"')?.strip_suffix('"')?;
            Some((key.to_string(), value.to_string()))
        })
        .collect()
}

/// LAVA's run.sh for the definition (lava_dispatcher's testdef.py): the
/// definition's parameters then the job's as `KEY='value'` lines, `set
/// -e`, a `cd` to the repository's root, then the definition's steps.
fn lava_run_sh(root: &Path, yaml: &str, job: &[(&str, &str)]) -> String {
    let mut sh = String::new();
    for (k, v) in params(yaml) {
        sh.push_str(&format!("{k}='{v}'\n"));
    }
    for (k, v) in job {
        sh.push_str(&format!("{k}='{v}'\n"));
    }
    sh.push_str(&format!("set -e\ncd '{}'\n", root.display()));
    let steps = &yaml[yaml.find("    steps:\n").expect("run steps")..];
    for step in steps
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("- "))
    {
        sh.push_str(step);
        sh.push('\n');
    }
    sh
}

#[test]
fn the_test_definition_reports_through_lava_test_case_what_linaro_would() {
    let name = test_name!();
    if !fixtures::root_or_refusal(name) {
        return;
    }
    let _machine = fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let def = test_definition(&root);
    let calls = dir.path().join("calls");
    fake_helper(&dir.path().join("helpers"), &calls);
    let pids = dir.path().join("background.pids");
    // rtlab's CPU load, by $RTLAB, after saying who it is: it must be gone
    // afterwards.
    let background = format!(
        "echo $$ >> {}; exec \"$RTLAB\" load cpu --threads 1",
        pids.display()
    );
    let yaml = std::fs::read_to_string(def.join("rtlab-cyclictest.yaml")).unwrap();
    let job = [
        ("DURATION", "2"),
        ("THREADS", "2"),
        ("AFFINITY", ""),
        ("MAX_LATENCY", "50"),
        ("BACKGROUND_CMD", background.as_str()),
    ];
    let run_sh = dir.path().join("run.sh");
    std::fs::write(&run_sh, lava_run_sh(&root, &yaml, &job)).unwrap();
    let path = format!(
        "{}:{}",
        dir.path().join("helpers").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut sh = Command::new("sh");
    sh.arg(&run_sh)
        .env("PATH", path)
        .env("LAVA_RESULT_DIR", dir.path().join("lava-results"))
        .env("RTLAB_JOURNAL_DIR", dir.path().join("journal"));
    let o = output_in_files(sh, dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    check_cases_and_calls(&stdout, &recorded(&calls), 50);
    background_was_stopped(&pids, &def, &o);
}

/// Runs `cmd` with its stdout and stderr in files of `dir` (a background
/// process left holding a pipe would keep a reader waiting), within two
/// minutes.
fn output_in_files(mut cmd: Command, dir: &Path) -> Output {
    let (out, err) = (dir.join("stdout"), dir.join("stderr"));
    let child = cmd
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let status = fixtures::wait_output_within(child, Duration::from_secs(120)).status;
    Output {
        status,
        stdout: std::fs::read(out).unwrap_or_default(),
        stderr: std::fs::read(err).unwrap_or_default(),
    }
}

/// The case lines of the definition's output are Linaro's reading of its
/// `T:` lines, and the helper was called once for each, in order, with the
/// line's words as separate arguments.
fn check_cases_and_calls(stdout: &str, calls: &[Vec<String>], limit: i64) {
    let cases: Vec<&str> = stdout.lines().filter(|l| l.contains("-latency ")).collect();
    assert_eq!(cases, linaro_cases(stdout, limit), "{stdout}");
    assert_eq!(cases.len(), 6, "two threads: {stdout}");
    let expected: Vec<Vec<String>> = cases
        .iter()
        .map(|l| {
            let (name, verdict, value) = parts(l);
            [
                name,
                "--result",
                verdict,
                "--measurement",
                value,
                "--units",
                "us",
            ]
            .map(str::to_string)
            .to_vec()
        })
        .collect();
    assert_eq!(calls, expected.as_slice(), "{stdout}");
}

/// The background command ran, and neither it nor its group is left.
fn background_was_stopped(pids: &Path, def: &Path, o: &Output) {
    let started = std::fs::read_to_string(pids).unwrap_or_default();
    let started: Vec<&str> = started.split_whitespace().collect();
    // Once: `exec "$RTLAB" load cpu` ran until stopped (a command that
    // ends is started again a second later).
    assert_eq!(started.len(), 1, "{started:?}: {}", text(o));
    for pid in started {
        if let Some(group) = live_group(pid) {
            // Ours: ended before the test fails, so that it stops nothing else.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{group}")])
                .status();
            panic!("background process {pid} still ran: {}", text(o));
        }
    }
    assert!(!def.join("output/background.pgid").exists());
    assert!(def.join("output/rtlab.json").exists());
}

/// The process group of `pid` while it runs (not a zombie).
fn live_group(pid: &str) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    (fields.first() != Some(&"Z")).then(|| fields.get(2).map(|g| g.to_string()))?
}

/// A cyclictest `--json` file of two threads (from a real run).
const CYCLICTEST_JSON: &str = r#"{"file_version": 1, "return_code": 0, "num_threads": 2,
  "resolution_in_ns": 0, "thread": {
  "0": {"histogram": {}, "cycles": 1998, "min": 15, "max": 1328, "avg": 32.56, "cpu": 0},
  "1": {"histogram": {}, "cycles": 1331, "min": 18, "max": 174, "avg": 40.67, "cpu": 1}}}"#;

#[test]
fn the_helper_runs_inside_lava_only_with_each_argument_apart() {
    let _machine = fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ct.json");
    std::fs::write(&file, CYCLICTEST_JSON).unwrap();
    let calls = dir.path().join("calls");
    fake_helper(&dir.path().join("helpers"), &calls);
    let path = format!(
        "{}:{}",
        dir.path().join("helpers").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let lava = |in_lava: bool, extra: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rtlab"));
        cmd.arg("lava")
            .arg(&file)
            .args(["--max-latency", "1328"])
            .args(extra);
        cmd.env("PATH", &path).env_remove("LAVA_RESULT_DIR");
        if in_lava {
            cmd.env("LAVA_RESULT_DIR", dir.path());
        }
        cmd.output().unwrap()
    };
    // Outside LAVA: the lines only.
    let o = lava(false, &[]);
    assert_eq!(o.status.code(), Some(6), "{}", text(&o));
    assert!(recorded(&calls).is_empty());
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(stdout.contains("t0-max-latency fail 1328 us\n"), "{stdout}");
    // Inside: a call per line, each word an argument.
    let o = lava(true, &[]);
    assert_eq!(o.status.code(), Some(6), "{}", text(&o));
    let ours: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.starts_with("<LAVA_SIGNAL"))
        .map(str::to_string)
        .collect();
    assert_eq!(ours.len(), 6, "{}", text(&o));
    check_calls(&ours, &recorded(&calls));
    // `never` inside LAVA, `always` outside.
    std::fs::remove_file(&calls).unwrap();
    let o = lava(true, &["--lava-test-case", "never"]);
    assert_eq!((o.status.code(), recorded(&calls).len()), (Some(6), 0));
    let o = lava(false, &["--lava-test-case", "always"]);
    assert_eq!((o.status.code(), recorded(&calls).len()), (Some(6), 6));
    // Wanted and absent: refused before a line is printed.
    let o = Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .arg("lava")
        .arg(&file)
        .env("PATH", dir.path().join("nowhere"))
        .env("LAVA_RESULT_DIR", dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(o.stdout.is_empty(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no lava-test-case"));
}

/// Each line's words as one call's arguments, in order.
fn check_calls(lines: &[String], calls: &[Vec<String>]) {
    assert_eq!(lines.len(), calls.len(), "{lines:?}\n{calls:?}");
    for (line, call) in lines.iter().zip(calls) {
        let (name, verdict, value) = parts(line);
        assert_eq!(
            call,
            &[
                name,
                "--result",
                verdict,
                "--measurement",
                value,
                "--units",
                "us"
            ]
        );
    }
}

#[test]
fn a_failing_helper_is_said_and_ends_with_status_1() {
    use std::os::unix::fs::PermissionsExt;
    let _machine = fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ct.json");
    std::fs::write(&file, CYCLICTEST_JSON).unwrap();
    let helper = dir.path().join("lava-test-case");
    std::fs::write(&helper, "#!/bin/sh\n[ \"$1\" != t1-avg-latency ]\n").unwrap();
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .arg("lava")
        .arg(&file)
        .env("PATH", dir.path())
        .env("LAVA_RESULT_DIR", dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("lava-test-case t1-avg-latency: exited with status 1"),
        "{stderr}"
    );
    // Six figures and the test's own case (`cyclictest pass`).
    assert!(stderr.contains("failed for 1 of 7 test cases"), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 7);
}

/// Files no run wrote: each refused (2) or read; never a panic, never a
/// line but a well-formed case, never a call of the helper when refused.
#[test]
fn hostile_results_never_panic_nor_inject_a_line() {
    let _machine = fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls");
    fake_helper(&dir.path().join("helpers"), &calls);
    let thread = |key: &str, body: &str| {
        format!("{{\"num_threads\": 1, \"thread\": {{\"{key}\": {{{body}}}}}}}")
    };
    let ok = "\"cycles\": 5, \"min\": 1, \"max\": 9, \"avg\": 3.5";
    let files = [
        thread("0\nt9-max-latency pass 1 us", ok),
        thread("-1", ok),
        thread("1e3", ok),
        thread("18446744073709551616", ok),
        thread("99999", ok),
        thread("0", "\"cycles\": 5, \"min\": 9, \"max\": 1, \"avg\": 3.5"),
        thread("0", "\"cycles\": 5, \"min\": -1, \"max\": 9, \"avg\": 3.5"),
        thread("0", "\"cycles\": 5, \"min\": 1, \"max\": 9, \"avg\": 1e308"),
        thread("0", "\"cycles\": 5, \"min\": 1, \"max\": 9, \"avg\": -nan"),
        thread(
            "0",
            "\"cycles\": 0, \"min\": 1000000, \"max\": 0, \"avg\": -nan",
        ),
        thread("0", "\"cycles\": 5, \"min\": \"1; reboot\", \"max\": 9"),
        "{\"thread\": {".to_string(),
        "\u{1b}[2J\u{0}\u{ff}".to_string(),
        String::new(),
        "T: 0 ( 1) P:98 I:1000 C: 5 Min: 1 Act: 2 Avg: 2 Max: 1;reboot\n".to_string(),
    ];
    let path = format!(
        "{}:{}",
        dir.path().join("helpers").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let modes: [&[&str]; 2] = [&["--max-latency", "5"], &[]];
    for ((i, body), mode) in files
        .iter()
        .enumerate()
        .flat_map(|f| modes.iter().map(move |m| (f, *m)))
    {
        let file = dir.path().join(format!("hostile{i}.json"));
        std::fs::write(&file, body).unwrap();
        let _ = std::fs::remove_file(&calls);
        let o = Command::new(env!("CARGO_BIN_EXE_rtlab"))
            .arg("lava")
            .args(mode)
            .arg(&file)
            .env("PATH", &path)
            .env("LAVA_RESULT_DIR", dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(!stderr.contains("panicked"), "{body:?}: {}", text(&o));
        assert!(
            matches!(o.status.code(), Some(0 | 2 | 6)),
            "{body:?}: {}",
            text(&o)
        );
        let lines: Vec<String> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| !l.starts_with("<LAVA_SIGNAL"))
            .map(str::to_string)
            .collect();
        for line in &lines {
            assert!(well_formed(line), "{body:?} {mode:?}: {line:?}");
        }
        assert_eq!(recorded(&calls).len(), lines.len(), "{body:?} {mode:?}");
        if o.status.code() == Some(2) {
            assert!(lines.is_empty() && recorded(&calls).is_empty(), "{body:?}");
        }
    }
}

/// `tN-(min|avg|max)-latency (pass|fail|skip)`, or with ` V us` after
/// pass or fail, N digits and V a number (digits, or as Python writes a
/// float: `3.5`, `1e+308`); or the test's own `cyclictest pass|fail`.
fn well_formed(line: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let number = |s: &str| {
        s.parse::<f64>().is_ok()
            && s.bytes()
                .all(|b| b.is_ascii_digit() || b"+-.e".contains(&b))
    };
    if matches!(line, "cyclictest pass" | "cyclictest fail") {
        return true;
    }
    let words: Vec<&str> = line.split(' ').collect();
    let name = words[0];
    let Some((t, kind)) = name
        .strip_prefix('t')
        .and_then(|r| r.strip_suffix("-latency"))
        .and_then(|r| r.split_once('-'))
    else {
        return false;
    };
    let head = digits(t) && ["min", "avg", "max"].contains(&kind);
    head && match words[1..] {
        ["pass" | "fail" | "skip"] => true,
        ["pass" | "fail", v, "us"] => number(v),
        _ => false,
    }
}

/// Labels and a test name with spaces, line feeds and shell syntax, inside
/// a LAVA shell: each name is letters, digits, `.`, `_` and `-` only, the
/// helper gets each argument apart, and nothing is run.
#[test]
fn hostile_labels_and_test_names_run_nothing_inside_lava() {
    let _machine = fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls");
    fake_helper(&dir.path().join("helpers"), &calls);
    let mark = dir.path().join("injected");
    let evil = |n: u8| {
        format!(
            "b{n} $(touch {0}) `touch {0}`;touch {0}\nt0-max-latency fail 1 us|&>'\"",
            mark.display()
        )
    };
    let file = dir.path().join("ct.json");
    std::fs::write(&file, CYCLICTEST_JSON).unwrap();
    let path = format!(
        "{}:{}",
        dir.path().join("helpers").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for mode in [&["--max-latency", "100"][..], &[]] {
        let _ = std::fs::remove_file(&calls);
        let o = Command::new(env!("CARGO_BIN_EXE_rtlab"))
            .arg("lava")
            .args(mode)
            .args([&file, &file])
            .args(["--label", &evil(1), "--label", &evil(2)])
            .args(["--test-name", &evil(3)])
            .env("PATH", &path)
            .env("LAVA_RESULT_DIR", dir.path())
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(matches!(o.status.code(), Some(0 | 6)), "{}", text(&o));
        assert!(!mark.exists(), "a label ran: {}", text(&o));
        let calls = recorded(&calls);
        let stdout = String::from_utf8_lossy(&o.stdout);
        let lines: Vec<&str> = stdout.lines().filter(|l| !l.starts_with("<LAVA")).collect();
        assert_eq!(calls.len(), lines.len(), "{stdout}");
        assert_eq!(
            calls.len(),
            if mode.is_empty() { 14 } else { 12 },
            "{stdout}"
        );
        for (call, line) in calls.iter().zip(&lines) {
            let name = &call[0];
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)),
                "{name:?}"
            );
            assert!(
                name.starts_with("b1_") || name.starts_with("b2_"),
                "{name:?}"
            );
            assert_eq!(line.split(' ').next(), Some(name.as_str()));
            assert_eq!(call[1], "--result");
        }
    }
}

#[test]
fn the_definitions_parameters_never_reach_a_shell() {
    // Every parameter but BACKGROUND_CMD (a command, run by sh -c as the
    // job author wrote it) is an argument: a value with shell syntax is
    // refused by rtlab as a value, never run.
    let _machine = fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let def = test_definition(&dir.path().join("repo"));
    let mark = dir.path().join("injected");
    let evil = format!("1;touch {0} $(touch {0}) `touch {0}`", mark.display());
    for option in ["-D", "-p", "-i", "-t", "-a", "-m"] {
        let o = Command::new("sh")
            .arg(def.join("rtlab-cyclictest.sh"))
            .args([option, evil.as_str()])
            .current_dir(dir.path())
            .env("RTLAB_JOURNAL_DIR", dir.path().join("journal"))
            .env_remove("LAVA_RESULT_DIR")
            .output()
            .unwrap();
        assert_ne!(o.status.code(), Some(0), "{option}: {}", text(&o));
        assert!(!mark.exists(), "{option} {evil:?} ran: {}", text(&o));
    }
}

/// pi_stress's JSON holds no thread, only its inversions: `rtlab lava`
/// prints what Linaro's parser prints of it (run here where python3 is),
/// its inversion line, the empty line after it, and the test's case; a
/// float as Python reads it (0.9999999999999999, not 1.0).
#[test]
fn pi_stress_and_rtla_files_give_the_parsers_very_lines() {
    let test = test_name!();
    let _machine = fixtures::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let pi = dir.path().join("pis.json");
    std::fs::write(
        &pi,
        "{\n  \"file_version\": 1,\n  \"cmdline:\": \"pi_stress --duration=1 -q --json=pis.json\",\n  \
         \"rt_test_version:\": \"2.40\",\n  \"return_code\": 0,\n  \"inversion\": 131600\n}\n",
    )
    .unwrap();
    let rtla = dir.path().join("rtla.json");
    std::fs::write(
        &rtla,
        r#"{"num_threads": 1, "thread": {"0": {"min": 2, "avg": 43.449999999999996, "max": 9}},
           "num_irqs": 1, "irq": {"0": {"min": 1, "avg": 0.9999999999999999, "max": 4}}, "return_code": 1}"#,
    )
    .unwrap();
    for (file, name, want) in [
        (
            &pi,
            "pi_stress",
            "inversion pass 131600 count\n\npi_stress pass\n",
        ),
        (
            &rtla,
            "rtla-timerlat",
            "t0-min-latency pass 2 us\nt0-avg-latency pass 43.449999999999996 us\nt0-max-latency pass 9 us\n\
             i0-min-latency pass 1 us\ni0-avg-latency pass 0.9999999999999999 us\ni0-max-latency pass 4 us\n\
             rtla-timerlat fail\n",
        ),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_rtlab"))
            .args(["lava", "--lava-test-case", "never", "--test-name", name])
            .arg(file)
            .env_remove("LAVA_RESULT_DIR")
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&o.stdout), want, "{}", text(&o));
        let fail = want.contains(" fail\n");
        assert_eq!(
            o.status.code(),
            Some(if fail { 6 } else { 0 }),
            "{}",
            text(&o)
        );
        if fixtures::has_command("python3") {
            let parser = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/support/linaro/parse_rt_tests_results.py");
            let theirs = Command::new("python3")
                .arg(parser)
                .arg(name)
                .arg(file)
                .output()
                .unwrap();
            assert_eq!(o.stdout, theirs.stdout, "{}", text(&theirs));
        }
    }
    fixtures::path_taken(test, "pi_stress's and rtla's documents: the parser's lines");
}

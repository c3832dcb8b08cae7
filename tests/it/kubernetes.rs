//! The Kubernetes manifests of `contrib/kubernetes/` run as the cluster
//! would run them: their Go check (`go test` in `contrib/kubernetes/check`,
//! every document decoded strictly into the Kubernetes API's types); the
//! qualification Job's command and environment, taken from the manifest by
//! that check's `command` and run with this binary as cnf-tests sets the
//! contract (a tool's own limit wins over MAXIMUM_LATENCY, a skip, a
//! refusal), its feature file read as Node Feature Discovery reads it and
//! the manifest's NFD rules applied to it; the monitor DaemonSet's command;
//! the feature file never seen half written.
//!
//! Needs Go (`go` on the PATH, or /usr/local/go/bin/go) at least as new as
//! the check module's `go` line, with its modules in the module cache or
//! the module proxy reachable (`.ci/run` downloads them); without such a
//! Go the tests say so and end. The runs need root and SCHED_FIFO; without
//! them the tests say which and end.

use crate::fixtures::{self, path_taken, text, wait_output_within};
use rtlab::sched::{Policy, Sched};
use rtlab::sys::os;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// A guard against a hung child (never a timing assertion).
const HANG: Duration = Duration::from_secs(600);

/// The variables of cnf-tests' contract, removed from what the tests
/// inherit so that the runs see the manifest's alone.
const CONTRACT: [&str; 8] = [
    "LATENCY_TEST_RUN",
    "LATENCY_TEST_RUNTIME",
    "LATENCY_TEST_DELAY",
    "LATENCY_TEST_CPUS",
    "MAXIMUM_LATENCY",
    "HWLATDETECT_MAXIMUM_LATENCY",
    "CYCLICTEST_MAXIMUM_LATENCY",
    "OSLAT_MAXIMUM_LATENCY",
];

/// A limit certainly above any maximum (Go's `math.MaxInt32` is the
/// contract's largest value; this is below it).
const ABOVE: &str = "2000000000";
/// A limit no maximum is below (a maximum is at least 0).
const BELOW: &str = "0";

fn manifests() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/kubernetes")
}

fn check_module() -> PathBuf {
    manifests().join("check")
}

/// Go's version as (major, minor, patch) from `go1.26.8`, `1.26.0`,
/// `go1.27rc1`.
fn version(text: &str) -> Option<(u32, u32, u32)> {
    let text = text.trim().trim_start_matches("go");
    let mut parts = text.split('.').map(|p| {
        p.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse::<u32>()
    });
    let major = parts.next()?.ok()?;
    let minor = parts.next().and_then(Result::ok).unwrap_or(0);
    let patch = parts.next().and_then(Result::ok).unwrap_or(0);
    Some((major, minor, patch))
}

/// The `go` command with the check module's settings: go.mod and go.sum
/// as committed (`-mod=readonly`), this Go and no other toolchain, no
/// workspace; the caches where Go keeps them (outside the repository).
fn go_command(go: &Path) -> Command {
    let mut c = Command::new(go);
    c.current_dir(check_module())
        .env("GOFLAGS", "-mod=readonly")
        .env("GOTOOLCHAIN", "local")
        .env("GOWORK", "off");
    c
}

/// Go, if this machine has one new enough for the check module; else says
/// why not (the test then ends).
fn go(test: &str) -> Option<PathBuf> {
    let go = if fixtures::has_command("go") {
        PathBuf::from("go")
    } else if Path::new("/usr/local/go/bin/go").is_file() {
        PathBuf::from("/usr/local/go/bin/go")
    } else {
        path_taken(
            test,
            "no Go (`go` on the PATH, /usr/local/go/bin/go): the manifests' check is not run",
        );
        return None;
    };
    let gomod = std::fs::read_to_string(check_module().join("go.mod")).unwrap();
    let wanted = gomod
        .lines()
        .find_map(|l| l.strip_prefix("go "))
        .and_then(version)
        .expect("the check module's go.mod has a `go` line");
    // `go version` (any Go has it) outside the module, whose `go` line a
    // Go too old refuses.
    let o = Command::new(&go)
        .arg("version")
        .current_dir("/")
        .env("GOTOOLCHAIN", "local")
        .output()
        .unwrap();
    let have = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .nth(2)
        .unwrap_or_default()
        .to_string();
    match version(&have) {
        Some(v) if v >= wanted => Some(go),
        _ => {
            path_taken(
                test,
                &format!(
                    "Go {have:?} is older than the check module's go {}.{}.{}: the manifests' check is not run",
                    wanted.0, wanted.1, wanted.2
                ),
            );
            None
        }
    }
}

/// Every file under `dir` (for the check that the Go tools leave none).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The check module's command, built into a temporary directory.
struct CheckTool {
    _dir: tempfile::TempDir,
    bin: PathBuf,
}

impl CheckTool {
    /// Built with `go` (the modules from the cache or the proxy; a failure
    /// to get them fails the test with Go's words).
    fn build(go: &Path) -> CheckTool {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("check");
        let o = go_command(go)
            .args(["build", "-o"])
            .arg(&bin)
            .arg(".")
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "go build of contrib/kubernetes/check (its modules must be in the module cache, or the \
             module proxy reachable: `go mod download` there):\n{}",
            text(&o)
        );
        CheckTool { _dir: dir, bin }
    }

    /// `check ARGS`'s JSON.
    fn json(&self, args: &[&str]) -> Value {
        let o = Command::new(&self.bin)
            .args(args)
            .current_dir(check_module())
            .output()
            .unwrap();
        assert!(o.status.success(), "check {args:?}: {}", text(&o));
        serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("check {args:?}: {e}: {}", text(&o)))
    }

    /// What a manifest's Job or DaemonSet runs: its argv and its env.
    fn workload(&self, manifest: &str) -> (Vec<String>, BTreeMap<String, String>) {
        let w = self.json(&["command", &format!("../{manifest}")]);
        let argv: Vec<String> = serde_json::from_value(w["argv"].clone()).unwrap();
        let env: BTreeMap<String, String> = serde_json::from_value(w["env"].clone()).unwrap();
        (argv, env)
    }
}

#[test]
fn the_manifests_decode_strictly_into_the_kubernetes_api_types() {
    let test = test_name!();
    let Some(go) = go(test) else {
        return;
    };
    let _machine = fixtures::machine_shared();
    let before = files_under(&manifests());
    let o = go_command(&go)
        .args(["test", "-count=1", "-v", "./..."])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "go test in contrib/kubernetes/check (if its modules could not be downloaded, Go says so \
         here: `go mod download` there with the module proxy reachable):\n{}",
        text(&o)
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    // The negative tests ran: the decoder refuses a misspelt field.
    for t in [
        "TestEveryManifestDecodesStrictlyIntoTheAPITypes",
        "TestAMisspeltFieldIsRefused",
        "TestABrokenInvariantIsCaught",
    ] {
        assert!(stdout.contains(&format!("--- PASS: {t}")), "{t}:\n{stdout}");
    }
    assert!(
        stdout.contains(r#"unknown field "spec.template.spec.restartPolcy""#),
        "{stdout}"
    );
    assert_eq!(
        files_under(&manifests()),
        before,
        "go test left files in the repository"
    );
    path_taken(
        test,
        &format!(
            "go test passed ({}): every manifest decoded strictly into the API's types",
            go.display()
        ),
    );
}

/// Whether this process may make a SCHED_FIFO thread (root alone is not
/// enough: RT group scheduling, a container's limits).
fn fifo_allowed() -> Result<(), String> {
    std::thread::spawn(|| {
        os::set_sched(
            0,
            Sched {
                policy: Policy::Fifo,
                priority: 1,
            },
        )
        .map_err(|e| e.to_string())
    })
    .join()
    .unwrap()
}

/// Root and SCHED_FIFO, or the test ends saying which it lacks.
fn can_measure(test: &str) -> bool {
    if !fixtures::root_or_refusal(test) {
        return false;
    }
    if let Err(e) = fifo_allowed() {
        path_taken(test, &format!("SCHED_FIFO refused ({e}): nothing measured"));
        return false;
    }
    true
}

/// A qualification as the Job runs it: the Job's argv with `/rtlab` this
/// binary and the feature file `nfd`; the Job's env alone (the contract
/// inherited from the caller's shell removed) with `changes` (None:
/// unset), its journal in `dir`.
fn run_job(
    argv: &[String],
    env: &BTreeMap<String, String>,
    changes: &[(&str, Option<&str>)],
    dir: &Path,
    nfd: &Path,
) -> Output {
    assert_eq!(argv[0], "/rtlab", "the Job runs the image's /rtlab");
    let mut args: Vec<String> = argv[1..].to_vec();
    let at = args
        .iter()
        .position(|a| a == "--nfd-file")
        .expect("the Job writes the NFD feature file");
    args[at + 1] = nfd.to_str().unwrap().to_string();
    let mut env = env.clone();
    for (k, v) in changes {
        match v {
            Some(v) => env.insert(k.to_string(), v.to_string()),
            None => env.remove(*k),
        };
    }
    let mut c = Command::new(env!("CARGO_BIN_EXE_rtlab"));
    c.args(&args)
        .current_dir(dir)
        .env("RTLAB_JOURNAL_DIR", dir.join("journal"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for k in CONTRACT {
        c.env_remove(k);
    }
    c.envs(&env);
    wait_output_within(c.spawn().unwrap(), HANG)
}

/// The verdict line of `test` (`rtlab qualify: cyclictest: ...`).
fn verdict<'a>(stdout: &'a str, test: &str) -> &'a str {
    let head = format!("rtlab qualify: {test}: ");
    stdout
        .lines()
        .find(|l| l.starts_with(&head))
        .unwrap_or_else(|| panic!("no verdict line for {test}:\n{stdout}"))
}

/// The number after `label` in `line`.
fn number_after(line: &str, label: &str) -> Option<u64> {
    let at = line.find(label)? + label.len();
    let digits: String = line[at..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The feature file as nfd-worker's local source reads it: `name=value`
/// lines (value `true` when absent), comments skipped.
fn features(file: &str) -> BTreeMap<String, String> {
    file.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l.split_once('=').unwrap_or((l, "true"));
            (k.to_string(), v.to_string())
        })
        .collect()
}

/// What the NFD rules (`check nfd-rules`) do to a node with these local
/// features: the labels and taints of every rule all of whose matches hold.
fn apply_rules(
    rules: &Value,
    local: &BTreeMap<String, String>,
) -> (BTreeMap<String, String>, Vec<String>) {
    let (mut labels, mut taints) = (BTreeMap::new(), Vec::new());
    for rule in rules.as_array().unwrap() {
        let holds = rule["matches"].as_array().unwrap().iter().all(|m| {
            let feature = m["feature"].as_str().unwrap();
            assert!(
                feature == "local.label" || feature == "local.feature",
                "a rule on {feature}, not on rtlab's feature file"
            );
            let value = local.get(m["element"].as_str().unwrap());
            let values: Vec<&str> = m["value"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            match m["op"].as_str().unwrap() {
                "IsTrue" => value.is_some_and(|v| v == "true"),
                "IsFalse" => value.is_some_and(|v| v == "false"),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                "In" => value.is_some_and(|v| values.contains(&v.as_str())),
                op => panic!("operator {op} not evaluated by this test"),
            }
        });
        if holds {
            for (k, v) in rule["labels"].as_object().unwrap() {
                labels.insert(k.clone(), v.as_str().unwrap().to_string());
            }
            taints.extend(
                rule["taints"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t.as_str().unwrap().to_string()),
            );
        }
    }
    (labels, taints)
}

/// The feature file, checked whole: rtlab's first line, a verdict, a last
/// newline, and no temporary file left beside it.
fn feature_file(nfd: &Path) -> String {
    let file = std::fs::read_to_string(nfd).unwrap_or_else(|e| panic!("{}: {e}", nfd.display()));
    assert!(
        file.starts_with("# rtlab qualify") && file.ends_with('\n'),
        "{file}"
    );
    let beside: Vec<_> = std::fs::read_dir(nfd.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        beside,
        [nfd.file_name().unwrap()],
        "left beside the feature file"
    );
    file
}

/// The largest number of the first line of `stdout` that starts with
/// `label` (a tool's own maximum line: cyclictest's `# Max Latencies:`,
/// oslat's `Maximum:`).
fn tool_max(stdout: &str, label: &str) -> Option<u64> {
    let line = stdout.lines().find(|l| l.trim_start().starts_with(label))?;
    let rest = &line.trim_start()[label.len()..];
    rest.split_whitespace().filter_map(|w| w.parse().ok()).max()
}

#[test]
fn the_job_qualifies_under_cnf_tests_contract_a_tools_own_limit_winning() {
    let test = test_name!();
    let Some(go) = go(test) else {
        return;
    };
    if !can_measure(test) {
        return;
    }
    // Built beside the other tests, measured alone.
    let tool = {
        let _machine = fixtures::machine_shared();
        CheckTool::build(&go)
    };
    let (argv, env) = tool.workload("job-qualify.yaml");
    let rules = tool.json(&["nfd-rules", "../nodefeaturerule.yaml"]);
    let _machine = fixtures::machine_exclusive();
    // The pod would have exactly its CPUs; this process has these.
    let allowed = os::get_affinity(0).unwrap();
    let wanted: usize = env["LATENCY_TEST_CPUS"].parse().unwrap();
    let cpus = wanted.min(allowed.len()).to_string();
    if allowed.len() < wanted {
        path_taken(
            test,
            &format!(
                "the Job asks {wanted} CPUs, this process has {}: LATENCY_TEST_CPUS={cpus}",
                allowed.len()
            ),
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let features_d = dir.path().join("features.d");
    std::fs::create_dir(&features_d).unwrap();
    let nfd = features_d.join("rtlab");
    let oslat_runs = cpus != "1";

    // As the issue asks: 10 s each, cyclictest's own limit below any
    // maximum, the unified one above them all. cyclictest fails (its own
    // limit wins); hwlatdetect and oslat, which have none of their own,
    // follow MAXIMUM_LATENCY and pass.
    let o = run_job(
        &argv,
        &env,
        &[
            ("LATENCY_TEST_RUNTIME", Some("10")),
            ("LATENCY_TEST_CPUS", Some(&cpus)),
            ("CYCLICTEST_MAXIMUM_LATENCY", Some(BELOW)),
            ("MAXIMUM_LATENCY", Some(ABOVE)),
            ("HWLATDETECT_MAXIMUM_LATENCY", None),
            ("OSLAT_MAXIMUM_LATENCY", None),
        ],
        dir.path(),
        &nfd,
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(6), "{}", text(&o));
    // Each tool's own output, then the verdicts.
    assert!(
        stdout.contains("hwlatdetect:  test duration 10 seconds"),
        "{}",
        text(&o)
    );
    let cyc = verdict(&stdout, "cyclictest");
    assert!(
        cyc.ends_with(&format!(", limit {BELOW} us: FAIL")),
        "{}",
        text(&o)
    );
    let hw = verdict(&stdout, "hwlatdetect");
    assert!(
        hw.ends_with(&format!(", limit {ABOVE} us: PASS")),
        "{}",
        text(&o)
    );
    let os_line = verdict(&stdout, "oslat");
    if oslat_runs {
        assert!(
            os_line.ends_with(&format!(", limit {ABOVE} us: PASS")),
            "{}",
            text(&o)
        );
    } else {
        assert!(
            os_line.contains("skipped: oslat needs 2 CPUs"),
            "{}",
            text(&o)
        );
        path_taken(
            test,
            "one CPU: oslat skipped, as the Job on a 1-CPU pod would",
        );
    }
    assert!(stdout.contains(": NOT QUALIFIED\n"), "{}", text(&o));
    let file = feature_file(&nfd);
    let local = features(&file);
    assert_eq!(local["rtlab.qualified"], "false", "{file}");
    // The figure the file holds is the one cyclictest printed.
    let printed =
        tool_max(&stdout, "# Max Latencies:").expect("cyclictest's # Max Latencies: line");
    assert_eq!(
        local["rtlab.cyclictest-max-latency-us"],
        printed.to_string(),
        "{file}\n{stdout}"
    );
    assert_eq!(number_after(cyc, "max "), Some(printed), "{cyc}");
    if oslat_runs {
        let printed = tool_max(&stdout, "Maximum:").expect("oslat's Maximum: line");
        assert_eq!(
            local["rtlab.oslat-max-latency-us"],
            printed.to_string(),
            "{file}"
        );
    }
    // hwlatdetect's own line (`Max Latency: Below threshold` is 0).
    let hw_line = stdout
        .lines()
        .find(|l| l.starts_with("Max Latency: "))
        .expect("hwlatdetect's Max Latency: line");
    let hw_printed = number_after(hw_line, "Max Latency: ").unwrap_or(0);
    assert_eq!(
        local["rtlab.hwlatdetect-max-latency-us"],
        hw_printed.to_string(),
        "{file}"
    );
    assert_eq!(number_after(hw, "max "), Some(hw_printed), "{hw}");
    let (labels, taints) = apply_rules(&rules, &local);
    assert_eq!(
        labels.get("rtlab.io/qualified").map(String::as_str),
        Some("false"),
        "{labels:?}"
    );
    assert_eq!(taints, ["rtlab.io/not-qualified=true:NoSchedule"]);

    // The limits swapped (shorter runs): cyclictest's own limit is above,
    // the unified one below: cyclictest passes, hwlatdetect and oslat fail.
    let o = run_job(
        &argv,
        &env,
        &[
            ("LATENCY_TEST_RUNTIME", Some("2")),
            ("LATENCY_TEST_CPUS", Some(&cpus)),
            ("CYCLICTEST_MAXIMUM_LATENCY", Some(ABOVE)),
            ("MAXIMUM_LATENCY", Some(BELOW)),
            ("HWLATDETECT_MAXIMUM_LATENCY", None),
            ("OSLAT_MAXIMUM_LATENCY", None),
        ],
        dir.path(),
        &nfd,
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(6), "{}", text(&o));
    assert!(
        verdict(&stdout, "cyclictest").ends_with(&format!(", limit {ABOVE} us: PASS")),
        "{}",
        text(&o)
    );
    assert!(
        verdict(&stdout, "hwlatdetect").ends_with(&format!(", limit {BELOW} us: FAIL")),
        "{}",
        text(&o)
    );
    if oslat_runs {
        assert!(
            verdict(&stdout, "oslat").ends_with(&format!(", limit {BELOW} us: FAIL")),
            "{}",
            text(&o)
        );
    }
    assert_eq!(features(&feature_file(&nfd))["rtlab.qualified"], "false");

    // Every limit above: qualified, the file rewritten whole, and the NFD
    // rules label the node qualified and untaint it.
    let o = run_job(
        &argv,
        &env,
        &[
            ("LATENCY_TEST_RUNTIME", Some("2")),
            ("LATENCY_TEST_CPUS", Some(&cpus)),
            ("CYCLICTEST_MAXIMUM_LATENCY", Some(ABOVE)),
            ("MAXIMUM_LATENCY", Some(ABOVE)),
            ("HWLATDETECT_MAXIMUM_LATENCY", None),
            ("OSLAT_MAXIMUM_LATENCY", None),
        ],
        dir.path(),
        &nfd,
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for t in ["hwlatdetect", "cyclictest"] {
        assert!(verdict(&stdout, t).ends_with(": PASS"), "{}", text(&o));
    }
    assert!(stdout.contains(": QUALIFIED\n"), "{}", text(&o));
    let file = feature_file(&nfd);
    let local = features(&file);
    assert_eq!(local["rtlab.qualified"], "true", "{file}");
    let printed = tool_max(&stdout, "# Max Latencies:").unwrap();
    assert_eq!(
        local["rtlab.cyclictest-max-latency-us"],
        printed.to_string(),
        "{file}"
    );
    let (labels, taints) = apply_rules(&rules, &local);
    assert_eq!(
        labels.get("rtlab.io/qualified").map(String::as_str),
        Some("true"),
        "{labels:?}"
    );
    assert!(taints.is_empty(), "{taints:?}");
    path_taken(
        test,
        &format!(
            "the Job's command and env on {cpus} CPU(s): cyclictest's own limit won both ways \
             (exit 6, 6), every limit above qualified (exit 0); the NFD rules labelled false, then true"
        ),
    );
}

#[test]
fn the_job_skips_and_refuses_as_cnf_tests_does_before_measuring() {
    let test = test_name!();
    let Some(go) = go(test) else {
        return;
    };
    let _machine = fixtures::machine_shared();
    let tool = CheckTool::build(&go);
    let (argv, env) = tool.workload("job-qualify.yaml");
    let dir = tempfile::tempdir().unwrap();
    let features_d = dir.path().join("features.d");
    std::fs::create_dir(&features_d).unwrap();
    let nfd = features_d.join("rtlab");
    let nothing_written = || {
        assert_eq!(
            std::fs::read_dir(&features_d).unwrap().count(),
            0,
            "a feature file was written"
        );
    };

    // LATENCY_TEST_RUN unset: cnf-tests skips the tests.
    let o = run_job(&argv, &env, &[("LATENCY_TEST_RUN", None)], dir.path(), &nfd);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .contains("LATENCY_TEST_RUN is not true: the latency tests are skipped"),
        "{}",
        text(&o)
    );
    nothing_written();

    // A value Go's Atoi refuses: refused by name, exit 2.
    let o = run_job(
        &argv,
        &env,
        &[("LATENCY_TEST_RUNTIME", Some("10s"))],
        dir.path(),
        &nfd,
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("LATENCY_TEST_RUNTIME") && stderr.contains("\"10s\""),
        "{}",
        text(&o)
    );
    nothing_written();

    // More CPUs than the process has: refused, exit 2.
    let more = (os::get_affinity(0).unwrap().len() + 1).to_string();
    let o = run_job(
        &argv,
        &env,
        &[("LATENCY_TEST_CPUS", Some(&more))],
        dir.path(),
        &nfd,
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(&format!("LATENCY_TEST_CPUS is {more}")),
        "{}",
        text(&o)
    );
    nothing_written();
    path_taken(
        test,
        "the Job's command: skipped (exit 0), refused by name (exit 2), nothing written",
    );
}

#[test]
fn the_monitor_daemonsets_command_serves_metrics_until_sigterm() {
    let test = test_name!();
    let Some(go) = go(test) else {
        return;
    };
    if !can_measure(test) {
        return;
    }
    let tool = {
        let _machine = fixtures::machine_shared();
        CheckTool::build(&go)
    };
    let (argv, env) = tool.workload("daemonset-monitor.yaml");
    assert!(env.is_empty(), "{env:?}");
    let _machine = fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    // The DaemonSet's address with a free port (the manifest's may be taken).
    let port = crate::monitor::free_port();
    let mut args: Vec<String> = argv[1..].to_vec();
    let at = args.iter().position(|a| a == "--listen").unwrap() + 1;
    let (host, _) = args[at].rsplit_once(':').unwrap();
    args[at] = format!("{host}:{port}");
    let child = Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args(&args)
        .current_dir(dir.path())
        .env("RTLAB_JOURNAL_DIR", dir.path().join("journal"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut body = None;
    fixtures::wait_until(Duration::from_secs(60), || {
        body = crate::monitor::http_get(port, "/metrics")
            .filter(|b| b.contains("rtlab_latency_seconds_count"));
        body.is_some()
    });
    let status = Command::new("kill")
        .arg("-15")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    let o = wait_output_within(child, HANG);
    assert!(
        body.is_some(),
        "no /metrics from `rtlab {}`: {}",
        args.join(" "),
        text(&o)
    );
    // Stopped as a pod is: SIGTERM, 128+15.
    assert_eq!(o.status.code(), Some(143), "{}", text(&o));
    // `--windows none`: no windows file.
    assert!(!dir.path().join("rtlab-windows.jsonl").exists());
    path_taken(
        test,
        &format!(
            "`rtlab {}` served /metrics, ended by SIGTERM (143)",
            args.join(" ")
        ),
    );
}

#[test]
fn the_feature_file_is_never_seen_half_written() {
    let test = test_name!();
    if !can_measure(test) {
        return;
    }
    let _machine = fixtures::machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let features_d = dir.path().join("features.d");
    std::fs::create_dir(&features_d).unwrap();
    let nfd = features_d.join("rtlab");
    let stop = Arc::new(AtomicBool::new(false));
    let after_first = Arc::new(AtomicBool::new(false));
    let seen_after_first = Arc::new(AtomicUsize::new(0));
    // nfd-worker's way: list the directory, skip dotfiles, read the rest.
    let reader = {
        let (stop, after_first, seen) =
            (stop.clone(), after_first.clone(), seen_after_first.clone());
        let features_d = features_d.clone();
        std::thread::spawn(move || -> Result<usize, String> {
            let mut reads = 0;
            while !stop.load(Ordering::Relaxed) {
                for e in std::fs::read_dir(&features_d)
                    .map_err(|e| e.to_string())?
                    .flatten()
                {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if name.starts_with('.') {
                        continue;
                    }
                    let after = after_first.load(Ordering::SeqCst);
                    let file = std::fs::read_to_string(e.path())
                        .map_err(|err| format!("{name}: {err}"))?;
                    if !(file.starts_with("# rtlab qualify")
                        && file.contains("rtlab.qualified=")
                        && file.ends_with('\n'))
                    {
                        return Err(format!("{name} read half written:\n{file:?}"));
                    }
                    reads += 1;
                    if after {
                        seen.fetch_add(1, Ordering::Relaxed);
                    }
                }
                std::thread::yield_now();
            }
            Ok(reads)
        })
    };
    let mut statuses = Vec::new();
    for run in 0..5 {
        // The verdict alternates, so that the file's content changes.
        let limit = if run % 2 == 0 { BELOW } else { ABOVE };
        let mut c = Command::new(env!("CARGO_BIN_EXE_rtlab"));
        c.args(["qualify", "cyclictest", "--nfd-file", nfd.to_str().unwrap()])
            .current_dir(dir.path())
            .env("RTLAB_JOURNAL_DIR", dir.path().join("journal"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for k in CONTRACT {
            c.env_remove(k);
        }
        c.envs([
            ("LATENCY_TEST_RUN", "true"),
            ("LATENCY_TEST_RUNTIME", "1"),
            ("CYCLICTEST_MAXIMUM_LATENCY", limit),
        ]);
        let o = wait_output_within(c.spawn().unwrap(), HANG);
        let want = if limit == BELOW { 6 } else { 0 };
        if o.status.code() != Some(want) {
            stop.store(true, Ordering::Relaxed);
            panic!("run {run}: {}", text(&o));
        }
        statuses.push(want);
        after_first.store(true, Ordering::SeqCst);
    }
    stop.store(true, Ordering::Relaxed);
    let reads = reader.join().unwrap().unwrap_or_else(|e| panic!("{e}"));
    let after = seen_after_first.load(Ordering::Relaxed);
    assert!(
        after > 0,
        "the reader never saw the feature file after the first run ({reads} reads)"
    );
    let file = feature_file(&nfd);
    assert_eq!(features(&file)["rtlab.qualified"], "false", "{file}");
    path_taken(
        test,
        &format!(
            "5 runs (exit {statuses:?}): {reads} reads of the feature file, {after} after the first run, each whole"
        ),
    );
}

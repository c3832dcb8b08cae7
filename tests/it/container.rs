//! The container image of contrib/container/Containerfile (the static
//! x86_64 binary alone, `FROM scratch`), built with podman and run three
//! ways: with a real-time pod's privileges (CAP_SYS_NICE, CAP_IPC_LOCK, a
//! cpuset, the host's tracefs) it measures; without CAP_SYS_NICE it is
//! refused, naming the capability; in podman's default cgroup parent,
//! which RT group scheduling gives no RT time, it is refused naming the
//! cgroup file and a value. Needs root, podman, and the musl target (the
//! test builds the binary); crun where it starts containers here (crun
//! 1.8 refuses hybrid cgroup hosts), else runc. Every container, image
//! and cgroup it makes is removed at the end, failed or not.

use crate::fixtures::{self, path_taken, text, wait_output_within};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// How long one podman command may take before it is stopped (a hang
/// guard, not a measurement).
const PODMAN_LIMIT: Duration = Duration::from_secs(300);

/// Runs podman with `args`, its output.
fn podman(args: &[&str]) -> Output {
    let child = Command::new("podman")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start podman");
    wait_output_within(child, PODMAN_LIMIT)
}

/// The image, removed when dropped.
struct Image {
    tag: String,
}

impl Drop for Image {
    fn drop(&mut self) {
        let _ = podman(&["rmi", "-f", &self.tag]);
    }
}

/// A container name, the container removed when dropped (`--rm` removes
/// it when it ends; this covers a test that stopped waiting for it).
struct Container {
    name: String,
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = podman(&["rm", "-f", "-t", "0", &self.name]);
    }
}

/// A cgroup made for the containers' parent, removed when dropped from
/// every hierarchy (podman makes it in each, with a `conmon` child).
struct CgroupParent {
    name: String,
}

impl Drop for CgroupParent {
    fn drop(&mut self) {
        for mount in cgroup_mounts() {
            remove_tree(&Path::new(&mount).join(&self.name));
        }
    }
}

/// podman's parent cgroup (`libpod_parent`, in every hierarchy) where the
/// tests made it, removed when each test ends (the last one's removal
/// holds): a cpuset left holding every CPU would make exclusive cpusets
/// (`rtlab partition create`) impossible on this machine afterwards.
struct PodmanParent;

/// The hierarchies that had podman's parent cgroup before any test here.
fn parents_before() -> &'static Vec<String> {
    static BEFORE: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    BEFORE.get_or_init(|| {
        cgroup_mounts()
            .into_iter()
            .filter(|m| Path::new(m).join("libpod_parent").exists())
            .collect()
    })
}

impl Drop for PodmanParent {
    fn drop(&mut self) {
        let before = parents_before();
        for mount in cgroup_mounts().iter().filter(|m| !before.contains(m)) {
            remove_tree(&Path::new(mount).join("libpod_parent"));
        }
    }
}

/// Removes cgroup directory `dir` and those below it, deepest first.
fn remove_tree(dir: &Path) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            remove_tree(&e.path());
        }
    }
    let _ = std::fs::remove_dir(dir);
}

/// The mount point of every cgroup hierarchy.
fn cgroup_mounts() -> Vec<String> {
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            matches!(f.get(2), Some(&"cgroup") | Some(&"cgroup2")).then(|| f[1].to_string())
        })
        .collect()
}

/// `--ulimit` within this process's hard limits: podman raises them to its
/// defaults otherwise, which a root without CAP_SYS_RESOURCE may not. The
/// processes limit at most 4096 (podman lowers its own: 32768 here), ample
/// for rtlab's threads.
fn ulimits() -> Vec<String> {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let mut out = Vec::new();
    for (line, name, most) in [
        ("Max open files", "nofile", u64::MAX),
        ("Max processes", "nproc", 4096),
    ] {
        let hard = limits
            .lines()
            .find(|l| l.starts_with(line))
            .and_then(|l| l[line.len()..].split_whitespace().nth(1))
            .map(|h| h.parse::<u64>().unwrap_or(u64::MAX).min(most))
            .filter(|&h| h < u64::MAX);
        if let Some(h) = hard {
            out.extend(["--ulimit".to_string(), format!("{name}={h}:{h}")]);
        }
    }
    out
}

/// What the test needs, or why it cannot run (said and returned).
struct Setup {
    image: Image,
    _parent: PodmanParent,
    runtime: &'static str,
    limits: Vec<String>,
    _dir: tempfile::TempDir,
}

/// Builds the image from the static release binary and the Containerfile in a
/// directory of its own, and picks the runtime; None (said) when the
/// machine lacks what it takes.
fn setup(test: &str) -> Option<Setup> {
    if !fixtures::is_root() {
        path_taken(
            test,
            "not root: podman's containers with real-time privileges need root",
        );
        return None;
    }
    if !fixtures::has_command("podman") {
        path_taken(test, "podman missing (.ci/run installs it): not tested");
        return None;
    }
    let binary = match fixtures::release_binary("x86_64-unknown-linux-musl") {
        Ok(b) => b,
        Err(e) => {
            path_taken(test, &format!("no static binary for the image: {e}"));
            return None;
        }
    };
    parents_before();
    let parent = PodmanParent;
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&binary, dir.path().join("rtlab")).unwrap();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/container/Containerfile");
    let tag = format!("localhost/rtlab-it-{}-{test}:test", std::process::id());
    let image = Image { tag: tag.clone() };
    let o = podman(&[
        "build",
        "-q",
        "-t",
        &tag,
        "-f",
        file.to_str().unwrap(),
        dir.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "podman build: {}", text(&o));
    let limits = ulimits();
    let runtime = runtime(test, &tag, &limits)?;
    Some(Setup {
        image,
        _parent: parent,
        runtime,
        limits,
        _dir: dir,
    })
}

/// crun where it starts a container here, else runc (crun 1.8 refuses
/// hosts with hybrid cgroups), said either way.
fn runtime(test: &str, tag: &str, limits: &[String]) -> Option<&'static str> {
    let mut refused = String::from("crun missing");
    if fixtures::has_command("crun") {
        let mut args = vec!["--runtime", "crun", "run", "--rm", "--network", "none"];
        args.extend(limits.iter().map(String::as_str));
        args.extend([tag, "--version"]);
        let o = podman(&args);
        if o.status.success() {
            path_taken(test, "runtime crun");
            return Some("crun");
        }
        refused = String::from_utf8_lossy(&o.stderr).trim().to_string();
    }
    if !fixtures::has_command("runc") {
        path_taken(
            test,
            &format!("crun cannot run it ({refused}) and runc is missing"),
        );
        return None;
    }
    path_taken(test, &format!("runtime runc: crun here: {refused}"));
    Some("runc")
}

impl Setup {
    /// `podman run` of the image with `opts` before it and `args` after,
    /// under a container name removed at the end.
    fn run(&self, name: &str, opts: &[&str], args: &[&str]) -> Output {
        let container = Container {
            name: format!("rtlab-it-{}-{name}", std::process::id()),
        };
        let mut all = vec![
            "--runtime",
            self.runtime,
            "run",
            "--rm",
            "--name",
            &container.name,
            "--network",
            "none",
        ];
        all.extend(self.limits.iter().map(String::as_str));
        all.extend(opts);
        all.push(&self.image.tag);
        all.extend(args);
        podman(&all)
    }
}

#[test]
fn without_cap_sys_nice_the_image_names_the_capability() {
    let test = test_name!();
    let _machine = fixtures::machine_shared();
    let Some(s) = setup(test) else {
        return;
    };
    let o = s.run(
        "nocap",
        &["--cap-drop", "SYS_NICE", "--cap-add", "IPC_LOCK"],
        &["run", "--duration", "1s"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("needs CAP_SYS_NICE"), "{err}");
    assert!(err.contains("--cap-add SYS_NICE"), "{err}");
    assert!(err.contains("nothing was started"), "{err}");
    path_taken(test, "without CAP_SYS_NICE: refused, the capability named");
}

#[test]
fn in_podmans_default_cgroup_the_image_names_the_rt_time_to_write() {
    let test = test_name!();
    let _machine = fixtures::machine_exclusive();
    let Some(s) = setup(test) else {
        return;
    };
    let o = s.run(
        "default-parent",
        &[
            "--cap-add",
            "SYS_NICE,IPC_LOCK",
            "--cpuset-cpus",
            &measured(),
        ],
        &["run", "--duration", "1s"],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    if !Path::new("/sys/fs/cgroup/cpu/cpu.rt_runtime_us").exists() {
        // No RT group scheduling: the container's cgroup needs no RT time
        // (the fake trees of the unit tests cover the refusal).
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        path_taken(
            test,
            "no CONFIG_RT_GROUP_SCHED: the default parent measures",
        );
        return;
    }
    if o.status.code() == Some(0) {
        path_taken(
            test,
            "podman's default cgroup parent has RT time here: it measured",
        );
        return;
    }
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(err.contains("the container's cpu cgroup /"), "{err}");
    assert!(
        err.contains("cpu.rt_runtime_us is 0 in /sys/fs/cgroup/cpu"),
        "{err}"
    );
    assert!(err.contains("--cpu-rt-runtime=100000"), "{err}");
    assert!(err.contains("on the host, write"), "{err}");
    path_taken(
        test,
        "RT group scheduling, podman's default parent without RT time: refused, the cgroup file and a value named",
    );
}

/// The CPU the measuring container gets (`--cpuset-cpus`).
fn measured() -> String {
    fixtures::measured_cpu().to_string()
}

/// A cgroup parent with RT time, where the kernel has RT group scheduling
/// (None without it: podman's own parent serves); said either way.
fn rt_parent(test: &str) -> Result<Option<CgroupParent>, String> {
    let cpu = Path::new("/sys/fs/cgroup/cpu");
    if !cpu.join("cpu.rt_runtime_us").exists() {
        path_taken(test, "no CONFIG_RT_GROUP_SCHED: podman's default parent");
        return Ok(None);
    }
    let parent = CgroupParent {
        name: format!("rtlab-it-ctr-{}", std::process::id()),
    };
    let dir = cpu.join(&parent.name);
    std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
    std::fs::write(dir.join("cpu.rt_runtime_us"), "200000")
        .map_err(|e| format!("{}: 200000: {e}", dir.join("cpu.rt_runtime_us").display()))?;
    path_taken(
        test,
        &format!(
            "RT group scheduling: parent /{} with 200000 µs",
            parent.name
        ),
    );
    Ok(Some(parent))
}

/// The options of a real-time pod: the capabilities, one CPU, on RT group
/// scheduling a parent with RT time and the container's share, and `out`
/// as the working directory `/out` when given.
fn rt_pod_options(parent: Option<&CgroupParent>, out: Option<&Path>) -> Vec<String> {
    let mut opts: Vec<String> = ["--cap-add", "SYS_NICE,IPC_LOCK", "--cpuset-cpus"]
        .map(String::from)
        .to_vec();
    opts.push(measured());
    if let Some(out) = out {
        opts.extend(["-v".into(), format!("{}:/out", out.display())]);
        opts.extend(["-w".into(), "/out".into()]);
    }
    if let Some(p) = parent {
        opts.push(format!("--cgroup-parent=/{}", p.name));
        opts.push("--cpu-rt-runtime=100000".into());
    }
    opts
}

fn json(path: PathBuf) -> serde_json::Value {
    let bytes = std::fs::read(&path).unwrap_or_default();
    serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null)
}

#[test]
fn with_a_real_time_pods_privileges_the_image_measures() {
    let test = test_name!();
    let _machine = fixtures::machine_exclusive();
    let Some(s) = setup(test) else {
        return;
    };
    let parent = match rt_parent(test) {
        Ok(p) => p,
        Err(e) => {
            path_taken(
                test,
                &format!("no cgroup with RT time can be made here: {e}"),
            );
            return;
        }
    };
    let out = tempfile::tempdir().unwrap();
    let opts = rt_pod_options(parent.as_ref(), Some(out.path()));
    let opts: Vec<&str> = opts.iter().map(String::as_str).collect();
    let o = s.run(
        "measure",
        &opts,
        &["run", "--duration", "2s", "--json", "/out/r.json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = json(out.path().join("r.json"));
    let timers = r["timers"].as_array().cloned().unwrap_or_default();
    // The built-in experiment on the container's one CPU, under FIFO.
    assert_eq!(timers.len(), 1, "{r}");
    let cpu: u64 = measured().parse().unwrap();
    assert_eq!(timers[0]["cpus"], serde_json::json!([cpu]), "{r}");
    assert_eq!(timers[0]["sched"]["policy"], "FIFO", "{r}");
    assert!(timers[0]["summary"]["samples"].as_u64() > Some(0), "{r}");
    // /dev/cpu_dma_latency was not passed in: said so, the run went on.
    let pm = r["pm_qos"]["error"].as_str().unwrap_or_default();
    assert!(
        r["pm_qos"]["held"] == true || pm.contains("--device /dev/cpu_dma_latency"),
        "{r}"
    );
    path_taken(test, &format!("measured on CPU {cpu} under FIFO 99"));
    traced(test, &s, &opts, out.path());
    read_only(test, &s, parent.as_ref());
}

/// A read-only image without a volume: the result files are refused
/// before the run, not after it measured.
fn read_only(test: &str, s: &Setup, parent: Option<&CgroupParent>) {
    let mut opts = vec!["--read-only".to_string()];
    opts.extend(rt_pod_options(parent, None));
    let opts: Vec<&str> = opts.iter().map(String::as_str).collect();
    let o = s.run("read-only", &opts, &["run", "--duration", "1s"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("cannot write in its directory"), "{err}");
    assert!(err.contains("-v DIR:/out -w /out"), "{err}");
    assert!(err.contains("nothing was started"), "{err}");
    path_taken(
        test,
        "--read-only without a volume: the result files refused before the run",
    );
}

/// The flight recorder in the container: with the host's tracefs passed
/// in it traces; without it, it says what to pass.
fn traced(test: &str, s: &Setup, opts: &[&str], out: &Path) {
    let args = [
        "run",
        "--duration",
        "1s",
        "--trace-threshold",
        "100us",
        "--json",
    ];
    let o = s.run("untraced", opts, &[&args[..], &["/out/u.json"]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let why = json(out.join("u.json"))["trace"]["unavailable"].clone();
    assert!(
        why.as_str()
            .is_some_and(|w| w.contains("-v /sys/kernel/tracing:/sys/kernel/tracing")),
        "{why}"
    );
    let host_tracefs = fixtures::tracefs_mounts()
        .iter()
        .any(|m| m.split_whitespace().nth(1) == Some("/sys/kernel/tracing"));
    if !host_tracefs {
        path_taken(
            test,
            "no tracefs at /sys/kernel/tracing on the host: the refusal checked",
        );
        return;
    }
    let volume = ["-v", "/sys/kernel/tracing:/sys/kernel/tracing"];
    let o = s.run(
        "traced",
        &[opts, &volume[..]].concat(),
        &[&args[..], &["/out/t.json"]].concat(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = json(out.join("t.json"));
    assert!(t["trace"]["unavailable"].is_null(), "{}", t["trace"]);
    // The instance was in the host's tracefs, and is gone.
    let instance = t["trace"]["instance"].as_str().unwrap_or_default();
    assert!(instance.contains("/instances/rtlab-"), "{}", t["trace"]);
    assert!(!Path::new(instance).exists(), "{instance} left behind");
    path_taken(
        test,
        "flight recorder: refused by name without tracefs, on with the host's",
    );
}

//! Fixtures shared by the integration tests: the machine lock, command
//! output for messages, this machine's CPUs and commands, privileges.

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The machine, as the tests share it: tests that change machine-wide state
/// (partitions move every task; tuning moves IRQs, C-states and kernel
/// threads' priorities; the report tests run cyclictest beside rtlab and
/// compare CPU placements) hold it alone; the others (runs in their own
/// directories and journals) share it. Within this process a lock says so;
/// across processes (two suites run at once, from two clones) a lock on
/// [`MACHINE_LOCK`] does.
static MACHINE: RwLock<()> = RwLock::new(());

/// The file whose lock the suites of every clone share: in `/run`, which
/// only root writes (no one can plant a link there); not taken by a suite
/// run without root.
pub const MACHINE_LOCK: &str = "/run/rtlab-it-machine.lock";

/// Held by a test that changes machine-wide state.
pub struct Exclusive {
    _here: RwLockWriteGuard<'static, ()>,
    _across: Option<std::fs::File>,
    _held: Held,
}

/// Held by a test that leaves the machine as it is.
pub struct Shared {
    _here: RwLockReadGuard<'static, ()>,
    _across: Option<std::fs::File>,
    _held: Held,
}

/// How long a test held the machine, said on stderr at its end when
/// `RTLAB_TEST_TIMING` is set (with `--nocapture`: where the suite's time
/// goes, without the waits).
struct Held {
    kind: &'static str,
    since: Instant,
}

impl Held {
    fn new(kind: &'static str) -> Held {
        Held {
            kind,
            since: Instant::now(),
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if std::env::var_os("RTLAB_TEST_TIMING").is_some() {
            let name = std::thread::current().name().unwrap_or("?").to_string();
            eprintln!(
                "[held] {:>7.1} s {} {name}",
                self.since.elapsed().as_secs_f64(),
                self.kind
            );
        }
    }
}

/// The lock file, opened (None without root, or where it cannot be: then
/// this process's lock alone holds).
fn lock_file() -> Option<std::fs::File> {
    use std::os::unix::fs::MetadataExt;
    let root = std::fs::metadata("/proc/self").ok()?.uid() == 0;
    if !root {
        return None;
    }
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(MACHINE_LOCK)
        .ok()
}

/// The machine alone (a failed test's poison is ignored: each test checks
/// the state it starts from).
pub fn machine_exclusive() -> Exclusive {
    let here = MACHINE.write().unwrap_or_else(|e| e.into_inner());
    let across = lock_file().filter(|f| f.lock().is_ok());
    Exclusive {
        _here: here,
        _across: across,
        _held: Held::new("exclusive"),
    }
}

/// The machine shared with the other tests that leave it as it is.
pub fn machine_shared() -> Shared {
    let here = MACHINE.read().unwrap_or_else(|e| e.into_inner());
    let across = lock_file().filter(|f| f.lock_shared().is_ok());
    Shared {
        _here: here,
        _across: across,
        _held: Held::new("shared"),
    }
}

use std::process::Output;
use std::time::{Duration, Instant};

/// A command's status, stdout and stderr, for assertion messages.
pub fn text(o: &Output) -> String {
    format!(
        "status {:?} ({})\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Waits for `child` and takes its output, killing it if it has not ended
/// within `limit`. The kill goes to the child itself while it is still
/// unreaped, never to a PID that may by then belong to another process.
pub fn wait_output_within(mut child: std::process::Child, limit: Duration) -> Output {
    use std::io::Read;
    fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut bytes);
            }
            bytes
        })
    }
    let (out, err) = (drain(child.stdout.take()), drain(child.stderr.take()));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for a child") {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            break child.wait().expect("wait for a killed child");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// Polls `cond` until it holds or `timeout` passes; its last answer.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

/// Says which path a test took on this machine, on the real stderr (past
/// the test harness's capture, so that `cargo test` shows it).
pub fn path_taken(test: &str, what: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "[{test}] {what}");
}

/// The online CPUs of this machine, in order.
pub fn online_cpus() -> Vec<usize> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
            cpus.extend(a..=b);
        }
    }
    assert!(
        !cpus.is_empty(),
        "no online CPU in /sys/devices/system/cpu/online"
    );
    cpus
}

/// The CPU a test measures on: the last online one (on a one-CPU machine,
/// the same as [`load_cpu`]).
pub fn measured_cpu() -> usize {
    *online_cpus().last().unwrap()
}

/// The CPU a test puts its load and main thread on: the first online one.
pub fn load_cpu() -> usize {
    online_cpus()[0]
}

/// Replaces `@M` (the measured CPU) and `@L` (the load CPU) in an
/// experiment text, so that no test names a CPU number.
pub fn on_this_machine(text: &str) -> String {
    text.replace("@M", &measured_cpu().to_string())
        .replace("@L", &load_cpu().to_string())
}

/// Whether `name` is a command on the PATH.
pub fn has_command(name: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|d| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(d.join(name))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// Whether this process is root (the owner of /proc/self is the effective
/// uid).
pub fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Checks that rtlab, not root, refuses `args` before changing anything
/// (status 2, "needs root"), and says that the test took that path.
pub fn assert_refused_without_root(test: &str, args: &[&str]) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args(args)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("needs root"),
        "{args:?}: {}",
        text(&o)
    );
    path_taken(
        test,
        &format!(
            "not root: checked that rtlab refuses `{}` (status 2)",
            args.join(" ")
        ),
    );
}

/// The controllers the cgroup v2 hierarchy offers, wherever it is mounted
/// (alone at /sys/fs/cgroup, or beside v1 at /sys/fs/cgroup/unified).
pub fn v2_controllers() -> Vec<String> {
    ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
        .iter()
        .filter_map(|d| std::fs::read_to_string(format!("{d}/cgroup.controllers")).ok())
        .flat_map(|c| c.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .collect()
}

/// For a test that needs root: true as root; otherwise checks rtlab's
/// refusal of a FIFO experiment (status 2, "needs root" and a hint), says
/// so, and returns false so that the test ends there.
pub fn root_or_refusal(test: &str) -> bool {
    if is_root() {
        return true;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("fifo.cfg");
    std::fs::write(
        &cfg,
        "timer_thread[0]\n{\n  sched.policy FIFO\n  sched.priority 99\n  lifetime.loops 10\n}\n",
    )
    .unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args(["run", cfg.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("needs root"), "{stderr}");
    assert!(stderr.contains("hint:"), "{stderr}");
    path_taken(
        test,
        "not root: checked that rtlab refuses a FIFO run (status 2)",
    );
    false
}

/// Every tracefs mount line of this process.
pub fn tracefs_mounts() -> Vec<String> {
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.split_whitespace().nth(2) == Some("tracefs"))
        .map(str::to_string)
        .collect()
}

/// rtlab's trace instances left anywhere tracefs is mounted.
pub fn leftover_instances() -> Vec<String> {
    let mut out = Vec::new();
    for m in tracefs_mounts() {
        let dir = m.split_whitespace().nth(1).unwrap_or_default().to_string();
        for e in std::fs::read_dir(format!("{dir}/instances"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("rtlab-") {
                out.push(format!("{dir}/instances/{name}"));
            }
        }
    }
    out
}

/// Runs rtlab in `dir` with its own journal directory there.
pub fn rtlab_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args(args)
        .current_dir(dir)
        .env("RTLAB_JOURNAL_DIR", dir.join("journal"))
        .output()
        .unwrap()
}

/// rtlab as a user without root in `dir`: as nobody (who is then let
/// write `dir`) when the tests run as root, else as the user running them.
/// None when there is no user nobody to be.
pub fn rtlab_unprivileged(dir: &std::path::Path) -> Option<std::process::Command> {
    use std::process::Command;
    if !is_root() {
        return Some(Command::new(env!("CARGO_BIN_EXE_rtlab")));
    }
    let nobody = Command::new("id").args(["-u", "nobody"]).output().ok()?;
    if !nobody.status.success() {
        return None;
    }
    let opened = Command::new("chmod").arg("777").arg(dir).status().ok()?;
    if !opened.success() {
        return None;
    }
    let exe = exe_for_others_in(dir).ok()?;
    let mut c = Command::new("setpriv");
    c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]);
    c.arg(exe);
    Some(c)
}

/// Whether every directory above `path` lets other users through.
fn reachable_by_others(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.ancestors()
        .skip(1)
        .filter(|d| !d.as_os_str().is_empty())
        .all(|d| std::fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
}

/// rtlab's binary for another user (nobody) to run: the binary itself
/// where every directory above it lets others through (the usual
/// checkout), else a copy in `dir` (which must let them through), in a
/// directory of root's, mode 0755: a clone in a 0700 directory, or under
/// /root, is reachable by root alone.
pub fn exe_for_others_in(dir: &std::path::Path) -> std::io::Result<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_rtlab"));
    if reachable_by_others(exe) {
        return Ok(exe.to_path_buf());
    }
    let bin = dir.join("rtlab-bin");
    std::fs::create_dir_all(&bin)?;
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755))?;
    let copy = bin.join("rtlab");
    std::fs::copy(exe, &copy)?;
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755))?;
    Ok(copy)
}

/// [`exe_for_others_in`] a temporary directory of its own (mode 0755),
/// kept while the returned guard lives.
pub fn exe_for_others() -> (std::path::PathBuf, tempfile::TempDir) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    (exe_for_others_in(dir.path()).unwrap(), dir)
}

/// A systress result file's histogram: (µs, count) of each line that has
/// them (the `#` lines left out).
pub fn result_histogram(file: &str) -> Vec<(u64, u64)> {
    file.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
        })
        .collect()
}

/// The release binary for `target` (a rustup target triple), as shipped
/// (fat LTO: the locked-memory test finds the timer threads' code by
/// address, which holds for that build), built in this test's target
/// directory (cargo rebuilds it only if the sources changed); or why
/// there is none.
pub fn release_binary(target: &str) -> Result<std::path::PathBuf, String> {
    built_binary(target, true)
}

/// A board's debug binary for `target` (the boards' behaviour under QEMU,
/// where latency means nothing; it shares its dependencies with the
/// boards' unit tests, which `.ci/run` builds first).
pub fn board_binary(target: &str) -> Result<std::path::PathBuf, String> {
    built_binary(target, false)
}

fn built_binary(target: &str, release: bool) -> Result<std::path::PathBuf, String> {
    use std::path::Path;
    use std::process::Command;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The target directory this test was built in (CARGO_TARGET_DIR or
    // ./target): the host binary is its `debug/rtlab`.
    let target_dir = Path::new(env!("CARGO_BIN_EXE_rtlab"))
        .parent()
        .and_then(Path::parent)
        .unwrap_or(root);
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l == target)
        })
        .unwrap_or(false);
    if !installed {
        return Err(format!("rustup target {target} not installed"));
    }
    let mut build = Command::new(env!("CARGO"));
    build.args(["build", "--target", target]);
    if release {
        build.arg("--release");
    }
    let o = build
        .env("CARGO_TARGET_DIR", target_dir)
        .current_dir(root)
        .output()
        .map_err(|e| e.to_string())?;
    if !o.status.success() {
        return Err(format!("cannot build for {target}: {}", text(&o)));
    }
    let profile = if release { "release" } else { "debug" };
    Ok(target_dir.join(target).join(profile).join("rtlab"))
}

/// Each CPU's steal time in `/proc/stat` (USER_HZ ticks), one read: time
/// the hypervisor ran something else while that vCPU wanted to run; 0
/// where the kernel reports none.
pub fn steal_ticks_all() -> Vec<(usize, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    stat.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let cpu = f.next()?.strip_prefix("cpu")?.parse().ok()?;
            Some((cpu, f.nth(7).and_then(|s| s.parse().ok()).unwrap_or(0)))
        })
        .collect()
}

/// The steal time of `cpu` (see [`steal_ticks_all`]); None where its line
/// is missing.
pub fn steal_ticks(cpu: usize) -> Option<u64> {
    steal_ticks_all()
        .into_iter()
        .find_map(|(c, t)| (c == cpu).then_some(t))
}

/// Runs the experiment `cfg` in `dir` as `NAME.cfg` with `--json NAME.json`:
/// the output and the JSON result (Null when none was written).
pub fn run_json(dir: &std::path::Path, name: &str, cfg: &str) -> (Output, serde_json::Value) {
    std::fs::write(dir.join(format!("{name}.cfg")), cfg).unwrap();
    let json = format!("{name}.json");
    let o = rtlab_in(dir, &["run", &format!("{name}.cfg"), "--json", &json]);
    let r = std::fs::read(dir.join(&json))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(serde_json::Value::Null);
    (o, r)
}

/// A FIFO 90 timer thread with a 1 ms period on the measured CPU, with the
/// `extra` lines.
pub fn fifo_timer(extra: &str) -> String {
    format!(
        "timer_thread[0] {{\n cpu_affinity {}\n sched.policy FIFO\n sched.priority 90\n \
         timer.period 1 ms\n {extra}\n}}\n",
        measured_cpu()
    )
}

/// Starts `cmd` as process `pid` (a number that was another process's),
/// through the kernel's last-PID counter (root); None when this machine
/// will not (no counter, not root, or other processes kept taking the
/// number first).
pub fn spawn_as_pid(pid: i32, cmd: &mut std::process::Command) -> Option<std::process::Child> {
    let counter = "/proc/sys/kernel/ns_last_pid";
    for _ in 0..50 {
        std::fs::write(counter, (pid - 1).to_string()).ok()?;
        let mut child = cmd.spawn().ok()?;
        if child.id() as i32 == pid {
            return Some(child);
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    None
}

//! The programs of a run (`program[N]`): started without a shell, each in
//! its own process group and in the run's tracking cgroup, supervised
//! (RESPAWN / IGNORE / ABORT with a back-off for crash loops), and stopped
//! at the end with SIGTERM, then SIGKILL after the grace period. A
//! [`guard::Guard`] process cleans up if rtlab itself dies; what programs
//! leave behind (the processes rtlab adopts as their subreaper) is swept
//! up by `leftovers`.
//!
//! Back-off: a program that ran for less than [`HEALTHY_RUN`] before it
//! exited is restarted after a delay that starts at [`FIRST_BACKOFF`] and
//! doubles up to [`MAX_BACKOFF`]; one that ran longer is restarted at once
//! and its delay is reset.

pub mod guard;
mod leftovers;

use crate::config::Action;
use crate::isolate::cpuset::CpusetTarget;
use crate::sched::Sched;
use crate::sys::SysRoot;
use crate::sys::cgroup::TrackingCgroup;
use crate::sys::journal::{Change, Journal};
use crate::sys::os::{self, ChildSetup};
use crate::sys::outfile::Staged;
use crate::tune::bandwidth::{BandwidthError, GroupResult, GroupSpec, Groups};
use serde::Serialize;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A run shorter than this counts as a crash for the back-off.
pub const HEALTHY_RUN: Duration = Duration::from_secs(1);
/// First respawn delay after a short run.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// Longest respawn delay.
pub const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// Exit records kept per program (the count goes on beyond).
pub const MAX_EXIT_RECORDS: usize = 1000;

/// One end of a program instance.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ExitRecord {
    /// Process id of the instance that ended.
    pub pid: Option<i32>,
    /// Seconds since the run started.
    pub at_s: f64,
    /// How long it ran (s).
    pub ran_s: f64,
    /// Exit code, when it exited.
    pub code: Option<i32>,
    /// Signal, when it was killed.
    pub signal: Option<i32>,
    /// rtlab stopped it at the end of the run.
    pub stopped_by_rtlab: bool,
}

impl ExitRecord {
    /// `status 1`, `signal 11 (SIGSEGV)`.
    pub fn describe(&self) -> String {
        match (self.code, self.signal) {
            (Some(c), _) => format!("exit status {c}"),
            (None, Some(s)) => format!("signal {s} ({})", signal_name(s)),
            _ => "unknown status".into(),
        }
    }
}

/// The name of a signal number.
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        crate::sys::consts::SIGHUP => "SIGHUP",
        crate::sys::consts::SIGINT => "SIGINT",
        crate::sys::consts::SIGQUIT => "SIGQUIT",
        crate::sys::consts::SIGILL => "SIGILL",
        crate::sys::consts::SIGABRT => "SIGABRT",
        crate::sys::consts::SIGBUS => "SIGBUS",
        crate::sys::consts::SIGFPE => "SIGFPE",
        crate::sys::consts::SIGKILL => "SIGKILL",
        crate::sys::consts::SIGSEGV => "SIGSEGV",
        crate::sys::consts::SIGPIPE => "SIGPIPE",
        crate::sys::consts::SIGALRM => "SIGALRM",
        crate::sys::consts::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}

/// What happened to a program during the run.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ProgramResult {
    /// Index N.
    pub index: usize,
    /// argv.
    pub argv: Vec<String>,
    /// How many times it was started.
    pub starts: u64,
    /// How many times it ended.
    pub exits_total: u64,
    /// The first [`MAX_EXIT_RECORDS`] ends.
    pub exits: Vec<ExitRecord>,
    /// Why it could not be started, if it could not.
    pub spawn_error: Option<String>,
    /// Process id of its first instance (each end has its own in `exits`).
    pub first_pid: Option<i32>,
    /// The cpuset its first instance ran in (`/proc/PID/cpuset`).
    pub cpuset: Option<String>,
    /// The CPUs its first instance was allowed (`Cpus_allowed_list`).
    pub cpus_allowed: Option<String>,
}

struct Program {
    plan: ProgramSpec,
    child: Option<Child>,
    started_at: Instant,
    backoff: Duration,
    respawn_at: Option<Instant>,
    /// `cgroup.procs` of its cpuset, open for the child to write itself in.
    cpuset_procs: Option<File>,
    result: ProgramResult,
}

/// A program to start and supervise, as the plan checked it.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ProgramSpec {
    /// Index N.
    pub index: usize,
    /// argv as written.
    pub argv: Vec<String>,
    /// argv[0] resolved on PATH.
    pub executable: PathBuf,
    /// CPUs (None: inherited).
    pub cpus: Option<Vec<usize>>,
    /// Scheduling.
    pub sched: Sched,
    /// stdout target.
    pub out: PathBuf,
    /// stderr target.
    pub err: PathBuf,
    /// On exit 0.
    pub on_ok: Action,
    /// On failure.
    pub on_ko: Action,
    /// TERM → KILL grace period (ns).
    pub grace_ns: u64,
    /// Cpuset the process enters before exec.
    pub cpuset: Option<CpusetTarget>,
    /// CPU bandwidth group it enters before exec.
    pub cpu_group: Option<String>,
}

/// Why the supervisor asks the run to stop.
#[derive(Debug, Clone, PartialEq)]
pub struct AbortRequest {
    /// Which program.
    pub index: usize,
    /// What it was (argv[0]).
    pub command: String,
    /// How it ended.
    pub status: String,
}

/// Why programs could not be started.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The CPU bandwidth groups could not be made.
    #[error("cannot make the CPU bandwidth groups: {0}")]
    Groups(#[source] BandwidthError),
    /// CPU bandwidth groups without the journal that undoes them.
    #[error("cannot make the CPU bandwidth groups: they need the journal of system changes")]
    NoJournal,
    /// A program's `output.out`/`output.err` could not be opened.
    #[error("{who}: cannot open its output: {source}")]
    Output {
        /// `program[N] (`argv`)`.
        who: String,
        /// Why.
        source: OutputTargetError,
    },
    /// Its affinity, policy or cgroups could not be prepared.
    #[error("{who}: {source}")]
    Setup {
        /// `program[N] (`argv`)`.
        who: String,
        /// The system's answer.
        source: std::io::Error,
    },
    /// The kernel refused to start it.
    #[error("{who}: cannot start: {source}")]
    Spawn {
        /// `program[N] (`argv`)`.
        who: String,
        /// The system's answer.
        source: std::io::Error,
    },
}

/// Why a program's output file could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OutputTargetError {
    /// The file could not be made safely (see `sys::outfile`).
    #[error(transparent)]
    Create(#[from] crate::sys::outfile::OutputError),
    /// Its open file could not be shared with the child.
    #[error("{}: {source}", path.display())]
    Share {
        /// The file.
        path: PathBuf,
        /// The system's answer.
        source: std::io::Error,
    },
}

/// Most process groups of ended programs followed (a respawning program
/// that leaves processes behind each time would otherwise grow the list).
const MAX_LINGERING: usize = 64;
/// Most adopted processes followed at once (past it, they are still
/// killed with the run's tracking cgroup, as root).
const MAX_ADOPTED: usize = 4096;
/// How often, without a tracking cgroup, the descendants' process groups
/// are looked for (a scan of `/proc`).
const DESCENDANTS_LOOK: Duration = Duration::from_millis(250);

/// Supervises the programs of a run.
pub struct Supervisor {
    programs: Vec<Program>,
    cgroup: Option<TrackingCgroup>,
    cgroup_procs: Option<File>,
    guard: Option<guard::Guard>,
    /// CPU bandwidth groups (their cgroup.procs open for children).
    groups: Option<Groups>,
    /// Why the bandwidth groups could not be made (the run must not start).
    groups_error: Option<LoadError>,
    run_start: Instant,
    all_cpus: Vec<usize>,
    root: SysRoot,
    /// Program output files, written under temporary names and put in
    /// place when the programs are stopped (one per path: `output.out`
    /// and `output.err` may name the same file, as `>f 2>&1` does).
    outputs: Vec<(PathBuf, Staged)>,
    /// Process groups of programs that ended while processes they started
    /// were still in them: stopped with the rest, waited for at the end.
    lingering: Vec<i32>,
    /// Helper programs (`on_spike run`) running: each leads its group.
    helpers: Vec<Child>,
    /// Groups of helpers that ended, killed, followed until empty.
    helper_groups: Vec<i32>,
    /// The CPUs helpers run on.
    helper_cpus: Vec<usize>,
    /// rtlab is the subreaper of what it starts: a process that left its
    /// group (`setsid`) and whose parent ended comes to it.
    subreaper: bool,
    /// Such processes, adopted, with where they came from.
    adopted: Vec<(i32, leftovers::Origin)>,
    /// The run's mark, in the environment of every program and helper
    /// (`RTLAB_RUN`): what they start keeps it, whatever group or session
    /// it goes to.
    mark: String,
    /// Without a tracking cgroup: the process groups of rtlab's
    /// descendants told to the guard, and when to look again.
    told: Vec<i32>,
    next_look: Instant,
    /// Problems worth reporting that did not stop the run.
    pub warnings: Vec<String>,
}

/// How long a helper still running at the end of the run is waited for
/// before its group is killed.
pub const HELPER_GRACE: Duration = Duration::from_secs(2);

/// The guard process and the tracking cgroup that keep programs from
/// outliving rtlab, journalled first: if rtlab and its guard both die, the
/// next rtlab (or `rtlab restore`) empties and removes the cgroup. What
/// cannot be had is said in `warnings`.
fn track(
    root: &SysRoot,
    name: &str,
    cpus: &[usize],
    journal: Option<&mut Journal>,
    warnings: &mut Vec<String>,
) -> (
    Option<guard::Guard>,
    Option<TrackingCgroup>,
    Option<std::fs::File>,
) {
    let (mut guard, mut cgroup, mut cgroup_procs) = (None, None, None);
    match guard::Guard::start(cpus) {
        Ok(g) => guard = Some(g),
        Err(e) => warnings.push(format!(
            "cannot start the guard process ({e}): programs may outlive rtlab if it is killed"
        )),
    }
    // Journalled first: if rtlab and its guard both die, the next
    // rtlab (or `rtlab restore`) empties and removes it.
    if let (Some(j), Ok(dir)) = (journal, TrackingCgroup::dir_for(root, name))
        && let Err(e) = j.record(&Change::TrackingCgroup { path: dir })
    {
        warnings.push(format!("{e}"));
    }
    match TrackingCgroup::create(root, name).and_then(|cg| cg.open_procs().map(|f| (cg, f))) {
        Ok((cg, f)) => {
            if let Some(g) = guard.as_mut() {
                g.tell(&format!("cgroup {}", cg.dir()));
            }
            cgroup = Some(cg);
            cgroup_procs = Some(f);
        }
        Err(e) => warnings.push(format!(
            "no tracking cgroup ({e}): programs are tracked by process group only"
        )),
    }
    (guard, cgroup, cgroup_procs)
}

/// Each program's output file, staged and journalled before its programs
/// start: a run killed before the outputs are put in place leaves no
/// temporary file behind (the journal's replay removes it). One that
/// cannot be staged now is tried again, and refused, when its program
/// starts.
fn stage_outputs(
    plans: &[ProgramSpec],
    mut journal: Option<&mut Journal>,
) -> Vec<(PathBuf, Staged)> {
    let mut outputs: Vec<(PathBuf, Staged)> = Vec::new();
    for path in plans.iter().flat_map(|p| [&p.out, &p.err]) {
        if path == Path::new("/dev/null") || outputs.iter().any(|(p, _)| p == path) {
            continue;
        }
        let staged = match journal.as_deref_mut() {
            Some(j) => Staged::create_journalled(path, j),
            None => Staged::create(path),
        };
        if let Ok(s) = staged {
            outputs.push((path.clone(), s));
        }
    }
    outputs
}

impl Program {
    /// Program `p` as planned, not started yet (its cpuset's process file
    /// opened now: a refusal is a warning).
    fn planned(
        p: &ProgramSpec,
        root: &SysRoot,
        run_start: Instant,
        warnings: &mut Vec<String>,
    ) -> Self {
        Program {
            plan: p.clone(),
            child: None,
            started_at: run_start,
            backoff: Duration::ZERO,
            respawn_at: None,
            cpuset_procs: p.cpuset.as_ref().and_then(|cs| {
                root.open_write(&cs.process_file())
                    .map_err(|e| {
                        warnings.push(format!(
                            "program[{}]: cannot enter cpuset {}: {e}",
                            p.index,
                            cs.display()
                        ))
                    })
                    .ok()
            }),
            result: ProgramResult {
                index: p.index,
                argv: p.argv.clone(),
                starts: 0,
                exits_total: 0,
                exits: Vec::new(),
                spawn_error: None,
                first_pid: None,
                cpuset: None,
                cpus_allowed: None,
            },
        }
    }
}

impl Supervisor {
    /// Prepares supervision: guard process, tracking cgroup and CPU
    /// bandwidth groups (only when there are programs, or helpers may be
    /// started: `helper_cpus` is then not empty).
    pub fn new(
        plans: &[ProgramSpec],
        cpu_groups: &[GroupSpec],
        root: &SysRoot,
        all_cpus: Vec<usize>,
        run_start: Instant,
        mut journal: Option<&mut Journal>,
        helper_cpus: Vec<usize>,
    ) -> Self {
        let mut warnings = Vec::new();
        // The tracking cgroup and the v1 bandwidth groups' parent share it.
        let name = format!("rtlab-{}", os::getpid());
        let tracked = !plans.is_empty() || !helper_cpus.is_empty();
        let subreaper = tracked && os::become_subreaper().is_ok();
        // This process and its start: no other run's mark.
        let mark = format!(
            "{}.{}",
            os::getpid(),
            crate::sys::tasks::start_time(root, os::getpid()).unwrap_or(0)
        );
        let (guard, cgroup, cgroup_procs) = if !tracked {
            (None, None, None)
        } else {
            // The guard off the measured CPUs where the helpers' CPUs say
            // which those are.
            let cpus = if helper_cpus.is_empty() {
                &all_cpus
            } else {
                &helper_cpus
            };
            track(root, &name, cpus, journal.as_deref_mut(), &mut warnings)
        };
        let mut guard = guard;
        if let Some(g) = guard.as_mut() {
            g.tell(&format!("mark {mark}"));
        }
        let outputs = stage_outputs(plans, journal.as_deref_mut());
        let (groups, groups_error) = if cpu_groups.is_empty() {
            (None, None)
        } else {
            let parent = cgroup.as_ref().map(TrackingCgroup::dir);
            let made = match journal {
                Some(j) => {
                    Groups::create(root, j, &name, parent, cpu_groups).map_err(LoadError::Groups)
                }
                None => Err(LoadError::NoJournal),
            };
            match made {
                Ok(g) => (Some(g), None),
                Err(e) => (None, Some(e)),
            }
        };
        Supervisor {
            programs: plans
                .iter()
                .map(|p| Program::planned(p, root, run_start, &mut warnings))
                .collect(),
            cgroup,
            cgroup_procs,
            guard,
            groups,
            groups_error,
            run_start,
            all_cpus,
            root: root.clone(),
            outputs,
            lingering: Vec::new(),
            helpers: Vec::new(),
            helper_groups: Vec::new(),
            helper_cpus,
            subreaper,
            adopted: Vec::new(),
            mark,
            told: Vec::new(),
            next_look: run_start,
            warnings,
        }
    }

    /// Each CPU bandwidth group's throttling so far (read before the run's
    /// journal removes the groups).
    pub fn bandwidth_results(&self) -> Vec<GroupResult> {
        self.groups
            .as_ref()
            .map(Groups::results)
            .unwrap_or_default()
    }

    /// Starts every program. An error names the program that could not start.
    pub fn start_all(&mut self) -> Result<(), LoadError> {
        if let Some(e) = self.groups_error.take() {
            return Err(e);
        }
        for i in 0..self.programs.len() {
            self.spawn(i)?;
        }
        Ok(())
    }

    /// The child's end of an output target. Every instance of every
    /// program naming `path` writes through one open file (a respawned
    /// instance goes on after the last one's output).
    fn open_target(
        outputs: &mut Vec<(PathBuf, Staged)>,
        path: &Path,
    ) -> Result<Stdio, OutputTargetError> {
        if path == Path::new("/dev/null") {
            return Ok(Stdio::null());
        }
        let at = match outputs.iter().position(|(p, _)| p == path) {
            Some(at) => at,
            None => {
                let staged = Staged::create(path)?;
                outputs.push((path.to_path_buf(), staged));
                outputs.len() - 1
            }
        };
        outputs[at]
            .1
            .file()
            .try_clone()
            .map(Stdio::from)
            .map_err(|source| OutputTargetError::Share {
                path: path.to_path_buf(),
                source,
            })
    }

    /// The `cgroup.procs` files a child writes itself into: the tracking
    /// cgroup, and the bandwidth group `cpu_group` if any.
    fn cgroup_fds(&self, cpu_group: Option<&str>) -> Vec<std::os::fd::RawFd> {
        let tracking_fd = self.cgroup_procs.as_ref().map(|f| f.as_raw_fd());
        let group_fd = cpu_group
            .and_then(|g| self.groups.as_ref()?.procs(g))
            .map(|f| f.as_raw_fd());
        // On cgroup v2 the bandwidth groups are leaves of the tracking
        // cgroup, which then holds no process itself.
        let v2_leaf = self
            .groups
            .as_ref()
            .and_then(Groups::default_leaf)
            .map(|f| f.as_raw_fd());
        match v2_leaf {
            Some(leaf) => vec![group_fd.unwrap_or(leaf)],
            None => tracking_fd.into_iter().chain(group_fd).collect(),
        }
    }

    fn spawn(&mut self, i: usize) -> Result<(), LoadError> {
        let cgroup_fds = self.cgroup_fds(self.programs[i].plan.cpu_group.as_deref());
        let all_cpus = self.all_cpus.clone();
        let p = &mut self.programs[i];
        let cgroup_fds: Vec<_> = cgroup_fds
            .into_iter()
            .chain(p.cpuset_procs.as_ref().map(|f| f.as_raw_fd()))
            .collect();
        let who = format!("program[{}] (`{}`)", p.plan.index, p.plan.argv.join(" "));
        let mut cmd = Command::new(&p.plan.executable);
        cmd.arg0(&p.plan.argv[0])
            .args(&p.plan.argv[1..])
            .env(guard::MARK, &self.mark)
            .stdin(Stdio::null())
            .process_group(0);
        let output = |source| LoadError::Output {
            who: who.clone(),
            source,
        };
        let out = Self::open_target(&mut self.outputs, &p.plan.out).map_err(output)?;
        let err = Self::open_target(&mut self.outputs, &p.plan.err).map_err(output)?;
        cmd.stdout(out).stderr(err);
        // Always set affinity and policy: the child must not inherit the
        // conductor's (which may be pinned or real-time).
        os::prepare_child(
            &mut cmd,
            ChildSetup {
                cpus: Some(p.plan.cpus.clone().unwrap_or(all_cpus)),
                sched: Some(p.plan.sched),
                cgroup_procs_fds: cgroup_fds,
                die_with_parent: true,
                announce_to: self.guard.as_ref().and_then(guard::Guard::announce_fd),
            },
        )
        .map_err(|source| LoadError::Setup {
            who: who.clone(),
            source,
        })?;
        match cmd.spawn() {
            Ok(child) => {
                if let Some(g) = self.guard.as_mut() {
                    g.tell(&format!("pgid {}", child.id()));
                }
                crate::messages::debug(1, &format!("{who}: started, pid {}", child.id()));
                if p.result.starts == 0 {
                    let pid = child.id() as i32;
                    p.result.first_pid = Some(pid);
                    p.result.cpuset = self.root.read_opt(&crate::sys::paths::task_cpuset(pid));
                    p.result.cpus_allowed =
                        crate::sys::tasks::status_field(&self.root, pid, "Cpus_allowed_list");
                }
                p.child = Some(child);
                p.started_at = Instant::now();
                p.result.starts += 1;
                Ok(())
            }
            Err(e) => {
                let e = LoadError::Spawn { who, source: e };
                p.result.spawn_error = Some(e.to_string());
                Err(e)
            }
        }
    }

    fn record_exit(&mut self, i: usize, status: ExitStatus, by_rtlab: bool) -> ExitRecord {
        let now = Instant::now();
        let p = &mut self.programs[i];
        let rec = ExitRecord {
            pid: p.child.as_ref().map(|c| c.id() as i32),
            at_s: now.duration_since(self.run_start).as_secs_f64(),
            ran_s: now.duration_since(p.started_at).as_secs_f64(),
            code: status.code(),
            signal: status.signal(),
            stopped_by_rtlab: by_rtlab,
        };
        p.result.exits_total += 1;
        if p.result.exits.len() < MAX_EXIT_RECORDS {
            p.result.exits.push(rec.clone());
        }
        if let Some(child) = p.child.take() {
            // The group is gone once its leader is reaped and nothing else
            // remains in it; else what is left in it is stopped with the
            // rest (its number cannot be reused while it is in use).
            let pgid = child.id() as i32;
            if os::kill_group(pgid, 0).is_err() {
                if let Some(g) = self.guard.as_mut() {
                    g.tell(&format!("forget {pgid}"));
                }
            } else if !self.lingering.contains(&pgid) && self.lingering.len() < MAX_LINGERING {
                self.lingering.push(pgid);
            }
        }
        rec
    }

    /// Starts a helper program (an `on_spike run`), as programs are
    /// started: no shell, its own process group, the tracking cgroup, the
    /// guard told; SCHED_OTHER on the helpers' CPUs, never the conductor's
    /// policy and pinning; killed if rtlab's main thread dies. Its group
    /// is killed when it ends ([`Supervisor::poll`]) and when the run ends.
    pub fn start_helper(
        &mut self,
        executable: &Path,
        argv: &[String],
        env: &[(&str, String)],
    ) -> std::io::Result<i32> {
        let mut cmd = Command::new(executable);
        cmd.arg0(argv.first().map_or("", String::as_str))
            .args(argv.iter().skip(1))
            .env(guard::MARK, &self.mark)
            .stdin(Stdio::null())
            .process_group(0);
        for (k, v) in env {
            cmd.env(k, v);
        }
        os::prepare_child(
            &mut cmd,
            ChildSetup {
                cpus: (!self.helper_cpus.is_empty()).then(|| self.helper_cpus.clone()),
                sched: Some(Sched::default()),
                cgroup_procs_fds: self.cgroup_fds(None),
                die_with_parent: true,
                announce_to: self.guard.as_ref().and_then(guard::Guard::announce_fd),
            },
        )?;
        let child = cmd.spawn()?;
        let pid = child.id() as i32;
        if let Some(g) = self.guard.as_mut() {
            g.tell(&format!("pgid {pid}"));
        }
        self.helpers.push(child);
        Ok(pid)
    }

    /// Helpers running, groups of ended ones not yet empty, and the
    /// processes that left a helper's group not yet reaped (or that
    /// cleared their environment: they may be a helper's).
    pub fn helpers_alive(&self) -> usize {
        let adopted = self.adopted.iter().filter(|a| a.1.bounds_spikes()).count();
        self.helpers.len() + self.helper_groups.len() + adopted
    }

    /// Takes in the processes rtlab adopted as their subreaper: each is
    /// told to the guard (it leads a group of its own, or is in one rtlab
    /// knows), one that left a helper's group is killed at once (a
    /// helper's leftovers end with it), one of a program's is left to the
    /// end of the run (a daemon a program started is its load). The ended
    /// ones are reaped.
    fn adopt(&mut self) {
        if !self.subreaper {
            return;
        }
        let known: Vec<i32> = self
            .programs
            .iter()
            .filter_map(|p| Some(p.child.as_ref()?.id() as i32))
            .chain(self.helpers.iter().map(|h| h.id() as i32))
            .chain(self.guard.as_ref().map(guard::Guard::pid))
            .collect();
        let own = os::own_process_group();
        for pid in crate::sys::tasks::children_of_self(&self.root) {
            if known.contains(&pid) || self.adopted.iter().any(|a| a.0 == pid) {
                continue;
            }
            let origin = leftovers::Origin::of(&self.root, pid);
            let pgid =
                crate::sys::tasks::process_group(&self.root, pid).filter(|&g| g > 1 && g != own);
            if let (Some(g), Some(guard)) = (pgid, self.guard.as_mut()) {
                guard.tell(&format!("pgid {g}"));
            }
            if origin == leftovers::Origin::Helper {
                if let Some(g) = pgid {
                    let _ = os::kill_group(g, crate::sys::consts::SIGKILL);
                }
                let _ = os::kill_pid(pid, crate::sys::consts::SIGKILL);
            }
            if self.adopted.len() < MAX_ADOPTED {
                self.adopted.push((pid, origin));
            }
        }
        self.adopted.retain(|&(pid, _)| !os::reap_if_ended(pid));
    }

    /// Without a tracking cgroup (as a user other than root), tells the
    /// guard, every [`DESCENDANTS_LOOK`], the process group of each
    /// process descended from rtlab: one that left its program's group
    /// (`setsid`) while its parent lives is then killed too if rtlab
    /// dies. A group found empty is forgotten (its number may be reused).
    fn tell_descendant_groups(&mut self) {
        let now = Instant::now();
        if self.cgroup.is_some() || self.guard.is_none() || now < self.next_look {
            return;
        }
        self.next_look = now + DESCENDANTS_LOOK;
        let table = crate::sys::tasks::process_table(&self.root);
        let own = os::own_process_group();
        let guard_pid = self.guard.as_ref().map(guard::Guard::pid);
        let groups: Vec<i32> = crate::sys::tasks::descendants(&table, os::getpid())
            .into_iter()
            .filter(|&(pid, g)| Some(pid) != guard_pid && g > 1 && g != own)
            .map(|d| d.1)
            .collect();
        let Some(guard) = self.guard.as_mut() else {
            return;
        };
        self.told.retain(|g| {
            let alive = table.iter().any(|p| p.2 == *g);
            if !alive {
                guard.tell(&format!("forget {g}"));
            }
            alive
        });
        for g in groups {
            if !self.told.contains(&g) && self.told.len() < MAX_ADOPTED {
                guard.tell(&format!("pgid {g}"));
                self.told.push(g);
            }
        }
    }

    /// Sends `signal` to every process adopted (and its group, when it
    /// leads one).
    fn signal_adopted(&self, signal: i32) {
        let own = os::own_process_group();
        for &(pid, _) in &self.adopted {
            if crate::sys::tasks::process_group(&self.root, pid) == Some(pid) && pid != own {
                let _ = os::kill_group(pid, signal);
            }
            let _ = os::kill_pid(pid, signal);
        }
    }

    /// Ends the helpers that are done: what each left in its group is
    /// killed while its leader is still unreaped (the group's number is
    /// then still its own), then it is reaped; a group found empty is
    /// forgotten (its number may be reused). With `all`, the helpers
    /// still running are killed too.
    fn reap_helpers(&mut self, all: bool) {
        let mut i = 0;
        while i < self.helpers.len() {
            let pid = self.helpers[i].id() as i32;
            if !all && !os::child_ended(pid).unwrap_or(true) {
                i += 1;
                continue;
            }
            let _ = os::kill_group(pid, crate::sys::consts::SIGKILL);
            let _ = self.helpers.swap_remove(i).wait();
            self.helper_groups.push(pid);
        }
        let guard = &mut self.guard;
        self.helper_groups.retain(|&pgid| {
            let alive = os::kill_group(pgid, 0).is_ok();
            if alive {
                let _ = os::kill_group(pgid, crate::sys::consts::SIGKILL);
            } else if let Some(g) = guard.as_mut() {
                g.tell(&format!("forget {pgid}"));
            }
            alive
        });
    }

    /// The programs running now: (index, PID).
    pub fn running(&self) -> Vec<(usize, i32)> {
        self.programs
            .iter()
            .filter_map(|p| Some((p.plan.index, p.child.as_ref()?.id() as i32)))
            .collect()
    }

    /// Reaps ended programs and applies their termination action; starts
    /// programs whose back-off delay is over. Returns an abort request when an
    /// ABORT action fires or a respawn fails.
    pub fn poll(&mut self) -> Option<AbortRequest> {
        self.reap_helpers(false);
        self.adopt();
        self.tell_descendant_groups();
        let now = Instant::now();
        for i in 0..self.programs.len() {
            let status = match self.programs[i].child.as_mut().map(Child::try_wait) {
                Some(Ok(Some(status))) => status,
                _ => {
                    if self.programs[i].respawn_at.is_some_and(|t| t <= now) {
                        self.programs[i].respawn_at = None;
                        if let Err(e) = self.spawn(i) {
                            return Some(self.abort_request(i, e.to_string()));
                        }
                    }
                    continue;
                }
            };
            let rec = self.record_exit(i, status, false);
            let p = &mut self.programs[i];
            let action = if status.success() {
                p.plan.on_ok
            } else {
                p.plan.on_ko
            };
            match action {
                Action::Ignore => {}
                Action::Abort => return Some(self.abort_request(i, rec.describe())),
                Action::Respawn => {
                    if Duration::from_secs_f64(rec.ran_s) >= HEALTHY_RUN {
                        p.backoff = Duration::ZERO;
                    } else {
                        p.backoff = (p.backoff * 2).clamp(FIRST_BACKOFF, MAX_BACKOFF);
                    }
                    if p.backoff.is_zero() {
                        if let Err(e) = self.spawn(i) {
                            return Some(self.abort_request(i, e.to_string()));
                        }
                    } else {
                        p.respawn_at = Some(now + p.backoff);
                    }
                }
            }
        }
        None
    }

    fn abort_request(&self, i: usize, status: String) -> AbortRequest {
        let p = &self.programs[i];
        AbortRequest {
            index: p.plan.index,
            command: p.plan.argv.join(" "),
            status,
        }
    }

    /// The earliest pending respawn.
    pub fn next_respawn(&self) -> Option<Instant> {
        self.programs.iter().filter_map(|p| p.respawn_at).min()
    }

    /// Stops every program and everything it started: SIGTERM to each
    /// process group and the cgroup, SIGKILL after each grace period, and
    /// waits until nothing is left. Then dismisses the guard.
    pub fn stop_all(&mut self) {
        for p in &mut self.programs {
            p.respawn_at = None;
            if let Some(c) = &p.child {
                let _ = os::kill_group(c.id() as i32, crate::sys::consts::SIGTERM);
            }
        }
        for &pgid in &self.lingering {
            let _ = os::kill_group(pgid, crate::sys::consts::SIGTERM);
        }
        for h in &self.helpers {
            let _ = os::kill_group(h.id() as i32, crate::sys::consts::SIGTERM);
        }
        self.adopt();
        self.signal_adopted(crate::sys::consts::SIGTERM);
        if let Some(cg) = &self.cgroup {
            cg.signal_all(crate::sys::consts::SIGTERM);
        }
        let start = Instant::now();
        let longest = self
            .programs
            .iter()
            .map(|p| Duration::from_nanos(p.plan.grace_ns))
            .chain((!self.helpers.is_empty()).then_some(HELPER_GRACE))
            .max()
            .unwrap_or_default();
        loop {
            let elapsed = start.elapsed();
            for i in 0..self.programs.len() {
                let grace = Duration::from_nanos(self.programs[i].plan.grace_ns);
                let Some(child) = self.programs[i].child.as_mut() else {
                    continue;
                };
                match child.try_wait() {
                    Ok(Some(status)) => {
                        let pgid = child.id() as i32;
                        self.record_exit(i, status, true);
                        // Its children may still be in the group.
                        let _ = os::kill_group(pgid, crate::sys::consts::SIGKILL);
                    }
                    _ if elapsed >= grace => {
                        let _ = os::kill_group(child.id() as i32, crate::sys::consts::SIGKILL);
                    }
                    _ => {}
                }
            }
            self.reap_helpers(elapsed >= HELPER_GRACE);
            let running =
                self.programs.iter().any(|p| p.child.is_some()) || !self.helpers.is_empty();
            let cgroup_busy = self.cgroup.as_ref().is_some_and(|cg| !cg.pids().is_empty());
            if !running && !cgroup_busy {
                break;
            }
            if elapsed >= longest
                && let Some(cg) = self.cgroup.as_ref().filter(|_| cgroup_busy)
            {
                cg.signal_all(crate::sys::consts::SIGKILL);
            }
            if elapsed >= longest + Duration::from_secs(5) {
                // A process in uninterruptible sleep can ignore SIGKILL for a
                // while: report it rather than hang.
                self.warnings
                    .push("some program processes did not end 5 s after SIGKILL".into());
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.wait_for_groups(start + longest + Duration::from_secs(5));
        // What left its group and session, and whose parent ended just now
        // (not adopted yet): found by the run's mark.
        if self.subreaper {
            guard::kill_marked(&self.mark);
            self.sweep_adopted();
        }
        if let Some(cg) = self.cgroup.take() {
            self.cgroup_procs = None;
            if let Err(left) = cg.kill_and_remove(Duration::from_secs(5)) {
                self.warnings.push(format!(
                    "processes {left:?} survived SIGKILL in {}",
                    cg.dir()
                ));
            }
        }
        if let Some(g) = self.guard.take() {
            g.finish();
        }
        for (_, staged) in self.outputs.drain(..) {
            if let Err(e) = staged.commit() {
                self.warnings.push(e.with_hint());
            }
        }
    }

    /// Waits, until `by`, for the killed process groups to be empty: a
    /// killed process is gone only once it has exited (a large one takes a
    /// while to give back its memory) and been reaped.
    fn wait_for_groups(&mut self, by: Instant) {
        self.reap_helpers(true);
        let mut left = std::mem::take(&mut self.lingering);
        left.append(&mut self.helper_groups);
        loop {
            // rtlab's own adopted zombies would keep a group alive.
            self.adopt();
            left.retain(|&pgid| os::kill_group(pgid, 0).is_ok());
            if left.is_empty() || Instant::now() >= by {
                break;
            }
            for &pgid in &left {
                let _ = os::kill_group(pgid, crate::sys::consts::SIGKILL);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        for pgid in left {
            self.warnings.push(format!(
                "processes of program group {pgid} did not end after SIGKILL"
            ));
        }
    }

    /// What happened to each program.
    pub fn results(&self) -> Vec<ProgramResult> {
        self.programs.iter().map(|p| p.result.clone()).collect()
    }
}

impl Drop for Supervisor {
    /// However the run ends, no program outlives its supervisor (a second
    /// stop after [`Supervisor::stop_all`] finds nothing left to do).
    fn drop(&mut self) {
        self.stop_all();
    }
}

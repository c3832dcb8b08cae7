//! CPU isolation with cgroup cpusets, the partrt way: an `rt` partition with
//! the CPUs given and an `nrt` partition with the others, every movable task
//! in `nrt`, and the kernel's housekeeping ([`knobs`]) kept off `rt`.
//!
//! Every change is journalled before it is made ([`crate::sys::journal`]),
//! so that `partition undo`, `rtlab restore`, or a rollback after a failure
//! or a signal puts everything back: cpuset files, task placement and
//! affinities, knobs.
//!
//! cgroup v1: `rt` gets `cpu_exclusive=1` and `sched_load_balance=0`, `nrt`
//! load balancing, the root cpuset `sched_load_balance=0` (without it the
//! children's settings have no effect), and every task of the root cpuset is
//! moved to `nrt` (pinned per-CPU kernel threads refuse, as they must).
//! cgroup v2: `rt` becomes a partition root (`isolated` where the kernel has
//! it, else `root`), which takes its CPUs away from every other cgroup: the
//! kernel moves the tasks off them, so rtlab does not tear tasks out of
//! their systemd units; `nrt` is a member cpuset with the other CPUs.

pub mod cpuset;
pub mod knobs;
pub mod state;

use crate::cpulist;
use crate::sys::journal::{self, Change, Journal, JournalError, Owner, RestoreReport};
use crate::sys::tasks::{self, TaskRecord};
use crate::sys::{SysError, SysRoot};
use cpuset::{Hierarchy, Knob};
use serde::Serialize;
use std::path::Path;

/// Name of the real-time partition.
pub const RT: &str = "rt";
/// Name of the partition for everything else.
pub const NRT: &str = "nrt";

/// Why a partition command refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum IsolateError {
    /// No cpuset controller on this machine.
    #[error(
        "no cpuset controller: neither a cgroup v1 hierarchy mounted with `cpuset` nor a cgroup v2 hierarchy offering it; it needs {}",
        crate::sys::features::remedy::CPUSET
    )]
    NoCpuset,
    /// The CPUs asked for are not usable.
    #[error("{0}")]
    BadCpus(String),
    /// The cpuset hierarchy is mounted read-only here (a container's
    /// cgroup mounts are).
    #[error(
        "the cpuset hierarchy at /{0} is mounted read-only here (as in a container): partitions \
         change the host's cpusets"
    )]
    ReadOnly(String),
    /// A partition already exists.
    #[error("{0}")]
    Exists(String),
    /// No partition to act on.
    #[error("{0}")]
    Missing(String),
    /// The journal could not be used: nothing was changed.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// A required step failed; what was done has been undone.
    #[error("{step}: {error}")]
    Kernel {
        /// The step.
        step: String,
        /// The kernel's error.
        error: String,
        /// The rollback.
        rollback: Box<RestoreReport>,
    },
    /// A signal stopped the command; what was done has been undone.
    #[error("interrupted by {signal}; everything done so far was undone")]
    Interrupted {
        /// Signal number.
        signal: i32,
        /// The rollback.
        rollback: Box<RestoreReport>,
    },
}

impl IsolateError {
    /// The exit status (documented in docs/manual.md).
    pub fn exit_code(&self) -> i32 {
        match self {
            IsolateError::Kernel { .. } => crate::exit::FAILED,
            IsolateError::Interrupted { signal, .. } => crate::exit::signal(*signal),
            _ => crate::exit::REFUSED,
        }
    }

    /// A hint on how to fix it.
    pub fn hint(&self) -> Option<String> {
        match self {
            IsolateError::NoCpuset => Some(
                "mount it: `mount -t cgroup -o cpuset cpuset /sys/fs/cgroup/cpuset` (v1), or enable it in v2: `echo +cpuset > /sys/fs/cgroup/cgroup.subtree_control`".into(),
            ),
            IsolateError::Exists(_) => Some("undo them first: `rtlab partition undo`".into()),
            IsolateError::ReadOnly(_) => Some(
                "make the partition on the host (`rtlab partition create CPUS` there) and give \
                 the container CPUs of it; inside, rtlab measures on the container's cpuset \
                 (`--cpuset-cpus`)"
                    .into(),
            ),
            IsolateError::Missing(_) => Some("make them: `rtlab partition create CPUS`".into()),
            IsolateError::BadCpus(_) => Some(
                "give online CPUs (`rtlab partition create 1`, or a mask `0x2`) and leave at \
                 least one to the rest of the system"
                    .into(),
            ),
            IsolateError::Journal(JournalError::Busy(_)) => {
                Some("another rtlab is changing the partitions; wait for it".into())
            }
            _ => None,
        }
    }
}

/// Tasks moved into `nrt`, and those that stayed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TaskMoves {
    /// Tasks moved.
    pub moved: usize,
    /// Kernel threads bound to their CPU (per-CPU kthreads, bound IRQ
    /// threads): the kernel refuses to move them (EINVAL), as it should.
    pub pinned: Vec<PinnedTask>,
    /// Tasks that ended while being moved.
    pub vanished: usize,
    /// Tasks that could not be moved for another reason.
    pub failed: Vec<PinnedTask>,
}

/// A task left where it was.
#[derive(Debug, Clone, Serialize)]
pub struct PinnedTask {
    /// Thread id.
    pub tid: i32,
    /// Its name.
    pub name: String,
    /// Why.
    pub reason: String,
}

/// What `partition create` did.
#[derive(Debug, Clone, Serialize)]
pub struct CreateReport {
    /// The cpuset hierarchy used.
    pub hierarchy: Hierarchy,
    /// CPUs of `rt`.
    pub rt: Vec<usize>,
    /// CPUs of `nrt`.
    pub nrt: Vec<usize>,
    /// How `rt` is set apart: v1 `exclusive, no load balancing`, v2
    /// `isolated` or `root`.
    pub mode: String,
    /// Tasks moved to `nrt` (v1).
    pub tasks: TaskMoves,
    /// The noise knobs.
    pub knobs: Vec<knobs::KnobOutcome>,
    /// The journal that undoes it all.
    pub journal: String,
}

/// Parses the CPUs of `partition create` and checks them against the
/// machine: a cpulist or a hex mask, online, leaving at least one CPU.
pub fn parse_rt_cpus(text: &str, online: &[usize]) -> Result<Vec<usize>, IsolateError> {
    let cpus = cpulist::parse_list_or_mask(text).map_err(|e| {
        IsolateError::BadCpus(format!(
            "`{text}`: {} (give a cpulist such as `3` or `2-3`, or a mask such as `0x8`)",
            e.message
        ))
    })?;
    if cpus.is_empty() {
        return Err(IsolateError::BadCpus(format!("`{text}` names no CPU")));
    }
    let offline: Vec<usize> = cpus
        .iter()
        .copied()
        .filter(|c| !online.contains(c))
        .collect();
    if !offline.is_empty() {
        return Err(IsolateError::BadCpus(format!(
            "CPU {} not online (online CPUs: {})",
            cpulist::format(&offline),
            cpulist::format(online)
        )));
    }
    if online.iter().all(|c| cpus.contains(c)) {
        return Err(IsolateError::BadCpus(format!(
            "`{text}` takes every online CPU ({}): nrt needs at least one for the rest of the system",
            cpulist::format(online)
        )));
    }
    Ok(cpus)
}

/// Refuses when partitions or their journal already exist.
fn check_absent(root: &SysRoot, h: &Hierarchy, journal_dir: &Path) -> Result<(), IsolateError> {
    let present: Vec<String> = [RT, NRT]
        .iter()
        .filter(|n| root.exists(&h.dir(n)))
        .map(|n| {
            format!(
                "{n} = {}",
                h.read(root, &h.dir(n), Knob::EffectiveCpus)
                    .unwrap_or_default()
            )
        })
        .collect();
    if !present.is_empty() {
        return Err(IsolateError::Exists(format!(
            "partitions already exist ({}) in {}",
            present.join(", "),
            h.describe()
        )));
    }
    if journal_dir.join(journal::PARTITION_FILE).exists() {
        return Err(IsolateError::Exists(format!(
            "a partition journal is left in {} (a partition was made and not undone)",
            journal_dir.display()
        )));
    }
    Ok(())
}

/// Whether the hierarchy's mount is read-only (its first mount option).
fn read_only(root: &SysRoot, h: &Hierarchy) -> bool {
    crate::sys::cgroup::mounts(root).iter().any(|m| {
        m.path.trim_matches('/') == h.mount() && m.options.first().is_some_and(|o| o == "ro")
    })
}

/// Makes the `rt` and `nrt` partitions (see the module documentation).
/// `stop` returns the number of a signal that asks to stop, if one came.
pub fn create(
    root: &SysRoot,
    journal_dir: &Path,
    rt: &[usize],
    stop: &dyn Fn() -> Option<i32>,
) -> Result<CreateReport, IsolateError> {
    let h = Hierarchy::find(root).ok_or(IsolateError::NoCpuset)?;
    if read_only(root, &h) {
        return Err(IsolateError::ReadOnly(h.mount().to_string()));
    }
    let online = crate::sys::online_cpus(root).map_err(|e| IsolateError::BadCpus(e.to_string()))?;
    let nrt: Vec<usize> = online.iter().copied().filter(|c| !rt.contains(c)).collect();
    check_absent(root, &h, journal_dir)?;
    let mut j = Journal::open(root, journal_dir, journal::PARTITION_FILE, Owner::Partition)?;
    let mut report = CreateReport {
        hierarchy: h.clone(),
        rt: rt.to_vec(),
        nrt: nrt.clone(),
        mode: String::new(),
        tasks: TaskMoves::default(),
        knobs: Vec::new(),
        journal: j.path().display().to_string(),
    };
    let result = (|| -> Result<(), Failure> {
        report.mode = if h.is_v2() {
            make_v2(&mut j, root, &h, rt, &nrt)?
        } else {
            make_v1(&mut j, root, &h, rt, &nrt)?;
            check(stop)?;
            report.tasks = move_tasks(&mut j, root, &h, &|| stop().is_some())?;
            "exclusive CPUs, no load balancing".into()
        };
        check(stop)?;
        report.knobs = knobs::apply(&mut j, root, &nrt, &|| stop().is_some())?;
        check(stop)
    })();
    match result {
        Ok(()) => Ok(report),
        Err(Failure::Journal(e)) => {
            let _ = j.replay_and_close();
            Err(IsolateError::Journal(e))
        }
        Err(Failure::Kernel { step, error }) => Err(IsolateError::Kernel {
            step,
            error,
            rollback: Box::new(j.replay_and_close()),
        }),
        Err(Failure::Signal(signal)) => Err(IsolateError::Interrupted {
            signal,
            rollback: Box::new(j.replay_and_close()),
        }),
    }
}

enum Failure {
    Journal(JournalError),
    Kernel { step: String, error: String },
    Signal(i32),
}

impl From<JournalError> for Failure {
    fn from(e: JournalError) -> Self {
        Failure::Journal(e)
    }
}

fn check(stop: &dyn Fn() -> Option<i32>) -> Result<(), Failure> {
    match stop() {
        Some(sig) => Err(Failure::Signal(sig)),
        None => Ok(()),
    }
}

fn step(what: impl Into<String>) -> impl FnOnce(SysError) -> Failure {
    let what = what.into();
    move |e| Failure::Kernel {
        step: what,
        error: e.to_string(),
    }
}

/// Makes a cpuset directory, journalled.
fn mkdir(j: &mut Journal, root: &SysRoot, h: &Hierarchy, name: &str) -> Result<String, Failure> {
    let dir = h.dir(name);
    j.record(&Change::Mkdir {
        path: dir.clone(),
        tasks_file: h.tasks_file().into(),
    })?;
    root.mkdir(&dir).map_err(step(format!("mkdir /{dir}")))?;
    Ok(dir)
}

/// Writes `knob` of cpuset directory `dir`. Files inside rt and nrt need no
/// journal line: undo removes the directories.
fn set_knob(
    root: &SysRoot,
    h: &Hierarchy,
    dir: &str,
    knob: Knob,
    value: &str,
) -> Result<(), Failure> {
    h.write(root, dir, knob, value)
        .map_err(step(format!("/{dir}: {knob:?} = {value}")))
}

/// Makes cpuset `name` with `cpus` and the root's memory nodes.
fn make_cpuset(
    j: &mut Journal,
    root: &SysRoot,
    h: &Hierarchy,
    name: &str,
    cpus: &[usize],
) -> Result<String, Failure> {
    // v1 needs mems before a task can attach; v2 root has only `.effective`.
    let knob = if h.is_v2() {
        Knob::EffectiveMems
    } else {
        Knob::Mems
    };
    let mems = h
        .read(root, h.mount(), knob)
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| "0".into());
    let dir = mkdir(j, root, h, name)?;
    set_knob(root, h, &dir, Knob::Cpus, &cpulist::format(cpus))?;
    set_knob(root, h, &dir, Knob::Mems, &mems)?;
    Ok(dir)
}

fn make_v1(
    j: &mut Journal,
    root: &SysRoot,
    h: &Hierarchy,
    rt: &[usize],
    nrt: &[usize],
) -> Result<(), Failure> {
    let top = h.mount().to_string();
    let rt_dir = make_cpuset(j, root, h, RT, rt)?;
    set_knob(root, h, &rt_dir, Knob::CpuExclusive, "1")
        .map_err(|f| overlap_hint(f, root, h, rt))?;
    set_knob(root, h, &rt_dir, Knob::LoadBalance, "0")?;
    let nrt_dir = make_cpuset(j, root, h, NRT, nrt)?;
    set_knob(root, h, &nrt_dir, Knob::LoadBalance, "1")?;
    // Without this, the root's balancing domain still spans rt.
    if let Some(file) = h.file(&top, Knob::LoadBalance) {
        j.set(&file, "0").map_err(|e| match e {
            journal::SetError::Journal(e) => Failure::Journal(e),
            journal::SetError::Kernel(e) => step(format!("/{file} = 0"))(e),
        })?;
    }
    Ok(())
}

/// Names the sibling cpusets that overlap `rt`, the usual reason the kernel
/// refuses `cpu_exclusive`.
fn overlap_hint(f: Failure, root: &SysRoot, h: &Hierarchy, rt: &[usize]) -> Failure {
    let Failure::Kernel { step, error } = f else {
        return f;
    };
    let overlapping: Vec<String> = h
        .children(root)
        .into_iter()
        .filter(|n| n != RT && n != NRT)
        .filter(|n| {
            h.cpus(root, n)
                .is_some_and(|c| c.iter().any(|x| rt.contains(x)))
        })
        .collect();
    let error = if overlapping.is_empty() {
        error
    } else {
        format!(
            "{error} (cpusets {} also use these CPUs; exclusive CPUs cannot be shared)",
            overlapping.join(", ")
        )
    };
    Failure::Kernel { step, error }
}

fn make_v2(
    j: &mut Journal,
    root: &SysRoot,
    h: &Hierarchy,
    rt: &[usize],
    nrt: &[usize],
) -> Result<String, Failure> {
    let top = h.mount().to_string();
    let control = format!("{top}/cgroup.subtree_control");
    let enabled = root
        .read_trim(&control)
        .map_err(step(format!("read /{control}")))?;
    if !enabled.split_whitespace().any(|c| c == "cpuset") {
        j.record(&Change::EnableController {
            path: control.clone(),
            controller: "cpuset".into(),
        })?;
        root.write(&control, "+cpuset")
            .map_err(step(format!("/{control} += cpuset")))?;
    }
    let rt_dir = make_cpuset(j, root, h, RT, rt)?;
    let mut why = Vec::new();
    let mut mode = None;
    for wanted in ["isolated", "root"] {
        match h.write(root, &rt_dir, Knob::Partition, wanted) {
            Ok(()) => {
                let back = h.read(root, &rt_dir, Knob::Partition).unwrap_or_default();
                if back == wanted {
                    mode = Some(wanted.to_string());
                    break;
                }
                why.push(format!("{wanted}: the kernel says `{back}`"));
                let _ = h.write(root, &rt_dir, Knob::Partition, "member");
            }
            Err(e) => why.push(format!("{wanted}: {e}")),
        }
    }
    let Some(mode) = mode else {
        return Err(Failure::Kernel {
            step: format!("/{rt_dir}: cpuset.cpus.partition"),
            error: why.join("; "),
        });
    };
    make_cpuset(j, root, h, NRT, nrt)?;
    Ok(if mode == "isolated" {
        "isolated partition (no load balancing, no unbound workqueues)".into()
    } else {
        "root partition (this kernel has no `isolated` partitions)".into()
    })
}

/// v1: moves every task of the root cpuset into `nrt`, journalling each
/// batch with the tasks' affinities. Tasks born during the move are caught
/// by a second pass.
fn move_tasks(
    j: &mut Journal,
    root: &SysRoot,
    h: &Hierarchy,
    stop: &dyn Fn() -> bool,
) -> Result<TaskMoves, Failure> {
    let top = h.mount().to_string();
    let nrt_dir = h.dir(NRT);
    let target = format!("{nrt_dir}/{}", h.tasks_file());
    let mut moves = TaskMoves::default();
    let mut tried: Vec<i32> = Vec::new();
    for _pass in 0..3 {
        let tids: Vec<i32> = h
            .tasks(root, &top)
            .into_iter()
            .filter(|t| !tried.contains(t))
            .collect();
        if tids.is_empty() {
            break;
        }
        let records: Vec<TaskRecord> = tids
            .iter()
            .filter_map(|&t| tasks::record(root, t))
            .collect();
        moves.vanished += tids.len() - records.len();
        j.record(&Change::MoveTasks {
            from: top.clone(),
            to: nrt_dir.clone(),
            tasks_file: h.tasks_file().into(),
            tasks: records.clone(),
        })?;
        for r in &records {
            if stop() {
                return Ok(moves);
            }
            match root.write(&target, &r.tid.to_string()) {
                Ok(()) => moves.moved += 1,
                Err(e) if e.errno() == Some(crate::sys::consts::ESRCH) => moves.vanished += 1,
                Err(e) => {
                    let name = tasks::status_field(root, r.tid, "Name").unwrap_or_default();
                    let pinned = e.errno() == Some(crate::sys::consts::EINVAL)
                        && tasks::is_kernel_thread(root, r.tid);
                    let entry = PinnedTask {
                        tid: r.tid,
                        name,
                        reason: if pinned {
                            "kernel thread bound to its CPU".into()
                        } else {
                            e.to_string()
                        },
                    };
                    if pinned {
                        moves.pinned.push(entry);
                    } else {
                        moves.failed.push(entry);
                    }
                }
            }
        }
        tried.extend(tids);
    }
    Ok(moves)
}

/// Undoes the partition (and only it): replays the partition journal.
pub fn undo(root: &SysRoot, journal_dir: &Path) -> Result<RestoreReport, IsolateError> {
    let path = journal_dir.join(journal::PARTITION_FILE);
    if !path.exists() {
        if let Some(h) = Hierarchy::find(root)
            && [RT, NRT].iter().any(|n| root.exists(&h.dir(n)))
        {
            return Err(IsolateError::Missing(format!(
                "cpusets rt/nrt exist in {} but rtlab has no journal of them (made by another tool?); remove them with that tool",
                h.describe()
            )));
        }
        return Ok(RestoreReport::default());
    }
    Ok(journal::replay_path(root, &path))
}

/// The directory and tasks file of partition `name`, for `partition run`.
pub fn partition_procs(root: &SysRoot, name: &str) -> Result<String, IsolateError> {
    let h = Hierarchy::find(root).ok_or(IsolateError::NoCpuset)?;
    let dir = h.dir(name);
    if !root.exists(&dir) {
        return Err(IsolateError::Missing(format!(
            "there is no `{name}` partition in {}",
            h.describe()
        )));
    }
    Ok(format!("{dir}/cgroup.procs"))
}

#[cfg(test)]
mod tests;

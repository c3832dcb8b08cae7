//! The journal of system changes: every change rtlab makes to the system is
//! written here, with the value it replaces, *before* it is made, so that the
//! system can be put back however rtlab ends (even SIGKILL or a power cut of
//! rtlab's process: `rtlab restore` replays what is left).
//!
//! Layout: one directory (`/run/rtlab`, or `$RTLAB_JOURNAL_DIR`), mode 0700,
//! holding one file per owner of changes, mode 0600, in JSON lines:
//! a [`Header`] line, then one [`Change`] per line, each fsynced before the
//! change is made. `partition.journal` belongs to the partition (it outlives
//! the command that made it); `run-<pid>.journal` to one run. The writer
//! holds an exclusive `flock` on its file while it lives, so a journal whose
//! lock can be taken was left by a process that is gone.
//!
//! Replaying a journal undoes its changes newest first. Every undo is
//! idempotent (a value already back, a directory already gone, a task that
//! ended are all fine), so a replay that is itself interrupted can be run
//! again.

use super::cgroup::TrackingCgroup;
use super::tasks::{self, TaskRecord};
use super::{SysError, SysRoot};
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default journal directory.
pub const DEFAULT_DIR: &str = "/run/rtlab";
/// Environment variable that overrides [`DEFAULT_DIR`].
pub const DIR_ENV: &str = "RTLAB_JOURNAL_DIR";
/// What an undo says when the system already had the old value.
pub const UNCHANGED: &str = "already as before";
/// File name of the partition's journal.
pub const PARTITION_FILE: &str = "partition.journal";
/// File name of the journal of tuning commands (`irq move`, `threads set`,
/// `cpufreq set`, `cstates set`): kept until `rtlab restore`.
pub const TUNE_FILE: &str = "tune.journal";

/// The journal directory to use: `$RTLAB_JOURNAL_DIR` or [`DEFAULT_DIR`].
pub fn default_dir() -> PathBuf {
    std::env::var_os(DIR_ENV)
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(DEFAULT_DIR), PathBuf::from)
}

/// Who owns a journal's changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Owner {
    /// The CPU partition: kept until `partition undo` or `restore`.
    Partition,
    /// One run: undone when it ends, or by the next rtlab if it died.
    Run,
    /// Tuning commands: kept until `rtlab restore`.
    Tune,
}

/// First line of a journal file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Format tag, `rtlab-journal/1`.
    pub journal: String,
    /// Whose changes these are.
    pub owner: Owner,
    /// The pid of the writer.
    pub pid: i32,
    /// The kernel boot the changes were made in
    /// (`/proc/sys/kernel/random/boot_id`): after a reboot they are gone.
    pub boot_id: String,
    /// When the journal was opened (RFC 3339).
    pub created: String,
    /// The command that made the changes.
    pub command: String,
}

/// One change, with what is needed to undo it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum Change {
    /// A kernel file was written: undo writes `old` back if it differs.
    Write {
        /// File, relative to the system root.
        path: String,
        /// Its value before (as read, trimmed).
        old: String,
        /// The value written.
        new: String,
    },
    /// A cgroup was made: undo moves its tasks to the parent, then removes it.
    Mkdir {
        /// The cgroup directory.
        path: String,
        /// The tasks file used to move tasks out (`tasks` on v1,
        /// `cgroup.procs` on v2).
        tasks_file: String,
    },
    /// Tasks were moved between cgroups: undo moves back those still in
    /// `to`, then gives each task that still exists its old affinity.
    MoveTasks {
        /// Cgroup they were in.
        from: String,
        /// Cgroup they were moved to.
        to: String,
        /// The tasks file (`tasks` or `cgroup.procs`).
        tasks_file: String,
        /// Each task as it was.
        tasks: Vec<TaskRecord>,
    },
    /// A controller was enabled in a cgroup v2 `cgroup.subtree_control`:
    /// undo disables it.
    EnableController {
        /// The `cgroup.subtree_control` file.
        path: String,
        /// The controller (`cpuset`).
        controller: String,
    },
    /// A cgroup holding a run's processes: undo kills them and removes it.
    TrackingCgroup {
        /// The cgroup directory.
        path: String,
    },
    /// A thread's scheduling was changed: undo sets `old` back if the same
    /// thread (TID and start time) still exists.
    Sched {
        /// Thread id.
        tid: i32,
        /// Its start time (ticks since boot).
        start: u64,
        /// Its name, for the report.
        name: String,
        /// Policy and priority before.
        old: super::os::Sched,
        /// Policy and priority set.
        new: super::os::Sched,
    },
}

/// What the replay of one change did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Undo {
    /// The change, in words.
    pub what: String,
    /// Whether the system is back as it was for this change.
    pub ok: bool,
    /// What happened (`restored`, [`UNCHANGED`], the error...).
    pub detail: String,
}

/// What a replay of journals did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RestoreReport {
    /// Journal files replayed.
    pub journals: Vec<String>,
    /// Every change undone or checked, in replay order.
    pub undone: Vec<Undo>,
    /// Journals left alone, and why (owned by a live rtlab).
    pub skipped: Vec<String>,
}

impl RestoreReport {
    /// Whether every change was undone.
    pub fn ok(&self) -> bool {
        self.undone.iter().all(|u| u.ok)
    }

    /// The changes that could not be undone.
    pub fn failures(&self) -> impl Iterator<Item = &Undo> {
        self.undone.iter().filter(|u| !u.ok)
    }

    /// Adds another report's lines.
    pub fn merge(&mut self, other: RestoreReport) {
        self.journals.extend(other.journals);
        self.undone.extend(other.undone);
        self.skipped.extend(other.skipped);
    }

    /// Human-readable lines (one per restored or failed change).
    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .undone
            .iter()
            .filter(|u| !u.ok || u.detail != UNCHANGED)
            .map(|u| {
                format!(
                    "  {} {}: {}",
                    if u.ok { "ok  " } else { "FAIL" },
                    u.what,
                    u.detail
                )
            })
            .collect();
        let unchanged = self
            .undone
            .iter()
            .filter(|u| u.ok && u.detail == UNCHANGED)
            .count();
        if unchanged > 0 {
            out.push(format!("  ok   {unchanged} other values already as before"));
        }
        out.extend(self.skipped.iter().map(|s| format!("  skip {s}")));
        out
    }
}

/// The current boot's id (empty if unknown).
pub fn boot_id(root: &SysRoot) -> String {
    root.read_opt("proc/sys/kernel/random/boot_id")
        .unwrap_or_default()
}

/// An open journal, locked by this process, appended to before each change.
#[derive(Debug)]
pub struct Journal {
    file: File,
    path: PathBuf,
    root: SysRoot,
}

/// Why a journal could not be used.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The directory or file could not be created or written.
    #[error("journal {path}: {source}")]
    Io {
        /// The journal path.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// Another live rtlab holds it.
    #[error("journal {0} is held by another rtlab that is still running; wait for it, or stop it")]
    Busy(PathBuf),
}

fn lock(file: &File, path: &Path) -> Result<(), JournalError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(fs::TryLockError::WouldBlock) => Err(JournalError::Busy(path.to_path_buf())),
        Err(fs::TryLockError::Error(e)) => Err(io_err(path)(e)),
    }
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> JournalError + '_ {
    move |source| JournalError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl Journal {
    /// Opens (creating if needed) the journal `name` in `dir` for `owner`,
    /// takes its lock, and writes the header if the file is new.
    pub fn open(
        root: &SysRoot,
        dir: &Path,
        name: &str,
        owner: Owner,
    ) -> Result<Journal, JournalError> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io_err(dir))?;
        let path = dir.join(name);
        if path.exists() {
            // Carry on an existing journal (its owner is gone if we get the lock).
            let file = OpenOptions::new()
                .read(true)
                .append(true)
                .open(&path)
                .map_err(io_err(&path))?;
            lock(&file, &path)?;
            return Ok(Journal {
                file,
                path,
                root: root.clone(),
            });
        }
        // A new journal is made under a temporary name, locked and given its
        // header, then renamed into place: no one ever sees it unlocked and
        // empty (and mistakes it for one left by a dead run).
        let tmp = dir.join(format!(".{name}.{}", std::process::id()));
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&tmp)
            .map_err(io_err(&tmp))?;
        lock(&file, &tmp)?;
        let mut journal = Journal {
            file,
            path: tmp.clone(),
            root: root.clone(),
        };
        let header = Header {
            journal: "rtlab-journal/1".into(),
            owner,
            pid: std::process::id() as i32,
            boot_id: boot_id(root),
            created: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            command: std::env::args().collect::<Vec<_>>().join(" "),
        };
        journal.append_line(&serde_json::to_string(&header).unwrap_or_default())?;
        fs::rename(&tmp, &path).map_err(io_err(&path))?;
        journal.path = path;
        // The new name must survive a crash too.
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(journal)
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn append_line(&mut self, line: &str) -> Result<(), JournalError> {
        let path = self.path.clone();
        self.file
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| self.file.sync_data())
            .map_err(io_err(&path))
    }

    /// Records `change` durably. Call before making it.
    pub fn record(&mut self, change: &Change) -> Result<(), JournalError> {
        let line = serde_json::to_string(change).map_err(|e| JournalError::Io {
            path: self.path.clone(),
            source: io::Error::other(e),
        })?;
        self.append_line(&line)
    }

    /// Sets kernel file `rel` to `new`, journalling its old value first.
    /// Returns the old value, or `None` when it already held `new` (nothing
    /// written, nothing journalled).
    pub fn set(&mut self, rel: &str, new: &str) -> Result<Option<String>, SetError> {
        let old = self.root.read_trim(rel).map_err(SetError::Kernel)?;
        if old == new {
            return Ok(None);
        }
        self.record(&Change::Write {
            path: rel.to_string(),
            old: old.clone(),
            new: new.to_string(),
        })
        .map_err(SetError::Journal)?;
        self.root.write(rel, new).map_err(SetError::Kernel)?;
        Ok(Some(old))
    }

    /// Replays this journal now (undoing its changes) and deletes it.
    pub fn replay_and_close(self) -> RestoreReport {
        let path = self.path.clone();
        let root = self.root.clone();
        // Keep the lock while replaying: no one else may replay it at once.
        let report = replay_file(&root, &path);
        drop(self.file);
        report
    }
}

/// Why [`Journal::set`] failed.
#[derive(Debug, thiserror::Error)]
pub enum SetError {
    /// The kernel file could not be read or written.
    #[error(transparent)]
    Kernel(SysError),
    /// The journal could not be written: nothing was changed.
    #[error(transparent)]
    Journal(JournalError),
}

/// A journal file found on disk.
#[derive(Debug, Clone)]
pub struct Found {
    /// Its path.
    pub path: PathBuf,
    /// Its header (None if unreadable).
    pub header: Option<Header>,
}

/// The journals in `dir`, newest first.
pub fn find(dir: &Path) -> Vec<Found> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(std::time::SystemTime, Found)> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "journal"))
        .filter_map(|path| {
            let file = File::open(&path).ok()?;
            let header = io::BufReader::new(&file)
                .lines()
                .next()
                .and_then(|l| l.ok())
                .and_then(|l| serde_json::from_str(&l).ok());
            let mtime = file
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            Some((mtime, Found { path, header }))
        })
        .collect();
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    found.into_iter().map(|(_, f)| f).collect()
}

/// Replays the journal at `path` if no live rtlab holds it, then deletes it
/// when every change was undone (else keeps it, so that a later restore can
/// try again). A journal from an earlier boot is deleted unreplayed: the
/// kernel forgot those changes when it rebooted.
pub fn replay_path(root: &SysRoot, path: &Path) -> RestoreReport {
    let mut report = RestoreReport::default();
    let Ok(file) = OpenOptions::new().read(true).append(true).open(path) else {
        return report;
    };
    if file.try_lock().is_err() {
        report.skipped.push(format!(
            "{}: held by an rtlab that is still running (it restores its own changes)",
            path.display()
        ));
        return report;
    }
    let sub = replay_file(root, path);
    drop(file);
    sub
}

/// The header and changes of the journal at `path`. A line cut short by a
/// crash is skipped: it cannot be a change that was made, since a change is
/// made only after its line is complete and synced.
pub fn read(path: &Path) -> (Option<Header>, Vec<Change>) {
    let text = fs::read_to_string(path).unwrap_or_default();
    let mut lines = text.lines();
    let header = lines.next().and_then(|l| serde_json::from_str(l).ok());
    let changes = lines.filter_map(|l| serde_json::from_str(l).ok()).collect();
    (header, changes)
}

fn replay_file(root: &SysRoot, path: &Path) -> RestoreReport {
    let mut report = RestoreReport {
        journals: vec![path.display().to_string()],
        ..Default::default()
    };
    let (header, changes) = read(path);
    let here = boot_id(root);
    if let Some(h) = &header
        && !h.boot_id.is_empty()
        && !here.is_empty()
        && h.boot_id != here
    {
        report.undone.push(Undo {
            what: format!("journal of {} (pid {})", h.created, h.pid),
            ok: true,
            detail:
                "made before the last reboot: the kernel has forgotten those changes; discarded"
                    .into(),
        });
        let _ = fs::remove_file(path);
        return report;
    }
    for change in changes.iter().rev() {
        report.undone.push(undo(root, change));
    }
    if report.ok() {
        let _ = fs::remove_file(path);
    }
    report
}

/// Undoes one change. Never panics, never stops at an error: says what it did.
pub fn undo(root: &SysRoot, change: &Change) -> Undo {
    match change {
        Change::Write { path, old, .. } => undo_write(root, path, old),
        Change::Mkdir { path, tasks_file } => undo_mkdir(root, path, tasks_file),
        Change::MoveTasks {
            from,
            to,
            tasks_file,
            tasks,
        } => undo_move(root, from, to, tasks_file, tasks),
        Change::EnableController { path, controller } => {
            let what = format!("{path}: +{controller}");
            let enabled = root
                .read_trim(path)
                .map(|t| t.split_whitespace().any(|c| c == controller));
            match enabled {
                Ok(false) | Err(SysError::NotFound(_)) => Undo {
                    what,
                    ok: true,
                    detail: UNCHANGED.into(),
                },
                _ => match root.write(path, &format!("-{controller}")) {
                    Ok(()) => Undo {
                        what,
                        ok: true,
                        detail: format!("disabled {controller} again"),
                    },
                    Err(e) => Undo {
                        what,
                        ok: false,
                        detail: e.to_string(),
                    },
                },
            }
        }
        Change::Sched {
            tid,
            start,
            name,
            old,
            ..
        } => undo_sched(root, *tid, *start, name, *old),
        Change::TrackingCgroup { path } => {
            let what = format!("{path}: run's process cgroup");
            if !root.exists(path) {
                return Undo {
                    what,
                    ok: true,
                    detail: UNCHANGED.into(),
                };
            }
            match TrackingCgroup::existing(root, path).kill_and_remove(Duration::from_secs(5)) {
                Ok(()) => Undo {
                    what,
                    ok: true,
                    detail: "killed what was left in it and removed it".into(),
                },
                Err(left) => Undo {
                    what,
                    ok: false,
                    detail: format!("processes {left:?} would not die"),
                },
            }
        }
    }
}

fn undo_sched(root: &SysRoot, tid: i32, start: u64, name: &str, old: super::os::Sched) -> Undo {
    let what = format!("thread {tid} ({name}) scheduling");
    let now = super::threads::by_tid(root, tid).filter(|t| t.start == start);
    let Some(now) = now else {
        return Undo {
            what,
            ok: true,
            detail: "ended (nothing to restore)".into(),
        };
    };
    if now.sched() == Some(old) {
        return Undo {
            what,
            ok: true,
            detail: UNCHANGED.into(),
        };
    }
    match root.set_task_sched(tid, old) {
        Ok(()) => Undo {
            what,
            ok: true,
            detail: format!(
                "{} -> {} {}",
                now.sched_text(),
                old.policy.name(),
                old.priority
            ),
        },
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Undo {
            what,
            ok: true,
            detail: "ended (nothing to restore)".into(),
        },
        Err(e) => Undo {
            what,
            ok: false,
            detail: format!(
                "cannot set {} {} back: {e}",
                old.policy.name(),
                old.priority
            ),
        },
    }
}

fn undo_write(root: &SysRoot, path: &str, old: &str) -> Undo {
    let what = path.to_string();
    match root.read_trim(path) {
        Err(SysError::NotFound(_)) => Undo {
            what,
            ok: true,
            detail: "gone (nothing to restore)".into(),
        },
        Ok(now) if now == old => Undo {
            what,
            ok: true,
            detail: UNCHANGED.into(),
        },
        Ok(now) => match root.write(path, old) {
            Ok(()) => Undo {
                what,
                ok: true,
                detail: format!("{now} -> {old}"),
            },
            Err(e) => Undo {
                what,
                ok: false,
                detail: format!("cannot write back `{old}`: {e}"),
            },
        },
        Err(e) => Undo {
            what,
            ok: false,
            detail: e.to_string(),
        },
    }
}

fn tids_in(root: &SysRoot, dir: &str, tasks_file: &str) -> Vec<i32> {
    root.read(&format!("{dir}/{tasks_file}"))
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

fn parent_of(dir: &str) -> &str {
    dir.rsplit_once('/').map_or("", |(p, _)| p)
}

/// Moves every task of `dir` into `to`; returns how many would not move
/// (other than those that ended meanwhile).
fn move_all(root: &SysRoot, dir: &str, to: &str, tasks_file: &str) -> Vec<(i32, String)> {
    let mut stuck = Vec::new();
    for tid in tids_in(root, dir, tasks_file) {
        match root.write(&format!("{to}/{tasks_file}"), &tid.to_string()) {
            Ok(()) => {}
            Err(e) if e.errno() == Some(libc::ESRCH) => {}
            Err(e) => stuck.push((tid, e.to_string())),
        }
    }
    stuck
}

fn undo_mkdir(root: &SysRoot, path: &str, tasks_file: &str) -> Undo {
    let what = format!("{path}: cgroup made by rtlab");
    if !root.exists(path) {
        return Undo {
            what,
            ok: true,
            detail: UNCHANGED.into(),
        };
    }
    let parent = parent_of(path);
    let stuck = move_all(root, path, parent, tasks_file);
    let mut last = None;
    // The kernel may need a moment to account tasks that just left.
    for _ in 0..100 {
        match root.rmdir(path) {
            Ok(()) | Err(SysError::NotFound(_)) => {
                return Undo {
                    what,
                    ok: true,
                    detail: "moved its tasks to the parent and removed it".into(),
                };
            }
            Err(e) => last = Some(e),
        }
        move_all(root, path, parent, tasks_file);
        std::thread::sleep(Duration::from_millis(10));
    }
    Undo {
        what,
        ok: false,
        detail: format!(
            "cannot remove it: {}{}",
            last.map_or_else(String::new, |e| e.to_string()),
            if stuck.is_empty() {
                String::new()
            } else {
                format!("; tasks that would not move: {stuck:?}")
            }
        ),
    }
}

fn undo_move(root: &SysRoot, from: &str, to: &str, tasks_file: &str, tasks: &[TaskRecord]) -> Undo {
    let what = format!("{} tasks moved from {from} to {to}", tasks.len());
    let stuck = if root.exists(to) {
        move_all(root, to, from, tasks_file)
    } else {
        Vec::new()
    };
    let mut reaffined = 0;
    let mut failed = Vec::new();
    for t in tasks {
        // Only the same task: a reused TID has another start time.
        if tasks::start_time(root, t.tid) != Some(t.start) {
            continue;
        }
        let now = tasks::status_field(root, t.tid, "Cpus_allowed_list");
        if now.as_deref() == Some(t.cpus.as_str()) {
            continue;
        }
        let Ok(cpus) = crate::cpulist::parse(&t.cpus) else {
            continue;
        };
        match root.set_task_affinity(t.tid, &cpus) {
            Ok(()) => reaffined += 1,
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
            Err(e) => failed.push(format!("{}: {e}", t.tid)),
        }
    }
    let ok = stuck.is_empty() && failed.is_empty();
    let mut detail = if ok {
        format!("moved back; {reaffined} affinities put back")
    } else {
        String::new()
    };
    if !stuck.is_empty() {
        detail.push_str(&format!("tasks that would not move back: {stuck:?}; "));
    }
    if !failed.is_empty() {
        detail.push_str(&format!("affinities not put back: {}", failed.join(", ")));
    }
    Undo { what, ok, detail }
}

/// Replays every journal in `dir` not held by a live rtlab, newest first
/// (`rtlab restore`). With `owner`, only journals of that owner.
pub fn restore_all(root: &SysRoot, dir: &Path, owner: Option<Owner>) -> RestoreReport {
    let mut report = RestoreReport::default();
    for found in find(dir) {
        if let (Some(want), Some(h)) = (owner, &found.header)
            && h.owner != want
        {
            continue;
        }
        report.merge(replay_path(root, &found.path));
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::fake;

    fn machine() -> (tempfile::TempDir, SysRoot) {
        let tree = tempfile::tempdir().unwrap();
        fake::base_machine(tree.path());
        let root = SysRoot::at(tree.path());
        (tree, root)
    }

    #[test]
    fn a_live_journal_is_left_alone_and_a_dead_one_replayed() {
        let (tree, root) = machine();
        let jdir = tempfile::tempdir().unwrap();
        let mut j = Journal::open(&root, jdir.path(), "run-1.journal", Owner::Run).unwrap();
        assert_eq!(
            j.set("proc/sys/vm/stat_interval", "10").unwrap().as_deref(),
            Some("1")
        );
        // Same value again: nothing written, nothing journalled.
        assert_eq!(j.set("proc/sys/vm/stat_interval", "10").unwrap(), None);
        // Held by a live owner: restore skips it and says why.
        let r = restore_all(&root, jdir.path(), None);
        assert!(r.undone.is_empty());
        assert!(r.skipped[0].contains("still running"), "{:?}", r.skipped);
        // A second writer cannot take it either.
        assert!(matches!(
            Journal::open(&root, jdir.path(), "run-1.journal", Owner::Run),
            Err(JournalError::Busy(_))
        ));
        drop(j); // the owner dies without restoring
        let r = restore_all(&root, jdir.path(), Some(Owner::Run));
        assert!(r.ok());
        assert_eq!(r.undone[0].detail, "10 -> 1");
        let now = std::fs::read_to_string(tree.path().join("proc/sys/vm/stat_interval")).unwrap();
        assert_eq!(now, "1");
        assert!(find(jdir.path()).is_empty());
    }

    #[test]
    fn owners_are_restored_separately_and_other_boots_are_discarded() {
        let (tree, root) = machine();
        let jdir = tempfile::tempdir().unwrap();
        let mut j = Journal::open(&root, jdir.path(), PARTITION_FILE, Owner::Partition).unwrap();
        j.set("proc/sys/kernel/timer_migration", "0").unwrap();
        drop(j);
        // A run's recovery does not touch the partition.
        assert!(
            restore_all(&root, jdir.path(), Some(Owner::Run))
                .undone
                .is_empty()
        );
        assert_eq!(find(jdir.path()).len(), 1);
        // After a reboot the journal is stale: discarded, nothing written.
        std::fs::write(
            tree.path().join("proc/sys/kernel/random/boot_id"),
            "another-boot\n",
        )
        .unwrap();
        let r = restore_all(&root, jdir.path(), None);
        assert!(r.undone[0].detail.contains("before the last reboot"));
        let now =
            std::fs::read_to_string(tree.path().join("proc/sys/kernel/timer_migration")).unwrap();
        assert_eq!(now, "0");
        assert!(find(jdir.path()).is_empty());
    }

    #[test]
    fn a_value_that_cannot_be_written_back_keeps_the_journal() {
        let (tree, root) = machine();
        let jdir = tempfile::tempdir().unwrap();
        let mut j = Journal::open(&root, jdir.path(), "run-2.journal", Owner::Run).unwrap();
        j.set("proc/sys/vm/stat_interval", "10").unwrap();
        drop(j);
        // The knob became a directory: the write back fails.
        let knob = tree.path().join("proc/sys/vm/stat_interval");
        std::fs::remove_file(&knob).unwrap();
        std::fs::create_dir(&knob).unwrap();
        let r = restore_all(&root, jdir.path(), None);
        assert!(!r.ok());
        assert_eq!(r.failures().count(), 1);
        assert_eq!(find(jdir.path()).len(), 1, "kept for a later retry");
    }
}

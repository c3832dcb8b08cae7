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
use std::io::{self, Write};
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
    /// A thread's allowed CPUs were changed (`main`'s `threads.affinity`,
    /// `rtlab fix` moving a culprit off the measured CPUs): undo sets `old`
    /// back if the same thread (TID and start time) still exists.
    Affinity {
        /// Thread id.
        tid: i32,
        /// Its start time (ticks since boot).
        start: u64,
        /// Its name, for the report.
        name: String,
        /// Its CPU list before.
        old: String,
        /// The CPU list set.
        new: String,
    },
    /// A tracefs instance rtlab made for a run's flight recorder: undo
    /// removes it (and its buffers and event settings with it).
    TraceInstance {
        /// The instance directory (`sys/kernel/tracing/instances/rtlab-PID`).
        path: String,
    },
    /// A program's output being written under its temporary name during a
    /// run (put in place when the programs stop): undo removes what a run
    /// killed before that left.
    StagedFile {
        /// The temporary file, absolute (`/DIR/.rtlab-PID-N.tmp`).
        path: String,
    },
    /// rtlab mounted tracefs because it was not mounted: undo unmounts it.
    MountTracefs {
        /// The mount point (`sys/kernel/tracing`).
        path: String,
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
    /// Journals (or directories) refused as untrustworthy, and why: nothing
    /// of them was replayed, and they are left in place.
    pub refused: Vec<String>,
}

impl RestoreReport {
    /// Whether every change was undone.
    pub fn ok(&self) -> bool {
        self.undone.iter().all(|u| u.ok) && self.refused.is_empty()
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
        self.refused.extend(other.refused);
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
        out.extend(self.refused.iter().map(|s| format!("  REFUSED {s}")));
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
    /// The directory is not one rtlab can trust with its journals.
    #[error("{0}")]
    Untrusted(String),
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
        if let Err(why) = check_dir(dir) {
            // Only root's changes need a journal; another user cannot use
            // root's directory, and has no kernel setting to undo.
            return Err(if euid() == 0 {
                JournalError::Untrusted(why)
            } else {
                io_err(dir)(io::Error::from(io::ErrorKind::PermissionDenied))
            });
        }
        let path = dir.join(name);
        if fs::symlink_metadata(&path).is_ok() {
            // Carry on an existing journal (its owner is gone if we get the
            // lock), if it deserves trust.
            let file = open_file(&path).map_err(JournalError::Untrusted)?;
            lock(&file, &path)?;
            read(root, &path).map_err(JournalError::Untrusted)?;
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
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)
            .map_err(io_err(&tmp))?;
        lock(&file, &tmp)?;
        let mut journal = Journal {
            file,
            path: tmp.clone(),
            root: root.clone(),
        };
        let header = Header {
            journal: FORMAT.into(),
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

    /// Hands over the changes still in force, `kept` (each with the value
    /// found before this journal's first change of it), to a new journal
    /// `name` of `owner` in the same directory, without undoing them
    /// (`rtlab fix` keeps what helped until `rtlab restore`), and deletes
    /// this one, whose other changes were all undone already. A crash in
    /// between leaves both: replaying both puts the same old values back,
    /// which is idempotent.
    pub fn hand_over(
        self,
        name: &str,
        owner: Owner,
        kept: &[Change],
    ) -> Result<PathBuf, JournalError> {
        let dir = self
            .path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let mut next = Journal::open(&self.root, &dir, name, owner)?;
        for c in kept {
            next.record(c)?;
        }
        fs::remove_file(&self.path).map_err(io_err(&self.path))?;
        if let Ok(d) = File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(next.path.clone())
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

/// Largest journal accepted (a partition of a big machine journals a few
/// thousand tasks: well below this).
pub const MAX_JOURNAL_BYTES: u64 = 16 << 20;

fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Whether `dir` may hold journals: a real directory (not a link) of the
/// caller's user (root, for every real use) with no access for group or
/// others, in parent directories that nobody else can rename it out of
/// (each owned by root or the caller, and writable by others only when
/// sticky, as `/tmp`). `RTLAB_JOURNAL_DIR` gets no exemption.
pub fn check_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let me = euid();
    let refuse = |why: String| {
        Err(format!(
            "journal directory {}: {why}\n  hint: journals change the kernel as root; keep them in a directory only root can change (default {DEFAULT_DIR}, mode 0700)",
            dir.display()
        ))
    };
    let meta = match fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) => return refuse(e.to_string()),
    };
    if meta.file_type().is_symlink() {
        return refuse("is a symbolic link".into());
    }
    if !meta.is_dir() {
        return refuse("is not a directory".into());
    }
    if meta.uid() != me {
        return refuse(format!("belongs to uid {}, not to uid {me}", meta.uid()));
    }
    if meta.mode() & 0o077 != 0 {
        return refuse(format!(
            "has mode {:04o}: group or others may reach it (it must be 0700)",
            meta.mode() & 0o7777
        ));
    }
    let absolute = fs::canonicalize(dir).map_err(|e| e.to_string())?;
    for parent in absolute.ancestors().skip(1) {
        let Ok(m) = fs::metadata(parent) else {
            return refuse(format!("cannot look at {}", parent.display()));
        };
        let open_to_others = m.mode() & 0o022 != 0 && m.mode() & 0o1000 == 0;
        if (m.uid() != 0 && m.uid() != me) || open_to_others {
            return refuse(format!(
                "its parent {} can be changed by others (uid {}, mode {:04o})",
                parent.display(),
                m.uid(),
                m.mode() & 0o7777
            ));
        }
    }
    Ok(())
}

/// Opens a journal file for reading and locking, without following a link
/// or blocking on a FIFO, and checks it is a regular file of the caller's
/// user that nobody else can write, of a sane size.
fn open_file(path: &Path) -> Result<File, String> {
    use std::os::unix::fs::MetadataExt;
    let bad = |why: String| format!("journal {}: {why}", path.display());
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| bad(e.to_string()))?;
    let meta = file.metadata().map_err(|e| bad(e.to_string()))?;
    if !meta.is_file() {
        return Err(bad("is not a regular file".into()));
    }
    if meta.uid() != euid() || meta.mode() & 0o022 != 0 {
        return Err(bad(format!(
            "belongs to uid {} with mode {:04o}: only rtlab's own user may write a journal",
            meta.uid(),
            meta.mode() & 0o7777
        )));
    }
    if meta.len() > MAX_JOURNAL_BYTES {
        return Err(bad(format!(
            "is {} bytes, more than any journal rtlab writes ({MAX_JOURNAL_BYTES})",
            meta.len()
        )));
    }
    Ok(file)
}

/// The journals in `dir`, newest first: every `*.journal` entry, whatever
/// it is (replay refuses what does not deserve trust, and says so).
pub fn find(root: &SysRoot, dir: &Path) -> Vec<Found> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(std::time::SystemTime, Found)> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "journal"))
        .map(|path| {
            let mtime = fs::symlink_metadata(&path)
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            let header = read(root, &path).ok().map(|j| j.0);
            (mtime, Found { path, header })
        })
        .collect();
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    found.into_iter().map(|(_, f)| f).collect()
}

/// Replays the journal at `path` if no live rtlab holds it, then deletes it
/// when every change was undone (else keeps it, so that a later restore can
/// try again). A journal from an earlier boot is deleted unreplayed: the
/// kernel forgot those changes when it rebooted. A journal that does not
/// deserve trust is refused whole and left in place.
pub fn replay_path(root: &SysRoot, path: &Path) -> RestoreReport {
    let mut report = RestoreReport::default();
    let file = match open_file(path) {
        Ok(f) => f,
        Err(e) => {
            report.refused.push(e);
            return report;
        }
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

/// The header and changes of the journal at `path`, if the whole journal is
/// well-formed and every change stays within what rtlab changes (see
/// [`check_change`]); else why not. Only a last line cut short (no line
/// feed: a crash while it was written) is skipped: it cannot be a change
/// that was made, since a change is made only after its line is complete
/// and synced.
pub fn read(root: &SysRoot, path: &Path) -> Result<(Header, Vec<Change>), String> {
    use std::io::Read;
    let file = open_file(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_JOURNAL_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("journal {}: {e}", path.display()))?;
    parse(&bytes, &cgroup_mounts(root)).map_err(|e| {
        format!(
            "journal {}: {e}; left in place, nothing replayed",
            path.display()
        )
    })
}

/// Parses and checks a journal's bytes (see [`read`]).
pub fn parse(bytes: &[u8], mounts: &[String]) -> Result<(Header, Vec<Change>), String> {
    let text =
        std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8 (byte {})", e.valid_up_to()))?;
    let complete = text.ends_with('\n');
    let mut lines = text.lines().enumerate().peekable();
    let header: Header = match lines.next() {
        Some((_, l)) => {
            serde_json::from_str(l).map_err(|e| format!("line 1: not a journal header ({e})"))?
        }
        None => return Err("empty".into()),
    };
    if header.journal != FORMAT {
        return Err(format!(
            "line 1: format `{}` is not `{FORMAT}`",
            header.journal.escape_debug()
        ));
    }
    let mut changes = Vec::new();
    while let Some((n, line)) = lines.next() {
        let last = lines.peek().is_none();
        match serde_json::from_str::<Change>(line) {
            Ok(c) => {
                check_change(&c, mounts).map_err(|e| format!("line {}: {e}", n + 1))?;
                changes.push(c);
            }
            Err(_) if last && !complete => {}
            Err(e) => return Err(format!("line {}: not a change ({e})", n + 1)),
        }
    }
    Ok((header, changes))
}

/// The format tag of the journal header.
pub const FORMAT: &str = "rtlab-journal/1";

mod trust;
use trust::rel;
pub use trust::{cgroup_mounts, check_change};

fn replay_file(root: &SysRoot, path: &Path) -> RestoreReport {
    let mut report = RestoreReport::default();
    let (header, changes) = match read(root, path) {
        Ok(j) => j,
        Err(e) => {
            report.refused.push(e);
            return report;
        }
    };
    report.journals.push(path.display().to_string());
    let here = boot_id(root);
    if !header.boot_id.is_empty() && !here.is_empty() && header.boot_id != here {
        report.undone.push(Undo {
            what: format!("journal of {} (pid {})", header.created, header.pid),
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
        Change::TraceInstance { path } => undo_trace_instance(root, path),
        Change::StagedFile { path } => undo_staged(path),
        Change::MountTracefs { path } => undo_mount(root, path),
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
        Change::Affinity {
            tid,
            start,
            name,
            old,
            ..
        } => undo_affinity(root, *tid, *start, name, old),
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

fn undo_affinity(root: &SysRoot, tid: i32, start: u64, name: &str, old: &str) -> Undo {
    let what = format!("thread {tid} ({name}) CPUs");
    let ended = || Undo {
        what: what.clone(),
        ok: true,
        detail: "ended (nothing to restore)".into(),
    };
    // Only the same thread: a reused TID has another start time.
    if tasks::start_time(root, tid) != Some(start) {
        return ended();
    }
    let now = tasks::status_field(root, tid, "Cpus_allowed_list").unwrap_or_default();
    if now == old {
        return Undo {
            what,
            ok: true,
            detail: UNCHANGED.into(),
        };
    }
    let Ok(cpus) = rtlab_core::cpulist::parse(old) else {
        return Undo {
            what,
            ok: false,
            detail: format!("`{}` is not a CPU list", old.escape_debug()),
        };
    };
    match root.set_task_affinity(tid, &cpus) {
        Ok(()) => Undo {
            what,
            ok: true,
            detail: format!("{now} -> {old}"),
        },
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => ended(),
        Err(e) => Undo {
            what,
            ok: false,
            detail: format!("cannot set CPUs {old} back: {e}"),
        },
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

/// Removes an instance of rtlab's wherever tracefs is mounted now: at the
/// journalled place, at another mount point (tracefs is one tree however
/// often it is mounted), or, when it is mounted nowhere (`umount -l` during
/// the run), at its usual place for the moment of the removal. "Not found"
/// counts as gone only where tracefs is mounted: otherwise the undo fails
/// and the journal keeps the entry.
fn undo_trace_instance(root: &SysRoot, path: &str) -> Undo {
    let what = format!("{path}: trace instance made by rtlab");
    let name = path.rsplit('/').next().unwrap_or_default();
    let mounts = crate::trace::mount_points(root);
    let at_journalled = mounts
        .iter()
        .any(|m| rel(path).strip_prefix(m.as_str()) == Some(&format!("/instances/{name}")));
    let undo = |ok: bool, detail: String| Undo {
        what: what.clone(),
        ok,
        detail,
    };
    if at_journalled {
        return remove_instance(root, rel(path), undo);
    }
    if let Some(m) = mounts.first() {
        return remove_instance(root, &format!("{m}/instances/{name}"), undo);
    }
    if !crate::trace::available(root) {
        // A kernel without tracefs has no instance to remove.
        return undo(true, UNCHANGED.into());
    }
    let tracefs = crate::paths::TRACEFS;
    if let Err(e) = super::os::mount_tracefs(&root.path(tracefs)) {
        return undo(
            false,
            format!(
                "tracefs is mounted nowhere and could not be mounted to look ({e}); the journal keeps it"
            ),
        );
    }
    let done = remove_instance(root, &format!("{tracefs}/instances/{name}"), undo);
    let _ = super::os::unmount(&root.path(tracefs));
    done
}

/// Removes a staged output a killed run left, if it is still a regular
/// file of rtlab's user reached without a foreign link; anything else
/// there is not rtlab's to remove, and is left.
fn undo_staged(path: &str) -> Undo {
    let what = format!("{path}: output being written by a run that died");
    let (ok, detail) = match super::outfile::remove_staged(Path::new(path)) {
        Ok(true) => (true, "removed".to_string()),
        Ok(false) => (true, UNCHANGED.to_string()),
        Err(why) => (true, format!("left in place: {why}")),
    };
    Undo { what, ok, detail }
}

/// `rmdir` of an instance directory under a mounted tracefs.
fn remove_instance(root: &SysRoot, dir: &str, undo: impl Fn(bool, String) -> Undo) -> Undo {
    match root.rmdir(dir) {
        Ok(()) => undo(true, format!("removed ({dir})")),
        Err(SysError::NotFound(_)) => undo(true, UNCHANGED.into()),
        Err(e) => undo(false, format!("cannot remove {dir}: {e}")),
    }
}

fn undo_mount(root: &SysRoot, path: &str) -> Undo {
    let what = format!("{path}: tracefs mounted by rtlab");
    if !crate::trace::mount_points(root)
        .iter()
        .any(|m| m == rel(path))
    {
        return Undo {
            what,
            ok: true,
            detail: UNCHANGED.into(),
        };
    }
    match super::os::unmount(&root.path(path)) {
        Ok(()) => Undo {
            what,
            ok: true,
            detail: "unmounted".into(),
        },
        Err(e) => Undo {
            what,
            ok: false,
            detail: format!("cannot unmount it: {e}"),
        },
    }
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
        let Ok(cpus) = rtlab_core::cpulist::parse(&t.cpus) else {
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
    if fs::symlink_metadata(dir).is_err() {
        return report; // no journal was ever written here
    }
    if let Err(e) = check_dir(dir) {
        // A user other than root cannot replay root's journals, nor needs
        // to: nothing to say.
        if euid() == 0 {
            report.refused.push(e);
        }
        return report;
    }
    for found in find(root, dir) {
        if let (Some(want), Some(h)) = (owner, &found.header)
            && h.owner != want
        {
            continue;
        }
        report.merge(replay_path(root, &found.path));
    }
    remove_unborn(root, dir);
    report
}

/// Removes the journals that never got their name: a new journal is made
/// as `.NAME.PID`, given its header and renamed, so one killed in between
/// leaves that file, holding no change (a change is journalled only once
/// the journal has its name). Removed when its process is gone, it is not
/// locked, and it is a regular file of the caller's holding one line at
/// most.
fn remove_unborn(root: &SysRoot, dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some((stem, pid)) = name.strip_prefix('.').and_then(|n| n.rsplit_once('.')) else {
            continue;
        };
        let Ok(pid) = pid.parse::<i32>() else {
            continue;
        };
        let alive = crate::tasks::start_time(root, pid).is_some();
        if !stem.ends_with(".journal") || alive {
            continue;
        }
        let path = e.path();
        let Ok(file) = open_file(&path) else {
            continue;
        };
        let small = fs::read(&path).is_ok_and(|b| b.iter().filter(|&&c| c == b'\n').count() <= 1);
        if small && file.try_lock().is_ok() {
            let _ = fs::remove_file(&path);
        }
    }
}

#[cfg(test)]
mod tests;

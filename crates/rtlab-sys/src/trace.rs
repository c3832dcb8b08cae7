//! The kernel's tracefs, for a run's flight recorder: rtlab's own instance
//! (never the shared top-level buffer), in overwrite mode, on the measured
//! CPUs, with plain tracepoints every distribution kernel has. Mounting
//! tracefs and making the instance go through the journal, so that a run
//! ended any way leaves neither behind.

use crate::journal::{Change, Journal, JournalError};
use crate::{SysError, SysRoot, os, paths};
use std::fs::File;

/// What follows `rtlab-PID` in the name of each kind of instance rtlab
/// makes: the flight recorder's, the trace stream's.
pub const INSTANCE_SUFFIXES: &[&str] = &["", "-stream"];

/// Why the flight recorder cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The kernel has no tracefs.
    #[error(
        "this kernel has no tracefs: it needs {}",
        crate::features::remedy::TRACEFS
    )]
    NoTracefs,
    /// Mounting it failed.
    #[error("cannot mount tracefs at /{path}: {source}{}", mount_note(source))]
    Mount {
        /// The mount point.
        path: String,
        /// The system's answer.
        source: std::io::Error,
    },
    /// A tracefs file could not be made, read or written.
    #[error("{what}: {source}")]
    Kernel {
        /// What rtlab was doing.
        what: &'static str,
        /// The kernel's answer.
        source: SysError,
    },
    /// The change could not be journalled first, so it was not made.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The instance's name is taken: another rtlab of the same PID traces
    /// (in another PID namespace: another container), or one that died
    /// without its journal left it.
    #[error(
        "trace instance /{0} exists already: another rtlab with this PID is tracing (in \
         another PID namespace, as another container), or one that was killed left it; \
         if none runs, remove it on the host (`rmdir` it)"
    )]
    InstanceTaken(String),
}

/// What a refused mount means: no CAP_SYS_ADMIN, as in a container.
fn mount_note(e: &std::io::Error) -> &'static str {
    if e.raw_os_error() == Some(libc::EPERM) {
        " (a container may not mount it: pass the host's tracefs in, \
         `-v /sys/kernel/tracing:/sys/kernel/tracing`)"
    } else {
        ""
    }
}

fn kernel(what: &'static str) -> impl Fn(SysError) -> TraceError {
    move |source| TraceError::Kernel { what, source }
}

/// Every place tracefs is mounted (relative to the root).
pub fn mount_points(root: &SysRoot) -> Vec<String> {
    let mounts = root.read_opt("proc/self/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let target = f.nth(1)?;
            (f.next() == Some("tracefs")).then(|| target.trim_start_matches('/').to_string())
        })
        .collect()
}

/// Where tracefs is mounted (relative to the root) at one of its usual
/// places, if it is. A mount elsewhere is not used: the journal trusts
/// trace instances only under the usual places (a replayed journal must
/// not remove directories elsewhere), so rtlab then mounts its own.
pub fn mounted(root: &SysRoot) -> Option<String> {
    mount_points(root)
        .into_iter()
        .find(|m| paths::TRACEFS_MOUNTS.contains(&m.as_str()))
}

/// Whether this kernel offers tracefs at all.
pub fn available(root: &SysRoot) -> bool {
    root.read_opt("proc/filesystems").is_some_and(|f| {
        f.lines()
            .any(|l| l.split_whitespace().last() == Some("tracefs"))
    })
}

/// tracefs, mounted at [`paths::TRACEFS`] through the journal when it was
/// not mounted anywhere.
pub fn mount(root: &SysRoot, journal: &mut Journal) -> Result<String, TraceError> {
    if let Some(at) = mounted(root) {
        return Ok(at);
    }
    if !available(root) {
        return Err(TraceError::NoTracefs);
    }
    let path = paths::TRACEFS.to_string();
    journal.record(&Change::MountTracefs { path: path.clone() })?;
    os::mount_tracefs(&root.path(&path)).map_err(|source| TraceError::Mount {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

/// A tracefs instance of rtlab's, removed when dropped (the journal entry
/// covers a crash).
pub struct Instance {
    root: SysRoot,
    dir: String,
}

/// What the instance records.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The CPUs traced.
    pub cpus: Vec<usize>,
    /// Ring buffer per CPU (KiB).
    pub buffer_kb: u64,
    /// Overwrite mode (keep the last moments) rather than keep the first
    /// events and count those dropped (a stream read as it goes).
    pub overwrite: bool,
    /// The tracepoints, by `events/` directory: those the analyses
    /// declare (the system layer keeps no list of its own).
    pub events: Vec<&'static str>,
    /// More tracepoints the user named (`SYSTEM/EVENT`, checked by the
    /// experiment's parser: no path can leave `events/`).
    pub extra: Vec<String>,
}

/// The instance's `trace_pipe`, opened non-blocking: each read consumes
/// what the kernel has, merged from every CPU in time order.
pub struct Pipe {
    file: File,
}

impl Pipe {
    /// Appends what the pipe holds now to `buf`, at most `max` bytes.
    /// Returns the bytes read (0 when nothing is waiting).
    pub fn read_into(&mut self, buf: &mut Vec<u8>, max: usize) -> std::io::Result<usize> {
        use std::io::Read;
        let mut chunk = [0u8; 65536];
        let mut total = 0;
        while total < max {
            let want = chunk.len().min(max - total);
            match self.file.read(&mut chunk[..want]) {
                Ok(0) => break,
                Ok(n) => {
                    buf.extend_from_slice(&chunk[..n]);
                    total += n;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(total)
    }
}

/// The instance's per-CPU binary pipes (`per_cpu/cpuN/trace_pipe_raw`),
/// opened non-blocking: each read consumes whole ring-buffer pages (the
/// last one possibly partial), undecoded.
pub struct RawPipes {
    /// Each traced CPU and its pipe.
    files: Vec<(usize, File)>,
}

/// The size of a ring-buffer page as `trace_pipe_raw` gives it.
pub const RAW_PAGE: usize = 4096;

impl RawPipes {
    /// The traced CPUs, in the order [`RawPipes::read_into`] takes them.
    pub fn cpus(&self) -> Vec<usize> {
        self.files.iter().map(|f| f.0).collect()
    }

    /// Appends the pages CPU number `index` (of [`RawPipes::cpus`]) holds
    /// now to `buf`, at most `max` bytes, whole pages. Returns the bytes
    /// read (0 when nothing is waiting).
    pub fn read_into(
        &mut self,
        index: usize,
        buf: &mut Vec<u8>,
        max: usize,
    ) -> std::io::Result<usize> {
        use std::io::Read;
        let Some((_, file)) = self.files.get_mut(index) else {
            return Ok(0);
        };
        let mut total = 0;
        while total + RAW_PAGE <= max {
            let at = buf.len();
            buf.resize(at + RAW_PAGE, 0);
            let read = file.read(&mut buf[at..]);
            let n = match read {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => 0,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    buf.truncate(at);
                    break;
                }
                Err(e) => {
                    buf.truncate(at);
                    return Err(e);
                }
            };
            if n == 0 {
                buf.truncate(at);
                break;
            }
            // A short read is a page all the same: its header says how
            // much it holds; the rest stays zero.
            total += RAW_PAGE;
        }
        Ok(total)
    }
}

/// What decoding an instance's binary pages needs: the page header's
/// layout and each enabled event's `format` file.
#[derive(Debug, Clone, Default)]
pub struct Formats {
    /// `events/header_page`.
    pub header_page: String,
    /// The `format` files of the events asked for that this kernel has.
    pub events: Vec<String>,
}

/// The kernel's symbols (`/proc/kallsyms`), or None when unreadable.
pub fn kallsyms(root: &SysRoot) -> Option<String> {
    root.read_opt(paths::KALLSYMS)
}

/// The first symbols of `/proc/kallsyms` (a page of them: whether the
/// kernel shows its addresses, without formatting the 100 000 others).
pub fn kallsyms_head(root: &SysRoot) -> Option<String> {
    let head = root.read_large(paths::KALLSYMS, 4096).ok()?;
    // The last line may be cut.
    let whole = head.rfind('\n').map_or(0, |n| n + 1);
    Some(head[..whole].to_string())
}

/// Events the kernel could not keep in CPU `cpu`'s buffer (the `overrun`
/// and `dropped events` lines of `per_cpu/cpuN/stats`).
pub fn parse_lost(stats: &str) -> u64 {
    stats
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            matches!(k.trim(), "overrun" | "dropped events")
                .then(|| v.trim().parse::<u64>().ok())
                .flatten()
        })
        .sum()
}

impl Instance {
    /// Makes instance `rtlab-PID` under tracefs at `tracefs`, journalled
    /// first.
    pub fn create(
        root: &SysRoot,
        journal: &mut Journal,
        tracefs: &str,
        suffix: &str,
    ) -> Result<Instance, TraceError> {
        debug_assert!(INSTANCE_SUFFIXES.contains(&suffix));
        let dir = format!("{tracefs}/instances/rtlab-{}{suffix}", os::getpid());
        // Never journal (and so remove at the end) an instance that is not
        // ours.
        if root.exists(&dir) {
            return Err(TraceError::InstanceTaken(dir));
        }
        journal.record(&Change::TraceInstance { path: dir.clone() })?;
        root.mkdir(&dir)
            .map_err(kernel("cannot make the trace instance"))?;
        Ok(Instance {
            root: root.clone(),
            dir,
        })
    }

    /// The instance directory, relative to the root.
    pub fn dir(&self) -> &str {
        &self.dir
    }

    /// Sets the instance up and starts recording: overwrite mode, the
    /// CLOCK_MONOTONIC clock (the timer threads' deadlines), the CPUs, the
    /// buffer size and every event of [`EVENTS`] this kernel has. Gives
    /// the events it lacks.
    pub fn start(&self, rec: &Recording) -> Result<Vec<String>, TraceError> {
        let set = |file: &str, value: &str, what: &'static str| {
            self.root
                .write(&format!("{}/{file}", self.dir), value)
                .map_err(kernel(what))
        };
        set("tracing_on", "0", "cannot pause the instance")?;
        set("trace_clock", "mono", "cannot select the mono trace clock")?;
        set(
            "options/overwrite",
            if rec.overwrite { "1" } else { "0" },
            "cannot select the buffer mode",
        )?;
        set(
            "buffer_size_kb",
            &rec.buffer_kb.to_string(),
            "cannot size the trace buffer",
        )?;
        set(
            "tracing_cpumask",
            &rtlab_core::cpulist::format_mask(&rec.cpus),
            "cannot select the traced CPUs",
        )?;
        let mut missing = Vec::new();
        let extra = rec
            .extra
            .iter()
            .map(String::as_str)
            .filter(|e| e.split('/').all(|w| !w.is_empty() && w != ".." && w != "."));
        for event in rec.events.iter().copied().chain(extra) {
            let file = format!("{}/events/{event}/enable", self.dir);
            if !self.root.exists(&file) || self.root.write(&file, "1").is_err() {
                missing.push(event.to_string());
            }
        }
        set("tracing_on", "1", "cannot start the instance")?;
        Ok(missing)
    }

    /// The instance's `trace_marker`, opened for the timer threads: a write
    /// is one event in the buffer of the CPU that wrote it.
    pub fn marker(&self) -> Result<File, TraceError> {
        self.root
            .open_write(&format!("{}/trace_marker", self.dir))
            .map_err(kernel("cannot open the trace marker"))
    }

    /// The instance offers tracepoint `event` (`sched/sched_waking`).
    pub fn has_event(&self, event: &str) -> bool {
        let safe = event
            .split('/')
            .all(|w| !w.is_empty() && w != ".." && w != ".");
        safe && self
            .root
            .exists(&format!("{}/events/{event}/enable", self.dir))
    }

    /// Sets the filter of `event` (`raw_syscalls/sys_exit`), then enables
    /// it. Err when the kernel refuses either.
    pub fn filter_and_enable(&self, event: &str, filter: &str) -> Result<(), TraceError> {
        let dir = format!("{}/events/{event}", self.dir);
        self.root
            .write(&format!("{dir}/filter"), filter)
            .map_err(kernel("cannot set an event filter"))?;
        self.root
            .write(&format!("{dir}/enable"), "1")
            .map_err(kernel("cannot enable an event"))
    }

    /// Sets the filter of an enabled `event`.
    pub fn set_filter(&self, event: &str, filter: &str) -> Result<(), TraceError> {
        self.root
            .write(&format!("{}/events/{event}/filter", self.dir), filter)
            .map_err(kernel("cannot set an event filter"))
    }

    /// Sets a trigger of `event` (`stacktrace if next_pid == 12`): the
    /// instance records the kernel stack after each matching event.
    pub fn set_trigger(&self, event: &str, trigger: &str) -> Result<(), TraceError> {
        self.root
            .write(&format!("{}/events/{event}/trigger", self.dir), trigger)
            .map_err(kernel("cannot set an event trigger"))
    }

    /// Stops recording (what was recorded stays to be read).
    pub fn stop(&self) {
        let _ = self.root.write(&format!("{}/tracing_on", self.dir), "0");
    }

    /// The instance's `trace_pipe`, opened non-blocking.
    pub fn pipe(&self) -> Result<Pipe, TraceError> {
        let file = self
            .root
            .open_read_nonblocking(&format!("{}/trace_pipe", self.dir))
            .map_err(kernel("cannot open the trace pipe"))?;
        Ok(Pipe { file })
    }

    /// The instance's binary pipes, one per CPU of `cpus`.
    pub fn raw_pipes(&self, cpus: &[usize]) -> Result<RawPipes, TraceError> {
        let mut files = Vec::new();
        for &cpu in cpus {
            let file = self
                .root
                .open_read_nonblocking(&format!("{}/per_cpu/cpu{cpu}/trace_pipe_raw", self.dir))
                .map_err(kernel("cannot open a binary trace pipe"))?;
            files.push((cpu, file));
        }
        Ok(RawPipes { files })
    }

    /// The layout and formats that decode `events` (and `ftrace/print`,
    /// the trace marker's). Err when the page layout is unreadable.
    pub fn formats(&self, events: &[&str]) -> Result<Formats, TraceError> {
        let header_page = self
            .root
            .read_large(&format!("{}/events/header_page", self.dir), 65536)
            .map_err(kernel("cannot read the trace page layout"))?;
        let events = events
            .iter()
            .chain([&"ftrace/print", &"ftrace/kernel_stack"])
            .filter_map(|e| {
                self.root
                    .read_opt(&format!("{}/events/{e}/format", self.dir))
            })
            .collect();
        Ok(Formats {
            header_page,
            events,
        })
    }

    /// Task names the tracer saved (`saved_cmdlines`, `PID COMM`).
    pub fn saved_cmdlines(&self) -> String {
        let tracefs = self.dir.split("/instances/").next().unwrap_or("");
        self.root
            .read_opt(&format!("{tracefs}/saved_cmdlines"))
            .unwrap_or_default()
    }

    /// Events lost on `cpus` so far (the kernel's own counters).
    pub fn lost_events(&self, cpus: &[usize]) -> u64 {
        cpus.iter()
            .filter_map(|c| {
                self.root
                    .read_opt(&format!("{}/per_cpu/cpu{c}/stats", self.dir))
            })
            .map(|s| parse_lost(&s))
            .sum()
    }

    /// The text of CPU `cpu`'s buffer as it is now (not consumed; the
    /// kernel pauses recording while the file is open). At most
    /// `max_bytes`: the oldest part of a larger buffer is cut.
    pub fn read_cpu(&self, cpu: usize, max_bytes: usize) -> Result<String, TraceError> {
        let text = self
            .root
            .read_lossy(&format!("{}/per_cpu/cpu{cpu}/trace", self.dir))
            .map_err(kernel("cannot read the trace buffer"))?;
        Ok(match text.len().checked_sub(max_bytes) {
            Some(cut) if cut > 0 => {
                let at = text[cut..].find('\n').map_or(text.len(), |n| cut + n + 1);
                text[at..].to_string()
            }
            _ => text,
        })
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.root.write(&format!("{}/tracing_on", self.dir), "0");
        // The journal removes it too; removing it now frees its buffers at
        // once (and the journal finds it gone). The kernel refuses (EBUSY)
        // while any process has a file of it open, if only for a moment
        // (another rtlab looking for dead runs' instances): tried again
        // for up to 200 ms.
        for _ in 0..20 {
            match self.root.rmdir(&self.dir) {
                Err(SysError::Io { source, .. }) if source.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                _ => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::journal_dir;

    #[test]
    fn tracefs_is_found_where_the_mounts_say() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::at(dir.path());
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        let mounts = dir.path().join("proc/self/mounts");
        std::fs::write(&mounts, "proc /proc proc rw 0 0\n").unwrap();
        assert_eq!(mounted(&root), None);
        std::fs::write(
            &mounts,
            "proc /proc proc rw 0 0\ntracefs /sys/kernel/debug/tracing tracefs rw 0 0\n",
        )
        .unwrap();
        assert_eq!(mounted(&root).as_deref(), Some("sys/kernel/debug/tracing"));
        std::fs::write(dir.path().join("proc/filesystems"), "nodev\tsysfs\n").unwrap();
        assert!(!available(&root));
        std::fs::write(dir.path().join("proc/filesystems"), "nodev\ttracefs\n").unwrap();
        assert!(available(&root));
    }

    #[test]
    fn an_instance_of_the_same_name_is_never_taken_over() {
        // Another container's rtlab has this PID too (PID 1 in each).
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::at(dir.path());
        let tracefs = "sys/kernel/tracing";
        let theirs = format!("{tracefs}/instances/rtlab-{}", os::getpid());
        std::fs::create_dir_all(dir.path().join(&theirs)).unwrap();
        let jdir = journal_dir();
        let mut journal = Journal::open(
            &root,
            jdir.path(),
            "run-1.journal",
            crate::journal::Owner::Run,
        )
        .unwrap();
        let e = Instance::create(&root, &mut journal, tracefs, "")
            .err()
            .unwrap();
        assert!(e.to_string().contains("exists already"), "{e}");
        // Nothing journalled: the end of the run leaves it alone.
        drop(journal);
        let text = std::fs::read_to_string(jdir.path().join("run-1.journal")).unwrap();
        assert!(!text.contains("trace_instance"), "{text}");
        let eperm = std::io::Error::from_raw_os_error(libc::EPERM);
        assert!(mount_note(&eperm).contains("-v /sys/kernel/tracing:/sys/kernel/tracing"));
    }

    #[test]
    fn an_instance_is_journalled_set_up_and_names_what_it_lacks() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::at(dir.path());
        let tracefs = "sys/kernel/tracing";
        std::fs::create_dir_all(dir.path().join(tracefs).join("instances")).unwrap();
        let jdir = journal_dir();
        let mut journal = Journal::open(
            &root,
            jdir.path(),
            "run-1.journal",
            crate::journal::Owner::Run,
        )
        .unwrap();
        let instance = Instance::create(&root, &mut journal, tracefs, "").unwrap();
        let inst = dir.path().join(instance.dir());
        // What the kernel makes in a new instance, but two events.
        for f in [
            "tracing_on",
            "trace_clock",
            "options/overwrite",
            "buffer_size_kb",
            "tracing_cpumask",
            "trace_marker",
        ] {
            std::fs::create_dir_all(inst.join(f).parent().unwrap()).unwrap();
            std::fs::write(inst.join(f), "").unwrap();
        }
        const EVENTS: &[&str] = &[
            "sched/sched_switch",
            "ipi/ipi_send_cpu",
            "ipi/ipi_entry",
            "ipi/ipi_exit",
        ];
        let present = EVENTS.iter().filter(|e| !e.starts_with("ipi/"));
        for e in present.chain(&["sched/sched_migrate_task"]) {
            std::fs::create_dir_all(inst.join("events").join(e)).unwrap();
            std::fs::write(inst.join("events").join(e).join("enable"), "0").unwrap();
        }
        let missing = instance
            .start(&Recording {
                cpus: vec![1, 3],
                buffer_kb: 512,
                overwrite: true,
                events: EVENTS.to_vec(),
                extra: vec!["sched/sched_migrate_task".into(), "no/such_event".into()],
            })
            .unwrap();
        assert_eq!(
            missing,
            [
                "ipi/ipi_send_cpu",
                "ipi/ipi_entry",
                "ipi/ipi_exit",
                "no/such_event"
            ]
        );
        assert_eq!(
            std::fs::read_to_string(inst.join("events/sched/sched_migrate_task/enable")).unwrap(),
            "1"
        );
        let read = |f: &str| std::fs::read_to_string(inst.join(f)).unwrap();
        assert_eq!(read("trace_clock"), "mono");
        assert_eq!(read("options/overwrite"), "1");
        assert_eq!(read("buffer_size_kb"), "512");
        assert_eq!(read("tracing_cpumask"), "a");
        assert_eq!(read("tracing_on"), "1");
        assert_eq!(read("events/sched/sched_switch/enable"), "1");
        assert!(instance.marker().is_ok());
        // The journal holds the instance, for a crash.
        let (_, changes) = crate::journal::read(&root, journal.path()).unwrap();
        assert!(matches!(&changes[..], [Change::TraceInstance { path }] if path == instance.dir()));
    }

    #[test]
    fn lost_events_are_read_from_the_stats_file() {
        let stats = "entries: 10\noverrun: 3\ncommit overrun: 0\nbytes: 100\n\
                     oldest event ts: 1.0\nnow ts: 2.0\ndropped events: 4\nread events: 7\n";
        assert_eq!(parse_lost(stats), 7);
        assert_eq!(parse_lost("garbage\n:\noverrun: x\n"), 0);
    }
}

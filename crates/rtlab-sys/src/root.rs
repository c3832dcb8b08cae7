//! The one door to kernel files: every read or write of `/proc`, `/sys`,
//! `/dev` and cgroup files goes through a [`SysRoot`], so that unit tests can
//! point it at a fake tree and integration tests at the real `/`.
//!
//! Paths given to a `SysRoot` are relative to its root (`"proc/stat"`), never
//! absolute. This file is the only place in the crate that names the real root.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a kernel file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SysError {
    /// The file does not exist (the kernel does not offer this knob).
    #[error("{0}: not present on this kernel")]
    NotFound(PathBuf),
    /// The kernel refused the access (EPERM/EACCES).
    #[error("{0}: permission denied")]
    PermissionDenied(PathBuf),
    /// Any other I/O error.
    #[error("{path}: {source}")]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The file was read but did not have the expected shape.
    #[error("{path}: unexpected content: {what}")]
    Parse {
        /// The file concerned.
        path: PathBuf,
        /// What was wrong.
        what: String,
    },
}

impl SysError {
    /// Classifies an I/O error on `path`.
    pub fn from_io(path: &Path, err: io::Error) -> Self {
        match err.kind() {
            io::ErrorKind::NotFound => SysError::NotFound(path.to_path_buf()),
            io::ErrorKind::PermissionDenied => SysError::PermissionDenied(path.to_path_buf()),
            _ if err.raw_os_error() == Some(libc::EPERM) => {
                SysError::PermissionDenied(path.to_path_buf())
            }
            _ => SysError::Io {
                path: path.to_path_buf(),
                source: err,
            },
        }
    }

    /// The errno behind the error, when it came from the kernel.
    pub fn errno(&self) -> Option<i32> {
        match self {
            SysError::NotFound(_) => Some(libc::ENOENT),
            SysError::PermissionDenied(_) => Some(libc::EPERM),
            SysError::Io { source, .. } => source.raw_os_error(),
            SysError::Parse { .. } => None,
        }
    }
}

/// The kernel's behaviour behind a fake tree, for unit tests: what a plain
/// file cannot do (refuse a write with EPERM, move a task between cgroups,
/// fill a new cgroup directory with its files). Each hook returns `None` to
/// let the plain file operation happen.
pub trait FakeKernel: Send + Sync + std::fmt::Debug {
    /// A write of `value` to `rel` (under the tree `tree`).
    fn write(&self, tree: &Path, rel: &str, value: &str) -> Option<io::Result<()>>;
    /// A mkdir of `rel`.
    fn mkdir(&self, tree: &Path, rel: &str) -> Option<io::Result<()>>;
    /// A rmdir of `rel`.
    fn rmdir(&self, tree: &Path, rel: &str) -> Option<io::Result<()>>;
    /// `sched_setaffinity(tid, cpus)`: a fake tree's tasks are not real.
    fn set_affinity(&self, tree: &Path, tid: i32, cpus: &[usize]) -> io::Result<()>;
    /// `sched_setscheduler(tid, ...)` (and the nice value).
    fn set_sched(&self, tree: &Path, tid: i32, sched: super::os::Sched) -> io::Result<()>;
}

/// A root directory under which kernel files are found (`/` on a real run).
#[derive(Debug, Clone)]
pub struct SysRoot {
    root: PathBuf,
    kernel: Option<Arc<dyn FakeKernel>>,
}

impl PartialEq for SysRoot {
    fn eq(&self, other: &Self) -> bool {
        self.root == other.root
    }
}

impl Eq for SysRoot {}

impl SysRoot {
    /// The real machine.
    pub fn real() -> Self {
        SysRoot {
            root: PathBuf::from("/"),
            kernel: None,
        }
    }

    /// A fake tree rooted at `root` (tests), with plain file semantics.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        SysRoot {
            root: root.into(),
            kernel: None,
        }
    }

    /// A fake tree whose writes, mkdirs and rmdirs go through `kernel` first.
    pub fn simulated(root: impl Into<PathBuf>, kernel: Arc<dyn FakeKernel>) -> Self {
        SysRoot {
            root: root.into(),
            kernel: Some(kernel),
        }
    }

    fn rel(rel: &str) -> &str {
        rel.trim_start_matches('/')
    }

    /// The full path of `rel` (relative to the root; a leading `/` is ignored so
    /// that absolute paths read from the kernel, like mount points, map too).
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(Self::rel(rel))
    }

    /// Whether `rel` exists.
    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    /// Reads `rel` as text.
    pub fn read(&self, rel: &str) -> Result<String, SysError> {
        let path = self.path(rel);
        fs::read_to_string(&path).map_err(|e| SysError::from_io(&path, e))
    }

    /// Reads `rel` as text that may hold bytes of another encoding (a trace
    /// shows tasks' names as they are): each such byte is a `?`, the text
    /// as long as the file.
    pub fn read_lossy(&self, rel: &str) -> Result<String, SysError> {
        let path = self.path(rel);
        let bytes = fs::read(&path).map_err(|e| SysError::from_io(&path, e))?;
        Ok(match rtlab_core::text::lossy(&bytes) {
            std::borrow::Cow::Borrowed(_) => String::from_utf8(bytes).unwrap_or_default(),
            std::borrow::Cow::Owned(s) => s,
        })
    }

    /// Reads `rel` as text with reads of one large buffer: some kernel
    /// files (tracefs `header_page`) end early when read in small pieces.
    /// At most `max` bytes.
    pub fn read_large(&self, rel: &str, max: usize) -> Result<String, SysError> {
        use std::io::Read;
        let path = self.path(rel);
        let mut file = fs::File::open(&path).map_err(|e| SysError::from_io(&path, e))?;
        let mut buf = vec![0u8; max];
        let mut len = 0;
        while len < max {
            match file.read(&mut buf[len..]) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(SysError::from_io(&path, e)),
            }
        }
        buf.truncate(len);
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    /// Reads `rel` and trims surrounding whitespace.
    pub fn read_trim(&self, rel: &str) -> Result<String, SysError> {
        self.read(rel).map(|s| s.trim().to_string())
    }

    /// Reads `rel`, or `None` when it is absent or unreadable.
    pub fn read_opt(&self, rel: &str) -> Option<String> {
        self.read_trim(rel).ok()
    }

    /// Writes `value` to an existing kernel file in one `write` call, as the
    /// kernel expects for sysfs and cgroup files.
    pub fn write(&self, rel: &str, value: &str) -> Result<(), SysError> {
        let path = self.path(rel);
        if let Some(done) = self
            .kernel
            .as_ref()
            .and_then(|k| k.write(&self.root, Self::rel(rel), value))
        {
            return done.map_err(|e| SysError::from_io(&path, e));
        }
        // O_TRUNC as a shell's `>` does: kernel files ignore it, and a fake
        // tree then holds exactly the value written.
        let mut file = fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| SysError::from_io(&path, e))?;
        file.write_all(value.as_bytes())
            .map_err(|e| SysError::from_io(&path, e))
    }

    /// Opens `rel` for writing (kept open by the caller, e.g. cgroup.procs
    /// written from a child before exec, or /dev/cpu_dma_latency held open).
    pub fn open_write(&self, rel: &str) -> Result<fs::File, SysError> {
        let path = self.path(rel);
        fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(|e| SysError::from_io(&path, e))
    }

    /// Opens `rel` for reading without blocking (a tracefs pipe).
    pub fn open_read_nonblocking(&self, rel: &str) -> Result<fs::File, SysError> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = self.path(rel);
        fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| SysError::from_io(&path, e))
    }

    /// Opens `rel` read-write (e.g. /dev/cpu_dma_latency).
    pub fn open_rw(&self, rel: &str) -> Result<fs::File, SysError> {
        let path = self.path(rel);
        fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| SysError::from_io(&path, e))
    }

    /// Creates directory `rel` (a cgroup).
    pub fn mkdir(&self, rel: &str) -> Result<(), SysError> {
        let path = self.path(rel);
        if let Some(done) = self
            .kernel
            .as_ref()
            .and_then(|k| k.mkdir(&self.root, Self::rel(rel)))
        {
            return done.map_err(|e| SysError::from_io(&path, e));
        }
        fs::create_dir(&path).map_err(|e| SysError::from_io(&path, e))
    }

    /// Removes the empty directory `rel` (a cgroup).
    pub fn rmdir(&self, rel: &str) -> Result<(), SysError> {
        let path = self.path(rel);
        if let Some(done) = self
            .kernel
            .as_ref()
            .and_then(|k| k.rmdir(&self.root, Self::rel(rel)))
        {
            return done.map_err(|e| SysError::from_io(&path, e));
        }
        fs::remove_dir(&path).map_err(|e| SysError::from_io(&path, e))
    }

    /// Pins task `tid` to `cpus` (the real `sched_setaffinity`, or the fake
    /// kernel's on a simulated tree).
    pub fn set_task_affinity(&self, tid: i32, cpus: &[usize]) -> io::Result<()> {
        match &self.kernel {
            Some(k) => k.set_affinity(&self.root, tid, cpus),
            None if self.root == Path::new("/") => super::os::set_affinity(tid, cpus),
            None => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "a fake tree without a fake kernel has no tasks",
            )),
        }
    }

    /// Sets the policy and priority of task `tid` (the real
    /// `sched_setscheduler`, or the fake kernel's on a simulated tree).
    pub fn set_task_sched(&self, tid: i32, sched: super::os::Sched) -> io::Result<()> {
        match &self.kernel {
            Some(k) => k.set_sched(&self.root, tid, sched),
            None if self.root == Path::new("/") => super::os::set_sched(tid, sched),
            None => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "a fake tree without a fake kernel has no tasks",
            )),
        }
    }

    /// The names of the entries of directory `rel`, sorted.
    pub fn list(&self, rel: &str) -> Result<Vec<String>, SysError> {
        let path = self.path(rel);
        let entries = fs::read_dir(&path).map_err(|e| SysError::from_io(&path, e))?;
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(names)
    }

    /// Whether `rel` is a directory.
    pub fn is_dir(&self, rel: &str) -> bool {
        self.path(rel).is_dir()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_classifies_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        std::fs::write(dir.path().join("proc/x"), " 42\n").unwrap();
        let root = SysRoot::at(dir.path());
        assert_eq!(root.read_trim("proc/x").unwrap(), "42");
        assert_eq!(root.read_trim("/proc/x").unwrap(), "42");
        assert!(matches!(root.read("proc/y"), Err(SysError::NotFound(_))));
        assert!(root.read_opt("proc/y").is_none());
    }
}

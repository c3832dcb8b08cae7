//! The one door to kernel files: every read or write of `/proc`, `/sys`,
//! `/dev` and cgroup files goes through a [`SysRoot`], so that unit tests can
//! point it at a fake tree and integration tests at the real `/`.
//!
//! Paths given to a `SysRoot` are relative to its root (`"proc/stat"`), never
//! absolute. This file is the only place in the crate that names the real root.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

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
}

/// A root directory under which kernel files are found (`/` on a real run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysRoot {
    root: PathBuf,
}

impl SysRoot {
    /// The real machine.
    pub fn real() -> Self {
        SysRoot {
            root: PathBuf::from("/"),
        }
    }

    /// A fake tree rooted at `root` (tests).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        SysRoot { root: root.into() }
    }

    /// The full path of `rel` (relative to the root; a leading `/` is ignored so
    /// that absolute paths read from the kernel, like mount points, map too).
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel.trim_start_matches('/'))
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
        let mut file = fs::OpenOptions::new()
            .write(true)
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
        fs::create_dir(&path).map_err(|e| SysError::from_io(&path, e))
    }

    /// Removes the empty directory `rel` (a cgroup).
    pub fn rmdir(&self, rel: &str) -> Result<(), SysError> {
        let path = self.path(rel);
        fs::remove_dir(&path).map_err(|e| SysError::from_io(&path, e))
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

    #[test]
    fn no_kernel_path_literal_outside_the_sys_layer() {
        // Rule: kernel files are reached only through SysRoot. Scan the sources.
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut offenders = Vec::new();
        let mut stack = vec![src];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                for needle in ["\"/proc", "\"/sys", "\"/dev/cpu"] {
                    if text.contains(needle) && !path.ends_with("sys/root.rs") {
                        offenders.push(format!("{} has {needle}", path.display()));
                    }
                }
            }
        }
        assert!(offenders.is_empty(), "{offenders:?}");
    }
}

//! Writing the files rtlab creates (result files, `--json`, plots, reports,
//! scripts, program output) safely in directories it may not own, as root.
//!
//! - The directory is reached component by component from a held
//!   directory descriptor. A symbolic link on the way is followed only when
//!   it belongs to root or to the caller: one that anybody else planted
//!   (in `/tmp`, in a user's directory) is refused, whatever
//!   `fs.protected_symlinks` says.
//! - The target itself is never opened. A file is written to a fresh
//!   temporary name (`O_CREAT|O_EXCL|O_NOFOLLOW`) in the same directory,
//!   synced and renamed into place: a reader sees the old file or the new
//!   one, never half of one, and a link planted at the target's name is
//!   replaced, not followed.
//! - A target that exists and is not a regular file of the caller's user
//!   (a symbolic link, a directory, a device, someone else's file) is
//!   refused, by [`check`] before a run starts and again when writing.

use crate::journal::{Change, Journal};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Links followed while reaching one directory (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// Why a file cannot be written where asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {problem}")]
pub struct OutputError {
    /// The file (or directory) concerned, as given.
    pub path: String,
    /// What is wrong.
    pub problem: String,
    /// What to do about it.
    pub hint: String,
}

impl OutputError {
    fn new(path: &Path, problem: impl Into<String>, hint: &str) -> Self {
        OutputError {
            path: path.display().to_string(),
            problem: problem.into(),
            hint: hint.into(),
        }
    }

    fn io(path: &Path, what: &str, e: Errno) -> Self {
        Self::new(
            path,
            format!("{what}: {}", std::io::Error::from(e)),
            "check the directory's permissions and free space",
        )
    }

    /// The message with its hint, on two lines.
    pub fn with_hint(&self) -> String {
        format!("{self}\n  hint: {}", self.hint)
    }
}

const LINK_HINT: &str =
    "rtlab runs as root and never follows a link that someone else can change; give the real path";

fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Whether a link owned by `uid` may be followed.
fn trusted_owner(uid: u32) -> bool {
    uid == 0 || uid == euid()
}

/// Filesystems whose files are the kernel's interfaces, not storage, by
/// their `statfs` magic: a result written there makes cgroups or trace
/// instances, or is lost.
const PSEUDO_FILESYSTEMS: [(i64, &str); 17] = [
    (0x9fa0, "proc"),
    (0x6265_6572, "sysfs"),
    (0x0027_e0eb, "cgroup"),
    (0x6367_7270, "cgroup2"),
    (0x7472_6163, "tracefs"),
    (0x6462_6720, "debugfs"),
    (0x7363_6673, "securityfs"),
    (0xcafe_4a11, "bpf"),
    (0x6165_676c, "pstore"),
    (0x6265_6570, "configfs"),
    (0x1cd1, "devpts"),
    (0xde5e_81e4, "efivarfs"),
    (0xf97c_ff8c, "selinuxfs"),
    (0x4341_5d53, "smackfs"),
    (0x6573_5543, "fusectl"),
    (0x4249_4e4d, "binfmt_misc"),
    (0x1980_0202, "mqueue"),
];

/// Refuses a directory on a pseudo-filesystem (see [`PSEUDO_FILESYSTEMS`]).
fn check_filesystem(fd: &OwnedFd, dir: &Path) -> Result<(), OutputError> {
    let st = rustix::fs::fstatfs(fd).map_err(|e| OutputError::io(dir, "cannot look at it", e))?;
    #[allow(clippy::unnecessary_cast)] // f_type is i32 on some targets
    let magic = st.f_type as i64 & 0xffff_ffff;
    match PSEUDO_FILESYSTEMS.iter().find(|(m, _)| *m == magic) {
        Some((_, name)) => Err(OutputError::new(
            dir,
            format!("is on {name}, a kernel interface, not storage"),
            "write results to a directory on a disk or tmpfs",
        )),
        None => Ok(()),
    }
}

/// Whether a symbolic link (`link`) found in directory `parent` may be
/// followed: it belongs to root or the caller and, when others may write
/// the directory (its owner is neither, or it is group- or
/// world-writable), it belongs to the directory's owner and has one name.
/// `fs.protected_symlinks` alone would follow root's `/var/run` hard-linked
/// by another user into their own directory.
fn link_trusted(link: &rustix::fs::Stat, parent: &rustix::fs::Stat) -> Result<(), String> {
    if !trusted_owner(link.st_uid) {
        return Err(format!(
            "is a symbolic link owned by uid {}, neither root nor you",
            link.st_uid
        ));
    }
    let others_write = !trusted_owner(parent.st_uid)
        || parent.st_mode & 0o002 != 0
        || (parent.st_mode & 0o020 != 0 && parent.st_gid != 0);
    if others_write && link.st_uid != parent.st_uid {
        return Err(format!(
            "is a symbolic link of uid {} in a directory of uid {} that others can write",
            link.st_uid, parent.st_uid
        ));
    }
    if others_write && link.st_nlink > 1 {
        return Err(format!(
            "is a symbolic link with {} names in a directory others can write (a hard link to someone's link)",
            link.st_nlink
        ));
    }
    Ok(())
}

/// Opens directory `dir` component by component (see the module comment).
/// With `create`, missing directories are made (mode 0755 less the umask);
/// without it a missing directory is an error, or `Ok(None)` when
/// `missing_ok` (the directory will be made later).
fn open_dir(dir: &Path, create: bool, missing_ok: bool) -> Result<Option<OwnedFd>, OutputError> {
    let start = if dir.is_absolute() { "/" } else { "." };
    let mut fd =
        open_path(&CWD, OsStr::new(start)).map_err(|e| OutputError::io(dir, "cannot open", e))?;
    let mut todo = steps(dir);
    let (mut links, mut just_made) = (0, false);
    while let Some(name) = todo.pop_front() {
        let st = match rustix::fs::statat(&fd, &name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => {
                just_made = false;
                st
            }
            Err(Errno::NOENT) if create => {
                // Made, then looked at again: once, should someone remove
                // it in between.
                if just_made {
                    return Err(OutputError::io(
                        dir,
                        "cannot make the directory",
                        Errno::AGAIN,
                    ));
                }
                just_made = true;
                check_filesystem(&fd, dir)?;
                match rustix::fs::mkdirat(&fd, &name, Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(OutputError::io(dir, "cannot make the directory", e)),
                }
                todo.push_front(name);
                continue;
            }
            Err(Errno::NOENT) if missing_ok => {
                check_filesystem(&fd, dir)?;
                return Ok(None);
            }
            Err(Errno::NOENT) => {
                return Err(OutputError::new(
                    dir,
                    format!("directory `{}` does not exist", name.to_string_lossy()),
                    "create it first, or choose another path",
                ));
            }
            Err(e) => return Err(OutputError::io(dir, "cannot reach the directory", e)),
        };
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Directory => {
                fd = open_path(&fd, &name).map_err(|e| match e {
                    Errno::NOTDIR | Errno::LOOP => OutputError::new(
                        dir,
                        format!(
                            "`{}` changed while rtlab was reaching it",
                            name.to_string_lossy()
                        ),
                        LINK_HINT,
                    ),
                    e => OutputError::io(dir, "cannot open the directory", e),
                })?;
            }
            FileType::Symlink => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(OutputError::new(
                        dir,
                        "too many levels of symbolic links",
                        LINK_HINT,
                    ));
                }
                follow_link(&mut fd, &name, &st, dir, &mut todo)?;
            }
            _ => {
                return Err(OutputError::new(
                    dir,
                    format!("`{}` is not a directory", name.to_string_lossy()),
                    "choose another path",
                ));
            }
        }
    }
    check_filesystem(&fd, dir)?;
    Ok(Some(fd))
}

/// `openat(O_PATH|O_DIRECTORY|O_NOFOLLOW)`: a directory held, never
/// through a link.
fn open_path(at: &dyn AsFd, name: &OsStr) -> Result<OwnedFd, Errno> {
    rustix::fs::openat(
        at,
        name,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// The names to walk through for `path` (`..` kept, as the shell's).
fn steps(path: &Path) -> VecDeque<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect()
}

/// Follows link `name` (with `st`) found in directory `fd`, if it may be
/// ([`link_trusted`]): its target's steps go first in `todo`, from `/`
/// when it is absolute.
fn follow_link(
    fd: &mut OwnedFd,
    name: &OsStr,
    st: &rustix::fs::Stat,
    dir: &Path,
    todo: &mut VecDeque<OsString>,
) -> Result<(), OutputError> {
    let parent = rustix::fs::fstat(&*fd)
        .map_err(|e| OutputError::io(dir, "cannot look at a directory", e))?;
    if let Err(why) = link_trusted(st, &parent) {
        return Err(OutputError::new(
            dir,
            format!("`{}` {why}", name.to_string_lossy()),
            LINK_HINT,
        ));
    }
    let target = rustix::fs::readlinkat(&*fd, name, Vec::new())
        .map_err(|e| OutputError::io(dir, "cannot read a link", e))?;
    let target = PathBuf::from(OsStr::from_bytes(target.as_bytes()));
    if target.is_absolute() {
        *fd = open_path(&CWD, OsStr::new("/"))
            .map_err(|e| OutputError::io(dir, "cannot open /", e))?;
    }
    for step in steps(&target).into_iter().rev() {
        todo.push_front(step);
    }
    Ok(())
}

/// The directory part and the file name of `path`.
fn split(path: &Path) -> Result<(&Path, &OsStr), OutputError> {
    let name = path
        .file_name()
        .filter(|_| !path.as_os_str().as_bytes().ends_with(b"/"))
        .ok_or_else(|| {
            OutputError::new(path, "is not a file name", "name a file, not a directory")
        })?;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
    Ok((dir.unwrap_or(Path::new(".")), name))
}

/// Refuses an existing target that is not a regular file of the caller.
fn check_target(dir: &OwnedFd, name: &OsStr, path: &Path) -> Result<(), OutputError> {
    let st = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::NOENT) => return Ok(()),
        Err(e) => return Err(OutputError::io(path, "cannot look at it", e)),
    };
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile if st.st_uid == euid() => Ok(()),
        FileType::RegularFile => Err(OutputError::new(
            path,
            format!("belongs to uid {}, not to you (uid {})", st.st_uid, euid()),
            "rtlab replaces only its own user's files; remove it or choose another name",
        )),
        FileType::Symlink => Err(OutputError::new(
            path,
            "is a symbolic link; rtlab never writes through a link",
            "remove the link, or choose another name",
        )),
        other => Err(OutputError::new(
            path,
            format!("is not a regular file ({})", type_name(other)),
            "choose another name",
        )),
    }
}

fn type_name(t: FileType) -> &'static str {
    match t {
        FileType::Directory => "a directory",
        FileType::Fifo => "a FIFO",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Socket => "a socket",
        _ => "not a plain file",
    }
}

/// Checks, without writing anything, that `path` can be written safely: its
/// directory is reachable without a foreign link and the target is absent
/// or a regular file of the caller. With `dirs_made_later`, a missing
/// directory is fine (the run makes it).
pub fn check(path: &Path, dirs_made_later: bool) -> Result<(), OutputError> {
    let (dir, name) = split(path)?;
    match open_dir(dir, false, dirs_made_later)? {
        Some(fd) => {
            check_writable(&fd, path)?;
            check_target(&fd, name, path)
        }
        None => Ok(()),
    }
}

/// The directory held by `dir` takes new files: not on a read-only file
/// system (a container's image without a volume, `--read-only`), and
/// writable by this user; said before anything starts rather than when
/// the results are written.
fn check_writable(dir: &OwnedFd, path: &Path) -> Result<(), OutputError> {
    match rustix::fs::accessat(dir, ".", rustix::fs::Access::WRITE_OK, AtFlags::empty()) {
        Ok(()) => Ok(()),
        Err(e) => Err(OutputError::new(
            path,
            format!("cannot write in its directory: {}", std::io::Error::from(e)),
            "choose a directory this user can write (`--outdir DIR`; in a container, a volume: \
             `-v DIR:/out -w /out`)",
        )),
    }
}

/// Checks, without making anything, that files can be written safely in
/// directory `dir`: it is reached without a foreign link and, where it
/// exists, is a directory. A missing directory is fine (made when its
/// files are written, by [`create_dirs`]).
pub fn check_dir(dir: &Path) -> Result<(), OutputError> {
    open_dir(dir, false, true).map(|_| ())
}

/// Holds existing directory `dir`, reached safely (see [`check`]), as an
/// `O_PATH` descriptor to work in with the `*at` calls.
pub fn open_held_dir(dir: &Path) -> Result<OwnedFd, OutputError> {
    open_dir(dir, false, false)?.ok_or_else(|| {
        OutputError::new(
            dir,
            "does not exist",
            "create it first, or choose another path",
        )
    })
}

/// Makes directory `dir` and its missing parents, safely (see [`check`]).
pub fn create_dirs(dir: &Path) -> Result<(), OutputError> {
    open_dir(dir, true, false).map(|_| ())
}

static SERIAL: AtomicU32 = AtomicU32::new(0);

/// A file being written under a temporary name in its final directory,
/// renamed into place by [`Staged::commit`] (or when dropped).
#[derive(Debug)]
pub struct Staged {
    dir: OwnedFd,
    tmp: OsString,
    name: OsString,
    path: PathBuf,
    file: File,
    done: bool,
    /// The temporary name is in a run's journal (its replay removes it).
    journalled: bool,
}

impl Staged {
    /// Starts the file that will become `path`.
    pub fn create(path: &Path) -> Result<Staged, OutputError> {
        let (dir_fd, name) = Self::open_dir_of(path)?;
        check_target(&dir_fd, name, path)?;
        Self::stage(dir_fd, name, path, None)
    }

    /// As [`Staged::create`], the temporary file recorded in `journal`
    /// before it is made (a run killed before [`Staged::commit`] leaves
    /// nothing behind: the journal's replay removes it).
    pub fn create_journalled(path: &Path, journal: &mut Journal) -> Result<Staged, OutputError> {
        let (dir_fd, name) = Self::open_dir_of(path)?;
        check_target(&dir_fd, name, path)?;
        Self::stage(dir_fd, name, path, Some(journal))
    }

    /// The held directory of `path` and its file name.
    fn open_dir_of(path: &Path) -> Result<(OwnedFd, &OsStr), OutputError> {
        let (dir, name) = split(path)?;
        match open_dir(dir, false, false)? {
            Some(fd) => Ok((fd, name)),
            None => Err(OutputError::new(
                path,
                "its directory does not exist",
                "create it first",
            )),
        }
    }

    /// A fresh temporary file in `dir_fd` that will become `name`,
    /// recorded in `journal` first when one is given.
    fn stage(
        dir_fd: OwnedFd,
        name: &OsStr,
        path: &Path,
        journal: Option<&mut Journal>,
    ) -> Result<Staged, OutputError> {
        // A part no other user can foretell: a name they could plant
        // (their link, their file) would refuse the output (EEXIST).
        let unforeseeable = {
            use std::hash::{BuildHasher, Hasher};
            std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish()
        };
        let tmp = OsString::from(format!(
            ".rtlab-{}-{}-{unforeseeable:016x}.tmp",
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed)
        ));
        let journalled = journal.is_some();
        if let Some(j) = journal {
            let at = dir_path(&dir_fd)
                .ok_or_else(|| {
                    OutputError::new(path, "its directory has no name now", "create it again")
                })?
                .join(&tmp);
            j.record(&Change::StagedFile {
                path: at.to_string_lossy().into_owned(),
            })
            .map_err(|e| {
                OutputError::new(
                    path,
                    format!("cannot journal it: {e}"),
                    "check the journal directory",
                )
            })?;
        }
        let fd = rustix::fs::openat(
            &dir_fd,
            &tmp,
            // Read and write: what cannot be put in place is copied from it.
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|e| OutputError::io(path, "cannot create a temporary file beside it", e))?;
        Ok(Staged {
            dir: dir_fd,
            tmp,
            name: name.to_os_string(),
            path: path.to_path_buf(),
            file: File::from(fd),
            done: false,
            journalled,
        })
    }

    /// The open temporary file.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Syncs the file and renames it into place.
    pub fn commit(mut self) -> Result<(), OutputError> {
        self.finish()
    }

    fn finish(&mut self) -> Result<(), OutputError> {
        if std::mem::replace(&mut self.done, true) {
            return Ok(());
        }
        let done = self
            .file
            .sync_all()
            .map_err(|e| {
                OutputError::new(
                    &self.path,
                    format!("cannot write: {e}"),
                    "check the free space",
                )
            })
            .and_then(|()| {
                // The target is checked again: it may have changed since.
                check_target(&self.dir, &self.name, &self.path)
            })
            .and_then(|()| {
                rustix::fs::renameat(&self.dir, &self.tmp, &self.dir, &self.name)
                    .map_err(|e| OutputError::io(&self.path, "cannot put the file in place", e))
            });
        done.map_err(|mut e| {
            // Never lose what was written: it goes under a name of its
            // own, said in the error.
            e.problem = format!("{}; {}", e.problem, self.keep_said());
            e
        })
    }

    /// Keeps what was written ([`Staged::keep`]) and says where, or says
    /// that it could not be kept (it is then lost with the temporary
    /// file: never said kept under a name the journal's replay removes).
    fn keep_said(&self) -> String {
        match self.keep() {
            Ok(kept) => format!("what was written is kept as {}", kept.display()),
            // Nothing removes a temporary name that is not journalled.
            Err(_) if !self.journalled => format!(
                "what was written is kept as {}",
                self.path.with_file_name(&self.tmp).display()
            ),
            Err(why) => format!("what was written could not be kept: {why}"),
        }
    }

    /// Gives what was written a name of its own: beside the target,
    /// `NAME.rtlab-PID-N`, that nothing else holds (`linkat` never
    /// replaces: a name taken makes it try the next N); when all 100 are
    /// taken (someone else filled them), a copy in rtlab's own directory
    /// ([`own_dir`]), where nobody else can write.
    fn keep(&self) -> Result<PathBuf, String> {
        for n in 0..KEEP_NAMES {
            let mut name = self.name.clone();
            name.push(format!(".rtlab-{}-{n}", std::process::id()));
            match rustix::fs::linkat(&self.dir, &self.tmp, &self.dir, &name, AtFlags::empty()) {
                Ok(()) => {
                    let _ = rustix::fs::unlinkat(&self.dir, &self.tmp, AtFlags::empty());
                    return Ok(self.path.with_file_name(name));
                }
                Err(Errno::EXIST) => continue,
                Err(_) => break,
            }
        }
        let kept = copy_to_own_dir(&self.file, &self.name)?;
        let _ = rustix::fs::unlinkat(&self.dir, &self.tmp, AtFlags::empty());
        Ok(kept)
    }
}

/// Names tried beside a target before rtlab's own directory.
const KEEP_NAMES: u32 = 100;

/// rtlab's own directory for what cannot be kept beside its target: `kept`
/// in the journal directory (`/run/rtlab/kept`, mode 0700), for root, when
/// that directory deserves trust ([`crate::journal::check_dir`]); None
/// for another user (they have no such directory) or an untrusted one.
pub fn own_dir() -> Option<PathBuf> {
    if euid() != 0 {
        return None;
    }
    let journal = crate::journal::default_dir();
    crate::journal::check_dir(&journal).ok()?;
    Some(journal.join("kept"))
}

/// Copies `file` (from its start) to a new file named after `name` in
/// [`own_dir`]; gives its path.
fn copy_to_own_dir(file: &File, name: &OsStr) -> Result<PathBuf, String> {
    use std::os::unix::fs::FileExt;
    let dir_path = own_dir().ok_or_else(|| {
        format!(
            "the {KEEP_NAMES} names beside it are taken, and rtlab has no directory of its own here (it has one as root: {}/kept)",
            crate::journal::default_dir().display()
        )
    })?;
    let failed = |what: &str, e: Errno| {
        format!(
            "{}: {what}: {}",
            dir_path.display(),
            std::io::Error::from(e)
        )
    };
    let parent = open_path(
        &CWD,
        dir_path.parent().unwrap_or(Path::new("/")).as_os_str(),
    )
    .map_err(|e| failed("cannot open", e))?;
    match rustix::fs::mkdirat(&parent, "kept", Mode::from_raw_mode(0o700)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(failed("cannot make it", e)),
    }
    let dir = rustix::fs::openat(
        &parent,
        "kept",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| failed("cannot open", e))?;
    let st = rustix::fs::fstat(&dir).map_err(|e| failed("cannot look at it", e))?;
    if st.st_uid != euid() || st.st_mode & 0o077 != 0 {
        return Err(format!(
            "{}: not a directory of rtlab's user that only it can reach",
            dir_path.display()
        ));
    }
    for n in 0.. {
        let mut kept = name.to_os_string();
        kept.push(format!(".rtlab-{}-{n}", std::process::id()));
        let fd = match rustix::fs::openat(
            &dir,
            &kept,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        ) {
            Ok(fd) => fd,
            Err(Errno::EXIST) if n < KEEP_NAMES => continue,
            Err(e) => return Err(failed("cannot make a file", e)),
        };
        let out = File::from(fd);
        let mut buf = vec![0u8; 1 << 16];
        let mut at = 0u64;
        loop {
            let got = file
                .read_at(&mut buf, at)
                .map_err(|e| format!("cannot read what was written: {e}"))?;
            if got == 0 {
                break;
            }
            out.write_all_at(&buf[..got], at)
                .map_err(|e| format!("{}: cannot write: {e}", dir_path.display()))?;
            at += got as u64;
        }
        out.sync_all()
            .map_err(|e| format!("{}: cannot write: {e}", dir_path.display()))?;
        return Ok(dir_path.join(kept));
    }
    Err(format!("{}: no free name", dir_path.display()))
}

impl Staged {
    /// Removes the temporary file: nothing half-written is put in place.
    pub fn abandon(mut self) {
        self.done = true;
        let _ = rustix::fs::unlinkat(&self.dir, &self.tmp, AtFlags::empty());
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        // What was written is kept, as on a normal end.
        let _ = self.finish();
    }
}

/// A file put in place whole at once (with its first bytes), then
/// appended to through the descriptor rtlab made: its path is never opened
/// again, so a link planted there later cannot redirect the writes.
#[derive(Debug)]
pub struct Appender {
    file: File,
    path: PathBuf,
}

impl Appender {
    /// Makes `path` with `head` as its content (see [`Staged`]).
    pub fn create(path: &Path, head: &[u8]) -> Result<Appender, OutputError> {
        let staged = Staged::create(path)?;
        let write_err = |e: std::io::Error| {
            OutputError::new(path, format!("cannot write: {e}"), "check the free space")
        };
        let file = match staged
            .file()
            .write_all(head)
            .and_then(|()| staged.file().try_clone())
        {
            Ok(f) => f,
            Err(e) => {
                staged.abandon();
                return Err(write_err(e));
            }
        };
        staged.commit()?;
        Ok(Appender {
            file,
            path: path.to_path_buf(),
        })
    }

    /// Opens `path` to append to it when it is a regular file of the
    /// caller (no link followed, checked on the descriptor opened) whose
    /// content starts with `head`: a run that restarts (after a reboot)
    /// goes on with the same file. Otherwise makes it as [`Appender::create`].
    /// The bool says whether it was continued.
    pub fn continue_or_create(path: &Path, head: &[u8]) -> Result<(Appender, bool), OutputError> {
        if let Some(file) = Self::open_own(path, head)? {
            return Ok((
                Appender {
                    file,
                    path: path.to_path_buf(),
                },
                true,
            ));
        }
        Ok((Self::create(path, head)?, false))
    }

    fn open_own(path: &Path, head: &[u8]) -> Result<Option<File>, OutputError> {
        use std::io::Read;
        let (dir, name) = split(path)?;
        let Some(dir_fd) = open_dir(dir, false, true)? else {
            return Ok(None);
        };
        check_target(&dir_fd, name, path)?;
        let fd = match rustix::fs::openat(
            &dir_fd,
            name,
            OFlags::RDWR | OFlags::APPEND | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(OutputError::io(path, "cannot open", e)),
        };
        let st =
            rustix::fs::fstat(&fd).map_err(|e| OutputError::io(path, "cannot look at it", e))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile
            || st.st_uid != euid()
            || st.st_nlink != 1
        {
            return Err(OutputError::new(
                path,
                "is not a regular file of yours with one name",
                "remove it or choose another name",
            ));
        }
        let mut file = File::from(fd);
        let mut start = vec![0u8; head.len()];
        let same = file.read_exact(&mut start).is_ok() && start == head;
        Ok(same.then_some(file))
    }

    /// Appends `bytes` (whole lines, one write each).
    pub fn append(&mut self, bytes: &[u8]) -> Result<(), OutputError> {
        (&self.file).write_all(bytes).map_err(|e| {
            OutputError::new(
                &self.path,
                format!("cannot write: {e}"),
                "check the free space",
            )
        })
    }
}

/// The absolute path of the directory held by `fd`, as the kernel names it
/// (no link, no `..`); None once it was removed.
fn dir_path(fd: &OwnedFd) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    let link = crate::SysRoot::real().path(&format!("proc/self/fd/{}", fd.as_raw_fd()));
    let dir = std::fs::read_link(link).ok()?;
    (dir.is_absolute() && !dir.to_string_lossy().ends_with(" (deleted)")).then_some(dir)
}

/// Removes `path`, a file rtlab staged ([`Staged::create_journalled`]), when
/// it is still a regular file of the caller reached without a foreign
/// link: true when removed, false when it was gone; an error (nothing
/// removed) for anything else found there.
pub fn remove_staged(path: &Path) -> Result<bool, String> {
    let (dir, name) = split(path).map_err(|e| e.problem)?;
    let Some(dir_fd) = open_dir(dir, false, true).map_err(|e| e.problem)? else {
        return Ok(false);
    };
    let st = match rustix::fs::statat(&dir_fd, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::NOENT) => return Ok(false),
        Err(e) => return Err(std::io::Error::from(e).to_string()),
    };
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile || st.st_uid != euid() {
        return Err("not a regular file of rtlab's user".into());
    }
    match rustix::fs::unlinkat(&dir_fd, name, AtFlags::empty()) {
        Ok(()) => Ok(true),
        Err(Errno::NOENT) => Ok(false),
        Err(e) => Err(std::io::Error::from(e).to_string()),
    }
}

/// When `path` cannot be written (its name taken by a link, a directory,
/// another user's file), writes `bytes` beside it under a name of its own
/// ([`Staged::keep`]) and says so in the error: what was measured is never
/// lost for a name.
fn keep_aside(path: &Path, bytes: &[u8], mut e: OutputError) -> OutputError {
    let Ok((dir_fd, name)) = Staged::open_dir_of(path) else {
        return e;
    };
    let Ok(mut staged) = Staged::stage(dir_fd, name, path, None) else {
        return e;
    };
    staged.done = true;
    let written = staged
        .file
        .write_all(bytes)
        .and_then(|()| staged.file.sync_all());
    let said = match written {
        // Not journalled: a temporary name kept stays.
        Ok(()) => staged.keep_said(),
        Err(w) => {
            let _ = rustix::fs::unlinkat(&staged.dir, &staged.tmp, AtFlags::empty());
            format!("what was written could not be kept: {w}")
        }
    };
    e.problem = format!("{}; {said}", e.problem);
    e
}

/// Writes `bytes` as the whole of `path` (see the module comment).
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let staged = Staged::create(path).map_err(|e| keep_aside(path, bytes, e))?;
    if let Err(e) = staged.file().write_all(bytes) {
        let err = OutputError::new(path, format!("cannot write: {e}"), "check the free space");
        staged.abandon();
        return Err(err);
    }
    staged.commit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_directory_that_takes_no_file_is_refused_before() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let closed = dir.path().join("closed");
        std::fs::create_dir(&closed).unwrap();
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o555)).unwrap();
        let r = check(&closed.join("r.json"), false);
        // Root writes it whatever its mode; another user may not (a
        // read-only file system refuses root too: EROFS).
        if euid() == 0 {
            assert!(r.is_ok(), "{r:?}");
        } else {
            let e = r.unwrap_err();
            assert!(
                e.to_string().contains("cannot write in its directory"),
                "{e}"
            );
            assert!(e.hint.contains("-v DIR:/out"), "{}", e.hint);
        }
        assert!(check(&dir.path().join("r.json"), false).is_ok());
    }

    #[test]
    fn writes_whole_files_and_replaces_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        write_whole(&p, b"one").unwrap();
        write_whole(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_link_at_the_target_is_refused_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let p = dir.path().join("out.txt");
        symlink(&victim, &p).unwrap();
        let e = check(&p, false).unwrap_err();
        assert!(e.problem.contains("symbolic link"), "{e}");
        assert!(write_whole(&p, b"x").is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(
            std::fs::symlink_metadata(&p)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn directories_and_fifos_are_not_files() {
        let dir = tempfile::tempdir().unwrap();
        let e = check(dir.path(), false).unwrap_err();
        assert!(e.problem.contains("directory"), "{e}");
        let fifo = dir.path().join("fifo");
        crate::fake::mkfifo(&fifo);
        let e = write_whole(&fifo, b"x").unwrap_err();
        assert!(e.problem.contains("FIFO"), "{e}");
        assert!(check(&dir.path().join("x/"), false).is_err());
    }

    #[test]
    fn own_links_are_followed_and_missing_directories_made_or_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        symlink("real", dir.path().join("mine")).unwrap();
        write_whole(&dir.path().join("mine/r.txt"), b"ok").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("real/r.txt")).unwrap(),
            "ok"
        );
        let deep = dir.path().join("a/b/c.txt");
        assert!(
            check(&deep, false)
                .unwrap_err()
                .problem
                .contains("does not exist")
        );
        check(&deep, true).unwrap();
        create_dirs(&dir.path().join("a/b")).unwrap();
        write_whole(&deep, b"deep").unwrap();
        // `..` and relative paths work as the shell's.
        let up = dir.path().join("a/b/../b/c.txt");
        write_whole(&up, b"again").unwrap();
        assert_eq!(std::fs::read_to_string(&deep).unwrap(), "again");
    }

    #[test]
    fn staged_files_appear_only_when_committed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("prog.out");
        std::fs::write(&p, "previous").unwrap();
        let s = Staged::create(&p).unwrap();
        s.file().write_all(b"new output").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "previous");
        s.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new output");
    }

    /// Mount points of this machine's pseudo-filesystems (proc at least).
    fn pseudo_mounts() -> Vec<String> {
        let kinds = ["proc", "sysfs", "cgroup", "cgroup2", "tracefs", "debugfs"];
        let root = crate::SysRoot::real();
        root.read("proc/self/mounts")
            .unwrap()
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                (f.len() > 2 && kinds.contains(&f[2])).then(|| f[1].to_string())
            })
            .collect()
    }

    #[test]
    fn directories_on_pseudo_filesystems_are_refused_before_anything_is_made() {
        let mounts = pseudo_mounts();
        let proc = crate::SysRoot::real().path("proc");
        assert!(mounts.iter().any(|m| Path::new(m) == proc), "{mounts:?}");
        for m in &mounts {
            let dir = Path::new(m).join("rtlab-outdir-test");
            let e = check(&dir.join("out.txt"), true).unwrap_err();
            assert!(e.problem.contains("kernel interface"), "{m}: {e}");
            assert!(create_dirs(&dir).is_err(), "{m}");
            assert!(!dir.exists(), "{m}: a directory was made");
            assert!(write_whole(&Path::new(m).join("rtlab-test.txt"), b"x").is_err());
        }
        // /proc/self is on proc too, reached through its link.
        assert!(check(&proc.join("self/rtlab.json"), false).is_err());
        // A tmpfs or disk directory is fine.
        let dir = tempfile::tempdir().unwrap();
        check(&dir.path().join("x/out.txt"), true).unwrap();
    }

    fn chown(path: &Path, uid: u32) {
        std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
    }

    #[test]
    fn a_link_is_followed_only_where_link_and_directory_trust_each_other() {
        if euid() != 0 {
            // Not root: other users' directories cannot be made.
            return;
        }
        let work = tempfile::tempdir().unwrap();
        let victim = work.path().join("victim");
        std::fs::create_dir(&victim).unwrap();
        let own = work.path().join("own");
        std::fs::create_dir(&own).unwrap();
        symlink(&victim, own.join("run")).unwrap();
        // Root's own link in root's own directory: followed.
        check(&own.join("run/out.txt"), false).unwrap();
        // Hard-linked into another user's directory: refused.
        let theirs = work.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        chown(&theirs, 65534);
        std::fs::hard_link(own.join("run"), theirs.join("link")).unwrap();
        let e = check(&theirs.join("link/out.txt"), false).unwrap_err();
        assert!(e.problem.contains("others can write"), "{e}");
        assert!(write_whole(&theirs.join("link/out.txt"), b"x").is_err());
        // Into a sticky world-writable directory of root: refused for its
        // second name, where a link root made there itself is followed.
        let sticky = work.path().join("sticky");
        std::fs::create_dir(&sticky).unwrap();
        std::fs::set_permissions(
            &sticky,
            std::os::unix::fs::PermissionsExt::from_mode(0o1777),
        )
        .unwrap();
        std::fs::hard_link(own.join("run"), sticky.join("link")).unwrap();
        let e = check(&sticky.join("link/out.txt"), false).unwrap_err();
        assert!(e.problem.contains("names"), "{e}");
        symlink(&victim, sticky.join("fresh")).unwrap();
        check(&sticky.join("fresh/out.txt"), false).unwrap();
        // Another user's link in their own directory: refused as before.
        symlink(&victim, theirs.join("theirs")).unwrap();
        chown(&theirs.join("theirs"), 65534);
        assert!(check(&theirs.join("theirs/out.txt"), false).is_err());
        assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);
    }

    #[test]
    fn a_target_replaced_at_the_end_keeps_the_data_under_a_name_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let p = dir.path().join("timer_thread00.txt");
        let kept = |n: usize| {
            dir.path().join(format!(
                "timer_thread00.txt.rtlab-{}-{n}",
                std::process::id()
            ))
        };
        // Replaced by a link, then by a directory, while it was written;
        // the second time a link also waits at the first kept name.
        for (round, plant) in ["link", "dir"].iter().enumerate() {
            let _ = std::fs::remove_file(&p);
            let s = Staged::create(&p).unwrap();
            s.file().write_all(b"measured").unwrap();
            match *plant {
                "link" => symlink(&victim, &p).unwrap(),
                _ => {
                    std::fs::create_dir(&p).unwrap();
                    symlink(&victim, kept(round)).unwrap();
                }
            }
            let e = s.commit().unwrap_err();
            // Round 1: kept(0) is round 0's file, kept(1) the planted link.
            let at = kept(if round == 0 { 0 } else { 2 });
            assert!(
                e.problem.contains(&format!("kept as {}", at.display())),
                "{e}"
            );
            assert_eq!(std::fs::read_to_string(&at).unwrap(), "measured");
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        // No temporary file is left.
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}

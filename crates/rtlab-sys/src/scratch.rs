//! A private scratch directory (`rtlab load io`'s files), worked in through
//! its directory descriptor only: made with `mkdirat` from a held
//! descriptor of its parent (reached as outputs are, never through a link
//! someone else can change), opened once (`O_DIRECTORY|O_NOFOLLOW`), checked
//! to be the caller's own mode-0700 empty directory, and from then on every
//! file in it is made, read and removed relative to that descriptor
//! (`openat`, `unlinkat`). Whoever owns the parent may rename the directory
//! away and put a link at its name: the work goes on in the directory
//! rtlab made, wherever it is now, and nothing is done through the name.
//! At the end it is emptied through its descriptor and removed from its
//! parent only if the name there is still that very directory (device and
//! inode); otherwise it is left, empty, and the caller is told.

use crate::outfile::{self, OutputError};
use rustix::fd::OwnedFd;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Names tried before giving up (each taken name is skipped, never used).
const ATTEMPTS: u32 = 100;

/// A directory of the caller's own, made inside another.
#[derive(Debug)]
pub struct ScratchDir {
    parent: OwnedFd,
    name: OsString,
    dir: OwnedFd,
    /// Device and inode of the directory made.
    id: (u64, u64),
    /// Where it was made, for messages only.
    path: PathBuf,
}

/// How the end went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Removed {
    /// Emptied and removed.
    Whole,
    /// Emptied; its name in the parent no longer is it (moved away, or
    /// something else put there): left where it is now.
    MovedAway,
    /// Emptied; another empty directory was swapped in at its name
    /// between the look and the removal, and went instead (its owner, the
    /// owner of the parent, could remove it anyway): rtlab's, empty, is
    /// left where it was moved.
    SwappedAtTheEnd,
}

fn io_error(e: OutputError) -> io::Error {
    io::Error::other(e.with_hint())
}

impl ScratchDir {
    /// Makes `PREFIX.PID.N` (mode 0700) in `parent` and holds it.
    pub fn create(parent: &Path, prefix: &str) -> io::Result<ScratchDir> {
        let parent_fd = outfile::open_held_dir(parent).map_err(io_error)?;
        let mut last = Errno::EXIST;
        for attempt in 0..ATTEMPTS {
            let name = OsString::from(format!("{prefix}.{}.{attempt}", std::process::id()));
            match rustix::fs::mkdirat(&parent_fd, &name, Mode::from_raw_mode(0o700)) {
                Ok(()) => return Self::hold(parent_fd, name, parent),
                Err(Errno::EXIST) => last = Errno::EXIST,
                Err(e) => return Err(e.into()),
            }
        }
        Err(io::Error::new(
            io::Error::from(last).kind(),
            format!("{}: no free name for a scratch directory", parent.display()),
        ))
    }

    /// Opens the directory just made and checks it is the caller's own,
    /// mode 0700 and empty (the parent's owner may have swapped something
    /// in between).
    fn hold(parent: OwnedFd, name: OsString, parent_path: &Path) -> io::Result<ScratchDir> {
        let path = parent_path.join(&name);
        let dir = rustix::fs::openat(
            &parent,
            &name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| {
            io::Error::new(
                io::Error::from(e).kind(),
                format!(
                    "{}: changed before it could be opened ({e})",
                    path.display()
                ),
            )
        })?;
        let st = rustix::fs::fstat(&dir)?;
        let mine = st.st_uid == rustix::process::geteuid().as_raw()
            && st.st_mode & 0o7777 == 0o700
            && FileType::from_raw_mode(st.st_mode) == FileType::Directory;
        let scratch = ScratchDir {
            parent,
            name,
            dir,
            id: (st.st_dev as u64, st.st_ino as u64),
            path,
        };
        if !mine || !scratch.entries()?.is_empty() {
            return Err(io::Error::other(format!(
                "{}: is not the directory rtlab just made (someone replaced it)",
                scratch.path.display()
            )));
        }
        Ok(scratch)
    }

    /// Where it was made (it may have been moved since).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes file `name` in it, new (`O_EXCL`, never through a link).
    pub fn create_file(&self, name: &str) -> io::Result<File> {
        let fd = rustix::fs::openat(
            &self.dir,
            name,
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        Ok(File::from(fd))
    }

    /// Opens file `name` of it to read (never through a link).
    pub fn open_file(&self, name: &str) -> io::Result<File> {
        let fd = rustix::fs::openat(
            &self.dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(File::from(fd))
    }

    /// Removes file `name` of it.
    pub fn remove_file(&self, name: &str) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.dir, name, AtFlags::empty())?)
    }

    /// The names in it.
    fn entries(&self) -> io::Result<Vec<OsString>> {
        let fd = rustix::fs::openat(
            &self.dir,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let mut names = Vec::new();
        for entry in rustix::fs::Dir::read_from(&fd)? {
            let entry = entry?;
            let name = OsStr::from_bytes(entry.file_name().to_bytes());
            if name != "." && name != ".." {
                names.push(name.to_os_string());
            }
        }
        Ok(names)
    }

    /// Empties it through its descriptor, then removes it from its parent
    /// if the name there is still it.
    pub fn remove(self) -> io::Result<Removed> {
        for name in self.entries()? {
            match rustix::fs::unlinkat(&self.dir, &name, AtFlags::empty()) {
                Ok(()) | Err(Errno::NOENT) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let st = match rustix::fs::statat(&self.parent, &self.name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT) => return Ok(Removed::MovedAway),
            Err(e) => return Err(e.into()),
        };
        if (st.st_dev as u64, st.st_ino as u64) != self.id {
            return Ok(Removed::MovedAway);
        }
        // Only an empty directory can go, and a link never: should the
        // name change between the look and the removal, nothing of anyone
        // else's is lost.
        match rustix::fs::unlinkat(&self.parent, &self.name, AtFlags::REMOVEDIR) {
            // What went is known after: the directory rtlab holds has no
            // link left only if it was the one removed.
            Ok(()) if still_linked(&self.dir) => Ok(Removed::SwappedAtTheEnd),
            Ok(()) => Ok(Removed::Whole),
            Err(Errno::NOENT | Errno::NOTDIR | Errno::NOTEMPTY | Errno::EXIST) => {
                Ok(Removed::MovedAway)
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// Whether a directory held open still has a name somewhere (a removed
/// one has no link left).
fn still_linked(dir: &OwnedFd) -> bool {
    rustix::fs::fstat(dir).is_ok_and(|st| st.st_nlink > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_swapped_in_at_the_last_moment_is_told_from_its_own() {
        // What remove() finds after its unlinkat: the directory it holds
        // has no link left only if it was the one removed.
        let tmp = tempfile::tempdir().unwrap();
        let ours = tmp.path().join("d");
        std::fs::create_dir(&ours).unwrap();
        let fd: OwnedFd = std::fs::File::open(&ours).unwrap().into();
        std::fs::rename(&ours, tmp.path().join("d.moved")).unwrap();
        std::fs::create_dir(&ours).unwrap();
        std::fs::remove_dir(&ours).unwrap();
        assert!(still_linked(&fd), "the swapped-in one went, ours is left");
        std::fs::remove_dir(tmp.path().join("d.moved")).unwrap();
        assert!(!still_linked(&fd), "ours went");
    }
    use std::io::{Read, Write};

    #[test]
    fn files_are_made_read_and_removed_inside_it_and_it_goes() {
        let tmp = tempfile::tempdir().unwrap();
        let s = ScratchDir::create(tmp.path(), "rtlab-test").unwrap();
        assert!(s.path().starts_with(tmp.path()));
        let meta = std::fs::metadata(s.path()).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(meta.permissions().mode() & 0o7777, 0o700);
        s.create_file("f0").unwrap().write_all(b"abc").unwrap();
        assert!(s.create_file("f0").is_err(), "never an existing file");
        let mut back = String::new();
        s.open_file("f0")
            .unwrap()
            .read_to_string(&mut back)
            .unwrap();
        assert_eq!(back, "abc");
        s.remove_file("f0").unwrap();
        s.create_file("left").unwrap();
        let path = s.path().to_path_buf();
        assert_eq!(s.remove().unwrap(), Removed::Whole);
        assert!(!path.exists());
    }

    #[test]
    fn a_directory_swapped_for_a_link_is_never_worked_through() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        std::fs::create_dir(&victim).unwrap();
        std::fs::write(victim.join("f0"), "precious").unwrap();
        let s = ScratchDir::create(tmp.path(), "rtlab-test").unwrap();
        // The parent's owner renames it away and plants a link at its name.
        let moved = tmp.path().join("moved");
        std::fs::rename(s.path(), &moved).unwrap();
        std::os::unix::fs::symlink(&victim, s.path()).unwrap();
        s.create_file("f1").unwrap();
        assert!(moved.join("f1").exists(), "made in its own directory");
        assert!(!victim.join("f1").exists());
        s.remove_file("f0").unwrap_err();
        assert_eq!(
            std::fs::read_to_string(victim.join("f0")).unwrap(),
            "precious"
        );
        let link = s.path().to_path_buf();
        assert_eq!(s.remove().unwrap(), Removed::MovedAway);
        assert!(link.is_symlink(), "the planted link is left alone");
        assert_eq!(std::fs::read_dir(&moved).unwrap().count(), 0, "emptied");
        assert_eq!(
            std::fs::read_to_string(victim.join("f0")).unwrap(),
            "precious"
        );
    }

    #[test]
    fn a_parent_reached_through_a_foreign_link_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/nonexistent-rtlab", tmp.path().join("l")).unwrap();
        assert!(ScratchDir::create(&tmp.path().join("l"), "x").is_err());
        assert!(ScratchDir::create(&tmp.path().join("missing"), "x").is_err());
    }
}

//! rtlab's own memory: locked as it is touched, and the pages of its binary
//! that start-up touched let go before measuring.
//!
//! A run touches its binary all over while it starts (argument parsing, the
//! experiment file, the plan, the system snapshot), and the kernel maps 64 KB
//! around each page it faults in: 3 MB of a 5 MB binary were resident during
//! a one-thread run, and `mlockall(MCL_CURRENT)` locked all of it, plotting
//! code and fonts included. Before the threads start, rtlab drops its page
//! table entries for the code of its own binary (never a page it wrote),
//! then locks with `MCL_ONFAULT`: what stays resident and locked is what the
//! run uses from then on. Its read-only data stays as start-up left it: the
//! compiler puts the measuring loop's constants there, anywhere, and one
//! dropped cost a timer thread a fault on its first missed deadline.

use crate::SysRoot;
use std::io;

/// The memory the kernel estimates is available for new allocations
/// without swapping (`MemAvailable` of `/proc/meminfo`, KiB); None before
/// Linux 3.14 or when unreadable.
pub fn available_kib(root: &SysRoot) -> Option<u64> {
    parse_available_kib(&root.read(crate::paths::MEMINFO).ok()?)
}

/// `MemAvailable:   1234567 kB` of a meminfo text, in KiB.
pub fn parse_available_kib(meminfo: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let rest = l.strip_prefix("MemAvailable:")?;
        let mut words = rest.split_whitespace();
        let n = words.next()?.parse().ok()?;
        (words.next() == Some("kB")).then_some(n)
    })
}

/// A private mapping of rtlab's own executable that was never written
/// (no anonymous pages, no write permission), checked by
/// [`clean_exe_mappings`]: dropping its page table entries only makes a
/// later access read the same bytes from the file again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CleanExeMapping {
    pub(crate) start: usize,
    pub(crate) len: usize,
    executable: bool,
    rss_kib: u64,
    /// `VmFlags` holds `lo`: locked (by `mlockall`).
    pub(crate) locked: bool,
    /// `VmFlags` holds `lf`: locked as pages are touched (`MCL_ONFAULT`).
    pub(crate) lock_on_fault: bool,
}

impl CleanExeMapping {
    /// The page-aligned part of the mapping within `radius` bytes of `addr`
    /// (None if `addr` is not in it).
    pub(crate) fn around(&self, addr: usize, radius: usize) -> Option<(usize, usize)> {
        let end = self.start + self.len;
        if !(self.start..end).contains(&addr) {
            return None;
        }
        let from = (addr.saturating_sub(radius) & !(PAGE - 1)).max(self.start);
        let to = addr.saturating_add(radius).min(end);
        Some((from, to))
    }
}

/// The smallest page size Linux uses: touching one address per `PAGE`
/// bytes touches every page on any page size.
pub(crate) const PAGE: usize = 4096;

/// How far around each hot function's start its code is made resident
/// again: the largest, the timer loop, is 5.4 KB in the static release
/// build (`nm -S` of an unstripped one), and every function it calls is in
/// the list itself. 16 KB either way covers each whole with room for a
/// build that inlines more; 64 KB did too, and kept 1.3 MB resident.
const HOT_RADIUS: usize = 16 * 1024;

/// What [`release_startup_pages`] let go.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Released {
    /// Mappings of the binary whose pages were dropped.
    pub mappings: usize,
    /// Their resident size before, in KiB.
    pub kib: u64,
}

/// The clean mappings of `exe` in an smaps text (`/proc/self/smaps`).
fn clean_exe_mappings(smaps: &str, exe: &str) -> Vec<CleanExeMapping> {
    let mut found = Vec::new();
    let mut current: Option<CleanExeMapping> = None;
    let mut anonymous = false;
    let mut finish = |m: Option<CleanExeMapping>, anonymous: bool| {
        if let Some(m) = m.filter(|_| !anonymous) {
            found.push(m);
        }
    };
    for line in smaps.lines() {
        if let Some(m) = mapping_header(line) {
            finish(current.take(), anonymous);
            anonymous = false;
            current = m.filter(|(_, path)| *path == exe).map(|(m, _)| m);
            continue;
        }
        let Some(m) = current.as_mut() else { continue };
        let kib = |rest: &str| rest.trim().trim_end_matches("kB").trim().parse::<u64>();
        if let Some(rest) = line.strip_prefix("Rss:") {
            m.rss_kib = kib(rest).unwrap_or(0);
        } else if let Some(rest) = line.strip_prefix("Anonymous:") {
            // Unreadable counts as written: such a mapping is kept.
            anonymous |= kib(rest).map_or(true, |k| k > 0);
        } else if let Some(rest) = line.strip_prefix("VmFlags:") {
            m.locked = rest.split_whitespace().any(|f| f == "lo");
            m.lock_on_fault = rest.split_whitespace().any(|f| f == "lf");
        }
    }
    finish(current, anonymous);
    found
}

/// A mapping's first line (`START-END PERMS OFFSET DEV INODE PATH`): the
/// mapping if it is private and not writable, with its path. `None` for a
/// line of another kind; `Some(None)` for a mapping not wanted.
#[allow(clippy::type_complexity)]
fn mapping_header(line: &str) -> Option<Option<(CleanExeMapping, &str)>> {
    let mut fields = line.splitn(6, ' ');
    let range = fields.next()?;
    let (start, end) = range.split_once('-')?;
    let start = usize::from_str_radix(start, 16).ok()?;
    let end = usize::from_str_radix(end, 16).ok()?;
    let perms = fields.next()?.as_bytes();
    if perms.len() != 4 || end <= start {
        return None;
    }
    let (_offset, _dev, _inode) = (fields.next()?, fields.next()?, fields.next()?);
    let path = fields.next().unwrap_or("").trim_start();
    let wanted = perms[0] == b'r' && perms[1] == b'-' && perms[3] == b'p';
    Some(wanted.then_some((
        CleanExeMapping {
            start,
            len: end - start,
            executable: perms[2] == b'x',
            rss_kib: 0,
            locked: false,
            lock_on_fault: false,
        },
        path,
    )))
}

/// Drops this process's page table entries for the code pages of its own
/// binary (read-only data is kept: the hot loop's constants lie anywhere in
/// it), so that start-up code neither stays resident nor gets locked, then
/// makes the code around each of the `hot` addresses (the
/// functions the timer threads are about to run) resident again, so that
/// they take no page fault. Under `MCL_ONFAULT`, each mapping is unlocked
/// for the moment it is dropped and locked again as it is touched; a
/// mapping locked whole (`MCL_CURRENT` without `MCL_ONFAULT`) is kept.
///
/// Refuses, touching nothing, when the memory map read does not describe
/// this process (a fake tree): this very function must lie in one of the
/// executable mappings found.
pub fn release_startup_pages(root: &SysRoot, hot: &[usize]) -> io::Result<Released> {
    release_pages(root, hot, false)
}

/// Drops this process's page table entries for the pages of its own
/// binary that it never wrote, code and read-only data alike, while no
/// thread of it measures yet: each step of a start-up (the command line,
/// the experiment and its plan, arming) touches code all over the binary,
/// and the kernel maps 64 KB or more around each page it faults in. Let
/// go between the steps, they do not add up to the peak of a run's
/// memory; a page needed again is read again from the page cache.
pub fn release_early_pages(root: &SysRoot) -> io::Result<Released> {
    release_pages(root, &[], true)
}

/// [`release_startup_pages`], and the read-only data too if `rodata`.
fn release_pages(root: &SysRoot, hot: &[usize], rodata: bool) -> io::Result<Released> {
    let exe = std::env::current_exe()?;
    let exe = exe.to_string_lossy();
    let smaps = root
        .read(crate::paths::SELF_SMAPS)
        .map_err(|e| io::Error::other(e.to_string()))?;
    let mappings = clean_exe_mappings(&smaps, &exe);
    let here = release_pages as fn(&SysRoot, &[usize], bool) -> io::Result<Released> as usize;
    if !mappings
        .iter()
        .any(|m| m.executable && m.around(here, 0).is_some())
    {
        return Err(io::Error::other(
            "the memory map read does not hold this process's code",
        ));
    }
    let mut released = Released::default();
    for m in mappings
        .iter()
        .filter(|m| (m.executable || rodata) && (!m.locked || m.lock_on_fault))
    {
        let keep: Vec<(usize, usize)> = hot
            .iter()
            .filter_map(|&addr| m.around(addr, HOT_RADIUS))
            .collect();
        let cold = outside(m, keep.clone());
        crate::os::drop_clean_pages(m, &cold)?;
        for &range in &keep {
            crate::os::touch_pages(m, range);
        }
        // Each fault maps the kernel's fault-around block (64 KB by
        // default, aligned) around the page: what of it lies outside the
        // hot code goes again.
        if !keep.is_empty() {
            crate::os::drop_clean_pages(m, &cold)?;
        }
        released.mappings += 1;
        released.kib += m.rss_kib;
    }
    Ok(released)
}

/// The page-aligned parts of `m` outside every range of `keep`: what is
/// dropped, so that the hot code stays mapped throughout (a timer thread
/// already measuring never faults on it).
fn outside(m: &CleanExeMapping, mut keep: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    keep.sort_unstable();
    let mut parts = Vec::new();
    let mut from = m.start;
    for (k_from, k_to) in keep {
        let k_from = k_from & !(PAGE - 1);
        let k_to = k_to.div_ceil(PAGE) * PAGE;
        if k_from > from {
            parts.push((from, k_from));
        }
        from = from.max(k_to);
    }
    let end = m.start + m.len;
    if from < end {
        parts.push((from, end));
    }
    parts
}

/// How [`lock_all_memory`] locked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// `MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT`: pages are locked as they
    /// are touched (Linux 4.4 and later).
    OnFault,
    /// `MCL_CURRENT | MCL_FUTURE`: every mapped page, faulted in at once
    /// (older kernels, or an emulator that refuses `MCL_ONFAULT`).
    Whole,
}

/// Locks the process's memory: the pages it has touched and every page it
/// touches from now on. Falls back to locking every mapped page where
/// `MCL_ONFAULT` is refused.
pub fn lock_all_memory() -> io::Result<LockMode> {
    match crate::os::mlockall(true) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            crate::os::mlockall(false).map(|()| LockMode::Whole)
        }
        r => r.map(|()| LockMode::OnFault),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXE: &str = "/opt/rt lab/rtlab";

    #[test]
    fn available_memory_is_read_from_meminfo_and_checked_against_free() {
        let text = "MemTotal:       24605904 kB\nMemFree:        20000000 kB\nMemAvailable:   22123456 kB\n";
        assert_eq!(parse_available_kib(text), Some(22_123_456));
        assert_eq!(parse_available_kib("MemTotal: 1 kB\n"), None);
        assert_eq!(parse_available_kib("MemAvailable: x kB\n"), None);
        // This machine's: at most its total, at least something.
        let root = SysRoot::real();
        let total = root
            .read(crate::paths::MEMINFO)
            .unwrap()
            .lines()
            .find_map(|l| {
                l.strip_prefix("MemTotal:")?
                    .split_whitespace()
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .unwrap();
        let avail = available_kib(&root).unwrap();
        assert!(avail > 0 && avail <= total, "{avail} of {total}");
    }

    fn smaps() -> String {
        format!(
            "56000000-56010000 r--p 00000000 08:01 42                         {EXE}\n\
             Size:                 64 kB\nRss:                  60 kB\nAnonymous:             0 kB\n\
             VmFlags: rd mr mw me\n\
             56010000-56050000 r-xp 00010000 08:01 42                         {EXE}\n\
             Size:                256 kB\nRss:                 200 kB\nAnonymous:             0 kB\n\
             56050000-56060000 r--p 00050000 08:01 42                         {EXE}\n\
             Rss:                  64 kB\nAnonymous:             8 kB\n\
             56060000-56061000 rw-p 00060000 08:01 42                         {EXE}\n\
             Rss:                   4 kB\nAnonymous:             0 kB\n\
             56070000-56080000 r-xp 00000000 08:01 43                         {EXE}-old\n\
             Rss:                  64 kB\nAnonymous:             0 kB\n\
             56080000-56090000 r-xs 00000000 08:01 42                         {EXE}\n\
             Rss:                  64 kB\nAnonymous:             0 kB\n\
             7f000000-7f001000 r-xp 00000000 00:00 0 \n\
             Rss:                   4 kB\nAnonymous:             0 kB\n"
        )
    }

    #[test]
    fn only_never_written_private_mappings_of_the_binary_are_dropped() {
        let found = clean_exe_mappings(&smaps(), EXE);
        let starts: Vec<(usize, usize, bool, u64)> = found
            .iter()
            .map(|m| (m.start, m.len, m.executable, m.rss_kib))
            .collect();
        // Not the relocated read-only data (anonymous pages), not the
        // writable data, not another file, not a shared mapping. Of these
        // candidates, `release_startup_pages` drops the executable ones.
        assert_eq!(
            starts,
            vec![
                (0x5600_0000, 0x1_0000, false, 60),
                (0x5601_0000, 0x4_0000, true, 200)
            ]
        );
    }

    #[test]
    fn the_hot_code_is_kept_mapped_and_the_rest_dropped_whole() {
        let m = CleanExeMapping {
            start: 0x10_0000,
            len: 0x10_0000,
            executable: true,
            rss_kib: 0,
            locked: false,
            lock_on_fault: false,
        };
        assert_eq!(m.around(0x30_0000, HOT_RADIUS), None);
        let a = m.around(0x10_0100, HOT_RADIUS).unwrap();
        assert_eq!(a, (0x10_0000, 0x10_4100));
        let b = m.around(0x18_0800, 0x800).unwrap();
        let c = m.around(0x18_1000, 0x800).unwrap();
        assert_eq!(
            outside(&m, vec![c, a, b]),
            vec![(0x10_5000, 0x18_0000), (0x18_2000, 0x20_0000)]
        );
        assert_eq!(outside(&m, vec![]), vec![(0x10_0000, 0x20_0000)]);
        let end = m.around(0x1f_ffff, HOT_RADIUS).unwrap();
        assert_eq!(outside(&m, vec![end]), vec![(0x10_0000, 0x1f_b000)]);
    }

    #[test]
    fn a_mapping_whose_anonymous_count_is_unreadable_is_kept() {
        let text = format!("1000-2000 r-xp 0 0:0 1 {EXE}\nRss: 4 kB\nAnonymous: lots\n");
        assert!(clean_exe_mappings(&text, EXE).is_empty());
        let text = format!("1000-2000 r-xp 0 0:0 1 {EXE}\nRss: 4 kB\n");
        assert_eq!(clean_exe_mappings(&text, EXE).len(), 1, "{text}");
    }

    #[test]
    fn a_fake_memory_map_is_refused_and_nothing_is_dropped() {
        let tree = tempfile::tempdir().unwrap();
        let exe = std::env::current_exe().unwrap();
        std::fs::create_dir_all(tree.path().join("proc/self")).unwrap();
        let fake = format!(
            "1000-2000 r-xp 0 0:0 1 {}\nRss: 4 kB\nAnonymous: 0 kB\n",
            exe.display()
        );
        std::fs::write(tree.path().join("proc/self/smaps"), fake).unwrap();
        let root = SysRoot::at(tree.path());
        let err = release_startup_pages(&root, &[]).unwrap_err();
        assert!(err.to_string().contains("does not hold"), "{err}");
    }

    #[test]
    fn the_real_binary_lets_go_of_its_pages_and_still_runs() {
        let root = SysRoot::real();
        let hot = [the_real_binary_lets_go_of_its_pages_and_still_runs as fn() as usize];
        let released = match release_startup_pages(&root, &hot) {
            Ok(r) => r,
            Err(e) => {
                // Only where the map is not the kernel's own: a user-mode
                // emulator makes up /proc/self/maps for its guest, but
                // shows the host's smaps, where the guest's code is data.
                let holder = |rel: &str| {
                    let text = std::fs::read_to_string(root.path(rel)).unwrap();
                    text.lines()
                        .filter(|l| l.split(' ').next().is_some_and(|r| r.contains('-')))
                        .find(|l| {
                            mapping_header(l)
                                .flatten()
                                .is_some_and(|(m, _)| m.around(hot[0], 0).is_some())
                        })
                        .map(|l| l.split_whitespace().nth(1).map(str::to_string))
                };
                assert_ne!(
                    holder("proc/self/maps"),
                    holder(crate::paths::SELF_SMAPS),
                    "refused, yet maps and smaps agree: {e}"
                );
                assert!(e.to_string().contains("does not hold"), "{e}");
                return;
            }
        };
        assert!(released.mappings >= 1, "{released:?}");
        // The code dropped is read again from the file: this very test runs
        // on, and a second release finds the same mappings.
        let again = release_startup_pages(&root, &hot).unwrap();
        assert_eq!(again.mappings, released.mappings);
    }
}

//! One task watched alone (`rtlab task-latency`): the program counts the
//! threads of one process, or those of one name, whatever their policy,
//! and keeps each thread's own histogram (`thread_hist`, keyed
//! TID << 32 | bucket). Nothing is counted until the task is set: a
//! program's PID is known once it is started.

use super::{BUCKETS, SUM_BUCKET, WakeupProbe};
use crate::SysRoot;
use std::collections::BTreeMap;

/// The task the program watches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Watch {
    /// The threads of a process, by its PID (given later when `None`:
    /// [`WakeupProbe::set_process`]).
    Process(Option<u32>),
    /// The threads of this name (`comm`: its first 15 bytes, as the
    /// kernel keeps it).
    Name(String),
}

/// One thread's histogram of wake-up to switch-in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadCells {
    /// The thread (TID).
    pub tid: u32,
    /// `(bucket, count)`, by bucket ([`super::bucket_bounds_ns`]).
    pub buckets: Vec<(u16, u64)>,
    /// The sum of its latencies (ns).
    pub sum_ns: u64,
}

impl ThreadCells {
    /// Its wake-ups counted.
    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b.1).sum()
    }
}

/// The bytes of the program's `struct watch`: the PID, whether it is
/// set, and the name up to 15 bytes, NUL-padded.
#[cfg_attr(not(rtlab_bpf), allow(dead_code))]
fn watch_value(tgid: u32, comm: &[u8]) -> [u8; 24] {
    let mut v = [0u8; 24];
    v[..4].copy_from_slice(&tgid.to_ne_bytes());
    v[4..8].copy_from_slice(&1u32.to_ne_bytes());
    let n = comm.len().min(15);
    v[8..8 + n].copy_from_slice(&comm[..n]);
    v
}

/// The threads of `thread_hist`'s entries (key, count summed over CPUs).
#[cfg_attr(not(rtlab_bpf), allow(dead_code))]
pub fn threads_of(entries: impl IntoIterator<Item = (u64, u64)>) -> Vec<ThreadCells> {
    let mut by_tid: BTreeMap<u32, ThreadCells> = BTreeMap::new();
    for (key, n) in entries {
        let tid = (key >> 32) as u32;
        let bucket = (key & 0xffff_ffff) as u32;
        let t = by_tid.entry(tid).or_insert_with(|| ThreadCells {
            tid,
            ..ThreadCells::default()
        });
        if bucket == SUM_BUCKET {
            t.sum_ns = t.sum_ns.saturating_add(n);
        } else if n > 0 {
            t.buckets
                .push((bucket.min(u32::from(BUCKETS - 1)) as u16, n));
        }
    }
    by_tid
        .into_values()
        .map(|mut t| {
            t.buckets.sort_unstable();
            t.buckets.dedup_by(|b, a| {
                // Two keys past the last bucket fold into it.
                let same = a.0 == b.0;
                if same {
                    a.1 += b.1;
                }
                same
            });
            t
        })
        .filter(|t| !t.buckets.is_empty())
        .collect()
}

#[cfg(rtlab_bpf)]
impl WakeupProbe {
    /// Loads the program to count the threads of a task like `watch`
    /// alone (no explanations: the trace gives them). It counts nothing
    /// until [`WakeupProbe::watch`] names the task: the load takes a while
    /// (the kernel's BTF parsed), the start of the count does not.
    pub fn start_watching(root: &SysRoot, watch: &Watch) -> Result<WakeupProbe, super::BpfRefusal> {
        let globals = super::Globals {
            all_tasks: 0,
            late_ns: 0,
            watch_mode: match watch {
                Watch::Process(_) => 1,
                Watch::Name(_) => 2,
            },
        };
        WakeupProbe::load(root, &globals)
    }

    /// Counts the threads of `watch` from now on (of the kind the probe
    /// was loaded for); `Process(None)`: nothing from now on.
    pub fn watch(&mut self, watch: &Watch) -> Result<(), String> {
        use aya::maps::Array;
        let value = match watch {
            Watch::Process(Some(pid)) => watch_value(*pid, &[]),
            Watch::Process(None) => [0; 24],
            Watch::Name(name) => watch_value(0, name.as_bytes()),
        };
        let map = self.ebpf.map_mut("watch").ok_or("no map watch")?;
        let mut array: Array<_, [u8; 24]> = Array::try_from(map).map_err(|e| e.to_string())?;
        array.set(0, value, 0).map_err(|e| e.to_string())
    }

    /// Each watched thread's histogram so far.
    pub fn thread_cells(&self) -> Result<Vec<ThreadCells>, String> {
        use aya::maps::PerCpuHashMap;
        let map = self.ebpf.map("thread_hist").ok_or("no map thread_hist")?;
        let hist: PerCpuHashMap<_, u64, u64> =
            PerCpuHashMap::try_from(map).map_err(|e| e.to_string())?;
        let mut entries = Vec::new();
        for entry in hist.iter() {
            let (key, per_cpu) = entry.map_err(|e| e.to_string())?;
            let n = per_cpu.iter().fold(0u64, |a, v| a.saturating_add(*v));
            entries.push((key, n));
        }
        Ok(threads_of(entries))
    }
}

#[cfg(not(rtlab_bpf))]
impl WakeupProbe {
    /// This build has no program: refused with the reason.
    pub fn start_watching(
        root: &SysRoot,
        _watch: &Watch,
    ) -> Result<WakeupProbe, super::BpfRefusal> {
        super::preflight(root)?;
        Err(super::BpfRefusal::NotBuilt)
    }

    /// Never reached: no probe starts.
    pub fn watch(&mut self, _watch: &Watch) -> Result<(), String> {
        Ok(())
    }

    /// Never reached: no probe starts.
    pub fn thread_cells(&self) -> Result<Vec<ThreadCells>, String> {
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_become_each_threads_buckets_and_sum() {
        let key = |tid: u64, bucket: u64| tid << 32 | bucket;
        let entries = [
            (key(7, 3), 5),
            (key(7, 1), 2),
            (key(7, u64::from(SUM_BUCKET)), 1234),
            (key(9, 100), 1),
            (key(9, 470), 1),
            (key(9, 460), 2),
            // A sum without a counted bucket: no thread.
            (key(11, u64::from(SUM_BUCKET)), 5),
        ];
        let t = threads_of(entries);
        assert_eq!(t.len(), 2);
        assert_eq!(
            (t[0].tid, &t[0].buckets, t[0].sum_ns),
            (7, &vec![(1, 2), (3, 5)], 1234)
        );
        assert_eq!(t[0].count(), 7);
        assert_eq!(t[1].buckets, vec![(100, 1), (460, 3)]);
    }

    /// A thread that sleeps `n` times 1 ms under `name`: its TID, the
    /// sleeps that blocked (the kernel's count of its voluntary
    /// switches) and its worst lateness by its own clock.
    fn sleeper(name: &str, n: usize) -> std::thread::JoinHandle<(u32, u64, u64)> {
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let switches = super::super::voluntary_switches;
                let (mut worst, before) = (0, switches());
                let mut at = crate::os::monotonic_ns();
                for _ in 0..n {
                    at += 1_000_000;
                    crate::os::sleep_until_ns(at);
                    worst = worst.max(crate::os::monotonic_ns() - at);
                }
                (crate::os::gettid() as u32, switches() - before, worst)
            })
            .unwrap()
    }

    /// On this machine, where BPF loads: one probe watches a name, one
    /// this process (set after the load, as a program's PID is). The
    /// named thread is in both, once per sleep that blocked (a few may be
    /// missed: docs/ebpf.md, "Known gaps"), never later than its own
    /// clock; the other thread of this process only in the second.
    #[test]
    fn a_watched_name_and_a_watched_process_count_their_threads_here() {
        let _alone = super::super::live_bpf_alone();
        let root = SysRoot::real();
        if super::super::preflight(&root).is_err() {
            return; // said by the probe's own test
        }
        let name = Watch::Name("bpf-watched".into());
        let Ok(mut by_name) = WakeupProbe::start_watching(&root, &name) else {
            return;
        };
        by_name.watch(&name).unwrap();
        let mut by_process = WakeupProbe::start_watching(&root, &Watch::Process(None)).unwrap();
        by_process
            .watch(&Watch::Process(Some(std::process::id())))
            .unwrap();
        let other = sleeper("bpf-unwatched", 50);
        let (tid, slept, own_worst) = sleeper("bpf-watched", 200).join().unwrap();
        let (other_tid, other_slept, _) = other.join().unwrap();
        // Paused: a thread of the name is not counted any more.
        by_name.watch(&Watch::Process(None)).unwrap();
        let (late_tid, _, _) = sleeper("bpf-watched", 20).join().unwrap();
        let named = by_name.thread_cells().unwrap();
        let mine: Vec<&ThreadCells> = named.iter().filter(|t| t.tid == tid).collect();
        assert_eq!(
            named.len(),
            1,
            "{named:?} (the watched thread: {tid}, then {late_tid})"
        );
        let counted = mine[0].count();
        assert!(
            counted <= slept && counted + slept / 50 >= slept,
            "{counted} counted of {slept} sleeps"
        );
        let worst_bucket = mine[0].buckets.last().unwrap().0;
        assert!(super::super::bucket_bounds_ns(worst_bucket).0 <= own_worst);
        let all = by_process.thread_cells().unwrap();
        let count_of = |tid: u32| all.iter().find(|t| t.tid == tid).map(ThreadCells::count);
        assert_eq!(count_of(tid), Some(counted), "{all:?}");
        let other_counted = count_of(other_tid).unwrap_or(0);
        assert!(
            other_counted <= other_slept && other_counted + other_slept / 50 + 1 >= other_slept,
            "{other_counted} of {other_slept}"
        );
    }

    #[test]
    fn the_watch_value_is_the_programs_struct() {
        let v = watch_value(0x01020304, b"a-very-long-thread-name");
        assert_eq!(&v[..4], &0x01020304u32.to_ne_bytes());
        assert_eq!(&v[4..8], &1u32.to_ne_bytes());
        assert_eq!(&v[8..23], b"a-very-long-thr");
        assert_eq!(v[23], 0);
    }
}

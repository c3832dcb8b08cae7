//! What rtlab's programs and spike programs leave behind: the processes
//! rtlab adopts as their subreaper, where each came from, and the last
//! sweep of the run, which kills whatever still descends from rtlab.

use super::Supervisor;
use crate::sys::os;
use std::time::{Duration, Instant};

/// Where an adopted process came from, by its environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Origin {
    /// A spike program's (`RTLAB_SPIKE_TIMER`): killed at once.
    Helper,
    /// A program's (the run's mark, `RTLAB_RUN`): its load, kept to the end.
    Program,
    /// Neither mark (its environment was cleared, `env -i`): kept to the
    /// end, and counted against the spike programs' bound, since a spike
    /// program may have left it.
    Unmarked,
}

impl Origin {
    /// The origin of process `pid`, read from its environment.
    pub(super) fn of(root: &crate::sys::SysRoot, pid: i32) -> Origin {
        if crate::sys::tasks::environ_has(root, pid, "RTLAB_SPIKE_TIMER") {
            Origin::Helper
        } else if crate::sys::tasks::environ_has(root, pid, "RTLAB_RUN") {
            Origin::Program
        } else {
            Origin::Unmarked
        }
    }

    /// Whether it counts against the spike programs' bound.
    pub(super) fn bounds_spikes(self) -> bool {
        self != Origin::Program
    }
}

/// How long the last sweep keeps killing and reaping.
const SWEEP: Duration = Duration::from_secs(2);

impl Supervisor {
    /// The last sweep, once the programs are stopped: every process rtlab
    /// adopted as their subreaper (whatever cleared its environment and
    /// left its group and session, then lost its parent, comes to rtlab),
    /// and what each started, is killed and reaped. Each is pinned first
    /// (a pidfd) and checked to be one of them still, so a number reused
    /// in between is never signalled. Says what survived.
    pub(super) fn sweep_adopted(&mut self) {
        let by = Instant::now() + SWEEP;
        loop {
            self.adopt();
            let left = self.adopted_trees();
            if left.is_empty() {
                return;
            }
            if Instant::now() >= by {
                self.warnings.push(format!(
                    "processes {left:?} that programs left behind did not end after SIGKILL"
                ));
                return;
            }
            for pid in left {
                let Some(pinned) = crate::sys::tasks::Pinned::pin(&self.root, pid) else {
                    continue;
                };
                if self.adopted_trees().contains(&pid) {
                    let _ = pinned.signal(&self.root, crate::sys::consts::SIGKILL);
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The adopted processes and their descendants, now.
    fn adopted_trees(&self) -> Vec<i32> {
        if self.adopted.is_empty() {
            return Vec::new();
        }
        let table = crate::sys::tasks::process_table(&self.root);
        let me = os::getpid();
        let mut out = Vec::new();
        for &(pid, _) in &self.adopted {
            // Still rtlab's child (not reaped, not a reused number).
            if table.iter().any(|p| p.0 == pid && p.1 == me) {
                out.push(pid);
                out.extend(
                    crate::sys::tasks::descendants(&table, pid)
                        .iter()
                        .map(|d| d.0),
                );
            }
        }
        out
    }
}

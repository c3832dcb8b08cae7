//! The BPF source of `task_latency[N]` (`rtlab task-latency`): for each
//! measurement, the BPF program watching that task alone. Loaded before
//! the trace stream starts, it counts from the moment the stream's
//! instance records (a process given by PID, or a name) or its program
//! has started (that PID given to it, and again when restarted), until
//! just before the stream's last read: over the trace's own window. Read at the end into
//! the measurement's `bpf` figures. Where BPF cannot run, the trace's
//! figures stand alone and the result says why.

use crate::config::TaskSelector;
use crate::messages;
use crate::sys::SysRoot;
use crate::sys::bpf::{WakeupProbe, Watch};
use crate::trace::task_latency::kernel::{self, TaskLatencyBpf};
use crate::trace::task_latency::{TaskLatencyResult, TaskLatencySpec};

/// One measurement's probe, or why it has none.
struct TaskProbe {
    index: usize,
    task: TaskSelector,
    probe: Result<WakeupProbe, String>,
    /// The program's process it watches now, once started.
    watching: Option<u32>,
}

impl TaskProbe {
    /// The task by PID or name, from now on (a program's waits for its
    /// PID); a refusal of the kernel replaces the probe with its reason.
    fn watch(&mut self, watch: &Watch) {
        if let Ok(probe) = self.probe.as_mut()
            && let Err(why) = probe.watch(watch)
        {
            self.probe = Err(format!("setting the task watched: {why}"));
        }
    }
}

/// Every `task_latency[N]`'s probe (none without a `task_latency`).
#[derive(Default)]
pub(super) struct TaskProbes {
    probes: Vec<TaskProbe>,
}

impl TaskProbes {
    /// Loads a probe per measurement.
    pub(super) fn start(root: &SysRoot, specs: &[TaskLatencySpec]) -> TaskProbes {
        let probes: Vec<TaskProbe> = specs
            .iter()
            .map(|s| {
                let probe = WakeupProbe::start_watching(root, &watch_of(&s.task))
                    .map_err(|e| e.to_string());
                TaskProbe {
                    index: s.index,
                    task: s.task.clone(),
                    probe,
                    watching: None,
                }
            })
            .collect();
        TaskProbes { probes }
    }

    /// The stream has started: the tasks given by PID or name are counted
    /// from now on; each measurement says whether the kernel counts it.
    pub(super) fn arm(&mut self) {
        for p in &self.probes {
            messages::note(&match &p.probe {
                Ok(_) => format!(
                    "task latency L{}: wake-up to switch-in also counted in the kernel (BPF)",
                    p.index
                ),
                Err(why) => format!(
                    "task latency L{}: from the trace alone, not counted in the kernel: {why}",
                    p.index
                ),
            });
        }
        for p in &mut self.probes {
            if !matches!(p.task, TaskSelector::Program(_)) {
                p.watch(&watch_of(&p.task));
            }
        }
    }

    /// The stream reads its last: nothing is counted from now on.
    pub(super) fn pause(&mut self) {
        for p in &mut self.probes {
            p.watch(&Watch::Process(None));
        }
    }

    /// Gives each probe of a program its PID, once started (or restarted).
    pub(super) fn learn(&mut self, running: &[(usize, i32)]) {
        for p in &mut self.probes {
            let TaskSelector::Program(n) = p.task else {
                continue;
            };
            let Some(pid) = running
                .iter()
                .find(|r| r.0 == n)
                .and_then(|r| u32::try_from(r.1).ok())
            else {
                continue;
            };
            if p.watching != Some(pid) {
                p.watch(&Watch::Process(Some(pid)));
                p.watching = Some(pid);
            }
        }
    }

    /// Reads each probe into its measurement's result (and unloads it).
    pub(super) fn finish(self, results: &mut [TaskLatencyResult]) {
        for p in self.probes {
            let Some(r) = results.iter_mut().find(|r| r.spec.index == p.index) else {
                continue;
            };
            let read = p.probe.and_then(|probe| {
                let snap = probe.read()?;
                let cells = probe.thread_cells()?;
                Ok(kernel::summarise(&cells, &snap.tasks, snap.lost))
            });
            let read = read.map(|mut k| {
                // The kernel keeps a thread's name from its first count: a
                // name the trace saw later (after an exec) is the current.
                for t in &mut k.threads {
                    if let Some(seen) = r.threads.iter().find(|s| s.tid == t.tid) {
                        t.comm.clone_from(&seen.comm);
                    }
                }
                k
            });
            r.bpf = Some(read.unwrap_or_else(|why| TaskLatencyBpf {
                refused: Some(why),
                ..TaskLatencyBpf::default()
            }));
        }
    }
}

/// What a probe watches, by the task's selector (a program's PID comes
/// once it is started).
fn watch_of(task: &TaskSelector) -> Watch {
    match task {
        TaskSelector::Pid(pid) => Watch::Process(u32::try_from(*pid).ok()),
        TaskSelector::Name(name) => Watch::Name(name.clone()),
        TaskSelector::Program(_) => Watch::Process(None),
    }
}

//! The BPF source of `task_latency[N]` (`rtlab task-latency`): for each
//! measurement, the BPF program watching that task alone, loaded before
//! the programs start (a program's PID is given to it once the program is
//! started, and again if it is restarted), read at the end into the
//! measurement's `bpf` figures. It counts every switch-in, those out of
//! idle that this kernel's trace does not log too. Where BPF cannot run,
//! the trace's figures stand alone and the result says why.

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
    /// The process it watches now (a program's, once started).
    watching: Option<u32>,
}

/// Every `task_latency[N]`'s probe (none without a `task_latency`).
#[derive(Default)]
pub(super) struct TaskProbes {
    probes: Vec<TaskProbe>,
}

impl TaskProbes {
    /// Loads a probe per measurement, and says whether it runs.
    pub(super) fn start(root: &SysRoot, specs: &[TaskLatencySpec]) -> TaskProbes {
        let probes: Vec<TaskProbe> = specs
            .iter()
            .map(|s| {
                let watch = match &s.task {
                    TaskSelector::Pid(pid) => Watch::Process(u32::try_from(*pid).ok()),
                    TaskSelector::Name(name) => Watch::Name(name.clone()),
                    TaskSelector::Program(_) => Watch::Process(None),
                };
                let watching = match watch {
                    Watch::Process(pid) => pid,
                    Watch::Name(_) => None,
                };
                let probe = WakeupProbe::start_watching(root, &watch).map_err(|e| e.to_string());
                TaskProbe {
                    index: s.index,
                    task: s.task.clone(),
                    probe,
                    watching,
                }
            })
            .collect();
        for p in &probes {
            messages::note(&match &p.probe {
                Ok(_) => format!(
                    "task latency L{}: wake-up to switch-in also counted in the kernel (BPF), every switch-in",
                    p.index
                ),
                Err(why) => format!(
                    "task latency L{}: from the trace alone, not counted in the kernel: {why}",
                    p.index
                ),
            });
        }
        TaskProbes { probes }
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
            if p.watching == Some(pid) {
                continue;
            }
            if let Ok(probe) = p.probe.as_mut()
                && let Err(why) = probe.set_process(pid)
            {
                p.probe = Err(format!("giving it program[{n}]'s PID {pid}: {why}"));
                continue;
            }
            p.watching = Some(pid);
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
            r.bpf = Some(read.unwrap_or_else(|why| TaskLatencyBpf {
                refused: Some(why),
                ..TaskLatencyBpf::default()
            }));
        }
    }
}

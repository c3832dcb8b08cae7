//! The machine as the remedies find it: the measured CPUs and where
//! culprits may go, each culprit thread and IRQ as it is now, the network's
//! steering masks, the measured CPUs' idle states, and what the kernel was
//! booted with. Read once, through the root-relative layer, so that the
//! planner (`remedies.rs`) is a pure function of it.

use super::causes::{Cause, Target};
use crate::result::RunResult;
use crate::sys::{self, SysRoot};
use std::collections::BTreeMap;

/// One thread a cause names, as it is now.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadFact {
    /// The thread's name now.
    pub comm: String,
    /// Its process.
    pub tgid: i32,
    /// Start time (ticks since boot): the same thread, not a reused TID.
    pub start: u64,
    /// A kernel thread.
    pub kernel: bool,
    /// The kernel forbids moving it (per-CPU kernel threads).
    pub affinity_fixed: bool,
    /// Its allowed CPUs.
    pub cpus: Vec<usize>,
    /// Its scheduling in words (`FIFO 95`, `OTHER 0`).
    pub sched: String,
}

/// One IRQ a cause names, as it is now.
#[derive(Debug, Clone, PartialEq)]
pub struct IrqFact {
    /// `smp_affinity_list`.
    pub affinity: Vec<usize>,
    /// `effective_affinity_list`, where the kernel has it.
    pub effective: Option<Vec<usize>>,
}

/// One idle state of a measured CPU.
#[derive(Debug, Clone, PartialEq)]
pub struct IdleFact {
    /// The CPU.
    pub cpu: usize,
    /// Its name (`haltpoll idle`, `C6`).
    pub name: String,
    /// Exit latency (µs).
    pub latency_us: u64,
    /// Disabled already.
    pub disabled: bool,
    /// Its `disable` file.
    pub file: String,
}

/// What the planner knows of the machine.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// The timer threads' CPUs.
    pub measured: Vec<usize>,
    /// Where a culprit may go: the `nrt` partition's CPUs when there is
    /// one, else the online CPUs but the measured ones.
    pub housekeeping: Vec<usize>,
    /// The least urgent timer thread's kernel priority (0..99 real-time,
    /// 100..139 normal): a thread at or above it is not preempted by it.
    pub timer_prio: Option<i32>,
    /// The threads the causes name that still exist, by TID.
    pub threads: BTreeMap<i32, ThreadFact>,
    /// Threads never touched, with why: rtlab's own, the measured tasks.
    pub protected: BTreeMap<i32, String>,
    /// The experiment's programs' PIDs in the diagnosis run, by index.
    pub program_pids: BTreeMap<i32, usize>,
    /// The IRQs the causes name, and every network device's IRQs.
    pub irqs: BTreeMap<u32, IrqFact>,
    /// The network devices' IRQs.
    pub net_irqs: Vec<u32>,
    /// The RPS/XPS masks: (interface, queue, file, value).
    pub steering: Vec<(String, String, String, String)>,
    /// The measured CPUs' idle states.
    pub idle: Vec<IdleFact>,
    /// The cpuidle driver (`haltpoll`, `intel_idle`), if any.
    pub idle_driver: Option<String>,
    /// The unbound workqueues' cpumask and writeback's: (file, value).
    pub workqueue_masks: Vec<(String, String)>,
    /// `kernel.sched_rt_runtime_us`.
    pub rt_runtime_us: Option<i64>,
    /// `kernel.sched_rt_period_us`.
    pub rt_period_us: Option<i64>,
    /// The kernel command line.
    pub cmdline: String,
    /// The kernel has `nohz_full` (its sysfs file exists).
    pub nohz_full_supported: bool,
    /// The preemption model in words (`PREEMPT_DYNAMIC (voluntary)`).
    pub preemption: String,
    /// A virtual machine (the `hypervisor` CPU flag).
    pub virtual_machine: bool,
    /// Steal time of the measured CPUs over the diagnosis run (ms).
    pub steal_ms: f64,
    /// How often each numbered IRQ fired on the measured CPUs during the
    /// diagnosis run, when counted.
    pub fired: Option<BTreeMap<u32, u64>>,
}

impl Facts {
    /// Protects the threads whose name matches one of `globs` (`--exclude`).
    pub fn exclude(&mut self, globs: &[String]) {
        for (tid, t) in &self.threads {
            if let Some(g) = globs
                .iter()
                .find(|g| sys::threads::name_matches(g, &t.comm))
            {
                self.protected
                    .insert(*tid, format!("excluded by --exclude {g}"));
            }
        }
    }

    /// Whether `c` is a timer thread's own time (finishing its last cycle
    /// as the timer interrupt came): no cause.
    pub fn own_time(&self, c: &Cause) -> bool {
        matches!(c.target, Target::Thread { pid } if self.protected.get(&pid).is_some_and(|w| w.starts_with("timer_thread")))
    }
}

/// Each numbered IRQ's count on `cpus` now (`/proc/interrupts`).
pub fn irq_counts(root: &SysRoot, cpus: &[usize]) -> BTreeMap<u32, u64> {
    let table = sys::irq::read(root, &[]);
    let columns: Vec<usize> = table
        .cpus
        .iter()
        .enumerate()
        .filter(|(_, c)| cpus.contains(c))
        .map(|(i, _)| i)
        .collect();
    table
        .irqs
        .iter()
        .filter_map(|irq| {
            let n = irq.number()?;
            Some((n, columns.iter().filter_map(|&i| irq.counts.get(i)).sum()))
        })
        .collect()
}

/// The facts the causes of `run` need, read now.
pub fn read(root: &SysRoot, run: &RunResult, causes: &[Cause]) -> Facts {
    let mut measured: Vec<usize> = run.timers.iter().flat_map(|t| t.cpus.clone()).collect();
    measured.sort_unstable();
    measured.dedup();
    let online = sys::online_cpus(root).unwrap_or_default();
    let housekeeping = housekeeping(run, &online, &measured);
    let mut f = Facts {
        housekeeping,
        timer_prio: run.timers.iter().map(|t| kernel_prio(&t.sched)).max(),
        cmdline: run.system.cmdline.clone(),
        nohz_full_supported: root.exists(&format!("{}/nohz_full", sys::paths::CPU_DIR)),
        preemption: preemption_words(&run.system.preemption),
        virtual_machine: sys::smi::under_hypervisor(root),
        steal_ms: run
            .steal_ms
            .iter()
            .filter(|(c, _)| measured.contains(c))
            .map(|(_, ms)| ms)
            .sum(),
        rt_runtime_us: root
            .read_opt(sys::paths::SCHED_RT_RUNTIME)
            .and_then(|v| v.parse().ok()),
        rt_period_us: root
            .read_opt(sys::paths::SCHED_RT_PERIOD)
            .and_then(|v| v.parse().ok()),
        idle_driver: sys::power::idle_driver(root).driver.filter(|d| d != "none"),
        measured,
        ..Facts::default()
    };
    f.protected
        .insert(std::process::id() as i32, "rtlab itself".into());
    protect_measured_tasks(&mut f, run);
    for p in &run.programs {
        let pids = p
            .first_pid
            .into_iter()
            .chain(p.exits.iter().filter_map(|e| e.pid));
        for pid in pids {
            f.program_pids.insert(pid, p.index);
        }
    }
    read_culprits(root, &mut f, causes);
    read_net(root, &mut f);
    f.idle = sys::power::idle_states(root, &f.measured)
        .into_iter()
        .map(|s| IdleFact {
            file: s.disable_file(),
            cpu: s.cpu,
            name: s.name,
            latency_us: s.latency_us,
            disabled: s.disabled,
        })
        .collect();
    for file in [sys::paths::WORKQUEUE_CPUMASK, sys::paths::WRITEBACK_CPUMASK] {
        if let Some(v) = root.read_opt(file) {
            f.workqueue_masks.push((file.to_string(), v));
        }
    }
    f
}

/// The kernel priority of a scheduling (`FIFO 90` → 9, `OTHER 0` → 120).
pub fn kernel_prio(s: &crate::sched::Sched) -> i32 {
    if s.policy.is_realtime() {
        99 - s.priority
    } else {
        120 + s.priority.clamp(-20, 19)
    }
}

fn preemption_words(p: &sys::info::Preemption) -> String {
    match &p.dynamic_mode {
        Some(m) => format!("{} ({m})", p.model),
        None => p.model.clone(),
    }
}

/// Where culprits may go: the `nrt` partition's CPUs when the run saw
/// one, else the online CPUs but the measured ones and every CPU kept for
/// real-time work (`isolcpus=`, `nohz_full=`, another partition's).
fn housekeeping(run: &RunResult, online: &[usize], measured: &[usize]) -> Vec<usize> {
    let state = &run.isolation.state;
    if let Some(nrt) = state.partitions.iter().find(|p| p.name == "nrt")
        && !nrt.cpus.is_empty()
        && nrt.cpus.iter().all(|c| !measured.contains(c))
    {
        return nrt.cpus.clone();
    }
    let kept: Vec<usize> = state
        .isolated
        .iter()
        .chain(&state.nohz_full)
        .chain(state.partitions.iter().flat_map(|p| &p.cpus))
        .copied()
        .collect();
    online
        .iter()
        .copied()
        .filter(|c| !measured.contains(c) && !kept.contains(c))
        .collect()
}

/// The tasks a task-latency measurement measured are the user's: never
/// touched.
fn protect_measured_tasks(f: &mut Facts, run: &RunResult) {
    for m in &run.task_latency {
        for t in &m.threads {
            f.protected.insert(
                t.tid,
                format!("the task task_latency[{}] measures", m.spec.index),
            );
        }
    }
    for t in &run.timers {
        f.protected
            .insert(t.tid, format!("timer_thread[{}]", t.index));
    }
}

fn read_culprits(root: &SysRoot, f: &mut Facts, causes: &[Cause]) {
    // The processes of the measured tasks: none of their threads is moved.
    let measured: Vec<i32> = f
        .protected
        .keys()
        .filter_map(|tid| sys::threads::by_tid(root, *tid))
        .map(|t| t.pid)
        .filter(|p| *p != std::process::id() as i32)
        .collect();
    for c in causes {
        match c.target {
            Target::Thread { pid } => {
                // The thread the trace named, not another that got its TID:
                // the same name.
                let traced = c.what.split(" (work ").next().unwrap_or(&c.what);
                let now = sys::threads::by_tid(root, pid).filter(|t| t.name == traced);
                if let Some(t) = now {
                    if measured.contains(&t.pid) && !f.protected.contains_key(&pid) {
                        f.protected
                            .insert(pid, "a thread of a measured task's process".into());
                    }
                    // Any thread of rtlab's own process (its trace readers,
                    // its signal thread), not only its main thread.
                    if t.pid == std::process::id() as i32 {
                        f.protected.insert(pid, "a thread of rtlab itself".into());
                    }
                    f.threads.insert(
                        pid,
                        ThreadFact {
                            comm: t.name.clone(),
                            tgid: t.pid,
                            start: t.start,
                            kernel: t.kernel,
                            affinity_fixed: t.affinity_fixed,
                            cpus: crate::cpulist::parse(&t.cpus_allowed).unwrap_or_default(),
                            sched: t.sched_text(),
                        },
                    );
                }
            }
            Target::Irq { irq } => {
                if let Some(fact) = irq_fact(root, irq) {
                    f.irqs.insert(irq, fact);
                }
            }
            _ => {}
        }
    }
}

fn irq_fact(root: &SysRoot, irq: u32) -> Option<IrqFact> {
    let affinity = root.read_trim(&sys::paths::irq_affinity_list(irq)).ok()?;
    Some(IrqFact {
        affinity: crate::cpulist::parse(&affinity).ok()?,
        effective: root
            .read_opt(&sys::paths::irq_effective_affinity_list(irq))
            .and_then(|e| crate::cpulist::parse(&e).ok()),
    })
}

fn read_net(root: &SysRoot, f: &mut Facts) {
    let masks = sys::net::steering_masks(root);
    let mut devs: Vec<&str> = masks.iter().map(|m| m.dev.as_str()).collect();
    devs.dedup();
    let names = sys::irq::handler_names(root);
    for dev in devs {
        let prefixes = sys::net::irq_name_prefixes(root, dev);
        let msi = sys::net::msi_irqs(root, dev);
        for (irq, handlers) in &names {
            let ours = msi.contains(irq)
                || handlers.iter().any(|h| {
                    prefixes.iter().any(|p| {
                        h == p.trim_end_matches('-')
                            || h.starts_with(&format!("{}-", p.trim_end_matches('-')))
                    })
                });
            if ours && !f.net_irqs.contains(irq) {
                f.net_irqs.push(*irq);
                if let Some(fact) = irq_fact(root, *irq) {
                    f.irqs.insert(*irq, fact);
                }
            }
        }
    }
    f.steering = masks
        .into_iter()
        .map(|m| (m.dev, m.queue, m.file, m.value))
        .collect();
}

//! One proposal per cause: a remedy rtlab can apply live (its actions, and
//! the checks that say whether the kernel really did it), or advice when it
//! cannot (boot parameters, the preemption model, the host, a thread the
//! kernel or the user needs where it is). A pure function of the causes and
//! the facts.

use super::RemedyClass;
use super::causes::{Cause, Target, micros};
use super::facts::{Facts, ThreadFact};
use crate::cpulist;
use crate::trace::explain::analyze::PartKind;
use serde::{Deserialize, Serialize};

/// One change a remedy makes, through the journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Writes a kernel knob (the journal keeps its old value).
    Write {
        /// The file, relative to `/`.
        file: String,
        /// The value written.
        value: String,
    },
    /// Sets a thread's allowed CPUs (the same thread: TID and start time).
    Affinity {
        /// Thread id.
        tid: i32,
        /// Its start time (ticks since boot).
        start: u64,
        /// Its name.
        name: String,
        /// The CPUs set.
        cpus: Vec<usize>,
    },
}

/// What is checked once a remedy is applied: the kernel may accept a
/// value and do otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "check", rename_all = "snake_case")]
pub enum Check {
    /// The IRQ's effective affinity is off the measured CPUs.
    IrqOff {
        /// The IRQ.
        irq: u32,
    },
}

/// A cause a proposal answers, with its weight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// The cause in words.
    pub cause: String,
    /// Wake-ups it took part in.
    pub spikes: u64,
    /// Wake-ups it was the main cause of.
    pub main_cause: u64,
    /// Time it cost them (ns).
    pub total_ns: u64,
}

/// A remedy, or advice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    /// Its class.
    pub class: RemedyClass,
    /// What it changes (or would), in words.
    pub change: String,
    /// The causes it answers, costliest first.
    pub answers: Vec<Answer>,
    /// What it does; empty for advice.
    pub actions: Vec<Action>,
    /// What is checked once applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
    /// Why it is advice, not applied live, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<String>,
}

impl Proposal {
    /// This proposal and `other` applied as one: its class and causes,
    /// both changes and all their actions and checks.
    pub fn with(&self, other: &Proposal) -> Proposal {
        let mut both = self.clone();
        both.change = format!("{}, with {}", self.change, other.change);
        both.actions.extend(other.actions.iter().cloned());
        both.checks.extend(other.checks.iter().cloned());
        both
    }

    /// The time of the causes it answers (ns).
    pub fn weight_ns(&self) -> u64 {
        self.answers.iter().map(|a| a.total_ns).sum()
    }

    /// Whether rtlab can apply it.
    pub fn live(&self) -> bool {
        !self.actions.is_empty()
    }

    /// What it acts on, the same from one diagnosis to the next (its words
    /// change with the state it finds): the files and threads it changes.
    pub fn key(&self) -> String {
        if self.actions.is_empty() {
            let causes: Vec<&str> = self.answers.iter().map(|a| a.cause.as_str()).collect();
            return format!("{}: {}", self.class.name(), causes.join(", "));
        }
        let mut keys: Vec<String> = self
            .actions
            .iter()
            .map(|a| match a {
                Action::Write { file, .. } => file.clone(),
                Action::Affinity { tid, start, .. } => format!("thread {tid} {start}"),
            })
            .collect();
        keys.sort();
        keys.join(", ")
    }
}

/// Choices that change the proposals.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Lift RT throttling when it held a timer thread off.
    pub lift_rt_throttling: bool,
}

fn answer(c: &Cause) -> Answer {
    Answer {
        cause: c.what.clone(),
        spikes: c.spikes,
        main_cause: c.main_cause,
        total_ns: c.total_ns,
    }
}

fn advice(class: RemedyClass, causes: &[&Cause], change: String, why: String) -> Proposal {
    Proposal {
        class,
        change,
        answers: causes.iter().map(|c| answer(c)).collect(),
        actions: Vec::new(),
        checks: Vec::new(),
        advice: Some(why),
    }
}

fn live(class: RemedyClass, causes: &[&Cause], change: String, actions: Vec<Action>) -> Proposal {
    Proposal {
        class,
        change,
        answers: causes.iter().map(|c| answer(c)).collect(),
        actions,
        checks: Vec::new(),
        advice: None,
    }
}

/// The proposals for `causes` on the machine `f`, costliest first.
pub fn propose(causes: &[Cause], f: &Facts, opts: &Options) -> Vec<Proposal> {
    let of = |class: RemedyClass| -> Vec<&Cause> {
        causes.iter().filter(|c| c.class == class).collect()
    };
    let mut out = Vec::new();
    for c in of(RemedyClass::Irq) {
        out.push(irq(c, f));
    }
    for c in of(RemedyClass::Thread) {
        out.push(thread(c, f));
    }
    out.extend(workqueue(&of(RemedyClass::Workqueue), f));
    out.extend(net(&of(RemedyClass::Net), f));
    out.extend(idle(&of(RemedyClass::Idle), f));
    let mut held_off = of(RemedyClass::RtThrottling);
    held_off.extend(causes.iter().filter(|c| throttled(c, f)));
    out.extend(rt_throttling(&held_off, f, opts));
    out.extend(tick(&of(RemedyClass::Tick), f));
    for c in of(RemedyClass::Ipi) {
        out.push(ipi(c));
    }
    out.extend(preemption(causes, f));
    out.extend(host(&of(RemedyClass::Host), f));
    for c in of(RemedyClass::Slack) {
        out.push(slack(c));
    }
    // The timer thread finishing its last cycle is its own time.
    out.retain(|p| {
        !p.answers
            .iter()
            .all(|a| causes.iter().any(|c| c.what == a.cause && f.own_time(c)))
    });
    // The most decisive first: a cause that was the main one of many
    // wake-ups hides the smaller ones until it is gone.
    out.sort_by_key(|p| {
        std::cmp::Reverse((
            p.answers.iter().map(|a| a.main_cause).sum::<u64>(),
            p.weight_ns(),
        ))
    });
    out
}

fn list(cpus: &[usize]) -> String {
    cpulist::format(cpus)
}

fn meets(a: &[usize], b: &[usize]) -> bool {
    a.iter().any(|x| b.contains(x))
}

fn irq(c: &Cause, f: &Facts) -> Proposal {
    let Target::Irq { irq } = c.target else {
        return advice(RemedyClass::Irq, &[c], c.what.clone(), "not an IRQ".into());
    };
    let m = list(&f.measured);
    let Some(now) = f.irqs.get(&irq) else {
        return advice(
            RemedyClass::Irq,
            &[c],
            format!("{}: no affinity to change", c.what),
            format!("IRQ {irq} has no smp_affinity_list now (gone, or per-CPU)"),
        );
    };
    if f.housekeeping.is_empty() {
        return no_room(RemedyClass::Irq, c, f);
    }
    let effective = now
        .effective
        .clone()
        .unwrap_or_else(|| now.affinity.clone());
    if !meets(&now.affinity, &f.measured) && !meets(&effective, &f.measured) {
        return advice(
            RemedyClass::Irq,
            &[c],
            format!("{}: already off CPUs {m}", c.what),
            format!(
                "its affinity is {} now (it was moved since the run)",
                list(&now.affinity)
            ),
        );
    }
    let to = off(&now.affinity, f);
    let mut p = live(
        RemedyClass::Irq,
        &[c],
        format!(
            "IRQ {irq}'s affinity {} -> {} (off the measured CPUs {m})",
            list(&now.affinity),
            list(&to)
        ),
        vec![Action::Write {
            file: crate::sys::paths::irq_affinity_list(irq),
            value: list(&to),
        }],
    );
    p.checks.push(Check::IrqOff { irq });
    p
}

/// Where an affinity goes: its own CPUs that are housekeeping ones (a
/// NUMA node or a partition it was kept to stays), else the housekeeping
/// CPUs.
fn off(cpus: &[usize], f: &Facts) -> Vec<usize> {
    let keep: Vec<usize> = cpus
        .iter()
        .copied()
        .filter(|c| f.housekeeping.contains(c))
        .collect();
    if keep.is_empty() {
        f.housekeeping.clone()
    } else {
        keep
    }
}

fn no_room(class: RemedyClass, c: &Cause, f: &Facts) -> Proposal {
    advice(
        class,
        &[c],
        format!("{}: nowhere to move it", c.what),
        format!(
            "every online CPU is measured ({}): leave one CPU unmeasured for the rest of the system",
            list(&f.measured)
        ),
    )
}

/// Who a thread is, in words: `rtlab-hog (pid 9682, FIFO 95)`.
fn thread_words(c: &Cause, pid: i32, t: Option<&ThreadFact>) -> String {
    match t {
        Some(t) => format!("{} (pid {pid}, {})", t.comm, t.sched),
        None => format!("{} (pid {pid})", c.what),
    }
}

fn thread(c: &Cause, f: &Facts) -> Proposal {
    let Target::Thread { pid } = c.target else {
        return advice(
            RemedyClass::Thread,
            &[c],
            c.what.clone(),
            "not a thread".into(),
        );
    };
    let t = f.threads.get(&pid);
    let who = thread_words(c, pid, t);
    let refuse = |why: String| {
        advice(
            RemedyClass::Thread,
            &[c],
            format!("{who}: left where it is"),
            why,
        )
    };
    if let Some(why) = f.protected.get(&pid) {
        return refuse(format!("it is {why}: rtlab never moves it"));
    }
    if let Some(i) = f.program_pids.get(&pid) {
        return refuse(format!(
            "it is program[{i}] of the experiment, started again by each run: give it `cpu_affinity {}` in the file",
            list(&f.housekeeping)
        ));
    }
    let Some(t) = t else {
        return refuse(format!(
            "it no longer runs (it ended, was short-lived, or its TID now names another thread): start it on the other CPUs \
                 (`taskset -c {} CMD`, or `rtlab partition run nrt -- CMD` once `rtlab partition create` made one)",
            list(&f.housekeeping)
        ));
    };
    if t.affinity_fixed || (t.kernel && t.cpus.len() == 1) {
        return refuse(format!(
            "a kernel thread bound to its CPU (the kernel forbids moving it, or keeps it on that CPU alone): rtlab leaves it. {}",
            kthread_advice(&t.comm, f)
        ));
    }
    if f.housekeeping.is_empty() {
        return no_room(RemedyClass::Thread, c, f);
    }
    if !meets(&t.cpus, &f.measured) {
        return refuse(format!(
            "it is already off the measured CPUs (allowed {})",
            list(&t.cpus)
        ));
    }
    let to = off(&t.cpus, f);
    live(
        RemedyClass::Thread,
        &[c],
        format!(
            "{who}: CPUs {} -> {} ({})",
            list(&t.cpus),
            list(&to),
            why_move(c, f)
        ),
        vec![Action::Affinity {
            tid: pid,
            start: t.start,
            name: t.comm.clone(),
            cpus: to,
        }],
    )
}

/// Why a thread is moved, from how it showed and its priority against the
/// timer thread's.
fn why_move(c: &Cause, f: &Facts) -> String {
    let prio = c.prio;
    let at_or_above = matches!((prio, f.timer_prio), (Some(p), Some(t)) if p <= t);
    if c.seen_as.contains(&PartKind::Thread) && at_or_above {
        "it ran ahead of the timer thread at or above its priority: off the measured CPUs (or give it a priority below the timer thread's)".into()
    } else if prio.is_some_and(|p| p >= 100) || prio.is_none() {
        "a normal thread on a measured CPU: to the non-real-time CPUs".into()
    } else {
        "a real-time thread on a measured CPU: off the measured CPUs".into()
    }
}

/// What to do about a per-CPU kernel thread.
fn kthread_advice(comm: &str, f: &Facts) -> String {
    let m = list(&f.measured);
    if comm.starts_with("ksoftirqd/") {
        "It runs softirqs the CPU could not finish: the IRQs and network steering above are the remedy.".into()
    } else if comm.starts_with("watchdog/") || comm.starts_with("migration/") {
        format!(
            "`nowatchdog` on the kernel command line, or `kernel.watchdog_cpumask` without CPUs {m}, stops the lockup watchdog's work there."
        )
    } else if comm.starts_with("kworker/") {
        "Its work is queued for this CPU by the kernel, often from another CPU (vmstat_update, the system-wide drains): `vm.stat_interval` spaces vmstat_update, and `nohz_full=` (where the kernel has it) quiets vmstat here.".into()
    } else {
        format!(
            "Boot parameters keep most kernel work off CPUs {m}: `{}`.",
            boot_parameters(f).join(" ")
        )
    }
}

fn workqueue(causes: &[&Cause], f: &Facts) -> Vec<Proposal> {
    let (unbound, bound): (Vec<&Cause>, Vec<&Cause>) =
        causes.iter().partition(|c| c.what.starts_with("kworker/u"));
    let mut out = Vec::new();
    if !bound.is_empty() {
        let m = list(&f.measured);
        out.push(advice(
            RemedyClass::Workqueue,
            &bound,
            format!("per-CPU work on CPUs {m}"),
            "a bound kworker runs work the kernel queued for its CPU, often from another CPU (vmstat_shepherd's \
             vmstat_update, the system-wide drains of lru_add_drain_all and drain_all_pages; the work item is named): \
             no mask moves it; `vm.stat_interval` spaces vmstat_update, `nohz_full=` (where the kernel has it) quiets \
             vmstat on the CPU, and the drains come from whatever calls them system-wide"
                .into(),
        ));
    }
    if unbound.is_empty() {
        return out;
    }
    let mask = cpulist::format_mask(&f.housekeeping);
    let actions: Vec<Action> = f
        .workqueue_masks
        .iter()
        .filter(|(_, v)| cpulist::parse_mask(v).is_ok_and(|c| meets(&c, &f.measured)))
        .map(|(file, _)| Action::Write {
            file: file.clone(),
            value: mask.clone(),
        })
        .collect();
    out.push(if actions.is_empty() || f.housekeeping.is_empty() {
        advice(
            RemedyClass::Workqueue,
            &unbound,
            "unbound workqueues: nothing to change".into(),
            "the unbound workqueues' cpumask already leaves the measured CPUs out (or none is left)".into(),
        )
    } else {
        live(
            RemedyClass::Workqueue,
            &unbound,
            format!(
                "unbound workqueues and writeback to CPUs {} (their cpumask {mask})",
                list(&f.housekeeping)
            ),
            actions,
        )
    });
    out
}

/// The network's softirqs: the RPS masks that point at the measured
/// CPUs, and apart (an IRQ the kernel will not move must not sink the
/// masks) the NIC IRQs delivered there.
fn net(causes: &[&Cause], f: &Facts) -> Vec<Proposal> {
    if causes.is_empty() {
        return Vec::new();
    }
    let m = list(&f.measured);
    let mut out = Vec::new();
    if let Some(p) = steering(causes, f) {
        out.push(p);
    }
    for irq in &f.net_irqs {
        let Some(now) = f.irqs.get(irq) else { continue };
        // A NIC IRQ that did not fire on the measured CPUs in the diagnosis
        // is not where their softirqs came from.
        if f.fired
            .as_ref()
            .is_some_and(|n| n.get(irq).copied().unwrap_or(0) == 0)
        {
            continue;
        }
        let effective = now
            .effective
            .clone()
            .unwrap_or_else(|| now.affinity.clone());
        if !meets(&effective, &f.measured) || f.housekeeping.is_empty() {
            continue;
        }
        let mut p = live(
            RemedyClass::Net,
            causes,
            format!(
                "NIC IRQ {irq}'s affinity {} -> {} (it fired on CPUs {} in the diagnosis)",
                list(&now.affinity),
                list(&off(&now.affinity, f)),
                list(&f.measured)
            ),
            vec![Action::Write {
                file: crate::sys::paths::irq_affinity_list(*irq),
                value: list(&off(&now.affinity, f)),
            }],
        );
        p.checks.push(Check::IrqOff { irq: *irq });
        out.push(p);
    }
    if out.is_empty() {
        out.push(advice(
            RemedyClass::Net,
            causes,
            format!("network softirqs on CPUs {m}: nothing to steer"),
            format!(
                "rtlab found no RPS mask and no NIC IRQ that fired on CPUs {m} (it knows a NIC's IRQs by its \
                 device's MSI IRQs and by the interface's or the virtio device's name): the softirq runs there for a task on them that sends or \
                 receives (move that task), or for a NIC IRQ of another name (`rtlab irq` lists them)"
            ),
        ));
    }
    out
}

fn steering(causes: &[&Cause], f: &Facts) -> Option<Proposal> {
    let mut actions = Vec::new();
    let mut words = Vec::new();
    // Receive steering only: XPS picks the queue a sender transmits on,
    // while transmitting (and NET_TX) runs on the sender's own CPU.
    for (dev, queue, file, value) in f.steering.iter().filter(|s| s.1.starts_with("rx-")) {
        let Ok(cpus) = cpulist::parse_mask(value) else {
            continue;
        };
        if !meets(&cpus, &f.measured) {
            continue;
        }
        let rest: Vec<usize> = cpus
            .iter()
            .copied()
            .filter(|c| !f.measured.contains(c))
            .collect();
        let to = if rest.is_empty() {
            f.housekeeping.clone()
        } else {
            rest
        };
        if to.is_empty() {
            continue;
        }
        words.push(format!(
            "{dev} {queue} CPUs {} -> {} (mask {value} -> {})",
            list(&cpus),
            list(&to),
            cpulist::format_mask(&to)
        ));
        actions.push(Action::Write {
            file: file.clone(),
            value: cpulist::format_mask(&to),
        });
    }
    (!actions.is_empty()).then(|| {
        live(
            RemedyClass::Net,
            causes,
            format!(
                "packet steering off CPUs {}: {}",
                list(&f.measured),
                words.join(", ")
            ),
            actions,
        )
    })
}

fn idle(causes: &[&Cause], f: &Facts) -> Option<Proposal> {
    if causes.is_empty() {
        return None;
    }
    let m = list(&f.measured);
    let deep: Vec<_> = f
        .idle
        .iter()
        .filter(|s| s.latency_us > 0 && !s.disabled)
        .collect();
    if deep.is_empty() {
        let driver = f.idle_driver.as_deref().unwrap_or("none");
        let why = if f.virtual_machine {
            format!(
                "no idle state of CPUs {m} is left to disable (cpuidle driver: {driver}): an idle vCPU halts and the \
                 host must run it again. In the guest, the haltpoll cpuidle driver (`cpuidle_haltpoll.force=1`, its \
                 `guest_halt_poll_ns`) polls a while before halting, and `idle=poll` on the command line never halts \
                 (every CPU of the machine then polls: a whole core's power each)"
            )
        } else {
            format!(
                "no idle state of CPUs {m} is left to disable (cpuidle driver: {driver}): `idle=poll` on the kernel \
                 command line keeps every CPU of the machine polling, at a whole core's power each"
            )
        };
        return Some(advice(
            RemedyClass::Idle,
            causes,
            format!("idle exit on CPUs {m}"),
            why,
        ));
    }
    Some(disable_idle_states(causes, &deep))
}

/// The proposal that disables `deep` (idle states with an exit latency),
/// answering `causes`.
fn disable_idle_states(causes: &[&Cause], deep: &[&super::facts::IdleFact]) -> Proposal {
    let names: Vec<String> = deep
        .iter()
        .map(|s| format!("CPU {} {} ({} µs)", s.cpu, s.name, s.latency_us))
        .collect();
    live(
        RemedyClass::Idle,
        causes,
        format!(
            "disable the idle states with an exit latency: {}",
            names.join(", ")
        ),
        deep.iter()
            .map(|s| Action::Write {
                file: s.file.clone(),
                value: "1".into(),
            })
            .collect(),
    )
}

/// The idle remedy a thread's move is tried with when the move alone cuts
/// the count but not the tail (the CPU it empties idles): the measured
/// CPUs' idle states with an exit latency, still enabled, disabled; None
/// when none is left.
pub fn idle_companion(f: &Facts) -> Option<Proposal> {
    let deep: Vec<_> = f
        .idle
        .iter()
        .filter(|s| s.latency_us > 0 && !s.disabled)
        .collect();
    (!deep.is_empty()).then(|| disable_idle_states(&[], &deep))
}

/// What lifting RT throttling costs, in words.
const RT_COST: &str = "a real-time thread that never sleeps then keeps its CPU forever: the kernel's own threads \
     there (kworkers, ksoftirqd, RCU) starve, and the machine can hang. Kernels with the fair server \
     (6.12 and later) also hold real-time threads off for it (debugfs `sched/fair_server`)";

/// A normal thread that held the CPU this long in one stretch after a
/// real-time timer thread's wake-up is taken for the kernel running normal
/// tasks in the share it keeps from real-time ones (RT throttling's 50 ms
/// of each second by default, the fair server's 50 ms of each second): a
/// kernel path without a preemption point may last milliseconds on a
/// kernel that is not fully preemptible, not tens of them.
pub const THROTTLED_STRETCH_NS: u64 = 20_000_000;

/// Whether `c` is a normal thread that held a real-time timer thread off
/// for a throttling's length. Not where a hypervisor may have taken that
/// stretch: on a VM whose measured CPUs lost at least as long to the host
/// in the run (steal time), a vCPU stopped while the thread ran looks the
/// same from inside, and the real-time load need not be anywhere near the
/// throttle (a new user's check: a page faulter beside a 10% FIFO load
/// "held" the CPU 28 ms while the host took 17-28 ms stretches even with
/// neither on it).
fn throttled(c: &Cause, f: &Facts) -> bool {
    let host_may_have = f.virtual_machine && f.steal_ms * 1e6 >= c.max_ns as f64;
    matches!(c.target, Target::Thread { .. })
        && c.prio.is_some_and(|p| p >= 100)
        && f.timer_prio.is_some_and(|t| t < 100)
        && c.max_ns >= THROTTLED_STRETCH_NS
        && !host_may_have
}

fn rt_throttling(causes: &[&Cause], f: &Facts, opts: &Options) -> Option<Proposal> {
    if causes.is_empty() {
        return None;
    }
    let m = list(&f.measured);
    let now = f
        .rt_runtime_us
        .map_or("unknown".to_string(), |v| v.to_string());
    let period = f
        .rt_period_us
        .map_or("unknown".to_string(), |v| v.to_string());
    let why = format!(
        "the kernel ran normal tasks in the share it keeps from real-time ones, because the real-time tasks on CPUs {m} \
         used the rest: RT throttling (`kernel.sched_rt_runtime_us` {now} of each `sched_rt_period_us` {period}) and, on kernels with it (6.12 and \
         later), the fair server (debugfs `sched/fair_server/cpuN/runtime`). The cause is the real-time load: threads that run \
         there without sleeping (`rtlab threads --rt --cpu N` for each CPU N of {m}), which a timer thread of higher priority never sees"
    );
    if f.rt_runtime_us == Some(-1) || !opts.lift_rt_throttling {
        let what = if f.rt_runtime_us == Some(-1) {
            "RT throttling is lifted already: what is left is the fair server's".to_string()
        } else {
            format!(
                "lifting RT throttling (`--lift-rt-throttling`) leaves the fair server, and costs this: {RT_COST}"
            )
        };
        return Some(advice(
            RemedyClass::RtThrottling,
            causes,
            format!("the real-time load on CPUs {m}"),
            format!("{why}. Move that load off; {what}"),
        ));
    }
    Some(live(
        RemedyClass::RtThrottling,
        causes,
        format!(
            "kernel.sched_rt_runtime_us {now} -> -1 (lift RT throttling; {why}; the cost: {RT_COST})"
        ),
        vec![Action::Write {
            file: crate::sys::paths::SCHED_RT_RUNTIME.into(),
            value: "-1".into(),
        }],
    ))
}

/// The boot parameters that keep the tick, RCU callbacks and unbound
/// timers off the measured CPUs, less those the command line has.
pub fn boot_parameters(f: &Facts) -> Vec<String> {
    let m = list(&f.measured);
    let h = list(&f.housekeeping);
    let mut want = Vec::new();
    if f.nohz_full_supported {
        want.push(format!("nohz_full={m}"));
    }
    want.push(format!("rcu_nocbs={m}"));
    if !h.is_empty() {
        want.push(format!("irqaffinity={h}"));
    }
    want.push(format!("isolcpus=managed_irq,domain,{m}"));
    let have: Vec<&str> = f.cmdline.split_whitespace().collect();
    want.into_iter()
        .filter(|w| !have.contains(&w.as_str()))
        .collect()
}

fn tick(causes: &[&Cause], f: &Facts) -> Option<Proposal> {
    if causes.is_empty() {
        return None;
    }
    let add = boot_parameters(f);
    let why = if add.is_empty() {
        "the command line already has every boot parameter rtlab would add: what is left is the kernel's own minimum (one tick a second with nohz_full)".into()
    } else {
        format!(
            "boot parameters, not settable live: add `{}` to the kernel command line{}",
            add.join(" "),
            if f.nohz_full_supported {
                ""
            } else {
                " (this kernel has no NO_HZ_FULL: nohz_full needs CONFIG_NO_HZ_FULL)"
            }
        )
    };
    Some(advice(
        RemedyClass::Tick,
        causes,
        format!(
            "the tick, RCU callbacks and timers off CPUs {}",
            list(&f.measured)
        ),
        why,
    ))
}

fn ipi(c: &Cause) -> Proposal {
    let why = if c.what.contains("NMI") || c.what.contains("nmi") {
        "NMIs come from perf sampling or the NMI watchdog: `nmi_watchdog=0` on the command line (or `kernel.nmi_watchdog=0`) and no perf session".into()
    } else if c.what.starts_with("softirq") {
        "the softirq follows the IRQ of its device: move that IRQ (rtlab irq) or the task that raises it".into()
    } else {
        "IPIs are sent by other CPUs' work aimed at this one (RPS steering, a TLB shootdown of a process with threads here, a wake-up): the remedies above may remove their source; `isolcpus=` and `nohz_full=` keep more away".into()
    };
    advice(RemedyClass::Ipi, &[c], c.what.clone(), why)
}

fn preemption(causes: &[Cause], f: &Facts) -> Option<Proposal> {
    // Only a thread below the timer thread's priority holds it off by a
    // non-preemptible section; one at or above it simply runs first.
    let below = |c: &&Cause| match (c.prio, f.timer_prio) {
        (Some(p), Some(t)) => p > t,
        _ => true,
    };
    // It held the CPU after the wake-up: in its own name (the stack showed
    // where it let go), or unseen.
    // It held the CPU after the wake-up in its own name, which the trace
    // gives only for logged kernel work, or its stack showed the path;
    // stretches it held unseen may as well be the interrupt's way back
    // or the host, and a throttling's length is no path at all.
    let held = |c: &&Cause| c.seen_as.contains(&PartKind::Thread) || !c.paths.is_empty();
    let unseen: Vec<&Cause> = causes
        .iter()
        .filter(|c| matches!(c.target, Target::Thread { .. }))
        .filter(held)
        .filter(below)
        .filter(|c| !throttled(c, f))
        .collect();
    if unseen.is_empty() {
        return None;
    }
    let names: Vec<String> = unseen
        .iter()
        .map(|c| {
            let pid = match c.target {
                Target::Thread { pid } => pid,
                _ => 0,
            };
            match c.paths.is_empty() {
                true => format!("{} (pid {pid})", c.what),
                false => format!("{} (pid {pid}, in {})", c.what, c.paths.join("; ")),
            }
        })
        .collect();
    let model = &f.preemption;
    // CONFIG_PREEMPT, `preempt=full`, and `lazy` (which defers only the
    // fair class's preemption: a real-time wake-up preempts at once) are
    // fully preemptible already.
    let preemptible = model == "PREEMPT"
        || model.contains("PREEMPT_RT")
        || model.contains("(full)")
        || model.contains("(lazy)");
    let cut = if preemptible {
        format!(
            "the kernel is already {model}: what is left is a section with preemption or interrupts off (a spinlock, a preempt-disabled region); the path above names it"
        )
    } else if model.contains("PREEMPT_DYNAMIC") {
        format!(
            "this kernel is {model}: `preempt=full` on the command line, or a PREEMPT_RT kernel, lets the timer thread in at the next preemption point"
        )
    } else {
        format!(
            "this kernel is {model}: a kernel built with CONFIG_PREEMPT (or PREEMPT_RT) lets the timer thread in at the next preemption point"
        )
    };
    Some(advice(
        RemedyClass::Preemption,
        &unseen,
        format!("non-preemptible stretches of {}", names.join(", ")),
        format!(
            "below the timer thread's priority, they held the CPU after its wake-up: a kernel path without a preemption point (or, where nothing was logged, the way back from an interrupt or the host); {cut}. Moving them (above) takes them off the measured CPUs; the model cuts every such path"
        ),
    ))
}

fn host(causes: &[&Cause], f: &Facts) -> Option<Proposal> {
    if causes.is_empty() {
        return None;
    }
    let why = if f.virtual_machine {
        format!(
            "no guest setting helps: nothing ran in this guest then, so the host did not run this vCPU or delivered its \
             interrupt late (steal on the measured CPUs: {:.1} ms in the run). On the host: a dedicated, isolated core \
             per real-time vCPU, and no overcommit",
            f.steal_ms
        )
    } else {
        "nothing in the kernel logged that time: an SMI or the firmware, or interrupts off in code that logs nothing; `rtlab hwlat` measures what the hardware and firmware take".into()
    };
    Some(advice(
        RemedyClass::Host,
        causes,
        format!(
            "time nothing in this system logged: {}",
            micros(causes.iter().map(|c| c.total_ns).sum())
        ),
        why,
    ))
}

fn slack(c: &Cause) -> Proposal {
    let tid = match c.target {
        Target::Slack { tid } => tid,
        _ => 0,
    };
    advice(
        RemedyClass::Slack,
        &[c],
        format!("{}: to 1 ns", c.what),
        format!(
            "the task asked the kernel to fire its timers up to its slack late; it is the measured task, which rtlab never changes: \
             `prctl(PR_SET_TIMERSLACK, 1)` in it, `echo 1 > /proc/{tid}/timerslack_ns` from outside, or a real-time policy (which has no slack)"
        ),
    )
}

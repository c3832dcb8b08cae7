//! Tuning: the system settings an RT engineer changes around a measurement
//! — IRQ affinities, thread priorities and CPUs, packet steering, cpufreq
//! governors, C-state limits and CPU bandwidth — each applied through the
//! journal (the old value is on disk before the new one is written) and each
//! reported, never failing the rest: set, already so, not offered, or
//! refused with the kernel's reason.
//!
//! The same functions serve the commands (`rtlab irq move`, `threads set`,
//! `cpufreq set`, `cstates set`, journal `tune.journal`, kept until
//! `rtlab restore`) and the `main` keys of a run (the run's journal,
//! replayed when the run ends).

pub mod bandwidth;
pub mod knob;
#[cfg(test)]
mod tests;

use crate::cpulist;
use crate::sched::Sched;
use crate::sys::journal::{Change, Journal, JournalError};
use crate::sys::{SysError, SysRoot, net, paths, power, threads};
use knob::{KnobStatus, set_status};
use serde::Serialize;

/// The settings a run holds while it lasts, restored at its end.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct TuningSpec {
    /// cpufreq governor, and the CPUs whose policies get it (None = all).
    pub governor: Option<(String, Option<Vec<usize>>)>,
    /// Deepest idle-state exit latency allowed (µs), and on which CPUs.
    pub cstate_max_latency_us: Option<(u64, Option<Vec<usize>>)>,
    /// IRQ affinities, in file order: CPUs and IRQs (empty = all).
    pub irq_affinity: Vec<(Vec<usize>, Vec<u32>)>,
    /// Thread priorities, in file order: name pattern and scheduling.
    pub thread_sched: Vec<(String, Sched)>,
    /// Thread CPUs, in file order: name pattern (or TID) and CPUs (absent
    /// in older results).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thread_affinity: Vec<(String, Vec<usize>)>,
    /// Packet steering, in file order: interface and CPUs (absent in older
    /// results).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub net_steering: Vec<(String, Vec<usize>)>,
}

impl TuningSpec {
    /// Whether the run changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == TuningSpec::default()
    }
}

/// What happened to one setting of one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Outcome {
    /// What was tuned (`IRQ 36 virtio1-req.0`, `thread 15 ksoftirqd/1`,
    /// `net eth0 rx-0`, `cpufreq policy0`, `cpu1 state1 haltpoll`).
    pub target: String,
    /// Which setting (`smp_affinity_list`, `scheduling`, `affinity`,
    /// `rps_cpus`, `xps_cpus`, `scaling_governor`, `disable`).
    pub setting: String,
    /// The value rtlab wanted.
    pub new: String,
    /// What happened (and the old value when changed).
    #[serde(flatten)]
    pub status: KnobStatus,
    /// What the kernel shows afterwards, when that differs from the setting
    /// itself (an IRQ's `effective_affinity_list`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

impl Outcome {
    /// Whether the kernel refused it.
    pub fn refused(&self) -> bool {
        matches!(self.status, KnobStatus::Refused { .. })
    }

    /// One line for a table: target, setting, old -> new, status.
    pub fn line(&self) -> String {
        let what = match &self.status {
            KnobStatus::Set { old } => format!("{old} -> {}", self.new),
            KnobStatus::AlreadySet => format!("already {}", self.new),
            KnobStatus::NotOffered => "not offered by this kernel".into(),
            KnobStatus::Refused { reason } => format!("REFUSED: {reason}"),
        };
        let after = self
            .after
            .as_ref()
            .map(|a| format!(" ({a})"))
            .unwrap_or_default();
        format!("{:<34} {:<18} {what}{after}", self.target, self.setting)
    }
}

/// Why a tuning request could not be carried out at all.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// This machine lacks the facility (no cpufreq, no cpuidle).
    #[error("{0}")]
    Unavailable(String),
    /// The request names something that does not exist here.
    #[error("{message}")]
    Invalid {
        /// What is wrong.
        message: String,
        /// What would work.
        hint: String,
    },
    /// The journal could not be written: nothing was changed.
    #[error(transparent)]
    Journal(#[from] JournalError),
}

/// Which IRQs to move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IrqSelection {
    /// Every IRQ of `/proc/irq`.
    All,
    /// These numbers.
    Some(Vec<u32>),
}

impl IrqSelection {
    /// Parses `all` or IRQ numbers.
    pub fn parse(words: &[String]) -> Result<Self, String> {
        if words.is_empty() || (words.len() == 1 && words[0].eq_ignore_ascii_case("all")) {
            return Ok(IrqSelection::All);
        }
        words
            .iter()
            .map(|w| {
                w.parse::<u32>()
                    .map_err(|_| format!("`{w}` is not an IRQ number (or `all`)"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(IrqSelection::Some)
    }

    /// The IRQ numbers selected on this machine; unknown numbers are an error.
    pub fn resolve(&self, root: &SysRoot) -> Result<Vec<u32>, TuneError> {
        let present = crate::sys::irq::numbers(root);
        match self {
            IrqSelection::All => Ok(present),
            IrqSelection::Some(wanted) => {
                let missing: Vec<String> = wanted
                    .iter()
                    .filter(|n| !present.contains(n))
                    .map(u32::to_string)
                    .collect();
                if missing.is_empty() {
                    Ok(wanted.clone())
                } else {
                    Err(TuneError::Invalid {
                        message: format!("no IRQ {} on this machine", missing.join(", ")),
                        hint: "`rtlab irq` lists the IRQs".into(),
                    })
                }
            }
        }
    }
}

/// The device name of IRQ `n` (its `/proc/irq/N/` entry that is a directory,
/// as the kernel names the handlers there).
fn irq_label(root: &SysRoot, n: u32) -> String {
    let names: Vec<String> = root
        .list(&paths::irq_dir(n))
        .unwrap_or_default()
        .into_iter()
        .filter(|e| root.is_dir(&format!("{}/{e}", paths::irq_dir(n))))
        .collect();
    if names.is_empty() {
        format!("IRQ {n}")
    } else {
        format!("IRQ {n} {}", names.join(","))
    }
}

/// Sets the affinity of the selected IRQs to `cpus`. A refusal (managed,
/// per-CPU, or a hypervisor's IRQ) is reported and the others go on.
pub fn move_irqs(
    root: &SysRoot,
    journal: &mut Journal,
    cpus: &[usize],
    irqs: &[u32],
) -> Result<Vec<Outcome>, TuneError> {
    let mut out = Vec::new();
    for &n in irqs {
        out.push(set_irq_affinity(root, journal, n, cpus)?);
    }
    Ok(out)
}

/// Sets the affinity of IRQ `n` to `cpus` through the journal: the one
/// code path that moves an interrupt (`irq move`, `irq.affinity`, and the
/// partitions' noise knobs). A refusal is an outcome, not an error.
pub fn set_irq_affinity(
    root: &SysRoot,
    journal: &mut Journal,
    n: u32,
    cpus: &[usize],
) -> Result<Outcome, JournalError> {
    let list = cpulist::format(cpus);
    let status = set_status(journal, &paths::irq_affinity_list(n), &list, true)?;
    let after = root
        .read_opt(&paths::irq_effective_affinity_list(n))
        .map(|e| format!("effective {e}"));
    Ok(Outcome {
        target: irq_label(root, n),
        setting: "smp_affinity_list".into(),
        new: list,
        status,
        after,
    })
}

/// Which threads a `threads set`, `threads.sched` or `threads.affinity`
/// applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThreadSelector {
    /// One TID.
    Tid(i32),
    /// Every thread whose name matches this glob.
    Pattern(String),
}

impl ThreadSelector {
    /// A number is a TID, anything else a name pattern.
    pub fn parse(text: &str) -> Self {
        match text.parse() {
            Ok(tid) => ThreadSelector::Tid(tid),
            Err(_) => ThreadSelector::Pattern(text.to_string()),
        }
    }

    /// The threads it selects now.
    pub fn select(&self, all: &[threads::ThreadInfo]) -> Vec<threads::ThreadInfo> {
        all.iter()
            .filter(|t| match self {
                ThreadSelector::Tid(tid) => t.tid == *tid,
                ThreadSelector::Pattern(p) => threads::name_matches(p, &t.name),
            })
            .cloned()
            .collect()
    }
}

/// The refusal of a selector that selects no thread (`extra` says which
/// threads were not looked at).
fn no_thread(selector: &ThreadSelector, extra: &str) -> TuneError {
    TuneError::Invalid {
        message: match selector {
            ThreadSelector::Tid(t) => format!("no thread {t}{extra}"),
            ThreadSelector::Pattern(p) => format!("no thread name matches `{p}`{extra}"),
        },
        hint: "`rtlab threads` lists the threads; patterns are globs such as `ksoftirqd/*`".into(),
    }
}

fn sched_text(s: Sched) -> String {
    format!("{} {}", s.policy.name(), s.priority)
}

/// Gives the selected threads policy and priority `sched`. No thread
/// selected is an error (a typo in a pattern must not pass silently).
pub fn set_thread_sched(
    root: &SysRoot,
    journal: &mut Journal,
    selector: &ThreadSelector,
    sched: Sched,
) -> Result<Vec<Outcome>, TuneError> {
    let all = threads::list(root);
    let chosen = selector.select(&all);
    if chosen.is_empty() {
        return Err(no_thread(selector, ""));
    }
    let mut out = Vec::new();
    for t in chosen {
        let target = format!("thread {} {}", t.tid, t.name);
        let new = sched_text(sched);
        let status = match t.sched() {
            None => KnobStatus::Refused {
                reason: format!("{} threads are left alone", t.policy),
            },
            Some(old) if old == sched => KnobStatus::AlreadySet,
            Some(old) => {
                journal.record(&Change::Sched {
                    tid: t.tid,
                    start: t.start,
                    name: t.name.clone(),
                    old,
                    new: sched,
                })?;
                match root.set_task_sched(t.tid, sched) {
                    Ok(()) => KnobStatus::Set {
                        old: sched_text(old),
                    },
                    Err(e) => KnobStatus::Refused {
                        reason: match e.raw_os_error() {
                            Some(crate::sys::consts::ESRCH) => "it ended".into(),
                            Some(crate::sys::consts::EPERM) => format!(
                                "EPERM ({e}: not permitted, or a real-time policy in a cgroup \
                                 without RT runtime)"
                            ),
                            _ => e.to_string(),
                        },
                    },
                }
            }
        };
        out.push(Outcome {
            target,
            setting: "scheduling".into(),
            new,
            status,
            after: None,
        });
    }
    Ok(out)
}

/// Sets the CPUs of the selected threads to `cpus`. The threads of process
/// `own` (rtlab's) are never selected; no thread selected is an error. A
/// thread whose CPUs the kernel keeps fixed, or that refuses these CPUs, is
/// an outcome, and the others still move.
pub fn set_thread_affinity(
    root: &SysRoot,
    journal: &mut Journal,
    selector: &ThreadSelector,
    cpus: &[usize],
    own: i32,
) -> Result<Vec<Outcome>, TuneError> {
    let others: Vec<threads::ThreadInfo> = threads::list(root)
        .into_iter()
        .filter(|t| t.pid != own)
        .collect();
    let chosen = selector.select(&others);
    if chosen.is_empty() {
        return Err(no_thread(selector, " (other than rtlab's own)"));
    }
    let new = cpulist::format(cpus);
    let mut out = Vec::new();
    for t in chosen {
        let status = thread_cpus(root, journal, &t, cpus, &new)?;
        out.push(Outcome {
            target: format!("thread {} {}", t.tid, t.name),
            setting: "affinity".into(),
            new: new.clone(),
            status,
            after: None,
        });
    }
    Ok(out)
}

/// Gives thread `t` CPUs `cpus` (`new` in words) through the journal.
fn thread_cpus(
    root: &SysRoot,
    journal: &mut Journal,
    t: &threads::ThreadInfo,
    cpus: &[usize],
    new: &str,
) -> Result<KnobStatus, JournalError> {
    if t.affinity_fixed {
        return Ok(KnobStatus::Refused {
            reason: "the kernel keeps its CPUs fixed (PF_NO_SETAFFINITY: a per-CPU kernel thread)"
                .into(),
        });
    }
    let Ok(old) = cpulist::parse(&t.cpus_allowed) else {
        return Ok(KnobStatus::Refused {
            reason: "its CPUs could not be read: it ended".into(),
        });
    };
    if old == cpus {
        return Ok(KnobStatus::AlreadySet);
    }
    journal.record(&Change::Affinity {
        tid: t.tid,
        start: t.start,
        name: t.name.clone(),
        old: t.cpus_allowed.clone(),
        new: new.to_string(),
    })?;
    Ok(match root.set_task_affinity(t.tid, cpus) {
        Ok(()) => KnobStatus::Set {
            old: t.cpus_allowed.clone(),
        },
        Err(e) => KnobStatus::Refused {
            reason: match e.raw_os_error() {
                Some(crate::sys::consts::ESRCH) => "it ended".into(),
                Some(crate::sys::consts::EINVAL) => format!(
                    "EINVAL ({e}: none of these CPUs is allowed to it: outside its cpuset, \
                     or CPUs the kernel keeps fixed)"
                ),
                Some(crate::sys::consts::EPERM) => format!("EPERM ({e}: not permitted)"),
                _ => e.to_string(),
            },
        },
    })
}

/// Sets every packet-steering mask of network interface `dev` (each
/// receive queue's `rps_cpus`, each transmit queue's `xps_cpus`) to
/// `cpus`. No such interface is an error; a mask the kernel refuses is an
/// outcome, and the others are still set.
pub fn set_steering(
    root: &SysRoot,
    journal: &mut Journal,
    dev: &str,
    cpus: &[usize],
) -> Result<Vec<Outcome>, TuneError> {
    if !net::interfaces(root).iter().any(|d| d == dev) {
        return Err(TuneError::Invalid {
            message: format!("no network interface `{dev}`"),
            hint: "`ip link` lists the interfaces".into(),
        });
    }
    let files = net::steering_files(root, dev);
    if files.is_empty() {
        return Err(TuneError::Unavailable(format!(
            "{dev} has no packet-steering queue (rps_cpus, xps_cpus): a kernel without RPS"
        )));
    }
    let mask = cpulist::format_mask(cpus);
    let mut out = Vec::new();
    for f in files {
        let status = steering_status(root, journal, &f, &mask, cpus)?;
        out.push(Outcome {
            target: format!("net {dev} {}", f.queue),
            setting: f.knob.into(),
            new: mask.clone(),
            status,
            after: None,
        });
    }
    Ok(out)
}

/// Sets steering file `f` to `mask` (CPUs `cpus`) through the journal: a
/// mask that already selects these CPUs (the kernel pads it) is left.
fn steering_status(
    root: &SysRoot,
    journal: &mut Journal,
    f: &net::SteeringFile,
    mask: &str,
    cpus: &[usize],
) -> Result<KnobStatus, JournalError> {
    let refused = |e: &SysError| KnobStatus::Refused {
        reason: steering_refusal(f.knob, e),
    };
    match root.read_trim(&f.file) {
        Ok(now) if cpulist::parse_mask(&now).is_ok_and(|c| c == cpus) => {
            return Ok(KnobStatus::AlreadySet);
        }
        Ok(_) => {}
        Err(e) => return Ok(refused(&e)),
    }
    Ok(match set_status(journal, &f.file, mask, false)? {
        KnobStatus::NotOffered => refused(&SysError::NotFound(f.file.clone().into())),
        s => s,
    })
}

/// Why the kernel refused a steering mask, in words.
fn steering_refusal(knob: &str, e: &SysError) -> String {
    let absent = matches!(e, SysError::NotFound(_));
    match (absent, e.errno(), knob) {
        (true, _, "xps_cpus") => {
            "ENOENT (the device does not steer transmits: XPS needs several transmit queues)".into()
        }
        (true, _, _) => "ENOENT (not offered on this device)".into(),
        (_, Some(crate::sys::consts::EINVAL), "rps_cpus") => {
            "EINVAL (RPS steers to housekeeping CPUs only, and none of these is one: \
             isolcpus=, nohz_full=)"
                .into()
        }
        _ => knob::refusal_reason(e, false),
    }
}

/// Sets governor `governor` on the cpufreq policies covering `cpus` (all
/// when `None`).
pub fn set_governor(
    root: &SysRoot,
    journal: &mut Journal,
    governor: &str,
    cpus: Option<&[usize]>,
) -> Result<Vec<Outcome>, TuneError> {
    let policies = power::freq_policies(root);
    if policies.is_empty() {
        return Err(TuneError::Unavailable(format!(
            "no cpufreq: {}",
            power::no_cpufreq_reason(root)
        )));
    }
    let chosen: Vec<&power::FreqPolicy> = policies
        .iter()
        .filter(|p| cpus.is_none_or(|c| p.cpus.iter().any(|x| c.contains(x))))
        .collect();
    if chosen.is_empty() {
        return Err(TuneError::Invalid {
            message: "no cpufreq policy covers those CPUs".into(),
            hint: "`rtlab cpufreq` lists the policies and their CPUs".into(),
        });
    }
    if let Some(p) = chosen
        .iter()
        .find(|p| !p.available_governors.iter().any(|g| g == governor))
    {
        return Err(TuneError::Invalid {
            message: format!("governor `{governor}` is not available on {}", p.policy),
            hint: format!("available: {}", p.available_governors.join(", ")),
        });
    }
    let mut out = Vec::new();
    for p in chosen {
        let status = set_status(
            journal,
            &format!("{}/scaling_governor", p.dir()),
            governor,
            false,
        )?;
        out.push(Outcome {
            target: format!("cpufreq {} (CPUs {})", p.policy, cpulist::format(&p.cpus)),
            setting: "scaling_governor".into(),
            new: governor.into(),
            status,
            after: None,
        });
    }
    Ok(out)
}

/// Disables, on `cpus` (all online when `None`), every idle state whose exit
/// latency is above `max_latency_us`. States already disabled stay so;
/// shallower ones are not re-enabled.
pub fn limit_cstates(
    root: &SysRoot,
    journal: &mut Journal,
    max_latency_us: u64,
    cpus: Option<&[usize]>,
) -> Result<Vec<Outcome>, TuneError> {
    let online = crate::sys::online_cpus(root).unwrap_or_default();
    let cpus = cpus.map_or(online, <[usize]>::to_vec);
    let states = power::idle_states(root, &cpus);
    if states.is_empty() {
        return Err(TuneError::Unavailable(format!(
            "no cpuidle states on CPUs {} (no cpuidle driver: idle is the kernel's default \
             halt, which user space cannot limit except through /dev/cpu_dma_latency; a \
             driver needs {})",
            cpulist::format(&cpus),
            crate::sys::features::remedy::CPUIDLE
        )));
    }
    let mut out = Vec::new();
    for s in states.iter().filter(|s| s.latency_us > max_latency_us) {
        let status = set_status(journal, &s.disable_file(), "1", false)?;
        out.push(Outcome {
            target: format!("cpu{} state{} {}", s.cpu, s.index, s.name),
            setting: "disable".into(),
            new: "1".into(),
            status,
            after: Some(format!("exit latency {} us", s.latency_us)),
        });
    }
    Ok(out)
}

/// Applies the settings a run holds (`main`'s tuning keys) through the run's
/// journal. Returns every outcome, and the problems that stopped a setting
/// (each setting is independent: one failing does not stop the others).
pub fn apply(
    root: &SysRoot,
    journal: &mut Journal,
    plan: &TuningSpec,
) -> (Vec<Outcome>, Vec<String>) {
    let mut outcomes = Vec::new();
    let mut problems = Vec::new();
    let mut take = |what: &str, r: Result<Vec<Outcome>, TuneError>| match r {
        Ok(o) => outcomes.extend(o),
        Err(e) => problems.push(format!("{what}: {e}")),
    };
    if let Some((governor, cpus)) = &plan.governor {
        take(
            "cpufreq.governor",
            set_governor(root, journal, governor, cpus.as_deref()),
        );
    }
    if let Some((us, cpus)) = &plan.cstate_max_latency_us {
        take(
            "cstates.max_latency",
            limit_cstates(root, journal, *us, cpus.as_deref()),
        );
    }
    for (cpus, irqs) in &plan.irq_affinity {
        let selection = if irqs.is_empty() {
            IrqSelection::All
        } else {
            IrqSelection::Some(irqs.clone())
        };
        take(
            "irq.affinity",
            selection
                .resolve(root)
                .and_then(|list| move_irqs(root, journal, cpus, &list)),
        );
    }
    for (pattern, sched) in &plan.thread_sched {
        take(
            "threads.sched",
            set_thread_sched(
                root,
                journal,
                &ThreadSelector::Pattern(pattern.clone()),
                *sched,
            ),
        );
    }
    let own = std::process::id() as i32;
    for (selector, cpus) in &plan.thread_affinity {
        let selector = ThreadSelector::parse(selector);
        take(
            "threads.affinity",
            set_thread_affinity(root, journal, &selector, cpus, own),
        );
    }
    for (dev, cpus) in &plan.net_steering {
        take("net.steering", set_steering(root, journal, dev, cpus));
    }
    (outcomes, problems)
}

//! The per-CPU noise knobs that keep the kernel's own work off the `rt` CPUs,
//! after partrt and the kernel's "Reducing OS jitter due to per-cpu kthreads"
//! guide. Each is set only where this kernel offers it, each change goes
//! through the journal first, and each outcome is reported: set, already
//! so, not offered, or refused (with the kernel's reason).

use crate::cpulist;
use crate::sys::journal::{Journal, SetError};
use crate::sys::{SysError, SysRoot, paths};
use serde::Serialize;

/// What happened to one knob.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum KnobStatus {
    /// Changed from `old`.
    Set {
        /// Its value before.
        old: String,
    },
    /// It already had the wanted value.
    AlreadySet,
    /// This kernel does not offer it.
    NotOffered,
    /// The kernel refused the write.
    Refused {
        /// Why, in words.
        reason: String,
    },
}

/// One knob and its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KnobOutcome {
    /// The file, relative to the system root.
    pub path: String,
    /// Why rtlab sets it.
    pub purpose: &'static str,
    /// The value rtlab wanted.
    pub new: String,
    /// What happened.
    #[serde(flatten)]
    pub status: KnobStatus,
}

/// Explains a refused write the way an RT engineer needs to read it.
pub fn refusal_reason(err: &SysError, irq: bool) -> String {
    match err.errno() {
        Some(crate::sys::consts::EPERM) | Some(crate::sys::consts::EACCES) if irq => format!(
            "{} (the kernel does not let user space move this interrupt: a managed or \
             per-CPU IRQ, or a virtual machine whose hypervisor owns interrupt routing)",
            errno_name(err)
        ),
        Some(crate::sys::consts::EIO) if irq => {
            "EIO (a managed IRQ: its affinity is set by the kernel, boot with \
             isolcpus=managed_irq,... to keep it off isolated CPUs)"
                .into()
        }
        Some(crate::sys::consts::EACCES) | Some(crate::sys::consts::EPERM) => {
            format!("{} (read-only here)", errno_name(err))
        }
        _ => err.to_string(),
    }
}

/// The errno of `err` by name (`EPERM`).
pub fn errno_name(err: &SysError) -> &'static str {
    match err.errno() {
        Some(crate::sys::consts::EPERM) => "EPERM",
        Some(crate::sys::consts::EACCES) => "EACCES",
        Some(crate::sys::consts::EIO) => "EIO",
        Some(crate::sys::consts::EINVAL) => "EINVAL",
        Some(crate::sys::consts::EBUSY) => "EBUSY",
        _ => "error",
    }
}

/// Sets kernel file `path` to `new` through the journal and says what
/// happened; `irq` selects the IRQ wording of refusals. Fails only if the
/// journal cannot be written (and then nothing was changed).
pub fn set_status(
    journal: &mut Journal,
    path: &str,
    new: &str,
    irq: bool,
) -> Result<KnobStatus, crate::sys::journal::JournalError> {
    Ok(match journal.set(path, new) {
        Ok(Some(old)) => KnobStatus::Set { old },
        Ok(None) => KnobStatus::AlreadySet,
        Err(SetError::Kernel(SysError::NotFound(_))) => KnobStatus::NotOffered,
        Err(SetError::Kernel(e)) => KnobStatus::Refused {
            reason: refusal_reason(&e, irq),
        },
        Err(SetError::Journal(e)) => return Err(e),
    })
}

fn outcome(
    journal: &mut Journal,
    path: String,
    purpose: &'static str,
    new: String,
    irq: bool,
) -> Result<KnobOutcome, crate::sys::journal::JournalError> {
    let status = set_status(journal, &path, &new, irq)?;
    Ok(KnobOutcome {
        path,
        purpose,
        new,
        status,
    })
}

/// The IRQ numbers of `/proc/irq`.
pub fn irq_numbers(root: &SysRoot) -> Vec<u32> {
    let mut irqs: Vec<u32> = root
        .list(paths::IRQ_DIR)
        .unwrap_or_default()
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    irqs.sort_unstable();
    irqs
}

/// Sets every noise knob so that the kernel's housekeeping stays on `nrt`.
/// Stops early (returning what was done) when `stop` says so. Fails only if
/// the journal cannot be written, in which case the knob was not touched.
pub fn apply(
    journal: &mut Journal,
    root: &SysRoot,
    nrt: &[usize],
    stop: &dyn Fn() -> bool,
) -> Result<Vec<KnobOutcome>, crate::sys::journal::JournalError> {
    let mask = cpulist::format_mask(nrt);
    let list = cpulist::format(nrt);
    let mut out = Vec::new();
    let fixed: Vec<(&str, &'static str, String)> = vec![
        (
            paths::DEFAULT_SMP_AFFINITY,
            "IRQs registered from now on go to nrt",
            mask.clone(),
        ),
        (
            paths::WORKQUEUE_CPUMASK,
            "unbound workqueue workers (kworker/u*) run on nrt",
            mask.clone(),
        ),
        (
            paths::WRITEBACK_NUMA,
            "writeback workers not spread by NUMA node (older kernels)",
            "0".into(),
        ),
        (
            paths::WATCHDOG_CPUMASK,
            "soft/hard lockup watchdog timers only on nrt",
            list.clone(),
        ),
        (
            paths::TIMER_MIGRATION,
            "each CPU expires its own timers: rt does not pull timers of idle CPUs",
            "0".into(),
        ),
        (
            paths::STAT_INTERVAL,
            "vmstat per-CPU folding every 1000 s instead of every second (partrt)",
            "1000".into(),
        ),
    ];
    for (path, purpose, new) in fixed {
        if stop() {
            return Ok(out);
        }
        out.push(outcome(journal, path.into(), purpose, new, false)?);
    }
    // One file in each entry of a directory: per-workqueue masks (WQ_SYSFS
    // unbound workqueues such as writeback), machine-check polling per bank.
    let per_entry: [(&str, &str, &'static str, String); 2] = [
        (
            paths::WORKQUEUE_DIR,
            "cpumask",
            "this unbound workqueue's workers run on nrt",
            mask.clone(),
        ),
        (
            paths::MACHINECHECK_DIR,
            "check_interval",
            "no periodic machine-check polling on any CPU (partrt)",
            "0".into(),
        ),
    ];
    for (dir, file, purpose, new) in per_entry {
        for entry in root.list(dir).unwrap_or_default() {
            let path = format!("{dir}/{entry}/{file}");
            if root.exists(&path) {
                out.push(outcome(journal, path, purpose, new.clone(), false)?);
            }
        }
    }
    // Every IRQ: keep what it has on nrt, or give it all of nrt.
    for irq in irq_numbers(root) {
        if stop() {
            return Ok(out);
        }
        let path = paths::irq_affinity_list(irq);
        let Some(now) = root.read_opt(&path) else {
            continue;
        };
        let current = cpulist::parse(&now).unwrap_or_default();
        let kept: Vec<usize> = current
            .iter()
            .copied()
            .filter(|c| nrt.contains(c))
            .collect();
        let new = if kept.is_empty() { nrt.to_vec() } else { kept };
        out.push(outcome(
            journal,
            path,
            "this IRQ is handled on nrt",
            cpulist::format(&new),
            true,
        )?);
    }
    Ok(out)
}

/// Short lines for the report: one per knob, the refused IRQs folded into
/// one line.
pub fn summary_lines(knobs: &[KnobOutcome]) -> Vec<String> {
    let mut out = Vec::new();
    let mut refused_irqs: Vec<(String, String)> = Vec::new();
    let mut irqs_set = 0;
    let mut irqs_already = 0;
    for k in knobs {
        let irq = paths::irq_of_affinity_list(&k.path);
        if let Some(n) = irq {
            match &k.status {
                KnobStatus::Refused { reason } => {
                    refused_irqs.push((n.to_string(), reason.clone()))
                }
                KnobStatus::Set { .. } => irqs_set += 1,
                _ => irqs_already += 1,
            }
            continue;
        }
        let line = match &k.status {
            KnobStatus::Set { old } => format!("  set      /{} = {} (was {old})", k.path, k.new),
            KnobStatus::AlreadySet => format!("  already  /{} = {}", k.path, k.new),
            KnobStatus::NotOffered => {
                format!("  absent   /{} (not offered by this kernel)", k.path)
            }
            KnobStatus::Refused { reason } => format!("  REFUSED  /{}: {reason}", k.path),
        };
        out.push(line);
    }
    if irqs_set + irqs_already + refused_irqs.len() > 0 {
        out.push(format!(
            "  irqs     {irqs_set} moved to nrt, {irqs_already} already there, {} refused",
            refused_irqs.len()
        ));
    }
    let mut by_reason: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for (n, reason) in &refused_irqs {
        by_reason.entry(reason).or_default().push(n);
    }
    for (reason, numbers) in by_reason {
        out.push(format!("  REFUSED  IRQ {}: {reason}", numbers.join(",")));
    }
    out
}

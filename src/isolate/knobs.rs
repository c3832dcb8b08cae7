//! The per-CPU noise knobs that keep the kernel's own work off the `rt` CPUs,
//! after partrt and the kernel's "Reducing OS jitter due to per-cpu kthreads"
//! guide. Each is set only where this kernel offers it, each change goes
//! through the journal first, and each outcome is reported: set, already
//! so, not offered, or refused (with the kernel's reason).

use crate::cpulist;
use crate::sys::journal::Journal;
use crate::sys::{SysRoot, paths};
use crate::tune::knob::{KnobStatus, set_status};
use serde::Serialize;

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

fn outcome(
    journal: &mut Journal,
    path: String,
    purpose: &'static str,
    new: String,
) -> Result<KnobOutcome, crate::sys::journal::JournalError> {
    let status = set_status(journal, &path, &new, false)?;
    Ok(KnobOutcome {
        path,
        purpose,
        new,
        status,
    })
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
        out.push(outcome(journal, path.into(), purpose, new)?);
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
                out.push(outcome(journal, path, purpose, new.clone())?);
            }
        }
    }
    move_irqs(journal, root, nrt, stop, &mut out)?;
    Ok(out)
}

/// Every IRQ: keep what it has on nrt, or give it all of nrt.
fn move_irqs(
    journal: &mut Journal,
    root: &SysRoot,
    nrt: &[usize],
    stop: &dyn Fn() -> bool,
    out: &mut Vec<KnobOutcome>,
) -> Result<(), crate::sys::journal::JournalError> {
    for irq in crate::sys::irq::numbers(root) {
        if stop() {
            return Ok(());
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
        let moved = crate::tune::set_irq_affinity(root, journal, irq, &new)?;
        out.push(KnobOutcome {
            path,
            purpose: "this IRQ is handled on nrt",
            new: moved.new,
            status: moved.status,
        });
    }
    Ok(())
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

//! Applying a remedy through the journal, checking that the kernel did it,
//! and undoing it: every change is journalled before it is made (so a
//! SIGKILL is undone by the next run), and undone by writing the old value
//! back through the journal too (so that the journal, replayed newest
//! first, always ends on the value found before rtlab).

use super::remedies::{Action, Check, Proposal};
use crate::sys::SysRoot;
use crate::sys::journal::{Change, Journal};
use serde::{Deserialize, Serialize};

/// How to undo one change that was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "undo", rename_all = "snake_case")]
pub enum UndoStep {
    /// Write the old value back.
    Write {
        /// The file.
        file: String,
        /// Its value before.
        old: String,
        /// The value written.
        new: String,
    },
    /// Give the thread its CPUs back.
    Affinity {
        /// Thread id.
        tid: i32,
        /// Its start time.
        start: u64,
        /// Its name.
        name: String,
        /// Its CPU list before.
        old: String,
        /// The CPU list set.
        new: String,
    },
}

impl UndoStep {
    /// The change it undoes, as the journal records it.
    pub fn change(&self) -> Change {
        match self {
            UndoStep::Write { file, old, new } => Change::Write {
                path: file.clone(),
                old: old.clone(),
                new: new.clone(),
            },
            UndoStep::Affinity {
                tid,
                start,
                name,
                old,
                new,
            } => Change::Affinity {
                tid: *tid,
                start: *start,
                name: name.clone(),
                old: old.clone(),
                new: new.clone(),
            },
        }
    }
}

/// Applies `p`'s actions in order. On a refusal, what was done is undone
/// and the reason returned.
pub fn apply(root: &SysRoot, journal: &mut Journal, p: &Proposal) -> Result<Vec<UndoStep>, String> {
    let mut done = Vec::new();
    for a in &p.actions {
        match one(root, journal, a) {
            Ok(Some(step)) => done.push(step),
            Ok(None) => {}
            Err(why) => {
                let left = undo(root, journal, &done);
                return Err(if left.is_empty() {
                    why
                } else {
                    format!("{why}; and undoing the rest failed: {}", left.join("; "))
                });
            }
        }
    }
    Ok(done)
}

fn one(root: &SysRoot, journal: &mut Journal, a: &Action) -> Result<Option<UndoStep>, String> {
    match a {
        Action::Write { file, value } => write(root, journal, file, value),
        Action::Affinity {
            tid,
            start,
            name,
            cpus,
        } => set_affinity(
            root,
            journal,
            *tid,
            *start,
            name,
            &crate::cpulist::format(cpus),
        ),
    }
}

/// Writes a knob the one way rtlab writes knobs (`tune::knob`; an IRQ's
/// affinity through `tune::set_irq_affinity`), journalled.
fn write(
    root: &SysRoot,
    journal: &mut Journal,
    file: &str,
    value: &str,
) -> Result<Option<UndoStep>, String> {
    use crate::tune::knob::KnobStatus;
    let irq = crate::sys::paths::irq_of_affinity_list(file).and_then(|n| n.parse::<u32>().ok());
    let status = match irq {
        Some(n) => {
            let cpus = crate::cpulist::parse(value).map_err(|e| e.message)?;
            crate::tune::set_irq_affinity(root, journal, n, &cpus).map(|o| o.status)
        }
        None => crate::tune::knob::set_status(journal, file, value, false),
    }
    .map_err(|e| e.to_string())?;
    match status {
        KnobStatus::Set { old } => Ok(Some(UndoStep::Write {
            file: file.to_string(),
            old,
            new: value.to_string(),
        })),
        KnobStatus::AlreadySet => Ok(None),
        KnobStatus::NotOffered => Err(format!("{file}: this kernel does not offer it")),
        KnobStatus::Refused { reason } => Err(format!("{file} <- {value}: {reason}")),
    }
}

/// Sets the CPUs of the thread (`tid`, `start`) to `new`, journalled.
fn set_affinity(
    root: &SysRoot,
    journal: &mut Journal,
    tid: i32,
    start: u64,
    name: &str,
    new: &str,
) -> Result<Option<UndoStep>, String> {
    use crate::sys::tasks;
    let who = format!("thread {tid} ({name})");
    if tasks::start_time(root, tid) != Some(start) {
        return Err(format!("{who} has ended"));
    }
    let old =
        tasks::status_field(root, tid, "Cpus_allowed_list").ok_or(format!("{who} has ended"))?;
    if old == new {
        return Ok(None);
    }
    let cpus = crate::cpulist::parse(new).map_err(|e| e.message)?;
    journal
        .record(&Change::Affinity {
            tid,
            start,
            name: name.to_string(),
            old: old.clone(),
            new: new.to_string(),
        })
        .map_err(|e| e.to_string())?;
    root.set_task_affinity(tid, &cpus)
        .map_err(|e| format!("{who}: CPUs {new}: {e}"))?;
    Ok(Some(UndoStep::Affinity {
        tid,
        start,
        name: name.to_string(),
        old,
        new: new.to_string(),
    }))
}

/// Undoes `steps`, newest first; what could not be undone, in words.
pub fn undo(root: &SysRoot, journal: &mut Journal, steps: &[UndoStep]) -> Vec<String> {
    let mut failed = Vec::new();
    for s in steps.iter().rev() {
        let r = match s {
            UndoStep::Write { file, old, .. } => write(root, journal, file, old).map(|_| ()),
            UndoStep::Affinity {
                tid,
                start,
                name,
                old,
                ..
            } => match set_affinity(root, journal, *tid, *start, name, old) {
                // A thread that ended has nothing to put back.
                Err(e) if e.ends_with("has ended") => Ok(()),
                r => r.map(|_| ()),
            },
        };
        if let Err(e) = r {
            failed.push(e);
        }
    }
    failed
}

/// Whether the kernel did what `p` asked, from how often each IRQ it
/// moved fired on the measured CPUs during a run with it (`fired`, by IRQ):
/// an IRQ may take the mask and go on firing where it did (a managed or
/// per-CPU IRQ, an interrupt controller that delivers it there). Its
/// effective affinity is no proof: on x86 it changes only at the IRQ's
/// next interrupt. `Err` says where it still fired.
pub fn check(
    p: &Proposal,
    measured: &[usize],
    fired: &std::collections::BTreeMap<u32, u64>,
) -> Result<(), String> {
    for c in &p.checks {
        let Check::IrqOff { irq } = c;
        let n = fired.get(irq).copied().unwrap_or(0);
        if n > 0 {
            return Err(format!(
                "IRQ {irq} cannot move: the kernel took the new affinity, but the IRQ still fired {n} times on CPUs {} \
                 during the run with it (a managed or per-CPU IRQ, or an interrupt controller that delivers it there)",
                crate::cpulist::format(measured)
            ));
        }
    }
    Ok(())
}

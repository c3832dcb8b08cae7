//! The one way rtlab sets a kernel knob for a while: through the journal
//! first (so that it is put back however rtlab ends), then the write, then
//! what happened in the words an RT engineer reads. Used by the tuning
//! commands and keys and by the partitions' noise knobs alike.

use crate::sys::SysError;
use crate::sys::journal::{Journal, SetError};
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

//! The CPU's own counter, for loops that read the time as fast as they can
//! (the noise loop): the TSC on x86-64, the virtual counter (`CNTVCT_EL0`)
//! on arm64, CLOCK_MONOTONIC through the vDSO elsewhere or where the
//! counter cannot be trusted. Reading one is an instruction, no syscall.

/// Which counter a loop reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterKind {
    /// x86-64's time-stamp counter (`rdtsc`).
    Tsc,
    /// arm64's virtual counter (`CNTVCT_EL0`).
    ArmVirtual,
    /// CLOCK_MONOTONIC (vDSO), in ns.
    Monotonic,
}

/// A counter: one read, in its own ticks.
pub trait Ticks {
    /// The counter now.
    fn now() -> u64;
}

/// The TSC (x86-64).
pub struct Tsc;
/// The arm64 virtual counter.
pub struct ArmVirtual;
/// CLOCK_MONOTONIC, ns.
pub struct Monotonic;

impl Ticks for Tsc {
    #[inline(always)]
    fn now() -> u64 {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: rdtsc reads a register; every x86-64 CPU has it (the
            // caller chose this counter only where the kernel lists `tsc`).
            unsafe { core::arch::x86_64::_rdtsc() }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Monotonic::now()
        }
    }
}

impl Ticks for ArmVirtual {
    #[inline(always)]
    fn now() -> u64 {
        #[cfg(target_arch = "aarch64")]
        {
            let v: u64;
            // SAFETY: CNTVCT_EL0 is readable at EL0 on Linux (the kernel
            // enables it for the vDSO); the instruction touches no memory.
            unsafe { core::arch::asm!("mrs {}, cntvct_el0", out(reg) v, options(nomem, nostack)) };
            v
        }
        #[cfg(not(target_arch = "aarch64"))]
        {
            Monotonic::now()
        }
    }
}

impl Ticks for Monotonic {
    #[inline(always)]
    fn now() -> u64 {
        super::monotonic_ns()
    }
}

/// The arm64 counter's frequency (`CNTFRQ_EL0`, Hz); None elsewhere.
pub fn arm_counter_hz() -> Option<u64> {
    #[cfg(target_arch = "aarch64")]
    {
        let v: u64;
        // SAFETY: CNTFRQ_EL0 is readable at EL0; no memory is touched.
        unsafe { core::arch::asm!("mrs {}, cntfrq_el0", out(reg) v, options(nomem, nostack)) };
        Some(v)
    }
    #[cfg(not(target_arch = "aarch64"))]
    {
        None
    }
}

/// The counter `kind` read now (for calibration and tests; loops call
/// [`Ticks::now`] of one type).
pub fn read(kind: CounterKind) -> u64 {
    match kind {
        CounterKind::Tsc => Tsc::now(),
        CounterKind::ArmVirtual => ArmVirtual::now(),
        CounterKind::Monotonic => Monotonic::now(),
    }
}

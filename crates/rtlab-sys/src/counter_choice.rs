//! Which counter a noise loop reads on this machine, and its frequency:
//! the TSC where the kernel trusts it (constant and non-stop, and its own
//! clock source), calibrated against CLOCK_MONOTONIC; the arm64 virtual
//! counter at `CNTFRQ_EL0`; CLOCK_MONOTONIC otherwise. The reason is said.

use crate::SysRoot;
use crate::os::counter::{self, CounterKind};

/// The counter chosen, its frequency and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterFacts {
    /// Which counter.
    pub kind: CounterKind,
    /// Its frequency (Hz).
    pub hz: u64,
    /// Why this one (for the result and the report).
    pub why: String,
}

/// `/proc/cpuinfo`, for the TSC's flags.
pub const CPUINFO: &str = "proc/cpuinfo";
/// The kernel's clock source.
pub const CLOCKSOURCE: &str = "sys/devices/system/clocksource/clocksource0/current_clocksource";

/// Why the TSC cannot be used here (None: it can), from the flags of the
/// first CPU of `/proc/cpuinfo` and the kernel's clock source.
pub fn tsc_refusal(root: &SysRoot) -> Option<String> {
    let info = root.read_opt(CPUINFO).unwrap_or_default();
    let flags = info
        .lines()
        .find(|l| l.starts_with("flags"))
        .unwrap_or_default();
    let has = |f: &str| flags.split_whitespace().any(|w| w == f);
    for f in ["tsc", "constant_tsc", "nonstop_tsc"] {
        if !has(f) {
            return Some(format!("the CPU does not list `{f}` in /proc/cpuinfo"));
        }
    }
    let source = root.read_opt(CLOCKSOURCE).unwrap_or_default();
    if source.trim() != "tsc" {
        return Some(format!(
            "the kernel's clock source is `{}`, not the TSC (it may find the TSC unstable)",
            source.trim()
        ));
    }
    None
}

/// The counter for this machine (calibrating the TSC takes 20 ms).
pub fn choose(root: &SysRoot) -> CounterFacts {
    let monotonic = |why: String| CounterFacts {
        kind: CounterKind::Monotonic,
        hz: 1_000_000_000,
        why,
    };
    if cfg!(target_arch = "x86_64") {
        return match tsc_refusal(root) {
            Some(why) => monotonic(format!("CLOCK_MONOTONIC: {why}")),
            None => CounterFacts {
                kind: CounterKind::Tsc,
                hz: calibrate(CounterKind::Tsc, 20_000_000),
                why: "the TSC: constant, non-stop and the kernel's clock source".into(),
            },
        };
    }
    match counter::arm_counter_hz() {
        Some(hz) if hz > 0 => CounterFacts {
            kind: CounterKind::ArmVirtual,
            hz,
            why: "the arm64 virtual counter (CNTVCT_EL0) at CNTFRQ_EL0".into(),
        },
        Some(_) => monotonic("CLOCK_MONOTONIC: CNTFRQ_EL0 reads 0".into()),
        None => {
            monotonic("CLOCK_MONOTONIC: no CPU counter rtlab reads on this architecture".into())
        }
    }
}

/// The frequency of `kind` (Hz) against CLOCK_MONOTONIC over `over_ns`.
pub fn calibrate(kind: CounterKind, over_ns: u64) -> u64 {
    // The monotonic read bracketed by two counter reads: their middle, from
    // the tightest of a few tries. One preempted between its reads would
    // move the middle by half the preemption: 1 ms off is 2.5% of 20 ms,
    // and every gap a noise thread measures would be that much off.
    let pair = || {
        let mut best = (u64::MAX, 0, 0);
        for _ in 0..PAIR_TRIES {
            let a = counter::read(kind);
            let m = crate::os::monotonic_ns();
            let b = counter::read(kind);
            let width = b.wrapping_sub(a);
            if width < best.0 {
                best = (width, a / 2 + b / 2, m);
            }
        }
        (best.1, best.2)
    };
    let (c0, m0) = pair();
    std::thread::sleep(std::time::Duration::from_nanos(over_ns));
    let (c1, m1) = pair();
    rate((c0, m0), (c1, m1))
}

/// How many bracketed reads a calibration end takes its tightest of.
const PAIR_TRIES: usize = 16;

/// The counter's rate (Hz) between two (counter, CLOCK_MONOTONIC ns) pairs.
fn rate(from: (u64, u64), to: (u64, u64)) -> u64 {
    let ns = to.1.saturating_sub(from.1).max(1) as u128;
    (to.0.saturating_sub(from.0) as u128 * 1_000_000_000 / ns).min(u64::MAX as u128) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tsc_needs_its_flags_and_the_kernels_trust() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::at(dir.path());
        let write = |files: &[(&str, &str)]| crate::fake::write_tree(dir.path(), files);
        write(&[
            (
                CPUINFO,
                "processor\t: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc\n",
            ),
            (CLOCKSOURCE, "tsc\n"),
        ]);
        assert_eq!(tsc_refusal(&root), None);
        write(&[(CLOCKSOURCE, "kvm-clock\n")]);
        assert!(tsc_refusal(&root).unwrap().contains("`kvm-clock`"));
        write(&[(CPUINFO, "flags\t\t: fpu tsc constant_tsc\n")]);
        assert!(tsc_refusal(&root).unwrap().contains("nonstop_tsc"));
    }

    #[test]
    fn the_rate_is_ticks_over_time() {
        assert_eq!(
            rate((1_000, 5), (2_597_001_000, 1_000_000_005)),
            2_597_000_000
        );
        assert_eq!(rate((0, 0), (19_200_000, 1_000_000_000)), 19_200_000);
        // No time passed, or a counter that went back: no panic.
        assert_eq!(rate((10, 7), (20, 7)), 10_000_000_000);
        assert_eq!(rate((20, 0), (10, 1_000)), 0);
        // A calibration runs (its figure depends on the machine's timing:
        // the TSC's is checked in use, against CLOCK_MONOTONIC, by the
        // noise tests).
        let _ = calibrate(CounterKind::Monotonic, 1_000_000);
    }
}

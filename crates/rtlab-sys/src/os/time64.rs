use std::sync::atomic::{AtomicBool, Ordering};

/// `__NR_clock_nanosleep_time64`: the same number on every 32-bit
/// architecture (the unified y2038 syscall table).
const SYS_CLOCK_NANOSLEEP_TIME64: libc::c_long = 407;
static NO_TIME64: AtomicBool = AtomicBool::new(false);

#[repr(C)]
struct KernelTimespec {
    tv_sec: i64,
    tv_nsec: i64,
}

pub(super) fn sleep_until_ns(deadline_ns: u64) -> i32 {
    if !NO_TIME64.load(Ordering::Relaxed) {
        let (tv_sec, tv_nsec) = super::split_ns(deadline_ns);
        let ts = KernelTimespec { tv_sec, tv_nsec };
        // SAFETY: `ts` is a valid __kernel_timespec that outlives the
        // call; no remainder is asked for (absolute sleep).
        let ret = unsafe {
            libc::syscall(
                SYS_CLOCK_NANOSLEEP_TIME64,
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts as *const KernelTimespec,
                std::ptr::null_mut::<KernelTimespec>(),
            )
        };
        let err = if ret == 0 { 0 } else { super::errno() };
        if err != libc::ENOSYS {
            return err;
        }
        NO_TIME64.store(true, Ordering::Relaxed);
    }
    let (tv_sec, tv_nsec) = match super::split_ns_32(deadline_ns) {
        Ok(t) => t,
        Err(e) => return e,
    };
    let ts = libc::timespec {
        tv_sec: tv_sec as _,
        tv_nsec: tv_nsec as libc::c_long,
    };
    // SAFETY: `ts` is a valid timespec that outlives the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_clock_nanosleep,
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts as *const libc::timespec,
            std::ptr::null_mut::<libc::timespec>(),
        )
    };
    if ret == 0 { 0 } else { super::errno() }
}

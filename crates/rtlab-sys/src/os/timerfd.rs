//! Periodic timerfds: an interrupt source of known times on a chosen CPU
//! (the noise attribution's tests inject them).

/// A periodic CLOCK_MONOTONIC timerfd: first expiry at `first_ns`
/// (absolute), then every `every_ns`. The kernel re-arms its timer in the
/// interrupt, on the CPU where it was armed (a known interrupt source for
/// tests of the noise attribution).
pub fn periodic_timerfd(first_ns: u64, every_ns: u64) -> std::io::Result<std::os::fd::OwnedFd> {
    use rustix::time::{
        Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, timerfd_create,
        timerfd_settime,
    };
    let ts = |ns: u64| rustix::time::Timespec {
        tv_sec: (ns / 1_000_000_000) as _,
        tv_nsec: (ns % 1_000_000_000) as _,
    };
    let fd = timerfd_create(TimerfdClockId::Monotonic, TimerfdFlags::CLOEXEC)?;
    let spec = Itimerspec {
        it_interval: ts(every_ns),
        it_value: ts(first_ns),
    };
    timerfd_settime(&fd, TimerfdTimerFlags::ABSTIME, &spec)?;
    Ok(fd)
}

/// Waits for a timerfd's next expiries: how many passed.
pub fn timerfd_wait(fd: &std::os::fd::OwnedFd) -> std::io::Result<u64> {
    let mut buf = [0u8; 8];
    let n = rustix::io::read(fd, &mut buf)?;
    if n != 8 {
        return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
    }
    Ok(u64::from_ne_bytes(buf))
}

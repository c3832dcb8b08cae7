//! The syscall layer: the only module of rtlab with `unsafe` code.
//!
//! Thin, checked wrappers for what std does not offer: clocks and absolute
//! sleeps, CPU affinity, scheduling policies, memory locking, thread signals,
//! process groups and the per-child setup done between fork and exec.
//! `rustix` serves every call it has (safe, portable across glibc and musl,
//! 32- and 64-bit `time_t`); raw `libc` is left only for its gaps
//! (`sched_setscheduler`, signal dispositions and masks, `pthread_kill`).
//! Every wrapper returns `io::Error`; none panics.

use std::io;
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::process::Command;

pub use rtlab_core::sched::{Policy, Sched};

fn policy_to_libc(policy: Policy) -> libc::c_int {
    match policy {
        Policy::Other => libc::SCHED_OTHER,
        Policy::Fifo => libc::SCHED_FIFO,
        Policy::Rr => libc::SCHED_RR,
        Policy::Batch => libc::SCHED_BATCH,
        Policy::Idle => libc::SCHED_IDLE,
    }
}

fn policy_from_libc(raw: libc::c_int) -> Option<Policy> {
    // SCHED_RESET_ON_FORK may be or-ed into the value.
    match raw & !libc::SCHED_RESET_ON_FORK {
        libc::SCHED_OTHER => Some(Policy::Other),
        libc::SCHED_FIFO => Some(Policy::Fifo),
        libc::SCHED_RR => Some(Policy::Rr),
        libc::SCHED_BATCH => Some(Policy::Batch),
        libc::SCHED_IDLE => Some(Policy::Idle),
        _ => None,
    }
}

fn last_error() -> io::Error {
    io::Error::last_os_error()
}

/// The calling thread's errno (no allocation). Used by the syscalls made
/// through the C library's `syscall()` (32-bit targets, other
/// architectures).
#[cfg_attr(any(target_arch = "x86_64", target_arch = "aarch64"), allow(dead_code))]
fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret == -1 { Err(last_error()) } else { Ok(()) }
}

/// Where the C library functions a timer thread calls in its loop lie
/// (in the binary itself when it is linked statically): their code is made
/// resident before the threads start (see
/// [`crate::memory::release_startup_pages`]). On x86_64 and aarch64 the
/// clock is read through the vDSO, which the kernel maps apart from the
/// binary; the C library's `clock_gettime` stays listed for the others.
pub fn hot_library_code() -> Vec<usize> {
    vec![
        libc::clock_gettime as *const () as usize,
        libc::syscall as *const () as usize,
        libc::getrusage as *const () as usize,
        libc::sched_getcpu as *const () as usize,
        libc::write as *const () as usize,
        libc::memmove as *const () as usize,
        libc::memcpy as *const () as usize,
        errno as fn() -> i32 as usize,
        current_cpu as fn() -> Option<usize> as usize,
        thread_usage as fn() -> Option<ThreadUsage> as usize,
        write_once as fn(&std::fs::File, &[u8]) -> io::Result<usize> as usize,
    ]
}

/// Nanoseconds on CLOCK_MONOTONIC (through the vDSO: no syscall).
#[inline(always)]
pub fn monotonic_ns() -> u64 {
    #[cfg(all(
        target_pointer_width = "64",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    {
        // The kernel's vDSO function itself, called directly: the C
        // library's clock_gettime is a wrapper around the same call (musl's
        // adds its error handling; without a vDSO, as under valgrind, it
        // took 24 instructions a read to glibc's 10). Without a vDSO, the
        // syscall instruction.
        let ts = vdso_clock::monotonic();
        (ts.tv_sec as u64)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(ts.tv_nsec as u64)
    }
    #[cfg(all(
        target_pointer_width = "64",
        not(any(target_arch = "x86_64", target_arch = "aarch64"))
    ))]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a writable timespec; CLOCK_MONOTONIC always exists.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        (ts.tv_sec as u64)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(ts.tv_nsec as u64)
    }
    #[cfg(not(target_pointer_width = "64"))]
    {
        // rustix asks for the 64-bit time form (clock_gettime64).
        let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
        (ts.tv_sec as u64)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(ts.tv_nsec as u64)
    }
}

/// Looks up the vDSO's clock function, which [`monotonic_ns`] calls from
/// then on (before, it takes the syscall): done before the timer threads
/// are released, by the thread that starts them. Whether the vDSO's
/// function is used (false: the syscall, or the C library's function on
/// other architectures).
pub fn prepare_clock() -> bool {
    #[cfg(all(
        target_pointer_width = "64",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    {
        vdso_clock::prepare()
    }
    #[cfg(not(all(
        target_pointer_width = "64",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )))]
    {
        false
    }
}

/// CLOCK_MONOTONIC through the kernel's vDSO function, found once in the
/// vDSO image the kernel maps into every process (`AT_SYSINFO_EHDR`), as
/// the kernel's own `tools/testing/selftests/vDSO/parse_vdso.c` finds it;
/// the `clock_gettime` syscall where there is none.
#[cfg(all(
    target_pointer_width = "64",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod vdso_clock;

pub mod counter;
pub mod timerfd;

/// The calling thread's CPU time (ns, CLOCK_THREAD_CPUTIME_ID): what a
/// piece of work cost the CPU, not the time it waited while preempted.
pub fn thread_cpu_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// Sleeps until the absolute CLOCK_MONOTONIC time `deadline_ns`.
/// Returns 0 on wake-up at the deadline, or the error number (EINTR when a
/// signal handler interrupted the sleep). Allocation-free: for the hot loop.
#[inline(always)]
pub fn sleep_until_ns(deadline_ns: u64) -> i32 {
    #[cfg(target_pointer_width = "32")]
    {
        time64::sleep_until_ns(deadline_ns)
    }
    #[cfg(not(target_pointer_width = "32"))]
    {
        // The syscall itself, as the kernel has it: the C library's
        // clock_nanosleep is a cancellation point that costs about 45
        // instructions a sample around the syscall (callgrind).
        let (tv_sec, tv_nsec) = split_ns(deadline_ns);
        let ts = libc::timespec {
            tv_sec: tv_sec as _,
            tv_nsec: tv_nsec as _,
        };
        raw_sleep(&ts)
    }
}

/// clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, ts, NULL) as the
/// syscall instruction itself on x86_64 and aarch64 (the C library's
/// variadic `syscall()` costs another 20 instructions a sample); returns 0
/// or the error number.
#[cfg(not(target_pointer_width = "32"))]
#[inline(always)]
fn raw_sleep(ts: &libc::timespec) -> i32 {
    #[cfg(target_arch = "x86_64")]
    {
        let ret: isize;
        // SAFETY: the x86_64 syscall convention: number in rax, arguments
        // in rdi, rsi, rdx, r10; the kernel clobbers rcx and r11. `ts` is a
        // valid timespec the kernel only reads; no remainder is asked for.
        unsafe {
            std::arch::asm!(
                "syscall",
                inlateout("rax") libc::SYS_clock_nanosleep as isize => ret,
                in("rdi") libc::CLOCK_MONOTONIC as isize,
                in("rsi") libc::TIMER_ABSTIME as isize,
                in("rdx") ts as *const libc::timespec,
                in("r10") 0usize,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        }
        if ret < 0 { -ret as i32 } else { 0 }
    }
    #[cfg(target_arch = "aarch64")]
    {
        let ret: isize;
        // SAFETY: the aarch64 syscall convention: number in x8, arguments
        // in x0..x3, result in x0. `ts` is a valid timespec the kernel only
        // reads; no remainder is asked for.
        unsafe {
            std::arch::asm!(
                "svc 0",
                in("x8") libc::SYS_clock_nanosleep as isize,
                inlateout("x0") libc::CLOCK_MONOTONIC as isize => ret,
                in("x1") libc::TIMER_ABSTIME as isize,
                in("x2") ts as *const libc::timespec,
                in("x3") 0usize,
                options(nostack),
            );
        }
        if ret < 0 { -ret as i32 } else { 0 }
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        // SAFETY: `ts` is a valid timespec that outlives the call; no
        // remainder is asked for (absolute sleep).
        let ret = unsafe {
            libc::syscall(
                libc::SYS_clock_nanosleep,
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                ts as *const libc::timespec,
                std::ptr::null_mut::<libc::timespec>(),
            )
        };
        if ret == 0 { 0 } else { errno() }
    }
}

/// Nanoseconds as (seconds, nanoseconds), seconds 64-bit: exact past 2038.
///
/// ```
/// // 2040-01-01T00:00:00Z and a half: past 32-bit time_t.
/// let ns = 2_208_988_800u64 * 1_000_000_000 + 500_000_000;
/// assert_eq!(rtlab_sys::os::split_ns(ns), (2_208_988_800, 500_000_000));
/// assert_eq!(rtlab_sys::os::split_ns_32(ns), Err(libc::EOVERFLOW));
/// ```
#[inline(always)]
pub fn split_ns(ns: u64) -> (i64, i64) {
    ((ns / 1_000_000_000) as i64, (ns % 1_000_000_000) as i64)
}

/// The 32-bit time (`time_t` 32-bit: armv7 glibc) form of a deadline, or
/// EOVERFLOW when its seconds do not fit: a deadline is never wrapped.
pub fn split_ns_32(ns: u64) -> Result<(i32, i32), i32> {
    let (s, n) = split_ns(ns);
    Ok((i32::try_from(s).map_err(|_| libc::EOVERFLOW)?, n as i32))
}

/// 32-bit targets: the 64-bit time syscall (`clock_nanosleep_time64`,
/// Linux 5.1), whatever the C library's `time_t`; on an older kernel (the
/// article's 4.19) or where a filter refuses it (ENOSYS, once), the 32-bit
/// syscall with the deadline checked to fit. No allocation, no lock.
#[cfg(target_pointer_width = "32")]
mod time64;

/// What the kernel counts for the calling thread (`getrusage(RUSAGE_THREAD)`):
/// page faults and context switches so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ThreadUsage {
    /// Page faults served without I/O.
    pub minor_faults: u64,
    /// Page faults that read from a file or swap.
    pub major_faults: u64,
    /// Times it gave the CPU up (a sleep, a lock).
    pub voluntary_switches: u64,
    /// Times it was taken off the CPU (preempted, or its slice ended).
    pub involuntary_switches: u64,
}

impl ThreadUsage {
    /// What was counted between `earlier` and `self`.
    pub fn since(&self, earlier: &ThreadUsage) -> ThreadUsage {
        ThreadUsage {
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
            major_faults: self.major_faults.saturating_sub(earlier.major_faults),
            voluntary_switches: self
                .voluntary_switches
                .saturating_sub(earlier.voluntary_switches),
            involuntary_switches: self
                .involuntary_switches
                .saturating_sub(earlier.involuntary_switches),
        }
    }
}

/// The calling thread's [`ThreadUsage`] (None where the kernel refuses it).
pub fn thread_usage() -> Option<ThreadUsage> {
    // RUSAGE_THREAD: Linux 2.6.26.
    let ru = getrusage(libc::RUSAGE_THREAD)?;
    let n = |v: libc::c_long| u64::try_from(v).unwrap_or(0);
    Some(ThreadUsage {
        minor_faults: n(ru.ru_minflt),
        major_faults: n(ru.ru_majflt),
        voluntary_switches: n(ru.ru_nvcsw),
        involuntary_switches: n(ru.ru_nivcsw),
    })
}

/// `getrusage(who)`, None when it fails.
fn getrusage(who: libc::c_int) -> Option<libc::rusage> {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `ru` is a valid, writable rusage; getrusage fills it for
    // `who` or fails without writing.
    let rc = unsafe { libc::getrusage(who, ru.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: zero-initialised, and the kernel filled it on success.
    Some(unsafe { ru.assume_init() })
}

/// What the kernel counted for this whole process, its ended threads
/// included (`getrusage(RUSAGE_SELF)`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessUsage {
    /// Times its threads gave the CPU up.
    pub voluntary_switches: u64,
    /// Times its threads were taken off the CPU.
    pub involuntary_switches: u64,
    /// 512-byte blocks read from storage.
    pub blocks_in: u64,
    /// 512-byte blocks written to storage.
    pub blocks_out: u64,
    /// CPU time, user and system (µs).
    pub cpu_us: u64,
}

/// This process's [`ProcessUsage`].
pub fn process_usage() -> Option<ProcessUsage> {
    let ru = getrusage(libc::RUSAGE_SELF)?;
    let n = |v: libc::c_long| u64::try_from(v).unwrap_or(0);
    let us =
        |t: libc::timeval| n(t.tv_sec as libc::c_long) * 1_000_000 + n(t.tv_usec as libc::c_long);
    Some(ProcessUsage {
        voluntary_switches: n(ru.ru_nvcsw),
        involuntary_switches: n(ru.ru_nivcsw),
        blocks_in: n(ru.ru_inblock),
        blocks_out: n(ru.ru_oublock),
        cpu_us: us(ru.ru_utime) + us(ru.ru_stime),
    })
}

/// The calling thread's kernel thread id.
pub fn gettid() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

/// The process id.
pub fn getpid() -> i32 {
    std::process::id() as i32
}

/// This process's own process group (never one to kill: the user's shell
/// pipeline may share it).
pub fn own_process_group() -> i32 {
    rustix::process::getpgrp().as_raw_nonzero().get()
}

/// USER_HZ: the ticks per second of `/proc/stat`'s counters.
pub fn clock_ticks_per_second() -> u64 {
    rustix::param::clock_ticks_per_second()
}

/// The effective user id.
pub fn geteuid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The CPU the calling thread last ran on.
pub fn current_cpu() -> Option<usize> {
    Some(rustix::thread::sched_getcpu())
}

/// A thread id as rustix takes it: `None` for 0 (the calling thread).
fn pid_of(tid: i32) -> Option<rustix::process::Pid> {
    rustix::process::Pid::from_raw(tid)
}

fn cpu_set_of(cpus: &[usize]) -> io::Result<rustix::thread::CpuSet> {
    let mut set = rustix::thread::CpuSet::new();
    let capacity = rustix::thread::CpuSet::MAX_CPU;
    for &cpu in cpus {
        if cpu >= capacity {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {cpu} is beyond the largest CPU number supported ({capacity})"),
            ));
        }
        set.set(cpu);
    }
    Ok(set)
}

/// Pins thread `tid` (0 = the calling thread) to `cpus`.
pub fn set_affinity(tid: i32, cpus: &[usize]) -> io::Result<()> {
    let set = cpu_set_of(cpus)?;
    Ok(rustix::thread::sched_setaffinity(pid_of(tid), &set)?)
}

/// Gives the memory the C library's allocator holds freed back to the
/// kernel: glibc keeps it in its arenas (a parse of the kernel's BTF, tens
/// of MB, would stay resident); musl's allocator unmaps large blocks as
/// they are freed.
pub fn trim_heap() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim takes no pointer; it walks only the allocator's
    // own free lists, under the allocator's own locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The CPUs thread `tid` (0 = the calling thread) may run on.
pub fn get_affinity(tid: i32) -> io::Result<Vec<usize>> {
    let set = rustix::thread::sched_getaffinity(pid_of(tid))?;
    Ok((0..rustix::thread::CpuSet::MAX_CPU)
        .filter(|&cpu| set.is_set(cpu))
        .collect())
}

/// A `sched_param` holding `priority`. Built from a zeroed value because its
/// other fields differ between C libraries (musl has SCHED_SPORADIC ones).
fn sched_param(priority: i32) -> libc::sched_param {
    // SAFETY: sched_param is a plain C struct of integers and timespecs, for
    // which all-zero is a valid value.
    let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
    param.sched_priority = priority;
    param
}

/// Sets the policy and priority (or nice value) of thread `tid` (0 = caller).
pub fn set_sched(tid: i32, sched: Sched) -> io::Result<()> {
    let prio = if sched.policy.is_realtime() {
        sched.priority
    } else {
        0
    };
    let param = sched_param(prio);
    // SAFETY: `param` is a valid sched_param that outlives the call.
    let set = check(unsafe { raw_sched_setscheduler(tid, policy_to_libc(sched.policy), &param) });
    if let Err(e) = set
        && !already_other(&e, sched.policy, tid)
    {
        return Err(e);
    }
    if !sched.policy.is_realtime() {
        // PRIO_PROCESS with a thread id sets that thread's nice value on Linux.
        rustix::process::setpriority_process(pid_of(tid), sched.priority)?;
    }
    Ok(())
}

/// sched_setscheduler(2) as the kernel has it: on thread `tid` (0 = the
/// caller). The raw syscall, not libc's function: musl's is a stub that
/// returns ENOSYS (POSIX means the whole process, Linux one thread), so a
/// static musl build could set no policy at all. Async-signal-safe (no
/// allocation): usable between fork and exec.
///
/// # Safety
/// `param` must point to a valid `sched_param`.
unsafe fn raw_sched_setscheduler(
    tid: i32,
    policy: libc::c_int,
    param: *const libc::sched_param,
) -> libc::c_int {
    // SAFETY: the caller passes a valid sched_param; the kernel only reads it.
    unsafe { libc::syscall(libc::SYS_sched_setscheduler, tid, policy, param) as libc::c_int }
}

/// Whether a refused SCHED_OTHER request needs nothing: the syscall is
/// missing here (ENOSYS: a seccomp filter, an emulator) and the thread is
/// already SCHED_OTHER (or that cannot be asked either: threads start as
/// their process, and a process under such a filter cannot have been given
/// another policy by it). The nice value is set apart.
fn already_other(e: &io::Error, policy: Policy, tid: i32) -> bool {
    if e.raw_os_error() != Some(libc::ENOSYS) || policy != Policy::Other {
        return false;
    }
    // SAFETY: sched_getscheduler takes a thread id only.
    let now = unsafe { libc::syscall(libc::SYS_sched_getscheduler, tid) } as libc::c_int;
    now == -1 || now == libc::SCHED_OTHER
}

/// The policy and priority (or nice value) of thread `tid` (0 = caller).
pub fn get_sched(tid: i32) -> io::Result<Sched> {
    // SAFETY: sched_getscheduler takes a thread id only; the raw syscall
    // (musl's libc function is a stub that returns ENOSYS) returns the
    // policy, or -1 with errno set.
    let raw = unsafe { libc::syscall(libc::SYS_sched_getscheduler, tid) } as libc::c_int;
    if raw == -1 {
        return Err(last_error());
    }
    let policy = policy_from_libc(raw).unwrap_or(Policy::Other);
    let mut param = sched_param(0);
    // SAFETY: `param` is a writable sched_param that outlives the call (the
    // raw syscall: musl's sched_getparam is a stub).
    check(unsafe { libc::syscall(libc::SYS_sched_getparam, tid, &mut param) } as libc::c_int)?;
    let priority = if policy.is_realtime() {
        param.sched_priority
    } else {
        // rustix tells an error from a nice value of -1 (which getpriority
        // returns either way).
        rustix::process::getpriority_process(pid_of(tid))?
    };
    Ok(Sched { policy, priority })
}

/// The kernel's `struct sched_attr` (its first version, 48 bytes: what
/// every kernel since 3.14 takes).
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// SCHED_DEADLINE's number.
const SCHED_DEADLINE: u32 = 6;

/// Puts thread `tid` (0 = the caller) under SCHED_DEADLINE with `dl`.
pub fn set_deadline(tid: i32, dl: rtlab_core::sched::Deadline) -> io::Result<()> {
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        policy: SCHED_DEADLINE,
        runtime: dl.runtime_ns,
        deadline: dl.deadline_ns,
        period: dl.period_ns,
        ..SchedAttr::default()
    };
    // SAFETY: `attr` is a valid sched_attr of the size it states, which
    // outlives the call; the kernel only reads it.
    check(
        unsafe { libc::syscall(libc::SYS_sched_setattr, tid, &attr as *const SchedAttr, 0) }
            as libc::c_int,
    )
}

/// Thread `tid`'s SCHED_DEADLINE reservation, None when it has another
/// policy.
pub fn get_deadline(tid: i32) -> io::Result<Option<rtlab_core::sched::Deadline>> {
    let mut attr = SchedAttr::default();
    let size = std::mem::size_of::<SchedAttr>() as u32;
    // SAFETY: `attr` is a writable sched_attr of `size` bytes that outlives
    // the call; the kernel writes at most `size` bytes.
    check(unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid,
            &mut attr as *mut SchedAttr,
            size,
            0,
        )
    } as libc::c_int)?;
    Ok(
        (attr.policy == SCHED_DEADLINE).then_some(rtlab_core::sched::Deadline {
            runtime_ns: attr.runtime,
            deadline_ns: attr.deadline,
            period_ns: attr.period,
        }),
    )
}

/// The RLIMIT_RTPRIO soft limit (the highest RT priority an unprivileged
/// process may take).
pub fn rtprio_limit() -> u64 {
    // `None` is RLIM_INFINITY.
    rustix::process::getrlimit(rustix::process::Resource::Rtprio)
        .current
        .unwrap_or(u64::MAX)
}

/// `mlockall(MCL_CURRENT | MCL_FUTURE)`, with `MCL_ONFAULT` when asked
/// (see [`crate::memory::lock_all_memory`]).
pub(crate) fn mlockall(on_fault: bool) -> io::Result<()> {
    use rustix::mm::MlockAllFlags;
    let mut flags = MlockAllFlags::CURRENT | MlockAllFlags::FUTURE;
    if on_fault {
        flags |= MlockAllFlags::ONFAULT;
    }
    Ok(rustix::mm::mlockall(flags)?)
}

/// Drops the page table entries of the `parts` of a never-written private
/// mapping of the executable (`madvise(MADV_DONTNEED)`): those pages are
/// read from the file again when touched.
pub(crate) fn drop_clean_pages(
    m: &crate::memory::CleanExeMapping,
    parts: &[(usize, usize)],
) -> io::Result<()> {
    let whole = m.start as *mut core::ffi::c_void;
    let end = m.start + m.len;
    // SAFETY: `CleanExeMapping` is only made from this process's own memory
    // map, for a private mapping of its executable with no write permission
    // and no anonymous (written) page; every part is clamped inside it.
    // Unlocking it and dropping its entries discards no data: a later
    // access faults the same bytes in from the file, so no reference into
    // it is invalidated. Locking it again on fault only changes when its
    // pages are pinned.
    unsafe {
        if m.lock_on_fault {
            rustix::mm::munlock(whole, m.len)?;
        }
        let mut dropped = Ok(());
        for &(from, to) in parts {
            let (from, to) = (from.max(m.start), to.min(end));
            if from < to {
                let ptr = from as *mut core::ffi::c_void;
                let r = rustix::mm::madvise(ptr, to - from, rustix::mm::Advice::LinuxDontNeed);
                dropped = dropped.and(r);
            }
        }
        if m.lock_on_fault {
            rustix::mm::mlock_with(whole, m.len, rustix::mm::MlockFlags::ONFAULT)?;
        }
        dropped?;
    }
    Ok(())
}

/// Reads one byte of every page of `range` (within `m`), so that the
/// kernel maps those pages now rather than at the first use.
pub(crate) fn touch_pages(m: &crate::memory::CleanExeMapping, range: (usize, usize)) {
    let end = range.1.min(m.start + m.len);
    let mut addr = range.0.max(m.start);
    while addr < end {
        // SAFETY: `addr` lies inside `m`, a readable private mapping of the
        // executable (checked by `CleanExeMapping`'s maker) that stays
        // mapped for the life of the process; reading a byte of code has no
        // side effect.
        let _ = unsafe { std::ptr::read_volatile(addr as *const u8) };
        addr += crate::memory::PAGE;
    }
}

/// Undoes [`crate::memory::lock_all_memory`].
pub fn unlock_all_memory() {
    // SAFETY: munlockall takes no arguments; failure is harmless.
    unsafe { libc::munlockall() };
}

extern "C" fn wake_handler(_: libc::c_int) {}

/// The signal used to interrupt a timer thread's sleep when the run stops.
pub const WAKE_SIGNAL: libc::c_int = libc::SIGUSR2;

/// Installs a no-op handler for [`WAKE_SIGNAL`] without SA_RESTART, so that a
/// thread sleeping in clock_nanosleep returns EINTR when signalled.
pub fn install_wake_handler() -> io::Result<()> {
    // SAFETY: a zeroed sigaction is valid; we set a handler that does nothing
    // (async-signal-safe) and an empty mask.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = wake_handler as *const () as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        action.sa_flags = 0;
        check(libc::sigaction(WAKE_SIGNAL, &action, std::ptr::null_mut()))
    }
}

/// Blocks every signal in the calling thread except [`WAKE_SIGNAL`], so that
/// process-directed signals (SIGINT, SIGCHLD...) are handled by other threads
/// and never interrupt a measurement.
pub fn block_signals_except_wake() -> io::Result<()> {
    // SAFETY: a zeroed sigset_t is filled by sigfillset before use; the mask
    // pointer is valid and the old mask is not requested.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        libc::sigdelset(&mut set, WAKE_SIGNAL);
        let rc = libc::pthread_sigmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
    }
    Ok(())
}

/// Sends [`WAKE_SIGNAL`] to a thread of this process.
pub fn wake_thread(thread: std::os::unix::thread::RawPthread) {
    // std's RawPthread and libc's pthread_t are the same C type, spelled as
    // an integer by one and a pointer by the other on some targets (musl).
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    let thread = thread as libc::pthread_t;
    // SAFETY: `thread` comes from a JoinHandle that has not been joined yet, so
    // it names a live (or exited but unjoined, hence still valid) thread.
    unsafe { libc::pthread_kill(thread, WAKE_SIGNAL) };
}

/// Sends `signal` to every process of process group `pgid`.
pub fn kill_group(pgid: i32, signal: libc::c_int) -> io::Result<()> {
    if pgid <= 1 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "bad process group",
        ));
    }
    // SAFETY: killpg with a positive group id other than init's.
    check(unsafe { libc::killpg(pgid, signal) })
}

/// Sends `signal` to process `pid`.
pub fn kill_pid(pid: i32, signal: libc::c_int) -> io::Result<()> {
    if pid <= 1 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "bad pid"));
    }
    // SAFETY: kill with a positive pid other than init's.
    check(unsafe { libc::kill(pid, signal) })
}

/// Makes this process the child subreaper of its descendants
/// (`PR_SET_CHILD_SUBREAPER`): a process that left its process group and
/// whose parent ended comes to rtlab, not to init, so that rtlab can stop
/// it with the run.
pub fn become_subreaper() -> io::Result<()> {
    Ok(rustix::process::set_child_subreaper(Some(
        rustix::process::Pid::INIT,
    ))?)
}

/// Reaps child `pid` if it has ended (`waitpid(WNOHANG)`): true when it
/// is gone (reaped now, or not a child of this process any more).
pub fn reap_if_ended(pid: i32) -> bool {
    use rustix::process::{Pid, WaitOptions, waitpid};
    let Some(pid) = Pid::from_raw(pid) else {
        return true;
    };
    match waitpid(Some(pid), WaitOptions::NOHANG) {
        Ok(Some(_)) => true,
        Ok(None) => false,
        Err(_) => true,
    }
}

/// Whether child `pid` has ended, without reaping it (`waitid` with
/// `WNOWAIT`): until it is reaped, its PID and its process group's number
/// cannot be anybody else's, so its group can still be signalled safely.
pub fn child_ended(pid: i32) -> io::Result<bool> {
    use rustix::process::{Pid, WaitIdOptions, waitid};
    let pid = Pid::from_raw(pid).ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
    let status = waitid(
        rustix::process::WaitId::Pid(pid),
        WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
    )?;
    Ok(status.is_some())
}

/// A descriptor that holds process `pid` itself (`pidfd_open`, Linux 5.3):
/// it never comes to name another process that reuses the number. An
/// error where the kernel (or a seccomp filter, or QEMU) offers none, or
/// `pid` is not a process (a thread other than the first).
pub fn pidfd_open(pid: i32) -> io::Result<std::os::fd::OwnedFd> {
    let pid = rustix::process::Pid::from_raw(pid)
        .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
    Ok(rustix::process::pidfd_open(
        pid,
        rustix::process::PidfdFlags::empty(),
    )?)
}

/// Sends `signal` (any number the kernel takes, real-time ones included)
/// to the process `pidfd` holds; ESRCH once it has ended.
pub fn pidfd_send_signal(pidfd: &std::os::fd::OwnedFd, signal: libc::c_int) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: pidfd_send_signal with a descriptor this process owns, a
    // signal number, no siginfo (NULL: the kernel fills it as kill(2)
    // does) and no flags.
    let r = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            signal,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether the process `pidfd` holds has ended (a pidfd reads as ready
/// once it has).
pub fn pidfd_ended(pidfd: &std::os::fd::OwnedFd) -> bool {
    use std::os::fd::AsFd;
    let wait = Wait {
        fd: pidfd.as_fd(),
        read: true,
        write: false,
    };
    poll(&[wait], std::time::Duration::ZERO).is_ok_and(|r| r.first().is_some_and(|r| r.read))
}

/// Ignores `signal` in this process (the guard).
pub fn ignore_signal(signal: libc::c_int) {
    // SAFETY: SIG_IGN is a valid disposition for the catchable signals the
    // guard passes.
    unsafe { libc::signal(signal, libc::SIG_IGN) };
}

/// Restores the default action of SIGPIPE (Rust ignores it): a command that
/// only reads and prints then ends quietly when its output pipe closes, as
/// `ls | head` does.
pub fn default_sigpipe() {
    // SAFETY: SIG_DFL is a valid disposition for SIGPIPE.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// Sets the calling thread's name (`comm`, at most 15 bytes kept).
pub fn set_thread_name(name: &str) {
    let bytes: Vec<u8> = name.bytes().filter(|&b| b != 0).take(15).collect();
    if let Ok(name) = std::ffi::CString::new(bytes) {
        let _ = rustix::thread::set_name(&name);
    }
}

/// What a child does between fork and exec.
#[derive(Debug, Clone, Default)]
pub struct ChildSetup {
    /// CPUs to pin to (inherited by its own children).
    pub cpus: Option<Vec<usize>>,
    /// Policy and priority.
    pub sched: Option<Sched>,
    /// Open `cgroup.procs` files the child writes itself into before exec.
    pub cgroup_procs_fds: Vec<RawFd>,
    /// Kill the child when its parent thread dies (PR_SET_PDEATHSIG); a
    /// child whose parent died before that took hold ends there.
    pub die_with_parent: bool,
    /// A pipe the child writes `pgid PID` to before it runs the program
    /// (the guard's): whoever cleans up after a dead rtlab knows the
    /// child's process group before anything in it can start another.
    pub announce_to: Option<RawFd>,
}

/// `pgid PID\n` in `buf`, written by hand (no allocation between fork and
/// exec); the length.
fn pgid_line(buf: &mut [u8; 32], pid: i32) -> usize {
    let head = b"pgid ";
    buf[..head.len()].copy_from_slice(head);
    let mut digits = [0u8; 12];
    let (mut n, mut v) = (0, pid.unsigned_abs());
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let mut at = head.len();
    for d in digits[..n].iter().rev() {
        buf[at] = *d;
        at += 1;
    }
    buf[at] = b'\n';
    at + 1
}

/// Arranges for `cmd`'s child to apply `setup` before exec. Everything the
/// child does there is a plain syscall on data prepared beforehand: no
/// allocation, no lock (the child of a multi-threaded parent must not).
pub fn prepare_child(cmd: &mut Command, setup: ChildSetup) -> io::Result<()> {
    let cpu_set = match &setup.cpus {
        Some(cpus) => Some(cpu_set_of(cpus)?),
        None => None,
    };
    let sched = setup.sched;
    let fds = setup.cgroup_procs_fds.clone();
    let die_with_parent = setup.die_with_parent;
    let announce_to = setup.announce_to;
    let parent = getpid();
    // SAFETY: the closure runs in the forked child before exec. It only makes
    // async-signal-safe syscalls (write, prctl, getppid, getpid, signal,
    // sched_setaffinity, sched_setscheduler, setpriority) on values
    // captured by copy and a stack buffer, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            for &fd in &fds {
                if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(io::Error::last_os_error());
                }
            }
            if die_with_parent {
                check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0))?;
                // The parent may have died before the request took hold:
                // then nobody would ever send it.
                if libc::getppid() != parent {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
            }
            if let Some(fd) = announce_to {
                // Its own group (set before these closures run): one
                // write of a few bytes to a pipe is atomic. A guard that
                // is gone must not kill the child with SIGPIPE.
                let mut line = [0u8; 32];
                let len = pgid_line(&mut line, libc::getpid());
                let before = libc::signal(libc::SIGPIPE, libc::SIG_IGN);
                libc::write(fd, line.as_ptr().cast(), len);
                libc::signal(libc::SIGPIPE, before);
            }
            if let Some(set) = &cpu_set {
                rustix::thread::sched_setaffinity(None, set)?;
            }
            if let Some(s) = sched {
                let param = sched_param(if s.policy.is_realtime() {
                    s.priority
                } else {
                    0
                });
                let set = check(raw_sched_setscheduler(0, policy_to_libc(s.policy), &param));
                if let Err(e) = set
                    && !already_other(&e, s.policy, 0)
                {
                    return Err(e);
                }
                if !s.policy.is_realtime() {
                    check(libc::setpriority(libc::PRIO_PROCESS, 0, s.priority))?;
                }
            }
            Ok(())
        })
    };
    Ok(())
}

/// Writes a 4-byte PM QoS request (µs) to an open /dev/cpu_dma_latency file,
/// in the binary form cyclictest uses. The request holds while the file is
/// open and is dropped by the kernel when it is closed (even on SIGKILL).
pub fn write_pm_qos(file: &std::fs::File, latency_us: i32) -> io::Result<()> {
    use std::io::Write;
    let mut f = file;
    f.write_all(&latency_us.to_ne_bytes())
}

/// Mounts a tracefs at `target` (an existing, empty directory).
pub fn mount_tracefs(target: &std::path::Path) -> io::Result<()> {
    rustix::mount::mount(
        "nodev",
        target,
        "tracefs",
        rustix::mount::MountFlags::NOSUID
            | rustix::mount::MountFlags::NODEV
            | rustix::mount::MountFlags::NOEXEC,
        None,
    )
    .map_err(io::Error::from)
}

/// Unmounts the filesystem at `target`.
pub fn unmount(target: &std::path::Path) -> io::Result<()> {
    rustix::mount::unmount(target, rustix::mount::UnmountFlags::empty()).map_err(io::Error::from)
}

/// Writes `bytes` to `file` in one `write` call (a trace marker must be one
/// write to be one event). Never blocks on a tracefs marker.
pub fn write_once(file: &std::fs::File, bytes: &[u8]) -> io::Result<usize> {
    rustix::io::write(file, bytes).map_err(io::Error::from)
}

/// Touches 64 KiB of stack so that its pages are mapped before the hot loop.
#[inline(never)]
pub fn prefault_stack() {
    let mut buf = [0u8; 64 * 1024];
    for chunk in buf.chunks_mut(4096) {
        chunk[0] = 1;
    }
    std::hint::black_box(&mut buf);
}

#[cfg(test)]
mod child_tests;

#[cfg(test)]
mod tests;

/// What [`poll`] is to wait for on one descriptor.
#[derive(Debug, Clone, Copy)]
pub struct Wait<'a> {
    /// The descriptor.
    pub fd: std::os::fd::BorrowedFd<'a>,
    /// Wait until it can be read (or accepted on).
    pub read: bool,
    /// Wait until it can be written.
    pub write: bool,
}

/// What [`poll`] found on one descriptor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ready {
    /// It can be read (or accepted on), or the peer closed it.
    pub read: bool,
    /// It can be written.
    pub write: bool,
    /// An error or a hang-up: the next read or write says which.
    pub broken: bool,
}

/// Waits until one of `waits` is ready or `timeout` passes (`poll(2)`,
/// `ppoll` where the kernel has it). Gives one [`Ready`] per wait, in
/// order; an interrupted wait (EINTR) is an empty answer, not an error.
pub fn poll(waits: &[Wait<'_>], timeout: std::time::Duration) -> io::Result<Vec<Ready>> {
    use rustix::event::{PollFd, PollFlags};
    let mut fds: Vec<PollFd<'_>> = waits
        .iter()
        .map(|w| {
            let mut flags = PollFlags::empty();
            if w.read {
                flags |= PollFlags::IN;
            }
            if w.write {
                flags |= PollFlags::OUT;
            }
            PollFd::from_borrowed_fd(w.fd, flags)
        })
        .collect();
    let timeout = rustix::event::Timespec {
        tv_sec: timeout.as_secs().min(i32::MAX as u64) as _,
        tv_nsec: timeout.subsec_nanos() as _,
    };
    match rustix::event::poll(&mut fds, Some(&timeout)) {
        Ok(_) => {}
        Err(rustix::io::Errno::INTR) => return Ok(vec![Ready::default(); waits.len()]),
        Err(e) => return Err(e.into()),
    }
    Ok(fds
        .iter()
        .map(|f| {
            let r = f.revents();
            Ready {
                read: r.intersects(PollFlags::IN | PollFlags::HUP),
                write: r.contains(PollFlags::OUT),
                broken: r.intersects(PollFlags::ERR | PollFlags::HUP | PollFlags::NVAL),
            }
        })
        .collect())
}

#[cfg(test)]
mod time_tests;

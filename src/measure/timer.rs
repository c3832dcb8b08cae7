//! A timer thread: its set-up (cpuset, affinity, policy or SCHED_DEADLINE,
//! each read back), its warm-up, and its measuring loop, generic over where
//! the clock and the wake-ups come from (`WakeSource`: the kernel's, or
//! simulated ones for tests).
//!
//! Read this before changing the loop: between the start barrier and the
//! end of the loop, nothing may allocate, lock, log or format, and the only
//! syscalls are `clock_nanosleep` (absolute deadline) and the vDSO clock
//! read, but for a wake-up late enough to matter: a `getcpu` for a spike
//! kept or announced, and one write of its marker into the trace when the
//! flight recorder is on. The recorder and the stack are touched before
//! the barrier, and the code the loop runs is kept mapped (`hot_code`), so
//! that no page fault lands in the loop. A change is measured in
//! instructions per sample (`bench/lean.py`, docs/benchmarks.md).

use super::live::{LiveCounters, LiveSnapshot};
use super::{TimerOutcome, TimerSpec};
use crate::stats::Recorder;
use crate::stats::spikes::Spike;
use crate::sys::{SysRoot, os};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

/// Enters its cpuset, pins the calling thread and sets its policy, then
/// reads them back.
fn setup(spec: &TimerSpec, root: &SysRoot) -> Result<(), String> {
    if let Some(dl) = spec.deadline {
        enter_and_pin(&spec.cpus, spec.cpuset.as_ref(), root)?;
        return set_deadline(spec, dl);
    }
    pin_and_schedule(&spec.cpus, spec.sched, spec.cpuset.as_ref(), root)
}

/// Blocks the signals but the wake-up, enters `cpuset` and pins the
/// calling thread to `cpus`.
fn enter_and_pin(
    cpus: &[usize],
    cpuset: Option<&crate::isolate::cpuset::CpusetTarget>,
    root: &SysRoot,
) -> Result<(), String> {
    os::block_signals_except_wake().map_err(|e| format!("cannot set the signal mask: {e}"))?;
    if let Some(cs) = cpuset {
        root.write(&cs.thread_file(), &os::gettid().to_string())
            .map_err(|e| format!("cannot enter cpuset {}: {e}", cs.display()))?;
    }
    os::set_affinity(0, cpus).map_err(|e| format!("cannot pin to CPUs {cpus:?}: {e}"))
}

/// [`enter_and_pin`], then `sched` for the calling thread; both read back
/// (a measuring thread of any kind).
pub(super) fn pin_and_schedule(
    cpus: &[usize],
    sched: crate::sched::Sched,
    cpuset: Option<&crate::isolate::cpuset::CpusetTarget>,
    root: &SysRoot,
) -> Result<(), String> {
    enter_and_pin(cpus, cpuset, root)?;
    os::set_sched(0, sched).map_err(|e| {
        format!(
            "cannot take {} priority {}: {e}",
            sched.policy.name(),
            sched.priority
        )
    })?;
    let pinned = os::get_affinity(0).map_err(|e| format!("cannot read back the affinity: {e}"))?;
    if pinned != cpus {
        return Err(format!("asked for CPUs {cpus:?} but got {pinned:?}"));
    }
    let seen = os::get_sched(0).map_err(|e| format!("cannot read back the policy: {e}"))?;
    if seen != sched {
        return Err(format!(
            "asked for {} {} but got {} {}",
            sched.policy.name(),
            sched.priority,
            seen.policy.name(),
            seen.priority
        ));
    }
    Ok(())
}

/// SCHED_DEADLINE for the calling thread, read back.
fn set_deadline(spec: &TimerSpec, dl: crate::sched::Deadline) -> Result<(), String> {
    os::set_deadline(0, dl).map_err(|e| format!("cannot take {}: {e}", dl.describe()))?;
    let pinned = os::get_affinity(0).map_err(|e| format!("cannot read back the affinity: {e}"))?;
    if pinned != spec.cpus {
        return Err(format!("asked for CPUs {:?} but got {pinned:?}", spec.cpus));
    }
    match os::get_deadline(0) {
        Ok(Some(seen)) if seen == dl => Ok(()),
        Ok(seen) => Err(format!("asked for {} but got {seen:?}", dl.describe())),
        Err(e) => Err(format!("cannot read back the policy: {e}")),
    }
}

/// The live counters are published at least every this many samples (a
/// power of two: the test is a mask). At 10 kHz, every 1.6 ms: far finer
/// than any refresh, and the announcements the readers act on are
/// published at once.
const PUBLISH_EVERY: u64 = 16;

/// The live snapshot's figures from the recorder, the last latency `cur`.
#[inline(always)]
fn fill(snap: &mut LiveSnapshot, rec: &Recorder, cur: u64) {
    snap.samples = rec.count;
    snap.min_ns = rec.min_ns;
    snap.max_ns = rec.max_ns;
    snap.cur_ns = cur;
    snap.sum_ns = rec.sum_ns as u64;
    snap.overruns = rec.overruns;
    snap.missed_periods = rec.missed_periods;
}

/// The trace marker of a wake-up over the threshold, `rtlab T<index>
/// sample <n> deadline <ns> latency <ns>`, in `buf`; its length.
/// Digits by hand, not `write!`: `core::fmt`'s code lies far from the loop,
/// out of what is kept mapped for it, and would cost the first spike after
/// the start-up let-go a page fault. Cold: a spike's path, kept out of the
/// loop's code.
#[cold]
fn marker_text(buf: &mut [u8], index: usize, sample: u64, deadline: u64, latency: u64) -> usize {
    let mut at = 0;
    for (label, value) in [
        ("rtlab T", index as u64),
        (" sample ", sample),
        (" deadline ", deadline),
        (" latency ", latency),
    ] {
        at = put_bytes(buf, at, label.as_bytes());
        let mut digits = [0u8; 20];
        let mut from = digits.len();
        let mut rest = value;
        while from > 0 {
            from -= 1;
            digits[from] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        at = put_bytes(buf, at, &digits[from..]);
    }
    at
}

/// Copies what fits of `bytes` into `buf` at `at`; where it ends.
fn put_bytes(buf: &mut [u8], at: usize, bytes: &[u8]) -> usize {
    let n = bytes.len().min(buf.len().saturating_sub(at));
    if let (Some(to), Some(from)) = (buf.get_mut(at..at + n), bytes.get(..n)) {
        to.copy_from_slice(from);
    }
    at + n
}

/// Where a timer thread's clock and wake-ups come from. The hot loop is
/// generic over it, so the kernel's version compiles to the direct calls.
pub(super) trait WakeSource {
    /// Now, on CLOCK_MONOTONIC (ns).
    fn now_ns(&mut self) -> u64;
    /// Sleeps until the absolute `deadline_ns`: 0, or the error number.
    fn sleep_until_ns(&mut self, deadline_ns: u64) -> i32;
}

/// The kernel: the vDSO clock and an absolute `clock_nanosleep`.
pub(super) struct KernelWake;

impl WakeSource for KernelWake {
    #[inline(always)]
    fn now_ns(&mut self) -> u64 {
        os::monotonic_ns()
    }

    #[inline(always)]
    fn sleep_until_ns(&mut self, deadline_ns: u64) -> i32 {
        os::sleep_until_ns(deadline_ns)
    }
}

/// Simulated wake-ups, for tests only (`RTLAB_SIMULATED_WAKE=SEED`): no
/// sleep; virtual time jumps to each deadline plus a latency drawn from a
/// fixed generator (2 to 21 µs, and one wake-up in 500 between 200 µs and
/// 3.2 ms), so that the whole pipeline runs on any machine, as any user,
/// with figures a test can predict.
pub(super) struct SimulatedWake {
    now: u64,
    state: u64,
}

impl SimulatedWake {
    /// A source starting now, its generator in `state` (not zero).
    pub(super) fn new(state: u64) -> Self {
        SimulatedWake {
            now: os::monotonic_ns(),
            state: state | 1,
        }
    }

    /// The next latency of the generator in `state` (ns).
    pub(super) fn latency(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        let x = *state;
        if x.is_multiple_of(500) {
            200_000 + x % 3_000_000
        } else {
            2_000 + x % 20_000
        }
    }
}

impl WakeSource for SimulatedWake {
    fn now_ns(&mut self) -> u64 {
        self.now
    }

    fn sleep_until_ns(&mut self, deadline_ns: u64) -> i32 {
        self.now = self.now.max(deadline_ns) + Self::latency(&mut self.state);
        0
    }
}

/// What a timer thread shares with the main thread.
pub(super) struct Links {
    /// Its live counters.
    pub live: Arc<LiveCounters>,
    /// Set when the run stops.
    pub stop: Arc<AtomicBool>,
    /// Releases all timer threads together.
    pub barrier: Arc<Barrier>,
    /// The system root (its cpuset).
    pub root: SysRoot,
    /// The flight recorder's trace marker.
    pub marker: Option<Arc<std::fs::File>>,
    /// Fill the metrics histogram (a monitoring run).
    pub metrics: bool,
}

/// Where the code a measuring thread runs lies (of the kernel's wake-ups):
/// the loop and every function of rtlab it may call from its release to
/// its last sample, kept out of line or not. The threads run `run` itself
/// (callgrind and perf name it); were it ever inlined into its caller, or a
/// callee missing here, the threads would fault on code not kept mapped,
/// and `locked_memory_is_what_the_run_uses_and_the_timer_takes_no_fault`
/// would say so unless another thread happened to touch that page (the
/// time series' cold `find_slot` was missing and went unseen: check the
/// loop's calls with `objdump -d` of an unstripped release build).
pub(super) fn hot_code() -> [usize; 7] {
    use crate::stats::spikes::Spikes;
    [
        run::<KernelWake> as fn(TimerSpec, Recorder, Links, KernelWake) -> TimerOutcome as usize,
        Spikes::keep as fn(&mut Spikes, Spike) as usize,
        crate::stats::series::TimeSeries::hot_code(),
        fill as fn(&mut LiveSnapshot, &Recorder, u64) as usize,
        marker_text as fn(&mut [u8], usize, u64, u64, u64) -> usize as usize,
        LiveCounters::keep_release_usage as fn(&LiveCounters) as usize,
        LiveCounters::usage_since_release as fn(&LiveCounters) -> Option<os::ThreadUsage> as usize,
    ]
}

/// Sleeps the timer's cycles for `warmup_ns` without counting them (caches,
/// page faults, frequency settle first): the measured run starts at the
/// last deadline of the warm-up. Gives that start (now, without warm-up).
fn warm_up<W: WakeSource>(wake: &mut W, period: u64, warmup_ns: u64, stop: &AtomicBool) -> u64 {
    let start = wake.now_ns();
    if warmup_ns == 0 {
        return start;
    }
    let end = start.saturating_add(warmup_ns);
    let mut next = start;
    while next < end && !stop.load(Ordering::Relaxed) {
        next += period;
        match wake.sleep_until_ns(next) {
            0 | crate::sys::consts::EINTR => {}
            _ => break,
        }
        // Missed periods are skipped, as the measuring loop does.
        let now = wake.now_ns();
        if now > next + period {
            next += (now - next) / period * period;
        }
    }
    next.min(wake.now_ns())
}

/// The body of a timer thread. Longer than a screen on purpose: split into
/// a set-up function and a measuring-loop function, the loop cost 4 to 8
/// more instructions a sample (callgrind: 169 against 173 to 177), which
/// is the margin by which it is leaner than cyclictest's (175); moving only
/// the set-up and the outcome out cost 10 (161.7 against 171.6, 2026-11-25,
/// docs/benchmarks.md).
pub(super) fn run<W: WakeSource>(
    spec: TimerSpec,
    mut rec: Recorder,
    links: Links,
    mut wake: W,
) -> TimerOutcome {
    let Links {
        live,
        stop,
        barrier,
        root,
        marker,
        metrics,
    } = links;
    live.tid.store(os::gettid(), Ordering::Relaxed);
    let setup_result = setup(&spec, &root);
    let cpuset_seen = root.read_opt(crate::sys::paths::THREAD_SELF_CPUSET);
    os::prefault_stack();
    let sched_seen = os::get_sched(0).ok();
    let deadline_seen = os::get_deadline(0).ok().flatten();
    let first_cpu = os::current_cpu();
    if let Err(e) = setup_result {
        live.failed.store(true, Ordering::Relaxed);
        barrier.wait();
        live.finished.store(true, Ordering::Release);
        return TimerOutcome {
            recorder: Some(rec),
            cpus_seen: (first_cpu, first_cpu),
            sched_seen,
            deadline_seen,
            cpuset_seen,
            usage: None,
            error: Some(e),
        };
    }
    barrier.wait();
    live.keep_release_usage();

    // ---- hot loop: no allocation, lock or syscall but sleep and clock ----
    let period = spec.period_ns;
    let trace_threshold = spec.trace_threshold_ns.unwrap_or(u64::MAX);
    let mut mark = [0u8; 96];
    let loops = spec.loops.unwrap_or(u64::MAX);
    let mut snap = LiveSnapshot {
        min_ns: u64::MAX,
        ..LiveSnapshot::default()
    };
    let start = warm_up(&mut wake, period, spec.warmup_ns, &stop);
    live.first_deadline_ns
        .store(start.saturating_add(period), Ordering::Relaxed);
    let end = spec
        .duration_ns
        .map_or(u64::MAX, |d| start.saturating_add(d));
    let mut next = start + period;
    let mut sleep_error = 0;
    let mut last = 0;
    'measure: while next <= end && rec.count < loops {
        loop {
            if stop.load(Ordering::Relaxed) {
                break 'measure;
            }
            match wake.sleep_until_ns(next) {
                0 => break,
                crate::sys::consts::EINTR => continue,
                err => {
                    sleep_error = err;
                    break 'measure;
                }
            }
        }
        let now = wake.now_ns();
        let latency = if now >= next {
            now - next
        } else {
            rec.early += 1;
            0
        };
        rec.record(latency);
        rec.series.record(next - start, latency);
        if let Some(slot) = rec.samples.get_mut(rec.count as usize - 1) {
            *slot = latency.min(u32::MAX as u64 - 1) as u32;
        }
        // What readers must see at once: an announced wake-up, a window's
        // new max (the monitor closes windows with it: only monitoring runs
        // keep windows). The rest is published every PUBLISH_EVERY samples,
        // and at the end.
        let mut news = latency >= trace_threshold;
        if metrics {
            live.count(latency);
            let window = live.window();
            if window != snap.window {
                snap.window = window;
                snap.window_max_ns = 0;
                news = true;
            }
            if latency > snap.window_max_ns {
                snap.window_max_ns = latency;
                news = true;
            }
        }
        if latency >= trace_threshold {
            // Announce it to the flight recorder (plain stores) and mark it
            // in the trace: the only write this loop makes, and only then.
            snap.over += 1;
            snap.over_sample = rec.count - 1;
            snap.over_deadline_ns = next;
            snap.over_latency_ns = latency;
            snap.over_cpu = os::current_cpu().map_or(u64::MAX, |c| c as u64);
            if let Some(m) = &marker {
                let len = marker_text(&mut mark, spec.index, rec.count - 1, next, latency);
                let _ = os::write_once(m, &mark[..len]);
            }
        }
        if rec.spikes.wants(latency) {
            // A kept wake-up only: one getcpu, no allocation.
            rec.spikes.keep(Spike {
                sample: rec.count - 1,
                offset_ns: next - start,
                deadline_ns: next,
                latency_ns: latency,
                cpu: os::current_cpu(),
            });
        }
        last = latency;
        if news || rec.count.is_multiple_of(PUBLISH_EVERY) {
            fill(&mut snap, &rec, latency);
            live.publish(&snap);
        }
        next += period;
        if now > next {
            // Woke after the next deadline: skip the missed periods, as
            // cyclictest does, but count them.
            let missed = (now - next) / period + 1;
            rec.overruns += 1;
            rec.missed_periods += missed;
            next += missed * period;
        }
    }
    // ---- end of hot loop ----
    let usage = live.usage_since_release();
    fill(&mut snap, &rec, last);
    live.publish(&snap);

    let last_cpu = os::current_cpu();
    live.finished.store(true, Ordering::Release);
    TimerOutcome {
        recorder: Some(rec),
        cpus_seen: (first_cpu, last_cpu),
        sched_seen,
        deadline_seen,
        cpuset_seen,
        usage,
        error: (sleep_error != 0).then(|| {
            format!(
                "clock_nanosleep failed: {}",
                std::io::Error::from_raw_os_error(sleep_error)
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::marker_text;

    /// The hand-written digits say what `format!` says, and a buffer too
    /// short is filled, never overrun.
    #[test]
    fn the_marker_reads_as_format_writes_it() {
        let cases = [
            (0, 0, 0, 0),
            (1, 9, 10, 99),
            (15, 1234567, 987654321012, 100_000),
            (usize::MAX, u64::MAX, u64::MAX, u64::MAX),
        ];
        for (index, sample, deadline, latency) in cases {
            let want =
                format!("rtlab T{index} sample {sample} deadline {deadline} latency {latency}");
            let mut buf = [0u8; 128];
            let len = marker_text(&mut buf, index, sample, deadline, latency);
            let text = std::str::from_utf8(&buf[..len]).unwrap();
            assert_eq!(text, want);
            // And the trace reader reads it back.
            let line =
                format!("  rtlab-timer0-7   [001] ..... 1.000001: tracing_mark_write: {text}");
            let m = crate::trace::text::marker(&line).unwrap();
            assert_eq!(
                (m.timer as u64, m.sample, m.deadline_ns, m.latency_ns),
                (index as u64, sample, deadline, latency)
            );
            for short in [0, 5, 20, want.len() - 1] {
                let mut small = vec![0u8; short];
                let len = marker_text(&mut small, index, sample, deadline, latency);
                assert_eq!(&small[..len], &want.as_bytes()[..short]);
            }
        }
    }
}

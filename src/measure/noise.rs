//! Noise threads: oslat's and rtla osnoise's method. Each thread pins
//! itself to one CPU and reads the CPU's counter as fast as it can; every
//! gap between two reads is time the loop did not run. Every gap goes into
//! a histogram; gaps at or over the threshold are noise, summed per period
//! and handed, with their time, to the trace's attribution ([`GapRing`]).
//!
//! The loop allocates nothing, takes no lock and makes no syscall: a read
//! of the counter (an instruction, or the vDSO clock), a multiply to ns, a
//! histogram count and two compares. Once a millisecond (of the counter)
//! it looks at the stop flag and the clock, closes periods and publishes
//! its live figures; with a runtime shorter than its period (a real-time
//! thread kept within its budget, as osnoise does) it sleeps out the rest
//! of each period.

use crate::sched::Sched;
use crate::stats::noise::{Gap, GapRing, NoisePeriod, NoiseRecorder};
use crate::sys::SysRoot;
use crate::sys::os::{self, counter};
use counter::{CounterKind, Ticks};
use serde::{Deserialize, Serialize};
use std::os::unix::thread::JoinHandleExt;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The counter a noise thread reads, as chosen for the machine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CounterChoice {
    /// Which counter.
    pub kind: CounterKind,
    /// Its frequency (Hz; 1e9 for CLOCK_MONOTONIC).
    pub hz: u64,
}

/// What a noise thread must do.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NoiseSpec {
    /// Its index N.
    pub index: usize,
    /// The CPU it polls.
    pub cpu: usize,
    /// Policy and priority.
    pub sched: Sched,
    /// A gap at least this long is noise (ns).
    pub threshold_ns: u64,
    /// The period its figures are kept by (ns).
    pub period_ns: u64,
    /// How long it polls in each period (ns; the period: all of it).
    pub runtime_ns: u64,
    /// Poll for this long (ns), from its first period (after
    /// `offset_ns` and `warmup_ns`).
    pub duration_ns: Option<u64>,
    /// Poll this long first without counting (ns): caches, frequency and
    /// page faults settle (oslat's pre-heat); the smallest gap seen then is
    /// kept (oslat's `-B` bias).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warmup_ns: u64,
    /// A gap at least this long stops every noise thread of the run (ns;
    /// oslat's `-T`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_above_ns: Option<u64>,
    /// Bytes moved (`memmove`) between two reads of the counter: the loop
    /// does work as a packet-processing poller would (oslat's `-w
    /// memmove -m`); 0: none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub memmove_bytes: u64,
    /// Sleep this long after the release before polling (ns): threads of
    /// several CPUs take turns (`rtlab hwlat`: one window each).
    #[serde(default)]
    pub offset_ns: u64,
    /// Gaps below this are counted exact to the ns (beyond: 0.1%).
    pub linear_ns: u64,
    /// The counter it reads.
    pub counter: CounterChoice,
    /// Cpuset it enters before pinning itself.
    pub cpuset: Option<crate::isolate::cpuset::CpusetTarget>,
}

/// A noise thread's figures as the main thread sees them while it runs
/// (published once a millisecond).
#[derive(Debug, Default)]
pub struct NoiseLive {
    /// Kernel thread id, set once the thread started.
    pub tid: AtomicI32,
    /// It has ended.
    pub finished: AtomicBool,
    /// It could not set itself up.
    pub failed: AtomicBool,
    /// Noise so far (ns).
    pub noise_ns: AtomicU64,
    /// Gaps at or over the threshold so far.
    pub gaps: AtomicU64,
    /// The largest gap so far (ns).
    pub max_gap_ns: AtomicU64,
    /// Time polled so far (ns).
    pub runtime_ns: AtomicU64,
}

/// How a noise thread ended.
#[derive(Debug)]
pub struct NoiseOutcome {
    /// Its recorder (None only if it panicked).
    pub recorder: Option<NoiseRecorder>,
    /// The CPU it ran on at the start and at the end.
    pub cpus_seen: (Option<usize>, Option<usize>),
    /// The scheduling it had.
    pub sched_seen: Option<Sched>,
    /// The cpuset it ran in, as `/proc/thread-self/cpuset` says.
    pub cpuset_seen: Option<String>,
    /// Why it failed to start or stopped early.
    pub error: Option<String>,
    /// The smallest gap of its warm-up (ns), when it had one.
    pub warmup_min_gap_ns: Option<u64>,
    /// The gap that stopped the run (`stop_above_ns`), if one did.
    pub stopped_at: Option<Gap>,
}

/// A running noise thread.
pub struct NoiseHandle {
    /// Its spec.
    pub spec: NoiseSpec,
    /// Its live figures.
    pub live: Arc<NoiseLive>,
    /// Its gaps over the threshold, for the trace's attribution.
    pub ring: Arc<GapRing>,
    handle: Option<JoinHandle<NoiseOutcome>>,
}

impl NoiseHandle {
    /// Wakes it from a sleep between runtimes (used when the run stops).
    pub fn wake(&self) {
        if let Some(h) = &self.handle {
            os::wake_thread(h.as_pthread_t());
        }
    }

    /// Waits for it to end.
    pub fn join(mut self) -> (NoiseSpec, Arc<NoiseLive>, NoiseOutcome) {
        let outcome = match self.handle.take().map(JoinHandle::join) {
            Some(Ok(o)) => o,
            _ => NoiseOutcome {
                recorder: None,
                cpus_seen: (None, None),
                sched_seen: None,
                cpuset_seen: None,
                error: Some("noise thread panicked".into()),
                warmup_min_gap_ns: None,
                stopped_at: None,
            },
        };
        (self.spec, self.live, outcome)
    }
}

/// Gaps over the threshold each ring holds between two reads of the trace
/// (a read every refresh: at 1 s, 16 Ki gaps of 5 µs would be 8% noise).
pub const RING_GAPS: usize = 16 * 1024;

/// Starts every noise thread, waits until each has pinned itself and taken
/// its policy, then releases them together. `rings` sizes their gap rings
/// (0: no attribution reads them). `notify` is called by each thread once
/// it left its loop.
pub fn start(
    specs: Vec<NoiseSpec>,
    root: &SysRoot,
    stop: Arc<AtomicBool>,
    rings: usize,
    notify: impl Fn() + Send + Clone + 'static,
) -> Result<Vec<NoiseHandle>, super::StartError> {
    os::install_wake_handler().map_err(super::StartError::WakeHandler)?;
    os::prepare_clock();
    let barrier = Arc::new(Barrier::new(specs.len() + 1));
    let mut handles = Vec::new();
    for spec in specs {
        let rec = NoiseRecorder::new(spec.linear_ns as usize).map_err(|source| {
            super::StartError::Histogram {
                index: spec.index,
                source,
            }
        })?;
        let live = Arc::new(NoiseLive::default());
        let ring = Arc::new(GapRing::new(rings));
        let links = Links {
            live: live.clone(),
            ring: ring.clone(),
            stop: stop.clone(),
            barrier: barrier.clone(),
            root: root.clone(),
        };
        let sp = spec.clone();
        let n = notify.clone();
        let handle = std::thread::Builder::new()
            .name(format!("rtlab-noise{}", spec.index))
            .stack_size(256 * 1024)
            .spawn(move || {
                let outcome = run(sp, rec, links);
                n();
                outcome
            })
            .map_err(|source| super::StartError::Thread {
                index: spec.index,
                source,
            })?;
        handles.push(NoiseHandle {
            spec,
            live,
            ring,
            handle: Some(handle),
        });
    }
    barrier.wait();
    Ok(handles)
}

/// Asks every noise thread to stop and wakes those sleeping.
pub fn stop_all(handles: &[NoiseHandle], stop: &AtomicBool) {
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.wake();
    }
}

/// What a noise thread shares with the main thread.
struct Links {
    live: Arc<NoiseLive>,
    ring: Arc<GapRing>,
    stop: Arc<AtomicBool>,
    barrier: Arc<Barrier>,
    root: SysRoot,
}

/// The body of a noise thread: set-up, the loop on its counter, outcome.
fn run(spec: NoiseSpec, mut rec: NoiseRecorder, links: Links) -> NoiseOutcome {
    let Links {
        live,
        ring,
        stop,
        barrier,
        root,
    } = links;
    live.tid.store(os::gettid(), Ordering::Relaxed);
    let setup =
        super::timer::pin_and_schedule(&[spec.cpu], spec.sched, spec.cpuset.as_ref(), &root);
    let cpuset_seen = root.read_opt(crate::sys::paths::THREAD_SELF_CPUSET);
    os::prefault_stack();
    let sched_seen = os::get_sched(0).ok();
    let first_cpu = os::current_cpu();
    let mut error = setup.err();
    if error.is_some() {
        live.failed.store(true, Ordering::Relaxed);
    }
    // The workload's buffers, written whole before the release.
    let mut work = Memmove::new(spec.memmove_bytes as usize);
    barrier.wait();
    let mut found = Found::default();
    if error.is_none() {
        let conv = Conv::new(spec.counter.hz);
        let mut l = Loop {
            spec: &spec,
            rec: &mut rec,
            live: &live,
            ring: &ring,
            stop: &stop,
            conv,
            found: &mut found,
        };
        let end = match (spec.counter.kind, work.as_mut()) {
            (CounterKind::Tsc, None) => l.run::<counter::Tsc, _>(&mut NoWork),
            (CounterKind::Tsc, Some(w)) => l.run::<counter::Tsc, _>(w),
            (CounterKind::ArmVirtual, None) => l.run::<counter::ArmVirtual, _>(&mut NoWork),
            (CounterKind::ArmVirtual, Some(w)) => l.run::<counter::ArmVirtual, _>(w),
            (CounterKind::Monotonic, None) => l.run::<counter::Monotonic, _>(&mut NoWork),
            (CounterKind::Monotonic, Some(w)) => l.run::<counter::Monotonic, _>(w),
        };
        error = end.err();
    }
    let last_cpu = os::current_cpu();
    live.finished.store(true, Ordering::Release);
    NoiseOutcome {
        recorder: Some(rec),
        cpus_seen: (first_cpu, last_cpu),
        sched_seen,
        cpuset_seen,
        error,
        warmup_min_gap_ns: found.warmup_min_gap_ns,
        stopped_at: found.stopped_at,
    }
}

/// What a loop found besides its recorder.
#[derive(Debug, Default)]
struct Found {
    warmup_min_gap_ns: Option<u64>,
    stopped_at: Option<Gap>,
}

/// Work between two reads of the counter.
trait Work {
    fn turn(&mut self);
}

/// No work: the tightest loop.
struct NoWork;

impl Work for NoWork {
    #[inline(always)]
    fn turn(&mut self) {}
}

/// oslat's memmove workload: a buffer copied to another each turn.
struct Memmove {
    from: Vec<u8>,
    to: Vec<u8>,
}

impl Memmove {
    /// Buffers of `bytes` each, written whole; None for 0.
    fn new(bytes: usize) -> Option<Memmove> {
        (bytes > 0).then(|| Memmove {
            from: vec![1u8; bytes],
            to: vec![0u8; bytes],
        })
    }
}

impl Work for Memmove {
    #[inline(always)]
    fn turn(&mut self) {
        self.to.copy_from_slice(&self.from);
        std::hint::black_box(&mut self.to);
    }
}

/// One loop's borrowed state.
struct Loop<'a> {
    spec: &'a NoiseSpec,
    rec: &'a mut NoiseRecorder,
    live: &'a NoiseLive,
    ring: &'a GapRing,
    stop: &'a AtomicBool,
    conv: Conv,
    found: &'a mut Found,
}

impl Loop<'_> {
    /// Its offset, its warm-up, then its measuring loop.
    fn run<T: Ticks, W: Work>(&mut self, work: &mut W) -> Result<(), String> {
        if self.spec.offset_ns > 0 {
            let wake_at = os::monotonic_ns().saturating_add(self.spec.offset_ns);
            if let Err(e) = sleep_until(wake_at, self.stop) {
                return e;
            }
        }
        if self.spec.warmup_ns > 0 {
            let until = os::monotonic_ns().saturating_add(self.spec.warmup_ns);
            warm_up::<T, W>(self.rec, work, until, self.stop, self.conv);
            self.found.warmup_min_gap_ns = self.rec.smallest();
            self.rec.reset();
        }
        poll::<T, W>(self, work)
    }
}

/// Polls until `until` (CLOCK_MONOTONIC ns), counting every gap in the
/// histogram alone (it is reset after).
fn warm_up<T: Ticks, W: Work>(
    rec: &mut NoiseRecorder,
    work: &mut W,
    until: u64,
    stop: &AtomicBool,
    conv: Conv,
) {
    let check = conv.ticks(CHECK_NS);
    let mut prev = T::now();
    let mut next_check = prev.wrapping_add(check);
    loop {
        work.turn();
        let now = T::now();
        rec.count(conv.ns(now.wrapping_sub(prev)));
        prev = now;
        if now >= next_check {
            if stop.load(Ordering::Relaxed) || os::monotonic_ns() >= until {
                return;
            }
            next_check = T::now().wrapping_add(check);
        }
    }
}

/// Counter ticks to ns: `ticks * mult >> 32` (a 64×64-bit multiply).
#[derive(Debug, Clone, Copy)]
struct Conv {
    mult: u64,
    hz: u64,
}

impl Conv {
    fn new(hz: u64) -> Self {
        let hz = hz.max(1);
        let mult = ((1_000_000_000u128 << 32) / hz as u128).min(u64::MAX as u128) as u64;
        Conv { mult, hz }
    }

    #[inline(always)]
    fn ns(self, ticks: u64) -> u64 {
        ((ticks as u128 * self.mult as u128) >> 32) as u64
    }

    /// Ticks in `ns` (at least one).
    fn ticks(self, ns: u64) -> u64 {
        ((ns as u128 * self.hz as u128) / 1_000_000_000).clamp(1, u64::MAX as u128) as u64
    }
}

/// How often the loop looks up from its counter (ns).
const CHECK_NS: u64 = 1_000_000;

/// Where the loop is in its periods (CLOCK_MONOTONIC ns).
struct Periods {
    /// The open period's figures.
    open: NoisePeriod,
    /// When it ends.
    end_ns: u64,
    /// When its runtime ends (its end, when runtime is the period).
    run_end_ns: u64,
    /// When the whole measurement ends.
    stop_ns: u64,
    /// The closed periods' sums and largest gap.
    closed: NoisePeriod,
}

/// The loop, on counter `T` with work `W`, until stopped or its duration
/// is over.
fn poll<T: Ticks, W: Work>(l: &mut Loop, work: &mut W) -> Result<(), String> {
    let spec = l.spec;
    let start = os::monotonic_ns();
    let mut at = Periods {
        open: NoisePeriod {
            start_ns: start,
            ..NoisePeriod::default()
        },
        end_ns: start.saturating_add(spec.period_ns),
        run_end_ns: start.saturating_add(spec.runtime_ns.min(spec.period_ns)),
        stop_ns: spec
            .duration_ns
            .map_or(u64::MAX, |d| start.saturating_add(d)),
        closed: NoisePeriod::default(),
    };
    let check = l.conv.ticks(CHECK_NS);
    let threshold = spec.threshold_ns;
    let (rec, conv) = (&mut *l.rec, l.conv);
    let mut prev = T::now();
    let mut next_check = prev.wrapping_add(check);
    // ---- hot loop: no allocation, lock or syscall ----
    loop {
        work.turn();
        let now = T::now();
        let ns = conv.ns(now.wrapping_sub(prev));
        prev = now;
        rec.count(ns);
        if ns >= threshold {
            let gap = over_threshold(rec, &mut at.open, l.ring, ns);
            if spec.stop_above_ns.is_some_and(|s| ns >= s) {
                // oslat's `-T`: this gap ends the run.
                l.found.stopped_at = Some(gap);
                l.stop.store(true, Ordering::Relaxed);
            }
        }
        if now >= next_check {
            match look_up(spec, rec, l.live, &mut at, l.stop) {
                LookUp::Go => {}
                LookUp::Slept => prev = T::now(),
                LookUp::Stop(result) => return result,
            }
            next_check = T::now().wrapping_add(check);
        }
    }
}

/// A gap at or over the threshold: counted in its period, kept if among the
/// worst, handed to the attribution with its time.
#[cold]
#[inline(never)]
fn over_threshold(rec: &mut NoiseRecorder, open: &mut NoisePeriod, ring: &GapRing, ns: u64) -> Gap {
    let end_ns = os::monotonic_ns();
    let gap = Gap { end_ns, ns };
    open.noise_ns += ns;
    open.gaps += 1;
    open.max_gap_ns = open.max_gap_ns.max(ns);
    rec.keep_worst(gap);
    ring.push(gap);
    gap
}

/// What the loop does after looking up.
enum LookUp {
    /// Go on polling.
    Go,
    /// It slept out its period: the gap across the sleep is not noise.
    Slept,
    /// Stop: its duration is over, it was asked to, or a sleep failed.
    Stop(Result<(), String>),
}

/// Once a millisecond: publish, close the period, sleep out the rest of it
/// when the runtime is over, or stop.
#[cold]
#[inline(never)]
fn look_up(
    spec: &NoiseSpec,
    rec: &mut NoiseRecorder,
    live: &NoiseLive,
    at: &mut Periods,
    stop: &AtomicBool,
) -> LookUp {
    let now = os::monotonic_ns();
    publish(live, at, now);
    if stop.load(Ordering::Relaxed) || now >= at.stop_ns {
        close(rec, at, now);
        publish(live, at, now);
        return LookUp::Stop(Ok(()));
    }
    if now >= at.run_end_ns && at.run_end_ns < at.end_ns {
        // The runtime is over: the rest of the period is the CPU's.
        close(rec, at, now);
        publish(live, at, now);
        if let Err(e) = sleep_until(at.end_ns.min(at.stop_ns), stop) {
            return LookUp::Stop(e);
        }
        if os::monotonic_ns() >= at.stop_ns {
            return LookUp::Stop(Ok(()));
        }
        next_period(spec, at, os::monotonic_ns());
        return LookUp::Slept;
    }
    if now >= at.end_ns {
        close(rec, at, now);
        next_period(spec, at, now);
    }
    LookUp::Go
}

/// Sleeps until `wake_at` (CLOCK_MONOTONIC ns). Err: the loop must stop
/// (asked to: Ok inside; a sleep failed: its error).
fn sleep_until(wake_at: u64, stop: &AtomicBool) -> Result<(), Result<(), String>> {
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(Ok(()));
        }
        match os::sleep_until_ns(wake_at) {
            0 => return Ok(()),
            crate::sys::consts::EINTR => continue,
            e => {
                let why = std::io::Error::from_raw_os_error(e);
                return Err(Err(format!("clock_nanosleep failed: {why}")));
            }
        }
    }
}

/// Opens the period that starts at `now` (skipping whole periods missed).
fn next_period(spec: &NoiseSpec, at: &mut Periods, now: u64) {
    let period = spec.period_ns.max(1);
    let mut end = at.end_ns.saturating_add(period);
    if now >= end {
        end = end.saturating_add((now - end) / period * period + period);
    }
    at.end_ns = end;
    at.run_end_ns = end
        .saturating_sub(period)
        .saturating_add(spec.runtime_ns.min(period));
    at.open = NoisePeriod {
        start_ns: now,
        ..NoisePeriod::default()
    };
}

/// Closes the open period at `now`.
fn close(rec: &mut NoiseRecorder, at: &mut Periods, now: u64) {
    let open = &mut at.open;
    open.runtime_ns = now.saturating_sub(open.start_ns);
    rec.close_period(*open);
    let c = &mut at.closed;
    c.runtime_ns += open.runtime_ns;
    c.noise_ns += open.noise_ns;
    c.gaps += open.gaps;
    c.max_gap_ns = c.max_gap_ns.max(open.max_gap_ns);
    *open = NoisePeriod {
        start_ns: now,
        ..NoisePeriod::default()
    };
}

/// The live figures: the closed periods' and the open one's so far (its
/// runtime up to `now`, so that noise and runtime are read over the same
/// time).
fn publish(live: &NoiseLive, at: &Periods, now: u64) {
    let (c, o) = (&at.closed, &at.open);
    live.noise_ns
        .store(c.noise_ns + o.noise_ns, Ordering::Relaxed);
    live.gaps.store(c.gaps + o.gaps, Ordering::Relaxed);
    live.max_gap_ns
        .store(c.max_gap_ns.max(o.max_gap_ns), Ordering::Relaxed);
    let open_runtime = now.saturating_sub(o.start_ns);
    live.runtime_ns
        .store(c.runtime_ns.saturating_add(open_runtime), Ordering::Relaxed);
}

/// Where the code a polling thread runs lies (kept mapped as the timer
/// threads' is).
pub fn hot_code() -> [usize; 9] {
    type Poll<W> = fn(&mut Loop, &mut W) -> Result<(), String>;
    type Look = fn(&NoiseSpec, &mut NoiseRecorder, &NoiseLive, &mut Periods, &AtomicBool) -> LookUp;
    type Over = fn(&mut NoiseRecorder, &mut NoisePeriod, &GapRing, u64) -> Gap;
    [
        poll::<counter::Tsc, NoWork> as Poll<NoWork> as usize,
        poll::<counter::Tsc, Memmove> as Poll<Memmove> as usize,
        poll::<counter::ArmVirtual, NoWork> as Poll<NoWork> as usize,
        poll::<counter::ArmVirtual, Memmove> as Poll<Memmove> as usize,
        poll::<counter::Monotonic, NoWork> as Poll<NoWork> as usize,
        poll::<counter::Monotonic, Memmove> as Poll<Memmove> as usize,
        look_up as Look as usize,
        over_threshold as Over as usize,
        NoiseRecorder::keep_worst as fn(&mut NoiseRecorder, Gap) as usize,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_become_ns_at_any_frequency() {
        for hz in [19_200_000u64, 1_000_000_000, 2_894_561_000, 3_600_000_000] {
            let c = Conv::new(hz);
            let one_s = c.ns(hz);
            assert!(one_s.abs_diff(1_000_000_000) <= 1, "{hz}: {one_s}");
            // Ten minutes of ticks do not overflow.
            let ten_min = c.ns(hz * 600);
            assert!(ten_min.abs_diff(600_000_000_000) <= 600, "{hz}: {ten_min}");
            assert_eq!(c.ticks(1_000_000_000).abs_diff(hz), 0);
        }
        assert_eq!(Conv::new(1_000_000_000).ns(12345), 12345);
    }
}

//! Timer threads: the cyclictest method. Each thread pins itself, takes its
//! policy, then wakes up on absolute CLOCK_MONOTONIC deadlines and records
//! how late it woke. The main thread watches them through [`live`] counters
//! without stopping them, and gets their [`Recorder`]s back when they end.

pub mod live;
pub mod noise;
mod timer;

use crate::stats::Recorder;
use crate::stats::spikes::{SpikeSpec, Spikes};
use crate::sys::os::{self, Sched};
use live::LiveCounters;
use std::os::unix::thread::JoinHandleExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;

/// What a timer thread must do.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct TimerSpec {
    /// Its index N.
    pub index: usize,
    /// CPUs to pin to.
    pub cpus: Vec<usize>,
    /// Policy and priority.
    pub sched: Sched,
    /// Period (ns).
    pub period_ns: u64,
    /// Stop after this long (ns).
    pub duration_ns: Option<u64>,
    /// Stop after this many samples.
    pub loops: Option<u64>,
    /// Systress histogram size (µs).
    pub histo_size_us: u64,
    /// Keep the first N samples one by one (absent in older results).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub keep_samples: u64,
    /// Cpuset the thread enters before pinning itself.
    pub cpuset: Option<crate::isolate::cpuset::CpusetTarget>,
    /// Which wake-ups to keep with their time (absent in older results).
    #[serde(default)]
    pub spikes: SpikeSpec,
    /// Wake-ups at least this late are marked in the trace and announced
    /// to the flight recorder (absent in older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_threshold_ns: Option<u64>,
    /// Its first wake-ups, over this long (ns), are not counted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warmup_ns: u64,
    /// SCHED_DEADLINE's reservation, instead of `sched`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<crate::sched::Deadline>,
}

impl TimerSpec {
    /// How long it measures when nothing stops it (ns), its warm-up
    /// excluded: its duration, or its loops' periods (more if periods are
    /// skipped), whichever is shorter; None when it runs until stopped.
    pub fn own_lifetime_ns(&self) -> Option<u64> {
        let by_loops = self.loops.map(|n| n.saturating_mul(self.period_ns));
        match (self.duration_ns, by_loops) {
            (Some(d), Some(l)) => Some(d.min(l)),
            (d, l) => d.or(l),
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// How a timer thread ended.
#[derive(Debug)]
pub struct TimerOutcome {
    /// Its recorder (None only if the thread panicked).
    pub recorder: Option<Recorder>,
    /// The first CPU it ran on and the last (sched_getcpu).
    pub cpus_seen: (Option<usize>, Option<usize>),
    /// The scheduling it actually had.
    pub sched_seen: Option<Sched>,
    /// The SCHED_DEADLINE reservation it had, if any.
    pub deadline_seen: Option<crate::sched::Deadline>,
    /// The cpuset it ran in (`/proc/thread-self/cpuset`).
    pub cpuset_seen: Option<String>,
    /// What the kernel counted for it between its first sleep and its last
    /// sample: page faults (none if its memory was ready) and switches.
    pub usage: Option<os::ThreadUsage>,
    /// Why it failed to start or stopped early.
    pub error: Option<String>,
}

/// A running timer thread.
pub struct TimerHandle {
    /// Its spec.
    pub spec: TimerSpec,
    /// Its live counters.
    pub live: Arc<LiveCounters>,
    handle: Option<JoinHandle<TimerOutcome>>,
}

impl TimerHandle {
    /// Wakes it from its sleep (used when the run stops).
    pub fn wake(&self) {
        if let Some(h) = &self.handle {
            os::wake_thread(h.as_pthread_t());
        }
    }

    /// Waits for it to end.
    pub fn join(mut self) -> (TimerSpec, Arc<LiveCounters>, TimerOutcome) {
        let outcome = match self.handle.take().map(JoinHandle::join) {
            Some(Ok(o)) => o,
            _ => TimerOutcome {
                recorder: None,
                cpus_seen: (None, None),
                sched_seen: None,
                deadline_seen: None,
                cpuset_seen: None,
                usage: None,
                error: Some("timer thread panicked".into()),
            },
        };
        (self.spec, self.live, outcome)
    }
}

/// Where the timer threads' wake-ups come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// The kernel's clock and sleeps: a real measurement.
    Kernel,
    /// Simulated from a seed, for tests only (`RTLAB_SIMULATED_WAKE`).
    Simulated(u64),
}

/// The latencies (ns) a simulated thread `index` of `seed` draws, in order
/// (for tests that predict a simulated run's figures).
pub fn simulated_latencies(seed: u64, index: usize, n: usize) -> Vec<u64> {
    let mut state = simulated_state(seed, index);
    (0..n)
        .map(|_| timer::SimulatedWake::latency(&mut state))
        .collect()
}

fn simulated_state(seed: u64, index: usize) -> u64 {
    (seed ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1
}

/// Why the timer threads could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The signal handler that interrupts their sleeps.
    #[error("cannot install the wake-up handler: {0}")]
    WakeHandler(#[source] std::io::Error),
    /// A thread's recorder.
    #[error("timer_thread[{index}]: histogram: {source}")]
    Histogram {
        /// N.
        index: usize,
        /// hdrhistogram's reason.
        source: hdrhistogram::CreationError,
    },
    /// The thread itself.
    #[error("timer_thread[{index}]: cannot start thread: {source}")]
    Thread {
        /// N.
        index: usize,
        /// The system's answer.
        source: std::io::Error,
    },
}

/// What the timer threads are started with besides their specs.
pub struct StartWith {
    /// Where their wake-ups come from.
    pub wake: Wake,
    /// The trace marker a wake-up over `trace.threshold` is written to.
    pub marker: Option<Arc<std::fs::File>>,
    /// A monitoring run: the threads fill the metrics histogram.
    pub metrics: bool,
}

/// Starts every timer thread, waits until all have pinned themselves and
/// taken their policy, calls `ready` with the addresses of the code they
/// are about to run, then releases them together. `stop` ends them all.
/// `notify` is called by each thread after it left its hot loop. With
/// `metrics` (a monitoring run) the threads also fill the metrics
/// histogram of their live counters; otherwise it costs them nothing.
pub fn start(
    specs: Vec<TimerSpec>,
    root: &crate::sys::SysRoot,
    stop: Arc<AtomicBool>,
    notify: impl Fn() + Send + Clone + 'static,
    with: StartWith,
    ready: impl FnOnce(&[usize]),
) -> Result<Vec<TimerHandle>, StartError> {
    let StartWith {
        wake,
        marker,
        metrics,
    } = with;
    os::install_wake_handler().map_err(StartError::WakeHandler)?;
    // The clock's vDSO function found now, not by a thread's first read.
    os::prepare_clock();
    let barrier = Arc::new(Barrier::new(specs.len() + 1));
    let mut handles = Vec::new();
    for spec in specs {
        let mut recorder =
            Recorder::new(spec.histo_size_us).map_err(|source| StartError::Histogram {
                index: spec.index,
                source,
            })?;
        recorder.spikes = Spikes::new(spec.spikes);
        // Written whole now, so that the hot loop's stores never fault.
        recorder.samples = vec![u32::MAX; spec.keep_samples as usize];
        std::hint::black_box(&mut recorder.samples);
        let live = Arc::new(LiveCounters::default());
        let sp = spec.clone();
        let links = timer::Links {
            live: live.clone(),
            stop: stop.clone(),
            barrier: barrier.clone(),
            root: root.clone(),
            marker: marker.clone(),
            metrics,
        };
        let n = notify.clone();
        let handle = std::thread::Builder::new()
            .name(format!("rtlab-timer{}", spec.index))
            .stack_size(256 * 1024)
            .spawn(move || {
                let outcome = match wake {
                    Wake::Kernel => timer::run(sp, recorder, links, timer::KernelWake),
                    Wake::Simulated(seed) => {
                        let source = timer::SimulatedWake::new(simulated_state(seed, sp.index));
                        timer::run(sp, recorder, links, source)
                    }
                };
                n();
                outcome
            })
            .map_err(|source| StartError::Thread {
                index: spec.index,
                source,
            })?;
        handles.push(TimerHandle {
            spec,
            live,
            handle: Some(handle),
        });
    }
    ready(&hot_code(false));
    barrier.wait();
    Ok(handles)
}

/// Where the code a measuring timer thread runs lies: its loop, and the C
/// library functions it calls (see
/// [`crate::sys::memory::release_startup_pages`]); with `noise`, the
/// noise threads' too (kept resident only in runs that have them: 128 KB
/// around each of their nine functions is most of a megabyte otherwise).
pub fn hot_code(noise: bool) -> Vec<usize> {
    let mut hot = timer::hot_code().to_vec();
    if noise {
        hot.extend(noise::hot_code());
    }
    hot.extend(os::hot_library_code());
    hot
}

/// Asks every thread to stop now and interrupts their sleeps.
pub fn stop_all(handles: &[TimerHandle], stop: &AtomicBool) {
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.wake();
    }
}

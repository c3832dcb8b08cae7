//! The run's noise threads: started after the timer threads, told to the
//! trace stream (their gap rings feed the attribution), stopped with the
//! timers, and turned into their part of the result.

use super::Nudge;
use crate::measure::noise::{self, NoiseHandle, NoiseLive, NoiseOutcome, NoiseSpec};
use crate::plan::RunPlan;
use crate::result::NoiseResult;
use crate::trace::consumer::NoiseLearned;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

/// A noise thread after its end.
pub(super) type JoinedNoise = (NoiseSpec, Arc<NoiseLive>, NoiseOutcome);

/// The noise threads, stopped and joined when dropped.
pub(super) struct Pollers {
    pub(super) handles: Vec<NoiseHandle>,
    stop: Arc<AtomicBool>,
}

impl Pollers {
    /// No noise threads.
    pub(super) fn none() -> Self {
        Pollers {
            handles: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Starts the plan's noise threads (released together); each tells the
    /// watch loop through `tx` when it is done. `traced`: their gaps are
    /// attributed (their rings are read).
    pub(super) fn start(
        plan: &RunPlan,
        root: &crate::sys::SysRoot,
        tx: mpsc::Sender<Nudge>,
        traced: bool,
    ) -> Result<Self, crate::measure::StartError> {
        if plan.noise.is_empty() {
            return Ok(Self::none());
        }
        let specs = plan.noise.iter().map(|n| n.spec.clone()).collect();
        let stop = Arc::new(AtomicBool::new(false));
        let notify = move || {
            let _ = tx.send(Nudge::TimerDone);
        };
        let rings = if traced { noise::RING_GAPS } else { 0 };
        let handles = noise::start(specs, root, stop.clone(), rings, notify)?;
        Ok(Pollers { handles, stop })
    }

    /// What the trace stream's consumers learn of them.
    pub(super) fn learned(&self) -> Vec<NoiseLearned> {
        self.handles
            .iter()
            .map(|h| NoiseLearned {
                index: h.spec.index,
                tid: h.live.tid.load(Ordering::Relaxed),
                ring: h.ring.clone(),
            })
            .collect()
    }

    /// Their rows in the live table now.
    pub(super) fn rows(&self) -> Vec<crate::report::live::NoiseRow> {
        self.handles
            .iter()
            .map(|h| crate::report::live::NoiseRow {
                index: h.spec.index,
                cpu: h.spec.cpu,
                runtime_ns: h.live.runtime_ns.load(Ordering::Relaxed),
                noise_ns: h.live.noise_ns.load(Ordering::Relaxed),
                max_gap_ns: h.live.max_gap_ns.load(Ordering::Relaxed),
                gaps: h.live.gaps.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// Whether one could not set itself up.
    pub(super) fn any_failed(&self) -> bool {
        self.handles
            .iter()
            .any(|h| h.live.failed.load(Ordering::Relaxed))
    }

    /// Whether there are some and all have ended.
    pub(super) fn all_done(&self) -> bool {
        !self.handles.is_empty()
            && self
                .handles
                .iter()
                .all(|h| h.live.finished.load(Ordering::Acquire))
    }

    /// Stops them and waits (2 s at the very most) until each has closed
    /// its last period and pushed its last gap.
    pub(super) fn halt(&self) {
        noise::stop_all(&self.handles, &self.stop);
        let give_up = Instant::now() + Duration::from_secs(2);
        while Instant::now() < give_up
            && self
                .handles
                .iter()
                .any(|h| !h.live.finished.load(Ordering::Acquire))
        {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Stops them and collects what each measured.
    pub(super) fn join(&mut self) -> Vec<JoinedNoise> {
        noise::stop_all(&self.handles, &self.stop);
        self.handles.drain(..).map(NoiseHandle::join).collect()
    }
}

impl Drop for Pollers {
    fn drop(&mut self) {
        let _ = self.join();
    }
}

/// Each noise thread's result; `unavailable`: why the gaps of those that
/// asked for it were not attributed.
pub(super) fn results(
    plan: &RunPlan,
    joined: Vec<JoinedNoise>,
    mut attributions: Vec<crate::trace::noise::NoiseAttribution>,
    unavailable: Option<&str>,
) -> Vec<NoiseResult> {
    joined
        .into_iter()
        .map(|(spec, live, outcome)| {
            let attribution = attributions
                .iter()
                .position(|a| a.noise == spec.index)
                .map(|i| attributions.swap_remove(i));
            let planned = plan.noise.iter().find(|n| n.spec.index == spec.index);
            let asked = planned.is_some_and(|n| n.attribute);
            let rec = outcome.recorder.as_ref();
            let (gaps_exact, gaps_hdr) =
                rec.map(crate::stats::noise::histogram).unwrap_or_default();
            let mut worst = rec.map(|r| r.worst.clone()).unwrap_or_default();
            worst.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.end_ns.cmp(&b.end_ns)));
            NoiseResult {
                index: spec.index,
                tid: live.tid.load(Ordering::Relaxed),
                cpu: spec.cpu,
                cpu_first: outcome.cpus_seen.0,
                cpu_last: outcome.cpus_seen.1,
                sched: outcome.sched_seen.unwrap_or(spec.sched),
                counter: spec.counter.kind,
                counter_hz: spec.counter.hz,
                counter_why: planned.map(|n| n.counter_why.clone()).unwrap_or_default(),
                threshold_ns: spec.threshold_ns,
                period_ns: spec.period_ns,
                runtime_per_period_ns: spec.runtime_ns,
                summary: rec.map(crate::stats::noise::summarize).unwrap_or_default(),
                periods: rec.map(|r| r.periods.clone()).unwrap_or_default(),
                periods_merged: rec.map_or(1, |r| r.periods_merged),
                gaps_exact,
                gaps_hdr,
                worst,
                warmup_min_gap_ns: outcome.warmup_min_gap_ns,
                stopped_at: outcome.stopped_at,
                attribution_unavailable: unavailable
                    .filter(|_| asked && attribution.is_none())
                    .map(str::to_string),
                attribution,
                error: outcome.error,
            }
        })
        .collect()
}

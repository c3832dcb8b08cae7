//! The IRQ side of each timer thread's latency (`irq_latency`, rtla's
//! "IRQ" column): from the trace stream, each timer the thread arms for
//! its sleep (`hrtimer_start` by the thread, `function=hrtimer_wakeup`)
//! and that timer's handling (`hrtimer_expire_entry` of the same
//! `hrtimer`): its `now` less the armed expiry, which is the thread's
//! deadline. The thread's own latency adds the wake-up and the switch
//! to it: the two, side by side, say whether a spike was the interrupt's
//! or the scheduler's. Pure: fed events, gives histograms.

use crate::measure::live::{METRIC_BUCKETS, metric_bucket};
use crate::stats::{self, HdrBucket, Recorder, Summary};
use crate::trace::consumer::{Consumer, Filter, Learned, StreamEnd, Tracepoint};
use crate::trace::consumer::{StreamResults, StreamSpec};
use crate::trace::event::Event;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// One timer thread's IRQ-side latency (`timer_irq[]` in the result).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerIrqResult {
    /// The timer thread's index.
    pub timer: usize,
    /// Its TID.
    pub tid: i32,
    /// From the deadline to the timer's handling, every wake-up seen.
    pub latency: Summary,
    /// Its HDR buckets.
    pub hdr_histogram: Vec<HdrBucket>,
}

/// Largest latency of the 1-µs histogram (µs): beyond, the HDR one.
const HISTO_US: u64 = 10_000;
/// Most timers armed and not expired kept (a thread has one at a time).
const MAX_ARMED: usize = 4096;

/// The tracker of every timer thread's IRQ side.
#[derive(Default)]
pub struct TimerIrq {
    /// (index, TID, first deadline measured, its recorder).
    timers: Vec<(usize, i32, u64, Option<Recorder>)>,
    /// Per timer: the metrics histogram (monitoring) and its sum (ns).
    metrics: Vec<([u64; METRIC_BUCKETS], u64)>,
    /// Armed `hrtimer` → (position in `timers`, expiry ns).
    armed: HashMap<u64, (usize, u64)>,
}

impl TimerIrq {
    /// Follows the timer threads `(index, TID, first deadline measured)`
    /// (known once they run): the deadlines of their warm-up are not
    /// counted, as the threads do not count them.
    pub fn set_timers(&mut self, timers: &[(usize, i32, u64)]) {
        for &(index, tid, from) in timers.iter().filter(|t| t.1 > 0 && t.2 > 0) {
            if !self.timers.iter().any(|t| t.1 == tid) {
                self.timers
                    .push((index, tid, from, Recorder::new(HISTO_US).ok()));
                self.metrics.push(([0; METRIC_BUCKETS], 0));
            }
        }
    }

    /// The TIDs followed.
    pub fn tids(&self) -> Vec<i32> {
        self.timers.iter().map(|t| t.1).collect()
    }

    /// Follows one event.
    pub fn feed(&mut self, e: &Event) {
        match e.name.as_ref() {
            "hrtimer_start" => {
                let Some(at) = self.timers.iter().position(|t| t.1 == e.pid) else {
                    return;
                };
                if e.field("function") != Some("hrtimer_wakeup") {
                    return;
                }
                let expiry = e.field("softexpires").or(e.field("expires"));
                if let (Some(timer), Some(expiry)) = (hex(e.field("hrtimer")), expiry) {
                    let Ok(expiry) = expiry.parse::<u64>() else {
                        return;
                    };
                    if self.armed.len() >= MAX_ARMED {
                        self.armed.clear();
                    }
                    self.armed.insert(timer, (at, expiry));
                }
            }
            "hrtimer_expire_entry" => {
                let Some(timer) = hex(e.field("hrtimer")) else {
                    return;
                };
                let Some((at, expiry)) = self.armed.remove(&timer) else {
                    return;
                };
                let now = e.field("now").and_then(|n| n.parse::<u64>().ok());
                let (_, _, from, rec) = &mut self.timers[at];
                if let (Some(now), Some(r)) = (now, rec.as_mut())
                    && expiry >= *from
                {
                    let latency = now.saturating_sub(expiry);
                    r.record(latency);
                    let (buckets, sum) = &mut self.metrics[at];
                    buckets[metric_bucket(latency)] += 1;
                    *sum = sum.saturating_add(latency);
                }
            }
            // A timer cancelled (the thread woken otherwise) never expires.
            "hrtimer_cancel" => {
                if let Some(timer) = hex(e.field("hrtimer")) {
                    self.armed.remove(&timer);
                }
            }
            _ => {}
        }
    }

    /// Each timer thread's metrics histogram so far: (index, samples per
    /// bucket of the metrics' bounds, sum in ns).
    pub fn live(&self) -> Vec<(usize, Vec<u64>, u64)> {
        self.timers
            .iter()
            .zip(&self.metrics)
            .map(|(t, (b, sum))| (t.0, b.to_vec(), *sum))
            .collect()
    }

    /// The results, by timer thread.
    pub fn finish(self) -> Vec<TimerIrqResult> {
        self.timers
            .into_iter()
            .filter_map(|(timer, tid, _, rec)| {
                let rec = rec?;
                Some(TimerIrqResult {
                    timer,
                    tid,
                    latency: stats::summarize(&rec),
                    hdr_histogram: stats::hdr_buckets(&rec),
                })
            })
            .collect()
    }
}

/// `ffffc90004e7fc48` (a pointer as the trace shows it).
fn hex(text: Option<&str>) -> Option<u64> {
    let t = text?;
    u64::from_str_radix(t.trim_start_matches("0x"), 16).ok()
}

/// Registers the timer threads' IRQ side, when the spec asks for it.
pub fn register(spec: &StreamSpec, out: &mut Vec<Box<dyn Consumer>>) {
    if spec.timer_irq {
        out.push(Box::new(TimerIrq::default()));
    }
}

/// The timers' handling, and their arming (filtered to the timer threads).
const TRACEPOINTS: &[Tracepoint] = &[
    Tracepoint::required(&["timer/hrtimer_expire_entry"]),
    crate::trace::event::TIMER_START,
];

impl Consumer for TimerIrq {
    fn tracepoints(&self) -> Vec<Tracepoint> {
        TRACEPOINTS.to_vec()
    }

    /// The timer threads start after the stream: until their TIDs are
    /// known, every arm is traced (none of theirs missed).
    fn filter(&self, tracepoint: &str) -> Option<Filter> {
        if tracepoint != crate::trace::event::TIMER_START.name() {
            return None;
        }
        Some(match self.tids() {
            t if t.is_empty() => Filter::Everything,
            t => Filter::Terms(t.iter().map(|t| format!("common_pid == {t}")).collect()),
        })
    }

    fn learn(&mut self, run: &Learned) {
        self.set_timers(run.timers);
    }

    fn feed(&mut self, e: &Event) {
        TimerIrq::feed(self, e);
    }

    fn finish(self: Box<Self>, _: &StreamEnd, into: &mut StreamResults) {
        into.timer_irq = TimerIrq::finish(*self);
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::text;

    #[test]
    fn each_armed_sleep_is_matched_to_its_expiry() {
        // Recorded on this VM (the binary reader's text): the timer thread
        // 3580 arms its sleep; the interrupt handles it 3.447 µs late.
        let text = "\
rtlab-timer0-3580 [001] ..... 13609.198194000: hrtimer_start: hrtimer=ffffc90004e7fc48 function=hrtimer_wakeup expires=13609199160970 softexpires=13609199160970 mode=ABS
sh-3575 [001] ..... 13609.199174757: hrtimer_expire_entry: hrtimer=ffffc90004e7fc48 function=hrtimer_wakeup now=13609199174417
other-9 [001] ..... 13609.199200000: hrtimer_start: hrtimer=ffffc90004e7aaaa function=hrtimer_wakeup expires=13609199300000 softexpires=13609199300000 mode=ABS
sh-3575 [001] ..... 13609.199300500: hrtimer_expire_entry: hrtimer=ffffc90004e7aaaa function=hrtimer_wakeup now=13609199300400
sh-3575 [001] ..... 13609.200174757: hrtimer_expire_entry: hrtimer=ffffc90004e7fc48 function=hrtimer_wakeup now=13609200174417
";
        let mut t = TimerIrq::default();
        t.set_timers(&[(0, 3580, 13_609_199_160_970), (1, 0, 0)]);
        for e in text.lines().filter_map(text::line) {
            t.feed(&e);
        }
        let live = t.live();
        assert_eq!(
            (live[0].0, live[0].1.iter().sum::<u64>(), live[0].2),
            (0, 1, 13_447)
        );
        let [r] = &t.finish()[..] else { panic!() };
        // Another task's timer is not counted; an expiry not armed in the
        // trace is not either.
        assert_eq!((r.timer, r.tid, r.latency.samples), (0, 3580, 1));
        assert_eq!(r.latency.max_ns, 174_417 - 160_970);
    }
}

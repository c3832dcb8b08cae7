//! The watch phase: the live table, CPU load, trace reading, program
//! supervision and signals, until the run ends.

use super::arm::Armed;
use super::exporting::Exporting;
use super::{Nudge, RunOptions};
use crate::config::CpuLoadDisplay;
use crate::measure::TimerHandle;
use crate::plan::RunPlan;
use crate::programs;
use crate::report::{self, live::LiveRow, live::StealRow, live::TaskRow};
use crate::result::EndReason;
use crate::stats::cpu_load::{self, CpuLoad};
use crate::sys::SysRoot;
use crate::sys::proc_stat::{self, ProcStat};
use crate::trace::flight::FlightRecorder;
use std::io::{IsTerminal, Write};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What the live view shows beside the timer threads' rows.
struct Beside<'a> {
    table: report::live::Beside<'a>,
    /// Lines under the table (the clock, the last cause, warnings).
    note: Option<String>,
}

/// The task-latency threads' rows now.
fn task_rows(armed: &Armed) -> Vec<TaskRow> {
    let live = armed
        .stream
        .as_ref()
        .map(super::traces::task_latency_live)
        .unwrap_or_default();
    live.iter()
        .flat_map(|(index, threads)| threads.iter().map(|t| TaskRow::live(*index, t)))
        .collect()
}

/// Prints the live table, redrawing it in place on a terminal.
struct LiveView {
    tty: bool,
    every_refresh: bool,
    /// No table at all: another tool's outputs own stdout (`rtlab oslat`).
    silent: bool,
    lines_shown: usize,
    display: CpuLoadDisplay,
    /// cyclictest's live lines instead of the table.
    cyclictest: Option<CyclictestLive>,
}

/// cyclictest's live lines: redrawn in place with `ESC[nA` whether or not
/// stdout is a terminal (scripts read the last block), with `-M` only
/// when a maximum grew.
struct CyclictestLive {
    view: crate::report::cyclictest::View,
    maxima: Vec<u64>,
    lines_shown: usize,
}

impl CyclictestLive {
    fn show(&mut self, rows: &[LiveRow], root: &SysRoot, last: bool) {
        let maxima: Vec<u64> = rows.iter().map(|r| r.snap.max_ns).collect();
        let grew = maxima != self.maxima || self.lines_shown == 0;
        self.maxima = maxima;
        if self.view.quiet || self.view.verbose {
            return;
        }
        let mut out = std::io::stdout().lock();
        if self.view.refresh_on_max {
            // cyclictest -M: each block is followed by a move back up, and
            // the end moves down past the last one.
            // A run too short for a refresh still shows its block once.
            if grew && !(last && self.lines_shown > 0) {
                let text = self.block(rows, root);
                self.lines_shown = text.lines().count();
                let _ = write!(
                    out,
                    "{}\x1b[{}A",
                    crate::text::terminal(&text),
                    self.lines_shown
                );
            }
            if last {
                let _ = writeln!(out, "\x1b[{}B", self.lines_shown);
            }
            let _ = out.flush();
            return;
        }
        let text = self.block(rows, root);
        if self.lines_shown > 0 {
            let _ = write!(out, "\x1b[{}A", self.lines_shown);
        }
        let _ = write!(out, "{}", crate::text::terminal(&text));
        let _ = out.flush();
        self.lines_shown = text.lines().count();
    }

    fn block(&self, rows: &[LiveRow], root: &SysRoot) -> String {
        let loadavg = root
            .read_opt(crate::sys::paths::LOADAVG)
            .unwrap_or_default();
        crate::report::cyclictest::live_block(&self.view, rows, &loadavg)
    }
}

impl LiveView {
    fn show(&mut self, rows: &[LiveRow], load: Option<&CpuLoad>, last: bool, beside: Beside) {
        if self.silent || !(self.tty || self.every_refresh || last) {
            return;
        }
        let mut text = report::live::table(rows, load, self.display, beside.table);
        if let Some(note) = beside.note {
            text.push_str(&note);
            text.push('\n');
        }
        let mut out = std::io::stdout().lock();
        if self.tty && self.lines_shown > 0 {
            let _ = write!(out, "\x1b[{}A", self.lines_shown);
        }
        for line in text.lines() {
            if self.tty {
                let _ = write!(out, "\x1b[2K");
            }
            let _ = writeln!(out, "{}", crate::text::terminal(line));
        }
        if !self.tty && self.every_refresh {
            let _ = writeln!(out);
        }
        let _ = out.flush();
        self.lines_shown = if self.tty { text.lines().count() } else { 0 };
    }
}

pub(super) fn rows(timers: &[TimerHandle]) -> Vec<LiveRow> {
    timers
        .iter()
        .map(|t| LiveRow {
            index: t.spec.index,
            tid: t.live.tid.load(Ordering::Relaxed),
            snap: t.live.read(),
        })
        .collect()
}

/// CPU load between samples of `/proc/stat`, kept in a bounded series.
pub(super) struct LoadSampler {
    /// The reading at the start, for the run's steal time.
    first: Option<ProcStat>,
    prev: Option<(ProcStat, Instant)>,
    pub(super) series: Vec<CpuLoad>,
    pub(super) last: Option<CpuLoad>,
    /// Each CPU's steal over the last interval (%).
    last_steal: Vec<(usize, f64)>,
    run_start: Instant,
}

impl LoadSampler {
    pub(super) fn new(root: &SysRoot, run_start: Instant) -> Self {
        let first = proc_stat::read(root).ok();
        LoadSampler {
            prev: first.clone().map(|s| (s, Instant::now())),
            first,
            series: Vec::new(),
            last: None,
            last_steal: Vec::new(),
            run_start,
        }
    }

    /// Each CPU's steal time from the start to the last sample (ms); empty
    /// where `/proc/stat` could not be read.
    pub(super) fn steal_ms(&self) -> Vec<(usize, f64)> {
        match (&self.first, &self.prev) {
            (Some(first), Some((last, _))) => {
                cpu_load::steal_ms(first, last, crate::sys::os::clock_ticks_per_second())
            }
            _ => Vec::new(),
        }
    }

    /// Each CPU's steal since boot (s) at the last sample, for the metrics.
    pub(super) fn steal_since_boot(&self) -> Vec<(usize, f64)> {
        self.prev.as_ref().map_or_else(Vec::new, |(s, _)| {
            cpu_load::steal_seconds(s, crate::sys::os::clock_ticks_per_second())
        })
    }

    /// The live view's steal lines: each CPU the hypervisor took time from
    /// since the start, with its share of the last interval; none when it
    /// took none (bare metal, or a quiet host).
    pub(super) fn steal_rows(&self) -> Vec<report::live::StealRow> {
        self.steal_ms()
            .into_iter()
            .filter(|&(_, ms)| ms > 0.0)
            .map(|(cpu, run_ms)| report::live::StealRow {
                cpu,
                percent: self
                    .last_steal
                    .iter()
                    .find(|(c, _)| *c == cpu)
                    .map_or(0.0, |x| x.1),
                run_ms,
            })
            .collect()
    }

    /// Samples the load since the last sample (the last one stays if
    /// `/proc/stat` cannot be read).
    fn sample(&mut self, root: &SysRoot) {
        let now = Instant::now();
        let Ok(stat) = proc_stat::read(root) else {
            return;
        };
        let Some((before, t0)) = self.prev.replace((stat.clone(), now)) else {
            return;
        };
        let load = cpu_load::between(
            &before,
            &stat,
            now.duration_since(self.run_start).as_secs_f64(),
            now.duration_since(t0).as_secs_f64(),
        );
        cpu_load::push_bounded(&mut self.series, load.clone());
        self.last = Some(load);
        self.last_steal = cpu_load::steal_percent(&before, &stat);
    }
}

/// The watch phase: the live table, CPU load, program supervision and
/// signals, until the run ends.
pub(super) struct Watch {
    /// The exporters of a monitoring run.
    pub(super) exporter: Option<Exporting>,
    view: LiveView,
    pub(super) load: LoadSampler,
    period: Duration,
    run_start: Instant,
    /// What the live view keeps saying of the endpoint once it failed.
    endpoint_note: Option<String>,
    /// The partitions when the run started, checked at every refresh.
    pub(super) partitions: Vec<crate::isolate::state::Partition>,
    /// How they changed since, each said once.
    pub(super) partitions_changed: Vec<String>,
    /// The first refresh is done (and the code that ran once let go).
    settled: bool,
    /// The task-latency threads' rows at the last refresh.
    last_tasks: Vec<TaskRow>,
    /// How long the run should last, when every part of it ends by itself.
    planned: Option<Duration>,
}

/// How long `plan` lasts when nothing stops it.
fn planned_length(plan: &RunPlan) -> Option<Duration> {
    plan.planned_length_ns().map(Duration::from_nanos)
}

/// The live view's clock line: elapsed, and what is left when known.
fn clock_line(elapsed: Duration, planned: Option<Duration>) -> String {
    let e = elapsed.as_secs_f64();
    match planned {
        Some(p) => format!(
            "elapsed {e:.1} s of {:.1} s, {:.1} s left",
            p.as_secs_f64(),
            (p.as_secs_f64() - e).max(0.0)
        ),
        None => format!("elapsed {e:.1} s, until stopped"),
    }
}

impl Watch {
    pub(super) fn new(plan: &RunPlan, opts: &RunOptions, run_start: Instant) -> Self {
        Watch {
            exporter: None,
            view: LiveView {
                tty: std::io::stdout().is_terminal(),
                every_refresh: opts.every_refresh,
                silent: opts.silent,
                lines_shown: 0,
                display: plan.main.cpu_load,
                cyclictest: opts.cyclictest.clone().map(|view| CyclictestLive {
                    view,
                    maxima: Vec::new(),
                    lines_shown: 0,
                }),
            },
            load: LoadSampler::new(&opts.root, run_start),
            period: Duration::from_nanos(plan.main.stats_period_ns),
            run_start,
            endpoint_note: None,
            partitions: Vec::new(),
            partitions_changed: Vec::new(),
            settled: false,
            last_tasks: Vec::new(),
            planned: planned_length(plan),
        }
    }

    /// Watches until the run ends; returns why it ended.
    pub(super) fn run(
        &mut self,
        armed: &mut Armed,
        rx: &mpsc::Receiver<Nudge>,
        root: &SysRoot,
    ) -> EndReason {
        if let Some(failed) = armed.failed.take() {
            return failed;
        }
        let mut next_refresh = Instant::now() + self.period;
        loop {
            let mut wake_at = armed
                .supervisor
                .next_respawn()
                .map_or(next_refresh, |r| r.min(next_refresh));
            if armed.flight.is_some() || armed.stream.is_some() || armed.spikes.is_some() {
                wake_at = wake_at.min(Instant::now() + crate::trace::flight::LOOK_EVERY);
            }
            if let Some(d) = armed.deadline {
                wake_at = wake_at.min(d);
            }
            match rx.recv_timeout(wake_at.saturating_duration_since(Instant::now())) {
                Ok(Nudge::Signal(sig)) => {
                    return EndReason::Interrupted {
                        signal: programs::signal_name(sig).to_string(),
                        number: sig,
                    };
                }
                Ok(Nudge::Snapshot) => self.snapshot(&armed.timers.handles),
                Ok(Nudge::Child | Nudge::TimerDone) | Err(_) => {}
            }
            armed.read_traces();
            if let Some(end) = armed.ending() {
                return end;
            }
            if Instant::now() >= next_refresh {
                self.refresh(armed, root);
                if !std::mem::replace(&mut self.settled, true) {
                    // What ran once at the start (the header, the first
                    // rows) is done with too.
                    let noise = !armed.noise.handles.is_empty();
                    super::arm::release_startup_pages(root, &crate::measure::hot_code(noise));
                }
                next_refresh += self.period;
                if next_refresh < Instant::now() {
                    next_refresh = Instant::now() + self.period;
                }
            }
        }
    }

    /// Keeps each change of the start's partitions seen now, said at once
    /// when `live` (the result's warnings say them again at the end).
    pub(super) fn check_partitions(&mut self, root: &SysRoot, live: bool) {
        if self.partitions.is_empty() {
            return;
        }
        for change in crate::isolate::state::partition_changes(root, &self.partitions) {
            if !self.partitions_changed.contains(&change) {
                if live {
                    crate::messages::warn(&change);
                }
                self.partitions_changed.push(change);
            }
        }
    }

    /// cyclictest's first line, once PM QoS is held (before any other).
    pub(super) fn announce_pm_qos(&self, pm: &crate::result::PmQos) {
        if let (Some(_), true, Some(us)) = (&self.view.cyclictest, pm.held, pm.requested_us) {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "# /dev/cpu_dma_latency set to {us}us");
            let _ = out.flush();
        }
    }

    /// Every `stats.period`: CPU load, the exported figures, the live table.
    pub(super) fn refresh(&mut self, armed: &Armed, root: &SysRoot) {
        self.load.sample(root);
        self.check_partitions(root, true);
        if let Some(x) = self.exporter.as_mut() {
            for news in x.refresh(armed, &self.load) {
                crate::messages::warn(&news);
                self.endpoint_note = Some(format!("warning: {news}"));
            }
        }
        let cause = armed.flight.as_ref().and_then(FlightRecorder::last_cause);
        let warnings = self.endpoint_note.iter().cloned().chain(
            self.partitions_changed
                .iter()
                .map(|p| format!("warning: {p}")),
        );
        // The clock on a terminal only: the table a script reads keeps the
        // documented layout.
        let clock = self
            .view
            .tty
            .then(|| clock_line(self.run_start.elapsed(), self.planned));
        let note = clock
            .into_iter()
            .chain(cause)
            .chain(warnings)
            .collect::<Vec<_>>()
            .join("\n");
        let note = (!note.is_empty()).then_some(note);
        if let Some(ct) = self.view.cyclictest.as_mut() {
            return ct.show(&rows(&armed.timers.handles), root, false);
        }
        let (tasks, steal) = (task_rows(armed), self.load.steal_rows());
        let noise = armed.noise.rows();
        let beside = Beside {
            table: report::live::Beside {
                noise: &noise,
                tasks: &tasks,
                steal: &steal,
            },
            note,
        };
        self.view.show(
            &rows(&armed.timers.handles),
            self.load.last.as_ref(),
            false,
            beside,
        );
        self.last_tasks = tasks;
    }

    /// SIGUSR1: the live table on stderr (the task-latency threads as the
    /// last refresh saw them), and the run goes on.
    fn snapshot(&self, timers: &[TimerHandle]) {
        let steal = self.load.steal_rows();
        let beside = report::live::Beside {
            noise: &[],
            tasks: &self.last_tasks,
            steal: &steal,
        };
        let table = report::live::table(
            &rows(timers),
            self.load.last.as_ref(),
            self.view.display,
            beside,
        );
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "rtlab: snapshot at {:.1} s (SIGUSR1)\n{table}",
            self.run_start.elapsed().as_secs_f64()
        );
    }

    /// The last load sample and the final table (the task-latency threads
    /// from their results).
    pub(super) fn finish(
        &mut self,
        final_rows: &[LiveRow],
        noise: &[report::live::NoiseRow],
        tasks: &[crate::trace::task_latency::TaskLatencyResult],
        root: &SysRoot,
    ) {
        self.load.sample(root);
        if let Some(ct) = self.view.cyclictest.as_mut() {
            return ct.show(final_rows, root, true);
        }
        let tasks: Vec<TaskRow> = tasks
            .iter()
            .flat_map(|m| {
                m.threads
                    .iter()
                    .map(|t| TaskRow::of_result(m.spec.index, t))
            })
            .collect();
        let steal: Vec<StealRow> = self.load.steal_rows();
        let beside = Beside {
            table: report::live::Beside {
                noise,
                tasks: &tasks,
                steal: &steal,
            },
            note: None,
        };
        self.view
            .show(final_rows, self.load.last.as_ref(), true, beside);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_says_what_is_left_when_the_run_ends_by_itself() {
        let secs = Duration::from_secs_f64;
        assert_eq!(
            clock_line(secs(3.04), Some(secs(10.0))),
            "elapsed 3.0 s of 10.0 s, 7.0 s left"
        );
        assert_eq!(
            clock_line(secs(12.0), Some(secs(10.0))),
            "elapsed 12.0 s of 10.0 s, 0.0 s left"
        );
        assert_eq!(clock_line(secs(1.0), None), "elapsed 1.0 s, until stopped");
    }

    /// The warm-up comes first: `main`'s lifetime and each timer thread's
    /// are counted after it.
    #[test]
    fn a_warm_up_lengthens_every_lifetime_that_ends_the_run() {
        let plan = |text: &str| {
            let fake = crate::plan::tests::fake();
            let opts = crate::plan::PlanOptions::default();
            crate::plan::plan_text(text, "f", &fake, &opts).unwrap()
        };
        let secs = |s: u64| Some(s * 1_000_000_000);
        let p = plan("main\n{\n warmup 1 s\n lifetime.duration 2 s\n}\ntimer_thread[0]\n{\n}\n");
        assert_eq!(
            (p.main.warmup_ns, p.main.lifetime_ns),
            (1_000_000_000, secs(2))
        );
        assert_eq!(p.run_lifetime_ns(), secs(3));
        assert_eq!(planned_length(&p), Some(Duration::from_secs(3)));
        // The timer threads' own lifetimes, the longest after the warm-up.
        let p = plan(
            "main\n{\n warmup 1 s\n}\ntimer_thread[0]\n{\n lifetime.duration 5 s\n}\n\
             timer_thread[1]\n{\n timer.period 1 ms\n lifetime.loops 2000\n}\n",
        );
        assert_eq!(p.run_lifetime_ns(), None);
        assert_eq!(p.planned_length_ns(), secs(6));
        // main's lifetime shorter than a thread's: it ends the run.
        let p = plan(
            "main\n{\n warmup 1 s\n lifetime.duration 2 s\n}\n\
             timer_thread[0]\n{\n lifetime.duration 5 s\n}\n",
        );
        assert_eq!(p.planned_length_ns(), secs(3));
        // Without a warm-up, as before.
        let p = plan("main\n{\n lifetime.duration 2 s\n}\ntimer_thread[0]\n{\n}\n");
        assert_eq!(p.run_lifetime_ns(), secs(2));
    }
}

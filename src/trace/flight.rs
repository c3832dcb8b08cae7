//! The flight recorder: while the run goes on, rtlab traces the measured
//! CPUs in its own tracefs instance (overwrite mode: only the last moments
//! are kept). A timer thread whose wake-up is at least `trace.threshold`
//! late announces it (live counters) and marks it in the trace; the main
//! thread then reads that CPU's buffer once and explains every marked
//! wake-up still in it ([`crate::trace::explain`]), from before its deadline to its
//! wake-up. Bounded: at most 10 reads a second and no more than 5 % of the
//! main thread's time in reads, each explaining at most [`MAX_PER_READ`]
//! (the worst first), and `trace.max_spikes` a run; the rest are counted.
//! Rationed, the worst come first: a read explains its worst marked
//! wake-ups, a wake-up a quarter later than any read so far is read at
//! once, whatever the ration, and past `max_spikes` a worse wake-up takes
//! the place of the least late explained: the run keeps its worst.

use crate::measure::TimerHandle;
use crate::sys::SysRoot;
use crate::sys::journal::Journal;
use crate::sys::trace::{self, Instance, Recording};
use crate::trace::event::{Event, Marker, Recent};
use crate::trace::explain::analyze::Explanation;
use crate::trace::explain::{TraceReport, analyze, verdict};
use crate::trace::source::{Held, Tails};
use crate::trace::text;
use rtlab_core::config::TraceStacks;
use std::fs::File;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the flight recorder must do.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TraceSpec {
    /// Explain wake-ups at least this late (ns).
    pub threshold_ns: u64,
    /// Explain at most this many in a run.
    pub max_spikes: usize,
    /// The kernel stacks recorded (absent in older results: none).
    #[serde(default = "no_stacks")]
    pub stacks: TraceStacks,
    /// Ring buffer per traced CPU (KiB; absent in older results).
    #[serde(default = "default_buffer_kb")]
    pub buffer_kb: u64,
    /// Tracepoints the user added (`SYSTEM/EVENT`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
    /// Say what every traced CPU ran at each explained deadline.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dump_tasks: bool,
}

fn no_stacks() -> TraceStacks {
    TraceStacks::Off
}

fn default_buffer_kb() -> u64 {
    rtlab_core::config::DEFAULT_TRACE_BUFFER_KB
}

/// How often the watch loop calls [`FlightRecorder::look`].
pub const LOOK_EVERY: Duration = Duration::from_millis(20);
/// At most 10 buffer reads a second: announced wake-ups wait for the next
/// read (the buffer keeps them meanwhile; those it overwrote are counted).
const MIN_GAP: Duration = Duration::from_millis(100);
/// And no more than 1/`READ_BUDGET` of a CPU in reads: the kernel formats a
/// whole CPU buffer for each (tens of milliseconds for a full one), so the
/// next read waits this many times the CPU time the last one took.
const READ_BUDGET: u32 = 20;
/// Most wake-ups of one timer thread explained from one read (the worst
/// first; the others are counted): a quarter of a second of a 1 kHz
/// thread's, so that a storm is explained whole while reads come every
/// 100 ms, and one read's analyses stay within about 10 ms.
pub const MAX_PER_READ: usize = 250;
/// The window starts this long before the deadline (what ran then decides
/// who owned the CPU at the deadline).
const LOOKBACK_NS: u64 = 2_000_000;
/// Most events read from one window.
const MAX_EVENTS: usize = 20_000;
/// Most bytes of one CPU's buffer text read (the text reader), or of its
/// pages at one read.
const MAX_BUFFER_TEXT: usize = 32 << 20;
/// Pages kept per CPU from the binary reader (2 MiB): four times a full
/// default buffer (512 KiB, about 15 000 events), seconds of a busy CPU.
const KEEP_PAGES: usize = 512;

/// A running flight recorder.
pub struct FlightRecorder {
    /// The binary pages read so far, per CPU (None: the text is read).
    /// Declared before the instance, which cannot go while they are open.
    tails: Option<Tails>,
    instance: Instance,
    marker: Option<Arc<File>>,
    spec: TraceSpec,
    report: TraceReport,
    /// Per timer thread: its announced wake-ups, and how far they are read.
    threads: Vec<ThreadState>,
    /// No read before this (the rate limit and the time budget).
    next_read: Option<Instant>,
    /// The window of each explanation, written at the end.
    windows: Vec<SavedWindow>,
    /// The explanations made since the read began (timer, sample).
    made: Vec<(usize, u64)>,
    /// The latest wake-up whose window was read, explained or not (ns): a
    /// read jumps the ration only for one a quarter later, so that windows
    /// that explain nothing (an overwritten buffer) cannot make every look
    /// a read.
    worst_read: u64,
    /// CPUs checked for switches out of idle the kernel does not log.
    idle_checked: Vec<usize>,
    /// The stack triggers are set (or none is wanted): they name the
    /// timer threads, known once every one has started.
    stacks_armed: bool,
    /// The CPUs traced.
    cpus: Vec<usize>,
    /// Where `/proc` is (a priority the window does not show).
    root: SysRoot,
}

impl FlightRecorder {
    /// Mounts tracefs if needed and starts an instance on `cpus`, both
    /// through `journal`. Err says why there is no trace (the run goes on).
    pub fn start(
        root: &SysRoot,
        journal: &mut Journal,
        spec: &TraceSpec,
        cpus: &[usize],
    ) -> Result<Self, trace::TraceError> {
        let tracefs = trace::mount(root, journal)?;
        let instance = Instance::create(root, journal, &tracefs, "")?;
        let missing = instance.start(&Recording {
            cpus: cpus.to_vec(),
            buffer_kb: spec.buffer_kb,
            overwrite: true,
            events: crate::trace::explain::tracepoint_names(),
            extra: spec.events.clone(),
        })?;
        let marker = instance.marker().ok().map(Arc::new);
        let mut notes = Vec::new();
        let forced_text = std::env::var("RTLAB_TRACE_READER").is_ok_and(|v| v == "text");
        let tails = if forced_text {
            notes.push("the trace is read as text (RTLAB_TRACE_READER=text)".to_string());
            None
        } else {
            Tails::open(
                root,
                &instance,
                cpus,
                (&crate::trace::explain::tracepoint_names(), &spec.events),
                usize::try_from(spec.buffer_kb.saturating_add(8) << 10).unwrap_or(usize::MAX),
                KEEP_PAGES,
            )
            .map_err(|why| notes.push(format!("the trace is read as text: {why}")))
            .ok()
        };
        if marker.is_none() {
            notes.push(
                "the trace marker could not be opened: spikes are not marked in the trace".into(),
            );
        }
        Ok(FlightRecorder {
            report: TraceReport {
                threshold_ns: spec.threshold_ns,
                instance: Some(format!("/{}", instance.dir())),
                events_missing: missing,
                notes,
                ..TraceReport::default()
            },
            tails,
            instance,
            marker,
            spec: spec.clone(),
            threads: Vec::new(),
            next_read: None,
            windows: Vec::new(),
            made: Vec::new(),
            worst_read: 0,
            idle_checked: Vec::new(),
            stacks_armed: spec.stacks == TraceStacks::Off,
            cpus: cpus.to_vec(),
            root: root.clone(),
        })
    }

    /// The report of a run that wanted a trace and could not have one.
    pub fn unavailable(spec: &TraceSpec, why: String) -> TraceReport {
        TraceReport {
            threshold_ns: spec.threshold_ns,
            unavailable: Some(why),
            ..TraceReport::default()
        }
    }

    /// The tracepoints this kernel lacks.
    pub fn missing_events(&self) -> &[String] {
        &self.report.events_missing
    }

    /// The marker the timer threads write a late wake-up to.
    pub fn marker(&self) -> Option<Arc<File>> {
        self.marker.clone()
    }

    /// The culprits so far, as (kind, what, main cause of how many), for
    /// the metrics of a monitoring run.
    pub fn causes(&self) -> Vec<(String, String, u64)> {
        verdict::culprits(&self.report.explanations)
            .into_iter()
            .filter(|c| c.main_cause > 0)
            .map(|c| {
                let kind = serde_json::to_value(c.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                (kind, c.what, c.main_cause)
            })
            .collect()
    }

    /// The last explained wake-up's main cause, for the live view.
    pub fn last_cause(&self) -> Option<String> {
        let e = self.report.explanations.last()?;
        let mut cause = e.cause.clone();
        if let Some((cut, _)) = cause.char_indices().nth(110) {
            cause.truncate(cut);
            cause.push('…');
        }
        Some(format!(
            "last late wake-up: T{} {:.1} µs: {cause}",
            e.timer,
            e.latency_ns as f64 / 1000.0
        ))
    }

    /// Looks for wake-ups announced since the last look and, within the
    /// rate limit, reads the buffers they are in and explains them.
    pub fn look(&mut self, timers: &[TimerHandle]) {
        if !self.stacks_armed {
            self.arm_stacks(timers);
        }
        // After the threads' states are made (the first look makes them):
        // the first read's explanations need the slack too.
        self.take_announced(timers);
        self.learn_slacks(timers);
        let limited = self.next_read.is_some_and(|at| Instant::now() < at);
        // A wake-up a quarter later than the worst read so far is read now
        // (from 10 µs to 10 ms, at most 31 such reads).
        let bar = self.worst_read.saturating_add(self.worst_read / 4);
        let urgent = self.worst_read > 0
            && self
                .threads
                .iter()
                .any(|t| t.pending.is_some() && t.new_max > bar);
        if !limited || urgent {
            self.read_pending(timers);
        }
    }

    /// Each timer thread's timer slack, once it has announced a late
    /// wake-up (its TID is known and its policy set: the slack it
    /// inherited may change with its policy): none for a real-time or
    /// DEADLINE one, else the kernel's value for the thread.
    fn learn_slacks(&mut self, timers: &[TimerHandle]) {
        for (state, t) in self.threads.iter_mut().zip(timers) {
            let tid = t.live.tid.load(std::sync::atomic::Ordering::Relaxed);
            if state.slack_ns.is_some() || tid <= 0 || state.announced == 0 {
                continue;
            }
            let realtime = t.spec.deadline.is_some() || t.spec.sched.policy.is_realtime();
            state.slack_ns = Some(match realtime {
                true => 0,
                false => crate::sys::tasks::timer_slack_ns(&self.root, tid).unwrap_or(0),
            });
        }
    }

    /// Sets the `stacktrace` triggers once every timer thread has its TID:
    /// on the switch to a timer thread from any task but idle (where that
    /// task let the CPU go) and, for `all`, on each timer thread's wake-up.
    fn arm_stacks(&mut self, timers: &[TimerHandle]) {
        let tids: Vec<i32> = timers
            .iter()
            .map(|t| t.live.tid.load(std::sync::atomic::Ordering::Relaxed))
            .collect();
        if tids.is_empty() || tids.iter().any(|&t| t <= 0) {
            return;
        }
        self.stacks_armed = true;
        let any = |field: &str| {
            let one: Vec<String> = tids.iter().map(|t| format!("{field} == {t}")).collect();
            one.join(" || ")
        };
        let mut triggers = vec![(
            "sched/sched_switch",
            format!("stacktrace if ({}) && prev_pid != 0", any("next_pid")),
        )];
        if self.spec.stacks == TraceStacks::All {
            triggers.push((
                "sched/sched_waking",
                format!("stacktrace if {}", any("pid")),
            ));
        }
        for (event, trigger) in triggers {
            if let Err(e) = self.instance.set_trigger(event, &trigger) {
                self.note(format!("no kernel stacks on {event}: {e}"));
            }
        }
    }

    /// Whether a wake-up `latency_ns` late may still be explained: below
    /// `max_spikes`, or later than the least late explained (whose place it
    /// takes).
    fn may_explain(&self, latency_ns: u64) -> bool {
        self.report.explanations.len() < self.spec.max_spikes || latency_ns > self.least_explained()
    }

    /// The latency of the least late wake-up explained (0: none).
    fn least_explained(&self) -> u64 {
        let all = self.report.explanations.iter().map(|e| e.latency_ns);
        all.min().unwrap_or(0)
    }

    /// At `max_spikes`, makes room for a wake-up `latency_ns` late: the
    /// least late explained goes (with its windows). False when every one
    /// explained is at least as late.
    fn make_room(&mut self, latency_ns: u64) -> bool {
        let r = &mut self.report;
        if r.explanations.len() < self.spec.max_spikes {
            return true;
        }
        let Some((at, least)) = r
            .explanations
            .iter()
            .enumerate()
            .min_by_key(|(_, e)| e.latency_ns)
        else {
            return false;
        };
        if least.latency_ns >= latency_ns {
            return false;
        }
        let gone = r.explanations.remove(at);
        self.windows
            .retain(|w| Some(w.json_name()) != gone.trace_file);
        true
    }

    /// Counts what each timer thread announced since the last look, and
    /// keeps the latest to read.
    fn take_announced(&mut self, timers: &[TimerHandle]) {
        self.threads.resize(timers.len(), ThreadState::default());
        for (t, state) in timers.iter().zip(&mut self.threads) {
            let s = t.live.read();
            let new = s.over.saturating_sub(state.announced);
            if new == 0 {
                continue;
            }
            state.announced = s.over;
            self.report.over_threshold += new;
            // The thread's worst since the last look, if one was announced
            // in it (its maximum grew past the threshold).
            state.new_max = if s.max_ns > state.max_seen && s.max_ns >= self.spec.threshold_ns {
                s.max_ns
            } else {
                0
            };
            state.max_seen = s.max_ns;
            // The CPU it woke on (a thread allowed on several may move).
            let cpu = usize::try_from(s.over_cpu)
                .ok()
                .filter(|&c| s.over_cpu != u64::MAX && t.spec.cpus.contains(&c))
                .or_else(|| t.spec.cpus.first().copied())
                .unwrap_or(0);
            state.pending = Some(Latest {
                cpu,
                marker: Marker {
                    timer: t.spec.index,
                    pid: t.live.tid.load(std::sync::atomic::Ordering::Relaxed),
                    sample: s.over_sample,
                    deadline_ns: s.over_deadline_ns,
                    latency_ns: s.over_latency_ns,
                },
            });
        }
    }

    /// Reads each CPU that has announced wake-ups pending, once, and
    /// explains the wake-ups marked there since the last read.
    fn read_pending(&mut self, timers: &[TimerHandle]) {
        let mut by_cpu: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
        for (i, state) in self.threads.iter().enumerate() {
            if let Some(p) = &state.pending {
                by_cpu.entry(p.cpu).or_default().push(i);
            }
        }
        if by_cpu.is_empty() {
            return;
        }
        // The budget counts the CPU the reads cost, not the time the main
        // thread waited while preempted (a flood on its CPU would make
        // each read look ten times dearer and starve the next ones).
        let started = crate::sys::os::thread_cpu_ns();
        // Held apart while the CPUs' events are lent to the explanations.
        let mut tails = self.tails.take();
        for (cpu, threads) in by_cpu {
            self.read_cpu_pending(&mut tails, cpu, &threads, timers);
        }
        // Those this read explained (a later one may have taken the place
        // of one explained before: they are found by what they explain).
        let made = std::mem::take(&mut self.made);
        if self.spec.dump_tasks && !made.is_empty() {
            self.dump_tasks(&mut tails, &made);
        }
        // The kernel's symbols, read once when first needed, are a cost of
        // their own: not the reads' (nor the budget's).
        let symbols_ns = tails.as_ref().map_or(0, |t| t.symbols_ns);
        let newly = symbols_ns.saturating_sub(self.report.symbols_ns);
        self.report.symbols_ns = symbols_ns;
        self.tails = tails;
        let spent_ns = crate::sys::os::thread_cpu_ns()
            .saturating_sub(started)
            .saturating_sub(newly);
        self.report.analysis_ns = self.report.analysis_ns.saturating_add(spent_ns);
        let spent = Duration::from_nanos(spent_ns);
        self.next_read = Some(Instant::now() + MIN_GAP.max(spent * READ_BUDGET));
    }

    /// Reads CPU `cpu` (unless none of the wake-ups `threads` announced
    /// there could be explained) and explains them.
    fn read_cpu_pending(
        &mut self,
        tails: &mut Option<Tails>,
        cpu: usize,
        threads: &[usize],
        timers: &[TimerHandle],
    ) {
        let worst_pending = threads
            .iter()
            .map(|&i| &self.threads[i])
            .filter_map(|t| Some(t.pending?.marker.latency_ns.max(t.new_max)))
            .max()
            .unwrap_or(0);
        let read = match self.may_explain(worst_pending) {
            false => None,
            true => {
                self.report.reads += 1;
                let read = crate::sys::os::thread_cpu_ns();
                let parsed = self.read_cpu(tails.as_mut(), cpu);
                self.report.read_ns += crate::sys::os::thread_cpu_ns().saturating_sub(read);
                parsed
                    .map(|(parsed, events)| {
                        self.report.events_read += events;
                        parsed
                    })
                    .map_err(|e| self.note(format!("CPU {cpu}: {e}")))
                    .ok()
            }
        };
        let mut buffer = read
            .as_ref()
            .and_then(|parsed| held(tails.as_mut(), parsed, cpu));
        if let Some(b) = &buffer {
            self.check_idle_switches(cpu, b);
            if let Some((_, newest)) = b.span() {
                self.report.note_read(cpu, newest);
            }
        }
        for &i in threads {
            let state = &mut self.threads[i];
            let Some(latest) = state.pending.take() else {
                continue;
            };
            let after = state.read_upto.replace(latest.marker.sample);
            let Some(buffer) = &mut buffer else {
                continue;
            };
            let tid = timers[i]
                .live
                .tid
                .load(std::sync::atomic::Ordering::Relaxed);
            let slack = state.slack_ns.unwrap_or(0);
            let (marks, newest) = to_explain(buffer, latest.marker, after, state.marks_from_ns);
            state.marks_from_ns = newest.map_or(state.marks_from_ns, |t| t.saturating_add(1));
            let room = self
                .spec
                .max_spikes
                .saturating_sub(self.report.explanations.len());
            let mut least: Vec<u64> = self
                .report
                .explanations
                .iter()
                .map(|e| e.latency_ns)
                .collect();
            least.sort_unstable();
            let (chosen, passed) = choose(marks, room, &least);
            for m in chosen {
                self.explain(buffer, cpu, (tid, slack), &m);
            }
            for m in passed {
                self.unexplained(&m, not_chosen());
            }
        }
    }

    /// Reads CPU `cpu`: the binary reader's pages since the last read
    /// (kept in `tails`: None given back), or the text reader's whole
    /// buffer, parsed; with the number of events read.
    fn read_cpu(
        &mut self,
        tails: Option<&mut Tails>,
        cpu: usize,
    ) -> Result<(Option<Vec<Event>>, u64), String> {
        match tails {
            Some(t) => t.read_cpu(cpu).map(|came| (None, came)),
            None => {
                let text = self.instance.read_cpu(cpu, MAX_BUFFER_TEXT);
                let events = text.map(|t| text::events(&text::fold_stacks(t)));
                let events = events.map_err(|e| e.to_string())?;
                let n = events.len() as u64;
                Ok((Some(events), n))
            }
        }
    }

    /// Says, for the explanations `made` (timer, sample), what every
    /// traced CPU was running at the deadline (each CPU's buffer read
    /// once).
    fn dump_tasks(&mut self, tails: &mut Option<Tails>, made: &[(usize, u64)]) {
        for cpu in self.cpus.clone() {
            let Ok((parsed, _)) = self.read_cpu(tails.as_mut(), cpu) else {
                continue;
            };
            let Some(mut buffer) = held(tails.as_mut(), &parsed, cpu) else {
                continue;
            };
            let new = |e: &&mut Explanation| made.contains(&(e.timer, e.sample));
            for e in self.report.explanations.iter_mut().filter(new) {
                // Past the deadline too: the first event after it may be
                // all that tells who ran (a switch the kernel did not log).
                let to = e
                    .deadline_ns
                    .saturating_add(e.latency_ns)
                    .saturating_add(50_000);
                let window = buffer.window_around(e.deadline_ns, LOOKBACK_NS, to, MAX_EVENTS);
                if let Some(task) = analyze::running_at(&window, e.deadline_ns) {
                    e.cpus_at_deadline.push(analyze::CpuTask { cpu, ..task });
                }
            }
        }
    }

    /// Says once per CPU when its kernel logs switches into idle and none
    /// out of it: the task after idle is then inferred from its events.
    fn check_idle_switches(&mut self, cpu: usize, buffer: &Held) {
        if self.idle_checked.contains(&cpu) {
            return;
        }
        let (into, out_of) = buffer.idle_switches();
        if into < 10 {
            return; // Too few to tell: the next read looks again.
        }
        self.idle_checked.push(cpu);
        if out_of == 0 {
            self.note(format!(
                "CPU {cpu}: this kernel logs switches into idle and none out of it ({into} and 0 \
                 when rtlab looked): the task that ran after idle is taken from its own events, and those \
                 parts are marked inferred"
            ));
        }
    }

    fn note(&mut self, note: String) {
        if self.report.notes.len() < 10 {
            self.report.notes.push(note);
        }
    }

    fn explain(&mut self, buffer: &mut Held, cpu: usize, (tid, slack): (i32, u64), m: &Marker) {
        let (deadline, latency) = (m.deadline_ns, m.latency_ns);
        let to = deadline.saturating_add(latency).saturating_add(50_000);
        let window = buffer.window_around(deadline, LOOKBACK_NS, to, MAX_EVENTS);
        let events: &[Event] = &window;
        self.worst_read = self.worst_read.max(latency);
        if let Err(why) = analyze::coverage(events, deadline) {
            self.unexplained(m, why);
            return;
        }
        if !self.make_room(latency) {
            self.unexplained(m, not_chosen());
            return;
        }
        // A task whose priority the window does not show: as it is now.
        let root = &self.root;
        let known = |pid: i32| crate::sys::tasks::kernel_prio(root, pid);
        let (mut e, segments) = analyze::explain_segments(
            events,
            (m.timer, tid, m.sample),
            (deadline, latency, slack),
            &known,
        );
        e.cpu = cpu;
        let saved = SavedWindow {
            stem: format!("{WINDOWS_DIR}/rtlab-spike-T{}-{}", m.timer, m.sample),
            events: window.into_owned(),
            segments,
            window: (deadline, latency),
        };
        e.trace_file = Some(saved.json_name());
        e.trace_text = Some(saved.text_name());
        self.windows.push(saved);
        self.made.push((e.timer, e.sample));
        self.report.explanations.push(e);
    }

    fn unexplained(&mut self, m: &Marker, why: String) {
        self.report
            .note_unexplained(crate::trace::explain::Unexplained {
                timer: m.timer,
                sample: m.sample,
                deadline_ns: m.deadline_ns,
                latency_ns: m.latency_ns,
                why,
            });
    }

    /// Stops tracing (the instance is removed) and gives the report and the
    /// windows to write in the output directory (named from it).
    pub fn finish(mut self, timers: &[TimerHandle]) -> (TraceReport, Vec<(String, String)>) {
        // The last announced wake-ups are read whatever the rate limit.
        self.take_announced(timers);
        self.learn_slacks(timers);
        self.read_pending(timers);
        let r = &mut self.report;
        r.explanations.sort_by_key(|e| (e.deadline_ns, e.timer));
        r.not_explained = r.over_threshold.saturating_sub(r.explanations.len() as u64);
        r.culprits = verdict::culprits(&r.explanations);
        // Written once, at the end: the windows of wake-ups that a later
        // one took the place of are never written, and the run's reads
        // are not delayed by them.
        let started = crate::sys::os::thread_cpu_ns();
        let mut files = Vec::with_capacity(self.windows.len() * 2);
        for w in &self.windows {
            files.push((
                w.json_name(),
                trace_events(&w.events, &w.segments, w.window),
            ));
            files.push((w.text_name(), ftrace_text(&w.events)));
        }
        self.report.windows_ns = crate::sys::os::thread_cpu_ns().saturating_sub(started);
        (self.report, files)
    }
}

/// The events of an explained wake-up's window, kept to be written at the
/// end of the run as trace-event JSON and as the kernel's text.
struct SavedWindow {
    /// The files' path in the output directory, without their extension.
    stem: String,
    events: Vec<Event>,
    /// Who owned the CPU, stretch by stretch, as the explanation found.
    segments: Vec<analyze::Segment>,
    /// The deadline and the latency (ns).
    window: (u64, u64),
}

impl SavedWindow {
    fn json_name(&self) -> String {
        format!("{}.json", self.stem)
    }

    fn text_name(&self) -> String {
        format!("{}.trace.txt", self.stem)
    }
}

/// The directory, in the output directory, that the trace windows go in:
/// each window's name (as the result and the verdict give it) starts
/// with it.
pub const WINDOWS_DIR: &str = "rtlab-spikes";

/// One timer thread's late wake-ups, as the recorder follows them.
#[derive(Debug, Clone, Copy, Default)]
struct ThreadState {
    /// How many it announced (its live `over` count) so far.
    announced: u64,
    /// The latest announced and not read yet.
    pending: Option<Latest>,
    /// Its live maximum at the last look.
    max_seen: u64,
    /// Its maximum, when it grew past the threshold since the last look.
    new_max: u64,
    /// The sample of the latest read: markers up to it are done.
    read_upto: Option<u64>,
    /// Its markers up to `read_upto` are all before this time (ns): the
    /// next read looks from here on.
    marks_from_ns: u64,
    /// Its timer slack (ns), learnt once its TID is known: the stretch of
    /// a late wake-up its timer could not fire in.
    slack_ns: Option<u64>,
}

/// The latest late wake-up a timer thread announced, and its CPU.
#[derive(Debug, Clone, Copy)]
struct Latest {
    cpu: usize,
    marker: Marker,
}

/// The wake-ups to explain from one CPU's buffer, oldest first: those the
/// timer thread of `latest` marked there after sample `after`, up to
/// `latest`; and `latest` itself though its marker be missing (a failed
/// write). Only markers written by that thread count. Only the events
/// from `since_ns` on are looked at (the last read's markers of that
/// thread are before): Some time of the newest marker taken.
fn to_explain(
    buffer: &Held,
    latest: Marker,
    after: Option<u64>,
    since_ns: u64,
) -> (Vec<Marker>, Option<u64>) {
    let mut newest = None;
    let mut marks: Vec<Marker> = buffer
        .markers_since(since_ns)
        .into_iter()
        .filter(|(_, m)| m.timer == latest.timer && m.pid == latest.pid)
        .filter(|(_, m)| after.is_none_or(|a| m.sample > a) && m.sample <= latest.sample)
        .map(|(ts, m)| {
            newest = Some(ts);
            m
        })
        .collect();
    if marks.last().map(|m| m.sample) != Some(latest.sample) {
        marks.retain(|m| m.sample < latest.sample);
        marks.push(latest);
    }
    (marks, newest)
}

/// CPU `cpu`'s events as a read left them: `parsed` (the text reader's),
/// else the binary reader's kept pages.
fn held<'a>(
    tails: Option<&'a mut Tails>,
    parsed: &'a Option<Vec<Event>>,
    cpu: usize,
) -> Option<Held<'a>> {
    match parsed {
        Some(events) => Some(Held::Parsed(Recent::new(events))),
        None => tails?.held(cpu).ok(),
    }
}

/// Why a wake-up read was not chosen.
fn not_chosen() -> String {
    format!(
        "read, not chosen: a read explains at most {MAX_PER_READ} of the wake-ups marked in it \
         and `trace.max_spikes` a run, the worst first"
    )
}

/// The wake-ups of one read to explain, oldest first: its worst, at most
/// [`MAX_PER_READ`], those past the `room` left under `max_spikes` only
/// when later than the explained one whose place each would take
/// (`least`: the latencies explained so far, least first), so that none
/// is explained only to give its place to another of the same read; and
/// the others over the threshold, passed over.
fn choose(mut marks: Vec<Marker>, room: usize, least: &[u64]) -> (Vec<Marker>, Vec<Marker>) {
    marks.sort_by_key(|m| (std::cmp::Reverse(m.latency_ns), m.sample));
    let beats =
        |i: usize, m: &Marker| i < room || least.get(i - room).is_some_and(|&l| m.latency_ns > l);
    let take = marks
        .iter()
        .enumerate()
        .take_while(|(i, m)| beats(*i, m))
        .take(MAX_PER_READ)
        .count();
    let passed = marks.split_off(take);
    marks.sort_by_key(|m| m.sample);
    (marks, passed)
}

/// The window's events in the kernel's text format, with its header, as
/// `trace-cmd report` and Perfetto's systrace import read it.
pub fn ftrace_text(events: &[Event]) -> String {
    let mut out = String::from(
        "# tracer: nop\n#\n# rtlab flight recorder: one CPU's events around a late wake-up\n\
         #           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n",
    );
    for e in events {
        text::kernel_text(e, &mut out);
    }
    out
}

/// The track of a window's "who owned the CPU" slices (no task has this id).
const OWNER_TRACK: i64 = -1;

/// The window in the trace-event JSON format that Perfetto and Chrome's
/// trace viewer open: one process per CPU; on its first track who owned
/// the CPU from the deadline to the wake-up, as consecutive slices, with
/// the deadline and the wake-up as instants; then a track per task with
/// its events as instants (their fields as arguments); `segments` are the
/// explanation's (who owned the CPU, stretch by stretch). Written as it goes
/// (no document is built: a storm's windows hold thousands of events),
/// times in µs with their nanoseconds exact.
pub fn trace_events(
    events: &[Event],
    segments: &[analyze::Segment],
    (deadline, latency): (u64, u64),
) -> String {
    let cpu = events.first().map_or(0, |e| e.cpu) as i64;
    let mut out = String::with_capacity(events.len() * 160 + 512);
    out.push_str("{\"traceEvents\":[");
    let meta = |out: &mut String, name: &str, tid: Option<i64>, args: &dyn Fn(&mut Json)| {
        let mut o = Json::open(out);
        o.str("name", name).str("ph", "M").num("pid", cpu);
        if let Some(t) = tid {
            o.num("tid", t);
        }
        o.object("args", args).close();
    };
    meta(&mut out, "process_name", None, &|a| {
        a.str("name", &format!("CPU {cpu}"));
    });
    meta(&mut out, "thread_name", Some(OWNER_TRACK), &|a| {
        a.str("name", "who owned the CPU (rtlab)");
    });
    meta(&mut out, "thread_sort_index", Some(OWNER_TRACK), &|a| {
        a.num("sort_index", -1);
    });
    let mut named = std::collections::HashSet::new();
    for e in events {
        if named.insert(e.pid) {
            let name = format!("{}-{}", e.comm, e.pid);
            meta(&mut out, "thread_name", Some(e.pid.into()), &|a| {
                a.str("name", &name);
            });
        }
    }
    for s in segments {
        let mut o = Json::open(&mut out);
        o.str("name", &s.what)
            .str("cat", &format!("{:?}", s.kind))
            .str("ph", "X");
        o.us("ts", s.from_ns).us("dur", s.to_ns - s.from_ns);
        o.num("pid", cpu).num("tid", OWNER_TRACK);
        o.object("args", &|a| {
            match s.pid {
                Some(pid) => a.num("pid", pid.into()),
                None => a.raw("pid", "null"),
            };
        })
        .close();
    }
    let instants = [
        ("deadline", deadline),
        ("wake-up (clock read)", deadline + latency),
    ];
    for (name, at) in instants {
        let mut o = Json::open(&mut out);
        o.str("name", name)
            .str("ph", "i")
            .str("s", "t")
            .us("ts", at);
        o.num("pid", cpu).num("tid", OWNER_TRACK).close();
    }
    for e in events {
        let mut o = Json::open(&mut out);
        o.str("name", &e.name)
            .str("ph", "i")
            .str("s", "t")
            .us("ts", e.ts_ns);
        o.num("pid", e.cpu as i64).num("tid", e.pid.into());
        o.object("args", &|a| {
            a.str("fields", &e.fields);
        })
        .close();
    }
    out.push_str("],\"displayTimeUnit\":\"ns\",\"otherData\":{\"clock\":\"CLOCK_MONOTONIC\",\"generator\":\"rtlab\"}}");
    out
}

/// A JSON object being written into a document (after a comma when it is
/// not the first of its array).
struct Json<'a> {
    out: &'a mut String,
    first: bool,
}

impl<'a> Json<'a> {
    fn open(out: &'a mut String) -> Self {
        if !out.ends_with('[') {
            out.push(',');
        }
        out.push('{');
        Json { out, first: true }
    }

    fn key(&mut self, key: &str) -> &mut String {
        if !std::mem::take(&mut self.first) {
            self.out.push(',');
        }
        self.out.push('"');
        self.out.push_str(key);
        self.out.push_str("\":");
        self.out
    }

    /// A string value, escaped as JSON wants (the escaping left to
    /// serde_json for the rare text that needs it).
    fn str(&mut self, key: &str, value: &str) -> &mut Self {
        let out = self.key(key);
        // Every byte looked at (no early exit): the compiler checks many at
        // once.
        let plain = value
            .bytes()
            .fold(true, |ok, b| ok & (b >= 0x20) & (b != b'"') & (b != b'\\'));
        if plain {
            out.push('"');
            out.push_str(value);
            out.push('"');
        } else {
            out.push_str(&serde_json::Value::from(value).to_string());
        }
        self
    }

    fn num(&mut self, key: &str, value: i64) -> &mut Self {
        self.key(key).push_str(itoa::Buffer::new().format(value));
        self
    }

    /// Nanoseconds as exact microseconds (`12.345`).
    fn us(&mut self, key: &str, ns: u64) -> &mut Self {
        let out = self.key(key);
        out.push_str(itoa::Buffer::new().format(ns / 1000));
        let frac = ns % 1000;
        let digit = |d: u64| b'0' + (d % 10) as u8;
        let digits = [b'.', digit(frac / 100), digit(frac / 10), digit(frac)];
        out.push_str(std::str::from_utf8(&digits).unwrap_or(".000"));
        self
    }

    fn raw(&mut self, key: &str, value: &str) -> &mut Self {
        self.key(key).push_str(value);
        self
    }

    /// An object value, written by `fill`.
    fn object(&mut self, key: &str, fill: &dyn Fn(&mut Json)) -> &mut Self {
        let out = self.key(key);
        out.push('{');
        let mut inner = Json { out, first: true };
        fill(&mut inner);
        inner.out.push('}');
        self
    }

    fn close(&mut self) {
        self.out.push('}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_wake_up_marked_since_the_last_read_is_explained_once() {
        let mark = |pid: i32, t: usize, sample: u64, ts: &str| {
            format!(
                "rtlab-timer0-{pid} [001] ..... {ts}: tracing_mark_write: rtlab T{t} sample {sample} deadline {} latency 2000000\n",
                sample * 1_000_000
            )
        };
        let text = [
            "# tracer: nop\n".to_string(),
            mark(10, 0, 5, "1.000005"),
            mark(10, 0, 7, "1.000007"),
            // Another thread's (or a forger's) marker, another timer's.
            mark(99, 0, 8, "1.000008"),
            mark(11, 1, 8, "1.000008"),
            mark(10, 0, 9, "1.000009"),
            "  <idle>-0 [001] d..2. 1.000010: cpu_idle: state=1 cpu_id=1\n".to_string(),
        ]
        .concat();
        let events = text::events(&text);
        let recent = Recent::new(&events);
        let buffer = Held::Parsed(recent);
        let latest = |sample: u64| Marker {
            timer: 0,
            pid: 10,
            sample,
            deadline_ns: sample * 1_000_000,
            latency_ns: 2_000_000,
        };
        let samples = |v: Vec<Marker>| v.iter().map(|m| m.sample).collect::<Vec<_>>();
        // First read: all of them, oldest first.
        let to_explain = |latest, after| to_explain(&buffer, latest, after, 0).0;
        assert_eq!(samples(to_explain(latest(9), None)), [5, 7, 9]);
        // After sample 5 was read: not again.
        assert_eq!(samples(to_explain(latest(9), Some(5))), [7, 9]);
        // Markers past the latest announced wait for their announcement.
        assert_eq!(samples(to_explain(latest(7), None)), [5, 7]);
        // The latest announced is explained though its marker is missing.
        let lost = to_explain(latest(12), Some(9));
        assert_eq!(lost, [latest(12)]);
        // The marker's figures are the ones explained.
        assert_eq!(to_explain(latest(9), Some(7)), [latest(9)]);
        // A read looks from the time after its last marker taken: the
        // markers written after the latest announced are still found.
        let (first, newest) = super::to_explain(&buffer, latest(7), None, 0);
        assert_eq!((samples(first), newest), (vec![5, 7], Some(1_000_007_000)));
        let next = super::to_explain(&buffer, latest(9), Some(7), 1_000_007_001);
        assert_eq!((samples(next.0), next.1), (vec![9], Some(1_000_009_000)));
        // The window of each is found by time in the one indexed read.
        assert_eq!(recent.window(1_000_007_000, 1_000_010_000, 100).len(), 5);
        assert_eq!(recent.window(1_000_007_000, 1_000_010_000, 2).len(), 2);
        assert_eq!(recent.markers().count(), 5);
    }

    #[test]
    fn a_rationed_read_explains_the_worst_and_past_the_cap_the_later_ones() {
        let mark = |sample: u64, latency_ns: u64| Marker {
            timer: 0,
            pid: 10,
            sample,
            deadline_ns: sample * 1_000_000,
            latency_ns,
        };
        // 20 more marked than a read explains, latencies in no order
        // (all different); the worst are chosen, in time order.
        let n = MAX_PER_READ as u64 + 20;
        let marks: Vec<Marker> = (0..n)
            .map(|i| mark(i, 40_000 + (i * 7919) % n * 1000))
            .collect();
        let mut want: Vec<Marker> = marks.clone();
        want.sort_by_key(|m| std::cmp::Reverse(m.latency_ns));
        want.truncate(MAX_PER_READ);
        want.sort_by_key(|m| m.sample);
        let (chosen, passed) = choose(marks.clone(), 10_000, &[]);
        assert_eq!(chosen, want);
        assert_eq!(passed.len(), 20);
        let marks: Vec<Marker> = (0..30)
            .map(|i| mark(i, 40_000 + (i * 7919) % 30 * 1000))
            .collect();
        // Room for 3 under the cap, and the least late explained is
        // 69 µs: the worst 3, none later than that.
        let three = choose(marks.clone(), 3, &[69_000]).0;
        assert_eq!(three.len(), 3);
        assert!(three.iter().all(|m| m.latency_ns >= 67_000), "{three:?}");
        // At the cap: each only if later than the one whose place it
        // takes (69 µs beats 66.5, 68 beats 67.5, 67 not 68.5).
        let least = [66_500, 67_500, 68_500, 70_000];
        let past = choose(marks.clone(), 0, &least).0;
        let mut lat: Vec<u64> = past.iter().map(|m| m.latency_ns).collect();
        lat.sort_unstable();
        assert_eq!(lat, [68_000, 69_000]);
        // Against brute force: what a read chooses is what survives of it
        // when each takes the place of the least late (the worst of the
        // explained and the chosen, `max_spikes` of them).
        let mut seed = 12345u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for _ in 0..500 {
            let max_spikes = 1 + next(12) as usize;
            let explained: Vec<u64> = (0..next(max_spikes as u64 + 1))
                .map(|_| next(50) * 1000 + 1)
                .collect();
            let marks: Vec<Marker> = (0..next(20)).map(|i| mark(i, next(50) * 1000)).collect();
            let mut least = explained.clone();
            least.sort_unstable();
            let room = max_spikes - explained.len();
            let (chosen, _) = choose(marks.clone(), room, &least);
            // Brute force: push each of the marks, worst first, evicting
            // the least late when full; keep those of the marks that stay.
            let mut sorted = marks.clone();
            sorted.sort_by_key(|m| (std::cmp::Reverse(m.latency_ns), m.sample));
            let mut kept: Vec<(u64, Option<u64>)> = explained.iter().map(|&l| (l, None)).collect();
            for m in sorted {
                if kept.len() < max_spikes {
                    kept.push((m.latency_ns, Some(m.sample)));
                } else if let Some((at, _)) = kept
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, k)| k.0)
                    .filter(|(_, k)| k.0 < m.latency_ns)
                {
                    kept[at] = (m.latency_ns, Some(m.sample));
                }
            }
            let mut want: Vec<u64> = kept.iter().filter_map(|k| k.1).collect();
            want.sort_unstable();
            let got: Vec<u64> = chosen.iter().map(|m| m.sample).collect();
            assert_eq!(got, want, "{max_spikes} {explained:?} {marks:?}");
        }
    }

    /// The trace-event document as a map-building serializer writes it
    /// (what `trace_events` wrote before it wrote as it goes): the oracle.
    fn trace_events_by_value(
        events: &[Event],
        tid: i32,
        window: (u64, u64, u64),
    ) -> serde_json::Value {
        let (deadline, latency, _) = window;
        let (segments, _, _) = analyze::segments_known(events, tid, window, &|_| None);
        let us = |ns: u64| ns as f64 / 1000.0;
        let cpu = events.first().map_or(0, |e| e.cpu);
        let mut out = vec![
            serde_json::json!({"name": "process_name", "ph": "M", "pid": cpu,
                               "args": {"name": format!("CPU {cpu}")}}),
            serde_json::json!({"name": "thread_name", "ph": "M", "pid": cpu, "tid": OWNER_TRACK,
                               "args": {"name": "who owned the CPU (rtlab)"}}),
            serde_json::json!({"name": "thread_sort_index", "ph": "M", "pid": cpu,
                               "tid": OWNER_TRACK, "args": {"sort_index": -1}}),
        ];
        let mut named = std::collections::BTreeSet::new();
        for e in events {
            if named.insert(e.pid) {
                out.push(
                    serde_json::json!({"name": "thread_name", "ph": "M", "pid": cpu,
                    "tid": e.pid, "args": {"name": format!("{}-{}", e.comm, e.pid)}}),
                );
            }
        }
        for s in &segments {
            out.push(serde_json::json!({
                "name": s.what, "cat": format!("{:?}", s.kind), "ph": "X",
                "ts": us(s.from_ns), "dur": us(s.to_ns - s.from_ns),
                "pid": cpu, "tid": OWNER_TRACK, "args": {"pid": s.pid},
            }));
        }
        for (name, at) in [
            ("deadline", deadline),
            ("wake-up (clock read)", deadline + latency),
        ] {
            out.push(
                serde_json::json!({"name": name, "ph": "i", "s": "t", "ts": us(at),
                                        "pid": cpu, "tid": OWNER_TRACK}),
            );
        }
        for e in events {
            out.push(
                serde_json::json!({"name": e.name, "ph": "i", "s": "t", "ts": us(e.ts_ns),
                "pid": e.cpu, "tid": e.pid, "args": {"fields": e.fields}}),
            );
        }
        serde_json::json!({"traceEvents": out, "displayTimeUnit": "ns",
                           "otherData": {"generator": "rtlab", "clock": "CLOCK_MONOTONIC"}})
    }

    #[test]
    fn a_window_written_as_it_goes_is_the_document_a_serializer_makes() {
        let text = include_str!("../../tests/traces/fifo-hog-preempts.txt");
        let mut events = text::events(text);
        // Names and fields JSON must escape, and one that needs nothing.
        for (e, name) in events.iter_mut().zip([
            "a\"quoted\" \\ task",
            "ctl\u{1}\u{1f}\u{7f}",
            "\u{e9}t\u{e9} \u{2028} \u{1f600}",
            "plain",
        ]) {
            e.comm = name.into();
            e.fields = format!("{} x=\"{name}\"", e.fields);
        }
        for (deadline, latency) in [(11_692_596_928_077, 2_075_000), (11_692_596_928_999, 1)] {
            let window = (deadline, latency, 0);
            let (segments, _, _) = analyze::segments_known(&events, 16157, window, &|_| None);
            let written = trace_events(&events, &segments, (deadline, latency));
            let doc: serde_json::Value = serde_json::from_str(&written).unwrap();
            let want = trace_events_by_value(&events, 16157, (deadline, latency, 0));
            assert_eq!(doc, want);
        }
    }

    #[test]
    fn a_window_is_trace_event_json_with_named_tracks_and_the_latency_covered() {
        let text = include_str!("../../tests/traces/fifo-hog-preempts.txt");
        let events = text::events(text);
        let (deadline, latency) = (11_692_596_928_077, 2_075_000);
        let (_, segments) =
            analyze::explain_segments(&events, (0, 16157, 1), (deadline, latency, 0), &|_| None);
        let doc: serde_json::Value =
            serde_json::from_str(&trace_events(&events, &segments, (deadline, latency))).unwrap();
        let all = doc["traceEvents"].as_array().unwrap();
        let slices: Vec<&serde_json::Value> = all.iter().filter(|e| e["ph"] == "X").collect();
        // The owner track covers the latency, in µs, without gaps.
        let dur: f64 = slices.iter().map(|s| s["dur"].as_f64().unwrap()).sum();
        assert!((dur - latency as f64 / 1000.0).abs() < 1e-6, "{dur}");
        assert!(
            slices
                .iter()
                .all(|s| s["tid"] == OWNER_TRACK && s["pid"] == 1)
        );
        assert!(slices.iter().any(|s| s["name"] == "python3"));
        // Every track that holds events has a name.
        let named: Vec<&serde_json::Value> = all
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| &e["tid"])
            .collect();
        for e in all.iter().filter(|e| e["ph"] == "i") {
            assert!(named.contains(&&e["tid"]), "{e}");
        }
        let raw = ftrace_text(&events);
        assert!(raw.starts_with("# tracer: nop\n"));
        let back = text::events(&raw);
        assert_eq!(back.len(), events.len());
        for (b, e) in back.iter().zip(&events) {
            assert_eq!(
                (&b.comm, b.pid, b.ts_ns, &b.name),
                (&e.comm, e.pid, e.ts_ns, &e.name)
            );
            assert_eq!(b.pairs().collect::<Vec<_>>(), e.pairs().collect::<Vec<_>>());
        }
    }
}

//! Actions at a late wake-up (`on_spike`, `--on-spike`): the main thread
//! watches the timer threads' announcements (the same live counters the
//! flight recorder reads) and, at most once per `on_spike.every`, signals
//! a process, runs a program with the spike's figures in its environment,
//! or ends the run. Never on a timer thread: a timer thread only counts.
//! A program runs with rtlab's rights, from its argument list (no shell),
//! in its own process group that rtlab's guard kills if rtlab dies; at the
//! end of the run, those still running get [`CHILD_GRACE`] and are killed.

use crate::measure::TimerHandle;
use crate::sys::{consts, os};
use rtlab_core::config::SpikeAction;
use serde::{Deserialize, Serialize};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What to do at a late wake-up (the plan's `on_spike`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpikeActions {
    /// The actions, in order.
    pub actions: Vec<SpikeAction>,
    /// At most one round of them this often (ns).
    pub every_ns: u64,
}

/// What the actions did in a run (`on_spike` in the result).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpikeReport {
    /// The actions, in words.
    pub actions: Vec<String>,
    /// The rate limit (ns).
    pub every_ns: u64,
    /// Late wake-ups announced.
    pub spikes: u64,
    /// Of those, passed over by the rate limit.
    pub suppressed: u64,
    /// Each round of actions (at most [`MAX_ROUNDS`]).
    pub rounds: Vec<Round>,
    /// Rounds past [`MAX_ROUNDS`], counted.
    #[serde(default)]
    pub rounds_not_listed: u64,
}

/// Most rounds listed in the result.
pub const MAX_ROUNDS: usize = 100;
/// How long a program still running at the end of the run is waited for.
pub const CHILD_GRACE: Duration = Duration::from_secs(2);
/// Most programs running at once; a round past it does not start one.
const MAX_CHILDREN: usize = 8;

/// One round of actions, for one late wake-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// The timer thread.
    pub timer: usize,
    /// Its sample.
    pub sample: u64,
    /// The deadline (CLOCK_MONOTONIC, ns).
    pub deadline_ns: u64,
    /// The latency (ns).
    pub latency_ns: u64,
    /// The CPU it woke on, if known.
    pub cpu: Option<u64>,
    /// What each action did.
    pub outcomes: Vec<String>,
}

/// The running watch.
pub struct SpikeWatch {
    spec: SpikeActions,
    report: SpikeReport,
    /// Per timer thread: its announcements counted so far.
    seen: Vec<u64>,
    next_round: Option<Instant>,
    children: Vec<Child>,
    /// A `stop` action ran: the run ends.
    pub stop: bool,
}

impl SpikeWatch {
    /// A watch doing `spec`.
    pub fn new(spec: &SpikeActions) -> Self {
        SpikeWatch {
            report: SpikeReport {
                actions: spec.actions.iter().map(describe).collect(),
                every_ns: spec.every_ns,
                ..SpikeReport::default()
            },
            spec: spec.clone(),
            seen: Vec::new(),
            next_round: None,
            children: Vec::new(),
            stop: false,
        }
    }

    /// Looks for late wake-ups announced since the last look and, within
    /// the rate limit, acts on the latest. `guard` is told each program's
    /// process group as it starts (`true`) and ends (`false`).
    pub fn look(&mut self, timers: &[TimerHandle], guard: &mut dyn FnMut(i32, bool)) {
        self.children.retain_mut(|c| match c.try_wait() {
            Ok(Some(_)) => {
                guard(c.id() as i32, false);
                false
            }
            _ => true,
        });
        self.seen.resize(timers.len(), 0);
        // The worst of this look's news is acted on; the others counted.
        let mut latest: Option<(Round, i32)> = None;
        let mut news = 0;
        for (t, seen) in timers.iter().zip(&mut self.seen) {
            let s = t.live.read();
            let new = s.over.saturating_sub(*seen);
            if new == 0 {
                continue;
            }
            *seen = s.over;
            news += new;
            if latest
                .as_ref()
                .is_some_and(|(r, _)| r.latency_ns >= s.over_latency_ns)
            {
                continue;
            }
            let round = Round {
                timer: t.spec.index,
                sample: s.over_sample,
                deadline_ns: s.over_deadline_ns,
                latency_ns: s.over_latency_ns,
                cpu: (s.over_cpu != u64::MAX).then_some(s.over_cpu),
                outcomes: Vec::new(),
            };
            latest = Some((round, t.live.tid.load(std::sync::atomic::Ordering::Relaxed)));
        }
        let Some((round, tid)) = latest else {
            return;
        };
        self.report.spikes += news;
        self.report.suppressed += news - 1;
        let now = Instant::now();
        if self.next_round.is_some_and(|at| now < at) {
            self.report.suppressed += 1;
            return;
        }
        self.next_round = Some(now + Duration::from_nanos(self.spec.every_ns));
        self.act(round, tid, guard);
    }

    fn act(&mut self, mut round: Round, tid: i32, guard: &mut dyn FnMut(i32, bool)) {
        for action in self.spec.actions.clone() {
            let outcome = match action {
                SpikeAction::Save => "trace window kept by the flight recorder".to_string(),
                SpikeAction::Stop => {
                    self.stop = true;
                    "the run stops".to_string()
                }
                SpikeAction::Signal { pid, signal } => match os::kill_pid(pid, signal) {
                    Ok(()) => format!("signal {signal} sent to {pid}"),
                    Err(e) => format!("signal {signal} to {pid} failed: {e}"),
                },
                SpikeAction::Run { argv } => self.run(&argv, &round, tid, guard),
            };
            round.outcomes.push(outcome);
        }
        if self.report.rounds.len() < MAX_ROUNDS {
            self.report.rounds.push(round);
        } else {
            self.report.rounds_not_listed += 1;
        }
    }

    fn run(
        &mut self,
        argv: &[String],
        r: &Round,
        tid: i32,
        guard: &mut dyn FnMut(i32, bool),
    ) -> String {
        if self.children.len() >= MAX_CHILDREN {
            return format!(
                "{} not started: {MAX_CHILDREN} of its runs still going",
                argv[0]
            );
        }
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .stdin(Stdio::null())
            .env("RTLAB_SPIKE_TIMER", r.timer.to_string())
            .env("RTLAB_SPIKE_TID", tid.to_string())
            .env("RTLAB_SPIKE_SAMPLE", r.sample.to_string())
            .env("RTLAB_SPIKE_DEADLINE_NS", r.deadline_ns.to_string())
            .env("RTLAB_SPIKE_LATENCY_NS", r.latency_ns.to_string())
            .env(
                "RTLAB_SPIKE_CPU",
                r.cpu.map_or(String::new(), |c| c.to_string()),
            );
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
        match cmd.spawn() {
            Ok(child) => {
                let pid = child.id() as i32;
                guard(pid, true);
                self.children.push(child);
                format!("{} started (pid {pid})", argv[0])
            }
            Err(e) => format!("{} could not start: {e}", argv[0]),
        }
    }

    /// Ends the watch: programs still running get [`CHILD_GRACE`], then
    /// their process groups are killed. Gives the report.
    pub fn finish(mut self) -> SpikeReport {
        let until = Instant::now() + CHILD_GRACE;
        while !self.children.is_empty() && Instant::now() < until {
            self.children
                .retain_mut(|c| !matches!(c.try_wait(), Ok(Some(_))));
            std::thread::sleep(Duration::from_millis(10));
        }
        for mut c in self.children.drain(..) {
            let _ = os::kill_group(c.id() as i32, consts::SIGKILL);
            let _ = c.wait();
        }
        self.report
    }
}

/// An action in words, for the result.
pub fn describe(a: &SpikeAction) -> String {
    match a {
        SpikeAction::Save => "save".into(),
        SpikeAction::Stop => "stop".into(),
        SpikeAction::Signal { pid, signal } => format!("signal {pid} {signal}"),
        SpikeAction::Run { argv } => format!(
            "run {}",
            crate::config::values::quote_cmdline(argv).unwrap_or_else(|| argv.join(" "))
        ),
    }
}

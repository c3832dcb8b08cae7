//! Actions at a late wake-up (`on_spike`, `--on-spike`): the main thread
//! watches the timer threads' announcements (the same live counters the
//! flight recorder reads) and, at most once per `on_spike.every`, signals
//! a process, runs a program with the spike's figures in its environment,
//! or ends the run. Never on a timer thread: a timer thread only counts.
//!
//! A program is started by the run's supervisor ([`Launcher`]) as programs
//! are: from its argument list (no shell), SCHED_OTHER on the CPUs no timer
//! thread measures, in a process group of its own (and, as root, the run's
//! tracking cgroup) that is killed when the program ends, when the run
//! ends, and by the guard if rtlab dies. At most [`MAX_ALIVE`] run at once
//! and [`MAX_PROGRAM_RUNS`] in a run; what was not started is counted.
//!
//! The process of `signal PID` is pinned when the run starts (a pidfd, or
//! its start time): once it has ended, nothing is sent to whoever has its
//! number now, and the round says so.

use crate::measure::TimerHandle;
use crate::sys::SysRoot;
use crate::sys::tasks::{Pinned, SignalError};
use rtlab_core::config::SpikeAction;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What to do at a late wake-up (the plan's `on_spike`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpikeActions {
    /// The actions, in order.
    pub actions: Vec<SpikeAction>,
    /// At most one round of them this often (ns).
    pub every_ns: u64,
    /// The executable of each `run` action, in order (found on `PATH` by
    /// the plan).
    #[serde(default)]
    pub programs: Vec<PathBuf>,
    /// The CPUs the programs run on: those no timer thread measures (every
    /// online CPU when each is measured).
    #[serde(default)]
    pub cpus: Vec<usize>,
}

impl SpikeActions {
    /// Whether an action starts programs.
    pub fn runs_programs(&self) -> bool {
        self.actions
            .iter()
            .any(|a| matches!(a, SpikeAction::Run { .. }))
    }
}

/// Starts the programs of `run` actions (the run's supervisor).
pub trait Launcher {
    /// Starts `executable` with `argv` and `env` added; gives its PID.
    fn launch(
        &mut self,
        executable: &Path,
        argv: &[String],
        env: &[(&str, String)],
    ) -> std::io::Result<i32>;
    /// Programs started by actions that are still running (or whose
    /// leftovers are still being killed).
    fn alive(&self) -> usize;
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
    /// Programs `run` actions started.
    #[serde(default)]
    pub programs_started: u64,
    /// Programs `run` actions did not start: [`MAX_ALIVE`] still running,
    /// or [`MAX_PROGRAM_RUNS`] reached.
    #[serde(default)]
    pub programs_not_started: u64,
}

/// Most rounds listed in the result.
pub const MAX_ROUNDS: usize = 100;
/// Most programs of `run` actions alive at once; a round past it does not
/// start one.
pub const MAX_ALIVE: usize = 8;
/// Most programs `run` actions start in one run.
pub const MAX_PROGRAM_RUNS: u64 = 1000;

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
    root: SysRoot,
    /// Per action: the process of a `signal`, pinned when the run started.
    pinned: Vec<Option<Pinned>>,
    /// Per timer thread: its announcements counted so far.
    seen: Vec<u64>,
    next_round: Option<Instant>,
    /// A `stop` action ran: the run ends.
    pub stop: bool,
}

impl SpikeWatch {
    /// A watch doing `spec`; the processes of `signal` actions are pinned
    /// now.
    pub fn new(spec: &SpikeActions, root: &SysRoot) -> Self {
        SpikeWatch {
            report: SpikeReport {
                actions: spec.actions.iter().map(describe).collect(),
                every_ns: spec.every_ns,
                ..SpikeReport::default()
            },
            pinned: spec
                .actions
                .iter()
                .map(|a| match a {
                    SpikeAction::Signal { pid, .. } => Pinned::pin(root, *pid),
                    _ => None,
                })
                .collect(),
            root: root.clone(),
            spec: spec.clone(),
            seen: Vec::new(),
            next_round: None,
            stop: false,
        }
    }

    /// Looks for late wake-ups announced since the last look and, within
    /// the rate limit, acts on the latest, starting programs through
    /// `launcher`.
    pub fn look(&mut self, timers: &[TimerHandle], launcher: &mut dyn Launcher) {
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
        self.act(round, tid, launcher);
    }

    fn act(&mut self, mut round: Round, tid: i32, launcher: &mut dyn Launcher) {
        let mut programs = self.spec.programs.clone().into_iter();
        for (i, action) in self.spec.actions.clone().into_iter().enumerate() {
            let outcome = match action {
                SpikeAction::Save => "trace window kept by the flight recorder".to_string(),
                SpikeAction::Stop => {
                    self.stop = true;
                    "the run stops".to_string()
                }
                SpikeAction::Signal { pid, signal } => self.signal(i, pid, signal),
                SpikeAction::Run { argv } => {
                    let exe = programs.next().unwrap_or_else(|| PathBuf::from(&argv[0]));
                    self.run(&exe, &argv, &round, tid, launcher)
                }
            };
            round.outcomes.push(outcome);
        }
        if self.report.rounds.len() < MAX_ROUNDS {
            self.report.rounds.push(round);
        } else {
            self.report.rounds_not_listed += 1;
        }
    }

    /// Signals the process pinned for action `i`, never another that took
    /// its number.
    fn signal(&self, i: usize, pid: i32, signal: i32) -> String {
        let Some(pinned) = self.pinned.get(i).and_then(Option::as_ref) else {
            return format!(
                "signal {signal} not sent: process {pid} did not exist when the run started"
            );
        };
        match pinned.signal(&self.root, signal) {
            Ok(()) => format!("signal {signal} sent to {pid}"),
            Err(e @ SignalError::Ended(_)) => format!("signal {signal} not sent: {e}"),
            Err(e) => format!("signal {signal} to {pid} failed: {e}"),
        }
    }

    fn run(
        &mut self,
        exe: &Path,
        argv: &[String],
        r: &Round,
        tid: i32,
        launcher: &mut dyn Launcher,
    ) -> String {
        let name = argv.first().map_or("?", String::as_str);
        let refused = if self.report.programs_started >= MAX_PROGRAM_RUNS {
            Some(format!("{MAX_PROGRAM_RUNS} started in this run already"))
        } else if launcher.alive() >= MAX_ALIVE {
            Some(format!("{MAX_ALIVE} of its runs still going"))
        } else {
            None
        };
        if let Some(why) = refused {
            self.report.programs_not_started += 1;
            return format!("{name} not started: {why}");
        }
        let env = [
            ("RTLAB_SPIKE_TIMER", r.timer.to_string()),
            ("RTLAB_SPIKE_TID", tid.to_string()),
            ("RTLAB_SPIKE_SAMPLE", r.sample.to_string()),
            ("RTLAB_SPIKE_DEADLINE_NS", r.deadline_ns.to_string()),
            ("RTLAB_SPIKE_LATENCY_NS", r.latency_ns.to_string()),
            (
                "RTLAB_SPIKE_CPU",
                r.cpu.map_or(String::new(), |c| c.to_string()),
            ),
        ];
        match launcher.launch(exe, argv, &env) {
            Ok(pid) => {
                self.report.programs_started += 1;
                format!("{name} started (pid {pid})")
            }
            Err(e) => format!("{name} could not start: {e}"),
        }
    }

    /// Ends the watch (the supervisor stops what its programs left) and
    /// gives the report.
    pub fn finish(self) -> SpikeReport {
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
            crate::config::values::quote_cmdline(argv)
                .unwrap_or_else(|| crate::config::values::shell_join(argv))
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Starts nothing; counts what it was asked, and says how many live.
    struct Fake {
        alive: usize,
        launched: usize,
    }

    impl Launcher for Fake {
        fn launch(&mut self, _: &Path, _: &[String], _: &[(&str, String)]) -> std::io::Result<i32> {
            self.launched += 1;
            self.alive += 1;
            Ok(1000 + self.launched as i32)
        }
        fn alive(&self) -> usize {
            self.alive
        }
    }

    fn round() -> Round {
        Round {
            timer: 0,
            sample: 1,
            deadline_ns: 2,
            latency_ns: 3,
            cpu: Some(0),
            outcomes: Vec::new(),
        }
    }

    #[test]
    fn programs_are_bounded_at_once_and_in_all_and_what_is_not_started_is_counted() {
        let argv = vec!["notify".to_string()];
        let spec = SpikeActions {
            actions: vec![SpikeAction::Run { argv: argv.clone() }],
            every_ns: 0,
            programs: vec![PathBuf::from("/bin/notify")],
            cpus: vec![0],
        };
        let mut w = SpikeWatch::new(&spec, &SysRoot::real());
        let mut fake = Fake {
            alive: 0,
            launched: 0,
        };
        let exe = Path::new("/bin/notify");
        for _ in 0..MAX_ALIVE + 3 {
            w.run(exe, &argv, &round(), 7, &mut fake);
        }
        assert_eq!(fake.launched, MAX_ALIVE);
        assert_eq!(w.report.programs_started, MAX_ALIVE as u64);
        assert_eq!(w.report.programs_not_started, 3);
        let busy = w.run(exe, &argv, &round(), 7, &mut fake);
        assert!(
            busy.contains("not started: 8 of its runs still going"),
            "{busy}"
        );
        // The ones that ended make room, up to the run's total.
        for _ in 0..MAX_PROGRAM_RUNS * 2 {
            fake.alive = 0;
            w.run(exe, &argv, &round(), 7, &mut fake);
        }
        assert_eq!(fake.launched as u64, MAX_PROGRAM_RUNS);
        assert_eq!(w.report.programs_started, MAX_PROGRAM_RUNS);
        assert_eq!(
            w.report.programs_not_started,
            4 + MAX_PROGRAM_RUNS * 2 - (MAX_PROGRAM_RUNS - MAX_ALIVE as u64)
        );
        let done = w.run(exe, &argv, &round(), 7, &mut fake);
        assert!(done.contains("1000 started in this run already"), "{done}");
    }

    #[test]
    fn a_signal_goes_to_the_process_pinned_and_never_to_a_number_it_left() {
        // A child of ours: pinned, signalled, then ended and reaped.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let spec = SpikeActions {
            actions: vec![SpikeAction::Signal {
                pid,
                signal: crate::sys::consts::SIGTERM,
            }],
            every_ns: 0,
            programs: Vec::new(),
            cpus: Vec::new(),
        };
        let w = SpikeWatch::new(&spec, &SysRoot::real());
        assert_eq!(
            w.signal(0, pid, crate::sys::consts::SIGTERM),
            format!("signal 15 sent to {pid}")
        );
        let _ = child.wait();
        let after = w.signal(0, pid, crate::sys::consts::SIGTERM);
        assert!(after.contains("has ended: nothing was sent"), "{after}");
        // A process that was gone before the run started is never looked
        // up again.
        let gone = SpikeWatch::new(&spec, &SysRoot::real());
        let said = gone.signal(0, pid, crate::sys::consts::SIGTERM);
        assert!(
            said.contains("did not exist when the run started"),
            "{said}"
        );
    }
}

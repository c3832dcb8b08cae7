//! `rtlab fix EXPERIMENT`: runs the experiment with the flight recorder,
//! proposes one remedy per cause of its late wake-ups, applies each through
//! the journal and keeps it only when interleaved rounds prove it helped,
//! then measures the final state against the baseline. The proof itself is
//! `fix::drive`; this file plans the runs and holds the journal.

use super::refusal::{Outcome, Refusal, need_root};
use crate::fix::{self, Figure, RemedyClass, drive};
use crate::plan::RunPlan;
use crate::run::{self, RunOptions};
use crate::sys::SysRoot;
use crate::sys::journal::{self, Journal, Owner};
use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `rtlab fix`.
#[derive(Debug, Args)]
pub struct FixArgs {
    /// The experiment: its timer threads, loads and settings, run as they
    /// are in every round (with `trace.threshold`, or --threshold).
    pub file: PathBuf,
    /// Explain and count the wake-ups at least this late (default: the
    /// file's `trace.threshold`).
    #[arg(long, value_name = "DURATION")]
    pub threshold: Option<String>,
    /// Runs of each state per remedy (without, with, without, with...);
    /// as many again when they leave a figure undecided. 3 to 20: the
    /// rank test cannot decide at 5% on fewer.
    #[arg(long, default_value_t = 3)]
    pub rounds: u16,
    /// A figure a remedy must improve: over (the count at or above the
    /// threshold), p99, p99.9, max. Repeatable; default over and p99.9.
    #[arg(long = "figure", value_enum)]
    pub figures: Vec<Figure>,
    /// Try only these classes of remedy (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub only: Vec<RemedyClass>,
    /// Never try these classes of remedy (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub skip: Vec<RemedyClass>,
    /// Diagnose and show the plan of remedies; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Also lift RT throttling when it held a timer thread off (see the
    /// cost in the plan).
    #[arg(long)]
    pub lift_rt_throttling: bool,
    /// Write the outcome as JSON here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the outcome as an HTML report here.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Diagnoses at most: the first, then one more after each pass that
    /// kept a remedy (for the causes the larger ones hid).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=10))]
    pub diagnoses: u16,
    /// Never touch the threads whose name matches this glob (`rustc`,
    /// `my-daemon*`): they are left where they are, with advice.
    /// Repeatable.
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Write an experiment file that reproduces the kept state here.
    #[arg(long, value_name = "FILE")]
    pub kept: Option<PathBuf>,
}

/// `rtlab fix EXPERIMENT`.
pub fn main(args: &FixArgs) -> Outcome {
    if let Some(c) = args.only.iter().find(|c| args.skip.contains(c)) {
        return Err(Refusal::new(format!(
            "rtlab: fix: class `{}` is in both --only and --skip",
            c.name()
        ))
        .hint("give each class once: --only keeps those, --skip leaves those out"));
    }
    if !(3..=20).contains(&args.rounds) {
        return Err(Refusal::new(format!(
            "rtlab: fix: --rounds {}: {}",
            args.rounds,
            match args.rounds {
                0 => "no round of each state: nothing to compare".to_string(),
                n @ 1..=2 => format!(
                    "too few to decide: with {n} round{} of each state, the rounds of one state \
                     fall apart from the other's one time in {} by chance, and the rank test asks \
                     1 in 20",
                    if n == 1 { "" } else { "s" },
                    if n == 1 { 2 } else { 6 }
                ),
                _ => "more than 20 (each is a run of the experiment, for each state of each remedy)"
                    .to_string(),
            }
        ))
        .hint("give --rounds from 3 to 20 (3 by default; as many again are run when they leave a figure undecided)"));
    }
    need_root("rtlab fix")?;
    for out in [&args.json, &args.html, &args.kept].into_iter().flatten() {
        crate::sys::outfile::check(out, false).map_err(|e| Refusal::output("rtlab: fix: ", &e))?;
    }
    let (text, name) = super::experiment::experiment_text(Some(&args.file))?;
    let text = with_threshold(&text, &name, args.threshold.as_deref())?;
    let opts = crate::plan::PlanOptions {
        outdir: None,
        dbg_level: None,
        no_result_files: true,
    };
    let mut diagnosis = super::experiment::plan_from_text(&text, &name, &opts, &[])?;
    let threshold_ns = diagnosis
        .main
        .trace
        .as_ref()
        .map(|t| t.threshold_ns)
        .ok_or_else(|| {
            Refusal::new(format!("rtlab: fix: {name} has no `trace.threshold`"))
                .hint("add `trace.threshold 50 us` to its main stanza, or give --threshold 50us")
        })?;
    if diagnosis.timers.is_empty() {
        return Err(Refusal::new(format!("rtlab: fix: {name} has no timer thread")).hint(
            "rtlab fix measures the timer threads' wake-ups: add a `timer_thread[0]` stanza on the CPU to fix",
        ));
    }
    for t in &mut diagnosis.timers {
        t.spec.spikes.threshold_ns = Some(threshold_ns);
    }
    // The diagnosis also records where each task let the CPU go to a timer
    // thread: the non-preemptible path a remedy names (it costs only the
    // diagnosis run, not the measuring rounds).
    if let Some(t) = diagnosis.main.trace.as_mut()
        && t.stacks == crate::config::TraceStacks::Off
    {
        t.stacks = crate::config::TraceStacks::Switch;
    }
    let caught = super::common::catch_signals();
    let mut bench = RunBench::new(
        &diagnosis,
        threshold_ns,
        args.lift_rt_throttling,
        args.rounds as usize,
        caught,
    )?;
    bench.exclude = args.exclude.clone();
    let mut out = match prove(args, &mut bench, &diagnosis, &text, threshold_ns) {
        Ok(out) => out,
        Err(refusal) => {
            // Nothing was applied: the journal holds no change.
            if let Some(j) = bench.journal.take() {
                j.replay_and_close();
            }
            return Err(refusal);
        }
    };
    bench.finish(&mut out)?;
    write_outputs(args, &out)?;
    Ok(match (&out.stopped, bench.caught.load(Ordering::Relaxed)) {
        (None, _) => 0,
        (Some(_), 0) => crate::exit::FAILED,
        (Some(_), sig) => crate::exit::signal(sig as i32),
    })
}

/// The experiment's text with `trace.threshold` from --threshold.
fn with_threshold(text: &str, name: &str, threshold: Option<&str>) -> Result<String, Refusal> {
    let Some(t) = threshold else {
        return Ok(text.to_string());
    };
    let exp = crate::config::parse(text).map_err(|_| {
        Refusal::new(format!("rtlab: fix: {name} does not parse"))
            .hint(format!("`rtlab check {name}` says why"))
    })?;
    if exp.main.trace_threshold_ns.is_some() {
        return Err(
            Refusal::new(format!("rtlab: fix: {name} sets `trace.threshold` already"))
                .hint("leave out --threshold, or the key"),
        );
    }
    let t = super::generated::duration("--threshold", t)?;
    Ok(fix::with_main_keys(text, &[format!("trace.threshold {t}")]))
}

/// The proof, and the experiment file of what it kept.
fn prove(
    args: &FixArgs,
    bench: &mut RunBench,
    diagnosis: &RunPlan,
    text: &str,
    threshold_ns: u64,
) -> Result<fix::FixResult, Refusal> {
    outln!(
        "rtlab fix: {} (wake-ups at or above {} explained and counted)",
        diagnosis.source,
        fix::causes::micros(threshold_ns)
    );
    let figures = if args.figures.is_empty() {
        vec![Figure::Over, Figure::P999]
    } else {
        args.figures.clone()
    };
    let mut out = fix::FixResult::new(
        diagnosis.source.clone(),
        threshold_ns,
        figures.clone(),
        args.rounds as usize,
    );
    out.dry_run = args.dry_run;
    let skip = |p: &fix::Proposal| -> Option<String> {
        if args.dry_run {
            Some("--dry-run: nothing applied".into())
        } else if !args.only.is_empty() && !args.only.contains(&p.class) {
            Some(format!("left out: not in --only ({})", p.class.name()))
        } else if args.skip.contains(&p.class) {
            Some(format!("left out by --skip {}", p.class.name()))
        } else {
            None
        }
    };
    let settings = drive::Settings {
        rounds: args.rounds as usize,
        figures,
        diagnoses: args.diagnoses as usize,
        skip: &skip,
    };
    drive::prove(bench, &settings, &mut out);
    if out.diagnoses.is_empty() {
        return Err(Refusal::failed(format!(
            "rtlab: fix: the diagnosis run: {}",
            out.stopped.clone().unwrap_or_default()
        )));
    }
    if let Some(facts) = &bench.facts {
        let alive: Vec<i32> = out
            .decisions
            .iter()
            .flat_map(|d| &d.made)
            .filter_map(|m| match m {
                fix::apply::UndoStep::Affinity { tid, start, .. }
                    if crate::sys::tasks::start_time(&bench.root, *tid) == Some(*start) =>
                {
                    Some(*tid)
                }
                _ => None,
            })
            .collect();
        out.kept_experiment = crate::report::fix::kept_experiment(text, &out, facts, &alive);
    }
    Ok(out)
}

fn write_outputs(args: &FixArgs, out: &fix::FixResult) -> Result<(), Refusal> {
    outln!("{}", crate::report::fix::outcome_text(out).trim_end());
    let write = |path: &Path, bytes: &[u8]| {
        crate::sys::outfile::write_whole(path, bytes).map_err(|e| {
            Refusal::output("rtlab: fix: cannot write ", &e).status(crate::exit::FAILED)
        })
    };
    if let Some(p) = &args.json {
        let json = serde_json::to_string_pretty(out).unwrap_or_default();
        write(p, format!("{json}\n").as_bytes())?;
    }
    if let Some(p) = &args.html {
        write(p, crate::report::fix::html(out).as_bytes())?;
    }
    if let (Some(p), Some(text)) = (&args.kept, &out.kept_experiment) {
        write(p, text.as_bytes())?;
    }
    Ok(())
}

/// The measuring runs and the journal of the remedies.
struct RunBench {
    root: SysRoot,
    diagnosis: RunPlan,
    rounds: RunPlan,
    lift_rt_throttling: bool,
    /// The facts of the last diagnosis.
    facts: Option<fix::Facts>,
    opts: RunOptions,
    journal: Option<Journal>,
    caught: Arc<AtomicUsize>,
    measured: Vec<usize>,
    threshold_ns: u64,
    count: usize,
    rounds_per_state: usize,
    /// The last diagnosis, for the plan.
    last: Option<fix::Diagnosed>,
    /// Globs of thread names never touched (`--exclude`).
    exclude: Vec<String>,
    /// How often each IRQ fired on the measured CPUs in the last run.
    fired: std::collections::BTreeMap<u32, u64>,
}

/// Each IRQ's count from `before` to `after`.
fn fired(
    before: &std::collections::BTreeMap<u32, u64>,
    after: &std::collections::BTreeMap<u32, u64>,
) -> std::collections::BTreeMap<u32, u64> {
    after
        .iter()
        .map(|(n, c)| (*n, c.saturating_sub(before.get(n).copied().unwrap_or(0))))
        .collect()
}

impl RunBench {
    fn new(
        diagnosis: &RunPlan,
        threshold_ns: u64,
        lift_rt_throttling: bool,
        rounds_per_state: usize,
        caught: Arc<AtomicUsize>,
    ) -> Result<RunBench, Refusal> {
        let root = SysRoot::real();
        let dir = journal::default_dir();
        let journal = Journal::open(
            &root,
            &dir,
            &format!("fix-{}.journal", std::process::id()),
            Owner::Run,
        )
        .map_err(|e| Refusal::new(format!("rtlab: fix: {e}")))?;
        Ok(RunBench {
            diagnosis: diagnosis.clone(),
            rounds: round_plan(diagnosis, threshold_ns),
            lift_rt_throttling,
            facts: None,
            opts: RunOptions {
                json: None,
                every_refresh: false,
                root: root.clone(),
                journal_dir: dir,
                wake: crate::measure::Wake::Kernel,
                monitor: None,
                cyclictest: None,
                silent: true,
            },
            root,
            journal: Some(journal),
            caught,
            measured: Vec::new(),
            threshold_ns,
            count: 0,
            rounds_per_state,
            last: None,
            exclude: Vec::new(),
            fired: Default::default(),
        })
    }

    /// One run of `plan`; a signal or a failed run is a stop.
    fn run(&mut self, plan: &RunPlan) -> Result<crate::result::RunResult, String> {
        self.stop_if_caught()?;
        let result = run::execute(plan, &self.opts).map_err(|e| format!("{e:#}"))?;
        match &result.end {
            crate::result::EndReason::Completed => Ok(result),
            crate::result::EndReason::Interrupted { signal, .. } => {
                Err(format!("stopped by {signal}"))
            }
            end => Err(format!("a run did not complete: {end:?}")),
        }
    }

    fn stop_if_caught(&self) -> Result<(), String> {
        match self.caught.load(Ordering::Relaxed) {
            0 => Ok(()),
            sig => Err(format!("stopped by signal {sig}")),
        }
    }

    /// Hands the kept changes over to a journal `rtlab restore` replays
    /// (or replays them all when nothing was kept).
    fn finish(&mut self, out: &mut fix::FixResult) -> Result<(), Refusal> {
        let Some(j) = self.journal.take() else {
            return Ok(());
        };
        let kept = out.decisions.iter().any(|d| !d.made.is_empty());
        if !kept {
            let report = j.replay_and_close();
            for f in report.failures() {
                errln!("rtlab: fix: could not undo {}: {}", f.what, f.detail);
            }
            return Ok(());
        }
        let changes: Vec<journal::Change> = out
            .decisions
            .iter()
            .flat_map(|d| d.made.iter().map(fix::apply::UndoStep::change))
            .collect();
        let path = j
            .hand_over(
                &format!("fix-kept-{}.journal", std::process::id()),
                Owner::Tune,
                &changes,
            )
            .map_err(|e| {
                Refusal::failed(format!(
                    "rtlab: fix: the kept changes could not be handed over to a journal of their own ({e}): \
                     they stay in fix-{}.journal, which the next run or `rtlab restore` undoes",
                    std::process::id()
                ))
            })?;
        out.journal = Some(path.display().to_string());
        Ok(())
    }
}

impl drive::Bench for RunBench {
    fn diagnose(&mut self) -> Result<(fix::Diagnosed, Vec<fix::Proposal>), String> {
        let plan = self.diagnosis.clone();
        outln!("diagnosis run (flight recorder on):");
        let cpus: Vec<usize> = plan
            .timers
            .iter()
            .flat_map(|t| t.spec.cpus.clone())
            .collect();
        let before = fix::facts::irq_counts(&self.root, &cpus);
        let run = self.run(&plan)?;
        let after = fix::facts::irq_counts(&self.root, &cpus);
        let trace = run.trace.clone().unwrap_or_default();
        if let Some(why) = &trace.unavailable {
            return Err(format!("no trace, so no cause: {why}"));
        }
        let root = &self.root;
        let kernel = |tid: i32| crate::sys::threads::by_tid(root, tid).map(|t| t.kernel);
        let mut causes = fix::causes::causes(&trace.explanations, &kernel);
        causes.extend(fix::causes::slack_causes(&run.task_latency));
        let mut facts = fix::facts::read(&self.root, &run, &causes);
        facts.exclude(&self.exclude);
        facts.fired = Some(fired(&before, &after));
        causes.retain(|c| !facts.own_time(c));
        let options = fix::remedies::Options {
            lift_rt_throttling: self.lift_rt_throttling,
        };
        let proposals = fix::remedies::propose(&causes, &facts, &options);
        let d = fix::Diagnosed {
            figures: fix::Figures::of(&run),
            explained: trace.explanations.len() as u64,
            explained_ns: trace.explanations.iter().map(|e| e.latency_ns).sum(),
            causes,
        };
        outln!(
            "{}",
            crate::report::fix::diagnosis_text(&d, self.threshold_ns)
        );
        self.measured = facts.measured.clone();
        self.facts = Some(facts);
        self.last = Some(d.clone());
        Ok((d, proposals))
    }

    fn companion(&mut self, p: &fix::Proposal) -> Option<fix::Proposal> {
        if p.class != fix::RemedyClass::Thread {
            return None;
        }
        let idle = fix::remedies::idle_companion(self.facts.as_ref()?)?;
        outln!("  the move alone cut the count, not the tail: tried again with the idle remedy");
        Some(idle)
    }

    fn planned(&mut self, decisions: &[fix::Decision], first: usize) {
        if let Some(d) = &self.last {
            outln!(
                "{}",
                crate::report::fix::plan_text(d, decisions, first).trim_end()
            );
        }
        let todo = decisions[first..]
            .iter()
            .filter(|d| d.verdict == fix::Verdict::Untried)
            .count();
        if todo > 0 {
            let runs = todo * 2 * self.rounds_per_state
                + if first == 0 {
                    2 + 2 * self.rounds_per_state
                } else {
                    0
                };
            let each = self.rounds.planned_length_ns().unwrap_or(0) as f64 / 1e9;
            let remedies = if todo == 1 { "remedy" } else { "remedies" };
            outln!(
                "trying {todo} {remedies}: at least {runs} runs of about {each:.1} s (more if rounds \
                 leave a figure undecided or a remedy is tried again)"
            );
        }
    }

    fn measure(&mut self, state: &str) -> Result<fix::trial::Measured, String> {
        let plan = self.rounds.clone();
        self.count += 1;
        let before = fix::facts::irq_counts(&self.root, &self.measured);
        let result = self.run(&plan)?;
        let after = fix::facts::irq_counts(&self.root, &self.measured);
        self.fired = fired(&before, &after);
        let m = fix::trial::Measured::of(&result);
        let f = m.figures;
        outln!(
            "  run {:>2} {:<18} over {:>6}, p99.9 {:>9}, max {:>9}",
            self.count,
            format!("({state}):"),
            f.over,
            fix::causes::micros(f.p999_ns),
            fix::causes::micros(f.max_ns)
        );
        Ok(m)
    }

    fn apply(&mut self, p: &fix::Proposal) -> Result<Vec<fix::apply::UndoStep>, String> {
        let j = self.journal.as_mut().ok_or("no journal")?;
        fix::apply::apply(&self.root, j, p)
    }

    fn check(&mut self, p: &fix::Proposal) -> Result<(), String> {
        fix::apply::check(p, &self.measured, &self.fired)
    }

    fn undo(&mut self, steps: &[fix::apply::UndoStep]) -> Vec<String> {
        match self.journal.as_mut() {
            Some(j) => fix::apply::undo(&self.root, j, steps),
            None => vec!["no journal".into()],
        }
    }
}

/// The plan of a measuring round: the experiment without the flight
/// recorder (its reads would be part of what is measured), counting the
/// wake-ups at or above the threshold.
fn round_plan(diagnosis: &RunPlan, threshold_ns: u64) -> RunPlan {
    let mut plan = diagnosis.clone();
    plan.main.trace = None;
    for t in &mut plan.timers {
        t.spec.trace_threshold_ns = None;
        t.spec.spikes.threshold_ns = Some(threshold_ns);
    }
    plan
}

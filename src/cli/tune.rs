//! `rtlab irq`, `threads`, `cpufreq`, `cstates`, `sysinfo` and `hog`:
//! renderers of what [`crate::sys`] reads and [`crate::tune`] changes.
//! Every change goes through `tune.journal`, kept until `rtlab restore`.

use super::Refusal;
use super::common::{need_root, print_json};
use crate::cpulist;
use crate::sched::{Policy, Sched};
use crate::sys::journal::{self, Journal, Owner};
use crate::sys::{SysRoot, info::SystemSnapshot, irq, power, threads};
use crate::tune::{self, IrqSelection, Outcome, ThreadSelector, TuneError};
use crate::workload::ramp;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

use crate::exit::{PARTIAL as EXIT_PARTIAL, UNAVAILABLE as EXIT_UNAVAILABLE};

fn duration(text: &str) -> Result<Duration, String> {
    super::common::cli_duration(text)
}

/// `rtlab irq`.
#[derive(Debug, Args)]
pub struct IrqArgs {
    /// `move CPUS [IRQ...|all]`.
    #[command(subcommand)]
    pub action: Option<IrqAction>,
    /// Print as JSON (one document per interval with `--watch`).
    #[arg(long)]
    pub json: bool,
    /// Show the rate of each IRQ over INTERVAL, again and again (until
    /// Ctrl-C or `--count`).
    #[arg(long, value_name = "INTERVAL", num_args = 0..=1, default_missing_value = "1s", value_parser = duration)]
    pub watch: Option<Duration>,
    /// With `--watch`: stop after N intervals.
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
}

/// `rtlab irq move`.
#[derive(Debug, Subcommand)]
pub enum IrqAction {
    /// Set the affinity of IRQs (all when none given) to CPUS; IRQs the
    /// kernel refuses are reported and the others still move.
    Move {
        /// CPU list (`0`, `0-1`).
        cpus: String,
        /// IRQ numbers, or `all` (the default).
        irqs: Vec<String>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `rtlab threads`.
#[derive(Debug, Args)]
pub struct ThreadsArgs {
    /// `set PATTERN|TID --policy P --priority N`.
    #[command(subcommand)]
    pub action: Option<ThreadsAction>,
    /// Only threads with a real-time class (FIFO, RR, DEADLINE).
    #[arg(long)]
    pub rt: bool,
    /// Only threads allowed on CPU N.
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,
    /// Only threads whose name matches this glob (`ksoftirqd/*`).
    #[arg(long = "match", value_name = "PATTERN")]
    pub pattern: Option<String>,
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `rtlab threads set`.
#[derive(Debug, Subcommand)]
pub enum ThreadsAction {
    /// Set the policy and priority of the threads matching PATTERN (a glob
    /// on the name) or of one TID.
    Set {
        /// Name glob or TID.
        target: String,
        /// FIFO, RR, OTHER, BATCH or IDLE.
        #[arg(long, value_parser = policy)]
        policy: Policy,
        /// 1..99 for FIFO/RR; the nice value for the others.
        #[arg(long, allow_hyphen_values = true)]
        priority: i32,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

fn policy(text: &str) -> Result<Policy, String> {
    crate::config::values::policy(text).map_err(|e| e.message)
}

/// `rtlab cpufreq`.
#[derive(Debug, Args)]
pub struct CpufreqArgs {
    /// `set GOVERNOR`, `ramp`.
    #[command(subcommand)]
    pub action: Option<CpufreqAction>,
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `rtlab cpufreq set|ramp`.
#[derive(Debug, Subcommand)]
pub enum CpufreqAction {
    /// Set the governor of the policies covering CPUS (all by default).
    Set {
        /// The governor (`performance`, `schedutil`, `ondemand`...).
        governor: String,
        /// CPU list.
        #[arg(long)]
        cpus: Option<String>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The governor experiment: after an idle pause, a FIFO thread runs
    /// back-to-back busy loops; every loop's duration and the time until
    /// they reach full speed (the ramp latency), under each governor.
    Ramp(RampArgs),
}

/// Options of `rtlab cpufreq ramp`.
#[derive(Debug, Args)]
pub struct RampArgs {
    /// The CPU to run on.
    #[arg(long, default_value_t = 0)]
    pub cpu: usize,
    /// Governors to compare, comma-separated (default: the current one).
    #[arg(long, value_delimiter = ',')]
    pub governors: Vec<String>,
    /// Loops per governor.
    #[arg(long, default_value_t = 200)]
    pub loops: usize,
    /// Duration of one loop at full speed (µs).
    #[arg(long, default_value_t = 300)]
    pub loop_us: u64,
    /// Idle time before the loops.
    #[arg(long, default_value = "500ms", value_parser = duration)]
    pub idle: Duration,
    /// SCHED_FIFO priority of the thread.
    #[arg(long, default_value_t = 80)]
    pub priority: i32,
    /// Write every loop (governor, loop, start_us, duration_us) as CSV, for plotting.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `rtlab cstates`.
#[derive(Debug, Args)]
pub struct CstatesArgs {
    /// `set --max-latency US`.
    #[command(subcommand)]
    pub action: Option<CstatesAction>,
    /// Only these CPUs.
    #[arg(long)]
    pub cpus: Option<String>,
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `rtlab cstates set`.
#[derive(Debug, Subcommand)]
pub enum CstatesAction {
    /// Disable every idle state whose exit latency is above US.
    Set {
        /// Largest exit latency allowed (µs); 0 leaves only polling.
        #[arg(long, value_name = "US")]
        max_latency: u64,
        /// Only these CPUs (all online by default).
        #[arg(long)]
        cpus: Option<String>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `rtlab hog`.
#[derive(Debug, Args)]
pub struct HogArgs {
    /// Print the rate every INTERVAL.
    #[arg(long, default_value = "1s", value_parser = duration)]
    pub interval: Duration,
    /// Stop after this long (default: run until killed).
    #[arg(long, value_parser = duration)]
    pub duration: Option<Duration>,
    /// One JSON object per line instead of text.
    #[arg(long)]
    pub json: bool,
    /// Spin in bursts of this long (with --every), sleeping in between: a
    /// known culprit for the flight recorder (at a real-time priority, on
    /// the measured CPU).
    #[arg(long, value_parser = duration, requires = "every")]
    pub burst: Option<Duration>,
    /// Start a burst every PERIOD.
    #[arg(long, value_parser = duration, requires = "burst")]
    pub every: Option<Duration>,
}

fn cpus_arg(text: Option<&str>) -> Result<Option<Vec<usize>>, Refusal> {
    text.map(|t| {
        cpulist::parse(t).map_err(|e| {
            Refusal::new(format!("rtlab: bad CPU list `{t}`: {}", e.message))
                .hint("CPU lists look like `3`, `0-2` or `0,2-3`")
        })
    })
    .transpose()
}

/// A tuning command: root is checked, `tune.journal` opened, `change`
/// made through it, and its outcomes printed; returns the exit status.
fn change_with_journal(
    what: &str,
    json: bool,
    change: impl FnOnce(&SysRoot, &mut Journal) -> Result<Vec<Outcome>, TuneError>,
) -> super::Outcome {
    need_root(what)?;
    let root = SysRoot::real();
    let mut journal = Journal::open(
        &root,
        &journal::default_dir(),
        journal::TUNE_FILE,
        Owner::Tune,
    )
    // Nothing changed yet: a refusal.
    .map_err(|e| Refusal::new(format!("rtlab: {e}")))?;
    report(what, change(&root, &mut journal), json)
}

/// Prints the outcomes of a tuning command; returns its exit status.
fn report(what: &str, result: Result<Vec<Outcome>, TuneError>, json: bool) -> super::Outcome {
    let outcomes = result.map_err(|e| {
        let refusal = Refusal::new(format!("rtlab: {what}: {e}"));
        match e {
            TuneError::Unavailable(_) => refusal.status(EXIT_UNAVAILABLE),
            TuneError::Invalid { hint, .. } => refusal.hint(hint),
            TuneError::Journal(_) => refusal.status(crate::exit::FAILED),
        }
    })?;
    let refused = outcomes.iter().filter(|o| o.refused()).count();
    if json {
        print_json(&outcomes);
    } else {
        if outcomes.is_empty() {
            outln!("{what}: nothing to change");
        }
        for o in &outcomes {
            outln!("{}", o.line());
        }
        if refused > 0 {
            outln!(
                "{what}: the kernel refused {refused} of {} change{}; the others were made",
                outcomes.len(),
                if outcomes.len() == 1 { "" } else { "s" }
            );
        }
        if outcomes.iter().any(|o| !o.refused()) {
            outln!("(recorded in the journal: `rtlab restore` puts the old values back)");
        }
    }
    Ok(if refused > 0 { EXIT_PARTIAL } else { 0 })
}

/// `rtlab irq ...`.
pub fn irq_main(args: &IrqArgs) -> super::Outcome {
    let root = SysRoot::real();
    match &args.action {
        Some(IrqAction::Move { cpus, irqs, json }) => {
            let cpus = cpus_arg(Some(cpus))?.unwrap_or_default();
            let selection = IrqSelection::parse(irqs)
                .map_err(|e| Refusal::new(format!("rtlab: irq move: {e}")))?;
            change_with_journal("irq move", *json, |root, j| {
                selection
                    .resolve(root)
                    .and_then(|list| tune::move_irqs(root, j, &cpus, &list))
            })
        }
        None => match args.watch {
            None => {
                let table = irq::read(&root, &threads::list(&root));
                if args.json {
                    print_json(&table);
                } else {
                    out!("{}", irq_table(&table, None));
                }
                Ok(0)
            }
            Some(interval) => Ok(irq_watch(&root, interval, args.count, args.json)),
        },
    }
}

/// Rates (per second, per CPU) between two readings of the table.
fn rates(before: &irq::Interrupts, after: &irq::Interrupts, secs: f64) -> Vec<Vec<f64>> {
    after
        .irqs
        .iter()
        .map(|a| {
            let b = before.irqs.iter().find(|b| b.irq == a.irq);
            a.counts
                .iter()
                .enumerate()
                .map(|(i, &n)| {
                    let old = b.and_then(|b| b.counts.get(i)).copied().unwrap_or(n);
                    n.saturating_sub(old) as f64 / secs
                })
                .collect()
        })
        .collect()
}

fn irq_watch(root: &SysRoot, interval: Duration, count: Option<u64>, json: bool) -> i32 {
    let stop = super::common::catch_signals();
    let mut before = irq::read(root, &threads::list(root));
    let mut n = 0;
    while count.is_none_or(|c| n < c) {
        let start = std::time::Instant::now();
        while start.elapsed() < interval {
            if stop.load(std::sync::atomic::Ordering::SeqCst) != 0 {
                return 0;
            }
            std::thread::sleep(Duration::from_millis(20).min(interval));
        }
        let after = irq::read(root, &threads::list(root));
        let r = rates(&before, &after, start.elapsed().as_secs_f64());
        if json {
            #[derive(serde::Serialize)]
            struct Watch<'a> {
                interval_s: f64,
                #[serde(flatten)]
                table: &'a irq::Interrupts,
                rates_per_s: &'a [Vec<f64>],
            }
            match serde_json::to_string(&Watch {
                interval_s: interval.as_secs_f64(),
                table: &after,
                rates_per_s: &r,
            }) {
                Ok(line) => outln!("{line}"),
                Err(e) => errln!("rtlab: {e}"),
            }
        } else {
            outln!(
                "--- IRQ rates per second over {} ---",
                humantime::format_duration(interval)
            );
            out!("{}", irq_table(&after, Some(&r)));
        }
        before = after;
        n += 1;
    }
    0
}

/// The IRQ table: counts (or rates) per CPU, affinities, thread, chip, name.
fn irq_table(t: &irq::Interrupts, rates: Option<&[Vec<f64>]>) -> String {
    let mut out = format!("{:>5} ", "IRQ");
    for c in &t.cpus {
        out += &format!(
            "{:>11} ",
            format!("CPU{c}{}", if rates.is_some() { "/s" } else { "" })
        );
    }
    out += &format!(
        "{:<9} {:<9} {:<26} {:<24} NAME\n",
        "AFFINITY", "EFFECTIVE", "THREAD", "CHIP"
    );
    for (i, irq) in t.irqs.iter().enumerate() {
        out += &format!("{:>5} ", irq.irq);
        for c in 0..t.cpus.len() {
            match rates {
                Some(r) => {
                    let v = r.get(i).and_then(|r| r.get(c)).copied();
                    out += &format!("{:>11} ", v.map_or("-".into(), |v| format!("{v:.0}")));
                }
                None => {
                    let v = irq.counts.get(c);
                    out += &format!("{:>11} ", v.map_or("-".into(), u64::to_string));
                }
            }
        }
        let thread = irq
            .thread
            .as_ref()
            .map(|t| format!("{} {}", t.tid, t.sched))
            .unwrap_or_else(|| "-".into());
        out += &format!(
            "{:<9} {:<9} {:<26} {:<24} {}\n",
            irq.affinity.as_deref().unwrap_or("-"),
            irq.effective.as_deref().unwrap_or("-"),
            thread,
            format!("{} {}", irq.chip, irq.hwirq).trim(),
            irq.name
        );
    }
    out
}

/// `rtlab threads ...`.
pub fn threads_main(args: &ThreadsArgs) -> super::Outcome {
    let root = SysRoot::real();
    if let Some(ThreadsAction::Set {
        target,
        policy,
        priority,
        json,
    }) = &args.action
    {
        let sched = Sched {
            policy: *policy,
            priority: *priority,
        };
        let range = if policy.is_realtime() {
            1..=99
        } else {
            -20..=19
        };
        if !range.contains(priority) {
            return Err(Refusal::new(format!(
                "rtlab: threads set: priority {priority} is out of range for {}",
                policy.name()
            ))
            .hint("FIFO and RR take 1..99; OTHER and BATCH a nice value -20..19"));
        }
        return change_with_journal("threads set", *json, |root, j| {
            tune::set_thread_sched(root, j, &ThreadSelector::parse(target), sched)
        });
    }
    let all = threads::list(&root);
    let shown: Vec<&threads::ThreadInfo> = all
        .iter()
        .filter(|t| !args.rt || t.is_realtime())
        .filter(|t| {
            args.cpu
                .is_none_or(|c| cpulist::parse(&t.cpus_allowed).is_ok_and(|cpus| cpus.contains(&c)))
        })
        .filter(|t| {
            args.pattern
                .as_ref()
                .is_none_or(|p| threads::name_matches(p, &t.name))
        })
        .collect();
    if args.json {
        print_json(&shown);
    } else {
        print_threads(&shown);
    }
    Ok(0)
}

/// The threads' table, and their count.
fn print_threads(shown: &[&threads::ThreadInfo]) {
    outln!(
        "{:>7} {:>7} {:<4} {:>6} {:>4} {:<9} {:>4} {:<4} NAME",
        "TID",
        "PID",
        "CLS",
        "RTPRIO",
        "NI",
        "CPUS",
        "LAST",
        "KIND"
    );
    for t in shown {
        outln!(
            "{:>7} {:>7} {:<4} {:>6} {:>4} {:<9} {:>4} {:<4} {}",
            t.tid,
            t.pid,
            t.ps_class(),
            if t.is_realtime() {
                t.rt_priority.to_string()
            } else {
                "-".into()
            },
            t.nice,
            t.cpus_allowed,
            t.last_cpu,
            if t.kernel { "kern" } else { "user" },
            t.name
        );
    }
    outln!(
        "{} thread{}",
        shown.len(),
        if shown.len() == 1 { "" } else { "s" }
    );
}

/// `rtlab cpufreq ...`.
pub fn cpufreq_main(args: &CpufreqArgs) -> super::Outcome {
    let root = SysRoot::real();
    match &args.action {
        Some(CpufreqAction::Set {
            governor,
            cpus,
            json,
        }) => {
            let cpus = cpus_arg(cpus.as_deref())?;
            if power::freq_policies(&root).is_empty() {
                return report(
                    "cpufreq set",
                    Err(TuneError::Unavailable(format!(
                        "no cpufreq: {}",
                        power::no_cpufreq_reason(&root)
                    ))),
                    *json,
                );
            }
            change_with_journal("cpufreq set", *json, |root, j| {
                tune::set_governor(root, j, governor, cpus.as_deref())
            })
        }
        Some(CpufreqAction::Ramp(r)) => ramp_main(&root, r),
        None => {
            let policies = power::freq_policies(&root);
            if args.json {
                print_json(&policies);
            } else {
                print_policies(&policies);
            }
            if policies.is_empty() {
                return Err(Refusal::new(format!(
                    "rtlab: no cpufreq: {}",
                    power::no_cpufreq_reason(&root)
                ))
                .status(EXIT_UNAVAILABLE));
            }
            Ok(0)
        }
    }
}

/// The cpufreq policies' table.
fn print_policies(policies: &[power::FreqPolicy]) {
    outln!(
        "{:<9} {:<7} {:<14} {:<12} {:>9} {:>9} {:>9}  AVAILABLE",
        "POLICY",
        "CPUS",
        "DRIVER",
        "GOVERNOR",
        "CUR MHz",
        "MIN MHz",
        "MAX MHz"
    );
    let mhz = |k: Option<u64>| k.map_or("-".into(), |k| (k / 1000).to_string());
    for p in policies {
        outln!(
            "{:<9} {:<7} {:<14} {:<12} {:>9} {:>9} {:>9}  {}",
            p.policy,
            cpulist::format(&p.cpus),
            p.driver.as_deref().unwrap_or("-"),
            p.governor,
            mhz(p.cur_khz),
            mhz(p.min_khz),
            mhz(p.max_khz),
            p.available_governors.join(" ")
        );
    }
}

fn ramp_main(root: &SysRoot, args: &RampArgs) -> super::Outcome {
    ramp_refusals(root, args)?;
    let has_cpufreq = !power::freq_policies(root).is_empty();
    let (governors, unavailable) = ramp_governors(root, args, has_cpufreq);
    let mut journal = ramp_journal(root, args, has_cpufreq)?;
    let opts = ramp::RampOptions {
        cpu: args.cpu,
        priority: args.priority,
        loops: args.loops,
        loop_us: args.loop_us,
        idle: args.idle,
    };
    let cpu = args.cpu;
    let result = ramp::run(opts, &governors, |g| match journal.as_mut() {
        Some(j) => tune::set_governor(root, j, g, Some(&[cpu]))
            .map(|_| ())
            .map_err(|e| e.to_string()),
        None => Ok(()),
    });
    if let Some(j) = journal {
        let restored = j.replay_and_close();
        for f in restored.failures() {
            errln!("rtlab: could not restore {}: {}", f.what, f.detail);
        }
    }
    let (iterations, runs) =
        result.map_err(|e| Refusal::failed(format!("rtlab: cpufreq ramp: {e}")))?;
    if let Some(path) = &args.csv {
        ramp_csv(path, &runs)?;
    }
    print_ramp(args, iterations, &runs, has_cpufreq);
    Ok(if unavailable { EXIT_UNAVAILABLE } else { 0 })
}

/// What `cpufreq ramp` refuses before anything runs.
fn ramp_refusals(root: &SysRoot, args: &RampArgs) -> Result<(), Refusal> {
    let online = crate::sys::online_cpus(root).unwrap_or_default();
    if !online.contains(&args.cpu) {
        return Err(Refusal::new(format!(
            "rtlab: cpufreq ramp: CPU {} is not online",
            args.cpu
        )));
    }
    if !(1..=99).contains(&args.priority) || args.loops == 0 || args.loop_us == 0 {
        return Err(Refusal::new(
            "rtlab: cpufreq ramp: --priority takes 1..99, --loops and --loop-us at least 1",
        ));
    }
    if let Some(e) = args
        .csv
        .as_deref()
        .and_then(|p| crate::sys::outfile::check(p, false).err())
    {
        return Err(Refusal::output("rtlab: --csv ", &e));
    }
    Ok(())
}

/// The governors the loops run under, and whether those asked for cannot
/// be had (no cpufreq).
fn ramp_governors(root: &SysRoot, args: &RampArgs, has_cpufreq: bool) -> (Vec<String>, bool) {
    if !has_cpufreq {
        errln!("rtlab: no cpufreq: {}", power::no_cpufreq_reason(root));
        let unavailable = !args.governors.is_empty();
        if unavailable {
            errln!(
                "  the governors asked for cannot be set; the loops run once, at whatever \
                 speed the machine gives (exit status {EXIT_UNAVAILABLE})"
            );
        }
        return (vec!["(no cpufreq)".into()], unavailable);
    }
    if !args.governors.is_empty() {
        return (args.governors.clone(), false);
    }
    let current = power::freq_policies(root)
        .into_iter()
        .find(|p| p.cpus.contains(&args.cpu))
        .map_or("(current)".into(), |p| p.governor);
    (vec![current], false)
}

/// Governors are changed for the experiment only: a run journal, replayed
/// at the end (or by the next rtlab if this one dies). None when no
/// governor is set.
fn ramp_journal(
    root: &SysRoot,
    args: &RampArgs,
    has_cpufreq: bool,
) -> Result<Option<Journal>, Refusal> {
    if !has_cpufreq || args.governors.is_empty() {
        return Ok(None);
    }
    need_root("cpufreq ramp --governors")?;
    Journal::open(
        root,
        &journal::default_dir(),
        &format!("run-{}.journal", std::process::id()),
        Owner::Run,
    )
    .map(Some)
    // Nothing changed yet: a refusal.
    .map_err(|e| Refusal::new(format!("rtlab: {e}")))
}

/// Every loop of every governor, as CSV.
fn ramp_csv(path: &std::path::Path, runs: &[ramp::RampRun]) -> Result<(), Refusal> {
    let mut text = String::from("governor,loop,start_us,duration_us\n");
    for r in runs {
        for (i, l) in r.loops.iter().enumerate() {
            text += &format!(
                "{},{i},{:.3},{:.3}\n",
                r.governor, l.start_us, l.duration_us
            );
        }
    }
    crate::sys::outfile::write_whole(path, text.as_bytes())
        .map_err(|e| Refusal::output("rtlab: cannot write ", &e).status(crate::exit::FAILED))
}

/// The ramp's table, or its JSON.
fn print_ramp(args: &RampArgs, iterations: u64, runs: &[ramp::RampRun], has_cpufreq: bool) {
    if args.json {
        #[derive(serde::Serialize)]
        struct Ramp<'a> {
            cpu: usize,
            priority: i32,
            iterations_per_loop: u64,
            cpufreq: bool,
            runs: &'a [ramp::RampRun],
        }
        print_json(&Ramp {
            cpu: args.cpu,
            priority: args.priority,
            iterations_per_loop: iterations,
            cpufreq: has_cpufreq,
            runs,
        });
        return;
    }
    outln!(
        "CPU {} FIFO {}: {} loops of {iterations} iterations (~{} us at full speed), after {} idle",
        args.cpu,
        args.priority,
        args.loops,
        args.loop_us,
        humantime::format_duration(args.idle)
    );
    outln!(
        "{:<14} {:>10} {:>10} {:>10} {:>12}",
        "GOVERNOR",
        "FIRST us",
        "SLOWEST us",
        "FULL us",
        "RAMP us"
    );
    for r in runs {
        outln!(
            "{:<14} {:>10.1} {:>10.1} {:>10.1} {:>12}",
            r.governor,
            r.first_us,
            r.slowest_us,
            r.full_speed_us,
            r.ramp_us.map_or("never".into(), |v| format!("{v:.0}"))
        );
    }
}

/// `rtlab cstates ...`.
pub fn cstates_main(args: &CstatesArgs) -> super::Outcome {
    let root = SysRoot::real();
    if let Some(CstatesAction::Set {
        max_latency,
        cpus,
        json,
    }) = &args.action
    {
        let cpus = cpus_arg(cpus.as_deref())?;
        return change_with_journal("cstates set", *json, |root, j| {
            tune::limit_cstates(root, j, *max_latency, cpus.as_deref())
        });
    }
    let cpus = cpus_arg(args.cpus.as_deref())?
        .unwrap_or_else(|| crate::sys::online_cpus(&root).unwrap_or_default());
    let states = power::idle_states(&root, &cpus);
    let driver = power::idle_driver(&root);
    if args.json {
        #[derive(serde::Serialize)]
        struct Cstates<'a> {
            #[serde(flatten)]
            driver: &'a power::IdleDriver,
            states: &'a [power::IdleState],
        }
        print_json(&Cstates {
            driver: &driver,
            states: &states,
        });
    } else {
        print_cstates(&driver, &states);
    }
    if states.is_empty() {
        return Err(Refusal::new(format!(
            "rtlab: no cpuidle states on CPUs {}",
            cpulist::format(&cpus)
        ))
        .status(EXIT_UNAVAILABLE));
    }
    Ok(0)
}

/// The cpuidle driver and the states' table.
fn print_cstates(driver: &power::IdleDriver, states: &[power::IdleState]) {
    outln!(
        "cpuidle driver {}, governor {}",
        driver.driver.as_deref().unwrap_or("-"),
        driver.governor.as_deref().unwrap_or("-")
    );
    outln!(
        "{:>4} {:>5} {:<14} {:>11} {:>13} {:>12} {:>14} {:<8} DESC",
        "CPU",
        "STATE",
        "NAME",
        "LATENCY us",
        "RESIDENCY us",
        "USAGE",
        "TIME us",
        "STATUS"
    );
    for s in states {
        outln!(
            "{:>4} {:>5} {:<14} {:>11} {:>13} {:>12} {:>14} {:<8} {}",
            s.cpu,
            s.index,
            s.name,
            s.latency_us,
            s.residency_us,
            s.usage,
            s.time_us,
            if s.disabled { "DISABLED" } else { "enabled" },
            s.desc
        );
    }
}

/// `rtlab sysinfo`.
pub fn sysinfo_main(json: bool) -> super::Outcome {
    let s = SystemSnapshot::read(&SysRoot::real());
    if json {
        print_json(&s);
        return Ok(0);
    }
    out!("{}", s.render());
    out!("{}", crate::sys::features::render(&s.features));
    Ok(0)
}

/// The name `rtlab hog` runs under (`/proc/PID/comm`).
pub const HOG_COMM: &str = "rtlab-hog";

/// `rtlab hog`.
pub fn hog_main(args: &HogArgs) -> super::Outcome {
    // Its comm, as traces and `ps` show it: a verdict naming the hog must
    // not read as if it blamed rtlab itself.
    crate::sys::os::set_thread_name(HOG_COMM);
    if let (Some(burst), Some(every)) = (args.burst, args.every) {
        crate::workload::hog::bursts(burst, every, args.duration);
        return Ok(0);
    }
    crate::workload::hog::run(
        args.interval,
        args.duration,
        args.json,
        &mut std::io::stdout(),
    );
    Ok(0)
}

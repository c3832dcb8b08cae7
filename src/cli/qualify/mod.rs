//! `rtlab qualify`: node qualification as OpenShift's latency tests run it
//! (hwlatdetect, then cyclictest, then oslat, each for
//! `LATENCY_TEST_RUNTIME` against its limit), driven by their environment
//! contract ([`contract`]) so that a Kubernetes Job from a `FROM scratch`
//! image needs no shell. Each test is rtlab's own front end for that tool
//! (`rtlab hwlat`, `rtlab cyclictest`, `rtlab oslat`): the log shows each
//! tool's own output, and the limits are held against the maxima as those
//! outputs print them. The closing lines and the Node Feature Discovery
//! feature file render one [`Qualification`].
//!
//! Exit statuses: 0 when every test that ran kept within its limit (or no
//! limit was asked, or `LATENCY_TEST_RUN` is not true), 6 when a test went
//! over its limit or failed ([`crate::exit::REGRESSION`], a gate that held),
//! 2 when the contract or the options are refused before anything ran,
//! 1 when the feature file could not be written, 128+N when stopped by
//! signal N.

use super::common::Measured;
use super::{Outcome, Refusal};
use crate::report::qualify::{self as render, Qualification, TestOutcome, Verdict};
use clap::Args;
use contract::{Contract, Tool};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

pub mod contract;

/// Options of `rtlab qualify`.
#[derive(Args, Debug)]
pub struct QualifyArgs {
    /// The tests to run: hwlatdetect, cyclictest, oslat (all three, in this
    /// order, without any)
    #[arg(value_name = "TEST")]
    tests: Vec<String>,
    /// Write Node Feature Discovery's feature file here, whole (e.g.
    /// /etc/kubernetes/node-feature-discovery/features.d/rtlab):
    /// rtlab.qualified, rtlab.max-latency-us, per test its maximum,
    /// rtlab.isolation
    #[arg(long, value_name = "PATH")]
    nfd_file: Option<PathBuf>,
}

/// The CPUs a qualification measures on: the first `LATENCY_TEST_CPUS` of
/// those it may run on.
fn chosen_cpus(allowed: &[usize], wanted: Option<usize>) -> Result<Vec<usize>, Refusal> {
    if allowed.is_empty() {
        return Err(Refusal::new(
            "rtlab qualify: cannot read the CPUs this process may run on (sched_getaffinity)",
        ));
    }
    let n = wanted.unwrap_or(allowed.len());
    if n > allowed.len() {
        return Err(Refusal::new(format!(
            "rtlab qualify: LATENCY_TEST_CPUS is {n}, but this process may run on {} CPU(s) ({})",
            allowed.len(),
            crate::cpulist::format(allowed)
        ))
        .hint("give the pod that many CPUs (resources.limits.cpu, a Guaranteed pod), or lower LATENCY_TEST_CPUS"));
    }
    Ok(allowed[..n].to_vec())
}

fn tests_asked(names: &[String]) -> Result<Vec<Tool>, Refusal> {
    if names.is_empty() {
        return Ok(Tool::ALL.to_vec());
    }
    let mut tools = Vec::new();
    for n in names {
        let t = Tool::from_name(n).ok_or_else(|| {
            Refusal::new(format!("rtlab qualify: no test named {:?}", n))
                .hint("the tests are hwlatdetect, cyclictest and oslat")
        })?;
        if !tools.contains(&t) {
            tools.push(t);
        }
    }
    // OpenShift's order: hardware first, then the wake-ups, then the noise.
    tools.sort_by_key(|t| Tool::ALL.iter().position(|a| a == t));
    Ok(tools)
}

pub fn main(a: &QualifyArgs) -> Outcome {
    let contract = Contract::read(|k| std::env::var(k).ok())
        .map_err(|e| Refusal::new(format!("rtlab qualify: {e}")))?;
    let tools = tests_asked(&a.tests)?;
    // The output is checked first, skipped or not: a path that cannot be
    // written (another user's link) is refused before anything.
    if let Some(p) = &a.nfd_file
        && let Err(e) = crate::sys::outfile::check(p, false)
    {
        return Err(Refusal::output("rtlab qualify: --nfd-file ", &e));
    }
    if !contract.run {
        outln!(
            "rtlab qualify: LATENCY_TEST_RUN is not true: the latency tests are skipped (set LATENCY_TEST_RUN=true)"
        );
        return Ok(crate::exit::OK);
    }
    let allowed = crate::sys::os::get_affinity(0).unwrap_or_default();
    let cpus = chosen_cpus(&allowed, contract.cpus)?;
    let caught = super::common::catch_signals();
    if !wait(contract.delay_s, &caught) {
        return Ok(crate::exit::signal(caught.load(Ordering::SeqCst) as i32));
    }
    let mut q = Qualification {
        tests: Vec::new(),
        cpus: cpus.clone(),
        isolated: None,
        time: String::new(),
    };
    // A signal that comes before a test's run has armed its own handlers
    // is sent again until the run takes it (Kubernetes' grace period is
    // shorter than a test).
    let relay = Relay::start(caught.clone());
    for tool in tools {
        if caught.load(Ordering::SeqCst) != 0 {
            break;
        }
        // A front end pins its main thread (cyclictest's --mainaffinity):
        // each test starts from the CPUs the process was given.
        if let Err(e) = crate::sys::os::set_affinity(0, &allowed) {
            crate::messages::warn(&format!(
                "rtlab qualify: cannot restore the CPUs {}: {e}",
                crate::cpulist::format(&allowed)
            ));
        }
        let (outcome, result) = one_test(tool, &contract, &cpus);
        if q.isolated.is_none() {
            q.isolated = result.as_ref().and_then(isolated);
        }
        q.tests.push(outcome);
    }
    drop(relay);
    let sig = caught.load(Ordering::SeqCst);
    if sig != 0 {
        errln!("rtlab qualify: stopped by signal {sig}: no verdict, no feature file");
        return Ok(crate::exit::signal(sig as i32));
    }
    q.time = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    out!("{}", render::summary(&q));
    if let Some(p) = &a.nfd_file {
        crate::sys::outfile::write_whole(p, render::nfd_features(&q).as_bytes()).map_err(|e| {
            Refusal::output("rtlab qualify: --nfd-file ", &e).status(crate::exit::FAILED)
        })?;
    }
    Ok(if q.failed() {
        crate::exit::REGRESSION
    } else {
        crate::exit::OK
    })
}

/// Sleeps `LATENCY_TEST_DELAY` (the CPU manager's reconcile loop may move
/// the pod meanwhile); false when a signal came.
fn wait(delay_s: u64, caught: &AtomicUsize) -> bool {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(delay_s);
    while std::time::Instant::now() < end {
        if caught.load(Ordering::SeqCst) != 0 {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    caught.load(Ordering::SeqCst) == 0
}

/// A thread that sends the caught signal to this process again every
/// 200 ms, so that a run arming after it came still ends at once; stopped
/// when dropped.
struct Relay {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Relay {
    fn start(caught: Arc<AtomicUsize>) -> Relay {
        let done = Arc::new(AtomicBool::new(false));
        let stop = done.clone();
        let thread = std::thread::Builder::new()
            .name("rtlab-relay".into())
            .spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let sig = caught.load(Ordering::SeqCst);
                    if sig != 0 {
                        let _ = crate::sys::os::kill_pid(crate::sys::os::getpid(), sig as i32);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
            })
            .ok();
        Relay { done, thread }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Runs one test and judges it.
fn one_test(
    tool: Tool,
    contract: &Contract,
    cpus: &[usize],
) -> (TestOutcome, Option<crate::result::RunResult>) {
    let limit_us = contract.limit_us(tool);
    let mut outcome = TestOutcome {
        tool: tool.name(),
        limit_us,
        maxima_us: Vec::new(),
        verdict: Verdict::Unchecked,
    };
    let argv = match command_line(tool, contract, cpus) {
        Ok(argv) => argv,
        Err(why) => {
            outcome.verdict = Verdict::Skipped(why);
            return (outcome, None);
        }
    };
    outln!("# rtlab qualify: {} {}", tool.name(), words(&argv));
    let measured = match tool {
        Tool::Hwlatdetect => super::hwlat::measured(&argv),
        Tool::Cyclictest => super::cyclictest::measured(&argv),
        Tool::Oslat => super::oslat::measured(&argv),
    };
    let m = match measured {
        Ok(m) => m,
        Err(refusal) => {
            outcome.verdict = Verdict::Failed(refusal.print());
            return (outcome, None);
        }
    };
    let completed = m
        .result
        .as_ref()
        .is_some_and(|r| matches!(r.end, crate::result::EndReason::Completed));
    outcome.verdict = if completed {
        judge(tool, limit_us, &m)
    } else {
        // Broken off (a signal, a failure): no verdict on a part.
        Verdict::Failed(m.status.max(crate::exit::FAILED))
    };
    outcome.maxima_us = m.maxima_us;
    (outcome, m.result)
}

/// The verdict of a run that completed: cnf-tests holds each cyclictest
/// and oslat maximum to `max < limit`; hwlatdetect judges itself
/// (`max > hardlimit` fails, with the limit as its hard limit).
fn judge(tool: Tool, limit_us: Option<u64>, m: &Measured) -> Verdict {
    match (tool, limit_us, m.status) {
        (Tool::Hwlatdetect, Some(_), 1) => Verdict::Fail,
        (Tool::Hwlatdetect, Some(_), 0) => Verdict::Pass,
        (_, _, s) if s != 0 => Verdict::Failed(s),
        (_, None, _) => Verdict::Unchecked,
        (_, Some(l), _) if m.maxima_us.iter().any(|&x| x >= l) => Verdict::Fail,
        (_, Some(_), _) if m.maxima_us.is_empty() => Verdict::Failed(crate::exit::FAILED),
        _ => Verdict::Pass,
    }
}

/// Each tool's command line (rtlab's front end for it), or why it cannot
/// run on these CPUs.
fn command_line(tool: Tool, c: &Contract, cpus: &[usize]) -> Result<Vec<OsString>, String> {
    let list = crate::cpulist::format;
    let runtime = c.runtime_s.to_string();
    let (first, rest) = cpus.split_first().ok_or("no CPU")?;
    let words: Vec<String> = match tool {
        Tool::Hwlatdetect => {
            // cnf-tests: without a limit, a hard limit of 1000 µs.
            let limit = c.limit_us(tool);
            let mut w = vec![
                "--duration".into(),
                format!("{runtime}s"),
                "--hardlimit".into(),
                limit.unwrap_or(1000).to_string(),
                "--cpu-list".into(),
                list(cpus),
            ];
            if let Some(l) = limit {
                w.extend(["--threshold".into(), l.to_string()]);
            }
            w
        }
        Tool::Cyclictest => {
            // One thread per CPU; the main thread on the first when there
            // are others to measure.
            let measured = if rest.is_empty() { cpus } else { rest };
            let mut w: Vec<String> = ["-q", "-m", "-p", "95", "-i", "1000", "-h", "30", "-D"]
                .map(String::from)
                .to_vec();
            w.push(runtime);
            w.extend(["-t".into(), measured.len().to_string()]);
            w.extend(["-a".into(), list(measured)]);
            w.extend(["--mainaffinity".into(), first.to_string()]);
            w
        }
        Tool::Oslat => {
            if rest.is_empty() {
                return Err(format!(
                    "oslat needs 2 CPUs (one for its main thread, one to measure); CPU {first} only \
                     (LATENCY_TEST_CPUS, or the pod's CPUs)"
                ));
            }
            vec![
                "-D".into(),
                runtime,
                "--rtprio".into(),
                "1".into(),
                "--cpu-list".into(),
                list(rest),
                "--cpu-main-thread".into(),
                first.to_string(),
            ]
        }
    };
    Ok(words.into_iter().map(OsString::from).collect())
}

fn words(argv: &[OsString]) -> String {
    argv.iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether every CPU the run measured on (its timer or noise threads') was
/// isolated from load balancing when it started (isolcpus, an isolated
/// cgroup partition); None when it measured on none.
fn isolated(r: &crate::result::RunResult) -> Option<bool> {
    let s = &r.isolation.state;
    let cg = s.cgroup_isolated.clone().unwrap_or_default();
    let mut measured = r
        .timers
        .iter()
        .flat_map(|t| t.cpus.iter().copied())
        .chain(r.noise.iter().map(|n| n.cpu))
        .peekable();
    measured.peek()?;
    Some(measured.all(|c| s.isolated.contains(&c) || cg.contains(&c)))
}

#[cfg(test)]
mod tests;

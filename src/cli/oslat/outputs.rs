//! oslat's outputs from the run's result: stdout as oslat prints it, its
//! `--json` file written whole, rtlab's own findings on stderr, and the
//! exit status.

use super::{OslatRun, render};
use crate::result::{EndReason, NoiseResult, RunResult};
use std::time::SystemTime;

/// Each noise thread's `beyond` buckets, as the renderer reads them.
fn beyond(n: &NoiseResult) -> Vec<(u64, u64)> {
    n.gaps_hdr.iter().map(|b| (b.low_ns, b.count)).collect()
}

/// Prints and writes oslat's outputs of `result`; the exit status and
/// each thread's `Maximum:`.
pub fn write(
    run: &OslatRun,
    view: &render::View,
    result: &RunResult,
    started: SystemTime,
    cmdline: &str,
) -> (i32, Vec<u64>) {
    for w in &result.warnings {
        crate::messages::warn(w);
    }
    let mut noise: Vec<&NoiseResult> = result.noise.iter().collect();
    noise.sort_by_key(|n| n.index);
    let beyonds: Vec<Vec<(u64, u64)>> = noise.iter().map(|n| beyond(n)).collect();
    let threads: Vec<render::OslatThread> = noise
        .iter()
        .zip(&beyonds)
        .map(|(n, b)| render::OslatThread {
            cpu: n.cpu,
            counter_mhz: n.counter_hz / 1_000_000,
            exact: &n.gaps_exact,
            beyond: b,
            min_ns: n.summary.min_gap_ns,
            max_ns: n.summary.max_single_ns,
            duration_ns: n.summary.runtime_ns,
        })
        .collect();
    let bias = render::bias_ns(view, noise.iter().filter_map(|n| n.warmup_min_gap_ns));
    let mut stdout = render::bias_line(view, bias);
    stdout.push_str(render::starts(view));
    let stopped = noise.iter().find_map(|n| Some((n.cpu, n.stopped_at?)));
    let maxima = render::maxima(view, &threads);
    if stopped.is_none() {
        stdout.push_str(render::completed(view));
        stdout.push_str(&render::summary(view, bias, &threads));
    }
    out!("{stdout}");
    let mut status = 0;
    if let Some(path) = &run.json_path {
        let head = json_head(result, started, cmdline);
        let doc = render::json(view, bias, &head, &threads);
        if let Err(e) = crate::sys::outfile::write_whole(path, doc.as_bytes()) {
            errln!("rtlab oslat: --json {}", e.with_hint());
            status = 1;
        }
    }
    rtlab_findings(&noise);
    if let Some((cpu, gap)) = stopped {
        let limit = run.trace_threshold_us.unwrap_or(0);
        errln!(
            "rtlab oslat: Trace threshold ({limit} us) triggered on cpu {cpu} with {} us!\nStopping the test.",
            gap.ns / 1000
        );
        return (1, maxima);
    }
    let status = match &result.end {
        EndReason::Completed => status,
        EndReason::Interrupted { .. } => status,
        EndReason::Failed { error } => {
            errln!("rtlab oslat: run failed: {error}");
            1
        }
        _ => 1,
    };
    (status, maxima)
}

/// What rtlab adds, on stderr: the counter each thread read, and the
/// causes of the gaps when they were traced.
fn rtlab_findings(noise: &[&NoiseResult]) {
    for n in noise {
        errln!(
            "rtlab oslat: thread on CPU {} read {} ({})",
            n.cpu,
            crate::report::noise::counter(n),
            crate::text::one_line(&n.counter_why)
        );
        if let Some(e) = &n.error {
            errln!(
                "rtlab oslat: thread on CPU {}: {}",
                n.cpu,
                crate::text::one_line(e)
            );
        }
    }
}

/// rt-tests' JSON head: the command line, the times, `uname`.
fn json_head(result: &RunResult, started: SystemTime, cmdline: &str) -> render::JsonHead {
    let unix = |t: SystemTime| {
        t.duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64)
    };
    let s = &result.system;
    render::JsonHead {
        cmdline: cmdline.to_string(),
        start_time: render::timestamp(unix(started), 0),
        end_time: render::timestamp(unix(SystemTime::now()), 0),
        return_code: 0,
        sysname: "Linux".into(),
        nodename: s.hostname.clone(),
        release: s.kernel_release.clone(),
        version: s.kernel_version.clone(),
        machine: s.machine.clone(),
        realtime: s.preemption.realtime,
    }
}

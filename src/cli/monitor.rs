//! `rtlab monitor`: a run that goes on until stopped, exporting its figures
//! for Prometheus. The experiment is a file, or one FIFO 99 timer thread
//! per online CPU; everything else is `rtlab run`'s path.

use super::experiment::{
    builtin_cpus, check_json, load_plan, partitions, plan_from_text, run_plan,
};
use super::{Outcome, Refusal, RunArgs};
use crate::monitor::{MonitorSpec, RtTasks};
use crate::plan::{self, PlanOptions};
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The default address of `/metrics`: loopback only (a fleet's Prometheus
/// reaches it through `--listen 0.0.0.0:9977` or an agent).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9977";

/// `rtlab monitor`.
#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// The experiment file (default: one FIFO 99 timer thread per online
    /// CPU, 1 ms, until stopped). Timer threads with a lifetime stop at it;
    /// the run goes on until a signal.
    pub file: Option<PathBuf>,
    /// Serve `/metrics` at this address (`none`: no endpoint).
    #[arg(long, default_value = DEFAULT_LISTEN, value_name = "ADDR|none")]
    pub listen: String,
    /// Also write the metrics to this node_exporter textfile (`.prom`),
    /// whole, at every refresh (`stats.period`).
    #[arg(long, value_name = "FILE")]
    pub textfile: Option<PathBuf>,
    /// Append each window's histogram to this file (`none`: do not).
    #[arg(long, default_value = "rtlab-windows.jsonl", value_name = "FILE|none")]
    pub windows: String,
    /// How long a window lasts.
    #[arg(long, default_value = "1h", value_parser = duration)]
    pub window: Duration,
    /// Write the JSON result document to this file at the end.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Directory of the result files (and of the windows file when its
    /// name has no directory).
    #[arg(long, value_name = "DIR")]
    pub outdir: Option<PathBuf>,
    /// Also export the wake-up latency of every real-time task of the
    /// machine (SCHED_FIFO, SCHED_RR, SCHED_DEADLINE), aggregated in the
    /// kernel by a BPF program: histograms per CPU, policy and priority,
    /// and the worst tasks by name. Where BPF cannot run, says why and
    /// counts from tracefs instead (what the kernel's trace logs).
    #[arg(long)]
    pub rt_tasks: bool,
    /// With --rt-tasks: count every task's wake-ups, not only the
    /// real-time ones.
    #[arg(long, requires = "rt_tasks")]
    pub all_tasks: bool,
    /// With --rt-tasks: explain each wake-up at least this late (from the
    /// kernel's record of its CPU's last 64 events, sent by the BPF
    /// program: who ran, the interrupt handlers and softirqs; at most one
    /// per CPU per 10 ms, and each CPU's worst so far). `0`: none.
    #[arg(long, requires = "rt_tasks", value_name = "DURATION", default_value = "100us",
          value_parser = late_bound)]
    pub rt_late: Duration,
}

fn late_bound(text: &str) -> Result<Duration, String> {
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    super::common::cli_duration(text)
}

fn duration(text: &str) -> Result<Duration, String> {
    super::common::cli_duration(text).and_then(|d| {
        if d < Duration::from_secs(1) {
            Err("a window lasts at least 1 s".into())
        } else {
            Ok(d)
        }
    })
}

fn spec(a: &MonitorArgs) -> Result<MonitorSpec, Refusal> {
    let listen = if a.listen == "none" {
        None
    } else {
        match a.listen.parse::<SocketAddr>() {
            Ok(addr) => Some(addr),
            Err(_) => {
                return Err(Refusal::new(format!(
                    "rtlab: --listen {:?} is not an address",
                    a.listen
                ))
                .hint(format!(
                    "IP:PORT, e.g. {DEFAULT_LISTEN}, [::1]:9977, or `none`"
                )));
            }
        }
    };
    let windows_file = (a.windows != "none").then(|| {
        let path = PathBuf::from(&a.windows);
        match (&a.outdir, path.parent()) {
            (Some(dir), Some(p)) if p.as_os_str().is_empty() => dir.join(path),
            _ => path,
        }
    });
    for f in a.textfile.iter().chain(&windows_file) {
        if let Err(e) = crate::sys::outfile::check(f, a.outdir.is_some()) {
            return Err(Refusal::output("rtlab: ", &e));
        }
    }
    Ok(MonitorSpec {
        listen,
        textfile: a.textfile.clone(),
        windows_file,
        window: a.window,
        // Set from the plan's `stats.period` once it is read.
        refresh: Duration::from_secs(1),
        rt_tasks: match (a.rt_tasks, a.all_tasks) {
            (false, _) => None,
            (true, false) => Some(RtTasks::RealTime),
            (true, true) => Some(RtTasks::All),
        },
        rt_late: a.rt_late,
    })
}

/// `rtlab monitor [FILE]`.
pub fn monitor_main(a: &MonitorArgs, dbg_level: Option<u8>) -> Outcome {
    let spec = spec(a)?;
    let args = RunArgs {
        file: a.file.clone(),
        json: a.json.clone(),
        outdir: a.outdir.clone(),
        ..RunArgs::default()
    };
    check_json(&args)?;
    let opts = PlanOptions {
        outdir: a.outdir.clone(),
        dbg_level,
        no_result_files: false,
    };
    let plan = match &a.file {
        Some(_) => load_plan(a.file.as_deref(), &opts)?,
        None => {
            let root = crate::sys::SysRoot::real();
            let parts = partitions(&root);
            let text = plan::builtin_monitor_text(&builtin_cpus(&root, &parts), &parts);
            plan_from_text(&text, "<built-in monitor>", &opts, &[])?
        }
    };
    let spec = MonitorSpec {
        refresh: Duration::from_nanos(plan.main.stats_period_ns),
        ..spec
    };
    run_plan(&plan, &args, Some(spec))
}

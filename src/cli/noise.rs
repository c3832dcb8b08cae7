//! `rtlab noise CPUS`: one noise thread per CPU (oslat's method, rtla
//! osnoise's figures), written as an experiment file and run as any other.

use super::generated::{Generated, one_line};
use super::refusal::{Outcome, Refusal};
use super::{RunArgs, show};
use clap::Args;
use std::path::PathBuf;

/// `rtlab noise`.
#[derive(Debug, Args)]
pub struct NoiseArgs {
    /// The CPUs to measure (`1`, `2-3`): one busy-polling thread each.
    pub cpus: String,
    /// How long to measure (`10s`, `12h`).
    #[arg(long, default_value = "10 s")]
    pub duration: String,
    /// A gap between two clock reads at least this long is noise.
    #[arg(long, default_value = "5 us")]
    pub threshold: String,
    /// The period figures are kept by.
    #[arg(long, default_value = "1 s")]
    pub period: String,
    /// How long to poll in each period (default: all of it; 90% of it with
    /// --priority).
    #[arg(long)]
    pub runtime: Option<String>,
    /// Poll as SCHED_FIFO at this priority (default: SCHED_OTHER, as oslat).
    #[arg(long, value_name = "N")]
    pub priority: Option<u8>,
    /// Do not name the causes of the gaps from the kernel's tracepoints.
    #[arg(long)]
    pub no_attribute: bool,
    /// Write the JSON result document to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Exit with status 6 when this holds for the result
    /// ('noise.max_single>20us'). Repeatable.
    #[arg(long = "fail-if", value_name = "COND")]
    pub fail_if: Vec<crate::report::compare::Condition>,
    /// Print the experiment file it runs, and run it.
    #[arg(long)]
    pub print: bool,
}

/// `rtlab noise CPUS`.
pub fn main(args: &NoiseArgs) -> Outcome {
    let g = text(args)?;
    let text = g.text();
    if args.print {
        out!("# the experiment `rtlab noise` runs\n{text}");
    }
    show::check_run_gate(&args.fail_if)?;
    super::experiment::run_text(
        &text,
        "rtlab noise",
        &RunArgs {
            json: args.json.clone(),
            fail_if: args.fail_if.clone(),
            ..RunArgs::default()
        },
        &g.origins(),
    )
}

/// The experiment of `a`: a `main` with the duration, then a
/// `noise_thread[N]` per CPU.
fn text(a: &NoiseArgs) -> Result<Generated, Refusal> {
    let list = one_line("the CPU list", &a.cpus)?;
    let cpus = crate::cpulist::parse(&list).map_err(|e| {
        Refusal::new(format!("rtlab: CPUS `{list}`: {}", e.message)).hint("e.g. `1`, `2-3`, `1,3`")
    })?;
    let mut g = Generated::default();
    g.line("main").line("{");
    let duration = super::generated::duration("the duration", &a.duration)?;
    g.from(
        format!("  lifetime.duration {duration}"),
        "--duration",
        &a.duration,
    );
    g.line("}");
    for (i, cpu) in cpus.iter().enumerate() {
        g.line(format!("noise_thread[{i}]")).line("{");
        g.from(format!("  cpu_affinity {cpu}"), "CPUS", &a.cpus);
        let threshold = super::generated::duration("the threshold", &a.threshold)?;
        g.from(
            format!("  noise.threshold {threshold}"),
            "--threshold",
            &a.threshold,
        );
        let period = super::generated::duration("the period", &a.period)?;
        g.from(format!("  noise.period {period}"), "--period", &a.period);
        if let Some(r) = &a.runtime {
            let runtime = one_line("the runtime", r)?;
            g.from(format!("  noise.runtime {runtime}"), "--runtime", r);
        }
        if let Some(p) = a.priority {
            let given = p.to_string();
            g.from("  sched.policy FIFO".to_string(), "--priority", &given);
            g.from(format!("  sched.priority {p}"), "--priority", &given);
        }
        if a.no_attribute {
            g.from("  noise.attribute no".to_string(), "--no-attribute", "");
        }
        g.line("}");
    }
    Ok(g)
}

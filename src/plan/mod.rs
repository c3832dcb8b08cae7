//! Experiment + machine facts → a validated [`RunPlan`], or every problem as a
//! positioned [`Diagnostic`]. Nothing is started or written here: the only
//! action is a probe thread that tries the real-time policies the plan asks
//! for and then exits, so that a refusal is known before anything starts.

use crate::config::{self, Diagnostic, Experiment};
use std::path::PathBuf;

mod builtin;
mod checks;
mod machine;
mod model;
mod noise;
mod placement;
mod refused_rt;
mod spikes;
mod stanzas;
mod trace_memory;
pub use trace_memory::SHARE as TRACE_MEMORY_SHARE;
mod task_latency;
mod tuning;
pub use crate::tune::TuningSpec;
pub use builtin::{builtin_experiment_text, builtin_monitor_text};
pub use machine::{Machine, RealMachine, find_in_path};
pub use model::{MainPlan, NoisePlan, PlanOptions, RunPlan, TimerPlan};

use checks::{check_deadlines, check_privileges};
use stanzas::irq_tasks;

struct Planner<'a> {
    machine: &'a dyn Machine,
    online: Vec<usize>,
    diags: Vec<Diagnostic>,
    no_result_files: bool,
}

/// Builds the plan, gathering every problem.
pub fn build(
    exp: &Experiment,
    source: &str,
    machine: &dyn Machine,
    opts: &PlanOptions,
) -> Result<RunPlan, Vec<Diagnostic>> {
    let mut p = Planner {
        machine,
        online: machine.online_cpus(),
        diags: Vec::new(),
        no_result_files: opts.no_result_files,
    };
    let outdir = opts.outdir.clone().unwrap_or_else(|| PathBuf::from("."));
    let started_in = machine.cpuset(None).ok();
    let main = p.main_plan(exp, opts, started_in.as_ref());
    // Threads and programs without a cpuset key stay where main is.
    let inherited = main.cpuset.clone().or(started_in);
    let timers = p.timer_plans(exp, &outdir, inherited.as_ref());
    let mut main = main;
    main.on_spike = spikes::plan(&mut p, exp, &timers);
    trace_memory::check(&mut p, exp, &timers);
    let (group_of, cpu_groups) = p.bandwidth_groups(exp);
    let programs = p.program_specs(exp, group_of, inherited.as_ref());
    let irq_tasks = irq_tasks(&mut p, exp);
    let task_latency = task_latency::specs(&mut p, exp);
    let noise = noise::plans(&mut p, exp, inherited.as_ref());
    p.check_something_runs(exp);
    check_privileges(&mut p, exp);
    check_deadlines(&mut p, exp);
    if !p.diags.is_empty() {
        p.diags.sort_by_key(|d| d.pos);
        return Err(p.diags);
    }
    Ok(RunPlan {
        source: source.to_string(),
        outdir,
        main,
        timers,
        programs,
        cpu_groups,
        irq_tasks,
        task_latency,
        noise,
    })
}
/// Parses and plans a file's text; diagnostics are rendered for `name`.
pub fn plan_text(
    text: &str,
    name: &str,
    machine: &dyn Machine,
    opts: &PlanOptions,
) -> Result<RunPlan, Vec<Diagnostic>> {
    let (exp, mut diags) = config::parse_all(text);
    machine.read_done();
    if diags.is_empty() {
        return build(&exp, name, machine, opts);
    }
    // The file has problems: the valid part is still checked against the
    // machine (CPUs online, commands found, privileges), so that every
    // problem is reported at once. An experiment left with nothing to run
    // only because its stanzas were bad says nothing new.
    if !(exp.timers.is_empty() && exp.programs.is_empty())
        && let Err(more) = build(&exp, name, machine, opts)
    {
        for d in more {
            if !diags
                .iter()
                .any(|x| x.pos == d.pos && x.message == d.message)
            {
                diags.push(d);
            }
        }
        diags.sort_by_key(|d| d.pos);
    }
    Err(diags)
}

#[cfg(test)]
pub(crate) mod tests;

//! `rtlab task-latency`: how late any task wakes up, unmodified. It writes
//! the experiment it runs (a `task_latency[0]` stanza, and a `program[0]`
//! for a command given after `--`; printed with `--print`) and runs it as
//! `rtlab run` would.

use super::generated::{Generated, command_program, main_with_duration, one_line, task_keys};
use super::{Outcome, Refusal, RunArgs};
use clap::Args;
use std::path::PathBuf;

/// `rtlab task-latency`.
#[derive(Debug, Args)]
pub struct TaskLatencyArgs {
    /// The task by process id (every thread of it).
    #[arg(long, conflicts_with = "name")]
    pub pid: Option<i32>,
    /// The task by name (`comm`: every thread of this name).
    #[arg(long)]
    pub name: Option<String>,
    /// How long to measure (`10s`), a command given after `--` or not.
    #[arg(long, default_value = "10s")]
    pub duration: String,
    /// The task's period: jitter is measured against it, and it is the
    /// deadline unless `--deadline` is given.
    #[arg(long)]
    pub period: Option<String>,
    /// The deadline from each release: a cycle ending later is a miss.
    #[arg(long)]
    pub deadline: Option<String>,
    /// The thread that runs the cycle (its name, or its TID): `--period`
    /// and `--deadline` apply to it alone (by default: to each thread whose
    /// median period seen is within half a period of `--period`).
    #[arg(long, value_name = "NAME|TID")]
    pub thread: Option<String>,
    /// Explain each wake-up later than this (`trace.threshold`).
    #[arg(long, value_name = "DURATION")]
    pub threshold: Option<String>,
    /// Keep each thread's first N wake-ups one by one in the JSON result.
    #[arg(long, value_name = "N")]
    pub samples: Option<usize>,
    /// CPUs of the command given after `--`.
    #[arg(long, value_name = "CPUS")]
    pub cpu: Option<String>,
    /// Write the JSON result document to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Print the experiment file it runs, and run it.
    #[arg(long)]
    pub print: bool,
    /// Exit with status 6 when this holds for the run's result, e.g.
    /// 'deadline_misses>0' or 'max>200us' (as `rtlab run --fail-if`).
    /// Repeatable.
    #[arg(long = "fail-if", value_name = "COND")]
    pub fail_if: Vec<crate::report::compare::Condition>,
    /// The task to start and measure (program[0]).
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// `rtlab task-latency --pid P | --name N | -- CMD`.
pub fn main(args: &TaskLatencyArgs) -> Outcome {
    let g = text(args)?;
    let text = g.text();
    if args.print {
        out!("# the experiment `rtlab task-latency` runs\n{text}");
    }
    super::experiment::run_text(
        &text,
        "rtlab task-latency",
        &RunArgs {
            json: args.json.clone(),
            fail_if: args.fail_if.clone(),
            ..RunArgs::default()
        },
        &g.origins(),
    )
}

fn text(a: &TaskLatencyArgs) -> Result<Generated, Refusal> {
    let chosen = usize::from(a.name.is_some()) + usize::from(a.pid.is_some());
    if chosen + usize::from(!a.command.is_empty()) != 1 {
        return Err(Refusal::new(
            "rtlab: name the task once: --pid PID, --name NAME, or a command after `--`",
        )
        .hint("rtlab task-latency --period 1ms --cpu 1 -- ./my-control-loop"));
    }
    let mut g = Generated::default();
    main_with_duration(&mut g, &a.duration, a.cpu.as_ref(), &a.command)?;
    if let Some(t) = &a.threshold {
        let v = super::generated::duration("the threshold", t)?;
        g.from(format!("  trace.threshold {v}"), "--threshold", t);
    }
    g.line("}").line("task_latency[0]").line("{");
    task_keys(&mut g, a.name.as_ref(), "--name", a.pid)?;
    for (key, option, value) in [
        ("period", "--period", &a.period),
        ("deadline", "--deadline", &a.deadline),
        ("thread", "--thread", &a.thread),
    ] {
        if let Some(v) = value {
            let line = match key {
                "thread" => one_line(key, v)?,
                _ => super::generated::duration(key, v)?,
            };
            g.from(format!("  {key} {line}"), option, v);
        }
    }
    if let Some(n) = a.samples {
        g.from(format!("  samples {n}"), "--samples", &n.to_string());
    }
    g.line("}");
    if !a.command.is_empty() {
        // The run lasts `--duration`, the command ended or not.
        command_program(&mut g, &a.command, a.cpu.as_ref(), "IGNORE")?;
    }
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(command: &[&str]) -> TaskLatencyArgs {
        TaskLatencyArgs {
            pid: None,
            name: None,
            duration: "5s".into(),
            period: Some("1ms".into()),
            deadline: None,
            thread: None,
            threshold: Some("200us".into()),
            samples: Some(100),
            cpu: Some("1".into()),
            json: None,
            print: false,
            fail_if: Vec::new(),
            command: command.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn the_generated_experiment_reads_back_as_asked() {
        let g = text(&args(&["./loop", "a b"])).unwrap();
        let exp = crate::config::parse(&g.text()).unwrap();
        let m = &exp.task_latency[0];
        assert_eq!(m.task.value, crate::config::TaskSelector::Program(0));
        assert_eq!(
            (m.period_ns, m.deadline_ns, m.samples, &m.thread),
            (Some(1_000_000), None, 100, &None)
        );
        let mut named = args(&["./loop"]);
        named.thread = Some("rt-cycle".into());
        let by_name = crate::config::parse(&text(&named).unwrap().text()).unwrap();
        assert_eq!(by_name.task_latency[0].thread.as_deref(), Some("rt-cycle"));
        assert_eq!(exp.main.trace_threshold_ns, Some(200_000));
        assert_eq!(exp.programs[0].argv.value, ["./loop", "a b"]);
        let mut a = args(&[]);
        a.cpu = None;
        assert_eq!(text(&a).err().map(|r| r.status), Some(2), "no task named");
        a.pid = Some(42);
        a.name = Some("x".into());
        assert_eq!(text(&a).err().map(|r| r.status), Some(2), "named twice");
        a.name = None;
        let exp = crate::config::parse(&text(&a).unwrap().text()).unwrap();
        assert_eq!(
            exp.task_latency[0].task.value,
            crate::config::TaskSelector::Pid(42)
        );
        a.period = Some("1ms }\nprogram[3] {".into());
        assert_eq!(
            text(&a).err().map(|r| r.status),
            Some(2),
            "a value that would change the file"
        );
    }
}

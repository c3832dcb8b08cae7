//! `rtlab audit` and `rtlab irq-task`: the trace experiments without a
//! file. Each writes the experiment it runs (printed with `--print`, to
//! keep or edit) and runs it as `rtlab run` would: one path from file to
//! result, whichever way the experiment was given.

use super::generated::{Generated, command_program, main_with_duration, one_line, task_keys};
use super::{Outcome, Refusal, RunArgs};
use clap::Args;
use std::path::PathBuf;

/// `rtlab audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The CPUs to audit (`3`, `2-3`).
    pub cpus: String,
    /// How long to watch them (`10s`, `5 min`).
    #[arg(long)]
    pub duration: String,
    /// Write the JSON result document to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Print the experiment file it runs, and run it.
    #[arg(long)]
    pub print: bool,
}

/// `rtlab irq-task`.
#[derive(Debug, Args)]
pub struct IrqTaskArgs {
    /// The IRQ: its number, or its name as `/proc/interrupts` ends its line.
    pub irq: String,
    /// The task by name (`comm`).
    #[arg(long, conflicts_with = "pid")]
    pub task: Option<String>,
    /// The task by process id.
    #[arg(long)]
    pub pid: Option<i32>,
    /// CPUs of the command given after `--`.
    #[arg(long, value_name = "CPUS")]
    pub cpu: Option<String>,
    /// How long to measure (`10s`).
    #[arg(long)]
    pub duration: String,
    /// Also audit these CPUs.
    #[arg(long, value_name = "CPUS")]
    pub audit: Option<String>,
    /// Write the JSON result document to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Print the experiment file it runs, and run it.
    #[arg(long)]
    pub print: bool,
    /// The task to start and measure (program[0]), restarted when it ends.
    #[arg(last = true)]
    pub command: Vec<String>,
}

fn run_generated(g: &Generated, name: &str, json: Option<PathBuf>, print: bool) -> Outcome {
    let text = g.text();
    if print {
        out!("# the experiment `{name}` runs\n{text}");
    }
    super::experiment::run_text(
        &text,
        name,
        &RunArgs {
            json,
            ..RunArgs::default()
        },
        &g.origins(),
    )
}

/// `rtlab audit CPUS --duration D`.
pub fn audit_main(args: &AuditArgs) -> Outcome {
    let g = audit_text(args)?;
    run_generated(&g, "rtlab audit", args.json.clone(), args.print)
}

fn audit_text(a: &AuditArgs) -> Result<Generated, Refusal> {
    let mut g = Generated::default();
    g.line("main").line("{");
    let cpus = one_line("the CPU list", &a.cpus)?;
    g.from(format!("  audit.cpus {cpus}"), "CPUS", &a.cpus);
    let duration = super::generated::duration("the duration", &a.duration)?;
    g.from(
        format!("  lifetime.duration {duration}"),
        "--duration",
        &a.duration,
    );
    g.line("}");
    Ok(g)
}

/// `rtlab irq-task IRQ --task NAME|--pid PID|-- CMD --duration D`.
pub fn irq_task_main(args: &IrqTaskArgs) -> Outcome {
    let g = irq_task_text(args)?;
    run_generated(&g, "rtlab irq-task", args.json.clone(), args.print)
}

fn irq_task_text(a: &IrqTaskArgs) -> Result<Generated, Refusal> {
    let chosen = usize::from(a.task.is_some()) + usize::from(a.pid.is_some());
    if chosen == 0 && a.command.is_empty() || chosen == 1 && !a.command.is_empty() {
        return Err(Refusal::new(
            "rtlab: name the task once: --task NAME, --pid PID, or a command after `--`",
        )
        .hint(
            "rtlab irq-task 36 --cpu 1 --duration 10s -- dd if=FILE of=/dev/null iflag=direct bs=4k",
        ));
    }
    let mut g = Generated::default();
    main_with_duration(&mut g, &a.duration, a.cpu.as_ref(), &a.command)?;
    if let Some(cpus) = &a.audit {
        let list = one_line("the CPU list", cpus)?;
        g.from(format!("  audit.cpus {list}"), "--audit", cpus);
    }
    g.line("}").line("irq_task[0]").line("{");
    let irq = one_line("the IRQ", &a.irq)?;
    g.from(format!("  irq {irq}"), "IRQ", &a.irq);
    task_keys(&mut g, a.task.as_ref(), "--task", a.pid)?;
    g.line("}");
    if !a.command.is_empty() {
        command_program(&mut g, &a.command, a.cpu.as_ref(), "RESPAWN")?;
    }
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(command: &[&str]) -> IrqTaskArgs {
        IrqTaskArgs {
            irq: "virtio1-req.0".into(),
            task: None,
            pid: None,
            cpu: Some("1".into()),
            duration: "5s".into(),
            audit: Some("1".into()),
            json: None,
            print: false,
            command: command.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn the_generated_experiment_reads_back_as_asked() {
        let g = irq_task_text(&args(&["dd", "if=a b#c", "iflag=direct"])).unwrap();
        let exp = crate::config::parse(&g.text()).unwrap();
        assert_eq!(
            exp.programs[0].argv.value,
            ["dd", "if=a b#c", "iflag=direct"]
        );
        assert_eq!(exp.programs[0].cpu_affinity.as_ref().unwrap().value, [1]);
        assert_eq!(exp.main.audit_cpus.as_ref().unwrap().value, [1]);
        assert_eq!(exp.main.lifetime_ns, Some(5_000_000_000));
        assert_eq!(
            exp.irq_tasks[0].task.value,
            crate::config::TaskSelector::Program(0)
        );
        // A value that would change how the file reads is refused.
        let mut a = args(&["dd"]);
        a.irq = "36 }\nprogram[9] {".into();
        assert_eq!(irq_task_text(&a).map_err(|r| r.status), Err(2));
        let mut a = args(&[]);
        a.cpu = None;
        assert_eq!(
            irq_task_text(&a).map_err(|r| r.status),
            Err(2),
            "no task named"
        );
    }

    #[test]
    fn a_refusal_names_the_option_that_wrote_the_line() {
        let mut a = args(&["dd"]);
        a.duration = "2x".into();
        a.irq = "virtio1-req0".into();
        let g = irq_task_text(&a).unwrap();
        let exp = crate::config::parse(&g.text());
        let d = match exp {
            Err(d) => d,
            Ok(_) => panic!("2x read as a duration"),
        };
        let origins = g.origins();
        let line = d[0].pos.line;
        assert_eq!(origins[line - 1].as_deref(), Some("--duration 2x"));
        let irq_line = g
            .text()
            .lines()
            .position(|l| l.contains("irq virtio1-req0"))
            .unwrap();
        assert_eq!(origins[irq_line].as_deref(), Some("IRQ virtio1-req0"));
        let audit = audit_text(&AuditArgs {
            cpus: "1".into(),
            duration: "5s".into(),
            json: None,
            print: false,
        })
        .unwrap();
        assert!(crate::config::parse(&audit.text()).is_ok());
    }
}

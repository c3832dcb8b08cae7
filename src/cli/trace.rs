//! `rtlab audit` and `rtlab irq-task`: the trace experiments without a
//! file. Each writes the experiment it runs (printed with `--print`, to
//! keep or edit) and runs it as `rtlab run` would: one path from file to
//! result, whichever way the experiment was given.

use super::{EXIT_REFUSED, RunArgs};
use crate::config::values::quote_cmdline;
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

/// A value put on one line of the generated file: no line break, no `#`
/// or quote that would change how the line reads.
fn one_line(what: &str, value: &str) -> Result<String, i32> {
    let bad = value.is_empty()
        || value
            .chars()
            .any(|c| c.is_control() || matches!(c, '#' | '\'' | '"' | '\\' | '{' | '}'));
    if bad {
        errln!("rtlab: {what} {value:?} cannot be written in an experiment file");
        errln!("  hint: write the experiment file yourself (`rtlab audit --print` shows one)");
        return Err(EXIT_REFUSED);
    }
    Ok(value.trim().to_string())
}

fn run_generated(text: String, name: &str, json: Option<PathBuf>, print: bool) -> i32 {
    if print {
        out!("# the experiment `{name}` runs\n{text}");
    }
    super::run_text(
        &text,
        name,
        &RunArgs {
            json,
            ..RunArgs::default()
        },
    )
}

/// `rtlab audit CPUS --duration D`.
pub fn audit_main(args: &AuditArgs) -> i32 {
    let text = match (|| -> Result<String, i32> {
        Ok(format!(
            "main\n{{\n  audit.cpus {}\n  lifetime.duration {}\n}}\n",
            one_line("the CPU list", &args.cpus)?,
            one_line("the duration", &args.duration)?
        ))
    })() {
        Ok(t) => t,
        Err(code) => return code,
    };
    run_generated(text, "rtlab audit", args.json.clone(), args.print)
}

/// `rtlab irq-task IRQ --task NAME|--pid PID|-- CMD --duration D`.
pub fn irq_task_main(args: &IrqTaskArgs) -> i32 {
    let text = match irq_task_text(args) {
        Ok(t) => t,
        Err(code) => return code,
    };
    run_generated(text, "rtlab irq-task", args.json.clone(), args.print)
}

fn irq_task_text(a: &IrqTaskArgs) -> Result<String, i32> {
    let chosen = usize::from(a.task.is_some()) + usize::from(a.pid.is_some());
    if chosen == 0 && a.command.is_empty() || chosen == 1 && !a.command.is_empty() {
        errln!("rtlab: name the task once: --task NAME, --pid PID, or a command after `--`");
        errln!(
            "  hint: rtlab irq-task 36 --cpu 1 --duration 10s -- dd if=FILE of=/dev/null iflag=direct bs=4k"
        );
        return Err(EXIT_REFUSED);
    }
    let mut main = format!(
        "main\n{{\n  lifetime.duration {}\n",
        one_line("the duration", &a.duration)?
    );
    if let Some(cpus) = &a.audit {
        main.push_str(&format!(
            "  audit.cpus {}\n",
            one_line("the CPU list", cpus)?
        ));
    }
    main.push_str("}\n");
    let task = match (&a.task, a.pid) {
        (Some(name), _) => format!("task.name {}", one_line("the task name", name)?),
        (None, Some(pid)) => format!("task.pid {pid}"),
        (None, None) => "task.program 0".to_string(),
    };
    let mut text = format!(
        "{main}irq_task[0]\n{{\n  irq {}\n  {task}\n}}\n",
        one_line("the IRQ", &a.irq)?
    );
    if !a.command.is_empty() {
        let Some(cmdline) = quote_cmdline(&a.command) else {
            errln!("rtlab: this command line cannot be written in an experiment file");
            errln!("  hint: put it in a script, or write the experiment file yourself");
            return Err(EXIT_REFUSED);
        };
        text.push_str(&format!(
            "program[0]\n{{\n  cmdline {cmdline}\n  termination.ok RESPAWN\n  termination.ko RESPAWN\n"
        ));
        if let Some(cpus) = &a.cpu {
            text.push_str(&format!(
                "  cpu_affinity {}\n",
                one_line("the CPU list", cpus)?
            ));
        }
        text.push_str("}\n");
    } else if a.cpu.is_some() {
        errln!("rtlab: --cpu pins the command given after `--`, and there is none");
        return Err(EXIT_REFUSED);
    }
    Ok(text)
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
        let text = irq_task_text(&args(&["dd", "if=a b#c", "iflag=direct"])).unwrap();
        let exp = crate::config::parse(&text).unwrap();
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
        assert_eq!(irq_task_text(&a), Err(EXIT_REFUSED));
        let mut a = args(&[]);
        a.cpu = None;
        assert_eq!(irq_task_text(&a), Err(EXIT_REFUSED), "no task named");
    }
}

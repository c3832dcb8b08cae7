//! Experiments written from command-line options.

use super::Refusal;

/// An experiment written from command-line options: its lines, each with
/// the option that wrote it, so that a refusal names the option.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Generated {
    lines: Vec<(String, Option<String>)>,
}

impl Generated {
    pub(crate) fn line(&mut self, text: impl Into<String>) -> &mut Self {
        self.lines.push((text.into(), None));
        self
    }

    /// A line written from `option` (`--duration 2x`).
    pub(crate) fn from(&mut self, text: impl Into<String>, option: &str, value: &str) -> &mut Self {
        let shown = crate::text::one_line(value);
        self.lines
            .push((text.into(), Some(format!("{option} {shown}"))));
        self
    }

    pub(crate) fn text(&self) -> String {
        self.lines.iter().map(|l| format!("{}\n", l.0)).collect()
    }

    pub(crate) fn origins(&self) -> Vec<Option<String>> {
        self.lines.iter().map(|l| l.1.clone()).collect()
    }
}

/// A value put on one line of the generated file: no line break, no `#`
/// or quote that would change how the line reads.
pub(crate) fn one_line(what: &str, value: &str) -> Result<String, Refusal> {
    let bad = value.is_empty()
        || value
            .chars()
            .any(|c| c.is_control() || matches!(c, '#' | '\'' | '"' | '\\' | '{' | '}'));
    if bad {
        return Err(Refusal::new(format!(
            "rtlab: {what} {value:?} cannot be written in an experiment file"
        ))
        .hint("write the experiment file yourself (`--print` shows the one these options make)"));
    }
    Ok(value.trim().to_string())
}

/// A duration given on the command line, for one line of the generated
/// file: as given when the file reads it so, else in the file's grammar
/// where the command line's reads it (`10m` is `10min`), else as given,
/// for the file's parser to refuse at its line, naming the option.
pub(crate) fn duration(what: &str, value: &str) -> Result<String, Refusal> {
    let v = one_line(what, value)?;
    if crate::config::values::duration_ns(&v).is_ok() {
        return Ok(v);
    }
    Ok(crate::config::values::cli_duration_for_file(&v).unwrap_or(v))
}

/// The task of a measurement written from options: `task.name` (from
/// `name_option`), `task.pid`, or `task.program 0` for the command after
/// `--`.
pub(crate) fn task_keys(
    g: &mut Generated,
    name: Option<&String>,
    name_option: &str,
    pid: Option<i32>,
) -> Result<(), Refusal> {
    match (name, pid) {
        (Some(name), _) => {
            let v = one_line("the task name", name)?;
            g.from(format!("  task.name {v}"), name_option, name)
        }
        (None, Some(pid)) => g.from(format!("  task.pid {pid}"), "--pid", &pid.to_string()),
        (None, None) => g.line("  task.program 0"),
    };
    Ok(())
}

/// `program[0]`: the command given after `--`, pinned by `--cpu`, with
/// `ending` (`RESPAWN`, `IGNORE`) on both terminations.
pub(crate) fn command_program(
    g: &mut Generated,
    command: &[String],
    cpu: Option<&String>,
    ending: &str,
) -> Result<(), Refusal> {
    let Some(cmdline) = crate::config::values::quote_cmdline(command) else {
        return Err(Refusal::new(
            "rtlab: this command line cannot be written in an experiment file",
        )
        .hint("put it in a script, or write the experiment file yourself"));
    };
    g.line("program[0]").line("{");
    g.from(
        format!("  cmdline {cmdline}"),
        "the command after `--`:",
        &cmdline,
    );
    g.line(format!("  termination.ok {ending}"))
        .line(format!("  termination.ko {ending}"));
    if let Some(cpus) = cpu {
        let list = one_line("the CPU list", cpus)?;
        g.from(format!("  cpu_affinity {list}"), "--cpu", cpus);
    }
    g.line("}");
    Ok(())
}

/// `main`'s first line and `lifetime.duration` from `--duration`; Err
/// when `--cpu` is given without a command to pin.
pub(crate) fn main_with_duration(
    g: &mut Generated,
    duration: &str,
    cpu: Option<&String>,
    command: &[String],
) -> Result<(), Refusal> {
    if command.is_empty() && cpu.is_some() {
        return Err(Refusal::new(
            "rtlab: --cpu pins the command given after `--`, and there is none",
        ));
    }
    g.line("main").line("{");
    let d = self::duration("the duration", duration)?;
    g.from(format!("  lifetime.duration {d}"), "--duration", duration);
    Ok(())
}

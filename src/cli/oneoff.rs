//! `rtlab run` without a file: the built-in experiment, or one-off options
//! in the file's vocabulary (`--cpus 2-3 --period 200us --duration 1min
//! --priority 95 --histo-size 400us`), written as an experiment whose
//! lines name the option that wrote them. `--print` shows it: a file to
//! start from.

use super::EXIT_REFUSED;
use super::generated::{Generated, one_line};
use crate::config::keys::{CliOption, KEYS, KeySpec, StanzaKind};
use clap::{Arg, ArgAction, ArgGroup, ArgMatches, Args, Command, FromArgMatches};

/// The rows of the key table that have a one-off option, in the table's
/// order: each key of `main` or of `timer_thread` that `rtlab run` takes
/// from its command line, with the same values.
pub fn rows() -> impl Iterator<Item = (&'static KeySpec, &'static CliOption)> {
    KEYS.iter()
        .filter_map(|k| k.option.as_ref().map(|o| (k, o)))
}

/// The one-off options given to `rtlab run`: each row's values, in the
/// order of the rows.
#[derive(Debug, Default, Clone)]
pub struct OneOff {
    given: Vec<(&'static KeySpec, &'static CliOption, Vec<String>)>,
}

/// The argument of a row: its name as the option's (`histo_size`).
fn id(o: &CliOption) -> String {
    o.long.replace('-', "_")
}

/// The option a row declares: a flag for a flag key, else one value each
/// time it is given (repeated for a repeatable key); none with a file.
fn arg(key: &KeySpec, o: &CliOption) -> Arg {
    let arg = Arg::new(id(o))
        .long(o.long)
        .help(o.help)
        .help_heading(o.group.heading())
        .conflicts_with("file");
    if key.is_flag() {
        return arg.action(ArgAction::SetTrue);
    }
    let action = if key.repeatable {
        ArgAction::Append
    } else {
        ArgAction::Set
    };
    arg.value_name(o.value_name)
        .value_parser(clap::value_parser!(String))
        .action(action)
}

impl Args for OneOff {
    /// The rows' options, listed by group, the timer threads' keys before
    /// `main`'s, each in the table's order.
    fn augment_args(cmd: Command) -> Command {
        let mut rows: Vec<_> = rows().collect();
        rows.sort_by_key(|(k, o)| (o.group, k.stanza == StanzaKind::Main));
        let ids: Vec<String> = rows.iter().map(|(_, o)| id(o)).collect();
        cmd.args(rows.into_iter().map(|(k, o)| arg(k, o)))
            .group(ArgGroup::new("OneOff").multiple(true).args(ids))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }

    fn group_id() -> Option<clap::Id> {
        Some(clap::Id::from("OneOff"))
    }
}

impl FromArgMatches for OneOff {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut o = OneOff::default();
        o.update_from_arg_matches(m)?;
        Ok(o)
    }

    /// Each option given: a flag set, or its values in order.
    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        let bad = |e| clap::Error::raw(clap::error::ErrorKind::ArgumentConflict, e);
        for (key, o) in rows() {
            let values = if key.is_flag() {
                let set = m.try_get_one::<bool>(&id(o)).map_err(bad)?;
                set.copied().unwrap_or(false).then(Vec::new)
            } else {
                let values = m.try_get_many::<String>(&id(o)).map_err(bad)?;
                values.map(|v| v.cloned().collect())
            };
            if let Some(values) = values {
                self.given.retain(|(k, ..)| !std::ptr::eq(*k, key));
                self.given.push((key, o, values));
            }
        }
        Ok(())
    }
}

impl OneOff {
    /// Whether any one-off option was given.
    pub fn given(&self) -> bool {
        !self.given.is_empty()
    }

    /// The option of key `name` of `kind` and its values (none for a
    /// flag), if it was given.
    fn of(&self, kind: StanzaKind, name: &str) -> Option<(&CliOption, &[String])> {
        self.given
            .iter()
            .find(|(k, ..)| k.stanza == kind && k.name == name)
            .map(|(_, o, values)| (*o, values.as_slice()))
    }
}

/// The experiment of the one-off options on `online` CPUs. As in the
/// built-in experiment, each thread goes in the cpuset partition (cgroup
/// v1: name and CPUs) that holds its CPU.
pub fn experiment(
    o: &OneOff,
    online: &[usize],
    partitions: &[(String, Vec<usize>)],
) -> Result<Generated, i32> {
    let cpus = thread_cpus(o, online)?;
    let cpus_option = crate::config::keys::find(StanzaKind::Timer, "cpu_affinity")
        .and_then(|k| k.option)
        .map_or("--cpus".to_string(), |o| format!("--{}", o.long));
    let mut g = Generated::default();
    g.line("# written by `rtlab run` from its options")
        .line("main")
        .line("{")
        .line("  stats.cpu_load all");
    write_keys(&mut g, o, StanzaKind::Main)?;
    g.line("}");
    for (i, cpu) in cpus.iter().enumerate() {
        g.line("").line(format!("timer_thread[{i}]")).line("{");
        g.from(
            format!("  cpu_affinity {cpu}"),
            &cpus_option,
            &cpu.to_string(),
        );
        if let Some((name, _)) = partitions.iter().find(|(_, cpus)| cpus.contains(cpu)) {
            g.line(format!("  cpuset {name}"));
        }
        write_keys(&mut g, o, StanzaKind::Timer)?;
        g.line("}");
    }
    Ok(g)
}

/// One timer thread per CPU of `--cpus` (a timer thread's `cpu_affinity`),
/// else per online CPU.
fn thread_cpus(o: &OneOff, online: &[usize]) -> Result<Vec<usize>, i32> {
    let Some((option, [list, ..])) = o.of(StanzaKind::Timer, "cpu_affinity") else {
        return Ok(online.to_vec());
    };
    let list = one_line("the CPU list", list)?;
    crate::cpulist::parse(&list).map_err(|e| {
        errln!("rtlab run: --{} {list}: {}", option.long, e.message);
        errln!("  hint: CPU lists look like `3`, `0-2` or `0,2-3`");
        EXIT_REFUSED
    })
}

/// The lines of the options of `kind`'s keys, in their rank: each value
/// given (a flag's key alone), else the preset. A timer thread's
/// `cpu_affinity` is its own CPU, written by [`experiment`].
fn write_keys(g: &mut Generated, o: &OneOff, kind: StanzaKind) -> Result<(), i32> {
    let mut rows: Vec<_> = rows().filter(|(k, _)| k.stanza == kind).collect();
    rows.sort_by_key(|(_, opt)| opt.rank);
    for (key, opt) in rows {
        if kind == StanzaKind::Timer && key.name == "cpu_affinity" || no_duration(o, key) {
            continue;
        }
        let option = format!("--{}", opt.long);
        match o.of(kind, key.name) {
            Some(_) if key.is_flag() => {
                g.from(format!("  {}", key.name), &option, "");
            }
            Some((_, values)) => {
                for v in values {
                    let v = one_line(&option, v)?;
                    g.from(format!("  {} {v}", key.name), &option, &v);
                }
            }
            None => {
                if let Some(preset) = opt.preset {
                    g.line(format!("  {} {preset}", key.name));
                }
            }
        }
    }
    Ok(())
}

/// No timer thread's `lifetime.duration` line for `--duration none` (until
/// stopped), nor for `--loops` alone (the loops end the thread).
fn no_duration(o: &OneOff, key: &KeySpec) -> bool {
    if key.stanza != StanzaKind::Timer || key.name != "lifetime.duration" {
        return false;
    }
    match o.of(StanzaKind::Timer, "lifetime.duration") {
        Some((_, values)) => values.len() == 1 && values[0] == "none",
        None => o.of(StanzaKind::Timer, "lifetime.loops").is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-off options of `args`, as `rtlab run` parses them.
    fn parse(args: &[&str]) -> OneOff {
        let cmd = OneOff::augment_args(Command::new("run").arg(Arg::new("file")));
        let m = cmd.try_get_matches_from([&["run"], args].concat()).unwrap();
        OneOff::from_arg_matches(&m).unwrap()
    }

    #[test]
    fn one_off_options_write_the_files_keys() {
        let o = parse(&[
            "--cpus",
            "1,3",
            "--period",
            "200us",
            "--loops",
            "500",
            "--priority",
            "95",
            "--histo-size",
            "400 us",
        ]);
        let g = experiment(&o, &[0, 1, 2, 3], &[]).unwrap();
        let text = g.text();
        assert!(
            text.contains("timer_thread[1]\n{\n  cpu_affinity 3\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "  timer.period 200us\n  lifetime.loops 500\n  stats.histo_size 400 us\n"
            ),
            "{text}"
        );
        assert!(!text.contains("lifetime.duration"), "loops alone: {text}");
        // Each line names the option that wrote it.
        let origins = g.origins();
        let line = text
            .lines()
            .position(|l| l == "  sched.priority 95")
            .unwrap();
        assert_eq!(origins[line].as_deref(), Some("--priority 95"));
        // The defaults are the built-in experiment's.
        let text = experiment(&OneOff::default(), &[0], &[]).unwrap().text();
        for k in [
            "sched.policy FIFO",
            "sched.priority 99",
            "timer.period 1 ms",
            "lifetime.duration 10 s",
        ] {
            assert!(text.contains(k), "{k}: {text}");
        }
        assert!(experiment(&parse(&["--cpus", "x"]), &[0], &[]).is_err());
        assert!(experiment(&parse(&["--period", "1 ms\n}"]), &[0], &[]).is_err());
        // A CPU of a partition runs in it, as in the built-in experiment.
        let parts = [("rt".to_string(), vec![1]), ("nrt".to_string(), vec![0])];
        let o = parse(&["--cpus", "1"]);
        let text = experiment(&o, &[0, 1], &parts).unwrap().text();
        assert!(text.contains("  cpu_affinity 1\n  cpuset rt\n"), "{text}");
    }
}

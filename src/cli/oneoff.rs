//! `rtlab run` without a file: the built-in experiment, or one-off options
//! in the file's vocabulary (`--cpus 2-3 --period 200us --duration 1min
//! --priority 95 --histo-size 400us`), written as an experiment whose
//! lines name the option that wrote them. `--print` shows it: a file to
//! start from.

use super::Refusal;
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
        // An argument missing or of another type: the command is not the
        // one `augment_args` built.
        let bad = |e| clap::Error::raw(clap::error::ErrorKind::ValueValidation, e);
        for (key, o) in rows() {
            let values = if key.is_flag() {
                let set = m.try_get_one::<bool>(&id(o)).map_err(bad)?;
                set.copied().unwrap_or(false).then(Vec::new)
            } else {
                let values = m.try_get_many::<String>(&id(o)).map_err(bad)?;
                values.map(|v| v.cloned().collect())
            };
            if let Some(values) = values {
                self.given
                    .retain(|(k, ..)| (k.stanza, k.name) != (key.stanza, key.name));
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
) -> Result<Generated, Refusal> {
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
fn thread_cpus(o: &OneOff, online: &[usize]) -> Result<Vec<usize>, Refusal> {
    let Some((option, [list, ..])) = o.of(StanzaKind::Timer, "cpu_affinity") else {
        return Ok(online.to_vec());
    };
    let list = one_line("the CPU list", list)?;
    crate::cpulist::parse(&list).map_err(|e| {
        Refusal::new(format!(
            "rtlab run: --{} {list}: {}",
            option.long, e.message
        ))
        .hint("CPU lists look like `3`, `0-2` or `0,2-3`")
    })
}

/// The lines of the options of `kind`'s keys, in their rank: each value
/// given (a flag's key alone), else the preset. A timer thread's
/// `cpu_affinity` is its own CPU, written by [`experiment`].
fn write_keys(g: &mut Generated, o: &OneOff, kind: StanzaKind) -> Result<(), Refusal> {
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
            // An action's command line keeps its quotes, as in a file.
            Some((_, values)) if key.name == "on_spike" => {
                for v in values {
                    // Else as any value: refused here, or written for the
                    // parser to refuse at its line (a blank action).
                    let v = match crate::config::values::cmdline_on_a_line(v) {
                        true => v.trim().to_string(),
                        false => one_line(&option, v)?,
                    };
                    g.from(format!("  {} {v}", key.name), &option, &v);
                }
            }
            Some((_, values)) => {
                for given in values {
                    let v = match key.syntax.starts_with("DURATION") && given.trim() != "off" {
                        true => super::generated::duration(&option, given)?,
                        false => one_line(&option, given)?,
                    };
                    g.from(format!("  {} {v}", key.name), &option, given.trim());
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
    use crate::config::options::OptionGroup;

    /// Sets of one-off options whose experiment `rtlab run --print` wrote
    /// before the options came from the key table
    /// (tests/golden/run-print.txt keeps it).
    const PRINTED: &[&[&str]] = &[
        &[],
        &[
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
        ],
        &[
            "--memlock",
            "--trace-threshold",
            "50us",
            "--on-spike",
            "save",
            "--on-spike",
            "signal 1 TERM",
            "--on-spike-every",
            "1s",
            "--irq-latency",
            "--trace-stacks",
            "all",
            "--warmup",
            "2s",
        ],
        &["--duration", "none", "--policy", "RR"],
        &["--duration", "5s", "--loops", "3"],
        &["--loops", "7"],
        &[
            "--cpus",
            "0",
            "--duration",
            "none",
            "--loops",
            "2",
            "--memlock",
            "--on-spike",
            "stop",
            "--warmup",
            "1s",
        ],
        &["--cpus", "0-1", "--period", "2x"],
        &["--on-spike-every", "1s"],
        &["--memlock", "--irq-latency"],
        &[
            "--duration",
            "1 min",
            "--policy",
            "OTHER",
            "--priority",
            "0",
            "--histo-size",
            "1ms",
            "--trace-threshold",
            "20us",
            "--trace-stacks",
            "switch",
        ],
        &[
            "--cpus",
            "0,2",
            "--on-spike",
            "run /bin/echo hi",
            "--on-spike",
            "save",
            "--period",
            " 300us ",
        ],
        &[
            "--cpus",
            "2-3",
            "--warmup",
            "1s",
            "--priority",
            "80",
            "--policy",
            "RR",
            "--loops",
            "10",
            "--duration",
            "3s",
            "--histo-size",
            "200us",
            "--trace-threshold",
            "30us",
            "--on-spike-every",
            "2s",
            "--trace-stacks",
            "off",
        ],
    ];

    /// The experiment of each set on CPUs 0-3 (2 and 3 in a partition),
    /// each line with the option that wrote it.
    fn printed() -> String {
        let parts = [("rt".to_string(), vec![2, 3])];
        let mut out = String::new();
        for set in PRINTED {
            out.push_str(&format!("== rtlab run --print {set:?}\n"));
            let g = experiment(&parse(set), &[0, 1, 2, 3], &parts).unwrap();
            for (line, origin) in g.text().lines().zip(g.origins()) {
                match origin {
                    Some(o) => out.push_str(&format!("{line}\t<- {o:?}\n")),
                    None => out.push_str(&format!("{line}\n")),
                }
            }
        }
        out
    }

    #[test]
    fn print_writes_what_it_wrote_before_the_rows() {
        let want = include_str!("../../tests/golden/run-print.txt");
        let got = printed();
        if std::env::var_os("RTLAB_BLESS").is_some() {
            std::fs::write("tests/golden/run-print.txt", &got).unwrap();
        }
        assert_eq!(got, want);
    }

    #[test]
    fn a_duration_in_the_command_lines_units_is_written_in_the_files() {
        let g = experiment(
            &parse(&["--duration", "10m", "--period", "0.5m"]),
            &[0],
            &[],
        )
        .unwrap();
        let text = g.text();
        assert!(text.contains("  lifetime.duration 10min\n"), "{text}");
        assert!(text.contains("  timer.period 30s\n"), "{text}");
        let origins: Vec<String> = g.origins().into_iter().flatten().collect();
        assert!(
            origins.contains(&"--duration 10m".to_string()),
            "{origins:?}"
        );
        crate::config::parse(&text).unwrap();
    }

    /// `rtlab run` as the command line defines it.
    fn run_command() -> Command {
        use clap::CommandFactory;
        let mut cli = super::super::Cli::command();
        cli.build();
        cli.find_subcommand("run").unwrap().clone()
    }

    #[test]
    fn each_one_off_option_is_one_row_and_back() {
        let run = run_command();
        let own = [
            "file",
            "json",
            "outdir",
            "every_refresh",
            "print",
            "fail_if",
        ];
        let own = |a: &Arg| own.contains(&a.get_id().as_str()) || a.is_global_set();
        let options: Vec<&Arg> = run
            .get_arguments()
            .filter(|a| !own(a) && a.get_id() != "help")
            .collect();
        assert_eq!(options.len(), rows().count());
        for arg in options {
            let long = arg.get_long().unwrap();
            let mut of = rows().filter(|(_, o)| o.long == long);
            let (key, o) = of.next().expect("a row declares each one-off option");
            assert!(of.next().is_none(), "--{long} in two rows");
            assert_eq!(arg.get_help().unwrap().to_string(), o.help);
            assert_eq!(arg.get_help_heading(), Some(o.group.heading()));
            let conflicts = run.get_arg_conflicts_with(arg);
            assert_eq!(conflicts.len(), 1, "--{long}");
            assert_eq!(conflicts[0].get_id(), "file");
            let want = match (key.is_flag(), key.repeatable) {
                (true, _) => ArgAction::SetTrue,
                (false, true) => ArgAction::Append,
                (false, false) => ArgAction::Set,
            };
            assert_eq!(format!("{:?}", arg.get_action()), format!("{want:?}"));
            if !key.is_flag() {
                let names = arg.get_value_names().unwrap();
                assert_eq!(names.len(), 1);
                assert_eq!(names[0].as_str(), o.value_name);
            }
        }
        // And back: each option writes its key, on a line that names it.
        for (key, o) in rows() {
            let option = format!("--{}", o.long);
            let (args, line) = if key.is_flag() {
                (vec![option.as_str()], format!("  {}", key.name))
            } else {
                (vec![option.as_str(), "7"], format!("  {} 7", key.name))
            };
            let g = experiment(&parse(&args), &[0], &[]).unwrap();
            let text = g.text();
            let at = text.lines().position(|l| l == line);
            let at = at.unwrap_or_else(|| panic!("{option}: {text}"));
            let origin = format!("{} {}", option, args.get(1).unwrap_or(&""));
            assert_eq!(g.origins()[at].as_deref(), Some(origin.as_str()));
        }
    }

    #[test]
    fn run_help_groups_its_options_as_rtla_does() {
        let help = run_command().render_help().to_string();
        let mut last = 0;
        let mut headings = Vec::new();
        for group in OptionGroup::ALL {
            if let Some(at) = help.find(&format!("\n{}:\n", group.heading())) {
                assert!(at > last, "{} out of order:\n{help}", group.heading());
                last = at;
                headings.push((at, group));
            }
        }
        let shown: Vec<OptionGroup> = headings.iter().map(|(_, g)| *g).collect();
        use OptionGroup::*;
        assert_eq!(
            shown,
            [TimerThreads, IsolationAndTuning, Tracing, Actions, Output]
        );
        // Each option under its own heading.
        let under = |option: &str| {
            let at = help.find(&format!("      {option}")).unwrap();
            headings.iter().rev().find(|(h, _)| *h < at).unwrap().1
        };
        for (_, o) in rows() {
            assert_eq!(under(&format!("--{} ", o.long)), o.group, "--{}", o.long);
        }
        for (option, group) in [
            ("--json", Output),
            ("--print", Output),
            ("--fail-if", Actions),
        ] {
            assert_eq!(under(option), group, "{option}");
        }
    }

    /// The one-off options of `args`, as `rtlab run` parses them.
    fn parse(args: &[&str]) -> OneOff {
        let cmd = OneOff::augment_args(Command::new("run").arg(Arg::new("file")));
        let m = cmd.try_get_matches_from([&["run"], args].concat()).unwrap();
        OneOff::from_arg_matches(&m).unwrap()
    }

    #[test]
    fn an_actions_command_line_keeps_its_quotes_as_a_file_does() {
        // The new-user check: `--on-spike 'run sh -c "echo hi"'` was
        // refused, though the file takes that very line.
        let o = parse(&[
            "--trace-threshold",
            "50us",
            "--on-spike",
            r#"run sh -c "echo hi""#,
        ]);
        let text = experiment(&o, &[0], &[]).unwrap().text();
        assert!(
            text.contains("  on_spike run sh -c \"echo hi\"\n"),
            "{text}"
        );
        let exp = crate::config::parse(&text).expect("reads back");
        assert_eq!(
            exp.main.on_spike.first().map(|a| a.value.clone()),
            Some(crate::config::SpikeAction::Run {
                argv: vec!["sh".into(), "-c".into(), "echo hi".into()]
            })
        );
        // A comment outside quotes would cut it: refused.
        let o = parse(&["--trace-threshold", "50us", "--on-spike", "run echo # x"]);
        assert!(experiment(&o, &[0], &[]).is_err());
        // A blank one is written for the parser to refuse, and the actions
        // after it are kept.
        let o = parse(&[
            "--trace-threshold",
            "50us",
            "--on-spike",
            " ",
            "--on-spike",
            "stop",
        ]);
        let text = experiment(&o, &[0], &[]).unwrap().text();
        assert!(text.contains("  on_spike stop\n"), "{text}");
        assert!(crate::config::parse(&text).is_err(), "{text}");
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

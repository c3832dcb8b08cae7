//! `rtlab run` without a file: the built-in experiment, or one-off options
//! in the file's vocabulary (`--cpus 2-3 --period 200us --duration 1min
//! --priority 95 --histo-size 400us`), written as an experiment whose
//! lines name the option that wrote them. `--print` shows it: a file to
//! start from.

use super::EXIT_REFUSED;
use super::generated::{Generated, one_line};
use clap::Args;

/// One-off keys of `rtlab run` (each is the key of a `timer_thread` or of
/// `main`, with the same values).
#[derive(Debug, Args, Default, Clone)]
pub struct OneOff {
    /// One timer thread per CPU of CPULIST (`cpu_affinity`; default: every
    /// online CPU).
    #[arg(long, value_name = "CPULIST", conflicts_with = "file")]
    pub cpus: Option<String>,
    /// The timers' period (`timer.period`, default 1 ms).
    #[arg(long, value_name = "DURATION", conflicts_with = "file")]
    pub period: Option<String>,
    /// How long each thread measures (`lifetime.duration`, default 10 s;
    /// `none`: until stopped).
    #[arg(long, value_name = "DURATION|none", conflicts_with = "file")]
    pub duration: Option<String>,
    /// Or how many samples (`lifetime.loops`).
    #[arg(long, value_name = "N", conflicts_with = "file")]
    pub loops: Option<String>,
    /// The threads' policy (`sched.policy`, default FIFO).
    #[arg(long, value_name = "POLICY", conflicts_with = "file")]
    pub policy: Option<String>,
    /// Their priority (`sched.priority`, default 99).
    #[arg(long, value_name = "N", conflicts_with = "file")]
    pub priority: Option<String>,
    /// The histogram's largest latency (`stats.histo_size`, default 100 us).
    #[arg(long = "histo-size", value_name = "DURATION", conflicts_with = "file")]
    pub histo_size: Option<String>,
    /// Lock memory (`memlock`).
    #[arg(long, conflicts_with = "file")]
    pub memlock: bool,
    /// Explain wake-ups at least this late (`trace.threshold`, root).
    #[arg(
        long = "trace-threshold",
        value_name = "DURATION",
        conflicts_with = "file"
    )]
    pub trace_threshold: Option<String>,
    /// What to do at such a wake-up (`on_spike`: `save`, `stop`, `signal
    /// PID SIGNAL`, `run PROGRAM [ARG...]`); may be repeated.
    #[arg(long = "on-spike", value_name = "ACTION", conflicts_with = "file")]
    pub on_spike: Vec<String>,
    /// At most one round of actions this often (`on_spike.every`).
    #[arg(
        long = "on-spike-every",
        value_name = "DURATION",
        conflicts_with = "file"
    )]
    pub on_spike_every: Option<String>,
    /// Each timer thread's interrupt latency too (`irq_latency`, root).
    #[arg(long = "irq-latency", conflicts_with = "file")]
    pub irq_latency: bool,
    /// Kernel stacks in the explanations (`trace.stacks`: off, switch, all).
    #[arg(long = "trace-stacks", value_name = "WHICH", conflicts_with = "file")]
    pub trace_stacks: Option<String>,
    /// Samples of the first DURATION not counted (`warmup`).
    #[arg(long, value_name = "DURATION", conflicts_with = "file")]
    pub warmup: Option<String>,
}

impl OneOff {
    /// Whether any one-off option was given.
    pub fn given(&self) -> bool {
        self.cpus.is_some()
            || self.period.is_some()
            || self.duration.is_some()
            || self.loops.is_some()
            || self.policy.is_some()
            || self.priority.is_some()
            || self.histo_size.is_some()
            || self.memlock
            || self.trace_threshold.is_some()
            || !self.on_spike.is_empty()
            || self.on_spike_every.is_some()
            || self.warmup.is_some()
            || self.irq_latency
            || self.trace_stacks.is_some()
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
    let cpus = match &o.cpus {
        Some(list) => {
            let list = one_line("the CPU list", list)?;
            crate::cpulist::parse(&list).map_err(|e| {
                errln!("rtlab run: --cpus {list}: {}", e.message);
                errln!("  hint: CPU lists look like `3`, `0-2` or `0,2-3`");
                EXIT_REFUSED
            })?
        }
        None => online.to_vec(),
    };
    let mut g = Generated::default();
    g.line("# written by `rtlab run` from its options")
        .line("main")
        .line("{")
        .line("  stats.cpu_load all");
    if o.memlock {
        g.from("  memlock", "--memlock", "");
    }
    let main_keys = [
        (&o.trace_threshold, "--trace-threshold", "trace.threshold"),
        (&o.on_spike_every, "--on-spike-every", "on_spike.every"),
        (&o.warmup, "--warmup", "warmup"),
        (&o.trace_stacks, "--trace-stacks", "trace.stacks"),
    ];
    for (value, option, key) in main_keys {
        if let Some(v) = value {
            let v = one_line(option, v)?;
            g.from(format!("  {key} {v}"), option, &v);
        }
    }
    if o.irq_latency {
        g.from("  irq_latency", "--irq-latency", "");
    }
    for action in &o.on_spike {
        let v = one_line("--on-spike", action)?;
        g.from(format!("  on_spike {v}"), "--on-spike", &v);
    }
    g.line("}");
    let key =
        |g: &mut Generated, value: &Option<String>, option: &str, key: &str, default: &str| {
            match value {
                Some(v) => {
                    let v = one_line(option, v)?;
                    g.from(format!("  {key} {v}"), option, &v);
                }
                None if !default.is_empty() => {
                    g.line(format!("  {key} {default}"));
                }
                None => {}
            }
            Ok::<(), i32>(())
        };
    for (i, cpu) in cpus.iter().enumerate() {
        g.line("").line(format!("timer_thread[{i}]")).line("{");
        g.from(format!("  cpu_affinity {cpu}"), "--cpus", &cpu.to_string());
        if let Some((name, _)) = partitions.iter().find(|(_, cpus)| cpus.contains(cpu)) {
            g.line(format!("  cpuset {name}"));
        }
        key(&mut g, &o.policy, "--policy", "sched.policy", "FIFO")?;
        key(&mut g, &o.priority, "--priority", "sched.priority", "99")?;
        key(&mut g, &o.period, "--period", "timer.period", "1 ms")?;
        match o.duration.as_deref() {
            Some("none") => {}
            _ if o.loops.is_some() && o.duration.is_none() => {}
            _ => key(
                &mut g,
                &o.duration,
                "--duration",
                "lifetime.duration",
                "10 s",
            )?,
        }
        key(&mut g, &o.loops, "--loops", "lifetime.loops", "")?;
        key(
            &mut g,
            &o.histo_size,
            "--histo-size",
            "stats.histo_size",
            "",
        )?;
        g.line("}");
    }
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_off_options_write_the_files_keys() {
        let o = OneOff {
            cpus: Some("1,3".into()),
            period: Some("200us".into()),
            loops: Some("500".into()),
            priority: Some("95".into()),
            histo_size: Some("400 us".into()),
            ..OneOff::default()
        };
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
        assert!(
            experiment(
                &OneOff {
                    cpus: Some("x".into()),
                    ..OneOff::default()
                },
                &[0],
                &[]
            )
            .is_err()
        );
        assert!(
            experiment(
                &OneOff {
                    period: Some("1 ms\n}".into()),
                    ..OneOff::default()
                },
                &[0],
                &[]
            )
            .is_err()
        );
        // A CPU of a partition runs in it, as in the built-in experiment.
        let parts = [("rt".to_string(), vec![1]), ("nrt".to_string(), vec![0])];
        let o = OneOff {
            cpus: Some("1".into()),
            ..OneOff::default()
        };
        let text = experiment(&o, &[0, 1], &parts).unwrap().text();
        assert!(text.contains("  cpu_affinity 1\n  cpuset rt\n"), "{text}");
    }
}

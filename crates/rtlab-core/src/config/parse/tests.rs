use super::*;

fn ok(text: &str) -> Experiment {
    parse(text).unwrap_or_else(|d| panic!("{d:?}"))
}

fn errors(text: &str) -> Vec<Diagnostic> {
    parse(text).expect_err("should be refused")
}

fn one_error(text: &str) -> Diagnostic {
    let d = errors(text);
    assert_eq!(d.len(), 1, "{d:?}");
    d.into_iter().next().unwrap()
}

#[test]
fn every_main_key() {
    let e = ok(
        "main\n{\n dbg_level 3\n cpu_affinity 0-1\n sched.policy fifo\n sched.priority 10\n \
                stats.period 1500 ms\n stats.format csv\n stats.cpu_load global\n memlock\n \
                pm_qos.cpu_dma_latency 10 us\n}\n",
    );
    let m = &e.main;
    assert_eq!(m.dbg_level, 3);
    assert_eq!(m.cpu_affinity.as_ref().unwrap().value, vec![0, 1]);
    assert_eq!(
        m.sched.value,
        Sched {
            policy: Policy::Fifo,
            priority: 10
        }
    );
    assert_eq!(m.stats_period_ns, 1_500_000_000);
    assert_eq!(m.stats_format, StatsFormat::Csv);
    assert_eq!(m.cpu_load, CpuLoadDisplay::Global);
    assert!(m.memlock);
    assert_eq!(m.dma_latency_us, Some(10));
    assert_eq!(
        ok("main {\n pm_qos.cpu_dma_latency off\n}\n")
            .main
            .dma_latency_us,
        None
    );
    assert_eq!(
        ok("main {\n stats.cpu_load all\n}").main.cpu_load,
        CpuLoadDisplay::All
    );
    assert_eq!(
        ok("main {\n stats.cpu_load none\n}").main.cpu_load,
        CpuLoadDisplay::None
    );
    let s = ok("main {\n spikes.worst 5\n spikes.threshold 150 us\n spikes.max 40\n}").main;
    assert_eq!(
        (s.spikes_worst, s.spikes_threshold_ns, s.spikes_max),
        (5, Some(150_000), 40)
    );
    let bad = errors("main {\n spikes.worst 100001\n spikes.threshold 10 ns\n spikes.max 0\n}");
    assert_eq!(bad.len(), 3, "{bad:?}");
}

#[test]
fn main_defaults() {
    let m = ok("").main;
    assert_eq!(m, MainConfig::default());
    assert_eq!(m.stats_period_ns, 1_000_000_000);
    assert_eq!(m.dma_latency_us, Some(0));
    assert!(!m.memlock);
}

#[test]
fn every_timer_key_and_defaults() {
    let e = ok(
        "timer_thread[2]\n{\n cpu_affinity 1\n sched.policy RR\n sched.priority 50\n \
                timer.period 200 us\n lifetime.duration 1 min\n lifetime.loops 5000\n \
                stats.histo_size 1 ms\n stats.filename out/t.txt\n}\ntimer_thread[0]\n{\n}\n",
    );
    let (t0, t2) = (&e.timers[0], &e.timers[1]);
    assert_eq!((t0.index, t2.index), (0, 2));
    assert_eq!(t2.cpu_affinity.as_ref().unwrap().value, vec![1]);
    assert_eq!(
        t2.sched.value,
        Sched {
            policy: Policy::Rr,
            priority: 50
        }
    );
    assert_eq!(t2.period_ns, 200_000);
    assert_eq!(t2.duration_ns, Some(60_000_000_000));
    assert_eq!(t2.loops, Some(5000));
    assert_eq!(t2.histo_size_us, 1000);
    assert_eq!(t2.filename.as_ref().unwrap().value, "out/t.txt");
    assert_eq!(t0.period_ns, 1_000_000);
    assert_eq!(t0.histo_size_us, 100);
    assert_eq!(t0.sched.value, Sched::default());
    assert!(t0.duration_ns.is_none() && t0.loops.is_none() && t0.filename.is_none());
}

#[test]
fn every_program_key_and_defaults() {
    let e = ok(
        "program[1]\n{\n cmdline ping -f localhost\n cpu_affinity 0\n sched.policy BATCH\n \
                sched.priority 5\n output.out /tmp/o\n output.err /tmp/e\n termination.ok RESPAWN\n \
                termination.ko ABORT\n termination.grace 500 ms\n}\nprogram[0] {\n cmdline true\n}\n",
    );
    let (p0, p1) = (&e.programs[0], &e.programs[1]);
    assert_eq!(p1.argv.value, ["ping", "-f", "localhost"]);
    assert_eq!(p1.cpu_affinity.as_ref().unwrap().value, vec![0]);
    assert_eq!(
        p1.sched.value,
        Sched {
            policy: Policy::Batch,
            priority: 5
        }
    );
    assert_eq!(p1.out.as_ref().unwrap().value, "/tmp/o");
    assert_eq!(p1.err.as_ref().unwrap().value, "/tmp/e");
    assert_eq!((p1.on_ok, p1.on_ko), (Action::Respawn, Action::Abort));
    assert_eq!(p1.grace_ns, 500_000_000);
    assert_eq!((p0.on_ok, p0.on_ko), (Action::Ignore, Action::Ignore));
    assert_eq!(p0.grace_ns, 2_000_000_000);
    assert!(p0.out.is_none() && p0.err.is_none());
}

#[test]
fn examples_parse() {
    for text in [
        include_str!("../../../../../examples/host.cfg"),
        include_str!("../../../../../examples/host2.cfg"),
        include_str!("../../../../../examples/two-cpu.cfg"),
    ] {
        let e = ok(text);
        assert_eq!(e.timers.len(), 1);
        assert_eq!(e.timers[0].histo_size_us, 20);
        assert_eq!(e.main.stats_period_ns, 1_500_000_000);
    }
}

#[test]
fn comments_quotes_and_braces() {
    let e = ok(
        "# top\nmain # trailing\n{ # brace comment\n  stats.period 2 s # two\n}\n\
                program[0] {\n cmdline sh -c \"echo #not a comment\" # comment\n}\n\
                program[1]\n{\n cmdline sh -c 'echo #1'\n}\n",
    );
    assert_eq!(e.main.stats_period_ns, 2_000_000_000);
    assert_eq!(
        e.programs[0].argv.value,
        ["sh", "-c", "echo #not a comment"]
    );
    assert_eq!(e.programs[1].argv.value, ["sh", "-c", "echo #1"]);
}

#[test]
fn unknown_key_points_at_it_with_the_closest_key() {
    let d = one_error("timer_thread[0]\n{\n  sched.prority 99\n}\n");
    assert_eq!(d.pos, Pos { line: 3, col: 3 });
    assert_eq!(d.message, "unknown key `sched.prority` in timer_thread[N]");
    assert_eq!(d.hint.as_deref(), Some("did you mean `sched.priority`?"));
}

#[test]
fn bad_values_point_into_the_value() {
    let d = one_error("timer_thread[0]\n{\n  timer.period 1500\n}\n");
    assert_eq!(d.pos, Pos { line: 3, col: 20 });
    assert!(d.message.contains("no unit"));
    assert!(d.hint.unwrap().contains("ns, us, ms, s, min, h"));
    let d = one_error("main\n{\n  cpu_affinity 0,x\n}\n");
    assert_eq!(d.pos, Pos { line: 3, col: 18 });
    let d = one_error("main\n{\n  sched.policy DEADLINE\n}\n");
    assert!(d.hint.unwrap().contains("OTHER, FIFO, RR, BATCH, IDLE"));
    for (text, what) in [
        ("main {\n dbg_level 12\n}", "out of range"),
        ("main {\n stats.period 0 s\n}", "at least 1ms"),
        ("main {\n stats.format xml\n}", "unknown format"),
        ("main {\n stats.cpu_load some\n}", "unknown CPU load"),
        (
            "main {\n pm_qos.cpu_dma_latency 1500 ns\n}",
            "whole number of microseconds",
        ),
        (
            "timer_thread[0] {\n stats.histo_size 1500 ns\n}",
            "whole number of microseconds",
        ),
        ("timer_thread[0] {\n timer.period 2 h\n}", "at most 1 h"),
        ("timer_thread[0] {\n lifetime.loops 0\n}", "out of range"),
        ("timer_thread[0] {\n lifetime.duration 0 s\n}", "at least"),
        ("program[0] {\n cmdline echo \"open\n}", "unbalanced quote"),
        (
            "program[0] {\n cmdline true\n termination.ok RESTART\n}",
            "unknown action",
        ),
        (
            "timer_thread[0] {\n sched.priority high\n}",
            "not a whole number",
        ),
    ] {
        let d = one_error(text);
        assert!(d.message.contains(what), "{text:?}: {}", d.message);
    }
}

#[test]
fn scheduling_is_checked_as_a_whole() {
    let d = one_error("timer_thread[0]\n{\n  sched.policy FIFO\n}\n");
    assert_eq!(d.message, "FIFO needs a priority");
    assert_eq!(d.pos, Pos { line: 3, col: 16 });
    let d = one_error("timer_thread[0]\n{\n  sched.priority 0\n  sched.policy FIFO\n}\n");
    assert!(d.message.contains("priority 0 is out of range"));
    let d = one_error("timer_thread[0]\n{\n  sched.priority 99\n}\n");
    assert!(d.message.contains("nice value 99"));
    assert!(d.hint.unwrap().contains("sched.policy FIFO"));
    let e = ok("program[0] {\n cmdline true\n sched.priority -5\n}");
    assert_eq!(e.programs[0].sched.value.priority, -5);
}

#[test]
fn structure_errors() {
    let cases: &[(&str, &str, Pos)] = &[
        ("main\n{\n", "stanza is not closed", Pos { line: 1, col: 1 }),
        ("}\n", "`}` without an open stanza", Pos { line: 1, col: 1 }),
        (
            "mian\n{\n}\n",
            "unknown stanza `mian`",
            Pos { line: 1, col: 1 },
        ),
        (
            "timer_thread[x]\n{\n}\n",
            "index must be a non-negative integer",
            Pos { line: 1, col: 1 },
        ),
        (
            "timer_thread[-1]\n{\n}\n",
            "index must be a non-negative integer",
            Pos { line: 1, col: 1 },
        ),
        (
            "main\nstats.period 1 s\n",
            "not followed by `{`",
            Pos { line: 1, col: 1 },
        ),
        (
            "main\n{\n  cpu_affinity 0\n  main {\n}\n",
            "cannot be opened or closed here",
            Pos { line: 4, col: 3 },
        ),
        (
            "main\n{\n  memlock yes\n}\n",
            "takes no value",
            Pos { line: 3, col: 11 },
        ),
        (
            "main\n{\n  stats.period\n}\n",
            "needs a value",
            Pos { line: 3, col: 3 },
        ),
        (
            "program[0]\n{\n  output.out x\n}\n",
            "has no `cmdline`",
            Pos { line: 1, col: 1 },
        ),
    ];
    for (text, what, pos) in cases {
        let d = errors(text);
        assert!(
            d.iter().any(|d| d.message.contains(what) && d.pos == *pos),
            "{text:?}: {d:?}"
        );
    }
}

#[test]
fn duplicates_are_refused() {
    let d = one_error("main\n{\n stats.period 1 s\n stats.period 2 s\n}\n");
    assert!(d.message.contains("set twice") && d.hint.unwrap().contains("line 3"));
    let d = one_error("main\n{\n}\nmain\n{\n}\n");
    assert!(d.message.contains("second `main`"));
    let d = one_error("timer_thread[1]\n{\n}\ntimer_thread[1]\n{\n}\n");
    assert!(d.message.contains("index 1 is used twice"));
    // Same index in different kinds is fine.
    ok("timer_thread[0]\n{\n}\nprogram[0]\n{\n cmdline true\n}\n");
}

#[test]
fn every_problem_is_reported_at_once_in_file_order() {
    let d = errors(
        "main\n{\n  stats.period 5\n  bogus 1\n}\ntimer_thread[0]\n{\n  timer.period x\n}\nprogram[0]\n{\n}\n",
    );
    let lines: Vec<usize> = d.iter().map(|d| d.pos.line).collect();
    assert_eq!(lines, vec![3, 4, 8, 10]);
}

#[test]
fn a_key_of_another_stanza_says_so() {
    let d = one_error("timer_thread[0]\n{\n  cmdline ls\n}\n");
    assert_eq!(
        d.hint.as_deref(),
        Some("`cmdline` is a key of program[N], not of timer_thread[N]")
    );
}

#[test]
fn rendering_is_file_line_col() {
    let d = one_error("main\n{\n  bogus 1\n}\n");
    let text = d.render("x.cfg");
    // The hint lists the keys, cut (with the count left out) when long.
    assert!(
        text.starts_with("x.cfg:3:3: error: unknown key `bogus` in main\n  hint: keys of main are: dbg_level, cpu_affinity, sched.policy, sched.priority, stats.period,"),
        "{text}"
    );
    assert!(text.ends_with(" more characters)"), "{text}");
}

#[test]
fn columns_count_characters_not_bytes() {
    let d = one_error("main # é\n{\n  # é\n  stats.period 1 é\n}\n");
    assert_eq!(d.pos, Pos { line: 4, col: 18 });
}

#[test]
fn invalid_utf8_is_refused_at_its_line_and_column() {
    let bytes = b"main\n{\n  dbg_level 1 \xc3\xa9 \xff x\n}\n";
    let d = crate::config::decode(bytes).unwrap_err();
    assert_eq!((d.pos.line, d.pos.col), (3, 17), "{d:?}");
    assert!(d.message.contains("0xff"));
    let d = crate::config::decode(&vec![b'#'; MAX_FILE_BYTES + 1]).unwrap_err();
    assert!(d.message.contains("bytes"), "{d:?}");
}

#[test]
fn counts_are_bounded_and_refused_where_they_are_exceeded() {
    let mut text = String::new();
    for i in 0..=MAX_TIMERS {
        text.push_str(&format!("timer_thread[{i}]\n{{\n}}\n"));
    }
    let d = errors(&text);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].pos.line, 3 * MAX_TIMERS + 1);
    assert!(d[0].message.contains("more than 1024"), "{d:?}");
    // Properties of one stanza.
    let mut text = String::from("main\n{\n");
    for _ in 0..MAX_PROPERTIES + 10 {
        text.push_str("  irq.affinity 0\n");
    }
    text.push_str("}\n");
    let d = errors(&text);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].pos.line, MAX_PROPERTIES + 3);
    // A flood of problems is reported in part, and counted.
    let d = errors(&"nonsense\n".repeat(10_000));
    assert_eq!(d.len(), 101);
    assert!(d[100].message.contains("more problems"), "{:?}", d[100]);
    // Stanzas past the limit are not read at all.
    let d = errors(&"main\n{\n}\n".repeat(5000));
    let most = format!("more than {} stanzas", super::MAX_STANZAS);
    assert!(d.iter().any(|d| d.message.contains(&most)), "{d:?}");
    // Patterns are bounded.
    let long = "*a".repeat(200);
    let d = errors(&format!("main\n{{\n threads.sched {long} FIFO 2\n}}\n"));
    assert!(d[0].message.contains("longer than 256"), "{d:?}");
}

#[test]
fn every_refusal_carries_a_hint_saying_what_is_accepted() {
    let cases: &[(&str, &str, Pos)] = &[
        (
            "main {\n lifetime.duration 99999999999999 s\n}\n",
            "584 years",
            Pos { line: 2, col: 20 },
        ),
        (
            "main {\n on_spike.every 0 ms\n}\n",
            "`on_spike.every 1ms` or longer",
            Pos { line: 2, col: 17 },
        ),
        (
            "task_latency[0] {\n task.pid 0\n}\n",
            "from 1",
            Pos { line: 2, col: 11 },
        ),
        (
            "timer_thread[99999999999999999999] {\n}\n",
            // The largest index is the target's (32-bit boards: 2^32-1).
            &format!("from 0 to {}", usize::MAX),
            Pos { line: 1, col: 1 },
        ),
        (
            "timer_thread[0] {\n stats.filename a\0b\n}\n",
            "remove the NUL",
            Pos { line: 2, col: 18 },
        ),
        (
            "timer_thread[0] {\n lifetime.loops 0\n}\n",
            "from 1 to",
            Pos { line: 2, col: 17 },
        ),
        (
            "main {\n dbg_level x\n}\n",
            "from 0 to 9",
            Pos { line: 2, col: 12 },
        ),
        (
            "timer_thread[0] {\n timer.period 2 h\n}\n",
            "1 us to 1 h",
            Pos { line: 2, col: 15 },
        ),
        (
            "timer_thread[0] {\n timer.period 1.0000000000000000001 s\n}\n",
            "18 decimals",
            Pos { line: 2, col: 15 },
        ),
        ("}\n", "remove this `}`", Pos { line: 1, col: 1 }),
    ];
    for (text, hint, pos) in cases {
        let d = one_error(text);
        assert_eq!(d.pos, *pos, "{text:?}: {d:?}");
        let h = d.hint.as_deref().unwrap_or_default();
        assert!(h.contains(hint), "{text:?}: {d:?}");
    }
}

#[test]
fn a_refused_policy_leaves_the_priority_unjudged() {
    let d = errors("timer_thread[0] {\n sched.policy bogus\n sched.priority 99\n}\n");
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(d[0].message.contains("unknown scheduling policy"), "{d:?}");
}

#[test]
fn never_panics_on_arbitrary_input() {
    // Deterministic pseudo-random byte soup built from format fragments.
    let pieces = [
        "main",
        "{",
        "}",
        "timer_thread[",
        "]",
        "program[0]",
        " ",
        "\n",
        "#",
        "\"",
        "'",
        "\\",
        "cmdline",
        "sched.policy",
        "FIFO",
        "99",
        "1.5",
        "ms",
        "é",
        "-",
        ",",
        "[",
        "\t",
        "memlock",
        "\0",
        "99999999999999999999",
        " 0 ",
        "lifetime.duration",
        "task_latency[0]",
        "task.pid",
        "on_spike.every",
    ];
    let mut x: u64 = 0x9e3779b97f4a7c15;
    for _ in 0..3000 {
        let mut text = String::new();
        for _ in 0..(x % 40) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            text.push_str(pieces[(x % pieces.len() as u64) as usize]);
        }
        if let Err(diags) = parse(&text) {
            let lines = text.lines().count().max(1);
            for d in diags {
                assert!(d.pos.line >= 1 && d.pos.line <= lines, "{text:?} {d:?}");
                assert!(d.pos.col >= 1);
                // Every refusal says what would be accepted.
                assert!(d.hint.is_some(), "no hint: {text:?} {d:?}");
            }
        }
        x = x.wrapping_add(1);
    }
}

#[test]
fn irq_task_stanzas_name_an_irq_and_one_task() {
    let e = ok("main {\n lifetime.duration 5 s\n audit.cpus 1\n}\n\
                irq_task[1] {\n irq virtio1-req.0\n task.program 0\n}\n\
                irq_task[0] {\n irq 36\n task.name dd\n}\n");
    assert_eq!(e.main.lifetime_ns, Some(5_000_000_000));
    assert_eq!(e.main.audit_cpus.as_ref().unwrap().value, vec![1]);
    assert_eq!(e.irq_tasks.len(), 2);
    assert_eq!(e.irq_tasks[0].irq.value, IrqSelector::Number(36));
    assert_eq!(e.irq_tasks[0].task.value, TaskSelector::Name("dd".into()));
    assert_eq!(
        e.irq_tasks[1].irq.value,
        IrqSelector::Name("virtio1-req.0".into())
    );
    assert_eq!(e.irq_tasks[1].task.value, TaskSelector::Program(0));
    let d = one_error("irq_task[0] {\n irq 36\n}\n");
    assert!(d.message.contains("has no task"), "{d:?}");
    let d = one_error("irq_task[0] {\n task.pid 5\n}\n");
    assert!(d.message.contains("has no `irq`"), "{d:?}");
    let d = one_error("irq_task[0] {\n irq 3\n task.pid 5\n task.name x\n}\n");
    assert_eq!((d.pos.line, d.pos.col), (4, 12), "{d:?}");
    let d = one_error("irq_task[0] {\n irq 3\n task.name a-name-far-too-long\n}\n");
    assert!(d.message.contains("15 characters"), "{d:?}");
    let d = one_error("irq_task[0] {\n irq 3\n task.pid 0\n}\n");
    assert_eq!(d.pos.line, 3, "{d:?}");
    let d = one_error("irq_task[0] {\n irq 3\n task.pid 1\n cmdline x\n}\n");
    assert!(d.message.contains("unknown key `cmdline`"), "{d:?}");
}

#[test]
fn the_second_pass_keys_are_read_and_checked() {
    let e = ok(
        "main {\n trace.threshold 50 us\n trace.stacks all\n trace.buffer_kb 2048\n \
                trace.event sched:sched_migrate_task\n warmup 2 s\n irq_latency\n \
                on_spike stop\n on_spike signal 1234 usr1\n on_spike run /bin/sh -c \"logger -t rtlab $RTLAB_SPIKE_LATENCY_NS\"\n \
                on_spike.every 10 s\n}\n\
                timer_thread[0] {\n sched.deadline 200us:900us:1ms\n}\n",
    );
    let m = &e.main;
    assert_eq!(m.trace_stacks, crate::config::TraceStacks::All);
    assert_eq!(
        (m.trace_buffer_kb.value, m.warmup_ns),
        (2048, 2_000_000_000)
    );
    assert_eq!(m.trace_events[0].value, "sched/sched_migrate_task");
    assert!(m.irq_latency);
    use crate::config::SpikeAction;
    let actions: Vec<&SpikeAction> = m.on_spike.iter().map(|a| &a.value).collect();
    assert_eq!(
        actions,
        [
            &SpikeAction::Stop,
            &SpikeAction::Signal {
                pid: 1234,
                signal: 10
            },
            &SpikeAction::Run {
                argv: vec![
                    "/bin/sh".into(),
                    "-c".into(),
                    "logger -t rtlab $RTLAB_SPIKE_LATENCY_NS".into()
                ]
            },
        ]
    );
    assert_eq!(m.on_spike_every_ns, 10_000_000_000);
    let dl = e.timers[0].deadline.as_ref().unwrap().value;
    assert_eq!(
        (dl.runtime_ns, dl.deadline_ns, dl.period_ns),
        (200_000, 900_000, 1_000_000)
    );
    for (bad, says) in [
        ("main {\n trace.stacks some\n}\n", "unknown stack choice"),
        (
            "main {\n trace.event ../../x/enable\n}\n",
            "not a tracepoint name",
        ),
        ("main {\n trace.buffer_kb 1\n}\n", "trace.buffer_kb"),
        ("main {\n on_spike signal 1 TERM\n}\n", "above 1"),
        ("main {\n on_spike signal 99 NOPE\n}\n", "needs a signal"),
        ("main {\n on_spike run\n}\n", "needs a program"),
        ("main {\n on_spike run sh -c \"x\n}\n", "unbalanced quote"),
        ("main {\n on_spike stop now\n}\n", "unexpected `now`"),
        (
            "timer_thread[0] {\n sched.deadline 2ms:1ms\n}\n",
            "runtime <= deadline",
        ),
        (
            "timer_thread[0] {\n sched.deadline 1ms\n}\n",
            "not a reservation",
        ),
        (
            "timer_thread[0] {\n sched.priority 3\n sched.deadline 1ms:2ms\n}\n",
            "both set",
        ),
    ] {
        let d = one_error(bad);
        assert!(d.message.contains(says), "{bad:?}: {d:?}");
        assert_eq!(d.pos.line, 2, "{bad:?}: {d:?}");
    }
}

#[test]
fn thread_affinity_and_net_steering_are_read_with_their_positions() {
    let e = ok(
        "main {\n threads.affinity irq/*-eth0* 0-1\n threads.affinity 1234   3\n \
                net.steering eth0 1\n net.steering lo 0,2\n}\n",
    );
    let t = &e.main.tuning;
    let at = |line, col| Pos { line, col };
    let [a, b] = &t.thread_affinity[..] else {
        panic!("{:?}", t.thread_affinity)
    };
    assert_eq!((a.value.0.as_str(), a.pos), ("irq/*-eth0*", at(2, 19)));
    assert_eq!((&a.value.1.value, a.value.1.pos), (&vec![0, 1], at(2, 31)));
    assert_eq!((b.value.0.as_str(), b.value.1.pos), ("1234", at(3, 26)));
    assert_eq!(b.value.1.value, vec![3]);
    let [eth0, lo] = &t.net_steering[..] else {
        panic!("{:?}", t.net_steering)
    };
    assert_eq!((eth0.value.0.as_str(), eth0.pos), ("eth0", at(4, 15)));
    assert_eq!(
        (&eth0.value.1.value, eth0.value.1.pos),
        (&vec![1], at(4, 20))
    );
    assert_eq!(lo.value.1.value, vec![0, 2]);
}

#[test]
fn thread_affinity_and_net_steering_mistakes_are_refused_at_their_place() {
    let at = |line, col| Pos { line, col };
    let cases: &[(&str, &str, Pos, &str)] = &[
        (
            "threads.affinity x",
            "needs a thread name pattern or TID and a CPU list",
            at(2, 19),
            "`threads.affinity PATTERN|TID CPULIST`",
        ),
        (
            "threads.affinity x 0-1 2",
            "needs a thread name pattern or TID and a CPU list",
            at(2, 19),
            "`threads.affinity PATTERN|TID CPULIST`",
        ),
        (
            "threads.affinity 0 1",
            "`0` is not a TID",
            at(2, 19),
            "from 1",
        ),
        (
            "threads.affinity -5 1",
            "`-5` is not a TID",
            at(2, 19),
            "from 1",
        ),
        (
            "threads.affinity 99999999999 1",
            "is not a TID",
            at(2, 19),
            "2147483647",
        ),
        (
            "threads.affinity ksoftirqd/* 1-x",
            "",
            at(2, 33),
            "`threads.affinity PATTERN|TID CPULIST`",
        ),
        (
            "net.steering eth0",
            "needs a network interface and a CPU list",
            at(2, 15),
            "`net.steering DEV CPULIST`",
        ),
        (
            "net.steering ../x 0",
            "`../x` is not a network interface name",
            at(2, 15),
            "1 to 15 characters",
        ),
        (
            "net.steering a-name-too-long-x 0",
            "is not a network interface name",
            at(2, 15),
            "1 to 15 characters",
        ),
        (
            "net.steering eth0 z",
            "",
            at(2, 20),
            "`net.steering DEV CPULIST`",
        ),
    ];
    for (line, message, pos, hint) in cases {
        let d = one_error(&format!("main {{\n {line}\n}}\n"));
        assert_eq!(d.pos, *pos, "{line}: {d:?}");
        assert!(d.message.contains(message), "{line}: {d:?}");
        assert!(
            d.hint.as_deref().unwrap_or_default().contains(hint),
            "{line}: {d:?}"
        );
    }
    let long = "*a".repeat(200);
    let d = one_error(&format!("main {{\n threads.affinity {long} 0\n}}\n"));
    assert!(d.message.contains("longer than 256"), "{d:?}");
}

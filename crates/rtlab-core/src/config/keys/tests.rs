use super::*;

#[test]
fn hints_name_the_closest_key() {
    assert_eq!(
        unknown_key_hint(Timer, "sched.prority"),
        "did you mean `sched.priority`?"
    );
    assert_eq!(
        unknown_key_hint(Timer, "cmdline"),
        "`cmdline` is a key of program[N], not of timer_thread[N]"
    );
    assert!(unknown_key_hint(Main, "zzzzzzzzzzzzzzzzzzzzzz").starts_with("keys of main are"));
}

/// The manual's table of `kind`: from its heading to the first line
/// that is not a table row.
fn table_in(manual: &str, kind: StanzaKind) -> Option<std::ops::Range<usize>> {
    let heading = format!("### {}", kind.display());
    let at = manual.find(&heading)?;
    let start = at + manual[at..].find("\n| key |")? + 1;
    let mut end = start;
    for line in manual[start..].split_inclusive('\n') {
        if !line.starts_with('|') {
            break;
        }
        end += line.len();
    }
    Some(start..end)
}

#[test]
fn the_manuals_key_tables_are_the_rows() {
    // `RTLAB_BLESS=1 cargo test -p rtlab-core keys` rewrites the tables
    // of docs/config-format.md from KEYS after a key changes.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/config-format.md");
    let mut manual = std::fs::read_to_string(&path).expect("docs/config-format.md exists");
    let bless = std::env::var_os("RTLAB_BLESS").is_some();
    for kind in [Main, Timer, Program, IrqTask, TaskLatency, Noise] {
        let range = table_in(&manual, kind).expect("the manual has a key table per stanza");
        let want = markdown_table(kind);
        if bless {
            manual.replace_range(range, &want);
        } else {
            assert_eq!(
                manual[range].to_string(),
                want,
                "the {} table of docs/config-format.md differs from KEYS \
                 (RTLAB_BLESS=1 cargo test -p rtlab-core keys rewrites it)",
                kind.display()
            );
        }
    }
    if bless {
        std::fs::write(&path, manual).unwrap();
    }
}

#[test]
fn every_key_is_applied_and_documented_once() {
    let mut seen = std::collections::HashSet::new();
    for k in KEYS {
        assert!(seen.insert((k.stanza, k.name)), "{} twice", k.name);
        assert!(!k.meaning.is_empty() && !k.default.is_empty(), "{}", k.name);
    }
}

/// `text` with every `pos: Pos { .. }` left out.
fn without_positions(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("pos: Pos {") {
        out.push_str(&rest[..at]);
        let end = rest[at..].find('}').map_or(rest.len(), |e| at + e + 1);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[test]
fn a_key_given_its_documented_default_changes_nothing() {
    // Defaults the manual writes in words (no value reads as them), and
    // defaults the plan gives a key left out (`None` until then).
    const IN_WORDS: &[&str] = &[
        "cpu_affinity",
        "cpuset",
        "cpufreq.governor",
        "cpufreq.cpus",
        "cstates.max_latency",
        "cstates.cpus",
        "irq.affinity",
        "threads.sched",
        "threads.affinity",
        "net.steering",
        "lifetime.duration",
        "lifetime.loops",
        "audit.cpus",
        "trace.event",
        "on_spike",
        "sched.deadline",
        "irq",
        "task.name",
        "task.pid",
        "task.program",
        "stats.filename",
        "stats.samples",
        "cmdline",
        "cpu.quota",
        "cpu.group",
        "noise.runtime",
        "noise.stop_above",
    ];
    const FILLED_BY_THE_PLAN: &[&str] = &["output.out", "output.err", "cpu.period"];
    let mut checked = 0;
    for k in KEYS.iter().filter(|k| !k.is_flag()) {
        let (open, tail) = match k.stanza {
            Main => ("main {\n", ""),
            Timer => ("timer_thread[0] {\n", ""),
            Program => ("program[0] {\n", "cmdline true\n"),
            Noise => ("noise_thread[0] {\n", "cpu_affinity 0\n"),
            IrqTask | TaskLatency => continue,
        };
        let value = k.default.trim_matches('`');
        let without = format!("{open}{tail}}}\n");
        let with = format!("{open}{tail}{} {value}\n}}\n", k.name);
        if IN_WORDS.contains(&k.name) {
            continue;
        }
        let base = format!("{:?}", crate::config::parse(&without).unwrap());
        let exp = crate::config::parse(&with).unwrap_or_else(|d| {
            panic!(
                "{}: the default `{value}` is not a value ({d:?}); list it as in words",
                k.name
            )
        });
        if FILLED_BY_THE_PLAN.contains(&k.name) {
            continue;
        }
        assert_eq!(
            without_positions(&format!("{exp:?}")),
            without_positions(&base),
            "`{} {value}` in {} changes the experiment: the default of the manual \
             and of the parser differ",
            k.name,
            k.stanza.display()
        );
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} defaults were checked");
}

#[test]
fn the_one_off_options_are_rows_of_main_and_timer_thread() {
    let rows: Vec<(&KeySpec, CliOption)> = KEYS
        .iter()
        .filter_map(|k| k.option.map(|o| (k, o)))
        .collect();
    assert!(rows.len() >= 14, "{} one-off options", rows.len());
    for (i, (k, o)) in rows.iter().enumerate() {
        // `rtlab run` writes a main stanza and timer threads only.
        assert!(matches!(k.stanza, Main | Timer), "{}", k.name);
        assert!(
            rows[i + 1..].iter().all(|(_, other)| other.long != o.long),
            "--{} twice",
            o.long
        );
        assert!(
            rows[i + 1..]
                .iter()
                .all(|(other, oo)| other.stanza != k.stanza || oo.rank != o.rank),
            "two lines ranked {} in {}",
            o.rank,
            k.stanza.display()
        );
        // A flag key makes a flag; any other takes a value.
        assert_eq!(k.is_flag(), o.value_name.is_empty(), "--{}", o.long);
        assert!(!(k.is_flag() && o.preset.is_some()), "--{}", o.long);
        // The help names the key it writes.
        assert!(o.help.contains(&format!("`{}`", k.name)), "--{}", o.long);
        assert!(
            !o.help.ends_with('.') && !o.help.contains('\n'),
            "--{}",
            o.long
        );
    }
}

use super::*;
use crate::sys::os::counter::CounterKind;
use proptest::prelude::*;

fn argv(words: &[&str]) -> Vec<OsString> {
    words.iter().map(OsString::from).collect()
}

fn run(words: &[&str]) -> HwlatArgs {
    match parse(&argv(words)) {
        Ok(Parsed::Run(a)) => a,
        other => panic!("{words:?}: {other:?}"),
    }
}

fn refused(words: &[&str]) -> String {
    match parse(&argv(words)) {
        Err(r) => {
            assert_eq!(r.status, crate::exit::REFUSED, "{words:?}");
            r.message
        }
        other => panic!("{words:?} was not refused: {other:?}"),
    }
}

#[test]
fn the_defaults_are_the_tracers_and_hwlatdetects() {
    let a = run(&[]);
    assert_eq!(
        (a.duration_s, a.threshold_us, a.hardlimit_us),
        (120, 10, 10)
    );
    assert_eq!((a.window_us, a.width_us), (1_000_000, 500_000));
    assert_eq!((a.cpu_list, a.cpus, a.report), (None, None, None));
    assert!(!a.debug && !a.quiet);
}

#[test]
fn durations_take_hwlatdetects_suffixes() {
    for (text, s) in [
        ("45", 45),
        ("30s", 30),
        ("10m", 600),
        ("2h", 7200),
        ("1d", 86_400),
        ("1w", 604_800),
    ] {
        assert_eq!(run(&["--duration", text]).duration_s, s, "{text}");
        assert_eq!(run(&[&format!("--duration={text}")]).duration_s, s);
    }
    assert!(refused(&["--duration", "10ms"]).contains("illegal suffix for seconds: 'm'"));
    for bad in ["s", "x", "5x", "1.5m", "-5s", "0"] {
        let msg = refused(&["--duration", bad]);
        assert!(
            msg.contains("--duration") || msg.contains("duration of 0"),
            "{bad}: {msg}"
        );
    }
}

#[test]
fn times_in_microseconds_take_us_ms_and_s() {
    for (text, us) in [
        ("15", 15),
        ("20us", 20),
        ("2ms", 2000),
        ("1s", 1_000_000),
        (" 7 us", 7),
        ("1_000us", 1000),
    ] {
        assert_eq!(microseconds(text), Ok(us), "{text}");
    }
    for bad in [
        "",
        "1.5ms",
        "10m",
        "10x",
        "us",
        "-5",
        "-5ms",
        "99999999999999999999s",
    ] {
        assert!(microseconds(bad).is_err(), "{bad}");
    }
    let a = run(&["--threshold", "20us", "--hardlimit", "1ms"]);
    assert_eq!((a.threshold_us, a.hardlimit_us), (20, 1000));
    assert!(refused(&["--threshold", "10x"]).contains("invalid input for microseconds: '10x'"));
}

#[test]
fn the_hard_limit_is_the_threshold_unless_given() {
    assert_eq!(run(&["--threshold", "25"]).hardlimit_us, 25);
    assert_eq!(
        run(&["--threshold", "25", "--hardlimit", "40"]).hardlimit_us,
        40
    );
}

#[test]
fn window_and_width_are_fitted_to_each_other_as_hwlatdetect_does() {
    let a = run(&["--window", "2s"]);
    assert_eq!((a.window_us, a.width_us), (2_000_000, 500_000));
    // A window under the width halves it.
    let a = run(&["--window", "400000", "--debug"]);
    assert_eq!((a.window_us, a.width_us), (400_000, 200_000));
    assert!(
        a.debug_lines
            .contains(&"shrinking width to 200000 for new window of 400000".to_string())
    );
    // A width over the window doubles it.
    let a = run(&["--width", "1500000"]);
    assert_eq!((a.window_us, a.width_us), (3_000_000, 1_500_000));
    // The window first, then the width.
    let a = run(&["--width", "100ms", "--window", "300ms"]);
    assert_eq!((a.window_us, a.width_us), (300_000, 100_000));
    assert!(refused(&["--width", "0"]).contains("width of 0"));
    assert!(refused(&["--window", "0"]).contains("width of 0"));
}

#[test]
fn the_cpu_list_report_debug_and_quiet() {
    let a = run(&[
        "--cpu-list",
        "0-1,3",
        "--report",
        "out.txt",
        "--debug",
        "--quiet",
    ]);
    assert_eq!(a.cpu_list.as_deref(), Some("0-1,3"));
    assert_eq!(a.cpus, Some(vec![0, 1, 3]));
    assert_eq!(a.report, Some(PathBuf::from("out.txt")));
    assert!(a.debug && a.quiet);
    assert!(
        a.debug_lines
            .contains(&"set tracing_cpumask to b".to_string())
    );
    assert_eq!(a.debug_lines[0], "hardlimit set to 10us");
    assert!(refused(&["--cpu-list", "3-1"]).contains("--cpu-list"));
    assert!(refused(&["--cpu-list", "a"]).contains("--cpu-list"));
}

#[test]
fn hwlatdetects_debug_prints_come_in_its_order() {
    let a = run(&[
        "--debug",
        "--threshold",
        "20",
        "--window",
        "2s",
        "--duration",
        "5",
    ]);
    assert_eq!(
        a.debug_lines,
        [
            "threshold set to 20us",
            "hardlimit set to 20us",
            "window parameter = 2000000",
            "window for sampling set to 2000000us",
            "test duration is 5s",
        ]
    );
}

#[test]
fn argparse_forms_abbreviations_repeats_and_empty_values() {
    assert_eq!(run(&["--thr", "20"]).threshold_us, 20);
    assert_eq!(run(&["--dur=5"]).duration_s, 5);
    assert_eq!(run(&["--cpu", "1"]).cpus, Some(vec![1]));
    // The last one wins; an empty value is as if not given.
    assert_eq!(
        run(&["--threshold", "20", "--threshold", "30"]).threshold_us,
        30
    );
    assert_eq!(run(&["--threshold="]).threshold_us, 10);
    assert_eq!(run(&["--cpu-list", ""]).cpus, None);
    assert_eq!(run(&["--cpu-list", ""]).cpu_list.as_deref(), Some(""));
    for help in [
        &["-h"][..],
        &["--help"],
        &["--he"],
        &["--duration", "5", "--help", "--bogus"],
    ] {
        assert_eq!(parse(&argv(help)), Ok(Parsed::Help), "{help:?}");
    }
}

#[test]
fn bad_command_lines_are_refused_as_argparse_refuses_them() {
    assert!(
        refused(&["--w", "5"])
            .contains("ambiguous option: --w could match --window, --width, --watch")
    );
    assert!(refused(&["--d"]).contains("could match --duration, --debug"));
    assert!(refused(&["--bogus"]).contains("unrecognized arguments: --bogus"));
    assert!(refused(&["extra", "-x"]).contains("unrecognized arguments: extra -x"));
    assert!(refused(&["--", "--quiet"]).contains("unrecognized arguments: --quiet"));
    assert!(refused(&["--threshold"]).contains("argument --threshold: expected one argument"));
    assert!(refused(&["--threshold", "--quiet"]).contains("expected one argument"));
    assert!(
        refused(&["--quiet=yes"]).contains("argument --quiet: ignored explicit argument 'yes'")
    );
    // A negative number is a value, then refused as one.
    assert!(refused(&["--threshold", "-5"]).contains("invalid input for microseconds: '-5'"));
}

#[test]
fn watch_is_refused_by_name() {
    let msg = refused(&["--watch"]);
    assert!(msg.contains("--watch is not supported"), "{msg}");
    assert!(refused(&["--wat"]).contains("--watch is not supported"));
}

fn counter() -> CounterFacts {
    CounterFacts {
        kind: CounterKind::Tsc,
        hz: 2_000_000_000,
        why: "the TSC".into(),
    }
}

#[test]
fn one_fifo_99_thread_per_cpu_taking_turns_of_one_window() {
    let a = run(&["--threshold", "20"]);
    let plans = hwlat_plan(&a, &[0, 1, 2], &counter(), true).unwrap();
    assert_eq!(plans.len(), 3);
    for (i, p) in plans.iter().enumerate() {
        let s = &p.spec;
        assert_eq!((s.index, s.cpu), (i, i));
        assert_eq!((s.sched.policy, s.sched.priority), (Policy::Fifo, 99));
        assert_eq!(s.period_ns, 3_000_000_000);
        assert_eq!(s.runtime_ns, 500_000_000);
        assert_eq!(s.offset_ns, i as u64 * 1_000_000_000);
        // Every thread ends with the test.
        assert_eq!(s.offset_ns + s.duration_ns.unwrap(), 120_000_000_000);
        assert_eq!(s.threshold_ns, 21_000);
        assert_eq!(
            (s.counter.kind, s.counter.hz),
            (CounterKind::Tsc, 2_000_000_000)
        );
        assert!(p.attribute);
        assert_eq!(p.counter_why, "the TSC");
        assert!(s.cpuset.is_none());
    }
    let untraced = hwlat_plan(&a, &[0, 1], &counter(), false).unwrap();
    assert!(untraced.iter().all(|p| !p.attribute));
}

#[test]
fn the_cpu_list_chooses_the_cpus_and_their_order_of_turns() {
    let a = run(&["--cpu-list", "1,3", "--window", "100ms", "--width", "20ms"]);
    let plans = hwlat_plan(&a, &[0, 1, 2, 3], &counter(), false).unwrap();
    let got: Vec<_> = plans
        .iter()
        .map(|p| {
            (
                p.spec.index,
                p.spec.cpu,
                p.spec.offset_ns,
                p.spec.period_ns,
                p.spec.runtime_ns,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (0, 1, 0, 200_000_000, 20_000_000),
            (1, 3, 100_000_000, 200_000_000, 20_000_000)
        ]
    );
    let msg = hwlat_plan(&a, &[0, 1], &counter(), false)
        .unwrap_err()
        .message;
    assert!(msg.contains("CPU 3 not online"), "{msg}");
    assert!(hwlat_plan(&run(&[]), &[], &counter(), false).is_err());
}

#[test]
fn a_cpu_whose_first_turn_is_past_the_end_has_no_thread() {
    let a = run(&["--duration", "2", "--window", "1s"]);
    let plans = hwlat_plan(&a, &[0, 1, 2, 3], &counter(), false).unwrap();
    assert_eq!(plans.iter().map(|p| p.spec.cpu).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(plans[1].spec.duration_ns, Some(1_000_000_000));
}

#[test]
fn the_header_is_filled_from_the_options() {
    let h = run(&["--cpu-list", "0", "--report", "r.txt", "--width", "100000"]).header();
    assert_eq!(h.cpu_list.as_deref(), Some("0"));
    assert_eq!(h.report.as_deref(), Some("r.txt"));
    assert_eq!(
        (h.window_us, h.width_us, h.threshold_us),
        (1_000_000, 100_000, 10)
    );
}

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "--duration",
            "--threshold",
            "--hardlimit",
            "--window",
            "--width",
            "--report",
            "--cpu-list",
            "--debug",
            "--quiet",
            "--watch",
            "--help",
            "-h",
            "--",
            "-",
            "--w",
            "--thr=",
            "--duration=",
            "--cpu-list=",
            "-5",
            "5s",
            "10ms",
            "1w",
            "0-3",
            "",
        ])
        .prop_map(String::from),
        "\\PC{0,12}",
        "[0-9a-z_.+ -]{0,24}",
    ]
}

proptest! {
    #[test]
    fn no_command_line_panics(words in prop::collection::vec(word(), 0..8)) {
        let words: Vec<OsString> = words.iter().map(OsString::from).collect();
        if let Ok(Parsed::Run(a)) = parse(&words) {
            let plans = hwlat_plan(&a, &[0, 1, 2, 3], &counter(), true);
            if let Ok(plans) = plans {
                prop_assert!(!plans.is_empty());
                for p in &plans {
                    prop_assert!(p.spec.runtime_ns <= p.spec.period_ns);
                    prop_assert!(p.spec.runtime_ns > 0);
                }
            }
        }
    }

    #[test]
    fn no_value_panics_the_converters(text in "\\PC{0,30}") {
        let _ = microseconds(&text);
        let _ = seconds(&text);
    }
}

#[test]
fn smis_are_counted_only_when_both_readings_were_made() {
    let read = |v: &[(usize, u64)]| SmiCounts::Read(v.to_vec());
    let none = SmiCounts::Unavailable("no msr driver".into());
    assert_eq!(
        smis_during(&read(&[(0, 5), (1, 9)]), &read(&[(0, 7), (1, 9)])),
        Smis::Counted(vec![(0, 2), (1, 0)])
    );
    for (b, a) in [(&none, &read(&[(0, 1)])), (&read(&[(0, 1)]), &none)] {
        assert_eq!(smis_during(b, a), Smis::Unavailable("no msr driver".into()));
    }
}

#[test]
fn steal_is_shown_under_a_hypervisor_only() {
    let dir = tempfile::tempdir().unwrap();
    let root = SysRoot::at(dir.path());
    std::fs::create_dir_all(root.path("proc")).unwrap();
    let steal = [(0, 1.5), (1, 0.0)];
    std::fs::write(root.path("proc/cpuinfo"), "flags\t\t: fpu tsc\n").unwrap();
    assert_eq!(steal_if_guest(&root, &steal), None);
    std::fs::write(root.path("proc/cpuinfo"), "flags\t\t: fpu tsc hypervisor\n").unwrap();
    assert_eq!(steal_if_guest(&root, &steal), Some(steal.to_vec()));
}

#[test]
fn the_realtime_offset_puts_stamps_after_2020() {
    let at = realtime_offset_ns() + i128::from(crate::sys::os::monotonic_ns());
    assert!(at > 1_577_836_800 * 1_000_000_000);
}

#[test]
fn the_debug_prints_and_header_are_the_real_hwlatdetects() {
    // tests/golden/hwlatdetect-debug-smi.txt: the real hwlatdetect 2.4 run
    // with these options on a fake debugfs (see report::hwlat's tests).
    let a = run(&[
        "--duration",
        "1",
        "--debug",
        "--threshold",
        "11",
        "--hardlimit",
        "15",
        "--cpu-list",
        "0-1",
        "--window",
        "2s",
    ]);
    let ours: String = crate::report::hwlat::header(&a.header(), &Detection::Traced)
        .lines()
        .map(|l| match l.split_once("detector: ") {
            Some((lead, _)) => format!("{lead}detector: tracer\n"),
            None => format!("{l}\n"),
        })
        .collect();
    let golden = include_str!("../../../tests/golden/hwlatdetect-debug-smi.txt");
    let theirs: String = golden
        .lines()
        .filter(|l| *l != "not mounting debugfs")
        .take_while(|l| *l != "Starting test")
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(ours, theirs + "Starting test\n");
    assert_eq!(a.hardlimit_us, 15);
}

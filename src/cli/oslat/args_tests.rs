use super::*;

fn p(line: &str) -> OslatRun {
    let words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    match parse(&words, 8) {
        Ok(Parsed::Run(r)) => r,
        other => panic!("{line}: {other:?}"),
    }
}

fn refused(line: &str) -> BadArgs {
    let words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    match parse(&words, 8) {
        Err(b) => b,
        Ok(other) => panic!("{line}: accepted as {other:?}"),
    }
}

#[test]
fn defaults_are_oslats() {
    let r = p("");
    assert_eq!(r, OslatRun::default());
    assert_eq!((r.bucket_size, r.bucket_width_ns), (32, 1000));
    assert_eq!(r.duration_ns, 1_000_000_000);
    assert_eq!((r.cpus, r.cpu_list_text.as_str()), (None, "all"));
}

#[test]
fn each_option_short_and_long() {
    let r = p("-b 64 -B -c 1,3-4 -C 2 -D 20m --json=out.json -f 1 -q -s -z -T 50 -w memmove -m 4K");
    assert_eq!(r.bucket_size, 64);
    assert!(r.bias && r.quiet && r.single_preheat && r.zero_omit);
    assert_eq!(r.cpus, Some(vec![1, 3, 4]));
    assert_eq!(r.cpu_list_text, "1,3-4");
    assert_eq!(r.main_cpu, 2);
    assert_eq!(r.duration_ns, 1200 * 1_000_000_000);
    assert_eq!(r.json_path, Some("out.json".into()));
    assert_eq!(r.rtprio, Some(1));
    assert_eq!(r.trace_threshold_us, Some(50));
    assert_eq!(r.trace_threshold_ns, Some(49_000));
    assert_eq!(r.workload, Some(4096));
    let l = p(
        "--bucket-size=64 --bias --cpu-list 1,3-4 --cpu-main-thread=2 --duration 20m \
               --json out.json --rtprio=1 --quiet --single-preheat --zero-omit \
               --trace-threshold=50 --workload=memmove --workload-mem 4K",
    );
    assert_eq!(l, r);
    assert_eq!(p("-W 250").bucket_width_ns, 250);
    assert_eq!(p("--bucket-width=2000").bucket_width_ns, 2000);
    // -m without -w memmove changes nothing; -w memmove alone is 16 KiB.
    assert_eq!(p("-m 1M").workload, None);
    assert_eq!(p("-w memmove").workload, Some(16 * 1024));
    assert_eq!(p("-w no").workload, None);
}

#[test]
fn glued_values_abbreviations_and_getopts_ways() {
    let r = p("-qzc1 -D10m -f99");
    assert!(r.quiet && r.zero_omit);
    assert_eq!(r.cpus, Some(vec![1]));
    assert_eq!(r.duration_ns, 600 * 1_000_000_000);
    assert_eq!(r.rtprio, Some(99));
    // Unambiguous abbreviations, and an exact name among longer ones.
    assert_eq!(p("--dur 5 --rtp 3").rtprio, Some(3));
    assert_eq!(p("--workload memmove").workload, Some(16 * 1024));
    assert_eq!(p("--cpu-l 2").cpus, Some(vec![2]));
    // A required value is the next word, whatever it is: oslat reads
    // `--dur -q` as a duration of "-q".
    assert!(refused("--dur -q").message.contains("Illegal runtime: -q"));
    // The last of a repeated option counts.
    assert_eq!(p("-f 1 -f 2").rtprio, Some(2));
    // Help and version end the reading.
    let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(parse(&words("-h -x"), 2), Ok(Parsed::Help));
    assert_eq!(parse(&words("--vers"), 2), Ok(Parsed::Version));
    assert_eq!(parse(&words("-q --"), 2).map(|_| ()), Ok(()));
}

#[test]
fn bad_input_is_refused_with_a_hint() {
    for (line, says) in [
        ("-x", "invalid option -- 'x'"),
        ("-b 4", "Illegal bucket size: 4"),
        ("-b 1025", "Illegal bucket size: 1025"),
        ("-b 32x", "Illegal bucket size: 32x"),
        ("-D 0", "Illegal runtime: 0"),
        ("-D abc", "Illegal runtime: abc"),
        ("-D 1.5h", "Illegal runtime: 1.5h"),
        ("-D 1h30m", "Illegal runtime: 1h30m"),
        ("-D 99999999d", "longer than oslat can run"),
        ("-m 4096", "Unknown workload memory size '4096'"),
        ("-m 4X", "Unknown workload memory size '4X'"),
        ("-m 0K", "not a size"),
        ("-m 2G", "not a size"),
        ("-w foo", "Unknown workload 'foo'"),
        ("-f 0", "Illegal RT priority: 0"),
        ("-f 100", "Illegal RT priority: 100"),
        ("-C 8", "Illegal core for main thread: 8 (should be: 0-7)"),
        ("-C -1", "Illegal core for main thread: -1"),
        ("-T 0", "--trace-threshold needs to be positive"),
        ("-W 0", "Illegal bucket width"),
        ("--bias=1", "'--bias' doesn't allow an argument"),
        ("--cpu 1", "'--cpu' is ambiguous"),
        ("--bucket 8", "'--bucket' is ambiguous"),
        ("--runtime 60", "unrecognized option '--runtime'"),
        ("-c 1-x", "not a CPU list"),
        ("-c", "requires an argument"),
        ("--json", "requires an argument"),
        ("60", "unexpected argument '60'"),
        ("-q -- 60", "unexpected argument '60'"),
    ] {
        let b = refused(line);
        assert!(b.message.contains(says), "{line}: {b:?}");
        assert!(!b.hint.is_empty(), "{line}");
    }
}

#[test]
fn durations_with_oslats_suffixes() {
    assert_eq!(duration_s("60"), Ok(60));
    assert_eq!(duration_s("62s"), Ok(62));
    assert_eq!(duration_s("20m"), Ok(1200));
    assert_eq!(duration_s("2H"), Ok(7200));
    assert_eq!(duration_s("1d"), Ok(86400));
    // Go's duration text, as OpenShift's tools write it.
    assert_eq!(duration_s("1m0s"), Ok(60));
    assert_eq!(duration_s("1h0m0s"), Ok(3600));
    assert!(duration_s("1h30m0s").is_err());
    assert!(duration_s("").is_err());
    assert!(duration_s("m").is_err());
}

#[test]
fn sizes_with_oslats_suffixes() {
    assert_eq!(mem_size("4K"), Ok(4096));
    assert_eq!(mem_size("1m"), Ok(1 << 20));
    assert_eq!(mem_size("512b"), Ok(512));
    assert_eq!(mem_size("1G"), Ok(1 << 30));
    assert!(mem_size("").is_err());
    assert!(mem_size("99999999999999999999K").is_err());
}

proptest::proptest! {
    // 2000 cases, or PROPTEST_CASES where it is set (the boards' runs
    // under QEMU, .ci/run).
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
    ))]
    /// No command line panics: random words, and words built from
    /// oslat's own options and values.
    #[test]
    fn no_command_line_panics(
        words in proptest::collection::vec(
            proptest::prop_oneof![
                ".{0,12}",
                "-[bBcCDfhmqswWTvzx]{1,3}[0-9a-zA-Z.,-]{0,6}",
                "--[a-z-]{0,16}(=[0-9a-zA-Z.,-]{0,6})?",
                "[0-9]{1,22}[smhdkKMGbB]?[0-9a-z]{0,3}",
            ],
            0..8,
        ),
        ncores in 0usize..300,
    ) {
        let _ = parse(&words, ncores);
    }
}

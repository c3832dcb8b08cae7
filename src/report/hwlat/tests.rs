use super::*;

/// hwlatdetect 2.4's `info()` and `print()` formats, from its source, in
/// the order it prints them (`*`: printed once per CPU or per sample).
const HEADER_FORMATS: [&str; 11] = [
    "hwlatdetect:  test duration %d seconds",
    "   detector: %s",
    "   parameters:",
    "        CPU list:          %s",
    "        Latency threshold: %dus",
    "        Sample window:     %dus",
    "        Sample width:      %dus",
    "     Non-sampling period:  %dus",
    "        Output File:       %s",
    "",
    "Starting test",
];
const END_FORMATS: [&str; 8] = [
    "test finished",
    "Max Latency: %dus",
    "Samples recorded: %d",
    "Samples exceeding threshold: %d",
    "%d SMIs occured on cpu %d*",
    "SMIs during run: %d",
    "report saved to %s (%d samples)",
    "ts: %s, inner:%d, outer:%d*",
];

/// Whether `line` is `format` with its `%d` (digits) and `%s` (any text)
/// filled in.
fn fills(format: &str, line: &str) -> bool {
    if let Some(rest) = format.strip_prefix("%d") {
        let digits = line.bytes().take_while(u8::is_ascii_digit).count();
        return digits > 0 && fills(rest, &line[digits..]);
    }
    if let Some(rest) = format.strip_prefix("%s") {
        return (1..=line.len())
            .filter(|&i| line.is_char_boundary(i))
            .any(|i| fills(rest, &line[i..]));
    }
    match (format.chars().next(), line.chars().next()) {
        (None, None) => true,
        (Some(f), Some(l)) if f == l => fills(&format[f.len_utf8()..], &line[l.len_utf8()..]),
        _ => false,
    }
}

/// Each line of `text` fills the formats in order, a `*` format any number
/// of times, the others at most once.
fn follows(text: &str, formats: &[&str]) -> Result<(), String> {
    let mut at = 0;
    'lines: for line in text.lines() {
        while let Some(f) = formats.get(at) {
            let (f, many) = match f.strip_suffix('*') {
                Some(f) => (f, true),
                None => (*f, false),
            };
            if fills(f, line)
                || (f == "Max Latency: %dus" && line == "Max Latency: Below threshold")
            {
                if !many {
                    at += 1;
                }
                continue 'lines;
            }
            at += 1;
        }
        return Err(format!("`{line}` fills no format left in {formats:?}"));
    }
    Ok(())
}

fn header(duration_s: u64) -> Header {
    Header {
        duration_s,
        cpu_list: None,
        threshold_us: 10,
        window_us: 1_000_000,
        width_us: 500_000,
        report: None,
        debug: false,
        quiet: false,
        debug_lines: vec![],
    }
}

const S: u64 = 1_000_000_000;

fn window(start_s: u64, gaps: u64, max_gap_ns: u64) -> Window {
    Window {
        start_ns: start_s * S,
        polled_ns: S / 2,
        noise_ns: gaps * max_gap_ns,
        gaps,
        max_gap_ns,
    }
}

fn gap(end_ns: u64, ns: u64, unseen_ns: u64, origin: Origin) -> SeenGap {
    SeenGap {
        end_ns,
        ns,
        unseen_ns,
        origin,
    }
}

/// Two CPUs taking turns: CPU 0 in windows 1 s and 3 s, CPU 1 in 2 s and
/// 4 s. CPU 0: a hardware gap of 15 µs beside an IRQ's 40 µs in its first
/// window, one of 12 µs in its second; CPU 1: only an IRQ (injected).
fn two_cpus(detection: Detection) -> HwlatInput {
    HwlatInput {
        header: header(5),
        hardlimit_us: 10,
        detection,
        cpus: vec![
            CpuInput {
                cpu: 0,
                windows: vec![window(1, 2, 40_000), window(3, 1, 12_000)],
                gaps: vec![
                    gap(S + 100_000, 15_000, 15_000, Origin::Hardware),
                    gap(S + 200_000, 40_000, 0, Origin::Os),
                    gap(3 * S + 100_000, 12_000, 12_000, Origin::Hardware),
                ],
                dropped: 0,
            },
            CpuInput {
                cpu: 1,
                windows: vec![window(2, 1, 300_000), window(4, 0, 900)],
                gaps: vec![gap(2 * S + 300_000, 300_000, 600, Origin::Os)],
                dropped: 0,
            },
        ],
        realtime_offset_ns: 1_700_000_000 * S as i128,
        smis: Smis::Unavailable("no msr driver".into()),
        steal_ms: None,
        incomplete: None,
    }
}

#[test]
fn the_header_is_hwlatdetects() {
    let text = super::header(&header(120), &Detection::Traced);
    assert_eq!(
        text,
        "hwlatdetect:  test duration 120 seconds\n\
         \x20  detector: rtlab noise threads, traced (samples: gaps no OS event covered)\n\
         \x20  parameters:\n\
         \x20       CPU list:          None\n\
         \x20       Latency threshold: 10us\n\
         \x20       Sample window:     1000000us\n\
         \x20       Sample width:      500000us\n\
         \x20    Non-sampling period:  500000us\n\
         \x20       Output File:       None\n\
         \n\
         Starting test\n"
    );
    follows(&text, &HEADER_FORMATS).unwrap();
    let mut h = header(60);
    h.cpu_list = Some("0-1".into());
    h.report = Some("r.txt".into());
    let text = super::header(&h, &Detection::Untraced("not root".into()));
    follows(&text, &HEADER_FORMATS).unwrap();
    assert!(
        text.contains("CPU list:          0-1\n") && text.contains("Output File:       r.txt\n")
    );
    assert!(text.contains("candidates, OS noise included"));
}

#[test]
fn debug_prints_come_first_and_quiet_silences_all_but_the_first() {
    let mut h = header(5);
    h.debug = true;
    h.debug_lines = vec!["hardlimit set to 10us".into()];
    let text = super::header(&h, &Detection::Traced);
    assert!(
        text.starts_with("debugging prints turned on\nhardlimit set to 10us\nhwlatdetect:  test")
    );
    h.quiet = true;
    assert_eq!(
        super::header(&h, &Detection::Traced),
        "debugging prints turned on\n"
    );
    h.debug = false;
    assert_eq!(super::header(&h, &Detection::Traced), "");
}

#[test]
fn with_a_trace_only_gaps_no_event_covered_are_samples() {
    let input = two_cpus(Detection::Traced);
    let got = samples(&input);
    let at = |s: u64| 1_700_000_000 * S as i128 + i128::from(s * S + S / 2);
    assert_eq!(
        got,
        [
            Sample {
                realtime_ns: at(1),
                cpu: 0,
                inner_us: 15,
                outer_us: 0,
                count: 1
            },
            Sample {
                realtime_ns: at(3),
                cpu: 0,
                inner_us: 12,
                outer_us: 0,
                count: 1
            },
        ]
    );
    let r = finish(&input);
    assert_eq!(
        r.stdout,
        "test finished\n\
         Max Latency: 15us\n\
         Samples recorded: 2\n\
         Samples exceeding threshold: 2\n\
         ts: 1700000001.500000000, inner:15, outer:0\n\
         ts: 1700000003.500000000, inner:12, outer:0\n"
    );
    follows(&r.stdout, &END_FORMATS).unwrap();
    assert_eq!(r.status, 1, "15 us is over the hard limit of 10 us");
    assert!(
        r.stderr.contains("2 gaps no OS event covered"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("2 OS noise gaps were") || r.stderr.contains("OS noise"));
    assert!(r.stderr.contains("SMIs not counted: no msr driver"));
}

#[test]
fn an_interrupt_is_never_a_hardware_sample() {
    let mut input = two_cpus(Detection::Traced);
    input.cpus.truncate(0);
    input.cpus.push(CpuInput {
        cpu: 1,
        windows: vec![window(2, 1, 5_000_000)],
        gaps: vec![gap(2 * S + 5_000_000, 5_000_000, 0, Origin::Os)],
        dropped: 0,
    });
    assert!(samples(&input).is_empty());
    let r = finish(&input);
    assert!(
        r.stdout
            .contains("Max Latency: Below threshold\nSamples recorded: 0\n")
    );
    assert_eq!(r.status, 0);
}

#[test]
fn without_a_trace_every_window_over_the_threshold_is_a_candidate() {
    let input = two_cpus(Detection::Untraced("not root".into()));
    let inner: Vec<_> = samples(&input)
        .iter()
        .map(|s| (s.cpu, s.inner_us, s.count))
        .collect();
    // CPU 1's second window had no gap over the threshold.
    assert_eq!(inner, [(0, 40, 2), (1, 300, 1), (0, 12, 1)]);
    let r = finish(&input);
    follows(&r.stdout, &END_FORMATS).unwrap();
    assert!(r.stdout.contains("Max Latency: 300us\n"));
    assert!(r.stderr.contains("cannot be told apart"), "{}", r.stderr);
    assert!(
        r.stderr.contains("3 samples above are candidates"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_sample_is_over_the_threshold_in_whole_microseconds() {
    let mut input = two_cpus(Detection::Traced);
    input.cpus[0].gaps = vec![
        gap(S + 100_000, 10_999, 10_999, Origin::Hardware),
        gap(3 * S + 100_000, 11_000, 11_000, Origin::Hardware),
    ];
    let got: Vec<_> = samples(&input).iter().map(|s| s.inner_us).collect();
    assert_eq!(got, [11]);
}

#[test]
fn the_exit_status_is_the_largest_sample_over_the_hard_limit() {
    assert_eq!(exit_status(0, 10), 0);
    assert_eq!(exit_status(10, 10), 0);
    assert_eq!(exit_status(11, 10), 1);
    let mut input = two_cpus(Detection::Traced);
    input.hardlimit_us = 15;
    assert_eq!(finish(&input).status, 0);
}

#[test]
fn smis_are_printed_as_hwlatdetect_prints_them() {
    let mut input = two_cpus(Detection::Traced);
    input.smis = Smis::Counted(vec![(0, 3), (1, 0)]);
    let r = finish(&input);
    follows(&r.stdout, &END_FORMATS).unwrap();
    assert!(r.stdout.contains(
        "Samples exceeding threshold: 2\n3 SMIs occured on cpu 0\nSMIs during run: 3\nts:"
    ));
    assert!(!r.stdout.contains("cpu 1"));
    assert!(!r.stderr.contains("SMIs not counted"));
}

#[test]
fn quiet_keeps_what_hwlatdetect_prints_without_info() {
    let mut input = two_cpus(Detection::Traced);
    input.header.quiet = true;
    input.header.report = Some("r.txt".into());
    input.smis = Smis::Counted(vec![(0, 3)]);
    let r = finish(&input);
    assert_eq!(
        r.stdout,
        "3 SMIs occured on cpu 0\n\
         report saved to r.txt (2 samples)\n\
         ts: 1700000001.500000000, inner:15, outer:0\n\
         ts: 1700000003.500000000, inner:12, outer:0\n"
    );
}

#[test]
fn the_report_file_holds_one_line_per_sample() {
    let mut input = two_cpus(Detection::Traced);
    assert_eq!(finish(&input).report_file, None);
    input.header.report = Some("r.txt".into());
    let r = finish(&input);
    assert_eq!(
        r.report_file.as_deref(),
        Some(
            "ts: 1700000001.500000000, inner:15, outer:0\nts: 1700000003.500000000, inner:12, outer:0\n"
        )
    );
    follows(&r.stdout, &END_FORMATS).unwrap();
    assert!(
        r.stdout
            .contains("Samples exceeding threshold: 2\nreport saved to r.txt (2 samples)\nts: ")
    );
}

#[test]
fn under_a_hypervisor_unseen_time_sits_beside_steal() {
    let mut input = two_cpus(Detection::Traced);
    input.steal_ms = Some(vec![(0, 2.0), (1, 0.0)]);
    let r = finish(&input);
    let table: Vec<&str> = r
        .stderr
        .lines()
        .skip_while(|l| !l.contains("a hypervisor runs this machine"))
        .collect();
    assert_eq!(table.len(), 4, "{}", r.stderr);
    assert!(table[1].contains("unseen ms") && table[1].contains("steal ms (run)"));
    // CPU 0: 1 s polled, 27 µs unseen, 2 ms stolen over the 5 s run.
    let cols: Vec<&str> = table[2].split_whitespace().collect();
    assert_eq!(cols, ["0", "1000.000", "0.027", "2.000", "0.400"]);
    let cols: Vec<&str> = table[3].split_whitespace().collect();
    assert_eq!(cols, ["1", "1000.000", "0.001", "0.000", "0.000"]);
    assert!(
        !finish(&two_cpus(Detection::Traced))
            .stderr
            .contains("hypervisor runs")
    );
}

#[test]
fn unattributed_gaps_and_an_incomplete_run_are_said() {
    let mut input = two_cpus(Detection::Traced);
    input.cpus[1].dropped = 4;
    input.incomplete = Some("stopped by SIGINT".into());
    let e = finish(&input).stderr;
    assert!(
        e.contains("4 gaps over the threshold not attributed"),
        "{e}"
    );
    assert!(e.contains("did not complete (stopped by SIGINT)"), "{e}");
}

#[test]
fn stamps_are_seconds_and_nine_digits_of_ns() {
    let s = Sample {
        realtime_ns: 12_000_000_005,
        cpu: 0,
        inner_us: 1,
        outer_us: 0,
        count: 1,
    };
    assert_eq!(s.line(), "ts: 12.000000005, inner:1, outer:0");
    follows(&s.line(), &END_FORMATS).unwrap();
}

#[test]
fn the_format_check_rejects_what_hwlatdetect_would_not_print() {
    assert!(follows("Max Latency: 12 us\n", &END_FORMATS).is_err());
    assert!(follows("ts: 1.5, inner:x, outer:0\n", &END_FORMATS).is_err());
    assert!(follows("Samples recorded: 1\ntest finished\n", &END_FORMATS).is_err());
}

/// The real hwlatdetect 2.4's stdout for the samples of [`two_cpus`]
/// (CPU 0's 15 µs and 12 µs windows), recorded by running
/// /usr/sbin/hwlatdetect with its debugfs pointed at a fake tree and its
/// `trace_pipe` read replaced by the tracer's two sample lines
/// (`#1 inner/outer(us):   15/0     ts:1700000001.500000000 count:1`...),
/// and for the SMI cases its `rdmsr` by counts of [10, 5] then [13, 5].
/// The tracer's internal debugging prints (debugfs, c-states, the
/// detector module) are not rtlab's and are left out here.
const TRACER_DEBUG: [&str; 9] = [
    "not mounting debugfs",
    "c-states disabled",
    "enabling detector module (threshold: 11)",
    "start: threshold reset by start, fixing",
    "detector module enabled (threshold: 11)",
    "disabling detector module",
    "c-states enabled",
    "detector module disabled",
    "not umounting debugfs",
];

fn as_hwlatdetect(golden: &str) -> String {
    golden
        .lines()
        .filter(|l| !TRACER_DEBUG.contains(l))
        .map(|l| l.replace("detector: tracer", "detector: DETECTOR") + "\n")
        .collect()
}

fn ours(input: &HwlatInput) -> String {
    let text = super::header(&input.header, &input.detection) + &finish(input).stdout;
    text.lines()
        .map(|l| match l.split_once("detector: ") {
            Some((lead, _)) => format!("{lead}detector: DETECTOR\n"),
            None => format!("{l}\n"),
        })
        .collect()
}

#[test]
fn the_report_is_the_real_hwlatdetects_line_for_line() {
    let mut input = two_cpus(Detection::Traced);
    input.header.duration_s = 1;
    let golden = include_str!("../../../tests/golden/hwlatdetect-default.txt");
    assert_eq!(ours(&input), as_hwlatdetect(golden));
    assert_eq!(finish(&input).status, 1, "hwlatdetect exited 1");

    input.header.quiet = true;
    input.header.report = Some("r.txt".into());
    input.smis = Smis::Counted(vec![(0, 3), (1, 0)]);
    let golden = include_str!("../../../tests/golden/hwlatdetect-quiet-smi.txt");
    assert_eq!(ours(&input), as_hwlatdetect(golden));

    // --debug --threshold 11 --hardlimit 15 --cpu-list 0-1 --window 2s
    let mut input = two_cpus(Detection::Traced);
    input.smis = Smis::Counted(vec![(0, 3), (1, 0)]);
    let h = &mut input.header;
    (h.duration_s, h.threshold_us, h.window_us) = (1, 11, 2_000_000);
    h.cpu_list = Some("0-1".into());
    h.debug = true;
    h.debug_lines = [
        "threshold set to 11us",
        "hardlimit set to 15us",
        "window parameter = 2000000",
        "window for sampling set to 2000000us",
        "test duration is 1s",
        "set tracing_cpumask to 3",
    ]
    .map(String::from)
    .to_vec();
    input.hardlimit_us = 15;
    let golden = include_str!("../../../tests/golden/hwlatdetect-debug-smi.txt");
    assert_eq!(ours(&input), as_hwlatdetect(golden));
    assert_eq!(finish(&input).status, 0, "hwlatdetect exited 0");
}

use super::*;
use crate::dataset::{self, Run};
use std::path::Path;

/// A real cyclictest 2.40 `--json` file (`-q -p 98 -i 1000 -t 2 -a -D 2 -m`),
/// whose `-q` text said `Min: 15 Avg: 32 Max: 1328` and `Min: 18 Avg: 40
/// Max: 174`.
const CYCLICTEST_JSON: &str = r##"{
  "file_version": 1,
  "cmdline:": "cyclictest -q -p 98 -i 1000 -t 2 -a -D 2 -m --json=ct.json",
  "rt_test_version:": "2.40",
  "start_time": "Fri, 27 Nov 2026 00:00:30 +0000",
  "end_time": "Fri, 27 Nov 2026 00:00:32 +0000",
  "return_code": 0,
  "sysinfo": {
    "sysname": "Linux",
    "nodename": "vm",
    "release": "6.18.44",
    "version": "#1 SMP PREEMPT_DYNAMIC @0",
    "machine": "x86_64",
    "realtime": 0
  },
  "num_threads": 2,
  "resolution_in_ns": 0,
  "thread": {
    "1": {
      "histogram": {      },
      "cycles": 1331,
      "min": 18,
      "max": 174,
      "avg": 40.67,
      "cpu": 1,
      "node": 0
    },
    "0": {
      "histogram": {      },
      "cycles": 1998,
      "min": 15,
      "max": 1328,
      "avg": 32.56,
      "cpu": 0,
      "node": 0
    }
  }
}"##;

fn cyclictest_run() -> Run {
    dataset::parse_bytes(CYCLICTEST_JSON.as_bytes(), Path::new("ct.json")).unwrap()
}

fn lines(c: &Cases) -> Vec<String> {
    c.cases.iter().map(Case::line).collect()
}

#[test]
fn cyclictests_json_gives_linaros_names_figures_and_order() {
    // The threads come in file order 1, 0; the cases in thread order.
    let c = cases(&cyclictest_run(), None, None);
    assert_eq!(
        lines(&c),
        [
            "t0-min-latency pass 15 us",
            "t0-avg-latency pass 32 us",
            "t0-max-latency pass 1328 us",
            "t1-min-latency pass 18 us",
            "t1-avg-latency pass 40 us",
            "t1-max-latency pass 174 us",
        ]
    );
    assert!(c.left_out.is_empty());
}

#[test]
fn only_a_max_at_or_above_the_threshold_fails() {
    let run = cyclictest_run();
    let verdicts = |limit: u64| -> Vec<&'static str> {
        cases(&run, Some(limit), None)
            .cases
            .iter()
            .map(|c| c.verdict.word())
            .collect()
    };
    let pass6 = ["pass"; 6];
    // Equal to thread 0's max: `>=` fails it.
    assert_eq!(
        verdicts(1328),
        ["pass", "pass", "fail", "pass", "pass", "pass"]
    );
    assert_eq!(verdicts(1329), pass6);
    assert_eq!(
        verdicts(174),
        ["pass", "pass", "fail", "pass", "pass", "fail"]
    );
    // Below every min: only the maxima fail, min and avg always pass.
    assert_eq!(verdicts(0), verdicts(174));
}

#[test]
fn rtlabs_ns_figures_are_truncated_to_whole_us() {
    let mut run = cyclictest_run();
    let s = &mut run.threads[0].stats;
    (s.min_ns, s.mean_ns, s.max_ns) = (Some(15_999), Some(32_999.9), Some(49_999));
    let c = cases(&run, Some(50), None);
    assert_eq!(
        lines(&c)[..3],
        [
            "t0-min-latency pass 15 us",
            "t0-avg-latency pass 32 us",
            "t0-max-latency pass 49 us",
        ]
    );
    // 50.0 µs is 50: at the threshold, a fail.
    run.threads[0].stats.max_ns = Some(50_000);
    assert_eq!(
        cases(&run, Some(50), None).cases[2].line(),
        "t0-max-latency fail 50 us"
    );
}

#[test]
fn a_figure_the_file_lacks_is_skipped_and_a_thread_without_samples_fails() {
    let mut run = cyclictest_run();
    // A windows file keeps the max alone.
    (run.threads[0].stats.min_ns, run.threads[0].stats.mean_ns) = (None, None);
    run.threads[1].stats.samples = 0;
    let c = cases(&run, Some(1000), None);
    assert_eq!(
        lines(&c),
        [
            "t0-min-latency skip",
            "t0-avg-latency skip",
            "t0-max-latency fail 1328 us",
            "t1-min-latency fail",
            "t1-avg-latency fail",
            "t1-max-latency fail",
        ]
    );
    assert_eq!(
        c.left_out,
        [
            "T0: no min in this file: its case is skipped",
            "T0: no avg in this file: its case is skipped",
            "T1: no samples: its cases fail",
        ]
    );
}

#[test]
fn the_helpers_arguments_are_one_item_each() {
    let c = cases(&cyclictest_run(), Some(100), None);
    assert_eq!(
        c.cases[2].helper_args(),
        [
            "t0-max-latency",
            "--result",
            "fail",
            "--measurement",
            "1328",
            "--units",
            "us"
        ]
    );
    let none = Case {
        name: "t0-avg-latency".into(),
        verdict: Verdict::Fail,
        measurement: None,
        units: "us",
        blank_after: false,
    };
    assert_eq!(none.helper_args(), ["t0-avg-latency", "--result", "fail"]);
    assert_eq!(none.line(), "t0-avg-latency fail");
}

#[test]
fn several_runs_are_told_apart_by_a_safe_prefix() {
    let c = cases(&cyclictest_run(), None, Some(&prefix("board 1")));
    assert_eq!(c.cases[0].name, "board_1-t0-min-latency");
    assert_eq!(prefix("../x;rm -rf /`id`$(id)"), ".._x_rm_-rf___id___id_");
    assert_eq!(prefix(""), "run");
    assert_eq!(prefix("é\n\u{1b}[2J"), "____2J");
    assert_eq!(prefix(&"a".repeat(500)).len(), 64);
}

/// A line as Linaro's `send-to-lava.sh` must read it, and nothing else:
/// `[PREFIX-]tN-(min|avg|max)-latency (pass|fail)[ V us]`.
fn well_formed(line: &str) -> bool {
    let words: Vec<&str> = line.split(' ').collect();
    let name_ok = |name: &str| {
        let Some(rest) = name.strip_suffix("-latency") else {
            return false;
        };
        let Some((t, what)) = rest.rsplit_once('-') else {
            return false;
        };
        let t = t.rsplit('-').next().unwrap_or_default();
        ["min", "avg", "max"].contains(&what)
            && t.strip_prefix('t')
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    };
    let verdict_ok = |v: &str| ["pass", "fail", "skip"].contains(&v);
    match words.as_slice() {
        [name, v] => name_ok(name) && verdict_ok(v),
        [name, v, n, "us"] => {
            name_ok(name) && verdict_ok(v) && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
        }
        _ => false,
    }
}

#[test]
fn hostile_threads_never_panic_nor_make_a_malformed_line() {
    let mut run = cyclictest_run();
    let template = run.threads[0].clone();
    let names = [
        "T",
        "T-1",
        "T+1",
        "T 1",
        "T1\nrm -rf /",
        "T٣",
        "T99999999999999999999999",
        "t1",
        "I0",
        "L0.123",
        "T0",
        "T18446744073709551615",
        "",
    ];
    run.threads = names
        .iter()
        .map(|n| {
            let mut t = template.clone();
            t.name = n.to_string();
            t
        })
        .collect();
    let odd_stats = [
        (0, Some(1), Some(2.0), Some(3)),
        (5, None, Some(2.0), Some(3)),
        (5, Some(1), Some(f64::NAN), Some(3)),
        (5, Some(1), Some(f64::INFINITY), Some(3)),
        (5, Some(1), Some(-4.0), Some(3)),
        (5, Some(1), None, Some(3)),
        (5, Some(1), Some(1e300), None),
        (u64::MAX, Some(u64::MAX), Some(f64::MAX), Some(u64::MAX)),
    ];
    for (i, (samples, min, mean, max)) in odd_stats.into_iter().enumerate() {
        let mut t = template.clone();
        t.name = format!("T{}", 100 + i);
        (
            t.stats.samples,
            t.stats.min_ns,
            t.stats.mean_ns,
            t.stats.max_ns,
        ) = (samples, min, mean, max);
        run.threads.push(t);
    }
    for limit in [None, Some(0), Some(u64::MAX)] {
        let c = cases(&run, limit, None);
        for line in lines(&c) {
            assert!(well_formed(&line), "{line:?}");
        }
        let names: Vec<&str> = c.cases.iter().map(|c| c.name.as_str()).collect();
        // Only T0, T18446744073709551615 and the odd-stats threads are
        // cyclictest threads; the rest are left out with the reason.
        assert_eq!(names.len(), 3 * (2 + odd_stats.len()), "{names:?}");
        assert_eq!(names[0], "t0-min-latency");
        assert_eq!(names.last(), Some(&"t18446744073709551615-max-latency"));
        // 11 names that are not cyclictest threads, the thread without
        // samples, 6 figures missing or not a number: a note each.
        assert_eq!(c.left_out.len(), 11 + 1 + 6, "{:?}", c.left_out);
        // The thread without samples fails its three cases; a figure the
        // file lacks (or a mean that is no number) skips its case; both
        // without a figure.
        let figureless: Vec<&Case> = c.cases.iter().filter(|c| c.measurement.is_none()).collect();
        let failed: Vec<&str> = figureless
            .iter()
            .filter(|c| c.verdict == Verdict::Fail)
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(
            failed,
            ["t100-min-latency", "t100-avg-latency", "t100-max-latency"]
        );
        assert_eq!(figureless.len(), 3 + 6);
        assert!(
            figureless
                .iter()
                .skip(3)
                .all(|c| c.verdict == Verdict::Skip)
        );
    }
}

proptest::proptest! {
    #[test]
    fn any_thread_gives_well_formed_lines(
        name in "\\PC{0,12}",
        n in proptest::num::u64::ANY,
        samples in proptest::num::u64::ANY,
        min in proptest::option::of(proptest::num::u64::ANY),
        mean in proptest::option::of(proptest::num::f64::ANY),
        max in proptest::option::of(proptest::num::u64::ANY),
        limit in proptest::option::of(proptest::num::u64::ANY),
        label in "\\PC{0,80}",
    ) {
        let mut run = cyclictest_run();
        run.threads[0].name = name;
        run.threads[1].name = format!("T{n}");
        let s = &mut run.threads[1].stats;
        (s.samples, s.min_ns, s.mean_ns, s.max_ns) = (samples, min, mean, max);
        let p = prefix(&label);
        for c in cases(&run, limit, Some(&p)).cases {
            let line = c.line();
            proptest::prop_assert!(well_formed(&line), "{:?}", line);
            let head = format!("{p}-t");
            proptest::prop_assert!(c.name.starts_with(&head), "{:?}", c.name);
        }
    }
}

/// Today's parser's lines of a document, as `rtlab lava` prints them.
fn linaro_text(doc: &linaro::Document, test: &str) -> String {
    let (cases, _) = linaro::cases(doc, test, None);
    cases.iter().map(|c| c.line() + "\n").collect()
}

fn rt_tests(json: &str) -> dataset::rt_tests::RtTestsJson {
    serde_json::from_str(json).unwrap()
}

#[test]
fn todays_parser_prints_each_value_as_the_json_holds_it_then_the_test() {
    let doc = linaro::from_rt_tests(&rt_tests(CYCLICTEST_JSON)).unwrap();
    assert_eq!(
        linaro_text(&doc, "cyclictest"),
        "t0-min-latency pass 15 us\nt0-avg-latency pass 32.56 us\nt0-max-latency pass 1328 us\n\
         t1-min-latency pass 18 us\nt1-avg-latency pass 40.67 us\nt1-max-latency pass 174 us\n\
         cyclictest pass\n"
    );
    let failed = CYCLICTEST_JSON.replace("\"return_code\": 0", "\"return_code\": 1");
    let doc = linaro::from_rt_tests(&rt_tests(&failed)).unwrap();
    assert!(
        linaro_text(&doc, "cyclictest").ends_with("t1-max-latency pass 174 us\ncyclictest fail\n")
    );
}

#[test]
fn receivers_irqs_and_inversions_are_read_where_the_parser_reads_them() {
    // pmqtest: the receiver's figures; an avg of 18.000 is Python's 18.0.
    let pmq = r#"{"num_threads": 1, "thread": {"0": {"min": 1, "avg": 2.5, "max": 3,
        "receiver": {"min": 7, "avg": 18.000, "max": 40}}}, "return_code": 0}"#;
    let doc = linaro::from_rt_tests(&rt_tests(pmq)).unwrap();
    assert_eq!(
        linaro_text(&doc, "pmqtest"),
        "t0-min-latency pass 7 us\nt0-avg-latency pass 18.0 us\nt0-max-latency pass 40 us\npmqtest pass\n"
    );
    // rtla timerlat: IRQs after threads, and no inversion line with them.
    let rtla = r#"{"num_threads": 0, "num_irqs": 1, "irq": {"0": {"min": 1, "avg": 1e-05, "max": 9}},
        "inversion": 4, "return_code": "0"}"#;
    let doc = linaro::from_rt_tests(&rt_tests(rtla)).unwrap();
    assert_eq!(
        linaro_text(&doc, "rtla-timerlat"),
        "i0-min-latency pass 1 us\ni0-avg-latency pass 1e-05 us\ni0-max-latency pass 9 us\nrtla-timerlat pass\n"
    );
    // pi_stress: the inversion line, then the empty line its print makes.
    let pi = r#"{"inversion": 12, "return_code": 2}"#;
    let doc = linaro::from_rt_tests(&rt_tests(pi)).unwrap();
    assert_eq!(
        linaro_text(&doc, "pi-stress"),
        "inversion pass 12 count\n\npi-stress fail\n"
    );
}

#[test]
fn where_the_parser_stops_rtlab_refuses_and_a_text_value_makes_no_line() {
    for (json, why) in [
        (
            r#"{"num_threads": 2, "thread": {"0": {}}, "return_code": 0}"#,
            "thread 1 missing",
        ),
        (r#"{"num_threads": 0}"#, "no return_code"),
        (r#"{"num_threads": "x", "return_code": 0}"#, "num_threads"),
        (r#"{"return_code": [0]}"#, "return_code"),
    ] {
        let e = linaro::from_rt_tests(&rt_tests(json)).unwrap_err();
        assert!(e.contains(why), "{json}: {e}");
    }
    // A huge count with one thread: refused at the second, no loop.
    let huge = r#"{"num_threads": 18446744073709551615, "thread": {"0": {}}, "return_code": 0}"#;
    assert!(linaro::from_rt_tests(&rt_tests(huge)).is_err());
    let text = r#"{"num_threads": 1, "thread": {"0": {"min": "3\nt9-max-latency fail", "avg": "4.5",
        "max": 7}}, "return_code": 0}"#;
    let doc = linaro::from_rt_tests(&rt_tests(text)).unwrap();
    assert_eq!(
        linaro_text(&doc, "cyclictest"),
        "t0-min-latency skip\nt0-avg-latency pass 4.5 us\nt0-max-latency pass 7 us\ncyclictest pass\n"
    );
}

#[test]
fn any_other_result_gets_the_figures_rtlab_cyclictest_writes() {
    let rtlab: Run = dataset::parse_bytes(
        include_bytes!("../../../tests/seeds/rtlab-result-irq-latency.json"),
        Path::new("r.json"),
    )
    .unwrap();
    let (doc, left_out) = linaro::from_run(&rtlab);
    assert!(!doc.threads.is_empty());
    for ((n, [min, avg, max]), t) in doc
        .threads
        .iter()
        .zip(rtlab.threads.iter().filter(|t| number(t).is_ok()))
    {
        assert_eq!(Some(*n), number(t).ok());
        assert_eq!(
            min.as_deref(),
            t.stats.min_ns.map(|v| (v / 1000).to_string()).as_deref()
        );
        assert_eq!(
            max.as_deref(),
            t.stats.max_ns.map(|v| (v / 1000).to_string()).as_deref()
        );
        let mean_us = t.stats.mean_ns.unwrap() / 1000.0;
        let printed: f64 = avg.as_deref().unwrap().parse().unwrap();
        assert!(
            (printed - mean_us).abs() <= 0.005 + 1e-9,
            "{printed} {mean_us}"
        );
    }
    assert_eq!(left_out.len(), rtlab.threads.len() - doc.threads.len());
}

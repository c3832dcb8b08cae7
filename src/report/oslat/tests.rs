//! The renderer against real oslat 2.4 outputs captured on this project's
//! machine (`tests/golden/oslat/`, named after their command lines).

use super::*;

fn golden(name: &str) -> String {
    let path = format!("{}/tests/golden/oslat/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn view(bucket_size: usize) -> View {
    View {
        runtime_s: 3,
        rtprio: None,
        cpu_list: "1".into(),
        main_cpu: 0,
        memmove_bytes: None,
        preheat_cores: 1,
        bucket_size,
        bucket_width_ns: 1000,
        bias: false,
        zero_omit: false,
        quiet: false,
    }
}

/// Lines with every number (digits and dots) blanked to `N`.
fn shape(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| {
            let mut out = String::new();
            let mut in_number = false;
            for c in l.chars() {
                if c.is_ascii_digit() || (in_number && c == '.') {
                    if !in_number {
                        out.push('N');
                    }
                    in_number = true;
                } else {
                    in_number = false;
                    out.push(c);
                }
            }
            out
        })
        .collect()
}

/// The table's rows of a captured output: label → counts per thread.
fn rows(text: &str) -> Vec<(String, Vec<String>)> {
    text.lines()
        .filter_map(|l| {
            let (label, rest) = l.split_once(":\t")?;
            let words = rest.split_whitespace().map(str::to_string).collect();
            Some((label.trim().to_string(), words))
        })
        .collect()
}

/// Gaps that make the captured buckets (no bias): each bucket's count at
/// the middle of its µs, the last bucket's at its start but one at the
/// captured maximum.
fn gaps_for(counts: &[u64], max_us: u64) -> Vec<(u64, u64)> {
    let mut gaps: Vec<(u64, u64)> = counts
        .iter()
        .enumerate()
        .map(|(j, &n)| (j as u64 * 1000 + 500, n))
        .collect();
    if let Some(last) = gaps.last_mut() {
        last.1 -= 1;
    }
    gaps.push(((max_us - 1) * 1000 + 500, 1));
    gaps
}

#[test]
fn the_table_of_a_real_run_comes_back_line_for_line() {
    let real = golden("c1-D3.txt");
    let table: Vec<_> = rows(&real);
    let counts: Vec<u64> = table
        .iter()
        .filter(|r| r.0.ends_with("(us)"))
        .map(|r| r.1[0].parse().unwrap())
        .collect();
    assert_eq!(counts.len(), 32);
    let exact = gaps_for(&counts, 13642);
    let t = OslatThread {
        cpu: 1,
        counter_mhz: 2597,
        exact: &exact,
        beyond: &[],
        min_ns: 40,
        max_ns: 13_641_500,
        duration_ns: 2_997_000_000,
    };
    let v = view(32);
    let mut ours = banner() + &globals(&v) + starts(&v) + completed(&v);
    ours.push_str(&summary(&v, 0, &[t]));
    // Every line but the average (it depends on the overflows' sizes).
    let keep = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| !l.contains("Average"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(keep(&ours), keep(&real));
    assert_eq!(shape(&ours), shape(&real));
}

#[test]
fn quiet_zero_omit_and_bias_have_oslats_shape() {
    for (name, threads, bias) in [
        ("c0-1-D2-q-z-B.txt", 2, true),
        ("c1-D1-q-z.txt", 1, false),
        ("D1-b8-q.txt", 2, false),
    ] {
        let real = golden(name);
        let size = if name.contains("b8") { 8 } else { 32 };
        let mut v = view(size);
        v.quiet = true;
        v.bias = bias;
        v.zero_omit = name.contains("-z");
        // The counts of the capture, put back at their buckets.
        let table = rows(&real);
        let mut per_thread: Vec<Vec<(u64, u64)>> = vec![Vec::new(); threads];
        let bias_ns = if bias { 1000 } else { 0 };
        for (label, words) in table.iter().filter(|r| r.0.ends_with("(us)")) {
            let us: u64 = label.trim_end_matches(" (us)").parse().unwrap();
            for (i, w) in words.iter().take(threads).enumerate() {
                let n: u64 = w.parse().unwrap();
                per_thread[i].push(((us - 1) * 1000 + 500, n));
            }
        }
        let ts: Vec<OslatThread> = per_thread
            .iter()
            .enumerate()
            .map(|(i, g)| OslatThread {
                cpu: i,
                counter_mhz: 2597,
                exact: g,
                beyond: &[],
                min_ns: 100,
                max_ns: 40_000_000,
                duration_ns: 2_000_000_000,
            })
            .collect();
        let mut ours = banner() + &globals(&v) + &bias_line(&v, bias_ns);
        ours.push_str(&summary(&v, bias_ns, &ts));
        assert_eq!(shape(&ours), shape(&real), "{name}\n{ours}");
        let ours_rows = rows(&ours);
        let counts = |r: &[(String, Vec<String>)]| -> Vec<(String, Vec<String>)> {
            r.iter().filter(|r| r.0.ends_with(")")).cloned().collect()
        };
        assert_eq!(counts(&ours_rows), counts(&table), "{name}");
    }
}

#[test]
fn gaps_fall_into_buckets_as_oslat_rounds_them() {
    let v = view(4);
    let t = |exact: &'static [(u64, u64)]| OslatThread {
        cpu: 0,
        counter_mhz: 1000,
        exact,
        beyond: &[],
        min_ns: 0,
        max_ns: 0,
        duration_ns: 0,
    };
    // [0, 1 µs) → "001", [1, 2) → "002", ... 4 µs and past → the last,
    // `index - buckets` added to the overflow sum.
    let f = fill(
        &v,
        0,
        &t(&[(0, 1), (999, 1), (1000, 2), (3999, 3), (4000, 4), (9500, 5)]),
    );
    assert_eq!(f.buckets, [2, 2, 0, 3 + 4 + 5]);
    assert_eq!(f.overflow_sum, 5 * 5);
    // A bias of 1 µs: [0, 2 µs) → the first bucket, labelled 002.
    let f = fill(&v, 1000, &t(&[(0, 1), (1999, 1), (2000, 1)]));
    assert_eq!(f.buckets, [2, 1, 0, 0]);
    let mut b = v.clone();
    b.bias = true;
    assert_eq!(bias_ns(&b, [1500, 800]), 1000);
    assert_eq!(bias_ns(&v, [1500]), 0);
    assert_eq!(bias_line(&b, 1000), "Global bias set to 1 (us)\n");
    // The average is the labels' (plus the first thread's overflows).
    let exact = [(500, 3), (1500, 1)];
    let th = OslatThread {
        exact: &exact,
        min_ns: 500,
        max_ns: 1500,
        ..t(&[])
    };
    let s = summary(&v, 0, &[th]);
    assert!(s.contains("     Average:\t 1.250 (us)\n"), "{s}");
    assert!(s.contains("     Minimum:\t 1 (us)\n"), "{s}");
    assert!(s.contains("     Maximum:\t 2 (us)\n"), "{s}");
}

#[test]
fn ns_bucket_widths_print_to_the_ns() {
    let mut v = view(4);
    v.bucket_width_ns = 250;
    let exact = [(100, 1), (600, 2)];
    let t = OslatThread {
        cpu: 2,
        counter_mhz: 2000,
        exact: &exact,
        beyond: &[(1_000_000, 1)],
        min_ns: 100,
        max_ns: 1_000_000,
        duration_ns: 1_000_000_000,
    };
    let s = summary(&v, 0, &[t]);
    assert!(s.contains("0.250 (us):\t 1\n"), "{s}");
    assert!(s.contains("0.750 (us):\t 2\n"), "{s}");
    assert!(s.contains("1.000 (us):\t 1 (including overflows)\n"), "{s}");
    assert!(s.contains("Minimum:\t 0.100 (us)"), "{s}");
    let j = json(&v, 0, &JsonHead::default(), &[t]);
    assert!(j.contains("\"0.750\": 2"), "{j}");
}

#[test]
fn the_json_has_oslats_keys_in_oslats_order() {
    let real = golden("c0-1-D2-q-z-B.json");
    let keys = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.trim().split_once("\":").map(|k| k.0.to_string()))
            .filter(|k| {
                !k.trim_start_matches('"')
                    .starts_with(|c: char| c.is_ascii_digit())
            })
            .collect()
    };
    let g0 = [(1500, 10), (40_500, 2)];
    let g1 = [(1500, 12)];
    let ts = [(0, &g0[..]), (1, &g1[..])].map(|(cpu, exact)| OslatThread {
        cpu,
        counter_mhz: 2590,
        exact,
        beyond: &[],
        min_ns: 500,
        max_ns: 40_500,
        duration_ns: 2_008_000_000,
    });
    let mut v = view(32);
    v.bias = true;
    let head = JsonHead {
        cmdline: "oslat -c 0-1 \"quoted\"".into(),
        start_time: timestamp(0, 0),
        end_time: timestamp(4, 0),
        sysname: "Linux".into(),
        ..JsonHead::default()
    };
    let ours = json(&v, 1000, &head, &ts);
    assert_eq!(keys(&ours), keys(&real), "{ours}");
    let doc: serde_json::Value = serde_json::from_str(&ours).unwrap();
    assert_eq!(doc["thread"]["0"]["histogram"]["2"], 10);
    assert_eq!(doc["thread"]["0"]["histogram"]["33"], 2);
    assert_eq!(doc["thread"]["1"]["min"], 1);
    assert_eq!(doc["cmdline:"], "oslat -c 0-1 \"quoted\"");
    // The real file parses too, and has the same nesting.
    let theirs: serde_json::Value = serde_json::from_str(&real).unwrap();
    assert_eq!(theirs["num_threads"], doc["num_threads"]);
}

#[test]
fn an_empty_histogram_is_written_as_oslat_writes_it() {
    let v = view(8);
    let t = OslatThread {
        cpu: 0,
        counter_mhz: 1,
        exact: &[],
        beyond: &[],
        min_ns: 0,
        max_ns: 0,
        duration_ns: 0,
    };
    let j = json(&v, 0, &JsonHead::default(), &[t]);
    assert!(j.contains("      \"histogram\": {      }\n"), "{j}");
    serde_json::from_str::<serde_json::Value>(&j).unwrap();
    assert!(summary(&v, 0, &[t]).contains("Average:\t -nan (us)"));
}

#[test]
fn timestamps_as_rt_tests_writes_them() {
    assert_eq!(timestamp(0, 0), "Thu, 01 Jan 1970 00:00:00 +0000");
    // The capture's start time.
    assert_eq!(
        timestamp(1_795_713_858, 0),
        "Thu, 26 Nov 2026 17:24:18 +0000"
    );
    assert_eq!(
        timestamp(1_795_713_858, -(5 * 3600 + 30 * 60)),
        "Thu, 26 Nov 2026 11:54:18 -0530"
    );
}

//! rtlab monitor's windows files: large ones summed exactly, and known by
//! their parsed header (read whole or window by window: in `tests.rs`).

use super::tests::*;
use super::*;

/// A windows file of `n` windows per thread for threads T0 and T1, with
/// counts that differ window by window, and its sums by brute force.
fn big_windows(n: usize) -> (String, Vec<Vec<u64>>, Vec<u64>) {
    let mut text = String::from("{\"schema\":\"rtlab-windows/1\",\"bounds_ns\":[2000,5000]}\n");
    let mut sums = vec![vec![0u64; 3]; 2];
    let mut max = vec![0u64; 2];
    for i in 0..n {
        for (t, sum) in sums.iter_mut().enumerate() {
            let counts = [
                i as u64 % 7,
                (i as u64 * 3 + t as u64) % 11,
                (i % 97 == 0) as u64,
            ];
            let m = 1000 + (i as u64 * 7919 + t as u64) % 9000;
            for (s, c) in sum.iter_mut().zip(counts) {
                *s += c;
            }
            max[t] = max[t].max(m);
            let start = humantime::format_rfc3339_seconds(
                std::time::UNIX_EPOCH
                    + std::time::Duration::from_secs(1_800_000_000 + 60 * i as u64),
            );
            text.push_str(&format!(
                "{{\"start\":\"{start}\",\"seconds\":60.0,\"thread\":\"T{t}\",\"cpu\":{t},\"samples\":{},\"max_ns\":{m},\"counts\":[{},{},{}]}}\n",
                counts.iter().sum::<u64>(), counts[0], counts[1], counts[2]
            ));
        }
    }
    (text, sums, max)
}

#[test]
fn a_large_windows_file_sums_exactly_in_bounded_columns() {
    // Under emulation (.ci/run's boards) its size takes a minute: the
    // host's run of the same test is the one that counts.
    if std::env::var_os("RTLAB_TEST_EMULATED").is_some() {
        return;
    }
    // Ten windows per column at most: enough to merge, small enough for
    // the boards' unit tests under QEMU (100 000 took a minute there).
    let n = 10 * super::windows::MAX_COLUMNS + 7;
    let (text, sums, max) = big_windows(n);
    let run = super::parse_bytes(text.as_bytes(), Path::new("w.jsonl")).unwrap();
    assert_eq!(run.threads.len(), 2);
    for (t, thread) in run.threads.iter().enumerate() {
        assert_eq!(thread.stats.samples, sums[t].iter().sum::<u64>());
        assert_eq!(thread.stats.beyond_histogram, Some(sums[t][2]));
        assert_eq!(thread.stats.max_ns, Some(max[t]));
        let w = thread.windows.as_ref().unwrap();
        assert!(
            w.windows.len() <= super::windows::MAX_COLUMNS,
            "{}",
            w.windows.len()
        );
        // The columns hold every sample, in time order, spanning the file.
        let mut col = vec![0u64; 3];
        for c in &w.windows {
            for (s, x) in col.iter_mut().zip(&c.2) {
                *s += x;
            }
        }
        assert_eq!(col, sums[t]);
        assert!(w.windows.windows(2).all(|p| p[0].1 <= p[1].0));
        assert_eq!(w.windows.last().unwrap().1, 60.0 * n as f64);
    }
    assert!(run.details.warnings[0].contains("windows per column"));
    // FILE@N: the N-th window of each thread alone.
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "w.jsonl", &text);
    for k in [1usize, 2, n / 2, n] {
        let one = load(&dir.path().join(format!("w.jsonl@{k}"))).unwrap();
        let i = k - 1;
        let expect = i % 7 + (i * 3) % 11 + (i % 97 == 0) as usize;
        assert_eq!(one.threads[0].stats.samples, expect as u64, "@{k}");
        assert_eq!(
            one.threads[0].stats.max_ns,
            Some(1000 + (i as u64 * 7919) % 9000)
        );
    }
    assert!(load(&dir.path().join(format!("w.jsonl@{}", n + 1))).is_err());
    drop(path);
}

#[test]
fn a_windows_file_is_known_by_its_parsed_header() {
    // As Python's json module writes it: spaces after colons and commas.
    let spaced = "{\"schema\": \"rtlab-windows/1\", \"bounds_ns\": [2000, 5000]}\n\
        {\"start\": \"2026-11-22T05:00:00Z\", \"seconds\": 60.0, \"thread\": \"T0\", \"cpu\": 1, \"samples\": 3, \"max_ns\": 4000, \"counts\": [1, 1, 1]}\n";
    let run = super::parse_bytes(spaced.as_bytes(), Path::new("w.jsonl")).unwrap();
    assert_eq!(run.format, Format::RtlabWindows);
    assert_eq!(run.threads[0].stats.samples, 3);
    // A line too long is refused at its line, never read into a value.
    let long = format!(
        "{}{{\"start\":\"{}\"}}\n",
        spaced,
        "x".repeat(crate::monitor::windows::MAX_LINE)
    );
    let e = super::parse_bytes(long.as_bytes(), Path::new("w.jsonl")).unwrap_err();
    assert_eq!(e.line, 3, "{e:?}");
    assert!(e.message.contains("longer than"), "{e:?}");
    // Bounds that are not increasing, or too many, are refused.
    for bounds in [
        "[5000,2000]",
        "[]",
        &format!(
            "[{}]",
            (1..400)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ),
    ] {
        let text = format!("{{\"schema\":\"rtlab-windows/1\",\"bounds_ns\":{bounds}}}\n");
        assert!(
            super::parse_bytes(text.as_bytes(), Path::new("w.jsonl")).is_err(),
            "{bounds}"
        );
    }
}

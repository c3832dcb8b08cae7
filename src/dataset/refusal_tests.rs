//! Files that are not runs, cut short, or whose figures cannot be:
//! refused with a place and a hint, never a panic.

use super::tests::*;
use super::*;

#[test]
fn bad_files_are_refused_with_a_place_and_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("cut.json", "{\"rtlab_version\": \"0.1\", \"schema\": ", 1),
        ("junk.txt", "hello\nworld\n", 1),
        (
            "bad.txt",
            "       0        0\n       1       x1\n\n# Index    TID  Samples  L_min  L_max  L_avg  Samples_H\n#  0 1 1 1 1 1 1\n",
            2,
        ),
    ];
    for (name, text, line) in cases {
        let e = load(&write(&dir, name, text)).unwrap_err();
        assert_eq!(e.line, line, "{name}: {e}");
        assert!(!e.hint.is_empty());
        assert!(
            e.to_string().starts_with(&format!("{}:{line}:", e.path)),
            "{e}"
        );
    }
    let e = load(&dir.path().join("missing.json")).unwrap_err();
    assert!(e.message.contains("cannot read"));
    assert!(
        e.to_string()
            .starts_with(&format!("{}: cannot read", e.path)),
        "{e}"
    );
    let mut doc: serde_json::Value = serde_json::from_str(&rtlab_doc(&[])).unwrap();
    doc["schema"] = "rtlab-result/9".into();
    let e = load(&write(&dir, "new.json", &doc.to_string())).unwrap_err();
    assert!(e.message.contains("rtlab-result/9"), "{e}");
}

#[test]
fn a_cut_json_result_is_called_cut_at_a_1_based_place() {
    let dir = tempfile::tempdir().unwrap();
    let rtlab = include_str!("../../tests/seeds/rtlab-result.json");
    let cyclictest = include_str!("../../tests/seeds/cyclictest.json");
    // (seed, bytes kept, what the message calls it, line, column)
    let cases = [
        (
            rtlab,
            2,
            "truncated JSON result (rtlab's or cyclictest's)",
            2,
            1,
        ),
        (rtlab, 300, "truncated rtlab result", 0, 0),
        (rtlab, rtlab.len() / 2, "truncated rtlab result", 0, 0),
        (
            cyclictest,
            2,
            "truncated JSON result (rtlab's or cyclictest's)",
            2,
            1,
        ),
        (cyclictest, 200, "truncated cyclictest JSON file", 0, 0),
    ];
    for (seed, n, what, line, column) in cases {
        let cut = &seed[..seed.floor_char_boundary(n)];
        let e = load(&write(&dir, "cut.json", cut)).unwrap_err();
        assert!(e.message.starts_with(what), "{n}: {e}");
        assert!(e.hint.contains("cut short"), "{n}: {e}");
        assert!(e.line >= 1 && e.column >= 1, "{n}: {e}");
        if line > 0 {
            assert_eq!((e.line, e.column), (line, column), "{n}: {e}");
        }
        // The place is said once, as FILE:LINE:COL.
        assert!(!e.message.contains(" at line "), "{e}");
    }
    let e = load(&write(&dir, "other.json", "{\"a\": 1}")).unwrap_err();
    assert!(e.message.contains("neither an rtlab result"), "{e}");
    let e = load(&write(&dir, "bad.json", "{\"schema\": x}")).unwrap_err();
    assert!(
        e.message.starts_with("invalid JSON in this rtlab result"),
        "{e}"
    );
}

#[test]
fn huge_numbers_are_refused_as_implausible_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let max = u64::MAX;
    let huge = [
        format!(
            "# Histogram\n{max} {max}\t{max}\n1 {max}\t5\n# Min Latencies: {max} 1\n# Avg Latencies: {max} 1\n# Max Latencies: {max} {max}\n# Histogram Overflows: {max} {max}\n"
        ),
        format!(
            "{{\"thread\": {{\"0\": {{\"histogram\": {{\"{max}\": {max}, \"1\": {max}}}, \"cycles\": 3, \"min\": {max}, \"max\": {max}, \"avg\": 1e308}}}}, \"resolution_in_ns\": 0}}"
        ),
        format!(
            "{max} {max}\n1 {max}\n\n# Index TID Samples L_min L_max L_avg Samples_H L_avg_H L_med_H L_std_H L_mode_H\n#  0 1 {max} {max} {max} {max} 1 {max} 1 {max} 1\n"
        ),
    ];
    for (i, text) in huge.iter().enumerate() {
        let e = load(&write(&dir, &format!("huge{i}"), text)).unwrap_err();
        assert!(e.message.contains("implausible"), "{i}: {e:?}");
    }
    let mut doc: serde_json::Value =
        serde_json::from_str(&rtlab_doc(&[timer(0, &latencies(10, 1)).0])).unwrap();
    doc["timers"][0]["hdr_histogram"] = serde_json::json!([{"low_ns": max, "high_ns": max, "count": max}, {"low_ns": 1, "high_ns": 1, "count": max}]);
    doc["timers"][0]["series"] = serde_json::json!({"interval_ns": max, "intervals": [{"start_ns": max, "count": max, "min_ns": 0, "max_ns": max, "mean_ns": 1e300}]});
    let e = load(&write(&dir, "a.json", &doc.to_string())).unwrap_err();
    assert!(e.message.contains("implausible"), "{e:?}");
}

#[test]
fn impossible_figures_are_refused_with_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        // min above max
        (
            "# Histogram\n000005 3\n# Total: 000000003\n# Min Latencies: 00009\n# Avg Latencies: 00005\n# Max Latencies: 00005\n# Histogram Overflows: 00000\n",
            "min",
        ),
        // a mean outside [min, max] (cyclictest's own Avg, histogram overflowed)
        (
            "# Histogram\n000005 3\n# Total: 000000003\n# Min Latencies: 00005\n# Avg Latencies: 00900\n# Max Latencies: 00200\n# Histogram Overflows: 00001\n",
            "mean",
        ),
    ];
    for (i, (text, what)) in cases.iter().enumerate() {
        let e = load(&write(&dir, &format!("bad{i}"), text)).unwrap_err();
        assert!(
            e.message.contains("implausible") && e.message.contains(what),
            "{i}: {e:?}"
        );
    }
}

/// A systress file whose summary or extra row was cut short is refused with
/// its place, never shown with `?` for the missing columns.
#[test]
fn systress_files_cut_short_are_refused() {
    let whole = include_str!("../../tests/golden/timer_thread00.txt");
    let dir = tempfile::tempdir().unwrap();
    assert!(load(&write(&dir, "whole.txt", whole)).is_ok());
    // The extra row loses its last columns.
    let row_at = whole.find("#      0    17.503").unwrap();
    let row_end = row_at + whole[row_at..].find('\n').unwrap();
    let cut_row = whole[..row_end].rsplit_once(' ').unwrap().0.to_string() + "\n";
    let e = load(&write(&dir, "row.txt", &cut_row))
        .unwrap_err()
        .to_string();
    assert!(e.contains("values for the 9 columns"), "{e}");
    // The file ends after the extra header, before its row.
    let at = whole.find("#  Index       p50").unwrap();
    let end = at + whole[at..].find('\n').unwrap() + 1;
    let e = load(&write(&dir, "head.txt", &whole[..end]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no row under its header"), "{e}");
    // The systress summary row itself cut in the middle.
    let summary = whole.find("#      0 13029").unwrap();
    let mid = summary + 30;
    let e = load(&write(&dir, "mid.txt", &whole[..mid]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("cut short"), "{e}");
}

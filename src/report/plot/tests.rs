use super::*;
use crate::dataset::tests::sample_runs;

/// The text elements of an SVG, trimmed.
fn texts(svg: &str) -> Vec<String> {
    svg.split("</text>")
        .filter_map(|chunk| chunk.rsplit_once('>').map(|(_, t)| t.trim().to_string()))
        .filter(|t| !t.is_empty())
        .collect()
}

fn hex(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

#[test]
fn svg_has_every_panel_curve_legend_and_caption() {
    let dir = tempfile::tempdir().unwrap();
    let runs = sample_runs(&dir);
    let svg = svg(&runs, &PlotOptions::default()).unwrap();
    assert!(svg.starts_with("<svg") || svg.contains("<svg"));
    for text in [
        "Timer wake-up latency",
        "Latency histogram",
        "Percentile curve",
        "Latency over time",
        "latency (µs)",
        "samples",
        "quantile",
        "time since the start (s)",
        "idle: max",
        "loaded T0: max",
        "loaded T1: max",
        "old T0: max",
        "old T1: max 12.0 µs (1 beyond the histogram, not drawn)",
        "idle: rtlab JSON, board, Linux 6.18.0-rt, PREEMPT_RT",
        "old: cyclictest histogram, 2001 samples",
        "99.9%",
    ] {
        assert!(
            svg.contains(&crate::report::html::escape(text)) || svg.contains(text),
            "{text:?} missing"
        );
    }
    // One colour per curve, in order: 5 curves.
    for n in 0..5 {
        assert!(svg.contains(&hex(colour(n))), "colour {n} missing");
    }
    assert!(!svg.contains(&hex(colour(5))));
}

#[test]
fn panels_can_be_chosen_and_say_when_they_have_no_data() {
    let dir = tempfile::tempdir().unwrap();
    let runs = sample_runs(&dir);
    let only = PlotOptions {
        panels: vec![Panel::Histogram],
        ..PlotOptions::default()
    };
    let svg1 = svg(&runs, &only).unwrap();
    assert!(svg1.contains("Latency histogram"));
    assert!(!svg1.contains("Percentile curve") && !svg1.contains("Latency over time"));
    // cyclictest runs have no time series.
    let timeline = panel_svg(
        &runs[2..],
        Panel::Timeline,
        (800, 400),
        &PlotOptions::default(),
    )
    .unwrap();
    assert!(timeline.contains("no time series in these inputs"));
    let empty = panel_svg(&[], Panel::Histogram, (800, 400), &PlotOptions::default()).unwrap();
    assert!(empty.contains("no histogram in these inputs"));
}

#[test]
fn png_is_drawn_with_every_curve_colour() {
    // Under emulation (.ci/run's boards) its size takes a minute: the
    // host's run of the same test is the one that counts.
    if std::env::var_os("RTLAB_TEST_EMULATED").is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let runs = sample_runs(&dir);
    let out = dir.path().join("fig.png");
    std::fs::write(&out, png(&runs, &PlotOptions::default()).unwrap()).unwrap();
    let img = image::open(&out).unwrap().to_rgb8();
    assert_eq!(img.dimensions(), (1200, 1500));
    for n in 0..5 {
        let c = colour(n);
        let seen = img.pixels().filter(|p| p.0 == [c.0, c.1, c.2]).count();
        assert!(seen > 50, "colour {n}: {seen} pixels");
    }
    // Text was drawn too: black pixels in the title band.
    let dark = (0..1200)
        .flat_map(|x| (0..40).map(move |y| (x, y)))
        .filter(|&(x, y)| img.get_pixel(x, y).0.iter().all(|v| *v < 80))
        .count();
    assert!(dark > 100, "title not drawn ({dark} dark pixels)");
}

#[test]
fn max_latency_cuts_the_axes() {
    let dir = tempfile::tempdir().unwrap();
    let runs = sample_runs(&dir);
    // The percentile panel: its only numbers are latencies (µs).
    let tail = PlotOptions {
        panels: vec![Panel::Percentiles],
        ..PlotOptions::default()
    };
    let full = svg(&runs, &tail).unwrap();
    let cut = svg(
        &runs,
        &PlotOptions {
            max_latency_us: Some(50.0),
            ..tail
        },
    )
    .unwrap();
    let top = |svg: &str| {
        texts(svg)
            .iter()
            .filter_map(|t| t.parse::<f64>().ok())
            .fold(0.0, f64::max)
    };
    assert!(
        top(&full) >= 5000.0,
        "the full axes reach the tail: {}",
        top(&full)
    );
    assert!(top(&cut) <= 100.0, "cut at 50 µs: {}", top(&cut));
}

#[test]
fn quantile_labels_read_as_percentages() {
    assert_eq!(nines_label(&0.0), "0%");
    assert_eq!(nines_label(&1.0), "90%");
    assert_eq!(nines_label(&2.0), "99%");
    assert_eq!(nines_label(&3.0), "99.9%");
    assert_eq!(nines_label(&5.0), "99.999%");
    assert_eq!(number_label(&500.0), "500");
    assert_eq!(number_label(&2.5), "2.5");
}

/// One stall 100 times the body: by default the histogram shows the body,
/// counts the samples past its axis in the legend and marks them;
/// `full_range` draws everything.
#[test]
fn the_histogram_shows_the_body_and_counts_what_is_past_its_axis() {
    // 9999 samples from 10 to 30 µs and one stall at 3000 µs, as cyclictest
    // would write them (-h 4000).
    let mut text = String::from("# Histogram\n");
    for us in 10..30 {
        text.push_str(&format!(
            "{us:06} {:06}\n",
            if us == 10 { 9999 - 19 * 500 } else { 500 }
        ));
    }
    text.push_str("003000 000001\n# Total: 000010000\n# Min Latencies: 00010\n# Avg Latencies: 00019\n# Max Latencies: 03000\n# Histogram Overflows: 00000\n");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stall.hist");
    std::fs::write(&path, text).unwrap();
    let idle = &[crate::dataset::load(&path).unwrap()][..];
    let p999 = idle[0].threads[0]
        .stats
        .percentiles
        .iter()
        .find(|q| q.name == "p99.9")
        .and_then(|q| q.value_ns)
        .unwrap() as f64
        / 1000.0;
    let axis = (2.0 * p999).max(p999 + 10.0).ceil();
    let past: u64 = idle[0].threads[0]
        .histogram_us
        .iter()
        .filter(|b| b.0 as f64 > axis)
        .map(|b| b.1)
        .sum();
    assert!(past > 0, "the sample run has a tail past {axis} µs");
    let histogram_only = PlotOptions {
        panels: vec![Panel::Histogram],
        ..PlotOptions::default()
    };
    let top = |svg: &str| {
        texts(svg)
            .iter()
            .filter_map(|t| t.parse::<f64>().ok())
            // The count axis is labelled in powers of ten; the latency axis
            // reaches past them.
            .filter(|v| *v < 100_000.0 && (v.log10() - v.log10().round()).abs() > 1e-9)
            .fold(0.0, f64::max)
    };
    let body = svg(idle, &histogram_only).unwrap();
    let legend = format!("{past} past {axis:.0} µs");
    assert!(body.contains(&legend), "{legend:?} not in the legend");
    assert!(top(&body) <= axis * 1.1, "axis {axis}: {}", top(&body));
    let full = svg(
        idle,
        &PlotOptions {
            full_range: true,
            ..histogram_only
        },
    )
    .unwrap();
    assert!(!full.contains(" past "), "nothing is past the full axis");
    let max = idle[0].threads[0].stats.max_ns.unwrap() as f64 / 1000.0;
    assert!(
        top(&full) >= max * 0.9,
        "full axis reaches {max}: {}",
        top(&full)
    );
}

#[test]
fn step_lines_rise_from_the_floor_for_each_run_of_buckets() {
    let f = 0.5;
    let segs = step_segments(&[(1, 5), (2, 3), (5, 1), (40, 9)], 10.0, f);
    assert_eq!(
        segs,
        vec![
            vec![
                (1.0, f),
                (1.0, 5.0),
                (2.0, 5.0),
                (2.0, 3.0),
                (3.0, 3.0),
                (3.0, f)
            ],
            vec![(5.0, f), (5.0, 1.0), (6.0, 1.0), (6.0, f)],
        ],
        "the bucket past the axis is left out"
    );
}

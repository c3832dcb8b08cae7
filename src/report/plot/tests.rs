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
    let timeline = panel_svg(&runs[2..], Panel::Timeline, (800, 400)).unwrap();
    assert!(timeline.contains("no time series in these inputs"));
    let empty = panel_svg(&[], Panel::Histogram, (800, 400)).unwrap();
    assert!(empty.contains("no histogram in these inputs"));
}

#[test]
fn png_is_drawn_with_every_curve_colour() {
    let dir = tempfile::tempdir().unwrap();
    let runs = sample_runs(&dir);
    let out = dir.path().join("fig.png");
    png(&runs, &PlotOptions::default(), &out).unwrap();
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

//! Pictures of runs, drawn by rtlab (plotters, with an embedded DejaVu Sans
//! so text renders the same everywhere): overlaid latency histograms on a
//! log count axis, the percentile curve (latency against 1 − quantile on a
//! log axis, which shows the tail), and latency over time. One colour and
//! one legend entry per run and thread; the caption names each run's
//! machine, kernel and preemption model. The noise threads' panels (their
//! gaps by length, their noise period by period) are in `plot/noise.rs`.

use crate::dataset::{Run, Thread};
use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::coord::ranged1d::Ranged;
use plotters::prelude::*;
use std::sync::Once;

/// The font, embedded so that PNGs have text on machines without fonts.
static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
const FAMILY: &str = "sans-serif";

/// Tableau 10: distinct, colour-blind friendly enough, readable on white.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

/// The colour of the n-th curve (runs and threads in order).
pub fn colour(n: usize) -> RGBColor {
    PALETTE[n % PALETTE.len()]
}

/// One part of the picture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Panel {
    /// Overlaid histograms, log count axis.
    Histogram,
    /// Latency against 1 − quantile (log axis).
    Percentiles,
    /// Max and mean latency per interval over the run.
    Timeline,
    /// A monitoring run's histograms window by window, stacked along time,
    /// with the max per window (OSADL's long-term plot).
    Windows,
    /// Noise threads: every gap between two clock reads, by length (log
    /// scales both ways).
    NoiseGaps,
    /// Noise threads: the noise of each period and its largest gap, over
    /// the run.
    NoisePeriods,
}

impl Panel {
    /// Every latency panel of runs, in drawing order.
    pub const ALL: [Panel; 3] = [Panel::Histogram, Panel::Percentiles, Panel::Timeline];

    /// The noise threads' panels, in drawing order.
    pub const NOISE: [Panel; 2] = [Panel::NoiseGaps, Panel::NoisePeriods];

    /// The panels for `runs` by default: a windows file's histograms along
    /// time first, where one is given; the noise panels after the latency
    /// ones where a run has noise threads, alone when no run has a latency
    /// to draw.
    pub fn default_for(runs: &[Run]) -> Vec<Panel> {
        let windows = runs
            .iter()
            .flat_map(|r| &r.threads)
            .any(|t| t.windows.is_some());
        let noise = runs.iter().any(|r| !r.noise.is_empty());
        let latency = runs.iter().any(|r| !r.threads.is_empty());
        let mut panels = if noise && !latency {
            Vec::new()
        } else if windows {
            vec![Panel::Windows, Panel::Histogram, Panel::Percentiles]
        } else {
            Panel::ALL.to_vec()
        };
        if noise {
            panels.extend(Panel::NOISE);
        }
        panels
    }

    /// Whether it draws noise threads (not latencies).
    pub fn is_noise(self) -> bool {
        Panel::NOISE.contains(&self)
    }

    fn title(self) -> &'static str {
        match self {
            Panel::Histogram => "Latency histogram (samples per 1 µs, log scale)",
            Panel::Percentiles => "Percentile curve: latency reached by each fraction of wake-ups",
            Panel::Timeline => "Latency over time: max per interval (dark), mean (light)",
            Panel::Windows => {
                "Histograms along time: each window's share of samples per bucket (darker: more), max per window (line)"
            }
            Panel::NoiseGaps => noise::GAPS_TITLE,
            Panel::NoisePeriods => noise::PERIODS_TITLE,
        }
    }

    /// Its height relative to the others.
    fn weight(self) -> u32 {
        match self {
            Panel::Histogram => 5,
            _ => 4,
        }
    }
}

/// What to draw.
#[derive(Debug, Clone)]
pub struct PlotOptions {
    /// Panels, top to bottom.
    pub panels: Vec<Panel>,
    /// Cut the latency axes at this value (µs).
    pub max_latency_us: Option<f64>,
    /// Draw the histogram up to the largest latency, however far it is;
    /// by default it shows the body of the distribution (see
    /// [`histogram_range`]).
    pub full_range: bool,
    /// The picture's title.
    pub title: String,
    /// Size in pixels.
    pub size: (u32, u32),
}

impl Default for PlotOptions {
    fn default() -> Self {
        PlotOptions {
            panels: Panel::ALL.to_vec(),
            max_latency_us: None,
            full_range: false,
            title: "Timer wake-up latency".to_string(),
            size: (1200, 1500),
        }
    }
}

/// A curve: a thread of a run, with its legend and colour.
struct Curve<'a> {
    label: String,
    thread: &'a Thread,
    colour: RGBColor,
}

fn curves(runs: &[Run]) -> Vec<Curve<'_>> {
    let mut out = Vec::new();
    for run in runs {
        for t in &run.threads {
            let label = crate::text::one_line(&if run.threads.len() == 1 {
                run.label.clone()
            } else {
                format!("{} {}", run.label, t.name)
            })
            .into_owned();
            out.push(Curve {
                label,
                thread: t,
                colour: colour(out.len()),
            });
        }
    }
    out
}

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The font is ours and known to parse; a failure would only leave
        // text undrawn, never stop the plot.
        let _ = plotters::style::register_font(FAMILY, FontStyle::Normal, FONT);
    });
}

/// A drawing failure, in words.
fn err<E: std::fmt::Display>(e: E) -> String {
    format!("cannot draw: {e}")
}

/// One line of the caption per run: where and how it was measured.
pub fn caption_line(run: &Run) -> String {
    let c = &run.context;
    let mut parts = vec![run.format.name().to_string()];
    parts.extend(c.host.clone());
    parts.extend(c.kernel.as_ref().map(|k| format!("Linux {k}")));
    parts.extend(c.preemption.clone());
    parts.extend(c.started.clone());
    parts.extend(c.duration_s.map(|d| format!("{d:.0} s")));
    if !run.threads.is_empty() || run.noise.is_empty() {
        parts.push(format!("{} samples", run.all.samples));
    }
    if !run.noise.is_empty() {
        parts.push(crate::text::counted(
            run.noise.len() as u64,
            "noise thread",
            "noise threads",
        ));
    }
    parts.extend(c.load.as_ref().map(|l| format!("load: {l}")));
    // Shown in pictures, scripts and pages: on one line, nothing active.
    crate::text::one_line(&format!("{}: {}", run.label, parts.join(", "))).into_owned()
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    runs: &[Run],
    opts: &PlotOptions,
) -> Result<(), String> {
    register_font();
    root.fill(&WHITE).map_err(err)?;
    let header = 44 + 20 * runs.len() as u32;
    let (top, body) = root.split_vertically(header);
    top.draw(&Text::new(
        crate::text::one_line(&opts.title).into_owned(),
        (16, 10),
        (FAMILY, 26).into_font().color(&BLACK),
    ))
    .map_err(err)?;
    for (i, run) in runs.iter().enumerate() {
        top.draw(&Text::new(
            caption_line(run),
            (16, 44 + 20 * i as i32),
            (FAMILY, 14).into_font().color(&RGBColor(0x44, 0x44, 0x44)),
        ))
        .map_err(err)?;
    }
    let curves = curves(runs);
    let total: u32 = opts.panels.iter().map(|p| p.weight()).sum::<u32>().max(1);
    let height = body.dim_in_pixel().1;
    let mut rest = body;
    for (i, panel) in opts.panels.iter().enumerate() {
        let area = if i + 1 == opts.panels.len() {
            rest.clone()
        } else {
            let (a, b) = rest.split_vertically(height * panel.weight() / total);
            rest = b;
            a
        };
        draw_panel(&area, *panel, runs, &curves, opts)?;
    }
    root.present().map_err(err)
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panel: Panel,
    runs: &[Run],
    curves: &[Curve],
    opts: &PlotOptions,
) -> Result<(), String> {
    let area = area.margin(8, 8, 16, 24);
    match panel {
        Panel::Histogram => histogram(&area, curves, opts),
        Panel::Percentiles => percentiles(&area, curves, opts),
        Panel::Timeline => timeline(&area, curves, opts),
        Panel::Windows => windows(&area, curves),
        Panel::NoiseGaps => noise::gaps(&area, runs),
        Panel::NoisePeriods => noise::periods(&area, runs),
    }
}

/// The house style of every panel's grid, labels and axis names.
fn styled<'m, 'a, 'b, X: Ranged, Y: Ranged, DB: DrawingBackend>(
    mesh: &'m mut MeshStyle<'a, 'b, X, Y, DB>,
) -> &'m mut MeshStyle<'a, 'b, X, Y, DB> {
    mesh.axis_desc_style((FAMILY, 15))
        .label_style((FAMILY, 13))
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
}

/// A curve's mark in a legend: a short thick line of its colour.
fn legend_mark(colour: RGBColor) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(3))
}

fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(0xaa, 0xaa, 0xaa))
        .label_font((FAMILY, 14))
        .draw()
        .map_err(err)
}

fn no_data<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panel: Panel,
    why: &str,
) -> Result<(), String> {
    area.draw(&Text::new(panel.title(), (10, 0), (FAMILY, 18).into_font()))
        .map_err(err)?;
    area.draw(&Text::new(
        why.to_string(),
        (10, 40),
        (FAMILY, 14).into_font().color(&RGBColor(0x66, 0x66, 0x66)),
    ))
    .map_err(err)
}

/// The latency axis of the histogram (µs), given the end of the last
/// non-empty bucket. `--max-latency` cuts it; `--full-range` keeps all of
/// it; by default it ends at twice the highest p99.9 of the curves (at
/// least 10 µs past it), so that one stall 1000 times the median does not
/// squeeze the body into a sliver at x=0. Samples past the axis are counted
/// in the legend and marked at its right edge. A curve whose p99.9 is
/// unknown (beyond a cyclictest histogram) keeps the whole range.
fn histogram_range(curves: &[Curve], last: u64, opts: &PlotOptions) -> f64 {
    let last = last as f64;
    let x_max = if let Some(m) = opts.max_latency_us {
        m.min(last)
    } else if opts.full_range {
        last
    } else {
        let body = curves
            .iter()
            .map(|c| {
                c.thread
                    .stats
                    .percentiles
                    .iter()
                    .find(|q| q.name == "p99.9")
                    .and_then(|q| q.value_ns)
                    .map(|ns| ns as f64 / 1000.0)
            })
            .try_fold(0.0f64, |acc, v| v.map(|v| acc.max(v)));
        body.map_or(last, |b| (2.0 * b).max(b + 10.0).ceil().min(last))
    };
    x_max.max(1.0)
}

fn histogram<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    curves: &[Curve],
    opts: &PlotOptions,
) -> Result<(), String> {
    let last = curves
        .iter()
        .filter_map(|c| c.thread.histogram_us.last().map(|b| b.0 + 1))
        .max();
    let Some(last) = last else {
        return no_data(area, Panel::Histogram, "no histogram in these inputs");
    };
    let x_max = histogram_range(curves, last, opts);
    let top = curves
        .iter()
        .flat_map(|c| c.thread.histogram_us.iter().map(|b| b.1))
        .max()
        .unwrap_or(1) as f64;
    let floor = 0.5;
    let mut chart = ChartBuilder::on(area)
        .caption(Panel::Histogram.title(), (FAMILY, 18))
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..x_max * 1.02, (floor..top * 3.0).log_scale())
        .map_err(err)?;
    styled(
        chart
            .configure_mesh()
            .x_desc("latency (µs)")
            .y_desc("samples")
            .x_label_formatter(&number_label)
            .y_label_formatter(&number_label),
    )
    .draw()
    .map_err(err)?;
    for c in curves {
        let segments = step_segments(&c.thread.histogram_us, x_max, floor);
        let mut label = histogram_label(c);
        let past_axis = c
            .thread
            .histogram_us
            .iter()
            .filter(|b| b.0 as f64 > x_max)
            .fold(0u64, |a, b| a.saturating_add(b.1));
        let colour = c.colour;
        if past_axis > 0 {
            label.push_str(&format!(", {past_axis} past {x_max:.0} µs ▸"));
            // A mark at the right edge, at the height of that count.
            chart
                .draw_series(std::iter::once(TriangleMarker::new(
                    (x_max * 1.01, (past_axis as f64).max(floor * 1.5)),
                    6,
                    colour.filled(),
                )))
                .map_err(err)?;
        }
        chart
            .draw_series(
                segments
                    .into_iter()
                    .map(|seg| PathElement::new(seg, colour.stroke_width(2))),
            )
            .map_err(err)?
            .label(label)
            .legend(legend_mark(colour));
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)
}

/// One step line per run of consecutive non-empty buckets up to `x_max`,
/// each rising from `floor` and falling back to it, so that lone outliers
/// stand out as spikes and gaps stay empty.
fn step_segments(buckets: &[(u64, u64)], x_max: f64, floor: f64) -> Vec<Vec<(f64, f64)>> {
    let mut segments: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut prev: Option<u64> = None;
    for &(us, count) in buckets {
        if us as f64 > x_max {
            break;
        }
        if prev.is_none_or(|p| p + 1 != us) {
            if let (Some(p), Some(seg)) = (prev, segments.last_mut()) {
                seg.push(((p + 1) as f64, floor));
            }
            segments.push(vec![(us as f64, floor)]);
        }
        if let Some(seg) = segments.last_mut() {
            seg.push((us as f64, count as f64));
            seg.push(((us + 1) as f64, count as f64));
        }
        prev = Some(us);
    }
    if let (Some(p), Some(seg)) = (prev, segments.last_mut()) {
        seg.push(((p + 1) as f64, floor));
    }
    segments
}

/// A curve's legend: its max, and the samples beyond the histogram.
fn histogram_label(c: &Curve) -> String {
    let s = &c.thread.stats;
    let mut label = format!(
        "{}: max {} µs",
        c.label,
        s.max_ns
            .map_or("?".into(), |m| format!("{:.1}", m as f64 / 1000.0))
    );
    if let Some(b) = s.beyond_histogram.filter(|b| *b > 0)
        && c.thread
            .histogram_us
            .iter()
            .fold(0u64, |a, b| a.saturating_add(b.1))
            < s.samples
    {
        label.push_str(&format!(" ({b} beyond the histogram, not drawn)"));
    }
    label
}

/// An axis number without a useless decimal (500, 2.5, 10000).
fn number_label(v: &f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A quantile on the curve's axis, as a percentage (2 → "99%").
fn nines_label(x: &f64) -> String {
    let pct = 100.0 * (1.0 - 10f64.powf(-*x));
    let digits = (x.round() as i64 - 2).clamp(0, 8) as usize;
    format!("{pct:.digits$}%")
}

fn percentiles<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    curves: &[Curve],
    opts: &PlotOptions,
) -> Result<(), String> {
    let lines: Vec<Vec<(f64, f64)>> = curves
        .iter()
        .map(|c| {
            c.thread
                .percentile_curve()
                .into_iter()
                .map(|(x, ns)| (x, ns as f64 / 1000.0))
                .collect()
        })
        .collect();
    let x_max = lines.iter().flatten().map(|p| p.0).fold(0.0, f64::max);
    let y_top = lines.iter().flatten().map(|p| p.1).fold(0.0, f64::max);
    if lines.iter().all(Vec::is_empty) {
        return no_data(area, Panel::Percentiles, "no samples in these inputs");
    }
    let y_max = opts.max_latency_us.map_or(y_top, |m| m.min(y_top)).max(1.0);
    // Log latency too: the body (µs) and the tail (ms) both stay readable.
    let y_min = lines
        .iter()
        .flatten()
        .map(|p| p.1)
        .filter(|v| *v > 0.0)
        .fold(y_max, f64::min)
        .min(y_max)
        / 1.5;
    let x_max = x_max.ceil().max(1.0);
    let mut chart = ChartBuilder::on(area)
        .caption(Panel::Percentiles.title(), (FAMILY, 18))
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..x_max, (y_min.max(0.01)..y_max * 1.5).log_scale())
        .map_err(err)?;
    styled(
        chart
            .configure_mesh()
            .x_desc("quantile (log scale of 1 − quantile: each step is one more nine)")
            .y_desc("latency (µs, log scale)")
            .y_label_formatter(&number_label)
            .x_labels(x_max.min(30.0) as usize + 1)
            .x_label_formatter(&nines_label),
    )
    .draw()
    .map_err(err)?;
    for (c, line) in curves.iter().zip(lines) {
        let colour = c.colour;
        // Steps: a latency holds until the next bucket's quantile.
        let mut path = Vec::with_capacity(line.len() * 2);
        for w in line.windows(2) {
            path.push(w[0]);
            path.push((w[1].0, w[0].1));
        }
        path.extend(line.last());
        // A zero latency has no place on a log axis: it sits on the floor.
        for p in &mut path {
            p.1 = p.1.max(y_min.max(0.01));
        }
        chart
            .draw_series(LineSeries::new(path, colour.stroke_width(2)))
            .map_err(err)?
            .label(c.label.clone())
            .legend(legend_mark(colour));
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)
}

fn timeline<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    curves: &[Curve],
    opts: &PlotOptions,
) -> Result<(), String> {
    let with: Vec<&Curve> = curves
        .iter()
        .filter(|c| {
            c.thread
                .series
                .as_ref()
                .is_some_and(|s| !s.intervals.is_empty())
        })
        .collect();
    if with.is_empty() {
        return no_data(
            area,
            Panel::Timeline,
            "no time series in these inputs (only rtlab JSON results have one)",
        );
    }
    let series = |c: &Curve| c.thread.series.clone().unwrap_or_default();
    let x_max = with
        .iter()
        .map(|c| {
            let s = series(c);
            s.intervals.last().map_or(0.0, |i| {
                i.start_ns.saturating_add(s.interval_ns) as f64 / 1e9
            })
        })
        .fold(0.0, f64::max);
    let y_top = with
        .iter()
        .flat_map(|c| series(c).intervals)
        .map(|i| i.max_ns as f64 / 1000.0)
        .fold(0.0, f64::max);
    let y_max = opts.max_latency_us.map_or(y_top, |m| m.min(y_top)).max(1.0);
    let mut chart = ChartBuilder::on(area)
        .caption(Panel::Timeline.title(), (FAMILY, 18))
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..x_max.max(0.1), 0f64..y_max * 1.05)
        .map_err(err)?;
    styled(
        chart
            .configure_mesh()
            .x_desc("time since the start (s)")
            .y_desc("latency (µs)")
            .y_label_formatter(&number_label),
    )
    .draw()
    .map_err(err)?;
    for c in with {
        let s = series(c);
        let mid = |i: &crate::stats::series::Interval| {
            (i.start_ns as f64 + s.interval_ns as f64 / 2.0) / 1e9
        };
        let colour = c.colour;
        chart
            .draw_series(LineSeries::new(
                s.intervals.iter().map(|i| (mid(i), i.mean_ns / 1000.0)),
                colour.mix(0.45).stroke_width(1),
            ))
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new(
                s.intervals
                    .iter()
                    .map(|i| (mid(i), i.max_ns as f64 / 1000.0)),
                colour.stroke_width(2),
            ))
            .map_err(err)?
            .label(format!(
                "{} (intervals of {})",
                c.label,
                humantime::format_duration(std::time::Duration::from_nanos(s.interval_ns))
            ))
            .legend(legend_mark(colour));
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)
}

/// The first thread with windows: each window a column, each bucket a
/// cell shaded by its share of the window's samples (log scale), and the
/// window's max as a line.
fn windows<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    curves: &[Curve],
) -> Result<(), String> {
    let Some((c, w)) = curves.iter().find_map(|c| {
        Some((
            c,
            c.thread
                .windows
                .as_ref()
                .filter(|w| !w.windows.is_empty())?,
        ))
    }) else {
        return no_data(
            area,
            Panel::Windows,
            "no windows in these inputs (only rtlab monitor's windows file has them)",
        );
    };
    let span = w.windows.iter().map(|x| x.1).fold(0.0, f64::max);
    let (unit, per) = time_unit(span);
    let hours = |s: f64| s / per;
    let x_max = hours(span).max(1e-3);
    // Bucket edges in µs, log10; the last bucket is drawn one decade high.
    let edge = |i: usize| -> f64 {
        let us = |ns: u64| (ns as f64 / 1000.0).max(0.1).log10();
        match i {
            0 => us(w.bounds_ns.first().copied().unwrap_or(1000) / 2),
            i if i <= w.bounds_ns.len() => us(w.bounds_ns[i - 1]),
            _ => us(w.bounds_ns.last().copied().unwrap_or(1000)) + 1.0,
        }
    };
    let y_max = edge(w.bounds_ns.len() + 1);
    let mut chart = ChartBuilder::on(area)
        .caption(Panel::Windows.title(), (FAMILY, 18))
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..x_max, edge(0)..y_max)
        .map_err(err)?;
    styled(
        chart
            .configure_mesh()
            .x_desc(format!("{unit} since the first window ({})", c.label))
            .y_desc("latency (µs, log scale)")
            .y_label_formatter(&|v: &f64| number_label(&10f64.powf(*v))),
    )
    .draw()
    .map_err(err)?;
    let cells = window_cells(&w.windows, &hours, &edge);
    chart.draw_series(cells).map_err(err)?;
    chart
        .draw_series(LineSeries::new(
            w.windows.iter().filter_map(|(from, to, _, max)| {
                Some((
                    hours((from + to) / 2.0),
                    (max.map(|m| m as f64 / 1000.0)?).max(0.1).log10(),
                ))
            }),
            BLACK.stroke_width(2),
        ))
        .map_err(err)?
        .label("max per window")
        .legend(legend_mark(BLACK));
    legend(&mut chart, SeriesLabelPosition::UpperRight)
}

/// The time axis in hours, minutes or seconds, as `span` (s) asks: its
/// name and seconds per unit.
fn time_unit(span: f64) -> (&'static str, f64) {
    if span >= 7200.0 {
        ("hours", 3600.0)
    } else if span >= 120.0 {
        ("minutes", 60.0)
    } else {
        ("seconds", 1.0)
    }
}

/// One rectangle per non-empty bucket of each window, darker for a larger
/// share of the window's samples (1e-6 .. 1 onto light .. dark).
fn window_cells(
    windows: &[(f64, f64, Vec<u64>, Option<u64>)],
    x: &dyn Fn(f64) -> f64,
    edge: &dyn Fn(usize) -> f64,
) -> Vec<Rectangle<(f64, f64)>> {
    let mut cells = Vec::new();
    for (from, to, counts, _) in windows {
        let total: u64 = counts.iter().sum();
        if total == 0 {
            continue;
        }
        for (i, &n) in counts.iter().enumerate().filter(|(_, n)| **n > 0) {
            let share = (n as f64 / total as f64).log10().clamp(-6.0, 0.0);
            let dark = 1.0 - (share + 6.0) / 6.0 * 0.85;
            let level = (255.0 * dark) as u8;
            cells.push(Rectangle::new(
                [(x(*from), edge(i)), (x(*to), edge(i + 1))],
                RGBColor(level, level, 255).filled(),
            ));
        }
    }
    cells
}

/// The picture as an SVG document.
pub fn svg(runs: &[Run], opts: &PlotOptions) -> Result<String, String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, opts.size).into_drawing_area();
        draw(root, runs, opts)?;
    }
    Ok(out)
}

/// The picture as a PNG file's bytes.
pub fn png(runs: &[Run], opts: &PlotOptions) -> Result<Vec<u8>, String> {
    use image::ImageEncoder as _;
    let (w, h) = opts.size;
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, opts.size).into_drawing_area();
        draw(root, runs, opts)?;
    }
    let mut bytes = Vec::new();
    image::codecs::png::PngEncoder::new(&mut bytes)
        .write_image(&rgb, w, h, image::ColorType::Rgb8)
        .map_err(|e| format!("cannot encode the PNG: {e}"))?;
    Ok(bytes)
}

/// One panel alone, as SVG (for the HTML report), with the latency range
/// options of `opts`.
pub fn panel_svg(
    runs: &[Run],
    panel: Panel,
    size: (u32, u32),
    opts: &PlotOptions,
) -> Result<String, String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        register_font();
        root.fill(&WHITE).map_err(err)?;
        draw_panel(&root, panel, runs, &curves(runs), opts)?;
        root.present().map_err(err)?;
    }
    Ok(out)
}

pub(crate) mod noise;

#[cfg(test)]
mod tests;

//! The noise threads' panels: every gap between two clock reads by length
//! (oslat's histogram, on log scales both ways), and each period's noise
//! and largest gap over the run (rtla osnoise's figures). One curve per
//! noise thread per run; the figures are the result's, only put in bins
//! of the picture's axis here.

use super::{FAMILY, Panel, err, legend, legend_mark, no_data, styled, time_unit};
use crate::dataset::{NoiseThread, Run};
use crate::report::noise::dur;
use plotters::coord::Shift;
use plotters::prelude::*;

/// The gaps panel's title.
pub(super) const GAPS_TITLE: &str =
    "Noise threads: every gap between two clock reads, by length (log scales, 10 bins per decade)";
/// The periods panel's title.
pub(super) const PERIODS_TITLE: &str =
    "Noise threads: noise per period (dark) and largest gap per period (light)";

/// Bins per decade of gap length.
const PER_DECADE: f64 = 10.0;

/// A noise thread of a run, with its legend and colour.
struct NoiseCurve<'a> {
    label: String,
    thread: &'a NoiseThread,
    colour: RGBColor,
    /// Where its run's time axis starts (CLOCK_MONOTONIC ns): the first
    /// period of any of the run's noise threads.
    origin_ns: u64,
}

fn curves(runs: &[Run]) -> Vec<NoiseCurve<'_>> {
    let mut out = Vec::new();
    for run in runs {
        let origin_ns = run
            .noise
            .iter()
            .flat_map(|t| t.periods.iter().map(|p| p.start_ns))
            .min()
            .unwrap_or(0);
        for t in &run.noise {
            let label = format!("{} {} (CPU {})", run.label, t.name, t.cpu);
            out.push(NoiseCurve {
                label: crate::text::one_line(&label).into_owned(),
                thread: t,
                colour: super::colour(out.len()),
                origin_ns,
            });
        }
    }
    out
}

/// The bin of a gap of `ns` (at least 1 ns: a log axis has no zero).
fn bin(ns: u64) -> i64 {
    ((ns.max(1) as f64).log10() * PER_DECADE).floor() as i64
}

/// The lower edge of bin `b` (ns).
pub(crate) fn edge(b: i64) -> f64 {
    10f64.powf(b as f64 / PER_DECADE)
}

/// A thread's gaps per bin of the axis: (bin, count), in order (bins of
/// [`edge`]: 10 per decade).
pub(crate) fn binned(t: &NoiseThread) -> Vec<(i64, f64)> {
    let mut out: Vec<(i64, f64)> = Vec::new();
    for &(low, _, count) in &t.gaps {
        let b = bin(low);
        match out.last_mut() {
            Some(last) if last.0 == b => last.1 += count as f64,
            _ => out.push((b, count as f64)),
        }
    }
    out.retain(|b| b.1 > 0.0);
    out
}

/// A gap length on the axis: `50 ns`, `2 µs`, `10 ms`.
fn length_label(v: &f64) -> String {
    let v = *v;
    let (x, unit) = if v >= 1e6 {
        (v / 1e6, "ms")
    } else if v >= 1e3 {
        (v / 1e3, "µs")
    } else {
        (v, "ns")
    };
    if (x - x.round()).abs() < 1e-6 {
        format!("{x:.0} {unit}")
    } else {
        format!("{x:.1} {unit}")
    }
}

/// The gaps panel: one step line per thread over its bins.
pub(super) fn gaps<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    runs: &[Run],
) -> Result<(), String> {
    let curves = curves(runs);
    let lines: Vec<Vec<(i64, f64)>> = curves.iter().map(|c| binned(c.thread)).collect();
    let first = lines.iter().filter_map(|l| l.first()).map(|b| b.0).min();
    let last = lines.iter().filter_map(|l| l.last()).map(|b| b.0).max();
    let (Some(first), Some(last)) = (first, last) else {
        return no_data(
            area,
            Panel::NoiseGaps,
            "no noise threads' gaps in these inputs (rtlab runs with noise_thread[N])",
        );
    };
    let top = lines.iter().flatten().map(|b| b.1).fold(1.0, f64::max);
    let floor = 0.5;
    let mut chart = ChartBuilder::on(area)
        .caption(GAPS_TITLE, (FAMILY, 18))
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (edge(first)..edge(last.saturating_add(1))).log_scale(),
            (floor..top * 3.0).log_scale(),
        )
        .map_err(err)?;
    styled(
        chart
            .configure_mesh()
            .x_desc("gap between two reads (log scale)")
            .y_desc("gaps per bin")
            .x_label_formatter(&length_label)
            .y_label_formatter(&super::number_label),
    )
    .draw()
    .map_err(err)?;
    for (c, line) in curves.iter().zip(lines) {
        let mut path = Vec::with_capacity(line.len() * 4);
        for (i, &(b, n)) in line.iter().enumerate() {
            if i == 0 || line[i - 1].0 + 1 != b {
                path.push((edge(b), floor));
            }
            path.push((edge(b), n));
            path.push((edge(b.saturating_add(1)), n));
            if line.get(i + 1).is_none_or(|next| next.0 != b + 1) {
                path.push((edge(b.saturating_add(1)), floor));
            }
        }
        let s = &c.thread.summary;
        let colour = c.colour;
        chart
            .draw_series(LineSeries::new(path, colour.stroke_width(2)))
            .map_err(err)?
            .label(format!(
                "{}: {} gaps, largest {}, {} ≥ {}",
                c.label,
                s.reads,
                dur(s.max_single_ns),
                s.gaps,
                dur(c.thread.threshold_ns)
            ))
            .legend(legend_mark(colour));
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)
}

/// A period's middle on its run's time axis (s).
fn middle(c: &NoiseCurve, start_ns: u64) -> f64 {
    (start_ns.saturating_sub(c.origin_ns) as f64 + c.thread.period_ns as f64 / 2.0) / 1e9
}

/// ns as µs.
fn micros(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// The periods panel's axes: the floor and top of its µs (a zero sits on
/// the floor of the log axis), and the time its last period's middle is at
/// (s).
fn period_axes(with: &[&NoiseCurve]) -> (f64, f64, f64) {
    let values = || {
        with.iter()
            .flat_map(|c| c.thread.periods.iter())
            .flat_map(|p| [micros(p.noise_ns), micros(p.max_gap_ns)])
    };
    let y_top = values().fold(1.0, f64::max);
    let y_floor = values()
        .filter(|v| *v > 0.0)
        .fold(y_top, f64::min)
        .max(0.001)
        / 2.0;
    let span = with
        .iter()
        .flat_map(|c| c.thread.periods.iter().map(|p| middle(c, p.start_ns)))
        .fold(0.0, f64::max);
    (y_floor, y_top, span)
}

/// The periods panel: each thread's noise per period (µs, log scale) and
/// the period's largest gap, over its run.
pub(super) fn periods<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    runs: &[Run],
) -> Result<(), String> {
    let curves = curves(runs);
    let with: Vec<&NoiseCurve> = curves
        .iter()
        .filter(|c| !c.thread.periods.is_empty())
        .collect();
    if with.is_empty() {
        return no_data(
            area,
            Panel::NoisePeriods,
            "no noise threads' periods in these inputs (rtlab runs with noise_thread[N])",
        );
    }
    let (y_floor, y_top, span) = period_axes(&with);
    let (unit, per) = time_unit(span);
    let mut chart = ChartBuilder::on(area)
        .caption(PERIODS_TITLE, (FAMILY, 18))
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(
            0f64..(span / per).max(1e-3) * 1.02,
            (y_floor..y_top * 2.0).log_scale(),
        )
        .map_err(err)?;
    styled(
        chart
            .configure_mesh()
            .x_desc(format!("{unit} since the first period"))
            .y_desc("µs per period (log scale)")
            .y_label_formatter(&super::number_label),
    )
    .draw()
    .map_err(err)?;
    for c in with {
        let colour = c.colour;
        let at = |p: &crate::stats::noise::NoisePeriod, v: u64| {
            (middle(c, p.start_ns) / per, micros(v).max(y_floor))
        };
        chart
            .draw_series(LineSeries::new(
                c.thread.periods.iter().map(|p| at(p, p.max_gap_ns)),
                colour.mix(0.45).stroke_width(1),
            ))
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new(
                c.thread.periods.iter().map(|p| at(p, p.noise_ns)),
                colour.stroke_width(2),
            ))
            .map_err(err)?
            .label(format!(
                "{}: {:.4}% of the CPU available, periods of {}",
                c.label,
                c.thread.summary.available_percent,
                dur(c.thread.period_ns)
            ))
            .legend(legend_mark(colour));
        // Few periods: each one marked, so that a line of two points
        // still reads as two periods.
        if c.thread.periods.len() <= MARKED {
            chart
                .draw_series(
                    c.thread
                        .periods
                        .iter()
                        .map(|p| Circle::new(at(p, p.noise_ns), 3, colour.filled())),
                )
                .map_err(err)?;
        }
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)
}

/// Up to this many periods, each is marked on its line.
const MARKED: usize = 120;

#[cfg(test)]
mod tests {
    use super::super::{PlotOptions, panel_svg, svg};
    use super::*;
    use crate::dataset::tests::{
        latencies, noise_result, rtlab_doc, rtlab_noise_doc, timer, write,
    };

    /// A run of timers alone, one of timers and noise threads, one of
    /// noise threads alone.
    fn runs(dir: &tempfile::TempDir) -> (Run, Run, Run) {
        let (t, _) = timer(0, &latencies(2_000, 3));
        let noise = [noise_result(0, 1), noise_result(1, 2)];
        let load = |name: &str, doc: String| crate::dataset::load(&write(dir, name, &doc)).unwrap();
        (
            load("timers.json", rtlab_doc(std::slice::from_ref(&t))),
            load(
                "both.json",
                rtlab_noise_doc(std::slice::from_ref(&t), &noise),
            ),
            load("noise.json", rtlab_noise_doc(&[], &noise[..1])),
        )
    }

    #[test]
    fn noise_panels_come_with_noise_threads_and_alone_without_latencies() {
        let dir = tempfile::tempdir().unwrap();
        let (timers, both, noise) = runs(&dir);
        let of = |runs: &[Run]| Panel::default_for(runs);
        assert_eq!(of(std::slice::from_ref(&timers)), Panel::ALL.to_vec());
        let mut all = Panel::ALL.to_vec();
        all.extend(Panel::NOISE);
        assert_eq!(of(std::slice::from_ref(&both)), all);
        assert_eq!(of(std::slice::from_ref(&noise)), Panel::NOISE.to_vec());
        // A run of timers beside a run of noise threads: both kinds.
        assert_eq!(of(&[timers, noise]), all);
        assert!(Panel::NOISE.iter().all(|p| p.is_noise()));
        assert!(!Panel::ALL.iter().any(|p| p.is_noise()));
    }

    #[test]
    fn the_picture_has_the_noise_panels_curves_and_legends() {
        let dir = tempfile::tempdir().unwrap();
        let (_, both, noise) = runs(&dir);
        let runs = [both, noise];
        let opts = PlotOptions {
            panels: Panel::default_for(&runs),
            ..PlotOptions::default()
        };
        let picture = svg(&runs, &opts).unwrap();
        for text in [
            GAPS_TITLE,
            PERIODS_TITLE,
            "both N0 (CPU 1): 1000070 gaps, largest 120.0 µs, 30 ≥ 5.0 µs",
            "both N1 (CPU 2)",
            "noise N0 (CPU 1): 99.9900% of the CPU available, periods of 2.00 s",
            "gap between two reads (log scale)",
            "seconds since the first period",
            "1 noise thread",
        ] {
            let escaped = crate::report::html::escape(text);
            assert!(
                picture.contains(text) || picture.contains(&escaped),
                "{text:?} missing"
            );
        }
        // Three noise curves, each in its colour.
        for n in 0..3 {
            let c = super::super::colour(n);
            let hex = format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
            assert!(picture.contains(&hex), "colour {n} missing");
        }
    }

    #[test]
    fn noise_panels_say_when_there_is_nothing_to_draw() {
        let dir = tempfile::tempdir().unwrap();
        let (timers, _, _) = runs(&dir);
        let opts = PlotOptions::default();
        for panel in Panel::NOISE {
            let one = panel_svg(std::slice::from_ref(&timers), panel, (800, 400), &opts).unwrap();
            assert!(one.contains("no noise threads"), "{panel:?}");
        }
    }

    #[test]
    fn hostile_figures_draw_without_panic() {
        let dir = tempfile::tempdir().unwrap();
        let (_, _, mut run) = runs(&dir);
        run.label = "<script>alert(1)</script>".into();
        let n = &mut run.noise[0];
        n.gaps = vec![(0, 0, u64::MAX), (u64::MAX, u64::MAX, u64::MAX)];
        n.periods[0].start_ns = u64::MAX;
        n.periods[1].noise_ns = u64::MAX;
        n.period_ns = u64::MAX;
        let opts = PlotOptions {
            panels: Panel::NOISE.to_vec(),
            ..PlotOptions::default()
        };
        let picture = svg(std::slice::from_ref(&run), &opts).unwrap();
        assert!(!picture.contains("<script>"));
        run.noise[0].gaps.clear();
        run.noise[0].periods.clear();
        let picture = svg(std::slice::from_ref(&run), &opts).unwrap();
        assert!(picture.contains("no noise threads"));
    }

    #[test]
    fn gaps_fall_in_ten_bins_per_decade() {
        assert_eq!(bin(0), 0);
        assert_eq!(bin(1), 0);
        assert_eq!(bin(10), 10);
        assert_eq!(bin(99), 19);
        assert_eq!(bin(100), 20);
        assert!((edge(30) - 1000.0).abs() < 1e-6);
        assert_eq!(length_label(&50.0), "50 ns");
        assert_eq!(length_label(&2000.0), "2 µs");
        assert_eq!(length_label(&2500.0), "2.5 µs");
        assert_eq!(length_label(&1e7), "10 ms");
    }
}

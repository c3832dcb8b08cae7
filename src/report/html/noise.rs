//! A run's noise threads in the report: their figures over the run (as
//! rtla osnoise totals them), their worst gaps with their time, and their
//! two plots (gaps by length, noise per period). Every figure is the
//! result's; every text from the file is escaped.

use super::{escape, list, table};
use crate::dataset::{NoiseThread, Run};
use crate::report::noise::dur;
use crate::report::plot::{self, Panel};
use std::fmt::Write as _;

/// Worst gaps shown per thread.
const WORST_SHOWN: usize = 10;

/// The noise section of `run`; nothing without noise threads.
pub(super) fn section(out: &mut String, i: usize, run: &Run) {
    if run.noise.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<h3 id=\"run-{i}-noise\">OS noise (noise threads)</h3>\n<p class=\"muted\">Each noise \
         thread reads its CPU's counter as fast as it can: a gap between two reads is time \
         something else took; a gap at least the threshold long is noise. % available: runtime \
         less noise over runtime.</p>"
    );
    summary(out, &run.noise);
    worst(out, &run.noise);
    let notes: Vec<String> = run.noise.iter().flat_map(notes).collect();
    if !notes.is_empty() {
        list(out, &notes, "");
    }
    causes(out, &run.noise);
    plots(out, std::slice::from_ref(run));
}

/// One row per thread: its figures over the run.
fn summary(out: &mut String, noise: &[NoiseThread]) {
    let mut head: Vec<String> = [
        "thread",
        "CPU",
        "counter",
        "runtime",
        "noise",
        "CPU available",
        "largest gap",
        "threshold",
        "gaps ≥ threshold",
        "gaps measured",
        "smallest gap",
        "mean gap",
    ]
    .map(String::from)
    .to_vec();
    // The percentiles of the first thread name the columns (every thread
    // of a run has the same).
    let names: Vec<String> = noise
        .first()
        .map(|n| {
            n.summary
                .percentiles
                .iter()
                .map(|p| p.name.clone())
                .collect()
        })
        .unwrap_or_default();
    head.extend(names.iter().map(|n| format!("{n} gap")));
    let rows: Vec<Vec<String>> = noise
        .iter()
        .map(|n| {
            let s = &n.summary;
            let mut row = vec![
                n.name.clone(),
                n.cpu.to_string(),
                n.counter.clone(),
                dur(s.runtime_ns),
                dur(s.noise_ns),
                format!("{:.4}%", s.available_percent),
                dur(s.max_single_ns),
                dur(n.threshold_ns),
                s.gaps.to_string(),
                s.reads.to_string(),
                dur(s.min_gap_ns),
                format!("{:.1} ns", s.mean_gap_ns),
            ];
            row.extend(names.iter().map(|name| {
                s.percentiles
                    .iter()
                    .find(|p| &p.name == name)
                    .map_or("?".into(), |p| dur(p.value_ns))
            }));
            row
        })
        .collect();
    table(out, "noise", &head, &rows);
}

/// Each thread's worst gaps, with their end on CLOCK_MONOTONIC (to find
/// them in a trace) and in seconds since the thread's first period.
fn worst(out: &mut String, noise: &[NoiseThread]) {
    if noise.iter().all(|n| n.worst.is_empty()) {
        return;
    }
    let _ = writeln!(
        out,
        "<p>The worst gaps of each thread (at most {WORST_SHOWN}), with their end on \
         CLOCK_MONOTONIC, to find them in a trace:</p>"
    );
    let head = [
        "thread",
        "CPU",
        "gap",
        "ended (s, CLOCK_MONOTONIC)",
        "ended (s since the first period)",
    ]
    .map(String::from);
    let rows: Vec<Vec<String>> = noise
        .iter()
        .flat_map(|n| {
            let first = n.periods.iter().map(|p| p.start_ns).min();
            n.worst.iter().take(WORST_SHOWN).map(move |g| {
                vec![
                    n.name.clone(),
                    n.cpu.to_string(),
                    dur(g.ns),
                    format!(
                        "{}.{:06}",
                        g.end_ns / 1_000_000_000,
                        g.end_ns / 1000 % 1_000_000
                    ),
                    first.map_or("?".into(), |f| {
                        format!("{:.6}", g.end_ns.saturating_sub(f) as f64 / 1e9)
                    }),
                ]
            })
        })
        .collect();
    table(out, "noise-worst", &head, &rows);
}

/// Culprit rows shown per thread.
const CULPRITS_SHOWN: usize = 15;

/// The causes of each thread's gaps (the trace's attribution): per class,
/// then the main culprits; what makes them lower bounds.
fn causes(out: &mut String, noise: &[NoiseThread]) {
    use crate::trace::noise::NoiseClass;
    let with: Vec<(&NoiseThread, &crate::trace::noise::NoiseAttribution)> = noise
        .iter()
        .filter_map(|n| Some((n, n.attribution.as_ref()?)))
        .collect();
    if with.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<p>Who took the time, from the kernel's tracepoints: each gap over the threshold          laid on its CPU's interruptions, net of those nested in them. A gap's class is its          main cause's; <code>hw</code>: no event covers any of it; unseen: time in the gaps          no event covers; <code>throttled</code>: lower-priority threads ran while the          real-time poller was runnable (RT throttling or the fair server).</p>"
    );
    let mut head = vec!["thread".to_string(), "gaps".into(), "unseen".into()];
    head.extend(NoiseClass::ALL.iter().map(|c| c.name().to_string()));
    let rows: Vec<Vec<String>> = with
        .iter()
        .map(|(n, a)| {
            let mut row = vec![n.name.clone(), a.gaps.to_string(), dur(a.unseen_ns)];
            row.extend(NoiseClass::ALL.iter().map(|&c| {
                let t = a.classes.get(c);
                format!("{} ({})", t.gaps, dur(t.net_ns))
            }));
            row
        })
        .collect();
    table(out, "noise-classes", &head, &rows);
    let head = [
        "thread",
        "class",
        "culprit",
        "PID",
        "main cause of",
        "net time",
    ]
    .map(String::from);
    let rows: Vec<Vec<String>> = with
        .iter()
        .flat_map(|(n, a)| {
            a.culprits.iter().take(CULPRITS_SHOWN).map(move |c| {
                let pid = match (c.pids, c.pid) {
                    (p, _) if p > 1 => format!("{p} PIDs"),
                    (_, Some(p)) => p.to_string(),
                    _ => "-".into(),
                };
                vec![
                    n.name.clone(),
                    c.class.name().to_string(),
                    c.name.clone(),
                    pid,
                    c.gaps.to_string(),
                    dur(c.net_ns),
                ]
            })
        })
        .collect();
    table(out, "noise-culprits", &head, &rows);
}

/// What the reader should know of a thread: an error, causes not named.
fn notes(n: &NoiseThread) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(e) = &n.error {
        out.push(format!("{}: {e}", n.name));
    }
    if let Some(why) = &n.attribution_unavailable {
        out.push(format!(
            "{}: the gaps' causes were not named ({why}); these are oslat's figures alone",
            n.name
        ));
    }
    out
}

/// The noise panels of `runs`, each a figure (or why it could not be
/// drawn).
pub(super) fn plots(out: &mut String, runs: &[Run]) {
    for panel in Panel::NOISE {
        match plot::panel_svg(runs, panel, (1200, 520), &plot::PlotOptions::default()) {
            Ok(svg) => {
                // The SVG document's XML declaration has no place in HTML.
                let body = svg.find("<svg").map_or(svg.as_str(), |at| &svg[at..]);
                let _ = writeln!(out, "<figure>\n{body}\n</figure>");
            }
            Err(e) => {
                let _ = writeln!(out, "<p class=\"muted\">{}</p>", escape(&e));
            }
        }
    }
}

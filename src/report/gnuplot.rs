//! `rtlab plot --gnuplot FILE`: a gnuplot script, like systress users'
//! `plot.show`, that draws every given run's histogram together on a log
//! count axis, one curve per run and thread (and, below it, the noise
//! threads' gaps by length, one curve per noise thread). The data are written into the
//! script as data blocks (gnuplot ≥ 5.0), so the script stands alone: it
//! can be mailed, kept beside the results, and edited.

use super::plot::caption_line;
use crate::dataset::Run;
use std::fmt::Write as _;

/// A gnuplot string that is only text: single quotes (gnuplot runs
/// `` `command` `` inside double quotes, never inside single ones), a quote
/// doubled, control characters shown escaped, on one line. Used with
/// `noenhanced`, so that `^ _ @ { }` are shown, not formatting.
fn quoted(s: &str) -> String {
    format!("'{}'", crate::text::one_line(s).replace('\'', "''"))
}

/// A comment line's text: on one line, and never ending in a backslash
/// (gnuplot would carry the comment on to the next line and swallow it).
fn comment(s: &str) -> String {
    let mut text = crate::text::one_line(s).into_owned();
    if text.ends_with('\\') {
        text.pop();
        text.push_str("\\x5c");
    }
    text
}

/// The sparse 1-µs buckets with a zero row at each edge of every gap, so
/// that `with steps` falls to nothing where there is no sample instead of
/// drawing the last count across the gap (on the log axis a zero is
/// undefined, which breaks the curve there).
fn with_zero_edges(buckets: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(buckets.len() * 2);
    for &(us, count) in buckets {
        if let Some(&(last, _)) = out.last()
            && us > last.saturating_add(1)
        {
            out.push((last + 1, 0));
            if us - 1 > last + 1 {
                out.push((us - 1, 0));
            }
        }
        out.push((us, count));
    }
    if let Some(&(last, _)) = out.last() {
        out.push((last.saturating_add(1), 0));
    }
    out
}

/// The noise threads' gaps as data blocks (bins of 10 per decade, as the
/// picture's; a blank line between runs of adjacent bins, so that `with
/// steps` draws nothing across empty bins): (name, legend) of each.
fn noise_blocks(out: &mut String, runs: &[Run]) -> Vec<(String, String)> {
    use super::plot::noise::{binned, edge};
    let mut blocks = Vec::new();
    for (r, run) in runs.iter().enumerate() {
        for (t, thread) in run.noise.iter().enumerate() {
            let bins = binned(thread);
            if bins.is_empty() {
                continue;
            }
            let name = format!("$run{r}_n{t}");
            let _ = writeln!(out, "\n{name} << EOD");
            for (i, &(b, n)) in bins.iter().enumerate() {
                let _ = writeln!(out, "{} {n}", edge(b));
                if bins.get(i + 1).is_none_or(|next| next.0 != b + 1) {
                    // The last bin of a run of adjacent ones: its step's end.
                    let _ = writeln!(out, "{} {n}\n", edge(b.saturating_add(1)));
                }
            }
            out.push_str("EOD\n");
            let s = &thread.summary;
            let legend = format!(
                "{} {} (CPU {}): {} gaps, largest {}",
                run.label,
                thread.name,
                thread.cpu,
                s.reads,
                super::noise::dur(s.max_single_ns).replace('µ', "u")
            );
            blocks.push((name, legend));
        }
    }
    blocks
}

/// The plot of the noise threads' gaps (log scales both ways).
fn noise_plot(out: &mut String, title: &str, blocks: &[(String, String)]) {
    let _ = writeln!(
        out,
        "unset label\n\
         set title {} noenhanced\n\
         set xlabel \"gap between two reads (ns, log scale; 10 bins per decade)\"\n\
         set ylabel \"gaps per bin\"\n\
         set logscale xy\n\
         set yrange [0.8:*]\n\
         set xrange [*:*]\n\
         set grid\n\
         set key top right",
        quoted(title)
    );
    out.push_str("plot ");
    for (i, (name, label)) in blocks.iter().enumerate() {
        if i > 0 {
            out.push_str(", \\\n     ");
        }
        let _ = write!(
            out,
            "{name} using 1:2 with steps linewidth 2 linecolor {} title {} noenhanced",
            i + 1,
            quoted(label)
        );
    }
    out.push('\n');
}

/// The script for `runs`: their latency histograms, and their noise
/// threads' gaps where they have some (below, or alone without a latency).
pub fn script(runs: &[Run], title: &str) -> String {
    let mut out = String::new();
    let what = if runs.iter().any(|r| !r.noise.is_empty()) {
        "latency histograms and noise threads' gaps"
    } else {
        "latency histograms"
    };
    let _ = writeln!(
        out,
        "# rtlab plot --gnuplot: {what} of {} run(s), log count axis.\n\
         # Show it:          gnuplot -p THIS_FILE\n\
         # Write a picture:  gnuplot -e \"out='latency.png'\" THIS_FILE   (or .svg)\n#",
        runs.len()
    );
    for run in runs {
        let line = format!("# {}  ({})", caption_line(run), run.path);
        let _ = writeln!(out, "{}", comment(&line));
    }
    let mut blocks = Vec::new();
    for (r, run) in runs.iter().enumerate() {
        for (t, thread) in run.threads.iter().enumerate() {
            let name = format!("$run{r}_t{t}");
            let _ = writeln!(out, "\n{name} << EOD");
            for (us, count) in with_zero_edges(&thread.histogram_us) {
                let _ = writeln!(out, "{us} {count}");
            }
            out.push_str("EOD\n");
            let label = if run.threads.len() == 1 {
                run.label.clone()
            } else {
                format!("{} {}", run.label, thread.name)
            };
            let max = thread
                .stats
                .max_ns
                .map_or("?".to_string(), |m| format!("{:.1}", m as f64 / 1000.0));
            blocks.push((name, format!("{label}: max {max} us")));
        }
    }
    let noise = noise_blocks(&mut out, runs);
    let latency = !blocks.is_empty() || noise.is_empty();
    let height = if latency && !noise.is_empty() {
        1400
    } else {
        700
    };
    let _ = writeln!(
        out,
        "\nif (exists(\"out\")) {{\n    \
             if (strstrt(out, \".svg\") > 0) {{ set terminal svg size 1200,{height} dynamic background rgb \"white\" }} \
             else {{ set terminal pngcairo size 1200,{height} }}\n    \
             set output out\n}}"
    );
    if !latency {
        noise_plot(&mut out, title, &noise);
        return out;
    }
    if !noise.is_empty() {
        out.push_str("set multiplot layout 2,1\n");
    }
    latency_plot(&mut out, title, &blocks);
    if !noise.is_empty() {
        noise_plot(
            &mut out,
            "Noise threads: every gap between two clock reads",
            &noise,
        );
        out.push_str("unset multiplot\n");
    }
    out
}

/// The plot of the latency histograms.
fn latency_plot(out: &mut String, title: &str, blocks: &[(String, String)]) {
    let _ = writeln!(
        out,
        "set title {} noenhanced\n\
         set xlabel \"latency (us)\"\n\
         set ylabel \"samples\"\n\
         set logscale y\n\
         set yrange [0.8:*]\n\
         set xrange [0:*]\n\
         set grid\n\
         set key top right",
        quoted(title)
    );
    if blocks.is_empty() {
        out.push_str("set label \"no histogram in these inputs\" at graph 0.5, graph 0.5 center\nplot 1/0 notitle\n");
        return;
    }
    out.push_str("plot ");
    for (i, (name, label)) in blocks.iter().enumerate() {
        if i > 0 {
            out.push_str(", \\\n     ");
        }
        // The steps draw the body; a point on every bucket that holds
        // samples keeps a lone sample visible between empty buckets.
        let _ = write!(
            out,
            "{name} using 1:2 with steps linewidth 2 linecolor {n} title {} noenhanced, \\\n     \
             {name} using 1:($2 > 0 ? $2 : 1/0) with points pointtype 7 pointsize 0.6 linecolor {n} notitle",
            quoted(label),
            n = i + 1
        );
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::{script, with_zero_edges};
    use crate::dataset::tests::{
        latencies, noise_result, rtlab_doc, rtlab_noise_doc, timer, write,
    };

    #[test]
    fn noise_threads_gaps_are_drawn_below_the_latency_or_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (t, _) = timer(0, &latencies(2_000, 3));
        let noise = [noise_result(0, 1)];
        let load =
            |name: &str, doc: String| crate::dataset::load(&write(&dir, name, &doc)).unwrap();
        let mut alone = load("alone.json", rtlab_noise_doc(&[], &noise));
        alone.label = "it's".into();
        let both = load(
            "both.json",
            rtlab_noise_doc(std::slice::from_ref(&t), &noise),
        );
        let timers = load("timers.json", rtlab_doc(std::slice::from_ref(&t)));
        let only = script(std::slice::from_ref(&alone), "noise");
        // Its bins: 20 ns and 30 ns are bins 13 and 14 (adjacent), 9 µs
        // and 120 µs alone; each run of bins ends its step.
        assert!(only.contains("$run0_n0 << EOD\n"), "{only}");
        assert!(
            only.contains("title 'it''s N0 (CPU 1): 1000070 gaps, largest 120.0 us' noenhanced")
        );
        assert!(only.contains("set logscale xy") && !only.contains("multiplot"));
        assert!(!only.contains("latency (us)") && !only.contains("no histogram"));
        assert!(only.contains("size 1200,700"));
        let mixed = script(&[both], "t");
        assert!(mixed.contains("set multiplot layout 2,1") && mixed.contains("unset multiplot"));
        assert!(mixed.contains("latency (us)") && mixed.contains("gaps per bin"));
        assert!(mixed.contains("size 1200,1400"));
        let plain = script(&[timers], "t");
        assert!(!plain.contains("gaps per bin") && !plain.contains("multiplot"));
        assert!(plain.contains("size 1200,700"));
    }

    #[test]
    fn gaps_fall_to_zero_and_adjacent_buckets_stay_joined() {
        assert_eq!(
            with_zero_edges(&[(10, 5), (11, 3), (244, 1), (246, 1)]),
            vec![
                (10, 5),
                (11, 3),
                (12, 0),
                (243, 0),
                (244, 1),
                (245, 0),
                (246, 1),
                (247, 0)
            ]
        );
        assert_eq!(with_zero_edges(&[]), vec![]);
    }
}

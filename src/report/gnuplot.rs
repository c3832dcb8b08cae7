//! `rtlab plot --gnuplot FILE`: a gnuplot script, like systress users'
//! `plot.show`, that draws every given run's histogram together on a log
//! count axis, one curve per run and thread. The data are written into the
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

/// The script for `runs`.
pub fn script(runs: &[Run], title: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# rtlab plot --gnuplot: latency histograms of {} run(s), log count axis.\n\
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
    let _ = writeln!(
        out,
        "\nif (exists(\"out\")) {{\n    \
             if (strstrt(out, \".svg\") > 0) {{ set terminal svg size 1200,700 dynamic background rgb \"white\" }} \
             else {{ set terminal pngcairo size 1200,700 }}\n    \
             set output out\n}}\n\
         set title {} noenhanced\n\
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
        return out;
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
    out
}

#[cfg(test)]
mod tests {
    use super::with_zero_edges;

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

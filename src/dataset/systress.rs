//! A systress-format result file (docs/result-schema.md): the 1-µs
//! histogram as `txt` rows or `csv` (`latency_us,count`), then `#` summary
//! lines; with rtlab's extra `#` lines (percentiles over every sample, the
//! count beyond the histogram, overruns) when rtlab wrote it.

use super::{Context, Details, Distribution, Format, ParseError, Quantile, Run, Stats, Thread};
use std::path::Path;

/// Whether `text` is a systress result file: its summary header is there.
pub(super) fn looks_like(text: &str) -> bool {
    text.lines()
        .any(|l| l.starts_with('#') && l.contains("Samples_H") && l.contains("L_min"))
}

/// A summary row: its line number and (column name, value) pairs.
type Table = (usize, Vec<(String, String)>);

/// The `#` line after a header line that starts with `# Index`, split into
/// (name, value) pairs; None without that header. A header without its
/// row, or a row with fewer or more values than the header has names, is a
/// file cut short or altered: refused, never shown with holes.
fn table_after(lines: &[(usize, &str)], header_has: &str) -> Result<Option<Table>, ParseError> {
    let Some(at) = lines
        .iter()
        .position(|(_, l)| l.starts_with('#') && l.contains("Index") && l.contains(header_has))
    else {
        return Ok(None);
    };
    let (header_line, header) = lines[at];
    let names: Vec<&str> = header.trim_start_matches('#').split_whitespace().collect();
    let row = lines[at + 1..].iter().find(|(_, l)| {
        l.trim_start_matches('#')
            .trim()
            .starts_with(|c: char| c.is_ascii_digit())
    });
    let Some(&(lineno, row)) = row else {
        return Err(ParseError::new(
            header_line,
            1,
            format!("the `{header_has}` table has no row under its header: the file is cut short"),
            "give the whole file as rtlab or systress wrote it",
        ));
    };
    let values: Vec<&str> = row.trim_start_matches('#').split_whitespace().collect();
    if values.len() != names.len() {
        return Err(ParseError::new(
            lineno,
            1,
            format!(
                "the summary row has {} values for the {} columns of the header at line {header_line}: the file is cut short or altered",
                values.len(),
                names.len()
            ),
            "give the whole file as rtlab or systress wrote it",
        ));
    }
    Ok(Some((
        lineno,
        names
            .iter()
            .zip(values)
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
    )))
}

fn field<T: std::str::FromStr>(table: &Table, name: &str) -> Result<Option<T>, ParseError> {
    let Some((column, (_, v))) = table.1.iter().enumerate().find(|(_, (n, _))| n == name) else {
        return Ok(None);
    };
    v.parse().map(Some).map_err(|_| {
        ParseError::new(
            table.0,
            column + 1,
            format!("{name} is {v:?}, not a number"),
            "the summary row holds one number per column of the header above it",
        )
    })
}

/// Parses a systress `txt` or `csv` result file.
pub(super) fn parse(text: &str, path: &Path) -> Result<Run, ParseError> {
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(n, l)| (n + 1, l.trim_end()))
        .collect();
    let buckets = rows(&lines)?;
    let Some(summary) = table_after(&lines, "Samples_H")? else {
        return Err(ParseError::new(
            lines.len(),
            1,
            "the `# Index TID Samples ...` summary row is missing",
            "the file may be cut short: systress writes the summary after the histogram",
        ));
    };
    let extra = table_after(&lines, "Beyond_H")?;
    let index: usize = field(&summary, "Index")?.unwrap_or(0);
    let (stats, distribution) = statistics(&summary, extra.as_ref(), &buckets)?;
    let histogram_us = buckets.into_iter().filter(|b| b.1 > 0).collect();
    let thread = Thread::new(
        format!("T{index}"),
        None,
        stats,
        histogram_us,
        None,
        distribution,
    );
    Ok(Run::new(
        path,
        Format::Systress,
        Context::default(),
        vec![thread],
        Details::default(),
    ))
}

/// The histogram rows: `LATENCY COUNT` (txt) or `LATENCY,COUNT` (csv).
fn rows(lines: &[(usize, &str)]) -> Result<Vec<(u64, u64)>, ParseError> {
    let mut buckets = Vec::new();
    for &(lineno, line) in lines {
        if line.is_empty() || line.starts_with('#') || line.starts_with("latency_us") {
            continue;
        }
        let mut parts = line
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|w| !w.is_empty());
        let pair = (parts.next(), parts.next(), parts.next());
        let parsed = match pair {
            (Some(us), Some(count), None) => us.parse::<u64>().ok().zip(count.parse::<u64>().ok()),
            _ => None,
        };
        match parsed {
            Some(b) => buckets.push(b),
            None => {
                return Err(ParseError::new(
                    lineno,
                    1,
                    format!("{line:?} is not a histogram row"),
                    "a systress result file has one `LATENCY COUNT` (txt) or `LATENCY,COUNT` (csv) row per µs before its `#` summary",
                ));
            }
        }
    }
    Ok(buckets)
}

/// A field of rtlab's extra row, None without the row.
fn extra_field<T: std::str::FromStr>(
    extra: Option<&Table>,
    name: &str,
) -> Result<Option<T>, ParseError> {
    match extra {
        Some(t) => field(t, name),
        None => Ok(None),
    }
}

/// The thread's statistics from the systress summary row and rtlab's
/// extra row (when the file has it), and the distribution of its buckets.
fn statistics(
    summary: &Table,
    extra: Option<&Table>,
    buckets: &[(u64, u64)],
) -> Result<(Stats, Distribution), ParseError> {
    let samples: u64 = field(summary, "Samples")?.unwrap_or(0);
    let samples_h: u64 = field(summary, "Samples_H")?.unwrap_or(samples);
    let us = |v: Option<f64>| v.map(|v| (v * 1000.0).round() as u64);
    let has = samples > 0;
    let max_ns = us(extra_field(extra, "max")?)
        .or(field::<u64>(summary, "L_max")?.map(|v| v.saturating_mul(1_000)));
    let beyond = extra_field(extra, "Beyond_H")?.unwrap_or(samples.saturating_sub(samples_h));
    let distribution = Distribution::new(
        buckets
            .iter()
            .map(|&(u, c)| (u.saturating_mul(1_000), c))
            .collect(),
        beyond,
    );
    let percentiles = match extra {
        Some(t) => {
            let mut out = Vec::new();
            for &(name, q) in &crate::stats::QUANTILES {
                out.push(Quantile {
                    name: name.to_string(),
                    quantile: q,
                    value_ns: us(field(t, name)?),
                });
            }
            out
        }
        None => distribution.quantiles(max_ns),
    };
    let stddev = field::<u64>(summary, "L_std_H")?
        .filter(|_| beyond == 0)
        .map(|v| v as f64 * 1000.0);
    let stats = Stats {
        samples,
        min_ns: field::<u64>(summary, "L_min")?
            .filter(|_| has)
            .map(|v| v.saturating_mul(1_000)),
        mean_ns: field::<u64>(summary, "L_avg")?
            .filter(|_| has)
            .map(|v| v as f64 * 1000.0),
        max_ns: max_ns.filter(|_| has),
        stddev_ns: stddev.filter(|_| has),
        percentiles,
        overruns: extra_field(extra, "Overruns")?,
        beyond_histogram: Some(beyond),
        deadline_misses: None,
        noise: None,
    };
    Ok((stats, distribution))
}

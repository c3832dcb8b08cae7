//! rtlab's own JSON result (`docs/result-schema.md`), read back. Only the
//! fields the renderers use are typed; the rest is kept as JSON for the
//! report, so older and newer results of the same schema still load.

use super::{
    Context, Details, Distribution, Format, Kept, ParseError, Quantile, Run, Stats, Thread,
};
use crate::stats::HdrBucket;
use crate::stats::series::LatencySeries;
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

#[derive(Deserialize)]
struct Doc {
    schema: String,
    #[serde(default)]
    system: Kept,
    #[serde(default)]
    plan: Kept,
    start_time: Option<String>,
    elapsed_ns: Option<u64>,
    #[serde(default)]
    end: Kept,
    #[serde(default)]
    pm_qos: Kept,
    timers: Vec<TimerDoc>,
    #[serde(default)]
    isolation: Kept,
    #[serde(default)]
    programs: Kept,
    #[serde(default)]
    tuning: Kept,
    #[serde(default)]
    warnings: Vec<String>,
}

#[derive(Deserialize)]
struct TimerDoc {
    index: usize,
    cpu_first: Option<usize>,
    #[serde(default)]
    cpus: Vec<usize>,
    summary: SummaryDoc,
    hdr_histogram: Vec<HdrBucket>,
    #[serde(default)]
    series: Option<LatencySeries>,
}

#[derive(Deserialize)]
struct SummaryDoc {
    samples: u64,
    min_ns: u64,
    max_ns: u64,
    mean_ns: f64,
    stddev_ns: f64,
    percentiles: Vec<PercentileDoc>,
    beyond_histogram: u64,
    overruns: u64,
    #[serde(default)]
    hdr_out_of_range: u64,
}

#[derive(Deserialize)]
struct PercentileDoc {
    name: String,
    quantile: f64,
    value_ns: u64,
}

/// Parses rtlab's JSON result.
pub(super) fn parse(text: &str, path: &Path) -> Result<Run, ParseError> {
    let doc: Doc =
        serde_json::from_str(text).map_err(|e| ParseError::from_json(&e, "rtlab result"))?;
    if doc.schema != crate::result::SCHEMA {
        return Err(ParseError::new(
            1,
            1,
            format!(
                "schema {:?}, this rtlab reads {:?}",
                doc.schema,
                crate::result::SCHEMA
            ),
            "read it with the rtlab version that wrote it (rtlab_version in the file)",
        ));
    }
    if doc.timers.len() > super::MAX_THREADS {
        return Err(ParseError::new(
            1,
            1,
            format!("more than {} timer threads", super::MAX_THREADS),
            "no rtlab run has this many; the file was altered",
        ));
    }
    let threads = doc.timers.iter().map(thread).collect();
    let context = context(&doc);
    let details = details(&doc);
    Ok(Run::new(path, Format::Rtlab, context, threads, details))
}

fn thread(t: &TimerDoc) -> Thread {
    let s = &t.summary;
    let some = |v: u64| (s.samples > 0).then_some(v);
    let stats = Stats {
        samples: s.samples,
        min_ns: some(s.min_ns),
        mean_ns: (s.samples > 0).then_some(s.mean_ns),
        max_ns: some(s.max_ns),
        stddev_ns: (s.samples > 0).then_some(s.stddev_ns),
        percentiles: s
            .percentiles
            .iter()
            .map(|p| Quantile {
                name: p.name.clone(),
                quantile: p.quantile,
                value_ns: some(p.value_ns),
            })
            .collect(),
        overruns: Some(s.overruns),
        beyond_histogram: Some(s.beyond_histogram),
    };
    // The HDR histogram holds every sample: the 1-µs view is made from it,
    // so the plot shows samples beyond histo_size too.
    let histogram_us = super::per_us(t.hdr_histogram.iter().map(|b| (b.low_ns, b.count)));
    let distribution = Distribution::new(
        t.hdr_histogram
            .iter()
            .map(|b| (b.high_ns.min(s.max_ns), b.count))
            .collect(),
        s.hdr_out_of_range,
    );
    Thread::new(
        format!("T{}", t.index),
        t.cpu_first.or_else(|| t.cpus.first().copied()),
        stats,
        histogram_us,
        t.series.clone(),
        distribution,
    )
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn context(doc: &Doc) -> Context {
    let sys = &doc.system;
    let preemption =
        text(&sys["preemption"]["model"]).map(|m| match text(&sys["preemption"]["dynamic_mode"]) {
            Some(mode) => format!("{m} ({mode})"),
            None => m,
        });
    Context {
        host: text(&sys["hostname"]),
        kernel: text(&sys["kernel_release"]),
        preemption,
        isolation: Some(isolation(doc)),
        load: Some(match doc.programs.as_array() {
            Some(list) if !list.is_empty() => list.iter().map(argv).collect::<Vec<_>>().join("; "),
            _ => "none".to_string(),
        }),
        governor: Some(governor(doc)),
        started: doc.start_time.clone(),
        duration_s: doc.elapsed_ns.map(|ns| ns as f64 / 1e9),
    }
}

fn argv(program: &Value) -> String {
    program["argv"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>())
        .unwrap_or_default()
        .join(" ")
}

fn isolation(doc: &Doc) -> String {
    let mut parts = Vec::new();
    if let Some(cpus) = text(&doc.system["cpus_isolated"]) {
        parts.push(format!("isolcpus {cpus}"));
    }
    if let Some(cpus) = text(&doc.system["cpus_nohz_full"]) {
        parts.push(format!("nohz_full {cpus}"));
    }
    let mut cpusets: Vec<String> = doc.isolation["placement"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["who"].as_str().is_some_and(|w| w.starts_with("timer")))
        .filter_map(|p| text(&p["cpuset"]))
        .filter(|c| c != "/")
        .collect();
    cpusets.dedup();
    if !cpusets.is_empty() {
        parts.push(format!("timers in cpuset {}", cpusets.join(", ")));
    }
    if parts.is_empty() {
        "none".to_string()
    } else {
        parts.join("; ")
    }
}

fn governor(doc: &Doc) -> String {
    if let Some(set) = text(&doc.plan["main"]["tuning"]["governor"]) {
        return format!("{set} (set for the run)");
    }
    let mut govs: Vec<String> = doc.system["governors"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(_, g)| text(g))
        .collect();
    govs.sort();
    govs.dedup();
    if govs.is_empty() {
        "no cpufreq".to_string()
    } else {
        govs.join(", ")
    }
}

fn details(doc: &Doc) -> Details {
    let mut changes = Vec::new();
    if doc.pm_qos["held"].as_bool() == Some(true) {
        changes.push(format!(
            "PM QoS: cpu_dma_latency held at {} µs for the run (released when the run ended)",
            text(&doc.pm_qos["requested_us"]).unwrap_or_else(|| "?".into())
        ));
    }
    for c in doc.tuning["changes"].as_array().into_iter().flatten() {
        let what = format!(
            "{} {}: {}",
            text(&c["target"]).unwrap_or_default(),
            text(&c["setting"]).unwrap_or_default(),
            text(&c["new"]).unwrap_or_default()
        );
        changes.push(match c["status"].as_str() {
            Some("set") => format!(
                "{what} (was {}; restored at the end)",
                text(&c["old"]).unwrap_or_default()
            ),
            Some("refused") => format!(
                "{what}: refused by the kernel ({})",
                text(&c["reason"]).unwrap_or_default()
            ),
            Some(status) => format!("{what} ({})", status.replace('_', " ")),
            None => what,
        });
    }
    for g in doc.tuning["cpu_bandwidth"].as_array().into_iter().flatten() {
        changes.push(format!(
            "CPU bandwidth group {} ({}): quota {} µs per {} µs, throttled in {} of {} periods ({} ms); removed at the end",
            text(&g["name"]).unwrap_or_default(),
            text(&g["cgroup"]).unwrap_or_default(),
            text(&g["quota_us"]).unwrap_or_else(|| "max".into()),
            text(&g["period_us"]).unwrap_or_default(),
            text(&g["nr_throttled"]).unwrap_or_default(),
            text(&g["nr_periods"]).unwrap_or_default(),
            text(&g["throttled_ms"]).unwrap_or_default(),
        ));
    }
    let programs = doc
        .programs
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            format!(
                "{}: started {} times, ended {} times{}",
                argv(p),
                text(&p["starts"]).unwrap_or_default(),
                text(&p["exits_total"]).unwrap_or_default(),
                text(&p["spawn_error"])
                    .map(|e| format!(", could not start: {e}"))
                    .unwrap_or_default()
            )
        })
        .collect();
    let end = match doc.end["kind"].as_str() {
        Some("interrupted") => Some(format!(
            "interrupted by {}",
            text(&doc.end["signal"]).unwrap_or_default()
        )),
        Some("aborted") => Some(format!(
            "aborted: {} ended ({})",
            text(&doc.end["command"]).unwrap_or_default(),
            text(&doc.end["status"]).unwrap_or_default()
        )),
        Some("failed") => Some(format!(
            "failed: {}",
            text(&doc.end["error"]).unwrap_or_default()
        )),
        Some(kind) => Some(kind.to_string()),
        None => None,
    };
    Details {
        system: Some(doc.system.value.clone()).filter(|v| !v.is_null()),
        configuration: Some(doc.plan.value.clone()).filter(|v| !v.is_null()),
        command: None,
        changes,
        programs,
        end,
        warnings: doc
            .warnings
            .iter()
            .cloned()
            .chain(
                [
                    (&doc.system, "system"),
                    (&doc.plan, "plan"),
                    (&doc.end, "end"),
                    (&doc.pm_qos, "pm_qos"),
                    (&doc.isolation, "isolation"),
                    (&doc.programs, "programs"),
                    (&doc.tuning, "tuning"),
                ]
                .iter()
                .filter_map(|(k, name)| k.note(name)),
            )
            .collect(),
    }
}

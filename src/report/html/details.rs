//! The System and Configuration parts of a run's section: the run's JSON
//! (rtlab's `system` and resolved plan, cyclictest's `sysinfo`) as
//! readable tables rather than dotted keys. Each object becomes a titled
//! group: its plain values in a two-column table with human labels (the
//! JSON key in the row's tooltip), a list of objects in a table with a
//! column per key (a list inside each, such as a CPU's C-states, one row
//! per item); values formatted by what their key says (`_ns` as a
//! duration, `_us` in µs, CPU lists as ranges, yes/no).

use super::escape;
use serde_json::{Map, Value};
use std::fmt::Write as _;

/// Human labels of the keys rtlab writes, in the order they are shown
/// (the JSON's own order is lost: serde_json sorts keys); other keys come
/// after, with their underscores as spaces and their unit suffix dropped.
const LABELS: &[(&str, &str)] = &[
    ("index", "#"),
    ("hostname", "host"),
    ("kernel_release", "kernel release"),
    ("kernel_version", "kernel version"),
    ("machine", "architecture"),
    ("model", "model"),
    ("dynamic_mode", "PREEMPT_DYNAMIC mode"),
    ("dynamic_mode_source", "mode read from"),
    ("realtime", "PREEMPT_RT"),
    ("cmdline", "kernel command line"),
    ("cpus_online", "online CPUs"),
    ("cpus_isolated", "isolated CPUs (isolcpus)"),
    ("cpus_nohz_full", "nohz_full CPUs"),
    ("smt", "SMT"),
    ("smt_active", "SMT active"),
    ("cgroup_version", "cgroup version"),
    ("clocksource", "clock source"),
    ("sched_rt_runtime_us", "RT runtime (sched_rt_runtime_us)"),
    ("sched_rt_period_us", "RT period (sched_rt_period_us)"),
    ("cpu", "CPU"),
    ("name", "name"),
    ("state", "state"),
    ("latency_us", "exit latency"),
    ("disabled", "disabled"),
    ("detail", "detail"),
    ("remedy", "what brings it"),
    ("driver", "driver"),
    ("governor", "governor"),
    ("source", "experiment file"),
    ("outdir", "result directory"),
    ("argv", "command"),
    ("executable", "executable"),
    ("cpus", "CPUs"),
    ("sched", "scheduling"),
    ("period_ns", "period"),
    ("duration_ns", "duration"),
    ("loops", "loops"),
    ("histo_size_us", "histogram size"),
    ("keep_samples", "samples kept"),
    ("spikes", "worst wake-ups kept"),
    ("trace_threshold_ns", "marked from"),
    ("memlock", "memory locked"),
    ("dma_latency_us", "PM QoS cpu_dma_latency"),
    ("cpuset", "cpuset"),
    ("cpu_group", "CPU group"),
    ("stats_period_ns", "live table refresh"),
    ("stats_format", "result file format"),
    ("cpu_load", "CPU load display"),
    ("dbg_level", "debug level"),
    ("lifetime_ns", "lifetime"),
    ("warmup_ns", "warm-up"),
    ("irq_latency", "IRQ latency"),
    ("audit_cpus", "audited CPUs"),
    ("threshold_ns", "threshold"),
    ("max_spikes", "most wake-ups explained"),
    ("stacks", "kernel stacks"),
    ("buffer_kb", "buffer per CPU"),
    ("filename", "result file"),
    ("path", "path"),
    ("out", "stdout"),
    ("err", "stderr"),
    ("on_ok", "on success"),
    ("on_ko", "on failure"),
    ("grace_ns", "termination grace"),
    ("preemption", "Preemption"),
    ("cpuidle", "cpuidle"),
    ("cstates", "C-states"),
    ("governors", "cpufreq governors"),
    ("cpufreq", "cpufreq policies"),
    ("pm_qos_resume_latency_us", "PM QoS resume latency"),
    ("features", "Kernel features rtlab uses"),
    ("main", "Main thread"),
    ("trace", "Flight recorder"),
    ("tuning", "System settings for the run"),
    ("timers", "Timer threads"),
    ("programs", "Load programs"),
    ("cpu_groups", "CPU bandwidth groups"),
];

/// Where `key` is shown among its siblings.
fn rank(key: &str) -> (usize, String) {
    let at = LABELS.iter().position(|(k, _)| *k == key);
    (at.unwrap_or(LABELS.len()), key.to_string())
}

/// The entries of `map` in the order they are shown.
fn ordered(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by_cached_key(|(k, _)| rank(k));
    entries
}

/// The label of `key`.
fn label(key: &str) -> String {
    if !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit()) {
        return format!("CPU {key}");
    }
    if let Some((_, l)) = LABELS.iter().find(|(k, _)| *k == key) {
        return (*l).to_string();
    }
    let bare = unit(key).and_then(|u| key.strip_suffix(u)).unwrap_or(key);
    bare.replace('_', " ")
}

/// A value as text, formatted by what its key says.
fn value(key: &str, v: &Value) -> String {
    match v {
        Value::Null => "—".into(),
        Value::Bool(b) => if *b { "yes" } else { "no" }.into(),
        Value::String(s) if s.is_empty() => "—".into(),
        Value::String(s) => match s.parse::<u64>() {
            Ok(n) if unit(key).is_some() => value(key, &Value::from(n)),
            _ => s.clone(),
        },
        Value::Number(n) => match n.as_u64() {
            Some(n) if key.ends_with("_ns") => duration(n),
            Some(n) if key.ends_with("_us") => format!("{n} µs"),
            Some(n) if key.ends_with("_ms") => format!("{n} ms"),
            Some(n) if key.ends_with("_kb") => format!("{n} KiB"),
            _ => n.to_string(),
        },
        Value::Array(items) if items.is_empty() => "none".into(),
        Value::Array(items) => {
            let cpus: Option<Vec<usize>> = items
                .iter()
                .map(|i| i.as_u64().and_then(|n| usize::try_from(n).ok()))
                .collect();
            match cpus {
                Some(c) if key.contains("cpus") => crate::cpulist::format(&c),
                _ => {
                    let words: Vec<String> = items.iter().map(|i| value("", i)).collect();
                    let sep = if key == "argv" { " " } else { ", " };
                    words.join(sep)
                }
            }
        }
        Value::Object(map) => inline(map),
    }
}

/// The unit suffix of `key`, if it has one.
fn unit(key: &str) -> Option<&'static str> {
    ["_ns", "_us", "_ms", "_kb"]
        .into_iter()
        .find(|u| key.ends_with(u))
}

/// An object in one cell: a policy and its priority as `FIFO 90`, else
/// `label value` pairs.
fn inline(map: &Map<String, Value>) -> String {
    if let (Some(Value::String(p)), Some(prio)) = (map.get("policy"), map.get("priority")) {
        return match prio.as_u64() {
            Some(0) | None => p.clone(),
            Some(n) => format!("{p} {n}"),
        };
    }
    if map.is_empty() {
        return "—".into();
    }
    let parts: Vec<String> = ordered(map)
        .into_iter()
        .map(|(k, v)| format!("{} {}", label(k), value(k, v)))
        .collect();
    parts.join(", ")
}

/// ns as the largest whole unit, or with decimals: `1 s`, `200 µs`,
/// `1.5 ms`.
fn duration(ns: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (3_600_000_000_000, "h"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "µs"),
    ];
    for (size, unit) in UNITS {
        if ns >= size && ns.is_multiple_of(size) {
            return format!("{} {unit}", ns / size);
        }
        // Hours only when whole: `5400 s` reads better than `1.5 h`.
        if ns >= size && unit != "h" {
            return format!("{} {unit}", trim(ns as f64 / size as f64));
        }
    }
    format!("{ns} ns")
}

/// Up to three decimals, without trailing zeros.
fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Whether an object is shown in one cell: every value plain, or a
/// scheduling.
fn is_leaf(map: &Map<String, Value>) -> bool {
    map.contains_key("policy") && map.contains_key("priority") && map.len() == 2 || map.is_empty()
}

/// A value shown in the key/value table rather than a group of its own.
fn is_plain(v: &Value) -> bool {
    match v {
        Value::Object(m) => is_leaf(m),
        Value::Array(items) => items.iter().all(|i| !i.is_object() && !i.is_array()),
        _ => true,
    }
}

/// `v` as titled groups; `title` heads the first. Depth-limited: below
/// `depth` 3, objects are shown in one cell.
pub(super) fn groups(out: &mut String, title: &str, v: &Value) {
    out.push_str("<div class=\"groups\">\n");
    group(out, title, "", v, 0);
    out.push_str("</div>\n");
}

/// One group: `key` is the object's own key, whose unit its values keyed
/// by CPU number take.
fn group(out: &mut String, title: &str, key: &str, v: &Value, depth: usize) {
    let Value::Object(map) = v else {
        let _ = writeln!(out, "<p>{}</p>", escape(&value("", v)));
        return;
    };
    let entries = ordered(map);
    let plain: Vec<&(&String, &Value)> = entries
        .iter()
        .filter(|(_, v)| depth >= 2 || is_plain(v))
        .collect();
    if !plain.is_empty() {
        let _ = writeln!(
            out,
            "<div class=\"group\"><h4>{}</h4><table class=\"kv\"><tbody>",
            escape(title)
        );
        for (k, v) in plain {
            let by_cpu = k.bytes().all(|b| b.is_ascii_digit());
            let _ = writeln!(
                out,
                "<tr title=\"{}\"><th>{}</th><td>{}</td></tr>",
                escape(k),
                escape(&label(k)),
                escape(&value(if by_cpu { key } else { k }, v))
            );
        }
        out.push_str("</tbody></table></div>\n");
    }
    if depth >= 2 {
        return;
    }
    for (k, v) in entries.iter().filter(|(_, v)| !is_plain(v)) {
        let name = capitalised(&label(k));
        match v {
            Value::Object(_) => group(out, &name, k, v, depth + 1),
            Value::Array(items) => list_table(out, &name, k, items),
            _ => {}
        }
    }
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// A list of objects: a column per key (in the order first seen); a list
/// of objects inside an item gives one row per inner item, the item's
/// other values repeated.
fn list_table(out: &mut String, title: &str, key: &str, items: &[Value]) {
    let rows: Vec<Map<String, Value>> = items.iter().flat_map(expand).collect();
    let mut columns: Vec<String> = Vec::new();
    for r in &rows {
        for k in r.keys() {
            if !columns.contains(k) {
                columns.push(k.clone());
            }
        }
    }
    columns.sort_by_cached_key(|k| rank(k));
    let _ = write!(
        out,
        "<div class=\"group wide\" title=\"{}\"><h4>{}</h4><table class=\"list\"><thead><tr>",
        escape(key),
        escape(title)
    );
    for c in &columns {
        let _ = write!(
            out,
            "<th title=\"{}\">{}</th>",
            escape(c),
            escape(&label(c))
        );
    }
    out.push_str("</tr></thead><tbody>\n");
    for r in &rows {
        out.push_str("<tr>");
        for c in &columns {
            let cell = r.get(c).map_or_else(String::new, |v| value(c, v));
            let _ = write!(out, "<td>{}</td>", escape(&cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

/// One item of a list as rows: itself, or one row per item of the first
/// list of objects it holds (its key's label before each inner key).
fn expand(item: &Value) -> Vec<Map<String, Value>> {
    let Value::Object(map) = item else {
        let mut m = Map::new();
        m.insert("value".into(), item.clone());
        return vec![m];
    };
    let inner = map.iter().find(|(_, v)| {
        v.as_array()
            .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_object))
    });
    let Some((inner_key, Value::Array(inner))) = inner else {
        return vec![map.clone()];
    };
    let outer: Map<String, Value> = map
        .iter()
        .filter(|(k, _)| *k != inner_key)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    inner
        .iter()
        .map(|i| {
            let mut row = outer.clone();
            if let Value::Object(fields) = i {
                for (k, v) in fields {
                    row.insert(k.clone(), v.clone());
                }
            }
            row
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_as_their_keys_say() {
        assert_eq!(duration(4_000_000_000), "4 s");
        assert_eq!(duration(1_500_000), "1.5 ms");
        assert_eq!(duration(200_000), "200 µs");
        assert_eq!(duration(999), "999 ns");
        assert_eq!(duration(7_200_000_000_000), "2 h");
        assert_eq!(duration(5_400_000_000_000), "5400 s");
        assert_eq!(value("cpus", &serde_json::json!([0, 1, 2, 5])), "0-2,5");
        assert_eq!(
            value("argv", &serde_json::json!(["rtlab", "hog"])),
            "rtlab hog"
        );
        assert_eq!(value("memlock", &Value::Bool(true)), "yes");
        assert_eq!(value("cpus_isolated", &Value::String(String::new())), "—");
        assert_eq!(value("buffer_kb", &serde_json::json!(512)), "512 KiB");
        let sched = serde_json::json!({"policy": "FIFO", "priority": 90});
        assert_eq!(value("sched", &sched), "FIFO 90");
        assert_eq!(label("kernel_release"), "kernel release");
        assert_eq!(label("some_new_key_ns"), "some new key");
    }

    #[test]
    fn objects_become_groups_and_lists_tables() {
        let v = serde_json::json!({
            "hostname": "vm <1>",
            "preemption": {"model": "PREEMPT_RT", "realtime": true},
            "cstates": [
                {"cpu": 0, "states": [{"name": "POLL", "latency_us": 0}, {"name": "C1", "latency_us": 2}]},
                {"cpu": 1, "states": [{"name": "POLL", "latency_us": 0}]}
            ]
        });
        let mut out = String::new();
        groups(&mut out, "System", &v);
        assert!(out.contains("<h4>System</h4>"), "{out}");
        assert!(out.contains("<th>host</th><td>vm &lt;1&gt;</td>"), "{out}");
        assert!(out.contains("<h4>Preemption</h4>"), "{out}");
        assert!(out.contains("<th>PREEMPT_RT</th><td>yes</td>"), "{out}");
        assert!(out.contains("<h4>C-states</h4>"), "{out}");
        // One row per CPU and state.
        assert!(
            out.contains("<tr><td>0</td><td>C1</td><td>2 µs</td></tr>"),
            "{out}"
        );
        assert_eq!(out.matches("<tr><td>").count(), 3, "{out}");
        // The JSON's keys are sorted; the table is in rtlab's order.
        assert!(
            out.find("<th>host</th>") < out.find("<h4>Preemption</h4>"),
            "{out}"
        );
        let resume = serde_json::json!({"pm_qos_resume_latency_us": {"0": "0", "1": "20"}});
        let mut out = String::new();
        groups(&mut out, "System", &resume);
        assert!(out.contains("<th>CPU 1</th><td>20 µs</td>"), "{out}");
    }
}

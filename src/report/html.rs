//! `rtlab report`: one self-contained HTML file (inline CSS, inline SVG, no
//! network, no server) with the comparison of every run, the plots, and per
//! run its latency per thread, what rtlab changed on the system, its load
//! programs, its system snapshot and its configuration.
//!
//! A few lines of inline script check, once the page is laid out, that
//! every table and plot has a size on screen, and say so at the bottom of
//! the page (`data-rendered` on `<body>`): a reader sees at once if a
//! browser dropped the inline SVG, and the Chromium test reads it.

use super::compare;
use super::plot::{self, Panel};
use crate::dataset::{Metric, Run};
use crate::result::Steal;
use crate::trace::explain::analyze::{Explanation, PartKind};
use std::fmt::Write as _;

/// Escapes text for HTML: markup shown as text, control characters shown
/// escaped (XML forbids most of them; a browser would drop or mangle them).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in crate::text::terminal(s).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

pub(crate) const STYLE: &str = "
body { font-family: 'DejaVu Sans', Verdana, sans-serif; margin: 2em auto; max-width: 1250px; color: #222; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { border-bottom: 2px solid #1f77b4; padding-bottom: 0.2em; margin-top: 2em; }
h3 { margin-top: 1.4em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; vertical-align: top; }
th:first-child, td:first-child { text-align: left; }
td.text { text-align: left; }
.groups { display: flex; flex-wrap: wrap; gap: 0 2em; align-items: flex-start; }
.group { max-width: 100%; }
.group.wide { flex-basis: 100%; }
h4 { margin: 0.9em 0 0.2em; font-size: 1em; color: #444; }
table.kv th { text-align: left; font-weight: normal; color: #555; background: #f6f8fa; white-space: nowrap; }
table.kv td { text-align: left; max-width: 60em; overflow-wrap: break-word; }
table.list th, table.list td { text-align: left; overflow-wrap: break-word; }
table.spikes th:nth-child(6), table.unexplained th:last-child { text-align: left; }
.beside { display: flex; flex-wrap: wrap; gap: 0 2em; align-items: flex-start; }
.beside > table { flex: 1 1 30em; }
aside.steal { flex: 0 0 18em; border: 1px solid #ccc; border-left: 4px solid #ff7f0e; padding: 0.3em 0.8em; margin: 0.5em 0; font-size: 0.9em; background: #fffaf3; }
aside.steal.none { border-left-color: #2ca02c; background: #f6fbf6; }
aside.steal h4 { margin-top: 0.3em; }
tr:nth-child(even) { background: #f6f8fa; }
figure { margin: 1em 0; }
figure svg { width: 100%; height: auto; border: 1px solid #ddd; }
nav a { margin-right: 1em; }
.muted { color: #666; }
footer { margin-top: 3em; color: #666; font-size: 0.85em; }
";

const CHECK_SCRIPT: &str = "
window.addEventListener('load', function () {
  var shown = function (e) { var r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  var tables = Array.prototype.filter.call(document.querySelectorAll('table'),
    function (t) { return t.rows.length > 0 && shown(t); }).length;
  var plots = Array.prototype.filter.call(document.querySelectorAll('figure svg'),
    function (s) { return shown(s) && s.querySelectorAll('polyline, path').length > 0; }).length;
  document.body.setAttribute('data-rendered', 'tables=' + tables + ' plots=' + plots);
  document.getElementById('check').textContent =
    'This page rendered ' + tables + ' tables and ' + plots + ' plots.';
});
";

pub(crate) fn table(out: &mut String, class: &str, head: &[String], rows: &[Vec<String>]) {
    let _ = write!(out, "<table class=\"{class}\"><thead><tr>");
    for h in head {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr></thead><tbody>\n");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{}</td>", escape(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
}

pub(crate) fn list(out: &mut String, items: &[String], empty: &str) {
    if items.is_empty() {
        let _ = writeln!(out, "<p class=\"muted\">{}</p>", escape(empty));
        return;
    }
    out.push_str("<ul>\n");
    for i in items {
        let _ = writeln!(out, "<li>{}</li>", escape(i));
    }
    out.push_str("</ul>\n");
}

/// The run's worst wake-ups over all threads (rtlab results keep them),
/// each with its cause when the flight recorder ran; the steal time beside
/// them when `steal` is given (a run without the recorder's culprits).
fn worst_wakeups(out: &mut String, run: &Run, steal: &[Steal]) {
    const SHOWN: usize = 10;
    let mut all: Vec<(&str, &crate::stats::spikes::Spike)> = run
        .threads
        .iter()
        .flat_map(|t| t.spikes.iter().map(move |s| (t.name.as_str(), s)))
        .collect();
    if all.is_empty() {
        return;
    }
    all.sort_by_key(|(name, s)| (std::cmp::Reverse(s.latency_ns), s.offset_ns, *name));
    let _ = writeln!(
        out,
        "<h3>Worst wake-ups ({} of {} kept)</h3>",
        all.len().min(SHOWN),
        all.len()
    );
    let trace = run
        .details
        .trace
        .as_ref()
        .filter(|t| t.unavailable.is_none());
    let mut head = vec![
        "thread",
        "CPU",
        "sample",
        "deadline (s from start)",
        "latency (µs)",
    ];
    if trace.is_some() {
        head.push("cause");
    }
    out.push_str("<div class=\"beside\">\n<table class=\"spikes\"><thead><tr>");
    for h in head {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr></thead><tbody>\n");
    for (name, s) in all.iter().take(SHOWN) {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.6}</td><td>{:.3}</td>",
            escape(name),
            s.cpu.map_or("?".into(), |c| c.to_string()),
            s.sample,
            s.offset_ns as f64 / 1e9,
            s.latency_ns as f64 / 1000.0
        );
        if let Some(t) = trace {
            let (short, full) = cause(t, name, s);
            let _ = write!(
                out,
                "<td class=\"text\" title=\"{}\">{}</td>",
                escape(&full),
                escape(&short)
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
    steal_aside(out, steal);
    out.push_str("</div>\n");
}

/// Why one of the worst wake-ups was late, as the flight recorder said:
/// (its first clause, the whole text).
fn cause(
    t: &crate::trace::explain::TraceReport,
    thread: &str,
    s: &crate::stats::spikes::Spike,
) -> (String, String) {
    let Some(timer) = thread
        .strip_prefix('T')
        .and_then(|i| i.parse::<usize>().ok())
    else {
        return ("-".into(), String::new());
    };
    if let Some(e) = t
        .explanations
        .iter()
        .find(|e| e.timer == timer && e.sample == s.sample)
    {
        let short = e.cause.split(": ").next().unwrap_or(&e.cause);
        return (short.to_string(), e.cause.clone());
    }
    if let Some(u) = t
        .worst_unexplained
        .iter()
        .chain(&t.unexplained)
        .find(|u| u.timer == timer && u.sample == s.sample)
    {
        let why = format!("not explained: {}", u.why);
        return (why.split(": ").take(2).collect::<Vec<_>>().join(": "), why);
    }
    if s.latency_ns < t.threshold_ns {
        let why = format!(
            "below trace.threshold ({} µs): not traced",
            micros(t.threshold_ns)
        );
        return (why.clone(), why);
    }
    let why = "not explained (the result keeps the reason of the worst only)".to_string();
    (why.clone(), why)
}

/// The run's steal time per CPU: what the hypervisor took from the
/// measured CPUs may be the whole of a late wake-up, which no trace of
/// this kernel shows. Nothing when the run did not record it.
fn steal_aside(out: &mut String, steal: &[Steal]) {
    if steal.is_empty() {
        return;
    }
    let taken: f64 = steal.iter().filter(|s| s.measured).map(|s| s.ms).sum();
    let _ = writeln!(
        out,
        "<aside class=\"steal{}\"><h4>Steal time during the run</h4>",
        if taken > 0.0 { "" } else { " none" }
    );
    let rows: Vec<Vec<String>> = steal
        .iter()
        .map(|s| {
            vec![
                format!("CPU {}", s.cpu),
                format!("{:.0} ms", s.ms),
                if s.measured { "measured" } else { "" }.to_string(),
            ]
        })
        .collect();
    table(
        out,
        "steal",
        &["CPU", "steal", "timer threads"].map(String::from),
        &rows,
    );
    let note = if taken > 0.0 {
        format!(
            "The hypervisor did not run the measured CPUs for {taken:.0} ms in all while they \
             wanted to run: a wake-up late by up to that much may be the host's, not this \
             machine's (in the explanations, an \"unseen\" part or a handler that seems to run \
             for milliseconds)."
        )
    } else {
        "No steal on the measured CPUs: the hypervisor took nothing from them.".to_string()
    };
    let _ = writeln!(out, "<p>{}</p></aside>", escape(&note));
}

/// The flight recorder's verdict: the culprits, and the worst explained
/// wake-ups each with a timeline of what owned the CPU.
fn why_late(out: &mut String, r: &crate::trace::explain::TraceReport, steal: &[Steal]) {
    out.push_str("<h3>Why wake-ups were late</h3>\n");
    if let Some(why) = &r.unavailable {
        let _ = writeln!(out, "<p>No flight recorder: {}.</p>", escape(why));
        return;
    }
    let _ = writeln!(
        out,
        "<p>{} wake-ups of {} µs or more, {} explained, {} not (overwritten before a read, \
         more than {} of a timer thread in one read, or <code>trace.max_spikes</code>); {}.</p>",
        r.over_threshold,
        micros(r.threshold_ns),
        r.explanations.len(),
        r.not_explained,
        crate::trace::flight::MAX_PER_READ,
        escape(&crate::report::explain::reads_cost(r))
    );
    out.push_str("<div class=\"beside\">\n");
    culprits(out, &r.culprits);
    steal_aside(out, steal);
    out.push_str("</div>\n");
    if !r.worst_unexplained.is_empty() {
        let rows: Vec<Vec<String>> = r
            .worst_unexplained
            .iter()
            .take(10)
            .map(|u| {
                vec![
                    format!("T{} sample {}", u.timer, u.sample),
                    micros(u.latency_ns),
                    u.why.clone(),
                ]
            })
            .collect();
        out.push_str("<p>The worst wake-ups not explained:</p>\n");
        let head = ["wake-up", "late (µs)", "why not explained"].map(String::from);
        table(out, "unexplained", &head, &rows);
    }
    out.push_str(
        "<p class=\"muted\">Timelines from the deadline (left) to the wake-up (right): \
         <span style=\"color:#d62728\">■</span> another thread, \
         <span style=\"color:#ff7f0e\">■</span> interrupt handler, \
         <span style=\"color:#bcbd22\">■</span> softirq, \
         <span style=\"color:#7f7f7f\">■</span> timer interrupt late (CPU idle), \
         <span style=\"color:#8c564b\">■</span> timer interrupt late (CPU busy), \
         <span style=\"color:#2ca02c\">■</span> the timer thread itself, \
         <span style=\"color:#c7c7c7\">■</span> idle after the wake-up, \
         <span style=\"color:#393b79\">■</span> held off though runnable (RT throttling), \
         <span style=\"color:#17becf\">■</span> unseen, \
         <span style=\"color:#e377c2\">■</span> NMI, \
         <span style=\"color:#aec7e8\">■</span> rtlab's stack walk, \
         <span style=\"color:#9467bd\">■</span> not in the trace; hatched: inferred (a switch \
         the kernel did not log). Hover for who.</p>\n",
    );
    for e in timelines_shown(r) {
        let _ = writeln!(
            out,
            "<p>T{} sample {} ({} µs): {}</p>",
            e.timer,
            e.sample,
            micros(e.latency_ns),
            escape(&e.cause)
        );
        timeline(out, e);
        for k in &e.stacks {
            let _ = writeln!(
                out,
                "<details><summary>kernel stack of {} (pid {}) {}</summary><pre>{}</pre></details>",
                escape(&k.comm),
                k.pid,
                if k.at == "switch" {
                    "as it let the CPU go"
                } else {
                    "at the wake-up"
                },
                escape(&k.frames.join("\n"))
            );
        }
    }
}

/// The culprit table, most costly first, with each thread's priority.
fn culprits(out: &mut String, culprits: &[crate::trace::explain::verdict::Culprit]) {
    let head = [
        "culprit",
        "priority",
        "main cause of",
        "in",
        "total (µs)",
        "max (µs)",
    ]
    .map(String::from);
    let rows: Vec<Vec<String>> = culprits
        .iter()
        .map(|c| {
            vec![
                c.who(),
                c.prio
                    .map_or_else(|| "-".into(), crate::trace::explain::analyze::prio_words),
                c.main_cause.to_string(),
                c.spikes.to_string(),
                micros(c.total_ns),
                micros(c.max_ns),
            ]
        })
        .collect();
    table(out, "culprits", &head, &rows);
}

/// The explanations whose timelines the report draws: the three worst,
/// and when one culprit is the main cause of most explained wake-ups and
/// of none of those, its worst too.
fn timelines_shown(r: &crate::trace::explain::TraceReport) -> Vec<&Explanation> {
    let mut worst: Vec<&Explanation> = r.explanations.iter().collect();
    worst.sort_by_key(|e| std::cmp::Reverse(e.latency_ns));
    let mut shown: Vec<&Explanation> = worst.iter().take(3).copied().collect();
    let main = |e: &Explanation| {
        e.parts
            .iter()
            .find(|p| !p.kind.is_own())
            .map(|p| (p.kind, p.what.clone(), p.pid))
    };
    let most = r
        .culprits
        .iter()
        .find(|c| c.main_cause * 2 > r.explanations.len() as u64)
        .map(|c| (c.kind, c.what.clone(), c.pid));
    if let Some(m) = most
        && !shown.iter().any(|e| main(e).as_ref() == Some(&m))
        && let Some(e) = worst.iter().find(|e| main(e).as_ref() == Some(&m))
    {
        shown.push(e);
    }
    shown
}

/// One wake-up's timeline: who owned the CPU from the deadline to the
/// wake-up, over a time axis in µs.
fn timeline(out: &mut String, e: &Explanation) {
    let (width, left) = (800.0, 4.0);
    let scale = (width - 2.0 * left) / e.latency_ns.max(1) as f64;
    let _ = write!(
        out,
        "<svg class=\"timeline\" width=\"{width}\" height=\"44\" role=\"img\">\
         <defs><pattern id=\"inferred\" width=\"6\" height=\"6\" \
         patternUnits=\"userSpaceOnUse\"><path d=\"M0,6 L6,0\" stroke=\"#fff\" \
         stroke-width=\"1.5\"/></pattern></defs>"
    );
    for s in &e.timeline {
        let (x, w) = (
            left + s.after_deadline_ns as f64 * scale,
            (s.ns as f64 * scale).max(0.5),
        );
        let _ = write!(
            out,
            "<rect x=\"{x:.2}\" y=\"2\" width=\"{w:.2}\" height=\"20\" fill=\"{}\"><title>{} {} µs{}</title></rect>",
            colour(s.kind),
            escape(&s.what),
            micros(s.ns),
            if s.inferred { " (inferred)" } else { "" }
        );
        if s.inferred {
            let _ = write!(
                out,
                "<rect x=\"{x:.2}\" y=\"2\" width=\"{w:.2}\" height=\"20\" fill=\"url(#inferred)\"/>"
            );
        }
    }
    // The axis: five ticks, in µs after the deadline.
    let _ = write!(
        out,
        "<line x1=\"{left}\" y1=\"24\" x2=\"{}\" y2=\"24\" stroke=\"#555\"/>",
        width - left
    );
    for i in 0..=4 {
        let ns = e.latency_ns * i / 4;
        let x = left + ns as f64 * scale;
        let anchor = match i {
            0 => "start",
            4 => "end",
            _ => "middle",
        };
        let _ = write!(
            out,
            "<line x1=\"{x:.2}\" y1=\"24\" x2=\"{x:.2}\" y2=\"28\" stroke=\"#555\"/>\
             <text x=\"{x:.2}\" y=\"40\" font-size=\"11\" text-anchor=\"{anchor}\">{} µs</text>",
            micros(ns)
        );
    }
    out.push_str("</svg>\n");
}

/// ns as µs with one decimal.
fn micros(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

fn colour(k: PartKind) -> &'static str {
    match k {
        PartKind::Thread => "#d62728",
        PartKind::Irq => "#ff7f0e",
        PartKind::Softirq => "#bcbd22",
        PartKind::TimerLateIdle => "#7f7f7f",
        PartKind::TimerLate => "#8c564b",
        PartKind::TimerSlack => "#c7c7c7",
        PartKind::TimerThread => "#2ca02c",
        PartKind::Idle => "#c7c7c7",
        PartKind::Unknown => "#9467bd",
        PartKind::Nmi => "#e377c2",
        PartKind::Unseen => "#17becf",
        PartKind::HeldOff => "#393b79",
        PartKind::Tracing => "#aec7e8",
    }
}

fn irq_tasks(out: &mut String, tasks: &[crate::trace::irq_task::IrqTaskResult]) {
    if tasks.is_empty() {
        return;
    }
    out.push_str(
        "<h3>IRQ-to-task latency</h3>\n<p class=\"muted\">The rows I&lt;N&gt; above: from the \
         end of each interrupt handler to the switch-in of the task its work woke.</p>\n",
    );
    let head: Vec<String> = [
        "",
        "IRQ",
        "task",
        "handler exits",
        "woke the task",
        "task running",
        "slept through",
        "other cause",
        "unresolved",
        "kernel count",
        "CPUs (IRQ → task: samples)",
    ]
    .map(String::from)
    .to_vec();
    let rows: Vec<Vec<String>> = tasks
        .iter()
        .map(|m| {
            let c = &m.counts;
            let irq = m
                .irq_names
                .iter()
                .map(|(n, name)| format!("{n} {name}"))
                .collect::<Vec<_>>()
                .join(", ");
            let pairs = m
                .cpu_pairs
                .iter()
                .map(|p| format!("{} → {}: {}", p.irq_cpu, p.task_cpu, p.samples))
                .collect::<Vec<_>>()
                .join("; ");
            vec![
                format!("I{}", m.index),
                if irq.is_empty() {
                    m.irq.to_string()
                } else {
                    irq
                },
                m.task.to_string(),
                c.irqs.to_string(),
                c.matched.to_string(),
                c.task_running.to_string(),
                c.no_wakeup.to_string(),
                c.other_cause_total().to_string(),
                c.unresolved.to_string(),
                m.kernel_count.map_or("?".into(), |k| k.to_string()),
                pairs,
            ]
        })
        .collect();
    table(out, "irq-tasks", &head, &rows);
    for m in tasks.iter().filter(|m| m.counts.switch_in_inferred > 0) {
        let _ = writeln!(
            out,
            "<p class=\"muted\">I{}: {} switch-ins were not logged by this kernel; each is taken \
             at its CPU's previous event, a lower bound (the task showed running {} µs later on \
             average).</p>",
            m.index,
            m.counts.switch_in_inferred,
            micros(m.counts.inferred_gap_total_ns / m.counts.switch_in_inferred)
        );
    }
    for m in tasks.iter().filter(|m| !m.worst.is_empty()) {
        irq_task_worst(out, m);
    }
}

/// An IRQ-to-task measurement's worst samples, to find them in a trace.
fn irq_task_worst(out: &mut String, m: &crate::trace::irq_task::IrqTaskResult) {
    let _ = writeln!(
        out,
        "<p>I{}: the worst samples, with their handler exit on the trace clock \
         (CLOCK_MONOTONIC), to find them in a trace:</p>",
        m.index
    );
    let head = ["µs", "handler exit (s)", "IRQ CPU", "task CPU", "TID"].map(String::from);
    let rows: Vec<Vec<String>> = m
        .worst
        .iter()
        .take(10)
        .map(|w| {
            vec![
                format!(
                    "{}{}",
                    if w.inferred { "≥ " } else { "" },
                    micros(w.latency_ns)
                ),
                format!(
                    "{}.{:06}",
                    w.exit_ns / 1_000_000_000,
                    w.exit_ns / 1000 % 1_000_000
                ),
                w.irq_cpu.to_string(),
                w.task_cpu.to_string(),
                w.tid.to_string(),
            ]
        })
        .collect();
    table(out, "irq-task-worst", &head, &rows);
}

/// The isolation audit: every source that reached the audited CPUs.
fn audit_table(out: &mut String, a: &crate::trace::audit::AuditReport) {
    out.push_str("<h3>Isolation audit</h3>\n");
    if let Some(why) = &a.unavailable {
        let _ = writeln!(out, "<p>Not done: {}</p>", escape(why));
        return;
    }
    let _ = writeln!(
        out,
        "<p class=\"muted\">Every interruption of CPU {} over {:.3} s, by source; net times \
         (interrupts nested in another are taken out of it).</p>",
        escape(&crate::cpulist::format(&a.cpus)),
        a.duration_ns as f64 / 1e9
    );
    let head: Vec<String> = [
        "CPU",
        "kind",
        "source",
        "count",
        "total µs",
        "max µs",
        "belongs",
        "why",
    ]
    .map(String::from)
    .to_vec();
    let rows: Vec<Vec<String>> = a
        .rows
        .iter()
        .map(|r| {
            vec![
                r.cpu.to_string(),
                crate::report::audit::kind_name(r.kind).to_string(),
                r.who(),
                r.count.to_string(),
                micros(r.total_ns),
                micros(r.max_ns),
                if r.belongs { "yes" } else { "no" }.to_string(),
                r.why.clone(),
            ]
        })
        .collect();
    table(out, "audit", &head, &rows);
    let head: Vec<String> = ["CPU", "promise", "kept", "what was seen"]
        .map(String::from)
        .to_vec();
    let rows: Vec<Vec<String>> = a
        .promises
        .iter()
        .map(|p| {
            vec![
                p.cpu.to_string(),
                p.promise.clone(),
                match p.kept {
                    Some(true) => "kept",
                    Some(false) => "BROKEN",
                    None => "not made",
                }
                .to_string(),
                p.detail.clone(),
            ]
        })
        .collect();
    table(out, "promises", &head, &rows);
    if !a.notes.is_empty() {
        list(out, &a.notes, "");
    }
}

/// The latency of each thread of a run.
fn latency_table(out: &mut String, run: &Run) {
    out.push_str("<h3>Latency per thread (µs)</h3>\n");
    let mut head = vec!["thread".to_string(), "CPU".to_string()];
    head.extend(Metric::ALL.iter().map(|m| m.name().to_string()));
    let rows: Vec<Vec<String>> = run
        .threads
        .iter()
        .map(|t| {
            let mut row = vec![t.name.clone(), t.cpu.map_or("?".into(), |c| c.to_string())];
            row.extend(
                Metric::ALL
                    .iter()
                    .map(|m| compare::show(*m, m.value(&t.stats))),
            );
            row
        })
        .collect();
    table(out, "threads", &head, &rows);
}

fn run_section(out: &mut String, i: usize, run: &Run) {
    let _ = writeln!(
        out,
        "<section id=\"run-{i}\">\n<h2>{}</h2>\n<p class=\"muted\">{} — {}</p>",
        escape(&run.label),
        escape(&run.path),
        escape(&plot::caption_line(run))
    );
    let noise_only = run.threads.is_empty() && !run.noise.is_empty();
    if !noise_only {
        latency_table(out, run);
    }
    noise::section(out, i, run);
    irq_tasks(out, &run.details.irq_tasks);
    if let Some(audit) = &run.details.audit {
        audit_table(out, audit);
    }
    // The steal time beside the culprits when the flight recorder named
    // them, else beside the worst wake-ups.
    let steal = run.details.steal.as_slice();
    let traced = run
        .details
        .trace
        .as_ref()
        .is_some_and(|t| t.unavailable.is_none());
    worst_wakeups(out, run, if traced { &[] } else { steal });
    if let Some(trace) = &run.details.trace {
        why_late(out, trace, steal);
    }
    let d = &run.details;
    if let Some(end) = &d.end {
        let _ = writeln!(out, "<p>Ended: {}</p>", escape(end));
    }
    out.push_str("<h3>What rtlab changed on the system</h3>\n");
    let none = match run.format {
        crate::dataset::Format::Rtlab => {
            "Nothing: the run left every system setting as it found it."
        }
        _ => "Not recorded in this format.",
    };
    list(out, &d.changes, none);
    out.push_str("<h3>Load programs</h3>\n");
    list(out, &d.programs, "None recorded.");
    if !d.warnings.is_empty() {
        out.push_str("<h3>Warnings</h3>\n");
        list(out, &d.warnings, "");
    }
    out.push_str("<h3>System</h3>\n");
    match &d.system {
        Some(system) => details::groups(out, "Machine and kernel", system),
        None => out.push_str("<p class=\"muted\">Not recorded in this format.</p>\n"),
    }
    out.push_str("<h3>Configuration</h3>\n");
    if let Some(command) = &d.command {
        let _ = writeln!(out, "<pre>{}</pre>", escape(command));
    }
    match &d.configuration {
        Some(plan) => details::groups(out, "Experiment", plan),
        None if d.command.is_none() => {
            out.push_str("<p class=\"muted\">Not recorded in this format.</p>\n")
        }
        None => {}
    }
    out.push_str("</section>\n");
}

/// The whole report.
pub fn render(
    runs: &[Run],
    title: &str,
    per_thread: bool,
    plot_opts: &plot::PlotOptions,
) -> Result<String, String> {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"generator\" content=\"rtlab {}\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        env!("CARGO_PKG_VERSION"),
        escape(title)
    );
    let _ = writeln!(
        out,
        "<header><h1>{}</h1><p class=\"muted\">rtlab {} report of {} run(s).</p></header>",
        escape(title),
        env!("CARGO_PKG_VERSION"),
        runs.len()
    );
    out.push_str("<nav><a href=\"#summary\">Summary</a><a href=\"#plots\">Plots</a>");
    for (i, run) in runs.iter().enumerate() {
        let _ = write!(out, "<a href=\"#run-{i}\">{}</a>", escape(&run.label));
    }
    out.push_str("</nav>\n");

    out.push_str("<section id=\"summary\">\n<h2>Summary</h2>\n");
    out.push_str(
        "<p class=\"muted\">Latencies in µs; in brackets, the difference against the first run.</p>\n",
    );
    let columns = compare::columns(runs, per_thread);
    let mut head = vec![String::new()];
    head.extend(columns.iter().map(|c| c.label.clone()));
    let rows: Vec<Vec<String>> = compare::rows(&columns)
        .into_iter()
        .map(|(name, cells)| std::iter::once(name).chain(cells).collect())
        .collect();
    table(&mut out, "compare", &head, &rows);
    out.push_str("</section>\n");

    out.push_str("<section id=\"plots\">\n<h2>Plots</h2>\n");
    // The noise panels are in each run's noise section; here too, all runs
    // together, when several runs have noise threads.
    let latency = Panel::default_for(runs);
    let latency: Vec<Panel> = latency.into_iter().filter(|p| !p.is_noise()).collect();
    for panel in &latency {
        let svg = plot::panel_svg(runs, *panel, (1200, 560), plot_opts)?;
        // The SVG document's XML declaration has no place inside HTML.
        let body = svg.find("<svg").map_or(svg.as_str(), |at| &svg[at..]);
        let _ = writeln!(out, "<figure>\n{body}\n</figure>");
    }
    let with_noise = runs.iter().filter(|r| !r.noise.is_empty()).count();
    if with_noise > 1 {
        out.push_str("<h3>OS noise, every run</h3>\n");
        noise::plots(&mut out, runs);
    } else if latency.is_empty() {
        out.push_str(
            "<p class=\"muted\">No latency to draw: the noise threads' plots are in their run's section.</p>\n",
        );
    }
    out.push_str("</section>\n");

    for (i, run) in runs.iter().enumerate() {
        run_section(&mut out, i, run);
    }
    let _ = write!(
        out,
        "<footer><p id=\"check\">This page needs a browser to check its tables and plots.</p></footer>\n\
         <script>{CHECK_SCRIPT}</script>\n</body>\n</html>\n"
    );
    Ok(out)
}

mod details;
mod noise;

#[cfg(test)]
mod tests;

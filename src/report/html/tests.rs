use super::*;
use crate::dataset::tests::sample_runs;

#[test]
fn escapes_markup() {
    assert_eq!(
        escape("<a href=\"x\">&'</a>"),
        "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;"
    );
}

#[test]
fn page_is_self_contained_with_every_section() {
    let dir = tempfile::tempdir().unwrap();
    let mut runs = sample_runs(&dir);
    runs[0].label = "idle <b>".into();
    let page = render(&runs, "Board & load", false, &plot::PlotOptions::default()).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains("<title>Board &amp; load</title>"));
    // Nothing to fetch: no external script, style, image or font.
    for external in ["<link", "src=", "@import", "url(", "href=\"http"] {
        assert!(!page.contains(external), "{external} in the page");
    }
    assert!(!page.contains("<?xml"), "SVG declarations stripped");
    assert_eq!(page.matches("<figure>").count(), 3);
    assert_eq!(page.matches("<svg").count(), 3);
    assert!(page.contains("idle &lt;b&gt;") && !page.contains("idle <b>"));
    // Summary (1) + per run: threads and worst wake-ups for the two rtlab
    // runs (2 each), a table per group of their system and configuration,
    // threads only for the cyclictest histogram (1).
    let groups = page.matches("<div class=\"group\">").count()
        + page.matches("<div class=\"group wide\"").count();
    assert!(groups >= 2 * 4, "{groups} groups");
    assert_eq!(page.matches("<table").count(), 1 + 2 + 2 + groups + 1);
    for text in [
        "<h2>Summary</h2>",
        "<h2>Plots</h2>",
        "What rtlab changed on the system",
        "PM QoS: cpu_dma_latency held at 0 µs",
        "IRQ 30 virtio0 smp_affinity_list: 0 (was 0-1; restored at the end)",
        "ping -f localhost: started once, ended once",
        "<tr title=\"kernel_release\"><th>kernel release</th><td>6.18.0-rt</td></tr>",
        "<h4>Preemption</h4>",
        "<th>model</th><td>PREEMPT_RT</td>",
        "<h4>Timer threads</h4>",
        "Not recorded in this format.",
        "<td>p99.99 (µs)</td>",
        "Worst wake-ups (",
        "id=\"check\"",
        "data-rendered",
    ] {
        assert!(page.contains(text), "{text:?} missing");
    }
}

#[test]
fn per_thread_summary_has_a_column_per_thread() {
    let dir = tempfile::tempdir().unwrap();
    let runs = sample_runs(&dir);
    let page = render(&runs, "t", true, &plot::PlotOptions::default()).unwrap();
    let summary =
        &page[page.find("<h2>Summary</h2>").unwrap()..page.find("<h2>Plots</h2>").unwrap()];
    for col in [
        "<th>idle</th>",
        "<th>loaded T0</th>",
        "<th>loaded T1</th>",
        "<th>old T0</th>",
        "<th>old T1</th>",
    ] {
        assert!(summary.contains(col), "{col} missing");
    }
}

/// An explained wake-up whose parts are `(kind, what, ns)`, largest first.
fn explained(sample: u64, parts: &[(&str, &str, u64)]) -> Explanation {
    let latency: u64 = parts.iter().map(|p| p.2).sum();
    let mut at = 0;
    let timeline: Vec<serde_json::Value> = parts
        .iter()
        .map(|p| {
            let s =
                serde_json::json!({"after_deadline_ns": at, "ns": p.2, "kind": p.0, "what": p.1});
            at += p.2;
            s
        })
        .collect();
    serde_json::from_value(serde_json::json!({
        "timer": 0, "sample": sample, "cpu": 1, "deadline_ns": 1_000_000, "latency_ns": latency,
        "woken_after_ns": null, "wake_to_switch_ns": null,
        "parts": parts.iter().map(|p| serde_json::json!({"kind": p.0, "what": p.1, "pid": 7,
            "prio": 19, "ns": p.2, "before_wake": false})).collect::<Vec<_>>(),
        "cause": format!("{} ran", parts[0].1), "events": 3, "trace_file": null,
        "timeline": timeline,
    }))
    .unwrap()
}

#[test]
fn the_main_culprit_of_most_spikes_gets_a_timeline_with_a_time_axis() {
    // Three rare big spikes by an IRQ; six smaller ones by one thread.
    let mut explanations = vec![
        explained(1, &[("irq", "IRQ 36 disk", 900_000)]),
        explained(2, &[("irq", "IRQ 36 disk", 800_000)]),
        explained(3, &[("irq", "IRQ 36 disk", 700_000)]),
    ];
    for i in 0..6 {
        explanations.push(explained(10 + i, &[("thread", "hog", 100_000 + i * 1000)]));
    }
    let mut r = crate::trace::explain::TraceReport {
        threshold_ns: 50_000,
        explanations,
        ..Default::default()
    };
    r.culprits = crate::trace::explain::verdict::culprits(&r.explanations);
    let shown: Vec<u64> = timelines_shown(&r).iter().map(|e| e.sample).collect();
    assert_eq!(shown, [1, 2, 3, 15], "the hog's worst is shown too");
    // When the worst three include it, nothing is added.
    r.explanations.truncate(5);
    r.culprits = crate::trace::explain::verdict::culprits(&r.explanations);
    assert_eq!(timelines_shown(&r).len(), 3);
    let mut out = String::new();
    why_late(&mut out, &r, &[]);
    // The axis (µs after the deadline) and the priority column.
    assert!(
        out.contains(">0.0 µs</text>") && out.contains(">900.0 µs</text>"),
        "{out}"
    );
    assert!(out.contains("<th>priority</th>"), "{out}");
    assert!(out.contains("real-time priority 80"), "{out}");
}

#[test]
fn an_irq_tasks_worst_samples_are_listed_with_their_exits() {
    let seed = include_str!("../../../tests/seeds/rtlab-result-trace-experiments.json");
    let mut doc: serde_json::Value = serde_json::from_str(seed).unwrap();
    doc["irq_tasks"][0]["worst"] = serde_json::json!([
        {"exit_ns": 3163016126000u64, "latency_ns": 4065000, "irq_cpu": 1, "task_cpu": 0,
         "tid": 22208, "inferred": false},
        {"exit_ns": 3163016999000u64, "latency_ns": 30000, "irq_cpu": 1, "task_cpu": 1,
         "tid": 22208, "inferred": true},
    ]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    std::fs::write(&path, doc.to_string()).unwrap();
    let runs = crate::dataset::load_all(&[path], &[]).unwrap();
    let page = render(&runs, "t", false, &plot::PlotOptions::default()).unwrap();
    assert!(
        page.contains("<td>4065.0</td><td>3163.016126</td>"),
        "no worst row"
    );
    assert!(
        page.contains("<td>≥ 30.0</td>"),
        "an inferred sample is a lower bound"
    );
}

/// A traced run on a VM: the worst wake-ups say each one's cause (the
/// explanation's, else why it was not explained), and the steal time of
/// the measured CPU sits beside the culprits; compare has its row.
#[test]
fn the_worst_wake_ups_have_their_cause_and_steal_sits_beside_the_culprits() {
    let seed = include_str!("../../../tests/seeds/rtlab-result-irq-latency.json");
    let mut doc: serde_json::Value = serde_json::from_str(seed).unwrap();
    let worst = doc["timers"][0]["spikes"]["worst"].clone();
    let (first, second) = (&worst[0], &worst[1]);
    let mut e = explained(
        first["sample"].as_u64().unwrap(),
        &[("thread", "hog <x>", 276_238)],
    );
    e.cause =
        "thread hog <x> (pid 7) ran 276.2 µs of 276.2 µs: at nice 0 it could only keep the CPU"
            .into();
    let mut trace = crate::trace::explain::TraceReport {
        threshold_ns: 100_000,
        explanations: vec![e],
        ..Default::default()
    };
    trace.culprits = crate::trace::explain::verdict::culprits(&trace.explanations);
    trace.worst_unexplained = vec![crate::trace::explain::Unexplained {
        timer: 0,
        sample: second["sample"].as_u64().unwrap(),
        deadline_ns: 0,
        latency_ns: second["latency_ns"].as_u64().unwrap(),
        why: "not read: the buffer was overwritten".into(),
    }];
    doc["trace"] = serde_json::to_value(&trace).unwrap();
    let cpu = doc["timers"][0]["cpus"][0].as_u64().unwrap();
    doc["steal_ms"] = serde_json::json!([[cpu, 24.0], [cpu + 1, 3.0]]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vm.json");
    std::fs::write(&path, doc.to_string()).unwrap();
    let runs = crate::dataset::load_all(&[path], &[]).unwrap();
    let page = render(&runs, "t", false, &plot::PlotOptions::default()).unwrap();
    // The cause column: the explanation's first clause (all of it on
    // hover), the reason of one not explained, escaped.
    assert!(page.contains("<th>cause</th>"), "no cause column");
    assert!(
        page.contains(">thread hog &lt;x&gt; (pid 7) ran 276.2 µs of 276.2 µs</td>"),
        "no explained cause"
    );
    assert!(page.contains(">not explained: not read</td>"), "no reason");
    assert!(page.contains(">below trace.threshold (100.0 µs): not traced</td>"));
    // Steal beside the culprit table, in the same row of the layout.
    let culprits = page.find("<table class=\"culprits\">").unwrap();
    let beside = &page[page[..culprits].rfind("<div class=\"beside\">").unwrap()..];
    let aside = beside.find("<aside class=\"steal\">").unwrap();
    assert!(
        aside < beside.find("</div>").unwrap(),
        "steal not beside the culprits"
    );
    assert!(page.contains(&format!(
        "<td>CPU {cpu}</td><td>24 ms</td><td>measured</td>"
    )));
    assert!(page.contains("did not run the measured CPUs for 24 ms in all"));
    // compare's row, from the same reading of the result.
    let rows = compare::rows(&compare::columns(&runs, false));
    let steal = rows.iter().find(|(name, _)| name == "steal").unwrap();
    assert_eq!(steal.1, [format!("24 ms (CPU {cpu})")]);
}

/// A run of noise threads alone, read from its result.
fn noise_run(dir: &tempfile::TempDir) -> Run {
    use crate::dataset::tests::{noise_result, rtlab_noise_doc, write};
    let noise = [noise_result(0, 1), noise_result(1, 2)];
    crate::dataset::load(&write(dir, "noise.json", &rtlab_noise_doc(&[], &noise))).unwrap()
}

#[test]
fn a_run_of_noise_threads_has_its_noise_section_and_no_empty_latency() {
    let dir = tempfile::tempdir().unwrap();
    let runs = [noise_run(&dir)];
    let page = render(&runs, "noise", false, &plot::PlotOptions::default()).unwrap();
    for text in [
        "id=\"run-0-noise\">OS noise (noise threads)</h3>",
        "<td>N0</td><td>1</td><td>TSC at 2596.1 MHz</td><td>2.70 s</td><td>270.0 µs</td>\
         <td>99.9900%</td><td>120.0 µs</td><td>5.0 µs</td><td>30</td><td>1000070</td>",
        "<th>p50 gap</th>",
        "<td>N1</td><td>2</td><td>120.0 µs</td><td>5.500000</td><td>0.500000</td>",
        "No latency to draw",
    ] {
        assert!(page.contains(text), "{text:?} missing");
    }
    // The two noise plots, once (in the run's section), and no latency
    // table or latency plot.
    assert_eq!(page.matches("<figure>").count(), 2);
    assert!(page.contains("every gap between two clock reads"));
    assert!(!page.contains("Latency per thread"));
    assert!(!page.contains("Latency histogram"));
}

/// The causes of a thread's gaps are shown per class and per culprit, a
/// hostile task name escaped.
#[test]
fn the_gaps_causes_are_shown_and_a_hostile_name_escaped() {
    use crate::trace::noise::{ClassTotal, Culprit, NoiseAttribution, NoiseClass};
    let dir = tempfile::tempdir().unwrap();
    let mut run = noise_run(&dir);
    let mut a: NoiseAttribution = serde_json::from_value(serde_json::json!({
        "noise": 0, "cpu": 1, "tid": 7, "threshold_ns": 5000, "gaps": 3, "noise_ns": 60000,
        "classes": {"hw": {"gaps": 1, "net_ns": 6000}, "nmi": {"gaps": 0, "net_ns": 0},
                    "irq": {"gaps": 0, "net_ns": 0}, "softirq": {"gaps": 0, "net_ns": 0},
                    "thread": {"gaps": 2, "net_ns": 50000}},
        "unseen_ns": 4000, "culprits": [], "culprits_folded": 0, "culprits_left_out": 0,
        "culprits_left_out_ns": 0, "worst": [], "period_ns": 1000000000,
        "period_origin_ns": null, "periods": [], "gaps_late": 0, "gaps_waiting": 0,
        "gaps_dropped": 0, "lost_events": 0
    }))
    .unwrap();
    a.culprits.push(Culprit {
        class: NoiseClass::Thread,
        name: "<script>x</script>".into(),
        pid: Some(42),
        pids: 1,
        gaps: 2,
        net_ns: 50_000,
    });
    assert_eq!(a.classes.throttled, ClassTotal::default());
    run.noise[0].attribution = Some(a);
    let page = render(&[run], "noise", false, &plot::PlotOptions::default()).unwrap();
    assert!(
        page.contains("<td>N0</td><td>3</td><td>4.0 µs</td><td>1 (6.0 µs)</td>"),
        "classes"
    );
    assert!(page.contains("<td>thread</td><td>&lt;script&gt;x&lt;/script&gt;</td><td>42</td><td>2</td><td>50.0 µs</td>"));
    assert!(!page.contains("<script>x"));
}

#[test]
fn noise_plots_of_several_runs_are_drawn_together_too() {
    let dir = tempfile::tempdir().unwrap();
    let mut second = noise_run(&dir);
    second.label = "again".into();
    let runs = [noise_run(&dir), second];
    let page = render(&runs, "noise", false, &plot::PlotOptions::default()).unwrap();
    // Two together, two per run.
    assert_eq!(page.matches("<figure>").count(), 6);
    assert!(page.contains("OS noise, every run"));
}

#[test]
fn hostile_noise_texts_are_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let mut run = noise_run(&dir);
    run.label = "<img src=x onerror=alert(1)>".into();
    let n = &mut run.noise[0];
    n.name = "<script>n</script>".into();
    n.counter = "<b>TSC</b>".into();
    n.error = Some("<script>e</script>".into());
    n.attribution_unavailable = Some("\"><iframe>".into());
    n.summary.percentiles[0].name = "<p99>".into();
    let page = render(&[run], "t", false, &plot::PlotOptions::default()).unwrap();
    for raw in [
        "<img src=x",
        "<script>n",
        "<b>TSC",
        "<script>e",
        "<iframe>",
        "<p99>",
    ] {
        assert!(!page.contains(raw), "{raw:?} unescaped");
    }
    assert!(page.contains("&lt;script&gt;e&lt;/script&gt;"));
    assert!(page.contains("&lt;b&gt;TSC&lt;/b&gt;"));
}

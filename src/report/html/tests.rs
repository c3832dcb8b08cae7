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
    // Summary (1) + per run: threads, worst wake-ups, system, configuration
    // for the two rtlab runs (4 each), threads only for the cyclictest
    // histogram (1).
    assert_eq!(page.matches("<table").count(), 1 + 4 + 4 + 1);
    for text in [
        "<h2>Summary</h2>",
        "<h2>Plots</h2>",
        "What rtlab changed on the system",
        "PM QoS: cpu_dma_latency held at 0 µs",
        "IRQ 30 virtio0 smp_affinity_list: 0 (was 0-1; restored at the end)",
        "ping -f localhost: started once, ended once",
        "<td>kernel_release</td><td>6.18.0-rt</td>",
        "<td>preemption.model</td><td>PREEMPT_RT</td>",
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

//! Softirq time on the audited CPUs, per vector: how many ran, for how
//! long in all, and net of what came inside them (hardware interrupts,
//! IPIs, timer callbacks: as osnoise counts noise, a nested interruption is
//! its own, not the softirq's; the same frames the audit takes out, so the
//! net time is the audit's softirq row), with the longest net run. `/proc/softirqs` counts them
//! only; this says what they cost. A consumer of the trace stream: this
//! file and its line in [`super::STREAM_CONSUMERS`] are the whole figure.

use crate::trace::Figure;
use crate::trace::consumer::{Consumer, Learned, StreamEnd, Tracepoint};
use crate::trace::consumer::{StreamResults, StreamSpec};
use crate::trace::event::Event;
use serde::Serialize;
use std::collections::BTreeMap;

/// Registers the figure with the isolation audit: on the CPUs it watches.
pub fn register(spec: &StreamSpec, out: &mut Vec<Box<dyn Consumer>>) {
    if let Some(cpus) = &spec.audit_cpus {
        out.push(Box::new(Softirqs::new(cpus)));
    }
}

/// The softirqs, and what can come inside one.
const TRACEPOINTS: &[Tracepoint] = &[
    Tracepoint::required(&["irq/softirq_entry"]),
    Tracepoint::required(&["irq/softirq_exit"]),
    Tracepoint::detail(&["irq/irq_handler_entry"]),
    Tracepoint::detail(&["irq/irq_handler_exit"]),
    Tracepoint::detail(&["timer/hrtimer_expire_entry"]),
    Tracepoint::detail(&["timer/hrtimer_expire_exit"]),
    Tracepoint::detail(&["ipi/ipi_entry"]),
    Tracepoint::detail(&["ipi/ipi_exit"]),
    Tracepoint::detail(&["irq_vectors/local_timer_entry"]),
    Tracepoint::detail(&["irq_vectors/local_timer_exit"]),
    Tracepoint::detail(&["irq_vectors/reschedule_entry"]),
    Tracepoint::detail(&["irq_vectors/reschedule_exit"]),
    Tracepoint::detail(&["irq_vectors/call_function_entry"]),
    Tracepoint::detail(&["irq_vectors/call_function_exit"]),
    Tracepoint::detail(&["irq_vectors/call_function_single_entry"]),
    Tracepoint::detail(&["irq_vectors/call_function_single_exit"]),
    Tracepoint::detail(&["irq_vectors/irq_work_entry"]),
    Tracepoint::detail(&["irq_vectors/irq_work_exit"]),
    Tracepoint::detail(&["irq_vectors/x86_platform_ipi_entry"]),
    Tracepoint::detail(&["irq_vectors/x86_platform_ipi_exit"]),
    Tracepoint::detail(&["irq_vectors/thermal_apic_entry"]),
    Tracepoint::detail(&["irq_vectors/thermal_apic_exit"]),
];

/// One vector's softirqs on one CPU.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VectorTime {
    /// The CPU.
    pub cpu: usize,
    /// The vector's name (`TIMER`, `NET_RX`, `RCU`).
    pub vector: String,
    /// Softirqs that began and ended in the trace.
    pub count: u64,
    /// Their time from entry to exit (ns).
    pub total_ns: u64,
    /// Less the hardware interrupts inside them (ns).
    pub net_ns: u64,
    /// The longest net run (ns).
    pub max_net_ns: u64,
}

/// Per CPU: the softirq running (vector, since, nested ns), and how deep
/// the frames inside it are, since the outermost opened.
#[derive(Debug, Default)]
struct CpuState {
    softirq: Option<(String, u64, u64)>,
    inside: Option<(u32, u64)>,
}

/// The consumer.
#[derive(Debug)]
pub struct Softirqs {
    cpus: Vec<usize>,
    state: BTreeMap<usize, CpuState>,
    times: BTreeMap<(usize, String), VectorTime>,
}

/// Most (CPU, vector) rows kept: the kernel has ten vectors.
const MAX_ROWS: usize = 4096;

impl Softirqs {
    /// The figure for `cpus`.
    pub fn new(cpus: &[usize]) -> Self {
        Softirqs {
            cpus: cpus.to_vec(),
            state: BTreeMap::new(),
            times: BTreeMap::new(),
        }
    }

    fn ended(&mut self, cpu: usize, vector: String, since: u64, nested: u64, at: u64) {
        let key = (cpu, vector);
        if !self.times.contains_key(&key) && self.times.len() >= MAX_ROWS {
            return;
        }
        let total = at.saturating_sub(since);
        let net = total.saturating_sub(nested);
        let t = self.times.entry(key.clone()).or_insert_with(|| VectorTime {
            cpu,
            vector: key.1,
            ..VectorTime::default()
        });
        t.count += 1;
        t.total_ns = t.total_ns.saturating_add(total);
        t.net_ns = t.net_ns.saturating_add(net);
        t.max_net_ns = t.max_net_ns.max(net);
    }

    /// The rows, by CPU then most net time first.
    pub fn rows(&self) -> Vec<VectorTime> {
        let mut rows: Vec<VectorTime> = self.times.values().cloned().collect();
        rows.sort_by_key(|r| (r.cpu, std::cmp::Reverse(r.net_ns)));
        rows
    }
}

impl Consumer for Softirqs {
    fn tracepoints(&self) -> Vec<Tracepoint> {
        TRACEPOINTS.to_vec()
    }

    fn learn(&mut self, _: &Learned) {}

    fn feed(&mut self, e: &Event) {
        if !self.cpus.contains(&e.cpu) {
            return;
        }
        let state = self.state.entry(e.cpu).or_default();
        let name = e.name.as_ref();
        match name {
            "softirq_entry" => {
                let vector = e.field("action").unwrap_or("?").to_string();
                state.softirq = Some((vector, e.ts_ns, 0));
                state.inside = None;
            }
            "softirq_exit" => {
                // An exit whose entry the trace does not hold is not counted.
                if let Some((vector, since, nested)) = state.softirq.take() {
                    self.ended(e.cpu, vector, since, nested, e.ts_ns);
                }
            }
            _ if state.softirq.is_some() && crate::trace::audit::opens_frame(e) => {
                state.inside = match state.inside {
                    Some((depth, since)) => Some((depth + 1, since)),
                    None => Some((1, e.ts_ns)),
                };
            }
            _ if crate::trace::audit::closes_frame(name) => match state.inside {
                Some((1, since)) => {
                    if let Some(s) = state.softirq.as_mut() {
                        s.2 = s.2.saturating_add(e.ts_ns.saturating_sub(since));
                    }
                    state.inside = None;
                }
                Some((depth, since)) => state.inside = Some((depth - 1, since)),
                None => {}
            },
            _ => {}
        }
    }

    fn finish(self: Box<Self>, end: &StreamEnd, into: &mut StreamResults) {
        let rows = self.rows();
        let value = serde_json::json!({ "rows": rows, "lost_events": end.lost });
        into.figures.push(Figure {
            key: "softirqs".into(),
            value,
            closing: closing(&rows, end.lost),
        });
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The closing text: one line per CPU and vector.
fn closing(rows: &[VectorTime], lost: u64) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from("Softirq time on the audited CPUs (net of interrupts inside):\n");
    for r in rows {
        out.push_str(&format!(
            "  CPU {:<3} {:<8} {:>8} runs  {:>10.1} µs net  {:>10.1} µs in all  longest {:.1} µs\n",
            r.cpu,
            crate::text::one_line(&r.vector),
            r.count,
            r.net_ns as f64 / 1000.0,
            r.total_ns as f64 / 1000.0,
            r.max_net_ns as f64 / 1000.0,
        ));
    }
    if lost > 0 {
        out.push_str(&format!(
            "  (the kernel lost {lost} events: the counts are lower bounds)\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::text;

    /// A softirq with an interrupt inside (and a timer callback inside
    /// that) is counted net of the interrupt; one on a CPU not audited, or
    /// whose entry the trace lacks, is not counted.
    #[test]
    fn softirq_time_is_net_of_the_interrupts_inside() {
        let text = "\
<idle>-0 [001] d.s.. 100.000010: softirq_exit: vec=1 [action=TIMER]
<idle>-0 [001] d.s.. 100.000100: softirq_entry: vec=7 [action=SCHED]
<idle>-0 [001] d.h.. 100.000110: local_timer_entry: vector=236
<idle>-0 [001] d.h.. 100.000111: hrtimer_expire_entry: hrtimer=000000001 now=100000111000 function=tick_nohz_handler
<idle>-0 [001] d.h.. 100.000113: hrtimer_expire_exit: hrtimer=000000001
<idle>-0 [001] d.h.. 100.000115: local_timer_exit: vector=236
<idle>-0 [001] d.s.. 100.000130: softirq_exit: vec=7 [action=SCHED]
<idle>-0 [001] d.s.. 100.000200: softirq_entry: vec=7 [action=SCHED]
<idle>-0 [001] d.s.. 100.000210: softirq_exit: vec=7 [action=SCHED]
<idle>-0 [000] d.s.. 100.000300: softirq_entry: vec=1 [action=TIMER]
<idle>-0 [000] d.s.. 100.000400: softirq_exit: vec=1 [action=TIMER]
";
        let mut s = Softirqs::new(&[1]);
        for e in text.lines().filter_map(text::line) {
            s.feed(&e);
        }
        let rows = s.rows();
        assert_eq!(
            rows,
            [VectorTime {
                cpu: 1,
                vector: "SCHED".into(),
                count: 2,
                total_ns: 40_000,
                net_ns: 35_000,
                max_net_ns: 25_000,
            }]
        );
        // The audit's softirq row, fed the same events, has the same net.
        let mut audit = crate::trace::audit::Audit::new(&[1]);
        for e in text.lines().filter_map(crate::trace::text::line) {
            audit.feed(&e);
        }
        let report = audit.finish(&Default::default(), 0);
        let row = report
            .rows
            .iter()
            .find(|r| r.what == "softirq SCHED")
            .unwrap();
        assert_eq!((row.count, row.total_ns), (2, 35_000));
        let text = closing(&rows, 0);
        assert!(text.contains("CPU 1   SCHED           2 runs"), "{text}");
        assert!(text.contains("35.0 µs net"), "{text}");
    }
}

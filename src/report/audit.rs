//! The isolation audit and the IRQ-to-task measurements as text: after a
//! run's closing lines, and again with `rtlab explain`.

use crate::trace::audit::{AuditReport, SourceKind};
use crate::trace::irq_task::IrqTaskResult;

fn us(ns: u64) -> String {
    format!("{:.1} µs", ns as f64 / 1000.0)
}

/// A source kind as the tables name it.
pub fn kind_name(kind: SourceKind) -> &'static str {
    match kind {
        SourceKind::Tick => "tick",
        SourceKind::Timer => "timer",
        SourceKind::TimerInterrupt => "timer interrupt",
        SourceKind::Irq => "IRQ",
        SourceKind::Softirq => "softirq",
        SourceKind::Ipi => "IPI",
        SourceKind::IpiSent => "IPI sent",
        SourceKind::Vector => "vector",
        SourceKind::Nmi => "NMI",
        SourceKind::WorkItem => "work item",
        SourceKind::KernelThread => "kernel thread",
        SourceKind::Task => "task",
    }
}

/// The audit: per CPU, every source that does not belong (then those that
/// do, in short), and each promise checked.
pub fn audit(r: &AuditReport) -> String {
    let mut out = String::from("\nIsolation audit");
    if let Some(why) = &r.unavailable {
        out.push_str(&format!(":\n  not done: {why}\n"));
        return out;
    }
    out.push_str(&format!(
        " of CPU {} over {:.3} s:\n",
        crate::cpulist::format(&r.cpus),
        r.duration_ns as f64 / 1e9
    ));
    for &cpu in &r.cpus {
        let intruders: Vec<_> = r.intruders().filter(|x| x.cpu == cpu).collect();
        out.push_str(&format!(
            "  CPU {cpu}: {} sources that do not belong on an isolated CPU\n",
            intruders.len()
        ));
        for x in intruders.iter().take(30) {
            out.push_str(&format!(
                "    {:<15} {:<42} {:>7}x total {:>11} max {:>10}  {}\n",
                kind_name(x.kind),
                x.who(),
                x.count,
                us(x.total_ns),
                us(x.max_ns),
                x.why
            ));
        }
        if intruders.len() > 30 {
            out.push_str(&format!(
                "    … and {} more (in the JSON result)\n",
                intruders.len() - 30
            ));
        }
        let belong: Vec<String> = r
            .rows
            .iter()
            .filter(|x| x.cpu == cpu && x.belongs)
            .map(|x| format!("{} ({}x)", x.who(), x.count))
            .collect();
        if !belong.is_empty() {
            out.push_str(&format!("    belong: {}\n", belong.join(", ")));
        }
        for p in r.promises.iter().filter(|p| p.cpu == cpu) {
            let verdict = match p.kept {
                Some(true) => "kept",
                Some(false) => "BROKEN",
                None => "not made",
            };
            out.push_str(&format!(
                "    promise {:<14} {verdict}: {}\n",
                p.promise, p.detail
            ));
        }
    }
    for n in &r.notes {
        out.push_str(&format!("  note: {n}\n"));
    }
    out
}

/// One IRQ-to-task measurement: its delays and where every handler exit
/// went.
pub fn irq_task(m: &IrqTaskResult) -> String {
    let names: Vec<String> = m
        .irq_names
        .iter()
        .map(|(n, name)| format!("{n} ({name})"))
        .collect();
    let mut out = format!(
        "\nIRQ-to-task latency I{}: {} → {} (IRQ {}):\n",
        m.index,
        m.irq,
        m.task,
        if names.is_empty() {
            "none seen".to_string()
        } else {
            names.join(", ")
        }
    );
    if m.from_exit.samples > 0 {
        out.push_str(&irq_task_samples(m));
    }
    let c = &m.counts;
    out.push_str(&format!(
        "  {} handler exits: {} woke the task, {} found it running or woken, {} it slept through, \
         {} saw it woken for another cause, {} unresolved at the end\n",
        c.irqs,
        c.matched,
        c.task_running,
        c.no_wakeup,
        c.other_cause_total(),
        c.unresolved
    ));
    if !c.other_cause.is_empty() {
        let causes: Vec<String> = c
            .other_cause
            .iter()
            .take(6)
            .map(|(what, n)| format!("{what} ({n})"))
            .collect();
        out.push_str(&format!("  other causes: {}\n", causes.join(", ")));
    }
    if let (Some(outer), Some(inner)) = (m.kernel_count, m.kernel_count_within) {
        out.push_str(&format!(
            "  the kernel counted {inner} to {outer} (/proc/interrupts, read just inside and \
             outside the trace)\n"
        ));
    }
    if c.switch_in_inferred > 0 {
        out.push_str(&format!(
            "  note: {} switch-ins were not logged by this kernel and were taken at the CPU's \
             previous event, a lower bound: the task showed running {} later on average \
             (at most {})\n",
            c.switch_in_inferred,
            us(c.inferred_gap_total_ns / c.switch_in_inferred),
            us(c.inferred_gap_max_ns)
        ));
    }
    if m.lost_events > 0 {
        out.push_str(&format!(
            "  note: the kernel lost {} events: the counts are lower bounds\n",
            m.lost_events
        ));
    }
    out
}

/// An IRQ-to-task measurement's delays: percentiles, CPUs, worst samples.
fn irq_task_samples(m: &IrqTaskResult) -> String {
    let s = &m.from_exit;
    let mut out = String::new();
    let pick = |name: &str| {
        s.percentiles
            .iter()
            .find(|p| p.name == name)
            .map_or_else(|| "-".into(), |p| us(p.value_ns))
    };
    out.push_str(&format!(
        "  from the handler's exit: {} samples, min {}, p50 {}, p99 {}, max {}, mean {}\n",
        s.samples,
        us(s.min_ns),
        pick("p50"),
        pick("p99"),
        us(s.max_ns),
        us(s.mean_ns as u64)
    ));
    out.push_str(&format!(
        "  from the handler's entry: min {}, max {}, mean {}\n",
        us(m.from_entry.min_ns),
        us(m.from_entry.max_ns),
        us(m.from_entry.mean_ns as u64)
    ));
    let pairs: Vec<String> = m
        .cpu_pairs
        .iter()
        .map(|p| {
            format!(
                "IRQ on CPU {} → task on CPU {}: {}",
                p.irq_cpu, p.task_cpu, p.samples
            )
        })
        .collect();
    out.push_str(&format!("  {}\n", pairs.join("; ")));
    let worst: Vec<String> = m
        .worst
        .iter()
        .take(3)
        .map(|w| {
            format!(
                "{}{} after the exit at {}.{:06} s (TID {})",
                if w.inferred { "≥ " } else { "" },
                us(w.latency_ns),
                w.exit_ns / 1_000_000_000,
                w.exit_ns / 1_000 % 1_000_000,
                w.tid
            )
        })
        .collect();
    if !worst.is_empty() {
        out.push_str(&format!("  worst (trace clock): {}\n", worst.join("; ")));
    }

    out
}

//! What each CPU was doing, kept for the last moments: the task that held
//! it and the interrupts that ran on it, so that a late wake-up's delay is
//! split into who held the CPU, each part measured, the parts adding up.

use crate::trace::event::Event;
use std::collections::VecDeque;

/// Most closed stretches kept per CPU (a second of a busy CPU's switches
/// and interrupts at most; a wake-up is explained from the last of them).
const MAX_KEPT: usize = 2048;
/// Highest CPU number followed.
pub const MAX_CPU: usize = 4096;

/// What held a CPU for a stretch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Task,
    Softirq,
    Hardirq,
}

#[derive(Debug, Clone)]
struct Stretch {
    kind: Kind,
    label: String,
    from: u64,
    to: u64,
}

/// One CPU's recent stretches, and what holds it now.
#[derive(Debug, Default, Clone)]
struct Cpu {
    kept: VecDeque<Stretch>,
    /// The task on the CPU and since when.
    task: Option<(String, u64)>,
    /// Interrupts entered and not left (label, since).
    irqs: Vec<(Kind, String, u64)>,
}

/// The CPUs' recent stretches.
#[derive(Debug, Default)]
pub struct Occupancy {
    cpus: Vec<Cpu>,
}

/// A task's label: `comm-pid`, or `idle`.
pub fn task_label(comm: &str, pid: i64) -> String {
    if pid == 0 {
        "idle".into()
    } else {
        format!("{comm}-{pid}")
    }
}

impl Occupancy {
    fn cpu(&mut self, cpu: usize) -> Option<&mut Cpu> {
        if cpu >= MAX_CPU {
            return None;
        }
        if self.cpus.len() <= cpu {
            self.cpus.resize_with(cpu + 1, Cpu::default);
        }
        self.cpus.get_mut(cpu)
    }

    /// Follows one event.
    pub fn feed(&mut self, e: &Event) {
        let Some(cpu) = self.cpu(e.cpu) else {
            return;
        };
        match e.name.as_ref() {
            "sched_switch" => {
                let prev = task_label(
                    e.field("prev_comm").unwrap_or("?"),
                    e.num("prev_pid").unwrap_or(-1),
                );
                let from = cpu.task.take().map_or(e.ts_ns, |t| t.1);
                cpu.close(Kind::Task, prev, from, e.ts_ns);
                let next = task_label(
                    e.field("next_comm").unwrap_or("?"),
                    e.num("next_pid").unwrap_or(-1),
                );
                cpu.task = Some((next, e.ts_ns));
            }
            "irq_handler_entry" => cpu.irqs.push((Kind::Hardirq, e.irq_label(), e.ts_ns)),
            "softirq_entry" => {
                let what = e.field("action").or(e.field("vec")).unwrap_or("?");
                cpu.irqs
                    .push((Kind::Softirq, format!("softirq {what}"), e.ts_ns));
            }
            "irq_handler_exit" | "softirq_exit" => {
                let kind = if e.name == "softirq_exit" {
                    Kind::Softirq
                } else {
                    Kind::Hardirq
                };
                if let Some(at) = cpu.irqs.iter().rposition(|i| i.0 == kind) {
                    let (kind, label, from) = cpu.irqs.remove(at);
                    cpu.close(kind, label, from, e.ts_ns);
                }
            }
            _ => {}
        }
    }

    /// The interrupt CPU `cpu` is in now (the innermost), if any.
    pub fn context(&self, cpu: usize) -> Option<String> {
        let i = self.cpus.get(cpu)?.irqs.last()?;
        Some(i.1.clone())
    }

    /// Who held CPU `cpu` from `from` to `to`, each with its time (ns),
    /// largest first: tasks (less the interrupts that ran over them),
    /// interrupts, softirqs. What no stretch covers is not in it.
    pub fn held(&self, cpu: usize, from: u64, to: u64) -> Vec<(String, u64)> {
        let Some(c) = self.cpus.get(cpu) else {
            return Vec::new();
        };
        let overlap = |s: &Stretch| s.to.min(to).saturating_sub(s.from.max(from));
        // Summed signed (an interrupt closes before the task it ran over,
        // so its time is taken before the task's is added), clamped last.
        let mut sums: Vec<(String, i128)> = Vec::new();
        let add = |label: &str, ns: i128, sums: &mut Vec<(String, i128)>| match sums
            .iter_mut()
            .find(|p| p.0 == label)
        {
            Some(p) => p.1 += ns,
            None => sums.push((label.to_string(), ns)),
        };
        let stretches: Vec<&Stretch> = c.kept.iter().filter(|s| overlap(s) > 0).collect();
        for s in &stretches {
            let ns = overlap(s) as i128;
            add(&s.label, ns, &mut sums);
            // An interrupt's time is taken from what it interrupted.
            let under = match s.kind {
                Kind::Task => None,
                Kind::Softirq => stretches
                    .iter()
                    .find(|t| t.kind == Kind::Task && t.from <= s.from && s.from < t.to),
                Kind::Hardirq => stretches
                    .iter()
                    .find(|t| t.kind == Kind::Softirq && t.from <= s.from && s.from < t.to)
                    .or_else(|| {
                        stretches
                            .iter()
                            .find(|t| t.kind == Kind::Task && t.from <= s.from && s.from < t.to)
                    }),
            };
            if let Some(u) = under {
                add(&u.label.clone(), -ns, &mut sums);
            }
        }
        let mut parts: Vec<(String, u64)> = sums
            .into_iter()
            .map(|(label, ns)| (label, ns.max(0) as u64))
            .collect();
        parts.retain(|p| p.1 > 0);
        parts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        parts
    }
}

impl Cpu {
    fn close(&mut self, kind: Kind, label: String, from: u64, to: u64) {
        if self.kept.len() >= MAX_KEPT {
            self.kept.pop_front();
        }
        self.kept.push_back(Stretch {
            kind,
            label,
            from,
            to,
        });
    }
}

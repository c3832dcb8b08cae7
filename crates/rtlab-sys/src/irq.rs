//! Interrupts: `/proc/interrupts` (counts per CPU, chip, name) joined with
//! `/proc/irq/N/{smp_affinity_list,effective_affinity_list}` and the IRQ's
//! kernel thread (`irq/N-name`) when it is threaded.

use super::SysRoot;
use super::threads::ThreadInfo;
use serde::Serialize;

/// The kernel thread that runs a threaded IRQ's handler.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IrqThread {
    /// Its TID.
    pub tid: i32,
    /// Its name (`irq/36-virtio1-req.0`).
    pub name: String,
    /// `FIFO 50`.
    pub sched: String,
}

/// One row of `/proc/interrupts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Irq {
    /// The IRQ number, or the arch label (`LOC`, `RES`, `NMI`...).
    pub irq: String,
    /// The controller (`IO-APIC`, `PCI-MSIX-0000:00:02.0`), numbered IRQs only.
    pub chip: String,
    /// Hardware IRQ and trigger (`1-edge`), numbered IRQs only.
    pub hwirq: String,
    /// The device name(s), or the description of an arch interrupt.
    pub name: String,
    /// Count per online CPU, in the order of the header.
    pub counts: Vec<u64>,
    /// `smp_affinity_list` (numbered IRQs).
    pub affinity: Option<String>,
    /// `effective_affinity_list`: where it is really delivered.
    pub effective: Option<String>,
    /// Its kernel thread, when threaded.
    pub thread: Option<IrqThread>,
}

impl Irq {
    /// The IRQ number, for numbered IRQs.
    pub fn number(&self) -> Option<u32> {
        self.irq.parse().ok()
    }

    /// Total count over all CPUs.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// The interrupts table: the CPUs of its columns and one row per IRQ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct Interrupts {
    /// CPU of each count column (`CPU0 CPU1` header).
    pub cpus: Vec<usize>,
    /// The rows, in the kernel's order.
    pub irqs: Vec<Irq>,
}

/// The IRQ numbers of `/proc/irq`.
pub fn numbers(root: &SysRoot) -> Vec<u32> {
    let mut irqs: Vec<u32> = root
        .list(super::paths::IRQ_DIR)
        .unwrap_or_default()
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    irqs.sort_unstable();
    irqs
}

/// Each numbered IRQ with the names of its handlers (the directories of
/// `/proc/irq/N`: the name each driver gave `request_irq`, as the
/// `irq_handler_entry` tracepoint writes it).
pub fn handler_names(root: &SysRoot) -> Vec<(u32, Vec<String>)> {
    numbers(root)
        .into_iter()
        .map(|n| {
            let dir = format!("{}/{n}", super::paths::IRQ_DIR);
            let mut names: Vec<String> = root
                .list(&dir)
                .unwrap_or_default()
                .into_iter()
                .filter(|e| root.is_dir(&format!("{dir}/{e}")))
                .collect();
            names.sort();
            (n, names)
        })
        .collect()
}

/// Each numbered IRQ's total count (over every CPU) now.
pub fn totals(root: &SysRoot) -> Vec<(u32, u64)> {
    parse_interrupts(&root.read("proc/interrupts").unwrap_or_default())
        .irqs
        .iter()
        .filter_map(|i| Some((i.number()?, i.total())))
        .collect()
}

/// Parses `/proc/interrupts` text. Rows with fewer count columns than CPUs
/// (`ERR:`, `MIS:`) keep the counts they have.
pub fn parse_interrupts(text: &str) -> Interrupts {
    let mut lines = text.lines();
    let cpus: Vec<usize> = lines
        .next()
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|c| c.strip_prefix("CPU")?.parse().ok())
        .collect();
    let irqs = lines
        .filter_map(|line| {
            let (label, rest) = line.split_once(':')?;
            let label = label.trim().to_string();
            let mut words = rest.split_whitespace().peekable();
            let mut counts = Vec::new();
            while counts.len() < cpus.len() {
                match words.peek().and_then(|w| w.parse::<u64>().ok()) {
                    Some(n) => {
                        counts.push(n);
                        words.next();
                    }
                    None => break,
                }
            }
            let tail: Vec<&str> = words.collect();
            let numbered = label.parse::<u32>().is_ok();
            let (chip, hwirq, name) = if numbered && tail.len() >= 2 {
                (
                    tail[0].to_string(),
                    tail[1].to_string(),
                    tail[2..].join(" "),
                )
            } else {
                (String::new(), String::new(), tail.join(" "))
            };
            Some(Irq {
                irq: label,
                chip,
                hwirq,
                name,
                counts,
                affinity: None,
                effective: None,
                thread: None,
            })
        })
        .collect();
    Interrupts { cpus, irqs }
}

/// Reads the interrupts now, with each numbered IRQ's affinities and thread
/// (`threads` is the thread list to look the `irq/N-*` threads up in).
pub fn read(root: &SysRoot, threads: &[ThreadInfo]) -> Interrupts {
    let mut table = parse_interrupts(&root.read("proc/interrupts").unwrap_or_default());
    for irq in &mut table.irqs {
        let Some(n) = irq.number() else { continue };
        irq.affinity = root.read_opt(&format!("proc/irq/{n}/smp_affinity_list"));
        irq.effective = root.read_opt(&format!("proc/irq/{n}/effective_affinity_list"));
        let prefix = format!("irq/{n}-");
        irq.thread = threads
            .iter()
            .find(|t| t.kernel && t.name.starts_with(&prefix))
            .map(|t| IrqThread {
                tid: t.tid,
                name: t.name.clone(),
                sched: t.sched_text(),
            });
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "           CPU0       CPU1       \n\
 24:          1          0  IO-APIC   5-edge      ACPI:Ged\n\
 36:          0     173173 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n\
 42:       2845       6144 PCI-MSIX-0000:00:04.0   2-edge      virtio3-tx, extra\n\
NMI:          0          0   Non-maskable interrupts\n\
LOC:     549558    1219221   Local timer interrupts\n\
ERR:          0\n";

    #[test]
    fn parses_proc_interrupts() {
        let t = parse_interrupts(TEXT);
        assert_eq!(t.cpus, vec![0, 1]);
        assert_eq!(t.irqs.len(), 6);
        let i = &t.irqs[1];
        assert_eq!(
            (
                i.irq.as_str(),
                i.chip.as_str(),
                i.hwirq.as_str(),
                i.name.as_str()
            ),
            ("36", "PCI-MSIX-0000:00:02.0", "1-edge", "virtio1-req.0")
        );
        assert_eq!(i.counts, vec![0, 173173]);
        assert_eq!(t.irqs[2].name, "virtio3-tx, extra");
        let loc = &t.irqs[4];
        assert_eq!(loc.number(), None);
        assert_eq!(loc.name, "Local timer interrupts");
        assert_eq!(loc.total(), 549558 + 1219221);
        assert_eq!(t.irqs[5].counts, vec![0]);
        assert_eq!(parse_interrupts(""), Interrupts::default());
    }

    #[test]
    fn joins_affinities_and_threads() {
        let dir = tempfile::tempdir().unwrap();
        super::super::fake::write_tree(
            dir.path(),
            &[
                ("proc/interrupts", TEXT),
                ("proc/irq/36/smp_affinity_list", "0-1\n"),
                ("proc/irq/36/effective_affinity_list", "1\n"),
            ],
        );
        super::super::fake::add_task(dir.path(), 50, "irq/36-virtio1-req.0", 2, "0-1");
        let root = SysRoot::at(dir.path());
        let threads = super::super::threads::list(&root);
        let t = read(&root, &threads);
        let i = &t.irqs[1];
        assert_eq!(i.affinity.as_deref(), Some("0-1"));
        assert_eq!(i.effective.as_deref(), Some("1"));
        assert_eq!(i.thread.as_ref().unwrap().tid, 50);
        assert!(t.irqs[0].affinity.is_none());
    }
}

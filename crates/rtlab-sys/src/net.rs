//! The network's steering knobs: each interface's receive-packet steering
//! (`queues/rx-N/rps_cpus`) and transmit-packet steering
//! (`queues/tx-N/xps_cpus`) masks, and the IRQs of its device.

use super::SysRoot;
use super::paths::NET_CLASS_DIR;

/// One steering mask of one queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SteeringMask {
    /// The interface (`eth0`, `lo`).
    pub dev: String,
    /// The queue (`rx-0`, `tx-1`).
    pub queue: String,
    /// The file, relative to the root.
    pub file: String,
    /// Its value as read (a hex mask, `0` when steering is off).
    pub value: String,
}

/// One steering file of one queue of an interface, whether or not the
/// kernel lets it be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SteeringFile {
    /// The queue (`rx-0`, `tx-1`).
    pub queue: String,
    /// `rps_cpus` (a receive queue) or `xps_cpus` (a transmit queue).
    pub knob: &'static str,
    /// The file, relative to the root.
    pub file: String,
}

/// The network interfaces (`eth0`, `lo`), sorted: the directories of the
/// net class (its `bonding_masters` file is none).
pub fn interfaces(root: &SysRoot) -> Vec<String> {
    root.list(NET_CLASS_DIR)
        .unwrap_or_default()
        .into_iter()
        .filter(|dev| root.is_dir(&format!("{NET_CLASS_DIR}/{dev}")))
        .collect()
}

/// The steering files interface `dev` has, queue by queue: `rx-N/rps_cpus`
/// and `tx-N/xps_cpus` where they exist. The kernel may still refuse to
/// read or write one (XPS on a device with one transmit queue answers
/// ENOENT).
pub fn steering_files(root: &SysRoot, dev: &str) -> Vec<SteeringFile> {
    let queues = format!("{NET_CLASS_DIR}/{dev}/queues");
    let mut out = Vec::new();
    for queue in root.list(&queues).unwrap_or_default() {
        let knob = if queue.starts_with("rx-") {
            "rps_cpus"
        } else if queue.starts_with("tx-") {
            "xps_cpus"
        } else {
            continue;
        };
        // Listed, not opened: the kernel lists a file it then refuses to
        // read.
        let dir = format!("{queues}/{queue}");
        if root
            .list(&dir)
            .unwrap_or_default()
            .iter()
            .any(|n| n == knob)
        {
            let file = format!("{dir}/{knob}");
            out.push(SteeringFile { queue, knob, file });
        }
    }
    out
}

/// Every interface's RPS and XPS masks that can be read (an interface
/// without XPS support gives an error on read and is left out).
pub fn steering_masks(root: &SysRoot) -> Vec<SteeringMask> {
    let mut out = Vec::new();
    for dev in root.list(NET_CLASS_DIR).unwrap_or_default() {
        for f in steering_files(root, &dev) {
            if let Ok(value) = root.read_trim(&f.file) {
                out.push(SteeringMask {
                    dev: dev.clone(),
                    queue: f.queue,
                    file: f.file,
                    value,
                });
            }
        }
    }
    out
}

/// The names an interface's IRQs carry: the interface's own (`eth0-rx-0`)
/// and, for a virtio device, the device's (`virtio2-input.0`).
pub fn irq_name_prefixes(root: &SysRoot, dev: &str) -> Vec<String> {
    let mut out = vec![dev.to_string()];
    let link = root.path(&format!("{NET_CLASS_DIR}/{dev}/device"));
    if let Ok(target) = std::fs::read_link(link)
        && let Some(name) = target.file_name().map(|n| n.to_string_lossy().into_owned())
        && name.starts_with("virtio")
    {
        out.push(format!("{name}-"));
    }
    out
}

/// The MSI IRQs of an interface's device (`device/msi_irqs`, or its
/// parent's for a virtio device on PCI): found whatever the IRQs are named.
pub fn msi_irqs(root: &SysRoot, dev: &str) -> Vec<u32> {
    let mut out: Vec<u32> = ["device/msi_irqs", "device/../msi_irqs"]
        .iter()
        .flat_map(|d| {
            root.list(&format!("{NET_CLASS_DIR}/{dev}/{d}"))
                .unwrap_or_default()
        })
        .filter_map(|n| n.parse().ok())
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::write_tree;

    #[test]
    fn interfaces_and_their_steering_files_are_found_readable_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let net = NET_CLASS_DIR;
        write_tree(
            dir.path(),
            &[
                (&format!("{net}/bonding_masters"), "\n"),
                (&format!("{net}/lo/queues/rx-0/rps_cpus"), "0\n"),
                (&format!("{net}/lo/queues/tx-0/tx_maxrate"), "0\n"),
                (&format!("{net}/eth0/queues/rx-0/rps_cpus"), "0\n"),
                (&format!("{net}/eth0/queues/rx-1/rps_cpus"), "3\n"),
                (&format!("{net}/eth0/queues/tx-0/xps_cpus"), "1\n"),
            ],
        );
        let root = SysRoot::at(dir.path());
        assert_eq!(interfaces(&root), vec!["eth0", "lo"]);
        let files = steering_files(&root, "eth0");
        let names: Vec<(&str, &str)> = files.iter().map(|f| (f.queue.as_str(), f.knob)).collect();
        assert_eq!(
            names,
            vec![
                ("rx-0", "rps_cpus"),
                ("rx-1", "rps_cpus"),
                ("tx-0", "xps_cpus")
            ]
        );
        assert_eq!(files[2].file, format!("{net}/eth0/queues/tx-0/xps_cpus"));
        // lo's transmit queue has no XPS file here: only its receive queue.
        assert_eq!(steering_files(&root, "lo").len(), 1);
        assert!(steering_files(&root, "nosuch").is_empty());
        let masks = steering_masks(&root);
        assert_eq!(masks.len(), 4);
        assert_eq!(masks[1].value, "3");
    }
}

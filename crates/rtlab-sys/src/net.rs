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

/// Every interface's RPS and XPS masks that can be read (an interface
/// without XPS support gives an error on read and is left out).
pub fn steering_masks(root: &SysRoot) -> Vec<SteeringMask> {
    let mut out = Vec::new();
    for dev in root.list(NET_CLASS_DIR).unwrap_or_default() {
        let queues = format!("{NET_CLASS_DIR}/{dev}/queues");
        for queue in root.list(&queues).unwrap_or_default() {
            let knob = if queue.starts_with("rx-") {
                "rps_cpus"
            } else if queue.starts_with("tx-") {
                "xps_cpus"
            } else {
                continue;
            };
            let file = format!("{queues}/{queue}/{knob}");
            if let Ok(value) = root.read_trim(&file) {
                out.push(SteeringMask {
                    dev: dev.clone(),
                    queue: queue.clone(),
                    file,
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

//! System management interrupts and hypervisors: what `rtlab hwlat` (and
//! hwlatdetect) sets beside the latencies no OS event explains. An SMI is
//! counted by the Intel CPU in `MSR_SMI_COUNT` (0x34), read through the
//! msr driver (`/dev/cpu/N/msr`: 8 bytes at the register's offset; root
//! and CAP_SYS_RAWIO). A virtual machine says so by the `hypervisor` flag
//! of `/proc/cpuinfo`; its CPUs' steal time is in `/proc/stat`
//! ([`crate::proc_stat`]).

use crate::{SysError, SysRoot};
use std::os::unix::fs::FileExt;

/// `MSR_SMI_COUNT`: SMIs since reset (Intel, Nehalem and later).
pub const MSR_SMI_COUNT: u64 = 0x34;

/// `/proc/cpuinfo`, for the `hypervisor` flag.
const CPUINFO: &str = "proc/cpuinfo";

/// The msr driver's file of CPU `cpu`.
pub fn msr_path(cpu: usize) -> String {
    format!("dev/cpu/{cpu}/msr")
}

/// Model-specific register `reg` of CPU `cpu` (8 bytes, little-endian,
/// read at offset `reg` of its msr file).
pub fn read_msr(root: &SysRoot, cpu: usize, reg: u64) -> Result<u64, SysError> {
    let path = root.path(&msr_path(cpu));
    let file = std::fs::File::open(&path).map_err(|e| SysError::from_io(&path, e))?;
    let mut buf = [0u8; 8];
    file.read_exact_at(&mut buf, reg)
        .map_err(|e| SysError::from_io(&path, e))?;
    Ok(u64::from_le_bytes(buf))
}

/// CPU `cpu`'s SMI count (`MSR_SMI_COUNT`).
pub fn smi_count(root: &SysRoot, cpu: usize) -> Result<u64, SysError> {
    read_msr(root, cpu, MSR_SMI_COUNT)
}

/// The SMI counts of some CPUs at one moment, or why they cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SmiCounts {
    /// Each CPU's count, in the order asked.
    Read(Vec<(usize, u64)>),
    /// Why not (no msr driver, not permitted, no such register).
    Unavailable(String),
}

/// The SMI counts of `cpus`; one CPU that cannot be read makes them all
/// unavailable (a count of some CPUs would understate the SMIs).
pub fn smi_counts(root: &SysRoot, cpus: &[usize]) -> SmiCounts {
    let mut counts = Vec::with_capacity(cpus.len());
    for &cpu in cpus {
        match smi_count(root, cpu) {
            Ok(n) => counts.push((cpu, n)),
            Err(e) => return SmiCounts::Unavailable(unavailable(root, cpu, &e)),
        }
    }
    SmiCounts::Read(counts)
}

/// Why CPU `cpu`'s SMI count could not be read, in words.
fn unavailable(root: &SysRoot, cpu: usize, e: &SysError) -> String {
    let device = msr_path(cpu);
    match e {
        SysError::NotFound(_) if !root.exists(&device) => format!(
            "no /{device}: the msr driver is not loaded (`modprobe msr`), or this is not an x86 CPU"
        ),
        SysError::PermissionDenied(_) => {
            format!("/{device} is not readable: it takes root (CAP_SYS_RAWIO)")
        }
        _ if e.errno() == Some(libc::EIO) => {
            format!("CPU {cpu} has no MSR_SMI_COUNT (0x34): only Intel CPUs count SMIs there")
        }
        other => format!("MSR_SMI_COUNT of CPU {cpu}: {other}"),
    }
}

/// Each CPU's SMIs between two readings (a CPU missing from either is
/// left out; a count that went back counts 0).
pub fn smis_between(before: &[(usize, u64)], after: &[(usize, u64)]) -> Vec<(usize, u64)> {
    after
        .iter()
        .filter_map(|&(cpu, a)| {
            let b = before.iter().find(|(c, _)| *c == cpu)?.1;
            Some((cpu, a.saturating_sub(b)))
        })
        .collect()
}

/// Whether a hypervisor runs this machine (the `hypervisor` flag of
/// `/proc/cpuinfo`, which x86 guests list; false when unreadable).
pub fn under_hypervisor(root: &SysRoot) -> bool {
    let info = root.read_opt(CPUINFO).unwrap_or_default();
    info.lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|w| w == "hypervisor"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, SysRoot) {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::at(dir.path());
        (dir, root)
    }

    fn write_msr(root: &SysRoot, cpu: usize, count: u64) {
        let path = root.path(&msr_path(cpu));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut bytes = vec![0xffu8; MSR_SMI_COUNT as usize];
        bytes.extend_from_slice(&count.to_le_bytes());
        bytes.extend_from_slice(&[0xee; 8]);
        std::fs::write(path, bytes).unwrap();
    }

    #[test]
    fn the_smi_count_is_the_eight_bytes_at_0x34() {
        let (_dir, root) = tree();
        write_msr(&root, 0, 7);
        write_msr(&root, 1, 0x0102_0304_0506_0708);
        assert_eq!(smi_count(&root, 0).unwrap(), 7);
        assert_eq!(
            smi_counts(&root, &[0, 1]),
            SmiCounts::Read(vec![(0, 7), (1, 0x0102_0304_0506_0708)])
        );
    }

    #[test]
    fn without_the_msr_driver_the_counts_are_unavailable_and_say_why() {
        let (_dir, root) = tree();
        write_msr(&root, 0, 7);
        let SmiCounts::Unavailable(why) = smi_counts(&root, &[0, 1]) else {
            panic!("CPU 1 has no msr file")
        };
        assert!(
            why.contains("dev/cpu/1/msr") && why.contains("msr driver"),
            "{why}"
        );
    }

    #[test]
    fn a_short_msr_file_is_an_error_not_a_count() {
        let (_dir, root) = tree();
        let path = root.path(&msr_path(0));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, [0u8; 0x36]).unwrap();
        assert!(smi_count(&root, 0).is_err());
        assert!(matches!(smi_counts(&root, &[0]), SmiCounts::Unavailable(_)));
    }

    #[test]
    fn smis_are_counted_per_cpu_between_two_readings() {
        let before = [(0, 10), (1, 5)];
        let after = [(0, 12), (1, 5), (2, 9)];
        assert_eq!(smis_between(&before, &after), vec![(0, 2), (1, 0)]);
        assert_eq!(smis_between(&after, &before), vec![(0, 0), (1, 0)]);
    }

    #[test]
    fn the_hypervisor_flag_is_read_from_cpuinfo() {
        let (_dir, root) = tree();
        assert!(!under_hypervisor(&root));
        std::fs::create_dir_all(root.path("proc")).unwrap();
        std::fs::write(
            root.path(CPUINFO),
            "processor\t: 0\nflags\t\t: fpu tsc hypervisor\n",
        )
        .unwrap();
        assert!(under_hypervisor(&root));
        std::fs::write(
            root.path(CPUINFO),
            "flags\t\t: fpu tsc\nmodel name : hypervisor\n",
        )
        .unwrap();
        assert!(!under_hypervisor(&root));
    }
}

//! Every kernel file the crates above this layer read or write, named
//! once, relative to the system root (this crate's own readers name theirs
//! where they read them). A test (`walls.rs`) fails if the code of another
//! crate writes a kernel path (relative or absolute; test code, which
//! builds fake trees, aside), or if an absolute one is written anywhere but
//! `root.rs`: a new knob of the crates above comes here first.

/// PM QoS request for CPU wake-up latency (held open during a run).
pub const DMA_LATENCY: &str = "dev/cpu_dma_latency";
/// The kernel's own record of the PM QoS device (present whatever `/dev`
/// holds).
pub const DMA_LATENCY_CLASS: &str = "sys/class/misc/cpu_dma_latency";
/// The kernel command line.
pub const CMDLINE: &str = "proc/cmdline";
/// The load averages (cyclictest's live header).
pub const LOADAVG: &str = "proc/loadavg";
/// The kernel's memory counters (`MemAvailable`).
pub const MEMINFO: &str = "proc/meminfo";
/// The cpuset of the calling thread.
pub const THREAD_SELF_CPUSET: &str = "proc/thread-self/cpuset";
/// The calling process's memory map, with each mapping's sizes.
pub const SELF_SMAPS: &str = "proc/self/smaps";
/// The cpuset of the calling process.
pub const SELF_CPUSET: &str = "proc/self/cpuset";
/// The CPUs' directory (`isolated`, `nohz_full`, `cpuN/...`).
pub const CPU_DIR: &str = "sys/devices/system/cpu";
/// The IRQs' directory (`N/`, `default_smp_affinity`).
pub const IRQ_DIR: &str = "proc/irq";
/// Where new IRQs go.
pub const DEFAULT_SMP_AFFINITY: &str = "proc/irq/default_smp_affinity";
/// Unbound workqueue workers' CPUs.
pub const WORKQUEUE_CPUMASK: &str = "sys/devices/virtual/workqueue/cpumask";
/// The per-workqueue directories (`NAME/cpumask`).
pub const WORKQUEUE_DIR: &str = "sys/devices/virtual/workqueue";
/// Writeback workers spread by NUMA node (older kernels).
pub const WRITEBACK_NUMA: &str = "sys/bus/workqueue/devices/writeback/numa";
/// Writeback's workqueue cpumask (its workers' CPUs).
pub const WRITEBACK_CPUMASK: &str = "sys/devices/virtual/workqueue/writeback/cpumask";
/// The workqueue devices (as the journal's rule names them).
pub const WORKQUEUE_DEVICES: &str = "sys/bus/workqueue/devices";
/// Machine-check banks (`machinecheckN/check_interval`).
pub const MACHINECHECK_DIR: &str = "sys/devices/system/machinecheck";
/// cpufreq policies.
pub const CPUFREQ_DIR: &str = "sys/devices/system/cpu/cpufreq";
/// The sysctl tree.
pub const SYSCTL_DIR: &str = "proc/sys";
/// Lockup watchdog CPUs.
pub const WATCHDOG_CPUMASK: &str = "proc/sys/kernel/watchdog_cpumask";
/// Timer migration to non-idle CPUs.
pub const TIMER_MIGRATION: &str = "proc/sys/kernel/timer_migration";
/// vmstat folding interval.
pub const STAT_INTERVAL: &str = "proc/sys/vm/stat_interval";

/// Real-time throttling: the real-time tasks' share of each period (µs,
/// `-1` lifts it).
pub const SCHED_RT_RUNTIME: &str = "proc/sys/kernel/sched_rt_runtime_us";
/// Real-time throttling's period (µs).
pub const SCHED_RT_PERIOD: &str = "proc/sys/kernel/sched_rt_period_us";
/// The network interfaces (`NAME/queues/rx-N/rps_cpus`, `tx-N/xps_cpus`).
pub const NET_CLASS_DIR: &str = "sys/class/net";

/// The sysctls rtlab changes.
pub const SYSCTLS: [&str; 4] = [
    WATCHDOG_CPUMASK,
    TIMER_MIGRATION,
    STAT_INTERVAL,
    SCHED_RT_RUNTIME,
];

/// IRQ `n`'s directory (its handlers' names are subdirectories).
pub fn irq_dir(n: u32) -> String {
    format!("{IRQ_DIR}/{n}")
}

/// IRQ `n`'s affinity, as a CPU list.
pub fn irq_affinity_list(n: u32) -> String {
    format!("{IRQ_DIR}/{n}/smp_affinity_list")
}

/// The CPUs IRQ `n` is really delivered to.
pub fn irq_effective_affinity_list(n: u32) -> String {
    format!("{IRQ_DIR}/{n}/effective_affinity_list")
}

/// The IRQ number of an affinity file of [`irq_affinity_list`], if it is one.
pub fn irq_of_affinity_list(path: &str) -> Option<&str> {
    path.strip_prefix(IRQ_DIR)?
        .strip_prefix('/')?
        .strip_suffix("/smp_affinity_list")
}

/// The interface of a steering file (`sys/class/net/DEV/queues/rx-N/rps_cpus`
/// or `.../tx-N/xps_cpus`), if it is one.
pub fn net_dev_of_steering(path: &str) -> Option<&str> {
    let rest = path.strip_prefix(NET_CLASS_DIR)?.strip_prefix('/')?;
    let (dev, rest) = rest.split_once('/')?;
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        ["queues", q, "rps_cpus"] if q.starts_with("rx-") => Some(dev),
        ["queues", q, "xps_cpus"] if q.starts_with("tx-") => Some(dev),
        _ => None,
    }
}

/// The cpuset of process `pid`.
pub fn task_cpuset(pid: i32) -> String {
    format!("proc/{pid}/cpuset")
}

/// Where rtlab mounts tracefs when it is not mounted.
pub const TRACEFS: &str = "sys/kernel/tracing";
/// The kernel's symbols (names the addresses binary trace events hold).
pub const KALLSYMS: &str = "proc/kallsyms";
/// Where tracefs may be found: its own mount point, or under debugfs.
pub const TRACEFS_MOUNTS: [&str; 2] = [TRACEFS, "sys/kernel/debug/tracing"];

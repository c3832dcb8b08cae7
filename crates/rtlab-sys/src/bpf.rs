//! The BPF source of wake-up latency: every real-time task's time from
//! its wake-up (`sched_waking`) to its switch-in (`sched_switch`),
//! aggregated in the kernel by `bpf/rt_wakeup.bpf.c` into per-CPU
//! histograms keyed by policy and priority, and each task's worst.
//! Loaded with aya (pure Rust), relocated against the kernel's BTF
//! (CO-RE): no compiler and no kernel headers on the node.
//!
//! Before loading, [`preflight`] names what is missing (the build's
//! program, BTF, the capabilities, lockdown); a load the kernel still
//! refuses is said with the kernel's answer.

use crate::SysRoot;

mod watch;
pub use watch::{ThreadCells, Watch};

/// Buckets of the in-kernel histogram: 1 µs wide below 100 µs, then ten
/// per step of each decade (10 µs to 1 ms, 100 µs to 10 ms, 1 ms to
/// 100 ms, 10 ms to 1 s) and one beyond. Mirrors `bucket_of` in the BPF
/// program.
pub const BUCKETS: u16 = 461;

/// The bucket of a latency, as the BPF program counts it.
pub fn bucket_of_ns(ns: u64) -> u16 {
    let us = ns / 1000;
    let b = match us {
        0..100 => us,
        100..1_000 => 90 + us / 10,
        1_000..10_000 => 180 + us / 100,
        10_000..100_000 => 270 + us / 1_000,
        100_000..1_000_000 => 360 + us / 10_000,
        _ => 460,
    };
    b as u16
}

/// The latencies (ns) bucket `b` holds: from the first, up to (not
/// including) the second; the last bucket's end is `u64::MAX`.
pub fn bucket_bounds_ns(b: u16) -> (u64, u64) {
    let b = u64::from(b.min(BUCKETS - 1));
    let (lo_us, width_us) = match b {
        0..100 => (b, 1),
        100..190 => ((b - 90) * 10, 10),
        190..280 => ((b - 180) * 100, 100),
        280..370 => ((b - 270) * 1_000, 1_000),
        370..460 => ((b - 360) * 10_000, 10_000),
        _ => return (1_000_000_000, u64::MAX),
    };
    (lo_us * 1000, (lo_us + width_us) * 1000)
}

/// The scheduling policies the program keys by (the kernel's numbers).
pub fn policy_name(policy: u32) -> &'static str {
    match policy {
        0 => "normal",
        1 => "fifo",
        2 => "rr",
        3 => "batch",
        5 => "idle",
        6 => "deadline",
        _ => "other",
    }
}

/// One cell of a CPU's histogram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// The CPU the task switched in on.
    pub cpu: usize,
    /// Its policy (the kernel's number).
    pub policy: u32,
    /// Its real-time priority (0 for SCHED_DEADLINE and normal tasks).
    pub priority: u32,
    /// The bucket ([`bucket_bounds_ns`]).
    pub bucket: u16,
    /// Wake-ups counted in it.
    pub count: u64,
}

/// The sum of a series' latencies on a CPU, or of a part of them (a
/// series' sums add up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesSum {
    /// The CPU.
    pub cpu: usize,
    /// The policy.
    pub policy: u32,
    /// The priority.
    pub priority: u32,
    /// The sum (ns).
    pub sum_ns: u64,
}

/// A task's worst wake-up so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskWorst {
    /// Its PID (thread id).
    pub pid: u32,
    /// Its name when it was first counted since it last exec'd, as the kernel has it (any
    /// bytes: escape before showing).
    pub comm: String,
    /// Its policy at its last wake-up.
    pub policy: u32,
    /// Its real-time priority at its last wake-up.
    pub priority: u32,
    /// The CPU of its worst.
    pub cpu: u32,
    /// Its worst wake-up-to-switch-in (ns).
    pub worst_ns: u64,
    /// Its wake-ups counted.
    pub count: u64,
}

/// What the maps hold at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WakeupSnapshot {
    /// Every non-empty cell.
    pub cells: Vec<Cell>,
    /// The series' sums (a series may have several: they add up).
    pub sums: Vec<SeriesSum>,
    /// How late the timers that woke them fired (a CLOCK_MONOTONIC
    /// timer's expiry to the wake-up in its callback), by the same keys.
    pub timer_cells: Vec<Cell>,
    /// Their sums.
    pub timer_sums: Vec<SeriesSum>,
    /// IRQ to task, by the same keys: from the exit of the interrupt
    /// handler whose work woke the task (in the handler, in a device
    /// softirq that handler raised, or by its IRQ thread) to its
    /// switch-in.
    pub irq_cells: Vec<Cell>,
    /// Their sums.
    pub irq_sums: Vec<SeriesSum>,
    /// The tasks the kernel keeps (the most recently counted 4096).
    pub tasks: Vec<TaskWorst>,
    /// Wake-ups counted.
    pub counted: u64,
    /// Wake-ups not counted: their stamp did not fit (16384 tasks woken
    /// and not yet run), or their cell did not (16384 cells).
    pub lost: u64,
    /// Late wake-ups whose CPU's recent events were sent to be explained.
    pub late_sent: u64,
    /// Late wake-ups not sent: the ring buffer was full.
    pub late_lost: u64,
    /// Late wake-ups not sent: the rate bound (one per CPU per 10 ms,
    /// unless the CPU's worst so far).
    pub late_bounded: u64,
}

/// Events each CPU keeps for the explanations (`LOG` in the program).
pub const LATE_LOG: usize = 64;

/// What a CPU's ring of recent events holds in one slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoggedKind {
    /// A switch; `preempted`: the task switched out was still runnable.
    Switch {
        /// Whether the task switched out was preempted.
        preempted: bool,
    },
    /// An interrupt handler began: its IRQ, the handler's name in `prev_comm`.
    IrqEntry(u32),
    /// An interrupt handler returned.
    IrqExit(u32),
    /// A softirq began: its vector.
    SoftirqEntry(u32),
    /// A softirq ended.
    SoftirqExit(u32),
}

/// One event of a CPU's ring, as the program logged it. Names are any
/// bytes a task chose: escape before showing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    /// When (CLOCK_MONOTONIC, ns).
    pub ts_ns: u64,
    /// What.
    pub kind: LoggedKind,
    /// A switch's task switched out, its PID, kernel priority and name;
    /// an IRQ's entry: its handler's name in `prev_comm`.
    pub prev_pid: i32,
    /// Its kernel priority.
    pub prev_prio: i32,
    /// Its name.
    pub prev_comm: String,
    /// A switch's task switched in.
    pub next_pid: i32,
    /// Its kernel priority.
    pub next_prio: i32,
    /// Its name.
    pub next_comm: String,
}

/// A late wake-up and what its CPU did before it, as the program sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LateWakeup {
    /// The task's PID, kernel priority (`prio`), policy, real-time
    /// priority and name.
    pub pid: i32,
    /// Its kernel priority (0..99 real-time, as the trace's `prio`).
    pub prio: i32,
    /// Its policy.
    pub policy: u32,
    /// Its real-time priority.
    pub priority: u32,
    /// Its name.
    pub comm: String,
    /// The CPU it switched in on.
    pub cpu: u32,
    /// Its wake-up (`sched_waking`, CLOCK_MONOTONIC ns).
    pub woken_ns: u64,
    /// Its switch-in.
    pub switched_ns: u64,
    /// The kernel stack as the CPU switched to it (return addresses,
    /// innermost first), when the kernel gave one.
    pub stack: Vec<u64>,
    /// The CPU's recent events, oldest first (at most [`LATE_LOG`]).
    pub log: Vec<Logged>,
}

/// The record's layout (`struct late` and `struct ev` in the program):
/// its head, the stack's return addresses, the ring.
const STACK_AT: usize = 88;
const STACK_DEPTH: usize = 32;
const LATE_HEAD: usize = STACK_AT + STACK_DEPTH * 8;
const EV_SIZE: usize = 64;
/// The size of a record.
pub const LATE_SIZE: usize = LATE_HEAD + LATE_LOG * EV_SIZE;

/// A name of 16 bytes, up to its NUL.
fn comm_of(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// A record from the ring buffer's bytes; None if it is not one (its
/// size).
pub fn late_from_bytes(b: &[u8]) -> Option<LateWakeup> {
    if b.len() != LATE_SIZE {
        return None;
    }
    let u64_at = |i: usize| u64::from_ne_bytes(b[i..i + 8].try_into().unwrap_or_default());
    let u32_at = |i: usize| u32::from_ne_bytes(b[i..i + 4].try_into().unwrap_or_default());
    let i32_at = |i: usize| u32_at(i) as i32;
    let logged = u32_at(64) as usize;
    let mut log = Vec::with_capacity(LATE_LOG);
    // The ring's oldest slot is the next to be written.
    for k in 0..LATE_LOG {
        let slot = (logged % LATE_LOG + k) % LATE_LOG;
        let at = LATE_HEAD + slot * EV_SIZE;
        let arg = u32_at(at + 12);
        let kind = match u32_at(at + 8) {
            1 => LoggedKind::Switch {
                preempted: arg != 0,
            },
            2 => LoggedKind::IrqEntry(arg),
            3 => LoggedKind::IrqExit(arg),
            4 => LoggedKind::SoftirqEntry(arg),
            5 => LoggedKind::SoftirqExit(arg),
            _ => continue,
        };
        log.push(Logged {
            ts_ns: u64_at(at),
            kind,
            prev_pid: i32_at(at + 16),
            next_pid: i32_at(at + 20),
            prev_prio: i32_at(at + 24),
            next_prio: i32_at(at + 28),
            prev_comm: comm_of(&b[at + 32..at + 48]),
            next_comm: comm_of(&b[at + 48..at + 64]),
        });
    }
    // A nested handler's event may sit a slot out of order.
    log.sort_by_key(|e| e.ts_ns);
    // The bytes of the stack the kernel wrote (negative: none).
    let stack_bytes = usize::try_from(u64_at(40) as i64).unwrap_or(0);
    let stack = (0..(stack_bytes / 8).min(STACK_DEPTH))
        .map(|i| u64_at(STACK_AT + i * 8))
        .collect();
    Some(LateWakeup {
        woken_ns: u64_at(0),
        switched_ns: u64_at(8),
        pid: i32_at(16),
        prio: i32_at(20),
        policy: u32_at(24),
        priority: u32_at(28),
        cpu: u32_at(32),
        comm: comm_of(&b[48..64]),
        stack,
        log,
    })
}

/// The value layout of the program's `tasks` map (`struct worst`).
// Read by the loader, which a build without the program leaves out.
#[cfg_attr(not(rtlab_bpf), allow(dead_code))]
const WORST_SIZE: usize = 48;
/// The key's bucket that holds a thread's sum (`thread_hist`).
// Read by the loader, which a build without the program leaves out.
#[cfg_attr(not(rtlab_bpf), allow(dead_code))]
const SUM_BUCKET: u32 = 0xffff;

/// A task's worst from the map's bytes.
// Read by the loader, which a build without the program leaves out.
#[cfg_attr(not(rtlab_bpf), allow(dead_code))]
fn task_worst(pid: u32, v: &[u8; WORST_SIZE]) -> TaskWorst {
    let u64_at = |i: usize| u64::from_ne_bytes(v[i..i + 8].try_into().unwrap_or_default());
    let u32_at = |i: usize| u32::from_ne_bytes(v[i..i + 4].try_into().unwrap_or_default());
    let comm = &v[16..32];
    let end = comm.iter().position(|&b| b == 0).unwrap_or(comm.len());
    TaskWorst {
        pid,
        comm: String::from_utf8_lossy(&comm[..end]).into_owned(),
        policy: u32_at(32),
        priority: u32_at(36),
        cpu: u32_at(40),
        worst_ns: u64_at(0),
        count: u64_at(8),
    }
}

/// Splits a histogram key into policy, priority and bucket.
// Read by the loader, which a build without the program leaves out.
#[cfg_attr(not(rtlab_bpf), allow(dead_code))]
fn key_parts(key: u32) -> (u32, u32, u32) {
    (key >> 24, (key >> 16) & 0xff, key & 0xffff)
}

/// Why the BPF source cannot run here: each names what is missing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BpfRefusal {
    /// The build has no BPF program.
    #[error(
        "this build of rtlab has no BPF program (built without clang, or for a target that leaves it out)"
    )]
    NotBuilt,
    /// The kernel has no BTF.
    #[error(
        "the kernel has no BTF (/sys/kernel/btf/vmlinux: CONFIG_DEBUG_INFO_BTF), which the CO-RE program needs"
    )]
    NoBtf,
    /// Capabilities missing.
    #[error("{0}")]
    Capabilities(String),
    /// Kernel lockdown refuses BPF's reads of kernel memory.
    #[error(
        "kernel lockdown is at `{0}`, which refuses BPF programs that read kernel memory (/sys/kernel/security/lockdown)"
    )]
    Lockdown(String),
    /// The kernel refused the load or the attach.
    #[error("the kernel refused the BPF program: {0}")]
    Refused(String),
}

/// CAP_SYS_ADMIN, CAP_PERFMON and CAP_BPF: bits of `CapEff:`.
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// Whether the BPF source can be tried here, by the facts of `root`
/// (the build, BTF, the capabilities, lockdown); the load is the final
/// word.
pub fn preflight(root: &SysRoot) -> Result<(), BpfRefusal> {
    if OBJECT.is_none() {
        return Err(BpfRefusal::NotBuilt);
    }
    if !root.exists("sys/kernel/btf/vmlinux") {
        return Err(BpfRefusal::NoBtf);
    }
    let caps = crate::effective_caps(&root.read("proc/self/status").unwrap_or_default());
    if let Some(caps) = caps {
        let has = |bit: u32| caps & (1u64 << bit) != 0;
        let enough = has(CAP_SYS_ADMIN) || (has(CAP_BPF) && has(CAP_PERFMON));
        if !enough {
            let missing: Vec<&str> = [(CAP_BPF, "CAP_BPF"), (CAP_PERFMON, "CAP_PERFMON")]
                .into_iter()
                .filter(|(bit, _)| !has(*bit))
                .map(|(_, name)| name)
                .collect();
            let gate = root
                .read_opt("proc/sys/kernel/unprivileged_bpf_disabled")
                .filter(|v| v != "0")
                .map(|v| {
                    format!("; kernel.unprivileged_bpf_disabled is {v}, so nothing less will do")
                })
                .unwrap_or_default();
            return Err(BpfRefusal::Capabilities(format!(
                "this process lacks {} (or CAP_SYS_ADMIN){gate}: give it them (root with a full capability bounding set, or a container run with `--cap-add BPF --cap-add PERFMON`)",
                missing.join(" and ")
            )));
        }
    }
    if let Some(text) = root.read_opt("sys/kernel/security/lockdown") {
        let level = text
            .split_whitespace()
            .find(|w| w.starts_with('['))
            .map(|w| w.trim_matches(['[', ']']).to_string());
        if level.as_deref() == Some("confidentiality") {
            return Err(BpfRefusal::Lockdown("confidentiality".into()));
        }
    }
    Ok(())
}

/// The compiled program, when this build has one.
#[cfg(rtlab_bpf)]
const OBJECT: Option<&[u8]> = Some(include_bytes!(concat!(env!("OUT_DIR"), "/rt_wakeup.bpf.o")));
#[cfg(not(rtlab_bpf))]
const OBJECT: Option<&[u8]> = None;

/// The loaded and attached program, and its maps. Dropping it detaches
/// the program and frees the maps.
pub struct WakeupProbe {
    #[cfg(rtlab_bpf)]
    ebpf: aya::Ebpf,
    /// The late wake-ups' records, when explanations are on.
    #[cfg(rtlab_bpf)]
    late: Option<aya::maps::RingBuf<aya::maps::MapData>>,
}

/// The program's settings, fixed at its load.
#[cfg_attr(not(rtlab_bpf), allow(dead_code))]
struct Globals {
    all_tasks: u32,
    late_ns: u64,
    /// 0: by policy; 1: one process's threads; 2: the threads of one name.
    watch_mode: u32,
}

/// The programs and their tracepoints: the counting pair, the timers',
/// and the exec that starts a task's row anew.
#[cfg_attr(not(rtlab_bpf), allow(dead_code))]
const COUNTING: &[(&str, &str)] = &[
    ("on_waking", "sched_waking"),
    ("on_switch", "sched_switch"),
    ("on_expire_entry", "hrtimer_expire_entry"),
    ("on_expire_exit", "hrtimer_expire_exit"),
    ("on_exec", "sched_process_exec"),
];
/// The programs that follow interrupts and softirqs: for IRQ to task
/// (every real-time task's) and for the explanations' recent events.
#[cfg_attr(not(rtlab_bpf), allow(dead_code))]
const INTERRUPTS: &[(&str, &str)] = &[
    ("on_irq_entry", "irq_handler_entry"),
    ("on_irq_exit", "irq_handler_exit"),
    ("on_softirq_raise", "softirq_raise"),
    ("on_softirq_entry", "softirq_entry"),
    ("on_softirq_exit", "softirq_exit"),
];

#[cfg(rtlab_bpf)]
impl WakeupProbe {
    /// Loads the program and attaches it to `sched_waking` and
    /// `sched_switch`; `all_tasks` counts every task, not only the
    /// real-time ones. With `late_ns` > 0, a wake-up at least that late
    /// sends its CPU's recent events ([`WakeupProbe::drain_late`]); the
    /// interrupt and softirq tracepoints are then attached too.
    pub fn start(root: &SysRoot, all_tasks: bool, late_ns: u64) -> Result<WakeupProbe, BpfRefusal> {
        let globals = Globals {
            all_tasks: u32::from(all_tasks),
            late_ns,
            watch_mode: 0,
        };
        WakeupProbe::load(root, &globals)
    }

    /// Loads the program with `globals`, attached: see [`WakeupProbe::start`].
    fn load(root: &SysRoot, globals: &Globals) -> Result<WakeupProbe, BpfRefusal> {
        use aya::programs::BtfTracePoint;
        let late_ns = globals.late_ns;
        preflight(root)?;
        let object = OBJECT.ok_or(BpfRefusal::NotBuilt)?;
        let refused =
            |what: &str, e: &dyn std::fmt::Display| BpfRefusal::Refused(format!("{what}: {e}"));
        let vmlinux = std::fs::read(root.path("sys/kernel/btf/vmlinux"))
            .map_err(|e| refused("reading the kernel's BTF", &e))?;
        let btf = aya::Btf::parse(&vmlinux, aya::Endianness::default())
            .map_err(|e| refused("parsing the kernel's BTF", &e))?;
        drop(vmlinux);
        let mut ebpf = aya::EbpfLoader::new()
            .btf(Some(&btf))
            .override_global("all_tasks", &globals.all_tasks, true)
            .override_global("late_ns", &late_ns, true)
            .override_global("watch_mode", &globals.watch_mode, true)
            .load(object)
            .map_err(|e| refused("loading", &e))?;
        // One task watched (`task-latency`) needs neither.
        let interrupts = if late_ns > 0 || globals.watch_mode == 0 {
            INTERRUPTS
        } else {
            &[]
        };
        for &(name, tracepoint) in COUNTING.iter().chain(interrupts) {
            let program: &mut BtfTracePoint = ebpf
                .program_mut(name)
                .ok_or_else(|| refused(name, &"not in the object"))?
                .try_into()
                .map_err(|e| refused(name, &e))?;
            program
                .load(tracepoint, &btf)
                .map_err(|e| refused(&format!("loading {name}"), &e))?;
            program
                .attach()
                .map_err(|e| refused(&format!("attaching {name} to {tracepoint}"), &e))?;
        }
        // The parsed BTF is the bulk of the load's memory (about 35 MB for
        // a 5.5 MB vmlinux BTF): let the allocator give it back.
        drop(btf);
        crate::os::trim_heap();
        let mut late = None;
        if late_ns > 0 {
            let ring = ebpf
                .take_map("late_wakeups")
                .ok_or_else(|| refused("late_wakeups", &"no map"))?;
            late =
                Some(aya::maps::RingBuf::try_from(ring).map_err(|e| refused("late_wakeups", &e))?);
        }
        Ok(WakeupProbe { ebpf, late })
    }

    /// The late wake-ups sent since the last call, at most `max` (the
    /// rest wait for the next call).
    pub fn drain_late(&mut self, max: usize) -> Vec<LateWakeup> {
        let mut out = Vec::new();
        let Some(ring) = self.late.as_mut() else {
            return out;
        };
        while out.len() < max {
            let Some(item) = ring.next() else {
                break;
            };
            out.extend(late_from_bytes(&item));
        }
        out
    }

    /// The cells and sums of a histogram map (`histogram`, `timer_late`,
    /// `irq_wake`): each cell, per CPU, its count and the sum of its
    /// latencies (a series' sum is the sum of its cells').
    fn histogram(&self, name: &str) -> Result<(Vec<Cell>, Vec<SeriesSum>), String> {
        use aya::maps::PerCpuHashMap;
        let map = self.ebpf.map(name).ok_or(format!("no map {name}"))?;
        let histogram: PerCpuHashMap<_, u32, [u64; 2]> =
            PerCpuHashMap::try_from(map).map_err(|e| e.to_string())?;
        let (mut cells, mut sums) = (Vec::new(), Vec::new());
        for entry in histogram.iter() {
            let (key, per_cpu) = entry.map_err(|e| e.to_string())?;
            let (policy, priority, bucket) = key_parts(key);
            let bucket = bucket.min(u32::from(BUCKETS - 1)) as u16;
            for (cpu, &[count, sum_ns]) in per_cpu.iter().enumerate().filter(|(_, v)| v[0] > 0) {
                cells.push(Cell {
                    cpu,
                    policy,
                    priority,
                    bucket,
                    count,
                });
                sums.push(SeriesSum {
                    cpu,
                    policy,
                    priority,
                    sum_ns,
                });
            }
        }
        Ok((cells, sums))
    }

    /// What the maps hold now.
    pub fn read(&self) -> Result<WakeupSnapshot, String> {
        use aya::maps::{HashMap, PerCpuArray};
        let map = |name: &str| self.ebpf.map(name).ok_or(format!("no map {name}"));
        let mut snap = WakeupSnapshot::default();
        (snap.cells, snap.sums) = self.histogram("histogram")?;
        (snap.timer_cells, snap.timer_sums) = self.histogram("timer_late")?;
        (snap.irq_cells, snap.irq_sums) = self.histogram("irq_wake")?;
        let tasks: HashMap<_, u32, [u8; WORST_SIZE]> =
            HashMap::try_from(map("tasks")?).map_err(|e| e.to_string())?;
        for entry in tasks.iter() {
            let (pid, v) = entry.map_err(|e| e.to_string())?;
            snap.tasks.push(task_worst(pid, &v));
        }
        let counters: PerCpuArray<_, u64> =
            PerCpuArray::try_from(map("counters")?).map_err(|e| e.to_string())?;
        let total = |i: u32| counters.get(&i, 0).map(|v| v.iter().sum::<u64>());
        snap.counted = total(0).map_err(|e| e.to_string())?;
        snap.lost = total(1).map_err(|e| e.to_string())? + total(2).map_err(|e| e.to_string())?;
        snap.late_sent = total(3).map_err(|e| e.to_string())?;
        snap.late_lost = total(4).map_err(|e| e.to_string())?;
        snap.late_bounded = total(5).map_err(|e| e.to_string())?;
        Ok(snap)
    }
}

#[cfg(not(rtlab_bpf))]
impl WakeupProbe {
    /// This build has no program: refused with the reason.
    pub fn start(
        root: &SysRoot,
        _all_tasks: bool,
        _late_ns: u64,
    ) -> Result<WakeupProbe, BpfRefusal> {
        preflight(root)?;
        Err(BpfRefusal::NotBuilt)
    }

    /// Never reached: no probe starts.
    pub fn drain_late(&mut self, _max: usize) -> Vec<LateWakeup> {
        Vec::new()
    }

    /// Never reached: no probe starts.
    pub fn read(&self) -> Result<WakeupSnapshot, String> {
        Ok(WakeupSnapshot::default())
    }
}

/// Held by each live test of the BPF program: one at a time, as a load's
/// verifier (a long kernel section on a kernel without preemption) or
/// one test's hog would delay another's measured thread and be blamed.
#[cfg(test)]
static LIVE_BPF: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The live test's turn, held while it runs.
#[cfg(test)]
fn live_bpf_alone() -> std::sync::MutexGuard<'static, ()> {
    LIVE_BPF.lock().unwrap_or_else(|e| e.into_inner())
}

/// The calling thread's voluntary context switches, as the kernel counts
/// them (the live tests' truth of how many sleeps blocked).
#[cfg(test)]
fn voluntary_switches() -> u64 {
    let status = SysRoot::real().read("proc/thread-self/status").unwrap();
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"));
    line.unwrap().trim().parse::<u64>().unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_latency_lies_in_its_buckets_bounds() {
        // Every µs to 2 ms, then coarser steps to past a second: the
        // bucket's bounds hold the value, and the buckets follow in order.
        let mut values: Vec<u64> = (0..2_000_000).step_by(250).collect();
        values.extend((2_000_000..2_000_000_000).step_by(99_991));
        let mut last = 0;
        for ns in values {
            let b = bucket_of_ns(ns);
            let (lo, hi) = bucket_bounds_ns(b);
            assert!(lo <= ns && ns < hi, "{ns} ns in bucket {b} [{lo}, {hi})");
            assert!(b >= last, "bucket {b} after {last}");
            last = b;
        }
        assert_eq!(last, BUCKETS - 1);
    }

    #[test]
    fn the_buckets_are_1_us_to_100_us_and_meet_the_metric_bounds() {
        for us in 0..100u64 {
            assert_eq!(bucket_bounds_ns(us as u16), (us * 1000, us * 1000 + 1000));
        }
        // Each bucket starts where the one before ends: no gap, no overlap.
        for b in 1..BUCKETS {
            assert_eq!(
                bucket_bounds_ns(b - 1).1,
                bucket_bounds_ns(b).0,
                "bucket {b}"
            );
        }
        // Prometheus' bounds of rtlab's metrics are bucket edges, so the
        // exported counts are exact.
        for bound in [
            2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000,
        ] {
            let ns = bound * 1000;
            assert!(
                (0..BUCKETS).any(|b| bucket_bounds_ns(b).0 == ns),
                "{bound} µs is not an edge"
            );
        }
    }

    #[test]
    fn a_tasks_worst_reads_from_the_maps_bytes() {
        let mut v = [0u8; WORST_SIZE];
        v[0..8].copy_from_slice(&1_500_000u64.to_ne_bytes());
        v[8..16].copy_from_slice(&42u64.to_ne_bytes());
        v[16..21].copy_from_slice(b"rt-a\0");
        v[32..36].copy_from_slice(&1u32.to_ne_bytes());
        v[36..40].copy_from_slice(&80u32.to_ne_bytes());
        v[40..44].copy_from_slice(&1u32.to_ne_bytes());
        let t = task_worst(77, &v);
        assert_eq!(t.comm, "rt-a");
        assert_eq!((t.policy, t.priority, t.cpu), (1, 80, 1));
        assert_eq!((t.worst_ns, t.count), (1_500_000, 42));
        assert_eq!(key_parts(1 << 24 | 80 << 16 | 17), (1, 80, 17));
    }

    fn tree(status: &str, extra: &[(&str, &str)]) -> (tempfile::TempDir, SysRoot) {
        let dir = tempfile::tempdir().unwrap();
        let put = |rel: &str, text: &str| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put("proc/self/status", status);
        for (rel, text) in extra {
            put(rel, text);
        }
        let root = SysRoot::at(dir.path());
        (dir, root)
    }

    #[test]
    fn the_preflight_names_what_is_missing() {
        if OBJECT.is_none() {
            let (_d, root) = tree("CapEff:\t000001ffffffffff\n", &[]);
            assert_eq!(preflight(&root), Err(BpfRefusal::NotBuilt));
            return;
        }
        let btf = ("sys/kernel/btf/vmlinux", "x");
        let (_d, root) = tree("CapEff:\t000001ffffffffff\n", &[]);
        assert_eq!(preflight(&root), Err(BpfRefusal::NoBtf));
        let (_d, root) = tree("CapEff:\t000001ffffffffff\n", &[btf]);
        assert_eq!(preflight(&root), Ok(()));
        // CAP_PERFMON alone: CAP_BPF is named, and the sysctl's gate.
        let gate = ("proc/sys/kernel/unprivileged_bpf_disabled", "2\n");
        let (_d, root) = tree("CapEff:\t0000004000000000\n", &[btf, gate]);
        let why = preflight(&root).unwrap_err().to_string();
        assert!(why.contains("lacks CAP_BPF (or CAP_SYS_ADMIN)"), "{why}");
        assert!(why.contains("unprivileged_bpf_disabled is 2"), "{why}");
        // CAP_BPF and CAP_PERFMON without CAP_SYS_ADMIN are enough.
        let (_d, root) = tree("CapEff:\t000000c000000000\n", &[btf, gate]);
        assert_eq!(preflight(&root), Ok(()));
        let lockdown = (
            "sys/kernel/security/lockdown",
            "none integrity [confidentiality]\n",
        );
        let (_d, root) = tree("CapEff:\t000001ffffffffff\n", &[btf, lockdown]);
        assert_eq!(
            preflight(&root),
            Err(BpfRefusal::Lockdown("confidentiality".into()))
        );
        let lockdown = (
            "sys/kernel/security/lockdown",
            "none [integrity] confidentiality\n",
        );
        let (_d, root) = tree("CapEff:\t000001ffffffffff\n", &[btf, lockdown]);
        assert_eq!(preflight(&root), Ok(()));
    }

    /// On this machine: where the preflight passes, the program loads and
    /// counts a FIFO 42 thread's sleeps, each one once (about as many as
    /// the kernel's own count of its voluntary switches: a sleep whose
    /// deadline a late wake-up already passed does not block), under its
    /// own TID and name; its worst is no later than the thread's own
    /// clock saw (which adds the timer's expiry and the return to user
    /// space). Where it does not pass, the refusal says why.
    #[test]
    fn the_probe_counts_a_fifo_threads_wake_ups_here() {
        let _alone = live_bpf_alone();
        let root = SysRoot::real();
        if let Err(why) = preflight(&root) {
            assert!(!why.to_string().is_empty());
            return;
        }
        let probe = match WakeupProbe::start(&root, false, 0) {
            Ok(p) => p,
            // Refused by the kernel (a seccomp filter, a container): said.
            Err(why) => return assert!(why.to_string().contains("refused"), "{why}"),
        };
        let sleeper = std::thread::Builder::new()
            .name("bpf-sleeper-42".into())
            .spawn(|| {
                use crate::os::{Policy, Sched};
                let fifo = Sched {
                    policy: Policy::Fifo,
                    priority: 42,
                };
                let switches = voluntary_switches;
                crate::os::set_sched(0, fifo).map(|()| {
                    let (mut worst, before) = (0, switches());
                    let mut at = crate::os::monotonic_ns();
                    for _ in 0..200 {
                        at += 1_000_000;
                        crate::os::sleep_until_ns(at);
                        worst = worst.max(crate::os::monotonic_ns() - at);
                    }
                    let slept = switches() - before;
                    (crate::os::gettid() as u32, worst, slept)
                })
            })
            .unwrap();
        let Ok((tid, own_worst, slept)) = sleeper.join().unwrap() else {
            return; // no real-time priority here
        };
        let snap = probe.read().unwrap();
        let mine = snap
            .tasks
            .iter()
            .find(|t| t.pid == tid)
            .expect("the sleeper's row");
        assert_eq!(mine.comm, "bpf-sleeper-42");
        assert!(slept > 100, "{slept} of 200 sleeps blocked");
        let at_42: u64 = snap
            .cells
            .iter()
            .filter(|c| (c.policy, c.priority) == (1, 42))
            .map(|c| c.count)
            .sum();
        // Each sleep counted once; a few may be missed under contention
        // (docs/ebpf.md, "Known gaps": up to 1% with another test's FIFO
        // hog on the machine), never one counted twice.
        assert_eq!((mine.policy, mine.priority), (1, 42));
        assert!(
            mine.count <= slept && mine.count + slept / 50 >= slept,
            "{} counted of {slept} sleeps (series {at_42}, lost {})",
            mine.count,
            snap.lost
        );
        assert!(
            mine.worst_ns <= own_worst,
            "{} > {own_worst}",
            mine.worst_ns
        );
        assert!(at_42 >= mine.count, "{at_42} wake-ups at FIFO 42");
        assert!(snap.counted >= mine.count);
        // Each of its sleeps ended by its own timer: the timer's lateness
        // counted once each (a sleep whose deadline had passed is woken
        // by no timer), no later than its own clock saw. A timer that
        // fires before the thread has blocked (its vCPU stalled between
        // the two) wakes it running: counted, and no voluntary switch
        // (200 timers against 195 switches once here).
        let timer_42: Vec<&Cell> = snap
            .timer_cells
            .iter()
            .filter(|c| (c.policy, c.priority) == (1, 42))
            .collect();
        let timed: u64 = timer_42.iter().map(|c| c.count).sum();
        assert!(
            timed <= slept + 1 + slept / 20 && timed + slept / 50 >= slept,
            "{timed} of {slept}"
        );
        let latest = timer_42.iter().map(|c| bucket_bounds_ns(c.bucket).0).max();
        assert!(
            latest.is_some_and(|ns| ns <= own_worst),
            "{latest:?} > {own_worst}"
        );
    }

    /// A FIFO thread, pinned by a FIFO hog's 3 ms bursts on its CPU.
    /// Gives its TID and the hog's, or None without real-time priority.
    fn hogged_sleeper() -> Option<(i32, i32)> {
        use crate::os::{Policy, Sched};
        let cpu = *crate::os::get_affinity(0).ok()?.first()?;
        let fifo = |priority| Sched {
            policy: Policy::Fifo,
            priority,
        };
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let hog_stop = stop.clone();
        let hog = std::thread::Builder::new()
            .name("bpf-hog-61".into())
            .spawn(move || {
                crate::os::set_affinity(0, &[cpu]).ok()?;
                crate::os::set_sched(0, fifo(61)).ok()?;
                let tid = crate::os::gettid();
                while !hog_stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let until = crate::os::monotonic_ns() + 3_000_000;
                    while crate::os::monotonic_ns() < until {}
                    crate::os::sleep_until_ns(crate::os::monotonic_ns() + 7_000_000);
                }
                Some(tid)
            })
            .ok()?;
        let sleeper = std::thread::Builder::new()
            .name("bpf-late-43".into())
            .spawn(move || {
                crate::os::set_affinity(0, &[cpu]).ok()?;
                crate::os::set_sched(0, fifo(43)).ok()?;
                let mut at = crate::os::monotonic_ns();
                for _ in 0..100 {
                    at += 1_000_000;
                    crate::os::sleep_until_ns(at);
                }
                Some(crate::os::gettid())
            })
            .ok()?;
        let tid = sleeper.join().ok().flatten();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let hog = hog.join().ok().flatten();
        Some((tid?, hog?))
    }

    /// On this machine: a wake-up later than the bound sends its CPU's
    /// recent events, in which the hog that held the CPU is switched in
    /// before the woken thread's wake-up and switched out to it after.
    #[test]
    fn a_late_wake_up_sends_who_held_its_cpu_here() {
        let _alone = live_bpf_alone();
        let root = SysRoot::real();
        if preflight(&root).is_err() {
            return;
        }
        let Ok(mut probe) = WakeupProbe::start(&root, false, 500_000) else {
            return;
        };
        let Some((tid, hog)) = hogged_sleeper() else {
            return;
        };
        let late = probe.drain_late(1000);
        let mine: Vec<&LateWakeup> = late.iter().filter(|l| l.pid == tid).collect();
        assert!(
            !mine.is_empty(),
            "no late record of {tid} in {}",
            late.len()
        );
        for l in &mine {
            assert_eq!(
                (l.comm.as_str(), l.policy, l.priority, l.prio),
                ("bpf-late-43", 1, 43, 56)
            );
            assert!(l.switched_ns - l.woken_ns >= 500_000);
            let switch = |e: &&Logged| matches!(e.kind, LoggedKind::Switch { .. });
            let last = l.log.iter().rfind(switch).expect("its switch-in");
            assert_eq!((last.next_pid, last.ts_ns), (tid, l.switched_ns));
            // The hog held the CPU for most of the wait (the two may be
            // woken together, the hog first).
            let to_hog = l
                .log
                .iter()
                .filter(switch)
                .rfind(|e| e.next_pid == hog)
                .expect("the hog's switch-in");
            let held = l.switched_ns - to_hog.ts_ns.max(l.woken_ns);
            assert!(held * 2 >= l.switched_ns - l.woken_ns, "{to_hog:?} {l:?}");
            assert_eq!(
                (last.prev_pid, last.prev_comm.as_str(), last.prev_prio),
                (hog, "bpf-hog-61", 38)
            );
        }
        // The hog's kernel stack as it let the CPU go, in each record.
        assert!(mine.iter().all(|l| !l.stack.is_empty()), "{mine:?}");
        let snap = probe.read().unwrap();
        assert!(snap.late_sent >= mine.len() as u64);
    }
}

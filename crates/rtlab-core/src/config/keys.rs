//! Every key of the experiment file, defined once: which stanza it belongs to,
//! what value it takes, its default and whether it is an rtlab extension.
//! The "did you mean" hints come from this table, and a test checks that the
//! manual (`docs/config-format.md`) documents every key listed here.

/// The kinds of stanza.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StanzaKind {
    /// `main`: the conductor.
    Main,
    /// `timer_thread[N]`: a measurement thread.
    Timer,
    /// `program[N]`: a load process.
    Program,
    /// `irq_task[N]`: an IRQ-to-task latency measurement.
    IrqTask,
    /// `task_latency[N]`: the wake-up latency of any task.
    TaskLatency,
}

impl StanzaKind {
    /// The stanza name as written in files (`timer_thread[N]`).
    pub fn display(self) -> &'static str {
        match self {
            StanzaKind::Main => "main",
            StanzaKind::Timer => "timer_thread[N]",
            StanzaKind::Program => "program[N]",
            StanzaKind::IrqTask => "irq_task[N]",
            StanzaKind::TaskLatency => "task_latency[N]",
        }
    }
}

/// One key of the format: everything about it in one row. The parser looks
/// keys up here and calls their `apply`; the key tables of
/// `docs/config-format.md` are generated from these rows (a test checks
/// that the manual has them as [`markdown_table`] writes them), and a test
/// checks that a key given its documented default changes nothing.
#[derive(Debug, Clone, Copy)]
pub struct KeySpec {
    /// Which stanza it belongs to.
    pub stanza: StanzaKind,
    /// The dotted key.
    pub name: &'static str,
    /// Its value in short, for hints (`DURATION`, [`FLAG`] for a key that
    /// takes none).
    pub syntax: &'static str,
    /// The manual's "value" column (Markdown).
    pub value: &'static str,
    /// The manual's "default" column (Markdown): the value in effect when
    /// the key is not given.
    pub default: &'static str,
    /// The manual's "meaning" column (Markdown).
    pub meaning: &'static str,
    /// An rtlab extension (not in systress).
    pub extension: bool,
    /// May be given several times (each adds one entry).
    pub repeatable: bool,
    /// How the parser applies the key's value to its stanza.
    pub(super) apply: apply::Apply,
}

/// The [`KeySpec::syntax`] of a key that takes no value (`memlock`).
pub const FLAG: &str = "(flag)";

impl KeySpec {
    /// The key takes no value: writing it turns it on.
    pub fn is_flag(&self) -> bool {
        self.syntax == FLAG
    }

    /// The key's row of the manual's table.
    pub fn markdown_row(&self) -> String {
        let tag = match (self.extension, self.repeatable) {
            (true, true) => " **(rtlab, repeatable)**",
            (true, false) => " **(rtlab)**",
            (false, true) => " **(repeatable)**",
            (false, false) => "",
        };
        format!(
            "| `{}`{tag} | {} | {} | {} |",
            self.name, self.value, self.default, self.meaning
        )
    }
}

/// The manual's table of the keys of `kind`, header included.
pub fn markdown_table(kind: StanzaKind) -> String {
    let mut out = String::from("| key | value | default | meaning |\n|---|---|---|---|\n");
    for k in KEYS.iter().filter(|k| k.stanza == kind) {
        out.push_str(&k.markdown_row());
        out.push('\n');
    }
    out
}

use super::apply;
use StanzaKind::{IrqTask, Main, Program, TaskLatency, Timer};

/// All keys, in the manual's order.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        stanza: Main,
        name: "dbg_level",
        syntax: "N",
        value: "0..9",
        default: "0",
        meaning: "verbosity of diagnostics on stderr; `-d N` overrides it",
        extension: false,
        repeatable: false,
        apply: apply::dbg_level,
    },
    KeySpec {
        stanza: Main,
        name: "cpu_affinity",
        syntax: "CPULIST",
        value: "CPULIST",
        default: "inherited (all online)",
        meaning: "CPUs of the main thread (and of rtlab's helper threads)",
        extension: false,
        repeatable: false,
        apply: apply::cpu_affinity,
    },
    KeySpec {
        stanza: Main,
        name: "sched.policy",
        syntax: "POLICY",
        value: "POLICY",
        default: "OTHER",
        meaning: "main-thread policy",
        extension: false,
        repeatable: false,
        apply: apply::sched_policy,
    },
    KeySpec {
        stanza: Main,
        name: "sched.priority",
        syntax: "N",
        value: "N",
        default: "0",
        meaning: "main-thread priority or nice value",
        extension: false,
        repeatable: false,
        apply: apply::sched_priority,
    },
    KeySpec {
        stanza: Main,
        name: "stats.period",
        syntax: "DURATION",
        value: "DURATION, ≥ 1 ms",
        default: "1 s",
        meaning: "refresh period of the live table and of the CPU-load series",
        extension: false,
        repeatable: false,
        apply: apply::stats_period,
    },
    KeySpec {
        stanza: Main,
        name: "stats.format",
        syntax: "txt|csv",
        value: "`txt` \\| `csv`",
        default: "`txt`",
        meaning: "format of each timer thread's result file",
        extension: false,
        repeatable: false,
        apply: apply::stats_format,
    },
    KeySpec {
        stanza: Main,
        name: "stats.cpu_load",
        syntax: "all|global|none",
        value: "`all` \\| `global` \\| `none`",
        default: "`none`",
        meaning: "CPU block of the live table: per CPU and global, global only, or nothing (the JSON result always has the series)",
        extension: false,
        repeatable: false,
        apply: apply::stats_cpu_load,
    },
    KeySpec {
        stanza: Main,
        name: "memlock",
        syntax: "(flag)",
        value: "flag",
        default: "off",
        meaning: "`mlockall(MCL_CURRENT\\|MCL_FUTURE\\|MCL_ONFAULT)` before the threads start (without `MCL_ONFAULT` where the kernel refuses it): what the run touches is locked, not the whole binary; released at the end",
        extension: false,
        repeatable: false,
        apply: apply::memlock,
    },
    KeySpec {
        stanza: Main,
        name: "pm_qos.cpu_dma_latency",
        syntax: "DURATION|off",
        value: "DURATION in whole µs, or `off`",
        default: "`0 us`",
        meaning: "value held on `/dev/cpu_dma_latency` while the run lasts, as cyclictest does by default (this keeps CPUs out of deep C-states). `off` leaves PM QoS alone. The kernel drops the request when rtlab exits, however it exits. If the file cannot be opened the run goes on and the result says so (`pm_qos.held: false`).",
        extension: true,
        repeatable: false,
        apply: apply::dma_latency,
    },
    KeySpec {
        stanza: Main,
        name: "cpuset",
        syntax: "NAME",
        value: "NAME",
        default: "none: stays where rtlab started",
        meaning: "cpuset the main thread enters at the start (on cgroup v2 the whole rtlab process). Timer threads and programs without a `cpuset` of their own stay in it. See [Cpusets](#cpusets).",
        extension: true,
        repeatable: false,
        apply: apply::cpuset,
    },
    KeySpec {
        stanza: Main,
        name: "cpufreq.governor",
        syntax: "GOVERNOR",
        value: "GOVERNOR",
        default: "unchanged",
        meaning: "cpufreq governor of the policies covering `cpufreq.cpus`, for the run. Refused at check time on a machine without cpufreq, or when a policy does not offer it. See [System settings for a run](#system-settings-for-a-run).",
        extension: true,
        repeatable: false,
        apply: apply::governor,
    },
    KeySpec {
        stanza: Main,
        name: "cpufreq.cpus",
        syntax: "CPULIST",
        value: "CPULIST",
        default: "all online",
        meaning: "the CPUs whose policies get `cpufreq.governor` (a policy covering any of them is set whole)",
        extension: true,
        repeatable: false,
        apply: apply::governor_cpus,
    },
    KeySpec {
        stanza: Main,
        name: "cstates.max_latency",
        syntax: "DURATION",
        value: "DURATION, whole µs",
        default: "unchanged",
        meaning: "disables, on `cstates.cpus`, every cpuidle state whose exit latency is above it (`0 us` leaves only polling)",
        extension: true,
        repeatable: false,
        apply: apply::cstate_max_latency,
    },
    KeySpec {
        stanza: Main,
        name: "cstates.cpus",
        syntax: "CPULIST",
        value: "CPULIST",
        default: "all online",
        meaning: "the CPUs of `cstates.max_latency`",
        extension: true,
        repeatable: false,
        apply: apply::cstate_cpus,
    },
    KeySpec {
        stanza: Main,
        name: "irq.affinity",
        syntax: "CPULIST [IRQ...]",
        value: "CPULIST [IRQ...]",
        default: "none",
        meaning: "sets `smp_affinity_list` of the IRQs given (all when none, or `all`) to CPULIST; IRQs the kernel refuses are reported in the result and in a warning, the others still move",
        extension: true,
        repeatable: true,
        apply: apply::irq_affinity,
    },
    KeySpec {
        stanza: Main,
        name: "threads.sched",
        syntax: "PATTERN POLICY PRIORITY",
        value: "PATTERN POLICY PRIORITY",
        default: "none",
        meaning: "gives every thread whose name matches the glob PATTERN (`ksoftirqd/*`, `irq/*-eth0*`) that policy and priority; a pattern that matches no thread at check time is refused",
        extension: true,
        repeatable: true,
        apply: apply::thread_sched,
    },
    KeySpec {
        stanza: Main,
        name: "spikes.worst",
        syntax: "N",
        value: "0..100000",
        default: "20",
        meaning: "how many of each timer thread's worst wake-ups to keep, each with its time, CPU and latency (JSON result, result file, report); `0` keeps none. Keeping them costs the hot loop one comparison per sample",
        extension: true,
        repeatable: false,
        apply: apply::spikes_worst,
    },
    KeySpec {
        stanza: Main,
        name: "spikes.threshold",
        syntax: "DURATION|off",
        value: "DURATION, ≥ 1 µs, or `off`",
        default: "off",
        meaning: "also keep every wake-up at least this late (up to `spikes.max` per thread; the others are counted), as cyclictest's `--spike`",
        extension: true,
        repeatable: false,
        apply: apply::spikes_threshold,
    },
    KeySpec {
        stanza: Main,
        name: "spikes.max",
        syntax: "N",
        value: "1..100000",
        default: "1000",
        meaning: "most wake-ups kept above `spikes.threshold` per thread",
        extension: true,
        repeatable: false,
        apply: apply::spikes_max,
    },
    KeySpec {
        stanza: Main,
        name: "trace.threshold",
        syntax: "DURATION|off",
        value: "DURATION, ≥ 1 µs, or `off`",
        default: "off",
        meaning: "the flight recorder: rtlab traces the measured CPUs in its own tracefs instance (as root) and explains, while the run goes on, each wake-up at least this late: what ran on the CPU from the deadline to the wake-up. See [Why wake-ups were late](manual.md#why-wake-ups-were-late)",
        extension: true,
        repeatable: false,
        apply: apply::trace_threshold,
    },
    KeySpec {
        stanza: Main,
        name: "trace.max_spikes",
        syntax: "N",
        value: "1..10000",
        default: "100",
        meaning: "most wake-ups the flight recorder explains in a run (at most 10 from one read of the trace buffer); the others are counted",
        extension: true,
        repeatable: false,
        apply: apply::trace_max_spikes,
    },
    KeySpec {
        stanza: Main,
        name: "lifetime.duration",
        syntax: "DURATION",
        value: "DURATION, ≥ 1 ms",
        default: "none",
        meaning: "the run ends after this long from the timer threads' release and `warmup`, whatever its timer threads would do (one stopped before its own lifetime makes the run end `cut_short`, said with what it measured and asked): the end of a run of programs, audits and IRQ-to-task measurements alone (without it, such a run goes on until stopped)",
        extension: true,
        repeatable: false,
        apply: apply::main_lifetime,
    },
    KeySpec {
        stanza: Main,
        name: "audit.cpus",
        syntax: "CPULIST",
        value: "CPU list",
        default: "none",
        meaning: "the isolation audit: rtlab traces the run (as root) and counts every interruption of these CPUs by its source (timer ticks, each IRQ, softirq, IPI and its sender, work item, kernel thread and task), says which do not belong on an isolated CPU and checks what `isolcpus=`, `nohz_full=` and the cpuset partition promised. See [Isolation audit](manual.md#isolation-audit)",
        extension: true,
        repeatable: false,
        apply: apply::audit_cpus,
    },
    KeySpec {
        stanza: Main,
        name: "trace.stacks",
        syntax: "off|switch|all",
        value: "`off`, `switch` or `all`",
        default: "off",
        meaning: "the kernel stacks the flight recorder keeps (a `stacktrace` trigger in its instance): `switch`, each task's stack as it lets the CPU go to a timer thread (where a non-preemptible section ended; idle's never); `all`, also the waker's at every wake-up of a timer thread (where its interrupt landed). Each stack is walked in the wake-up's path: it costs that wake-up 5 to 20 µs (measured, [benchmarks](benchmarks.md)), shown as a part of its own; named through `/proc/kallsyms`",
        extension: true,
        repeatable: false,
        apply: apply::trace_stacks,
    },
    KeySpec {
        stanza: Main,
        name: "trace.buffer_kb",
        syntax: "N",
        value: "64..1048576",
        default: "512",
        meaning: "the flight recorder's ring buffer per traced CPU, in KiB (rtla's `--buffer-size`): a larger one keeps more of the moments before a late wake-up, a read costs more. The kernel takes the buffers whole: with the trace stream's, they may not exceed a quarter of `MemAvailable` (refused before the run)",
        extension: true,
        repeatable: false,
        apply: apply::trace_buffer_kb,
    },
    KeySpec {
        stanza: Main,
        name: "trace.event",
        syntax: "SYSTEM/EVENT",
        value: "a tracepoint under tracefs `events/` (`SYSTEM:EVENT` too), at most 32",
        default: "none",
        meaning: "one more tracepoint the flight recorder records and keeps in each saved window (rtla's `-e`); one this kernel lacks is named in the result",
        extension: true,
        repeatable: true,
        apply: apply::trace_event,
    },
    KeySpec {
        stanza: Main,
        name: "trace.dump_tasks",
        syntax: "(flag)",
        value: "flag",
        default: "off",
        meaning: "the flight recorder traces every online CPU (not only the timer threads'), and each explained wake-up also says what every CPU was running at its deadline, and for how long (rtla's `--dump-tasks`); costs a read of every CPU's buffer per read that explains",
        extension: true,
        repeatable: false,
        apply: apply::trace_dump_tasks,
    },
    KeySpec {
        stanza: Main,
        name: "warmup",
        syntax: "DURATION",
        value: "DURATION",
        default: "0 s",
        meaning: "the timer threads' wake-ups in their first DURATION are not counted (rtla's `--warm-up`): caches, page faults and frequency settle first. Every lifetime counts after it, `main`'s `lifetime.duration` and each timer thread's, so that what is measured is what was asked: the run lasts that much longer (programs, audits and IRQ-to-task measurements run and count through it)",
        extension: true,
        repeatable: false,
        apply: apply::warmup,
    },
    KeySpec {
        stanza: Main,
        name: "irq_latency",
        syntax: "(flag)",
        value: "flag",
        default: "off",
        meaning: "each timer thread's interrupt latency too (rtla's IRQ column): from the trace (root), the timer it arms for each sleep and that timer's handling, less the deadline; kept as its own histogram (`timer_irq[]`, and thread `T<N>.irq` of reports, plots, compare and `--fail-if`), beside the thread's latency",
        extension: true,
        repeatable: false,
        apply: apply::irq_latency,
    },
    KeySpec {
        stanza: Main,
        name: "on_spike",
        syntax: "ACTION",
        value: "`save`, `stop`, `signal PID SIGNAL` or `run PROGRAM [ARG...]`",
        default: "none",
        meaning: "what the main thread does at a wake-up at least `trace.threshold` late (else `spikes.threshold`): keep its trace window, end the run (cyclictest `-b`), signal a process, or run a program (split into words as `cmdline` is, no shell runs, with the caller's rights; the spike's figures in `RTLAB_SPIKE_*`). At most once per `on_spike.every`; never on a timer thread",
        extension: true,
        repeatable: true,
        apply: apply::on_spike,
    },
    KeySpec {
        stanza: Main,
        name: "on_spike.every",
        syntax: "DURATION",
        value: "DURATION, ≥ 1 ms",
        default: "1 s",
        meaning: "the `on_spike` actions run at most once this often; the spikes in between are counted",
        extension: true,
        repeatable: false,
        apply: apply::on_spike_every,
    },
    KeySpec {
        stanza: Timer,
        name: "sched.deadline",
        syntax: "RUNTIME:[DEADLINE:]PERIOD",
        value: "durations, `200us:1ms` (rtla's `-P d:...`)",
        default: "none",
        meaning: "the thread runs under SCHED_DEADLINE with this reservation instead of `sched.policy` (which it excludes), and measures the same way. Pinned to fewer CPUs than its root domain, the kernel's admission control refuses it: rtlab says so before the start (an exclusive partition, `kernel.sched_rt_runtime_us=-1`, or no `cpu_affinity` let it run)",
        extension: true,
        repeatable: false,
        apply: apply::sched_deadline,
    },
    KeySpec {
        stanza: Timer,
        name: "cpu_affinity",
        syntax: "CPULIST",
        value: "CPULIST",
        default: "all online",
        meaning: "CPUs of the thread (usually one)",
        extension: false,
        repeatable: false,
        apply: apply::cpu_affinity,
    },
    KeySpec {
        stanza: Timer,
        name: "sched.policy",
        syntax: "POLICY",
        value: "POLICY",
        default: "OTHER",
        meaning: "its policy (real-time runs say `FIFO`)",
        extension: false,
        repeatable: false,
        apply: apply::sched_policy,
    },
    KeySpec {
        stanza: Timer,
        name: "sched.priority",
        syntax: "N",
        value: "N",
        default: "0",
        meaning: "its priority (`99` for real-time runs)",
        extension: false,
        repeatable: false,
        apply: apply::sched_priority,
    },
    KeySpec {
        stanza: Timer,
        name: "timer.period",
        syntax: "DURATION",
        value: "DURATION, 1 µs..1 h",
        default: "1 ms",
        meaning: "the cyclic timer's period",
        extension: false,
        repeatable: false,
        apply: apply::timer_period,
    },
    KeySpec {
        stanza: Timer,
        name: "lifetime.duration",
        syntax: "DURATION",
        value: "DURATION",
        default: "until the run stops",
        meaning: "measure for this long: the thread takes the samples whose deadline falls within it (10 s at 1 ms = 10000 samples, fewer if periods were skipped)",
        extension: false,
        repeatable: false,
        apply: apply::lifetime_duration,
    },
    KeySpec {
        stanza: Timer,
        name: "lifetime.loops",
        syntax: "N",
        value: "N ≥ 1",
        default: "none",
        meaning: "or take this many samples; with both keys, the first reached ends the thread",
        extension: false,
        repeatable: false,
        apply: apply::lifetime_loops,
    },
    KeySpec {
        stanza: Timer,
        name: "stats.histo_size",
        syntax: "DURATION",
        value: "DURATION, whole µs, ≤ 1 s",
        default: "100 us",
        meaning: "largest latency kept in the 1-µs-bucket histogram of the result file; samples beyond it still count in L_min/L_max/L_avg and in the percentiles",
        extension: false,
        repeatable: false,
        apply: apply::histo_size,
    },
    KeySpec {
        stanza: Timer,
        name: "stats.samples",
        syntax: "N",
        value: "1..1000000",
        default: "none",
        meaning: "keep the latency of each of the first N samples, in order (the JSON result's `samples_ns`; `rtlab cyclictest -v` prints them): 4 bytes each, written before the thread's release, so keeping them costs the hot loop one store",
        extension: true,
        repeatable: false,
        apply: apply::stats_samples,
    },
    KeySpec {
        stanza: Timer,
        name: "stats.filename",
        syntax: "PATH",
        value: "PATH",
        default: "`timer_threadNN.txt` (`.csv` with `stats.format csv`)",
        meaning: "its result file, relative to `--outdir` (default: the current directory)",
        extension: false,
        repeatable: false,
        apply: apply::stats_filename,
    },
    KeySpec {
        stanza: Timer,
        name: "cpuset",
        syntax: "NAME",
        value: "NAME",
        default: "main's",
        meaning: "cpuset the thread enters before pinning itself (cgroup v1 only: v2 places whole processes). Without `cpu_affinity`, the thread takes the cpuset's CPUs.",
        extension: true,
        repeatable: false,
        apply: apply::cpuset,
    },
    KeySpec {
        stanza: Program,
        name: "cmdline",
        syntax: "ARGV...",
        value: "ARGV",
        default: "required",
        meaning: "what to run; the command must exist (on `PATH` or as a path) or the file is refused",
        extension: false,
        repeatable: false,
        apply: apply::cmdline,
    },
    KeySpec {
        stanza: Program,
        name: "cpu_affinity",
        syntax: "CPULIST",
        value: "CPULIST",
        default: "all online",
        meaning: "its CPUs, inherited by its children",
        extension: false,
        repeatable: false,
        apply: apply::cpu_affinity,
    },
    KeySpec {
        stanza: Program,
        name: "sched.policy",
        syntax: "POLICY",
        value: "POLICY",
        default: "OTHER",
        meaning: "its policy",
        extension: false,
        repeatable: false,
        apply: apply::sched_policy,
    },
    KeySpec {
        stanza: Program,
        name: "sched.priority",
        syntax: "N",
        value: "N",
        default: "0",
        meaning: "its priority or nice value",
        extension: false,
        repeatable: false,
        apply: apply::sched_priority,
    },
    KeySpec {
        stanza: Program,
        name: "output.out",
        syntax: "PATH",
        value: "PATH",
        default: "`/dev/null`",
        meaning: "its stdout; truncated at the first start, appended to by respawns; relative to the current directory",
        extension: false,
        repeatable: false,
        apply: apply::output_out,
    },
    KeySpec {
        stanza: Program,
        name: "output.err",
        syntax: "PATH",
        value: "PATH",
        default: "`/dev/null`",
        meaning: "its stderr, likewise",
        extension: false,
        repeatable: false,
        apply: apply::output_err,
    },
    KeySpec {
        stanza: Program,
        name: "termination.ok",
        syntax: "RESPAWN|IGNORE|ABORT",
        value: "ACTION",
        default: "`IGNORE`",
        meaning: "what to do when it exits with status 0",
        extension: false,
        repeatable: false,
        apply: apply::on_ok,
    },
    KeySpec {
        stanza: Program,
        name: "termination.ko",
        syntax: "RESPAWN|IGNORE|ABORT",
        value: "ACTION",
        default: "`IGNORE`",
        meaning: "what to do when it exits non-zero or dies of a signal",
        extension: false,
        repeatable: false,
        apply: apply::on_ko,
    },
    KeySpec {
        stanza: Program,
        name: "termination.grace",
        syntax: "DURATION",
        value: "DURATION",
        default: "`2 s`",
        meaning: "at the end of the run, time between SIGTERM and SIGKILL",
        extension: true,
        repeatable: false,
        apply: apply::grace,
    },
    KeySpec {
        stanza: Program,
        name: "cpuset",
        syntax: "NAME",
        value: "NAME",
        default: "main's",
        meaning: "cpuset the process enters between fork and exec (its children inherit it). cgroup v1 only for now (on v2 a process is in one cgroup, and rtlab's tracking cgroup holds it).",
        extension: true,
        repeatable: false,
        apply: apply::cpuset,
    },
    KeySpec {
        stanza: Program,
        name: "cpu.quota",
        syntax: "DURATION",
        value: "DURATION, whole µs, ≥ 1 ms",
        default: "unlimited",
        meaning: "CPU time the program's group may use per `cpu.period`, summed over CPUs (`150 ms` of `100 ms` is one and a half CPUs). See [CPU bandwidth](#cpu-bandwidth).",
        extension: true,
        repeatable: false,
        apply: apply::cpu_quota,
    },
    KeySpec {
        stanza: Program,
        name: "cpu.period",
        syntax: "DURATION",
        value: "DURATION, 1 ms..1 s",
        default: "`100 ms`",
        meaning: "the enforcement period",
        extension: true,
        repeatable: false,
        apply: apply::cpu_period,
    },
    KeySpec {
        stanza: Program,
        name: "cpu.group",
        syntax: "NAME",
        value: "NAME",
        default: "`programN` when `cpu.quota` is set",
        meaning: "programs naming the same group share one cgroup and one quota (give the quota once, or the same in each)",
        extension: true,
        repeatable: false,
        apply: apply::cpu_group,
    },
    KeySpec {
        stanza: IrqTask,
        name: "irq",
        syntax: "NUMBER|NAME",
        value: "an IRQ number, or its name as `/proc/interrupts` ends its line (`virtio1-req.0`)",
        default: "none (required)",
        meaning: "the interrupt whose handler starts each measurement",
        extension: true,
        repeatable: false,
        apply: apply::irq_task_irq,
    },
    KeySpec {
        stanza: IrqTask,
        name: "task.name",
        syntax: "COMM",
        value: "a task name (`comm`, at most 15 characters)",
        default: "none",
        meaning: "the task that waits for the interrupt's data: every thread of this name (one of `task.name`, `task.pid`, `task.program` is required)",
        extension: true,
        repeatable: false,
        apply: apply::irq_task_name,
    },
    KeySpec {
        stanza: IrqTask,
        name: "task.pid",
        syntax: "PID",
        value: "a process id",
        default: "none",
        meaning: "the task: every thread of this process",
        extension: true,
        repeatable: false,
        apply: apply::irq_task_pid,
    },
    KeySpec {
        stanza: IrqTask,
        name: "task.program",
        syntax: "N",
        value: "the index of a `program[N]` of the file",
        default: "none",
        meaning: "the task: every thread of program N (each instance, when it is respawned)",
        extension: true,
        repeatable: false,
        apply: apply::irq_task_program,
    },
    KeySpec {
        stanza: TaskLatency,
        name: "task.name",
        syntax: "COMM",
        value: "a task name (`comm`, at most 15 characters)",
        default: "none",
        meaning: "the task measured: every thread of this name (one of `task.name`, `task.pid`, `task.program` is required)",
        extension: true,
        repeatable: false,
        apply: apply::task_latency_name,
    },
    KeySpec {
        stanza: TaskLatency,
        name: "task.pid",
        syntax: "PID",
        value: "a process id",
        default: "none",
        meaning: "the task measured: every thread of this process",
        extension: true,
        repeatable: false,
        apply: apply::task_latency_pid,
    },
    KeySpec {
        stanza: TaskLatency,
        name: "task.program",
        syntax: "N",
        value: "the index of a `program[N]` of the file",
        default: "none",
        meaning: "the task measured: every thread of program N",
        extension: true,
        repeatable: false,
        apply: apply::task_latency_program,
    },
    KeySpec {
        stanza: TaskLatency,
        name: "period",
        syntax: "DURATION",
        value: "a duration (`1 ms`, `500 us`)",
        default: "none",
        meaning: "the task's cycle: jitter is the period seen minus this, and the deadline when `deadline` is not given",
        extension: true,
        repeatable: false,
        apply: apply::task_latency_period,
    },
    KeySpec {
        stanza: TaskLatency,
        name: "deadline",
        syntax: "DURATION",
        value: "a duration",
        default: "the period",
        meaning: "a cycle that ends (the task sleeps again) later than this after its release (armed expiry, or wake-up) is a deadline miss",
        extension: true,
        repeatable: false,
        apply: apply::task_latency_deadline,
    },
    KeySpec {
        stanza: TaskLatency,
        name: "thread",
        syntax: "NAME|TID",
        value: "a thread's name (`comm`), or its TID (all digits)",
        default: "the threads that cycle near the period",
        meaning: "the thread(s) of the task that run the cycle: `period` and `deadline` (jitter, deadline misses) apply to them alone; by default to each thread whose median period seen is within half a period of `period`",
        extension: true,
        repeatable: false,
        apply: apply::task_latency_thread,
    },
    KeySpec {
        stanza: TaskLatency,
        name: "samples",
        syntax: "N",
        value: "0 to 1000000",
        default: "0",
        meaning: "keep each thread's first N wake-ups one by one in the result (expiry, timer lateness, wake-to-run, latency, waker)",
        extension: true,
        repeatable: false,
        apply: apply::task_latency_samples,
    },
];

/// The key `name` of stanza `kind`, if it exists.
pub fn find(kind: StanzaKind, name: &str) -> Option<&'static KeySpec> {
    KEYS.iter().find(|k| k.stanza == kind && k.name == name)
}

/// A hint for an unknown key: the closest key of the same stanza, or the
/// stanza the key belongs to.
pub fn unknown_key_hint(kind: StanzaKind, name: &str) -> String {
    if let Some(other) = KEYS.iter().find(|k| k.name == name) {
        return format!(
            "`{name}` is a key of {}, not of {}",
            other.stanza.display(),
            kind.display()
        );
    }
    // No key is longer than 64 bytes: a longer word is no typo of one (and
    // the edit distance would cost its length times each key's).
    let best = KEYS
        .iter()
        .filter(|k| k.stanza == kind && name.len() <= 64)
        .map(|k| (strsim::levenshtein(k.name, name), k.name))
        .min();
    match best {
        Some((distance, closest)) if distance <= 4.max(name.len() / 3) => {
            format!("did you mean `{closest}`?")
        }
        _ => {
            let names: Vec<&str> = KEYS
                .iter()
                .filter(|k| k.stanza == kind)
                .map(|k| k.name)
                .collect();
            format!("keys of {} are: {}", kind.display(), names.join(", "))
        }
    }
}

#[cfg(test)]
mod tests;

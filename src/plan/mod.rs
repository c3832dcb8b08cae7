//! Experiment + machine facts → a validated [`RunPlan`], or every problem as a
//! positioned [`Diagnostic`]. Nothing is started or written here: the only
//! action is a probe thread that tries the real-time policies the plan asks
//! for and then exits, so that a refusal is known before anything starts.

use crate::config::keys::StanzaKind;
use crate::config::{self, CpuLoadDisplay, Diagnostic, Experiment, Pos, Spanned, StatsFormat};
use crate::isolate::cpuset::{CpusetError, CpusetTarget};
use crate::measure::TimerSpec;
use crate::programs::ProgramSpec;
use crate::sys::os::{self, Policy, Sched};
use crate::sys::{Privileges, SysRoot};
use crate::tune::bandwidth::BandwidthError;
use serde::Serialize;
use std::path::{Path, PathBuf};

mod spikes;
mod trace_memory;
pub use trace_memory::SHARE as TRACE_MEMORY_SHARE;
mod task_latency;
mod tuning;
pub use crate::tune::TuningSpec;

/// What the planner needs to know about the machine. The real one reads the
/// kernel; tests use a fake.
pub trait Machine {
    /// Online CPUs.
    fn online_cpus(&self) -> Vec<usize>;
    /// Privileges of this process.
    fn privileges(&self) -> Privileges;
    /// Tries `sched` on a throw-away thread.
    fn probe_sched(&self, sched: Sched) -> std::io::Result<()>;
    /// Tries SCHED_DEADLINE `dl` on a throw-away thread pinned to `cpus`.
    fn probe_deadline(&self, cpus: &[usize], dl: crate::sched::Deadline) -> std::io::Result<()>;
    /// Finds a command on PATH (or checks a path with a `/`).
    fn find_command(&self, name: &str) -> Option<PathBuf>;
    /// The cpuset `name`, or the one this process is in (`None`).
    fn cpuset(&self, name: Option<&str>) -> Result<CpusetTarget, CpusetError>;
    /// The IRQ numbers of `/proc/irq`, each with its handlers' names.
    fn irqs(&self) -> Vec<(u32, Vec<String>)>;
    /// The cpufreq policies, or why there are none.
    fn freq_policies(&self) -> Result<Vec<crate::sys::power::FreqPolicy>, String>;
    /// The cpuidle states of `cpus`.
    fn idle_states(&self, cpus: &[usize]) -> Vec<crate::sys::power::IdleState>;
    /// The names of every thread now.
    fn thread_names(&self) -> Vec<String>;
    /// Whether CPU bandwidth groups can be made (Err: why not).
    fn cpu_bandwidth(&self) -> Result<(), BandwidthError>;
    /// Whether process `pid` exists now.
    fn process_exists(&self, pid: i32) -> bool;
    /// The memory available now (`MemAvailable`, KiB), if known.
    fn mem_available_kib(&self) -> Option<u64>;
}

/// The machine rtlab runs on.
pub struct RealMachine {
    /// Root of kernel files.
    pub root: SysRoot,
}

impl Machine for RealMachine {
    fn online_cpus(&self) -> Vec<usize> {
        crate::sys::online_cpus(&self.root).unwrap_or_else(|_| {
            (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect()
        })
    }

    fn privileges(&self) -> Privileges {
        Privileges::current(&self.root)
    }

    fn probe_sched(&self, sched: Sched) -> std::io::Result<()> {
        std::thread::spawn(move || os::set_sched(0, sched))
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("probe thread panicked")))
    }

    fn probe_deadline(&self, cpus: &[usize], dl: crate::sched::Deadline) -> std::io::Result<()> {
        let cpus = cpus.to_vec();
        std::thread::spawn(move || {
            os::set_affinity(0, &cpus)?;
            os::set_deadline(0, dl)
        })
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("probe thread panicked")))
    }

    fn find_command(&self, name: &str) -> Option<PathBuf> {
        // `rtlab hog` and friends run this very binary, on PATH or not.
        if name == "rtlab" {
            return std::env::current_exe().ok();
        }
        find_in_path(name, &std::env::var_os("PATH").unwrap_or_default())
    }

    fn cpuset(&self, name: Option<&str>) -> Result<CpusetTarget, CpusetError> {
        CpusetTarget::find(&self.root, name)
    }

    fn irqs(&self) -> Vec<(u32, Vec<String>)> {
        crate::sys::irq::handler_names(&self.root)
    }

    fn freq_policies(&self) -> Result<Vec<crate::sys::power::FreqPolicy>, String> {
        tuning::real::freq_policies(&self.root)
    }

    fn idle_states(&self, cpus: &[usize]) -> Vec<crate::sys::power::IdleState> {
        crate::sys::power::idle_states(&self.root, cpus)
    }

    fn thread_names(&self) -> Vec<String> {
        tuning::real::thread_names(&self.root)
    }

    fn cpu_bandwidth(&self) -> Result<(), BandwidthError> {
        crate::tune::bandwidth::hierarchy(&self.root).map(|_| ())
    }

    fn process_exists(&self, pid: i32) -> bool {
        crate::sys::tasks::start_time(&self.root, pid).is_some()
    }

    fn mem_available_kib(&self) -> Option<u64> {
        crate::sys::memory::available_kib(&self.root)
    }
}

/// Resolves a command name like `execvp` does.
pub fn find_in_path(name: &str, path_var: &std::ffi::OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        let p = PathBuf::from(name);
        return executable(&p).then_some(p);
    }
    std::env::split_paths(path_var)
        .map(|dir| dir.join(name))
        .find(|p| executable(p))
}

/// Options from the command line that shape the plan.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// Directory for result files (default: current directory).
    pub outdir: Option<PathBuf>,
    /// Debug level override (`-d`).
    pub dbg_level: Option<u8>,
    /// The run writes no result files (`rtlab cyclictest` without
    /// `--rtlab-outdir`): their paths are not checked.
    pub no_result_files: bool,
}

/// The main thread's part of the plan.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct MainPlan {
    /// CPUs of the main thread (None: left as inherited).
    pub cpus: Option<Vec<usize>>,
    /// `cpus` were chosen by rtlab to keep the main thread off the audited
    /// and measured CPUs (`main` gave no `cpu_affinity`): failing to pin is
    /// a warning.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub off_audited: bool,
    /// The CPUs rtlab keeps its own threads off: the audited ones and
    /// those of the programs a task-latency or IRQ-to-task measurement
    /// measures (absent when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_cpus: Option<Vec<usize>>,
    /// Its scheduling.
    pub sched: Sched,
    /// Live-table refresh period (ns).
    pub stats_period_ns: u64,
    /// Result-file format.
    pub stats_format: StatsFormat,
    /// CPU load display.
    pub cpu_load: CpuLoadDisplay,
    /// mlockall.
    pub memlock: bool,
    /// PM QoS request on /dev/cpu_dma_latency (µs), None = untouched.
    pub dma_latency_us: Option<u32>,
    /// Diagnostics verbosity.
    pub dbg_level: u8,
    /// Cpuset the main thread enters (v2: the whole process).
    pub cpuset: Option<CpusetTarget>,
    /// System settings held for the duration of the run.
    pub tuning: TuningSpec,
    /// The flight recorder, when `trace.threshold` is set (absent in older
    /// results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::trace::flight::TraceSpec>,
    /// `lifetime.duration`: the run ends after this long (ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime_ns: Option<u64>,
    /// `audit.cpus`: the CPUs the isolation audit watches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_cpus: Option<Vec<usize>>,
    /// `on_spike`: what the main thread does at a late wake-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_spike: Option<crate::spike_actions::SpikeActions>,
    /// `warmup` (ns): the timer threads' first wake-ups not counted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warmup_ns: u64,
    /// `irq_latency`: each timer thread's IRQ side, from the trace stream.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub irq_latency: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A timer thread's part of the plan: what the measurement layer needs,
/// plus where its result goes.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct TimerPlan {
    /// The thread itself.
    #[serde(flatten)]
    pub spec: TimerSpec,
    /// The result file name as written in the closing lines.
    pub filename: String,
    /// Where it is written.
    pub path: PathBuf,
}

/// A run, validated against the machine: everything needed to start it.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct RunPlan {
    /// The experiment file, or `<built-in>`.
    pub source: String,
    /// Directory of result files.
    pub outdir: PathBuf,
    /// The conductor.
    pub main: MainPlan,
    /// Timer threads by index.
    pub timers: Vec<TimerPlan>,
    /// Programs by index.
    pub programs: Vec<ProgramSpec>,
    /// CPU bandwidth groups of the programs.
    pub cpu_groups: Vec<crate::tune::bandwidth::GroupSpec>,
    /// IRQ-to-task measurements (absent in older results).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub irq_tasks: Vec<crate::trace::irq_task::IrqTaskSpec>,
    /// Task-latency measurements (absent in older results).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub task_latency: Vec<crate::trace::task_latency::TaskLatencySpec>,
}

impl RunPlan {
    /// Whether the run reads a trace stream (an audit, an IRQ-to-task or
    /// a task-latency measurement).
    pub fn streams(&self) -> bool {
        self.main.audit_cpus.is_some()
            || self.main.irq_latency
            || !self.irq_tasks.is_empty()
            || !self.task_latency.is_empty()
    }

    /// When `main`'s `lifetime.duration` ends the run, from the timer
    /// threads' release (ns): the warm-up first, then the lifetime, so
    /// that the timer threads measure the whole of it.
    pub fn run_lifetime_ns(&self) -> Option<u64> {
        let life = self.main.lifetime_ns?;
        Some(life.saturating_add(self.main.warmup_ns))
    }

    /// How long the run lasts from the timer threads' release when nothing
    /// stops it (ns): `main`'s lifetime, or the longest timer thread's
    /// when each has one, the warm-up included.
    pub fn planned_length_ns(&self) -> Option<u64> {
        let own: Option<Vec<u64>> = self
            .timers
            .iter()
            .map(|t| t.spec.own_lifetime_ns())
            .collect();
        let longest = own
            .and_then(|o| o.into_iter().max())
            .map(|ns| ns.saturating_add(self.main.warmup_ns));
        match (self.run_lifetime_ns(), longest) {
            (Some(life), Some(t)) => Some(life.min(t)),
            (life, t) => life.or(t),
        }
    }
}

/// The built-in experiment: one FIFO 99 timer thread per online CPU at 1 ms
/// for 10 s, as an experiment file (so it goes through the same checks).
/// With cpuset partitions (cgroup v1: name and CPUs), each thread goes in
/// the partition that holds its CPU.
pub fn builtin_experiment_text(online: &[usize], partitions: &[(String, Vec<usize>)]) -> String {
    builtin(online, partitions, Some("10 s"))
}

/// The built-in experiment of `rtlab monitor`: the same threads, without a
/// lifetime (the run goes on until it is stopped).
pub fn builtin_monitor_text(online: &[usize], partitions: &[(String, Vec<usize>)]) -> String {
    builtin(online, partitions, None)
}

fn builtin(
    online: &[usize],
    partitions: &[(String, Vec<usize>)],
    lifetime: Option<&str>,
) -> String {
    let mut text = format!(
        "# rtlab built-in experiment: one FIFO 99 timer thread per online CPU,\n\
         # 1 ms period, {}.\nmain\n{{\n  stats.cpu_load all\n}}\n",
        lifetime.unwrap_or("until stopped")
    );
    let lifetime = lifetime.map_or(String::new(), |l| format!("  lifetime.duration {l}\n"));
    for (i, cpu) in online.iter().enumerate() {
        let cpuset = partitions
            .iter()
            .find(|(_, cpus)| cpus.contains(cpu))
            .map_or(String::new(), |(name, _)| format!("  cpuset {name}\n"));
        text.push_str(&format!(
            "\ntimer_thread[{i}]\n{{\n  cpu_affinity {cpu}\n{cpuset}  sched.policy FIFO\n  sched.priority 99\n  \
             timer.period 1 ms\n{lifetime}}}\n"
        ));
    }
    text
}

struct Planner<'a> {
    machine: &'a dyn Machine,
    online: Vec<usize>,
    diags: Vec<Diagnostic>,
    no_result_files: bool,
}

impl Planner<'_> {
    fn cpus(&mut self, list: &Option<Spanned<Vec<usize>>>) -> Option<Vec<usize>> {
        let list = list.as_ref()?;
        let offline: Vec<usize> = list
            .value
            .iter()
            .copied()
            .filter(|c| !self.online.contains(c))
            .collect();
        if !offline.is_empty() {
            self.diags.push(
                Diagnostic::new(
                    list.pos,
                    format!(
                        "CPU {} {} not online",
                        crate::cpulist::format(&offline),
                        if offline.len() == 1 { "is" } else { "are" }
                    ),
                )
                .with_hint(Some(format!(
                    "this machine's online CPUs are {}",
                    crate::cpulist::format(&self.online)
                ))),
            );
        }
        Some(list.value.clone())
    }

    /// Resolves the `cpuset` key of a stanza and checks its CPUs against it.
    /// Without the key, the thread stays in `inherited` (the main thread's
    /// cpuset, or the one rtlab was started in) and its CPUs must be there.
    /// Returns the cpuset to enter, and the CPUs the thread may use there.
    fn place(
        &mut self,
        kind: StanzaKind,
        who: &str,
        key: &Option<Spanned<String>>,
        cpus: &Option<Spanned<Vec<usize>>>,
        inherited: Option<&CpusetTarget>,
    ) -> (Option<CpusetTarget>, Option<Vec<usize>>) {
        let target = match key {
            Some(k) => match self.cpuset_target(kind, who, k) {
                Some(t) => Some(t),
                None => return (None, None),
            },
            None => None,
        };
        let Some(space) = target.as_ref().or(inherited) else {
            return (None, None);
        };
        let allowed: Vec<usize> = self
            .online
            .iter()
            .copied()
            .filter(|c| space.cpus.contains(c))
            .collect();
        if let Some(list) = cpus {
            self.check_inside(who, list, space, target.is_some());
        }
        (target, Some(allowed))
    }

    /// The cpuset `k` names, if it can hold this stanza (a diagnostic says
    /// why not).
    fn cpuset_target(
        &mut self,
        kind: StanzaKind,
        who: &str,
        k: &Spanned<String>,
    ) -> Option<CpusetTarget> {
        match self.machine.cpuset(Some(&k.value)) {
            // v2 places whole processes, and a program's process is in
            // rtlab's tracking cgroup of the same hierarchy.
            Ok(t) if t.v2 && kind != StanzaKind::Main => {
                let (msg, hint) = if kind == StanzaKind::Timer {
                    (
                        "a thread of its own cpuset needs cgroup v1: v2 places whole processes",
                        "give main the cpuset instead: the whole rtlab process moves, timer threads with it",
                    )
                } else {
                    (
                        "a program's cpuset on cgroup v2 is not supported: on v2 a process is in one cgroup, and rtlab's tracking cgroup holds it",
                        "leave it out: on v2 the kernel keeps every other cgroup off an isolated partition's CPUs; choose the program's CPUs with cpu_affinity",
                    )
                };
                self.diags.push(
                    Diagnostic::new(k.pos, format!("{who}: {msg}")).with_hint(Some(hint.into())),
                );
                None
            }
            Ok(t) if t.cpus.is_empty() => {
                self.diags.push(
                    Diagnostic::new(k.pos, format!("{who}: cpuset `{}` has no CPUs", k.value))
                        .with_hint(Some(
                            "give it CPUs (its cpuset.cpus), or name a cpuset that has some (`rtlab partition show`)".into(),
                        )),
                );
                None
            }
            Ok(t) => Some(t),
            Err(e) => {
                self.diags.push(
                    Diagnostic::new(k.pos, format!("{who}: {e}")).with_hint(Some(
                        "make the rt/nrt partitions with `rtlab partition create CPUS`, or name an existing cpuset".into(),
                    )),
                );
                None
            }
        }
    }

    /// `cpu_affinity` CPUs outside the cpuset the stanza runs in (`named`:
    /// its own `cpuset` key, else the one it inherits) are refused.
    fn check_inside(
        &mut self,
        who: &str,
        list: &Spanned<Vec<usize>>,
        space: &CpusetTarget,
        named: bool,
    ) {
        let outside: Vec<usize> = list
            .value
            .iter()
            .copied()
            .filter(|c| !space.cpus.contains(c) && self.online.contains(c))
            .collect();
        if outside.is_empty() {
            return;
        }
        let cpus = crate::cpulist::format(&outside);
        let (msg, hint) = if named {
            (
                format!(
                    "{who}: CPU {cpus} not in cpuset `{}` (CPUs {})",
                    space.name,
                    crate::cpulist::format(&space.cpus)
                ),
                "choose CPUs of that cpuset, or another cpuset".to_string(),
            )
        } else {
            (
                format!(
                    "{who}: CPU {cpus} outside the cpuset it would run in ({}: CPUs {})",
                    space.display(),
                    crate::cpulist::format(&space.cpus)
                ),
                "add `cpuset NAME` naming the partition that holds these CPUs (e.g. `cpuset rt`), or choose CPUs of this one".to_string(),
            )
        };
        self.diags
            .push(Diagnostic::new(list.pos, msg).with_hint(Some(hint)));
    }

    /// A program's output target (relative to the current directory).
    fn path_target(&mut self, t: &Option<Spanned<String>>) -> PathBuf {
        let Some(t) = t else {
            return PathBuf::from("/dev/null");
        };
        let path = PathBuf::from(&t.value);
        // The one device a program's output may go to; anything else must
        // be a file rtlab can write safely.
        if path != Path::new("/dev/null")
            && let Err(e) = crate::sys::outfile::check(&path, false)
        {
            self.diags
                .push(Diagnostic::new(t.pos, e.to_string()).with_hint(Some(e.hint)));
        }
        path
    }
}

fn outdir_join(outdir: &Path, name: &str) -> PathBuf {
    let p = Path::new(name);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        outdir.join(p)
    }
}

/// Builds the plan, gathering every problem.
pub fn build(
    exp: &Experiment,
    source: &str,
    machine: &dyn Machine,
    opts: &PlanOptions,
) -> Result<RunPlan, Vec<Diagnostic>> {
    let mut p = Planner {
        machine,
        online: machine.online_cpus(),
        diags: Vec::new(),
        no_result_files: opts.no_result_files,
    };
    let outdir = opts.outdir.clone().unwrap_or_else(|| PathBuf::from("."));
    let started_in = machine.cpuset(None).ok();
    let main = p.main_plan(exp, opts, started_in.as_ref());
    // Threads and programs without a cpuset key stay where main is.
    let inherited = main.cpuset.clone().or(started_in);
    let timers = p.timer_plans(exp, &outdir, inherited.as_ref());
    let mut main = main;
    main.on_spike = spikes::plan(&mut p, exp, &timers);
    trace_memory::check(&mut p, exp, &timers);
    let (group_of, cpu_groups) = p.bandwidth_groups(exp);
    let programs = p.program_specs(exp, group_of, inherited.as_ref());
    let irq_tasks = irq_tasks(&mut p, exp);
    let task_latency = task_latency::specs(&mut p, exp);
    p.check_something_runs(exp);
    check_privileges(&mut p, exp);
    check_deadlines(&mut p, exp);
    if !p.diags.is_empty() {
        p.diags.sort_by_key(|d| d.pos);
        return Err(p.diags);
    }
    Ok(RunPlan {
        source: source.to_string(),
        outdir,
        main,
        timers,
        programs,
        cpu_groups,
        irq_tasks,
        task_latency,
    })
}

impl Planner<'_> {
    /// The `main` stanza: where the main thread goes, and the run's keys.
    fn main_plan(
        &mut self,
        exp: &Experiment,
        opts: &PlanOptions,
        started_in: Option<&CpusetTarget>,
    ) -> MainPlan {
        let (cpuset, allowed) = self.place(
            StanzaKind::Main,
            "main",
            &exp.main.cpuset,
            &exp.main.cpu_affinity,
            started_in,
        );
        let audit_cpus = self.cpus(&exp.main.audit_cpus);
        let mut measured = task_latency::measured_cpus(exp, &self.online);
        measured.extend(audit_cpus.iter().flatten());
        // The flight recorder reads and analyses the trace on the main
        // thread: never on a timer thread's CPU.
        if exp.main.trace_threshold_ns.is_some() {
            measured.extend(
                exp.timers
                    .iter()
                    .filter_map(|t| t.cpu_affinity.as_ref())
                    .flat_map(|a| a.value.iter().copied())
                    .filter(|c| self.online.contains(c)),
            );
        }
        measured.sort_unstable();
        measured.dedup();
        let measured = Some(measured).filter(|m| !m.is_empty());
        let (cpus, off_audited) = match (self.cpus(&exp.main.cpu_affinity), &measured) {
            (Some(cpus), _) => (Some(cpus), false),
            // The audit must not watch rtlab, nor a measured task find it
            // on its CPU: the main thread (and the threads it starts) go
            // to the CPUs neither audited nor measured.
            (None, Some(measured)) => {
                let rest: Vec<usize> = allowed
                    .unwrap_or_else(|| self.online.clone())
                    .into_iter()
                    .filter(|c| !measured.contains(c))
                    .collect();
                (
                    Some(rest.clone()).filter(|r| !r.is_empty()),
                    !rest.is_empty(),
                )
            }
            (None, None) => (None, false),
        };
        MainPlan {
            cpuset,
            cpus,
            off_audited,
            measured_cpus: measured,
            sched: exp.main.sched.value,
            stats_period_ns: exp.main.stats_period_ns,
            stats_format: exp.main.stats_format,
            cpu_load: exp.main.cpu_load,
            memlock: exp.main.memlock,
            dma_latency_us: exp.main.dma_latency_us,
            dbg_level: opts.dbg_level.unwrap_or(exp.main.dbg_level),
            tuning: self.tuning(&exp.main.tuning),
            trace: exp.main.trace_threshold_ns.map(|threshold_ns| {
                crate::trace::flight::TraceSpec {
                    threshold_ns,
                    max_spikes: exp.main.trace_max_spikes,
                    stacks: exp.main.trace_stacks,
                    buffer_kb: exp.main.trace_buffer_kb.value,
                    events: exp
                        .main
                        .trace_events
                        .iter()
                        .map(|e| e.value.clone())
                        .collect(),
                    dump_tasks: exp.main.trace_dump_tasks,
                }
            }),
            // Planned with the timer threads (their CPUs are the programs').
            on_spike: None,
            warmup_ns: exp.main.warmup_ns,
            irq_latency: exp.main.irq_latency,
            lifetime_ns: exp.main.lifetime_ns,
            audit_cpus,
        }
    }

    /// The `timer_thread[N]` stanzas: CPUs, result files (each its own,
    /// each writable).
    fn timer_plans(
        &mut self,
        exp: &Experiment,
        outdir: &Path,
        inherited: Option<&CpusetTarget>,
    ) -> Vec<TimerPlan> {
        let ext = match exp.main.stats_format {
            StatsFormat::Txt => "txt",
            StatsFormat::Csv => "csv",
        };
        let mut timers: Vec<TimerPlan> = Vec::new();
        for t in &exp.timers {
            let (cpuset, allowed) = self.place(
                StanzaKind::Timer,
                &format!("timer_thread[{}]", t.index),
                &t.cpuset,
                &t.cpu_affinity,
                inherited,
            );
            let cpus = self
                .cpus(&t.cpu_affinity)
                .unwrap_or_else(|| allowed.unwrap_or_else(|| self.online.clone()));
            let filename = t.filename.as_ref().map_or_else(
                || format!("timer_thread{:02}.{ext}", t.index),
                |f| f.value.clone(),
            );
            let path = outdir_join(outdir, &filename);
            let at = t.filename.as_ref().map_or(t.pos, |f| f.pos);
            // The run makes missing directories of result files before it starts.
            if let Err(e) = crate::sys::outfile::check(&path, true)
                && !self.no_result_files
            {
                self.diags
                    .push(Diagnostic::new(at, e.to_string()).with_hint(Some(e.hint)));
            }
            if let Some(first) = timers.iter().find(|o| o.path == path) {
                self.diags.push(
                    Diagnostic::new(
                        at,
                        format!(
                            "result file `{filename}` is also timer_thread[{}]'s",
                            first.spec.index
                        ),
                    )
                    .with_hint(Some(
                        "give each timer thread its own `stats.filename`".into(),
                    )),
                );
            }
            timers.push(TimerPlan {
                spec: TimerSpec {
                    index: t.index,
                    cpus,
                    sched: t.sched.value,
                    period_ns: t.period_ns,
                    duration_ns: t.duration_ns,
                    loops: t.loops,
                    histo_size_us: t.histo_size_us,
                    keep_samples: t.keep_samples,
                    cpuset,
                    spikes: crate::stats::spikes::SpikeSpec {
                        worst: exp.main.spikes_worst,
                        threshold_ns: exp.main.spikes_threshold_ns,
                        max_over: exp.main.spikes_max,
                    },
                    // Announced to the main thread: the flight recorder's
                    // threshold, else the spikes' when actions wait on them.
                    trace_threshold_ns: exp.main.trace_threshold_ns.or(exp
                        .main
                        .spikes_threshold_ns
                        .filter(|_| !exp.main.on_spike.is_empty())),
                    warmup_ns: exp.main.warmup_ns,
                    deadline: t.deadline.as_ref().map(|d| d.value),
                },
                filename,
                path,
            });
        }
        timers
    }

    /// The `program[N]` stanzas: commands found on this machine, places,
    /// bandwidth groups (`group_of`, one per program), output targets.
    fn program_specs(
        &mut self,
        exp: &Experiment,
        group_of: Vec<Option<String>>,
        inherited: Option<&CpusetTarget>,
    ) -> Vec<ProgramSpec> {
        let mut group_of = group_of.into_iter();
        let mut programs = Vec::new();
        for prog in &exp.programs {
            let name = prog.argv.value.first().cloned().unwrap_or_default();
            let executable = self.machine.find_command(&name).unwrap_or_else(|| {
                self.diags.push(
                    Diagnostic::new(
                        prog.argv.pos,
                        format!("program[{}]: command `{name}` not found", prog.index),
                    )
                    .with_hint(Some(if name.contains('/') {
                        "check the path, and that the file is executable".into()
                    } else {
                        format!("install `{name}` or give its full path; PATH is searched as a shell would")
                    })),
                );
                PathBuf::from(&name)
            });
            let (cpuset, _) = self.place(
                StanzaKind::Program,
                &format!("program[{}]", prog.index),
                &prog.cpuset,
                &prog.cpu_affinity,
                inherited,
            );
            programs.push(ProgramSpec {
                cpuset,
                cpu_group: group_of.next().flatten(),
                index: prog.index,
                argv: prog.argv.value.clone(),
                executable,
                cpus: self.cpus(&prog.cpu_affinity),
                sched: prog.sched.value,
                out: self.path_target(&prog.out),
                err: self.path_target(&prog.err),
                on_ok: prog.on_ok,
                on_ko: prog.on_ko,
                grace_ns: prog.grace_ns,
            });
        }
        programs
    }

    /// A run must have something to run, and traces need root.
    fn check_something_runs(&mut self, exp: &Experiment) {
        let traces = exp.main.audit_cpus.is_some()
            || exp.main.irq_latency
            || !exp.irq_tasks.is_empty()
            || !exp.task_latency.is_empty();
        if traces && !self.machine.privileges().root {
            let pos = exp
                .irq_tasks
                .first()
                .map(|m| m.pos)
                .or(exp.task_latency.first().map(|m| m.pos))
                .or(exp.main.audit_cpus.as_ref().map(|a| a.pos))
                .unwrap_or_default();
            self.diags.push(
                Diagnostic::new(pos, "the isolation audit, IRQ latency, IRQ-to-task and task latency read kernel tracepoints: they need root")
                    .with_hint(Some("run with sudo (rtlab traces in its own tracefs instance and removes it at the end)".into())),
            );
        }
        if exp.timers.is_empty() && exp.programs.is_empty() && !traces {
            self.diags.push(
                Diagnostic::new(Pos { line: 1, col: 1 }, "the experiment has no timer_thread and no program: nothing to run")
                    .with_hint(Some("add a `timer_thread[0] { ... }` stanza, or run `rtlab run` without a file for the built-in experiment".into())),
            );
        }
    }
}

/// The `irq_task[N]` stanzas, checked: an IRQ this machine has (by number
/// or handler name), a program of the file.
fn irq_tasks(p: &mut Planner, exp: &Experiment) -> Vec<crate::trace::irq_task::IrqTaskSpec> {
    let present = if exp.irq_tasks.is_empty() {
        Vec::new()
    } else {
        p.machine.irqs()
    };
    let mut out = Vec::new();
    for m in &exp.irq_tasks {
        if let Some(d) = missing_irq(&m.irq, &present) {
            p.diags.push(d);
        }
        task_latency::no_such_process(p, &m.task);
        if let crate::config::TaskSelector::Program(i) = m.task.value
            && !exp.programs.iter().any(|g| g.index == i)
        {
            p.diags.push(
                Diagnostic::new(m.task.pos, format!("there is no program[{i}] in this file"))
                    .with_hint(Some(
                        "name a program of the file, or the task by `task.name` or `task.pid`"
                            .into(),
                    )),
            );
        }
        out.push(crate::trace::irq_task::IrqTaskSpec {
            index: m.index,
            irq: m.irq.value.clone(),
            task: m.task.value.clone(),
        });
    }
    out
}

/// The refusal of an IRQ this machine does not have, naming the nearest
/// handler name when one is close.
fn missing_irq(
    irq: &Spanned<crate::config::IrqSelector>,
    present: &[(u32, Vec<String>)],
) -> Option<Diagnostic> {
    use crate::config::IrqSelector;
    let lists = "`rtlab irq` lists the IRQs, their names and where they fire";
    match &irq.value {
        IrqSelector::Number(n) if !present.iter().any(|p| p.0 == *n) => Some(
            Diagnostic::new(irq.pos, format!("IRQ {n} does not exist on this machine"))
                .with_hint(Some(lists.into())),
        ),
        IrqSelector::Name(name) if !present.iter().any(|p| p.1.contains(name)) => {
            let near = present
                .iter()
                .flat_map(|(n, names)| names.iter().map(move |x| (n, x)))
                .min_by_key(|(_, x)| strsim::levenshtein(x, name))
                .filter(|(_, x)| strsim::levenshtein(x, name) <= name.len().div_ceil(3));
            let hint = match near {
                Some((n, x)) => format!("did you mean {x} (IRQ {n})? {lists}"),
                None => lists.into(),
            };
            Some(
                Diagnostic::new(
                    irq.pos,
                    format!("no IRQ handler is named {name:?} on this machine"),
                )
                .with_hint(Some(hint)),
            )
        }
        _ => None,
    }
}

/// Refuses real-time policies this process cannot get, with cause and fix.
/// Every FIFO/RR request is checked by the rules, then by a real attempt.
fn check_privileges(p: &mut Planner, exp: &Experiment) {
    let mut wanted: Vec<(&str, usize, &Spanned<Sched>)> = vec![("main", 0, &exp.main.sched)];
    wanted.extend(
        exp.timers
            .iter()
            .map(|t| ("timer_thread", t.index, &t.sched)),
    );
    wanted.extend(exp.programs.iter().map(|g| ("program", g.index, &g.sched)));
    let privileges = p.machine.privileges();
    for (kind, index, sched) in wanted {
        let s = sched.value;
        let who = if kind == "main" {
            "main".to_string()
        } else {
            format!("{kind}[{index}]")
        };
        let needs_privilege =
            s.policy.is_realtime() || (s.priority < 0 && s.policy != Policy::Idle);
        if !needs_privilege {
            continue;
        }
        if s.policy.is_realtime() && privileges.rt_runtime_us == Some(0) {
            p.diags.push(
                Diagnostic::new(sched.pos, format!("{who}: RT throttling gives real-time threads no CPU time (kernel.sched_rt_runtime_us = 0)"))
                    .with_hint(Some("restore it: `sysctl kernel.sched_rt_runtime_us=950000` (or -1 to disable throttling)".into())),
            );
            continue;
        }
        if s.policy.is_realtime() && !privileges.allows_rt(s.priority) {
            p.diags.push(
                Diagnostic::new(
                    sched.pos,
                    format!(
                        "{who}: {} priority {} needs root, CAP_SYS_NICE or RLIMIT_RTPRIO >= {} (this process: uid {}, no CAP_SYS_NICE, RLIMIT_RTPRIO {})",
                        s.policy.name(), s.priority, s.priority, os::geteuid(), privileges.rtprio_limit
                    ),
                )
                .with_hint(Some(
                    "run with sudo, or `setcap cap_sys_nice,cap_ipc_lock+ep rtlab`, or raise `rtprio` in /etc/security/limits.conf; rtlab never runs a thread at a lower policy than asked".into(),
                )),
            );
            continue;
        }
        if let Err(e) = p.machine.probe_sched(s) {
            p.diags.push(
                Diagnostic::new(
                    sched.pos,
                    format!(
                        "{who}: the kernel refuses {} priority {}: {e}",
                        s.policy.name(),
                        s.priority
                    ),
                )
                .with_hint(Some(probe_hint(&e).into())),
            );
        }
    }
}

/// Tries each timer thread's SCHED_DEADLINE reservation on a throw-away
/// thread pinned as it will be: the kernel's admission control refuses a
/// thread pinned to fewer CPUs than its root domain, said before the start
/// with the ways out.
fn check_deadlines(p: &mut Planner, exp: &Experiment) {
    for t in &exp.timers {
        let Some(dl) = &t.deadline else {
            continue;
        };
        let cpus = t
            .cpu_affinity
            .as_ref()
            .map_or_else(|| p.machine.online_cpus(), |c| c.value.clone());
        let Err(e) = p.machine.probe_deadline(&cpus, dl.value) else {
            continue;
        };
        let hint = match e.raw_os_error() {
            Some(crate::sys::consts::ENOSYS) => "the sched_setattr syscall is not available here (ENOSYS): a seccomp filter or an emulator refuses it".to_string(),
            _ if !p.machine.privileges().root => "SCHED_DEADLINE needs root (or CAP_SYS_NICE)".to_string(),
            _ => format!(
                "the kernel's admission control: a SCHED_DEADLINE thread must be allowed on every CPU of its root domain, and this one is pinned to {}; put its CPU in an exclusive partition (`rtlab partition create`), or turn admission control off (`sysctl kernel.sched_rt_runtime_us=-1`, which also ends RT throttling), or leave out `cpu_affinity`; the reservation must also fit the CPUs' bandwidth",
                crate::cpulist::format(&cpus)
            ),
        };
        p.diags.push(
            Diagnostic::new(
                dl.pos,
                format!(
                    "timer_thread[{}]: the kernel refuses {}: {e}",
                    t.index,
                    dl.value.describe()
                ),
            )
            .with_hint(Some(hint)),
        );
    }
}

/// Why the kernel refused a policy rtlab was allowed to ask for, by the
/// error: ENOSYS is no such syscall here (a seccomp filter, an emulator),
/// never a matter of RT time.
fn probe_hint(e: &std::io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(crate::sys::consts::ENOSYS) => {
            "the sched_setscheduler syscall is not available here (ENOSYS): a seccomp filter \
             (a container's profile) or an emulator refuses it; allow it, or run on the host"
        }
        _ => {
            "with CONFIG_RT_GROUP_SCHED, rtlab's cgroup needs RT time: write a non-zero \
             cpu.rt_runtime_us to its cpu cgroup (and its parents)"
        }
    }
}

/// Parses and plans a file's text; diagnostics are rendered for `name`.
pub fn plan_text(
    text: &str,
    name: &str,
    machine: &dyn Machine,
    opts: &PlanOptions,
) -> Result<RunPlan, Vec<Diagnostic>> {
    let (exp, mut diags) = config::parse_all(text);
    if diags.is_empty() {
        return build(&exp, name, machine, opts);
    }
    // The file has problems: the valid part is still checked against the
    // machine (CPUs online, commands found, privileges), so that every
    // problem is reported at once. An experiment left with nothing to run
    // only because its stanzas were bad says nothing new.
    if !(exp.timers.is_empty() && exp.programs.is_empty())
        && let Err(more) = build(&exp, name, machine, opts)
    {
        for d in more {
            if !diags
                .iter()
                .any(|x| x.pos == d.pos && x.message == d.message)
            {
                diags.push(d);
            }
        }
        diags.sort_by_key(|d| d.pos);
    }
    Err(diags)
}

#[cfg(test)]
pub(crate) mod tests;

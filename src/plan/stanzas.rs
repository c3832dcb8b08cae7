//! Each stanza of the experiment turned into its part of the plan: the
//! main thread, the timer threads, the programs, the IRQ-to-task
//! measurements.

use crate::config::keys::StanzaKind;
use crate::config::{Diagnostic, Experiment, Spanned, StatsFormat};
use crate::isolate::cpuset::CpusetTarget;
use crate::measure::TimerSpec;
use crate::programs::ProgramSpec;
use std::path::{Path, PathBuf};

use super::{MainPlan, PlanOptions, Planner, TimerPlan, task_latency};

fn outdir_join(outdir: &Path, name: &str) -> PathBuf {
    let p = Path::new(name);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        outdir.join(p)
    }
}

impl Planner<'_> {
    /// The `main` stanza: where the main thread goes, and the run's keys.
    pub(super) fn main_plan(
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
        let cpus_of = |pid: i32| self.machine.process_cpus(pid);
        measured.extend(task_latency::pinned_pid_cpus(exp, &self.online, &cpus_of));
        measured.extend(audit_cpus.iter().flatten());
        // A noise thread measures whatever else runs on its CPU: rtlab's
        // own threads too.
        measured.extend(
            exp.noise
                .iter()
                .map(|n| n.cpu.value)
                .filter(|c| self.online.contains(c)),
        );
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
    pub(super) fn timer_plans(
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
    pub(super) fn program_specs(
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
                let (why, hint) = super::machine::command_missing(&name);
                self.diags.push(
                    Diagnostic::new(prog.argv.pos, format!("program[{}]: {why}", prog.index))
                        .with_hint(Some(hint)),
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
}

/// The `irq_task[N]` stanzas, checked: an IRQ this machine has (by number
/// or handler name), a program of the file.
pub(super) fn irq_tasks(
    p: &mut Planner,
    exp: &Experiment,
) -> Vec<crate::trace::irq_task::IrqTaskSpec> {
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

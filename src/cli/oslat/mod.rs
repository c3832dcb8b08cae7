//! `rtlab oslat ARGS...` (and rtlab installed under the name `oslat`):
//! oslat's command line and outputs (rt-tests 2.4), measured by rtlab's
//! noise threads. The options become an [`OslatRun`] ([`args`]), whose
//! noise-thread parts ([`NoiseParts`]) go into the run's plan; the outputs
//! are oslat's ([`crate::report::oslat`]), rendered from the run's result.
//!
//! Exit statuses: 0 when the run completed (or `-h`, `-v`), 2 when refused
//! before the start (an option rtlab does not do, a bad value), 1 when it
//! failed after the start or `-T` stopped it (oslat's `err_quit`).

use super::{Outcome, Refusal};
use crate::report::oslat as render;
use crate::sched::{Policy, Sched};
use std::ffi::OsString;

mod args;
mod outputs;

pub use args::{BadArgs, OslatRun, Parsed};

/// The oslat front end; `argv` without the program name.
pub fn main(argv: &[OsString]) -> Outcome {
    measured(argv).map(|m| m.status)
}

/// The front end, with what it measured: each thread's `Maximum:`.
pub(super) fn measured(argv: &[OsString]) -> Result<super::common::Measured, Refusal> {
    use super::common::Measured;
    let words: Vec<String> = argv
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    // oslat prints its banner first, whatever follows.
    out!("{}", render::banner());
    let root = crate::sys::SysRoot::real();
    let ncores = crate::sys::configured_cpus(&root);
    let run = match args::parse(&words, ncores).map_err(refusal)? {
        Parsed::Help => {
            out!("{}", usage());
            return Ok(Measured::nothing(0));
        }
        Parsed::Version => return Ok(Measured::nothing(0)),
        Parsed::Run(run) => run,
    };
    let allowed = crate::sys::os::get_affinity(0).unwrap_or_default();
    let parts = run.noise_parts(&allowed).map_err(refusal)?;
    if let Some(p) = &run.json_path
        && let Err(e) = crate::sys::outfile::check(p, false)
    {
        return Err(Refusal::output("rtlab oslat: --json ", &e));
    }
    if run.warns_cpu0(&parts.cpus) {
        out!("{}", render::cpu0_warning());
    }
    let view = run.view(parts.cpus.len());
    let text = experiment(&parts);
    crate::messages::debug(1, &format!("# the experiment `rtlab oslat` runs\n{text}"));
    out!("{}", render::globals(&view));
    let opts = crate::plan::PlanOptions {
        outdir: None,
        dbg_level: None,
        no_result_files: true,
    };
    let plan = super::experiment::plan_from_text(&text, "rtlab oslat", &opts, &[])?;
    let started = std::time::SystemTime::now();
    let mut exports = crate::run::ExportSet::new(false);
    let args = super::RunArgs {
        silent: true,
        ..super::RunArgs::default()
    };
    let result = super::experiment::execute_plan(&plan, &args, None, None, &mut exports)?;
    let cmdline = std::iter::once("oslat".to_string())
        .chain(words.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");
    let (status, maxima_us) = outputs::write(&run, &view, &result, started, &cmdline);
    Ok(Measured {
        status,
        maxima_us,
        result: Some(result),
    })
}

/// The experiment of oslat's options: a `main` on `-C`'s CPU, and per CPU
/// a noise thread that pre-heats for 1 s (polled, not counted), or, when
/// `-s` leaves it out of the pre-heat, sleeps that second, then measures
/// for `-D`.
pub fn experiment(p: &NoiseParts) -> String {
    let mut t = format!("main\n{{\n  cpu_affinity {}\n}}\n", p.main_cpu);
    for (i, cpu) in p.cpus.iter().enumerate() {
        t.push_str(&format!("noise_thread[{i}]\n{{\n  cpu_affinity {cpu}\n"));
        if p.sched.policy == Policy::Fifo {
            // A real-time poller polls 90% of each second (rtlab's
            // default runtime), so that RT throttling never stalls the CPU
            // (oslat polls on and is stalled by it).
            t.push_str(&format!(
                "  sched.policy FIFO\n  sched.priority {}\n",
                p.sched.priority
            ));
        }
        let start = if p.preheat_cpus.contains(cpu) {
            "noise.warmup"
        } else {
            "noise.offset"
        };
        t.push_str(&format!("  {start} {} ns\n", p.preheat_ns));
        t.push_str(&format!(
            "  lifetime.duration {} ns\n",
            p.duration_ns.max(1)
        ));
        t.push_str(&format!(
            "  stats.exact_below {} ns\n",
            p.linear_ns.min(1_000_000)
        ));
        if let Some(ns) = p.stop_at_gap_ns {
            t.push_str(&format!("  noise.stop_above {} ns\n", ns.max(1)));
        }
        if let Some(bytes) = p.memmove_bytes {
            t.push_str(&format!("  noise.memmove {bytes}\n"));
        }
        t.push_str("  noise.attribute no\n}\n");
    }
    t
}

fn refusal(b: BadArgs) -> Refusal {
    Refusal::new(format!("rtlab oslat: {}", b.message)).hint(b.hint)
}

/// What the noise threads of the plan take from oslat's options.
#[derive(Debug, Clone, PartialEq)]
pub struct NoiseParts {
    /// One noise thread per CPU, in this order (oslat's threads: the
    /// CPUs of `-c` it can pin to, ascending).
    pub cpus: Vec<usize>,
    /// The main thread's CPU (`-C`).
    pub main_cpu: usize,
    /// SCHED_FIFO at `-f`, else SCHED_OTHER.
    pub sched: Sched,
    /// The measured run (`-D`, ns), after the pre-heat.
    pub duration_ns: u64,
    /// The pre-heat before it (oslat: 1 s), on `preheat_cpus`.
    pub preheat_ns: u64,
    /// The pre-heat's CPUs: the first of `cpus` with `-s`, else all.
    pub preheat_cpus: Vec<usize>,
    /// The exact range of the gap histogram (ns): every bucket edge of
    /// oslat's table below it, with room for a `-B` bias as large as the
    /// table.
    pub linear_ns: u64,
    /// `-T`: the run stops at a gap this long (ns), the trace marked.
    pub stop_at_gap_ns: Option<u64>,
    /// `-w memmove`: bytes each thread moves between two reads.
    pub memmove_bytes: Option<u64>,
}

impl OslatRun {
    /// The noise threads' parts, given the CPUs rtlab may use (its
    /// affinity). A CPU of `-c` outside them is refused (oslat skips it
    /// silently).
    pub fn noise_parts(&self, allowed: &[usize]) -> Result<NoiseParts, BadArgs> {
        let cpus = match &self.cpus {
            None => allowed.to_vec(),
            Some(list) => {
                if let Some(c) = list.iter().find(|c| !allowed.contains(c)) {
                    return Err(BadArgs {
                        message: format!("-c: CPU {c} is not one rtlab may run on"),
                        hint: format!(
                            "choose among {} (oslat would skip CPU {c} without a word)",
                            crate::cpulist::format(allowed)
                        ),
                    });
                }
                list.clone()
            }
        };
        let sched = match self.rtprio {
            Some(p) => Sched {
                policy: Policy::Fifo,
                priority: i32::from(p),
            },
            None => Sched::default(),
        };
        let table = (self.bucket_size as u64).saturating_mul(self.bucket_width_ns);
        let linear_ns = if self.bias {
            table.saturating_mul(2)
        } else {
            table
        };
        let preheat_cpus = if self.single_preheat {
            cpus.iter().take(1).copied().collect()
        } else {
            cpus.clone()
        };
        Ok(NoiseParts {
            cpus,
            main_cpu: self.main_cpu,
            sched,
            duration_ns: self.duration_ns,
            preheat_ns: 1_000_000_000,
            preheat_cpus,
            linear_ns,
            stop_at_gap_ns: self.trace_threshold_ns,
            memmove_bytes: self.workload,
        })
    }

    /// What oslat's outputs print and how they shape the table, for
    /// `threads` measuring threads.
    pub fn view(&self, threads: usize) -> render::View {
        render::View {
            runtime_s: self.duration_ns / 1_000_000_000,
            rtprio: self.rtprio,
            cpu_list: self.cpu_list_text.clone(),
            main_cpu: self.main_cpu,
            memmove_bytes: self.workload,
            preheat_cores: if self.single_preheat { 1 } else { threads },
            bucket_size: self.bucket_size,
            bucket_width_ns: self.bucket_width_ns,
            bias: self.bias,
            zero_omit: self.zero_omit,
            quiet: self.quiet,
        }
    }

    /// Whether oslat warns that CPU 0 is measured at a FIFO priority.
    pub fn warns_cpu0(&self, cpus: &[usize]) -> bool {
        self.rtprio.is_some() && cpus.contains(&0)
    }
}

/// `rtlab oslat --help`: oslat's usage, with what rtlab does otherwise.
pub fn usage() -> String {
    "Usage:
oslat <options>

This is an OS latency detector by running busy loops on specified cores.
rtlab oslat: oslat's options and outputs (rt-tests 2.4), measured by rtlab.

Available options:

-b, --bucket-size      Specify the number of the buckets (5-1024)
-B, --bias             Add a bias to all the buckets using the estimated mininum
-c, --cpu-list         Specify CPUs to run on, e.g. '1,3,5,7-15'
-C, --cpu-main-thread  Specify which CPU the main thread runs on.  Default is cpu0.
-D, --duration         Specify test duration, e.g., 60, 20m, 2H
                       (m/M: minutes, h/H: hours, d/D: days)
    --json=FILENAME    write final results into FILENAME, JSON formatted
-f, --rtprio           Using SCHED_FIFO priority (1-99)
-m, --workload-mem     Size of the memory to use for the workload (e.g., 4K, 1M).
-q  --quiet            print a summary only on exit
-s, --single-preheat   Use a single thread when measuring latency at preheat stage
-T, --trace-threshold  Stop the test when threshold triggered (in us),
                       print a marker in ftrace and stop ftrace too.
-v, --version          Display the version of the software.
-w, --workload         Specify a kind of workload, default is no workload
                       (options: no, memmove)
-W, --bucket-width     Interval between buckets in nanoseconds (rt-tests >= 2.5)
-z, --zero-omit        Don't display buckets in the output histogram if all zeros.
"
    .to_string()
}

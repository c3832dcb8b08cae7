//! `rtlab hwlat`'s run: the noise threads that take turns written as an
//! experiment (so that the planner's checks apply), run, and hwlatdetect's
//! report made of the result: each window's polled part, each gap over the
//! threshold with what the trace saw in it, the SMIs, the steal.

use super::{HwlatArgs, realtime_offset_ns, smis_during, steal_if_guest};
use crate::cli::{Refusal, RunArgs};
use crate::plan::NoisePlan;
use crate::report::hwlat::{self as render, CpuInput, Detection, HwlatInput, Origin, SeenGap};
use crate::result::{EndReason, NoiseResult, RunResult};
use crate::sys::SysRoot;
use crate::trace::noise::NoiseClass;

/// The experiment of `plans`: one `noise_thread[N]` each, as planned.
pub fn experiment(plans: &[NoisePlan]) -> String {
    let mut t = String::from("main\n{\n}\n");
    for p in plans {
        let s = &p.spec;
        t.push_str(&format!(
            "noise_thread[{}]\n{{\n  cpu_affinity {}\n  sched.policy FIFO\n  sched.priority {}\n",
            s.index, s.cpu, s.sched.priority
        ));
        for (key, ns) in [
            ("noise.threshold", s.threshold_ns),
            ("noise.period", s.period_ns),
            ("noise.runtime", s.runtime_ns),
            ("noise.offset", s.offset_ns),
            ("stats.exact_below", s.linear_ns),
        ] {
            t.push_str(&format!("  {key} {ns} ns\n"));
        }
        if let Some(d) = s.duration_ns {
            t.push_str(&format!("  lifetime.duration {d} ns\n"));
        }
        let yes = if p.attribute { "yes" } else { "no" };
        t.push_str(&format!("  noise.attribute {yes}\n}}\n"));
    }
    t
}

/// Runs `plans` and prints hwlatdetect's report; its exit status and
/// largest sample.
pub fn measure(
    a: &HwlatArgs,
    plans: &[NoisePlan],
    detection: &Detection,
) -> Result<crate::cli::common::Measured, Refusal> {
    let root = SysRoot::real();
    let text = experiment(plans);
    crate::messages::debug(1, &format!("# the experiment `rtlab hwlat` runs\n{text}"));
    let opts = crate::plan::PlanOptions {
        outdir: None,
        dbg_level: None,
        no_result_files: true,
    };
    let plan = crate::cli::experiment::plan_from_text(&text, "rtlab hwlat", &opts, &[])?;
    out!("{}", render::header(&a.header(), detection));
    let cpus: Vec<usize> = plans.iter().map(|p| p.spec.cpu).collect();
    let before = crate::sys::smi::smi_counts(&root, &cpus);
    let offset = realtime_offset_ns();
    let mut exports = crate::run::ExportSet::new(false);
    let args = RunArgs {
        silent: true,
        ..RunArgs::default()
    };
    let result = crate::cli::experiment::execute_plan(&plan, &args, None, None, &mut exports)?;
    let after = crate::sys::smi::smi_counts(&root, &cpus);
    for w in &result.warnings {
        crate::messages::warn(w);
    }
    let input = HwlatInput {
        header: a.header(),
        hardlimit_us: a.hardlimit_us,
        detection: traced_or_why(detection, &result),
        cpus: result
            .noise
            .iter()
            .map(|n| cpu_input(n, a.threshold_us))
            .collect(),
        realtime_offset_ns: offset,
        smis: smis_during(&before, &after),
        steal_ms: steal_if_guest(&root, &result.steal_ms),
        incomplete: incomplete(&result.end),
    };
    let r = render::finish(&input);
    if let (Some(path), Some(report)) = (&a.report, &r.report_file)
        && let Err(e) = crate::sys::outfile::write_whole(path, report.as_bytes())
    {
        return Err(Refusal::output("rtlab hwlat: --report ", &e));
    }
    out!("{}", r.stdout);
    if !r.stderr.is_empty() {
        errln!("{}", r.stderr.trim_end());
    }
    Ok(crate::cli::common::Measured {
        status: r.status,
        maxima_us: vec![r.max_us],
        result: Some(result),
    })
}

/// Traced only when every thread's gaps were attributed (the stream may
/// have failed though root and tracefs were there).
fn traced_or_why(planned: &Detection, result: &RunResult) -> Detection {
    if let Some(why) = result
        .noise
        .iter()
        .find_map(|n| n.attribution_unavailable.clone())
    {
        return Detection::Untraced(why);
    }
    planned.clone()
}

/// One CPU's windows and gaps. A gap no event covers is hardware; a gap
/// an OS event touched is OS noise, but the part of it no event covers is
/// host or hardware latency when that part alone is over the threshold
/// (on a VM the host's preemption often ends with the guest's pending
/// timer interrupt inside the same gap): then that part is a hardware gap
/// of its own length.
fn cpu_input(n: &NoiseResult, threshold_us: u64) -> CpuInput {
    let gaps = n.attribution.as_ref().map_or_else(Vec::new, |a| {
        a.listed
            .iter()
            .map(|g| {
                let end_ns = g.start_ns.saturating_add(g.ns);
                let (ns, origin) = match g.class {
                    NoiseClass::Hw => (g.ns, Origin::Hardware),
                    _ if g.unseen_ns / 1000 > threshold_us => (g.unseen_ns, Origin::Hardware),
                    _ => (g.ns, Origin::Os),
                };
                SeenGap {
                    end_ns,
                    ns,
                    unseen_ns: g.unseen_ns,
                    origin,
                }
            })
            .collect()
    });
    let dropped = n
        .attribution
        .as_ref()
        .map_or(0, |a| a.gaps_dropped + a.listed_left_out);
    CpuInput {
        cpu: n.cpu,
        windows: n.periods.iter().map(render::Window::from).collect(),
        gaps,
        dropped,
    }
}

/// Why the run did not complete, if it did not.
fn incomplete(end: &EndReason) -> Option<String> {
    match end {
        EndReason::Completed => None,
        EndReason::Interrupted { signal, .. } => Some(format!("interrupted by {signal}")),
        EndReason::Failed { error } => Some(format!("failed: {error}")),
        other => Some(format!("{other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::noise::ListedGap;

    fn listed(class: NoiseClass, ns: u64, unseen_ns: u64) -> ListedGap {
        ListedGap {
            start_ns: 1_000_000,
            ns,
            class,
            unseen_ns,
            cause: None,
            pid: None,
        }
    }

    /// A gap an IRQ or a thread took is never hardware, unless the part
    /// no event covers is itself over the threshold (then that part alone
    /// is); a gap no event covers is hardware whole.
    #[test]
    fn only_what_no_os_event_covers_is_hardware() {
        let mut n: NoiseResult =
            serde_json::from_str(include_str!("../../../tests/seeds/rtlab-result-noise.json"))
                .map(|r: RunResult| r.noise[0].clone())
                .unwrap();
        let a: crate::trace::noise::NoiseAttribution = serde_json::from_value(serde_json::json!({
            "noise": 0, "cpu": 1, "tid": 7, "threshold_ns": 11000, "gaps": 4,
            "noise_ns": 0, "classes": {"hw": {"gaps": 0, "net_ns": 0},
            "nmi": {"gaps": 0, "net_ns": 0}, "irq": {"gaps": 0, "net_ns": 0},
            "softirq": {"gaps": 0, "net_ns": 0}, "thread": {"gaps": 0, "net_ns": 0}},
            "unseen_ns": 0, "culprits": [], "culprits_folded": 0, "culprits_left_out": 0,
            "culprits_left_out_ns": 0, "worst": [], "period_ns": 1, "period_origin_ns": null,
            "periods": [], "gaps_late": 0, "gaps_waiting": 0, "gaps_dropped": 2,
            "lost_events": 0
        }))
        .unwrap();
        let mut a = a;
        a.listed = vec![
            listed(NoiseClass::Irq, 40_000, 3_000),
            listed(NoiseClass::Thread, 35_000, 0),
            listed(NoiseClass::Irq, 90_000, 60_000),
            listed(NoiseClass::Hw, 25_000, 25_000),
        ];
        n.attribution = Some(a);
        let c = cpu_input(&n, 10);
        let seen: Vec<(u64, Origin)> = c.gaps.iter().map(|g| (g.ns, g.origin)).collect();
        assert_eq!(
            seen,
            [
                (40_000, Origin::Os),
                (35_000, Origin::Os),
                (60_000, Origin::Hardware),
                (25_000, Origin::Hardware)
            ]
        );
        assert_eq!(c.dropped, 2);
        assert_eq!(c.windows.len(), n.periods.len());
    }

    /// The experiment says what the plan planned, key for key.
    #[test]
    fn the_experiment_is_the_plan() {
        let args = match super::super::parse(&["--duration".into(), "4".into()]).unwrap() {
            super::super::Parsed::Run(a) => a,
            _ => unreachable!(),
        };
        let counter = crate::sys::counter_choice::CounterFacts {
            kind: crate::sys::os::counter::CounterKind::Monotonic,
            hz: 1_000_000_000,
            why: String::new(),
        };
        let plans = super::super::hwlat_plan(&args, &[0, 1], &counter, true).unwrap();
        let text = experiment(&plans);
        let exp = crate::config::parse(&text).unwrap();
        assert_eq!(exp.noise.len(), 2);
        for (n, p) in exp.noise.iter().zip(&plans) {
            let s = &p.spec;
            assert_eq!(n.cpu.value, s.cpu);
            assert_eq!(n.sched.value, s.sched);
            assert_eq!(
                (n.threshold_ns, n.period_ns, n.offset_ns, n.duration_ns),
                (s.threshold_ns, s.period_ns, s.offset_ns, s.duration_ns)
            );
            assert_eq!(n.runtime_ns.as_ref().map(|r| r.value), Some(s.runtime_ns));
            assert!(n.attribute);
        }
    }

    /// hwlatdetect takes a threshold beyond the noise threshold's range
    /// (`rtlab qualify` passes MAXIMUM_LATENCY, up to 2^31-1 µs): planned
    /// at the range's top, an experiment rtlab accepts, the given
    /// threshold kept for the report.
    #[test]
    fn a_threshold_beyond_a_second_is_planned_at_a_second() {
        let words: Vec<std::ffi::OsString> = ["--threshold", "2000000000", "--duration", "4"]
            .map(Into::into)
            .to_vec();
        let args = match super::super::parse(&words).unwrap() {
            super::super::Parsed::Run(a) => a,
            _ => unreachable!(),
        };
        assert_eq!(args.threshold_us, 2_000_000_000);
        let counter = crate::sys::counter_choice::CounterFacts {
            kind: crate::sys::os::counter::CounterKind::Monotonic,
            hz: 1_000_000_000,
            why: String::new(),
        };
        let plans = super::super::hwlat_plan(&args, &[0], &counter, true).unwrap();
        assert_eq!(
            plans[0].spec.threshold_ns,
            super::super::NOISE_THRESHOLD_MAX_NS
        );
        let exp = crate::config::parse(&experiment(&plans)).unwrap();
        assert_eq!(
            exp.noise[0].threshold_ns,
            super::super::NOISE_THRESHOLD_MAX_NS
        );
        assert_eq!(args.header().threshold_us, 2_000_000_000);
    }
}

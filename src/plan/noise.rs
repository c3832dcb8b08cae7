//! The `noise_thread[N]` stanzas turned into noise threads: their CPU (one
//! each, online, not shared), their scheduling, and a real-time poller's
//! runtime checked against the kernel's RT throttling.

use super::{NoisePlan, Planner};
use crate::config::keys::StanzaKind;
use crate::config::{Diagnostic, Experiment};
use crate::isolate::cpuset::CpusetTarget;
use crate::measure::noise::{CounterChoice, NoiseSpec};

/// The real-time runtime when `noise.runtime` is not given: 90% of the
/// period (the kernel's throttling leaves real-time tasks 95% by default).
pub const RT_RUNTIME_PERCENT: u64 = 90;

/// Every noise thread of `exp`.
pub(super) fn plans(
    p: &mut Planner,
    exp: &Experiment,
    inherited: Option<&CpusetTarget>,
) -> Vec<NoisePlan> {
    if exp.noise.is_empty() {
        return Vec::new();
    }
    let counter = p.machine.counter();
    let mut out: Vec<NoisePlan> = Vec::new();
    for n in &exp.noise {
        let who = format!("noise_thread[{}]", n.index);
        let affinity = Some(crate::config::Spanned {
            value: vec![n.cpu.value],
            pos: n.cpu.pos,
        });
        let (cpuset, _) = p.place(StanzaKind::Noise, &who, &n.cpuset, &affinity, inherited);
        p.cpus(&affinity);
        if let Some(first) = out.iter().find(|o| o.spec.cpu == n.cpu.value) {
            p.diags.push(
                Diagnostic::new(
                    n.cpu.pos,
                    format!(
                        "{who} polls CPU {}, as noise_thread[{}] does",
                        n.cpu.value, first.spec.index
                    ),
                )
                .with_hint(Some(
                    "two pollers on one CPU measure each other: one noise thread per CPU".into(),
                )),
            );
        }
        let runtime_ns = runtime(p, n, &who);
        out.push(NoisePlan {
            spec: NoiseSpec {
                index: n.index,
                cpu: n.cpu.value,
                sched: n.sched.value,
                threshold_ns: n.threshold_ns,
                period_ns: n.period_ns,
                runtime_ns,
                duration_ns: n.duration_ns,
                offset_ns: n.offset_ns,
                warmup_ns: n.warmup_ns,
                stop_above_ns: n.stop_above_ns,
                memmove_bytes: n.memmove_bytes,
                linear_ns: n.exact_below_ns,
                counter: CounterChoice {
                    kind: counter.kind,
                    hz: counter.hz,
                },
                cpuset,
            },
            attribute: n.attribute,
            counter_why: counter.why.clone(),
        });
    }
    out
}

/// The runtime per period: as given (at most the period), else the whole
/// period for a normal policy and [`RT_RUNTIME_PERCENT`] of it for a
/// real-time one; a real-time runtime the kernel's throttling would cut is
/// refused.
fn runtime(p: &mut Planner, n: &crate::config::NoiseConfig, who: &str) -> u64 {
    let rt = n.sched.value.policy.is_realtime();
    let runtime = match &n.runtime_ns {
        Some(r) if r.value > n.period_ns => {
            p.diags.push(
                Diagnostic::new(
                    r.pos,
                    format!("{who}: `noise.runtime` is longer than its period"),
                )
                .with_hint(Some(
                    "the runtime is polled within each `noise.period`: make it at most the period"
                        .into(),
                )),
            );
            n.period_ns
        }
        Some(r) => r.value,
        None if rt => n.period_ns / 100 * RT_RUNTIME_PERCENT,
        None => n.period_ns,
    };
    let throttle = p.machine.privileges().rt_runtime_us.filter(|&us| us >= 0);
    if let (true, Some(us)) = (rt, throttle) {
        // The kernel's share per `sched_rt_period_us` (1 s by default).
        let allowed = us as u128 * 1000 * n.period_ns as u128 / 1_000_000_000;
        if runtime as u128 > allowed {
            let at = n.runtime_ns.as_ref().map_or(n.sched.pos, |r| r.pos);
            p.diags.push(
                Diagnostic::new(
                    at,
                    format!(
                        "{who}: a real-time poller running {} of every {} would be stopped by RT throttling (kernel.sched_rt_runtime_us = {us})",
                        crate::config::values::format_duration(runtime),
                        crate::config::values::format_duration(n.period_ns)
                    ),
                )
                .with_hint(Some(format!(
                    "give it `noise.runtime` of at most {} per period (throttling stalls are not noise)",
                    crate::config::values::format_duration(allowed as u64)
                ))),
            );
        }
    }
    runtime
}

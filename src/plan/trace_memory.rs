//! The trace buffers a run asks the kernel for, checked against the
//! memory it has: the flight recorder's `trace.buffer_kb` on each CPU it
//! traces, and the trace stream's buffers on every online CPU. The kernel
//! takes them whole when the instance starts, and a run killed with
//! SIGKILL leaves them recording until the next rtlab frees them.

use super::{Planner, TimerPlan};
use crate::config::{Diagnostic, Experiment, Pos};

/// The share of `MemAvailable` the trace buffers may take (1 in this).
pub const SHARE: u64 = 4;

/// Refuses buffers above a quarter of the memory available now.
pub(super) fn check(p: &mut Planner, exp: &Experiment, timers: &[TimerPlan]) {
    let main = &exp.main;
    let recorder_cpus = if main.trace_threshold_ns.is_none() {
        0
    } else if main.trace_dump_tasks {
        p.online.len()
    } else {
        let mut cpus: Vec<usize> = timers.iter().flat_map(|t| t.spec.cpus.clone()).collect();
        cpus.sort_unstable();
        cpus.dedup();
        cpus.len()
    };
    let streams = main.audit_cpus.is_some()
        || main.irq_latency
        || !exp.irq_tasks.is_empty()
        || !exp.task_latency.is_empty();
    let recorder_kib = main
        .trace_buffer_kb
        .value
        .saturating_mul(recorder_cpus as u64);
    let stream_kib = if streams {
        crate::trace::stream::BUFFER_KB.saturating_mul(p.online.len() as u64)
    } else {
        0
    };
    let asked = recorder_kib.saturating_add(stream_kib);
    let Some(available) = p.machine.mem_available_kib() else {
        return;
    };
    if asked == 0 || asked <= available / SHARE {
        return;
    }
    let pos = match main.trace_buffer_kb.pos {
        Pos { line: 0, .. } => main.pos,
        given => given,
    };
    let parts = match (recorder_kib, stream_kib) {
        (r, 0) => format!(
            "trace.buffer_kb {} × {recorder_cpus} CPUs",
            r / recorder_cpus.max(1) as u64
        ),
        (0, s) => format!(
            "the trace stream's {} KiB × {} CPUs ({s} KiB)",
            crate::trace::stream::BUFFER_KB,
            p.online.len()
        ),
        (r, s) => format!(
            "trace.buffer_kb {} × {recorder_cpus} CPUs ({r} KiB) and the trace stream's {} KiB × {} CPUs ({s} KiB)",
            main.trace_buffer_kb.value,
            crate::trace::stream::BUFFER_KB,
            p.online.len()
        ),
    };
    p.diags.push(
        Diagnostic::new(
            pos,
            format!(
                "the trace buffers would take {asked} KiB ({parts}), more than {} KiB, a quarter of the {available} KiB this machine has available",
                available / SHARE
            ),
        )
        .with_hint(Some(hint(available, stream_kib, recorder_cpus))),
    );
}

/// What would fit: the largest `trace.buffer_kb` (never below its
/// minimum, 64), or, when the stream's buffers alone take the share, that.
fn hint(available: u64, stream_kib: u64, recorder_cpus: usize) -> String {
    let room = (available / SHARE).saturating_sub(stream_kib) / recorder_cpus.max(1) as u64;
    if recorder_cpus > 0 && room >= 64 {
        return format!(
            "the kernel takes them whole for the run; give `trace.buffer_kb` at most {room} here, or trace fewer CPUs"
        );
    }
    "the kernel takes them whole for the run: the trace stream (`audit.cpus`, `irq_latency`, `irq_task`, `task_latency`) needs 4 MiB a CPU, the flight recorder at least 64 KiB a traced CPU; free memory first, or run without them".into()
}

#[cfg(test)]
mod tests {
    use crate::plan::tests::refusals as refused;

    #[test]
    fn buffers_above_a_quarter_of_the_available_memory_are_refused_at_their_key() {
        // The fake machine has 1 GiB available and CPUs 0-1.
        let timers = "timer_thread[0]\n{\n cpu_affinity 0-1\n lifetime.loops 10\n}\n";
        let big = format!("main\n{{\n trace.threshold 1 ms\n trace.buffer_kb 262144\n}}\n{timers}");
        let r = refused(&big);
        assert!(
            r.iter()
                .any(|m| m.starts_with("4:")
                    && m.contains("524288 KiB (trace.buffer_kb 262144 × 2 CPUs), more than 262144 KiB, a quarter of the 1048576 KiB")),
            "{r:?}"
        );
        let fits =
            format!("main\n{{\n trace.threshold 1 ms\n trace.buffer_kb 131072\n}}\n{timers}");
        assert_eq!(refused(&fits), Vec::<String>::new());
        // Every online CPU with trace.dump_tasks.
        let one = "timer_thread[0]\n{\n cpu_affinity 0\n lifetime.loops 10\n}\n";
        let main = "main\n{\n trace.threshold 1 ms\n trace.buffer_kb 196608\n";
        assert_eq!(refused(&format!("{main}}}\n{one}")), Vec::<String>::new());
        let all = refused(&format!("{main} trace.dump_tasks\n}}\n{one}"));
        assert!(all.iter().any(|m| m.contains("196608 × 2 CPUs")), "{all:?}");
        // The trace stream's buffers count too.
        let main = main.replace("196608", "258048");
        assert_eq!(refused(&format!("{main}}}\n{one}")), Vec::<String>::new());
        let audited = refused(&format!("{main} audit.cpus 1\n}}\n{one}"));
        assert!(
            audited
                .iter()
                .any(|m| m.contains("the trace stream's 4096 KiB × 2 CPUs")),
            "{audited:?}"
        );
        // Where the stream alone takes the share, no `trace.buffer_kb` fits.
        assert!(super::hint(20_000, 8192, 1).contains("free memory first"));
        assert!(super::hint(1 << 20, 8192, 2).contains("at most 126976 here"));
    }
}

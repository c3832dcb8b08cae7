//! A monitoring run's BPF source of every real-time task's wake-ups
//! (`--rt-tasks`): loaded at the start (or refused, said aloud), read at
//! each refresh (the kernel's histograms, and the late wake-ups it sent,
//! explained), and given to the result as its `rt_wakeups` figure.

use crate::messages;
use crate::monitor::{MonitorSpec, RtTasks};
use crate::sys::SysRoot;
use crate::sys::bpf::{WakeupProbe, WakeupSnapshot};
use crate::trace::rawtrace::Symbols;
use crate::trace::rt_late::LateLog;
use crate::trace::rt_wakeups::{self, RtWakeups};
use std::collections::HashMap;

/// Late wake-ups read per refresh (the rest wait in the ring buffer).
const LATE_PER_READ: usize = 256;
/// Tasks whose worst explained so far is remembered (to say each new
/// worst once on stderr); past it the memory starts again.
const WORST_SAID: usize = 4096;

/// The loaded source and what was read of it.
pub(super) struct RtTasksSource {
    probe: WakeupProbe,
    root: SysRoot,
    late_ns: u64,
    late: LateLog,
    /// The kernel's symbols, read at the first stack to name.
    symbols: Option<Symbols>,
    /// Reading them took this much CPU (ns), once.
    symbols_ns: u64,
    /// Each task's worst late wake-up said so far (ns).
    said: HashMap<i32, u64>,
    last: Option<WakeupSnapshot>,
}

impl RtTasksSource {
    /// Loads the program, and says so; where it cannot run, says why (and
    /// `warnings` keeps it).
    pub(super) fn start(
        root: &SysRoot,
        spec: &MonitorSpec,
        warnings: &mut Vec<String>,
    ) -> Option<RtTasksSource> {
        let whose = spec.rt_tasks?;
        let all = whose == RtTasks::All;
        let late_ns = u64::try_from(spec.rt_late.as_nanos()).unwrap_or(u64::MAX);
        match WakeupProbe::start(root, all, late_ns) {
            Ok(probe) => {
                let whose = if all {
                    "every task's"
                } else {
                    "every real-time task's"
                };
                let late = match late_ns {
                    0 => String::new(),
                    ns => format!("; each wake-up of {} µs or more explained", ns / 1000),
                };
                messages::note(&format!(
                    "{whose} wake-up latency from BPF (sched_waking to switch-in, counted in the kernel){late}"
                ));
                Some(RtTasksSource {
                    probe,
                    root: root.clone(),
                    late_ns,
                    late: LateLog::default(),
                    symbols: None,
                    symbols_ns: 0,
                    said: HashMap::new(),
                    last: None,
                })
            }
            Err(why) => {
                let said = format!(
                    "--rt-tasks: every real-time task's wake-up latency is not exported: {why} (`rtlab task-latency` measures one task from tracefs)"
                );
                messages::warn(&said);
                warnings.push(said);
                None
            }
        }
    }

    /// The figures now: the kernel's maps, and the late wake-ups sent
    /// since the last read, explained (each task's new worst said).
    pub(super) fn read(&mut self) -> Option<RtWakeups> {
        self.explain_sent();
        let snap = match self.probe.read() {
            Ok(snap) => snap,
            Err(why) => {
                messages::debug(1, &format!("BPF maps not read: {why}"));
                return None;
            }
        };
        let mut w = rt_wakeups::summarise(&snap);
        w.late_causes = self
            .late
            .causes
            .iter()
            .map(|(k, n)| (k.clone(), *n))
            .collect();
        w.late_not_explained = self.late.unexplained + snap.late_lost;
        self.last = Some(snap);
        Some(w)
    }

    fn explain_sent(&mut self) {
        let sent = self.probe.drain_late(LATE_PER_READ);
        if sent.is_empty() {
            return;
        }
        if self.symbols.is_none() && sent.iter().any(|l| !l.stack.is_empty()) {
            let before = crate::sys::os::thread_cpu_ns();
            let text = crate::sys::trace::kallsyms(&self.root).unwrap_or_default();
            self.symbols = Some(Symbols::parse(&text));
            self.symbols_ns = crate::sys::os::thread_cpu_ns().saturating_sub(before);
        }
        let symbols = self.symbols.take().unwrap_or_default();
        for l in &sent {
            let (explained, before) = (self.late.explained, crate::sys::os::thread_cpu_ns());
            self.late.add(l, &symbols);
            self.late.cpu_ns += crate::sys::os::thread_cpu_ns().saturating_sub(before);
            if self.late.explained > explained {
                self.say_new_worst();
            }
        }
        self.symbols = Some(symbols);
    }

    /// The latest explanation, on stderr, when it is its task's worst yet.
    fn say_new_worst(&mut self) {
        let Some(e) = self.late.recent.back() else {
            return;
        };
        if self.said.get(&e.pid).is_some_and(|&w| w >= e.latency_ns) {
            return;
        }
        if self.said.len() >= WORST_SAID {
            self.said.clear();
        }
        self.said.insert(e.pid, e.latency_ns);
        messages::note(&format!(
            "{} (pid {}, {} {}) switched in {:.1} µs after its wake-up on CPU {}: {}",
            e.comm,
            e.pid,
            e.policy,
            e.priority,
            e.latency_ns as f64 / 1000.0,
            e.cpu,
            e.cause
        ));
    }

    /// The result's `rt_wakeups` figure: the last read's series and
    /// worst tasks, and the late wake-ups explained.
    pub(super) fn figure(mut self) -> crate::trace::Figure {
        let w = self.read().unwrap_or_default();
        let snap = self.last.unwrap_or_default();
        let l = &self.late;
        let value = serde_json::json!({
            "counted": snap.counted,
            "lost": snap.lost,
            "late_bound_ns": self.late_ns,
            "late_sent": snap.late_sent,
            "late_not_sent": {"ring_full": snap.late_lost, "rate_bound": snap.late_bounded},
            "late_explained": l.explained,
            "late_not_explained": l.unexplained,
            "explain_cpu_ns": l.cpu_ns,
            "symbols_cpu_ns": self.symbols_ns,
            "series": w.series.iter().map(|s| serde_json::json!({
                "cpu": s.cpu, "policy": s.policy, "priority": s.priority,
                "count": s.count, "sum_ns": s.sum_ns, "p99_ns": s.p99_ns, "p999_ns": s.p999_ns,
            })).collect::<Vec<_>>(),
            "tasks": w.tasks.iter().map(|t| serde_json::json!({
                "comm": t.comm, "pid": t.pid, "policy": t.policy, "priority": t.priority,
                "cpu": t.cpu, "worst_ns": t.worst_ns, "wakeups": t.wakeups,
            })).collect::<Vec<_>>(),
            "late_causes": l.causes.iter().map(|(k, n)| serde_json::json!({
                "comm": k.comm, "kind": k.kind, "cause": k.cause, "count": n,
            })).collect::<Vec<_>>(),
            "late": l.recent,
        });
        crate::trace::Figure {
            key: "rt_wakeups".into(),
            value,
            closing: closing(&w, l),
        }
    }
}

/// The closing text: the worst tasks, and the main causes of the late
/// wake-ups.
fn closing(w: &RtWakeups, l: &LateLog) -> String {
    let mut out =
        String::from("Every real-time task's wake-ups (BPF, sched_waking to switch-in):\n");
    for t in w.tasks.iter().take(5) {
        out.push_str(&format!(
            "  {} (pid {}, {} {}): {} wake-ups, worst {:.1} µs on CPU {}\n",
            t.comm,
            t.pid,
            t.policy,
            t.priority,
            t.wakeups,
            t.worst_ns as f64 / 1000.0,
            t.cpu
        ));
    }
    if l.explained + l.unexplained > 0 {
        out.push_str(&format!(
            "  late wake-ups explained: {} ({} not: the CPU's last 64 events did not reach back to the wake-up); main causes:\n",
            l.explained, l.unexplained
        ));
        let mut causes: Vec<_> = l.causes.iter().collect();
        causes.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (k, n) in causes.iter().take(8) {
            out.push_str(&format!("    {}: {} ({}) {n}\n", k.comm, k.cause, k.kind));
        }
    }
    out
}

//! A monitoring run's source of every real-time task's wake-ups
//! (`--rt-tasks`): the BPF program, loaded at the start, read at each
//! refresh (the kernel's histograms, and the late wake-ups it sent,
//! explained); where BPF cannot run, said aloud, the trace stream's
//! consumer of the same measure (`trace::rt_wakeups_trace`). Given to the
//! result as its `rt_wakeups` figure.

use crate::messages;
use crate::monitor::{MonitorSpec, RtTasks};
use crate::sys::SysRoot;
use crate::sys::bpf::{LateWakeup, WakeupProbe, WakeupSnapshot};
use crate::trace::rawtrace::Symbols;
use crate::trace::rt_late::LateLog;
use crate::trace::rt_wakeups::{self, RtWakeups};
use crate::trace::rt_wakeups_trace::RtWakeupsTrace;
use crate::trace::stream::TraceStream;
use std::collections::HashMap;

/// Late wake-ups read per refresh (the rest wait in the ring buffer).
const LATE_PER_READ: usize = 256;
/// Tasks whose worst explained so far is remembered (to say each new
/// worst once on stderr); past it the memory starts again.
const WORST_SAID: usize = 4096;

/// Where the wake-ups come from.
enum Source {
    /// The BPF program.
    Bpf(Box<WakeupProbe>),
    /// The trace stream, BPF refused for this reason; every task's or not.
    Trace { refused: String, all: bool },
}

/// The source and what was read of it.
pub(super) struct RtTasksSource {
    source: Source,
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
    /// Every task's wake-ups, not only the real-time ones'.
    all: bool,
    /// The tracefs path's gap was said (once).
    gap_said: bool,
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
        let refused = match WakeupProbe::start(root, all, late_ns) {
            Ok(probe) => {
                let whose = if all {
                    "every task's"
                } else {
                    "every real-time task's"
                };
                let late = match late_ns {
                    0 => String::new(),
                    ns => format!(
                        "; wake-ups of {} µs or more explained (at most one per CPU per 10 ms, and each CPU's worst)",
                        ns / 1000
                    ),
                };
                messages::note(&format!(
                    "{whose} wake-up latency from BPF (sched_waking to switch-in, counted in the kernel){late}"
                ));
                let bpf = Source::Bpf(Box::new(probe));
                return Some(RtTasksSource::new(bpf, root, late_ns, all));
            }
            Err(why) => why.to_string(),
        };
        let whose = if all {
            "every task's"
        } else {
            "every real-time task's"
        };
        let said = format!(
            "--rt-tasks: BPF cannot run here: {refused}; {whose} wake-ups are counted from tracefs instead, from the same two events: a wake-up whose switch-in the kernel's trace does not log (on some kernels, most of those on idle CPUs) is counted as not measured; late wake-ups are not explained (that needs the BPF program)"
        );
        messages::warn(&said);
        warnings.push(said);
        let trace = Source::Trace { refused, all };
        Some(RtTasksSource::new(trace, root, 0, all))
    }

    fn new(source: Source, root: &SysRoot, late_ns: u64, all: bool) -> RtTasksSource {
        RtTasksSource {
            source,
            root: root.clone(),
            late_ns,
            late: LateLog::default(),
            symbols: None,
            symbols_ns: 0,
            said: HashMap::new(),
            last: None,
            all,
            gap_said: false,
        }
    }

    /// Every task's (`Some(true)`) or every real-time task's wake-ups
    /// to count from the trace stream, when BPF was refused.
    pub(super) fn trace_fallback(&self) -> Option<bool> {
        match self.source {
            Source::Trace { all, .. } => Some(all),
            Source::Bpf(_) => None,
        }
    }

    /// The figures now: the kernel's maps, and the late wake-ups sent
    /// since the last read, explained (each task's new worst said).
    pub(super) fn read(&mut self, stream: Option<&TraceStream>) -> Option<RtWakeups> {
        let snap = match &mut self.source {
            Source::Trace { .. } => stream?.consumers::<RtWakeupsTrace>().next()?.snapshot(),
            Source::Bpf(probe) => {
                let sent = probe.drain_late(LATE_PER_READ);
                self.explain(&sent);
                let Source::Bpf(probe) = &self.source else {
                    return None;
                };
                match probe.read() {
                    Ok(snap) => snap,
                    Err(why) => {
                        messages::debug(1, &format!("BPF maps not read: {why}"));
                        return None;
                    }
                }
            }
        };
        self.say_trace_gap(&snap);
        let mut w = rt_wakeups::summarise(&snap);
        w.late_causes = self
            .late
            .causes
            .iter()
            .map(|(k, n)| (k.clone(), *n))
            .collect();
        w.late_not_explained = self.late.unexplained;
        w.late_not_sent = (snap.late_lost, snap.late_bounded);
        self.last = Some(snap);
        Some(w)
    }

    /// Once, on the tracefs path: most wake-ups were not measured.
    fn say_trace_gap(&mut self, snap: &WakeupSnapshot) {
        let seen = snap.counted + snap.lost;
        if self.gap_said || !matches!(self.source, Source::Trace { .. }) || seen < 1000 {
            return;
        }
        if snap.lost * 10 > seen {
            self.gap_said = true;
            messages::warn(&format!(
                "--rt-tasks from tracefs: the kernel's trace did not log the switch-in of {} of {seen} wake-ups so far: the series hold only the others (biased to busy CPUs); BPF measures them all",
                snap.lost
            ));
        }
    }

    fn explain(&mut self, sent: &[LateWakeup]) {
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
        for l in sent {
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
            crate::text::one_line(&e.comm),
            e.pid,
            e.policy,
            e.priority,
            e.latency_ns as f64 / 1000.0,
            e.cpu,
            crate::text::one_line(&e.cause)
        ));
    }

    /// The result's `rt_wakeups` figure: the last read's series and
    /// worst tasks, and the late wake-ups explained.
    pub(super) fn figure(mut self, stream: Option<&TraceStream>) -> crate::trace::Figure {
        let w = self.read(stream).unwrap_or_default();
        let snap = self.last.take().unwrap_or_default();
        let l = &self.late;
        let (source, refused) = match &self.source {
            Source::Bpf(_) => ("bpf", None),
            Source::Trace { refused, .. } => ("tracefs", Some(refused.clone())),
        };
        let value = serde_json::json!({
            "source": source,
            "bpf_refused": refused,
            "counted": snap.counted,
            "lost": snap.lost,
            "late_bound_ns": (source == "bpf").then_some(self.late_ns),
            "late_sent": snap.late_sent,
            "late_not_sent": {"ring_full": snap.late_lost, "rate_bound": snap.late_bounded},
            "late_explained": l.explained,
            "late_not_explained": l.unexplained,
            "explain_cpu_ns": l.cpu_ns,
            "symbols_cpu_ns": self.symbols_ns,
            "series": series_json(&w.series),
            "timer_series": series_json(&w.timer_series),
            "irq_series": series_json(&w.irq_series),
            "tasks": w.tasks.iter().map(|t| serde_json::json!({
                "comm": t.comm, "pid": t.pid, "policy": t.policy, "priority": t.priority,
                "cpu": t.cpu, "worst_ns": t.worst_ns, "wakeups": t.wakeups, "pids": t.pids,
            })).collect::<Vec<_>>(),
            "late_causes": l.causes.iter().map(|(k, n)| serde_json::json!({
                "comm": k.comm, "kind": k.kind, "cause": k.cause, "count": n,
            })).collect::<Vec<_>>(),
            "late": l.recent,
        });
        crate::trace::Figure {
            key: "rt_wakeups".into(),
            value,
            closing: closing(&w, l, source, self.all),
        }
    }
}

/// Series as the figure's JSON has them.
fn series_json(series: &[crate::trace::rt_wakeups::RtSeries]) -> Vec<serde_json::Value> {
    let row = |s: &crate::trace::rt_wakeups::RtSeries| {
        serde_json::json!({
            "cpu": s.cpu, "policy": s.policy, "priority": s.priority,
            "count": s.count, "sum_ns": s.sum_ns, "p50_ns": s.p50_ns, "p99_ns": s.p99_ns,
            "p999_ns": s.p999_ns,
        })
    };
    series.iter().map(row).collect()
}

/// The closing text: the worst tasks, what could not be measured, and
/// the main causes of the late wake-ups (with those not sent).
fn closing(w: &RtWakeups, l: &LateLog, source: &str, all: bool) -> String {
    let from = match source {
        "bpf" => "BPF",
        _ => "tracefs, BPF refused",
    };
    let whose = if all {
        "Every task's"
    } else {
        "Every real-time task's"
    };
    let mut out = format!("{whose} wake-ups ({from}; sched_waking to switch-in):\n");
    for t in w.tasks.iter().take(5) {
        let who = match t.pids {
            0 | 1 => format!("pid {}", t.pid),
            n => format!("{n} tasks, the worst pid {}", t.pid),
        };
        out.push_str(&format!(
            "  {} ({who}, {} {}): {}, worst {:.1} µs on CPU {}\n",
            crate::text::one_line(&t.comm),
            t.policy,
            t.priority,
            crate::text::counted(t.wakeups, "wake-up", "wake-ups"),
            t.worst_ns as f64 / 1000.0,
            t.cpu
        ));
    }
    if source != "bpf" && w.lost > 0 {
        out.push_str(&format!(
            "  {} wake-ups not measured: the kernel's trace did not log their switch-in; the figures \
             above hold only those it logged (on this kernel, mostly wake-ups on busy CPUs): BPF \
             measures them all\n",
            w.lost
        ));
    }
    let (ring_full, bounded) = w.late_not_sent;
    if l.explained + l.unexplained + ring_full + bounded > 0 {
        out.push_str(&format!(
            "  late wake-ups explained: {}; not explained: {} (the CPU's last 64 events did not reach \
             back to the wake-up); not sent to be explained: {} (at most one per CPU per 10 ms, \
             each CPU's worst always), {} (the ring buffer full). Main causes:\n",
            l.explained, l.unexplained, bounded, ring_full
        ));
        let mut causes: Vec<_> = l.causes.iter().collect();
        causes.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (k, n) in causes.iter().take(8) {
            out.push_str(&format!(
                "    {}: {} ({}) {n}\n",
                crate::text::one_line(&k.comm),
                crate::text::one_line(&k.cause),
                k.kind
            ));
        }
    }
    out
}

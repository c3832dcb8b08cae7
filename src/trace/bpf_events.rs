//! The BPF source's events: a late wake-up's record (its CPU's ring of
//! recent switches, interrupt handlers and softirqs, `sys::bpf::LateWakeup`)
//! as the [`Event`]s the tracefs readers give, so that the one analysis
//! ([`crate::trace::explain::analyze`]) explains it. Added: the woken
//! task's `sched_waking` at its stamp, and the kernel stack the program
//! took at the switch-in (in the record) as a `kernel_stack` event after it. Each field's
//! place is noted as it is written ([`Spans::push`]), never searched: a
//! task's name may hold anything.

use crate::sys::bpf::{LateWakeup, Logged, LoggedKind};
use crate::trace::event::Event;
use crate::trace::fields::Spans;
use crate::trace::rawtrace::Symbols;
use std::borrow::Cow;
use std::sync::Arc;

/// The softirqs' names by vector (`include/linux/interrupt.h`).
const SOFTIRQS: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// An event's fields, written with the place of each.
#[derive(Default)]
struct Fields {
    text: String,
    spans: Spans,
}

impl Fields {
    fn put(mut self, key: &str, value: &str) -> Self {
        if !self.text.is_empty() {
            self.text.push(' ');
        }
        let at = self.text.len();
        self.text.push_str(key);
        self.text.push('=');
        self.text.push_str(value);
        self.spans.push(at, self.text.len());
        self
    }

    /// The kernel's separator between a switch's two tasks.
    fn arrow(mut self) -> Self {
        self.text.push_str(" ==>");
        self
    }
}

/// The task that ran on the CPU: (name, PID).
type Running = (Arc<str>, i32);

fn event(cpu: usize, ts_ns: u64, on: &Running, name: &'static str, f: Fields) -> Event {
    Event {
        comm: on.0.clone(),
        pid: on.1,
        cpu,
        ts_ns,
        name: Cow::Borrowed(name),
        fields: f.text,
        spans: f.spans,
    }
}

/// The events of `late`'s record from the last switch before its wake-up
/// (all of them if none), in time order, named by the tasks that ran;
/// `symbols` name the stack's frames.
pub fn events(late: &LateWakeup, symbols: &Symbols) -> Vec<Event> {
    let cpu = late.cpu as usize;
    // Before the ring's first switch, its task switched out ran.
    let mut on: Running = late
        .log
        .iter()
        .find(|e| matches!(e.kind, LoggedKind::Switch { .. }))
        .map_or(("<...>".into(), -1), |e| {
            (e.prev_comm.as_str().into(), e.prev_pid)
        });
    // What came before the last switch up to the wake-up says nothing of
    // the wait: left out (the analysis then reads a few events, not 64).
    let from = late
        .log
        .iter()
        .rposition(|e| matches!(e.kind, LoggedKind::Switch { .. }) && e.ts_ns <= late.woken_ns)
        .unwrap_or(0);
    if let Some(e) = late.log.get(from).filter(|_| from > 0) {
        on = (e.prev_comm.as_str().into(), e.prev_pid);
    }
    let mut out = Vec::with_capacity(late.log.len() - from + 2);
    let mut waking = Some(late.woken_ns);
    for e in &late.log[from..] {
        if let Some(at) = waking.filter(|&at| at < e.ts_ns) {
            out.push(waking_event(late, at, &on));
            waking = None;
        }
        let (name, fields) = logged_fields(e);
        out.push(event(cpu, e.ts_ns, &on, name, fields));
        if matches!(e.kind, LoggedKind::Switch { .. }) {
            on = (e.next_comm.as_str().into(), e.next_pid);
            if e.ts_ns == late.switched_ns && e.next_pid == late.pid && !late.stack.is_empty() {
                let prev: Running = (e.prev_comm.as_str().into(), e.prev_pid);
                out.push(stack_event(late, symbols, &prev));
            }
        }
    }
    out
}

/// The woken task's `sched_waking`, as the kernel logs it.
fn waking_event(late: &LateWakeup, at: u64, on: &Running) -> Event {
    let f = Fields::default()
        .put("comm", &late.comm)
        .put("pid", &late.pid.to_string())
        .put("prio", &late.prio.to_string())
        .put("target_cpu", &format!("{:03}", late.cpu));
    event(late.cpu as usize, at, on, "sched_waking", f)
}

/// One logged event's name and fields.
fn logged_fields(e: &Logged) -> (&'static str, Fields) {
    let f = Fields::default();
    match &e.kind {
        LoggedKind::Switch { preempted } => (
            "sched_switch",
            f.put("prev_comm", &e.prev_comm)
                .put("prev_pid", &e.prev_pid.to_string())
                .put("prev_prio", &e.prev_prio.to_string())
                .put("prev_state", if *preempted { "R+" } else { "S" })
                .arrow()
                .put("next_comm", &e.next_comm)
                .put("next_pid", &e.next_pid.to_string())
                .put("next_prio", &e.next_prio.to_string()),
        ),
        LoggedKind::IrqEntry(irq) => (
            "irq_handler_entry",
            f.put("irq", &irq.to_string()).put("name", &e.prev_comm),
        ),
        LoggedKind::IrqExit(irq) => (
            "irq_handler_exit",
            f.put("irq", &irq.to_string()).put("ret", "handled"),
        ),
        LoggedKind::SoftirqEntry(vec) | LoggedKind::SoftirqExit(vec) => {
            let name = match e.kind {
                LoggedKind::SoftirqEntry(_) => "softirq_entry",
                _ => "softirq_exit",
            };
            let action = SOFTIRQS.get(*vec as usize).copied().unwrap_or("?");
            (name, f.put("vec", &vec.to_string()).put("action", action))
        }
    }
}

/// The stack the program took as the CPU switched to the woken task (the
/// task switched out's), as the readers fold a `kernel_stack`: ` => name`
/// per frame, the BPF machinery's own frames left out.
fn stack_event(late: &LateWakeup, symbols: &Symbols, prev: &Running) -> Event {
    let mut text = String::new();
    let names = late.stack.iter().map(|&ip| symbols.function(ip));
    let machinery = |f: &String| f.starts_with("bpf_") || f.starts_with("__bpf_");
    for f in names.skip_while(machinery) {
        text.push_str(" => ");
        text.push_str(&f);
    }
    Event {
        comm: prev.0.clone(),
        pid: prev.1,
        cpu: late.cpu as usize,
        ts_ns: late.switched_ns,
        name: Cow::Borrowed("kernel_stack"),
        fields: text,
        spans: Spans::default(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A switch logged at `ts_ns`, from and to (name, PID, kernel prio).
    pub(crate) fn switch(ts_ns: u64, prev: (&str, i32, i32), next: (&str, i32, i32)) -> Logged {
        Logged {
            ts_ns,
            kind: LoggedKind::Switch { preempted: false },
            prev_pid: prev.1,
            prev_prio: prev.2,
            prev_comm: prev.0.into(),
            next_pid: next.1,
            next_prio: next.2,
            next_comm: next.0.into(),
        }
    }

    fn plain(ts_ns: u64, kind: LoggedKind, name: &str) -> Logged {
        Logged {
            ts_ns,
            kind,
            prev_pid: 0,
            prev_prio: 0,
            prev_comm: name.into(),
            next_pid: 0,
            next_prio: 0,
            next_comm: String::new(),
        }
    }

    /// A FIFO 43 task woken at 1 000 µs while a FIFO 61 hog ran from
    /// 900 µs, an IRQ and a TIMER softirq amid it, switched in at 3 000 µs.
    pub(crate) fn hogged() -> LateWakeup {
        let idle = ("swapper/1", 0, 120);
        let hog = ("hog pid=1", 70, 38);
        let me = ("rt-43", 50, 56);
        LateWakeup {
            pid: 50,
            prio: 56,
            policy: 1,
            priority: 43,
            comm: "rt-43".into(),
            cpu: 1,
            woken_ns: 1_000_000,
            switched_ns: 3_000_000,
            stack: vec![0x1000, 0x2000, 0x3000],
            log: vec![
                switch(800_000, me, idle),
                switch(900_000, idle, hog),
                plain(1_500_000, LoggedKind::IrqEntry(36), "virtio1-req.0"),
                plain(1_520_000, LoggedKind::IrqExit(36), ""),
                plain(1_520_500, LoggedKind::SoftirqEntry(1), ""),
                plain(1_540_500, LoggedKind::SoftirqExit(1), ""),
                switch(3_000_000, hog, me),
            ],
        }
    }

    fn symbols() -> Symbols {
        Symbols::parse(
            "0000000000000fff T bpf_trace_run3\n0000000000001fff T __schedule\n\
             0000000000002fff T schedule\n",
        )
    }

    #[test]
    fn the_ring_reads_as_the_kernels_events() {
        let events = events(&hogged(), &symbols());
        let names: Vec<&str> = events.iter().map(|e| e.name.as_ref()).collect();
        // From the last switch before the wake-up.
        assert_eq!(
            names,
            [
                "sched_switch",
                "sched_waking",
                "irq_handler_entry",
                "irq_handler_exit",
                "softirq_entry",
                "softirq_exit",
                "sched_switch",
                "kernel_stack"
            ]
        );
        // A name that looks like a field is read as the name.
        let to_hog = &events[0];
        assert_eq!(to_hog.field("next_comm"), Some("hog pid=1"));
        assert_eq!(to_hog.num("next_pid"), Some(70));
        assert_eq!((&*to_hog.comm, to_hog.pid), ("swapper/1", 0));
        let waking = &events[1];
        assert_eq!((&*waking.comm, waking.pid), ("hog pid=1", 70));
        assert_eq!(waking.num("pid"), Some(50));
        assert_eq!(events[2].irq_label(), "IRQ 36 virtio1-req.0");
        assert_eq!(events[4].field("action"), Some("TIMER"));
        let stack = &events[7];
        assert_eq!(stack.pid, 70);
        assert_eq!(
            crate::trace::text::stack_frames(stack),
            ["__schedule", "schedule"]
        );
    }

    /// The same analysis explains it: the hog, named, for the most of it.
    #[test]
    fn the_analysis_names_the_hog() {
        let late = hogged();
        let events = events(&late, &symbols());
        let e = crate::trace::explain::analyze::explain(
            &events,
            0,
            late.pid,
            0,
            late.woken_ns,
            late.switched_ns - late.woken_ns,
        );
        let main = &e.parts[0];
        assert_eq!(main.what, "hog pid=1");
        assert_eq!(main.pid, Some(70));
        assert_eq!(main.ns, 2_000_000 - 40_000);
        assert!(
            e.parts
                .iter()
                .any(|p| p.what == "IRQ 36 virtio1-req.0" && p.ns == 20_000)
        );
        assert!(
            e.parts
                .iter()
                .any(|p| p.what == "softirq TIMER" && p.ns == 20_000)
        );
        assert!(
            e.cause.contains("real-time priority 61 is above"),
            "{}",
            e.cause
        );
    }
}

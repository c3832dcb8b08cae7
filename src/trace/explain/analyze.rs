//! Why one wake-up was late: the CPU's time from the deadline to the
//! wake-up, given to whatever owned the CPU at each moment, as an expert
//! reads a trace by hand. The innermost context owns the time: a hardirq
//! handler, else a softirq, else the running task. The parts add up to the
//! measured latency by construction; time the events cannot place (before
//! the window's first event) is a part of its own, never hidden.

pub use super::wire::{
    CpuTask, Explanation, KernelStack, MAX_SLICES, MAX_STACK_FRAMES, MAX_STACKS, Part, PartKind,
    Slice,
};
use crate::trace::event::Event;

/// The task `events` (one CPU, in time order) show running at `at`, as
/// the parts see it: the one switched in by the last switch before it,
/// else the one that logged the events around it (a switch the kernel did
/// not log: the task idle woke, from idle's last event). None when no
/// event precedes `at`. A priority and a run time only for a logged
/// switch-in.
pub fn running_at(events: &[Event], at: u64) -> Option<CpuTask> {
    let first = events.first().filter(|f| f.ts_ns <= at)?;
    let mut w = Walk::new(-1, at, at.saturating_add(1), first);
    let mut t = first.ts_ns;
    for e in events {
        if !w.step(&mut t, e) {
            break;
        }
    }
    let task = w.task;
    let switch_in = events[..events.partition_point(|e| e.ts_ns <= at)]
        .iter()
        .rev()
        .find(|e| e.name == "sched_switch")
        .filter(|s| !task.inferred && s.num("next_pid") == Some(i64::from(task.pid)));
    // Idle by the kernel's one name for it (the text's line heads say
    // `<idle>`, its switches `swapper/N`).
    let comm = match task.pid {
        0 => format!("swapper/{}", first.cpu),
        _ => task.comm,
    };
    Some(CpuTask {
        cpu: first.cpu,
        comm,
        pid: task.pid,
        prio: switch_in.and_then(|s| s.num("next_prio")).map(|p| p as i32),
        running_for_ns: switch_in.map(|s| at - s.ts_ns),
    })
}

/// A stretch of the window and who owned the CPU (for the timeline).
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// Start (ns).
    pub from_ns: u64,
    /// End (ns).
    pub to_ns: u64,
    /// Its owner.
    pub kind: PartKind,
    /// Who, in words.
    pub what: String,
    /// The thread's PID, if a thread.
    pub pid: Option<i32>,
    /// The task owning it was inferred: the kernel did not log its switch-in.
    pub inferred: bool,
}

#[derive(Debug, Clone)]
struct Task {
    comm: String,
    pid: i32,
    /// The workqueue item it runs (kworkers), from `workqueue_execute_start`.
    work: Option<String>,
    /// Taken from its own events: its switch-in was not logged.
    inferred: bool,
}

impl Task {
    fn of(e: &Event, inferred: bool) -> Self {
        Task {
            comm: e.comm.to_string(),
            pid: e.pid,
            work: None,
            inferred,
        }
    }
}

#[derive(Debug, Clone)]
struct Handler {
    kind: PartKind,
    what: String,
    exit: &'static str,
}

/// The hardirq context an event opens, with the event that closes it.
fn opens(e: &Event) -> Option<Handler> {
    let (kind, what, exit) = match e.name.as_ref() {
        "irq_handler_entry" => (PartKind::Irq, e.irq_label(), "irq_handler_exit"),
        "local_timer_entry" => (
            PartKind::Irq,
            "local timer interrupt".into(),
            "local_timer_exit",
        ),
        "reschedule_entry" => (PartKind::Irq, "reschedule IPI".into(), "reschedule_exit"),
        "call_function_single_entry" => (
            PartKind::Irq,
            "function-call IPI".into(),
            "call_function_single_exit",
        ),
        "call_function_entry" => (
            PartKind::Irq,
            "function-call IPI".into(),
            "call_function_exit",
        ),
        "ipi_entry" => (
            PartKind::Irq,
            format!("IPI {}", e.field("reason").unwrap_or("")),
            "ipi_exit",
        ),
        "softirq_entry" => (
            PartKind::Softirq,
            format!(
                "softirq {}",
                e.field("action").unwrap_or(e.field("vec").unwrap_or("?"))
            ),
            "softirq_exit",
        ),
        _ => return None,
    };
    Some(Handler { kind, what, exit })
}

/// `prio 4` in words: `FIFO/RR 95` or `nice 0`.
pub fn prio_words(prio: i32) -> String {
    if prio < 0 {
        // The kernel shows a SCHED_DEADLINE task at -1: above every other.
        "SCHED_DEADLINE".to_string()
    } else if prio < 100 {
        format!("real-time priority {}", 99 - prio)
    } else {
        format!("nice {}", prio - 120)
    }
}

/// Who owns a stretch of the window: the innermost context. Before the
/// timer thread's wake-up, only a hardirq handler can have kept the timer
/// interrupt out; any other owner is named, but the time is the
/// interrupt's lateness.
fn owner(
    task: &Task,
    stack: &[Handler],
    tid: i32,
    before_wake: bool,
) -> (PartKind, String, Option<i32>) {
    let busy = |what: &str| format!("timer interrupt late (CPU busy with {what})");
    let words = || match &task.work {
        Some(w) => format!("{} (work {w})", task.comm),
        None => task.comm.clone(),
    };
    match stack.last() {
        Some(h) if h.kind == PartKind::Irq || !before_wake => (h.kind, h.what.clone(), None),
        Some(h) => (PartKind::TimerLate, busy(&h.what), None),
        None if task.pid == 0 && before_wake => (
            PartKind::TimerLateIdle,
            "timer interrupt late, CPU idle".into(),
            None,
        ),
        None if task.pid == 0 => (PartKind::Idle, "idle".into(), None),
        None if before_wake => (PartKind::TimerLate, busy(&words()), Some(task.pid)),
        None if task.pid == tid => (PartKind::TimerThread, task.comm.clone(), Some(tid)),
        None => (PartKind::Thread, words(), Some(task.pid)),
    }
}

/// The walk over one window: who owns the CPU as each event comes.
struct Walk {
    tid: i32,
    /// The timer thread's kernel priority, from its wake-up's event.
    own_prio: Option<i32>,
    /// It was woken onto this CPU (not another one's).
    woken_here: bool,
    /// Since its wake-up the kernel ran lower-priority work ahead of it.
    held_off: bool,
    /// It was the task running when it was woken (woken while it ran).
    running_when_woken: bool,
    deadline_ns: u64,
    end: u64,
    out: Vec<Segment>,
    woken: Option<u64>,
    switched: Option<u64>,
    task: Task,
    stack: Vec<Handler>,
    /// Idle woke a task onto this CPU, or left its idle state, since it
    /// took the CPU: it switches away at once.
    idle_done: bool,
    /// When the running task took the CPU (its switch-in, else the start).
    since: u64,
    /// Interrupts idle took while the woken timer thread waited.
    idle_irqs: u8,
    /// Each task's kernel priority, as the window's events last give it.
    prios: std::collections::HashMap<i32, i32>,
}

impl Walk {
    /// A walk over `[deadline_ns, end]` of timer thread `tid`, from the
    /// window's first event.
    fn new(tid: i32, deadline_ns: u64, end: u64, first: &Event) -> Self {
        Walk {
            tid,
            deadline_ns,
            end,
            out: Vec::new(),
            woken: None,
            switched: None,
            own_prio: None,
            woken_here: false,
            held_off: false,
            running_when_woken: false,
            task: Task::of(first, false),
            stack: Vec::new(),
            idle_done: false,
            since: first.ts_ns,
            idle_irqs: 0,
            prios: Default::default(),
        }
    }

    /// Gives `[from, to]` (clipped to the latency) to the owner now.
    fn give(&mut self, from: u64, to: u64) {
        let (from, to) = (from.max(self.deadline_ns), to.min(self.end));
        if to <= from {
            return;
        }
        let before_wake = self.woken.is_none_or(|w| from < w);
        let (mut kind, mut what, mut pid) = owner(&self.task, &self.stack, self.tid, before_wake);
        if self.held_off && matches!(kind, PartKind::Idle | PartKind::Thread) {
            (kind, what, pid) = (PartKind::HeldOff, held_off_words(self.own_prio), None);
        }
        let inferred = self.task.inferred && self.stack.is_empty() && pid.is_some();
        match self.out.last_mut() {
            Some(s)
                if s.kind == kind
                    && s.what == what
                    && s.pid == pid
                    && s.inferred == inferred
                    && s.to_ns == from =>
            {
                s.to_ns = to
            }
            _ => self.out.push(Segment {
                from_ns: from,
                to_ns: to,
                kind,
                what,
                pid,
                inferred,
            }),
        }
    }

    /// Follows one event; false once past the window's end.
    fn step(&mut self, at: &mut u64, e: &Event) -> bool {
        // A stack is logged after its event by the task that logged that
        // (for a switch, the one that left): it says nothing of who runs.
        if e.name == "kernel_stack" {
            return true;
        }
        // The task that logged the event is the one running (for a switch,
        // the one leaving): a switch the buffer lost (some kernels do not
        // log the switch out of idle).
        let lost_switch = self.stack.is_empty() && e.pid != self.task.pid;
        // Idle never keeps a CPU on which it woke a task: the lost switch
        // came right after idle's last event, and the time since is the
        // new task's. Unless the kernel was holding the woken one off: it
        // idled on until it let it run.
        let resync_now = lost_switch
            && self.task.pid == 0
            && !self.held_off
            && (self.woken.is_some() || self.idle_done);
        if resync_now {
            self.task = Task::of(e, true);
            self.since = *at;
            // Idle let a lower-priority task have the CPU the real-time
            // timer thread was woken onto: the kernel held it off.
            let lower = self
                .prios
                .get(&e.pid)
                .zip(self.own_prio)
                .is_some_and(|(t, o)| *t > o);
            if self.waiting_rt() && e.pid != self.tid && lower {
                self.held_off = true;
            }
        }
        self.renamed_by(e);
        self.give(*at, e.ts_ns);
        *at = (*at).max(e.ts_ns);
        if *at >= self.end {
            return false;
        }
        if lost_switch && !resync_now {
            self.task = Task::of(e, true);
            self.since = e.ts_ns;
        }
        if lost_switch && e.pid == self.tid && self.woken.is_some() && self.switched.is_none() {
            self.switched = Some(e.ts_ns);
        }
        // Its own event: from here on it is seen running, not inferred.
        if e.pid == self.task.pid {
            self.task.inferred = false;
        }
        self.follow(e);
        true
    }

    fn follow(&mut self, e: &Event) {
        let tid = self.tid as i64;
        match e.name.as_ref() {
            "sched_switch" => {
                self.stack.clear();
                self.held_off = self.passes_over(e);
                self.since = e.ts_ns;
                self.task = Task {
                    comm: e.field("next_comm").unwrap_or("?").to_string(),
                    pid: e.num("next_pid").unwrap_or(-1) as i32,
                    work: None,
                    inferred: false,
                };
                self.idle_done = false;
                if self.task.pid == self.tid && self.woken.is_some() && self.switched.is_none() {
                    self.switched = Some(e.ts_ns);
                }
            }
            "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => {
                if e.num("pid") == Some(tid)
                    && self.woken.is_none()
                    && e.ts_ns + 2_000 >= self.deadline_ns
                {
                    self.woken = Some(e.ts_ns);
                    self.own_prio = e.num("prio").map(|p| p as i32);
                    self.woken_here = e.num("target_cpu") == Some(e.cpu as i64);
                    self.running_when_woken = self.task.pid == self.tid;
                }
                let here = e.num("target_cpu") == Some(e.cpu as i64);
                self.idle_done |= self.task.pid == 0 && here;
            }
            // Leaving an idle state (`state=4294967295`: PWR_EVENT_EXIT).
            "cpu_idle" if self.task.pid == 0 && e.field("state") == Some("4294967295") => {
                self.idle_done = true
            }
            // Entering one while it waits: idle went on idling.
            "cpu_idle" if self.idles_through(e) => self.hold_off_idle(),
            "workqueue_execute_start" if self.stack.is_empty() => {
                self.task.work = e.work_function().map(str::to_string);
            }
            "workqueue_execute_end" if self.stack.is_empty() => self.task.work = None,
            name => {
                if let Some(h) = opens(e) {
                    // One interrupt right after the wake-up (a pending tick)
                    // only delays the switch; idle taking a second one had
                    // gone on idling after the first.
                    if h.kind == PartKind::Irq && self.idles_through(e) {
                        self.idle_irqs = self.idle_irqs.saturating_add(1);
                        if self.idle_irqs >= 2 {
                            self.hold_off_idle();
                        }
                    }
                    self.stack.push(h);
                } else if let Some(i) = self.stack.iter().rposition(|h| h.exit == name) {
                    self.stack.truncate(i);
                }
            }
        }
    }
}

impl Walk {
    /// A switch away from the running task shows the name it has now: one
    /// that differs from its switch-in's was taken by an exec during this
    /// run (a shell's child becoming `dd`), and names the run (the kernel's
    /// exec event is not recorded; the time from fork to exec is short).
    fn renamed_by(&mut self, e: &Event) {
        if e.name != "sched_switch" || e.num("prev_pid") != Some(i64::from(self.task.pid)) {
            return;
        }
        let Some(now) = e.field("prev_comm").filter(|&c| c != self.task.comm) else {
            return;
        };
        let old = std::mem::replace(&mut self.task.comm, now.to_string());
        let busy = (format!("busy with {old})"), format!("busy with {now})"));
        let work = (format!("{old} (work "), format!("{now} (work "));
        let pid = Some(self.task.pid);
        for s in self
            .out
            .iter_mut()
            .rev()
            .take_while(|s| s.from_ns >= self.since)
        {
            if s.pid != pid {
                continue;
            }
            if s.what == old {
                s.what = now.to_string();
            } else if let Some(head) = s.what.strip_suffix(&busy.0) {
                s.what = format!("{head}{}", busy.1);
            } else if let Some(tail) = s.what.strip_prefix(&work.0) {
                s.what = format!("{}{tail}", work.1);
            }
        }
    }

    /// The timer thread waits to run here, woken and not yet switched in,
    /// and it is real-time (or SCHED_DEADLINE): nothing of lower priority
    /// may run ahead of it unless the kernel holds it off.
    fn waiting_rt(&self) -> bool {
        self.woken_here && self.switched.is_none() && self.own_prio.is_some_and(|p| p < 100)
    }

    /// A switch, while it waits, to another task of lower priority (idle
    /// included): the scheduler passed it over.
    fn passes_over(&self, e: &Event) -> bool {
        let next = e.num("next_pid");
        self.waiting_rt()
            && next != Some(i64::from(self.tid))
            && e.num("next_prio")
                .zip(self.own_prio)
                .is_some_and(|(n, o)| n > i64::from(o))
    }

    /// An interrupt taken in idle, while it waits, after the one that woke
    /// it had returned: idle would have switched to it there.
    fn idles_through(&self, e: &Event) -> bool {
        self.waiting_rt()
            && self.task.pid == 0
            && self.stack.is_empty()
            && self.woken.is_some_and(|w| e.ts_ns > w)
    }

    /// From here on, and back to its wake-up, the idle time is held off.
    fn hold_off_idle(&mut self) {
        self.held_off = true;
        let woken = self.woken.unwrap_or(0);
        let what = held_off_words(self.own_prio);
        for s in self.out.iter_mut().rev().take_while(|s| s.from_ns >= woken) {
            if s.kind == PartKind::Idle {
                (s.kind, s.what) = (PartKind::HeldOff, what.clone());
            }
        }
    }
}

/// Why the kernel held a runnable timer thread off, in words.
fn held_off_words(own_prio: Option<i32>) -> String {
    match own_prio {
        Some(p) if p < 0 => "held off though runnable (its SCHED_DEADLINE runtime spent)".into(),
        _ => "held off though runnable (RT throttling or the fair server)".into(),
    }
}

/// A task's kernel priority known from elsewhere than the window (the
/// task as it is now, in `/proc`), for a task whose switch-in and wake-up
/// the window does not hold.
pub type KnownPrio<'a> = &'a dyn Fn(i32) -> Option<i32>;

/// Walks `events` (one CPU, in time order) over `[deadline, deadline +
/// latency]` of timer thread `tid`, whose timer slack is `slack`: the
/// segments of the window and the wake-up and switch-in times of the
/// thread, with the priorities `known` gives for the tasks the window
/// does not show one of.
pub fn segments_known(
    events: &[Event],
    tid: i32,
    (deadline_ns, latency_ns, slack_ns): (u64, u64, u64),
    known: KnownPrio,
) -> (Vec<Segment>, Option<u64>, Option<u64>) {
    let end = deadline_ns.saturating_add(latency_ns);
    let Some(first) = events.first() else {
        let all = Segment {
            from_ns: deadline_ns,
            to_ns: end,
            kind: PartKind::Unknown,
            what: "no event recorded in the window".into(),
            pid: None,
            inferred: false,
        };
        return (vec![all], None, None);
    };
    let mut w = Walk::new(tid, deadline_ns, end, first);
    w.prios = prios(events);
    // Asked once per task (a task gone from /proc is not asked again).
    let mut asked = std::collections::HashSet::new();
    for e in events {
        if e.pid > 0 && !w.prios.contains_key(&e.pid) && asked.insert(e.pid) {
            let prio = known(e.pid);
            w.prios.extend(prio.map(|p| (e.pid, p)));
        }
    }
    let mut at = first.ts_ns;
    if at > deadline_ns {
        w.out.push(Segment {
            from_ns: deadline_ns,
            to_ns: at.min(end),
            kind: PartKind::Unknown,
            what: "before the first event of the window".into(),
            pid: None,
            inferred: false,
        });
    }
    for e in events {
        if !w.step(&mut at, e) {
            break;
        }
    }
    w.give(at, end);
    // Already running when woken (woken while it ran, or preempted):
    // it is "in" from the wake-up. Else, with no switch-in before the
    // clock read (one the kernel did not log), when is not known.
    let switched = w.switched.or(w.woken.filter(|_| w.running_when_woken));
    let mut carved = nmis(events, deadline_ns, end);
    carved.extend(stack_walks(events, deadline_ns, end));
    carved.sort_by_key(|c| c.0);
    let mut out = carve(unseen(w.out, events, deadline_ns), &carved);
    out = slack_first(out, deadline_ns, slack_ns, w.woken);
    if let (Some(woken), Some(switched)) = (w.woken, switched) {
        switch_path(&mut out, events, tid, woken, switched);
    }
    if let (Some(woken), Some(own)) = (w.woken, w.own_prio) {
        let lower = |pid: i32| w.prios.get(&pid).is_some_and(|&p| p > own);
        unseen_after_wake(&mut out, events, tid, woken, &lower);
    }
    (out, w.woken, switched)
}

/// Whether a window can explain a wake-up: it must hold events from
/// before the deadline (else who owned the CPU at the deadline is not
/// known) and after it. Err says why not; such a wake-up is "not
/// explained", never filed under a culprit.
pub fn coverage(events: &[Event], deadline_ns: u64) -> Result<(), String> {
    let (Some(first), Some(last)) = (events.first(), events.last()) else {
        return Err(
            "no event recorded in the window: the buffer was overwritten before it was read".into(),
        );
    };
    if first.ts_ns > deadline_ns {
        return Err(format!(
            "the window's first event is {:.1} µs after the deadline: the buffer was \
             overwritten up to there before it was read",
            (first.ts_ns - deadline_ns) as f64 / 1000.0
        ));
    }
    if last.ts_ns < deadline_ns {
        return Err("no event recorded after the deadline".into());
    }
    Ok(())
}

/// Explains the wake-up of timer thread `timer` (TID `tid`) whose deadline
/// was `deadline_ns` and latency `latency_ns`, from its CPU's events.
pub fn explain(
    events: &[Event],
    timer: usize,
    tid: i32,
    sample: u64,
    deadline_ns: u64,
    latency_ns: u64,
) -> Explanation {
    let window = (deadline_ns, latency_ns, 0);
    explain_known(events, (timer, tid, sample), window, &|_| None)
}

/// [`explain`] of the wake-up `(timer, tid, sample)` over `(deadline,
/// latency, the timer thread's timer slack)`, with the priorities `known`
/// gives for the tasks the window does not show one of.
pub fn explain_known(
    events: &[Event],
    (timer, tid, sample): (usize, i32, u64),
    window: (u64, u64, u64),
    known: KnownPrio,
) -> Explanation {
    explain_segments(events, (timer, tid, sample), window, known).0
}

/// [`explain_known`], with the stretches of the window and who owned the
/// CPU in each (all of them: the explanation's timeline keeps at most
/// [`MAX_SLICES`]), as the saved window draws them.
pub fn explain_segments(
    events: &[Event],
    (timer, tid, sample): (usize, i32, u64),
    (deadline_ns, latency_ns, slack_ns): (u64, u64, u64),
    known: KnownPrio,
) -> (Explanation, Vec<Segment>) {
    let window = (deadline_ns, latency_ns, slack_ns);
    let (segs, woken, switched) = segments_known(events, tid, window, known);
    let prio_of = |pid: i32| prio_in(events, pid).or_else(|| known(pid));
    let mut parts = parts_of(&segs, woken, &prio_of);
    parts.sort_by_key(|p| (std::cmp::Reverse(p.ns), p.kind, p.what.clone()));
    let own_prio = prio_of(tid);
    let stacks = stacks_in(
        events,
        tid,
        deadline_ns,
        deadline_ns.saturating_add(latency_ns),
    );
    let mut cause = cause(&parts, own_prio, latency_ns);
    if let Some(main) = parts.iter().find(|p| !p.kind.is_own())
        && let Some(s) = stacks.iter().find(|s| Some(s.pid) == main.pid)
    {
        let top: Vec<&str> = s.frames.iter().take(5).map(String::as_str).collect();
        let moment = match s.at.as_str() {
            "switch" => "as it let the CPU go",
            _ => "at the wake-up",
        };
        cause.push_str(&format!(
            "; {}'s kernel stack {moment}: {}",
            s.comm,
            top.join(" <- ")
        ));
    }
    let e = Explanation {
        timer,
        sample,
        cpu: events.first().map_or(0, |e| e.cpu),
        deadline_ns,
        latency_ns,
        woken_after_ns: woken.map(|w| w.saturating_sub(deadline_ns)),
        wake_to_switch_ns: match (woken, switched) {
            (Some(w), Some(s)) => Some(s.saturating_sub(w)),
            _ => None,
        },
        parts,
        cause,
        events: events.len(),
        trace_file: None,
        trace_text: None,
        timeline: segs
            .iter()
            .take(MAX_SLICES)
            .map(|s| Slice {
                after_deadline_ns: s.from_ns.saturating_sub(deadline_ns),
                ns: s.to_ns - s.from_ns,
                kind: s.kind,
                what: s.what.clone(),
                inferred: s.inferred,
            })
            .collect(),
        stacks,
        cpus_at_deadline: Vec::new(),
    };
    (e, segs)
}

/// The kernel stacks the window holds for this wake-up: a `kernel_stack`
/// record follows the event that triggered it on the same CPU, by the
/// same task: the switch to the timer thread (the task leaving) or the
/// timer thread's wake-up (the waker).
fn stacks_in(events: &[Event], tid: i32, deadline_ns: u64, end_ns: u64) -> Vec<KernelStack> {
    let mut out = Vec::new();
    // After the clock read, a little: the stack is recorded after its event.
    let last = end_ns.saturating_add(50_000);
    for pair in events.windows(2) {
        let (cause, stack) = (&pair[0], &pair[1]);
        if stack.name != "kernel_stack"
            || stack.pid != cause.pid
            || cause.ts_ns > end_ns
            || stack.ts_ns > last
            || cause.ts_ns.saturating_add(2_000) < deadline_ns
        {
            continue;
        }
        let at = match cause.name.as_ref() {
            "sched_switch" if cause.num("next_pid") == Some(i64::from(tid)) => "switch",
            "sched_waking" if cause.num("pid") == Some(i64::from(tid)) => "wake",
            _ => continue,
        };
        let mut frames = crate::trace::text::stack_frames(stack);
        frames.truncate(MAX_STACK_FRAMES);
        out.push(KernelStack {
            comm: cause.comm.to_string(),
            pid: cause.pid,
            at: at.into(),
            after_deadline_ns: cause.ts_ns.saturating_sub(deadline_ns),
            frames,
        });
        if out.len() == MAX_STACKS {
            break;
        }
    }
    out
}

/// Each task's kernel priority, as the window's last event naming it
/// says (a switch, a wake-up).
fn prios(events: &[Event]) -> std::collections::HashMap<i32, i32> {
    let mut out = std::collections::HashMap::new();
    for e in events {
        let pairs: [(&str, &str); 2] = match e.name.as_ref() {
            "sched_switch" => [("prev_pid", "prev_prio"), ("next_pid", "next_prio")],
            "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => [("pid", "prio"); 2],
            _ => continue,
        };
        for (pid, prio) in pairs {
            if let (Some(pid), Some(prio)) = (e.num(pid), e.num(prio)) {
                out.insert(pid as i32, prio as i32);
            }
        }
    }
    out
}

/// A thread's kernel priority, as the window's last event naming it says.
fn prio_in(events: &[Event], pid: i32) -> Option<i32> {
    events.iter().rev().find_map(|e| match e.name.as_ref() {
        "sched_switch" if e.num("next_pid") == Some(pid as i64) => {
            e.num("next_prio").map(|p| p as i32)
        }
        "sched_switch" if e.num("prev_pid") == Some(pid as i64) => {
            e.num("prev_prio").map(|p| p as i32)
        }
        "sched_waking" | "sched_wakeup" if e.num("pid") == Some(pid as i64) => {
            e.num("prio").map(|p| p as i32)
        }
        _ => None,
    })
}

/// The segments summed by owner, before and after the wake-up apart (a
/// late interrupt, then a preemption: different stories).
fn parts_of(
    segs: &[Segment],
    woken: Option<u64>,
    prio_of: &dyn Fn(i32) -> Option<i32>,
) -> Vec<Part> {
    let mut parts: Vec<Part> = Vec::new();
    for s in segs {
        let before_wake = woken.is_none_or(|w| s.from_ns < w);
        let ns = s.to_ns - s.from_ns;
        let inferred = if s.inferred { ns } else { 0 };
        match parts.iter_mut().find(|p| {
            p.kind == s.kind && p.what == s.what && p.pid == s.pid && p.before_wake == before_wake
        }) {
            Some(p) => {
                p.ns += ns;
                p.inferred_ns += inferred;
            }
            None => parts.push(Part {
                kind: s.kind,
                what: s.what.clone(),
                pid: s.pid,
                prio: s.pid.filter(|&p| p > 0).and_then(prio_of),
                ns,
                before_wake,
                inferred_ns: inferred,
            }),
        }
    }
    parts
}

mod after;
mod cause;
use after::{carve, nmis, slack_first, stack_walks, switch_path, unseen, unseen_after_wake};
use cause::cause;

#[cfg(test)]
mod tests;

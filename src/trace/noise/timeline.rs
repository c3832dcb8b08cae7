//! Each noise CPU's interference timeline: who owned the CPU when, net.
//! An interrupt frame (an IRQ handler, an x86 vector, a softirq) owns its
//! time less the frames nested in it; a thread owns the time it ran less
//! the frames that interrupted it; what is left is the noise thread's own.
//! An NMI is logged as its handler returns, with its length: its run is
//! taken out of whatever it landed in.

use super::NoiseClass;
use crate::trace::event::{Event, Names, UNKNOWN_TASK};
use std::collections::{HashMap, VecDeque};

/// One cause of interference: its class, what it is (`IRQ 36 virtio1`,
/// `local_timer`, `TIMER`, a thread's command), the thread's PID.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cause {
    /// Its class.
    pub class: NoiseClass,
    /// What it is.
    pub name: String,
    /// Its PID (threads).
    pub pid: Option<i32>,
}

/// Most distinct causes kept (past it, a class's new ones are one
/// `(others)` cause).
pub const MAX_CAUSES: usize = 8192;

/// The causes seen, each numbered once.
#[derive(Debug, Default)]
pub struct Causes {
    list: Vec<Cause>,
    ids: HashMap<Cause, u32>,
}

impl Causes {
    /// The number of `c` (past [`MAX_CAUSES`], its class's `(others)`).
    pub fn id(&mut self, c: Cause) -> u32 {
        if let Some(&id) = self.ids.get(&c) {
            return id;
        }
        let c = if self.list.len() >= MAX_CAUSES {
            Cause {
                class: c.class,
                name: "(others)".into(),
                pid: None,
            }
        } else {
            c
        };
        if let Some(&id) = self.ids.get(&c) {
            return id;
        }
        let id = self.list.len() as u32;
        self.ids.insert(c.clone(), id);
        self.list.push(c);
        id
    }

    /// Cause number `id`.
    pub fn get(&self, id: u32) -> Option<&Cause> {
        self.list.get(id as usize)
    }
}

/// A stretch of the CPU owned by one cause, `[from, to)` (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seg {
    /// Its start.
    pub from: u64,
    /// Its end.
    pub to: u64,
    /// Its owner.
    pub cause: u32,
}

/// Deepest nesting of frames followed.
const MAX_DEPTH: usize = 16;
/// Most stretches kept per CPU (past it, the oldest go).
pub const MAX_SEGS: usize = 1 << 18;

/// One CPU's timeline.
#[derive(Debug, Default)]
pub struct CpuLine {
    /// The closed stretches, in time order, never overlapping.
    segs: VecDeque<Seg>,
    /// The NMI handlers' runs, in time order.
    nmis: VecDeque<Seg>,
    /// The frames open, innermost last: (cause, event stem).
    stack: Vec<(u32, String)>,
    /// The task running: (PID, cause).
    task: Option<(i32, u32)>,
    /// Since when the current owner owns the CPU.
    since: u64,
    /// The newest event seen on the CPU.
    pub newest: u64,
    /// The timeline before this was let go.
    pub kept_from: u64,
    /// A real-time task left runnable for a lower priority (RT throttling,
    /// the fair server): (PID, kernel priority), until it runs again.
    held: Option<(i64, i64)>,
}

/// The frame `e` opens: its class, name and stem (`local_timer` of
/// `local_timer_entry`). The audit's frames, less the timer callbacks
/// (they run inside the timer interrupt, whose time they are).
fn frame_of(e: &Event) -> Option<(NoiseClass, String, &str)> {
    let name = e.name.as_ref();
    let stem = name.strip_suffix("_entry")?;
    if stem == "hrtimer_expire" || !crate::trace::audit::opens_frame(e) {
        return None;
    }
    Some(match stem {
        "irq_handler" => (NoiseClass::Irq, e.irq_label(), stem),
        "softirq" => {
            let action = e.field("action").unwrap_or("?");
            (NoiseClass::Softirq, action.to_string(), stem)
        }
        "ipi" => {
            let reason = e.fields.trim_matches(|c| c == '(' || c == ')');
            (NoiseClass::Irq, format!("IPI {reason}"), stem)
        }
        vector => (NoiseClass::Irq, vector.to_string(), stem),
    })
}

impl CpuLine {
    /// Whether the task switch `e` brings in runs while a real-time task
    /// of the CPU is held off for lower priorities: only RT throttling or
    /// the fair server (`dl_server`) leave one runnable so. Kernel
    /// priorities: below 100 real-time, lower is higher.
    fn held_off_by(&mut self, e: &Event) -> bool {
        let (Some(prev), Some(next)) = (e.num("prev_prio"), e.num("next_prio")) else {
            return false;
        };
        let (prev_pid, next_pid) = (e.num("prev_pid"), e.num("next_pid"));
        let runnable = e.field("prev_state").is_some_and(|s| s.starts_with('R'));
        if runnable && prev < 100 && next > prev {
            self.held = prev_pid.map(|p| (p, prev));
        }
        if self.held.is_some_and(|h| Some(h.0) == next_pid) {
            self.held = None;
        }
        self.held.is_some_and(|h| next > h.1)
    }

    /// Whoever owns the CPU now: the innermost frame, else the task.
    fn owner(&self) -> Option<u32> {
        self.stack.last().map(|f| f.0).or(self.task.map(|t| t.1))
    }

    /// The current owner's stretch ends at `at`.
    fn close(&mut self, at: u64) {
        if let Some(cause) = self.owner()
            && at > self.since
        {
            if self.segs.len() >= MAX_SEGS
                && let Some(old) = self.segs.pop_front()
            {
                self.kept_from = self.kept_from.max(old.to);
            }
            self.segs.push_back(Seg {
                from: self.since,
                to: at,
                cause,
            });
        }
        self.since = self.since.max(at);
    }

    /// `pid` runs from `at` (`held`: while a real-time task of the CPU
    /// was runnable, at a lower priority).
    fn runs(
        &mut self,
        at: u64,
        pid: i32,
        comm: &str,
        held: bool,
        causes: &mut Causes,
        names: &Names,
    ) {
        let comm = match names.get(pid) {
            Some(known) if comm == UNKNOWN_TASK || comm.is_empty() => known.to_string(),
            _ => comm.to_string(),
        };
        let cause = causes.id(Cause {
            class: if held {
                NoiseClass::Throttled
            } else {
                NoiseClass::Thread
            },
            name: if pid == 0 { "<idle>".into() } else { comm },
            pid: Some(pid),
        });
        self.close(at);
        self.task = Some((pid, cause));
    }

    /// Follows one event of this CPU (in time order).
    pub fn feed(&mut self, e: &Event, causes: &mut Causes, names: &Names) {
        let at = e.ts_ns;
        self.newest = self.newest.max(at);
        let name = e.name.as_ref();
        // A task seen running whose switch-in was not seen runs from now
        // (the first events of the trace; events the kernel lost).
        let switch = name == "sched_switch";
        if self.task.map(|t| t.0) != Some(e.pid) && !(switch && self.task.is_none()) {
            self.runs(at, e.pid, &e.comm, false, causes, names);
        }
        if switch {
            let pid = e.num("next_pid").and_then(|p| i32::try_from(p).ok());
            if let Some(pid) = pid {
                let comm = e.field("next_comm").unwrap_or(UNKNOWN_TASK);
                let held = self.held_off_by(e);
                self.runs(at, pid, comm, held, causes, names);
            }
        } else if let Some((handler, ns)) = e.nmi_run() {
            let cause = causes.id(Cause {
                class: NoiseClass::Nmi,
                name: format!("NMI {handler}"),
                pid: None,
            });
            let from = at.saturating_sub(ns);
            if self.nmis.len() >= MAX_SEGS {
                self.nmis.pop_front();
            }
            self.nmis.push_back(Seg {
                from,
                to: at,
                cause,
            });
        } else if let Some((class, what, stem)) = frame_of(e) {
            let cause = causes.id(Cause {
                class,
                name: what,
                pid: None,
            });
            self.close(at);
            if self.stack.len() < MAX_DEPTH {
                self.stack.push((cause, stem.to_string()));
            }
        } else if crate::trace::audit::closes_frame(name)
            && let Some(stem) = name.strip_suffix("_exit")
            && let Some(i) = self.stack.iter().rposition(|f| f.1 == stem)
        {
            // The frame closed and any inside it whose exit was lost.
            self.close(at);
            self.stack.truncate(i);
        }
    }

    /// The net time each cause owned in `[from, to)`, in order of first
    /// seen; the owner still on the CPU is taken to own it until `upto`.
    /// Stretches `skip` says are the noise thread's own are left out (an
    /// NMI in them is the NMI's).
    pub fn covered(
        &self,
        from: u64,
        to: u64,
        upto: u64,
        skip: impl Fn(u32) -> bool,
    ) -> Vec<(u32, u64)> {
        let mut out: Vec<(u32, u64)> = Vec::new();
        let mut add = |cause: u32, ns: u64| {
            if ns == 0 {
                return;
            }
            match out.iter_mut().find(|c| c.0 == cause) {
                Some(c) => c.1 += ns,
                None => out.push((cause, ns)),
            }
        };
        let overlap = |a: u64, b: u64| b.min(to).saturating_sub(a.max(from));
        let nmis = || {
            let first = self.nmis.partition_point(|n| n.to <= from);
            self.nmis.range(first..).take_while(move |n| n.from < to)
        };
        let open = self.owner().map(|cause| Seg {
            from: self.since,
            to: upto,
            cause,
        });
        let first = self.segs.partition_point(|s| s.to <= from);
        let segs = self.segs.range(first..).take_while(|s| s.from < to);
        for s in segs.chain(open.iter()).filter(|s| !skip(s.cause)) {
            let gross = overlap(s.from, s.to);
            let inside: u64 = nmis()
                .map(|n| overlap(n.from.max(s.from), n.to.min(s.to)))
                .sum();
            add(s.cause, gross.saturating_sub(inside));
        }
        for n in nmis() {
            add(n.cause, overlap(n.from, n.to));
        }
        out
    }

    /// Lets go of the timeline before `at`.
    pub fn prune(&mut self, at: u64) {
        while self.segs.front().is_some_and(|s| s.to <= at) {
            self.segs.pop_front();
        }
        while self.nmis.front().is_some_and(|s| s.to <= at) {
            self.nmis.pop_front();
        }
        self.kept_from = self.kept_from.max(at);
    }

    /// Stretches held (closed ones and NMIs).
    pub fn held(&self) -> usize {
        self.segs.len() + self.nmis.len()
    }
}

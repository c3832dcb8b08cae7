//! The event vocabulary every trace reader gives and every analysis reads:
//! one event ([`Event`]), its fields read by the kernel's print formats
//! ([`super::fields`]), and the task names the events themselves tell.

use super::fields;

/// One event of the buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The task that was running (`rtlab-timer0`, `<idle>`): shared, as
    /// the binary reader gives the same name to many events.
    pub comm: std::sync::Arc<str>,
    /// Its PID (0 for idle).
    pub pid: i32,
    /// The CPU.
    pub cpu: usize,
    /// When, on the trace clock (ns; the text gives µs).
    pub ts_ns: u64,
    /// The event's name (`sched_switch`): borrowed from the binary
    /// reader's formats, owned from the text.
    pub name: std::borrow::Cow<'static, str>,
    /// Its fields as written (`prev_comm=... ==> next_comm=...`).
    pub fields: String,
    /// Where each field lies in `fields`, as its reader found it (never
    /// by searching the text: see [`fields`]).
    pub spans: fields::Spans,
}

/// What a reader shows for a task whose name it does not know (the
/// kernel's text for a PID missing from its saved names; the binary
/// reader likewise).
pub const UNKNOWN_TASK: &str = "<...>";

/// Task names learned from the events' own fields (a switch's `prev_comm`
/// and `next_comm`, a wake-up's `comm`): they name a task whose events
/// the reader could only show as `<...>` (a process started after the
/// kernel last saved its names). At most [`Names::MAX`] (then forgotten
/// and learned again).
#[derive(Debug, Default)]
pub struct Names(std::collections::HashMap<i32, std::sync::Arc<str>>);

impl Names {
    /// Most names kept.
    pub const MAX: usize = 1 << 16;

    /// Learns the names `e`'s fields give.
    pub fn learn(&mut self, e: &Event) {
        let pairs: [(&str, &str); 2] = match e.name.as_ref() {
            "sched_switch" => [("prev_pid", "prev_comm"), ("next_pid", "next_comm")],
            "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => [("pid", "comm"); 2],
            _ => return,
        };
        for (pid, comm) in pairs {
            if let (Some(pid), Some(comm)) = (e.num(pid), e.field(comm))
                && pid > 0
                && comm != UNKNOWN_TASK
                && self.0.get(&(pid as i32)).is_none_or(|c| &**c != comm)
            {
                if self.0.len() >= Self::MAX {
                    self.0.clear();
                }
                self.0.insert(pid as i32, comm.into());
            }
        }
    }

    /// The name learned for `pid`.
    pub fn get(&self, pid: i32) -> Option<&std::sync::Arc<str>> {
        self.0.get(&pid)
    }
}

/// Names the events of tasks shown as `<...>` from what the events' own
/// fields say of them (anywhere in `events`, before or after).
pub fn name_tasks(events: &mut [Event]) {
    if !events.iter().any(|e| &*e.comm == UNKNOWN_TASK) {
        return;
    }
    let mut names = Names::default();
    events.iter().for_each(|e| names.learn(e));
    for e in events.iter_mut().filter(|e| &*e.comm == UNKNOWN_TASK) {
        if let Some(name) = names.get(e.pid) {
            e.comm = name.clone();
        }
    }
}

impl Event {
    /// The value of field `key`, if the event has it.
    pub fn field(&self, key: &str) -> Option<&str> {
        self.spans.value(&self.fields, key)
    }

    /// The function of a `workqueue_execute_start`: its `function=` field
    /// (the binary reader's), or what follows `function ` in the kernel's
    /// text (`work struct 00000000deadbeef: function vmstat_update`).
    pub fn work_function(&self) -> Option<&str> {
        self.field("function").or_else(|| {
            let (_, f) = self.fields.split_once("function ")?;
            f.split_whitespace().next()
        })
    }

    /// Each `(key, value)` of the event, in order.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.spans.pairs(&self.fields)
    }

    /// An `irq_handler_entry`'s IRQ as the tables name it:
    /// `IRQ 36 virtio1-req.0`.
    pub fn irq_label(&self) -> String {
        let name = self.field("name").unwrap_or("");
        format!("IRQ {} {name}", self.field("irq").unwrap_or("?"))
            .trim_end()
            .to_string()
    }

    /// A numeric field.
    pub fn num(&self, key: &str) -> Option<i64> {
        self.field(key)?.parse().ok()
    }
}

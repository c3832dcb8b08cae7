//! What rtlab makes of one CPU's events, through each reader: the audit's
//! rows and the explanations of the sleeper's wake-ups. Both readers must
//! give the same sources, the same names, the same parts.

use crate::trace::audit::{Audit, AuditRow, Promises};
use crate::trace::event::Event;
use crate::trace::explain::analyze;

/// Most wake-ups of the sleeper explained per CPU.
const MAX_WINDOWS: usize = 20;

/// The text's events with the pages' names where both know a name: the
/// text names a task as it is when the text is read, the pages as it was
/// at the event (a task renamed in between, as rtlab's guard names itself,
/// is told apart by the event comparison). A name one reader does not know
/// (`<...>`) stays: rtlab must name it from the events' fields.
fn names_of_the_pages(text: &[Event], raw: &[Event]) -> Vec<Event> {
    let unknown = crate::trace::event::UNKNOWN_TASK;
    let mut out = text.to_vec();
    if text.len() == raw.len() {
        for (t, r) in out.iter_mut().zip(raw) {
            if t.pid == r.pid && *t.comm != *unknown && *r.comm != *unknown {
                t.comm = r.comm.clone();
            }
        }
    }
    out
}

/// The audit of `cpu` through each reader: how many rows, and the rows
/// (CPU, kind, source, count) one reader has and the other has not.
pub(super) fn audits(cpu: usize, text: &[Event], raw: &[Event]) -> (usize, Vec<String>) {
    let text = &names_of_the_pages(text, raw);
    let rows = |events: &[Event]| -> Vec<String> {
        let mut a = Audit::new(&[cpu]);
        a.set_measured(&[]);
        for e in events {
            a.feed(e);
        }
        let report = a.finish(&Promises::default(), 0);
        let mut rows: Vec<String> = report.rows.iter().map(row).collect();
        rows.sort();
        rows
    };
    let (t, r) = (rows(text), rows(raw));
    let mut out = apart("audit row", &t, &r, "as text");
    out.extend(apart("audit row", &r, &t, "from the pages"));
    (t.len(), out)
}

fn row(r: &AuditRow) -> String {
    format!("{:?} {} ×{}", r.kind, r.who(), r.count)
}

/// The sleeper (`tid`)'s first wake-ups on this CPU explained through each
/// reader, from 5 µs before its wake-up to 30 µs after: the parts' kinds
/// and names one reader gives and the other does not give at all. The
/// text's µs move each edge by under 1 µs, so a part under 1 µs in one
/// reader may be 0 and dropped in the other: only a part of at least
/// `SURE_NS` in one reader must be found, of any length, in the other.
pub(super) fn explanations(tid: i32, text: &[Event], raw: &[Event]) -> (usize, Vec<String>) {
    let text = &names_of_the_pages(text, raw);
    let wakes: Vec<u64> = text
        .iter()
        .filter(|e| e.name == "sched_waking" && e.num("pid") == Some(i64::from(tid)))
        .map(|e| e.ts_ns)
        .take(MAX_WINDOWS)
        .collect();
    let mut out = Vec::new();
    for &at in &wakes {
        let parts = |events: &[Event]| -> Vec<(String, u64)> {
            let deadline = at.saturating_sub(5_000);
            let e = analyze::explain(events, 0, tid, 0, deadline, 35_000);
            let mut longest: Vec<(String, u64)> = Vec::new();
            for p in &e.parts {
                let name = format!("{:?} {}", p.kind, p.what);
                match longest.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, ns)) => *ns = (*ns).max(p.ns),
                    None => longest.push((name, p.ns)),
                }
            }
            longest.sort();
            longest
        };
        let (t, r) = (parts(text), parts(raw));
        let what = format!("the wake-up at {at} ns: part");
        out.extend(apart(&what, &sure(&t), &names(&r), "as text"));
        out.extend(apart(&what, &sure(&r), &names(&t), "from the pages"));
    }
    (wakes.len(), out)
}

/// A part this long in one reader is longer than 0 in the other.
const SURE_NS: u64 = 2_000;

fn sure(parts: &[(String, u64)]) -> Vec<String> {
    parts
        .iter()
        .filter(|(_, ns)| *ns >= SURE_NS)
        .map(|(n, _)| n.clone())
        .collect()
}

fn names(parts: &[(String, u64)]) -> Vec<String> {
    parts.iter().map(|(n, _)| n.clone()).collect()
}

/// What `one` has and `other` has not, in words.
fn apart(what: &str, one: &[String], other: &[String], side: &str) -> Vec<String> {
    one.iter()
        .filter(|x| !other.contains(x))
        .map(|x| format!("{what} only {side}: {x}"))
        .collect()
}

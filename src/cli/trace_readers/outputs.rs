//! What rtlab makes of one CPU's events, through each reader: the audit's
//! rows and the explanations of the sleeper's wake-ups. Both readers must
//! give the same sources, the same names, the same parts.

use crate::audit::{Audit, AuditRow, Promises};
use crate::explain::analyze;
use crate::explain::parse::Event;

/// Most wake-ups of the sleeper explained per CPU.
const MAX_WINDOWS: usize = 20;

/// The text's events with the pages' names where both know a name: the
/// text names a task as it is when the text is read, the pages as it was
/// at the event (a task renamed in between, as rtlab's guard names itself,
/// is told apart by the event comparison). A name one reader does not know
/// (`<...>`) stays: rtlab must name it from the events' fields.
fn names_of_the_pages(text: &[Event], raw: &[Event]) -> Vec<Event> {
    let unknown = crate::explain::parse::UNKNOWN_TASK;
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
    (t.len(), apart("audit row", &t, &r))
}

fn row(r: &AuditRow) -> String {
    format!("{:?} {} ×{}", r.kind, r.who(), r.count)
}

/// The sleeper (`tid`)'s first wake-ups on this CPU explained through each
/// reader, from 5 µs before its wake-up to 30 µs after: the parts' kinds
/// and names that differ (their lengths differ by the text's µs).
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
        let parts = |events: &[Event]| -> Vec<String> {
            let deadline = at.saturating_sub(5_000);
            let e = analyze::explain(events, 0, tid, 0, deadline, 35_000);
            let mut names: Vec<String> = e
                .parts
                .iter()
                .map(|p| format!("{:?} {}", p.kind, p.what))
                .collect();
            names.sort();
            names.dedup();
            names
        };
        let (t, r) = (parts(text), parts(raw));
        out.extend(apart(&format!("the wake-up at {at} ns: part"), &t, &r));
    }
    (wakes.len(), out)
}

/// What `text` has and `raw` has not, and the reverse, in words.
fn apart(what: &str, text: &[String], raw: &[String]) -> Vec<String> {
    let only = |a: &[String], b: &[String], side: &str| -> Vec<String> {
        a.iter()
            .filter(|x| !b.contains(x))
            .map(|x| format!("{what} only {side}: {x}"))
            .collect()
    };
    let mut out = only(text, raw, "as text");
    out.extend(only(raw, text, "from the pages"));
    out
}

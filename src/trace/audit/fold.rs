//! The audit's rows of one command folded into one: a loop of short-lived
//! processes (a shell starting `dd` after `dd`) is one source with its PIDs
//! counted, not a row per PID.

use super::AuditRow;

/// Most PIDs listed in a folded row.
pub const MAX_TOP_PIDS: usize = 5;

/// Folds the rows of one CPU, kind, command and verdict (`belongs`) into
/// one: counts and times summed, the longest kept, the PIDs counted and
/// the costliest listed; `pid` and `why` are the costliest one's (the
/// reasons of one verdict differ only by what `/proc` still showed: a
/// short-lived `dd` is "gone before rtlab could read it", the next one
/// not).
pub fn by_command(rows: Vec<AuditRow>) -> Vec<AuditRow> {
    let mut out: Vec<AuditRow> = Vec::with_capacity(rows.len());
    // Each folded row's PIDs with their time.
    let mut costs: Vec<Vec<(i32, u64)>> = Vec::with_capacity(rows.len());
    for r in rows {
        let same = |o: &AuditRow| {
            (o.cpu, o.kind, &o.what, o.belongs) == (r.cpu, r.kind, &r.what, r.belongs)
        };
        match out.iter().position(same) {
            Some(at) if r.pid.is_some() => {
                let o = &mut out[at];
                if r.total_ns > costs[at].iter().map(|c| c.1).max().unwrap_or(0) {
                    o.why = r.why.clone();
                }
                o.count = o.count.saturating_add(r.count);
                o.total_ns = o.total_ns.saturating_add(r.total_ns);
                o.max_ns = o.max_ns.max(r.max_ns);
                costs[at].extend(r.pid.map(|p| (p, r.total_ns)));
            }
            _ => {
                costs.push(r.pid.map(|p| (p, r.total_ns)).into_iter().collect());
                out.push(r);
            }
        }
    }
    for (row, mut pids) in out.iter_mut().zip(costs) {
        pids.sort_by_key(|&(pid, ns)| (std::cmp::Reverse(ns), pid));
        row.pids = pids.len() as u64;
        row.pid = pids.first().map(|p| p.0).or(row.pid);
        row.top_pids = pids.iter().take(MAX_TOP_PIDS).map(|p| p.0).collect();
    }
    out.sort_by(|a, b| {
        (a.cpu, b.total_ns, b.count, &a.what).cmp(&(b.cpu, a.total_ns, a.count, &b.what))
    });
    out
}

impl AuditRow {
    /// The source in words: `kworker/1:1 (pid 50)`, `dd (480 pids: 3101,
    /// 3107, …)`, `IRQ 36 virtio1-req.0`.
    pub fn who(&self) -> String {
        crate::trace::explain::verdict::folded(&self.what, self.pids, &self.top_pids, self.pid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::audit::SourceKind;

    fn row(what: &str, pid: Option<i32>, ns: u64) -> AuditRow {
        AuditRow {
            cpu: 1,
            kind: if pid.is_some() {
                SourceKind::Task
            } else {
                SourceKind::Irq
            },
            what: what.into(),
            pid,
            pids: 0,
            top_pids: Vec::new(),
            count: 2,
            total_ns: ns,
            max_ns: ns / 2,
            belongs: false,
            why: "not a measured task".into(),
        }
    }

    #[test]
    fn the_pids_of_one_command_are_one_row() {
        let rows = vec![
            row("bash", Some(10), 100),
            row("IRQ 9 eth0", None, 250),
            row("bash", Some(11), 300),
            row("dd", Some(12), 50),
            row("bash", Some(13), 20),
        ];
        let mut rows = rows;
        rows[2].why = "a task (gone before rtlab could read it)".into();
        let out = by_command(rows);
        let who: Vec<String> = out.iter().map(AuditRow::who).collect();
        assert_eq!(
            who,
            ["bash (3 pids: 11, 10, 13)", "IRQ 9 eth0", "dd (pid 12)"]
        );
        assert_eq!(
            (out[0].count, out[0].total_ns, out[0].max_ns),
            (6, 420, 150)
        );
        assert_eq!(out[0].pid, Some(11));
        // The costliest PID's reason.
        assert_eq!(out[0].why, "a task (gone before rtlab could read it)");
    }
}

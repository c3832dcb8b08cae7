//! One noise thread's gaps, attributed: per class, per culprit, the worst
//! gaps with their causes, and the classes per period.

use super::timeline::{Cause, Causes};
use super::{
    CauseTime, ClassCounts, ClassTotals, Culprit, ListedGap, NoiseAttribution, NoiseClass,
    PeriodClasses, WorstGap,
};
use crate::stats::noise::Gap;
use std::collections::{BTreeMap, HashMap};

/// Most culprit rows given (the rest summed in `culprits_left_out*`).
pub const MAX_CULPRITS: usize = 50;
/// Most worst gaps kept.
pub const WORST: usize = 20;
/// Most periods kept one by one: past it, neighbours are merged two by
/// two (the entries twice as long).
pub const MAX_PERIODS: usize = 4096;
/// Most gaps listed one by one with their class (the rest counted).
pub const MAX_LISTED: usize = 10_000;
/// Most causes listed for one worst gap.
const MAX_GAP_CAUSES: usize = 8;

/// One gap attributed: its causes (cause number, net ns), main first.
#[derive(Debug, Clone)]
pub struct Attributed {
    /// The gap.
    pub gap: Gap,
    /// Its causes, most net time first.
    pub parts: Vec<(u32, u64)>,
    /// Its class.
    pub class: NoiseClass,
    /// The time no event covers (ns).
    pub unseen_ns: u64,
}

/// What the causes of `gap` make of it: its class is its main cause's
/// (the one covering most of it; the earliest of equals), `hw` when no
/// event covers any of it; the rest is unseen, never spread over them.
pub fn attribute(gap: Gap, mut parts: Vec<(u32, u64)>, causes: &Causes) -> Attributed {
    // Stable: of equal causes, the first seen stays first.
    parts.sort_by_key(|p| std::cmp::Reverse(p.1));
    let seen: u64 = parts.iter().map(|p| p.1).sum();
    let class = parts
        .first()
        .and_then(|p| causes.get(p.0))
        .map_or(NoiseClass::Hw, |c| c.class);
    Attributed {
        gap,
        parts,
        class,
        unseen_ns: gap.ns.saturating_sub(seen),
    }
}

/// One thread's sums so far.
#[derive(Debug, Default)]
pub struct Tally {
    gaps: u64,
    noise_ns: u64,
    classes: ClassTotals,
    unseen_ns: u64,
    /// Per cause: (gaps it was the main cause of, net ns).
    culprits: HashMap<u32, (u64, u64)>,
    worst: Vec<Attributed>,
    origin: Option<u64>,
    /// Periods per entry of `periods`.
    merged: u64,
    periods: BTreeMap<u64, ClassCounts>,
    /// Gaps that began before the timeline kept (their early causes were
    /// let go: counted unseen).
    pub late: u64,
    /// The first [`MAX_LISTED`] gaps, each with its class.
    listed: Vec<ListedGap>,
    /// Gaps past them.
    listed_left_out: u64,
}

impl Tally {
    /// Counts one gap attributed; `period_ns` is the thread's period.
    pub fn add(&mut self, a: Attributed, causes: &Causes, period_ns: u64) {
        self.gaps += 1;
        self.noise_ns = self.noise_ns.saturating_add(a.gap.ns);
        self.unseen_ns = self.unseen_ns.saturating_add(a.unseen_ns);
        let t = self.classes.get_mut(a.class);
        t.gaps += 1;
        if a.class == NoiseClass::Hw {
            t.net_ns = t.net_ns.saturating_add(a.gap.ns);
        }
        for (i, &(cause, ns)) in a.parts.iter().enumerate() {
            if let Some(c) = causes.get(cause) {
                let t = self.classes.get_mut(c.class);
                t.net_ns = t.net_ns.saturating_add(ns);
            }
            let row = self.culprits.entry(cause).or_default();
            row.0 += u64::from(i == 0);
            row.1 = row.1.saturating_add(ns);
        }
        self.count_period(&a, period_ns);
        if self.listed.len() < MAX_LISTED {
            let main = a.parts.first().and_then(|p| causes.get(p.0));
            self.listed.push(ListedGap {
                start_ns: a.gap.start_ns(),
                ns: a.gap.ns,
                class: a.class,
                unseen_ns: a.unseen_ns,
                cause: main.map(|c| c.name.clone()),
                pid: main.and_then(|c| c.pid),
            });
        } else {
            self.listed_left_out += 1;
        }
        self.keep_worst(a);
    }

    fn count_period(&mut self, a: &Attributed, period_ns: u64) {
        let start = a.gap.start_ns();
        let origin = *self.origin.get_or_insert(start);
        self.merged = self.merged.max(1);
        let width = period_ns.max(1).saturating_mul(self.merged);
        let key = start.saturating_sub(origin) / width;
        self.periods.entry(key).or_default().add(a.class);
        if self.periods.len() > MAX_PERIODS {
            let old = std::mem::take(&mut self.periods);
            for (k, c) in old {
                self.periods.entry(k / 2).or_default().merge(&c);
            }
            self.merged = self.merged.saturating_mul(2);
        }
    }

    fn keep_worst(&mut self, a: Attributed) {
        if self.worst.len() >= WORST {
            let Some((i, least)) = self.worst.iter().enumerate().min_by_key(|w| w.1.gap.ns) else {
                return;
            };
            if least.gap.ns >= a.gap.ns {
                return;
            }
            self.worst.swap_remove(i);
        }
        self.worst.push(a);
    }

    /// The figures so far, for thread `index` on `cpu`.
    pub fn result(
        &self,
        who: (usize, usize, Option<i32>),
        causes: &Causes,
        period_ns: u64,
    ) -> NoiseAttribution {
        let (noise, cpu, tid) = who;
        let (culprits, folded, left_out) = culprit_rows(&self.culprits, causes);
        let mut worst: Vec<WorstGap> = self.worst.iter().map(|a| worst_gap(a, causes)).collect();
        worst.sort_by_key(|w| (std::cmp::Reverse(w.ns), w.start_ns));
        let width = period_ns.max(1).saturating_mul(self.merged.max(1));
        let periods = self
            .periods
            .iter()
            .map(|(&k, c)| PeriodClasses {
                start_ns: self
                    .origin
                    .unwrap_or(0)
                    .saturating_add(k.saturating_mul(width)),
                gaps: *c,
            })
            .collect();
        NoiseAttribution {
            noise,
            cpu,
            tid,
            threshold_ns: 0,
            gaps: self.gaps,
            noise_ns: self.noise_ns,
            classes: self.classes,
            unseen_ns: self.unseen_ns,
            culprits,
            culprits_folded: folded,
            culprits_left_out: left_out.0,
            culprits_left_out_ns: left_out.1,
            worst,
            period_ns: width,
            period_origin_ns: self.origin,
            periods,
            gaps_late: self.late,
            listed: self.listed.clone(),
            listed_left_out: self.listed_left_out,
            gaps_waiting: 0,
            gaps_dropped: 0,
            lost_events: 0,
        }
    }
}

/// A worst gap in the result's terms.
fn worst_gap(a: &Attributed, causes: &Causes) -> WorstGap {
    WorstGap {
        start_ns: a.gap.start_ns(),
        ns: a.gap.ns,
        class: a.class,
        causes: a
            .parts
            .iter()
            .take(MAX_GAP_CAUSES)
            .filter_map(|&(id, ns)| {
                let c = causes.get(id)?;
                Some(CauseTime {
                    class: c.class,
                    name: c.name.clone(),
                    pid: c.pid,
                    net_ns: ns,
                })
            })
            .collect(),
        unseen_ns: a.unseen_ns,
    }
}

/// The culprit rows, most net time first: a command's threads folded into
/// one row when it ran under more than one PID (its costliest PID named,
/// its PIDs counted); at most [`MAX_CULPRITS`]. Also: how many rows were
/// folded, and (rows, net ns) of those left out.
fn culprit_rows(
    by_cause: &HashMap<u32, (u64, u64)>,
    causes: &Causes,
) -> (Vec<Culprit>, u64, (u64, u64)) {
    let mut rows: Vec<Culprit> = Vec::new();
    // Each row's costliest PID so far.
    let mut top: Vec<u64> = Vec::new();
    let mut folded = 0;
    let mut ids: Vec<(&u32, &(u64, u64))> = by_cause.iter().collect();
    ids.sort_by_key(|(id, (_, ns))| (std::cmp::Reverse(*ns), **id));
    for (&id, &(gaps, ns)) in ids {
        let Some(Cause { class, name, pid }) = causes.get(id) else {
            continue;
        };
        let same = |r: &Culprit| r.class == *class && r.name == *name;
        match rows.iter().position(same) {
            Some(at) if pid.is_some() => {
                let r = &mut rows[at];
                r.gaps += gaps;
                r.net_ns = r.net_ns.saturating_add(ns);
                r.pids += 1;
                if ns > top[at] {
                    (r.pid, top[at]) = (*pid, ns);
                }
                folded += 1;
            }
            _ => {
                rows.push(Culprit {
                    class: *class,
                    name: name.clone(),
                    pid: *pid,
                    pids: u64::from(pid.is_some()),
                    gaps,
                    net_ns: ns,
                });
                top.push(ns);
            }
        }
    }
    rows.sort_by(|a, b| (b.net_ns, b.gaps, &a.name).cmp(&(a.net_ns, a.gaps, &b.name)));
    let rest = rows.split_off(rows.len().min(MAX_CULPRITS));
    let left_out = (rest.len() as u64, rest.iter().map(|r| r.net_ns).sum());
    (rows, folded, left_out)
}

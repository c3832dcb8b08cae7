//! The outcome of `rtlab fix`, rendered: the plan of remedies, the
//! before/after table per remedy, the verification, the advice, the HTML
//! report, and the experiment file of the kept state. All from one
//! [`FixResult`].

use crate::fix::causes::micros;
use crate::fix::remedies::Action;
use crate::fix::trial::Verification;
use crate::fix::trial::{mean, show};
use crate::fix::{Decision, Diagnosed, Facts, Figure, FixResult, Verdict};
use std::fmt::Write as _;

/// What a diagnosis found, in one line.
pub fn diagnosis_text(d: &Diagnosed, threshold_ns: u64) -> String {
    let f = &d.figures;
    format!(
        "diagnosis: {} samples, {} at or above {}, p99.9 {}, max {}; {} explained ({} in all){}",
        f.samples,
        f.over,
        micros(threshold_ns),
        micros(f.p999_ns),
        micros(f.max_ns),
        d.explained,
        micros(d.explained_ns),
        rest_not_explained(d)
    )
}

/// Why fewer were explained than were late, when they were.
fn rest_not_explained(d: &Diagnosed) -> String {
    let rest = d.figures.over.saturating_sub(d.explained);
    if rest == 0 {
        return String::new();
    }
    format!(
        "; {rest} more not explained: the flight recorder explains the worst `trace.max_spikes` of a run (100 by default), within its read budget"
    )
}

/// The plan: the decisions a diagnosis added (from `first` on), numbered
/// as the outcome numbers them, with the causes each answers and why a
/// proposal will not be applied.
pub fn plan_text(d: &Diagnosed, decisions: &[Decision], first: usize) -> String {
    let mut s = String::new();
    if decisions.len() == first {
        let _ = writeln!(s, "no new cause a remedy can act on");
    }
    for (i, dec) in decisions.iter().enumerate().skip(first) {
        let p = &dec.proposal;
        let kind = if p.live() { "remedy" } else { "advice" };
        let _ = writeln!(s, "#{i} {kind} [{}]: {}", p.class.name(), p.change);
        for a in &p.answers {
            let _ = writeln!(
                s,
                "    answers {}: main cause of {} of {} explained wake-ups, in {}; {} ({:.0}% of their time)",
                a.cause,
                a.main_cause,
                d.explained,
                a.spikes,
                micros(a.total_ns),
                share(a.total_ns, d.explained_ns)
            );
        }
        if dec.verdict == Verdict::NotApplied {
            let _ = writeln!(s, "    {}", dec.why);
        }
    }
    s
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

fn figures_cells(out: &FixResult, runs: &[crate::fix::Figures]) -> String {
    out.figures
        .iter()
        .map(|&f| format!("{} {}", f.name(), show(f, mean(runs, f))))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Each chosen figure of the baseline against the final state: a count
/// as its mean over the rounds, a latency over every sample of the rounds
/// (a result written before these were pooled: the rounds' mean).
fn verification_figures(out: &FixResult, v: &Verification) -> Vec<String> {
    let pooled = v.baseline_all.samples > 0 && v.fixed_all.samples > 0;
    out.figures
        .iter()
        .filter_map(|&f| {
            let (label, b, x) = match f {
                Figure::Over => ("a run".to_string(), mean(&v.baseline, f), mean(&v.fixed, f)),
                _ if pooled => (
                    format!(
                        "of all {} and {} samples",
                        v.baseline_all.samples, v.fixed_all.samples
                    ),
                    v.baseline_all.get(f),
                    v.fixed_all.get(f),
                ),
                _ => (
                    "mean of the rounds".to_string(),
                    mean(&v.baseline, f),
                    mean(&v.fixed, f),
                ),
            };
            (b > 0.0).then(|| {
                format!(
                    "{} ({label}): {} -> {} ({:+.0}%)",
                    f.name(),
                    show(f, b),
                    show(f, x),
                    100.0 * (x - b) / b
                )
            })
        })
        .collect()
}

/// The before/after table per remedy, the verification and the advice.
pub fn outcome_text(out: &FixResult) -> String {
    let mut s = String::new();
    if !out.baseline.is_empty() {
        let spreads: Vec<String> = out
            .spreads
            .iter()
            .map(|(f, r)| format!("{} {:.0}%", f.name(), 100.0 * r))
            .collect();
        let _ = writeln!(
            s,
            "baseline, twice: {}; spread {}",
            figures_cells(out, &out.baseline),
            spreads.join(", ")
        );
    }
    for (i, d) in out.decisions.iter().enumerate() {
        if d.verdict == Verdict::NotApplied {
            continue;
        }
        let _ = writeln!(
            s,
            "#{i} [{}] {}: {}",
            d.proposal.class.name(),
            verdict(d),
            d.proposal.change
        );
        let _ = writeln!(s, "    {}", d.why);
    }
    if let Some(v) = &out.verification {
        let _ = writeln!(
            s,
            "baseline against the final state, {} interleaved rounds each (their means and rank test): {}{}",
            v.baseline.len(),
            v.comparison.why,
            if v.undone {
                "; worse: everything undone"
            } else {
                ""
            }
        );
        for line in verification_figures(out, v) {
            let _ = writeln!(s, "    {line}");
        }
    }
    let advice: Vec<&Decision> = out
        .decisions
        .iter()
        .filter(|d| d.verdict == Verdict::NotApplied)
        .collect();
    if out.dry_run {
        let _ = writeln!(s, "--dry-run: nothing was applied");
    } else if !advice.is_empty() {
        let _ = writeln!(s, "not applied:");
        for d in advice {
            let _ = writeln!(
                s,
                "  [{}] {}: {}",
                d.proposal.class.name(),
                d.proposal.change,
                d.why
            );
        }
    }
    if let Some(why) = &out.stopped {
        let undone = if why.contains("undoing failed") {
            "not everything could be undone (see above); `rtlab restore` tries again"
        } else {
            "every remedy undone"
        };
        let _ = writeln!(s, "stopped: {why}; {undone}");
    }
    if let Some(j) = &out.journal {
        let _ = writeln!(s, "kept changes are in {j}: `rtlab restore` undoes them");
    }
    s
}

fn verdict(d: &Decision) -> &'static str {
    match d.verdict {
        Verdict::Kept => "KEPT",
        Verdict::Undone => "undone",
        Verdict::Refused => "refused",
        Verdict::NotApplied => "not applied",
        Verdict::Untried => "not tried",
    }
}

/// The experiment with the kept state added to its `main` stanza, where a
/// key can say it (`irq.affinity`, `cstates.*`, `threads.affinity`,
/// `net.steering`; a comment for the rest); None when nothing was kept.
/// `alive` are the moved threads that still run (a thread that ended has
/// nothing to reproduce).
pub fn kept_experiment(
    text: &str,
    out: &FixResult,
    facts: &Facts,
    alive: &[i32],
) -> Option<String> {
    let kept: Vec<&Decision> = out
        .decisions
        .iter()
        .filter(|d| d.verdict == Verdict::Kept)
        .collect();
    if kept.is_empty() {
        return None;
    }
    let mut keys = vec![format!(
        "# kept by rtlab fix of {} ({} remedies)",
        out.experiment.replace('\n', " "),
        kept.len()
    )];
    for d in kept {
        for k in keys_of(d, facts, alive) {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    Some(crate::fix::with_main_keys(text, &keys))
}

/// Whether `net.steering DEV` (which sets every RPS and XPS mask of DEV)
/// says what `d` did: every steering file of DEV the machine reads was set
/// by `d` to `value`.
fn steering_is_whole(d: &Decision, facts: &Facts, dev: &str, value: &str) -> bool {
    facts.steering.iter().filter(|s| s.0 == dev).all(|s| {
        d.proposal
            .actions
            .iter()
            .any(|a| matches!(a, Action::Write { file, value: v } if *file == s.2 && v == value))
    })
}

/// A thread's name as a `threads.affinity` pattern: a character the key's
/// words cannot hold (blank, `#`) or that the glob would read (`*`, `?`)
/// matches as `?`.
fn name_pattern(name: &str) -> String {
    let mut p: String = name
        .chars()
        .map(|c| {
            if c.is_whitespace() || matches!(c, '#' | '*' | '?') || c.is_control() {
                '?'
            } else {
                c
            }
        })
        .collect();
    // A number would be read as a TID.
    if p.bytes().all(|b| b.is_ascii_digit()) {
        p.replace_range(..1, "?");
    }
    p
}

fn keys_of(d: &Decision, facts: &Facts, alive: &[i32]) -> Vec<String> {
    use crate::sys::paths;
    let list = crate::cpulist::format;
    let mut keys = Vec::new();
    for a in &d.proposal.actions {
        match a {
            Action::Write { file, value } => {
                if let Some(irq) = paths::irq_of_affinity_list(file) {
                    keys.push(format!("irq.affinity {value} {irq}"));
                } else if file.ends_with("/disable") {
                    keys.push("cstates.max_latency 0 us".into());
                    keys.push(format!("cstates.cpus {}", list(&facts.measured)));
                } else if let Some(dev) = paths::net_dev_of_steering(file)
                    && let Ok(cpus) = crate::cpulist::parse_mask(value)
                    && steering_is_whole(d, facts, dev, value)
                {
                    keys.push(format!("net.steering {dev} {}", list(&cpus)));
                } else {
                    keys.push(format!(
                        "# {file} = {value} (no key of the file sets it: `rtlab fix` applies it)"
                    ));
                }
            }
            Action::Affinity {
                tid, name, cpus, ..
            } if alive.contains(tid) => {
                keys.push(format!(
                    "threads.affinity {} {}",
                    name_pattern(name),
                    list(cpus)
                ));
            }
            Action::Affinity { name, .. } => {
                keys.push(format!(
                    "# {} moved, and has ended since",
                    name.replace('\n', " ")
                ));
            }
        }
    }
    keys
}

/// The HTML report of the outcome.
pub fn html(out: &FixResult) -> String {
    use super::html::{STYLE, escape, list, table};
    let mut s = String::new();
    let title = format!("rtlab fix of {}", out.experiment);
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    );
    let _ = writeln!(s, "<h2 id=\"causes\">Causes</h2>");
    for (n, d) in out.diagnoses.iter().enumerate() {
        diagnosis_html(&mut s, n, d, out.threshold_ns);
    }
    let _ = writeln!(s, "<h2 id=\"remedies\">Remedies, before and after</h2>");
    let mut head = vec![
        "remedy".to_string(),
        "class".into(),
        "answers".into(),
        "verdict".into(),
    ];
    head.extend(
        out.figures
            .iter()
            .map(|f| format!("{} without → with", f.name())),
    );
    head.push("why".into());
    let rows: Vec<Vec<String>> = out.decisions.iter().map(|d| decision_row(out, d)).collect();
    table(&mut s, "remedies", &head, &rows);
    let _ = writeln!(
        s,
        "<h2 id=\"verification\">Baseline against the final state</h2>"
    );
    let verification: Vec<String> = out
        .verification
        .iter()
        .flat_map(|v| {
            let head = format!(
                "{} rounds each, interleaved (their means and rank test): {}{}",
                v.baseline.len(),
                v.comparison.why,
                if v.undone {
                    "; worse: everything undone"
                } else {
                    ""
                }
            );
            std::iter::once(head).chain(verification_figures(out, v))
        })
        .collect();
    list(
        &mut s,
        &verification,
        "nothing was kept: no final state to verify",
    );
    let _ = writeln!(s, "<h2 id=\"kept\">Experiment file of the kept state</h2>");
    match &out.kept_experiment {
        Some(t) => {
            let _ = writeln!(s, "<pre>{}</pre>", escape(t));
        }
        None => s.push_str("<p class=\"muted\">nothing was kept</p>\n"),
    }
    s.push_str("</body>\n</html>\n");
    s
}

fn diagnosis_html(s: &mut String, n: usize, d: &Diagnosed, threshold_ns: u64) {
    use super::html::{escape, table};
    let f = &d.figures;
    let _ = writeln!(
        s,
        "<p>Diagnosis {}: {} samples, {} at or above {}, p99.9 {}, max {}; {} wake-ups explained ({}){}.</p>",
        n + 1,
        f.samples,
        f.over,
        escape(&micros(threshold_ns)),
        escape(&micros(f.p999_ns)),
        escape(&micros(f.max_ns)),
        d.explained,
        escape(&micros(d.explained_ns)),
        escape(&rest_not_explained(d))
    );
    let rows: Vec<Vec<String>> = d
        .causes
        .iter()
        .map(|c| {
            vec![
                c.what.clone(),
                c.class.name().into(),
                c.main_cause.to_string(),
                c.spikes.to_string(),
                micros(c.total_ns),
                format!("{:.0}%", share(c.total_ns, d.explained_ns)),
            ]
        })
        .collect();
    let head = [
        "cause",
        "remedy class",
        "main cause of",
        "in",
        "time",
        "share",
    ]
    .map(String::from);
    table(s, "causes", &head, &rows);
}

fn decision_row(out: &FixResult, d: &Decision) -> Vec<String> {
    let answers: Vec<String> = d.proposal.answers.iter().map(|a| a.cause.clone()).collect();
    let mut row = vec![
        d.proposal.change.clone(),
        d.proposal.class.name().into(),
        answers.join("; "),
        verdict(d).into(),
    ];
    for &f in &out.figures {
        // A state not measured shows as such, never as a zero.
        let side = |runs: &[crate::fix::Figures]| match runs.is_empty() {
            true => "–".to_string(),
            false => show(f, mean(runs, f)),
        };
        row.push(format!("{} → {}", side(&d.without), side(&d.with)));
    }
    row.push(d.why.clone());
    row
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fix::trial::Comparison;
    use crate::fix::{Figures, FixResult};

    fn figures(samples: u64, over: u64, p999_ns: u64) -> Figures {
        Figures {
            samples,
            over,
            p999_ns,
            ..Figures::default()
        }
    }

    #[test]
    fn a_diagnosis_says_why_fewer_were_explained_than_were_late() {
        let mut d = Diagnosed {
            figures: figures(3000, 280, 1_500_000),
            explained: 100,
            explained_ns: 90_000_000,
            causes: Vec::new(),
        };
        let text = diagnosis_text(&d, 100_000);
        assert!(
            text.ends_with("; 180 more not explained: the flight recorder explains the worst `trace.max_spikes` of a run (100 by default), within its read budget"),
            "{text}"
        );
        d.explained = 280;
        assert!(!diagnosis_text(&d, 100_000).contains("not explained"));
    }

    #[test]
    fn the_verification_shows_the_count_a_run_and_the_tail_over_every_sample() {
        let mut out = FixResult::new("x.cfg".into(), 50_000, vec![Figure::Over, Figure::P999], 3);
        // A stalled round (8 ms) among the final state's: its mean p99.9
        // is above the baseline's, the p99.9 of all its samples is not.
        let mut v = Verification {
            baseline: vec![figures(3000, 200, 1_500_000); 3],
            fixed: vec![
                figures(3000, 9, 8_000_000),
                figures(3000, 3, 150_000),
                figures(3000, 3, 150_000),
            ],
            baseline_all: figures(9000, 600, 1_500_000),
            fixed_all: figures(9000, 15, 160_000),
            comparison: Comparison {
                better: true,
                worse: false,
                undecided: false,
                why: "over 200.0 -> 5.0 (better)".into(),
            },
            undone: false,
        };
        out.verification = Some(v.clone());
        let text = outcome_text(&out);
        assert!(
            text.contains("    over (a run): 200.0 -> 5.0 (-98%)\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "    p99.9 (of all 9000 and 9000 samples): 1500.0 µs -> 160.0 µs (-89%)\n"
            ),
            "{text}"
        );
        let html = html(&out);
        assert!(
            html.contains("<li>p99.9 (of all 9000 and 9000 samples)"),
            "{html}"
        );
        // A result written before the rounds were pooled: their mean, said.
        v.baseline_all = Figures::default();
        v.fixed_all = Figures::default();
        out.verification = Some(v);
        let text = outcome_text(&out);
        assert!(
            text.contains("    p99.9 (mean of the rounds): 1500.0 µs -> 2766.7 µs (+84%)\n"),
            "{text}"
        );
    }
}

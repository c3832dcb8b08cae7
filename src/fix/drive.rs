//! The order of the proof: a diagnosis, the baseline twice, then each
//! remedy in interleaved rounds (without, with, without, with...), kept or
//! undone at once; the undone ones tried again while others are kept (a
//! large cause hides the small ones), a new diagnosis for the causes the
//! large ones hid; then the baseline against the final state, side by side.

use super::apply::UndoStep;
use super::remedies::Proposal;
use super::trial::{
    Comparison, Decision, Diagnosed, FIRST_LOOK, Figure, Figures, FixResult, Measured, Pool, Round,
    SECOND_LOOK, Verdict, Verification, compare, spread,
};

/// The measuring and the system, as the proof uses them.
pub trait Bench {
    /// A run with the flight recorder of the system as it is now: what it
    /// found, and the proposals for it.
    fn diagnose(&mut self) -> Result<(Diagnosed, Vec<Proposal>), String>;
    /// One measuring run of the system as it is now (`state` says which,
    /// for the reader); `Err` stops the fix (a signal, a run that failed).
    fn measure(&mut self, state: &str) -> Result<Measured, String>;
    /// Applies a remedy; `Err` says why not (nothing of it is left
    /// applied).
    fn apply(&mut self, p: &Proposal) -> Result<Vec<UndoStep>, String>;
    /// Whether the kernel did what `p` asked during the last measuring
    /// run (an IRQ that took its mask may go on firing where it did).
    fn check(&mut self, _p: &Proposal) -> Result<(), String> {
        Ok(())
    }
    /// Undoes changes; what could not be undone, in words.
    fn undo(&mut self, steps: &[UndoStep]) -> Vec<String>;
    /// The decisions a diagnosis added, from `first` on, before any is
    /// tried (to show the plan).
    fn planned(&mut self, _decisions: &[Decision], _first: usize) {}
    /// The remedy to try together with `p` when `p` alone cuts the count
    /// but not the tail: for a thread moved off a measured CPU, disabling
    /// that CPU's idle states with an exit latency (the CPU it empties
    /// idles, and a host wakes an idle vCPU late); None when there is none.
    fn companion(&mut self, _p: &Proposal) -> Option<Proposal> {
        None
    }
}

/// How the proof goes.
pub struct Settings<'a> {
    /// Rounds per state.
    pub rounds: usize,
    /// The figures a remedy must improve.
    pub figures: Vec<Figure>,
    /// Diagnoses at most (the first, then one after each pass that kept
    /// something).
    pub diagnoses: usize,
    /// Why a proposal is not to be applied (`--only`, `--skip`,
    /// `--dry-run`), if it is not.
    pub skip: &'a dyn Fn(&Proposal) -> Option<String>,
}

struct Proof<'a> {
    bench: &'a mut dyn Bench,
    out: &'a mut FixResult,
    settings: &'a Settings<'a>,
    /// Per decision tried, how many remedies were kept when it was decided.
    kept_then: std::collections::BTreeMap<usize, usize>,
}

fn decision(p: &Proposal, verdict: Verdict, why: String) -> Decision {
    Decision {
        proposal: p.clone(),
        verdict,
        why,
        without: Vec::new(),
        with: Vec::new(),
        made: Vec::new(),
    }
}

impl Proof<'_> {
    fn measure(&mut self, state: String) -> Result<Figures, String> {
        Ok(self.measure_all(state)?.figures)
    }

    /// A measuring run, its latencies too.
    fn measure_all(&mut self, state: String) -> Result<Measured, String> {
        let m = self.bench.measure(&state)?;
        let figures = m.figures;
        self.out.rounds_run.push(Round { state, figures });
        Ok(m)
    }

    /// Each remedy's rounds; the decision. A remedy that cut the count
    /// and not the tail is tried again with its companion before it is
    /// undone ([`Bench::companion`]).
    fn trial(&mut self, i: usize, p: &Proposal) -> Result<Decision, String> {
        let alone = self.rounds(i, p)?;
        if alone.verdict != Verdict::Undone || !self.cut_count_only(&alone) {
            return Ok(alone);
        }
        let Some(companion) = self.bench.companion(p) else {
            return Ok(alone);
        };
        let both = p.with(&companion);
        let mut d = self.rounds(i, &both)?;
        let first = alone.why.trim_start_matches("undone: ");
        d.why = match d.verdict {
            Verdict::Kept => format!(
                "kept with {}: alone it cut the count, not the tail ({first}); the CPU it empties \
                 idles, and a host wakes an idle vCPU late; together: {}",
                companion.change,
                d.why.trim_start_matches("kept: ")
            ),
            _ => format!(
                "undone: alone, {first}; with {} too, {}",
                companion.change,
                d.why.trim_start_matches("undone: ")
            ),
        };
        if d.verdict != Verdict::Kept {
            // The remedy as proposed, with its own rounds and the tale of both.
            let why = d.why.clone();
            d = alone;
            d.why = why;
        }
        Ok(d)
    }

    /// Whether the rounds of `d` cut the count beyond the margin while the
    /// whole was not better (a tail figure no better, or worse).
    fn cut_count_only(&self, d: &Decision) -> bool {
        let figures = &self.settings.figures;
        figures.contains(&Figure::Over)
            && figures.len() > 1
            && self.judge(&d.without, &d.with, &[Figure::Over]).better
    }

    /// The rank test's level for `n` rounds of each state: the first look
    /// at `--rounds`, the second (stricter) at more.
    fn level(&self, n: usize) -> f64 {
        if n > self.settings.rounds.max(1) {
            SECOND_LOOK
        } else {
            FIRST_LOOK
        }
    }

    fn judge(&self, without: &[Figures], with: &[Figures], figures: &[Figure]) -> Comparison {
        let level = self.level(without.len().min(with.len()));
        compare(without, with, figures, &self.out.spreads, level)
    }

    /// The interleaved rounds of one proposal; the decision. When more
    /// rounds could change the verdict of the first `--rounds`
    /// ([`Comparison::undecided`]), as many again are run and all judged
    /// at the second look's level.
    fn rounds(&mut self, i: usize, p: &Proposal) -> Result<Decision, String> {
        let mut d = decision(p, Verdict::Undone, String::new());
        let n = self.settings.rounds.max(1);
        if self.pairs(i, p, &mut d, n)? {
            return Ok(d);
        }
        let mut c = self.judge(&d.without, &d.with, &self.settings.figures);
        if c.undecided {
            if self.pairs(i, p, &mut d, n)? {
                return Ok(d);
            }
            c = self.judge(&d.without, &d.with, &self.settings.figures);
        }
        if c.better {
            // A culprit that ended since cannot be moved again: said, not a stop.
            match self.bench.apply(p) {
                Ok(made) => {
                    d.made = made;
                    d.verdict = Verdict::Kept;
                    d.why = format!("kept: {}", c.why);
                }
                Err(e) => {
                    d.verdict = Verdict::Refused;
                    d.why = format!(
                        "measured better ({}), but could not be applied again: {e}",
                        c.why
                    );
                }
            }
        } else {
            d.why = format!("undone: {}", c.why);
        }
        Ok(d)
    }

    /// `n` more pairs of rounds of `p` (without, then with) into `d`; true
    /// when the kernel refused the remedy (`d` says so).
    fn pairs(
        &mut self,
        i: usize,
        p: &Proposal,
        d: &mut Decision,
        n: usize,
    ) -> Result<bool, String> {
        for _ in 0..n {
            d.without.push(self.measure(format!("without #{i}"))?);
            let steps = match self.bench.apply(p) {
                Ok(s) => s,
                Err(why) => {
                    d.verdict = Verdict::Refused;
                    d.why = format!("undone: {why}");
                    return Ok(true);
                }
            };
            let with = self.measure(format!("with #{i}"));
            let checked = match with {
                Ok(_) => self.bench.check(p),
                Err(_) => Ok(()),
            };
            let left = self.bench.undo(&steps);
            d.with.push(with?);
            if !left.is_empty() {
                return Err(format!(
                    "remedy {i} could not be undone: {}",
                    left.join("; ")
                ));
            }
            if let Err(why) = checked {
                d.verdict = Verdict::Refused;
                d.why = format!("undone: {why}");
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn kept(&self) -> usize {
        self.out
            .decisions
            .iter()
            .filter(|d| d.verdict == Verdict::Kept)
            .count()
    }

    /// Undoes every kept remedy, newest first.
    fn undo_kept(&mut self) -> Result<(), String> {
        let mut left = Vec::new();
        for d in self.out.decisions.iter_mut().rev() {
            if d.verdict == Verdict::Kept {
                left.extend(self.bench.undo(&d.made));
                d.made.clear();
            }
        }
        if left.is_empty() {
            Ok(())
        } else {
            Err(left.join("; "))
        }
    }

    /// Applies every kept remedy again; one that cannot be (its culprit
    /// ended) is said so and no longer kept.
    fn reapply_kept(&mut self) {
        for d in self.out.decisions.iter_mut() {
            if d.verdict != Verdict::Kept {
                continue;
            }
            match self.bench.apply(&d.proposal) {
                Ok(made) => d.made = made,
                Err(e) => {
                    d.verdict = Verdict::Refused;
                    d.why = format!(
                        "{}; could not be applied again for the verification: {e}",
                        d.why
                    );
                }
            }
        }
    }

    /// Adds the proposals of a diagnosis: every one the first time; after,
    /// the remedies that act on something not decided yet.
    fn add(&mut self, proposals: &[Proposal], first: bool) -> Vec<usize> {
        let mut added = Vec::new();
        let start = self.out.decisions.len();
        for p in proposals {
            let known = self
                .out
                .decisions
                .iter()
                .any(|d| d.proposal.key() == p.key());
            if known || (!first && !p.live()) {
                continue;
            }
            let d = if let Some(why) = (self.settings.skip)(p) {
                decision(p, Verdict::NotApplied, why)
            } else if let Some(why) = &p.advice {
                decision(p, Verdict::NotApplied, format!("advice: {why}"))
            } else {
                added.push(self.out.decisions.len());
                decision(p, Verdict::Untried, String::new())
            };
            self.out.decisions.push(d);
        }
        self.bench.planned(&self.out.decisions, start);
        added
    }

    /// Tries `which`, then again each undone remedy decided before a
    /// remedy kept since (that remedy's cause was still there when it was
    /// measured), while a pass keeps one.
    fn passes(&mut self, which: Vec<usize>) -> Result<(), String> {
        let mut todo = which;
        loop {
            let before = self.kept();
            for &i in &todo {
                let p = self.out.decisions[i].proposal.clone();
                let earlier = self.out.decisions[i].why.clone();
                let mut d = self.trial(i, &p)?;
                if !earlier.is_empty() {
                    d.why = format!(
                        "{}; tried before, while a cause whose remedy was kept since was still there: {earlier}",
                        d.why
                    );
                }
                self.out.decisions[i] = d;
                self.kept_then.insert(i, self.kept());
            }
            let kept = self.kept();
            todo = (0..self.out.decisions.len())
                .filter(|i| {
                    self.out.decisions[*i].verdict == Verdict::Undone
                        && self.kept_then.get(i).is_some_and(|&then| then < kept)
                })
                .collect();
            if kept == before || todo.is_empty() {
                return Ok(());
            }
        }
    }

    /// The baseline against the final state, interleaved; all undone if
    /// the final state is worse.
    fn verify(&mut self) -> Result<(), String> {
        if self.kept() == 0 {
            return Ok(());
        }
        let mut sides = Sides::default();
        let n = self.settings.rounds.max(1);
        self.verify_pairs(&mut sides, n)?;
        let mut comparison = self.judge(&sides.baseline, &sides.fixed, &self.settings.figures);
        if comparison.undecided {
            self.verify_pairs(&mut sides, n)?;
            comparison = self.judge(&sides.baseline, &sides.fixed, &self.settings.figures);
        }
        let undone = comparison.worse;
        if undone {
            self.undo_kept()?;
            for d in self.out.decisions.iter_mut() {
                if d.verdict == Verdict::Kept {
                    d.verdict = Verdict::Undone;
                    d.why = format!(
                        "undone with everything: the final state measured worse than the baseline ({})",
                        comparison.why
                    );
                }
            }
        }
        self.out.verification = Some(Verification {
            baseline_all: sides.baseline_all.figures(),
            fixed_all: sides.fixed_all.figures(),
            baseline: sides.baseline,
            fixed: sides.fixed,
            comparison,
            undone,
        });
        Ok(())
    }

    /// `n` more pairs of the baseline (every kept remedy undone) and the
    /// final state.
    fn verify_pairs(&mut self, sides: &mut Sides, n: usize) -> Result<(), String> {
        for _ in 0..n {
            self.undo_kept()?;
            let b = self.measure_all("verify: baseline".into())?;
            sides.baseline.push(b.figures);
            sides.baseline_all.add(&b);
            self.reapply_kept();
            let f = self.measure_all("verify: fixed".into())?;
            sides.fixed.push(f.figures);
            sides.fixed_all.add(&f);
        }
        Ok(())
    }

    fn diagnose(&mut self) -> Result<Vec<Proposal>, String> {
        let (d, proposals) = self.bench.diagnose()?;
        self.out.diagnoses.push(d);
        Ok(proposals)
    }
}

/// The verification's rounds of both states, one by one and pooled.
#[derive(Default)]
struct Sides {
    baseline: Vec<Figures>,
    fixed: Vec<Figures>,
    baseline_all: Pool,
    fixed_all: Pool,
}

/// Runs the whole proof into `out`. On a stop, every kept remedy is undone
/// and `out.stopped` says why.
pub fn prove(bench: &mut dyn Bench, settings: &Settings<'_>, out: &mut FixResult) {
    let mut proof = Proof {
        bench,
        out,
        settings,
        kept_then: Default::default(),
    };
    if let Err(why) = run(&mut proof) {
        let left = proof.undo_kept();
        for d in proof.out.decisions.iter_mut() {
            match d.verdict {
                Verdict::Kept => {
                    d.verdict = Verdict::Undone;
                    d.why = format!("{}; then undone: the fix stopped before its end", d.why);
                }
                Verdict::Untried => {
                    d.verdict = Verdict::NotApplied;
                    d.why = "not decided: the fix stopped first".into();
                }
                _ => {}
            }
        }
        proof.out.stopped = Some(match left {
            Ok(()) => why,
            Err(e) => format!("{why}; and undoing failed: {e}"),
        });
    }
}

fn run(proof: &mut Proof<'_>) -> Result<(), String> {
    let proposals = proof.diagnose()?;
    let mut todo = proof.add(&proposals, true);
    if todo.is_empty() {
        return Ok(());
    }
    let a = proof.measure("baseline".into())?;
    let b = proof.measure("baseline".into())?;
    proof.out.baseline = vec![a, b];
    proof.out.spreads = proof
        .settings
        .figures
        .iter()
        .map(|&f| (f, spread(&a, &b, f)))
        .collect();
    for n in 1.. {
        let before = proof.kept();
        proof.passes(todo)?;
        if n >= proof.settings.diagnoses || proof.kept() == before {
            break;
        }
        let proposals = proof.diagnose()?;
        todo = proof.add(&proposals, false);
        if todo.is_empty() {
            break;
        }
    }
    proof.verify()
}

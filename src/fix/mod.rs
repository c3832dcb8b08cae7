//! `rtlab fix`: from why wake-ups were late to a tuned system, proved by
//! measurement.
//!
//! The data flows one way: a diagnosis run's explanations → the causes
//! (`causes.rs`) → one proposal per cause, read against the machine as it
//! is (`facts.rs`, `remedies.rs`) → each remedy applied through the journal
//! and measured in interleaved rounds against the state without it
//! (`trial.rs`, `apply.rs`) → the outcome ([`FixResult`]), which the
//! report renders (text, JSON, HTML, an experiment file of the kept state).
//! This module never plans a run: the caller hands it a way to measure.

use serde::{Deserialize, Serialize};

pub mod apply;
pub mod causes;
pub mod drive;
pub mod facts;
pub mod remedies;
pub mod trial;

#[cfg(test)]
mod proof_tests;
#[cfg(test)]
mod tests;

pub use causes::{Cause, Target};
pub use facts::Facts;
pub use remedies::{Action, Proposal};
pub use trial::{Decision, Diagnosed, Figure, Figures, FixResult, Round, Verdict};

/// A class of remedy (`--only`, `--skip`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum RemedyClass {
    /// A device IRQ on a measured CPU: its affinity moved off them.
    Irq,
    /// A thread that delayed a timer thread: moved off the measured CPUs.
    Thread,
    /// kworkers: the unbound workqueues' and writeback's cpumask.
    Workqueue,
    /// Network softirqs: the NIC's IRQs and the receive-steering (RPS) masks (XPS is left alone).
    Net,
    /// Deep idle states of the measured CPUs: disabled.
    Idle,
    /// RT throttling: lifted only with `--lift-rt-throttling`.
    RtThrottling,
    /// The scheduler tick, RCU and timers: boot parameters (advice).
    Tick,
    /// IPIs, NMIs and softirqs with no remedy of their own (advice).
    Ipi,
    /// A non-preemptible kernel path: the preemption model (advice).
    Preemption,
    /// Timer slack of a measured task (advice: the task is the user's).
    Slack,
    /// The host (steal, unseen time): no guest setting helps (advice).
    Host,
}

impl RemedyClass {
    /// Its name on the command line and in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            RemedyClass::Irq => "irq",
            RemedyClass::Thread => "thread",
            RemedyClass::Workqueue => "workqueue",
            RemedyClass::Net => "net",
            RemedyClass::Idle => "idle",
            RemedyClass::RtThrottling => "rt-throttling",
            RemedyClass::Tick => "tick",
            RemedyClass::Ipi => "ipi",
            RemedyClass::Preemption => "preemption",
            RemedyClass::Slack => "slack",
            RemedyClass::Host => "host",
        }
    }
}

impl FixResult {
    /// An outcome with nothing in it yet.
    pub fn new(
        experiment: String,
        threshold_ns: u64,
        figures: Vec<trial::Figure>,
        rounds: usize,
    ) -> FixResult {
        FixResult {
            schema: "rtlab-fix/1".into(),
            experiment,
            threshold_ns,
            figures,
            rounds,
            dry_run: false,
            diagnoses: Vec::new(),
            baseline: Vec::new(),
            spreads: Vec::new(),
            decisions: Vec::new(),
            verification: None,
            rounds_run: Vec::new(),
            kept_experiment: None,
            journal: None,
            stopped: None,
        }
    }
}

/// `text` with `keys` added to its `main` stanza (a new `main` stanza at
/// the top when it has none): the keys' lines go right after the stanza's
/// opening brace.
pub fn with_main_keys(text: &str, keys: &[String]) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let code = |l: &str| l.split('#').next().unwrap_or("").trim().to_string();
    // The line that opens `main`'s brace: `main {`, `main { k v }` on one
    // line, or a `{` alone after `main`.
    let open = lines.iter().enumerate().find_map(|(i, l)| {
        let c = code(l);
        let rest = c.strip_prefix("main")?;
        if rest.trim_start().starts_with('{') {
            return Some(i);
        }
        if !rest.is_empty() {
            return None;
        }
        lines[i + 1..]
            .iter()
            .position(|n| !code(n).is_empty())
            .map(|k| i + 1 + k)
            .filter(|&k| code(lines[k]).starts_with('{'))
    });
    let added: Vec<String> = keys.iter().map(|k| format!("  {k}")).collect();
    let mut out: Vec<String> = Vec::new();
    match open {
        Some(at) => {
            out.extend(lines[..at].iter().map(|l| l.to_string()));
            // Split the line at its brace: what follows it (keys, `}`) goes
            // after the added keys.
            let (head, tail) = lines[at].split_once('{').unwrap_or((lines[at], ""));
            out.push(format!("{head}{{"));
            out.extend(added);
            if !tail.trim().is_empty() {
                out.push(format!("  {}", tail.trim()));
            }
            out.extend(lines[at + 1..].iter().map(|l| l.to_string()));
        }
        None => {
            out.push("main".into());
            out.push("{".into());
            out.extend(added);
            out.push("}".into());
            out.extend(lines.iter().map(|l| l.to_string()));
        }
    }
    let mut s = out.join("\n");
    s.push('\n');
    s
}

//! `rtlab qualify`'s outcome, rendered: the closing lines of the log and
//! the Node Feature Discovery feature file (`features.d/`), both from one
//! [`Qualification`].

use std::fmt::Write as _;

/// How a test ended against its limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every maximum within the limit.
    Pass,
    /// A maximum at or over it (hwlatdetect: over it, its own rule).
    Fail,
    /// No limit asked: the figures are reported, nothing is judged (as
    /// cnf-tests skips the check).
    Unchecked,
    /// Not run, and why.
    Skipped(String),
    /// The tool failed after the start (its exit status).
    Failed(i32),
}

/// One test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestOutcome {
    /// hwlatdetect, cyclictest or oslat.
    pub tool: &'static str,
    /// The limit it was held to (µs), if one was asked.
    pub limit_us: Option<u64>,
    /// Each thread's maximum as the tool printed it (µs).
    pub maxima_us: Vec<u64>,
    /// How it ended.
    pub verdict: Verdict,
}

impl TestOutcome {
    /// The largest of the maxima.
    pub fn max_us(&self) -> Option<u64> {
        self.maxima_us.iter().copied().max()
    }

    fn ran(&self) -> bool {
        !matches!(self.verdict, Verdict::Skipped(_))
    }
}

/// The whole qualification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Qualification {
    /// The tests, in the order run.
    pub tests: Vec<TestOutcome>,
    /// The CPUs measured on.
    pub cpus: Vec<usize>,
    /// Every CPU the first measuring test ran on isolated (isolcpus, an
    /// isolated partition); None when no test measured.
    pub isolated: Option<bool>,
    /// When it was written (RFC 3339, UTC).
    pub time: String,
}

impl Qualification {
    /// Qualified: at least one test ran, every test that ran had a limit
    /// and kept within it.
    pub fn qualified(&self) -> bool {
        let ran: Vec<&TestOutcome> = self.tests.iter().filter(|t| t.ran()).collect();
        !ran.is_empty() && ran.iter().all(|t| t.verdict == Verdict::Pass)
    }

    /// A test failed its limit or failed to run to its end.
    pub fn failed(&self) -> bool {
        self.tests
            .iter()
            .any(|t| matches!(t.verdict, Verdict::Fail | Verdict::Failed(_)))
    }

    /// The largest maximum of all tests that ran.
    pub fn max_us(&self) -> Option<u64> {
        self.tests.iter().filter_map(TestOutcome::max_us).max()
    }
}

/// The closing lines of the log: one per test, then the verdict.
pub fn summary(q: &Qualification) -> String {
    let mut out = String::new();
    for t in &q.tests {
        let _ = write!(out, "rtlab qualify: {}: ", t.tool);
        if let Verdict::Skipped(why) = &t.verdict {
            let _ = writeln!(out, "skipped: {why}");
            continue;
        }
        let per_thread: Vec<String> = t.maxima_us.iter().map(u64::to_string).collect();
        match t.max_us() {
            Some(m) if t.maxima_us.len() > 1 => {
                let _ = write!(out, "max {m} us (each: {})", per_thread.join(" "));
            }
            Some(m) => {
                let _ = write!(out, "max {m} us");
            }
            None => out.push_str("no figure"),
        }
        let limit = t
            .limit_us
            .map_or("no limit".to_string(), |l| format!("limit {l} us"));
        let word = match &t.verdict {
            Verdict::Pass => "PASS".to_string(),
            Verdict::Fail => "FAIL".to_string(),
            Verdict::Unchecked => "not checked".to_string(),
            Verdict::Failed(s) => format!("FAILED (exit status {s})"),
            Verdict::Skipped(_) => String::new(),
        };
        let _ = writeln!(out, ", {limit}: {word}");
    }
    let cpus = crate::cpulist::format(&q.cpus);
    let verdict = if q.qualified() {
        "QUALIFIED"
    } else if q.failed() {
        "NOT QUALIFIED"
    } else {
        "not qualified (no limit judged)"
    };
    let _ = writeln!(out, "rtlab qualify: CPUs {cpus}: {verdict}");
    out
}

/// The feature file for Node Feature Discovery's local source: one
/// `name=value` per line, which nfd-worker turns into the node labels
/// `feature.node.kubernetes.io/NAME=VALUE`. Values are numbers and words
/// only (label values allow `[A-Za-z0-9._-]`, 63 at most).
pub fn nfd_features(q: &Qualification) -> String {
    let mut out = format!(
        "# rtlab qualify, {}: Node Feature Discovery labels (features.d)\n",
        q.time
    );
    let _ = writeln!(out, "rtlab.qualified={}", q.qualified());
    if let Some(m) = q.max_us() {
        let _ = writeln!(out, "rtlab.max-latency-us={m}");
    }
    for t in q.tests.iter().filter(|t| t.ran()) {
        if let Some(m) = t.max_us() {
            let _ = writeln!(out, "rtlab.{}-max-latency-us={m}", t.tool);
        }
    }
    if let Some(iso) = q.isolated {
        let _ = writeln!(out, "rtlab.isolation={}", if iso { "ok" } else { "none" });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test(tool: &'static str, maxima: &[u64], limit: Option<u64>, v: Verdict) -> TestOutcome {
        TestOutcome {
            tool,
            limit_us: limit,
            maxima_us: maxima.to_vec(),
            verdict: v,
        }
    }

    fn q(tests: Vec<TestOutcome>) -> Qualification {
        Qualification {
            tests,
            cpus: vec![1, 2, 3],
            isolated: Some(true),
            time: "2026-11-27T00:00:00Z".into(),
        }
    }

    #[test]
    fn the_feature_file_holds_the_verdict_and_the_figures() {
        let x = q(vec![
            test("hwlatdetect", &[0], Some(20), Verdict::Pass),
            test("cyclictest", &[23, 9], Some(30), Verdict::Pass),
            test("oslat", &[], Some(30), Verdict::Skipped("one CPU".into())),
        ]);
        assert!(x.qualified());
        let text = nfd_features(&x);
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(
            lines,
            [
                "rtlab.qualified=true",
                "rtlab.max-latency-us=23",
                "rtlab.hwlatdetect-max-latency-us=0",
                "rtlab.cyclictest-max-latency-us=23",
                "rtlab.isolation=ok",
            ]
        );
        let s = summary(&x);
        assert!(
            s.contains("cyclictest: max 23 us (each: 23 9), limit 30 us: PASS"),
            "{s}"
        );
        assert!(s.contains("oslat: skipped: one CPU"), "{s}");
        assert!(s.ends_with("CPUs 1-3: QUALIFIED\n"), "{s}");
    }

    #[test]
    fn no_limit_or_a_failure_is_not_qualified() {
        let x = q(vec![test("cyclictest", &[5], None, Verdict::Unchecked)]);
        assert!(!x.qualified() && !x.failed());
        assert!(summary(&x).contains("no limit: not checked"));
        let x = q(vec![
            test("cyclictest", &[5], Some(30), Verdict::Pass),
            test("oslat", &[40], Some(30), Verdict::Fail),
        ]);
        assert!(!x.qualified() && x.failed());
        assert!(nfd_features(&x).contains("rtlab.qualified=false\nrtlab.max-latency-us=40\n"));
        let x = q(vec![test("oslat", &[], None, Verdict::Skipped("x".into()))]);
        assert!(!x.qualified());
    }
}

//! The environment contract of OpenShift's latency tests (cnf-tests,
//! `functests/4_latency`), read as they read it: which tests run, for how
//! long, on how many CPUs, against which limits. The same names, the same
//! defaults, the same refusals of a bad value (Go's `strconv.ParseBool`
//! and `Atoi`, within 0..=2^31-1); where the contract is silent, rtlab's
//! choice is written in docs/kubernetes.md.

use std::fmt;

/// One of the three tests, in the order OpenShift prescribes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Hwlatdetect,
    Cyclictest,
    Oslat,
}

impl Tool {
    pub const ALL: [Tool; 3] = [Tool::Hwlatdetect, Tool::Cyclictest, Tool::Oslat];

    pub fn name(self) -> &'static str {
        match self {
            Tool::Hwlatdetect => "hwlatdetect",
            Tool::Cyclictest => "cyclictest",
            Tool::Oslat => "oslat",
        }
    }

    pub fn from_name(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.name() == name)
    }

    /// `CYCLICTEST_MAXIMUM_LATENCY` and the others.
    pub fn limit_variable(self) -> String {
        format!("{}_MAXIMUM_LATENCY", self.name().to_uppercase())
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the variables ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contract {
    /// `LATENCY_TEST_RUN` (default false: nothing runs).
    pub run: bool,
    /// `LATENCY_TEST_RUNTIME`, seconds (default 300).
    pub runtime_s: u64,
    /// `LATENCY_TEST_DELAY`, seconds before the first test (default 0).
    pub delay_s: u64,
    /// `LATENCY_TEST_CPUS`: how many of the allowed CPUs (None: all).
    pub cpus: Option<usize>,
    /// `MAXIMUM_LATENCY`, µs.
    pub unified_limit_us: Option<u64>,
    /// `<TOOL>_MAXIMUM_LATENCY`, µs, in [`Tool::ALL`]'s order.
    pub tool_limits_us: [Option<u64>; 3],
}

/// The largest value the contract takes (Go's `math.MaxInt32`).
const MAX_INT32: u64 = i32::MAX as u64;

impl Contract {
    /// Reads the contract through `var` (the environment, or a test's map).
    pub fn read(var: impl Fn(&str) -> Option<String>) -> Result<Contract, String> {
        let run = match var("LATENCY_TEST_RUN") {
            Some(v) => parse_bool(&v).ok_or_else(|| {
                format!("the environment variable LATENCY_TEST_RUN has incorrect value {v:?}: true or false")
            })?,
            None => false,
        };
        let runtime_s = number(&var, "LATENCY_TEST_RUNTIME", 1)?.unwrap_or(300);
        let delay_s = number(&var, "LATENCY_TEST_DELAY", 0)?.unwrap_or(0);
        let cpus = number(&var, "LATENCY_TEST_CPUS", 0)?
            .filter(|&n| n > 0)
            .map(|n| n as usize);
        let unified_limit_us = number(&var, "MAXIMUM_LATENCY", 0)?;
        let mut tool_limits_us = [None; 3];
        for (slot, tool) in tool_limits_us.iter_mut().zip(Tool::ALL) {
            *slot = number(&var, &tool.limit_variable(), 0)?;
        }
        Ok(Contract {
            run,
            runtime_s,
            delay_s,
            cpus,
            unified_limit_us,
            tool_limits_us,
        })
    }

    /// The limit a tool is held to: its own variable wins over the unified
    /// one (None: no limit asked, the figures are reported only).
    pub fn limit_us(&self, tool: Tool) -> Option<u64> {
        let i = Tool::ALL.iter().position(|t| *t == tool).unwrap_or(0);
        self.tool_limits_us[i].or(self.unified_limit_us)
    }
}

/// An integer variable within `min..=2^31-1`, or its refusal in the words
/// of cnf-tests.
fn number(
    var: &impl Fn(&str) -> Option<String>,
    name: &str,
    min: u64,
) -> Result<Option<u64>, String> {
    let Some(text) = var(name) else {
        return Ok(None);
    };
    let kind = if min == 0 {
        "a non-negative integer"
    } else {
        "a positive integer"
    };
    match parse_atoi(&text) {
        Some(v) if v >= min as i64 && v as u64 <= MAX_INT32 => Ok(Some(v as u64)),
        _ => Err(format!(
            "the environment variable {name} has incorrect value {text:?}, it must be {kind} \
             with maximum value of {MAX_INT32}"
        )),
    }
}

/// Go's `strconv.Atoi`: an optional sign and decimal digits, nothing else.
fn parse_atoi(text: &str) -> Option<i64> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || digits.len() > 18 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Go's `strconv.ParseBool`.
fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(pairs: &[(&str, &str)]) -> Result<Contract, String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Contract::read(|k| m.get(k).cloned())
    }

    #[test]
    fn the_defaults_are_cnf_tests_own() {
        let c = read(&[]).unwrap();
        assert!(!c.run);
        assert_eq!((c.runtime_s, c.delay_s, c.cpus), (300, 0, None));
        assert!(Tool::ALL.iter().all(|t| c.limit_us(*t).is_none()));
    }

    #[test]
    fn a_tools_own_limit_wins_over_the_unified_one() {
        let c = read(&[
            ("LATENCY_TEST_RUN", "true"),
            ("MAXIMUM_LATENCY", "100"),
            ("CYCLICTEST_MAXIMUM_LATENCY", "7"),
        ])
        .unwrap();
        assert!(c.run);
        assert_eq!(c.limit_us(Tool::Cyclictest), Some(7));
        assert_eq!(c.limit_us(Tool::Oslat), Some(100));
        assert_eq!(c.limit_us(Tool::Hwlatdetect), Some(100));
        let c = read(&[("OSLAT_MAXIMUM_LATENCY", "0")]).unwrap();
        assert_eq!(c.limit_us(Tool::Oslat), Some(0));
        assert_eq!(c.limit_us(Tool::Cyclictest), None);
    }

    #[test]
    fn bad_values_are_refused_by_name() {
        for (k, v) in [
            ("LATENCY_TEST_RUN", "yes"),
            ("LATENCY_TEST_RUNTIME", "0"),
            ("LATENCY_TEST_RUNTIME", "10s"),
            ("LATENCY_TEST_RUNTIME", "2147483648"),
            ("LATENCY_TEST_DELAY", "-1"),
            ("LATENCY_TEST_CPUS", " 2"),
            ("MAXIMUM_LATENCY", ""),
            ("HWLATDETECT_MAXIMUM_LATENCY", "20us"),
            ("OSLAT_MAXIMUM_LATENCY", "99999999999999999999999"),
        ] {
            let e = read(&[(k, v)]).unwrap_err();
            assert!(e.contains(k) && e.contains(&format!("{v:?}")), "{e}");
        }
    }

    #[test]
    fn go_parses_signs_and_cases_so_does_the_contract() {
        let c = read(&[
            ("LATENCY_TEST_RUN", "T"),
            ("LATENCY_TEST_RUNTIME", "+10"),
            ("LATENCY_TEST_CPUS", "0"),
        ])
        .unwrap();
        assert!(c.run);
        assert_eq!((c.runtime_s, c.cpus), (10, None));
        assert_eq!(Tool::from_name("oslat"), Some(Tool::Oslat));
        assert_eq!(
            Tool::Hwlatdetect.limit_variable(),
            "HWLATDETECT_MAXIMUM_LATENCY"
        );
    }
}

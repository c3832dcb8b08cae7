//! The scheduling vocabulary: a policy and its priority. Pure: the
//! system layer turns it into syscalls (`sys::os`), the experiment file and
//! the outputs into text.

/// A Linux scheduling policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Policy {
    /// SCHED_OTHER (CFS), priority is the nice value.
    Other,
    /// SCHED_FIFO, priority 1..99.
    Fifo,
    /// SCHED_RR, priority 1..99.
    Rr,
    /// SCHED_BATCH, priority is the nice value.
    Batch,
    /// SCHED_IDLE.
    Idle,
}

impl Policy {
    /// Whether the policy is a real-time one (priority 1..99).
    pub fn is_realtime(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }

    /// The upper-case name used in files and output.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Other => "OTHER",
            Policy::Fifo => "FIFO",
            Policy::Rr => "RR",
            Policy::Batch => "BATCH",
            Policy::Idle => "IDLE",
        }
    }
}

/// A policy with its priority (1..99 for FIFO/RR) or nice value (others).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Sched {
    /// The policy.
    pub policy: Policy,
    /// Real-time priority for FIFO/RR, nice value otherwise.
    pub priority: i32,
}

impl Default for Sched {
    fn default() -> Self {
        Sched {
            policy: Policy::Other,
            priority: 0,
        }
    }
}

/// SCHED_DEADLINE's reservation: `runtime` of CPU time in every `period`,
/// done by `deadline` after the period's start (ns; runtime <= deadline <=
/// period).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Deadline {
    /// CPU time reserved per period.
    pub runtime_ns: u64,
    /// By when in the period.
    pub deadline_ns: u64,
    /// The period.
    pub period_ns: u64,
}

impl Deadline {
    /// `runtime/deadline/period` in µs, as chrt and rtla write them.
    pub fn describe(&self) -> String {
        format!(
            "DEADLINE runtime {} µs, deadline {} µs, period {} µs",
            self.runtime_ns / 1000,
            self.deadline_ns / 1000,
            self.period_ns / 1000
        )
    }
}

/// A thread's policy as the kernel reports it (`stat` field 41): one rtlab
/// sets, SCHED_DEADLINE (listed, never changed), or a number it does not
/// know. The one mapping from the kernel's numbers, used by the thread
/// listing, the tuning and the journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelPolicy {
    /// A policy rtlab can set.
    Settable(Policy),
    /// SCHED_DEADLINE.
    Deadline,
    /// A number this rtlab does not know.
    Unknown(u32),
}

impl KernelPolicy {
    /// The policy of kernel number `n` (`SCHED_OTHER` = 0 ... `SCHED_DEADLINE` = 6).
    pub fn from_number(n: u32) -> Self {
        match n {
            0 => KernelPolicy::Settable(Policy::Other),
            1 => KernelPolicy::Settable(Policy::Fifo),
            2 => KernelPolicy::Settable(Policy::Rr),
            3 => KernelPolicy::Settable(Policy::Batch),
            5 => KernelPolicy::Settable(Policy::Idle),
            6 => KernelPolicy::Deadline,
            n => KernelPolicy::Unknown(n),
        }
    }

    /// `OTHER`, `FIFO`, `RR`, `BATCH`, `IDLE`, `DEADLINE`, or `?N`.
    pub fn name(self) -> String {
        match self {
            KernelPolicy::Settable(p) => p.name().to_string(),
            KernelPolicy::Deadline => "DEADLINE".into(),
            KernelPolicy::Unknown(n) => format!("?{n}"),
        }
    }

    /// A real-time class (FIFO, RR or DEADLINE), as `ps` shows FF, RR, DLN.
    pub fn is_realtime(self) -> bool {
        match self {
            KernelPolicy::Settable(p) => p.is_realtime(),
            KernelPolicy::Deadline => true,
            KernelPolicy::Unknown(_) => false,
        }
    }

    /// The `ps` class abbreviation (`TS`, `FF`, `RR`, `B`, `IDL`, `DLN`).
    pub fn ps_class(self) -> String {
        match self {
            KernelPolicy::Settable(Policy::Other) => "TS".into(),
            KernelPolicy::Settable(Policy::Fifo) => "FF".into(),
            KernelPolicy::Settable(Policy::Rr) => "RR".into(),
            KernelPolicy::Settable(Policy::Batch) => "B".into(),
            KernelPolicy::Settable(Policy::Idle) => "IDL".into(),
            KernelPolicy::Deadline => "DLN".into(),
            KernelPolicy::Unknown(n) => format!("?{n}"),
        }
    }
}

impl std::fmt::Display for KernelPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

impl serde::Serialize for KernelPolicy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl KernelPolicy {
    /// The policy named `name` as [`KernelPolicy::name`] writes it.
    pub fn from_name(name: &str) -> Option<Self> {
        let settable = [
            Policy::Other,
            Policy::Fifo,
            Policy::Rr,
            Policy::Batch,
            Policy::Idle,
        ];
        if let Some(p) = settable.into_iter().find(|p| p.name() == name) {
            return Some(KernelPolicy::Settable(p));
        }
        match name {
            "DEADLINE" => Some(KernelPolicy::Deadline),
            _ => name
                .strip_prefix('?')
                .and_then(|n| n.parse().ok())
                .map(KernelPolicy::Unknown),
        }
    }
}

impl<'de> serde::Deserialize<'de> for KernelPolicy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        KernelPolicy::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown policy {name:?}")))
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn kernel_policy_numbers_names_and_classes() {
        use super::{KernelPolicy, Policy};
        let all: Vec<(String, String, bool)> = (0..8)
            .map(KernelPolicy::from_number)
            .map(|p| (p.name(), p.ps_class(), p.is_realtime()))
            .collect();
        let want = [
            ("OTHER", "TS", false),
            ("FIFO", "FF", true),
            ("RR", "RR", true),
            ("BATCH", "B", false),
            ("?4", "?4", false),
            ("IDLE", "IDL", false),
            ("DEADLINE", "DLN", true),
            ("?7", "?7", false),
        ];
        for n in 0..8 {
            let p = KernelPolicy::from_number(n);
            assert_eq!(KernelPolicy::from_name(&p.name()), Some(p));
        }
        for (got, want) in all.iter().zip(want) {
            assert_eq!((got.0.as_str(), got.1.as_str(), got.2), want);
        }
        assert_eq!(
            KernelPolicy::from_number(1),
            KernelPolicy::Settable(Policy::Fifo)
        );
        assert_eq!(
            serde_json::to_string(&KernelPolicy::Deadline).unwrap(),
            "\"DEADLINE\""
        );
    }
}

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

#[cfg(test)]
mod tests {
    /// The pure layer (the experiment file, CPU lists, the scheduling
    /// vocabulary, text escaping, exit statuses) does not reach the system
    /// layer: it must be usable and testable without a kernel.
    #[test]
    fn the_pure_layer_does_not_reach_the_system() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files: Vec<_> = ["cpulist.rs", "sched.rs", "text.rs", "exit.rs"]
            .iter()
            .map(|f| src.join(f))
            .collect();
        for entry in std::fs::read_dir(src.join("config")).unwrap() {
            files.push(entry.unwrap().path());
        }
        let needle = ["crate::", "sys"].concat();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            assert!(
                !text.contains(&needle),
                "{} uses the system layer",
                f.display()
            );
        }
    }
}

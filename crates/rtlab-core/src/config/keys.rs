//! Every key of the experiment file, defined once: which stanza it belongs to,
//! what value it takes, its default and whether it is an rtlab extension.
//! The "did you mean" hints come from this table, and a test checks that the
//! manual (`docs/config-format.md`) documents every key listed here.

/// The kinds of stanza.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StanzaKind {
    /// `main`: the conductor.
    Main,
    /// `timer_thread[N]`: a measurement thread.
    Timer,
    /// `program[N]`: a load process.
    Program,
}

impl StanzaKind {
    /// The stanza name as written in files (`timer_thread[N]`).
    pub fn display(self) -> &'static str {
        match self {
            StanzaKind::Main => "main",
            StanzaKind::Timer => "timer_thread[N]",
            StanzaKind::Program => "program[N]",
        }
    }
}

/// One key of the format.
#[derive(Debug, Clone, Copy)]
pub struct KeySpec {
    /// Which stanza it belongs to.
    pub stanza: StanzaKind,
    /// The dotted key.
    pub name: &'static str,
    /// What its value looks like (for the manual).
    pub value: &'static str,
    /// Its default.
    pub default: &'static str,
    /// An rtlab extension (not in systress).
    pub extension: bool,
    /// May be given several times (each adds one entry).
    pub repeatable: bool,
}

const fn key(
    stanza: StanzaKind,
    name: &'static str,
    value: &'static str,
    default: &'static str,
    extension: bool,
) -> KeySpec {
    KeySpec {
        stanza,
        name,
        value,
        default,
        extension,
        repeatable: false,
    }
}

const fn repeated(stanza: StanzaKind, name: &'static str, value: &'static str) -> KeySpec {
    KeySpec {
        stanza,
        name,
        value,
        default: "none",
        extension: true,
        repeatable: true,
    }
}

use StanzaKind::{Main, Program, Timer};

/// All keys.
pub const KEYS: &[KeySpec] = &[
    key(Main, "dbg_level", "N", "0", false),
    key(Main, "cpu_affinity", "CPULIST", "all online", false),
    key(Main, "sched.policy", "POLICY", "OTHER", false),
    key(Main, "sched.priority", "N", "0", false),
    key(Main, "stats.period", "DURATION", "1 s", false),
    key(Main, "stats.format", "txt|csv", "txt", false),
    key(Main, "stats.cpu_load", "all|global|none", "none", false),
    key(Main, "memlock", "(flag)", "off", false),
    key(Main, "pm_qos.cpu_dma_latency", "DURATION|off", "0 us", true),
    key(Main, "cpuset", "NAME", "none (stays where started)", true),
    key(Main, "cpufreq.governor", "GOVERNOR", "unchanged", true),
    key(Main, "cpufreq.cpus", "CPULIST", "all online", true),
    key(Main, "cstates.max_latency", "DURATION", "unchanged", true),
    key(Main, "cstates.cpus", "CPULIST", "all online", true),
    repeated(Main, "irq.affinity", "CPULIST [IRQ...]"),
    repeated(Main, "threads.sched", "PATTERN POLICY PRIORITY"),
    key(Timer, "cpu_affinity", "CPULIST", "all online", false),
    key(Timer, "sched.policy", "POLICY", "OTHER", false),
    key(Timer, "sched.priority", "N", "0", false),
    key(Timer, "timer.period", "DURATION", "1 ms", false),
    key(
        Timer,
        "lifetime.duration",
        "DURATION",
        "until the run stops",
        false,
    ),
    key(Timer, "lifetime.loops", "N", "none", false),
    key(Timer, "stats.histo_size", "DURATION", "100 us", false),
    key(Timer, "stats.filename", "PATH", "timer_threadNN.txt", false),
    key(Timer, "cpuset", "NAME", "none (the main thread's)", true),
    key(Program, "cmdline", "ARGV...", "required", false),
    key(Program, "cpu_affinity", "CPULIST", "all online", false),
    key(Program, "sched.policy", "POLICY", "OTHER", false),
    key(Program, "sched.priority", "N", "0", false),
    key(Program, "output.out", "PATH", "/dev/null", false),
    key(Program, "output.err", "PATH", "/dev/null", false),
    key(
        Program,
        "termination.ok",
        "RESPAWN|IGNORE|ABORT",
        "IGNORE",
        false,
    ),
    key(
        Program,
        "termination.ko",
        "RESPAWN|IGNORE|ABORT",
        "IGNORE",
        false,
    ),
    key(Program, "termination.grace", "DURATION", "2 s", true),
    key(Program, "cpuset", "NAME", "none (the main thread's)", true),
    key(Program, "cpu.quota", "DURATION", "unlimited", true),
    key(Program, "cpu.period", "DURATION", "100 ms", true),
    key(
        Program,
        "cpu.group",
        "NAME",
        "programN when cpu.quota is set",
        true,
    ),
];

/// The key `name` of stanza `kind`, if it exists.
pub fn find(kind: StanzaKind, name: &str) -> Option<&'static KeySpec> {
    KEYS.iter().find(|k| k.stanza == kind && k.name == name)
}

/// A hint for an unknown key: the closest key of the same stanza, or the
/// stanza the key belongs to.
pub fn unknown_key_hint(kind: StanzaKind, name: &str) -> String {
    if let Some(other) = KEYS.iter().find(|k| k.name == name) {
        return format!(
            "`{name}` is a key of {}, not of {}",
            other.stanza.display(),
            kind.display()
        );
    }
    // No key is longer than 64 bytes: a longer word is no typo of one (and
    // the edit distance would cost its length times each key's).
    let best = KEYS
        .iter()
        .filter(|k| k.stanza == kind && name.len() <= 64)
        .map(|k| (strsim::levenshtein(k.name, name), k.name))
        .min();
    match best {
        Some((distance, closest)) if distance <= 4.max(name.len() / 3) => {
            format!("did you mean `{closest}`?")
        }
        _ => {
            let names: Vec<&str> = KEYS
                .iter()
                .filter(|k| k.stanza == kind)
                .map(|k| k.name)
                .collect();
            format!("keys of {} are: {}", kind.display(), names.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_name_the_closest_key() {
        assert_eq!(
            unknown_key_hint(Timer, "sched.prority"),
            "did you mean `sched.priority`?"
        );
        assert_eq!(
            unknown_key_hint(Timer, "cmdline"),
            "`cmdline` is a key of program[N], not of timer_thread[N]"
        );
        assert!(unknown_key_hint(Main, "zzzzzzzzzzzzzzzzzzzzzz").starts_with("keys of main are"));
    }

    #[test]
    fn the_manual_documents_every_key() {
        let manual = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/config-format.md"),
        )
        .expect("docs/config-format.md exists");
        for k in KEYS {
            assert!(
                manual.contains(&format!("`{}", k.name)),
                "key {} of {} is not in docs/config-format.md",
                k.name,
                k.stanza.display()
            );
        }
    }
}

//! rtlab's exit statuses, in one place: the table of `docs/manual.md`
//! ("Exit status"), which a test keeps in agreement with [`TABLE`].

/// The run completed; the command did what was asked.
pub const OK: i32 = 0;
/// Failed after the start (what was measured is still written).
pub const FAILED: i32 = 1;
/// Refused before anything started, was written or was changed.
pub const REFUSED: i32 = 2;
/// An `ABORT` program ended the run.
pub const ABORTED: i32 = 3;
/// The machine lacks the facility (no cpufreq policy, no cpuidle state).
pub const UNAVAILABLE: i32 = 4;
/// The kernel refused some of the changes; the others were made.
pub const PARTIAL: i32 = 5;
/// A `--fail-if` condition held (a regression).
pub const REGRESSION: i32 = 6;

/// `partition run`: the command was not found (the shell's convention;
/// otherwise it exits with the command's own status).
pub const COMMAND_NOT_FOUND: i32 = 127;

/// Stopped by signal `n` (the shell's convention).
pub fn signal(n: i32) -> i32 {
    128 + n
}

/// Every fixed status, as the manual lists them.
pub const TABLE: &[i32] = &[
    OK,
    FAILED,
    REFUSED,
    ABORTED,
    UNAVAILABLE,
    PARTIAL,
    REGRESSION,
];

#[cfg(test)]
mod tests {
    #[test]
    fn the_manual_lists_every_status() {
        let manual =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/manual.md"))
                .unwrap();
        for code in super::TABLE {
            assert!(
                manual
                    .lines()
                    .any(|l| l.starts_with(&format!("| {code} |"))),
                "docs/manual.md has no row for exit status {code}"
            );
        }
        assert!(manual.contains("| 128+N |"));
    }
}

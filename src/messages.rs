//! Diagnostics on stderr: notes and warnings, and debug lines filtered by the
//! debug level (`dbg_level`, `-d`). Below the CLI, the only place that prints
//! diagnostics (a test in `walls.rs` keeps it so); results go to stdout and
//! files.

use std::sync::atomic::{AtomicU8, Ordering};

static LEVEL: AtomicU8 = AtomicU8::new(0);

/// Sets the debug level (0 = quiet).
pub fn set_level(level: u8) {
    LEVEL.store(level, Ordering::Relaxed);
}

/// Prints `message` on stderr if the debug level is at least `level`.
pub fn debug(level: u8, message: &str) {
    if LEVEL.load(Ordering::Relaxed) >= level {
        errln!("rtlab: {message}");
    }
}

/// Prints a warning on stderr (always).
pub fn warn(message: &str) {
    errln!("rtlab: warning: {message}");
}

/// Prints a note on stderr (always): what the user should know now, during
/// a run, that is not a problem.
pub fn note(message: &str) {
    errln!("rtlab: {message}");
}

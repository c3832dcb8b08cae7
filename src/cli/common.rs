//! What several commands share: JSON on stdout, the signals a command
//! catches to undo what it did, and `rtlab` alone.

use super::refusal::Outcome;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

pub(super) use super::refusal::need_root;

/// Prints `value` as pretty JSON on stdout.
pub(super) fn print_json(value: &impl serde::Serialize) {
    match serde_json::to_string_pretty(value) {
        Ok(s) => outln!("{s}"),
        Err(e) => errln!("rtlab: cannot render JSON: {e}"),
    }
}

/// Catches SIGINT, SIGTERM and SIGHUP: the number of the first one that
/// came, so that a command can undo what it did before it exits.
pub(super) fn catch_signals() -> Arc<AtomicUsize> {
    let caught = Arc::new(AtomicUsize::new(0));
    for sig in [
        crate::sys::consts::SIGINT,
        crate::sys::consts::SIGTERM,
        crate::sys::consts::SIGHUP,
    ] {
        let _ = signal_hook::flag::register_usize(sig, caught.clone(), sig as usize);
    }
    caught
}

/// `rtlab` with neither a command nor a file: the help, and status 2.
pub(super) fn help() -> Outcome {
    use clap::CommandFactory;
    let _ = super::Cli::command().print_help();
    Ok(crate::exit::REFUSED)
}

/// What a peer front end measured, for `rtlab qualify`: its exit status,
/// each thread's maximum as its own output prints it (µs), and the run.
pub(super) struct Measured {
    pub status: i32,
    pub maxima_us: Vec<u64>,
    pub result: Option<crate::result::RunResult>,
}

impl Measured {
    /// Nothing measured (`--help`, `--version`).
    pub fn nothing(status: i32) -> Self {
        Measured {
            status,
            maxima_us: Vec::new(),
            result: None,
        }
    }
}

/// A duration option's value (`500us`, `10m`: the command line's units),
/// for clap: its error with the hint.
pub(super) fn cli_duration(text: &str) -> Result<std::time::Duration, String> {
    crate::config::values::cli_duration_ns(text)
        .map(std::time::Duration::from_nanos)
        .map_err(|e| match e.hint {
            Some(hint) => format!("{} ({hint})", e.message),
            None => e.message,
        })
}

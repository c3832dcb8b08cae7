//! One refusal type. A command that cannot go on returns a [`Refusal`]: its
//! exit status, its message and its hint. It travels up by `?` to
//! [`super::main`], which prints it once, in one format:
//!
//! ```text
//! rtlab: --json out/r.json: not a directory
//!   hint: check the directory's permissions and free space
//! ```
//!
//! The message may run over several lines (a file's diagnostics and their
//! count); the hint is one line after it. Most refusals come before
//! anything starts (status 2, [`crate::exit::REFUSED`]); the type also
//! carries the failures that end a command after it started (status 1) and
//! the missing facilities (status 4), printed the same way.

use crate::exit;
use crate::sys::outfile::OutputError;

/// Why a command stops: its exit status, message and hint. Printed by
/// `cli::main` only ([`Refusal::print`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The exit status.
    pub status: i32,
    /// What is wrong, as printed (`rtlab: ...`); empty when it was printed
    /// already ([`Refusal::printed`]).
    pub message: String,
    /// What to do about it, printed on the line after the message.
    pub hint: Option<String>,
}

/// What a command returns: its exit status, or why it stopped.
pub type Outcome = Result<i32, Refusal>;

impl Refusal {
    /// A refusal before anything started (exit status 2).
    pub fn new(message: impl Into<String>) -> Self {
        Refusal {
            status: exit::REFUSED,
            message: message.into(),
            hint: None,
        }
    }

    /// A failure after the command started (exit status 1).
    pub fn failed(message: impl Into<String>) -> Self {
        Refusal::new(message).status(exit::FAILED)
    }

    /// A file that cannot be written: `prefix` (`rtlab: --json `) before
    /// the file's problem, and its hint.
    pub fn output(prefix: &str, e: &OutputError) -> Self {
        Refusal::new(format!("{prefix}{e}")).hint(e.hint.clone())
    }

    /// A refusal written as one text, its hint (if any) on its last line
    /// after `\n  hint: ` (as `OutputError::with_hint` and the cyclictest
    /// setup write them).
    pub fn with_hint_line(text: String) -> Self {
        match text.rsplit_once("\n  hint: ") {
            Some((message, hint)) if !hint.contains('\n') => Refusal::new(message).hint(hint),
            _ => Refusal::new(text),
        }
    }

    /// A refusal with nothing (more) to print: only its status is left
    /// (a refusal clap has already said: `partition run` without a
    /// command).
    pub fn printed(status: i32) -> Self {
        Refusal {
            status,
            message: String::new(),
            hint: None,
        }
    }

    /// The same refusal with `hint`.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// The same refusal with exit status `status`.
    pub fn status(mut self, status: i32) -> Self {
        self.status = status;
        self
    }

    /// The text printed on stderr: the message, then `  hint: ...` on a
    /// line of its own; each line ends with a line feed.
    pub fn render(&self) -> String {
        let mut text = String::new();
        if !self.message.is_empty() {
            text.push_str(&self.message);
            text.push('\n');
        }
        if let Some(hint) = &self.hint {
            text.push_str(&format!("  hint: {hint}\n"));
        }
        text
    }

    /// Prints the refusal on stderr; its exit status. `cli::main` is the
    /// one caller (and the `From` conversion below).
    pub fn print(&self) -> i32 {
        crate::text::emit(std::io::stderr(), format_args!("{}", self.render()), false);
        self.status
    }
}

/// Refuses (exit status 2, with a hint) unless running as root.
pub fn need_root(what: &str) -> Result<(), Refusal> {
    let uid = crate::sys::os::geteuid();
    if uid == 0 {
        return Ok(());
    }
    Err(Refusal::new(format!(
        "rtlab: {what} needs root: it writes cgroup, /proc and /sys files (uid {uid})"
    ))
    .hint("run it with sudo"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_prints_its_message_then_its_hint_and_carries_its_status() {
        let r = Refusal::new("rtlab: --listen \"x\" is not an address")
            .hint("IP:PORT, e.g. 127.0.0.1:9977, [::1]:9977, or `none`");
        assert_eq!(r.status, crate::exit::REFUSED);
        assert_eq!(
            r.render(),
            "rtlab: --listen \"x\" is not an address\n  \
             hint: IP:PORT, e.g. 127.0.0.1:9977, [::1]:9977, or `none`\n"
        );
        let failed = Refusal::failed("rtlab: cannot write x").status(crate::exit::UNAVAILABLE);
        assert_eq!(failed.status, crate::exit::UNAVAILABLE);
        assert_eq!(failed.render(), "rtlab: cannot write x\n");
        assert_eq!(Refusal::printed(7).render(), "");
        let split = Refusal::with_hint_line("rtlab: -D x: bad\n  hint: 1m".into());
        assert_eq!(split, Refusal::new("rtlab: -D x: bad").hint("1m"));
        assert_eq!(split.render(), "rtlab: -D x: bad\n  hint: 1m\n");
        assert_eq!(Refusal::printed(7).print(), 7);
    }

    #[test]
    fn an_output_refusal_is_the_files_message_with_its_hint() {
        let e = OutputError {
            path: "out/r.json".into(),
            problem: "not a directory".into(),
            hint: "give a directory".into(),
        };
        let r = Refusal::output("rtlab: --json ", &e);
        // The same bytes as the `with_hint` form it replaces.
        assert_eq!(r.render(), format!("rtlab: --json {}\n", e.with_hint()));
        assert_eq!(r.status, 2);
    }
}

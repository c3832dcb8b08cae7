//! rtlab: a real-time Linux test bench.
//!
//! Data flows one way: experiment file → [`config`] (typed experiment) →
//! [`plan`] (validated against the machine) → [`run`] (timer threads from
//! [`measure`], programs from [`load`]) → [`result`] → [`report`] renderers.
//! [`sys`] is the only door to the kernel, and [`sys::os`] the only `unsafe`.

#![deny(missing_docs)]
// The compiler keeps the wall: `unsafe` is refused everywhere but in the
// syscall layer (`sys::os`, allowed in `sys/mod.rs`); a test checks that no
// other module allows it.
#![deny(unsafe_code)]

/// `print!` to stdout that never panics: a closed pipe (`rtlab ... | head`)
/// loses the rest of the output, not the command's cleanup. Control
/// characters are shown escaped ([`text::terminal`]).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::text::emit(std::io::stdout(), format_args!($($arg)*), false)
    };
}

/// `println!` to stdout that never panics (see [`out!`]).
#[macro_export]
macro_rules! outln {
    () => {
        $crate::outln!("")
    };
    ($($arg:tt)*) => {
        $crate::text::emit(std::io::stdout(), format_args!($($arg)*), true)
    };
}

/// `eprintln!` that never panics and shows control characters escaped
/// (see [`out!`]): the one way rtlab writes to stderr.
#[macro_export]
macro_rules! errln {
    () => {
        $crate::errln!("")
    };
    ($($arg:tt)*) => {
        $crate::text::emit(std::io::stderr(), format_args!($($arg)*), true)
    };
}

pub mod cli;
pub mod config;
pub mod cpulist;
pub mod dataset;
pub mod exit;
pub mod isolate;
pub mod load;
pub mod measure;
pub mod messages;
pub mod plan;
pub mod report;
pub mod result;
pub mod run;
pub mod sched;
pub mod stats;
pub mod sys;
pub mod text;
pub mod tune;
#[cfg(test)]
mod walls;
pub mod workload;

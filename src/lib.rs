//! rtlab: a real-time Linux test bench.
//!
//! Data flows one way: experiment file → [`config`] (typed experiment) →
//! [`plan`] (validated against the machine) → [`run`] (timer threads from
//! [`measure`], programs from [`load`]) → [`result`] → [`report`] renderers.
//! [`sys`] is the only door to the kernel, and [`sys::os`] the only `unsafe`.

#![deny(missing_docs)]

/// `print!` to stdout that never panics: a closed pipe (`rtlab ... | head`)
/// loses the rest of the output, not the command's cleanup.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}

/// `println!` to stdout that never panics (see [`out!`]).
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

pub mod cli;
pub mod config;
pub mod cpulist;
pub mod dataset;
pub mod isolate;
pub mod load;
pub mod measure;
pub mod messages;
pub mod plan;
pub mod report;
pub mod result;
pub mod run;
pub mod stats;
pub mod sys;
pub mod tune;

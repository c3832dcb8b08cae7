//! rtlab's pure layer: the experiment file ([`config`]), CPU lists
//! ([`cpulist`]), the scheduling vocabulary ([`sched`]), text escaping
//! ([`text`]) and exit statuses ([`exit`]).
//!
//! The compiler keeps this layer's walls: it forbids `unsafe`, and it does
//! not depend on the system layer (`rtlab-sys`), so nothing here can reach
//! the kernel. It reads no file either (a test in the binary crate checks).

#![deny(missing_docs)]
#![forbid(unsafe_code)]

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

pub mod config;
pub mod cpulist;
pub mod exit;
pub mod sched;
pub mod text;

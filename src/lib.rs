//! rtlab: a real-time Linux test bench.
//!
//! Data flows one way: experiment file → [`config`] (typed experiment) →
//! [`plan`] (validated against the machine) → [`run`] (timer threads from
//! [`measure`], programs from [`programs`], traced by [`trace`]) → [`result`] → [`report`] renderers.
//! [`sys`] is the only door to the kernel, and [`sys::os`] the only `unsafe`.

#![deny(missing_docs)]
// The compiler keeps the walls: this crate forbids `unsafe` (it lives in the
// system crate's syscall module alone), and the pure layer it re-exports
// below cannot reach the system layer (its crate does not depend on it).
#![forbid(unsafe_code)]

// The escaping print macros (out!, outln!, errln!) of the pure layer.
#[macro_use]
extern crate rtlab_core;

pub use rtlab_core::{config, cpulist, exit, sched, text};
pub use rtlab_sys as sys;

pub mod cli;
pub mod dataset;
pub mod fix;
pub mod isolate;
pub mod measure;
pub mod messages;
pub mod monitor;
pub mod plan;
pub mod programs;
pub mod report;
pub mod result;
pub mod run;
pub mod spike_actions;
pub mod stats;
pub mod trace;
pub mod tune;
#[cfg(test)]
mod walls;
pub mod workload;

//! rtlab: a real-time Linux test bench.
//!
//! Data flows one way: experiment file → [`config`] (typed experiment) →
//! [`plan`] (validated against the machine) → [`run`] (timer threads from
//! [`measure`], programs from [`load`]) → [`result`] → [`report`] renderers.
//! [`sys`] is the only door to the kernel, and [`sys::os`] the only `unsafe`.

#![deny(missing_docs)]

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

//! Built-in workloads, apart from program supervision ([`crate::programs`])
//! and tuning: the CPU hog (`rtlab hog`, a program of its own), its
//! calibrated spin loop, the governor ramp experiment (`rtlab cpufreq
//! ramp`) built on it, and the built-in loads of `rtlab load KIND`
//! ([`load`]).

pub mod hog;
pub mod load;
pub mod ramp;

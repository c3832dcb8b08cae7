//! Built-in workloads, apart from load supervision and tuning: the CPU hog
//! (`rtlab hog`, a load program of its own), its calibrated spin loop, and
//! the governor ramp experiment (`rtlab cpufreq ramp`) built on it.

pub mod hog;
pub mod load;
pub mod ramp;

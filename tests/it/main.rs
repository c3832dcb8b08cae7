//! rtlab's integration tests, one binary with a module per subject. Each
//! drives the real `rtlab` binary on this machine and finds out at run time
//! what the machine offers (CPUs, cpuidle, IRQ moves, cgroups, cpufreq,
//! root, the peer tools), testing the real thing or rtlab's refusal and
//! saying which on stderr. What each module needs is in its comment.
//!
//! Tests that change machine-wide state take [`fixtures::machine_exclusive`]
//! and run alone; the others take [`fixtures::machine_shared`].
//!
//! The fuzz harness is the one test binary apart (`tests/fuzz.rs`): its
//! allocator limit is process-wide and would fail the tests beside it.

mod boards;
mod cyclictest_compat;
mod deadline;
mod endpoint;
mod explain;
mod fixtures;
mod habits;
mod hardening;
mod hardening_features;
mod irq_side;
mod isolation;
mod kernel_stacks;
mod loads;
mod monitor;
mod refusals;
mod reports;
mod rt_throttling;
mod rtla_side_by_side;
mod run;
mod simulated;
mod spike_actions;
mod task_latency;
mod trace_experiments;
mod tuning;
mod warm_up;

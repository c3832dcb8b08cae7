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

/// The name of the function it is written in: a test's own name, for what
/// it says on stderr ([`fixtures::path_taken`]) and what it names after
/// itself. Written at the test function's top level (in a closure the name
/// would be the closure's).
macro_rules! test_name {
    () => {{
        fn here() {}
        let path = std::any::type_name_of_val(&here);
        let path = path.strip_suffix("::here").unwrap_or(path);
        path.rsplit("::").next().unwrap_or(path)
    }};
}

#[test]
fn test_name_is_the_name_of_the_test_function() {
    assert_eq!(test_name!(), "test_name_is_the_name_of_the_test_function");
}

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

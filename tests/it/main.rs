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
//!
//! Where a new test goes: in the module of its subject, one line each below
//! (a new subject is a new module, named here and in the source map of
//! `docs/architecture.md`, which a test checks). Every test runs rtlab in a
//! temporary directory of its own, never in the repository.
//! - `boards`: the boards' release binaries (aarch64, 32-bit ARM) under QEMU.
//! - `container`: the container image under podman: measures, or refused by name.
//! - `cyclictest_compat`: `rtlab cyclictest` against the real cyclictest.
//! - `deadline`: SCHED_DEADLINE timer threads and their admission control.
//! - `endpoint`: attacks on `rtlab monitor`'s `/metrics` endpoint; its protocol.
//! - `explain`: the flight recorder naming known culprits (hogs, floods).
//! - `fixtures`: no tests; the machine lock and the shared helpers.
//! - `habits`: man pages and shell completions after the README's install.
//! - `hardening`: planted links, hostile journals and labels, pathological files.
//! - `hardening_features`: the third audit's attacks on the later features.
//! - `irq_side`: the IRQ side of each timer wake-up (`irq_latency`).
//! - `isolation`: CPU partitions on the real cpuset, undone and restored.
//! - `hwlat`: `rtlab hwlat` on a real run, a FIFO helper's slices OS noise.
//! - `kernel_stacks`: kernel stacks in explanations; hidden kernel addresses.
//! - `kubernetes`: the manifests' Go check; the Job's and DaemonSet's commands run.
//! - `lava`: `rtlab lava` and `contrib/lava` against Linaro's reading of cyclictest.
//! - `loads`: the built-in loads (`rtlab load`) against the kernel's counts.
//! - `monitor`: `rtlab monitor` against a real Prometheus; textfile, windows.
//! - `noise`: noise threads against a FIFO helper that times its slices.
//! - `noise_inject`: a timerfd's interrupts are irq noise, RPS'd packets NET_RX.
//! - `noise_attr`: the noise attribution on real events, a FIFO helper's runs.
//! - `oslat_compat`: `rtlab oslat` against the real oslat (shapes).
//! - `refusals`: bad input of every family refused before anything starts.
//! - `reports`: `plot`, `report`, `compare` on real runs; cyclictest, Chromium.
//! - `rt_tasks`: `rtlab monitor --rt-tasks`, the BPF source against the kernel's counts; its refusal.
//! - `rt_throttling`: a timer thread held off by RT throttling, explained so.
//! - `rtla_side_by_side`: the flight recorder and `rtla timerlat` on one spike.
//! - `run`: real runs: placement, programs, signals, refusals, examples, memory.
//! - `simulated`: the whole pipeline as any user, every figure predicted.
//! - `spike_actions`: the actions at a late wake-up (`on_spike`).
//! - `task_latency`: unmodified programs' latency against their own clocks.
//! - `trace_experiments`: the isolation audit and IRQ-to-task latency.
//! - `tuning`: inspection and tuning (IRQs, C-states, priorities, bandwidth).
//! - `warm_up`: the warm-up and `main`'s lifetime.

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
mod container;
mod cyclictest_compat;
mod deadline;
mod endpoint;
mod explain;
mod fix;
mod fixtures;
mod habits;
mod hardening;
mod hardening_features;
mod hwlat;
mod irq_side;
mod isolation;
mod kernel_stacks;
mod kubernetes;
mod lava;
mod loads;
mod monitor;
mod noise;
mod noise_attr;
mod noise_inject;
mod oslat_compat;
mod refusals;
mod reports;
mod rt_tasks;
mod rt_throttling;
mod rtla_side_by_side;
mod run;
mod simulated;
mod spike_actions;
mod task_latency;
mod trace_experiments;
mod tuning;
mod warm_up;

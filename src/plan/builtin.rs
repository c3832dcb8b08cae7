//! The built-in experiments (`rtlab run` without a file, `rtlab monitor`),
//! written as experiment files so they go through the same checks.

/// The built-in experiment: one FIFO 99 timer thread per online CPU at 1 ms
/// for 10 s, as an experiment file (so it goes through the same checks).
/// With cpuset partitions (cgroup v1: name and CPUs), each thread goes in
/// the partition that holds its CPU.
pub fn builtin_experiment_text(online: &[usize], partitions: &[(String, Vec<usize>)]) -> String {
    builtin(online, partitions, Some("10 s"))
}

/// The built-in experiment of `rtlab monitor`: the same threads, without a
/// lifetime (the run goes on until it is stopped).
pub fn builtin_monitor_text(online: &[usize], partitions: &[(String, Vec<usize>)]) -> String {
    builtin(online, partitions, None)
}

fn builtin(
    online: &[usize],
    partitions: &[(String, Vec<usize>)],
    lifetime: Option<&str>,
) -> String {
    let mut text = format!(
        "# rtlab built-in experiment: one FIFO 99 timer thread per online CPU,\n\
         # 1 ms period, {}.\nmain\n{{\n  stats.cpu_load all\n}}\n",
        lifetime.unwrap_or("until stopped")
    );
    let lifetime = lifetime.map_or(String::new(), |l| format!("  lifetime.duration {l}\n"));
    for (i, cpu) in online.iter().enumerate() {
        let cpuset = partitions
            .iter()
            .find(|(_, cpus)| cpus.contains(cpu))
            .map_or(String::new(), |(name, _)| format!("  cpuset {name}\n"));
        text.push_str(&format!(
            "\ntimer_thread[{i}]\n{{\n  cpu_affinity {cpu}\n{cpuset}  sched.policy FIFO\n  sched.priority 99\n  \
             timer.period 1 ms\n{lifetime}}}\n"
        ));
    }
    text
}

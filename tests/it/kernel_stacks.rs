//! Kernel stacks in the explanation (`trace.stacks`) on the real kernel: a
//! thread in a long kernel section (memory compaction) is shown with its
//! stack, with what every CPU ran at the deadline and an extra tracepoint in
//! the saved windows; kernel addresses the kernel hides (`kptr_restrict`)
//! are said and never shown. Needs root and tracefs (else says so); holds
//! the machine alone.

use crate::fixtures::{
    fifo_timer as timer, is_root, leftover_instances, load_cpu, machine_exclusive, measured_cpu,
    path_taken, run_json as run, text,
};
use serde_json::Value;

#[test]
fn a_thread_in_a_long_kernel_section_is_shown_with_its_kernel_stack() {
    let _machine = machine_exclusive();
    if !is_root() || !crate::trace_experiments::can_trace("kernel_stack") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A FIFO 50 writer to compact_memory on the measured CPU (below the
    // timer thread): the kernel compacts with few preemption points.
    let script = dir.path().join("compact.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ni=0\nwhile [ $i -lt 2000 ]; do echo 1 > /proc/sys/vm/compact_memory; i=$((i+1)); done\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let hog = format!(
        "program[0] {{\n cmdline {}\n cpu_affinity {}\n sched.policy FIFO\n sched.priority 50\n}}\n",
        script.display(),
        measured_cpu()
    );
    let cfg = format!(
        "main {{\n cpu_affinity {}\n trace.threshold 40 us\n trace.stacks switch\n \
         trace.dump_tasks\n trace.event raw_syscalls/sys_enter\n}}\n{hog}{}",
        load_cpu(),
        timer("lifetime.duration 3 s")
    );
    let (o, r) = run(dir.path(), "stack", &cfg);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(leftover_instances(), Vec::<String>::new());
    let pid = r["programs"][0]["first_pid"].as_i64().unwrap();
    let explained = r["trace"]["explanations"].as_array().unwrap();
    // Every explanation says what each CPU ran at its deadline, once each,
    // the measured one among them.
    let online = crate::fixtures::online_cpus();
    for e in explained {
        let cpus: Vec<u64> = e["cpus_at_deadline"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["cpu"].as_u64().unwrap())
            .collect();
        let mut unique = cpus.clone();
        unique.dedup();
        assert_eq!(unique, cpus, "{e}");
        assert!(cpus.iter().all(|c| online.contains(&(*c as usize))), "{e}");
        assert!(cpus.contains(&(measured_cpu() as u64)), "{e}");
    }
    // The extra tracepoint is in the saved windows, where the kernel has it.
    let missing = r["trace"]["events_missing"].as_array().unwrap();
    if !explained.is_empty() && !missing.iter().any(|m| m == "raw_syscalls/sys_enter") {
        let any = explained.iter().any(|e| {
            let f = e["trace_text"].as_str().unwrap();
            std::fs::read_to_string(dir.path().join(f))
                .unwrap()
                .contains(" sys_enter: ")
        });
        assert!(any, "no window holds the extra tracepoint");
    }
    let stacks: Vec<&Value> = explained
        .iter()
        .flat_map(|e| e["stacks"].as_array().into_iter().flatten())
        .collect();
    if stacks.is_empty() {
        path_taken(
            "kernel_stack",
            "compaction kept no wake-up waiting on this machine: no stack to check",
        );
        return;
    }
    // Every stack is of a task that let the CPU go to the timer thread
    // (never idle), innermost first, from the scheduler, without the
    // tracing machinery's frames; the shell's are in compaction.
    for s in &stacks {
        assert_eq!(s["at"], "switch");
        assert_ne!(s["pid"], 0);
        let frames: Vec<&str> = s["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        assert!(
            !frames.iter().any(|f| f.starts_with("trace_event_raw")),
            "{frames:?}"
        );
        assert!(frames[0].contains("schedule"), "{frames:?}");
    }
    let shell: Vec<&&Value> = stacks.iter().filter(|s| s["pid"] == pid).collect();
    assert!(
        shell.iter().any(|s| s["frames"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f.as_str().unwrap().contains("compact"))),
        "{stacks:?}"
    );
}

/// Puts a sysctl back when dropped.
struct Restore(&'static str, String);

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0, &self.1);
    }
}

#[test]
fn hidden_kernel_addresses_are_said_and_never_shown() {
    let _machine = machine_exclusive();
    if !is_root() || !crate::trace_experiments::can_trace("kptr_restrict") {
        return;
    }
    const KPTR: &str = "/proc/sys/kernel/kptr_restrict";
    let Ok(before) = std::fs::read_to_string(KPTR) else {
        path_taken("kptr_restrict", "no kptr_restrict here");
        return;
    };
    let _restore = Restore(KPTR, before);
    // 2: /proc/kallsyms shows zeros even to root.
    if std::fs::write(KPTR, "2").is_err() {
        path_taken("kptr_restrict", "kptr_restrict cannot be set here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!(
        "main {{\n cpu_affinity {}\n trace.threshold 1 ms\n trace.stacks switch\n}}\n{}",
        load_cpu(),
        timer("lifetime.duration 300 ms")
    );
    let (o, r) = run(dir.path(), "hidden", &cfg);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let notes = r["trace"]["notes"].as_array().unwrap();
    // Said: the text was read, and why.
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("kptr_restrict")),
        "{notes:?}"
    );
    // The kernel's text, which names addresses itself, was read: no
    // frame is a raw address.
    for e in r["trace"]["explanations"].as_array().unwrap() {
        for s in e["stacks"].as_array().into_iter().flatten() {
            for f in s["frames"].as_array().unwrap() {
                let f = f.as_str().unwrap();
                let hex = f
                    .trim_start_matches("0x")
                    .chars()
                    .all(|c| c.is_ascii_hexdigit());
                assert!(!hex || f == "?", "{s}");
            }
        }
    }
}

//! Partitions on fake trees: cgroup v1, cgroup v2 with and without
//! `isolated`, missing and read-only knobs, EPERM on IRQs, pinned and
//! vanishing tasks, signals, failures, and undo leaving every file as it was.

use super::*;
use crate::sys::fake::{self, Kernel, snapshot};
use crate::sys::journal::restore_all;
use crate::tune::knob::KnobStatus;
use std::sync::Mutex;

fn never() -> Option<i32> {
    None
}

fn read(tree: &Path, rel: &str) -> String {
    std::fs::read_to_string(tree.join(rel))
        .unwrap()
        .trim()
        .to_string()
}

fn status_of<'a>(r: &'a CreateReport, path: &str) -> &'a KnobStatus {
    &r.knobs
        .iter()
        .find(|k| k.path == path)
        .unwrap_or_else(|| panic!("no knob {path}"))
        .status
}

#[test]
fn v1_create_then_undo_leaves_every_file_as_before() {
    let tree = tempfile::tempdir().unwrap();
    let jdir = crate::sys::fake::journal_dir();
    let (root, kernel) = fake::v1_machine(
        tree.path(),
        Kernel {
            pinned: vec![3],
            vanishing: Mutex::new(vec![102]),
            ..Default::default()
        },
    );
    fake::add_task(tree.path(), 102, "short-lived", 1, "0-3");
    std::fs::write(
        tree.path().join("sys/fs/cgroup/cpuset/tasks"),
        "1\n2\n3\n100\n101\n102\n",
    )
    .unwrap();
    let before = snapshot(tree.path());

    let rt = parse_rt_cpus("0x8", &[0, 1, 2, 3]).unwrap();
    let r = create(&root, jdir.path(), &rt, &never).unwrap();
    let cs = "sys/fs/cgroup/cpuset";
    assert_eq!(r.nrt, vec![0, 1, 2]);
    assert_eq!(read(tree.path(), &format!("{cs}/rt/cpuset.cpus")), "3");
    assert_eq!(
        read(tree.path(), &format!("{cs}/rt/cpuset.cpu_exclusive")),
        "1"
    );
    assert_eq!(
        read(tree.path(), &format!("{cs}/rt/cpuset.sched_load_balance")),
        "0"
    );
    assert_eq!(read(tree.path(), &format!("{cs}/nrt/cpuset.cpus")), "0-2");
    assert_eq!(
        read(tree.path(), &format!("{cs}/cpuset.sched_load_balance")),
        "0"
    );
    assert_eq!(read(tree.path(), &format!("{cs}/tasks")), "3");
    assert_eq!(r.tasks.moved, 4);
    assert_eq!(r.tasks.vanished, 1);
    assert_eq!(r.tasks.pinned.len(), 1);
    assert_eq!(r.tasks.pinned[0].name, "migration/0");
    // Knobs: set, already set, per IRQ keeping what it had on nrt.
    assert_eq!(read(tree.path(), "proc/irq/default_smp_affinity"), "7");
    assert_eq!(read(tree.path(), "proc/irq/24/smp_affinity_list"), "0-2");
    assert_eq!(read(tree.path(), "proc/irq/25/smp_affinity_list"), "2");
    assert_eq!(
        *status_of(&r, "proc/irq/26/smp_affinity_list"),
        KnobStatus::AlreadySet
    );
    assert_eq!(
        read(tree.path(), "sys/devices/virtual/workqueue/cpumask"),
        "7"
    );
    assert_eq!(
        read(
            tree.path(),
            "sys/devices/virtual/workqueue/writeback/cpumask"
        ),
        "7"
    );
    assert_eq!(read(tree.path(), "proc/sys/kernel/watchdog_cpumask"), "0-2");
    assert_eq!(read(tree.path(), "proc/sys/kernel/timer_migration"), "0");
    assert_eq!(read(tree.path(), "proc/sys/vm/stat_interval"), "1000");
    assert_eq!(
        read(
            tree.path(),
            "sys/devices/system/machinecheck/machinecheck0/check_interval"
        ),
        "0"
    );
    assert_eq!(
        *status_of(&r, "sys/bus/workqueue/devices/writeback/numa"),
        KnobStatus::NotOffered
    );
    // The journal is private and complete.
    use std::os::unix::fs::PermissionsExt;
    let jpath = jdir.path().join(journal::PARTITION_FILE);
    assert_eq!(
        std::fs::metadata(&jpath).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // The show state sees the partition and the changed knobs.
    let state = state::IsolationState::read(&root, jdir.path());
    assert_eq!(state.partitions.len(), 2);
    assert_eq!(state.partitions[0].cpus, vec![3]);
    assert_eq!(state.partitions[1].tasks, 4);
    assert_eq!(state.cpus[3].partition.as_deref(), Some("rt"));
    assert!(
        state
            .changed_knobs
            .iter()
            .any(|k| k.path == "proc/sys/vm/stat_interval"
                && k.before == "1"
                && k.now.as_deref() == Some("1000"))
    );
    assert!(state.render().contains("exclusive, no load balancing"));

    // A second create is refused with the way out.
    let again = create(&root, jdir.path(), &rt, &never).unwrap_err();
    assert!(matches!(again, IsolateError::Exists(_)));
    assert!(again.hint().unwrap().contains("partition undo"));

    let report = undo(&root, jdir.path()).unwrap();
    assert!(report.ok(), "{:?}", report.lines());
    assert!(!jpath.exists());
    // The pinned app got its own affinity back after the move home.
    assert!(
        kernel
            .affinity_calls
            .lock()
            .unwrap()
            .contains(&(101, vec![3]))
    );
    let mut after = snapshot(tree.path());
    // The vanished task is gone for good, as on a real machine.
    let mut expected = before.clone();
    expected.retain(|k, _| !k.starts_with("proc/102"));
    let t = format!("{cs}/tasks");
    expected.insert(t.clone(), "1\n100\n101\n2\n3".into());
    after.insert(t.clone(), after[&t].clone());
    assert_eq!(after, expected);
    // Undo again: nothing to do, still fine.
    assert!(undo(&root, jdir.path()).unwrap().ok());
}

#[test]
fn v1_irq_refusals_missing_and_read_only_knobs_are_reported_not_fatal() {
    let tree = tempfile::tempdir().unwrap();
    let jdir = crate::sys::fake::journal_dir();
    let (root, _) = fake::v1_machine(
        tree.path(),
        Kernel {
            irq_eperm: true,
            read_only: vec!["proc/sys/kernel/watchdog_cpumask".into()],
            ..Default::default()
        },
    );
    std::fs::remove_file(tree.path().join("proc/sys/kernel/timer_migration")).unwrap();
    let before = snapshot(tree.path());
    let r = create(&root, jdir.path(), &[2, 3], &never).unwrap();
    match status_of(&r, "proc/irq/24/smp_affinity_list") {
        KnobStatus::Refused { reason } => {
            assert!(reason.starts_with("EPERM"), "{reason}");
            assert!(reason.contains("virtual machine"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        status_of(&r, "proc/sys/kernel/watchdog_cpumask"),
        KnobStatus::Refused { .. }
    ));
    assert_eq!(
        *status_of(&r, "proc/sys/kernel/timer_migration"),
        KnobStatus::NotOffered
    );
    let lines = knobs::summary_lines(&r.knobs).join("\n");
    assert!(lines.contains("REFUSED  IRQ 24,25"), "{lines}");
    assert!(
        lines.contains("absent   /proc/sys/kernel/timer_migration"),
        "{lines}"
    );
    // The default affinity could be set even though the IRQs could not.
    assert_eq!(read(tree.path(), "proc/irq/default_smp_affinity"), "3");
    let report = undo(&root, jdir.path()).unwrap();
    assert!(report.ok(), "{:?}", report.lines());
    assert_eq!(snapshot(tree.path()), before);
}

#[test]
fn v2_isolated_partition_and_undo() {
    let tree = tempfile::tempdir().unwrap();
    let jdir = crate::sys::fake::journal_dir();
    let (root, _) = fake::v2_machine(
        tree.path(),
        Kernel {
            isolated_partitions: true,
            ..Default::default()
        },
    );
    let before = snapshot(tree.path());
    let r = create(&root, jdir.path(), &[3], &never).unwrap();
    assert!(r.mode.starts_with("isolated"), "{}", r.mode);
    let cg = "sys/fs/cgroup";
    assert_eq!(
        read(tree.path(), &format!("{cg}/rt/cpuset.cpus.partition")),
        "isolated"
    );
    assert_eq!(read(tree.path(), &format!("{cg}/nrt/cpuset.cpus")), "0-2");
    assert_eq!(
        read(tree.path(), &format!("{cg}/cgroup.subtree_control")),
        "memory pids cpuset"
    );
    // v2 leaves tasks in their cgroups: the partition keeps them off rt.
    assert_eq!(r.tasks.moved, 0);
    let state = state::IsolationState::read(&root, jdir.path());
    assert_eq!(state.partitions[0].partition.as_deref(), Some("isolated"));
    assert!(state.cgroup_isolated.is_some());
    let report = undo(&root, jdir.path()).unwrap();
    assert!(report.ok(), "{:?}", report.lines());
    assert_eq!(snapshot(tree.path()), before);
}

#[test]
fn v2_without_isolated_falls_back_to_root() {
    let tree = tempfile::tempdir().unwrap();
    let jdir = crate::sys::fake::journal_dir();
    let (root, _) = fake::v2_machine(tree.path(), Kernel::default());
    fake::write_tree(
        tree.path(),
        &[("sys/fs/cgroup/cgroup.subtree_control", "cpuset\n")],
    );
    let before = snapshot(tree.path());
    let r = create(&root, jdir.path(), &[1], &never).unwrap();
    assert!(r.mode.starts_with("root partition"), "{}", r.mode);
    assert_eq!(
        read(tree.path(), "sys/fs/cgroup/rt/cpuset.cpus.partition"),
        "root"
    );
    assert!(undo(&root, jdir.path()).unwrap().ok());
    // cpuset was enabled before rtlab: it stays enabled.
    assert_eq!(snapshot(tree.path()), before);
}

#[test]
fn a_refused_step_rolls_everything_back() {
    let tree = tempfile::tempdir().unwrap();
    let jdir = crate::sys::fake::journal_dir();
    let (root, _) = fake::v1_machine(
        tree.path(),
        Kernel {
            read_only: vec!["sys/fs/cgroup/cpuset/nrt/cpuset.cpus".into()],
            ..Default::default()
        },
    );
    let before = snapshot(tree.path());
    let err = create(&root, jdir.path(), &[3], &never).unwrap_err();
    let IsolateError::Kernel { step, rollback, .. } = &err else {
        panic!("{err:?}");
    };
    assert!(step.contains("nrt"), "{step}");
    assert!(rollback.ok());
    assert_eq!(err.exit_code(), 1);
    assert_eq!(snapshot(tree.path()), before);
    assert!(!jdir.path().join(journal::PARTITION_FILE).exists());
}

#[test]
fn a_signal_during_create_rolls_everything_back() {
    for after_checks in [0, 1, 2, 5] {
        let tree = tempfile::tempdir().unwrap();
        let jdir = crate::sys::fake::journal_dir();
        let (root, _) = fake::v1_machine(tree.path(), Kernel::default());
        let before = snapshot(tree.path());
        let calls = std::cell::Cell::new(0);
        let stop = || {
            calls.set(calls.get() + 1);
            (calls.get() > after_checks).then_some(crate::sys::consts::SIGINT)
        };
        let err = create(&root, jdir.path(), &[3], &stop).unwrap_err();
        assert!(matches!(err, IsolateError::Interrupted { .. }), "{err:?}");
        assert_eq!(err.exit_code(), 130);
        assert_eq!(
            snapshot(tree.path()),
            before,
            "stopped after {after_checks} checks"
        );
    }
}

#[test]
fn a_journal_left_by_a_killed_create_is_restored() {
    let tree = tempfile::tempdir().unwrap();
    let jdir = crate::sys::fake::journal_dir();
    let (root, _) = fake::v1_machine(tree.path(), Kernel::default());
    let before = snapshot(tree.path());
    create(&root, jdir.path(), &[3], &never).unwrap();
    // As if the journal had been cut in the middle of a line by a crash.
    let jpath = jdir.path().join(journal::PARTITION_FILE);
    let mut text = std::fs::read_to_string(&jpath).unwrap();
    text.push_str("{\"change\":\"write\",\"pa");
    std::fs::write(&jpath, text).unwrap();
    let report = restore_all(&root, jdir.path(), None);
    assert!(report.ok(), "{:?}", report.lines());
    assert_eq!(snapshot(tree.path()), before);
    // Idempotent: nothing left, nothing done.
    let again = restore_all(&root, jdir.path(), None);
    assert!(again.undone.is_empty() && again.journals.is_empty());
}

#[test]
fn bad_cpu_sets_are_refused_with_reasons() {
    let online = [0, 1];
    let all = parse_rt_cpus("0-1", &online).unwrap_err().to_string();
    assert!(all.contains("nrt needs at least one"), "{all}");
    let offline = parse_rt_cpus("5", &online).unwrap_err().to_string();
    assert!(offline.contains("CPU 5 not online"), "{offline}");
    let junk = parse_rt_cpus("zz", &online).unwrap_err().to_string();
    assert!(junk.contains("0x8"), "{junk}");
    assert_eq!(parse_rt_cpus("0x2", &online).unwrap(), vec![1]);
    assert!(parse_rt_cpus("0x0", &online).is_err());
}

#[test]
fn no_cpuset_controller_is_refused() {
    let tree = tempfile::tempdir().unwrap();
    let jdir = crate::sys::fake::journal_dir();
    fake::base_machine(tree.path());
    fake::write_tree(tree.path(), &[("proc/self/mounts", "")]);
    let root = SysRoot::at(tree.path());
    let err = create(&root, jdir.path(), &[1], &never).unwrap_err();
    assert!(matches!(err, IsolateError::NoCpuset));
    assert_eq!(err.exit_code(), 2);
    assert!(err.hint().unwrap().contains("mount"));
}

#[test]
fn partitions_removed_or_changed_under_a_run_are_told() {
    let tree = tempfile::tempdir().unwrap();
    let jdir = crate::sys::fake::journal_dir();
    let (root, _kernel) = fake::v1_machine(tree.path(), Kernel::default());
    let rt = parse_rt_cpus("0x8", &[0, 1, 2, 3]).unwrap();
    create(&root, jdir.path(), &rt, &never).unwrap();
    let start = crate::isolate::state::IsolationState::read(&root, jdir.path()).partitions;
    assert_eq!(start.len(), 2, "{start:?}");
    assert!(crate::isolate::state::partition_changes(&root, &start).is_empty());
    let cs = tree.path().join("sys/fs/cgroup/cpuset");
    std::fs::write(cs.join("rt/cpuset.effective_cpus"), "2-3\n").unwrap();
    let changed = crate::isolate::state::partition_changes(&root, &start);
    assert_eq!(
        changed,
        ["partition `rt` changed from CPUs 3 to CPUs 2-3 during the run"]
    );
    std::fs::remove_dir_all(cs.join("rt")).unwrap();
    let removed = crate::isolate::state::partition_changes(&root, &start);
    assert_eq!(removed.len(), 1, "{removed:?}");
    assert!(
        removed[0].starts_with("partition `rt` (CPUs 3) was removed"),
        "{removed:?}"
    );
}

#[test]
fn a_read_only_cpuset_mount_is_refused_before_anything() {
    // A container's cgroup mounts: read-only.
    let tree = tempfile::tempdir().unwrap();
    let jdir = crate::sys::fake::journal_dir();
    let (root, _) = fake::v1_machine(tree.path(), Kernel::default());
    fake::write_tree(
        tree.path(),
        &[(
            "proc/self/mounts",
            "cgroup /sys/fs/cgroup/cpuset cgroup ro,nosuid,cpuset 0 0\n",
        )],
    );
    let before = snapshot(tree.path());
    let e = create(&root, jdir.path(), &[3], &never).unwrap_err();
    assert!(matches!(e, IsolateError::ReadOnly(_)), "{e}");
    assert_eq!(e.exit_code(), crate::exit::REFUSED);
    assert!(e.to_string().contains("read-only"), "{e}");
    assert!(e.hint().unwrap().contains("on the host"));
    assert_eq!(snapshot(tree.path()), before);
}

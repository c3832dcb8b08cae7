//! Tuning on fake trees: IRQs refused (EPERM as on a VM, EIO for managed
//! IRQs), thread priorities, cpufreq with two policies and without cpufreq,
//! C-state limits, CPU bandwidth groups on cgroup v1 and v2, and the journal
//! putting every file back.

use super::*;
use crate::sched::Policy;
use crate::sys::fake::{self, Kernel, snapshot};
use crate::sys::journal::Owner;
use std::path::Path;

fn journal(root: &SysRoot, dir: &Path) -> Journal {
    Journal::open(
        root,
        &dir.join("journal"),
        crate::sys::journal::TUNE_FILE,
        Owner::Tune,
    )
    .unwrap()
}

fn simulated(tree: &Path, kernel: Kernel) -> SysRoot {
    SysRoot::simulated(tree, std::sync::Arc::new(kernel))
}

#[test]
fn irq_moves_report_refusals_and_undo_restores_every_mask() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("t");
    fake::base_machine(&tree);
    fake::write_tree(&tree, &[("proc/irq/25/effective_affinity_list", "2\n")]);
    let root = simulated(
        &tree,
        Kernel {
            managed_irqs: vec![26],
            ..Kernel::default()
        },
    );
    let before = snapshot(&tree);
    let mut j = journal(&root, dir.path());
    let irqs = IrqSelection::All.resolve(&root).unwrap();
    assert_eq!(irqs, vec![24, 25, 26]);
    let out = move_irqs(&root, &mut j, &[1], &irqs).unwrap();
    assert_eq!(out[0].status, KnobStatus::Set { old: "0-3".into() });
    assert_eq!(out[1].after.as_deref(), Some("effective 2"));
    assert!(out[2].refused());
    assert!(format!("{:?}", out[2].status).contains("EIO (a managed IRQ"));
    assert_eq!(
        std::fs::read_to_string(tree.join("proc/irq/25/smp_affinity_list")).unwrap(),
        "1"
    );
    let report = j.replay_and_close();
    assert!(report.ok(), "{:?} {:?}", report.undone, report.refused);
    assert_eq!(snapshot(&tree), before);

    // EPERM everywhere, as on this project's VM: each IRQ says so.
    let root = simulated(
        &tree,
        Kernel {
            irq_eperm: true,
            ..Kernel::default()
        },
    );
    let mut j = journal(&root, dir.path());
    let out = move_irqs(&root, &mut j, &[0], &[24, 25]).unwrap();
    assert!(out.iter().all(|o| o.refused()));
    assert!(out[0].line().contains("REFUSED: EPERM"));
    j.replay_and_close();
    assert_eq!(snapshot(&tree), before);

    assert!(matches!(
        IrqSelection::Some(vec![24, 99]).resolve(&root),
        Err(TuneError::Invalid { .. })
    ));
    assert_eq!(IrqSelection::parse(&["all".into()]), Ok(IrqSelection::All));
    assert!(IrqSelection::parse(&["x".into()]).is_err());
}

#[test]
fn thread_priorities_are_set_by_pattern_or_tid_and_put_back() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("t");
    fake::base_machine(&tree);
    fake::add_task(&tree, 40, "ksoftirqd/0", 2, "0");
    fake::add_task(&tree, 41, "ksoftirqd/1", 2, "1");
    let root = simulated(
        &tree,
        Kernel {
            pinned: vec![41],
            ..Kernel::default()
        },
    );
    let before = snapshot(&tree);
    let mut j = journal(&root, dir.path());
    let fifo = Sched {
        policy: Policy::Fifo,
        priority: 2,
    };
    let out = set_thread_sched(&root, &mut j, &ThreadSelector::parse("ksoftirqd/*"), fifo).unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(
        out[0].status,
        KnobStatus::Set {
            old: "OTHER 0".into()
        }
    );
    assert!(out[1].refused());
    let t = threads::by_tid(&root, 40).unwrap();
    assert_eq!((t.policy.name().as_str(), t.rt_priority), ("FIFO", 2));
    // By TID; the same value again is "already".
    let again = set_thread_sched(&root, &mut j, &ThreadSelector::parse("40"), fifo).unwrap();
    assert_eq!(again[0].status, KnobStatus::AlreadySet);
    assert!(matches!(
        set_thread_sched(&root, &mut j, &ThreadSelector::parse("nosuch*"), fifo),
        Err(TuneError::Invalid { .. })
    ));
    let report = j.replay_and_close();
    assert!(report.ok(), "{:?} {:?}", report.undone, report.refused);
    assert_eq!(snapshot(&tree), before);
}

#[test]
fn a_thread_that_ended_or_was_replaced_is_left_alone_on_undo() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("t");
    fake::base_machine(&tree);
    let root = simulated(&tree, Kernel::default());
    let mut j = journal(&root, dir.path());
    let rr = Sched {
        policy: Policy::Rr,
        priority: 5,
    };
    set_thread_sched(&root, &mut j, &ThreadSelector::Tid(100), rr).unwrap();
    // TID 100 ends and a new task reuses the number.
    std::fs::remove_dir_all(tree.join("proc/100")).unwrap();
    fake::add_task(&tree, 100, "new", 1, "0-3");
    let mut stat = std::fs::read_to_string(tree.join("proc/100/stat")).unwrap();
    stat = stat.replace(" 1100 ", " 7777 ");
    std::fs::write(tree.join("proc/100/stat"), stat).unwrap();
    let report = j.replay_and_close();
    assert!(report.ok());
    assert!(report.undone[0].detail.contains("ended"));
}

#[test]
fn governors_are_set_per_policy_and_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("t");
    crate::sys::fake::power_machine(&tree);
    let root = simulated(&tree, Kernel::default());
    let before = snapshot(&tree);
    let mut j = journal(&root, dir.path());
    let out = set_governor(&root, &mut j, "performance", Some(&[3])).unwrap();
    assert_eq!(out.len(), 1);
    assert!(out[0].target.contains("policy2"));
    assert_eq!(
        std::fs::read_to_string(
            tree.join("sys/devices/system/cpu/cpufreq/policy2/scaling_governor")
        )
        .unwrap(),
        "performance"
    );
    match set_governor(&root, &mut j, "ondemand", None) {
        Err(TuneError::Invalid { hint, .. }) => assert!(hint.contains("schedutil")),
        other => panic!("{other:?}"),
    }
    j.replay_and_close();
    assert_eq!(snapshot(&tree), before);

    let bare = tempfile::tempdir().unwrap();
    let root = SysRoot::at(bare.path());
    let mut j = journal(&root, bare.path());
    assert!(matches!(
        set_governor(&root, &mut j, "performance", None),
        Err(TuneError::Unavailable(_))
    ));
}

#[test]
fn cstates_deeper_than_the_limit_are_disabled_and_restored() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("t");
    crate::sys::fake::power_machine(&tree);
    let root = simulated(&tree, Kernel::default());
    let before = snapshot(&tree);
    let mut j = journal(&root, dir.path());
    let out = limit_cstates(&root, &mut j, 2, None).unwrap();
    assert_eq!(out.len(), 4, "C6 on each of 4 CPUs");
    assert!(out.iter().all(|o| o.target.ends_with("C6")));
    let out = limit_cstates(&root, &mut j, 0, Some(&[1])).unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(out[1].status, KnobStatus::AlreadySet);
    let states = power::idle_states(&root, &[1]);
    assert_eq!(
        states.iter().map(|s| s.disabled).collect::<Vec<_>>(),
        vec![false, true, true]
    );
    j.replay_and_close();
    assert_eq!(snapshot(&tree), before);
    let bare = tempfile::tempdir().unwrap();
    let root = SysRoot::at(bare.path());
    assert!(matches!(
        limit_cstates(&root, &mut journal(&root, bare.path()), 0, Some(&[0])),
        Err(TuneError::Unavailable(_))
    ));
}

mod bandwidth_groups {
    use super::*;
    use crate::tune::bandwidth::{self, Bandwidth, GroupSpec, Groups};

    fn specs() -> Vec<GroupSpec> {
        vec![
            GroupSpec {
                name: "hogs".into(),
                bandwidth: Bandwidth {
                    quota_us: Some(25_000),
                    period_us: 100_000,
                },
            },
            GroupSpec {
                name: "program2".into(),
                bandwidth: Bandwidth {
                    quota_us: None,
                    period_us: 50_000,
                },
            },
        ]
    }

    #[test]
    fn v1_groups_live_in_the_cpu_hierarchy_and_go_away_on_undo() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("t");
        fake::base_machine(&tree);
        let m = "sys/fs/cgroup/cpu";
        fake::write_tree(
            &tree,
            &[
                (
                    "proc/self/mounts",
                    "cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n\
                     cgroup /sys/fs/cgroup/cpuacct cgroup rw,cpuacct 0 0\n",
                ),
                (&format!("{m}/tasks"), "1\n"),
                (&format!("{m}/cgroup.procs"), "1\n"),
            ],
        );
        let root = simulated(
            &tree,
            Kernel {
                v1_cpu: Some(m.into()),
                ..Kernel::default()
            },
        );
        assert_eq!(
            bandwidth::hierarchy(&root).ok(),
            Some(bandwidth::CpuHierarchy::V1(format!("/{m}")))
        );
        let before = snapshot(&tree);
        let mut j = journal(&root, dir.path());
        let groups = Groups::create(&root, &mut j, "rtlab-7", None, &specs()).unwrap();
        let g = tree.join(m).join("rtlab-7/hogs");
        assert_eq!(
            std::fs::read_to_string(g.join("cpu.cfs_quota_us")).unwrap(),
            "25000"
        );
        assert_eq!(
            std::fs::read_to_string(tree.join(m).join("rtlab-7/program2/cpu.cfs_period_us"))
                .unwrap(),
            "50000"
        );
        assert!(groups.procs("hogs").is_some() && groups.default_leaf().is_none());
        std::fs::write(
            g.join("cpu.stat"),
            "nr_periods 40\nnr_throttled 30\nthrottled_time 2500000000\n",
        )
        .unwrap();
        let r = groups.results();
        assert_eq!((r[0].nr_periods, r[0].nr_throttled), (40, 30));
        assert_eq!(r[0].throttled_ms, 2500.0);
        drop(groups);
        let report = j.replay_and_close();
        assert!(report.ok(), "{:?} {:?}", report.undone, report.refused);
        assert_eq!(snapshot(&tree), before);
    }

    #[test]
    fn v2_groups_are_leaves_of_the_tracking_cgroup() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("t");
        let (root, _) = fake::v2_machine(&tree, Kernel::default());
        let before = snapshot(&tree);
        let mut j = journal(&root, dir.path());
        let tracking = "sys/fs/cgroup/rtlab-7";
        root.mkdir(tracking).unwrap();
        let groups = Groups::create(&root, &mut j, "rtlab-7", Some(tracking), &specs()).unwrap();
        let read = |rel: &str| std::fs::read_to_string(tree.join(rel)).unwrap();
        assert!(read("sys/fs/cgroup/cgroup.subtree_control").contains("cpu"));
        assert!(read(&format!("{tracking}/cgroup.subtree_control")).contains("cpu"));
        assert_eq!(read(&format!("{tracking}/hogs/cpu.max")), "25000 100000");
        assert_eq!(read(&format!("{tracking}/program2/cpu.max")), "max 50000");
        assert!(groups.default_leaf().is_some());
        std::fs::write(
            tree.join(tracking).join("hogs/cpu.stat"),
            "usage_usec 9\nnr_periods 4\nnr_throttled 3\nthrottled_usec 1500\n",
        )
        .unwrap();
        assert_eq!(groups.results()[0].throttled_ms, 1.5);
        drop(groups);
        crate::sys::cgroup::TrackingCgroup::existing(&root, tracking)
            .kill_and_remove(std::time::Duration::from_secs(1))
            .unwrap();
        let report = j.replay_and_close();
        assert!(report.ok(), "{:?} {:?}", report.undone, report.refused);
        assert_eq!(snapshot(&tree), before);
    }

    #[test]
    fn no_cpu_controller_is_said_plainly() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("t");
        let (root, _) = fake::v1_machine(&tree, Kernel::default());
        // The v2 mount of the v1 machine offers no controllers.
        fake::write_tree(&tree, &[("sys/fs/cgroup/unified/cgroup.controllers", "\n")]);
        let e = bandwidth::hierarchy(&root).unwrap_err();
        assert!(
            matches!(e, bandwidth::BandwidthError::NotOffered { .. }),
            "{e}"
        );
        assert!(
            e.to_string().contains("does not offer the cpu controller"),
            "{e}"
        );
    }
}

#[test]
fn thread_cpus_are_set_by_pattern_or_tid_and_put_back() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("t");
    fake::base_machine(&tree);
    fake::add_task(&tree, 40, "ksoftirqd/0", 2, "0");
    fake::fix_affinity(&tree, 40);
    fake::add_task(&tree, 50, "app-rx", 1, "0-3");
    fake::add_task(&tree, 51, "app-tx", 1, "2-3");
    fake::add_task(&tree, 52, "app-io", 1, "1");
    fake::add_task(&tree, 60, "app-own", 1, "0-3");
    let kernel = std::sync::Arc::new(Kernel {
        affinity_refused: vec![51],
        ..Kernel::default()
    });
    let root = SysRoot::simulated(&tree, kernel.clone());
    let before = snapshot(&tree);
    let mut j = journal(&root, dir.path());
    // Process 60 stands for rtlab itself: never selected.
    let out =
        set_thread_affinity(&root, &mut j, &ThreadSelector::parse("app-*"), &[1], 60).unwrap();
    let targets: Vec<&str> = out.iter().map(|o| o.target.as_str()).collect();
    assert_eq!(
        targets,
        vec!["thread 50 app-rx", "thread 51 app-tx", "thread 52 app-io"]
    );
    assert_eq!(out[0].status, KnobStatus::Set { old: "0-3".into() });
    assert_eq!(
        (out[0].setting.as_str(), out[0].new.as_str()),
        ("affinity", "1")
    );
    // The kernel refused 51 (EINVAL), said so; 52 was already there.
    assert!(out[1].refused(), "{:?}", out[1]);
    assert!(
        out[1].line().contains("REFUSED: EINVAL"),
        "{}",
        out[1].line()
    );
    assert_eq!(out[2].status, KnobStatus::AlreadySet);
    assert_eq!(
        crate::sys::tasks::status_field(&root, 50, "Cpus_allowed_list").as_deref(),
        Some("1")
    );
    // A per-CPU kernel thread: the kernel keeps its CPUs, refused unasked.
    let fixed = set_thread_affinity(&root, &mut j, &ThreadSelector::parse("40"), &[1], 60).unwrap();
    assert!(fixed[0].refused());
    assert!(format!("{:?}", fixed[0].status).contains("PF_NO_SETAFFINITY"));
    // No thread selected, or only rtlab's own: refused as a whole.
    for (selector, own) in [("nosuch*", 60), ("60", 60), ("app-own", 60)] {
        assert!(matches!(
            set_thread_affinity(&root, &mut j, &ThreadSelector::parse(selector), &[1], own),
            Err(TuneError::Invalid { .. })
        ));
    }
    assert!(
        !kernel
            .affinity_calls
            .lock()
            .unwrap()
            .iter()
            .any(|c| c.0 == 40 || c.0 == 60)
    );
    let report = j.replay_and_close();
    assert!(report.ok(), "{:?} {:?}", report.undone, report.refused);
    assert_eq!(snapshot(&tree), before);
}

/// A fake tree with interfaces `eth0` (two receive and two transmit
/// queues) and `lo` (one of each, its XPS file refusing reads as a
/// device with one transmit queue does).
fn net_machine(tree: &Path) {
    fake::base_machine(tree);
    let net = paths::NET_CLASS_DIR;
    fake::write_tree(
        tree,
        &[
            (&format!("{net}/bonding_masters"), "\n"),
            (&format!("{net}/eth0/queues/rx-0/rps_cpus"), "0\n"),
            (
                &format!("{net}/eth0/queues/rx-1/rps_cpus"),
                "00000000,00000002\n",
            ),
            (&format!("{net}/eth0/queues/tx-0/xps_cpus"), "f\n"),
            (&format!("{net}/eth0/queues/tx-1/xps_cpus"), "0\n"),
            (&format!("{net}/lo/queues/rx-0/rps_cpus"), "0\n"),
        ],
    );
    // A file listed whose read fails with ENOENT: a dangling link.
    let tx = tree.join(format!("{net}/lo/queues/tx-0"));
    std::fs::create_dir_all(&tx).unwrap();
    std::os::unix::fs::symlink("nowhere", tx.join("xps_cpus")).unwrap();
}

#[test]
fn steering_masks_are_set_on_every_queue_and_put_back() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("t");
    net_machine(&tree);
    let net = paths::NET_CLASS_DIR;
    let refused = format!("{net}/eth0/queues/tx-1/xps_cpus");
    let root = simulated(
        &tree,
        Kernel {
            read_only: vec![refused.clone()],
            ..Kernel::default()
        },
    );
    let before = snapshot(&tree);
    let mut j = journal(&root, dir.path());
    let out = set_steering(&root, &mut j, "eth0", &[1]).unwrap();
    let seen: Vec<(&str, &str)> = out
        .iter()
        .map(|o| (o.target.as_str(), o.setting.as_str()))
        .collect();
    assert_eq!(
        seen,
        vec![
            ("net eth0 rx-0", "rps_cpus"),
            ("net eth0 rx-1", "rps_cpus"),
            ("net eth0 tx-0", "xps_cpus"),
            ("net eth0 tx-1", "xps_cpus"),
        ]
    );
    assert!(out.iter().all(|o| o.new == "2"));
    assert_eq!(out[0].status, KnobStatus::Set { old: "0".into() });
    // The kernel's padded mask of the same CPUs is already the setting.
    assert_eq!(out[1].status, KnobStatus::AlreadySet);
    assert_eq!(out[2].status, KnobStatus::Set { old: "f".into() });
    assert!(out[3].refused(), "{:?}", out[3]);
    let read = |rel: &str| std::fs::read_to_string(tree.join(rel)).unwrap();
    assert_eq!(read(&format!("{net}/eth0/queues/rx-0/rps_cpus")), "2");
    assert_eq!(read(&format!("{net}/eth0/queues/tx-0/xps_cpus")), "2");
    // lo's transmit queue cannot steer: said, its receive queue still set.
    let out = set_steering(&root, &mut j, "lo", &[0, 1]).unwrap();
    assert_eq!(out[0].status, KnobStatus::Set { old: "0".into() });
    assert_eq!(out[0].new, "3");
    assert!(
        out[1]
            .line()
            .contains("REFUSED: ENOENT (the device does not steer transmits")
    );
    assert!(matches!(
        set_steering(&root, &mut j, "wlan9", &[0]),
        Err(TuneError::Invalid { .. })
    ));
    let report = j.replay_and_close();
    assert!(report.ok(), "{:?} {:?}", report.undone, report.refused);
    assert_eq!(snapshot(&tree), before);
}

#[test]
fn the_run_applies_thread_cpus_and_steering_after_priorities() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("t");
    net_machine(&tree);
    fake::add_task(&tree, 50, "app-rx", 1, "0-3");
    let root = simulated(&tree, Kernel::default());
    let before = snapshot(&tree);
    let mut j = journal(&root, dir.path());
    let plan = TuningSpec {
        thread_sched: vec![(
            "app-rx".into(),
            Sched {
                policy: Policy::Fifo,
                priority: 3,
            },
        )],
        thread_affinity: vec![("app-rx".into(), vec![2]), ("nosuch".into(), vec![2])],
        net_steering: vec![("eth0".into(), vec![3])],
        ..TuningSpec::default()
    };
    let (out, problems) = apply(&root, &mut j, &plan);
    let settings: Vec<&str> = out.iter().map(|o| o.setting.as_str()).collect();
    assert_eq!(
        settings,
        vec![
            "scheduling",
            "affinity",
            "rps_cpus",
            "rps_cpus",
            "xps_cpus",
            "xps_cpus"
        ]
    );
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with("threads.affinity: no thread name matches `nosuch`"));
    j.replay_and_close();
    assert_eq!(snapshot(&tree), before);
}

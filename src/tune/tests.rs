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

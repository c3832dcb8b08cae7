use super::*;
use crate::fake;
use crate::paths;

fn machine() -> (tempfile::TempDir, SysRoot) {
    let tree = tempfile::tempdir().unwrap();
    fake::base_machine(tree.path());
    let root = SysRoot::at(tree.path());
    (tree, root)
}

#[test]
fn a_live_journal_is_left_alone_and_a_dead_one_replayed() {
    let (tree, root) = machine();
    let jdir = crate::fake::journal_dir();
    let mut j = Journal::open(&root, jdir.path(), "run-1.journal", Owner::Run).unwrap();
    assert_eq!(
        j.set("proc/sys/vm/stat_interval", "10").unwrap().as_deref(),
        Some("1")
    );
    // Same value again: nothing written, nothing journalled.
    assert_eq!(j.set("proc/sys/vm/stat_interval", "10").unwrap(), None);
    // Held by a live owner: restore skips it and says why.
    let r = restore_all(&root, jdir.path(), None);
    assert!(r.undone.is_empty());
    assert!(r.skipped[0].contains("still running"), "{:?}", r.skipped);
    // A second writer cannot take it either.
    assert!(matches!(
        Journal::open(&root, jdir.path(), "run-1.journal", Owner::Run),
        Err(JournalError::Busy(_))
    ));
    drop(j); // the owner dies without restoring
    let r = restore_all(&root, jdir.path(), Some(Owner::Run));
    assert!(r.ok());
    assert_eq!(r.undone[0].detail, "10 -> 1");
    let now = std::fs::read_to_string(tree.path().join("proc/sys/vm/stat_interval")).unwrap();
    assert_eq!(now, "1");
    assert!(find(&root, jdir.path()).is_empty());
}

#[test]
fn owners_are_restored_separately_and_other_boots_are_discarded() {
    let (tree, root) = machine();
    let jdir = crate::fake::journal_dir();
    let mut j = Journal::open(&root, jdir.path(), PARTITION_FILE, Owner::Partition).unwrap();
    j.set("proc/sys/kernel/timer_migration", "0").unwrap();
    drop(j);
    // A run's recovery does not touch the partition.
    assert!(
        restore_all(&root, jdir.path(), Some(Owner::Run))
            .undone
            .is_empty()
    );
    assert_eq!(find(&root, jdir.path()).len(), 1);
    // After a reboot the journal is stale: discarded, nothing written.
    std::fs::write(
        tree.path().join("proc/sys/kernel/random/boot_id"),
        "another-boot\n",
    )
    .unwrap();
    let r = restore_all(&root, jdir.path(), None);
    assert!(r.undone[0].detail.contains("before the last reboot"));
    let now = std::fs::read_to_string(tree.path().join("proc/sys/kernel/timer_migration")).unwrap();
    assert_eq!(now, "0");
    assert!(find(&root, jdir.path()).is_empty());
}

#[test]
fn a_value_that_cannot_be_written_back_keeps_the_journal() {
    let (tree, root) = machine();
    let jdir = crate::fake::journal_dir();
    let mut j = Journal::open(&root, jdir.path(), "run-2.journal", Owner::Run).unwrap();
    j.set("proc/sys/vm/stat_interval", "10").unwrap();
    drop(j);
    // The knob became a directory: the write back fails.
    let knob = tree.path().join("proc/sys/vm/stat_interval");
    std::fs::remove_file(&knob).unwrap();
    std::fs::create_dir(&knob).unwrap();
    let r = restore_all(&root, jdir.path(), None);
    assert!(!r.ok());
    assert_eq!(r.failures().count(), 1);
    assert_eq!(find(&root, jdir.path()).len(), 1, "kept for a later retry");
}

fn header_line() -> String {
    serde_json::to_string(&Header {
        journal: FORMAT.into(),
        owner: Owner::Run,
        pid: 999_999,
        boot_id: String::new(),
        created: "2026-11-22T00:00:00Z".into(),
        command: "rtlab run".into(),
    })
    .unwrap()
}

fn write_journal(dir: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("run-999999.journal");
    std::fs::write(&path, format!("{}\n{body}", header_line())).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

const MOUNTS: &str = "cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\n\
                          cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n";

#[test]
fn hostile_journals_are_refused_whole_and_left_in_place() {
    let (tree, root) = machine();
    std::fs::create_dir_all(tree.path().join("proc/self")).unwrap();
    std::fs::write(tree.path().join("proc/self/mounts"), MOUNTS).unwrap();
    std::fs::write(tree.path().join("proc/sys/vm/stat_interval"), "10").unwrap();
    let good = r#"{"change":"write","path":"proc/sys/vm/stat_interval","old":"1","new":"10"}"#;
    let hostile = [
        r#"{"change":"write","path":"etc/passwd","old":"root::0:0::/:/bin/sh","new":"x"}"#,
        r#"{"change":"write","path":"proc/sys/../../etc/shadow","old":"x","new":"y"}"#,
        r#"{"change":"write","path":"sys//kernel","old":"x","new":"y"}"#,
        r#"{"change":"write","path":"proc/1/oom_score_adj","old":"x","new":"y"}"#,
        r#"{"change":"write","path":"proc/sys/kernel/core_pattern","old":"|/tmp/x","new":"core"}"#,
        r#"{"change":"write","path":"sys/devices/system/cpu/cpu1/online","old":"0","new":"1"}"#,
        r#"{"change":"write","path":"sys/power/state","old":"mem","new":"x"}"#,
        r#"{"change":"write","path":"sys/fs/cgroup/unified/user.slice/cgroup.kill","old":"1","new":"0"}"#,
        r#"{"change":"tracking_cgroup","path":"sys/fs/cgroup/unified/user.slice"}"#,
        r#"{"change":"tracking_cgroup","path":"sys/fs/cgroup/unified/rtlab-12/x"}"#,
        r#"{"change":"tracking_cgroup","path":"tmp/rtlab-12"}"#,
        r#"{"change":"mkdir","path":"sys/fs/cgroup/cpuset/system.slice","tasks_file":"tasks"}"#,
        r#"{"change":"mkdir","path":"sys/fs/cgroup/cpuset/rt","tasks_file":"../../x"}"#,
        r#"{"change":"mkdir","path":"sys/fs/cgroup/cpuset/rt/../user.slice","tasks_file":"tasks"}"#,
        r#"{"change":"write","path":"sys/fs/cgroup/cpuset/rt/../../../../proc/sys/kernel/core_pattern","old":"|x","new":"core"}"#,
        r#"{"change":"move_tasks","from":"sys/fs/cgroup/cpuset","to":"sys/fs/cgroup/cpuset/other","tasks_file":"tasks","tasks":[]}"#,
        r#"{"change":"enable_controller","path":"sys/fs/cgroup/unified/cgroup.subtree_control","controller":"memory"}"#,
        r#"{"change":"sched","tid":-1,"start":0,"name":"x","old":{"policy":"other","priority":0},"new":{"policy":"fifo","priority":1}}"#,
        "this is not json",
    ];
    for bad in hostile {
        let jdir = crate::fake::journal_dir();
        // A good change first: it must not be replayed either.
        let path = write_journal(jdir.path(), &format!("{good}\n{bad}\n"));
        let r = restore_all(&root, jdir.path(), None);
        assert!(r.undone.is_empty(), "{bad}: {:?}", r.undone);
        assert_eq!(r.refused.len(), 1, "{bad}: {:?}", r.refused);
        assert!(r.refused[0].contains("line 3"), "{}", r.refused[0]);
        assert!(!r.ok());
        assert!(path.exists(), "left in place");
        let now = std::fs::read_to_string(tree.path().join("proc/sys/vm/stat_interval"));
        assert_eq!(now.unwrap(), "10", "{bad}: nothing replayed");
    }
    // The same journal without the hostile line is replayed, and a last
    // line cut short by a crash is skipped.
    let jdir = crate::fake::journal_dir();
    write_journal(jdir.path(), &format!("{good}\n{{\"change\":\"wri"));
    let r = restore_all(&root, jdir.path(), None);
    assert!(r.ok(), "{:?}", r.refused);
    assert_eq!(r.undone[0].detail, "10 -> 1");
}

#[test]
fn a_journal_must_be_a_plain_file_of_ours_with_a_header() {
    use std::os::unix::fs::PermissionsExt;
    let (tree, root) = machine();
    std::fs::write(tree.path().join("proc/sys/vm/stat_interval"), "10").unwrap();
    let good = r#"{"change":"write","path":"proc/sys/vm/stat_interval","old":"1","new":"10"}"#;
    let jdir = crate::fake::journal_dir();
    // A FIFO: refused at once, never waited on.
    let fifo = jdir.path().join("fifo.journal");
    crate::fake::mkfifo(&fifo);
    // A link to a journal elsewhere.
    let elsewhere = crate::fake::journal_dir();
    let real = write_journal(elsewhere.path(), &format!("{good}\n"));
    std::os::unix::fs::symlink(&real, jdir.path().join("link.journal")).unwrap();
    // Writable by others.
    let open = jdir.path().join("open.journal");
    std::fs::write(&open, format!("{}\n{good}\n", header_line())).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o666)).unwrap();
    // No header, a header of another version.
    let p = jdir.path().join("noheader.journal");
    std::fs::write(&p, format!("{good}\n")).unwrap();
    let p = jdir.path().join("v2.journal");
    std::fs::write(
        &p,
        format!(
            "{}\n{good}\n",
            header_line().replace(FORMAT, "rtlab-journal/2")
        ),
    )
    .unwrap();
    let r = restore_all(&root, jdir.path(), None);
    assert!(r.undone.is_empty(), "{:?}", r.undone);
    assert_eq!(r.refused.len(), 5, "{:#?}", r.refused);
    let all = r.refused.join("\n");
    for why in [
        "not a regular file",
        "mode 0666",
        "not a journal header",
        "rtlab-journal/2",
    ] {
        assert!(all.contains(why), "{why}: {all}");
    }
    assert_eq!(
        std::fs::read_to_string(tree.path().join("proc/sys/vm/stat_interval")).unwrap(),
        "10"
    );
}

#[test]
fn a_journal_directory_others_can_reach_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let (tree, root) = machine();
    std::fs::write(tree.path().join("proc/sys/vm/stat_interval"), "10").unwrap();
    let jdir = crate::fake::journal_dir();
    write_journal(
        jdir.path(),
        "{\"change\":\"write\",\"path\":\"proc/sys/vm/stat_interval\",\"old\":\"1\",\"new\":\"10\"}\n",
    );
    for mode in [0o755, 0o770, 0o1777] {
        std::fs::set_permissions(jdir.path(), std::fs::Permissions::from_mode(mode)).unwrap();
        let r = restore_all(&root, jdir.path(), None);
        assert!(r.undone.is_empty());
        assert!(r.refused[0].contains("group or others"), "{:?}", r.refused);
        assert!(matches!(
            Journal::open(&root, jdir.path(), "run-1.journal", Owner::Run),
            Err(JournalError::Untrusted(_))
        ));
    }
    // A link to a good directory is refused too.
    std::fs::set_permissions(jdir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let holder = tempfile::tempdir().unwrap();
    let link = holder.path().join("j");
    std::os::unix::fs::symlink(jdir.path(), &link).unwrap();
    let r = restore_all(&root, &link, None);
    assert!(r.refused[0].contains("symbolic link"), "{:?}", r.refused);
    assert_eq!(
        std::fs::read_to_string(tree.path().join("proc/sys/vm/stat_interval")).unwrap(),
        "10"
    );
}

#[test]
fn trace_changes_are_only_rtlabs_instance_and_mount() {
    let mounts: Vec<String> = Vec::new();
    let instance = |path: &str| check_change(&Change::TraceInstance { path: path.into() }, &mounts);
    assert!(instance("sys/kernel/tracing/instances/rtlab-4242").is_ok());
    assert!(instance(concat!("/", "sys/kernel/debug/tracing/instances/rtlab-7")).is_ok());
    for bad in [
        "sys/kernel/tracing/instances/other",
        "sys/kernel/tracing/instances/rtlab-",
        "sys/kernel/tracing/instances/rtlab-1/../../x",
        "sys/kernel/tracing",
        "proc/sys/kernel/core_pattern",
    ] {
        assert!(instance(bad).is_err(), "{bad}");
    }
    let mount = |path: &str| check_change(&Change::MountTracefs { path: path.into() }, &mounts);
    assert!(mount("sys/kernel/tracing").is_ok());
    assert!(mount(concat!("/", "sys/kernel/tracing")).is_ok());
    assert!(mount("tmp/x").is_err());
    assert!(mount("sys/kernel/debug").is_err());
}

#[test]
fn undoing_a_gone_instance_or_an_unmounted_tracefs_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = SysRoot::at(dir.path());
    std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
    std::fs::write(
        dir.path().join("proc/self/mounts"),
        "proc /proc proc rw 0 0\n",
    )
    .unwrap();
    let gone = undo(
        &root,
        &Change::TraceInstance {
            path: "sys/kernel/tracing/instances/rtlab-1".into(),
        },
    );
    assert!(gone.ok, "{gone:?}");
    let unmounted = undo(
        &root,
        &Change::MountTracefs {
            path: "sys/kernel/tracing".into(),
        },
    );
    assert!(
        unmounted.ok && unmounted.detail == UNCHANGED,
        "{unmounted:?}"
    );
    // Where tracefs is mounted, an instance that exists is removed...
    let mounts = |text: &str| std::fs::write(dir.path().join("proc/self/mounts"), text).unwrap();
    mounts("proc /proc proc rw 0 0\ntracefs /sys/kernel/tracing tracefs rw 0 0\n");
    let inst = dir.path().join("sys/kernel/tracing/instances/rtlab-2");
    std::fs::create_dir_all(&inst).unwrap();
    let instance = |path: &str| undo(&root, &Change::TraceInstance { path: path.into() });
    let removed = instance("sys/kernel/tracing/instances/rtlab-2");
    assert!(removed.ok && !inst.exists(), "{removed:?}");
    // ...and found where tracefs is mounted now, when it moved.
    mounts("tracefs /mnt/t tracefs rw 0 0\n");
    let moved = dir.path().join("mnt/t/instances/rtlab-3");
    std::fs::create_dir_all(&moved).unwrap();
    let found = instance("sys/kernel/tracing/instances/rtlab-3");
    assert!(found.ok && !moved.exists(), "{found:?}");
    // Mounted nowhere, on a kernel that has tracefs: root mounts it (the
    // real tracefs, here on the fake tree) to look, and unmounts it after;
    // anyone else cannot look, and the journal keeps the entry.
    mounts("proc /proc proc rw 0 0\n");
    std::fs::write(dir.path().join("proc/filesystems"), "nodev\ttracefs\n").unwrap();
    let at = dir.path().join("sys/kernel/tracing");
    std::fs::create_dir_all(&at).unwrap();
    let unseen = instance("sys/kernel/tracing/instances/rtlab-4");
    let real_mounts = || SysRoot::real().read("proc/self/mounts").unwrap();
    if crate::os::geteuid() == 0 && crate::trace::available(&SysRoot::real()) {
        assert!(unseen.ok && unseen.detail == UNCHANGED, "{unseen:?}");
        assert!(
            !real_mounts().contains(&*at.to_string_lossy()),
            "left mounted"
        );
    } else {
        assert!(!unseen.ok, "{unseen:?}");
        assert!(unseen.detail.contains("journal keeps it"), "{unseen:?}");
    }
}

/// Kernel files that make the kernel run a program (or crash the machine)
/// when written: none may be named by a journal, wherever it sits.
const PROGRAM_RUNNERS: [&str; 12] = [
    "release_agent",
    "notify_on_release",
    "trigger",
    "core_pattern",
    "modprobe",
    "uevent_helper",
    "hotplug",
    "poweroff_cmd",
    "reboot_cmd",
    "uevent",
    "sysrq-trigger",
    "request_key",
];

/// What the trust rules say of a journal's write to `path`.
fn check_write(path: &str, mounts: &[String]) -> Result<(), String> {
    check_change(
        &Change::Write {
            path: path.into(),
            old: "x".into(),
            new: "y".into(),
        },
        mounts,
    )
}

#[test]
fn no_file_that_runs_a_program_is_accepted_anywhere() {
    let mounts: Vec<String> = vec![
        "sys/fs/cgroup/cpuset".into(),
        "sys/fs/cgroup/cpu,cpuacct".into(),
        "sys/fs/cgroup".into(),
    ];
    let write = |path: &str| check_write(path, &mounts);
    // Every directory holding a file rtlab writes, and the cgroup trees.
    let dirs = [
        "proc/sys/kernel",
        "proc/sys/vm",
        "proc/sys",
        "proc",
        "proc/irq",
        "proc/irq/5",
        "sys/kernel",
        "sys/devices/virtual/workqueue",
        "sys/devices/virtual/workqueue/writeback",
        "sys/bus/workqueue/devices/writeback",
        "sys/devices/system/machinecheck",
        "sys/devices/system/machinecheck/machinecheck0",
        "sys/devices/system/cpu",
        "sys/devices/system/cpu/cpu1",
        "sys/devices/system/cpu/cpu1/cpuidle/state2",
        "sys/devices/system/cpu/cpufreq",
        "sys/devices/system/cpu/cpufreq/policy0",
        "sys/fs/cgroup/cpuset",
        "sys/fs/cgroup/cpuset/rt",
        "sys/fs/cgroup/cpuset/nrt",
        "sys/fs/cgroup/cpu,cpuacct/rtlab-42",
        "sys/fs/cgroup/cpu,cpuacct/rtlab-42/g0",
        "sys/fs/cgroup",
        "sys/fs/cgroup/rt",
    ];
    for dir in dirs {
        for file in PROGRAM_RUNNERS {
            let path = format!("{dir}/{file}");
            assert!(write(&path).is_err(), "{path} was accepted");
            assert!(write(&format!("/{path}")).is_err(), "/{path} was accepted");
        }
    }
}

#[test]
fn the_knobs_rtlab_writes_are_accepted_by_name() {
    let mounts: Vec<String> = vec!["sys/fs/cgroup/cpuset".into(), "sys/fs/cgroup".into()];
    let write = |path: &str| check_write(path, &mounts);
    for ok in [
        paths::WATCHDOG_CPUMASK,
        paths::TIMER_MIGRATION,
        paths::STAT_INTERVAL,
        paths::DEFAULT_SMP_AFFINITY,
        paths::WORKQUEUE_CPUMASK,
        paths::WRITEBACK_NUMA,
        "proc/irq/17/smp_affinity_list",
        "proc/irq/17/smp_affinity",
        "sys/devices/virtual/workqueue/writeback/cpumask",
        "sys/devices/system/machinecheck/machinecheck3/check_interval",
        "sys/devices/system/cpu/cpufreq/policy2/scaling_governor",
        "sys/devices/system/cpu/cpu1/cpuidle/state3/disable",
        "sys/fs/cgroup/cpuset/cpuset.sched_load_balance",
        "sys/fs/cgroup/cpuset/sched_load_balance",
        // `rtlab fix`: packet steering, and RT throttling lifted on request.
        "sys/class/net/lo/queues/rx-0/rps_cpus",
        "sys/class/net/eth0/queues/tx-12/xps_cpus",
        paths::SCHED_RT_RUNTIME,
    ] {
        assert!(write(ok).is_ok(), "{ok}: {:?}", write(ok));
    }
    for bad in [
        "proc/irq/x/smp_affinity_list",
        "proc/irq/17/spurious",
        "sys/devices/system/machinecheck/machinecheck0/tolerant",
        "sys/devices/system/machinecheck/other/check_interval",
        "sys/devices/system/cpu/cpufreq/policy2/scaling_max_freq",
        "sys/devices/system/cpu/cpu1/cpuidle/state3/extra/disable",
        "sys/devices/system/cpu/cpu1/online",
        "sys/fs/cgroup/cpuset/cpuset.cpus",
        "sys/fs/cgroup/cpuset/rt/cpuset.sched_load_balance",
        "sys/fs/cgroup/cpuset/cgroup.procs",
        "proc/sys/kernel/sched_rt_period_us",
        "sys/class/net/lo/queues/rx-0/rps_flow_cnt",
        "sys/class/net/lo/queues/tx-0/rps_cpus",
        "sys/class/net/lo/queues/rx-x/rps_cpus",
        "sys/class/net/lo/mtu",
        "sys/class/net/.hidden/queues/rx-0/rps_cpus",
    ] {
        assert!(write(bad).is_err(), "{bad} was accepted");
    }
}

#[test]
fn a_staged_output_is_named_exactly_and_removed_only_if_it_is_rtlabs() {
    let staged = |path: &str| check_change(&Change::StagedFile { path: path.into() }, &[]);
    assert!(staged("/var/lib/rtlab/.rtlab-4242-0.tmp").is_ok());
    assert!(staged("/var/lib/rtlab/.rtlab-4242-0-00ff00ff00ff00ff.tmp").is_ok());
    for bad in [
        ".rtlab-4242-0-00ff.tmp",
        ".rtlab-4242-0-zzzzzzzzzzzzzzzz.tmp",
        ".rtlab-4242-x.tmp",
    ] {
        assert!(staged(&format!("/var/lib/rtlab/{bad}")).is_err(), "{bad}");
    }
    for bad in [
        "var/lib/rtlab/.rtlab-4242-0.tmp",
        "/var/lib/../etc/.rtlab-1-0.tmp",
        "/etc/passwd",
        "/x/.rtlab-1-0.tmp.x",
        "/x/.rtlab--0.tmp",
        "/x/.rtlab-1-.tmp",
        "/x//.rtlab-1-0.tmp",
    ] {
        assert!(staged(bad).is_err(), "{bad} was accepted");
    }
    let dir = tempfile::tempdir().unwrap();
    let root = SysRoot::at(dir.path());
    let undo_at = |name: &str| {
        undo(
            &root,
            &Change::StagedFile {
                path: dir.path().join(name).to_string_lossy().into(),
            },
        )
    };
    // Its own file: removed; then gone.
    std::fs::write(dir.path().join(".rtlab-1-0.tmp"), "partial").unwrap();
    let u = undo_at(".rtlab-1-0.tmp");
    assert!(u.ok && u.detail == "removed", "{u:?}");
    assert!(!dir.path().join(".rtlab-1-0.tmp").exists());
    assert_eq!(undo_at(".rtlab-1-0.tmp").detail, UNCHANGED);
    // A link planted at the name: left, and so is what it points to.
    std::fs::write(dir.path().join("victim"), "precious").unwrap();
    std::os::unix::fs::symlink(dir.path().join("victim"), dir.path().join(".rtlab-1-1.tmp"))
        .unwrap();
    let u = undo_at(".rtlab-1-1.tmp");
    assert!(u.ok && u.detail.starts_with("left in place"), "{u:?}");
    assert!(dir.path().join(".rtlab-1-1.tmp").symlink_metadata().is_ok());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("victim")).unwrap(),
        "precious"
    );
}

#[test]
fn a_journal_killed_before_it_had_its_name_is_removed_once_its_process_is_gone() {
    let (tree, root) = machine();
    let jdir = crate::fake::journal_dir();
    use std::os::unix::fs::PermissionsExt;
    let header = "{\"journal\":\"rtlab-journal/1\",\"owner\":\"run\",\"pid\":4242}\n";
    let unborn = |name: &str, text: &str| {
        let p = jdir.path().join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        p
    };
    // Dead (no /proc/4242 in the fake tree): header only, or nothing.
    let dead = unborn(".run-4242.journal.4242", header);
    let empty = unborn(".run-4243.journal.4243", "");
    // Alive: its process is in the tree.
    std::fs::create_dir_all(tree.path().join("proc/4244")).unwrap();
    std::fs::write(
        tree.path().join("proc/4244/stat"),
        "4244 (rtlab) S 1 4244 4244 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0",
    )
    .unwrap();
    let alive = unborn(".run-4244.journal.4244", header);
    // More than a header: not one that never had its name.
    let more = unborn(
        ".run-4245.journal.4245",
        &format!("{header}{{\"change\":\"x\"}}\n"),
    );
    // Not a journal's temporary name.
    let other = unborn(".something.4246", "");
    let _ = restore_all(&root, jdir.path(), Some(Owner::Run));
    assert!(!dead.exists() && !empty.exists());
    assert!(alive.exists() && more.exists() && other.exists());
}

#[test]
fn a_thread_gets_its_cpus_back_only_if_it_is_the_same_thread() {
    let tree = tempfile::tempdir().unwrap();
    let (root, kernel) = fake::v1_machine(tree.path(), fake::Kernel::default());
    // sshd (100, started at 1100) was moved to CPU 0; TID 101 is another
    // task than the one journalled (its start time differs).
    fake::add_task(tree.path(), 100, "sshd", 1, "0");
    let jdir = fake::journal_dir();
    let mut j = Journal::open(&root, jdir.path(), "fix-1.journal", Owner::Run).unwrap();
    for (tid, start) in [(100, 1100), (101, 7)] {
        j.record(&Change::Affinity {
            tid,
            start,
            name: "x".into(),
            old: "0-3".into(),
            new: "0".into(),
        })
        .unwrap();
    }
    drop(j);
    let r = restore_all(&root, jdir.path(), Some(Owner::Run));
    assert!(r.ok(), "{r:?}");
    assert_eq!(
        *kernel.affinity_calls.lock().unwrap(),
        vec![(100, vec![0, 1, 2, 3])]
    );
    assert_eq!(r.undone[0].detail, "ended (nothing to restore)");
    assert_eq!(r.undone[1].detail, "0 -> 0-3");
}

#[test]
fn kept_changes_are_handed_over_to_a_journal_only_restore_replays() {
    let (tree, root) = machine();
    let jdir = fake::journal_dir();
    let mut j = Journal::open(&root, jdir.path(), "fix-1.journal", Owner::Run).unwrap();
    // One change tried and undone, one kept.
    j.set(paths::STAT_INTERVAL, "10").unwrap();
    j.set(paths::STAT_INTERVAL, "1").unwrap();
    j.set(paths::TIMER_MIGRATION, "0").unwrap();
    let kept = [Change::Write {
        path: paths::TIMER_MIGRATION.into(),
        old: "1".into(),
        new: "0".into(),
    }];
    let path = j
        .hand_over("fix-kept-1.journal", Owner::Tune, &kept)
        .unwrap();
    assert!(!jdir.path().join("fix-1.journal").exists());
    let (header, changes) = read(&root, &path).unwrap();
    assert_eq!((header.owner, changes), (Owner::Tune, kept.to_vec()));
    // The next run leaves it; restore puts the value back.
    assert!(
        restore_all(&root, jdir.path(), Some(Owner::Run))
            .undone
            .is_empty()
    );
    let knob = tree.path().join(paths::TIMER_MIGRATION);
    assert_eq!(std::fs::read_to_string(&knob).unwrap(), "0");
    assert!(restore_all(&root, jdir.path(), None).ok());
    assert_eq!(std::fs::read_to_string(&knob).unwrap(), "1");
    assert!(find(&root, jdir.path()).is_empty());
}

//! The causes and the proposals, each against a truth built by hand:
//! explanations whose parts are known, facts of a made-up machine (the
//! proof's tests are in `proof_tests.rs`).

use super::causes::{Target, causes};
use super::facts::{Facts, IdleFact, IrqFact, ThreadFact};
use super::remedies::{Action, Check, Options, Proposal, propose};
use super::{RemedyClass, with_main_keys};
use crate::trace::explain::analyze::{Explanation, Part, PartKind};
use std::collections::BTreeMap;

fn part(
    kind: PartKind,
    what: &str,
    pid: Option<i32>,
    prio: Option<i32>,
    ns: u64,
    before_wake: bool,
) -> Part {
    Part {
        kind,
        what: what.into(),
        pid,
        prio,
        ns,
        before_wake,
        inferred_ns: 0,
    }
}

fn stack(pid: i32, frames: &[&str]) -> crate::trace::explain::analyze::KernelStack {
    crate::trace::explain::analyze::KernelStack {
        comm: "perl".into(),
        pid,
        at: "switch".into(),
        after_deadline_ns: 0,
        frames: frames.iter().map(|f| f.to_string()).collect(),
    }
}

fn explanation(parts: Vec<Part>) -> Explanation {
    Explanation {
        timer: 0,
        sample: 1,
        cpu: 1,
        deadline_ns: 1_000,
        latency_ns: parts.iter().map(|p| p.ns).sum(),
        woken_after_ns: None,
        wake_to_switch_ns: None,
        parts,
        cause: String::new(),
        events: 10,
        trace_file: None,
        trace_text: None,
        timeline: Vec::new(),
        stacks: Vec::new(),
        cpus_at_deadline: Vec::new(),
    }
}

/// A thread whose nature the machine cannot say (it has ended): its
/// name is all there is.
fn unknown(_: i32) -> Option<bool> {
    None
}

/// A run's explanations with one of each kind of cause.
fn explanations() -> Vec<Explanation> {
    vec![
        explanation(vec![
            part(
                PartKind::Thread,
                "rtlab-hog",
                Some(500),
                Some(4),
                900_000,
                false,
            ),
            part(
                PartKind::Irq,
                "IRQ 38 virtio2-input.0",
                None,
                None,
                5_000,
                false,
            ),
            part(
                PartKind::TimerThread,
                "rtlab-timer0",
                Some(600),
                Some(9),
                3_000,
                false,
            ),
        ]),
        explanation(vec![
            part(
                PartKind::Thread,
                "rtlab-hog",
                Some(500),
                Some(4),
                800_000,
                false,
            ),
            part(
                PartKind::Softirq,
                "softirq NET_RX",
                None,
                None,
                40_000,
                false,
            ),
        ]),
        Explanation {
            stacks: vec![stack(
                700,
                &[
                    "__schedule",
                    "__cond_resched",
                    "s_show",
                    "seq_read_iter",
                    "proc_reg_read_iter",
                    "vfs_read",
                ],
            )],
            ..explanation(vec![
                part(
                    PartKind::TimerLate,
                    "timer interrupt late (CPU busy with softirq NET_RX)",
                    None,
                    None,
                    30_000,
                    true,
                ),
                part(
                    PartKind::Unseen,
                    "unseen after the wake-up: the kernel's way back from an interrupt, a hypervisor, or a non-preemptible section (perl held the CPU)",
                    Some(700),
                    Some(120),
                    200_000,
                    false,
                ),
                part(
                    PartKind::Irq,
                    "local timer interrupt",
                    None,
                    None,
                    4_000,
                    true,
                ),
                part(
                    PartKind::Thread,
                    "kworker/u4:1 (work flush)",
                    Some(800),
                    Some(120),
                    10_000,
                    false,
                ),
            ])
        },
        explanation(vec![
            part(
                PartKind::TimerLateIdle,
                "timer interrupt late, CPU idle",
                None,
                None,
                100_000,
                true,
            ),
            part(
                PartKind::HeldOff,
                "held off though runnable",
                None,
                None,
                50_000,
                false,
            ),
            part(
                PartKind::Unseen,
                "unseen: interrupt delivery, a hypervisor, SMI or NMI without a tracepoint, or interrupts off",
                None,
                None,
                20_000,
                true,
            ),
            part(PartKind::Unknown, "unknown", None, None, 7_000, true),
        ]),
    ]
}

fn find<'a>(cs: &'a [super::Cause], t: &Target) -> &'a super::Cause {
    cs.iter()
        .find(|c| &c.target == t)
        .unwrap_or_else(|| panic!("no cause {t:?} in {cs:?}"))
}

#[test]
fn causes_group_parts_by_what_a_remedy_acts_on() {
    let cs = causes(&explanations(), &unknown);
    let hog = find(&cs, &Target::Thread { pid: 500 });
    assert_eq!(
        (hog.class, hog.spikes, hog.main_cause, hog.total_ns),
        (RemedyClass::Thread, 2, 2, 1_700_000)
    );
    assert_eq!(hog.prio, Some(4));
    let irq = find(&cs, &Target::Irq { irq: 38 });
    assert_eq!(
        (irq.class, irq.spikes, irq.main_cause),
        (RemedyClass::Irq, 1, 0)
    );
    // NET_RX as a softirq and as what the CPU was busy with: one cause.
    let net = find(
        &cs,
        &Target::Softirq {
            name: "NET_RX".into(),
        },
    );
    assert_eq!(
        (net.class, net.spikes, net.total_ns),
        (RemedyClass::Net, 2, 70_000)
    );
    let perl = find(&cs, &Target::Thread { pid: 700 });
    assert_eq!(
        (perl.class, perl.what.as_str(), perl.main_cause),
        (RemedyClass::Thread, "perl", 1)
    );
    assert!(perl.seen_as.contains(&PartKind::Unseen));
    assert_eq!(
        find(&cs, &Target::Thread { pid: 800 }).class,
        RemedyClass::Workqueue
    );
    assert_eq!(
        find(
            &cs,
            &Target::Interrupt {
                name: "local timer interrupt".into()
            }
        )
        .class,
        RemedyClass::Tick
    );
    assert_eq!(find(&cs, &Target::Idle).class, RemedyClass::Idle);
    assert_eq!(find(&cs, &Target::HeldOff).class, RemedyClass::RtThrottling);
    assert_eq!(find(&cs, &Target::Unseen).class, RemedyClass::Host);
    // The timer thread's own time and time before the first event are no cause.
    assert!(
        cs.iter()
            .all(|c| c.what != "rtlab-timer0" && c.what != "unknown")
    );
    // Costliest first.
    assert!(cs.windows(2).all(|w| w[0].total_ns >= w[1].total_ns));
}

fn thread(comm: &str, cpus: &[usize], sched: &str) -> ThreadFact {
    ThreadFact {
        comm: comm.into(),
        tgid: 1,
        start: 42,
        kernel: false,
        affinity_fixed: false,
        cpus: cpus.to_vec(),
        sched: sched.into(),
    }
}

/// A 4-CPU machine measuring CPUs 2-3, with FIFO 90 timers (kernel prio 9).
fn facts() -> Facts {
    let mut f = Facts {
        measured: vec![2, 3],
        housekeeping: vec![0, 1],
        timer_prio: Some(9),
        cmdline: "quiet rcu_nocbs=2-3".into(),
        preemption: "PREEMPT_DYNAMIC (voluntary)".into(),
        virtual_machine: true,
        rt_runtime_us: Some(950_000),
        ..Facts::default()
    };
    f.threads.insert(500, thread("rtlab-hog", &[2], "FIFO 95"));
    f.threads
        .insert(700, thread("perl", &[0, 1, 2, 3], "OTHER 0"));
    f.irqs.insert(
        38,
        IrqFact {
            affinity: vec![0, 1, 2, 3],
            effective: Some(vec![3]),
        },
    );
    f.steering = vec![
        (
            "lo".into(),
            "rx-0".into(),
            "sys/class/net/lo/queues/rx-0/rps_cpus".into(),
            "c".into(),
        ),
        (
            "eth0".into(),
            "rx-0".into(),
            "sys/class/net/eth0/queues/rx-0/rps_cpus".into(),
            "0".into(),
        ),
        (
            "eth0".into(),
            "tx-0".into(),
            "sys/class/net/eth0/queues/tx-0/xps_cpus".into(),
            "f".into(),
        ),
    ];
    f.idle = vec![IdleFact {
        cpu: 2,
        name: "C6".into(),
        latency_us: 133,
        disabled: false,
        file: "sys/devices/system/cpu/cpu2/cpuidle/state3/disable".into(),
    }];
    f.workqueue_masks = vec![("sys/devices/virtual/workqueue/cpumask".into(), "f".into())];
    f
}

fn by_class(ps: &[Proposal], class: RemedyClass) -> Vec<&Proposal> {
    ps.iter().filter(|p| p.class == class).collect()
}

#[test]
fn each_thread_irq_and_net_cause_gets_its_remedy() {
    let ps = propose(
        &causes(&explanations(), &unknown),
        &facts(),
        &Options::default(),
    );
    let threads = by_class(&ps, RemedyClass::Thread);
    let hog = threads
        .iter()
        .find(|p| p.change.starts_with("rtlab-hog"))
        .unwrap();
    assert_eq!(
        hog.actions,
        vec![Action::Affinity {
            tid: 500,
            start: 42,
            name: "rtlab-hog".into(),
            cpus: vec![0, 1]
        }]
    );
    assert!(
        hog.change.contains("at or above its priority"),
        "{}",
        hog.change
    );
    let perl = threads
        .iter()
        .find(|p| p.change.starts_with("perl"))
        .unwrap();
    // It may keep the housekeeping CPUs it had.
    assert!(matches!(&perl.actions[..], [Action::Affinity { cpus, .. }] if cpus == &vec![0, 1]));
    assert!(perl.change.contains("non-real-time"), "{}", perl.change);
    let irq = &by_class(&ps, RemedyClass::Irq)[0];
    assert_eq!(
        irq.actions,
        vec![Action::Write {
            file: "proc/irq/38/smp_affinity_list".into(),
            value: "0-1".into()
        }]
    );
    assert_eq!(irq.checks, vec![Check::IrqOff { irq: 38 }]);
    // Steering: receive masks that meet the measured CPUs only; lo's c
    // (2-3) has nothing left and goes to the housekeeping CPUs; eth0's XPS
    // mask is not a softirq's (transmits run on the sender's CPU).
    let net = by_class(&ps, RemedyClass::Net);
    let steering = net
        .iter()
        .find(|p| p.change.starts_with("packet steering"))
        .unwrap();
    assert_eq!(
        steering.actions,
        vec![Action::Write {
            file: "sys/class/net/lo/queues/rx-0/rps_cpus".into(),
            value: "3".into()
        }]
    );
}

#[test]
fn each_system_cause_gets_its_remedy_or_advice() {
    let ps = propose(
        &causes(&explanations(), &unknown),
        &facts(),
        &Options::default(),
    );
    let idle = &by_class(&ps, RemedyClass::Idle)[0];
    assert_eq!(
        idle.actions,
        vec![Action::Write {
            file: "sys/devices/system/cpu/cpu2/cpuidle/state3/disable".into(),
            value: "1".into()
        }]
    );
    let wq = &by_class(&ps, RemedyClass::Workqueue)[0];
    assert_eq!(
        wq.actions,
        vec![Action::Write {
            file: "sys/devices/virtual/workqueue/cpumask".into(),
            value: "3".into()
        }]
    );
    // RT throttling: advice with its cost unless asked.
    let rt = &by_class(&ps, RemedyClass::RtThrottling)[0];
    assert!(
        !rt.live()
            && rt
                .advice
                .as_deref()
                .unwrap()
                .contains("--lift-rt-throttling")
    );
    let lifted = propose(
        &causes(&explanations(), &unknown),
        &facts(),
        &Options {
            lift_rt_throttling: true,
        },
    );
    let rt = &by_class(&lifted, RemedyClass::RtThrottling)[0];
    assert_eq!(
        rt.actions,
        vec![Action::Write {
            file: "proc/sys/kernel/sched_rt_runtime_us".into(),
            value: "-1".into()
        }]
    );
    // The tick: the exact parameters the command line lacks.
    let tick = by_class(&ps, RemedyClass::Tick)[0].advice.clone().unwrap();
    assert!(
        tick.contains("`irqaffinity=0-1 isolcpus=managed_irq,domain,2-3`"),
        "{tick}"
    );
    assert!(!tick.contains("rcu_nocbs"), "{tick}");
    // A non-preemptible section of the normal thread: the model; the FIFO
    // 95 hog above the timer thread is not in it.
    let pre = &by_class(&ps, RemedyClass::Preemption)[0];
    assert_eq!(
        pre.change,
        "non-preemptible stretches of perl (pid 700, in s_show <- seq_read_iter <- proc_reg_read_iter), kworker/u4:1 (work flush) (pid 800)"
    );
    assert!(pre.advice.as_deref().unwrap().contains("preempt=full"));
    let host = by_class(&ps, RemedyClass::Host)[0].advice.clone().unwrap();
    assert!(host.contains("no guest setting helps"), "{host}");
}

#[test]
fn threads_the_kernel_or_the_user_needs_are_never_moved() {
    let cs = causes(&explanations(), &unknown);
    let advice_for = |f: &Facts| -> String {
        let ps = propose(&cs, f, &Options::default());
        let p = ps
            .iter()
            .find(|p| p.change.starts_with("rtlab-hog"))
            .unwrap();
        assert!(!p.live(), "{p:?}");
        p.advice.clone().unwrap()
    };
    let mut f = facts();
    f.threads.get_mut(&500).unwrap().affinity_fixed = true;
    assert!(advice_for(&f).contains("kernel thread bound to its CPU"));
    let mut f = facts();
    f.protected
        .insert(500, "the task task_latency[0] measures".into());
    assert!(advice_for(&f).contains("task_latency[0]"));
    let mut f = facts();
    f.program_pids.insert(500, 2);
    assert!(advice_for(&f).contains("program[2]"));
    let mut f = facts();
    f.threads.remove(&500);
    assert!(advice_for(&f).contains("no longer runs"));
    let mut f = facts();
    f.threads.get_mut(&500).unwrap().cpus = vec![0];
    assert!(advice_for(&f).contains("already off"));
}

#[test]
fn an_irq_already_off_or_without_a_place_to_go_is_advice() {
    let cs = causes(&explanations(), &unknown);
    let mut f = facts();
    f.irqs.insert(
        38,
        IrqFact {
            affinity: vec![0],
            effective: Some(vec![0]),
        },
    );
    let ps = propose(&cs, &f, &Options::default());
    assert!(!by_class(&ps, RemedyClass::Irq)[0].live());
    let mut f = facts();
    f.housekeeping.clear();
    let ps = propose(&cs, &f, &Options::default());
    // Only what needs no other CPU: idle states, and a mask that keeps
    // CPUs of its own outside the measured ones.
    assert!(
        ps.iter()
            .all(|p| !p.live() || matches!(p.class, RemedyClass::Idle | RemedyClass::Net)),
        "{ps:?}"
    );
}

#[test]
fn no_idle_state_to_disable_on_a_vm_says_what_would() {
    let mut f = facts();
    f.idle.clear();
    let ps = propose(&causes(&explanations(), &unknown), &f, &Options::default());
    let idle = by_class(&ps, RemedyClass::Idle)[0].advice.clone().unwrap();
    assert!(idle.contains("idle=poll"), "{idle}");
}

#[test]
fn the_most_decisive_cause_is_tried_first() {
    let ps = propose(
        &causes(&explanations(), &unknown),
        &facts(),
        &Options::default(),
    );
    assert!(ps[0].change.starts_with("rtlab-hog"), "{:?}", ps[0]);
}

#[test]
fn main_keys_go_into_a_main_stanza_on_one_line() {
    let keys = ["trace.threshold 50 us".to_string()];
    assert_eq!(
        with_main_keys("main { cpu_affinity 0 }\ntimer_thread[0] { }\n", &keys),
        "main {\n  trace.threshold 50 us\n  cpu_affinity 0 }\ntimer_thread[0] { }\n"
    );
}

#[test]
fn main_keys_go_into_the_main_stanza() {
    let keys = ["trace.threshold 50 us".to_string()];
    assert_eq!(
        with_main_keys(
            "# x\nmain # the conductor\n\n{\n  cpu_affinity 0\n}\n",
            &keys
        ),
        "# x\nmain # the conductor\n\n{\n  trace.threshold 50 us\n  cpu_affinity 0\n}\n"
    );
    assert_eq!(
        with_main_keys("main {\n}\n", &keys),
        "main {\n  trace.threshold 50 us\n}\n"
    );
    assert_eq!(
        with_main_keys("timer_thread[0]\n{\n}\n", &keys),
        "main\n{\n  trace.threshold 50 us\n}\ntimer_thread[0]\n{\n}\n"
    );
    // The word main in a comment or a value is not the stanza.
    assert_eq!(
        with_main_keys("# main\nprogram[0]\n{\n  cmdline main\n}\n", &keys),
        "main\n{\n  trace.threshold 50 us\n}\n# main\nprogram[0]\n{\n  cmdline main\n}\n"
    );
}

#[test]
fn a_normal_thread_holding_a_real_time_one_off_for_milliseconds_is_throttling() {
    // 47.6 ms after the wake-up in one stretch, unseen: no kernel path
    // lasts that long; the kernel ran normal tasks in their share.
    let cs = causes(
        &[explanation(vec![part(
            PartKind::Unseen,
            "unseen after the wake-up: the kernel's way back from an interrupt, a hypervisor, or a non-preemptible section (perl held the CPU)",
            Some(700),
            Some(120),
            47_600_000,
            false,
        )])],
        &unknown,
    );
    let ps = propose(&cs, &facts(), &Options::default());
    assert!(by_class(&ps, RemedyClass::Preemption).is_empty(), "{ps:#?}");
    let rt = &by_class(&ps, RemedyClass::RtThrottling)[0];
    assert_eq!(rt.answers[0].cause, "perl");
    let why = rt.advice.as_deref().unwrap();
    assert!(
        why.contains("fair server")
            && why.contains("rtlab threads --rt --cpu N` for each CPU N of 2-3"),
        "{why}"
    );
    // Asked to, rtlab lifts RT throttling as a remedy to be measured.
    let ps = propose(
        &cs,
        &facts(),
        &Options {
            lift_rt_throttling: true,
        },
    );
    assert!(by_class(&ps, RemedyClass::RtThrottling)[0].live());
    // On a VM whose measured CPUs lost as long to the host in the run, the
    // stretch may be the host's: no claim of throttling.
    let stolen = Facts {
        steal_ms: 47.6,
        ..facts()
    };
    let ps = propose(&cs, &stolen, &Options::default());
    assert!(
        by_class(&ps, RemedyClass::RtThrottling).is_empty(),
        "{ps:#?}"
    );
    let ps = propose(
        &cs,
        &Facts {
            steal_ms: 47.5,
            ..facts()
        },
        &Options::default(),
    );
    assert_eq!(by_class(&ps, RemedyClass::RtThrottling).len(), 1);
    // A thread seen only unseen, briefly, with no path: no claim of a path.
    let cs = causes(
        &[explanation(vec![part(
            PartKind::Unseen,
            "unseen after the wake-up: the kernel's way back from an interrupt, a hypervisor, or a non-preemptible section (spin held the CPU)",
            Some(701),
            Some(49),
            11_000,
            false,
        )])],
        &unknown,
    );
    let ps = propose(&cs, &facts(), &Options::default());
    assert!(by_class(&ps, RemedyClass::Preemption).is_empty(), "{ps:#?}");
}

#[test]
fn a_users_process_named_as_a_kernel_thread_is_moved_as_the_thread_it_is() {
    let named = |what: &str, pid| {
        explanation(vec![part(
            PartKind::Thread,
            what,
            Some(pid),
            Some(120),
            90_000,
            false,
        )])
    };
    let runs = [
        named("kworker/1:1H", 601),
        named("irq/38-virtio2-input.0", 602),
        named("rcuc/1", 603),
    ];
    let class = |kernel: Option<bool>| {
        let cs = causes(&runs, &|_| kernel);
        cs.iter()
            .map(|c| (c.what.clone(), c.class, c.target.clone()))
            .collect::<Vec<_>>()
    };
    // The kernel's threads (or threads gone, known by name only): their work.
    for kernel in [Some(true), None] {
        let got = class(kernel);
        assert!(
            got.contains(&(
                "kworker/1:1H".into(),
                RemedyClass::Workqueue,
                Target::Thread { pid: 601 }
            )),
            "{got:?}"
        );
        assert!(
            got.iter().any(|c| c.2 == Target::Irq { irq: 38 }),
            "{got:?}"
        );
        assert!(
            got.contains(&(
                "rcuc/1".into(),
                RemedyClass::Tick,
                Target::Thread { pid: 603 }
            )),
            "{got:?}"
        );
    }
    // A user's processes that took those names: threads, moved as such.
    let got = class(Some(false));
    for (what, pid) in [
        ("kworker/1:1H", 601),
        ("irq/38-virtio2-input.0", 602),
        ("rcuc/1", 603),
    ] {
        assert!(
            got.contains(&(what.into(), RemedyClass::Thread, Target::Thread { pid })),
            "{got:?}"
        );
    }
}

#[test]
fn a_nic_irq_is_moved_only_if_it_fired_on_the_measured_cpus() {
    let cs = causes(&explanations(), &unknown);
    let mut f = facts();
    f.net_irqs = vec![38];
    let nic = |f: &Facts| {
        propose(&cs, f, &Options::default())
            .into_iter()
            .filter(|p| p.change.starts_with("NIC IRQ 38"))
            .count()
    };
    assert_eq!(nic(&f), 1);
    f.fired = Some(BTreeMap::from([(38, 0)]));
    assert_eq!(nic(&f), 0);
    f.fired = Some(BTreeMap::from([(38, 12)]));
    assert_eq!(nic(&f), 1);
}

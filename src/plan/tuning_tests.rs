//! The tuning keys' planning checked on a fake machine.

use super::super::tests::fake;
use super::super::{PlanOptions, plan_text};
use crate::config::Pos;
use crate::sched::Policy;

fn errors(text: &str) -> Vec<(Pos, String)> {
    plan_text(text, "f", &fake(), &PlanOptions::default())
        .unwrap_err()
        .into_iter()
        .map(|d| (d.pos, d.message))
        .collect()
}

const TIMER: &str = "timer_thread[0] {\n  lifetime.loops 1\n}\n";

#[test]
fn tuning_keys_make_a_plan_in_file_order() {
    let text = format!(
        "main {{\n  irq.affinity 0\n  irq.affinity 1 36 24\n  threads.sched ksoftirqd/* FIFO 2\n  \
         cstates.max_latency 0 us\n  cstates.cpus 1\n}}\n{TIMER}"
    );
    let plan = plan_text(&text, "f", &fake(), &PlanOptions::default()).unwrap();
    let t = &plan.main.tuning;
    assert_eq!(
        t.irq_affinity,
        vec![(vec![0], vec![]), (vec![1], vec![36, 24])]
    );
    assert_eq!(t.thread_sched[0].0, "ksoftirqd/*");
    assert_eq!(t.thread_sched[0].1.policy, Policy::Fifo);
    assert_eq!(t.cstate_max_latency_us, Some((0, Some(vec![1]))));
    assert!(t.governor.is_none());
    let plain = plan_text(TIMER, "f", &fake(), &PlanOptions::default()).unwrap();
    assert!(plain.main.tuning.is_empty());
}

#[test]
fn tuning_mistakes_are_refused_at_their_position() {
    let text = format!(
        "main {{\n  cpufreq.governor performance\n  irq.affinity 0 99\n  \
         threads.sched nosuch/* FIFO 2\n  cstates.cpus 1\n  irq.affinity 5\n}}\n{TIMER}"
    );
    let e = errors(&text);
    let at = |line: usize| {
        e.iter()
            .find(|(p, _)| p.line == line)
            .map(|(_, m)| m.as_str())
            .unwrap_or_else(|| panic!("nothing at line {line}: {e:?}"))
    };
    assert!(at(2).contains("no cpufreq"));
    assert_eq!(at(3), "no IRQ 99 on this machine");
    assert_eq!(at(4), "no thread name matches `nosuch/*`");
    assert_eq!(at(5), "`cstates.cpus` alone changes nothing");
    assert_eq!(at(6), "CPU 5 is not online");
    // Syntax of the repeatable keys.
    let e = errors(&format!(
        "main {{\n  threads.sched x FIFO\n  irq.affinity 0 x\n}}\n{TIMER}"
    ));
    assert!(
        e[0].1
            .contains("needs a name pattern, a policy and a priority")
    );
    assert_eq!(e[1].0, Pos { line: 3, col: 18 });
    let e = errors(&format!("main {{\n  irq.affinity 0 all 36\n}}\n{TIMER}"));
    assert!(e[0].1.contains("`all` and IRQ numbers together"), "{e:?}");
    let e = errors(&format!("main {{\n  threads.sched x FIFO 0\n}}\n{TIMER}"));
    assert_eq!(e[0].0, Pos { line: 2, col: 24 }, "{e:?}");
}

#[test]
fn thread_cpus_and_steering_make_a_plan_in_file_order() {
    let text = format!(
        "main {{\n  threads.affinity ksoftirqd/* 1\n  net.steering eth0 0-1\n  \
         threads.affinity 500 0\n  net.steering lo 1\n}}\n{TIMER}"
    );
    let plan = plan_text(&text, "f", &fake(), &PlanOptions::default()).unwrap();
    let t = &plan.main.tuning;
    assert_eq!(
        t.thread_affinity,
        vec![("ksoftirqd/*".into(), vec![1]), ("500".into(), vec![0])]
    );
    assert_eq!(
        t.net_steering,
        vec![("eth0".into(), vec![0, 1]), ("lo".into(), vec![1])]
    );
    assert!(!t.is_empty());
}

#[test]
fn thread_cpus_and_steering_mistakes_are_refused_at_their_position() {
    let text = format!(
        "main {{\n  threads.affinity nosuch* 0\n  threads.affinity 77 1\n  \
         threads.affinity app 0-5\n  net.steering wlan0 0\n  net.steering eth0 7\n}}\n{TIMER}"
    );
    let d = plan_text(&text, "f", &fake(), &PlanOptions::default()).unwrap_err();
    let found: Vec<(Pos, &str)> = d.iter().map(|d| (d.pos, d.message.as_str())).collect();
    let at = |line, col| Pos { line, col };
    assert_eq!(
        found,
        vec![
            (at(2, 20), "no thread name matches `nosuch*`"),
            (at(3, 20), "no thread 77"),
            (at(4, 24), "CPU 2-5 are not online"),
            (at(5, 16), "no network interface `wlan0` on this machine"),
            (at(6, 21), "CPU 7 is not online"),
        ]
    );
    assert!(d[0].hint.as_ref().unwrap().contains("never moves its own"));
    assert_eq!(d[3].hint.as_deref(), Some("its interfaces are eth0, lo"));
    // rtlab's own threads are not among the machine's others: its own
    // TID or name is refused as a thread that does not exist.
    let e = errors(&format!("main {{\n  threads.affinity 1 0\n}}\n{TIMER}"));
    assert_eq!(e[0].1, "no thread 1");
}

#[test]
fn tuning_needs_root() {
    let mut m = fake();
    m.root = false;
    for key in [
        "irq.affinity 0",
        "threads.affinity ksoftirqd/* 0",
        "net.steering lo 0",
    ] {
        let text = format!("main {{\n  {key}\n}}\n{TIMER}");
        let d = plan_text(&text, "f", &m, &PlanOptions::default()).unwrap_err();
        assert!(d[0].message.contains("needs root"), "{key}: {d:?}");
        assert_eq!(
            d[0].pos,
            Pos {
                line: 2,
                col: 4 + key.find(' ').unwrap()
            }
        );
    }
    let text = "program[0] {\n  cmdline sh\n  cpu.quota 10 ms\n}\n";
    let d = plan_text(text, "f", &m, &PlanOptions::default()).unwrap_err();
    assert!(d[0].message.contains("needs root"), "{d:?}");
}

#[test]
fn programs_share_a_group_and_its_quota() {
    let text = "program[0] {\n  cmdline sh\n  cpu.group hogs\n}\n\
                program[1] {\n  cmdline sh\n  cpu.group hogs\n  cpu.quota 150 ms\n}\n\
                program[2] {\n  cmdline sh\n  cpu.quota 25 ms\n  cpu.period 50 ms\n}\n\
                program[3] {\n  cmdline sh\n}\n";
    let plan = plan_text(text, "f", &fake(), &PlanOptions::default()).unwrap();
    let groups: Vec<Option<&str>> = plan
        .programs
        .iter()
        .map(|p| p.cpu_group.as_deref())
        .collect();
    assert_eq!(
        groups,
        vec![Some("hogs"), Some("hogs"), Some("program2"), None]
    );
    assert_eq!(plan.cpu_groups.len(), 2);
    assert_eq!(plan.cpu_groups[0].bandwidth.quota_us, Some(150_000));
    assert_eq!(plan.cpu_groups[0].bandwidth.period_us, 100_000);
    assert_eq!(plan.cpu_groups[1].bandwidth.period_us, 50_000);
}

#[test]
fn bandwidth_mistakes_are_refused() {
    let text = "program[0] {\n  cmdline sh\n  cpu.group g\n  cpu.quota 10 ms\n}\n\
                program[1] {\n  cmdline sh\n  cpu.group g\n  cpu.quota 20 ms\n}\n\
                program[2] {\n  cmdline sh\n  cpu.period 50 ms\n}\n\
                program[3] {\n  cmdline sh\n  sched.policy FIFO\n  sched.priority 1\n  cpu.quota 10 ms\n}\n\
                program[4] {\n  cmdline sh\n  cpu.group programs\n}\n";
    let e = errors(text);
    let msgs: Vec<&str> = e.iter().map(|(_, m)| m.as_str()).collect();
    assert!(
        msgs[0].contains("group `g` already has another quota"),
        "{msgs:?}"
    );
    assert_eq!(e[0].0.line, 9);
    assert!(
        msgs.contains(&"`cpu.period` alone changes nothing"),
        "{msgs:?}"
    );
    assert!(
        msgs.iter().any(|m| m.contains("limits only OTHER")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter().any(|m| m.contains("`programs` is reserved")),
        "{msgs:?}"
    );
    // Values outside the kernel's limits are refused by the parser.
    let e = errors(
        "program[0] {\n  cmdline sh\n  cpu.quota 500 us\n  cpu.period 2 s\n  cpu.group a/b\n}\n",
    );
    assert_eq!(e.len(), 3, "{e:?}");
    assert!(e[0].1.contains("at least 1 ms"));
    assert!(e[1].1.contains("between 1 ms and 1 s"));
    assert!(e[2].1.contains("not a group name"));
}

//! The matcher against brute force on recorded and generated traces.

use super::*;
#[path = "../../../tests/support/irq_truth.rs"]
mod irq_truth;
use crate::trace::text;
use irq_truth::truth;

fn run(text: &str, irq: IrqSelector, task: TaskSelector) -> IrqTaskResult {
    let mut m = Matcher::new(IrqTaskSpec {
        index: 0,
        irq,
        task,
    })
    .unwrap();
    for e in text.lines().filter_map(text::line) {
        m.feed(&e);
    }
    m.finish(None)
}

/// Brute force over the text: each handler exit of the IRQ, paired with
/// the next switch-in of `comm` logged after a waking of it.
fn by_hand(text: &str, irq: &str, comm: &str) -> Vec<u64> {
    let events: Vec<Event> = text.lines().filter_map(text::line).collect();
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate() {
        if e.name != "irq_handler_exit" || e.field("irq") != Some(irq) {
            continue;
        }
        let rest = &events[i + 1..];
        let next_irq = rest
            .iter()
            .position(|x| x.name == "irq_handler_exit" && x.field("irq") == Some(irq))
            .unwrap_or(rest.len());
        let Some(w) = rest[..next_irq]
            .iter()
            .position(|x| x.name == "sched_waking" && x.field("comm") == Some(comm))
        else {
            continue;
        };
        if let Some(s) = rest[w..]
            .iter()
            .find(|x| x.name == "sched_switch" && x.field("next_comm") == Some(comm))
        {
            out.push(s.ts_ns - e.ts_ns);
        }
    }
    out
}

#[test]
fn direct_io_on_another_cpu_is_matched_exactly() {
    let text = include_str!("../../../tests/traces/dio-task-on-other-cpu.txt");
    let r = run(
        text,
        IrqSelector::Name("virtio1-req.0".into()),
        TaskSelector::Name("dd".into()),
    );
    let want = by_hand(text, "36", "dd");
    assert_eq!(r.irq_names, vec![(36, "virtio1-req.0".to_string())]);
    assert_eq!(r.counts.matched as usize, want.len(), "{:?}", r.counts);
    assert_eq!(r.from_exit.max_ns, *want.iter().max().unwrap());
    assert_eq!(r.from_exit.min_ns, *want.iter().min().unwrap());
    let sum: u64 = want.iter().sum();
    assert!((r.from_exit.mean_ns - sum as f64 / want.len() as f64).abs() < 1e-6);
    assert_eq!(r.counts.switch_in_inferred, 0);
    // The handler on CPU 1, dd on CPU 0.
    assert_eq!(r.cpu_pairs.len(), 1);
    assert_eq!((r.cpu_pairs[0].irq_cpu, r.cpu_pairs[0].task_cpu), (1, 0));
    // Every handler exit is accounted for once.
    let c = &r.counts;
    assert_eq!(
        c.irqs,
        c.matched + c.task_running + c.no_wakeup + c.other_cause_total() + c.unresolved
    );
    let exits = text
        .lines()
        .filter(|l| l.contains("irq_handler_exit: irq=36 "))
        .count();
    assert_eq!(c.irqs as usize, exits);
    // From the entry: never shorter than from the exit.
    assert!(r.from_entry.min_ns >= r.from_exit.min_ns);
}

#[test]
fn a_switch_in_the_kernel_did_not_log_is_inferred_and_said() {
    // On the IRQ's CPU this kernel logs no switch from idle to dd:
    // dd's next event is its own switch-out.
    let text = include_str!("../../../tests/traces/dio-task-on-irq-cpu.txt");
    let r = run(
        text,
        IrqSelector::Number(36),
        TaskSelector::Name("dd".into()),
    );
    let c = &r.counts;
    assert!(c.matched > 10, "{c:?}");
    assert_eq!(c.switch_in_inferred, c.matched);
    assert!(c.inferred_gap_max_ns > 0);
    assert_eq!(r.cpu_pairs[0].irq_cpu, r.cpu_pairs[0].task_cpu);
    // The lower bound: the softirq that woke dd ended, then dd ran.
    let events: Vec<Event> = text.lines().filter_map(text::line).collect();
    let mut lower = Vec::new();
    for (i, e) in events.iter().enumerate() {
        if e.name == "irq_handler_exit" {
            let rest = &events[i + 1..];
            let Some(run_at) = rest.iter().position(|x| &*x.comm == "dd") else {
                continue;
            };
            if rest[..run_at].iter().any(|x| x.name == "sched_waking") {
                let before = if run_at == 0 { e } else { &rest[run_at - 1] };
                lower.push(before.ts_ns - e.ts_ns);
            }
        }
    }
    assert_eq!(lower.len() as u64, c.matched);
    assert_eq!(r.from_exit.max_ns, *lower.iter().max().unwrap());
}

#[test]
fn other_causes_and_a_running_task_are_counted_not_sampled() {
    let text = "\
  <idle>-0 [001] d.h1. 10.000100: irq_handler_entry: irq=9 name=dev
  <idle>-0 [001] d.h1. 10.000110: irq_handler_exit: irq=9 ret=handled
  <idle>-0 [001] d.h1. 10.000200: hrtimer_expire_entry: hrtimer=x function=hrtimer_wakeup now=1
  <idle>-0 [001] d.h1. 10.000201: sched_waking: comm=app pid=50 prio=120 target_cpu=001
  <idle>-0 [001] d.h1. 10.000202: hrtimer_expire_exit: hrtimer=x
  <idle>-0 [001] d..2. 10.000210: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=app next_pid=50 next_prio=120
     app-50 [001] d.h1. 10.000300: irq_handler_entry: irq=9 name=dev
     app-50 [001] d.h1. 10.000310: irq_handler_exit: irq=9 ret=handled
     app-50 [001] d..2. 10.000400: sched_switch: prev_comm=app prev_pid=50 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
  <idle>-0 [001] d.h1. 10.000500: irq_handler_entry: irq=9 name=dev
  <idle>-0 [001] d.h1. 10.000510: irq_handler_exit: irq=9 ret=handled
  <idle>-0 [001] d.h1. 10.000600: irq_handler_entry: irq=9 name=dev
  <idle>-0 [001] d.h1. 10.000605: sched_waking: comm=app pid=50 prio=120 target_cpu=001
  <idle>-0 [001] d.h1. 10.000610: irq_handler_exit: irq=9 ret=handled
  <idle>-0 [001] d..2. 10.000650: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=app next_pid=50 next_prio=120
  <idle>-0 [000] d.h1. 10.000700: irq_handler_entry: irq=9 name=dev
  <idle>-0 [000] d.h1. 10.000710: irq_handler_exit: irq=9 ret=handled
";
    let r = run(text, IrqSelector::Number(9), TaskSelector::Pid(50));
    let c = &r.counts;
    // 1: woken by a timer; 2: app running; 3: slept on to the next
    // IRQ; 4: woke app in its handler: 40 µs from its exit to the
    // switch-in; 5: app is running, and the run ends.
    assert_eq!(c.irqs, 5);
    assert_eq!(c.other_cause, vec![("a timer (hrtimer)".to_string(), 1)]);
    assert_eq!(c.task_running, 1);
    assert_eq!(c.no_wakeup, 1);
    assert_eq!(c.matched, 1);
    assert_eq!(c.unresolved, 1);
    assert_eq!((r.from_exit.min_ns, r.from_exit.max_ns), (40_000, 40_000));
    assert_eq!(r.from_entry.max_ns, 50_000);
    // The integration tests' brute force for one sample at its own exit
    // (10.000610 s, within the text's 1 µs): the same 40 µs; none where
    // no handler of that IRQ ended then.
    let at = |us| irq_truth::delay_after_exit(text, "9", "app", us);
    assert_eq!((at(10_000_610), at(10_000_611)), (Some(40), Some(40)));
    assert_eq!(at(10_000_620), None);
}

#[test]
fn a_wake_up_in_a_device_softirq_or_the_irq_thread_is_the_irqs() {
    let text = "\
  <idle>-0 [000] d.h1. 20.000100: irq_handler_entry: irq=9 name=dev
  <idle>-0 [000] d.h1. 20.000110: irq_handler_exit: irq=9 ret=handled
  <idle>-0 [000] ..s1. 20.000120: softirq_entry: vec=3 [action=NET_RX]
  <idle>-0 [000] d.s3. 20.000130: sched_waking: comm=app pid=50 prio=120 target_cpu=001
  <idle>-0 [000] ..s1. 20.000140: softirq_exit: vec=3 [action=NET_RX]
  <idle>-0 [001] d..2. 20.000150: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=app next_pid=50 next_prio=120
     app-50 [001] d..2. 20.000200: sched_switch: prev_comm=app prev_pid=50 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
  <idle>-0 [000] d.h1. 20.000300: irq_handler_entry: irq=9 name=dev
  <idle>-0 [000] d.h1. 20.000301: irq_handler_exit: irq=9 ret=wake_thread
 irq/9-dev-77 [000] d..2. 20.000350: sched_waking: comm=app pid=50 prio=120 target_cpu=001
  <idle>-0 [001] d..2. 20.000400: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=app next_pid=50 next_prio=120
";
    let r = run(
        text,
        IrqSelector::Number(9),
        TaskSelector::Name("app".into()),
    );
    assert_eq!(r.counts.matched, 2, "{:?}", r.counts);
    assert_eq!(r.from_exit.min_ns, 40_000);
    assert_eq!(r.from_exit.max_ns, 99_000);
    assert_eq!(r.from_entry.max_ns, 100_000);
    assert_eq!(
        r.cpu_pairs,
        vec![CpuPair {
            irq_cpu: 0,
            task_cpu: 1,
            samples: 2
        }]
    );
}

#[test]
fn a_task_respawned_without_end_keeps_a_bounded_set_of_threads() {
    let mut m = Matcher::new(IrqTaskSpec {
        index: 0,
        irq: IrqSelector::Number(9),
        task: TaskSelector::Name("app".into()),
    })
    .unwrap();
    for pid in 1..=(3 * MAX_TIDS as i32) {
        let line = format!(
            "  <idle>-0 [000] d..2. 1.{pid:06}: sched_switch: prev_comm=app prev_pid={pid} \
                 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120"
        );
        m.feed(&text::line(&line).unwrap());
        assert!(m.tids().len() <= MAX_TIDS && m.states.len() <= MAX_TIDS + 1);
    }
}

/// A deterministic trace of `dd` reading with direct I/O on CPU 0, its
/// disk's interrupt on CPU 1. Some completions come while dd is still on
/// its CPU, about to sleep: woken running, it never switches out, and no
/// switch-in follows that wake-up (the kernel's `ttwu_runnable`).
fn direct_io_with_races(cycles: usize, seed: u64) -> String {
    let mut rng = seed;
    let mut next = |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let mut lines: Vec<(u64, String)> = Vec::new();
    let mut put = |ts: u64, who: &str, cpu: u32, flags: &str, what: String| {
        let line = format!(
            "{who:>16} [{cpu:03}] {flags} {:5}.{:06}: {what}",
            ts / 1_000_000,
            ts % 1_000_000
        );
        lines.push((ts, line));
    };
    let dd = "dd-4242";
    let mut t = 1_000_000_000u64; // µs
    for _ in 0..cycles {
        let ran = 5 + next(20);
        let out = t + ran;
        // The completion: mostly after dd slept, sometimes before.
        let done = out + next(80) - 20.min(ran - 1);
        put(
            done,
            "<idle>-0",
            1,
            "d.h1.",
            "irq_handler_entry: irq=36 name=virtio1-req.0".into(),
        );
        put(
            done + 1,
            "<idle>-0",
            1,
            "d.h1.",
            "irq_handler_exit: irq=36 ret=handled".into(),
        );
        put(
            done + 2,
            "<idle>-0",
            1,
            "..s1.",
            "softirq_entry: vec=4 [action=BLOCK]".into(),
        );
        put(
            done + 3,
            "<idle>-0",
            1,
            "d.s3.",
            "sched_waking: comm=dd pid=4242 prio=120 target_cpu=000".into(),
        );
        put(
            done + 4,
            "<idle>-0",
            1,
            "..s1.",
            "softirq_exit: vec=4 [action=BLOCK]".into(),
        );
        if done + 3 < out {
            // Woken while running: it goes on to its next read.
            t = out;
            continue;
        }
        put(out, dd, 0, "d..2.", "sched_switch: prev_comm=dd prev_pid=4242 prev_prio=120 prev_state=D ==> next_comm=swapper/0 next_pid=0 next_prio=120".into());
        let delay = if next(50) == 0 {
            300 + next(3000)
        } else {
            5 + next(40)
        };
        t = done + 3 + delay;
        put(t, "<idle>-0", 0, "d..2.", "sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=dd next_pid=4242 next_prio=120".into());
    }
    lines.sort_by_key(|l| l.0);
    lines.into_iter().map(|l| l.1 + "\n").collect()
}

#[test]
fn a_task_woken_while_still_running_is_task_running_and_nothing_pairs_late() {
    // Under emulation (.ci/run's boards) its size takes a minute: the
    // host's run of the same test is the one that counts.
    if std::env::var_os("RTLAB_TEST_EMULATED").is_some() {
        return;
    }
    for seed in [1, 7, 1234567] {
        let text = direct_io_with_races(3000, seed);
        let t = truth(&text, "36", "dd");
        let (want, running) = (t.delays_within(0, u64::MAX), t.running);
        assert!(running > 100, "the trace must hold the race: {running}");
        let r = run(
            &text,
            IrqSelector::Name("virtio1-req.0".into()),
            TaskSelector::Name("dd".into()),
        );
        let c = &r.counts;
        assert_eq!(c.matched as usize, want.len(), "{c:?}");
        assert_eq!(c.task_running, running, "{c:?}");
        assert_eq!(c.unresolved, 0, "{c:?}");
        assert_eq!(r.from_exit.min_ns, want[0] * 1000);
        assert_eq!(r.from_exit.max_ns, want[want.len() - 1] * 1000);
        let sum: u64 = want.iter().sum();
        assert!((r.from_exit.mean_ns - sum as f64 * 1000.0 / want.len() as f64).abs() < 1e-3);
        // p99 within a bucket of the truth's (nearest rank).
        let rank = (0.99 * want.len() as f64).ceil() as usize - 1;
        let p99 = r
            .from_exit
            .percentiles
            .iter()
            .find(|p| p.name == "p99")
            .unwrap();
        let truth_p99 = want[rank] * 1000;
        assert!(
            p99.value_ns.abs_diff(truth_p99) <= truth_p99 / 1000 + 1,
            "{p99:?} vs {truth_p99}"
        );
        // The worst kept are the truth's worst, with their exits.
        let worst: Vec<u64> = r.worst.iter().map(|w| w.latency_ns / 1000).collect();
        let mut top: Vec<u64> = want.iter().rev().take(WORST_KEPT).copied().collect();
        top.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(worst, top);
        for w in &r.worst {
            let exit = format!(
                "{}.{:06}: irq_handler_exit: irq=36",
                w.exit_ns / 1_000_000_000,
                w.exit_ns / 1000 % 1_000_000
            );
            assert!(text.contains(&exit), "no exit at {exit}");
            assert_eq!(
                (w.irq_cpu, w.task_cpu, w.tid, w.inferred),
                (1, 0, 4242, false)
            );
        }
    }
}

#[test]
fn recorded_direct_io_agrees_with_brute_force() {
    let text = include_str!("../../../tests/traces/dio-task-on-other-cpu.txt");
    let t = truth(text, "36", "dd");
    let want = t.delays_within(0, u64::MAX);
    let r = run(
        text,
        IrqSelector::Number(36),
        TaskSelector::Name("dd".into()),
    );
    assert_eq!(r.counts.matched as usize, want.len(), "{:?}", r.counts);
    assert!(r.counts.task_running >= t.running);
    assert_eq!(r.from_exit.max_ns, want[want.len() - 1] * 1000);
    assert_eq!(r.from_exit.min_ns, want[0] * 1000);
}

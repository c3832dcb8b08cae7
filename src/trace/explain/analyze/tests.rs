//! The analysis on trace windows recorded on a real kernel (tests/traces:
//! this VM, rtlab timer thread TID 16157 at FIFO 90 on CPU 1) and on small
//! made-up windows for the cases a recording cannot stage on demand.

use super::*;
use crate::trace::text;

fn events(text: &str) -> Vec<Event> {
    text.lines().filter_map(text::line).collect()
}

fn total(e: &Explanation) -> u64 {
    e.parts.iter().map(|p| p.ns).sum()
}

#[test]
fn a_higher_priority_fifo_thread_is_named_with_its_burst() {
    // python3 at FIFO 95 busy-loops 2 ms on the timer thread's CPU.
    let text = include_str!("../../../../tests/traces/fifo-hog-preempts.txt");
    let (deadline, latency) = (11_692_596_928_077, 2_075_000);
    let e = explain(&events(text), 0, 16157, 7, deadline, latency);
    assert_eq!(total(&e), latency, "{e:#?}");
    let top = &e.parts[0];
    assert_eq!(top.kind, PartKind::Thread);
    assert_eq!(
        (top.what.as_str(), top.pid, top.prio),
        ("python3", Some(16134), Some(4))
    );
    assert_eq!(top.ns, 2_048_000);
    assert!(!top.before_wake);
    assert!(
        e.cause
            .starts_with("thread python3 (pid 16134) ran 2048.0 µs"),
        "{}",
        e.cause
    );
    assert!(
        e.cause
            .contains("real-time priority 95 is above the timer thread's real-time priority 90"),
        "{}",
        e.cause
    );
    assert_eq!(e.woken_after_ns, Some(5_923));
    // The IRQ that woke python3 ran in the timer thread's context.
    assert!(
        e.parts
            .iter()
            .any(|p| p.kind == PartKind::Irq && p.what == "local timer interrupt")
    );
}

#[test]
fn a_timer_interrupt_late_on_an_idle_cpu_is_said_not_hidden() {
    let text = include_str!("../../../../tests/traces/idle-timer-late.txt");
    let (deadline, latency) = (11_693_703_928_077, 4_835_250);
    let e = explain(&events(text), 0, 16157, 9, deadline, latency);
    assert_eq!(total(&e), latency, "{e:#?}");
    assert_eq!(e.parts[0].kind, PartKind::TimerLateIdle);
    assert_eq!(e.parts[0].ns, 11_693_708_693_000 - deadline);
    assert!(
        e.cause.contains("no event on this CPU explains it"),
        "{}",
        e.cause
    );
    // No thread is accused.
    assert!(e.parts.iter().all(|p| p.kind != PartKind::Thread), "{e:#?}");
}

const NESTED: &str = "\
 rtlab-timer0-50 [002] d..2. 100.000010: sched_switch: prev_comm=rtlab-timer0 prev_pid=50 prev_prio=9 prev_state=S ==> next_comm=iperf next_pid=60 next_prio=120
 iperf-60 [002] ..s1. 100.000990: softirq_entry: vec=3 [action=NET_RX]
 iperf-60 [002] d.H2. 100.001010: irq_handler_entry: irq=41 name=eth0-rx
 iperf-60 [002] d.H3. 100.001012: sched_waking: comm=rtlab-timer0 pid=50 prio=9 target_cpu=002
 iperf-60 [002] d.H2. 100.001030: irq_handler_exit: irq=41 ret=handled
 iperf-60 [002] ..s1. 100.001100: softirq_exit: vec=3 [action=NET_RX]
 iperf-60 [002] d..2. 100.001105: sched_switch: prev_comm=iperf prev_pid=60 prev_prio=120 prev_state=R ==> next_comm=rtlab-timer0 next_pid=50 next_prio=9
";

#[test]
fn an_irq_nested_in_a_softirq_counts_once_each_net() {
    // Deadline at 100.001000; the clock read at 100.001110.
    let e = explain(&events(NESTED), 0, 50, 1, 100_001_000_000, 110_000);
    assert_eq!(total(&e), 110_000, "{e:#?}");
    // A part before and one after the wake-up may share a name: summed.
    let ns = |what: &str| {
        let all: Vec<u64> = e
            .parts
            .iter()
            .filter(|p| p.what == what)
            .map(|p| p.ns)
            .collect();
        (!all.is_empty()).then(|| all.iter().sum::<u64>())
    };
    // Net of the IRQ; before the wake-up, the softirq's time is the timer
    // interrupt's lateness (a softirq runs with interrupts on).
    assert_eq!(ns("softirq NET_RX"), Some(70_000));
    assert_eq!(
        ns("timer interrupt late (CPU busy with softirq NET_RX)"),
        Some(10_000)
    );
    assert_eq!(ns("IRQ 41 eth0-rx"), Some(20_000));
    // iperf's 5 µs from the softirq's exit to the switch are the kernel's
    // way to the timer thread (no longer than its own 5 µs after it).
    assert_eq!(ns("iperf"), None);
    assert_eq!(ns("interrupt exit and switch to it"), Some(5_000));
    assert_eq!(ns("rtlab-timer0"), Some(5_000));
    assert_eq!(e.wake_to_switch_ns, Some(93_000));
    assert!(
        e.cause.starts_with("softirq NET_RX ran 70.0 µs"),
        "{}",
        e.cause
    );
    // The timeline in order, covering the latency without gaps: the
    // softirq, the IRQ inside it, the softirq again, iperf, the timer
    // thread.
    let order: Vec<&str> = e.timeline.iter().map(|s| s.what.as_str()).collect();
    assert_eq!(
        order,
        [
            "timer interrupt late (CPU busy with softirq NET_RX)",
            "IRQ 41 eth0-rx",
            "softirq NET_RX",
            "interrupt exit and switch to it",
            "rtlab-timer0"
        ]
    );
    let mut at = 0;
    for s in &e.timeline {
        assert_eq!(s.after_deadline_ns, at);
        at += s.ns;
    }
    assert_eq!(at, 110_000);
}

#[test]
fn a_window_cut_at_the_buffer_edge_keeps_the_unknown_part() {
    // The buffer's oldest event is after the deadline.
    let cut = NESTED.lines().skip(3).collect::<Vec<_>>().join("\n");
    let e = explain(&events(&cut), 0, 50, 1, 100_001_000_000, 110_000);
    assert_eq!(total(&e), 110_000, "{e:#?}");
    let unknown = e
        .parts
        .iter()
        .find(|p| p.kind == PartKind::Unknown)
        .unwrap();
    assert_eq!(unknown.ns, 12_000);
    // And no event at all: all of it unknown.
    let none = explain(&[], 0, 50, 1, 100_001_000_000, 110_000);
    assert_eq!(none.parts.len(), 1);
    assert_eq!(none.parts[0].kind, PartKind::Unknown);
    assert_eq!(total(&none), 110_000);
}

#[test]
fn a_lower_priority_thread_ran_in_a_non_preemptible_section() {
    let text = "\
 kworker/2:1-70 [002] d.h1. 5.000100: local_timer_entry: vector=236
 kworker/2:1-70 [002] d.h3. 5.000101: sched_waking: comm=rtlab-timer0 pid=50 prio=9 target_cpu=002
 kworker/2:1-70 [002] d.h1. 5.000102: local_timer_exit: vector=236
 kworker/2:1-70 [002] d..2. 5.000400: sched_switch: prev_comm=kworker/2:1 prev_pid=70 prev_prio=120 prev_state=R ==> next_comm=rtlab-timer0 next_pid=50 next_prio=9
";
    let e = explain(&events(text), 0, 50, 1, 5_000_100_000, 302_000);
    assert_eq!(total(&e), 302_000);
    // Nothing logged from the interrupt's return to the switch: a
    // non-preemptible section, or a hypervisor; the thread is named, never
    // blamed.
    assert_eq!(e.parts[0].kind, PartKind::Unseen);
    assert_eq!(e.parts[0].pid, Some(70));
    assert!(
        e.cause
            .contains("kworker/2:1 held the CPU, below the timer thread")
            && e.cause.contains("non-preemptible section of it"),
        "{}",
        e.cause
    );
    // Its kernel stack as it let the CPU go shows a preemption point: it
    // was in the kernel without one until there.
    let stacked = format!(
        "{text} kworker/2:1-70 [002] d..2. 5.000400: <stack trace>\n => __schedule\n => __cond_resched\n => process_one_work\n"
    );
    let e = explain(
        &events(&text::fold_stacks(stacked)),
        0,
        50,
        1,
        5_000_100_000,
        302_000,
    );
    assert_eq!(e.parts[0].kind, PartKind::Thread, "{e:#?}");
    assert_eq!(e.parts[0].what, "kworker/2:1");
    assert!(e.cause.contains("non-preemptible section"), "{}", e.cause);
}

#[test]
fn a_switch_out_of_idle_the_buffer_lost_goes_to_the_task_found_running() {
    // Some kernels (this VM's) do not log the switch out of idle: the hog
    // is first seen when an interrupt lands in it, 2 ms after the wake.
    let text = "\
 <idle>-0 [001] d.h1. 7.000010: local_timer_entry: vector=236
 <idle>-0 [001] d.h3. 7.000011: sched_waking: comm=rtlab-timer0 pid=50 prio=9 target_cpu=001
 <idle>-0 [001] d.h1. 7.000012: local_timer_exit: vector=236
 hog-60 [001] d.h.. 7.002012: local_timer_entry: vector=236
 hog-60 [001] d.h.. 7.002013: local_timer_exit: vector=236
 hog-60 [001] d..2. 7.002100: sched_switch: prev_comm=hog prev_pid=60 prev_prio=4 prev_state=S ==> next_comm=rtlab-timer0 next_pid=50 next_prio=9
";
    let e = explain(&events(text), 0, 50, 1, 7_000_000_000, 2_110_000);
    assert_eq!(total(&e), 2_110_000);
    let hog = &e.parts[0];
    assert_eq!((hog.what.as_str(), hog.prio), ("hog", Some(4)));
    assert_eq!(hog.ns, 2_100_000 - 12_000 - 1_000);
    assert!(e.parts.iter().all(|p| p.kind != PartKind::Idle), "{e:#?}");
}

#[test]
fn a_workqueue_item_is_named_with_its_kworker() {
    let text = "\
 kworker/3:1-90 [003] ...1. 8.999990: workqueue_execute_start: work struct 00000000ab function=vmstat_update
 kworker/3:1-90 [003] d.h1. 9.000001: local_timer_entry: vector=236
 kworker/3:1-90 [003] d.h3. 9.000002: sched_waking: comm=rtlab-timer0 pid=50 prio=9 target_cpu=003
 kworker/3:1-90 [003] d.h1. 9.000003: local_timer_exit: vector=236
 kworker/3:1-90 [003] ...1. 9.000405: workqueue_execute_end: work struct 00000000ab function=vmstat_update
 kworker/3:1-90 [003] d..2. 9.000406: sched_switch: prev_comm=kworker/3:1 prev_pid=90 prev_prio=120 prev_state=S ==> next_comm=rtlab-timer0 next_pid=50 next_prio=9
";
    let e = explain(&events(text), 0, 50, 1, 9_000_000_000, 410_000);
    assert_eq!(total(&e), 410_000);
    assert_eq!(e.parts[0].what, "kworker/3:1 (work vmstat_update)");
    assert_eq!(e.parts[0].ns, 402_000);
    // A nice 0 task ahead of a real-time one: a non-preemptible section,
    // or RT throttling (which stops every real-time thread).
    assert!(e.cause.contains("non-preemptible section"), "{}", e.cause);
    assert!(e.cause.contains("RT throttling"), "{}", e.cause);
}

#[test]
fn a_lower_priority_task_switched_in_after_the_wake_up_is_held_off() {
    // Idle woke the FIFO 90 timer thread, then the scheduler chose a nice
    // 0 kworker: only a kernel holding real-time threads off does that.
    let text = "\
 <idle>-0 [003] d.h1. 9.000001: local_timer_entry: vector=236
 <idle>-0 [003] d.h3. 9.000002: sched_waking: comm=rtlab-timer0 pid=50 prio=9 target_cpu=003
 <idle>-0 [003] d.h1. 9.000003: local_timer_exit: vector=236
 <idle>-0 [003] d..2. 9.000004: sched_switch: prev_comm=swapper/3 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=kworker/3:1 next_pid=90 next_prio=120
 kworker/3:1-90 [003] ...1. 9.000005: workqueue_execute_start: work struct 00000000ab function=vmstat_update
 kworker/3:1-90 [003] ...1. 9.000405: workqueue_execute_end: work struct 00000000ab function=vmstat_update
 kworker/3:1-90 [003] d..2. 9.000406: sched_switch: prev_comm=kworker/3:1 prev_pid=90 prev_prio=120 prev_state=S ==> next_comm=rtlab-timer0 next_pid=50 next_prio=9
";
    let e = explain(&events(text), 0, 50, 1, 9_000_000_000, 410_000);
    assert_eq!(total(&e), 410_000);
    assert_eq!(e.parts[0].kind, PartKind::HeldOff, "{e:#?}");
    assert_eq!((e.parts[0].ns, e.parts[0].pid), (402_000, None));
    assert!(e.cause.contains("RT throttling"), "{}", e.cause);
    // Woken onto another CPU, the switch here says nothing of it.
    let elsewhere = text.replace("target_cpu=003", "target_cpu=002");
    let e = explain(&events(&elsewhere), 0, 50, 1, 9_000_000_000, 410_000);
    assert!(
        e.parts.iter().all(|p| p.kind != PartKind::HeldOff),
        "{e:#?}"
    );
    // A SCHED_DEADLINE timer thread (prio -1) held off: its runtime.
    let deadline = text
        .replace("prio=9", "prio=-1")
        .replace("next_prio=9", "next_prio=-1");
    let e = explain(&events(&deadline), 0, 50, 1, 9_000_000_000, 410_000);
    assert_eq!(e.parts[0].kind, PartKind::HeldOff, "{e:#?}");
    assert!(e.cause.contains("SCHED_DEADLINE runtime"), "{}", e.cause);
    // A SCHED_OTHER timer thread shares the CPU fairly: nothing held off.
    let other = text
        .replace("prio=9", "prio=120")
        .replace("next_prio=9", "next_prio=120");
    let e = explain(&events(&other), 0, 50, 1, 9_000_000_000, 410_000);
    assert!(
        e.parts.iter().all(|p| p.kind != PartKind::HeldOff),
        "{e:#?}"
    );
}

#[test]
fn a_thread_running_at_the_deadline_and_after_the_wake_is_two_parts() {
    // The hog runs at the deadline; the timer interrupt lands in it and
    // wakes the timer thread; the hog (higher priority) goes on 2 ms.
    let text = "\
 hog-60 [001] d..2. 8.000000: sched_switch: prev_comm=x prev_pid=70 prev_prio=120 prev_state=S ==> next_comm=hog next_pid=60 next_prio=4
 hog-60 [001] d.h.. 8.000004: local_timer_entry: vector=236
 hog-60 [001] d.h2. 8.000005: sched_waking: comm=rtlab-timer0 pid=50 prio=9 target_cpu=001
 hog-60 [001] d.h.. 8.000009: local_timer_exit: vector=236
 hog-60 [001] d..2. 8.002009: sched_switch: prev_comm=hog prev_pid=60 prev_prio=4 prev_state=S ==> next_comm=rtlab-timer0 next_pid=50 next_prio=9
";
    let e = explain(&events(text), 0, 50, 1, 8_000_001_000, 2_010_000);
    assert_eq!(total(&e), 2_010_000);
    let main = &e.parts[0];
    assert_eq!(
        (main.what.as_str(), main.ns, main.before_wake),
        ("hog", 2_000_000, false)
    );
    // Before the wake-up, the hog is only where the late interrupt landed.
    assert!(
        e.parts.iter().any(|p| p.kind == PartKind::Unseen
            && p.what == "unseen: interrupt delivery, a hypervisor, SMI or NMI without a tracepoint, or interrupts off (CPU busy with hog)"
            && p.before_wake
            && p.ns == 3_000),
        "{e:#?}"
    );
    assert!(
        e.cause.contains("real-time priority 95 is above"),
        "{}",
        e.cause
    );
}

#[test]
fn a_window_without_the_deadline_or_without_events_explains_nothing() {
    let ev = |ts: &str| {
        text::line(&format!(
            "  <idle>-0 [001] d..2. {ts}: cpu_idle: state=1 cpu_id=1"
        ))
        .unwrap()
    };
    let deadline = 10_000_100_000;
    assert!(
        coverage(&[], deadline)
            .unwrap_err()
            .contains("no event recorded")
    );
    let late_start = [ev("10.000150"), ev("10.000300")];
    assert!(
        coverage(&late_start, deadline)
            .unwrap_err()
            .contains("50.0 µs after the deadline")
    );
    assert!(coverage(&[ev("10.000050")], deadline).is_err());
    assert_eq!(
        coverage(&[ev("10.000050"), ev("10.000300")], deadline),
        Ok(())
    );
}

#[test]
fn a_quiet_cpus_window_starts_at_its_last_event_before_the_deadline() {
    let text = "\
  <idle>-0 [001] d..2. 9.000000: cpu_idle: state=1 cpu_id=1
  <idle>-0 [001] d..2. 9.990000: cpu_idle: state=1 cpu_id=1
  <idle>-0 [001] d.h1. 10.000400: hrtimer_expire_entry: hrtimer=x function=hrtimer_wakeup now=1
";
    let events = text::events(text);
    let b = crate::trace::event::Recent::new(&events);
    // 2 ms of lookback before 10.000100 hold nothing: the last event before
    // the deadline (9.990000) opens the window.
    let w = b.window_around(10_000_100_000, 2_000_000, 10_000_500_000, 100);
    assert_eq!(w.len(), 2);
    assert_eq!(w[0].ts_ns, 9_990_000_000);
    // With events in the lookback, it starts there.
    let w = b.window_around(9_991_000_000, 2_000_000, 10_000_500_000, 100);
    assert_eq!(w[0].ts_ns, 9_990_000_000);
}

#[test]
fn a_flooded_lookback_is_cut_before_the_events_after_the_deadline_are() {
    // 50 events in the 2 ms before the deadline, 3 after: a cap of 10
    // keeps the 3 and the 7 last before it.
    let mut text = String::new();
    for i in 0..50 {
        text.push_str(&format!(
            " ping-7 [001] ..s1. 9.{:06}: softirq_entry: vec=3 [action=NET_RX]\n",
            998_500 + i * 10
        ));
    }
    for t in ["10.000010", "10.000020", "10.000030"] {
        text.push_str(&format!(
            " ping-7 [001] d.h1. {t}: local_timer_entry: vector=236\n"
        ));
    }
    let events = text::events(&text);
    let b = crate::trace::event::Recent::new(&events);
    let w = b.window_around(10_000_000_000, 2_000_000, 10_000_100_000, 10);
    assert_eq!(w.len(), 10);
    assert_eq!(w[0].ts_ns, 9_998_930_000, "{w:?}");
    assert_eq!(w[9].ts_ns, 10_000_030_000, "{w:?}");
    assert_eq!(coverage(w, 10_000_000_000), Ok(()));
}

#[test]
fn a_lower_priority_thread_where_the_late_interrupt_landed_is_not_the_cause() {
    // A FIFO 80 program (prio 19) runs at the deadline; the timer thread is
    // FIFO 90 (prio 9). The timer interrupt lands 20 µs late; the program
    // is preempted at once.
    let text = "\
 rt80-70 [001] d..2. 3.000000: sched_switch: prev_comm=x prev_pid=71 prev_prio=120 prev_state=S ==> next_comm=rt80 next_pid=70 next_prio=19
 rt80-70 [001] d.h1. 3.000120: local_timer_entry: vector=236
 rt80-70 [001] d.h3. 3.000121: sched_waking: comm=rtlab-timer0 pid=50 prio=9 target_cpu=001
 rt80-70 [001] d.h1. 3.000122: local_timer_exit: vector=236
 rt80-70 [001] d..2. 3.000123: sched_switch: prev_comm=rt80 prev_pid=70 prev_prio=19 prev_state=R+ ==> next_comm=rtlab-timer0 next_pid=50 next_prio=9
";
    let e = explain(&events(text), 0, 50, 1, 3_000_100_000, 25_000);
    assert_eq!(total(&e), 25_000);
    assert_eq!(e.parts[0].kind, PartKind::Unseen, "{e:#?}");
    assert_eq!(
        e.parts[0].what,
        "unseen: interrupt delivery, a hypervisor, SMI or NMI without a tracepoint, or interrupts off (CPU busy with rt80)"
    );
    assert_eq!(e.parts[0].ns, 20_000);
    assert!(
        e.cause.starts_with("20.0 µs of 25.0 µs unseen"),
        "{}",
        e.cause
    );
    // The program is a thread part only for the µs it took to preempt it.
    assert!(
        e.parts
            .iter()
            .all(|p| p.kind != PartKind::Thread || (!p.before_wake && p.ns == 1_000)),
        "{e:#?}"
    );
    // The culprits: the late interrupt, not the program.
    let c = super::super::verdict::culprits(std::slice::from_ref(&e));
    assert!(
        c.iter()
            .all(|c| c.kind != PartKind::Thread || c.main_cause == 0)
    );
}

#[test]
fn the_timer_threads_own_time_while_its_interrupt_was_late_is_the_interrupts() {
    // The timer thread is still current (its previous cycle) at the
    // deadline; the interrupt comes 1.79 ms late.
    let text = "\
 rtlab-timer0-50 [001] d..2. 4.000000: sched_switch: prev_comm=x prev_pid=71 prev_prio=120 prev_state=S ==> next_comm=rtlab-timer0 next_pid=50 next_prio=9
 rtlab-timer0-50 [001] d.h1. 4.001890: local_timer_entry: vector=236
 rtlab-timer0-50 [001] d.h3. 4.001891: sched_waking: comm=rtlab-timer0 pid=50 prio=9 target_cpu=001
 rtlab-timer0-50 [001] d.h1. 4.001892: local_timer_exit: vector=236
";
    let e = explain(&events(text), 0, 50, 1, 4_000_100_000, 1_795_000);
    assert_eq!(total(&e), 1_795_000);
    let late = &e.parts[0];
    assert_eq!(late.kind, PartKind::Unseen, "{e:#?}");
    assert_eq!(
        late.what,
        "unseen: interrupt delivery, a hypervisor, SMI or NMI without a tracepoint, or interrupts off (CPU busy with rtlab-timer0)"
    );
    assert_eq!(late.ns, 1_790_000);
    assert!(
        e.parts
            .iter()
            .all(|p| p.kind != PartKind::TimerThread || !p.before_wake)
    );
}

#[test]
fn a_task_woken_on_an_idle_cpu_whose_switch_was_not_logged_is_inferred_running() {
    // This kernel logs no switch out of idle on CPU 1: idle wakes the hog
    // (its own timer), leaves its idle state, and the hog is first seen
    // when the late timer interrupt lands in it.
    let text = "\
 <idle>-0 [001] d.h1. 6.000000: hrtimer_expire_entry: hrtimer=x function=hrtimer_wakeup now=1
 <idle>-0 [001] d.h3. 6.000001: sched_waking: comm=hog pid=60 prio=19 target_cpu=001
 <idle>-0 [001] d.h1. 6.000002: hrtimer_expire_exit: hrtimer=x
 <idle>-0 [001] d..1. 6.000003: cpu_idle: state=4294967295 cpu_id=1
 hog-60 [001] d.h1. 6.000120: local_timer_entry: vector=236
 hog-60 [001] d.h3. 6.000121: sched_waking: comm=rtlab-timer0 pid=50 prio=9 target_cpu=001
 hog-60 [001] d.h1. 6.000122: local_timer_exit: vector=236
 hog-60 [001] d..2. 6.000123: sched_switch: prev_comm=hog prev_pid=60 prev_prio=19 prev_state=R+ ==> next_comm=rtlab-timer0 next_pid=50 next_prio=9
";
    let e = explain(&events(text), 0, 50, 1, 6_000_100_000, 25_000);
    assert_eq!(total(&e), 25_000);
    assert!(
        e.parts
            .iter()
            .all(|p| p.kind != PartKind::TimerLateIdle && p.kind != PartKind::Idle),
        "the hog ran, not idle: {e:#?}"
    );
    let late = &e.parts[0];
    assert_eq!(
        late.what,
        "unseen: interrupt delivery, a hypervisor, SMI or NMI without a tracepoint, or interrupts off (CPU busy with hog)"
    );
    assert_eq!((late.ns, late.inferred_ns), (20_000, 20_000));
    assert!(e.cause.contains("inferred"), "{}", e.cause);
    assert!(e.timeline[0].inferred);
}

#[test]
fn only_the_stretch_before_a_tasks_first_event_is_inferred() {
    // Idle wakes the hog (its switch-in not logged); the hog's first event
    // is 50 µs later; then it runs on, seen, for 2 ms past the timer
    // thread's wake-up.
    let text = "\
 <idle>-0 [001] d.h1. 6.000000: hrtimer_expire_entry: hrtimer=x function=hrtimer_wakeup now=1
 <idle>-0 [001] d.h3. 6.000001: sched_waking: comm=hog pid=60 prio=4 target_cpu=001
 <idle>-0 [001] d.h1. 6.000002: hrtimer_expire_exit: hrtimer=x
 hog-60 [001] d.h1. 6.000052: local_timer_entry: vector=236
 hog-60 [001] d.h3. 6.000053: sched_waking: comm=rtlab-timer0 pid=50 prio=9 target_cpu=001
 hog-60 [001] d.h1. 6.000054: local_timer_exit: vector=236
 hog-60 [001] d..2. 6.002054: sched_switch: prev_comm=hog prev_pid=60 prev_prio=4 prev_state=S ==> next_comm=rtlab-timer0 next_pid=50 next_prio=9
";
    let e = explain(&events(text), 0, 50, 1, 6_000_010_000, 2_045_000);
    assert_eq!(total(&e), 2_045_000);
    let after = e.parts.iter().find(|p| p.kind == PartKind::Thread).unwrap();
    assert_eq!(
        (after.what.as_str(), after.ns, after.inferred_ns),
        ("hog", 2_000_000, 0)
    );
    let before = e.parts.iter().find(|p| p.kind == PartKind::Unseen).unwrap();
    // From the deadline (6.000010) to the hog's first event (6.000052).
    assert_eq!((before.ns, before.inferred_ns), (42_000, 42_000));
}

/// A FIFO 50 shell writing `/proc/sys/vm/compact_memory` on the timer
/// thread's CPU (TID 3580, FIFO 99), recorded with `trace.stacks switch`:
/// the kernel's text, its stack as the kernel prints it.
const COMPACTION: &str = include_str!("../../../../tests/traces/compaction-stack.txt");
const COMPACTION_DEADLINE: u64 = 13_609_199_160_970;

fn compaction(extra: &str) -> Explanation {
    let text = text::fold_stacks(format!("{COMPACTION}{extra}"));
    let mut ev = events(&text);
    ev.sort_by_key(|e| e.ts_ns);
    explain(&ev, 0, 3580, 21, COMPACTION_DEADLINE, 120_295)
}

#[test]
fn the_thread_in_a_non_preemptible_section_is_shown_with_its_kernel_stack() {
    let e = compaction("");
    assert_eq!(total(&e), 120_295);
    let [stack] = &e.stacks[..] else {
        panic!("{e:#?}")
    };
    assert_eq!(
        (stack.comm.as_str(), stack.pid, stack.at.as_str()),
        ("sh", 3575, "switch")
    );
    // The tracing machinery's own frames are left out.
    assert_eq!(
        stack.frames[..5],
        [
            "__schedule",
            "__cond_resched",
            "isolate_migratepages_block",
            "__compact_zone",
            "compact_node"
        ]
    );
    assert_eq!(
        stack.frames.last().unwrap(),
        "entry_SYSCALL_64_after_hwframe"
    );
    // Switched at 13609.199183660, 22.69 µs after the deadline.
    assert_eq!(stack.after_deadline_ns, 22_690);
    // The stack walk (to 13609.199279042) is its own part, not the timer
    // thread's.
    let walk = e
        .parts
        .iter()
        .find(|p| p.kind == PartKind::Tracing)
        .unwrap();
    assert_eq!(walk.ns, 95_382);
    let own: u64 = e
        .parts
        .iter()
        .filter(|p| p.kind == PartKind::TimerThread)
        .map(|p| p.ns)
        .sum();
    // With sh's 1.59 µs from the timer interrupt's exit to its switch:
    // the kernel's way to the timer thread.
    assert_eq!(own, 120_295 - 22_690 - 95_382 + 1_592);
    // The walk (95.4 µs) outweighs any culprit: said first, with what else
    // can hide in it.
    assert!(
        e.cause.starts_with(
            "rtlab's kernel stack walks (`trace.stacks`), or a stall of the CPU during them, \
             took 95.4 µs of 120.3 µs; besides, "
        ),
        "{}",
        e.cause
    );
    // The busy shell is named with where it was.
    assert!(
        e.cause
            .contains("sh's kernel stack as it let the CPU go: __schedule <- __cond_resched <- isolate_migratepages_block"),
        "{}",
        e.cause
    );
    // The saved window gives the kernel's text back.
    let folded = text::fold_stacks(COMPACTION.to_string());
    let line = folded.lines().find(|l| l.contains("kernel_stack")).unwrap();
    let kernel: Vec<&str> = COMPACTION
        .lines()
        .skip_while(|l| !l.contains("<stack trace>"))
        .take_while(|l| !l.contains("tracing_mark_write"))
        .collect();
    assert_eq!(text::unfold_stack(line).unwrap(), kernel.join("\n"));
}

#[test]
fn an_nmi_is_its_own_part_carved_from_what_it_interrupted() {
    // The same window, with an NMI handler's run in the late interrupt's
    // stretch (this VM has no NMIs: the line is the kernel's format).
    let nmi = "sh-3575 [001] d.Z.. 13609.199170000: nmi_handler: perf_event_nmi_handler() delta_ns: 5000 handled: 1\n";
    let e = compaction(nmi);
    assert_eq!(total(&e), 120_295);
    let n = e.parts.iter().find(|p| p.kind == PartKind::Nmi).unwrap();
    assert_eq!(
        (n.what.as_str(), n.ns),
        ("NMI perf_event_nmi_handler", 5_000)
    );
    let unseen = e.parts.iter().find(|p| p.kind == PartKind::Unseen).unwrap();
    assert_eq!(unseen.ns, 13_016 - 5_000);
    // The binary reader's form of the same record.
    let raw = "sh-3575 [001] ..... 13609.199170000: nmi_handler: handler=perf_event_nmi_handler delta_ns=5000 handled=1\n";
    assert_eq!(compaction(raw).parts, e.parts);
}

#[test]
fn only_the_stretch_before_any_event_after_the_deadline_is_unseen() {
    // The kworker logs its work item 5 µs after the deadline: from there
    // it is seen running, and the late interrupt's time is its.
    let text = "\
 kw-90 [003] d..2. 9.000000: sched_switch: prev_comm=x prev_pid=70 prev_prio=120 prev_state=S ==> next_comm=kw next_pid=90 next_prio=120
 kw-90 [003] ...1. 9.000105: workqueue_execute_start: work struct 00000000ab function=f
 kw-90 [003] d.h1. 9.000300: local_timer_entry: vector=236
 kw-90 [003] d.h3. 9.000301: sched_waking: comm=rtlab-timer0 pid=50 prio=9 target_cpu=003
 kw-90 [003] d.h1. 9.000302: local_timer_exit: vector=236
 kw-90 [003] d..2. 9.000303: sched_switch: prev_comm=kw prev_pid=90 prev_prio=120 prev_state=R+ ==> next_comm=rtlab-timer0 next_pid=50 next_prio=9
";
    let e = explain(&events(text), 0, 50, 1, 9_000_100_000, 205_000);
    assert_eq!(total(&e), 205_000);
    let of = |k: PartKind| -> u64 { e.parts.iter().filter(|p| p.kind == k).map(|p| p.ns).sum() };
    assert_eq!(of(PartKind::Unseen), 5_000, "{e:#?}");
    assert_eq!(of(PartKind::TimerLate), 195_000, "{e:#?}");
    assert!(
        e.parts
            .iter()
            .any(|p| p.what == "timer interrupt late (CPU busy with kw (work f))")
    );
}

#[test]
fn a_deadline_timer_thread_is_explained_as_a_fifo_one() {
    // A SCHED_DEADLINE timer thread (100 µs every 1 ms, TID 18339: the
    // kernel shows it at prio -1) and a nice-0 shell writing compact_memory
    // on its CPU; recorded on this VM.
    let text = include_str!("../../../../tests/traces/deadline-thread.txt");
    let (deadline, latency) = (14_913_147_351_981, 105_784);
    let e = explain(&events(text), 0, 18339, 6, deadline, latency);
    assert_eq!(total(&e), latency);
    assert_eq!(prio_in(&events(text), 18339), Some(-1));
    assert_eq!(prio_words(-1), "SCHED_DEADLINE");
    // Switched in at 14913.147453839 (the shell let the CPU go).
    assert_eq!(
        e.wake_to_switch_ns.map(|w| w + e.woken_after_ns.unwrap()),
        Some(101_858)
    );
    // The shell held the CPU while the timer interrupt was late; from the
    // interrupt's exit to its switch (2.94 µs) it was the kernel's way to
    // the timer thread.
    let sh = e.parts.iter().find(|p| p.pid == Some(18332)).unwrap();
    assert_eq!(sh.prio, Some(120));
    assert!(sh.before_wake);
    let path = e
        .parts
        .iter()
        .find(|p| p.what == "interrupt exit and switch to it")
        .unwrap();
    assert_eq!(path.ns, 147_453_839 - 147_450_895);
}

#[test]
fn the_task_running_at_a_moment_is_the_last_one_switched_in_or_seen() {
    let text = "\
 x-70 [002] d..2. 5.000000: sched_switch: prev_comm=x prev_pid=70 prev_prio=120 prev_state=S ==> next_comm=hog next_pid=60 next_prio=4
 hog-60 [002] d.h1. 5.000100: local_timer_entry: vector=236
 hog-60 [002] d.h1. 5.000101: local_timer_exit: vector=236
 hog-60 [002] d..2. 5.000300: sched_switch: prev_comm=hog prev_pid=60 prev_prio=4 prev_state=S ==> next_comm=swapper/2 next_pid=0 next_prio=120
  <idle>-0 [002] d..1. 5.000400: cpu_idle: state=1 cpu_id=2
 kw-90 [002] ...1. 5.000500: workqueue_execute_start: work struct 1 function=f
";
    let ev = events(text);
    let at = |ns: u64| running_at(&ev, 5_000_000_000 + ns).unwrap();
    let hog = at(200_000);
    assert_eq!(
        (hog.cpu, hog.comm.as_str(), hog.pid, hog.prio),
        (2, "hog", 60, Some(4))
    );
    assert_eq!(hog.running_for_ns, Some(200_000));
    let idle = at(450_000);
    assert_eq!(
        (idle.pid, idle.prio, idle.running_for_ns),
        (0, Some(120), Some(150_000))
    );
    // The switch out of idle was not logged: the task seen since, without
    // a priority or a start.
    let kw = at(600_000);
    assert_eq!(
        (kw.comm.as_str(), kw.pid, kw.prio, kw.running_for_ns),
        ("kw", 90, None, None)
    );
    assert_eq!(running_at(&ev, 4_999_999_999), None);
}

/// A FIFO 50 compaction shell and the FIFO 99 timer thread (TID 8890)
/// had used their RT share of the second on CPU 1: the kernel throttled
/// them and idled 43 ms with the timer thread runnable (dmesg: "sched: RT
/// throttling activated"). This CPU's kernel does not log switches out of
/// idle.
const THROTTLED: &str = include_str!("../../../../tests/traces/rt-throttled-idle.txt");

#[test]
fn idling_through_interrupts_while_a_woken_rt_thread_waits_is_held_off() {
    let text = text::fold_stacks(THROTTLED.to_string());
    let e = explain(&events(&text), 0, 8890, 4706, 294_595_551_014, 46_774_544);
    assert_eq!(total(&e), 46_774_544);
    // From the wake-up's interrupt's return (294.595565445) to the clock
    // read, all but the interrupts and softirqs in between: the idle
    // stretches, the inferred memfd task's, the timer thread's unlogged
    // switch-in (somewhere in the last gap, which the kernel does not say).
    let main = &e.parts[0];
    assert_eq!(main.kind, PartKind::HeldOff, "{e:#?}");
    let after_wake: u64 = e
        .parts
        .iter()
        .filter(|p| !p.before_wake && matches!(p.kind, PartKind::Irq | PartKind::Softirq))
        .map(|p| p.ns)
        .sum();
    assert_eq!(after_wake, 98_034 + 18_235);
    assert_eq!(
        main.ns,
        294_595_551_014 + 46_774_544 - 294_595_565_445 - after_wake
    );
    // Its switch-in out of idle is not logged: when is not known.
    assert_eq!((e.woken_after_ns, e.wake_to_switch_ns), (Some(8_232), None));
    // Before it, the timer interrupt came 7.4 µs late on the idle CPU.
    assert!(
        e.parts
            .iter()
            .any(|p| p.kind == PartKind::TimerLateIdle && p.ns == 7_421)
    );
    assert!(!e.parts.iter().any(|p| p.kind == PartKind::Idle), "{e:#?}");
    assert!(e.cause.contains("RT throttling"), "{}", e.cause);
    assert!(e.cause.contains("runnable"), "{}", e.cause);
}

/// A thread `prio` (kernel) on the FIFO 90 timer thread's CPU, whose timer
/// interrupt wakes it at 100.000992 and returns at 100.000995; the thread
/// lets the CPU go `switch_after_ns` later, and the timer thread reads its
/// clock 2 µs after its switch-in.
fn thread_then_switch(prio: i32, switch_after_ns: u64) -> Explanation {
    let switch = 100_000_995_000 + switch_after_ns;
    let ts = |ns: u64| format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
    let text = format!(
        " hog-60 [002] d.h2. 100.000990: local_timer_entry: vector=236
 hog-60 [002] d.h3. 100.000992: sched_waking: comm=rtlab-timer0 pid=50 prio=9 target_cpu=002
 hog-60 [002] d.h2. 100.000995: local_timer_exit: vector=236
 hog-60 [002] d..2. {}: sched_switch: prev_comm=hog prev_pid=60 prev_prio={prio} prev_state=S ==> next_comm=rtlab-timer0 next_pid=50 next_prio=9
",
        ts(switch)
    );
    let deadline = 100_000_990_000;
    explain(
        &events(&text),
        0,
        50,
        1,
        deadline,
        switch + 2_000 - deadline,
    )
}

#[test]
fn a_thread_of_the_timer_threads_own_priority_is_said_so() {
    // FIFO 90 beside FIFO 90: it keeps the CPU until it sleeps.
    let e = thread_then_switch(9, 1_000_000);
    assert_eq!(total(&e), e.latency_ns);
    assert!(
        e.cause.starts_with("thread hog (pid 60) ran 1000.0 µs")
            && e.cause.contains("does not preempt one of equal priority")
            && !e.cause.contains("non-preemptible"),
        "{}",
        e.cause
    );
}

#[test]
fn a_lower_priority_thread_is_named_for_a_long_stretch_not_for_the_switch_path() {
    // FIFO 80: 3 µs from the interrupt's exit to the switch (the timer
    // thread's own path is 2 µs): the kernel's way to the timer thread.
    let short = thread_then_switch(19, 3_000);
    assert_eq!(total(&short), short.latency_ns);
    assert!(
        short.parts.iter().all(|p| p.pid != Some(60)),
        "{:#?}",
        short.parts
    );
    let path = short
        .parts
        .iter()
        .find(|p| p.what == "interrupt exit and switch to it")
        .unwrap();
    assert_eq!((path.kind, path.ns), (PartKind::TimerThread, 3_000));
    assert!(
        crate::trace::explain::verdict::culprits(&[short])
            .iter()
            .all(|c| c.what != "hog")
    );
    // 300 µs with nothing logged: a non-preemptible section of it, or a
    // hypervisor, or a long way back from the interrupt; never the
    // thread's row (a user-space spinner at FIFO 80 was blamed so).
    let long = thread_then_switch(19, 300_000);
    assert!(
        long.cause
            .starts_with("300.0 µs of 307.0 µs unseen after the wake-up: hog held the CPU"),
        "{}",
        long.cause
    );
    assert!(
        crate::trace::explain::verdict::culprits(&[long])
            .iter()
            .all(|c| c.kind != PartKind::Thread)
    );
    // An equal priority is never the switch path, however short.
    let equal = thread_then_switch(9, 3_000);
    assert!(equal.parts.iter().any(|p| p.pid == Some(60)), "{equal:#?}");
}

#[test]
fn a_task_that_execd_in_its_run_is_named_by_its_new_command() {
    // A shell's child switched in as `sh`, exec'd `dd` (the switch away
    // shows it), while the FIFO 90 timer thread waited behind it.
    let text = "\
 rtlab-timer0-50 [002] d..2. 100.000010: sched_switch: prev_comm=rtlab-timer0 prev_pid=50 prev_prio=9 prev_state=S ==> next_comm=sh next_pid=70 next_prio=120
 sh-70 [002] d.h2. 100.001000: local_timer_entry: vector=236
 sh-70 [002] d.h3. 100.001002: sched_waking: comm=rtlab-timer0 pid=50 prio=9 target_cpu=002
 sh-70 [002] d.h2. 100.001005: local_timer_exit: vector=236
 sh-70 [002] d..2. 100.001405: sched_switch: prev_comm=dd prev_pid=70 prev_prio=120 prev_state=R+ ==> next_comm=rtlab-timer0 next_pid=50 next_prio=9
";
    let e = explain(&events(text), 0, 50, 1, 100_000_990_000, 420_000);
    assert_eq!(total(&e), 420_000);
    assert!(
        e.parts.iter().all(|p| !p.what.contains("sh")),
        "{:#?}",
        e.parts
    );
    let dd = e
        .parts
        .iter()
        .find(|p| p.pid == Some(70) && !p.before_wake)
        .unwrap();
    assert_eq!(dd.ns, 400_000);
    assert!(dd.what.ends_with("(dd held the CPU)"), "{}", dd.what);
    assert!(e.cause.contains("dd held the CPU"), "{}", e.cause);
}

#[test]
fn the_task_running_at_a_moment_is_the_one_idle_woke_though_its_switch_was_not_logged() {
    // This kernel logs no switch out of idle: idle woke the hog here, and
    // the hog's next event is the timer interrupt after the moment asked.
    let text = "\
 hog-60 [002] d..2. 5.000000: sched_switch: prev_comm=hog prev_pid=60 prev_prio=120 prev_state=S ==> next_comm=swapper/2 next_pid=0 next_prio=120
  <idle>-0 [002] d.h1. 5.000100: irq_handler_entry: irq=36 name=virtio1-req.0
  <idle>-0 [002] d.h2. 5.000101: sched_waking: comm=hog pid=60 prio=120 target_cpu=002
  <idle>-0 [002] d.h1. 5.000102: irq_handler_exit: irq=36 ret=handled
 hog-60 [002] d.h1. 5.000900: local_timer_entry: vector=236
";
    let ev = events(text);
    let t = running_at(&ev, 5_000_500_000).unwrap();
    assert_eq!(
        (t.comm.as_str(), t.pid, t.prio, t.running_for_ns),
        ("hog", 60, None, None)
    );
    // Before the wake-up, idle.
    assert_eq!(running_at(&ev, 5_000_050_000).unwrap().pid, 0);
}

#[test]
fn a_pending_tick_on_idle_delays_the_switch_and_is_not_held_off() {
    // The timer thread woken on an idle CPU; a tick comes at once, then
    // idle switches to it: the tick's time is the interrupt's, not a hold.
    let text = "\
  <idle>-0 [002] d.h1. 100.001000: local_timer_entry: vector=236
  <idle>-0 [002] d.h3. 100.001002: sched_waking: comm=rtlab-timer0 pid=50 prio=9 target_cpu=002
  <idle>-0 [002] d.h1. 100.001004: local_timer_exit: vector=236
  <idle>-0 [002] d.h1. 100.001005: local_timer_entry: vector=236
  <idle>-0 [002] d.h1. 100.001015: local_timer_exit: vector=236
  <idle>-0 [002] d..2. 100.001017: sched_switch: prev_comm=swapper/2 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rtlab-timer0 next_pid=50 next_prio=9
";
    let e = explain(&events(text), 0, 50, 1, 100_000_999_000, 20_000);
    assert_eq!(total(&e), 20_000);
    assert!(
        e.parts.iter().all(|p| p.kind != PartKind::HeldOff),
        "{e:#?}"
    );
    // Idle going back to an idle state while it waits is held off.
    let back = text.replace(
        "  <idle>-0 [002] d.h1. 100.001005",
        "  <idle>-0 [002] d..1. 100.001004: cpu_idle: state=1 cpu_id=2\n  <idle>-0 [002] d.h1. 100.001005",
    );
    let e = explain(&events(&back), 0, 50, 1, 100_000_999_000, 20_000);
    assert!(
        e.parts.iter().any(|p| p.kind == PartKind::HeldOff),
        "{e:#?}"
    );
}

#[test]
fn a_lower_priority_task_idle_lets_run_while_the_rt_thread_waits_is_held_off() {
    // The FIFO 90 timer thread woken onto its idle CPU; the kernel logs no
    // switch out of idle, and the next events are a nice-0 task's: the
    // scheduler chose it over the woken real-time thread (RT throttling or
    // the fair server), it did not preempt anything.
    let text = "\
 sh-70 [002] d..2. 100.000500: sched_switch: prev_comm=sh prev_pid=70 prev_prio=120 prev_state=R ==> next_comm=swapper/2 next_pid=0 next_prio=120
  <idle>-0 [002] d.h1. 100.001000: local_timer_entry: vector=236
  <idle>-0 [002] d.h3. 100.001002: sched_waking: comm=rtlab-timer0 pid=50 prio=9 target_cpu=002
  <idle>-0 [002] d.h1. 100.001004: local_timer_exit: vector=236
 sh-70 [002] d.h1. 100.001300: local_timer_entry: vector=236
 sh-70 [002] d.h1. 100.001310: local_timer_exit: vector=236
 sh-70 [002] d..2. 100.001400: sched_switch: prev_comm=sh prev_pid=70 prev_prio=120 prev_state=R+ ==> next_comm=rtlab-timer0 next_pid=50 next_prio=9
";
    let e = explain(&events(text), 0, 50, 1, 100_000_999_000, 403_000);
    assert_eq!(total(&e), 403_000);
    assert_eq!(e.parts[0].kind, PartKind::HeldOff, "{e:#?}");
    assert!(e.parts.iter().all(|p| p.kind != PartKind::Thread), "{e:#?}");
    assert!(!e.cause.contains("non-preemptible"), "{}", e.cause);
}

#[test]
fn a_priority_the_window_does_not_show_is_taken_from_what_is_known_of_the_task() {
    // Idle woke the FIFO 90 timer thread here; then a task the window
    // shows no switch-in or wake-up of ran 1.5 ms (its switch out of idle
    // not logged). Known to be nice 0 (from /proc), it was let run while
    // the real-time thread waited: held off.
    let text = "\
  <idle>-0 [001] d.h1. 100.001000: local_timer_entry: vector=236
  <idle>-0 [001] d.h3. 100.001002: sched_waking: comm=rtlab-timer0 pid=50 prio=9 target_cpu=001
  <idle>-0 [001] d.h1. 100.001004: local_timer_exit: vector=236
 tokio-rt-worker-75 [001] d.h1. 100.002500: local_timer_entry: vector=236
 tokio-rt-worker-75 [001] d.h1. 100.002510: local_timer_exit: vector=236
 tokio-rt-worker-75 [001] d..2. 100.002600: sched_switch: prev_comm=tokio-rt-worker prev_pid=75 prev_prio=120 prev_state=S ==> next_comm=rtlab-timer0 next_pid=50 next_prio=9
";
    let known = |pid: i32| (pid == 75).then_some(120);
    let e = explain_known(
        &events(text),
        (0, 50, 1),
        (100_000_999_000, 1_605_000, 0),
        &known,
    );
    assert_eq!(total(&e), 1_605_000);
    assert_eq!(e.parts[0].kind, PartKind::HeldOff, "{e:#?}");
    // Without its switch away (the window ends before it) and unknown
    // elsewhere, it is named with its priority unknown.
    let cut: String = text.lines().take(5).map(|l| format!("{l}\n")).collect();
    let e = explain(&events(&cut), 0, 50, 1, 100_000_999_000, 1_551_000);
    let tokio = e.parts.iter().find(|p| p.pid == Some(75)).unwrap();
    assert_eq!((tokio.kind, tokio.prio), (PartKind::Thread, None), "{e:#?}");
}

#[test]
fn a_normal_timer_threads_slack_is_its_own_part_not_the_interrupts_lateness() {
    // A SCHED_OTHER timer thread (50 µs of slack) on an idle CPU: its timer
    // fires 56.3 µs past the deadline (the thread is woken at 57 µs). 50
    // µs are the slack the kernel may use; only the 7 µs past it, to the
    // wake-up, are the interrupt's.
    let text = "\
 rtlab-timer0-50 [001] d..2. 100.000100: sched_switch: prev_comm=rtlab-timer0 prev_pid=50 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
 <idle>-0 [001] d.h1. 101.000056: hrtimer_expire_entry: hrtimer=00000000aa now=101000056300 function=hrtimer_wakeup/0x0
 <idle>-0 [001] d.h2. 101.000057: sched_waking: comm=rtlab-timer0 pid=50 prio=120 target_cpu=001
 <idle>-0 [001] d.h1. 101.000058: hrtimer_expire_exit: hrtimer=00000000aa
 <idle>-0 [001] d..2. 101.000060: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rtlab-timer0 next_pid=50 next_prio=120
 rtlab-timer0-50 [001] d..2. 101.000070: sched_switch: prev_comm=rtlab-timer0 prev_pid=50 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";
    let (deadline, latency) = (101_000_000_000, 62_000);
    let ev = events(text);
    let e = explain_known(&ev, (0, 50, 1), (deadline, latency, 50_000), &|_| None);
    assert_eq!(total(&e), latency, "{e:#?}");
    let of = |k: PartKind| {
        e.parts
            .iter()
            .filter(|p| p.kind == k)
            .map(|p| p.ns)
            .sum::<u64>()
    };
    assert_eq!(of(PartKind::TimerSlack), 50_000, "{e:#?}");
    assert_eq!(of(PartKind::TimerLateIdle), 7_000, "{e:#?}");
    assert!(
        e.cause
            .starts_with("the timer thread's own timer slack (50.0 µs of 62.0 µs)"),
        "{}",
        e.cause
    );
    assert!(e.cause.contains("PR_SET_TIMERSLACK"), "{}", e.cause);
    // Without slack (a real-time thread), all of it is the interrupt's.
    let e = explain_known(&ev, (0, 50, 1), (deadline, latency, 0), &|_| None);
    assert_eq!(of_kind(&e, PartKind::TimerSlack), 0);
    assert_eq!(of_kind(&e, PartKind::TimerLateIdle), 57_000, "{e:#?}");
    // Woken before its slack ran out (another interrupt expired it): the
    // slack ends at the wake-up.
    let e = explain_known(&ev, (0, 50, 1), (deadline, latency, 100_000), &|_| None);
    assert_eq!(of_kind(&e, PartKind::TimerSlack), 57_000, "{e:#?}");
    assert_eq!(total(&e), latency);
}

fn of_kind(e: &Explanation, k: PartKind) -> u64 {
    e.parts.iter().filter(|p| p.kind == k).map(|p| p.ns).sum()
}

use super::*;
use crate::trace::text;

/// The noise thread: TID 100 on CPU 1.
const TID: i32 = 100;

fn attr() -> (NoiseAttr, Arc<GapRing>) {
    let mut a = NoiseAttr::new(&[Watch {
        index: 0,
        cpu: 1,
        threshold_ns: 5_000,
        period_ns: 1_000_000,
    }]);
    let ring = Arc::new(GapRing::new(1024));
    a.started(0, TID, &ring);
    (a, ring)
}

fn feed(a: &mut NoiseAttr, trace: &str) {
    for e in trace.lines().filter_map(text::line) {
        a.feed(&e);
    }
}

/// A gap from `from_ns` to `to_ns` past 1 s (negative: before).
fn gap(from_ns: i64, to_ns: i64) -> Gap {
    let at = |ns: i64| (1_000_000_000 + ns) as u64;
    Gap {
        end_ns: at(to_ns),
        ns: at(to_ns) - at(from_ns),
    }
}

fn result(a: &NoiseAttr) -> NoiseAttribution {
    a.attributions().remove(0)
}

fn cause_ns(w: &WorstGap, name: &str) -> u64 {
    w.causes
        .iter()
        .filter(|c| c.name == name)
        .map(|c| c.net_ns)
        .sum()
}

/// Nested frames: a timer interrupt, a softirq at its exit with an IRQ
/// inside, a kernel thread switched in with an IRQ inside. Each owns its
/// time net of what came inside it; the noise thread's own stretches are
/// unseen.
const NESTED: &str = "\
rtlab-noise0-100 [001] d.h1. 1.000000000: local_timer_entry: vector=236
rtlab-noise0-100 [001] d.h2. 1.000001000: hrtimer_expire_entry: hrtimer=a function=tick_nohz_handler now=1
rtlab-noise0-100 [001] d.h2. 1.000002000: hrtimer_expire_exit: hrtimer=a
rtlab-noise0-100 [001] d.h1. 1.000003000: local_timer_exit: vector=236
rtlab-noise0-100 [001] ..s1. 1.000003500: softirq_entry: vec=1 [action=TIMER]
rtlab-noise0-100 [001] d.h1. 1.000004000: irq_handler_entry: irq=36 name=virtio1-req.0
rtlab-noise0-100 [001] d.h1. 1.000006000: irq_handler_exit: irq=36 ret=handled
rtlab-noise0-100 [001] ..s1. 1.000008000: softirq_exit: vec=1 [action=TIMER]
rtlab-noise0-100 [001] d..2. 1.000009000: sched_switch: prev_comm=rtlab-noise0 prev_pid=100 prev_prio=120 prev_state=R+ ==> next_comm=kworker/1:1 next_pid=33 next_prio=120
kworker/1:1-33 [001] d.h1. 1.000010000: irq_handler_entry: irq=36 name=virtio1-req.0
kworker/1:1-33 [001] d.h1. 1.000011000: irq_handler_exit: irq=36 ret=handled
kworker/1:1-33 [001] d..2. 1.000020000: sched_switch: prev_comm=kworker/1:1 prev_pid=33 prev_prio=120 prev_state=I ==> next_comm=rtlab-noise0 next_pid=100 next_prio=120
rtlab-noise0-100 [001] d.h1. 1.000030000: local_timer_entry: vector=236
rtlab-noise0-100 [001] d.h1. 1.000031000: local_timer_exit: vector=236
  bash-7 [000] d.h1. 1.000005000: irq_handler_entry: irq=9 name=acpi
";

#[test]
fn nested_frames_count_net_and_a_switched_in_thread_is_named() {
    let (mut a, ring) = attr();
    feed(&mut a, NESTED);
    ring.push(gap(-500, 20_500));
    a.drain(false);
    let r = result(&a);
    assert_eq!(r.gaps, 1);
    let w = &r.worst[0];
    assert_eq!(w.class, NoiseClass::Thread);
    assert_eq!(cause_ns(w, "local_timer"), 3_000);
    assert_eq!(cause_ns(w, "TIMER"), 2_500);
    assert_eq!(cause_ns(w, "IRQ 36 virtio1-req.0"), 3_000);
    assert_eq!(cause_ns(w, "kworker/1:1"), 10_000);
    // Nothing of the other CPU, nor the timer callback, nor the noise
    // thread itself.
    assert_eq!(w.causes.len(), 4, "{:?}", w.causes);
    assert_eq!(w.unseen_ns, 2_500);
    assert_eq!(r.unseen_ns, 2_500);
    let kw = &r.culprits[0];
    assert_eq!(
        (kw.class, kw.name.as_str(), kw.pid, kw.gaps, kw.net_ns),
        (NoiseClass::Thread, "kworker/1:1", Some(33), 1, 10_000)
    );
    assert_eq!(
        r.classes.thread,
        ClassTotal {
            gaps: 1,
            net_ns: 10_000
        }
    );
    assert_eq!(
        r.classes.irq,
        ClassTotal {
            gaps: 0,
            net_ns: 6_000
        }
    );
    assert_eq!(
        r.classes.softirq,
        ClassTotal {
            gaps: 0,
            net_ns: 2_500
        }
    );
    let text = super::text::closing(&r);
    assert!(text.contains("1 gaps ≥ 5.0 µs"), "{text}");
    assert!(text.contains("thread 1 (kworker/1:1 pid 33 1)"), "{text}");
    assert!(text.contains("unseen 2.5 µs"), "{text}");
}

/// A gap no event covers is hardware noise, all of it unseen.
#[test]
fn a_gap_no_event_covers_is_hw() {
    let (mut a, ring) = attr();
    feed(
        &mut a,
        "rtlab-noise0-100 [001] d.h1. 1.000050000: local_timer_entry: vector=236\n",
    );
    ring.push(gap(10_000, 22_000));
    a.drain(false);
    let r = result(&a);
    assert_eq!(
        r.classes.hw,
        ClassTotal {
            gaps: 1,
            net_ns: 12_000
        }
    );
    assert_eq!((r.unseen_ns, r.worst[0].class), (12_000, NoiseClass::Hw));
    assert!(r.worst[0].causes.is_empty() && r.culprits.is_empty());
    assert_eq!(r.periods.len(), 1);
    assert_eq!(r.periods[0].gaps.hw, 1);
    assert_eq!(r.period_origin_ns, Some(1_000_010_000));
}

/// Causes reaching over a gap's edges count for the part inside it.
#[test]
fn overlap_at_the_edges_is_clipped() {
    let (mut a, ring) = attr();
    feed(
        &mut a,
        "\
rtlab-noise0-100 [001] d.h1. 1.000010000: irq_handler_entry: irq=36 name=virtio1-req.0
rtlab-noise0-100 [001] d.h1. 1.000020000: irq_handler_exit: irq=36 ret=handled
rtlab-noise0-100 [001] d..2. 1.000025000: sched_switch: prev_comm=rtlab-noise0 prev_pid=100 prev_prio=120 prev_state=R+ ==> next_comm=hog next_pid=200 next_prio=120
hog-200 [001] d..2. 1.000040000: sched_switch: prev_comm=hog prev_pid=200 prev_prio=120 prev_state=R ==> next_comm=rtlab-noise0 next_pid=100 next_prio=120
",
    );
    ring.push(gap(15_000, 30_000));
    a.drain(false);
    let w = &result(&a).worst[0];
    assert_eq!(cause_ns(w, "IRQ 36 virtio1-req.0"), 5_000);
    assert_eq!(cause_ns(w, "hog"), 5_000);
    assert_eq!(w.unseen_ns, 5_000);
    // Of equal causes, the first is the main one.
    assert_eq!(w.class, NoiseClass::Irq);
}

/// A real-time noise thread left runnable for a normal thread (RT
/// throttling, the fair server) is `throttled`, not thread noise; one
/// preempted by a higher priority is thread noise.
#[test]
fn a_real_time_poller_held_off_for_a_lower_priority_is_throttled() {
    let (mut a, ring) = attr();
    feed(
        &mut a,
        "\
rtlab-noise0-100 [001] d..2. 1.000010000: sched_switch: prev_comm=rtlab-noise0 prev_pid=100 prev_prio=59 prev_state=R+ ==> next_comm=kworker/1:2 next_pid=33 next_prio=120
kworker/1:2-33 [001] d..2. 1.000012000: sched_switch: prev_comm=kworker/1:2 prev_pid=33 prev_prio=120 prev_state=I ==> next_comm=hog next_pid=200 next_prio=120
hog-200 [001] d..2. 1.000040000: sched_switch: prev_comm=hog prev_pid=200 prev_prio=120 prev_state=R ==> next_comm=rtlab-noise0 next_pid=100 next_prio=59
rtlab-noise0-100 [001] d..2. 1.000050000: sched_switch: prev_comm=rtlab-noise0 prev_pid=100 prev_prio=59 prev_state=R+ ==> next_comm=rt-hog next_pid=300 next_prio=9
rt-hog-300 [001] d..2. 1.000080000: sched_switch: prev_comm=rt-hog prev_pid=300 prev_prio=9 prev_state=S ==> next_comm=rtlab-noise0 next_pid=100 next_prio=59
rtlab-noise0-100 [001] d.h1. 1.000200000: local_timer_entry: vector=236
",
    );
    ring.push(gap(10_000, 40_000));
    ring.push(gap(50_000, 80_000));
    a.drain(false);
    let r = result(&a);
    // The kworker first, then the hog it switched to: both while the
    // poller was held off.
    assert_eq!(r.classes.throttled.gaps, 1);
    assert_eq!(r.classes.throttled.net_ns, 30_000);
    assert_eq!(r.classes.thread.gaps, 1);
    assert!(crate::trace::noise::text::closing(&r).contains("RT throttling or the fair server"));
}

/// A gap whose end is newer than the CPU's newest event waits for the
/// next read, and is then attributed with the events inside it.
#[test]
fn a_gap_waits_for_its_events() {
    let (mut a, ring) = attr();
    feed(
        &mut a,
        "rtlab-noise0-100 [001] d.h1. 1.000010000: local_timer_entry: vector=236\n\
         rtlab-noise0-100 [001] d.h1. 1.000011000: local_timer_exit: vector=236\n",
    );
    ring.push(gap(12_000, 30_000));
    a.drain(false);
    let r = result(&a);
    assert_eq!((r.gaps, r.gaps_waiting), (0, 1));
    feed(
        &mut a,
        "rtlab-noise0-100 [001] d.h1. 1.000015000: irq_handler_entry: irq=36 name=virtio1-req.0\n\
         rtlab-noise0-100 [001] d.h1. 1.000025000: irq_handler_exit: irq=36 ret=handled\n\
         rtlab-noise0-100 [001] d.h1. 1.000040000: local_timer_entry: vector=236\n",
    );
    a.drain(false);
    let r = result(&a);
    assert_eq!((r.gaps, r.gaps_waiting), (1, 0));
    assert_eq!(
        r.classes.irq,
        ClassTotal {
            gaps: 1,
            net_ns: 10_000
        }
    );
    assert_eq!(r.unseen_ns, 8_000);
}

/// An NMI is logged as its handler returns, with its length (in both
/// readers' forms): its run is its own, out of what it landed in.
#[test]
fn an_nmi_is_placed_by_its_length() {
    let (mut a, ring) = attr();
    feed(
        &mut a,
        "\
rtlab-noise0-100 [001] d.Z1. 1.000010000: nmi_handler: perf_event_nmi_handler() delta_ns: 4000 handled: 1
rtlab-noise0-100 [001] d..2. 1.000020000: sched_switch: prev_comm=rtlab-noise0 prev_pid=100 prev_prio=120 prev_state=R+ ==> next_comm=hog next_pid=200 next_prio=120
hog-200 [001] d.Z1. 1.000030000: nmi_handler: handler=perf_event_nmi_handler delta_ns=5000 handled=1
hog-200 [001] d..2. 1.000040000: sched_switch: prev_comm=hog prev_pid=200 prev_prio=120 prev_state=R ==> next_comm=rtlab-noise0 next_pid=100 next_prio=120
rtlab-noise0-100 [001] d.h1. 1.000050000: local_timer_entry: vector=236
",
    );
    ring.push(gap(5_000, 12_000));
    ring.push(gap(20_000, 40_000));
    a.drain(false);
    let r = result(&a);
    let by_start = |s: u64| r.worst.iter().find(|w| w.start_ns == s).unwrap();
    let first = by_start(1_000_005_000);
    assert_eq!(first.class, NoiseClass::Nmi);
    assert_eq!(cause_ns(first, "NMI perf_event_nmi_handler"), 4_000);
    assert_eq!(first.unseen_ns, 3_000);
    let second = by_start(1_000_020_000);
    assert_eq!(second.class, NoiseClass::Thread);
    assert_eq!(cause_ns(second, "hog"), 15_000);
    assert_eq!(cause_ns(second, "NMI perf_event_nmi_handler"), 5_000);
    assert_eq!(
        r.classes.nmi,
        ClassTotal {
            gaps: 1,
            net_ns: 9_000
        }
    );
}

/// Local timer interrupts every 100 µs for 10 s: with no gap waiting
/// the timeline keeps [`HORIZON_NS`] at most; a gap waiting keeps it from
/// its start until it is attributed.
#[test]
fn the_timeline_is_let_go_once_no_gap_needs_it() {
    // Under emulation (.ci/run's boards) its size takes a minute: the
    // host's run of the same test is the one that counts.
    if std::env::var_os("RTLAB_TEST_EMULATED").is_some() {
        return;
    }
    let (mut a, ring) = attr();
    let ticks = |a: &mut NoiseAttr, from_ms: u64, to_ms: u64| {
        for us in (from_ms * 1000..to_ms * 1000).step_by(100) {
            let s = 1_000_000 + us;
            for (t, what) in [(s, "entry"), (s + 2, "exit")] {
                let line = format!(
                    "rtlab-noise0-100 [001] d.h1. {}.{:06}: local_timer_{what}: vector=236",
                    t / 1_000_000,
                    t % 1_000_000
                );
                a.feed(&text::line(&line).unwrap());
            }
        }
        a.drain(false);
    };
    ticks(&mut a, 0, 10_000);
    // 2 s of ticks: two stretches each (the interrupt, the thread).
    let horizon = 2 * (HORIZON_NS / 100_000) as usize;
    assert!(a.held() <= horizon + 4, "{}", a.held());
    // A gap 2.5 s long, beyond the events read, waits and keeps its
    // timeline from its start (past the horizon of the next read).
    ring.push(Gap {
        end_ns: 12_000_000_000,
        ns: 2_500_000_000,
    });
    ticks(&mut a, 10_000, 10_900);
    assert_eq!(result(&a).gaps_waiting, 1);
    ticks(&mut a, 10_900, 14_000);
    let r = result(&a);
    assert_eq!(r.gaps, 1);
    assert_eq!(
        r.classes.irq,
        ClassTotal {
            gaps: 1,
            net_ns: 25_000 * 2_000
        }
    );
    assert_eq!(r.gaps_late, 0);
    assert!(a.held() <= horizon + 4, "{}", a.held());
}

/// A command's PIDs are one culprit row, its costliest PID named.
#[test]
fn a_commands_pids_are_folded() {
    let (mut a, ring) = attr();
    let mut trace = String::new();
    for (i, pid) in [(0u64, 300), (1, 301), (2, 302)] {
        let at = 10 + i * 100;
        trace.push_str(&format!(
            "rtlab-noise0-100 [001] d..2. 1.000{at:03}000: sched_switch: prev_comm=rtlab-noise0 prev_pid=100 prev_prio=120 prev_state=R+ ==> next_comm=sh next_pid={pid} next_prio=120\n\
             sh-{pid} [001] d..2. 1.000{:03}000: sched_switch: prev_comm=sh prev_pid={pid} prev_prio=120 prev_state=x ==> next_comm=rtlab-noise0 next_pid=100 next_prio=120\n",
            at + 10 + i
        ));
        ring.push(gap(at as i64 * 1000, (at + 10 + i) as i64 * 1000));
    }
    trace.push_str("rtlab-noise0-100 [001] d.h1. 1.001000000: local_timer_entry: vector=236\n");
    feed(&mut a, &trace);
    a.drain(false);
    let r = result(&a);
    assert_eq!(r.culprits.len(), 1, "{:?}", r.culprits);
    let sh = &r.culprits[0];
    assert_eq!(
        (sh.pids, sh.pid, sh.gaps, sh.net_ns),
        (3, Some(302), 3, 33_000)
    );
    assert_eq!(r.culprits_folded, 2);
    assert!(super::text::closing(&r).contains("thread 3 (sh (3 pids) 3)"));
}

/// At the end every gap is attributed; what ran last is taken to run on.
#[test]
fn at_the_end_every_gap_is_attributed() {
    let (mut a, ring) = attr();
    feed(
        &mut a,
        "rtlab-noise0-100 [001] d..2. 1.000010000: sched_switch: prev_comm=rtlab-noise0 prev_pid=100 prev_prio=120 prev_state=R+ ==> next_comm=hog next_pid=200 next_prio=120\n",
    );
    ring.push(gap(5_000, 30_000));
    a.drain(false);
    assert_eq!(result(&a).gaps, 0);
    a.drain(true);
    let r = result(&a);
    assert_eq!(
        r.classes.thread,
        ClassTotal {
            gaps: 1,
            net_ns: 20_000
        }
    );
}

/// Hostile text: names with blanks and `key=` text, frames closed that
/// were never opened, a switch refused, give no panic and no cause of
/// another CPU.
#[test]
fn hostile_text_is_survived() {
    let (mut a, ring) = attr();
    feed(
        &mut a,
        "\
x next_pid=1-100 [001] d.h1. 1.000001000: softirq_exit: vec=1 [action=TIMER]
x next_pid=1-100 [001] d.h1. 1.000002000: irq_handler_exit: irq=1 ret=handled
rtlab-noise0-100 [001] d..2. 1.000003000: sched_switch: prev_comm=a next_pid=5 prev_pid=100 prev_prio=120 prev_state=R ==> next_comm= next_pid=9 x next_pid=7 next_prio=1
rtlab-noise0-100 [001] d.Z1. 1.000004000: nmi_handler: handler=x delta_ns=-5 handled=1
rtlab-noise0-100 [001] d.Z1. 1.000005000: nmi_handler: x() delta_ns: 99999999999999 handled: 1
rtlab-noise0-100 [001] ..s1. 1.000006000: softirq_entry: vec=1
",
    );
    ring.push(gap(0, 10_000));
    a.drain(true);
    let r = result(&a);
    assert_eq!(r.gaps, 1);
    assert!(r.unseen_ns <= 10_000);
}

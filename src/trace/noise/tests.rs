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

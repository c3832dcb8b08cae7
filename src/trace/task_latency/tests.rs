use super::*;
use crate::trace::text;

fn spec() -> TaskLatencySpec {
    TaskLatencySpec {
        index: 0,
        task: TaskSelector::Name("loop".into()),
        period_ns: Some(1_000_000),
        deadline_ns: Some(500_000),
        threshold_ns: Some(100_000),
        samples: 100,
        thread: None,
    }
}

fn feed(t: &mut Tracker, lines: &str) {
    for l in lines.lines().filter(|l| !l.trim().is_empty()) {
        t.feed(&text::line(l).unwrap_or_else(|| panic!("{l}")));
    }
}

/// A cycle of `loop` (TID 7) on CPU 1: armed for `expiry` µs, the timer
/// handled `late` µs after it, then `hog` (TID 9, FIFO) holds the CPU
/// until the switch-in at `run` µs; it sleeps again at `sleep` µs.
fn cycle(expiry: u64, late: u64, run: u64, sleep: u64) -> String {
    let s = |us: u64| format!("{}.{:06}", us / 1_000_000, us % 1_000_000);
    let ns = |us: u64| us * 1000;
    format!(
        "loop-7 [001] d.... {}: hrtimer_start: hrtimer=0000000011 function=hrtimer_wakeup expires={} softexpires={} mode=ABS was_armed=0\n\
         loop-7 [001] d.... {}: sched_switch: prev_comm=loop prev_pid=7 prev_prio=49 prev_state=S ==> next_comm=hog next_pid=9 next_prio=39\n\
         hog-9 [001] d.h.. {}: hrtimer_expire_entry: hrtimer=0000000011 now={} function=hrtimer_wakeup/0x0\n\
         hog-9 [001] d.h.. {}: sched_waking: comm=loop pid=7 prio=49 target_cpu=001\n\
         hog-9 [001] d.h.. {}: hrtimer_expire_exit: hrtimer=0000000011\n\
         hog-9 [001] d.... {}: sched_switch: prev_comm=hog prev_pid=9 prev_prio=39 prev_state=S ==> next_comm=loop next_pid=7 next_prio=49\n\
         loop-7 [001] d.... {}: sched_switch: prev_comm=loop prev_pid=7 prev_prio=49 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n",
        s(expiry - 900),
        ns(expiry),
        ns(expiry),
        s(expiry - 800),
        s(expiry + late),
        ns(expiry + late),
        s(expiry + late + 1),
        s(expiry + late + 2),
        s(run),
        s(sleep),
    )
}

#[test]
fn a_timer_wake_up_is_split_into_its_timers_lateness_and_who_held_the_cpu() {
    let mut t = Tracker::new(spec());
    feed(&mut t, &cycle(10_000, 5, 10_300, 10_310));
    feed(&mut t, &cycle(11_000, 7, 11_020, 11_030));
    let r = t.finish(0, &[]);
    let th = &r.threads[0];
    assert_eq!((th.tid, th.comm.as_str()), (7, "loop"));
    assert_eq!((th.wake_ups, th.timer_wake_ups), (2, 2));
    let w = &th.wake_up_samples[0];
    assert_eq!(w.expiry_ns, Some(10_000_000));
    assert_eq!(w.timer_late_ns, Some(5_000));
    assert_eq!(w.wake_to_run_ns, 300_000 - 5_000 - 1_000);
    assert_eq!(w.latency_ns, 300_000);
    assert_eq!(th.wake_up_samples[1].latency_ns, 20_000);
    // The period seen between the switch-ins, the run time to the sleep.
    assert_eq!(th.period.max_ns, 11_020_000 - 10_300_000);
    assert_eq!(th.run_time.max_ns, 10_000);
    // Released at 10 ms, asleep again at 10.31 ms: past the 500 µs
    // deadline? No: 310 µs. Neither is the second.
    assert_eq!(th.deadline_misses, Some(0));
    // The late one is explained, its parts adding up, the hog blamed.
    assert_eq!(th.explained.len(), 1);
    let e = &th.explained[0];
    assert_eq!(e.parts.iter().map(|p| p.1).sum::<u64>(), 300_000);
    assert_eq!(e.blame.as_deref(), Some("hog-9"));
    assert!(e.parts.contains(&("timer interrupt late".into(), 5_000)));
    assert!(e.parts.contains(&("hog-9".into(), 300_000 - 5_000)));
}

#[test]
fn a_cycle_ending_past_its_deadline_is_a_miss() {
    // One cycle: no period seen yet, so the thread is named.
    let mut t = Tracker::new(TaskLatencySpec {
        thread: Some("loop".into()),
        ..spec()
    });
    feed(&mut t, &cycle(10_000, 5, 10_600, 10_700));
    let r = t.finish(0, &[]);
    assert_eq!(r.threads[0].deadline_misses, Some(1));
}

/// Thread `waiter` (TID 8) of the task, woken by an interrupt at `at` µs
/// on CPU 0, switched in 10 µs later, asleep again 5 µs after.
fn woken_by_irq(at: u64) -> String {
    let s = |us: u64| format!("{}.{:06}", us / 1_000_000, us % 1_000_000);
    format!(
        "<idle>-0 [000] d.h.. {}: irq_handler_entry: irq=36 name=virtio1-req.0\n\
         <idle>-0 [000] d.h.. {}: sched_waking: comm=waiter pid=8 prio=120 target_cpu=000\n\
         <idle>-0 [000] d.h.. {}: irq_handler_exit: irq=36 ret=handled\n\
         <idle>-0 [000] d.... {}: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=waiter next_pid=8 next_prio=120\n\
         waiter-8 [000] d.... {}: sched_switch: prev_comm=waiter prev_pid=8 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n",
        s(at),
        s(at + 1),
        s(at + 2),
        s(at + 10),
        s(at + 15),
    )
}

/// The cycle's thread wakes every ms, `waiter` every second: the trace
/// in time order.
fn two_threads() -> String {
    let mut lines = String::new();
    for ms in 10..3_000u64 {
        if ms % 1000 == 500 {
            lines.push_str(&woken_by_irq(ms * 1000 - 300));
        }
        lines.push_str(&cycle(ms * 1000, 5, ms * 1000 + 20, ms * 1000 + 30));
    }
    lines
}

#[test]
fn the_period_applies_to_the_thread_that_cycles_near_it_or_the_one_named() {
    // Under emulation (.ci/run's boards) its size takes a minute: the
    // host's run of the same test is the one that counts.
    if std::env::var_os("RTLAB_TEST_EMULATED").is_some() {
        return;
    }
    let spec = || TaskLatencySpec {
        task: TaskSelector::Pid(7),
        ..spec()
    };
    let by_tid =
        |r: &TaskLatencyResult, tid: i32| r.threads.iter().find(|t| t.tid == tid).unwrap().clone();
    let mut t = Tracker::new(spec());
    t.add_tids([8]);
    feed(&mut t, &two_threads());
    let r = t.finish(0, &[]);
    let (cyc, waiter) = (by_tid(&r, 7), by_tid(&r, 8));
    assert_eq!(waiter.wake_ups, 3);
    assert!(cyc.runs_the_cycle && !waiter.runs_the_cycle);
    assert!(cyc.jitter.is_some() && cyc.deadline_misses == Some(0));
    // Its 1 s waits are not jitter of a 1 ms cycle.
    assert_eq!(
        (waiter.jitter.as_ref(), waiter.deadline_misses),
        (None, None)
    );
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    // Named (by TID), the period applies to the waiter alone.
    let mut t = Tracker::new(TaskLatencySpec {
        thread: Some("8".into()),
        ..spec()
    });
    t.add_tids([8]);
    feed(&mut t, &two_threads());
    let r = t.finish(0, &[]);
    let (cyc, waiter) = (by_tid(&r, 7), by_tid(&r, 8));
    assert!(!cyc.runs_the_cycle && cyc.jitter.is_none());
    assert!(waiter.runs_the_cycle);
    assert_eq!(waiter.jitter.as_ref().map(|j| j.samples), Some(2));
    // A period no thread runs near: said so, with what each did.
    let mut t = Tracker::new(TaskLatencySpec {
        period_ns: Some(100_000_000),
        deadline_ns: None,
        ..spec()
    });
    t.add_tids([8]);
    feed(&mut t, &two_threads());
    let r = t.finish(0, &[]);
    assert!(r.threads.iter().all(|t| t.jitter.is_none()));
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("no thread cycled near the stated period")
                && n.contains("loop (TID 7) 1000.")),
        "{:?}",
        r.notes
    );
}

#[test]
fn a_wake_up_by_an_interrupt_names_it_and_an_unlogged_switch_in_is_inferred() {
    let mut t = Tracker::new(spec());
    feed(
        &mut t,
        "loop-7 [000] d.... 1.000000: sched_switch: prev_comm=loop prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n\
         <idle>-0 [000] d.h.. 1.000100: irq_handler_entry: irq=36 name=virtio1-req.0\n\
         <idle>-0 [000] d.h.. 1.000105: sched_waking: comm=loop pid=7 prio=120 target_cpu=000\n\
         <idle>-0 [000] d.h.. 1.000110: irq_handler_exit: irq=36 ret=handled\n\
         loop-7 [000] ..... 1.000140: sys_exit: NR 0 = 4096\n",
    );
    let r = t.finish(0, &[]);
    let th = &r.threads[0];
    assert_eq!(
        (th.wake_ups, th.timer_wake_ups, th.switch_ins_inferred),
        (1, 0, 1)
    );
    assert_eq!(th.wakers, [("IRQ 36 virtio1-req.0".to_string(), 1)]);
    assert_eq!(th.wake_up_samples[0].wake_to_run_ns, 35_000);
}

#[test]
fn other_tasks_are_not_measured() {
    let mut t = Tracker::new(spec());
    feed(
        &mut t,
        "<idle>-0 [000] d.h.. 1.000105: sched_waking: comm=other pid=8 prio=120 target_cpu=000\n\
         <idle>-0 [000] d.... 1.000200: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=other next_pid=8 next_prio=120\n",
    );
    assert!(t.finish(0, &[]).threads.is_empty());
}

#[test]
fn an_interrupt_over_the_hog_is_its_own_part_and_the_parts_still_add_up() {
    let mut t = Tracker::new(spec());
    let mut lines = cycle(10_000, 5, 10_300, 10_310);
    // An interrupt of 20 µs while the hog held the CPU.
    let at = lines.find("hog-9 [001] d.... 0.010300").unwrap();
    lines.insert_str(
        at,
        "hog-9 [001] d.h.. 0.010100: irq_handler_entry: irq=36 name=virtio1-req.0\n\
         hog-9 [001] d.h.. 0.010120: irq_handler_exit: irq=36 ret=handled\n",
    );
    feed(&mut t, &lines);
    let e = &t.finish(0, &[]).threads[0].explained[0];
    assert_eq!(e.parts.iter().map(|p| p.1).sum::<u64>(), 300_000, "{e:?}");
    assert!(e.parts.contains(&("IRQ 36 virtio1-req.0".into(), 20_000)));
    assert!(
        e.parts
            .contains(&("hog-9".into(), 300_000 - 5_000 - 20_000))
    );
}

/// `cycle` with the timer armed `slack` µs of slack: `expires` is the
/// requested expiry plus the slack.
fn slack_cycle(expiry: u64, slack: u64, late: u64, run: u64, sleep: u64) -> String {
    let c = cycle(expiry, late, run, sleep);
    c.replacen(
        &format!("expires={}", expiry * 1000),
        &format!("expires={}", (expiry + slack) * 1000),
        1,
    )
}

#[test]
fn the_timer_slack_is_its_own_part_and_lateness_counts_from_expires() {
    let mut t = Tracker::new(spec());
    // 50 µs of slack, handled 57 µs after the requested expiry: 7 µs late.
    feed(&mut t, &slack_cycle(10_000, 50, 57, 10_300, 10_310));
    // Handled within the slack (20 µs of 50): not late at all.
    feed(&mut t, &slack_cycle(11_000, 50, 20, 11_030, 11_040));
    let r = t.finish(0, &[]);
    let th = &r.threads[0];
    let (a, b) = (&th.wake_up_samples[0], &th.wake_up_samples[1]);
    assert_eq!(a.expiry_ns, Some(10_000_000), "the requested expiry");
    assert_eq!(
        (a.timer_slack_ns, a.timer_late_ns),
        (Some(50_000), Some(7_000))
    );
    assert_eq!((b.timer_slack_ns, b.timer_late_ns), (Some(50_000), Some(0)));
    assert_eq!((a.latency_ns, b.latency_ns), (300_000, 30_000));
    let slack = th.timer_slack.as_ref().unwrap();
    assert_eq!(
        (slack.samples, slack.min_ns, slack.max_ns),
        (2, 50_000, 50_000)
    );
    assert_eq!(th.timer_late.max_ns, 7_000);
    let e = &th.explained[0];
    assert_eq!(e.parts.iter().map(|p| p.1).sum::<u64>(), 300_000, "{e:?}");
    assert!(e.parts.contains(&(PART_SLACK.into(), 50_000)), "{e:?}");
    assert!(e.parts.contains(&(PART_LATE.into(), 7_000)), "{e:?}");
    assert_eq!(e.blame.as_deref(), Some("hog-9"));
    let text = crate::report::task_latency::text(&r);
    assert!(
        text.contains("timer slack (asked)        50.0 / 50.0 / 50.0 / 50.0"),
        "{text}"
    );
    assert!(text.contains("PR_SET_TIMERSLACK"), "{text}");
}

/// The kernel's count of the same thread (BPF) is its own row under the
/// trace's; a thread only the kernel counted is listed with its name
/// escaped; a refusal says the figures are the trace's alone.
#[test]
fn the_kernels_count_is_shown_beside_the_traces_or_its_refusal() {
    use super::kernel::{BpfThread, TaskLatencyBpf};
    let mut t = Tracker::new(spec());
    feed(&mut t, &slack_cycle(10_000, 50, 57, 10_300, 10_310));
    let mut r = t.finish(0, &[]);
    let tid = r.threads[0].tid;
    let row = |tid: i32, comm: &str| BpfThread {
        tid,
        comm: comm.into(),
        wake_ups: 3,
        mean_ns: 200_000,
        p50_ns: 250_000,
        p99_ns: 290_000,
        p999_ns: 290_000,
        max_ns: 300_000,
    };
    r.bpf = Some(TaskLatencyBpf {
        refused: None,
        threads: vec![row(tid, "x"), row(tid + 1, "odd\nrtlab: name")],
        lost: 0,
    });
    let text = crate::report::task_latency::text(&r);
    assert!(
        text.contains(
            "wake-up to run (BPF)       - / 250.0 / 290.0 / 300.0   (3 wake-ups counted in the kernel)"
        ),
        "{text}"
    );
    assert!(text.contains("no wake-up in the trace"), "{text}");
    assert!(!text.contains("\nrtlab: name"), "{text}");
    r.bpf = Some(TaskLatencyBpf {
        refused: Some("this process lacks CAP_BPF".into()),
        ..TaskLatencyBpf::default()
    });
    let text = crate::report::task_latency::text(&r);
    assert!(
        text.contains("not counted in the kernel (BPF): this process lacks CAP_BPF; these figures are the trace's alone"),
        "{text}"
    );
}

/// The live figures (live view, metrics) are the result's own: counts,
/// extremes, sum, deadline misses where the period applies (none for a
/// thread it does not), and the metrics buckets hold every wake-up in the
/// bucket of its latency.
#[test]
fn the_live_figures_are_the_results_own() {
    let mut t = Tracker::new(TaskLatencySpec {
        task: TaskSelector::Pid(7),
        deadline_ns: Some(35_000),
        samples: 10_000,
        ..spec()
    });
    t.add_tids([8]);
    let mut lines = two_threads();
    // Two cycles past the 35 µs deadline (released at the expiry, asleep
    // 40 and 45 µs later); the others end 30 µs after theirs.
    lines.push_str(&cycle(3_000_000, 5, 3_000_020, 3_000_040));
    lines.push_str(&cycle(3_001_000, 5, 3_001_030, 3_001_045));
    feed(&mut t, &lines);
    let live = t.live();
    let r = t.finish(0, &[]);
    assert_eq!(live.len(), r.threads.len());
    for (l, th) in live.iter().zip(&r.threads) {
        assert_eq!((l.tid, &l.comm), (th.tid, &th.comm));
        assert_eq!(l.wake_ups, th.latency.samples);
        assert_eq!((l.min_ns, l.max_ns), (th.latency.min_ns, th.latency.max_ns));
        assert_eq!(l.sum_ns as f64 / l.wake_ups as f64, th.latency.mean_ns);
        assert_eq!(l.deadline_misses, th.deadline_misses);
        assert_eq!(l.buckets.iter().sum::<u64>(), th.latency.samples);
        let mut by_hand = vec![0u64; l.buckets.len()];
        for w in th.wake_up_samples.iter().filter(|w| w.tid == th.tid) {
            by_hand[crate::stats::metric_buckets::metric_bucket(w.latency_ns)] += 1;
        }
        assert_eq!(th.wake_up_samples.len() as u64, th.wake_ups);
        assert_eq!(l.buckets, by_hand, "TID {}", th.tid);
    }
    let cyc = live.iter().find(|l| l.tid == 7).unwrap();
    assert_eq!(cyc.deadline_misses, Some(2));
    assert_eq!(cyc.cur_ns, 30_000);
    assert_eq!(
        live.iter().find(|l| l.tid == 8).unwrap().deadline_misses,
        None
    );
}

#[test]
fn a_loop_behind_its_releases_misses_every_cycle_it_catches_up() {
    // Released at 10 ms, held off by the hog until 12.5 ms; the loop's
    // next two releases (11 and 12 ms) are past when it arms them: each
    // is woken while the loop still runs (no sleep, no switch), and only
    // the 13 ms one sleeps. Three cycles ended past the 500 µs deadline,
    // not one.
    let mut t = Tracker::new(TaskLatencySpec {
        thread: Some("loop".into()),
        ..spec()
    });
    let mut lines = cycle(10_000, 5, 12_500, 12_501);
    // cycle() ends with the sleep at 12.501 ms: take it off, the loop
    // runs on.
    lines.truncate(lines.trim_end().rfind('\n').unwrap() + 1);
    let catch_up = |expiry: u64, at: u64| {
        format!(
            "loop-7 [001] d.... 0.{at:06}: hrtimer_start: hrtimer=0000000011 function=hrtimer_wakeup expires={e} softexpires={e} mode=ABS was_armed=0\n\
             loop-7 [001] d.h.. 0.{a1:06}: hrtimer_expire_entry: hrtimer=0000000011 now={n} function=hrtimer_wakeup/0x0\n\
             loop-7 [001] d.h.. 0.{a1:06}: sched_waking: comm=loop pid=7 prio=49 target_cpu=001\n\
             loop-7 [001] d.h.. 0.{a1:06}: hrtimer_expire_exit: hrtimer=0000000011\n",
            e = expiry * 1000,
            a1 = at + 1,
            n = (at + 1) * 1000,
        )
    };
    lines.push_str(&catch_up(11_000, 12_505));
    lines.push_str(&catch_up(12_000, 12_515));
    lines.push_str(
        "loop-7 [001] d.... 0.012525: hrtimer_start: hrtimer=0000000011 function=hrtimer_wakeup expires=13000000 softexpires=13000000 mode=ABS was_armed=0\n\
         loop-7 [001] d.... 0.012526: sched_switch: prev_comm=loop prev_pid=7 prev_prio=49 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n",
    );
    feed(&mut t, &lines);
    let r = t.finish(0, &[]);
    let th = &r.threads[0];
    assert_eq!(th.wake_ups, 3);
    assert_eq!(th.deadline_misses, Some(3));
}

#[test]
fn a_threads_start_and_its_exit_are_no_cycles() {
    // The new-user check: a program rtlab starts is let go by a wake-up of
    // no timer of its own, sets up for 2 ms, then arms its first timer; and
    // its exit path after its last wake-up took 2.5 ms. Neither is a cycle
    // past its 500 µs deadline.
    let mut t = Tracker::new(TaskLatencySpec {
        thread: Some("loop".into()),
        ..spec()
    });
    let start = "\
 rtlab-5 [001] d.... 0.008000: sched_waking: comm=loop pid=7 prio=120 target_cpu=001
 rtlab-5 [001] d.... 0.008001: sched_switch: prev_comm=rtlab prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=loop next_pid=7 next_prio=120
";
    let mut lines = start.to_string();
    // Its first cycle on time (released at 10 ms, runs at 10.02 ms) after
    // 2 ms of set-up, the cycle's own arming at 9.1 ms ending nothing.
    lines.push_str(&cycle(10_000, 5, 10_020, 10_030));
    // Its last wake-up, then its exit: 2.5 ms to the final switch.
    lines.push_str(&cycle(11_000, 5, 11_020, 11_030).replace(
        "loop-7 [001] d.... 0.011030: sched_switch: prev_comm=loop prev_pid=7 prev_prio=49 prev_state=S",
        "loop-7 [001] d.... 0.011029: sched_process_exit: comm=loop pid=7 prio=120\n loop-7 [001] d.... 0.013530: sched_switch: prev_comm=loop prev_pid=7 prev_prio=49 prev_state=X",
    ));
    feed(&mut t, &lines);
    let r = t.finish(0, &[]);
    let th = &r.threads[0];
    assert_eq!(th.wake_ups, 3, "{th:?}");
    assert_eq!(th.deadline_misses, Some(0), "{th:?}");
}

#[test]
fn the_cpu_is_held_by_the_largest_part_or_by_nobody_named() {
    // The new-user check: "CPU held by softirq RCU" for 9.2 µs of a 3.5 ms
    // wake-up that no event covered.
    let mut t = Tracker::new(spec());
    let _ = t.thread(7, "loop");
    let w = WakeUp {
        tid: 7,
        kind: WakeKind::Other,
        cpu: 1,
        expiry_ns: None,
        timer_slack_ns: None,
        timer_late_ns: None,
        wake_to_run_ns: 3_500_000,
        latency_ns: 3_500_000,
        run_at_ns: 10_000_000,
        waker: "x".into(),
    };
    let part = |s: &str, ns: u64| (s.to_string(), ns);
    let parts = vec![
        part("wake-up and switch (no event)", 3_367_000),
        part("loop-7", 120_000),
        part("softirq RCU", 9_200),
    ];
    t.keep_explained(7, w.clone(), parts);
    t.keep_explained(
        7,
        w,
        vec![part("hog-9", 300_000), part("softirq RCU", 9_200)],
    );
    let blames: Vec<_> = t.threads[&7]
        .explained
        .iter()
        .map(|e| e.blame.clone())
        .collect();
    assert_eq!(blames, vec![None, Some("hog-9".to_string())]);
}

#[test]
fn a_timer_armed_in_the_threads_context_that_is_no_wait_ends_no_cycle() {
    // The tick restarted at an interrupt's exit (nohz_full), logged under
    // the running thread, is not the thread's next wait: its cycle,
    // released at 10 ms and asleep at 10.7 ms, is a miss of its 500 µs.
    let mut t = Tracker::new(TaskLatencySpec {
        thread: Some("loop".into()),
        ..spec()
    });
    let lines = cycle(10_000, 5, 10_020, 10_700).replace(
        "loop-7 [001] d.... 0.010700: sched_switch",
        "loop-7 [001] d.h.. 0.010030: hrtimer_start: hrtimer=0000000022 function=tick_nohz_handler expires=10031000 softexpires=10031000 mode=ABS|PINNED_HARD was_armed=0\n loop-7 [001] d.... 0.010700: sched_switch",
    );
    assert!(lines.contains("tick_nohz_handler"), "{lines}");
    feed(&mut t, &lines);
    let r = t.finish(0, &[]);
    assert_eq!(r.threads[0].deadline_misses, Some(1));
}

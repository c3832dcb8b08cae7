use super::*;
use crate::trace::text;

fn audit(text: &str, cpus: &[usize], measured: &[i32]) -> Audit {
    let mut a = Audit::new(cpus);
    a.set_measured(measured);
    for e in text.lines().filter_map(text::line) {
        a.feed(&e);
    }
    a
}

fn row<'a>(r: &'a AuditReport, what: &str) -> &'a AuditRow {
    r.rows
        .iter()
        .find(|x| x.what == what)
        .unwrap_or_else(|| panic!("no row {what}: {:#?}", r.rows))
}

const TRACE: &str = "\
  <idle>-0 [001] d.h1. 1.000000: local_timer_entry: vector=236
  <idle>-0 [001] d.h2. 1.000002: hrtimer_expire_entry: hrtimer=a function=hrtimer_wakeup now=1
  <idle>-0 [001] d.h3. 1.000003: sched_waking: comm=rtlab-timer0 pid=100 prio=9 target_cpu=001
  <idle>-0 [001] d.h2. 1.000005: hrtimer_expire_exit: hrtimer=a
  <idle>-0 [001] d.h1. 1.000006: local_timer_exit: vector=236
  <idle>-0 [001] d..2. 1.000010: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rtlab-timer0 next_pid=100 next_prio=9
rtlab-timer0-100 [001] d..2. 1.000020: sched_switch: prev_comm=rtlab-timer0 prev_pid=100 prev_prio=9 prev_state=S ==> next_comm=hog next_pid=200 next_prio=120
     hog-200 [001] d.h1. 1.000100: irq_handler_entry: irq=36 name=virtio1-req.0
     hog-200 [001] d.h1. 1.000104: irq_handler_exit: irq=36 ret=handled
     hog-200 [001] ..s1. 1.000105: softirq_entry: vec=4 [action=BLOCK]
     hog-200 [001] d.h1. 1.000106: irq_handler_entry: irq=36 name=virtio1-req.0
     hog-200 [001] d.h1. 1.000108: irq_handler_exit: irq=36 ret=handled
     hog-200 [001] ..s1. 1.000115: softirq_exit: vec=4 [action=BLOCK]
     hog-200 [001] d.h1. 1.000200: local_timer_entry: vector=236
     hog-200 [001] d.h2. 1.000201: hrtimer_expire_entry: hrtimer=b function=tick_nohz_handler now=2
     hog-200 [001] d.h2. 1.000211: hrtimer_expire_exit: hrtimer=b
     hog-200 [001] d.h1. 1.000212: local_timer_exit: vector=236
     bash-300 [000] d..2. 1.000250: ipi_send_cpu: cpu=1 callsite=ttwu_queue_wakelist+0x11d/0x150 callback=generic_smp_call_function_single_interrupt+0x0/0x10
     hog-200 [001] d.h1. 1.000260: call_function_single_entry: vector=251
     hog-200 [001] d.h1. 1.000262: call_function_single_exit: vector=251
     hog-200 [001] d..2. 1.000300: sched_switch: prev_comm=hog prev_pid=200 prev_prio=120 prev_state=R ==> next_comm=kworker/1:1 next_pid=50 next_prio=120
kworker/1:1-50 [001] ..... 1.000301: workqueue_execute_start: work struct 00000000deadbeef: function vmstat_update
kworker/1:1-50 [001] ..... 1.000311: workqueue_execute_end: work struct 00000000deadbeef: function vmstat_update
kworker/1:1-50 [001] d..2. 1.000320: sched_switch: prev_comm=kworker/1:1 prev_pid=50 prev_prio=120 prev_state=I ==> next_comm=swapper/1 next_pid=0 next_prio=120
     bash-300 [000] d..2. 1.000400: sched_switch: prev_comm=bash prev_pid=300 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
";

#[test]
fn every_source_is_counted_with_net_times_and_judged() {
    let mut a = audit(TRACE, &[1], &[100]);
    assert_eq!(a.unknown_tasks(), vec![100, 200, 50]);
    a.learn(
        100,
        TaskInfo {
            kernel: false,
            allowed: vec![1],
            cpuset: Some("/rt".into()),
        },
    );
    a.learn(
        200,
        TaskInfo {
            kernel: false,
            allowed: vec![0, 1],
            cpuset: Some("/".into()),
        },
    );
    a.learn(
        50,
        TaskInfo {
            kernel: true,
            allowed: vec![1],
            cpuset: Some("/".into()),
        },
    );
    let r = a.finish(
        &Promises {
            isolcpus: vec![1],
            nohz_full: vec![],
            partition: Some(("rt".into(), "/rt".into(), vec![1])),
        },
        0,
    );
    // The measured thread's own timer belongs; its interrupt too.
    let t = row(&r, "wake-up of a measured thread");
    assert!(t.belongs && t.count == 1 && t.total_ns == 3_000);
    let li = row(&r, "local timer interrupt (measured threads' timers only)");
    assert!(li.belongs);
    assert_eq!(li.total_ns, 3_000); // 6 µs less the 3 µs timer
    // The tick does not, and the interrupt that ran it neither.
    let tick = row(&r, "scheduler tick");
    assert!(!tick.belongs && tick.count == 1 && tick.total_ns == 10_000);
    assert_eq!(r.ticks_busy, vec![(1, 1)]);
    assert!(!row(&r, "local timer interrupt").belongs);
    // Two handlers, one nested in the softirq: net times.
    let irq = row(&r, "IRQ 36 virtio1-req.0");
    assert_eq!((irq.count, irq.total_ns, irq.max_ns), (2, 6_000, 4_000));
    assert_eq!(row(&r, "softirq BLOCK").total_ns, 8_000);
    // The IPI and its sender.
    assert_eq!(row(&r, "function-call IPI").total_ns, 2_000);
    let sent = row(&r, "ttwu_queue_wakelist from bash");
    assert_eq!((sent.kind, sent.count), (SourceKind::IpiSent, 1));
    // The hog ran 280 µs less 4+2+2+... of interrupts.
    let hog = r.rows.iter().find(|x| x.pid == Some(200)).unwrap();
    // (the handler nested in the softirq is in the softirq's gross time)
    let interrupts = 4_000 + 10_000 + 12_000 + 2_000;
    assert_eq!(hog.total_ns, 280_000 - interrupts);
    assert!(!hog.belongs);
    // The per-CPU kworker belongs; its work item does not.
    let kw = r.rows.iter().find(|x| x.pid == Some(50)).unwrap();
    assert_eq!(kw.kind, SourceKind::KernelThread);
    assert!(kw.belongs);
    let work = row(&r, "vmstat_update");
    assert!(!work.belongs && work.total_ns == 10_000);
    // The measured thread belongs; bash on CPU 0 is not audited.
    assert!(r.rows.iter().find(|x| x.pid == Some(100)).unwrap().belongs);
    assert!(r.rows.iter().all(|x| x.cpu == 1 && x.pid != Some(300)));
    // isolcpus broken by the hog (allowed on CPU 0 too), the partition
    // by the hog (outside /rt) and the IRQ.
    let iso = r.promises.iter().find(|p| p.promise == "isolcpus").unwrap();
    assert_eq!(iso.kept, Some(false));
    assert!(iso.detail.contains("hog (pid 200)"), "{iso:?}");
    let part = r
        .promises
        .iter()
        .find(|p| p.promise == "partition rt")
        .unwrap();
    assert_eq!(part.kept, Some(false));
    assert!(
        part.detail.contains("hog (pid 200)") && part.detail.contains("IRQ 36"),
        "{part:?}"
    );
    assert!(!part.detail.contains("kworker"), "{part:?}");
    let nohz = r
        .promises
        .iter()
        .find(|p| p.promise == "nohz_full")
        .unwrap();
    assert_eq!(nohz.kept, None);
}

#[test]
fn per_cpu_kernel_threads_are_told_from_unbound_ones() {
    assert!(per_cpu_kthread("ksoftirqd/3", 3));
    assert!(per_cpu_kthread("kworker/3:1H", 3));
    assert!(!per_cpu_kthread("kworker/u8:2", 3));
    assert!(!per_cpu_kthread("ksoftirqd/2", 3));
    assert!(!per_cpu_kthread("myapp/3", 3));
}

#[test]
fn a_partition_not_made_is_said_not_made() {
    let none = Promises {
        isolcpus: vec![],
        nohz_full: vec![],
        partition: None,
    };
    let c = partition_check(1, &none, &[], &HashMap::new());
    assert_eq!((c.promise.as_str(), c.kept), ("partition rt", None));
    assert!(c.detail.contains("no rt cpuset partition"), "{c:?}");
    // A partition elsewhere: not made for this CPU either.
    let elsewhere = Promises {
        partition: Some(("rt".into(), "/rt".into(), vec![2])),
        ..none
    };
    assert_eq!(
        partition_check(1, &elsewhere, &[], &HashMap::new()).kept,
        None
    );
    assert_eq!(
        partition_check(2, &elsewhere, &[], &HashMap::new()).kept,
        Some(true)
    );
}

#[test]
fn an_nmi_is_counted_with_the_time_its_handler_took() {
    // The kernel's text, and the binary reader's form of the same record.
    let text = "\
     hog-200 [001] d.Z1. 1.000100: nmi_handler: perf_event_nmi_handler() delta_ns: 4200 handled: 1
     hog-200 [001] d.Z1. 1.000200: nmi_handler: handler=perf_event_nmi_handler delta_ns=1800 handled=1
";
    let r = audit(text, &[1], &[]).finish(&Promises::default(), 0);
    let nmi = row(&r, "NMI perf_event_nmi_handler");
    assert_eq!(
        (nmi.kind, nmi.count, nmi.total_ns, nmi.max_ns),
        (SourceKind::Nmi, 2, 6_000, 4_200)
    );
    assert!(!nmi.belongs);
}

#[test]
fn a_loop_of_short_lived_processes_is_one_row_named_after_its_exec() {
    // A shell starts `dd` after `dd` on CPU 1: each child is switched in
    // as `sh` and leaves as `dd`.
    let mut text = String::new();
    for (i, pid) in (400..403).enumerate() {
        let t = |us: usize| format!("1.{:06}", 100 + i * 100 + us);
        text.push_str(&format!(
            "  <idle>-0 [001] d..2. {}: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=sh next_pid={pid} next_prio=120\n\
             sh-{pid} [001] d..2. {}: sched_switch: prev_comm=dd prev_pid={pid} prev_prio=120 prev_state=D ==> next_comm=swapper/1 next_pid=0 next_prio=120\n",
            t(0),
            t(10 + i)
        ));
    }
    let r = audit(&text, &[1], &[]).finish(&Promises::default(), 0);
    let tasks: Vec<&AuditRow> = r
        .rows
        .iter()
        .filter(|x| x.kind == SourceKind::Task)
        .collect();
    let [dd] = &tasks[..] else {
        panic!("{tasks:#?}")
    };
    assert_eq!((dd.what.as_str(), dd.pids, dd.count), ("dd", 3, 3));
    assert_eq!(dd.total_ns, 33_000);
    assert_eq!(dd.who(), "dd (3 pids: 402, 401, 400)");
}

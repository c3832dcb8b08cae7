//! The noise attribution on real events, without a run: a trace stream
//! started by hand with a noise thread on the last online CPU, and on that
//! CPU a FIFO helper that runs 30 µs every 10 ms and clocks its own runs.
//! The gaps that overlap the helper's runs must be the helper's, and the
//! helper's time inside them between what it clocked of itself and what
//! the scheduler counted of it.
//! Needs root and tracefs.

use crate::fixtures;
use rtlab::measure::noise::{self, CounterChoice, NoiseSpec};
use rtlab::sched::{Policy, Sched};
use rtlab::stats::noise::{Gap, GapRing};
use rtlab::sys::SysRoot;
use rtlab::sys::journal::{Journal, Owner};
use rtlab::sys::os;
use rtlab::trace::consumer::{NoiseLearned, Promises, StreamSpec};
use rtlab::trace::noise::NoiseClass;
use rtlab::trace::stream::TraceStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The helper's runs (CLOCK_MONOTONIC ns), its TID, and its time on the
/// CPU as the scheduler counted it from its first run to its last
/// (`schedstat`: kernel time around its runs included, as in the trace).
struct Helper {
    tid: i32,
    runs: Vec<(u64, u64)>,
    on_cpu_ns: u64,
}

/// The scheduler's count of the calling thread's time on a CPU (ns).
fn on_cpu_ns() -> u64 {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    text.split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Runs 30 µs every 10 ms on `cpu` at FIFO 50 until `stop`.
fn helper(cpu: usize, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Result<Helper, String>> {
    std::thread::spawn(move || {
        os::set_affinity(0, &[cpu]).map_err(|e| e.to_string())?;
        let fifo = Sched {
            policy: Policy::Fifo,
            priority: 50,
        };
        os::set_sched(0, fifo).map_err(|e| e.to_string())?;
        let mut runs = Vec::with_capacity(1024);
        let mut next = os::monotonic_ns() + 10_000_000;
        let mut first = None;
        while !stop.load(Ordering::Relaxed) && runs.len() < 1000 {
            os::sleep_until_ns(next);
            let start = os::monotonic_ns();
            first.get_or_insert_with(on_cpu_ns);
            let mut end = start;
            while end - start < 30_000 {
                end = os::monotonic_ns();
            }
            runs.push((start, end));
            next += 10_000_000;
        }
        // Asleep once more: the last run's time is counted by then.
        os::sleep_until_ns(os::monotonic_ns() + 1_000_000);
        let on_cpu_ns = on_cpu_ns().saturating_sub(first.unwrap_or(0));
        let tid = os::gettid();
        Ok(Helper {
            tid,
            runs,
            on_cpu_ns,
        })
    })
}

fn spec(cpu: usize, root: &SysRoot) -> NoiseSpec {
    let c = rtlab::sys::counter_choice::choose(root);
    NoiseSpec {
        index: 0,
        cpu,
        // Below the helper, above the machine's other tasks.
        sched: Sched {
            policy: Policy::Fifo,
            priority: 40,
        },
        threshold_ns: 5_000,
        period_ns: 1_000_000_000,
        runtime_ns: 1_000_000_000,
        duration_ns: None,
        offset_ns: 0,
        warmup_ns: 0,
        stop_above_ns: None,
        memmove_bytes: 0,
        linear_ns: 10_000,
        counter: CounterChoice {
            kind: c.kind,
            hz: c.hz,
        },
        cpuset: None,
    }
}

/// `[a, b)` ∩ `[c, d)` (ns).
fn overlap(a: (u64, u64), b: (u64, u64)) -> u64 {
    a.1.min(b.1).saturating_sub(a.0.max(b.0))
}

#[test]
fn noise_attr_gives_a_fifo_helpers_runs_to_it() {
    let test = test_name!();
    let _machine = fixtures::machine_shared();
    if !fixtures::is_root() {
        fixtures::path_taken(test, "not root: no trace stream");
        return;
    }
    let root = SysRoot::real();
    let online = fixtures::online_cpus();
    let cpu = *online.last().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let name = format!("run-{}-noise-attr.journal", std::process::id());
    let mut journal = Journal::open(&root, &dir.path().join("j"), &name, Owner::Run).unwrap();
    let noise_spec = spec(cpu, &root);
    let noise_hz = noise_spec.counter.hz;
    let stream_spec = StreamSpec {
        noise: vec![noise_spec.clone()],
        ..StreamSpec::default()
    };
    let mut stream = TraceStream::start(&root, &mut journal, &stream_spec, &online).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let handles = noise::start(
        vec![noise_spec],
        &root,
        stop.clone(),
        noise::RING_GAPS,
        || {},
    )
    .unwrap();
    // The test reads the thread's ring and hands each gap on: it keeps
    // them all, the attribution gives sums.
    let ring = handles[0].ring.clone();
    let handed = Arc::new(GapRing::new(noise::RING_GAPS));
    let tid = handles[0].live.tid.load(Ordering::Relaxed);
    stream.watch_noise(vec![NoiseLearned {
        index: 0,
        tid,
        ring: handed.clone(),
    }]);
    let helper_stop = Arc::new(AtomicBool::new(false));
    let helper = helper(cpu, helper_stop.clone());
    let mut gaps: Vec<Gap> = Vec::new();
    let hand_on = |gaps: &mut Vec<Gap>| {
        let from = gaps.len();
        ring.take(gaps);
        gaps[from..].iter().for_each(|g| handed.push(*g));
    };
    for _ in 0..60 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        hand_on(&mut gaps);
        stream.look(&[], &[], &[]);
    }
    helper_stop.store(true, Ordering::Relaxed);
    let helper = helper.join().unwrap().unwrap();
    noise::stop_all(&handles, &stop);
    let outcomes: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
    hand_on(&mut gaps);
    let results = stream.finish(&[], &[], &Promises::default());
    drop(journal.replay_and_close());
    assert!(outcomes[0].2.error.is_none(), "{:?}", outcomes[0].2.error);
    let a = &results.noise[0];
    eprintln!("[{test}] {}", rtlab::trace::noise::text::closing(a));
    assert_eq!(a.gaps, gaps.len() as u64);
    assert_eq!((a.gaps_dropped, handed.dropped()), (0, 0));
    // The gaps that overlap the helper's runs, and its time inside them
    // as it clocked itself.
    let spans: Vec<(u64, u64)> = gaps.iter().map(|g| (g.start_ns(), g.end_ns)).collect();
    let hit: Vec<&(u64, u64)> = spans
        .iter()
        .filter(|g| helper.runs.iter().any(|r| overlap(**g, *r) > 0))
        .collect();
    let clocked: u64 = hit
        .iter()
        .map(|g| helper.runs.iter().map(|r| overlap(**g, *r)).sum::<u64>())
        .sum();
    let row = a
        .culprits
        .iter()
        .find(|c| c.class == NoiseClass::Thread && c.pid == Some(helper.tid));
    let row = row.unwrap_or_else(|| panic!("no row for the helper: {a:#?}"));
    eprintln!(
        "[{test}] helper: {} runs, {} gaps over them, {} its main cause; {} ns on the CPU, {} ns clocked in user space, {} ns attributed; lost events {}",
        helper.runs.len(),
        hit.len(),
        row.gaps,
        helper.on_cpu_ns,
        clocked,
        row.net_ns,
        a.lost_events
    );
    assert!(!hit.is_empty() && a.lost_events == 0, "{a:#?}");
    // Its main cause in 90% of them at least: a gap over one of its runs
    // may be mostly the host's, or a throttled window's (191 of 202 seen
    // in a CI run whose poller RT throttling held off for 99.6 ms).
    assert!(row.gaps * 100 >= hit.len() as u64 * 90, "{a:#?}");
    assert!(row.gaps <= hit.len() as u64);
    // Every one of its runs was inside a gap (the noise thread polls all
    // the time, below it). Its time in the trace, from its switch-in to
    // its switch-out less the interrupts inside, lies between its clock in
    // user space (which misses its kernel time around each run) and the
    // scheduler's count (which charges it from the start of the schedule()
    // that switches it in, and the interrupts inside its runs).
    // A gap's end is the clock read just after the counter read that ends
    // it: a preemption or a host stall between the two places the gap
    // late by that much (seen once: 37 µs, a 102 µs gap starting 6.7 µs
    // after a run it held). Such a run is one the next gap could hold,
    // moved back at most 200 µs; at most one run in a hundred.
    let outside: Vec<_> = helper
        .runs
        .iter()
        .filter(|r| !spans.iter().any(|g| overlap(*g, **r) > 0))
        .map(|r| {
            let next = spans.iter().filter(|g| g.0 > r.0).min_by_key(|g| g.0);
            (r, next)
        })
        .collect();
    let placed_late = |(r, g): &(&(u64, u64), Option<&(u64, u64)>)| {
        g.is_some_and(|g| g.1 - g.0 >= r.1 - r.0 && g.0 - r.0 <= 200_000)
    };
    assert!(
        outside.iter().all(placed_late) && outside.len() * 100 <= helper.runs.len(),
        "runs outside every gap (run, next gap), counter at {} Hz: {outside:?}",
        noise_hz
    );
    if !outside.is_empty() {
        eprintln!("[{test}] runs held by a gap placed late: {outside:?}");
    }
    assert!(
        (clocked..=helper.on_cpu_ns).contains(&row.net_ns),
        "{} ns attributed to the helper, {clocked} ns clocked, {} ns on the CPU",
        row.net_ns,
        helper.on_cpu_ns
    );
}

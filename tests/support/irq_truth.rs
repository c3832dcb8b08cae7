//! IRQ-to-task latency by brute force over a trace's text, written apart
//! from rtlab's parser and matcher: the truth its tests compare with (the
//! unit tests on recorded and generated traces, the integration tests on a
//! trace recorded beside a real run).

/// One event line as the kernel writes it: (CPU, flags, µs since boot,
/// event, fields, the running task's comm).
pub fn raw(line: &str) -> Option<(usize, &str, u64, &str, &str, &str)> {
    let (task, rest) = line.split_once(" [")?;
    let comm = task.trim().rsplit_once('-').map_or("", |t| t.0);
    let (cpu, rest) = rest.split_once("] ")?;
    let mut words = rest.split_whitespace();
    let flags = words.next()?;
    let stamp = words.next()?.strip_suffix(':')?;
    let (s, us) = stamp.split_once('.')?;
    let ts = s.parse::<u64>().ok()? * 1_000_000 + us.parse::<u64>().ok()?;
    let (_, rest) = rest.split_once(": ")?;
    let (name, fields) = rest.split_once(": ")?;
    Some((cpu.parse().ok()?, flags, ts, name, fields, comm))
}

/// The value of `key=` among the fields.
pub fn value<'a>(fields: &'a str, key: &str) -> Option<&'a str> {
    fields
        .split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
}

/// What brute force finds.
#[derive(Debug, Default)]
pub struct Truth {
    /// (handler exit in µs, delay to the switch-in in µs), by exit.
    pub samples: Vec<(u64, u64)>,
    /// Handler exits whose wake-up found the task running.
    pub running: u64,
    /// Wake-ups whose switch-in the trace does not hold: the task ran
    /// (an event in its context, or a later waking) before any logged
    /// switch-in of it. No sample: the next logged one is not theirs.
    pub unlogged: u64,
}

impl Truth {
    /// The delays (µs) of the exits in `[from, to]` (µs), sorted.
    pub fn delays_within(&self, from: u64, to: u64) -> Vec<u64> {
        let mut d: Vec<u64> = self
            .samples
            .iter()
            .filter(|s| (from..=to).contains(&s.0))
            .map(|s| s.1)
            .collect();
        d.sort_unstable();
        d
    }
}

/// For each exit of `irq`: the first waking of `comm` in interrupt context
/// (flags `h` or `s`) before the IRQ's next entry. If `comm`'s last logged
/// switch before that waking switched it in, it was running: no sample.
/// Else the delay from the exit to its next logged switch-in, unless the
/// task ran before it (see [`Truth::unlogged`]).
pub fn truth(text: &str, irq: &str, comm: &str) -> Truth {
    type Raw<'a> = (usize, &'a str, u64, &'a str, &'a str, &'a str);
    let ev: Vec<Raw> = text.lines().filter_map(raw).collect();
    let mut out = Truth::default();
    let irq_event = |e: &Raw, name: &str| e.3 == name && value(e.4, "irq") == Some(irq);
    let switch_names =
        |e: &Raw, side: &str| e.3 == "sched_switch" && value(e.4, side) == Some(comm);
    for (i, x) in ev.iter().enumerate() {
        if !irq_event(x, "irq_handler_exit") {
            continue;
        }
        let end = (i + 1..ev.len())
            .find(|&j| irq_event(&ev[j], "irq_handler_entry"))
            .unwrap_or(ev.len());
        let Some(w) = (i + 1..end).find(|&j| {
            ev[j].3 == "sched_waking"
                && value(ev[j].4, "comm") == Some(comm)
                && ev[j].1.contains(['h', 's'])
        }) else {
            continue;
        };
        let last = ev[..w]
            .iter()
            .rev()
            .find(|e| switch_names(e, "prev_comm") || switch_names(e, "next_comm"));
        if last.is_some_and(|e| switch_names(e, "next_comm")) {
            out.running += 1;
            continue;
        }
        let Some(s) = (w + 1..ev.len()).find(|&j| switch_names(&ev[j], "next_comm")) else {
            continue;
        };
        let ran = (w + 1..s).any(|j| {
            ev[j].5 == comm || (ev[j].3 == "sched_waking" && value(ev[j].4, "comm") == Some(comm))
        });
        if ran {
            out.unlogged += 1;
        } else {
            out.samples.push((x.2, ev[s].2 - x.2));
        }
    }
    out
}

/// The delay (µs) from the exit of `irq`'s handler at `exit_us` (within
/// 1 µs, the text's resolution) to `comm`'s next logged switch-in: one
/// sample, measured by brute force whatever woke the task (a wake-up the
/// two classify apart, by the IRQ's thread or a timer softirq, is still
/// a delay both can measure).
pub fn delay_after_exit(text: &str, irq: &str, comm: &str, exit_us: u64) -> Option<u64> {
    let ev: Vec<_> = text.lines().filter_map(raw).collect();
    let i = ev.iter().position(|e| {
        e.3 == "irq_handler_exit" && value(e.4, "irq") == Some(irq) && e.2.abs_diff(exit_us) <= 1
    })?;
    let s = ev[i + 1..]
        .iter()
        .find(|e| e.3 == "sched_switch" && value(e.4, "next_comm") == Some(comm))?;
    Some(s.2 - ev[i].2)
}

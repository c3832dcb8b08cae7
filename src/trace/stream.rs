//! The trace stream: rtlab traces every CPU in a second tracefs instance
//! of its own (not in overwrite mode: events are kept and consumed), reads
//! it on the main thread while the run goes on, and feeds each event, in
//! time order, to every consumer the run's spec asks for (registered in
//! [`crate::trace::STREAM_CONSUMERS`]; see [`crate::trace::consumer`]). It
//! names none: it enables the union of the tracepoints they declare, keeps
//! their filters, tells them what the run learned, and lets each finish
//! into its part of the results. Events the kernel could not keep are
//! counted from its own per-CPU counters.

use crate::config::TaskSelector;
use crate::sys::SysRoot;
use crate::sys::journal::Journal;
use crate::sys::tasks::Pinned;
use crate::sys::trace::{self, Instance, Recording};
use crate::trace::consumer::{self, Consumer, Learned, NoiseLearned, StreamEnd, Tracepoint};
use crate::trace::consumer::{Promises, StreamCost};
pub use crate::trace::consumer::{StreamResults, StreamSpec};
use crate::trace::source::{Reader, Source};

/// Ring buffer per CPU (KiB): with a look every 20 ms, room for bursts
/// of about 100k events a second per CPU.
pub const BUFFER_KB: u64 = 4096;
/// Most bytes read from the pipe at one look (the rest waits for the
/// next).
const MAX_READ: usize = 16 << 20;

/// A running trace stream.
pub struct TraceStream {
    root: SysRoot,
    /// Declared before the instance: fields drop in order, and the
    /// instance cannot be removed while its pipes are open. Its buffers
    /// are kept, with their capacity, from look to look: freeing a large
    /// buffer would make the kernel flush the TLBs of every CPU this
    /// process runs on, an IPI to the measured CPUs.
    source: Source,
    instance: Instance,
    /// The analyses fed, as registered ([`crate::trace::STREAM_CONSUMERS`]).
    consumers: Vec<Box<dyn Consumer>>,
    /// The filtered tracepoints enabled, with their filter in effect.
    filters: Vec<(&'static str, String)>,
    cpus: Vec<usize>,
    /// `/proc/interrupts` totals per IRQ number before the trace started,
    /// and just after.
    irqs_before: Vec<(u32, u64)>,
    irqs_started: Vec<(u32, u64)>,
    events: u64,
    /// Tracepoints this kernel lacks.
    pub missing: Vec<String>,
    /// Those of them a consumer cannot do without.
    required_missing: Vec<String>,
    /// What the stream cost the main thread.
    cost: StreamCost,
    /// The processes given by PID, pinned when the stream started (None:
    /// gone by then).
    pins: Vec<(i32, Option<Pinned>)>,
    /// The noise threads, once started (their gaps for the attribution).
    noise: Vec<NoiseLearned>,
}

impl TraceStream {
    /// The noise threads started, told once (their TIDs and gap rings).
    pub fn watch_noise(&mut self, noise: Vec<NoiseLearned>) {
        self.noise = noise;
    }

    /// Mounts tracefs if needed, makes the stream's instance on every
    /// online CPU (both through `journal`) and starts it with every
    /// tracepoint the consumers `spec` asks for declare. Err says why
    /// there is no stream.
    pub fn start(
        root: &SysRoot,
        journal: &mut Journal,
        spec: &StreamSpec,
        online: &[usize],
    ) -> Result<Self, trace::TraceError> {
        TraceStream::start_then(root, journal, spec, online, &mut || {})
    }

    /// [`TraceStream::start`], calling `recording` the moment the
    /// instance records (a count kept beside the trace starts with it).
    pub fn start_then(
        root: &SysRoot,
        journal: &mut Journal,
        spec: &StreamSpec,
        online: &[usize],
        recording: &mut dyn FnMut(),
    ) -> Result<Self, trace::TraceError> {
        let started = std::time::Instant::now();
        let mut consumers = Vec::new();
        for register in crate::trace::STREAM_CONSUMERS {
            register(spec, &mut consumers);
        }
        let tracefs = trace::mount(root, journal)?;
        let instance = Instance::create(root, journal, &tracefs, "-stream")?;
        let irqs_before = crate::sys::irq::totals(root);
        let wanted = consumer::union(&consumers);
        let (plain, filtered): (Vec<Tracepoint>, Vec<Tracepoint>) =
            wanted.iter().partition(|t| !t.filtered);
        let events = chosen(&instance, &plain);
        let mut missing = instance.start(&Recording {
            cpus: online.to_vec(),
            buffer_kb: BUFFER_KB,
            overwrite: false,
            events: events.clone(),
            extra: Vec::new(),
        })?;
        recording();
        let irqs_started = crate::sys::irq::totals(root);
        let pins = pin_tasks(root, &mut consumers);
        // The filtered events go on now, before the decoder is made (it
        // reads the kernel's symbols, tens of ms): a task's timers armed
        // meanwhile would be missed.
        let filtered = chosen(&instance, &filtered);
        let filters = enable_filtered(&instance, &consumers, &filtered, &mut missing);
        // Decoded: every event of the stream, and those enabled with a
        // filter above.
        let decoded: Vec<&str> = events.iter().chain(&filtered).copied().collect();
        let source = Source::open(root, &instance, online, &decoded)?;
        let mut stream = TraceStream {
            root: root.clone(),
            instance,
            source,
            consumers,
            filters,
            cpus: online.to_vec(),
            irqs_before,
            irqs_started,
            events: 0,
            missing: Vec::new(),
            required_missing: Vec::new(),
            cost: StreamCost::default(),
            pins,
            noise: Vec::new(),
        };
        stream.required_missing = wanted
            .iter()
            .filter(|t| t.required && t.names.iter().all(|n| missing.iter().any(|m| m == n)))
            .map(|t| t.name().to_string())
            .collect();
        stream.missing = missing;
        stream.cost.reader = match stream.source.reader() {
            Reader::Raw => "binary".into(),
            Reader::Text => "text".into(),
        };
        stream.cost.start_ns = started.elapsed().as_nanos() as u64;
        Ok(stream)
    }

    /// The tracepoints this kernel lacks that a consumer cannot do
    /// without: its figures are wrong.
    pub fn required_missing(&self) -> &[String] {
        &self.required_missing
    }

    /// Every consumer of kind `T`, for its live figures.
    pub fn consumers<T: 'static>(&self) -> impl Iterator<Item = &T> {
        self.consumers
            .iter()
            .filter_map(|c| c.as_any().downcast_ref::<T>())
    }

    /// Sets each filter in effect to what its consumers need now.
    fn refilter(&mut self) {
        for (event, old) in &mut self.filters {
            let Some(new) = consumer::filter_of(&self.consumers, event) else {
                continue;
            };
            if *old != new && self.instance.set_filter(event, &new).is_ok() {
                *old = new;
            }
        }
    }

    /// Reads what the kernel traced since the last look and feeds it.
    /// `measured` are the timer threads, `programs` the running programs
    /// (index, PID), `timers` the timer threads (index, TID, first
    /// deadline measured).
    pub fn look(
        &mut self,
        measured: &[i32],
        programs: &[(usize, i32)],
        timers: &[(usize, i32, u64)],
    ) {
        let started = std::time::Instant::now();
        self.tell(measured, programs, timers, false);
        self.read(false);
        self.tell(measured, programs, timers, true);
        self.cost.reads += 1;
        self.cost.read_ns += started.elapsed().as_nanos() as u64;
    }

    /// Tells every consumer what the run learned: before a read
    /// ([`Consumer::learn`], then the filters follow), or after it
    /// ([`Consumer::settle`]).
    fn tell(
        &mut self,
        measured: &[i32],
        programs: &[(usize, i32)],
        timers: &[(usize, i32, u64)],
        after_read: bool,
    ) {
        let (root, pins) = (&self.root, &self.pins);
        let threads = |task: &TaskSelector| threads_of(root, pins, task, programs);
        let run = Learned {
            measured,
            timers,
            noise: &self.noise,
            threads: &threads,
            root,
        };
        for c in &mut self.consumers {
            match after_read {
                false => c.learn(&run),
                true => c.settle(&run),
            }
        }
        if !after_read {
            self.refilter();
        }
    }

    /// Which reader the stream uses.
    pub fn reader(&self) -> Reader {
        self.source.reader()
    }

    /// Feeds what the kernel holds now (`last`: all of it).
    fn read(&mut self, last: bool) {
        let (consumers, events) = (&mut self.consumers, &mut self.events);
        self.source.read(MAX_READ, last, |e| {
            *events += 1;
            for c in consumers.iter_mut() {
                c.feed(e);
            }
        });
    }

    /// Stops tracing, reads the rest and gives each consumer's part (the
    /// instance is removed).
    pub fn finish(
        mut self,
        measured: &[i32],
        programs: &[(usize, i32)],
        promises: &Promises,
    ) -> StreamResults {
        let before_stop = crate::sys::irq::totals(&self.root);
        self.instance.stop();
        self.tell(measured, programs, &[], false);
        self.read(true);
        self.tell(measured, programs, &[], true);
        let after = crate::sys::irq::totals(&self.root);
        let lost = self
            .instance
            .lost_events(&self.cpus)
            .max(self.source.lost());
        let reader = self.source.reader();
        // The instance goes now, its pipes first (it cannot be removed while
        // a file of it is open).
        let Self {
            source, instance, ..
        } = self;
        drop(source);
        drop(instance);
        let cost = StreamCost {
            events: self.events,
            ..self.cost.clone()
        };
        let end = StreamEnd {
            lost,
            missing: &self.missing,
            text_reader: reader == Reader::Text,
            cost: &cost,
            irqs: [&self.irqs_before, &self.irqs_started, &before_stop, &after],
            promises,
        };
        let mut results = StreamResults::default();
        for c in std::mem::take(&mut self.consumers) {
            c.finish(&end, &mut results);
        }
        results
    }
}

/// The name each of `wanted` has in this kernel: its first that the
/// instance offers, else its newest (to be noted as missing).
fn chosen(instance: &Instance, wanted: &[Tracepoint]) -> Vec<&'static str> {
    wanted
        .iter()
        .map(|t| {
            t.names
                .iter()
                .copied()
                .find(|n| instance.has_event(n))
                .unwrap_or_else(|| t.name())
        })
        .collect()
}

/// Pins each process given by PID ([`Pinned`]): its threads are read
/// from `/proc` only while it is the process pinned, and one gone
/// already is measured not at all.
fn pin_tasks(root: &SysRoot, consumers: &mut [Box<dyn Consumer>]) -> Vec<(i32, Option<Pinned>)> {
    let mut pins: Vec<(i32, Option<Pinned>)> = Vec::new();
    for c in consumers.iter_mut() {
        let Some(&TaskSelector::Pid(pid)) = c.task() else {
            continue;
        };
        if !pins.iter().any(|(p, _)| *p == pid) {
            pins.push((pid, Pinned::pin(root, pid)));
        }
        if pins.iter().any(|(p, pin)| *p == pid && pin.is_none()) {
            c.gone_before_start();
        }
    }
    pins
}

/// Enables each filtered tracepoint with the filter its consumers need
/// now: the filters in effect; one that cannot be is noted as missing.
fn enable_filtered(
    instance: &Instance,
    consumers: &[Box<dyn Consumer>],
    filtered: &[&'static str],
    missing: &mut Vec<String>,
) -> Vec<(&'static str, String)> {
    let mut filters = Vec::new();
    for &event in filtered {
        let Some(filter) = consumer::filter_of(consumers, event) else {
            continue;
        };
        match instance.filter_and_enable(event, &filter) {
            Ok(()) => filters.push((event, filter)),
            Err(_) => missing.push(event.into()),
        }
    }
    filters
}

/// The threads of a task chosen by PID or program (its process first),
/// as `/proc` lists them now; none for a task chosen by name, and none for
/// a process given by PID that is not the one pinned any more (its number
/// may be another process's).
fn threads_of(
    root: &SysRoot,
    pins: &[(i32, Option<Pinned>)],
    task: &TaskSelector,
    programs: &[(usize, i32)],
) -> Vec<i32> {
    let pid = match *task {
        TaskSelector::Pid(pid) => {
            let pinned = pins
                .iter()
                .find(|(p, _)| *p == pid)
                .and_then(|(_, pin)| pin.as_ref());
            let Some(threads) = pinned.and_then(|pin| pin.threads(root)) else {
                return Vec::new();
            };
            let mut tids = vec![pid];
            tids.extend(threads);
            return tids;
        }
        TaskSelector::Program(i) => programs.iter().find(|p| p.0 == i).map(|p| p.1),
        TaskSelector::Name(_) => None,
    };
    let Some(pid) = pid else {
        return Vec::new();
    };
    let mut tids = vec![pid];
    tids.extend(crate::sys::threads::of_process(root, pid));
    tids
}

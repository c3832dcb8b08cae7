//! Everything traced: the event vocabulary ([`event`], [`fields`]), the
//! readers of the kernel's buffers (binary pages in [`rawtrace`], text in
//! [`text`], one source for both in [`source`]), the two
//! engines that run them (the streamed trace of the whole run,
//! [`stream`], and the flight recorder's windows around late wake-ups,
//! [`flight`]), and beneath them the analyses they feed: why a wake-up
//! was late ([`explain`]), the isolation audit ([`audit`]), IRQ-to-task
//! latency ([`irq_task`]), task latency ([`task_latency`]), the timer
//! threads' IRQ side ([`timer_irq`]) and what the noise threads' gaps
//! were ([`noise`]). Every real-time task's wake-ups, aggregated in the
//! kernel by the BPF source (`sys::bpf`), are computed in
//! [`rt_wakeups`].

pub mod audit;
pub mod bpf_events;
pub mod consumer;
pub mod event;
pub mod explain;
pub mod fields;
pub mod flight;
pub mod irq_task;
pub mod noise;
pub mod rawtrace;
pub mod rt_late;
pub mod rt_wakeups;
pub mod rt_wakeups_trace;
pub mod softirqs;
pub mod source;
pub mod stream;
pub mod task_latency;
pub mod text;
pub mod timer_irq;

/// Every consumer of the trace stream, in the order their parts of the
/// result and their closing texts come: one line each (see
/// docs/architecture.md, "Adding a trace-derived figure").
pub const STREAM_CONSUMERS: &[consumer::Register] = &[
    audit::register,
    irq_task::register,
    task_latency::register,
    timer_irq::register,
    softirqs::register,
    noise::register,
    // Last: it filters sched_switch only where no consumer above reads it
    // whole (the first declaration of a tracepoint decides).
    rt_wakeups_trace::register,
];

/// A figure of a consumer that has no part of its own in the result
/// model: its JSON under its key (`figures.KEY` in the result) and its
/// closing text, both made when it finished.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Figure {
    /// Its key (`softirqs`).
    pub key: String,
    /// What it found.
    pub value: serde_json::Value,
    /// Its closing text (empty: none).
    pub closing: String,
}

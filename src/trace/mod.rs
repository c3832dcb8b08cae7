//! Everything traced: the event vocabulary ([`event`], [`fields`]), the
//! readers of the kernel's buffers (binary pages in [`rawtrace`], text in
//! [`explain::parse`], one source for both in [`source`]), the two
//! engines that run them (the streamed trace of the whole run,
//! [`stream`], and the flight recorder's windows around late wake-ups,
//! [`flight`]), and beneath them the analyses they feed: why a wake-up
//! was late ([`explain`]), the isolation audit ([`audit`]), IRQ-to-task
//! latency ([`irq_task`]), task latency ([`task_latency`]) and the timer
//! threads' IRQ side ([`timer_irq`]).

pub mod audit;
pub mod event;
pub mod explain;
pub mod fields;
pub mod flight;
pub mod irq_task;
pub mod rawtrace;
pub mod source;
pub mod stream;
pub mod task_latency;
pub mod timer_irq;

//! Why wake-ups were late, from plain kernel tracepoints: the text of a
//! tracefs buffer read back ([`parse`]), each late wake-up decomposed into
//! what owned its CPU from the deadline to the wake-up ([`analyze`]), and
//! the culprits of a whole run ranked ([`verdict`]). Pure: the flight
//! recorder that fills the buffer is in `sys::trace` and the run.

pub mod analyze;
pub mod parse;
pub mod verdict;

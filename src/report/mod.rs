//! Outputs: renderers of a [`RunResult`](crate::result::RunResult) (result
//! files, closing lines, JSON), of live snapshots (the live table), and of
//! finished runs read back through [`crate::dataset`] (plots, the HTML
//! report, comparisons, gnuplot scripts, LAVA's test cases). Pure string
//! and picture building; the caller decides where they go. Each format is
//! in its own file; the files made from finished runs share one interface
//! ([`export::Exporter`]).

pub mod audit;
pub mod compare;
pub mod cyclictest;
pub mod explain;
pub mod export;
pub mod files;
pub mod fix;
pub mod gnuplot;
pub mod html;
pub mod hwlat;
pub mod json;
pub mod lava;
pub mod live;
pub mod noise;
pub mod oslat;
pub mod plot;
pub mod qualify;
pub mod task_latency;

//! Outputs: renderers of a [`RunResult`](crate::result::RunResult) (result
//! files, closing lines, JSON), of live snapshots (the live table), and of
//! finished runs read back through [`crate::dataset`] (plots, the HTML
//! report, comparisons, gnuplot scripts). Pure string and picture building;
//! the caller decides where they go.

pub mod compare;
pub mod files;
pub mod gnuplot;
pub mod html;
pub mod live;
pub mod plot;

use crate::result::RunResult;

/// The JSON result document.
pub fn json(result: &RunResult) -> String {
    serde_json::to_string_pretty(result).unwrap_or_default() + "\n"
}

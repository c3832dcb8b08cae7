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
use std::path::Path;

/// Writes the JSON result document.
pub fn write_json(result: &RunResult, path: &Path) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(result).map_err(std::io::Error::other)?;
    std::fs::write(path, text + "\n")
}

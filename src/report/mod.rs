//! Outputs: renderers of a [`RunResult`](crate::result::RunResult) (result
//! files, closing lines, JSON) and of live snapshots (the live table). Pure
//! string building; the conductor decides where the strings go.

pub mod compare;
pub mod files;
pub mod live;

use crate::result::RunResult;
use std::path::Path;

/// Writes the JSON result document.
pub fn write_json(result: &RunResult, path: &Path) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(result).map_err(std::io::Error::other)?;
    std::fs::write(path, text + "\n")
}

//! The JSON result document (`rtlab run --json`), schema in
//! `docs/result-schema.md`; read back by `dataset::rtlab` into the same
//! [`RunResult`].

use crate::result::RunResult;

/// The JSON result document.
pub fn render(result: &RunResult) -> String {
    serde_json::to_string_pretty(result).unwrap_or_default() + "\n"
}

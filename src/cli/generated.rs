//! Experiments written from command-line options.

use super::EXIT_REFUSED;

/// An experiment written from command-line options: its lines, each with
/// the option that wrote it, so that a refusal names the option.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Generated {
    lines: Vec<(String, Option<String>)>,
}

impl Generated {
    pub(crate) fn line(&mut self, text: impl Into<String>) -> &mut Self {
        self.lines.push((text.into(), None));
        self
    }

    /// A line written from `option` (`--duration 2x`).
    pub(crate) fn from(&mut self, text: impl Into<String>, option: &str, value: &str) -> &mut Self {
        let shown = crate::text::one_line(value);
        self.lines
            .push((text.into(), Some(format!("{option} {shown}"))));
        self
    }

    pub(crate) fn text(&self) -> String {
        self.lines.iter().map(|l| format!("{}\n", l.0)).collect()
    }

    pub(crate) fn origins(&self) -> Vec<Option<String>> {
        self.lines.iter().map(|l| l.1.clone()).collect()
    }
}

/// A value put on one line of the generated file: no line break, no `#`
/// or quote that would change how the line reads.
pub(crate) fn one_line(what: &str, value: &str) -> Result<String, i32> {
    let bad = value.is_empty()
        || value
            .chars()
            .any(|c| c.is_control() || matches!(c, '#' | '\'' | '"' | '\\' | '{' | '}'));
    if bad {
        errln!("rtlab: {what} {value:?} cannot be written in an experiment file");
        errln!("  hint: write the experiment file yourself (`rtlab audit --print` shows one)");
        return Err(EXIT_REFUSED);
    }
    Ok(value.trim().to_string())
}

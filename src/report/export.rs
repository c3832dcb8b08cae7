//! One interface for the files made from finished runs, as hyperfine's
//! `export` module has: each format is an [`Exporter`] here ([`SvgPlot`],
//! [`PngPlot`], [`HtmlReport`], [`GnuplotScript`]) over the renderer in its
//! own file (`plot.rs`, `html.rs`, `gnuplot.rs`), and the caller writes its
//! bytes whole through `sys::outfile`. `rtlab plot -o` takes the picture
//! format from the output's name ([`for_path`]); the report and the gnuplot
//! script are chosen by their command and option. `compare.rs`'s tables are
//! printed, not exported. A new format is a type that implements
//! [`Exporter`], and a line in [`for_path`] or an option of the CLI.

use super::{gnuplot, html, plot};
use crate::dataset::Run;
use std::path::Path;

/// Why a format could not render.
#[derive(Debug, thiserror::Error)]
#[error("cannot draw the {what}: {why}")]
pub struct ExportError {
    /// The format ([`Exporter::what`]).
    pub what: &'static str,
    /// The drawing library's reason.
    pub why: String,
}

/// A file made from finished runs.
pub trait Exporter {
    /// What it writes, for messages (`SVG plot`).
    fn what(&self) -> &'static str;
    /// The file's bytes.
    fn render(&self, runs: &[Run]) -> Result<Vec<u8>, ExportError>;
}

/// The picture of `rtlab plot`, as SVG.
pub struct SvgPlot(pub plot::PlotOptions);

impl Exporter for SvgPlot {
    fn what(&self) -> &'static str {
        "SVG plot"
    }
    fn render(&self, runs: &[Run]) -> Result<Vec<u8>, ExportError> {
        plot::svg(runs, &self.0)
            .map(String::into_bytes)
            .map_err(|why| self.error(why))
    }
}

/// The picture of `rtlab plot`, as PNG.
pub struct PngPlot(pub plot::PlotOptions);

impl Exporter for PngPlot {
    fn what(&self) -> &'static str {
        "PNG plot"
    }
    fn render(&self, runs: &[Run]) -> Result<Vec<u8>, ExportError> {
        plot::png(runs, &self.0).map_err(|why| self.error(why))
    }
}

/// The HTML report of `rtlab report`.
pub struct HtmlReport {
    /// Its title.
    pub title: String,
    /// One column per thread in its tables.
    pub per_thread: bool,
    /// The latency range of its pictures.
    pub plot: plot::PlotOptions,
}

impl Exporter for HtmlReport {
    fn what(&self) -> &'static str {
        "HTML report"
    }
    fn render(&self, runs: &[Run]) -> Result<Vec<u8>, ExportError> {
        html::render(runs, &self.title, self.per_thread, &self.plot)
            .map(String::into_bytes)
            .map_err(|why| self.error(why))
    }
}

/// The gnuplot script of `rtlab plot --gnuplot`.
pub struct GnuplotScript {
    /// The plot's title.
    pub title: String,
}

impl Exporter for GnuplotScript {
    fn what(&self) -> &'static str {
        "gnuplot script"
    }
    fn render(&self, runs: &[Run]) -> Result<Vec<u8>, ExportError> {
        Ok(gnuplot::script(runs, &self.title).into_bytes())
    }
}

trait Failure {
    fn error(&self, why: String) -> ExportError;
}

impl<E: Exporter> Failure for E {
    fn error(&self, why: String) -> ExportError {
        ExportError {
            what: self.what(),
            why,
        }
    }
}

/// The picture format `rtlab plot -o PATH` draws, from PATH's extension
/// (`.svg` or `.png`, any case); None for another name.
pub fn for_path(path: &Path, opts: plot::PlotOptions) -> Option<Box<dyn Exporter>> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "svg" => Some(Box::new(SvgPlot(opts))),
        "png" => Some(Box::new(PngPlot(opts))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_picture_format_comes_from_the_name() {
        let what = |p: &str| for_path(Path::new(p), plot::PlotOptions::default()).map(|e| e.what());
        assert_eq!(what("a.svg"), Some("SVG plot"));
        assert_eq!(what("a.PNG"), Some("PNG plot"));
        assert_eq!(what("a.pdf"), None);
        assert_eq!(what("a"), None);
    }

    #[test]
    fn every_exporter_renders_the_same_runs() {
        let dir = tempfile::tempdir().unwrap();
        let runs = crate::dataset::tests::sample_runs(&dir);
        let small = plot::PlotOptions {
            size: (400, 300),
            ..plot::PlotOptions::default()
        };
        let all: Vec<Box<dyn Exporter>> = vec![
            Box::new(SvgPlot(small.clone())),
            Box::new(PngPlot(small.clone())),
            Box::new(HtmlReport {
                title: "t".into(),
                per_thread: false,
                plot: small,
            }),
            Box::new(GnuplotScript { title: "t".into() }),
        ];
        for e in all {
            let bytes = e.render(&runs).unwrap();
            let head = String::from_utf8_lossy(&bytes[..bytes.len().min(64)]).to_string();
            let want = match e.what() {
                "SVG plot" => "<svg",
                "PNG plot" => "PNG",
                "HTML report" => "<!DOCTYPE html>",
                _ => "# rtlab plot --gnuplot",
            };
            assert!(head.contains(want), "{}: {head:?}", e.what());
        }
    }
}

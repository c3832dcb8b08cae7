//! A run's outputs as an export set, as hyperfine's `ExportManager` has
//! them: each output is a [`RunExporter`] paired with its target, checked
//! when it is added ([`ExportSet::add`]), before the run starts, so that a
//! target that cannot be written refuses the run before anything is
//! measured; when the run ends, one loop ([`ExportSet::write`]) writes
//! every pair, in the order added, each file whole through `sys::outfile`.
//!
//! The outputs: the timer threads' result files, the JSON document, the
//! flight recorder's trace windows (in their own directory of the output
//! directory, [`WINDOWS_DIR`]) and cyclictest's files (`--histfile`,
//! `--json`). A new output is a type that implements [`RunExporter`] and
//! one `add` where its option is read.

use crate::plan::RunPlan;
use crate::report;
use crate::report::cyclictest::View;
use crate::result::RunResult;
use crate::sys::outfile::{self, OutputError};
use std::path::{Path, PathBuf};

pub use crate::trace::flight::WINDOWS_DIR;

/// An output of a run, written when it ends.
pub trait RunExporter {
    /// What it writes, for messages (`result file`).
    fn what(&self) -> &'static str;
    /// Checks, before the run, that `target` can take it: by default a
    /// file whose directory exists.
    fn check(&self, target: &Path) -> Result<(), OutputError> {
        outfile::check(target, false)
    }
    /// The files it makes of `result` (each path and its bytes): `target`
    /// itself, or files in it when it is a directory; none when it has
    /// nothing to write.
    fn render(&self, result: &RunResult, target: &Path) -> Vec<(PathBuf, Vec<u8>)>;
    /// Whether `target` is a directory, made (safely, as the result
    /// directories are) when there is something to write in it.
    fn writes_in_dir(&self) -> bool {
        false
    }
}

/// The (exporter, target) pairs of a run, in the order they are written.
pub struct ExportSet {
    exports: Vec<(Box<dyn RunExporter>, PathBuf)>,
    /// Whether the timer threads' result files are written (not by
    /// `rtlab cyclictest` without `--rtlab-outdir`).
    result_files: bool,
}

/// An output refused before the run: what it is, as the messages name it
/// (`--json`, `result directory`), and why.
#[derive(Debug)]
pub struct OutputRefused {
    /// The option or the output, as named in the message.
    pub what: &'static str,
    /// Why its target cannot be written.
    pub error: OutputError,
}

impl std::fmt::Display for OutputRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.what, self.error.with_hint())
    }
}

impl ExportSet {
    /// An empty set; `result_files` false leaves the timer threads' result
    /// files unwritten.
    pub fn new(result_files: bool) -> ExportSet {
        ExportSet {
            exports: Vec::new(),
            result_files,
        }
    }

    /// Adds `exporter` writing to `target`, once `target` is checked
    /// (hyperfine's `add_exporter`).
    pub fn add(
        &mut self,
        exporter: Box<dyn RunExporter>,
        target: &Path,
    ) -> Result<(), OutputError> {
        exporter.check(target)?;
        self.exports.push((exporter, target.to_path_buf()));
        Ok(())
    }

    /// Adds the outputs every run has, in the order written: the timer
    /// threads' result files (their directories made now, so that a run
    /// never measures for nothing), the JSON document at `json` (with the
    /// option that named it), and the trace windows when the plan traces.
    pub fn add_run(
        &mut self,
        plan: &RunPlan,
        json: Option<(&'static str, &Path)>,
    ) -> Result<(), OutputRefused> {
        let refused = |what| move |error| OutputRefused { what, error };
        let result_files = self.result_files;
        for tp in plan.timers.iter().filter(|_| result_files) {
            let file = ResultFile {
                index: tp.spec.index,
            };
            self.add(Box::new(file), &tp.path)
                .map_err(refused("result directory"))?;
        }
        if let Some((option, path)) = json {
            self.add(Box::new(JsonDocument), path)
                .map_err(refused(option))?;
        }
        if plan.main.trace.is_some() {
            let windows = TraceWindows {
                outdir: plan.outdir.clone(),
            };
            self.add(Box::new(windows), &plan.outdir.join(WINDOWS_DIR))
                .map_err(refused("trace windows"))?;
        }
        Ok(())
    }

    /// Writes every pair: a file that cannot be written does not stop the
    /// others; each failure is returned, in words.
    pub fn write(&self, result: &RunResult) -> Vec<String> {
        let mut failures = Vec::new();
        let mut failed = |e: OutputError| failures.push(format!("cannot write {}", e.with_hint()));
        for (exporter, target) in &self.exports {
            let files = exporter.render(result, target);
            if files.is_empty() {
                continue;
            }
            if exporter.writes_in_dir()
                && let Err(e) = outfile::create_dirs(target)
            {
                failed(e);
                continue;
            }
            for (path, bytes) in files {
                if let Err(e) = outfile::write_whole(&path, &bytes) {
                    failed(e);
                }
            }
        }
        failures
    }

    /// What each pair writes and where, in order (for messages and tests).
    pub fn targets(&self) -> Vec<(&'static str, &Path)> {
        self.exports
            .iter()
            .map(|(e, t)| (e.what(), t.as_path()))
            .collect()
    }
}

/// A timer thread's result file (systress's format, or CSV).
struct ResultFile {
    index: usize,
}

impl RunExporter for ResultFile {
    fn what(&self) -> &'static str {
        "result file"
    }
    /// The planner checked the file; its directory is made now.
    fn check(&self, target: &Path) -> Result<(), OutputError> {
        match target.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(dir) => outfile::create_dirs(dir),
            None => Ok(()),
        }
    }
    fn render(&self, result: &RunResult, target: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let format = result.plan.main.stats_format;
        result
            .timers
            .iter()
            .filter(|t| t.index == self.index)
            .map(|t| {
                (
                    target.to_path_buf(),
                    report::files::render(t, format).into_bytes(),
                )
            })
            .collect()
    }
}

/// The JSON document of the result (`--json`, `--rtlab-json`).
struct JsonDocument;

impl RunExporter for JsonDocument {
    fn what(&self) -> &'static str {
        "JSON result"
    }
    fn render(&self, result: &RunResult, target: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        vec![(
            target.to_path_buf(),
            report::json::render(result).into_bytes(),
        )]
    }
}

/// The flight recorder's trace windows, in [`WINDOWS_DIR`] of the output
/// directory (the windows are named from it, as the result names them).
struct TraceWindows {
    outdir: PathBuf,
}

impl RunExporter for TraceWindows {
    fn what(&self) -> &'static str {
        "trace windows"
    }
    /// Its name is rtlab's: what is in the way is moved, or the run goes
    /// elsewhere.
    fn check(&self, target: &Path) -> Result<(), OutputError> {
        outfile::check_dir(target).map_err(|mut e| {
            if e.hint == "choose another path" {
                e.hint = format!(
                    "the trace windows go in `{}` of the output directory: move what is there, \
                     or choose another output directory (--outdir)",
                    crate::trace::flight::WINDOWS_DIR
                );
            }
            e
        })
    }
    fn render(&self, result: &RunResult, _target: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        result
            .trace_windows
            .iter()
            .map(|(name, text)| (self.outdir.join(name), text.clone().into_bytes()))
            .collect()
    }
    fn writes_in_dir(&self) -> bool {
        true
    }
}

/// cyclictest's histogram file (`-h N --histfile FILE`).
pub struct CyclictestHistogram(pub View);

impl RunExporter for CyclictestHistogram {
    fn what(&self) -> &'static str {
        "histogram file"
    }
    fn render(&self, result: &RunResult, target: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let view = &self.0;
        view.histogram
            .iter()
            .map(|h| {
                let block = report::cyclictest::histogram(view, h, &result.timers);
                (target.to_path_buf(), block.into_bytes())
            })
            .collect()
    }
}

/// cyclictest's JSON file (`--json FILE`).
pub struct CyclictestJson(pub View);

impl RunExporter for CyclictestJson {
    fn what(&self) -> &'static str {
        "cyclictest JSON"
    }
    fn render(&self, result: &RunResult, target: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let root = crate::sys::SysRoot::real();
        let node = |cpu: usize| crate::sys::cpu_node(&root, cpu).unwrap_or(0);
        let text = report::cyclictest::json(&self.0, result, &node);
        vec![(target.to_path_buf(), text.into_bytes())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::cyclictest::Histogram;

    /// A recorded result whose outputs go to `dir`, traced, with two trace
    /// windows named as the flight recorder names them.
    fn result_in(dir: &Path) -> RunResult {
        let mut r: RunResult = serde_json::from_str(include_str!(
            "../../tests/seeds/rtlab-result-irq-latency.json"
        ))
        .unwrap();
        r.plan.outdir = dir.to_path_buf();
        for tp in &mut r.plan.timers {
            tp.path = dir.join("results").join(format!("t{}.txt", tp.spec.index));
        }
        let spec = serde_json::json!({"threshold_ns": 1000, "max_spikes": 4});
        r.plan.main.trace = Some(serde_json::from_value(spec).unwrap());
        r.trace_windows = vec![
            (format!("{WINDOWS_DIR}/rtlab-spike-T0-7.json"), "{}".into()),
            (
                format!("{WINDOWS_DIR}/rtlab-spike-T0-7.trace.txt"),
                "# tracer: nop\n".into(),
            ),
        ];
        r
    }

    /// The files under `dir`, relative to it, sorted.
    fn files_under(dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut todo = vec![dir.to_path_buf()];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    todo.push(p);
                } else {
                    let rel = p.strip_prefix(dir).unwrap();
                    out.push(rel.display().to_string());
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn an_unwritable_target_is_refused_when_added() {
        let dir = tempfile::tempdir().unwrap();
        let mut set = ExportSet::new(true);
        let missing = dir.path().join("no/such/dir/r.json");
        let e = set.add(Box::new(JsonDocument), &missing).unwrap_err();
        assert!(e.problem.contains("does not exist"), "{e}");
        // A link at the target's name, or a directory there.
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(dir.path().join("victim"), &link).unwrap();
        assert!(set.add(Box::new(JsonDocument), &link).is_err());
        assert!(set.add(Box::new(JsonDocument), dir.path()).is_err());
        assert!(set.targets().is_empty());
        // A run's JSON is refused under the option that named it, before
        // anything is written.
        let r = result_in(dir.path());
        let refusal = set
            .add_run(&r.plan, Some(("--json", &missing)))
            .unwrap_err();
        assert_eq!(refusal.what, "--json");
        assert!(refusal.to_string().starts_with("--json "), "{refusal}");
        assert!(!dir.path().join("no").exists());
    }

    #[test]
    fn a_windows_directory_that_is_not_one_is_refused_before_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let r = result_in(dir.path());
        std::fs::write(dir.path().join(WINDOWS_DIR), "not a directory").unwrap();
        let refusal = ExportSet::new(true).add_run(&r.plan, None).unwrap_err();
        assert_eq!(refusal.what, "trace windows");
        assert!(
            refusal.error.problem.contains("not a directory"),
            "{refusal}"
        );
    }

    #[test]
    fn a_windows_directory_planted_as_a_foreign_link_is_never_followed() {
        if crate::sys::os::geteuid() != 0 {
            // Not root: a link of another user cannot be made.
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let victim = tempfile::tempdir().unwrap();
        let mut r = result_in(dir.path());
        let link = dir.path().join(WINDOWS_DIR);
        std::os::unix::fs::symlink(victim.path(), &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
        let refusal = ExportSet::new(true).add_run(&r.plan, None).unwrap_err();
        assert_eq!(refusal.what, "trace windows");
        // Planted after the check: the windows are not written through it.
        r.plan.main.trace = None;
        let mut set = ExportSet::new(true);
        set.add_run(&r.plan, None).unwrap();
        let windows = TraceWindows {
            outdir: dir.path().to_path_buf(),
        };
        set.exports.push((Box::new(windows), link.clone()));
        let failures = set.write(&r);
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert_eq!(std::fs::read_dir(victim.path()).unwrap().count(), 0);
    }

    #[test]
    fn one_loop_writes_every_part_and_the_windows_in_their_directory() {
        let dir = tempfile::tempdir().unwrap();
        let r = result_in(dir.path());
        let view = View {
            histogram: Some(Histogram {
                buckets: 10,
                sum_column: false,
                file: Some(dir.path().join("hist.txt")),
            }),
            json: Some(dir.path().join("ct.json")),
            ..View::default()
        };
        let mut set = ExportSet::new(true);
        set.add(
            Box::new(CyclictestHistogram(view.clone())),
            &dir.path().join("hist.txt"),
        )
        .unwrap();
        set.add(Box::new(CyclictestJson(view)), &dir.path().join("ct.json"))
            .unwrap();
        let json = dir.path().join("r.json");
        set.add_run(&r.plan, Some(("--json", &json))).unwrap();
        // The result files' directory is made when they are added; the
        // windows' only when there are windows to write.
        assert!(dir.path().join("results").is_dir());
        assert!(!dir.path().join(WINDOWS_DIR).exists());
        let what: Vec<&str> = set.targets().iter().map(|t| t.0).collect();
        assert_eq!(
            what,
            [
                "histogram file",
                "cyclictest JSON",
                "result file",
                "JSON result",
                "trace windows"
            ]
        );
        assert_eq!(set.write(&r), Vec::<String>::new());
        assert_eq!(
            files_under(dir.path()),
            [
                "ct.json",
                "hist.txt",
                "r.json",
                "results/t0.txt",
                "rtlab-spikes/rtlab-spike-T0-7.json",
                "rtlab-spikes/rtlab-spike-T0-7.trace.txt",
            ]
        );
        let doc = std::fs::read_to_string(&json).unwrap();
        assert_eq!(doc, report::json::render(&r));
        let file = std::fs::read_to_string(dir.path().join("results/t0.txt")).unwrap();
        assert_eq!(
            file,
            report::files::render(&r.timers[0], r.plan.main.stats_format)
        );
        let window = dir
            .path()
            .join(WINDOWS_DIR)
            .join("rtlab-spike-T0-7.trace.txt");
        assert_eq!(std::fs::read_to_string(window).unwrap(), "# tracer: nop\n");
    }

    #[test]
    fn without_result_files_or_windows_nothing_else_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = result_in(dir.path());
        r.trace_windows.clear();
        let mut set = ExportSet::new(false);
        set.add_run(&r.plan, None).unwrap();
        assert_eq!(set.targets().len(), 1);
        assert_eq!(set.write(&r), Vec::<String>::new());
        assert_eq!(files_under(dir.path()), Vec::<String>::new());
        assert!(!dir.path().join(WINDOWS_DIR).exists());
    }
}

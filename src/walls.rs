//! Tests that keep the architecture's walls (docs/architecture.md), each a
//! reading of the sources: no import cycle, only the CLI, the run and the
//! result know the plan, kernel paths only in the system layer, `unsafe`
//! allowed only on the syscall module, the pure layer off the system layer,
//! every print through the escaping macros, CLI refusals returned as
//! `cli::Refusal` and printed by `cli::main` alone, and every module named
//! in the source map of docs/architecture.md. Needles are spelled in pieces
//! where they would match this file itself.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// The three crates of the workspace, bottom up: the pure layer, the
/// system layer, the binary.
const CRATES: [(&str, &str); 3] = [
    ("core", "crates/rtlab-core/src"),
    ("sys", "crates/rtlab-sys/src"),
    ("bin", "src"),
];

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A source file: its crate (`core`, `sys`, `bin`), path and text.
struct Source {
    krate: &'static str,
    path: PathBuf,
    text: String,
}

impl Source {
    /// The module the file belongs to in the layer graph: the system crate
    /// is one module, `sys`; elsewhere the top-level module
    /// (`src/tune/mod.rs` → `tune`).
    fn module(&self) -> String {
        if self.krate == "sys" {
            return "sys".into();
        }
        let src = CRATES.iter().find(|(k, _)| *k == self.krate).unwrap().1;
        let rel = self
            .path
            .strip_prefix(workspace().join(src))
            .unwrap_or(&self.path);
        let first = rel
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned());
        first
            .unwrap_or_default()
            .trim_end_matches(".rs")
            .to_string()
    }

    /// The file's path inside the workspace (`crates/rtlab-sys/src/os.rs`).
    fn rel(&self) -> String {
        let rel = self.path.strip_prefix(workspace()).unwrap_or(&self.path);
        rel.to_string_lossy().into_owned()
    }
}

/// Every source file of the three crates with its text.
fn source_files() -> Vec<Source> {
    let mut out = Vec::new();
    for (krate, src) in CRATES {
        let mut stack = vec![workspace().join(src)];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    out.push(Source { krate, path, text });
                }
            }
        }
    }
    assert!(out.len() > 50, "the sources were not found");
    out
}

/// The code of a file: without its inline test modules (`#[cfg(test)]`
/// then `mod tests {`, public or not, up to the brace that closes it) and
/// without its comment lines. Code after a test module is kept.
fn code_of(text: &str) -> String {
    let mut out = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let opens_tests = line.trim() == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|next| next.trim_end().ends_with("mod tests {"));
        if opens_tests {
            let mut depth = 0i64;
            for inner in lines.by_ref() {
                depth += inner.matches('{').count() as i64;
                depth -= inner.matches('}').count() as i64;
                if depth <= 0 {
                    break;
                }
            }
        } else if !line.trim_start().starts_with("//") {
            out.push(line);
        }
    }
    out.join("\n")
}

#[test]
fn code_after_a_test_module_is_read() {
    let text =
        "fn a() {}\n#[cfg(test)]\nmod tests {\n    fn t() { x(\"proc/\") }\n}\n// c\nfn b() {}\n";
    assert_eq!(code_of(text), "fn a() {}\nfn b() {}");
}

/// The top-level modules named after `crate::` in `code`, including those
/// in groups (`crate::{a, b::c}`).
fn crate_refs(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 || (depth == 1 && c == ',') {
                    out.insert(ident(item.trim()));
                    item.clear();
                    if depth == 0 {
                        break;
                    }
                } else if depth == 1 {
                    item.push(c);
                }
            }
        } else {
            out.insert(ident(rest));
        }
    }
    out.retain(|m| !m.is_empty());
    out
}

/// The modules of the other crates that `code` names: `rtlab_core::X` is
/// X, `rtlab_sys` the system layer.
fn other_crate_refs(code: &str) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = code
        .match_indices("rtlab_core::")
        .map(|(at, _)| ident(&code[at + "rtlab_core::".len()..]))
        .filter(|m| !m.is_empty())
        .collect();
    if code.contains("rtlab_sys") {
        out.insert("sys".into());
    }
    out
}

fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Every top-level module and the top-level modules its code (not its
/// tests, not its comments) uses.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    // Macros exported at a crate root, not modules.
    let macros = ["out", "outln", "errln"];
    for file in source_files() {
        if file.path.ends_with("tests.rs") {
            continue;
        }
        if file.path.ends_with("src/walls.rs") {
            continue;
        }
        let top = file.module();
        let uses = graph.entry(top.clone()).or_default();
        let code = code_of(&file.text);
        // In the system crate `crate::` names the system layer itself.
        let own = if file.krate == "sys" {
            BTreeSet::new()
        } else {
            crate_refs(&code)
        };
        for m in own.into_iter().chain(other_crate_refs(&code)) {
            if m != top && !macros.contains(&m.as_str()) {
                uses.insert(m);
            }
        }
    }
    graph
}

#[test]
fn crate_references_are_read_with_their_groups() {
    let refs =
        crate_refs("use crate::{messages, result::EndReason};\nlet x = crate::sys::os::f();");
    assert_eq!(
        refs.into_iter().collect::<Vec<_>>(),
        vec!["messages", "result", "sys"]
    );
}

#[test]
fn no_module_uses_one_that_uses_it_back() {
    let graph = module_graph();
    // Depth-first search for a cycle, reporting its path.
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == m) {
            let mut cycle = path[at..].to_vec();
            cycle.push(m.to_string());
            return Some(cycle);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for next in graph.get(m).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        let cycle = visit(m, &graph, &mut Vec::new(), &mut done);
        assert!(
            cycle.is_none(),
            "import cycle: {}",
            cycle.unwrap_or_default().join(" -> ")
        );
    }
}

#[test]
fn only_the_cli_the_run_and_the_result_know_the_plan() {
    let graph = module_graph();
    let users: Vec<&String> = graph
        .iter()
        .filter(|(_, uses)| uses.contains("plan"))
        .map(|(m, _)| m)
        .collect();
    assert_eq!(users, ["cli", "result", "run"], "modules that use `plan`");
}

#[test]
fn every_print_goes_through_the_escaping_macros() {
    // stdout and stderr are written by out!/outln!/errln! (the pure layer's
    // lib.rs) only.
    let needles = ["ln!", "!("].map(|end| format!("print{end}"));
    let mut offenders = Vec::new();
    for file in source_files() {
        for n in needles.iter().filter(|n| file.text.contains(n.as_str())) {
            if file.rel() != "crates/rtlab-core/src/lib.rs" {
                offenders.push(format!("{} has {n}", file.rel()));
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:?}");
}

#[test]
fn diagnostics_are_printed_by_the_cli_and_messages_alone() {
    // Below the CLI, a diagnostic goes through `messages` (one place that
    // decides how warnings and notes look and what the debug level shows).
    let needle = format!("{}!(", "errln");
    let offenders: Vec<String> = source_files()
        .iter()
        .filter(|f| code_of(&f.text).contains(&needle))
        .map(Source::rel)
        .filter(|rel| {
            !rel.starts_with("src/cli/")
                && rel != "src/messages.rs"
                && !rel.starts_with("crates/rtlab-core/")
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "errln! outside cli/ and messages.rs: {offenders:?}"
    );
}

#[test]
fn unsafe_is_allowed_in_the_syscall_layer_alone() {
    // The pure layer and the binary forbid unsafe_code (which no attribute
    // can lift); the system crate denies it and lifts it for `mod os` only.
    let allow = ["allow(", "unsafe_code)"].concat();
    let found: Vec<String> = source_files()
        .into_iter()
        .filter(|f| f.text.contains(&allow))
        .map(|f| f.rel())
        .collect();
    assert_eq!(found, ["crates/rtlab-sys/src/lib.rs"]);
    let root_of = |path: &str| std::fs::read_to_string(workspace().join(path)).unwrap();
    let forbid = ["#![forbid(", "unsafe_code)]"].concat();
    assert!(root_of("src/lib.rs").contains(&forbid));
    assert!(root_of("src/main.rs").contains(&forbid));
    assert!(root_of("crates/rtlab-core/src/lib.rs").contains(&forbid));
    let sys = root_of("crates/rtlab-sys/src/lib.rs");
    assert!(sys.contains(&["#![deny(", "unsafe_code)]"].concat()));
    let lifted = sys.find(&allow).unwrap();
    assert!(sys[lifted..].lines().nth(1) == Some("pub mod os;"));
}

/// The `[dependencies]` names of a crate's manifest.
fn dependencies(manifest: &str) -> Vec<String> {
    let text = std::fs::read_to_string(workspace().join(manifest)).unwrap();
    let mut in_deps = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
        } else if in_deps && let Some((name, _)) = line.split_once('=') {
            out.push(name.trim().to_string());
        }
    }
    out
}

#[test]
fn only_the_system_layer_can_make_system_calls() {
    // `libc` and `rustix` are the doors to system calls: only the system
    // crate has them (the binary names errno and signal numbers through
    // `sys::consts`); the pure layer does not depend on the system layer.
    for manifest in ["Cargo.toml", "crates/rtlab-core/Cargo.toml"] {
        let deps = dependencies(manifest);
        assert!(deps.len() > 3, "{manifest}: {deps:?}");
        for door in ["libc", "rustix", "nix"] {
            assert!(!deps.iter().any(|d| d == door), "{manifest} has {door}");
        }
        if manifest.contains("core") {
            assert!(!deps.iter().any(|d| d.starts_with("rtlab")), "{deps:?}");
        }
    }
    let sys = dependencies("crates/rtlab-sys/Cargo.toml");
    assert!(sys.iter().any(|d| d == "libc") && sys.iter().any(|d| d == "rustix"));
}

/// The modules a crate root (or the integration tests' `main.rs`) declares
/// from files: `mod NAME;` and `pub mod NAME;` at the top level.
fn declared_modules(root: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(workspace().join(root)).unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("pub ").unwrap_or(l).strip_prefix("mod "))
        .filter_map(|rest| rest.strip_suffix(';'))
        .map(str::to_string)
        .collect()
}

/// The source map of docs/architecture.md: per `### `DIR`` heading, the
/// module each row of its table names (its first `name/` or `name.rs`).
fn source_map() -> BTreeMap<String, BTreeSet<String>> {
    let doc = std::fs::read_to_string(workspace().join("docs/architecture.md")).unwrap();
    let start = doc
        .find("\n## Source map\n")
        .expect("docs/architecture.md: no source map");
    let section = &doc[start + 1..];
    let section = &section[..section[1..].find("\n## ").map_or(section.len(), |e| e + 1)];
    let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut dir = String::new();
    for line in section.lines() {
        if let Some(h) = line.strip_prefix("### `") {
            dir = h.trim_end_matches('`').to_string();
        } else if let Some(row) = line.strip_prefix("| `") {
            let name = row.split('`').next().unwrap_or_default();
            let name = name.strip_suffix('/').or(name.strip_suffix(".rs"));
            if let Some(name) = name {
                map.entry(dir.clone()).or_default().insert(name.to_string());
            }
        }
    }
    map
}

#[test]
fn the_source_map_names_every_module_and_only_those() {
    // Each crate's top-level modules and the integration tests' modules,
    // one row each in docs/architecture.md's source map: a module without
    // its row, or a row of a module gone, fails here.
    let map = source_map();
    let roots = [
        ("crates/rtlab-core/src/", "crates/rtlab-core/src/lib.rs"),
        ("crates/rtlab-sys/src/", "crates/rtlab-sys/src/lib.rs"),
        ("src/", "src/lib.rs"),
        ("src/trace/", "src/trace/mod.rs"),
        ("tests/it/", "tests/it/main.rs"),
    ];
    for (dir, root) in roots {
        let declared = declared_modules(root);
        assert!(!declared.is_empty(), "{root}: no module found");
        let rows = map.get(dir).cloned().unwrap_or_default();
        let missing: Vec<_> = declared.difference(&rows).collect();
        let gone: Vec<_> = rows.difference(&declared).collect();
        assert!(
            missing.is_empty() && gone.is_empty(),
            "docs/architecture.md's source map, `{dir}`: no row for {missing:?}; \
             rows of no module of {root}: {gone:?}"
        );
    }
}

#[test]
fn no_kernel_path_outside_the_system_layer() {
    // Kernel files are named in the system crate (`sys::paths` for the
    // rest) and reached through SysRoot: no absolute path anywhere but the
    // root layer, and no relative one outside the system crate (test code,
    // which builds fake trees, aside).
    let absolute = ["/proc", "/sys", "/dev/cpu"].map(|p| format!("\"{p}"));
    let relative = ["proc/", "sys/", "dev/"].map(|p| format!("\"{p}"));
    let mut offenders = Vec::new();
    for file in source_files() {
        if file.path.ends_with("src/walls.rs") {
            continue;
        }
        if file.rel() != "crates/rtlab-sys/src/root.rs" {
            for n in absolute.iter().filter(|n| file.text.contains(n.as_str())) {
                offenders.push(format!("{} has {n}", file.rel()));
            }
        }
        if file.krate == "sys" || file.path.ends_with("tests.rs") {
            continue;
        }
        let code = code_of(&file.text);
        for n in relative.iter().filter(|n| code.contains(n.as_str())) {
            offenders.push(format!("{} has {n}", file.rel()));
        }
    }
    assert!(offenders.is_empty(), "{offenders:?}");
}

#[test]
fn the_pure_layer_reads_and_runs_nothing() {
    // The experiment file, CPU lists, the scheduling vocabulary, text
    // escaping and exit statuses: usable and testable without a kernel.
    // Its crate cannot name the system layer (no dependency); this keeps it
    // off files, processes and sockets too (its tests aside).
    let doors = ["std::fs", "std::process", "std::net", "std::os", "File::"];
    let mut offenders = Vec::new();
    // A test module in a file of its own (`keys/tests.rs`) is a test too.
    let pure = |f: &Source| f.krate == "core" && !f.path.ends_with("tests.rs");
    for file in source_files().into_iter().filter(pure) {
        let code = code_of(&file.text);
        for door in doors.iter().filter(|d| code.contains(*d)) {
            offenders.push(format!("{} has {door}", file.rel()));
        }
    }
    assert!(offenders.is_empty(), "{offenders:?}");
}

/// The layers, bottom up: a module may use modules of its own layer or
/// below, never above (docs/architecture.md). A new module goes in one.
const LAYERS: &[&[&str]] = &[
    &["cpulist", "sched", "text", "exit", "messages"],
    &["config"],
    &["sys"],
    &["stats", "workload", "tune"],
    &[
        "isolate",
        "measure",
        "programs",
        "trace",
        "spike_actions",
        "monitor",
    ],
    &["plan"],
    &["result"],
    &["dataset", "fix"],
    &["report"],
    &["run"],
    &["cli"],
    &["lib", "main"],
];

#[test]
fn no_module_uses_one_above_it() {
    let layer = |m: &str| LAYERS.iter().position(|l| l.contains(&m));
    let mut offenders = Vec::new();
    for (m, uses) in module_graph() {
        let Some(at) = layer(&m) else {
            offenders.push(format!("{m} is in no layer of LAYERS"));
            continue;
        };
        for u in uses {
            match layer(&u) {
                Some(below) if below <= at => {}
                _ => offenders.push(format!("{m} uses {u}, a layer above it")),
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:?}");
}

#[test]
fn the_graph_sees_every_crate() {
    let graph = module_graph();
    assert!(graph["sys"].contains("cpulist"), "{:?}", graph["sys"]);
    assert!(graph["config"].contains("sched"));
    assert!(graph["cli"].contains("sys"));
}

/// The second level, under `src/trace/`, bottom up: the event vocabulary
/// and the readers; the source that runs them; the consumer interface and
/// the analyses (which may use each other); the two engines that feed
/// them. An analysis never names an engine, and an engine never names an
/// analysis but through the registration list in `trace/mod.rs`.
const TRACE_LAYERS: &[&[&str]] = &[
    &["event", "fields", "rawtrace", "text"],
    &["source", "bpf_events"],
    &[
        "consumer",
        "explain",
        "audit",
        "irq_task",
        "task_latency",
        "timer_irq",
        "softirqs",
        "noise",
        "rt_wakeups",
        "rt_late",
        "rt_wakeups_trace",
    ],
    &["stream", "flight"],
];

/// The sub-modules of `trace` a file's code names (`crate::trace::x`,
/// and `super::x` in a file directly under `src/trace/`).
fn trace_refs(code: &str, direct: bool) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut needles = vec!["crate::trace::"];
    if direct {
        needles.push("super::");
    }
    for needle in needles {
        for (at, _) in code.match_indices(needle) {
            let rest = &code[at + needle.len()..];
            let name = ident(rest);
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

#[test]
fn no_trace_module_uses_one_above_it() {
    let layer = |m: &str| TRACE_LAYERS.iter().position(|l| l.contains(&m));
    let trace_dir = workspace().join("src/trace");
    let mut offenders = Vec::new();
    for file in source_files() {
        let Ok(rel) = file.path.strip_prefix(&trace_dir) else {
            continue;
        };
        let first = rel.components().next().unwrap();
        let sub = first
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if sub == "mod" || file.path.ends_with("tests.rs") {
            continue;
        }
        let Some(at) = layer(&sub) else {
            offenders.push(format!("trace::{sub} is in no layer of TRACE_LAYERS"));
            continue;
        };
        let direct = rel.components().count() == 1;
        for used in trace_refs(&code_of(&file.text), direct) {
            match layer(&used) {
                Some(l) if l > at => offenders.push(format!("trace::{sub} uses trace::{used}")),
                _ => {}
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:?}");
}

/// The engines name no analysis: what they feed comes from the
/// registration list (`STREAM_CONSUMERS`).
#[test]
fn the_stream_names_no_analysis() {
    let text = std::fs::read_to_string(workspace().join("src/trace/stream.rs")).unwrap();
    let code = code_of(&text);
    let analyses = &TRACE_LAYERS[2][1..];
    let named: Vec<&&str> = analyses
        .iter()
        .filter(|a| trace_refs(&code, true).contains(**a))
        .collect();
    assert!(named.is_empty(), "the stream names {named:?}");
}

#[test]
fn cli_functions_return_refusals_not_bare_statuses() {
    // A refusal travels as a `cli::Refusal` (status, message, hint) up to
    // `cli::main`, which prints it; no CLI function prints its own and
    // returns the status alone.
    let bare = format!("{}32>", ", i");
    let results = ["Result<", "Ok::<"];
    let mut offenders = Vec::new();
    for file in source_files() {
        let rel = file.rel();
        if !rel.starts_with("src/cli/") {
            continue;
        }
        for line in code_of(&file.text).lines() {
            if line.contains(&bare) && results.iter().any(|r| line.contains(r)) {
                offenders.push(format!("{rel}: {}", line.trim()));
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:?}");
    // The one place that prints a refusal (besides the type itself), and
    // `rtlab qualify`, which goes on to the next test after one refused
    // (the verdict and the feature file still come).
    let print = format!("{}.print()", "refusal");
    let printers: Vec<String> = source_files()
        .iter()
        .filter(|f| f.text.contains(&print))
        .map(Source::rel)
        .collect();
    assert_eq!(
        printers,
        ["src/cli/mod.rs", "src/cli/qualify/mod.rs"],
        "who prints a refusal"
    );
}

#[test]
fn the_house_stays_tidy() {
    // Issue 36's measures of a findable tree: at most 20 entries at the top
    // of src/, no file of plan/ or dataset/ (the two that grew by appending)
    // over 500 lines.
    // An editor's dot-file is not an entry of the tree.
    let top = std::fs::read_dir(workspace().join("src"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| !e.file_name().to_string_lossy().starts_with('.'))
        })
        .count();
    assert!(top <= 20, "src/ has {top} top-level entries (at most 20)");
    for dir in ["src/plan", "src/dataset"] {
        for entry in std::fs::read_dir(workspace().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let lines = std::fs::read_to_string(&path).unwrap().lines().count();
            assert!(
                lines <= 500,
                "{}: {lines} lines (at most 500)",
                path.display()
            );
        }
    }
}

/// What may be tracked at the repository's root: anything else there is
/// somebody's scratch or a test's output committed by mistake.
const ROOT_FILES: [&str; 14] = [
    ".cargo",
    ".ci",
    ".gitignore",
    "Cargo.lock",
    "Cargo.toml",
    "README.md",
    "assets",
    "bench",
    "contrib",
    "crates",
    "docs",
    "examples",
    "src",
    "tests",
];

#[test]
fn no_tracked_file_is_a_test_output() {
    // Read from git's index where the tree is a clone (CI's is); a tarball
    // without .git has no index to check.
    if !workspace().join(".git").exists() {
        return;
    }
    let out = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(workspace())
        .output()
        .expect("git ls-files");
    assert!(out.status.success(), "git ls-files failed");
    let files = String::from_utf8_lossy(&out.stdout).into_owned();
    let stray: Vec<&str> = files
        .split('\0')
        .filter(|f| !f.is_empty())
        .filter(|f| {
            let top = f.split('/').next().unwrap_or_default();
            let name = f.rsplit('/').next().unwrap_or_default();
            !ROOT_FILES.contains(&top)
                || name.starts_with("rtlab-spike-")
                || name.ends_with(".pid")
                || (name.ends_with(".trace.txt") && !f.starts_with("tests/traces/"))
        })
        .collect();
    assert!(
        stray.is_empty(),
        "tracked files that look like test output: {stray:?}"
    );
}

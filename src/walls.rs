//! Tests that keep the architecture's walls (docs/architecture.md), each a
//! reading of the sources: no import cycle, only the CLI, the run and the
//! result know the plan, kernel paths only in the system layer, `unsafe`
//! allowed only on the syscall module, the pure layer off the system layer,
//! every print through the escaping macros. Needles are spelled in pieces
//! where they would match this file itself.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level module of a source file (`src/tune/mod.rs` → `tune`).
fn top_module(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap_or(file);
    let first = rel
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned());
    first
        .unwrap_or_default()
        .trim_end_matches(".rs")
        .to_string()
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every source file of the crate with its text.
fn source_files() -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![src_dir()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((path, text));
            }
        }
    }
    out
}

/// The code of a file: without its inline test module (`#[cfg(test)]` then
/// `mod tests {`, public or not) and without its comment lines.
fn code_of(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .windows(2)
        .position(|w| w[0].trim() == "#[cfg(test)]" && w[1].trim_end().ends_with("mod tests {"))
        .unwrap_or(lines.len());
    lines[..end]
        .iter()
        .filter(|l| !l.trim_start().starts_with("//"))
        .copied()
        .collect::<Vec<_>>()
        .join("\n")
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

fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Every top-level module and the top-level modules its code (not its
/// tests, not its comments) uses.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = src_dir();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    // Macros exported at the crate root, not modules.
    let macros = ["out", "outln", "errln"];
    for (file, text) in source_files() {
        if file.ends_with("tests.rs") {
            continue;
        }
        let top = top_module(&src, &file);
        let uses = graph.entry(top.clone()).or_default();
        for m in crate_refs(&code_of(&text)) {
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
    // stdout and stderr are written by out!/outln!/errln! (lib.rs) only.
    let needles = ["ln!", "!("].map(|end| format!("print{end}"));
    let mut offenders = Vec::new();
    for (path, text) in source_files() {
        for n in needles.iter().filter(|n| text.contains(n.as_str())) {
            if !path.ends_with("src/lib.rs") {
                offenders.push(format!("{} has {n}", path.display()));
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:?}");
}

#[test]
fn unsafe_is_allowed_in_the_syscall_layer_alone() {
    // The crate denies unsafe_code; only `sys/mod.rs` lifts it, for `mod os`.
    let allow = ["allow(", "unsafe_code)"].concat();
    let found: Vec<PathBuf> = source_files()
        .into_iter()
        .filter(|(_, text)| text.contains(&allow))
        .map(|(path, _)| path)
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].ends_with("src/sys/mod.rs"), "{found:?}");
    let lib = std::fs::read_to_string(src_dir().join("lib.rs")).unwrap();
    assert!(lib.contains(&["#![deny(", "unsafe_code)]"].concat()));
}

#[test]
fn no_kernel_path_outside_the_system_layer() {
    // Kernel files are named in `sys` (`sys::paths` for the rest of the
    // crate) and reached through SysRoot: no absolute path anywhere but the
    // root layer, and no relative one outside `sys` (test code, which
    // builds fake trees, aside).
    let absolute = ["/proc", "/sys", "/dev/cpu"].map(|p| format!("\"{p}"));
    let relative = ["proc/", "sys/", "dev/"].map(|p| format!("\"{p}"));
    let mut offenders = Vec::new();
    for (path, text) in source_files() {
        if path.ends_with("src/walls.rs") {
            continue;
        }
        if !path.ends_with("sys/root.rs") {
            for n in absolute.iter().filter(|n| text.contains(n.as_str())) {
                offenders.push(format!("{} has {n}", path.display()));
            }
        }
        let in_sys = path.components().any(|c| c.as_os_str() == "sys");
        if in_sys || path.ends_with("tests.rs") {
            continue;
        }
        let code = code_of(&text);
        for n in relative.iter().filter(|n| code.contains(n.as_str())) {
            offenders.push(format!("{} has {n}", path.display()));
        }
    }
    assert!(offenders.is_empty(), "{offenders:?}");
}

#[test]
fn the_pure_layer_does_not_reach_the_system() {
    // The experiment file, CPU lists, the scheduling vocabulary, text
    // escaping and exit statuses: usable and testable without a kernel.
    let graph = module_graph();
    for pure in ["config", "cpulist", "sched", "text", "exit"] {
        let uses = graph.get(pure).cloned().unwrap_or_default();
        assert!(
            !uses.contains("sys"),
            "{pure} uses the system layer: {uses:?}"
        );
    }
}

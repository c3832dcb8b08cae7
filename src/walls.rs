//! Tests that keep the architecture's walls (docs/architecture.md): the
//! module graph has no cycle, and only the CLI, the run and the result
//! (which records the plan) know the plan.

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
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files: Vec<PathBuf> = Vec::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("tests.rs") {
                files.push(path);
            }
        }
    }
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    // Macros exported at the crate root, not modules.
    let macros = ["out", "outln", "errln"];
    for file in files {
        let top = top_module(&src, &file);
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text
            .split("#[cfg(test)]\nmod tests {")
            .next()
            .unwrap_or_default();
        let code: String = code
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let uses = graph.entry(top.clone()).or_default();
        for m in crate_refs(&code) {
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

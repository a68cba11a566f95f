//! The layering ARCHITECTURE.md describes, checked in the imports: the core names no part of the
//! shell, `report/` names no part of `cli/`, and the lints that keep the file system, the wall
//! clock, unordered iteration and printing out of the core are switched off only where the
//! architecture says (clippy.toml lists them; src/lib.rs denies them).

use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, as (path relative to `src/`, text).
fn files(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let rel = p.strip_prefix(src()).unwrap().display().to_string();
                out.push((rel, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// The shell's files: everything that may touch files, print, parse arguments or use anyhow.
fn is_shell(rel: &str) -> bool {
    rel.starts_with("cli/")
        || rel.starts_with("report/")
        || rel == "files.rs"
        || rel == "main.rs"
        || rel == "lib.rs"
}

fn names(text: &str, path: &str) -> bool {
    text.contains(&format!("{path}::")) || text.contains(&format!("{path};"))
}

#[test]
fn the_core_names_nothing_of_the_shell() {
    let all = files(&src());
    assert!(all.len() > 40, "found the sources");
    let mut core = 0;
    for (rel, text) in all.iter().filter(|(rel, _)| !is_shell(rel)) {
        core += 1;
        for shell in [
            "crate::cli",
            "crate::report",
            "crate::files",
            "anyhow",
            "clap",
            "indicatif",
        ] {
            assert!(
                !names(text, shell),
                "src/{rel} uses {shell}: the core takes a scenario and returns results; files, printing, arguments and anyhow are the shell's"
            );
        }
    }
    assert!(core > 30);
}

#[test]
fn reports_name_nothing_of_the_command_line() {
    for (rel, text) in files(&src().join("report")) {
        for shell in ["crate::cli", "anyhow", "clap"] {
            assert!(
                !names(&text, shell),
                "src/{rel} uses {shell}: report/ writes and reads files for the shell, it does not parse arguments"
            );
        }
    }
}

/// The core's absences are lints (clippy.toml), denied for the whole library by src/lib.rs;
/// only the shell's modules may allow them.
#[test]
fn the_core_lints_are_allowed_only_in_the_shell() {
    // Whitespace aside (rustfmt decides the line breaks).
    let lib: String = std::fs::read_to_string(src().join("lib.rs"))
        .unwrap()
        .split_whitespace()
        .collect();
    let lints = "(clippy::disallowed_methods,clippy::disallowed_types,clippy::disallowed_macros,clippy::iter_over_hash_type)";
    assert!(lib.contains(&format!("#![cfg_attr(not(test),deny{lints})]")));
    let allowed: Vec<&str> = lib
        .split(&format!("#[allow{lints}]pubmod"))
        .skip(1)
        .map(|rest| rest.split(';').next().unwrap())
        .collect();
    assert_eq!(allowed, ["cli", "files", "report"]);
    for (rel, text) in files(&src()) {
        if is_shell(&rel) {
            continue;
        }
        let allows = text.matches("clippy::disallowed_").count()
            + text.matches("clippy::iter_over_hash_type").count();
        let expected = 0;
        assert_eq!(
            allows, expected,
            "src/{rel} switches off a lint of the core's absences (see clippy.toml and ARCHITECTURE.md)"
        );
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `src/` and `crates/`, as paths from the repository's root.
fn all_sources() -> Vec<String> {
    let mut out = Vec::new();
    for top in ["src", "crates"] {
        let mut stack = vec![root().join(top)];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let p = entry.unwrap().path();
                if p.is_dir() {
                    if p.file_name().is_some_and(|n| n != "target") {
                        stack.push(p);
                    }
                } else if p.extension().is_some_and(|e| e == "rs") {
                    out.push(p.strip_prefix(root()).unwrap().display().to_string());
                }
            }
        }
    }
    out.sort();
    out
}

/// The code map's rows, each as its backticked names: ARCHITECTURE.md between "## Code map"
/// and the next section.
fn code_map() -> Vec<Vec<String>> {
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let map = doc
        .split("\n## Code map\n")
        .nth(1)
        .expect("ARCHITECTURE.md has a code map")
        .split("\n## ")
        .next()
        .unwrap();
    map.lines()
        .filter(|l| l.starts_with("| `"))
        .map(|row| {
            row.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect()
        })
        .collect()
}

/// A row's directories: each path it names from the root (`src/...`, `crates/...`), or the
/// directory of a file it names that way. A short name in the row (`seed.rs`, `metrics/rows.rs`,
/// `tests/`) is read from one of them.
fn bases(row: &[String]) -> Vec<String> {
    row.iter()
        .filter(|t| t.starts_with("src/") || t.starts_with("crates/"))
        .map(|t| match t.ends_with('/') {
            true => t.clone(),
            false => format!("{}/", t.rsplit_once('/').unwrap().0),
        })
        .collect()
}

fn looks_like_a_path(t: &str) -> bool {
    !t.contains(' ') && (t.ends_with(".rs") || t.ends_with('/'))
}

/// Is `file` named by this row: by its whole path, by its path from one of the row's
/// directories, by its name under one of them (`intake.rs` for `store/intake.rs`; not `mod.rs`),
/// or as a file of a `tests/` directory the row names.
fn names_file(row: &[String], file: &str) -> bool {
    let bases = bases(row);
    row.iter().filter(|t| looks_like_a_path(t)).any(|t| {
        if t == file || (t.ends_with("tests/") && file.starts_with(t.as_str())) {
            return true;
        }
        bases.iter().any(|b| {
            let Some(rest) = file.strip_prefix(b.as_str()) else {
                return false;
            };
            rest == t
                || (t.ends_with("tests/") && rest.starts_with(t.as_str()))
                || (t != "mod.rs" && !t.contains('/') && rest.ends_with(&format!("/{t}")))
        })
    })
}

/// ARCHITECTURE.md's code map names every source file, so a new file cannot be added without
/// saying where it belongs, and every file it names exists.
#[test]
fn the_code_map_names_every_file_and_only_files_that_exist() {
    let rows = code_map();
    assert!(rows.len() > 30, "found the code map");
    let sources = all_sources();
    assert!(sources.len() > 100, "found the sources");
    let missing: Vec<&String> = sources
        .iter()
        .filter(|f| !rows.iter().any(|row| names_file(row, f)))
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's code map does not name {missing:?}: add each to the row of its directory (or a row of its own), saying what it owns"
    );
    for row in &rows {
        let bases = bases(row);
        for t in row.iter().filter(|t| looks_like_a_path(t)) {
            // A name from the row's directories, or from the root or `src/` (`fuzz/`,
            // `vocab/counters.rs` in another module's row).
            let exists = if t.starts_with("src/") || t.starts_with("crates/") {
                root().join(t).exists()
            } else {
                root().join(t).exists()
                    || src().join(t).exists()
                    || bases.iter().any(|b| {
                        root().join(b).join(t).exists()
                            || (!t.contains('/')
                                && sources.iter().any(|f| {
                                    f.starts_with(b.as_str()) && f.ends_with(&format!("/{t}"))
                                }))
                    })
            };
            assert!(
                exists,
                "ARCHITECTURE.md's code map names `{t}`, which is not there"
            );
        }
    }
}

/// Every source file opens with a `//!` saying what it owns and what it does not.
#[test]
fn every_file_opens_with_what_it_owns() {
    for f in all_sources() {
        let text = std::fs::read_to_string(root().join(&f)).unwrap();
        assert!(
            text.starts_with("//!"),
            "{f} does not open with a `//!` saying what it owns"
        );
    }
}

/// The top-level modules of the library each file names (`crate::x`, `use crate::{x, y::z}`),
/// comments left out.
fn modules_named(text: &str) -> Vec<String> {
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    for part in code.split("crate::").skip(1) {
        if let Some(group) = part.strip_prefix('{') {
            // The names at the group's first level: `{a::X, b, c::{Y, Z}}` -> a, b, c.
            let mut depth = 1;
            let mut start = true;
            for (i, c) in group.char_indices() {
                if start && depth == 1 {
                    let name = ident(&group[i..]);
                    if !name.is_empty() {
                        out.push(name);
                        start = false;
                    }
                }
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 1 => start = true,
                    _ => {}
                }
                if depth == 0 {
                    break;
                }
            }
        } else {
            out.push(ident(part));
        }
    }
    out.retain(|m| !m.is_empty());
    out.sort();
    out.dedup();
    out
}

/// No two modules of the library lean on each other, directly or round a longer loop: the
/// imports between top-level modules form no cycle (ARCHITECTURE.md: "no two modules import
/// each other").
#[test]
fn the_modules_form_no_cycle() {
    use std::collections::{BTreeMap, BTreeSet};
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (rel, text) in files(&src()) {
        if rel == "lib.rs" || rel == "main.rs" {
            continue;
        }
        let top = rel
            .split('/')
            .next()
            .unwrap()
            .trim_end_matches(".rs")
            .to_string();
        for m in modules_named(&text) {
            if m != top {
                edges.entry(top.clone()).or_default().insert(m);
            }
        }
    }
    assert!(edges.len() > 15, "found the modules' imports");
    // Depth-first search; a module met again while still on the path closes a cycle.
    fn visit(
        m: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) {
        if done.contains(m) {
            return;
        }
        if let Some(at) = path.iter().position(|p| p == m) {
            panic!(
                "the modules form a cycle: {} -> {m} (see ARCHITECTURE.md, \"Invariants of the code\")",
                path[at..].join(" -> ")
            );
        }
        path.push(m.to_string());
        for next in edges.get(m).into_iter().flatten() {
            visit(next, edges, path, done);
        }
        path.pop();
        done.insert(m.to_string());
    }
    let mut done = BTreeSet::new();
    for m in edges.keys() {
        visit(m, &edges, &mut Vec::new(), &mut done);
    }
}

#[test]
fn the_import_scanner_reads_groups() {
    assert_eq!(
        modules_named("use crate::{a::X, b, c::{Y, z::W}};\nfn f() { crate::d::g(); } // crate::e"),
        ["a", "b", "c", "d"]
    );
}

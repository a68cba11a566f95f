//! The layering ARCHITECTURE.md describes, checked in the imports: the core names no part of the
//! shell, `shell/report/` names no part of `cli/`, and the lints that keep the file system, the wall
//! clock, unordered iteration and printing out of the core are switched off only where the
//! architecture says (clippy.toml lists them; src/lib.rs denies them).

use crate::support::root;
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    root().join("src")
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
    rel.starts_with("shell/") || rel == "main.rs" || rel == "lib.rs"
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
        for shell in ["crate::shell", "anyhow", "clap", "indicatif"] {
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
    for (rel, text) in files(&src().join("shell/report")) {
        for shell in ["crate::shell::cli", "anyhow", "clap"] {
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
    assert_eq!(allowed, ["shell"]);
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

/// The backticked paths of ARCHITECTURE.md's code map (between "## Code map" and the next
/// section), from the repository's root.
fn code_map() -> Vec<String> {
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let map = doc
        .split("\n## Code map\n")
        .nth(1)
        .expect("ARCHITECTURE.md has a code map")
        .split("\n## ")
        .next()
        .unwrap();
    map.lines()
        .filter(|l| l.starts_with('|'))
        .flat_map(|row| {
            row.split('`')
                .skip(1)
                .step_by(2)
                .filter(|t| t.starts_with("src/") || t.starts_with("crates/"))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The folders a reader must find on the map: each top-level folder of `src/`, each loose file
/// at its root, and each folder of a crate under `crates/` that holds sources.
fn folders_to_map() -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(src()).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if p.is_dir() {
            out.push(format!("src/{name}/"));
        } else if name.ends_with(".rs") {
            out.push(format!("src/{name}"));
        }
    }
    for f in all_sources().iter().filter(|f| f.starts_with("crates/")) {
        // crates/NAME/src/... or crates/NAME/tests/...: the crate's folder of that kind.
        // A loose file at the crate's root (`build.rs`) is named as itself.
        let parts: Vec<&str> = f.splitn(4, '/').collect();
        match parts.len() {
            3 => out.push(f.clone()),
            _ => out.push(format!("{}/{}/{}/", parts[0], parts[1], parts[2])),
        }
    }
    out.sort();
    out.dedup();
    out
}

/// ARCHITECTURE.md's code map is a map, not an atlas: a row per folder. It names every folder
/// of the sources (so a new one cannot appear without saying what it owns), and every path it
/// names exists.
#[test]
fn the_code_map_names_every_folder_and_only_paths_that_exist() {
    let named = code_map();
    assert!(named.len() > 10, "found the code map");
    let missing: Vec<String> = folders_to_map()
        .into_iter()
        .filter(|f| !named.contains(f))
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's code map does not name {missing:?}: add a row saying what each owns"
    );
    for t in &named {
        assert!(
            root().join(t).exists(),
            "ARCHITECTURE.md's code map names `{t}`, which is not there"
        );
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

/// The library's floors, from the bottom (ARCHITECTURE.md, "Code map"). A module may import
/// only modules on floors below its own, so the folder names show the layers and no two modules
/// lean on each other.
const FLOORS: &[&[&str]] = &[
    &["base"],
    &["vocab"],
    &["profile"],
    &["model", "history"],
    &["check", "observe"],
    &["scenario"],
    &["sim"],
    &["run"],
    &["sweep"],
    &["shell"],
];

fn floor(module: &str) -> usize {
    FLOORS
        .iter()
        .position(|f| f.contains(&module))
        .unwrap_or_else(|| {
            panic!("src/{module} is on no floor: add it to FLOORS here and to ARCHITECTURE.md")
        })
}

/// The library's top-level modules, as `src/lib.rs` declares them.
fn library_modules() -> Vec<String> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let mut out: Vec<String> = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';').to_string())
        .collect();
    out.sort();
    out
}

#[test]
fn every_module_is_on_a_floor() {
    let mut on_floors: Vec<String> = FLOORS
        .iter()
        .flat_map(|f| f.iter().map(|m| m.to_string()))
        .collect();
    on_floors.sort();
    assert_eq!(
        library_modules(),
        on_floors,
        "src/lib.rs's modules and FLOORS differ"
    );
}

#[test]
fn each_module_imports_only_floors_below_its_own() {
    let modules = library_modules();
    let mut seen = 0;
    for (rel, text) in files(&src()) {
        if rel == "lib.rs" || rel == "main.rs" {
            continue;
        }
        let top = rel.split('/').next().unwrap().trim_end_matches(".rs");
        let own = floor(top);
        // A name that is no module (`crate::{module}` in a format string) is not an import.
        for m in modules_named(&text)
            .into_iter()
            .filter(|m| modules.contains(m))
        {
            if m == top {
                continue;
            }
            seen += 1;
            assert!(
                floor(&m) < own,
                "src/{rel} ({top}, floor {own}) imports {m} (floor {}): a module imports only floors below its own (ARCHITECTURE.md)",
                floor(&m)
            );
        }
    }
    assert!(seen > 50, "found the modules' imports");
}

#[test]
fn the_import_scanner_reads_groups() {
    assert_eq!(
        modules_named("use crate::{a::X, b, c::{Y, z::W}};\nfn f() { crate::d::g(); } // crate::e"),
        ["a", "b", "c", "d"]
    );
}

/// The integration tests are one binary per package (`tests/it/`, `crates/conform/tests/it/`):
/// Cargo would build a loose `tests/NAME.rs` or `tests/NAME/main.rs` as a binary of its own, with
/// its own copies of the helpers and its own link. A new test is a module of `it`.
#[test]
fn the_integration_tests_are_one_binary_per_package() {
    for tests in ["tests", "crates/conform/tests"] {
        let mut binaries = Vec::new();
        for e in std::fs::read_dir(root().join(tests)).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if p.extension().is_some_and(|x| x == "rs") || p.join("main.rs").is_file() {
                binaries.push(name);
            }
        }
        assert_eq!(
            binaries,
            ["it"],
            "{tests}/: a test is a module of {tests}/it/ (declared in its main.rs), not a binary \
             of its own"
        );
    }
}

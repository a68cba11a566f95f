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

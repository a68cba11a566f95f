//! pgmq's SQL, as the `pgmq` crate ships it, without compiling that crate.
//!
//! pgmq is a set of SQL functions; its Rust crate embeds the extension's install script and
//! installs it over sqlx on a tokio runtime — an async database stack this harness otherwise does
//! not need, and most of what `cargo test` used to compile for it. Cargo.toml names the crate, at
//! one exact version, under a target that never matches (`cfg(any())`): Cargo.lock pins it with
//! its checksum, and it is never built. This script asks Cargo where that package's source is
//! (`cargo metadata`, which fetches the package like any other if it is not there yet) and copies
//! its install script (`pgmq.sql`) and version into OUT_DIR; `conform/setup.rs` runs the script
//! in one transaction, as the crate's own installer does for a fresh database.
//! Nothing of pgmq is kept in this repository.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `pgmq` crate's files this harness takes, relative to its package root.
const SCRIPT: &str = "src/install/embedded/sql/pgmq.sql";
const CONTROL: &str = "src/install/embedded/pgmq.control";

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = Command::new(&cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--locked",
            "--manifest-path",
        ])
        .arg(manifest_dir.join("Cargo.toml"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{cargo} metadata`: {e}"));
    if !out.status.success() {
        panic!(
            "`{cargo} metadata` failed (it tells where the pgmq package's source is):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let json = String::from_utf8(out.stdout).expect("cargo metadata prints UTF-8");
    let root = pgmq_root(&json).unwrap_or_else(|| {
        panic!("`cargo metadata` lists no pgmq package: crates/conform/Cargo.toml names it")
    });
    if let Some(ws) = string_field(&json, "workspace_root") {
        println!(
            "cargo:rerun-if-changed={}",
            Path::new(&ws).join("Cargo.lock").display()
        );
    }
    println!("cargo:rerun-if-changed=build.rs");
    for (from, to) in [(SCRIPT, "pgmq.sql"), (CONTROL, "pgmq.control")] {
        let src = root.join(from);
        println!("cargo:rerun-if-changed={}", src.display());
        std::fs::copy(&src, out_dir.join(to))
            .unwrap_or_else(|e| panic!("cannot copy pgmq's {}: {e}", src.display()));
    }
}

/// The directory of the `pgmq` package in `cargo metadata`'s JSON: the object of the top-level
/// `packages` array whose own `name` is "pgmq", its `manifest_path` without the file name.
fn pgmq_root(json: &str) -> Option<PathBuf> {
    let b = json.as_bytes();
    let mut i = json.find("\"packages\":[")? + "\"packages\":[".len();
    loop {
        while b.get(i)?.is_ascii_whitespace() || b[i] == b',' {
            i += 1;
        }
        if b[i] != b'{' {
            return None; // the end of the array
        }
        let end = value_end(b, i)?;
        let (mut name, mut manifest) = (None, None);
        // The package's own fields: `"key":value` pairs at depth 1 of this object.
        let mut j = i + 1;
        while j < end - 1 {
            while b[j].is_ascii_whitespace() || b[j] == b',' {
                j += 1;
            }
            if b[j] != b'"' {
                break;
            }
            let key_end = value_end(b, j)?;
            let key = unescape(&json[j..key_end]);
            let mut v = key_end;
            while b[v].is_ascii_whitespace() || b[v] == b':' {
                v += 1;
            }
            let v_end = value_end(b, v)?;
            if b[v] == b'"' {
                match key.as_str() {
                    "name" => name = Some(unescape(&json[v..v_end])),
                    "manifest_path" => manifest = Some(unescape(&json[v..v_end])),
                    _ => {}
                }
            }
            j = v_end;
        }
        if name.as_deref() == Some("pgmq") {
            return Some(Path::new(&manifest?).parent()?.to_path_buf());
        }
        i = end;
    }
}

/// The index just past the JSON value that starts at `i` (a string, an object, an array or a
/// scalar).
fn value_end(b: &[u8], i: usize) -> Option<usize> {
    let (mut depth, mut in_str, mut j) = (0usize, false, i);
    loop {
        let c = *b.get(j)?;
        j += 1;
        if in_str {
            match c {
                b'\\' => j += 1,
                b'"' => {
                    in_str = false;
                    if depth == 0 {
                        return Some(j);
                    }
                }
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' if depth == 0 => return Some(j - 1),
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            b',' if depth == 0 => return Some(j - 1),
            _ => {}
        }
    }
}

/// A JSON string literal's text (Cargo's paths need no more than `\\` and `\"` undone).
fn unescape(lit: &str) -> String {
    let mut out = String::new();
    let inner = lit
        .strip_prefix('"')
        .and_then(|l| l.strip_suffix('"'))
        .unwrap_or(lit);
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        out.push(if c == '\\' {
            chars.next().unwrap_or(c)
        } else {
            c
        });
    }
    out
}

/// The first `"key":"value"` string field in `json`, unescaped.
fn string_field(json: &str, key: &str) -> Option<String> {
    let tag = format!("\"{key}\":");
    let at = json.find(&tag)? + tag.len();
    let end = value_end(json.as_bytes(), at)?;
    Some(unescape(&json[at..end]))
}

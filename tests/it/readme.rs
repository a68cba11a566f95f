//! README.md's example outputs are real: in every fenced block whose first line is
//! `$ durasim ...`, each `$ durasim ...` line is run in order (in one scratch directory with the
//! bundled scenarios, so a later command can read what an earlier one wrote) and its output must
//! equal the lines after it, timing fields aside (`N s wall`, `(N events/s)`, a sweep's
//! throughput line).
//!
//! When the output changes on purpose (a new trace hash, a new summary line), regenerate the
//! blocks with `bash scripts/update-readme-examples.sh` and commit README.md with the change
//! that caused it.

use crate::support::{durasim_in, root, sandbox, temp_dir, text};
use std::path::Path;

/// A README example: one `$ durasim ...` command line and the output lines after it (up to the
/// next command or the closing fence). A block may hold several commands, run in order.
struct Example {
    command: String,
    /// Line index of the command.
    first: usize,
    /// Line index just past its output.
    end: usize,
}

fn examples(lines: &[&str]) -> Vec<Example> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].starts_with("```")
            && lines
                .get(i + 1)
                .is_some_and(|l| l.starts_with("$ durasim "))
        {
            let close = (i + 2..lines.len())
                .find(|&j| lines[j].starts_with("```"))
                .expect("README: an example block is not closed");
            let commands: Vec<usize> = (i + 1..close)
                .filter(|&j| lines[j].starts_with("$ "))
                .collect();
            for (k, &c) in commands.iter().enumerate() {
                assert!(
                    lines[c].starts_with("$ durasim "),
                    "README line {}: an example command must be `$ durasim ...`",
                    c + 1
                );
                out.push(Example {
                    command: lines[c][2..].to_string(),
                    first: c,
                    end: commands.get(k + 1).copied().unwrap_or(close),
                });
            }
            i = close;
        }
        i += 1;
    }
    out
}

fn run(sandbox: &Path, command: &str) -> Vec<String> {
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    let o = durasim_in(sandbox, &args);
    assert!(
        o.status.code() == Some(0) || o.status.code() == Some(1),
        "README example `{command}` exits {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    text(&o).lines().map(str::to_string).collect()
}

/// A line with its wall-clock figures blanked: the only part of an output that differs between
/// two runs of the same command.
fn untimed(line: &str) -> String {
    if line.trim_start().starts_with("throughput ") {
        return "  throughput (timing)".to_string();
    }
    let mut words: Vec<String> = line.split(' ').map(str::to_string).collect();
    for i in 0..words.len() {
        let next = |k: usize| words.get(i + k).cloned().unwrap_or_default();
        let (one, two) = (next(1), next(2));
        if one == "s" && two.starts_with("wall") {
            words[i] = "T".into();
        }
        if one == "events/s)" && words[i].starts_with('(') {
            words[i] = "(N".into();
        }
    }
    words.join(" ")
}

#[test]
fn readme_examples_are_what_durasim_prints() {
    let path = root().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = readme.lines().collect();
    let found = examples(&lines);
    assert!(found.len() >= 3, "README has {} examples", found.len());
    // A scratch directory with the bundled scenarios, so `reports/...` paths read as in a
    // checkout.
    let sb = sandbox(temp_dir!("examples"));
    let update = std::env::var_os("DURASIM_UPDATE_README").is_some();
    let mut new_lines: Vec<String> = Vec::new();
    let mut copied = 0;
    let mut stale = Vec::new();
    for ex in &found {
        let real = run(&sb, &ex.command);
        let shown = &lines[ex.first + 1..ex.end];
        let same = real.len() == shown.len()
            && real
                .iter()
                .zip(shown)
                .all(|(a, b)| untimed(a) == untimed(b));
        if !same {
            stale.push(format!(
                "$ {}\n--- README\n{}\n--- durasim\n{}",
                ex.command,
                shown.join("\n"),
                real.join("\n")
            ));
        }
        new_lines.extend(lines[copied..=ex.first].iter().map(|l| l.to_string()));
        new_lines.extend(real);
        copied = ex.end;
    }
    new_lines.extend(lines[copied..].iter().map(|l| l.to_string()));
    let _ = std::fs::remove_dir_all(&sb);
    if update {
        std::fs::write(&path, new_lines.join("\n") + "\n").unwrap();
        return;
    }
    assert!(
        stale.is_empty(),
        "README.md's examples differ from what durasim prints; if the change is intended, run \
         `bash scripts/update-readme-examples.sh` and commit README.md:\n\n{}",
        stale.join("\n\n")
    );
}

#[test]
fn timing_fields_are_the_only_ones_ignored() {
    assert_eq!(
        untimed("  run        30 history events, 1046 ms virtual, 0.000 s wall (230120 events/s)"),
        untimed("  run        30 history events, 1046 ms virtual, 0.013 s wall (999 events/s)")
    );
    assert_ne!(
        untimed("  run        30 history events, 1046 ms virtual, 0.000 s wall"),
        untimed("  run        31 history events, 1046 ms virtual, 0.000 s wall")
    );
    assert_ne!(
        untimed("PASS  x  seed 1  trace 431f62a4b70ec2d9"),
        untimed("PASS  x  seed 1  trace 431f62a4b70ec2da")
    );
}

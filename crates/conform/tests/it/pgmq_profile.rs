//! The pgmq profile checked against real pgmq (issue 14): each scenario of
//! `crates/conform/scenarios/pgmq/` (all `[queue] profile = "pgmq"`) is simulated by the library
//! under the profile, and run by `durasim conform SCENARIO --store pgmq` on a throwaway
//! PostgreSQL with pgmq installed (a cluster of the test's own; the test is ignored, run by
//! `cargo test -- --ignored`, and fails where no PostgreSQL can be had). The two sides must violate the same set of invariants
//! (the classes, not the counts). A control row runs the harmful zombie with the profile told
//! that pgmq fences stale deletes (`stale_ack = "reject"`, a wrong model of pgmq): the
//! simulation then holds while real pgmq does not, so the comparison can tell a wrong profile
//! apart. The table (`docs/conform.md`, "The pgmq profile against real pgmq") is printed with
//! `--nocapture` (`cargo test -p durasim-conform --test it -- --ignored --nocapture
//! pgmq_profile`).

use crate::support::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn pgmq_scenarios() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios/pgmq");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

fn names(set: &BTreeSet<String>) -> String {
    if set.is_empty() {
        "✓ (all hold)".to_string()
    } else {
        set.iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The simulated side: the library's own run of the scenario, under its profile.
fn simulated(file: &Path) -> BTreeSet<String> {
    let (scenario, _) = durasim::shell::cli::load_scenario(file).unwrap();
    let report = durasim::run::run_once(
        &scenario,
        &durasim::run::RunRequest::for_scenario(&scenario),
        None,
    );
    report
        .check
        .violated()
        .iter()
        .map(|i| i.name().to_string())
        .collect()
}

/// The real side: the invariants `summary.json` reports violated on the store's history, and
/// whether the run met the scenario's `[expect]` block (exit code 0).
fn measured(file: &Path, store: &str, out: &Path) -> (BTreeSet<String>, bool) {
    let run = conform(&[file.to_str().unwrap(), "--store", store], out);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let real: BTreeSet<String> = summary["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["holds"] == false)
        .map(|i| i["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        real,
        violated(&run).into_iter().collect(),
        "summary.json and the printed verdict agree"
    );
    (real, run.code == 0)
}

#[test]
#[ignore = "needs PostgreSQL: .ci/run installs it and runs the ignored tests"]
fn the_pgmq_profile_gives_the_verdict_classes_of_real_pgmq() {
    let (server, url) = throwaway_server("the comparison of the pgmq profile with real pgmq");
    let store = format!("pgmq:{url}");
    let t = TempDir::new("pgmq-profile");
    let files = pgmq_scenarios();
    assert!(files.len() >= 4, "{files:?}");

    let mut table = String::from(
        "| scenario | simulated, profile pgmq | real pgmq (`conform --store pgmq`) | same |\n|---|---|---|---|\n",
    );
    let mut differ = Vec::new();
    let mut some_violation = false;
    for file in &files {
        let stem = file.file_stem().unwrap().to_str().unwrap().to_string();
        let (scenario, _) = durasim::shell::cli::load_scenario(file).unwrap();
        assert_eq!(
            scenario.queue_profile(),
            durasim::profile::Profile::Pgmq,
            "{stem} runs on the pgmq profile"
        );
        let sim = simulated(file);
        let (real, met) = measured(file, &store, &t.path(&stem));
        assert!(met, "{stem}: real pgmq meets the file's [expect] block");
        some_violation |= !real.is_empty();
        let same = sim == real;
        table.push_str(&format!(
            "| `{stem}` | {} | {} | {} |\n",
            names(&sim),
            names(&real),
            if same { "yes" } else { "**no**" }
        ));
        if !same {
            differ.push(stem);
        }
    }

    // The control: the same harmful zombie, with the profile wrongly fencing stale deletes.
    let overlap = std::fs::read_to_string(
        files
            .iter()
            .find(|f| f.ends_with("zombie-overlap.toml"))
            .unwrap(),
    )
    .unwrap();
    let wrong = t.path("zombie-overlap-fenced.toml");
    std::fs::write(
        &wrong,
        overlap.replace(
            "profile = \"pgmq\"",
            "profile = \"pgmq\"\nstale_ack = \"reject\"",
        ),
    )
    .unwrap();
    let control_sim = simulated(&wrong);
    let (control_real, _) = measured(&wrong, &store, &t.path("control"));
    table.push_str(&format!(
        "| control: `zombie-overlap` with `stale_ack = \"reject\"` (a wrong pgmq) | {} | {} | {} |\n",
        names(&control_sim),
        names(&control_real),
        if control_sim == control_real { "yes" } else { "**no**" }
    ));
    println!("\n{table}");
    drop(server);

    assert!(
        some_violation,
        "at least one scenario shows what pgmq's missing fence costs:\n{table}"
    );
    assert!(
        differ.is_empty(),
        "the pgmq profile and real pgmq disagree on {differ:?}:\n{table}"
    );
    assert!(
        control_sim.is_empty() && control_real.contains("fenced_writes"),
        "a profile that fences pgmq's deletes holds where real pgmq does not:\n{table}"
    );
}

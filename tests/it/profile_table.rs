//! docs/queues.md's profile × fault table (§4) is what `scripts/profile-table.sh` produces: a cheap
//! subset of its cells (three profiles × four faults, every seed the page states) is swept again
//! and compared with the page's cells, so the table cannot rot. The whole table is regenerated
//! with `bash scripts/profile-table.sh` (about 4 minutes on 2 cores).

use crate::support::{bin, root, temp_dir};
use std::process::Command;

fn check(profiles: &str, faults: &str, page: &str) -> std::process::Output {
    Command::new("bash")
        .current_dir(root())
        .arg("scripts/profile-table.sh")
        .args(["--check", page])
        .env("DURASIM", bin())
        .env("PROFILES", profiles)
        .env("FAULTS", faults)
        .env("THREADS", "2")
        .output()
        .expect("bash runs scripts/profile-table.sh")
}

#[test]
fn the_queues_page_table_agrees_with_the_sweeps_of_a_subset_of_its_cells() {
    // durasim (every invariant holds), sqs (a seed-dependent stale delete), procrastinate
    // (nothing rescues: a crash loses the job, a zombie never becomes one).
    let out = check(
        "durasim sqs procrastinate",
        "zombie crash-before-ack relay-crash duplicate-submit",
        "docs/queues.md",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "docs/queues.md's profile table differs from scripts/profile-table.sh (regenerate it):\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("agrees"), "{stdout}");
}

/// The check can fail: a page whose cell says something else is caught.
#[test]
fn a_wrong_cell_is_caught() {
    let page = std::fs::read_to_string(root().join("docs/queues.md")).unwrap();
    let row = page
        .lines()
        .find(|l| l.starts_with("| `sqs` |"))
        .expect("docs/queues.md's table has a row for sqs");
    let zombie = row.split(" | ").nth(1).unwrap().to_string();
    assert_ne!(zombie, "✓", "sqs's zombie cell shows the stale delete");
    let wrong = page.replacen(row, &row.replacen(&zombie, "✓", 1), 1);
    let dir = temp_dir!("wrong-cell");
    let path = dir.join("queues.md");
    std::fs::write(&path, wrong).unwrap();
    let out = check("sqs", "zombie", path.to_str().unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("sqs × zombie"), "{stdout}");
}

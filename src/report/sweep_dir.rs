//! A sweep's output directory: what `durasim sweep` and `durasim merge` write, read back by
//! `merge` and by the sweep's charts.
//!
//! Owns: `sweep.json`, `seeds.jsonl` (one seed's record a line, sorted by seed) and the shrunk
//! scenarios (`shrunk/*.toml`), written into a directory that appears whole or not at all; and
//! reading `sweep.json` and `seeds.jsonl` back, bounded.
//! Does not: decide what they hold (`sweep`) or print anything.

use super::error::ReportError;
use super::output_dir::{Kind, OutputDir};
use crate::files::{open_regular, read_capped, read_line_capped};
use crate::limits::MAX_SUMMARY_BYTES;
use crate::sweep::{SeedRecord, SweepJson, SweepOutput};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes a sweep's (or a merge's) directory: into a temporary sibling, renamed into place when
/// complete (see `output_dir`). Returns where it went.
pub fn write_sweep_dir(out: &Path, output: &SweepOutput) -> Result<PathBuf, ReportError> {
    let dir = OutputDir::create(out, Kind::Sweep)?;
    for (path, text) in &output.files {
        let p = dir.path().join(path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(ReportError::io("create", parent.display()))?;
        }
        std::fs::write(&p, text).map_err(ReportError::io("write", p.display()))?;
    }
    let file = std::fs::File::create(dir.file("seeds.jsonl"))
        .map_err(ReportError::io("create", "seeds.jsonl"))?;
    let mut seeds = std::io::BufWriter::new(file);
    for r in &output.records {
        serde_json::to_writer(&mut seeds, r).expect("a seed record serializes");
        seeds
            .write_all(b"\n")
            .map_err(ReportError::io("write", "seeds.jsonl"))?;
    }
    seeds
        .flush()
        .map_err(ReportError::io("write", "seeds.jsonl"))?;
    drop(seeds);
    let json = serde_json::to_string_pretty(&output.json).expect("sweep.json serializes") + "\n";
    std::fs::write(dir.file("sweep.json"), json).map_err(ReportError::io("write", "sweep.json"))?;
    Ok(dir.commit()?)
}

/// Reads `DIR/sweep.json`.
pub fn read_sweep_json(dir: &Path) -> Result<SweepJson, ReportError> {
    let p = dir.join("sweep.json");
    let text = read_capped(&p, MAX_SUMMARY_BYTES, "sweep.json")?;
    serde_json::from_str(&text).map_err(|e| {
        ReportError::malformed(
            p.display(),
            format!(
                "not a durasim sweep.json ({})",
                crate::messages::plain(&e.to_string())
            ),
        )
    })
}

/// Reads `DIR/seeds.jsonl` whole (a merge holds every record), at most `max` records.
pub fn read_seed_records(dir: &Path, max: u64) -> Result<Vec<SeedRecord>, ReportError> {
    let mut records = Vec::new();
    for_each_seed_record(dir, max, |r| records.push(r))?;
    Ok(records)
}

/// Reads `DIR/seeds.jsonl` a line at a time and hands each record to `f`, at most `max` records
/// (the seeds its sweep.json says were run): a longer file is not one durasim wrote.
pub fn for_each_seed_record(
    dir: &Path,
    max: u64,
    mut f: impl FnMut(SeedRecord),
) -> Result<(), ReportError> {
    let p = dir.join("seeds.jsonl");
    let mut reader = std::io::BufReader::new(open_regular(&p, "seeds.jsonl")?);
    let mut line = String::new();
    let mut n = 0u64;
    while read_line_capped(&mut reader, &mut line, &p, n as usize + 1)? {
        n += 1;
        if n > max {
            return Err(ReportError::malformed(
                p.display(),
                format!("more records than the {max} seeds its sweep.json says were run"),
            ));
        }
        f(serde_json::from_str(&line).map_err(|e| {
            ReportError::malformed(
                format!("{}:{n}", p.display()),
                format!(
                    "not a seed record ({})",
                    crate::messages::plain(&e.to_string())
                ),
            )
        })?);
    }
    Ok(())
}

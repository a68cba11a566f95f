//! A sweep's output directory: what `durasim sweep` and `durasim merge` write, read back by
//! `merge` and by the sweep's charts.
//!
//! Owns: `sweep.json`, `seeds.jsonl` (one seed's record a line, sorted by seed, written as the
//! sweep hands each on) and the shrunk scenarios (`shrunk/*.toml`), written into a directory that
//! appears whole or not at all; and
//! reading `sweep.json` and `seeds.jsonl` back, bounded.
//! Does not: decide what they hold (`sweep`) or print anything.

use super::error::ReportError;
use super::output_dir::{Kind, OutputDir};
use crate::base::limits::MAX_SUMMARY_BYTES;
use crate::shell::files::{open_regular, read_capped, read_line_capped};
use crate::sweep::{SeedRecord, SweepJson, SweepOutput};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes a sweep's (or a merge's) directory whose records are all in memory: see
/// [`SweepDirWriter`].
pub fn write_sweep_dir(out: &Path, output: &SweepOutput) -> Result<PathBuf, ReportError> {
    let mut w = SweepDirWriter::create(out)?;
    for r in &output.records {
        w.record(r)?;
    }
    w.finish(&output.json, &output.files)
}

/// A sweep's directory being written: `seeds.jsonl` a record at a time as the sweep hands them
/// on, then `sweep.json` and the shrunk scenarios. It goes into a temporary sibling, renamed into
/// place by [`SweepDirWriter::finish`] and removed if dropped before (see `output_dir`).
pub struct SweepDirWriter {
    dir: OutputDir,
    seeds: std::io::BufWriter<std::fs::File>,
}

impl SweepDirWriter {
    /// Checks that `out` may be written and starts the directory and its `seeds.jsonl`.
    pub fn create(out: &Path) -> Result<SweepDirWriter, ReportError> {
        let dir = OutputDir::create(out, Kind::Sweep)?;
        let file = std::fs::File::create(dir.file("seeds.jsonl"))
            .map_err(ReportError::io("create", "seeds.jsonl"))?;
        Ok(SweepDirWriter {
            dir,
            seeds: std::io::BufWriter::new(file),
        })
    }

    /// Appends one seed's record, a line of `seeds.jsonl`.
    pub fn record(&mut self, r: &SeedRecord) -> Result<(), ReportError> {
        serde_json::to_writer(&mut self.seeds, r)
            .map_err(|e| ReportError::io("write", "seeds.jsonl")(e.into()))?;
        self.seeds
            .write_all(b"\n")
            .map_err(ReportError::io("write", "seeds.jsonl"))
    }

    /// Writes `sweep.json` and the shrunk files (path relative to the directory, text), and
    /// moves the directory into place. Returns where it went.
    pub fn finish(
        mut self,
        json: &SweepJson,
        files: &[(String, String)],
    ) -> Result<PathBuf, ReportError> {
        self.seeds
            .flush()
            .map_err(ReportError::io("write", "seeds.jsonl"))?;
        let SweepDirWriter { dir, seeds } = self;
        drop(seeds);
        for (path, text) in files {
            let p = dir.path().join(path);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(ReportError::io("create", parent.display()))?;
            }
            std::fs::write(&p, text).map_err(ReportError::io("write", p.display()))?;
        }
        let json = serde_json::to_string_pretty(json).expect("sweep.json serializes") + "\n";
        std::fs::write(dir.file("sweep.json"), json)
            .map_err(ReportError::io("write", "sweep.json"))?;
        Ok(dir.commit()?)
    }
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
                crate::base::messages::plain(&e.to_string())
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
                    crate::base::messages::plain(&e.to_string())
                ),
            )
        })?);
    }
    Ok(())
}

//! Merging shards: the results of `sweep --shard I/N` for every I, joined into exactly what one
//! unsharded sweep finds.
//!
//! Owns: checking that the shards belong together (same scenario, seeds, swarm, bugs and jobs;
//! each shard once; none missing), joining their records, rebuilding `sweep.json` from them, and
//! saying which shard's shrunk file becomes which file of the merged sweep.
//! Does not: read the shards' directories or write the merged one (`cli::merge` and
//! `report::sweep_dir` do).

use super::seed::SeedRecord;
use super::shrunk::{is_shrunk_path, shrunk_path};
use super::summary::SweepJson;
use super::{aggregate, Plan, Shard, ShardError};
use std::path::PathBuf;

/// One shard as read from its directory, which names it in errors.
#[derive(Clone, Debug)]
pub struct ShardResult {
    pub dir: PathBuf,
    pub json: SweepJson,
}

impl ShardResult {
    fn shown(&self) -> String {
        self.dir.display().to_string()
    }

    fn sweep_json(&self) -> String {
        self.dir.join("sweep.json").display().to_string()
    }
}

/// Why shards cannot be merged; each names the shard (its directory) it is about.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("{file}: field `shard`: {error}")]
    BadShard { file: String, error: ShardError },
    #[error(
        "{file}: fields `seeds` and `seedsRun`: not a sweep durasim wrote (an empty range, or more than {max} seeds in one shard)"
    )]
    BadRange { file: String, max: u64 },
    #[error("{dir}: a different sweep (scenario, seeds, swarm, bugs or jobs differ from {first})")]
    DifferentSweep { dir: String, first: String },
    #[error("{dir}: shard count differs from the other shards")]
    CountDiffers { dir: String },
    #[error("{dir}: shard {index}/{count} given twice")]
    Repeated { dir: String, index: u32, count: u32 },
    #[error("shard {index}/{count} is missing: a merge needs every shard")]
    Missing { index: usize, count: u32 },
    #[error("the shards hold {seeds} seeds together; a merge holds at most {max} in memory")]
    TooManySeeds { seeds: u64, max: u64 },
    #[error(
        "the shards' seeds.jsonl files do not match their sweep.json (missing or repeated seeds)"
    )]
    RecordsMismatch,
    #[error("{file}: a shrunk path {path} that durasim does not write (shrunk/NAME.toml)")]
    BadShrunkPath { file: String, path: String },
}

/// Checks one shard's `sweep.json` on its own, before its records are read.
pub fn check_shard(shard: &ShardResult) -> Result<(), MergeError> {
    let j = &shard.json;
    if let Some(s) = j.shard {
        Shard::parse(&format!("{}/{}", s.index, s.count)).map_err(|error| {
            MergeError::BadShard {
                file: shard.sweep_json(),
                error,
            }
        })?;
    }
    if j.seeds.start >= j.seeds.end || j.seeds_run > crate::base::limits::MAX_SWEEP_SEEDS {
        return Err(MergeError::BadRange {
            file: shard.sweep_json(),
            max: crate::base::limits::MAX_SWEEP_SEEDS,
        });
    }
    Ok(())
}

/// Checks that the shards are every shard of one sweep, each once; returns how many seeds they
/// hold together.
pub fn check_complete(shards: &[ShardResult]) -> Result<u64, MergeError> {
    let first = &shards[0];
    let same = |j: &SweepJson| {
        let f = &first.json;
        j.scenario == f.scenario
            && j.scenario_file == f.scenario_file
            && j.seeds == f.seeds
            && j.swarm == f.swarm
            && j.bugs == f.bugs
            && j.jobs_override == f.jobs_override
    };
    if let Some(s) = shards.iter().find(|s| !same(&s.json)) {
        return Err(MergeError::DifferentSweep {
            dir: s.shown(),
            first: first.shown(),
        });
    }
    let count = first.json.shard.map_or(1, |s| s.count);
    let mut seen = vec![false; count as usize];
    for s in shards {
        let index = match (s.json.shard, count) {
            (Some(x), _) if x.count == count => x.index,
            (None, 1) => 0,
            _ => return Err(MergeError::CountDiffers { dir: s.shown() }),
        };
        if std::mem::replace(&mut seen[index as usize], true) {
            return Err(MergeError::Repeated {
                dir: s.shown(),
                index,
                count,
            });
        }
    }
    if let Some(index) = seen.iter().position(|s| !s) {
        return Err(MergeError::Missing { index, count });
    }
    let seeds: u64 = shards.iter().map(|s| s.json.seeds_run).sum();
    if seeds > crate::base::limits::MAX_MERGED_SEEDS {
        return Err(MergeError::TooManySeeds {
            seeds,
            max: crate::base::limits::MAX_MERGED_SEEDS,
        });
    }
    Ok(seeds)
}

/// A shard's shrunk scenario that becomes one file of the merged sweep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShrunkCopy {
    /// Index into the shards given to [`merge`].
    pub shard: usize,
    /// The file in the shard's directory (`shrunk/NAME.toml`, checked).
    pub from: String,
    /// The file in the merged directory.
    pub to: String,
}

impl ShrunkCopy {
    /// The shard's file text with the scenario's name changed to match its new file name.
    pub fn retitle(&self, text: String) -> String {
        let suffix = |p: &str| {
            format!(
                "-shrunk-{}",
                p.trim_start_matches("shrunk/").trim_end_matches(".toml")
            )
        };
        let (own, new) = (suffix(&self.from), suffix(&self.to));
        if own == new {
            text
        } else {
            text.replacen(&own, &new, 1)
        }
    }
}

/// The merged `sweep.json` from the shards' records (any order; `expected` is what
/// [`check_complete`] returned), and the shrunk files to copy: each group's from the shard that
/// holds its first seed. `plan` is the sweep as the shards recorded it.
pub fn merge(
    plan: &Plan,
    shards: &[ShardResult],
    mut records: Vec<SeedRecord>,
    expected: u64,
) -> Result<(SweepJson, Vec<SeedRecord>, Vec<ShrunkCopy>), MergeError> {
    records.sort_by_key(|r| r.seed);
    if records.len() as u64 != expected || records.windows(2).any(|w| w[0].seed == w[1].seed) {
        return Err(MergeError::RecordsMismatch);
    }
    let wall: f64 = shards.iter().map(|s| s.json.throughput.wall_s).sum();
    let threads: usize = shards.iter().map(|s| s.json.throughput.threads).sum();
    let mut json = aggregate(plan, &records, None, wall, threads);
    let mut copies = Vec::new();
    for g in json.failures.iter_mut() {
        for (si, s) in g.signatures.iter_mut().enumerate() {
            let found = shards.iter().enumerate().find_map(|(k, shard)| {
                shard
                    .json
                    .failures
                    .iter()
                    .find(|x| x.invariant == g.invariant)
                    .and_then(|x| {
                        x.signatures
                            .iter()
                            .find(|y| y.signature == s.signature && y.first_seed == s.first_seed)
                    })
                    .map(|y| (k, y.shrunk.clone()))
            });
            if let Some((k, Some(mut info))) = found {
                if !is_shrunk_path(&info.path) {
                    return Err(MergeError::BadShrunkPath {
                        file: shards[k].sweep_json(),
                        path: crate::base::messages::clip(&info.path),
                    });
                }
                let to = shrunk_path(&g.invariant, si);
                copies.push(ShrunkCopy {
                    shard: k,
                    from: std::mem::replace(&mut info.path, to.clone()),
                    to,
                });
                s.shrunk = Some(info);
            }
        }
    }
    Ok((json, records, copies))
}

//! The documented ranges of every number and file a user can hand to durasim.
//!
//! Owns: the limits themselves (one constant each, quoted by the help texts, the scenario
//! validation and the docs) and the checks of command-line numbers against them. Every check
//! here runs before any allocation that depends on the number it checks.
//! Errors are [`LimitError`]s carrying the offending value; the shell words them for the user
//! (`anyhow` only there).
//! Does not: validate a scenario's own keys (`scenario/` does, using these constants), or read
//! a file (`shell/files.rs` does, with these caps).

/// A number, a time or an identifier outside its documented range, with the offending value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Hash)]
pub enum LimitError {
    #[error(
        "--threads {n}: must be between 1 and {max} ({THREADS_PER_CORE} per core on this machine)"
    )]
    Threads { n: usize, max: usize },
    #[error("{what} {n}: at most {MAX_JOBS} jobs in one run (about 80 bytes each)")]
    Jobs { what: String, n: u64 },
    #[error(
        "--seeds {text}: {seeds} seeds in one sweep, at most {MAX_SWEEP_SEEDS}; split it with \
         --shard I/N (each shard at most {MAX_SWEEP_SEEDS}) and join the shards with durasim merge"
    )]
    SweepSeeds { text: String, seeds: u64 },
    /// An identifier (a scenario name, an operator id) outside its alphabet or length; callers
    /// show the value itself, clipped, before this message.
    #[error("must be {rule}")]
    Identifier { id: String, rule: &'static str },
    /// A time in a scenario above [`MAX_MS`], at its field path (`script[0].at_ms`).
    #[error("{value} ms is out of range: times and durations are at most {MAX_MS} ms (about 31 years of virtual time)")]
    Time { path: String, value: String },
}

impl LimitError {
    /// The scenario field it concerns, where it is one (`script[0].at_ms`).
    pub fn field(&self) -> Option<&str> {
        match self {
            LimitError::Time { path, .. } => Some(path),
            _ => None,
        }
    }
}

/// Jobs in one run: `arrivals.jobs` plus `[[enqueue]]` and `[[burst]]` jobs, `--jobs`, and a
/// `jobsOverride` read back by `replay`. A job costs about 80 bytes for the whole run (770 MiB
/// of peak RSS at 10M, 2026-12-04), so the limit is about 0.8 GB.
pub const MAX_JOBS: u64 = 10_000_000;

/// Seeds run by one `durasim sweep` invocation (the range's length, or one shard's share of it).
/// Each seed keeps a record of a few hundred bytes until the sweep ends; a larger sweep is split
/// with `--shard I/N` and joined with `durasim merge`.
pub const MAX_SWEEP_SEEDS: u64 = 1_000_000;

/// Seeds `durasim merge` joins (it holds every seed's record in memory at once).
pub const MAX_MERGED_SEEDS: u64 = 10_000_000;

/// Shards of one sweep (`--shard I/N`).
pub const MAX_SHARDS: u32 = 100_000;

/// `--threads` may ask for at most this many threads per core (`available_parallelism`).
pub const THREADS_PER_CORE: usize = 4;

/// Any duration, delay or time in a scenario (`*_ms`, a distribution's values, `[[script]]`
/// `at_ms`, ...): about 31.7 years of virtual time. Sums of a few such times never overflow.
pub const MAX_MS: u64 = 1_000_000_000_000;

/// A scenario file (the largest bundled one is a few kilobytes; a frozen 100,000-job run is a few
/// megabytes).
pub const MAX_SCENARIO_BYTES: u64 = 16 << 20;

/// A guided sweep's `--corpus DIR`: at most this many `*.toml` files, of at most this many bytes
/// together (a kept run's file is a few kilobytes; a guided sweep keeps at most 1024).
pub const MAX_CORPUS_FILES: usize = 4096;
pub const MAX_CORPUS_BYTES: u64 = 64 << 20;

/// A `summary.json` or `sweep.json` read back by `replay`, `merge` or `chart`.
pub const MAX_SUMMARY_BYTES: u64 = 64 << 20;

/// One line of a `trace.jsonl` or `seeds.jsonl` (read line by line, never whole).
pub const MAX_LINE_BYTES: u64 = 1 << 20;

/// A history file judged by `durasim verify` (read line by line, never whole: a million-job
/// run's `trace.jsonl` is about 2 GB).
pub const MAX_HISTORY_BYTES: u64 = 64 << 30;

/// One line of a history file read by `durasim verify` (the longest the simulator writes is a
/// few hundred bytes).
pub const MAX_HISTORY_LINE_BYTES: usize = 64 << 10;

/// The most jobs one history may enqueue for `verify` (the most `durasim run --jobs` makes): its
/// memory grows with the jobs (the checker's per-job facts, the reader's tables of the file's
/// job ids, event ids and version 2 keys): 4.2 GiB peak for 10M jobs of a version 2 history
/// with opaque keys, about 440 bytes a job, so at most ~4.5 GiB at the cap
/// (docs/history-format.md "Bounds", docs/performance.md "verify").
pub const MAX_HISTORY_JOBS: u64 = 10_000_000;

/// The most distinct workers, outbox events and (version 2) keys one history may name, each.
pub const MAX_HISTORY_IDS: u64 = 10_000_000;

/// A CSV or `trace.jsonl` read whole by `durasim chart` (a million-job run's are well below).
pub const MAX_DATA_BYTES: u64 = 2 << 30;

/// What an operator id may be: it is written into every audit record of a reprocess.
pub const OPERATOR_RULE: &str =
    "1 to 64 characters from a-z, A-Z, 0-9, '.', '_', '-' and '@', starting with a letter or a digit";
pub const MAX_OPERATOR: usize = 64;

/// Checks an operator id against [`OPERATOR_RULE`].
pub fn validate_operator(id: &str) -> Result<(), LimitError> {
    let allowed = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-' | b'@');
    check_identifier(id, MAX_OPERATOR, allowed, OPERATOR_RULE)
}

/// An identifier: 1 to `max` bytes, each `allowed`, the first an allowed letter or digit;
/// otherwise "must be RULE".
pub fn check_identifier(
    id: &str,
    max: usize,
    allowed: impl Fn(u8) -> bool,
    rule: &'static str,
) -> Result<(), LimitError> {
    let b = id.as_bytes();
    let ok = (1..=max).contains(&b.len())
        && b[0].is_ascii_alphanumeric()
        && b.iter().all(|&c| allowed(c));
    if ok {
        Ok(())
    } else {
        Err(LimitError::Identifier {
            id: id.to_string(),
            rule,
        })
    }
}

/// Checks every time in a scenario against [`MAX_MS`]: each key ending in `_ms`, and the values
/// of a distribution or a `[min, max]` range given under such a key. Walks the parsed scenario,
/// so a key added later is covered without a new line here. Returns the first offending path
/// (`script[0].at_ms`) and the value.
pub fn check_times(scenario: &impl serde::Serialize) -> Result<(), LimitError> {
    let value = serde_json::to_value(scenario).expect("a scenario serializes");
    walk_times(&value, String::new(), false)
}

/// [`check_times`] of one part of a scenario already serialized, at `path` (`enqueue[3]`, a
/// top-level key): a scenario of many entries is walked a part at a time, never as one tree.
pub fn check_times_at(value: &serde_json::Value, path: String) -> Result<(), LimitError> {
    let timed = path.ends_with("_ms");
    walk_times(value, path, timed)
}

fn walk_times(v: &serde_json::Value, path: String, timed: bool) -> Result<(), LimitError> {
    use serde_json::Value;
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                // Inside a distribution (`{ dist = ..., value }`), every number is a time, but
                // `sigma` (a shape, checked by the distribution itself).
                let t = k.ends_with("_ms") || (timed && k != "sigma");
                walk_times(x, p, t)?;
            }
            Ok(())
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                walk_times(x, format!("{path}[{i}]"), timed)?;
            }
            Ok(())
        }
        Value::Number(n) if timed => {
            let ok = match (n.as_u64(), n.as_f64()) {
                (Some(u), _) => u <= MAX_MS,
                (None, Some(f)) => f <= MAX_MS as f64,
                _ => false,
            };
            if ok {
                Ok(())
            } else {
                Err(LimitError::Time {
                    path,
                    value: n.to_string(),
                })
            }
        }
        _ => Ok(()),
    }
}

/// The most threads `--threads` accepts on this machine.
pub fn max_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores.saturating_mul(THREADS_PER_CORE)
}

/// Checks `--threads N`: 1 to [`max_threads`].
pub fn check_threads(n: usize) -> Result<(), LimitError> {
    let max = max_threads();
    if n == 0 || n > max {
        return Err(LimitError::Threads { n, max });
    }
    Ok(())
}

/// Checks a job count (`--jobs`, or `what` names where it came from).
pub fn check_jobs(what: &str, n: u64) -> Result<(), LimitError> {
    if n > MAX_JOBS {
        return Err(LimitError::Jobs {
            what: what.to_string(),
            n,
        });
    }
    Ok(())
}

/// How many seeds of `start..end` shard `index` of `count` runs: those whose index in the range
/// is `index` modulo `count`. No seed is materialised.
pub fn shard_len(start: u64, end: u64, index: u32, count: u32) -> u64 {
    let len = end - start;
    let (count, index) = (count as u64, index as u64);
    len / count + u64::from(len % count > index)
}

/// Checks the number of seeds one sweep invocation would run.
pub fn check_sweep_seeds(text: &str, seeds: u64) -> Result<(), LimitError> {
    if seeds > MAX_SWEEP_SEEDS {
        return Err(LimitError::SweepSeeds {
            text: text.to_string(),
            seeds,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_split_a_range_without_listing_it() {
        for (a, b, n) in [(0u64, 10u64, 3u32), (5, 6, 4), (0, 1000, 7), (3, 4, 1)] {
            let total: u64 = (0..n).map(|i| shard_len(a, b, i, n)).sum();
            assert_eq!(total, b - a);
            for i in 0..n {
                let listed = (a..b).filter(|x| (x - a) % n as u64 == i as u64).count() as u64;
                assert_eq!(shard_len(a, b, i, n), listed, "{a}..{b} {i}/{n}");
            }
        }
        assert_eq!(shard_len(0, u64::MAX, 0, 1), u64::MAX);
    }
}

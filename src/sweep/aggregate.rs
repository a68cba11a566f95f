//! Aggregation: a sweep's per-seed records into `sweep.json`, folded one record at a time.
//!
//! Owns: failure groups (by invariant, then by first-violation signature, with the first seeds
//! and the command that reproduces each), the totals, and the throughput figures.
//! Does not: decide the coverage gate (`coverage`) or shrink (`shrunk`).

use super::coverage::CoverageTally;
use super::seed::SeedRecord;
use super::summary::{FailureGroup, SeedRange, SignatureGroup, SweepJson, Throughput};
use super::{Plan, Shard, FIRST_SEEDS};
use crate::check::Invariant;

fn reproduce_command(plan: &Plan, seed: u64) -> String {
    let mut cmd = if plan.swarm {
        format!(
            "durasim sweep {} --swarm --seeds {seed}..{}",
            plan.scenario_file,
            seed + 1
        )
    } else {
        format!("durasim run {} --seed {seed}", plan.scenario_file)
    };
    if let Some(j) = plan.jobs {
        cmd.push_str(&format!(" --jobs {j}"));
    }
    for b in plan
        .bugs
        .iter()
        .filter(|b| !plan.scenario.bugs.contains(*b))
    {
        cmd.push_str(&format!(" --bug {}", b.name()));
    }
    if let Some(p) = &plan.programs {
        cmd.push_str(&p.flags());
    }
    cmd
}

/// Builds sweep.json from the records (sorted by seed): see [`Aggregator`].
pub fn aggregate(
    plan: &Plan,
    records: &[SeedRecord],
    shard: Option<Shard>,
    wall_s: f64,
    threads: usize,
) -> SweepJson {
    let mut a = Aggregator::new(plan);
    for r in records {
        a.add(r);
    }
    a.finish(shard, wall_s, threads)
}

/// sweep.json folded one seed record at a time, in seed order, so a sweep keeps no record once
/// it is written: the failure groups (at most `FIRST_SEEDS` seeds listed each), the coverage
/// tally and the totals.
pub struct Aggregator<'a> {
    plan: &'a Plan,
    groups: Vec<FailureGroup>,
    coverage: CoverageTally,
    last_seed: Option<u64>,
    seeds_run: u64,
    seeds_failed: u64,
    seeds_replayed: u64,
    events: u64,
    virtual_time_ms: u64,
}

impl<'a> Aggregator<'a> {
    pub fn new(plan: &'a Plan) -> Aggregator<'a> {
        Aggregator {
            plan,
            groups: Vec::new(),
            coverage: CoverageTally::new(plan),
            last_seed: None,
            seeds_run: 0,
            seeds_failed: 0,
            seeds_replayed: 0,
            events: 0,
            virtual_time_ms: 0,
        }
    }

    /// Folds one seed's record; records come in increasing seed order.
    pub fn add(&mut self, r: &SeedRecord) {
        assert!(
            self.last_seed.is_none_or(|s| s < r.seed),
            "seed records are aggregated in seed order"
        );
        self.last_seed = Some(r.seed);
        self.seeds_run += 1;
        self.seeds_failed += u64::from(!r.failures.is_empty());
        self.seeds_replayed += u64::from(r.replay_checked);
        self.events += r.events;
        self.virtual_time_ms += r.virtual_time_ms;
        self.coverage.add(r);
        for f in &r.failures {
            let groups = &mut self.groups;
            let g = match groups.iter().position(|g| g.invariant == f.invariant) {
                Some(i) => &mut groups[i],
                None => {
                    groups.push(FailureGroup {
                        invariant: f.invariant.clone(),
                        class: f.class.clone(),
                        seeds: 0,
                        first_seeds: Vec::new(),
                        signatures: Vec::new(),
                    });
                    groups.last_mut().expect("just pushed")
                }
            };
            g.seeds += 1;
            if g.first_seeds.len() < FIRST_SEEDS {
                g.first_seeds.push(r.seed);
            }
            match g.signatures.iter_mut().find(|s| s.signature == f.signature) {
                Some(s) => {
                    s.seeds += 1;
                    if s.first_seeds.len() < FIRST_SEEDS {
                        s.first_seeds.push(r.seed);
                    }
                }
                None => g.signatures.push(SignatureGroup {
                    signature: f.signature.clone(),
                    seeds: 1,
                    first_seeds: vec![r.seed],
                    first_seed: r.seed,
                    first_message: f.message.clone(),
                    first_at_ms: f.at_ms,
                    first_job: f.job,
                    reproduce: reproduce_command(self.plan, r.seed),
                    swarm: r.swarm.clone(),
                    shrunk: None,
                }),
            }
        }
    }

    /// sweep.json; every group's `shrunk` is `None` (see `shrunk::shrink_groups`). `wall_s` and
    /// `threads` only feed the throughput figures.
    pub fn finish(mut self, shard: Option<Shard>, wall_s: f64, threads: usize) -> SweepJson {
        let plan = self.plan;
        // Groups in invariant order, then replay, an inconsistent history, then panic;
        // signatures by first seed.
        let order = |name: &str| -> usize {
            Invariant::parse(name)
                .map(|i| i as usize)
                .unwrap_or(match name {
                    "replay" => 100,
                    super::freeze::HISTORY_CONSISTENT => 101,
                    _ => 102,
                })
        };
        self.groups.sort_by_key(|g| order(&g.invariant));
        let coverage = self.coverage.finish(shard.is_some());
        let (n, events, virtual_time_ms) = (self.seeds_run, self.events, self.virtual_time_ms);
        let wall = wall_s.max(1e-9);
        SweepJson {
            scenario: plan.scenario.name.clone(),
            scenario_file: plan.scenario_file.clone(),
            seeds: SeedRange {
                start: plan.seeds.0,
                end: plan.seeds.1,
            },
            shard,
            swarm: plan.swarm,
            bugs: plan.bugs.names().into_iter().map(String::from).collect(),
            jobs_override: plan.jobs,
            passed: self.seeds_failed == 0 && coverage.gate != "failed",
            seeds_run: n,
            seeds_failed: self.seeds_failed,
            seeds_replayed: self.seeds_replayed,
            events,
            virtual_time_ms,
            failures: self.groups,
            coverage,
            throughput: Throughput {
                wall_s: (wall_s * 1000.0).round() / 1000.0,
                threads,
                events_per_wall_s: (events as f64 / wall).round(),
                sim_to_wall_ratio: ((virtual_time_ms as f64 / 1000.0 / wall) * 10.0).round() / 10.0,
                seeds_per_wall_s: ((n as f64 / wall) * 10.0).round() / 10.0,
            },
        }
    }
}

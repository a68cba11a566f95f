//! The run's plan, decided by the seed before anything runs: what is enqueued when, what each
//! attempt meets (model output, extraction time, errors, a stall, a kill and where), which relay
//! batches are killed between publish and mark, how long each review takes.
//!
//! Owns: the kill points of real processes and the seeded schedule (with the held faults the
//! simulator draws outside `draw_plan`: a pause, a slow heartbeat). Arrivals come from the
//! simulator's own arrival process (same seed, same documents, tenants, collisions and
//! resubmissions as `durasim run`); an attempt's fate is the simulator's `draw_plan`, drawn from
//! a stream keyed by (job, attempt) instead of by worker, because which real worker takes which
//! job is up to the operating system.
//! Does not: run anything or read a clock.

use crate::store::Request;
use durasim::base::rng::{Purpose, Stream};
use durasim::model::worker::{AttemptPlan, CrashPoint};
use durasim::scenario::{FaultKind, Scenario};
use durasim::sim::arrivals::ArrivalProcess;
use durasim::sim::faults::{draw_plan, FaultRates};
use durasim::vocab::faults::{Draw, Held};
use durasim::vocab::key::{Documents, KeyNames};
use durasim::vocab::payload::Payload;

/// Where the harness kills a worker. Each of the simulator's three crash points is split in
/// two: the point itself, and the real-only point just after it (`mid_extract` lies between
/// `after_lease` and `after_extract`, `mid_commit` between `after_extract` and
/// `after_commit_before_ack`), with equal chance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillPoint {
    AfterLease,
    /// During the extraction, at a seeded fraction of it.
    MidExtract,
    AfterExtract,
    /// After the result and outbox INSERTs, before the COMMIT: the transaction must roll back.
    MidCommit,
    /// Committed, not acked: the chapter's opening incident. Under the naive dual write, between
    /// the database write and the publish.
    AfterCommitBeforeAck,
}

impl KillPoint {
    pub const ALL: [KillPoint; 5] = [
        KillPoint::AfterLease,
        KillPoint::MidExtract,
        KillPoint::AfterExtract,
        KillPoint::MidCommit,
        KillPoint::AfterCommitBeforeAck,
    ];

    pub fn name(self) -> &'static str {
        match self {
            KillPoint::AfterLease => "after_lease",
            KillPoint::MidExtract => "mid_extract",
            KillPoint::AfterExtract => "after_extract",
            KillPoint::MidCommit => "mid_commit",
            KillPoint::AfterCommitBeforeAck => "after_commit_before_ack",
        }
    }

    pub fn parse(s: &str) -> Option<KillPoint> {
        KillPoint::ALL.into_iter().find(|p| p.name() == s)
    }

    fn from_model(p: CrashPoint, split: bool) -> KillPoint {
        match (p, split) {
            (CrashPoint::AfterLease, false) => KillPoint::AfterLease,
            (CrashPoint::AfterLease, true) => KillPoint::MidExtract,
            (CrashPoint::AfterExtract, false) => KillPoint::AfterExtract,
            (CrashPoint::AfterExtract, true) => KillPoint::MidCommit,
            (CrashPoint::AfterCommitBeforeAck, _) => KillPoint::AfterCommitBeforeAck,
        }
    }
}

/// The relay's one kill point.
pub const RELAY_KILL_POINT: &str = "between_publish_and_mark";

/// Everything decided about one attempt.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fate {
    pub plan: AttemptPlan,
    pub kill: Option<KillPoint>,
    /// For `MidExtract`: how far into the extraction, in (0, 1).
    pub kill_fraction: f64,
    /// The retry policy's jitter draw for this attempt, in [0, 1).
    pub jitter: f64,
}

/// A kill forced from the command line (`--kill JOB:ATTEMPT:POINT`), over the seeded schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForcedKill {
    pub job: u32,
    pub attempt: u32,
    pub point: KillPoint,
}

impl ForcedKill {
    pub fn parse(s: &str) -> Result<ForcedKill, String> {
        let parts: Vec<&str> = s.split(':').collect();
        let bad = || {
            format!(
                "--kill {s:?}: expected JOB:ATTEMPT:POINT, e.g. 0:1:mid_commit; points: {}",
                KillPoint::ALL.map(|p| p.name()).join(", ")
            )
        };
        if parts.len() != 3 {
            return Err(bad());
        }
        Ok(ForcedKill {
            job: parts[0].parse().map_err(|_| bad())?,
            attempt: parts[1].parse().map_err(|_| bad())?,
            point: KillPoint::parse(parts[2]).ok_or_else(bad)?,
        })
    }
}

/// Stream indices above the simulator's worker numbers, so conform's streams are its own.
const CONFORM: u64 = 1 << 40;

/// The fate of attempt `attempt` of `job`: a pure function of the seed.
pub fn fate(
    scenario: &Scenario,
    seed: u64,
    job: u32,
    attempt: u32,
    invalid: bool,
    forced: &[ForcedKill],
) -> Fate {
    let mut s = Stream::new(
        seed,
        Purpose::Worker,
        CONFORM | ((job as u64) << 16) | attempt as u64,
    );
    let rates = FaultRates::from_scenario(scenario);
    let plan = draw_plan(&mut s, &rates, scenario, invalid);
    let [split, fraction, jitter] = s.block::<3>();
    let mut plan = plan;
    draw_held(&mut s, scenario, &mut plan);
    let mut fate = Fate {
        plan,
        kill: plan.crash.map(|p| KillPoint::from_model(p, split & 1 == 1)),
        kill_fraction: 0.1 + 0.8 * durasim::base::rng::unit_of(fraction),
        jitter: durasim::base::rng::unit_of(jitter),
    };
    force(&mut fate, job, attempt, forced);
    fate
}

/// The held faults `draw_plan` does not draw (a pause after the first heartbeat, a slow first
/// heartbeat): for each whose `[faults]` rate is not 0, two draws (hit?, length) from the
/// attempt's own stream, after every other draw, so a scenario that leaves them off meets the
/// same fates as before. The simulator draws them from the worker's pause stream and spare
/// draws (`sim::faults::draw_held`); same rates and lengths, different draws, as for every
/// other fate here.
fn draw_held(s: &mut Stream, scenario: &Scenario, plan: &mut AttemptPlan) {
    for h in Held::ALL {
        let f = scenario.faults.held(h);
        if f.rate <= 0.0 || h.spec().draw == Draw::AttemptBlock {
            continue;
        }
        let [hit, length] = s.block::<2>();
        if durasim::base::rng::unit_of(hit) < f.rate {
            plan.lengths.set(h, Some(f.ms.sample_from(length)));
        }
    }
}

/// A forced kill wins over the seeded schedule and the scenario's script.
pub fn force(fate: &mut Fate, job: u32, attempt: u32, forced: &[ForcedKill]) {
    if let Some(f) = forced.iter().find(|f| f.job == job && f.attempt == attempt) {
        fate.kill = Some(f.point);
    }
}

/// Whether relay process `relay` (slot) is killed between publish and mark on its batch
/// number `batch` of its generation `generation`.
pub fn relay_killed(
    scenario: &Scenario,
    seed: u64,
    relay: u32,
    generation: u32,
    batch: u64,
) -> bool {
    let p = scenario
        .faults
        .struck(durasim::vocab::faults::Struck::RelayCrash);
    if p <= 0.0 {
        return false;
    }
    let mut s = Stream::new(
        seed,
        Purpose::Relay,
        CONFORM | ((relay as u64) << 32) | ((generation as u64) << 24) | batch,
    );
    s.unit() < p
}

/// How long the review of event `event` takes.
pub fn review_ms(scenario: &Scenario, seed: u64, event: i64) -> u64 {
    let mut s = Stream::new(seed, Purpose::Review, CONFORM | event as u64);
    scenario.stages.review_ms.sample(&mut s)
}

/// Builds the idempotency key as the application does; `tenantless` is the bug switch.
pub fn key(tenant: &str, document: &str, version: u32, tenantless: bool) -> String {
    if tenantless {
        format!("{document}:v{version}")
    } else {
        durasim::vocab::key::build_idempotency_key(tenant, document, version as i64)
            .expect("tenants and documents are validated by the scenario")
    }
}

/// Every enqueue request of the run, in time order: generated arrivals (the simulator's arrival
/// process, same seed), `[[enqueue]]` entries and `[[burst]]` documents.
pub fn requests(
    scenario: &Scenario,
    seed: u64,
    jobs: Option<u64>,
    tenantless: bool,
) -> Vec<Request> {
    let total = jobs.unwrap_or(scenario.arrivals.jobs);
    let mut out = Vec::new();
    let mut process = ArrivalProcess::new(
        Stream::new(seed, Purpose::Arrivals, 0),
        scenario.arrivals.tenants.len(),
        total,
    );
    let mut names = KeyNames::default();
    let mut push = |at_ms: u64,
                    tenant: &str,
                    payload: Payload,
                    version: u32,
                    invalid: bool,
                    names: &KeyNames| {
        let document = names.documents.name(payload.document);
        out.push(Request {
            at_ms,
            key: key(tenant, &document, version, tenantless),
            tenant: tenant.to_string(),
            document,
            version,
            operation: names.operations.name(payload.operation).to_string(),
            content: durasim::vocab::payload::content_hex(payload.content),
            payload: format!("{:016x}", payload.hash(names).0),
            invalid,
        });
    };
    let mut t = 0;
    if process.remaining() > 0 {
        t = process.next_gap_ms(&scenario.arrivals);
    }
    while process.remaining() > 0 {
        let a = process.next(&scenario.arrivals);
        let tenant = &scenario.arrivals.tenants[a.tenant.index()];
        push(t, tenant, a.payload, 1, a.invalid, &names);
        if process.remaining() > 0 {
            t += process.next_gap_ms(&scenario.arrivals);
        }
    }
    for e in &scenario.enqueue {
        let document = names
            .documents
            .named(&e.document)
            .expect("validated by the scenario");
        let payload = match &e.payload {
            Some(text) => Payload::from_text(document, text),
            None => Payload::of(document),
        };
        push(e.at_ms, &e.tenant, payload, e.version, e.invalid, &names);
    }
    let mut first = total;
    for b in &scenario.burst {
        for k in 0..b.jobs {
            let payload = Payload::of(Documents::generated((first + k) as u32));
            push(b.at_ms, &b.tenant, payload, 1, false, &names);
        }
        first += b.jobs;
    }
    out.sort_by_key(|r| r.at_ms);
    out
}

/// A scripted worker fault that may hit this attempt, with its index (it fires once: the
/// store records which fired).
pub fn scripted_for(
    scenario: &Scenario,
    job: u32,
    attempt: u32,
    leased_ms: u64,
) -> Vec<(usize, FaultKind)> {
    scenario
        .script
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            e.job == Some(job)
                && e.fault.strikes_attempt()
                && leased_ms >= e.at_ms
                && e.attempt.is_none_or(|a| a == attempt)
        })
        .map(|(i, e)| (i, e.fault))
        .collect()
}

/// Applies a scripted fault that fired to the attempt's fate, as the simulator does.
pub fn apply_script(scenario: &Scenario, index: usize, fate: &mut Fate) {
    use durasim::model::retry::ErrorKind;
    let e = &scenario.script[index];
    match e.fault {
        FaultKind::Crash => {
            fate.kill = e
                .point
                .as_deref()
                .and_then(CrashPoint::parse)
                .map(|p| KillPoint::from_model(p, false));
        }
        FaultKind::TransientError => fate.plan.error = Some(ErrorKind::ProviderUnavailable),
        FaultKind::PermanentError => fate.plan.error = Some(ErrorKind::SchemaInvalid),
        // Not a worker's: `scripted_for` leaves them out (a fault of the delivery side is the
        // relay's or the consumer's, a payload mutation is refused by `unsupported`).
        k if !k.strikes_attempt() => {}
        // A held fault (a stall, a pause after the first heartbeat, a slow first heartbeat,
        // any row of `vocab::faults::HELD`): the worker holds itself up as `child.rs` says;
        // one `child.rs` does not perform is refused by `unsupported`.
        held => {
            let h = held.held().expect("every other fault kind is a held one");
            fate.plan.lengths.set(h, e.length_of(h));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chaos() -> Scenario {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/chaos.toml"
        ))
        .unwrap();
        Scenario::parse("chaos.toml", &text).unwrap()
    }

    #[test]
    fn fates_are_a_function_of_seed_job_and_attempt() {
        let s = chaos();
        assert_eq!(fate(&s, 7, 3, 1, false, &[]), fate(&s, 7, 3, 1, false, &[]));
        let many: Vec<Fate> = (0..200).map(|j| fate(&s, 7, j, 1, false, &[])).collect();
        let kills = many.iter().filter(|f| f.kill.is_some()).count();
        assert!(
            kills > 0 && kills < 40,
            "chaos kills about 4% of attempts, got {kills}/200"
        );
        for p in KillPoint::ALL {
            let seen = (0..3000).any(|j| fate(&s, 7, j, 1, false, &[]).kill == Some(p));
            assert!(seen, "{} never drawn", p.name());
        }
    }

    #[test]
    fn requests_match_the_simulators_arrivals() {
        let s = chaos();
        let r = requests(&s, 0, None, false);
        assert_eq!(r.len(), 200);
        assert!(r.windows(2).all(|w| w[0].at_ms <= w[1].at_ms));
        assert!(r
            .iter()
            .all(|q| q.key.starts_with(&format!("{}:", q.tenant))));
        let tenantless = requests(&s, 0, None, true);
        assert!(tenantless.iter().all(|q| q.key.starts_with("doc-")));
    }

    #[test]
    fn pause_and_slow_heartbeat_rates_are_drawn_after_every_other_fate() {
        let rates = |rate: f64| {
            chaos()
                .edited(|f| {
                    f.faults.held_mut(Held::Pause).rate = rate;
                    f.faults.held_mut(Held::SlowHeartbeat).rate = rate;
                })
                .unwrap()
        };
        let (off, on) = (rates(0.0), rates(0.5));
        let mut hits = [0; 2];
        for j in 0..200 {
            let (a, mut b) = (
                fate(&off, 7, j, 1, false, &[]),
                fate(&on, 7, j, 1, false, &[]),
            );
            for (i, h) in [Held::Pause, Held::SlowHeartbeat].into_iter().enumerate() {
                assert_eq!(a.plan.lengths.get(h), None);
                if let Some(ms) = b.plan.lengths.take(h) {
                    assert!((600..=1500).contains(&ms), "the default length, got {ms}");
                    hits[i] += 1;
                }
            }
            assert_eq!(a, b, "the other draws do not move");
        }
        assert!(hits.iter().all(|n| (50..150).contains(n)), "{hits:?}");
    }

    #[test]
    fn forced_kills_parse_and_win() {
        let f = ForcedKill::parse("0:1:mid_commit").unwrap();
        assert_eq!(f.point, KillPoint::MidCommit);
        assert!(ForcedKill::parse("0:1:nowhere").is_err());
        assert_eq!(
            fate(&chaos(), 1, 0, 1, false, &[f]).kill,
            Some(KillPoint::MidCommit)
        );
    }
}

//! Profile resolution (docs/queues.md M0): a profile's defaults, then the scenario's own keys.
//!
//! Owns: [`Overrides`] (every key a scenario may set on top of its profile, absent when not
//! written), the order (profile first, scenario keys win), and the combinations a profile's
//! system cannot express, each refused with the field, the profile and what is allowed:
//! a lease or a renewal on a queue that has none, a detection that needs a lease (or the lack
//! of one), a stall counter without BullMQ's two-pass checker, a rescue race without a sweeper,
//! a cap on a formula that has none, a retention on a DLQ that keeps everything.
//! Does not: parse TOML (the scenario hands the keys over as words and numbers) or locate lines
//! (the scenario does, from the field path returned).

use super::params::*;
use super::{Profile, Semantics};
use crate::base::ids::SimTime;

/// `max_attempts`: a number, or `"unlimited"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttemptsLimit {
    Limit(u32),
    Unlimited,
}

/// The scenario's keys that change a profile's values; `None` where the file is silent.
/// Words are kept as written so that an unknown one is reported with the allowed list.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Overrides {
    pub lease_ms: Option<SimTime>,
    pub heartbeat: Option<String>,
    pub heartbeat_ms: Option<SimTime>,
    pub deadline_ms: Option<SimTime>,
    pub max_attempts: Option<AttemptsLimit>,
    pub attempts_count: Option<String>,
    pub stale_heartbeat: Option<String>,
    pub stale_ack: Option<String>,
    pub stale_retry: Option<String>,
    pub stale_dead_letter: Option<String>,
    pub stale_apply_permille: Option<u32>,
    pub expiry: Option<String>,
    pub sweep_ms: Option<SimTime>,
    pub liveness_ms: Option<SimTime>,
    pub on_expiry: Option<String>,
    pub stall_limit: Option<u32>,
    pub rescue_write: Option<String>,
    pub rescue_gap_ms: Option<SimTime>,
    pub fetch: Option<String>,
    pub permanent_error: Option<String>,
    pub unique: Option<String>,
    pub backoff: Option<String>,
    pub backoff_base_ms: Option<u64>,
    pub backoff_cap_ms: Option<u64>,
    pub jitter: Option<String>,
    pub dlq_mode: Option<String>,
    pub dlq_capacity: Option<u32>,
    pub dlq_retention_ms: Option<u64>,
}

/// A refusal: the field's path (`queue.stale_ack`) and what is wrong and allowed.
pub type Refusal = (String, String);

fn word<W: Word>(field: &str, value: &Option<String>) -> Result<Option<W>, Refusal> {
    match value {
        None => Ok(None),
        Some(v) => W::parse(v).map(Some).ok_or_else(|| {
            (
                field.to_string(),
                format!(
                    "unknown value {}; allowed: {}",
                    crate::base::messages::clip(v),
                    W::allowed()
                ),
            )
        }),
    }
}

fn refuse<T>(field: &str, message: String) -> Result<T, Refusal> {
    Err((field.to_string(), message))
}

/// The profile's defaults with the scenario's keys applied, or the first combination the
/// profile's system cannot express. The keys are applied group by group, in the order the
/// refusals are reported.
pub fn resolve(profile: Profile, o: &Overrides) -> Result<Semantics, Refusal> {
    let mut s = profile.defaults();
    let p = Resolving {
        profile,
        name: profile.name(),
        has_lease: s.lease_ms.is_some() || profile == Profile::Temporal,
    };
    p.lease_and_attempts(&mut s, o)?;
    p.write_guards(&mut s, o)?;
    p.expiry(&mut s, o)?;
    p.rescue(&mut s, o)?;
    p.fetch_and_intake(&mut s, o)?;
    p.backoff(&mut s, o)?;
    p.dlq(&mut s, o)?;
    Ok(s)
}

/// What every group of keys needs to know of the profile being resolved.
struct Resolving {
    profile: Profile,
    name: &'static str,
    /// Whether the system holds a job by a lease (Temporal's Start-To-Close timeout counts).
    has_lease: bool,
}

impl Resolving {
    /// The lease, heartbeats, deadline and the attempt limit.
    fn lease_and_attempts(&self, s: &mut Semantics, o: &Overrides) -> Result<(), Refusal> {
        let profile = self.profile;
        let name = self.name;
        let has_lease = self.has_lease;
        if let Some(lease) = o.lease_ms {
            if !has_lease {
                return refuse(
                    "queue.lease_ms",
                    format!(
                        "the {name} profile has no job lease (a job is held until its worker reports); \
                         allowed: leave queue.lease_ms out, or rescue by worker liveness with \
                         queue.expiry = \"worker_liveness\""
                    ),
                );
            }
            if lease == 0 {
                return refuse("queue.lease_ms", "must be > 0".into());
            }
            s.lease_ms = Some(lease);
        }
        if profile == Profile::Temporal && s.lease_ms.is_none() {
            return refuse(
                "queue.profile",
                "the temporal profile needs queue.lease_ms (the Start-To-Close timeout): Temporal \
                 has no default and refuses an activity without one"
                    .into(),
            );
        }
        if let Some(h) = word::<Heartbeat>("queue.heartbeat", &o.heartbeat)? {
            if h == Heartbeat::Renew && !has_lease {
                return refuse(
                    "queue.heartbeat",
                    format!("the {name} profile has no lease to renew; allowed: \"none\""),
                );
            }
            s.heartbeat = h;
        }
        if let Some(ms) = o.heartbeat_ms {
            if ms == 0 {
                return refuse("queue.heartbeat_ms", "must be > 0".into());
            }
            s.heartbeat_ms = ms;
        }
        if let Some(ms) = o.deadline_ms {
            s.deadline_ms = Some(ms);
        }
        match o.max_attempts {
            Some(AttemptsLimit::Limit(n)) if n == 0 || n > 1000 => {
                return refuse(
                    "queue.max_attempts",
                    format!("must be between 1 and 1000, or \"unlimited\" (got {n})"),
                )
            }
            Some(AttemptsLimit::Limit(n)) => s.max_attempts = Some(n),
            Some(AttemptsLimit::Unlimited) => s.max_attempts = None,
            None => {}
        }
        if let Some(c) = word("queue.attempts_count", &o.attempts_count)? {
            s.attempts_count = c;
        }
        Ok(())
    }

    /// What a stale holder's writes do.
    fn write_guards(&self, s: &mut Semantics, o: &Overrides) -> Result<(), Refusal> {
        for (field, value, slot) in [
            (
                "queue.stale_heartbeat",
                &o.stale_heartbeat,
                &mut s.stale.heartbeat,
            ),
            ("queue.stale_ack", &o.stale_ack, &mut s.stale.ack),
            ("queue.stale_retry", &o.stale_retry, &mut s.stale.retry),
            (
                "queue.stale_dead_letter",
                &o.stale_dead_letter,
                &mut s.stale.dead_letter,
            ),
        ] {
            if let Some(g) = word::<WriteGuard>(field, value)? {
                *slot = g;
            }
        }
        if let Some(p) = o.stale_apply_permille {
            if p > 1000 {
                return refuse(
                    "queue.stale_apply_permille",
                    format!("is a chance in thousandths, 0 to 1000 (got {p})"),
                );
            }
            s.stale.apply_permille = p;
        }
        let may_apply = [
            s.stale.heartbeat,
            s.stale.ack,
            s.stale.retry,
            s.stale.dead_letter,
        ]
        .contains(&WriteGuard::MayApply);
        if o.stale_apply_permille.is_some() && !may_apply {
            return refuse(
                "queue.stale_apply_permille",
                "only means something when a stale_* key is \"may_apply\"".into(),
            );
        }
        Ok(())
    }

    /// How a lease's end is detected: by a timer, a sweeper, a two-pass checker or worker
    /// liveness, or never.
    fn expiry(&self, s: &mut Semantics, o: &Overrides) -> Result<(), Refusal> {
        let name = self.name;
        let has_lease = self.has_lease;
        if let Some(kind) = word::<ExpiryKind>("queue.expiry", &o.expiry)? {
            s.expiry.kind = kind;
            if kind == ExpiryKind::WorkerLiveness && o.liveness_ms.is_none() {
                s.expiry.liveness_ms = 30_000;
            }
        }
        if let Some(ms) = o.sweep_ms {
            if ms == 0 {
                return refuse("queue.sweep_ms", "must be > 0".into());
            }
            s.expiry.sweep_ms = ms;
        }
        if let Some(ms) = o.liveness_ms {
            if ms == 0 {
                return refuse("queue.liveness_ms", "must be > 0".into());
            }
            s.expiry.liveness_ms = ms;
        }
        let kind = s.expiry.kind;
        let needs_lease = matches!(
            kind,
            ExpiryKind::Timer | ExpiryKind::Sweep | ExpiryKind::TwoPass
        );
        if needs_lease && !has_lease {
            return refuse(
                "queue.expiry",
                format!(
                    "the {name} profile has no job lease to expire; allowed: \"worker_liveness\" or \"never\""
                ),
            );
        }
        if kind == ExpiryKind::WorkerLiveness && has_lease {
            return refuse(
                "queue.expiry",
                format!(
                    "\"worker_liveness\" rescues the jobs of dead worker processes in queues without a \
                     job lease (procrastinate, sidekiq); the {name} profile has a lease; allowed: \
                     \"timer\", \"sweep\", \"two_pass\" or \"never\""
                ),
            );
        }
        if !matches!(kind, ExpiryKind::Timer | ExpiryKind::Never) && s.expiry.sweep_ms == 0 {
            return refuse(
                "queue.sweep_ms",
                format!(
                    "queue.expiry = \"{}\" needs queue.sweep_ms, the sweeper's period",
                    kind.name()
                ),
            );
        }

        Ok(())
    }

    /// What a detected end does: a stall's limit, a sweeper's write by id and its gap.
    fn rescue(&self, s: &mut Semantics, o: &Overrides) -> Result<(), Refusal> {
        let kind = s.expiry.kind;
        if let Some(e) = word::<OnExpiry>("queue.on_expiry", &o.on_expiry)? {
            s.on_expiry = e;
        }
        if let Some(n) = o.stall_limit {
            s.stall_limit = n;
        }
        if s.on_expiry == OnExpiry::Stall && kind != ExpiryKind::TwoPass {
            return refuse(
                "queue.on_expiry",
                "\"stall\" is BullMQ's stalled checker and needs queue.expiry = \"two_pass\""
                    .into(),
            );
        }
        if o.stall_limit.is_some() && s.on_expiry != OnExpiry::Stall {
            return refuse(
                "queue.stall_limit",
                "only means something with queue.on_expiry = \"stall\"".into(),
            );
        }
        if let Some(w) = word::<RescueWrite>("queue.rescue_write", &o.rescue_write)? {
            s.rescue_write = w;
        }
        if let Some(ms) = o.rescue_gap_ms {
            s.rescue_gap_ms = ms;
        }
        if s.rescue_write == RescueWrite::ById && kind != ExpiryKind::Sweep {
            return refuse(
                "queue.rescue_write",
                "\"by_id\" is a sweeper's late write and needs queue.expiry = \"sweep\"".into(),
            );
        }
        if s.rescue_gap_ms > 0 && s.rescue_write != RescueWrite::ById {
            return refuse(
                "queue.rescue_gap_ms",
                "only means something with queue.rescue_write = \"by_id\" (a guarded write checks \
                 what it read)"
                    .into(),
            );
        }
        Ok(())
    }

    /// How jobs are fetched, a permanent error's path, and uniqueness at enqueue.
    fn fetch_and_intake(&self, s: &mut Semantics, o: &Overrides) -> Result<(), Refusal> {
        let profile = self.profile;
        let name = self.name;
        let has_lease = self.has_lease;
        if let Some(f) = word::<Fetch>("queue.fetch", &o.fetch)? {
            match f {
                Fetch::SuperFetch => return refuse(
                    "queue.fetch",
                    "\"super_fetch\" (Sidekiq Pro) is not modelled yet; allowed: \"lease\" or \"pop\""
                        .into(),
                ),
                Fetch::Pop if !matches!(profile, Profile::Sidekiq | Profile::Pgmq) => {
                    return refuse(
                        "queue.fetch",
                        format!("the {name} profile has no at-most-once fetch; allowed: \"lease\""),
                    )
                }
                Fetch::Lease if !has_lease => {
                    return refuse(
                        "queue.fetch",
                        format!("the {name} profile has no lease; allowed: \"pop\""),
                    )
                }
                _ => s.fetch = f,
            }
        }
        if let Some(p) = word("queue.permanent_error", &o.permanent_error)? {
            s.permanent_error = p;
        }
        if let Some(u) = word("queue.unique", &o.unique)? {
            s.unique = u;
        }
        Ok(())
    }

    /// The retry delay's formula, base, cap and jitter.
    fn backoff(&self, s: &mut Semantics, o: &Overrides) -> Result<(), Refusal> {
        let profile = self.profile;
        let name = self.name;
        if let Some(f) = word::<BackoffFormula>("retry.backoff", &o.backoff)? {
            if f == BackoffFormula::Visibility && !self.has_lease {
                return refuse(
                    "retry.backoff",
                    format!(
                        "\"visibility\" waits out the rest of the failed attempt's lease, and the \
                         {name} profile has no lease (the job would never be visible again); \
                         allowed: \"exp2\", \"exp2_offset\", \"pow4\", \"exp_e\" or \"immediate\""
                    ),
                );
            }
            s.backoff.formula = f;
            // A cap belongs to `exp2` alone (`profile::backoff`): another formula has none, so
            // the header states none, and a profile's `exp2` cap (Temporal's 100 s) does not
            // follow its formula out (swarm seed 59852: temporal with `exp_e` stated a cap the
            // queue never applied, and the checker restated it).
            if f != BackoffFormula::Exp2
                || profile.defaults().backoff.formula != BackoffFormula::Exp2
            {
                s.backoff.cap_ms = u64::MAX;
            }
        }
        if let Some(base) = o.backoff_base_ms {
            s.backoff.base_ms = base;
        }
        if let Some(cap) = o.backoff_cap_ms {
            if s.backoff.formula != BackoffFormula::Exp2 {
                return refuse(
                    "retry.backoff_cap_ms",
                    format!(
                        "the {} formula of the {name} profile has no cap; allowed: leave it out, or \
                         retry.backoff = \"exp2\"",
                        s.backoff.formula.name()
                    ),
                );
            }
            s.backoff.cap_ms = cap;
        }
        if s.backoff.cap_ms < s.backoff.base_ms {
            return refuse(
                "retry.backoff_cap_ms",
                format!("must be >= backoff_base_ms ({})", s.backoff.base_ms),
            );
        }
        if let Some(j) = word::<JitterMode>("retry.jitter", &o.jitter)? {
            if matches!(
                j,
                JitterMode::Symmetric | JitterMode::Up | JitterMode::Additive
            ) && j != profile.defaults().backoff.jitter
            {
                return refuse(
                    "retry.jitter",
                    format!(
                        "\"{}\" keeps the constants of the profile that has it; under {name} allowed: \
                         \"none\", \"full\" or \"equal\"",
                        j.name()
                    ),
                );
            }
            s.backoff.jitter = j;
        }
        Ok(())
    }

    /// The dead-letter queue's mode, capacity and retention.
    fn dlq(&self, s: &mut Semantics, o: &Overrides) -> Result<(), Refusal> {
        let name = self.name;
        if let Some(m) = word::<DlqMode>("dlq.mode", &o.dlq_mode)? {
            s.dlq.mode = m;
            if o.dlq_retention_ms.is_none() && matches!(m, DlqMode::Queue | DlqMode::Kept) {
                s.dlq.retention_ms = None;
            }
        }
        if let Some(c) = o.dlq_capacity {
            if c == 0 {
                return refuse(
                    "dlq.capacity",
                    "must be >= 1 (leave it out for an unbounded DLQ)".into(),
                );
            }
            s.dlq.capacity = Some(c);
        }
        if let Some(r) = o.dlq_retention_ms {
            if matches!(s.dlq.mode, DlqMode::Queue | DlqMode::Kept) {
                return refuse(
                    "dlq.retention_ms",
                    format!(
                        "the {name} profile's DLQ (mode \"{}\") keeps every entry; allowed: leave it out, \
                         or dlq.mode = \"redrive\", \"dead_set\" or \"discarded\"",
                        s.dlq.mode.name()
                    ),
                );
            }
            s.dlq.retention_ms = Some(r);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_override_is_the_profile_itself() {
        for p in Profile::ALL {
            match resolve(*p, &Overrides::default()) {
                Ok(s) => assert_eq!(s, p.defaults()),
                Err((field, message)) => {
                    assert_eq!(*p, Profile::Temporal, "{}: {field}: {message}", p.name());
                    assert!(message.contains("Start-To-Close"));
                }
            }
        }
    }

    #[test]
    fn scenario_keys_win_over_the_profile() {
        let o = Overrides {
            lease_ms: Some(60_000),
            rescue_write: Some("guarded".into()),
            max_attempts: Some(AttemptsLimit::Unlimited),
            dlq_retention_ms: Some(1_209_600_000),
            ..Overrides::default()
        };
        let river = resolve(Profile::River, &o).unwrap();
        assert_eq!(river.lease_ms, Some(60_000));
        assert_eq!(river.rescue_write, RescueWrite::Guarded);
        assert_eq!(river.max_attempts, None);
        assert_eq!(river.dlq.retention_ms, Some(1_209_600_000));
        let t = resolve(
            Profile::Temporal,
            &Overrides {
                lease_ms: Some(600_000),
                jitter: Some("full".into()),
                ..Overrides::default()
            },
        )
        .unwrap();
        assert_eq!(t.lease_ms, Some(600_000));
        assert_eq!(t.backoff.jitter, JitterMode::Full);
        // procrastinate's stalled-jobs recipe.
        let recipe = resolve(
            Profile::Procrastinate,
            &Overrides {
                expiry: Some("worker_liveness".into()),
                sweep_ms: Some(600_000),
                ..Overrides::default()
            },
        )
        .unwrap();
        assert_eq!(recipe.expiry, Expiry::worker_liveness(30_000, 600_000));
    }

    /// Only `exp2` has a cap: a formula chosen over a profile's `exp2` leaves its cap behind,
    /// so the header states none (swarm seed 59852: Temporal's 100 s cap stated for `exp_e`).
    #[test]
    fn a_formula_other_than_exp2_takes_no_cap_from_the_profile() {
        let with = |backoff: &str| {
            resolve(
                Profile::Temporal,
                &Overrides {
                    lease_ms: Some(600_000),
                    backoff: Some(backoff.into()),
                    ..Overrides::default()
                },
            )
            .unwrap()
            .backoff
        };
        assert_eq!(with("exp2").cap_ms, 100_000);
        for f in ["exp_e", "pow4", "exp2_offset", "immediate"] {
            let b = with(f);
            assert_eq!(b.formula.name(), f);
            assert_eq!(b.cap_ms, u64::MAX, "{f}");
        }
    }

    fn refused(p: Profile, o: Overrides) -> Refusal {
        resolve(p, &o).expect_err("must be refused")
    }

    #[test]
    fn what_a_system_cannot_express_is_refused_with_the_field_and_the_allowed_values() {
        let (f, m) = refused(
            Profile::Sidekiq,
            Overrides {
                heartbeat: Some("renew".into()),
                ..Overrides::default()
            },
        );
        assert_eq!(f, "queue.heartbeat");
        assert!(
            m.contains("sidekiq") && m.contains("allowed: \"none\""),
            "{m}"
        );
        let (f, m) = refused(
            Profile::River,
            Overrides {
                stale_ack: Some("maybe".into()),
                ..Overrides::default()
            },
        );
        assert_eq!(f, "queue.stale_ack");
        assert!(
            m.contains("\"may_apply\"") && m.contains("unknown value"),
            "{m}"
        );
        let (f, _) = refused(
            Profile::Procrastinate,
            Overrides {
                lease_ms: Some(1_000),
                ..Overrides::default()
            },
        );
        assert_eq!(f, "queue.lease_ms");
        let (f, _) = refused(
            Profile::River,
            Overrides {
                on_expiry: Some("stall".into()),
                ..Overrides::default()
            },
        );
        assert_eq!(f, "queue.on_expiry");
        let (f, _) = refused(
            Profile::Bullmq,
            Overrides {
                rescue_gap_ms: Some(50),
                ..Overrides::default()
            },
        );
        assert_eq!(f, "queue.rescue_gap_ms");
        let (f, _) = refused(
            Profile::River,
            Overrides {
                backoff_cap_ms: Some(10),
                ..Overrides::default()
            },
        );
        assert_eq!(f, "retry.backoff_cap_ms");
        let (f, _) = refused(
            Profile::Bullmq,
            Overrides {
                dlq_retention_ms: Some(10),
                ..Overrides::default()
            },
        );
        assert_eq!(f, "dlq.retention_ms");
        let (f, _) = refused(
            Profile::River,
            Overrides {
                fetch: Some("pop".into()),
                ..Overrides::default()
            },
        );
        assert_eq!(f, "queue.fetch");
        let (f, _) = refused(
            Profile::Durasim,
            Overrides {
                expiry: Some("worker_liveness".into()),
                ..Overrides::default()
            },
        );
        assert_eq!(f, "queue.expiry");
        let (f, _) = refused(
            Profile::Durasim,
            Overrides {
                max_attempts: Some(AttemptsLimit::Limit(0)),
                ..Overrides::default()
            },
        );
        assert_eq!(f, "queue.max_attempts");
    }
}

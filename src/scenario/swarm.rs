//! The `[swarm]` ranges of `durasim sweep --swarm`.
//!
//! Owns: `Swarm` (closed `[min, max]` ranges per setting) and its validation, including that
//! every range has exactly two values; `SwarmDraw` (what one seed drew) and the scenario with a
//! draw written in (`Scenario::with_draw`).
//! Does not: draw a seed's settings (`sweep/swarm.rs`: the order of the draws).

use super::validate::crash_points_allowed;
use super::Scenario;
use crate::base::messages::clip;
use crate::model::worker::CrashPoint;
use crate::vocab::faults::{Held, Struck};
use serde::{Deserialize, Serialize};

/// What one seed drew.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SwarmDraw {
    pub crash: f64,
    pub stall: f64,
    pub transient_error: f64,
    pub permanent_error: f64,
    pub relay_crash: f64,
    pub workers: u32,
    pub lease_ms: u64,
    pub heartbeat_ms: u64,
    pub crash_points: Vec<String>,
    /// Drawn only when the scenario's `[swarm]` gives the range (so other sweeps keep their
    /// draws and their `seeds.jsonl`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedupe_window_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay_restart_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer_crash: Option<f64>,
    /// A configuration-space seed (`[swarm] space`): a one-line summary of what it drew (its
    /// whole scenario comes back from the seed alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub space: Option<String>,
    /// A configuration-space seed: the invariants its draw's hazards break without a defect
    /// (`sweep::space::Hazard`), which its seed does not count as failures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerates: Vec<String>,
}

impl Scenario {
    /// The scenario with a seed's swarm settings written in (faults, workers, lease, heartbeat,
    /// dedupe window, relay restart) and its profile and header resolved again. Not validated
    /// again: a draw runs as drawn, inside ranges `[swarm]`'s validation checked.
    pub fn with_draw(&self, d: &SwarmDraw) -> Scenario {
        let mut s = self.file.clone();
        s.faults.crash = d.crash;
        s.faults.held_mut(Held::Stall).rate = d.stall;
        s.faults.transient_error = d.transient_error;
        s.faults.permanent_error = d.permanent_error;
        *s.faults.struck_mut(Struck::RelayCrash) = d.relay_crash;
        s.faults.crash_points = d.crash_points.clone();
        s.workers.count = d.workers;
        s.queue.lease_ms = d.lease_ms;
        s.queue.heartbeat_ms = d.heartbeat_ms;
        if d.dedupe_window_ms.is_some() {
            s.consumer.dedupe_window_ms = d.dedupe_window_ms;
        }
        if d.relay_restart_ms.is_some() {
            s.relay.restart_ms = d.relay_restart_ms;
        }
        if let Some(rate) = d.consumer_crash {
            *s.faults.struck_mut(Struck::ConsumerCrash) = rate;
        }
        // Of what the profile resolves from, a draw changes only lease_ms and heartbeat_ms, each
        // at least 1 (its range's minimum, or 1): what resolved for the file resolves again.
        let semantics = crate::profile::resolve::resolve(s.queue_profile(), &s.profile_overrides())
            .unwrap_or_else(|(field, m)| {
                panic!("a swarm draw resolves as its scenario did: {field}: {m}")
            });
        Scenario::resolved(
            s,
            semantics,
            self.names.clone(),
            self.entry_ids.clone(),
            self.aims.clone(),
            self.expectations.clone(),
        )
    }
}

/// `--swarm` ranges: each seed of a swarm sweep draws its own settings inside these closed
/// `[min, max]` ranges (from the seed's `swarm` stream), so every seed tests a different mix of
/// faults and settings and still replays alone. A range left out keeps the scenario's value.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Swarm {
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "pair::deserialize"
    )]
    pub crash: Option<[f64; 2]>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "pair::deserialize"
    )]
    pub stall: Option<[f64; 2]>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "pair::deserialize"
    )]
    pub transient_error: Option<[f64; 2]>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "pair::deserialize"
    )]
    pub permanent_error: Option<[f64; 2]>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "pair::deserialize"
    )]
    pub relay_crash: Option<[f64; 2]>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "pair::deserialize"
    )]
    pub workers: Option<[u32; 2]>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "pair::deserialize"
    )]
    pub lease_ms: Option<[u64; 2]>,
    /// Drawn below the seed's lease_ms.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "pair::deserialize"
    )]
    pub heartbeat_ms: Option<[u64; 2]>,
    /// Each seed keeps a random non-empty subset of these crash points.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crash_points: Option<Vec<String>>,
    /// The consumer's dedupe window (`[consumer] dedupe_window_ms`).
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "pair::deserialize"
    )]
    pub dedupe_window_ms: Option<[u64; 2]>,
    /// The relay's recovery delay after a crash (`[relay] restart_ms`).
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "pair::deserialize"
    )]
    pub relay_restart_ms: Option<[u64; 2]>,
    /// The consumer's crash rate (`[faults] consumer_crash`).
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "pair::deserialize"
    )]
    pub consumer_crash: Option<[f64; 2]>,
    /// `"everything"`: each seed draws a whole scenario, every setting a user can write
    /// (`sweep::space`), instead of drawing within the ranges above (which it then refuses).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub space: Option<String>,
}

impl Swarm {
    pub(super) fn validate(&self) -> Result<(), (String, String)> {
        let err = |field: &str, message: String| Err((format!("swarm.{field}"), message));
        if let Some(space) = &self.space {
            if space != "everything" {
                return err(
                    "space",
                    format!("unknown value {}; allowed: \"everything\"", clip(space)),
                );
            }
            let alone = Swarm {
                space: None,
                ..self.clone()
            };
            if alone != Swarm::default() {
                return err(
                    "space",
                    "draws every setting itself: leave the other [swarm] ranges out".into(),
                );
            }
            return Ok(());
        }
        for (field, r) in [
            ("crash", self.crash),
            ("stall", self.stall),
            ("transient_error", self.transient_error),
            ("permanent_error", self.permanent_error),
            ("relay_crash", self.relay_crash),
            ("consumer_crash", self.consumer_crash),
        ] {
            if let Some([lo, hi]) = r {
                if !(0.0..=1.0).contains(&lo) || !(0.0..=1.0).contains(&hi) || lo > hi {
                    return err(field, format!("is a range of probabilities [min, max] with 0 <= min <= max <= 1 (got [{lo}, {hi}])"));
                }
            }
        }
        if let Some([lo, hi]) = self.workers {
            if lo == 0 || lo > hi || hi > 1_000_000 {
                return err(
                    "workers",
                    format!("needs 1 <= min <= max <= 1000000 (got [{lo}, {hi}])"),
                );
            }
        }
        for (field, r) in [
            ("lease_ms", self.lease_ms),
            ("heartbeat_ms", self.heartbeat_ms),
            ("dedupe_window_ms", self.dedupe_window_ms),
            ("relay_restart_ms", self.relay_restart_ms),
        ] {
            if let Some([lo, hi]) = r {
                if lo == 0 || lo > hi {
                    return err(field, format!("needs 1 <= min <= max (got [{lo}, {hi}])"));
                }
            }
        }
        if let (Some([_, lease_hi]), Some([hb_lo, _])) = (self.lease_ms, self.heartbeat_ms) {
            if hb_lo >= lease_hi {
                return err("heartbeat_ms", format!("min ({hb_lo}) must be below lease_ms max ({lease_hi}): heartbeats are drawn below the lease"));
            }
        }
        if let Some(points) = &self.crash_points {
            if points.is_empty() {
                return err(
                    "crash_points",
                    format!(
                        "needs at least one crash point; allowed: {}",
                        crash_points_allowed()
                    ),
                );
            }
            for p in points {
                if CrashPoint::parse(p).is_none() {
                    return err(
                        "crash_points",
                        format!(
                            "unknown crash point {}; allowed: {}",
                            clip(p),
                            crash_points_allowed()
                        ),
                    );
                }
            }
        }
        Ok(())
    }
}

/// A `[min, max]` range of exactly two values. serde's reader for `[T; 2]` stops after two
/// and leaves the rest unread (the TOML reader does not report them), so a range written with
/// three values would silently lose one.
mod pair {
    use serde::de::{Deserialize, Deserializer, Error, IgnoredAny, SeqAccess, Visitor};
    use std::fmt;
    use std::marker::PhantomData;

    pub fn deserialize<'de, D, T>(d: D) -> Result<Option<[T; 2]>, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        struct Pair<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Pair<T> {
            type Value = Option<[T; 2]>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a range [min, max]")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut values = Vec::with_capacity(2);
                let mut count = 0usize;
                while count < 2 {
                    match seq.next_element::<T>()? {
                        Some(v) => values.push(v),
                        None => break,
                    }
                    count += 1;
                }
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    count += 1;
                }
                match <[T; 2]>::try_from(values) {
                    Ok(pair) if count == 2 => Ok(Some(pair)),
                    _ => Err(A::Error::custom(format!(
                        "is a range [min, max] of exactly two values (got {count} value{})",
                        if count == 1 { "" } else { "s" }
                    ))),
                }
            }
        }
        d.deserialize_seq(Pair(PhantomData))
    }
}

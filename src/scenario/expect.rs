//! The `[expect]` block: what a run of the scenario must show.
//!
//! Owns: `Expect` (the block as written: a value per counter, violations, `sometimes`
//! properties, replay, trace hash), its keys (the counters' `[expect]` keys from
//! `vocab/counters.rs`, and five of its own), `ReplayExpectation`, and [`Expectations`]: the
//! block read into the checker's words once, at validation (an unknown name is refused there,
//! at its field).
//! Does not: list the counters (`vocab/counters.rs`) or check a run against it (`run/expect.rs`).

use crate::base::messages::clip;
use crate::check::{Invariant, Sometimes};
use crate::vocab::counters::{Counter, Counts};
use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::sync::LazyLock;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayExpectation {
    Identical,
    Diverges,
}

/// What a scenario must show. Every key is optional; `run` exits 1 when one is not met.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Expect {
    /// Figures the run must show exactly, one key per [`Counter`] that has one (`acked = 1`).
    pub counts: Counts,
    /// The invariants this scenario must violate (and no others). `[]` means all hold.
    pub violations: Option<Vec<String>>,
    /// `sometimes` properties this run must reach.
    pub sometimes: Option<Vec<String>>,
    /// `sometimes` properties a sweep of this scenario must reach in at least one seed (its
    /// coverage gate); a single run need not.
    pub sweep_sometimes: Option<Vec<String>>,
    /// Re-running the same seed must give the same trace (`identical`) or not (`diverges`).
    pub replay: Option<ReplayExpectation>,
    /// The run's trace hash (16 hex digits): pins the exact history, as a frozen scenario does.
    pub trace_hash: Option<String>,
}

/// `[expect]`'s keys besides the counters, in the order they are written after them.
const OWN_KEYS: [&str; 5] = [
    "violations",
    "sometimes",
    "sweep_sometimes",
    "replay",
    "trace_hash",
];

/// Every key `[expect]` allows, for the "allowed keys are" of an unknown one.
static KEYS: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| Counter::names().chain(OWN_KEYS).collect());

/// One key of `[expect]`, read as serde's derive reads a field name: an unknown key is an
/// error at the key (so the TOML reader points at its line).
enum Key {
    Count(Counter),
    Violations,
    Sometimes,
    SweepSometimes,
    Replay,
    TraceHash,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct KeyName;
        impl Visitor<'_> for KeyName {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a key of [expect]")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key, E> {
                Ok(match s {
                    "violations" => Key::Violations,
                    "sometimes" => Key::Sometimes,
                    "sweep_sometimes" => Key::SweepSometimes,
                    "replay" => Key::Replay,
                    "trace_hash" => Key::TraceHash,
                    _ => match Counter::parse(s) {
                        Some(c) => Key::Count(c),
                        None => return Err(E::unknown_field(s, KEYS.as_slice())),
                    },
                })
            }
        }
        d.deserialize_identifier(KeyName)
    }
}

impl<'de> Deserialize<'de> for Expect {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Expect, D::Error> {
        struct Table;
        impl<'de> Visitor<'de> for Table {
            type Value = Expect;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "the [expect] table")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Expect, A::Error> {
                let mut e = Expect::default();
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::Count(c) => e.counts.set(c, Some(map.next_value()?)),
                        Key::Violations => e.violations = Some(map.next_value()?),
                        Key::Sometimes => e.sometimes = Some(map.next_value()?),
                        Key::SweepSometimes => e.sweep_sometimes = Some(map.next_value()?),
                        Key::Replay => e.replay = Some(map.next_value()?),
                        Key::TraceHash => e.trace_hash = Some(map.next_value()?),
                    }
                }
                Ok(e)
            }
        }
        d.deserialize_map(Table)
    }
}

impl Serialize for Expect {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for (c, v) in self.counts.iter() {
            map.serialize_entry(c.name().expect("only [expect]'s keys are set"), &v)?;
        }
        if let Some(v) = &self.violations {
            map.serialize_entry("violations", v)?;
        }
        if let Some(v) = &self.sometimes {
            map.serialize_entry("sometimes", v)?;
        }
        if let Some(v) = &self.sweep_sometimes {
            map.serialize_entry("sweep_sometimes", v)?;
        }
        if let Some(v) = &self.replay {
            map.serialize_entry("replay", v)?;
        }
        if let Some(v) = &self.trace_hash {
            map.serialize_entry("trace_hash", v)?;
        }
        map.end()
    }
}

/// The `[expect]` block in the checker's words, read once when the scenario is validated.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Expectations {
    /// Figures the run must show exactly.
    pub counts: Counts,
    /// The invariants the run must violate, and no others (none written: all must hold), in the
    /// checker's order.
    pub violations: Vec<Invariant>,
    /// `sometimes` properties the run must reach.
    pub sometimes: Vec<Sometimes>,
    /// `sometimes` properties a sweep must reach in at least one seed.
    pub sweep_sometimes: Vec<Sometimes>,
    pub replay: Option<ReplayExpectation>,
    pub trace_hash: Option<PinnedHash>,
}

/// A trace hash `[expect]` pins: its value, and its 16 hex digits as written (an unmet one is
/// shown as the file wrote it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PinnedHash {
    pub value: u64,
    pub written: String,
}

impl Expect {
    /// `violations` as invariants, sorted in the checker's order (as the run reports them), or
    /// the first unknown name.
    pub(super) fn invariants(&self) -> Result<Vec<Invariant>, (String, String)> {
        let mut out = Vec::new();
        for n in self.violations.iter().flatten() {
            let Some(i) = Invariant::parse(n) else {
                let allowed: Vec<&str> = Invariant::ALL.iter().map(|i| i.name()).collect();
                return Err((
                    "expect.violations".into(),
                    format!(
                        "unknown invariant {}; allowed: {}",
                        clip(n),
                        allowed.join(", ")
                    ),
                ));
            };
            out.push(i);
        }
        out.sort_by_key(|i| *i as usize);
        Ok(out)
    }

    /// The block in the checker's words, `violations` already read ([`Expect::invariants`]), or
    /// the first property or hash that is not one.
    pub(super) fn typed(
        &self,
        violations: Vec<Invariant>,
    ) -> Result<Expectations, (String, String)> {
        let properties = |field: &str, names: &Option<Vec<String>>| {
            let mut out = Vec::new();
            for n in names.iter().flatten() {
                let Some(s) = Sometimes::parse(n) else {
                    let allowed: Vec<&str> = Sometimes::ALL.iter().map(|i| i.name()).collect();
                    return Err((
                        field.to_string(),
                        format!(
                            "unknown property {}; allowed: {}",
                            clip(n),
                            allowed.join(", ")
                        ),
                    ));
                };
                out.push(s);
            }
            Ok(out)
        };
        let sometimes = properties("expect.sometimes", &self.sometimes)?;
        let sweep_sometimes = properties("expect.sweep_sometimes", &self.sweep_sometimes)?;
        let trace_hash = match &self.trace_hash {
            None => None,
            Some(h) => match u64::from_str_radix(h, 16) {
                Ok(value) if h.len() == 16 && h.chars().all(|c| c.is_ascii_hexdigit()) => {
                    Some(PinnedHash {
                        value,
                        written: h.clone(),
                    })
                }
                _ => {
                    return Err((
                        "expect.trace_hash".into(),
                        format!("{} is not a trace hash; allowed: 16 hex digits, as summary.json's traceHash", clip(h)),
                    ))
                }
            },
        };
        Ok(Expectations {
            counts: self.counts.clone(),
            violations,
            sometimes,
            sweep_sometimes,
            replay: self.replay,
            trace_hash,
        })
    }
}

//! Deterministic injections of a scenario: `[[script]]` faults and `[[operator]]` actions.
//!
//! Owns: `Script` (a fault aimed at a job, an attempt or a relay
//! tick), `Aim` (what a validated entry strikes), `Operator` (a reprocess at a time, of a fixed
//! job or a target picked when it runs).
//! Does not: name the fault kinds (`vocab/faults.rs`), check them against the scenario's jobs (`validate.rs`) or apply them (`sim/faults.rs`,
//! `sim/kernel.rs`).

use crate::base::ids::JobId;
use crate::model::worker::CrashPoint;
use crate::vocab::faults::{Held, Struck};
use serde::{Deserialize, Serialize};

pub use crate::vocab::faults::FaultKind;

/// A deterministic injection. Worker faults hit the first attempt of `job` leased at or after
/// `at_ms` (or exactly attempt number `attempt`); a fault of the delivery side
/// (`vocab::faults::STRUCK`) hits the first step of its site at or after `at_ms` (of `job`, when
/// the site takes one): `relay_crash`, the first relay tick that publishes something;
/// `mutate_payload` changes the job's payload at `at_ms`.
#[derive(Clone, Debug, PartialEq)]
pub struct Script {
    pub at_ms: u64,
    pub fault: FaultKind,
    pub point: Option<String>,
    pub job: Option<u32>,
    pub attempt: Option<u32>,
    /// A held fault's length, under the key it was written with (`stall_ms`, `pause_ms`, ...:
    /// `vocab::faults::HELD`); validation checks that it is the fault's own.
    pub length: Option<(Held, u64)>,
    pub payload: Option<String>,
}

impl Script {
    /// A fault aimed at `job` (no point, attempt, length or payload yet).
    pub fn new(at_ms: u64, fault: FaultKind, job: Option<u32>) -> Script {
        Script {
            at_ms,
            fault,
            point: None,
            job,
            attempt: None,
            length: None,
            payload: None,
        }
    }

    /// The length of held fault `h`, if this entry gives one.
    pub fn length_of(&self, h: Held) -> Option<u64> {
        self.length.filter(|(k, _)| *k == h).map(|(_, ms)| ms)
    }
}

/// What a `[[script]]` entry strikes, as validation read it (one an entry, index for index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aim {
    /// An attempt of `job`: a crash (at its `point`), an error or a held fault.
    Attempt {
        job: JobId,
        point: Option<CrashPoint>,
    },
    /// `job`'s payload (`mutate_payload`).
    Payload { job: JobId },
    /// A step of the delivery side's site (of `job`'s, when the site takes a job).
    Site { fault: Struck, job: Option<JobId> },
}

/// The keys a `[[script]]` entry may have besides the held faults' lengths, in file order.
const SCRIPT_FIXED: [&str; 6] = ["at_ms", "fault", "point", "job", "attempt", "payload"];

/// Every key a `[[script]]` entry may have (for the error on an unknown one).
fn script_keys() -> &'static [&'static str] {
    static KEYS: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
        let mut k = SCRIPT_FIXED[..5].to_vec();
        k.extend(Held::ALL.iter().map(|h| h.spec().length_key));
        k.push("payload");
        k
    });
    &KEYS
}

impl Serialize for Script {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("at_ms", &self.at_ms)?;
        m.serialize_entry("fault", &self.fault)?;
        if let Some(p) = &self.point {
            m.serialize_entry("point", p)?;
        }
        if let Some(j) = self.job {
            m.serialize_entry("job", &j)?;
        }
        if let Some(a) = self.attempt {
            m.serialize_entry("attempt", &a)?;
        }
        if let Some((h, ms)) = self.length {
            m.serialize_entry(h.spec().length_key, &ms)?;
        }
        if let Some(p) = &self.payload {
            m.serialize_entry("payload", p)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Script {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Script, D::Error> {
        use serde::de::{Error, MapAccess, Visitor};
        struct Entry;
        impl<'de> Visitor<'de> for Entry {
            type Value = Script;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a [[script]] table")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Script, A::Error> {
                let (mut at_ms, mut fault) = (None, None);
                let mut e = Script::new(0, FaultKind::Crash, None);
                while let Some(key) = map.next_key_seed(KeySeed {
                    fixed: &SCRIPT_FIXED,
                    rates: false,
                    all: script_keys(),
                })? {
                    match key {
                        Key::Fixed(0) => at_ms = Some(map.next_value()?),
                        Key::Fixed(1) => fault = Some(map.next_value()?),
                        Key::Fixed(2) => e.point = Some(map.next_value()?),
                        Key::Fixed(3) => e.job = Some(map.next_value()?),
                        Key::Fixed(4) => e.attempt = Some(map.next_value()?),
                        Key::Fixed(_) => e.payload = Some(map.next_value()?),
                        Key::Rate(_) | Key::Struck(_) => {
                            unreachable!("no rate keys in a script entry")
                        }
                        Key::Held(h) => {
                            if let Some((other, _)) = e.length {
                                return Err(A::Error::custom(format!(
                                    "one length a fault: both `{}` and `{}`",
                                    other.spec().length_key,
                                    h.spec().length_key
                                )));
                            }
                            e.length = Some((h, map.next_value()?));
                        }
                    }
                }
                e.at_ms = at_ms.ok_or_else(|| A::Error::missing_field("at_ms"))?;
                e.fault = fault.ok_or_else(|| A::Error::missing_field("fault"))?;
                Ok(e)
            }
        }
        d.deserialize_map(Entry)
    }
}

/// A table's key: one of its fixed keys (by index), or a held fault's length key.
pub(super) enum Key {
    Fixed(usize),
    /// A held fault's rate (`[faults]` only).
    Rate(Held),
    Held(Held),
    /// A struck fault's rate (`[faults]` only).
    Struck(Struck),
}

/// Reads a key of a table whose keys are `fixed` plus the held faults' length keys, refusing
/// any other the way serde's derive does (`unknown field`, listing `all`), from inside the
/// key's own deserializer so the parser's error carries the key's position.
pub(super) struct KeySeed {
    pub fixed: &'static [&'static str],
    /// Whether the held and struck faults' rate keys are keys too (`[faults]`).
    pub rates: bool,
    pub all: &'static [&'static str],
}

impl<'de> serde::de::DeserializeSeed<'de> for KeySeed {
    type Value = Key;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl<'de> serde::de::Visitor<'de> for KeySeed {
    type Value = Key;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Key, E> {
        if let Some(i) = self.fixed.iter().position(|k| *k == v) {
            return Ok(Key::Fixed(i));
        }
        if let Some(h) = Held::by_length_key(v) {
            return Ok(Key::Held(h));
        }
        if let Some(s) = Struck::ALL.into_iter().find(|s| s.spec().name == v) {
            if self.rates {
                return Ok(Key::Struck(s));
            }
        }
        match Held::ALL.into_iter().find(|h| h.spec().name == v) {
            Some(h) if self.rates => Ok(Key::Rate(h)),
            _ => Err(E::unknown_field(v, self.all)),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OperatorAction {
    ReprocessDlq,
}

/// Which job an operator action picks when it runs, instead of a fixed `job`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OperatorTarget {
    /// The oldest DLQ entry not yet reprocessed (an operator working the DLQ in order).
    OldestDeadLettered,
    /// The first job cancelled so far (an operator who mistakes a cancellation for a DLQ entry).
    Cancelled,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Operator {
    pub at_ms: u64,
    pub action: OperatorAction,
    #[serde(default)]
    pub operator: Option<String>,
    /// The job acted on; or, with `target`, none: the job is picked when the action runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<OperatorTarget>,
    /// An automation: the action runs again `repeat` more times, every `every_ms`.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub repeat: u32,
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub every_ms: u64,
    /// Act on the newest job of `job`'s reprocess chain (the "same dead document"), not `job`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub follow: bool,
}

fn is_zero_u32(x: &u32) -> bool {
    *x == 0
}
fn is_zero_u64(x: &u64) -> bool {
    *x == 0
}
fn is_false(x: &bool) -> bool {
    !*x
}

//! The `[faults]` section: the random fault rates, the provider outage, the held faults' rates
//! and lengths (one pair of keys each, read from `vocab::faults::HELD`) and the delivery side's
//! faults' rates (one key each, read from `vocab::faults::STRUCK`).
//!
//! Owns: `Faults` and its defaults, its (de)serialiser (fixed keys plus the table's, an unknown
//! key refused with the key's position, as serde's derive does), `Outage`.
//! Does not: draw anything (`sim/faults.rs`) or check ranges (`validate.rs`).

use super::dist::Dist;
use crate::model::worker::CrashPoint;
use crate::vocab::faults::{Held, Struck, HELD_KINDS, STRUCK_KINDS};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug)]
pub struct Faults {
    pub crash: f64,
    pub crash_points: Vec<String>,
    pub transient_error: f64,
    pub permanent_error: f64,
    /// The rates of the delivery side's faults (`vocab::faults::STRUCK`: a relay crash, ...),
    /// key: its name; read through [`Faults::struck`].
    pub struck: [f64; STRUCK_KINDS],
    /// A transient outage of the model provider: every extraction started in [from_ms, to_ms)
    /// fails with provider_unavailable.
    pub outage: Option<Outage>,
    /// The faults that hold an attempt up (`vocab::faults::HELD`: a stall, a pause after a
    /// heartbeat, ...), each with its rate (key: its name) and length (key: `<name>_ms`).
    pub held: [HeldFault; HELD_KINDS],
}

/// One held fault's settings: the probability that an attempt meets it, and its length.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeldFault {
    pub rate: f64,
    pub ms: Dist,
}

impl Faults {
    #[inline]
    pub fn held(&self, h: Held) -> &HeldFault {
        &self.held[h as usize]
    }
    #[inline]
    pub fn held_mut(&mut self, h: Held) -> &mut HeldFault {
        &mut self.held[h as usize]
    }
    /// The rate of struck fault `s`: the probability that a step of its site meets it.
    #[inline]
    pub fn struck(&self, s: Struck) -> f64 {
        self.struck[s as usize]
    }
    #[inline]
    pub fn struck_mut(&mut self, s: Struck) -> &mut f64 {
        &mut self.struck[s as usize]
    }
}

/// The keys of `[faults]` besides the held and struck faults', in file order (the struck
/// faults' rates come before `outage`).
const FAULTS_FIXED: [&str; 5] = [
    "crash",
    "crash_points",
    "transient_error",
    "permanent_error",
    "outage",
];

fn faults_keys() -> &'static [&'static str] {
    static KEYS: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
        let mut k = FAULTS_FIXED[..4].to_vec();
        k.extend(Struck::ALL.map(|s| s.spec().name));
        k.push(FAULTS_FIXED[4]);
        for h in Held::ALL {
            k.extend([h.spec().name, h.spec().length_key]);
        }
        k
    });
    &KEYS
}

impl Serialize for Faults {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("crash", &self.crash)?;
        m.serialize_entry("crash_points", &self.crash_points)?;
        m.serialize_entry("transient_error", &self.transient_error)?;
        m.serialize_entry("permanent_error", &self.permanent_error)?;
        for st in Struck::ALL {
            m.serialize_entry(st.spec().name, &self.struck(st))?;
        }
        for h in Held::ALL {
            m.serialize_entry(h.spec().name, &self.held(h).rate)?;
            m.serialize_entry(h.spec().length_key, &self.held(h).ms)?;
        }
        if let Some(o) = &self.outage {
            m.serialize_entry("outage", o)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Faults {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Faults, D::Error> {
        use super::script::{Key, KeySeed};
        use serde::de::{MapAccess, Visitor};
        struct Table;
        impl<'de> Visitor<'de> for Table {
            type Value = Faults;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("the [faults] table")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Faults, A::Error> {
                let mut f = Faults::default();
                while let Some(key) = map.next_key_seed(KeySeed {
                    fixed: &FAULTS_FIXED,
                    rates: true,
                    all: faults_keys(),
                })? {
                    match key {
                        Key::Fixed(0) => f.crash = map.next_value()?,
                        Key::Fixed(1) => f.crash_points = map.next_value()?,
                        Key::Fixed(2) => f.transient_error = map.next_value()?,
                        Key::Fixed(3) => f.permanent_error = map.next_value()?,
                        Key::Fixed(_) => f.outage = Some(map.next_value()?),
                        Key::Struck(s) => *f.struck_mut(s) = map.next_value()?,
                        Key::Rate(h) => f.held_mut(h).rate = map.next_value()?,
                        Key::Held(h) => f.held_mut(h).ms = map.next_value()?,
                    }
                }
                Ok(f)
            }
        }
        d.deserialize_map(Table)
    }
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Outage {
    pub from_ms: u64,
    pub to_ms: u64,
}

impl Outage {
    pub fn covers(&self, now: u64) -> bool {
        (self.from_ms..self.to_ms).contains(&now)
    }
}
impl Default for Faults {
    fn default() -> Self {
        Faults {
            crash: 0.0,
            crash_points: CrashPoint::ALL
                .iter()
                .map(|p| p.name().to_string())
                .collect(),
            transient_error: 0.0,
            permanent_error: 0.0,
            struck: [0.0; STRUCK_KINDS],
            outage: None,
            held: Held::ALL.map(|h| {
                let (min, max) = h.spec().default_ms;
                HeldFault {
                    rate: 0.0,
                    ms: Dist::Uniform { min, max },
                }
            }),
        }
    }
}

//! Distributions of durations and delays (`{ dist = "uniform", min, max }`, ...) and how one
//! raw draw becomes a sample.
//!
//! Owns: `Dist`, its table-only deserializer, `sample` / `sample_from` (exactly one draw each,
//! capped at `limits::MAX_MS`), its largest value, mean and parameter check.
//! Does not: own a random stream (the kernel hands one in, `rng.rs`) or know which field holds
//! a distribution (`sections.rs`).

use serde::{Deserialize, Serialize};
use std::fmt;

/// A duration or delay distribution, in integer virtual milliseconds. Written as a table
/// (`{ dist = "uniform", min = 1, max = 5 }`): serde's derive for a tagged enum would also take
/// an array (`["constant", 1]`), which no document shows and which hides a typo, so the
/// deserializer below asks for a table before it reads the fields.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize)]
#[serde(
    tag = "dist",
    rename_all = "lowercase",
    deny_unknown_fields,
    remote = "Dist"
)]
pub enum Dist {
    Constant {
        value: u64,
    },
    Uniform {
        min: u64,
        max: u64,
    },
    Exponential {
        mean: f64,
    },
    /// `median * exp(sigma * z)` with z standard normal.
    Lognormal {
        median: f64,
        sigma: f64,
    },
}

impl Serialize for Dist {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Dist::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for Dist {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Dist, D::Error> {
        struct Table;
        impl<'de> serde::de::Visitor<'de> for Table {
            type Value = Dist;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(
                    f,
                    "a table such as {{ dist = \"constant\", value = 5 }} (a distribution)"
                )
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Dist, A::Error> {
                Dist::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Table)
    }
}

impl Dist {
    pub const ALLOWED: &'static str = "{ dist = \"constant\", value }, { dist = \"uniform\", min, max }, { dist = \"exponential\", mean }, { dist = \"lognormal\", median, sigma }";

    /// Draws one value. A constant draws nothing, so it leaves the stream untouched.
    /// One sample, taking exactly one draw from the stream (a constant too, so the position of
    /// every later draw does not depend on the distribution's kind).
    pub fn sample(&self, s: &mut crate::base::rng::Stream) -> u64 {
        self.sample_from(s.next_u64())
    }

    /// The sample a raw draw `bits` stands for.
    /// Never above [`crate::base::limits::MAX_MS`], so adding it to a time cannot overflow.
    pub fn sample_from(&self, bits: u64) -> u64 {
        use crate::base::rng::{normal_of, range_of, unit_of};
        let v = match *self {
            Dist::Constant { value } => value,
            Dist::Uniform { min, max } => range_of(bits, min, max),
            Dist::Exponential { mean } => (-mean * (1.0 - unit_of(bits)).ln()).round() as u64,
            Dist::Lognormal { median, sigma } => {
                (median * (sigma * normal_of(bits)).exp()).round() as u64
            }
        };
        v.min(crate::base::limits::MAX_MS)
    }

    /// The largest value it can draw (`None`: unbounded).
    pub fn max_possible(&self) -> Option<u64> {
        match *self {
            Dist::Constant { value } => Some(value),
            Dist::Uniform { max, .. } => Some(max),
            Dist::Exponential { .. } | Dist::Lognormal { .. } => None,
        }
    }

    pub fn mean(&self) -> f64 {
        match *self {
            Dist::Constant { value } => value as f64,
            Dist::Uniform { min, max } => (min + max) as f64 / 2.0,
            Dist::Exponential { mean } => mean,
            Dist::Lognormal { median, sigma } => median * (sigma * sigma / 2.0).exp(),
        }
    }

    pub(super) fn check(&self) -> Result<(), String> {
        match *self {
            Dist::Uniform { min, max } if min > max => Err(format!("uniform needs min <= max (got min = {min}, max = {max})")),
            Dist::Exponential { mean } if !(mean.is_finite() && mean >= 0.0) => Err(format!("exponential needs a finite mean >= 0 (got {mean})")),
            Dist::Lognormal { median, sigma } if !(median.is_finite() && median > 0.0 && sigma.is_finite() && (0.0..=10.0).contains(&sigma)) => {
                Err(format!("lognormal needs median > 0 and 0 <= sigma <= 10 (got median = {median}, sigma = {sigma})"))
            }
            _ => Ok(()),
        }
    }
}

pub(super) fn constant(value: u64) -> Dist {
    Dist::Constant { value }
}

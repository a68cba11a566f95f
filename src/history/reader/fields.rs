//! Typed fields of one line: numbers below 2^53, booleans, strings, hex fingerprints, closed
//! codes, external ids; each bad value an error naming the field and what is allowed.
//!
//! Owns: `FieldSource` (the typed getters shared by the header and records) and `Fields` (a
//! line's fields read against the reader's tables, assigning nothing).
//! Does not: assign ids (`ids.rs`).

use super::*;

/// A line's fields, read against the reader's tables (no id is assigned here).
pub(super) struct Fields<'a, R> {
    pub(super) reader: &'a HistoryReader<R>,
    pub(super) map: Map<String, Value>,
    pub(super) prefix: &'static str,
}

// Generic helpers shared by the header's `Fields` and a record's `Ids`.
pub(super) trait FieldSource {
    fn value(&self, name: &str) -> Option<&Value>;
    fn err(&self, field: &str, message: String) -> HistoryError;

    fn present(&self, name: &str) -> Option<&Value> {
        self.value(name).filter(|v| !v.is_null())
    }

    fn required(&self, name: &str, what: &str) -> Result<&Value, HistoryError> {
        self.present(name)
            .ok_or_else(|| self.err(name, format!("missing; {what}")))
    }

    fn number(&self, name: &str) -> Result<u64, HistoryError> {
        let what = format!("an integer from 0 to {MAX_NUMBER}");
        let v = self.required(name, &what)?;
        v.as_u64()
            .filter(|n| *n <= MAX_NUMBER)
            .ok_or_else(|| self.err(name, format!("{}: {what}", shown(v))))
    }

    fn opt_number(&self, name: &str) -> Result<Option<u64>, HistoryError> {
        match self.present(name) {
            None => Ok(None),
            Some(_) => self.number(name).map(Some),
        }
    }

    fn opt_u64(&self, name: &str) -> Result<Option<u64>, HistoryError> {
        match self.present(name) {
            None => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                self.err(
                    name,
                    format!("{}: an integer from 0 to {}", shown(v), u64::MAX),
                )
            }),
        }
    }

    fn u32(&self, name: &str) -> Result<u32, HistoryError> {
        let what = format!("an integer from 0 to {}", u32::MAX);
        let v = self.required(name, &what)?;
        v.as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| self.err(name, format!("{}: {what}", shown(v))))
    }

    fn opt_u32(&self, name: &str) -> Result<Option<u32>, HistoryError> {
        match self.present(name) {
            None => Ok(None),
            Some(_) => self.u32(name).map(Some),
        }
    }

    fn bool(&self, name: &str) -> Result<bool, HistoryError> {
        let v = self.required(name, "true or false")?;
        v.as_bool()
            .ok_or_else(|| self.err(name, format!("{}: true or false", shown(v))))
    }

    fn opt_bool(&self, name: &str) -> Result<Option<bool>, HistoryError> {
        match self.present(name) {
            None => Ok(None),
            Some(_) => self.bool(name).map(Some),
        }
    }

    fn string(&self, name: &str) -> Result<&str, HistoryError> {
        let v = self.required(name, "a string")?;
        v.as_str()
            .ok_or_else(|| self.err(name, format!("{}: a string", shown(v))))
    }

    fn opt_string(&self, name: &str) -> Result<Option<&str>, HistoryError> {
        match self.present(name) {
            None => Ok(None),
            Some(_) => self.string(name).map(Some),
        }
    }

    /// A 64-bit fingerprint: 1 to 16 hex digits, as a string.
    fn hex(&self, name: &str) -> Result<u64, HistoryError> {
        let what = "a 64-bit fingerprint as a string of 1 to 16 hex digits";
        let v = self.required(name, what)?;
        v.as_str()
            .filter(|s| (1..=16).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|s| u64::from_str_radix(s, 16).ok())
            .ok_or_else(|| self.err(name, format!("{}: {what}", shown(v))))
    }

    fn opt_hex(&self, name: &str) -> Result<Option<u64>, HistoryError> {
        match self.present(name) {
            None => Ok(None),
            Some(_) => self.hex(name).map(Some),
        }
    }

    fn code(&self, name: &str, set: &[&'static str]) -> Result<&'static str, HistoryError> {
        let s = self.string(name)?;
        codes::lookup(set, s)
            .ok_or_else(|| self.err(name, format!("{}: allowed: {}", clip(s), set.join(", "))))
    }

    fn opt_code(
        &self,
        name: &str,
        set: &[&'static str],
    ) -> Result<Option<&'static str>, HistoryError> {
        match self.present(name) {
            None => Ok(None),
            Some(_) => self.code(name, set).map(Some),
        }
    }

    fn external(&self, name: &str) -> Result<Option<ExternalId>, HistoryError> {
        let what = "an id: a non-negative integer or a string of 1 to 256 bytes";
        match self.present(name) {
            None => Ok(None),
            Some(Value::String(s)) if !s.is_empty() && s.len() <= 256 => {
                Ok(Some(ExternalId::Str(s.as_str().into())))
            }
            Some(v) => match v.as_u64() {
                Some(n) => Ok(Some(ExternalId::Int(n))),
                None => Err(self.err(name, format!("{}: {what}", shown(v)))),
            },
        }
    }
}

impl<R> FieldSource for Fields<'_, R> {
    fn value(&self, name: &str) -> Option<&Value> {
        self.map.get(name)
    }

    fn err(&self, field: &str, message: String) -> HistoryError {
        self.reader
            .error(Some(&format!("{}{field}", self.prefix)), message)
    }
}

impl<R> Fields<'_, R> {
    /// Every field is one of `allowed` (besides `at` and `type`, already taken out).
    pub(super) fn only(&self, allowed: &[&str], what: &str) -> Result<(), HistoryError> {
        match self.map.keys().find(|k| !allowed.contains(&k.as_str())) {
            Some(k) => {
                let mut list: Vec<&str> = allowed.to_vec();
                if self.prefix.is_empty() {
                    list.splice(0..0, ["at", "type"]);
                }
                Err(self.err(
                    k,
                    format!("unknown field for {what}; allowed: {}", list.join(", ")),
                ))
            }
            None => Ok(()),
        }
    }
}

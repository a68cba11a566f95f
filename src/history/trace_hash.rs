//! The trace hash: a fingerprint of a whole history.
//!
//! Owns: a fast 64-bit hash of every field of every record, in order, fed through a serde
//! `Serializer` so it covers exactly the data of each record without formatting it.
//! Does not: render records (see `format`) or keep them.

use super::Record;
use crate::base::ids::{EventId, Fence, JobId, OperationId, TenantId, WorkerId};
use crate::vocab::key::IdempotencyKey;
use crate::vocab::payload::PayloadHash;
use serde::Serialize;

/// The trace hash: a fast 64-bit fingerprint of every field of every record, in order. Not
/// cryptographic; it only has to change when the history changes.
#[derive(Clone, Debug, Hash)]
pub struct TraceHash {
    state: u64,
    count: u64,
}

impl Default for TraceHash {
    fn default() -> Self {
        TraceHash {
            state: 0x6475_7261_7369_6d31,
            count: 0,
        }
    }
}

impl TraceHash {
    #[inline]
    fn word(&mut self, x: u64) {
        self.state = (self.state.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn bytes(&mut self, b: &[u8]) {
        self.word(b.len() as u64);
        for chunk in b.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.word(u64::from_le_bytes(w));
        }
    }

    pub fn add(&mut self, record: &Record) {
        self.word(record.at);
        record
            .event
            .serialize(&mut *self)
            .expect("hashing cannot fail");
        self.count += 1;
    }

    pub fn finish(&self) -> u64 {
        crate::base::fastmap::mix64(self.state ^ self.count)
    }

    pub fn records(&self) -> u64 {
        self.count
    }

    pub fn hex(value: u64) -> String {
        format!("{value:016x}")
    }
}

/// Serialises keys compactly for hashing.
impl Serialize for IdempotencyKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.packed())
    }
}

macro_rules! id_serialize {
    ($($t:ty => $m:ident),*) => {$(
        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.$m(self.0)
            }
        }
    )*};
}
id_serialize!(JobId => serialize_u32, WorkerId => serialize_u32, Fence => serialize_u64,
    EventId => serialize_u64, TenantId => serialize_u16, PayloadHash => serialize_u64,
    OperationId => serialize_u16);

mod hash_serializer {
    //! A serde `Serializer` that feeds every primitive into the trace hash and ignores field
    //! names, so the hash covers exactly the data of each record without formatting it.
    use super::TraceHash;
    use serde::ser::{self, Serialize};

    #[derive(Debug, Hash)]
    pub struct Never;
    impl std::fmt::Display for Never {
        fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            Ok(())
        }
    }
    impl std::error::Error for Never {}
    impl ser::Error for Never {
        fn custom<T: std::fmt::Display>(_: T) -> Self {
            Never
        }
    }

    type R = Result<(), Never>;

    impl ser::Serializer for &mut TraceHash {
        type Ok = ();
        type Error = Never;
        type SerializeSeq = Self;
        type SerializeTuple = Self;
        type SerializeTupleStruct = Self;
        type SerializeTupleVariant = Self;
        type SerializeMap = Self;
        type SerializeStruct = Self;
        type SerializeStructVariant = Self;

        fn serialize_bool(self, v: bool) -> R {
            self.word(v as u64);
            Ok(())
        }
        fn serialize_i8(self, v: i8) -> R {
            self.serialize_i64(v as i64)
        }
        fn serialize_i16(self, v: i16) -> R {
            self.serialize_i64(v as i64)
        }
        fn serialize_i32(self, v: i32) -> R {
            self.serialize_i64(v as i64)
        }
        fn serialize_i64(self, v: i64) -> R {
            self.word(v as u64);
            Ok(())
        }
        fn serialize_u8(self, v: u8) -> R {
            self.serialize_u64(v as u64)
        }
        fn serialize_u16(self, v: u16) -> R {
            self.serialize_u64(v as u64)
        }
        fn serialize_u32(self, v: u32) -> R {
            self.serialize_u64(v as u64)
        }
        fn serialize_u64(self, v: u64) -> R {
            self.word(v);
            Ok(())
        }
        fn serialize_f32(self, v: f32) -> R {
            self.serialize_f64(v as f64)
        }
        fn serialize_f64(self, v: f64) -> R {
            self.word(v.to_bits());
            Ok(())
        }
        fn serialize_char(self, v: char) -> R {
            self.serialize_u64(v as u64)
        }
        fn serialize_str(self, v: &str) -> R {
            self.bytes(v.as_bytes());
            Ok(())
        }
        fn serialize_bytes(self, v: &[u8]) -> R {
            self.bytes(v);
            Ok(())
        }
        fn serialize_none(self) -> R {
            self.word(0x4e4f_4e45);
            Ok(())
        }
        fn serialize_some<T: ?Sized + Serialize>(self, v: &T) -> R {
            self.word(0x534f_4d45);
            v.serialize(self)
        }
        fn serialize_unit(self) -> R {
            Ok(())
        }
        fn serialize_unit_struct(self, _: &'static str) -> R {
            Ok(())
        }
        fn serialize_unit_variant(self, _: &'static str, i: u32, _: &'static str) -> R {
            self.word(i as u64);
            Ok(())
        }
        fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _: &'static str, v: &T) -> R {
            v.serialize(self)
        }
        fn serialize_newtype_variant<T: ?Sized + Serialize>(
            self,
            _: &'static str,
            i: u32,
            _: &'static str,
            v: &T,
        ) -> R {
            self.word(i as u64);
            v.serialize(self)
        }
        fn serialize_seq(self, _: Option<usize>) -> Result<Self, Never> {
            Ok(self)
        }
        fn serialize_tuple(self, _: usize) -> Result<Self, Never> {
            Ok(self)
        }
        fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, Never> {
            Ok(self)
        }
        fn serialize_tuple_variant(
            self,
            _: &'static str,
            i: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self, Never> {
            self.word(i as u64);
            Ok(self)
        }
        fn serialize_map(self, _: Option<usize>) -> Result<Self, Never> {
            Ok(self)
        }
        fn serialize_struct(self, name: &'static str, _: usize) -> Result<Self, Never> {
            // Internally tagged enums serialise as a struct whose first field is the tag; the
            // tag's text is hashed through serialize_field like any other field.
            let _ = name;
            Ok(self)
        }
        fn serialize_struct_variant(
            self,
            _: &'static str,
            i: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self, Never> {
            self.word(i as u64);
            Ok(self)
        }
    }

    macro_rules! compound {
        ($tr:ident, $m:ident $(, $k:ident)?) => {
            impl ser::$tr for &mut TraceHash {
                type Ok = ();
                type Error = Never;
                fn $m<T: ?Sized + Serialize>(&mut self, $($k: &'static str,)? v: &T) -> R {
                    v.serialize(&mut **self)
                }
                fn end(self) -> R {
                    Ok(())
                }
            }
        };
    }
    compound!(SerializeSeq, serialize_element);
    compound!(SerializeTuple, serialize_element);
    compound!(SerializeTupleStruct, serialize_field);
    compound!(SerializeTupleVariant, serialize_field);
    compound!(SerializeStruct, serialize_field, _k);
    compound!(SerializeStructVariant, serialize_field, _k);

    impl ser::SerializeMap for &mut TraceHash {
        type Ok = ();
        type Error = Never;
        fn serialize_key<T: ?Sized + Serialize>(&mut self, k: &T) -> R {
            k.serialize(&mut **self)
        }
        fn serialize_value<T: ?Sized + Serialize>(&mut self, v: &T) -> R {
            v.serialize(&mut **self)
        }
        fn end(self) -> R {
            Ok(())
        }
    }
}

//! The recorded history: every observable step of a run, in order.
//!
//! Owns: the closed set of history events, the trace hash (a fingerprint of the whole history)
//! and the [`Observer`] interface through which the checker, the metrics and the trace writer
//! consume the history as a stream. Nothing needs the history in memory unless a trace is asked
//! for.
//! Does not: judge anything (see `check`) or measure anything (see `observe`).

use crate::ids::{EventId, Fence, JobId, SimTime, TenantId, WorkerId};
use crate::model::key::IdempotencyKey;
use crate::model::payload::PayloadHash;
use serde::Serialize;

/// How a job came to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    Arrival,
    Reprocess { from: JobId },
}

/// A queue operation a worker attempted, for rejections.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Heartbeat,
    Ack,
    Retry,
    DeadLetter,
    Cancel,
}

/// Everything that can be observed to happen. Field names are the trace's JSON keys.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The run's header: the settings the checker must know to judge it.
    RunStarted {
        seed: u64,
        attempts_max: u32,
        lease_ms: u64,
        deadline_ms: u64,
        workers: u32,
    },
    Enqueued {
        job: JobId,
        tenant: TenantId,
        key: IdempotencyKey,
        payload: PayloadHash,
        visible_at: SimTime,
        deadline_at: SimTime,
        origin: Origin,
    },
    /// Same key, same payload: the request resolved to an existing job.
    EnqueueDeduped {
        tenant: TenantId,
        key: IdempotencyKey,
        payload: PayloadHash,
        existing: JobId,
    },
    EnqueueConflict {
        tenant: TenantId,
        key: IdempotencyKey,
        payload: PayloadHash,
        existing: JobId,
        existing_payload: PayloadHash,
    },
    /// A job became visible at the end of a wait (backoff or delayed enqueue).
    Visible {
        job: JobId,
    },
    Leased {
        job: JobId,
        worker: WorkerId,
        fence: Fence,
        attempt: u32,
        lease_until: SimTime,
        visible_at: SimTime,
    },
    LeaseExpired {
        job: JobId,
        fence: Fence,
    },
    Heartbeat {
        job: JobId,
        worker: WorkerId,
        fence: Fence,
        lease_until: SimTime,
    },
    /// A fenced call refused: stale token, terminal job, or no live lease.
    Rejected {
        job: JobId,
        worker: WorkerId,
        op: Op,
        presented: Fence,
        held: Fence,
        reason: &'static str,
    },
    ExtractStarted {
        job: JobId,
        worker: WorkerId,
        fence: Fence,
        stalled: bool,
    },
    ExtractDone {
        job: JobId,
        worker: WorkerId,
        fence: Fence,
        inference_ms: u64,
        output: u64,
    },
    AttemptFailed {
        job: JobId,
        worker: WorkerId,
        fence: Fence,
        error: &'static str,
        class: &'static str,
    },
    /// A result row written; `event` is the outbox event written in the same step (none for the
    /// naive dual write).
    ResultCommitted {
        job: JobId,
        worker: WorkerId,
        key: IdempotencyKey,
        payload: PayloadHash,
        output: u64,
        event: Option<EventId>,
    },
    CommitDeduped {
        job: JobId,
        worker: WorkerId,
        key: IdempotencyKey,
        payload: PayloadHash,
        output: u64,
        existing_payload: PayloadHash,
        existing_event: Option<EventId>,
    },
    CommitConflict {
        job: JobId,
        worker: WorkerId,
        key: IdempotencyKey,
        payload: PayloadHash,
        existing_payload: PayloadHash,
    },
    Acked {
        job: JobId,
        worker: WorkerId,
        fence: Fence,
    },
    RetryScheduled {
        job: JobId,
        worker: WorkerId,
        fence: Fence,
        attempt: u32,
        visible_at: SimTime,
    },
    /// Into the DLQ: by the lease holder (`worker` and `fence` set) or at pick time.
    DeadLettered {
        job: JobId,
        worker: Option<WorkerId>,
        fence: Option<Fence>,
        attempts: u32,
        reason: Box<str>,
    },
    Cancelled {
        job: JobId,
        worker: Option<WorkerId>,
        fence: Option<Fence>,
        deadline_at: SimTime,
    },
    /// A full DLQ (`capacity` entries) dropped its oldest entry, `job`, to make room: the job's
    /// terminal record is gone. Only with `[dlq] capacity`.
    DlqEvicted {
        job: JobId,
        capacity: u32,
    },
    WorkerCrashed {
        worker: WorkerId,
        job: JobId,
        fence: Fence,
        point: &'static str,
    },
    WorkerRestarted {
        worker: WorkerId,
    },
    StallBegan {
        worker: WorkerId,
        job: JobId,
        fence: Fence,
        stall_ms: u64,
    },
    /// An event sent to the consumer: by the relay from the outbox, or directly (naive).
    Published {
        event: EventId,
        key: IdempotencyKey,
        job: JobId,
        output: u64,
        send: u32,
        direct: bool,
    },
    MarkedPublished {
        count: u32,
    },
    /// Published outbox rows older than the retention were deleted. Only with
    /// `[outbox] retention_ms`.
    OutboxPruned {
        rows: u64,
    },
    RelayCrashed {
        unmarked: u32,
    },
    EffectApplied {
        event: EventId,
        key: IdempotencyKey,
        job: JobId,
        output: u64,
    },
    DuplicateEvent {
        event: EventId,
        key: IdempotencyKey,
    },
    ReviewDone {
        event: EventId,
        key: IdempotencyKey,
        job: JobId,
    },
    PayloadMutated {
        job: JobId,
        payload: PayloadHash,
    },
    ReprocessRefused {
        job: JobId,
        operator: Option<Box<str>>,
        reason: &'static str,
    },
    /// The audit entry of a reprocess: old job, new job, operator.
    Reprocessed {
        old_job: JobId,
        new_job: JobId,
        operator: Box<str>,
    },
    DepthSampled {
        depth: u64,
    },
    /// The run stopped: `quiescent` when everything settled, false when the time limit hit.
    RunEnded {
        quiescent: bool,
    },
}

/// One history entry: what happened, and when in virtual time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Record {
    pub at: SimTime,
    #[serde(flatten)]
    pub event: Event,
}

/// A consumer of the history stream.
pub trait Observer {
    fn observe(&mut self, record: &Record);
}

/// The trace hash: a fast 64-bit fingerprint of every field of every record, in order. Not
/// cryptographic; it only has to change when the history changes.
#[derive(Clone, Debug)]
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
        crate::model::payload::mix64(self.state ^ self.count)
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
    EventId => serialize_u64, TenantId => serialize_u16, PayloadHash => serialize_u64);

mod hash_serializer {
    //! A serde `Serializer` that feeds every primitive into the trace hash and ignores field
    //! names, so the hash covers exactly the data of each record without formatting it.
    use super::TraceHash;
    use serde::ser::{self, Serialize};

    #[derive(Debug)]
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

/// Renders a record as one JSON line with keys and tenants spelled out.
pub fn to_json_line(record: &Record, names: &crate::model::key::KeyNames) -> String {
    let mut value = serde_json::to_value(record).expect("records serialise");
    if let serde_json::Value::Object(map) = &mut value {
        for (field, v) in map.iter_mut() {
            match field.as_str() {
                "key" => {
                    if let Some(packed) = v.as_u64() {
                        *v = serde_json::Value::String(names.key(&unpack_key(packed)));
                    }
                }
                "tenant" => {
                    if let Some(t) = v.as_u64() {
                        *v = serde_json::Value::String(
                            names.tenants.name(TenantId(t as u16)).to_string(),
                        );
                    }
                }
                "payload" | "existing_payload" => {
                    if let Some(p) = v.as_u64() {
                        *v = serde_json::Value::String(format!("{p:016x}"));
                    }
                }
                _ => {}
            }
        }
    }
    serde_json::to_string(&value).expect("json")
}

/// Inverse of [`IdempotencyKey::packed`].
pub fn unpack_key(packed: u64) -> IdempotencyKey {
    let tenant = (packed >> 48) as u16;
    IdempotencyKey {
        tenant: if tenant == 0xFFFF {
            None
        } else {
            Some(TenantId(tenant))
        },
        document: crate::ids::DocumentId((packed >> 16) as u32),
        version: (packed & 0xFFFF) as u32,
    }
}

/// An observer that ignores everything (the trace hash is computed by the kernel anyway).
pub struct NullObserver;

impl Observer for NullObserver {
    #[inline]
    fn observe(&mut self, _: &Record) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(at: SimTime, depth: u64) -> Record {
        Record {
            at,
            event: Event::DepthSampled { depth },
        }
    }

    #[test]
    fn the_hash_covers_time_fields_and_order() {
        let hash = |rs: &[Record]| {
            let mut h = TraceHash::default();
            rs.iter().for_each(|r| h.add(r));
            h.finish()
        };
        let base = hash(&[rec(1, 2), rec(3, 4)]);
        assert_eq!(base, hash(&[rec(1, 2), rec(3, 4)]));
        assert_ne!(base, hash(&[rec(1, 2), rec(3, 5)]));
        assert_ne!(base, hash(&[rec(1, 2), rec(4, 4)]));
        assert_ne!(base, hash(&[rec(3, 4), rec(1, 2)]));
        assert_ne!(base, hash(&[rec(1, 2)]));
        let dl = |reason: &str| Record {
            at: 0,
            event: Event::DeadLettered {
                job: JobId(0),
                worker: None,
                fence: None,
                attempts: 1,
                reason: reason.into(),
            },
        };
        assert_ne!(
            hash(&[dl("permanent_error")]),
            hash(&[dl("max_attempts_exceeded")])
        );
    }

    #[test]
    fn keys_round_trip_through_packing_and_render_in_json() {
        let mut names = crate::model::key::KeyNames::default();
        let t = names.tenants.register("acme").unwrap();
        let key = IdempotencyKey::new(t, crate::ids::DocumentId(42), 2).unwrap();
        assert_eq!(unpack_key(key.packed()), key);
        let r = Record {
            at: 5,
            event: Event::DuplicateEvent {
                event: EventId(3),
                key,
            },
        };
        assert_eq!(
            to_json_line(&r, &names),
            r#"{"at":5,"event":3,"key":"acme:doc-42:v2","type":"duplicate_event"}"#
        );
    }
}

//! The fault kinds: the one place that declares every fault a scenario can inject, and, for the
//! faults of the two shapes that have tables, all that the rest of the code needs to know about
//! them.
//!
//! Owns: [`FaultKind`] (the `[[script]]` names); [`Held`] with its table [`HELD`], the faults
//! that hold an attempt up for a seeded length (a stall, a pause, a slow heartbeat): for each,
//! its `[faults]` rate and length keys (the length key is also the `[[script]]` key), its default
//! length, where its two draws come from, the history record it writes and that record's length
//! field, the `sometimes` property the checker counts, its `summary.json` count, and what the
//! sweep's coverage gate then requires; and [`Struck`] with its table [`STRUCK`], the faults
//! that strike a component of the delivery side (the relay, the consumer) at a step of its own
//! ([`Site`]): for each, its `[faults]` rate key, its site, its draw, its history record and that
//! record's field, its `sometimes`, its counted figure and what coverage requires. The scenario
//! parser and validation, the fault injector, the history writer and reader, the checker, the
//! metrics, the Perfetto trace and the sweep's coverage, freeze and shrink read these tables and
//! name no fault of either shape.
//! Does not: say what a fault does (`model/worker.rs`: where in the attempt a held fault
//! strikes; `sim/delivery.rs`: what a struck fault does at its site) or draw anything
//! (`sim/faults.rs` reads [`Draw`] and [`StruckDraw`]).
//!
//! Adding a fault that holds an attempt up is a variant of [`Held`] and [`FaultKind`], a row of
//! [`HELD`] (taking the next free spare-draw slot), and the step in `model/worker.rs`; adding one
//! of the delivery side is a variant of [`Struck`] and [`FaultKind`], a row of [`STRUCK`] and its
//! counted figure (`vocab/counters.rs`), and, at a new [`Site`], what it does there
//! (ARCHITECTURE.md, "Where to add a fault"). Their settings are off by default, and a run that
//! leaves them off keeps its trace hash.
//! The other kinds (`crash`, the two errors, `mutate_payload`) are each alone in their shape and
//! are performed and recorded where they act (ARCHITECTURE.md says why).

use crate::vocab::counters::Counter;
use serde::{Deserialize, Serialize};

/// Every fault a `[[script]]` entry can name (`fault = "..."`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, Hash)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    Crash,
    Stall,
    TransientError,
    PermanentError,
    RelayCrash,
    MutatePayload,
    /// The holder pauses `pause_ms` right after the attempt's first heartbeat.
    Pause,
    /// The attempt's first heartbeat reaches the queue `slow_heartbeat_ms` after it was sent.
    SlowHeartbeat,
    /// The consumer dies right after applying a relayed event's effect, before the relay hears
    /// it was handled.
    ConsumerCrash,
}

impl FaultKind {
    pub const ALL: [FaultKind; 9] = [
        FaultKind::Crash,
        FaultKind::Stall,
        FaultKind::TransientError,
        FaultKind::PermanentError,
        FaultKind::RelayCrash,
        FaultKind::MutatePayload,
        FaultKind::Pause,
        FaultKind::SlowHeartbeat,
        FaultKind::ConsumerCrash,
    ];

    /// The name a scenario file uses.
    pub fn name(self) -> &'static str {
        if let Some(h) = self.held() {
            return h.spec().name;
        }
        if let Some(s) = self.struck() {
            return s.spec().name;
        }
        match self {
            FaultKind::Crash => "crash",
            FaultKind::TransientError => "transient_error",
            FaultKind::PermanentError => "permanent_error",
            FaultKind::MutatePayload => "mutate_payload",
            _ => unreachable!("a held or struck fault is named by its row"),
        }
    }

    /// The names a scenario file may use, for error messages.
    pub fn allowed() -> String {
        let names: Vec<&str> = FaultKind::ALL.iter().map(|k| k.name()).collect();
        names.join(", ")
    }

    /// The held fault this kind is, if it is one.
    pub fn held(self) -> Option<Held> {
        Held::ALL.into_iter().find(|h| h.spec().kind == self)
    }

    /// The delivery-side fault this kind is, if it is one.
    pub fn struck(self) -> Option<Struck> {
        Struck::ALL.into_iter().find(|s| s.spec().kind == self)
    }

    /// A fault aimed at a job (so a `[[script]]` entry names it): a worker's, or a struck fault
    /// whose site is a job's step.
    pub fn takes_job(self) -> bool {
        match self.struck() {
            Some(s) => s.spec().site.takes_job(),
            None => true,
        }
    }

    /// A fault that strikes a worker's attempt (the held faults, crash, the two errors).
    pub fn strikes_attempt(self) -> bool {
        self.struck().is_none() && self != FaultKind::MutatePayload
    }

    /// Its place in the sweep's coverage report ([`FaultKind::ALL`] without `mutate_payload`).
    pub fn coverage_index(self) -> Option<usize> {
        COVERED.iter().position(|k| *k == self)
    }
}

/// The fault kinds the sweep's coverage gate counts, in report order.
pub const COVERED: [FaultKind; 8] = [
    FaultKind::Crash,
    FaultKind::Stall,
    FaultKind::TransientError,
    FaultKind::PermanentError,
    FaultKind::RelayCrash,
    FaultKind::Pause,
    FaultKind::SlowHeartbeat,
    FaultKind::ConsumerCrash,
];

/// A fault that holds an attempt up for a seeded length. Its discriminant indexes [`HELD`] and
/// every per-kind array ([`Lengths`], the metrics' counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Held {
    Stall = 0,
    Pause = 1,
    SlowHeartbeat = 2,
}

/// How many held fault kinds there are.
pub const HELD_KINDS: usize = 3;

impl Held {
    pub const ALL: [Held; HELD_KINDS] = [Held::Stall, Held::Pause, Held::SlowHeartbeat];

    #[inline]
    pub fn spec(self) -> &'static HeldSpec {
        &HELD[self as usize]
    }

    /// The held fault whose history record is `type_name`.
    pub fn by_record(type_name: &str) -> Option<Held> {
        Held::ALL.into_iter().find(|h| h.spec().record == type_name)
    }

    /// The held fault whose length key (`[faults]` and `[[script]]`) is `key`.
    pub fn by_length_key(key: &str) -> Option<Held> {
        Held::ALL.into_iter().find(|h| h.spec().length_key == key)
    }
}

/// Where a held fault's two draws (hit?, length) come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Draw {
    /// Positions 0 and 1 of the nine-draw attempt block (`sim::faults::draw_plan`), taken by
    /// every attempt whatever the rate.
    AttemptBlock,
    /// Two draws of the worker's own stream of this purpose, taken only when the rate is not 0.
    OwnStream,
    /// Slots `n` and `n + 1` of the attempt's spare draws (`sim::faults::SpareDraws`), read only
    /// when the rate is not 0.
    Spare(u64),
}

/// How long a held fault must be to let the holder's lease run out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outlasts {
    /// Always (a stall sends no heartbeat at all).
    Always,
    /// Longer than the lease (a pause right after a renewal).
    Lease,
    /// Longer than what is left of the lease at the first heartbeat (`lease - heartbeat`).
    LeaseAfterHeartbeat,
}

/// Everything the code outside the worker model knows about one held fault.
#[derive(Clone, Copy, Debug, Hash)]
pub struct HeldSpec {
    pub kind: FaultKind,
    /// The `[[script]]` name and the `[faults]` rate key.
    pub name: &'static str,
    /// The `[faults]` length distribution's key, and the `[[script]]` entry's length key.
    pub length_key: &'static str,
    /// The default length, uniform between these (ms).
    pub default_ms: (u64, u64),
    pub draw: Draw,
    /// The history record written when it strikes (`{worker, job, fence, <field>}`).
    pub record: &'static str,
    /// The record's length field.
    pub field: &'static str,
    /// The length field in the Perfetto trace's arguments.
    pub trace_arg: &'static str,
    /// The Perfetto instant's name.
    pub label: &'static str,
    /// The `sometimes` property the checker counts for it.
    pub sometimes: &'static str,
    /// Its count in `summary.json`'s `crashes` (the checker's figure `crashes.<count>`).
    pub count: &'static str,
    /// The `sometimes` properties a sweep must see when it is configured.
    pub requires: &'static [&'static str],
    /// ... and when it may last long enough to let the lease run out.
    pub requires_when_outlasting: &'static [&'static str],
    pub outlasts: Outlasts,
    /// What it is, for documentation and error messages.
    pub about: &'static str,
}

/// One row per [`Held`], in its order.
pub const HELD: [HeldSpec; HELD_KINDS] = [
    HeldSpec {
        kind: FaultKind::Stall,
        name: "stall",
        length_key: "stall_ms",
        default_ms: (800, 1500),
        draw: Draw::AttemptBlock,
        record: "stall_began",
        field: "stall",
        trace_arg: "stallMs",
        label: "STALL",
        sometimes: "stalled",
        count: "stalls",
        requires: &["lease_expired"],
        requires_when_outlasting: &[],
        outlasts: Outlasts::Always,
        about: "the extraction hangs this long with no heartbeat",
    },
    HeldSpec {
        kind: FaultKind::Pause,
        name: "pause",
        length_key: "pause_ms",
        default_ms: (600, 1500),
        draw: Draw::OwnStream,
        record: "pause_began",
        field: "pause",
        trace_arg: "pauseMs",
        label: "PAUSE",
        sometimes: "paused",
        count: "pauses",
        requires: &[],
        requires_when_outlasting: &["renewed_lease_expired"],
        outlasts: Outlasts::Lease,
        about: "the holder stops this long right after its first heartbeat",
    },
    HeldSpec {
        kind: FaultKind::SlowHeartbeat,
        name: "slow_heartbeat",
        length_key: "slow_heartbeat_ms",
        default_ms: (600, 1500),
        draw: Draw::Spare(0),
        record: "heartbeat_delayed",
        field: "delay",
        trace_arg: "delayMs",
        label: "SLOW HEARTBEAT",
        sometimes: "heartbeat_delayed",
        count: "slowHeartbeats",
        requires: &[],
        requires_when_outlasting: &["lease_expired"],
        outlasts: Outlasts::LeaseAfterHeartbeat,
        about: "the attempt's first heartbeat reaches the queue this long after it was sent",
    },
];

/// A fault that strikes a component of the delivery side (the relay, the consumer) at a step of
/// its own ([`Site`]). Its discriminant indexes [`STRUCK`] and every per-kind array (the rates).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Struck {
    RelayCrash = 0,
    ConsumerCrash = 1,
}

/// How many struck fault kinds there are.
pub const STRUCK_KINDS: usize = 2;

impl Struck {
    pub const ALL: [Struck; STRUCK_KINDS] = [Struck::RelayCrash, Struck::ConsumerCrash];

    #[inline]
    pub fn spec(self) -> &'static StruckSpec {
        &STRUCK[self as usize]
    }

    /// The struck fault whose history record is `type_name`.
    pub fn by_record(type_name: &str) -> Option<Struck> {
        Struck::ALL
            .into_iter()
            .find(|s| s.spec().record == type_name)
    }

    /// The struck faults of `site`, in table order (the order they are tried at each step).
    pub fn at(site: Site) -> impl Iterator<Item = Struck> {
        Struck::ALL
            .into_iter()
            .filter(move |s| s.spec().site == site)
    }
}

/// Where a struck fault strikes: the step of the delivery side it interrupts. What happens
/// there, and what its record's field holds, is the site's (`sim/delivery.rs`); its
/// discriminant names the site's stream of spare draws, so it must never change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Site {
    /// A relay tick that sent something, after the batch went out and before it is marked
    /// published: the batch stays unmarked (sent again at a later tick), and the relay comes
    /// back after `[relay] restart_ms` (default: its next tick). The field: the unmarked rows.
    RelayTick = 0,
    /// An event the relay sent, right after the consumer applied its effect (and, in the same
    /// step, remembered its event id) and before the relay hears back: the rest of the batch is
    /// not sent, the batch stays unmarked and goes out again at the relay's next tick, where the
    /// consumer must absorb the event it already applied. The field: the event id; the record
    /// names the event's job.
    ConsumerApplied = 1,
}

/// How many sites there are.
pub const SITES: usize = 2;

impl Site {
    pub const ALL: [Site; SITES] = [Site::RelayTick, Site::ConsumerApplied];

    /// The component that fails there.
    pub fn component(self) -> Component {
        match self {
            Site::RelayTick => Component::Relay,
            Site::ConsumerApplied => Component::Consumer,
        }
    }

    /// Whether a strike there is a job's (its record and its `[[script]]` entry name the job).
    pub fn takes_job(self) -> bool {
        match self {
            Site::RelayTick => false,
            Site::ConsumerApplied => true,
        }
    }
}

/// A component of the delivery side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Component {
    /// The outbox relay.
    Relay,
    /// The consumer that applies each event's business effect.
    Consumer,
}

/// Where a struck fault's draw (hit?) comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StruckDraw {
    /// One draw of the relay's stream at every relay tick that sends something, whatever the
    /// rate (the relay crash's, from before the table: a frozen run keeps the relay stream where
    /// the seeded run had it).
    RelayStream,
    /// Slot `n` of the step's spare draws (`sim::faults::SpareDraws` of the site's own stream:
    /// every step of the site owns a block, whatever the rates), read only when the rate is not 0.
    Spare(u64),
}

/// Everything the code outside the site knows about one struck fault.
#[derive(Clone, Copy, Debug, Hash)]
pub struct StruckSpec {
    pub kind: FaultKind,
    /// The `[[script]]` name and the `[faults]` rate key.
    pub name: &'static str,
    pub site: Site,
    pub draw: StruckDraw,
    /// The history record written when it strikes (`{[job], <field>}`: the job when the site
    /// takes one).
    pub record: &'static str,
    /// The record's field (what it holds is the site's).
    pub field: &'static str,
    /// The Perfetto instant's name.
    pub label: &'static str,
    /// The `sometimes` property the checker counts for it.
    pub sometimes: &'static str,
    /// Its counted figure (`summary.json`'s `crashes.<key>`, `[expect]`'s key).
    pub count: Counter,
    /// The `sometimes` properties besides its own a sweep must see when it is configured.
    pub requires: &'static [&'static str],
    /// What it is, for documentation and error messages.
    pub about: &'static str,
}

/// One row per [`Struck`], in its order.
pub const STRUCK: [StruckSpec; STRUCK_KINDS] = [
    StruckSpec {
        kind: FaultKind::RelayCrash,
        name: "relay_crash",
        site: Site::RelayTick,
        draw: StruckDraw::RelayStream,
        record: "relay_crashed",
        field: "unmarked",
        label: "RELAY CRASH",
        sometimes: "relay_crashed",
        count: Counter::RelayCrashes,
        requires: &["republish_absorbed"],
        about: "the relay dies after sending a batch and before marking it published",
    },
    StruckSpec {
        kind: FaultKind::ConsumerCrash,
        name: "consumer_crash",
        site: Site::ConsumerApplied,
        draw: StruckDraw::Spare(0),
        record: "consumer_crashed",
        field: "event",
        label: "CONSUMER CRASH",
        sometimes: "consumer_crashed",
        count: Counter::ConsumerCrashes,
        requires: &["republish_absorbed"],
        about: "the consumer dies right after applying an event's effect, before the relay hears it was handled",
    },
];

/// A length for each held fault (`None`: it does not strike). `Copy`, indexed by [`Held`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Lengths([Option<u64>; HELD_KINDS]);

impl Lengths {
    #[inline]
    pub fn get(&self, h: Held) -> Option<u64> {
        self.0[h as usize]
    }
    #[inline]
    pub fn set(&mut self, h: Held, ms: Option<u64>) {
        self.0[h as usize] = ms;
    }
    #[inline]
    pub fn take(&mut self, h: Held) -> Option<u64> {
        self.0[h as usize].take()
    }
}

/// A count for each held fault, serialized as `summary.json`'s names (`stalls`, `pauses`, ...).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HeldCounts(pub [u64; HELD_KINDS]);

impl HeldCounts {
    #[inline]
    pub fn add(&mut self, h: Held) {
        self.0[h as usize] += 1;
    }
    #[inline]
    pub fn get(&self, h: Held) -> u64 {
        self.0[h as usize]
    }
}

impl Serialize for HeldCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(HELD_KINDS))?;
        for h in Held::ALL {
            m.serialize_entry(h.spec().count, &self.get(h))?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_its_kinds_and_names_are_unique() {
        for h in Held::ALL {
            assert_eq!(h.spec().kind.held(), Some(h));
            assert_eq!(Held::by_record(h.spec().record), Some(h));
            assert_eq!(Held::by_length_key(h.spec().length_key), Some(h));
            assert_eq!(h.spec().length_key, format!("{}_ms", h.spec().name));
        }
        let mut names: Vec<&str> = FaultKind::ALL.iter().map(|k| k.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FaultKind::ALL.len());
        for s in Struck::ALL {
            assert_eq!(s.spec().kind.struck(), Some(s));
            assert_eq!(s.spec().kind.held(), None);
            assert_eq!(Struck::by_record(s.spec().record), Some(s));
            assert_eq!(Held::by_record(s.spec().record), None);
            assert_eq!(s.spec().kind.takes_job(), s.spec().site.takes_job());
        }
        for site in Site::ALL {
            let spares: Vec<u64> = Struck::at(site)
                .filter_map(|s| match s.spec().draw {
                    StruckDraw::Spare(n) => Some(n),
                    StruckDraw::RelayStream => None,
                })
                .collect();
            for (i, a) in spares.iter().enumerate() {
                assert!(*a < 8, "a spare slot past SPARE_DRAWS");
                assert!(
                    !spares[i + 1..].contains(a),
                    "two faults share a spare slot"
                );
            }
        }
        let spares: Vec<u64> = HELD
            .iter()
            .filter_map(|s| match s.draw {
                Draw::Spare(n) => Some(n),
                _ => None,
            })
            .collect();
        for (i, a) in spares.iter().enumerate() {
            assert!(a + 1 < 8, "a spare slot pair past SPARE_DRAWS");
            for b in &spares[i + 1..] {
                assert!(a.abs_diff(*b) >= 2, "two faults share a spare slot");
            }
        }
    }

    #[test]
    fn serde_names_are_the_table_names() {
        for k in FaultKind::ALL {
            assert_eq!(
                serde_json::to_value(k).unwrap(),
                serde_json::json!(k.name())
            );
        }
    }
}

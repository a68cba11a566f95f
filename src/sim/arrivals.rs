//! The arrival process: who submits which document when.
//!
//! Owns: generated arrivals (tenant i % T, document `doc-i`, inter-arrival times from the
//! scenario's distribution), their seeded collisions (another tenant's documentId) and
//! resubmissions (same tenant and document, payload changed or not), and which documents are
//! permanently invalid.
//! Does not: enqueue anything (the kernel does).

use crate::base::fastmap::mix64;
use crate::base::ids::TenantId;
use crate::base::rng::Stream;
use crate::scenario::Arrivals as Config;
use crate::vocab::key::Documents;
use crate::vocab::payload::Payload;
use crate::vocab::probes::{Probe, Probes};

/// How far back collisions and resubmissions look.
const RECENT: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Arrival {
    pub tenant: TenantId,
    pub payload: Payload,
    pub invalid: bool,
}

#[derive(Clone, Debug, Hash)]
pub struct ArrivalProcess {
    stream: Stream,
    tenants: u16,
    recent: Vec<Arrival>,
    next_index: u64,
    total: u64,
    /// The arrivals' decisions taken so far (`vocab::probes`).
    pub probes: Probes,
}

impl ArrivalProcess {
    pub fn new(stream: Stream, tenants: usize, total: u64) -> ArrivalProcess {
        ArrivalProcess {
            stream,
            tenants: tenants as u16,
            recent: Vec::with_capacity(RECENT),
            next_index: 0,
            total,
            probes: Probes::default(),
        }
    }

    pub fn remaining(&self) -> u64 {
        self.total - self.next_index
    }

    /// The gap before the next arrival.
    pub fn next_gap_ms(&mut self, config: &Config) -> u64 {
        config.interarrival_ms.sample(&mut self.stream)
    }

    /// The next arrival (call only while `remaining() > 0`).
    pub fn next(&mut self, config: &Config) -> Arrival {
        let i = self.next_index;
        self.next_index += 1;
        let tenant = TenantId((i % self.tenants as u64) as u16);
        let invalid = config
            .invalid_documents
            .is_some_and(|v| (i % v.every as u64) < v.first as u64);
        if invalid {
            self.probes.hit(Probe::ArrivalInvalid);
        }
        let mut arrival = Arrival {
            tenant,
            payload: Payload::of(Documents::generated(i as u32)),
            invalid,
        };
        let roll = if (config.document_collision > 0.0 || config.resubmit > 0.0)
            && !self.recent.is_empty()
        {
            self.stream.unit()
        } else {
            1.0
        };
        if roll < config.document_collision {
            // Another tenant's documentId; its content too (the same form, say), so that a key
            // without the tenant would silently merge the two requests.
            let pick = self.stream.range(0, self.recent.len() as u64 - 1) as usize;
            if let Some(other) = (0..self.recent.len())
                .map(|k| self.recent[(pick + k) % self.recent.len()])
                .find(|a| a.tenant != tenant)
            {
                self.probes.hit(Probe::ArrivalCollision);
                arrival.payload = other.payload;
                arrival.invalid = other.invalid;
            }
        } else if roll < config.document_collision + config.resubmit {
            let pick = self.stream.range(0, self.recent.len() as u64 - 1) as usize;
            if let Some(same) = (0..self.recent.len())
                .map(|k| self.recent[(pick + k) % self.recent.len()])
                .find(|a| a.tenant == tenant)
            {
                self.probes.hit(Probe::ArrivalResubmit);
                arrival.payload = same.payload;
                arrival.invalid = same.invalid;
                if self.stream.chance(config.resubmit_changed) {
                    self.probes.hit(Probe::ArrivalResubmitChanged);
                    arrival.payload.content = mix64(arrival.payload.content ^ i);
                }
            }
        }
        if self.recent.len() < RECENT {
            self.recent.push(arrival);
        } else {
            self.recent[(i as usize) % RECENT] = arrival;
        }
        arrival
    }
}

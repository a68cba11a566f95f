//! A run's state, hashed: everything that determines what the run does from here on.
//!
//! Owns: [`Sim::state_hash`], the kernel's fields one by one (the clock, the pending events in
//! pop order, the queue and its retry policy and dead-letter queue, the outbox, the consumer and
//! the store they write, the workers and their attempts, every random stream's position, the
//! script, the counts of things still to come) and the observer's state (the checker's facts
//! and verdicts: two runs that reach one model state by different histories can still be
//! judged differently, so a search that prunes on the model alone could miss a violation).
//! `durasim explore` keys its visited set with it at each tie.
//! Does not: hash what only describes the past and is read by no decision: the trace hash (the
//! history's digest) and the probes (counts of decisions taken). Programs (external processes)
//! have no state to hash: a run with them is refused.
//!
//! The fields are taken by destructuring `Sim` without `..`: a field added to the kernel does not
//! compile until it is hashed here or named as left out, with its reason.

use super::kernel::Sim;
use crate::base::state_hash::StateHasher;
use crate::history::Observer;
use crate::model::semantics::QueueSemantics;
use std::hash::{Hash, Hasher};

impl<O: Observer + Hash, Q: QueueSemantics + Hash> Sim<'_, O, Q> {
    /// The run's state as 128 bits (`base::state_hash`): equal hashes, equal futures (up to a
    /// collision of about 2^-80 in a search of millions of states).
    pub fn state_hash(&self) -> u128 {
        let Sim {
            scenario: _, // the same for every run of a search; what differs (its script) is `script`
            seed,
            now,
            heap,
            heap_events,
            queue,
            outbox,
            consumer,
            workers,
            worker_streams,
            pause_streams,
            spare_draws,
            idle,
            relay_stream,
            site_spares,
            site_armed,
            jitter_stream,
            review_stream,
            arrivals,
            rates,
            script,
            invalid,
            payloads,
            names,
            tenant_ids,
            pending_timed,
            reviews_pending,
            attempts_in_flight,
            arrivals_total,
            first_cancelled,
            bugs,
            time_limit_ms,
            max_events,
            hash: _, // the history's digest: read by no decision
            observer,
            heartbeat_ms,
            coin_stream,
            probes: _, // counts of decisions taken: read by no decision
            programs,
        } = self;
        assert!(programs.is_none(), "a run with programs has no state hash");
        let mut h = StateHasher::default();
        (seed, now, heap, heap_events).hash(&mut h);
        (queue, outbox, consumer).hash(&mut h);
        (workers, worker_streams, pause_streams, spare_draws, idle).hash(&mut h);
        (
            relay_stream,
            site_spares,
            site_armed,
            jitter_stream,
            review_stream,
        )
            .hash(&mut h);
        (arrivals, script, invalid, payloads, names, tenant_ids).hash(&mut h);
        // The rates are floats: their bits.
        h.write_u64(rates.crash.to_bits());
        rates.crash_points.hash(&mut h);
        h.write_u64(rates.transient_error.to_bits());
        h.write_u64(rates.permanent_error.to_bits());
        for r in rates.struck.iter().chain(&rates.held) {
            h.write_u64(r.to_bits());
        }
        (
            pending_timed,
            reviews_pending,
            attempts_in_flight,
            arrivals_total,
        )
            .hash(&mut h);
        (
            first_cancelled,
            bugs,
            time_limit_ms,
            max_events,
            heartbeat_ms,
        )
            .hash(&mut h);
        (coin_stream, observer).hash(&mut h);
        h.finish128()
    }
}

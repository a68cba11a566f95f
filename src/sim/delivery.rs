//! Delivery: the relay, the consumer and the review stage.
//!
//! Owns: relay ticks (pruning, publishing the outbox's pending events, relay crashes), delivering
//! one event to the consumer and starting its review.
//! Does not: decide duplicates (the consumer model does) or store events (the outbox does).

use super::kernel::{Ev, Sim};
use crate::history::{Event, Observer};
use crate::ids::{EventId, JobId};
use crate::model::consumer::HandleOutcome;
use crate::model::semantics::QueueSemantics;
use crate::vocab::key::IdempotencyKey;

impl<'s, O: Observer, Q: QueueSemantics> Sim<'s, O, Q> {
    pub(super) fn on_relay_tick(&mut self) {
        if self.scenario.outbox.retention_ms.is_some() {
            let rows = self.outbox.prune(self.now);
            if rows > 0 {
                self.record(Event::OutboxPruned { rows });
            }
        }
        let count = self.outbox.pending().len();
        if count > 0 {
            for i in 0..count {
                let e = self.outbox.pending()[i];
                self.deliver(e.id, e.key, e.job, e.output, e.sends + 1, false);
            }
            self.outbox.note_sent(count);
            // One draw per tick whatever the rate and the script say, so a frozen run (rate 0,
            // the crash scripted) keeps the relay stream where the seeded run had it.
            let drawn = self.relay_stream.unit() < self.rates.relay_crash;
            let crash = self.script.relay_crash_due(self.now) | drawn;
            if crash {
                self.record(Event::RelayCrashed {
                    unmarked: count as u32,
                });
                // A crashed relay comes back after its restart delay (default: the next tick).
                if let Some(restart_ms) = self.scenario.relay.restart_ms {
                    self.schedule(self.now + restart_ms, Ev::RelayTick);
                    return;
                }
            } else {
                self.outbox.mark_published(self.now, count);
                self.record(Event::MarkedPublished {
                    count: count as u32,
                });
            }
        }
        self.schedule(self.now + self.scenario.relay.interval_ms, Ev::RelayTick);
    }

    /// One event reaches the consumer, which applies it once and hands the document to review.
    pub(super) fn deliver(
        &mut self,
        event: EventId,
        key: IdempotencyKey,
        job: JobId,
        output: u64,
        send: u32,
        direct: bool,
    ) {
        self.record(Event::Published {
            event,
            key,
            job,
            output,
            send: Some(send),
            direct,
        });
        match self.consumer.handle(self.now, event) {
            HandleOutcome::Applied => {
                self.record(Event::EffectApplied {
                    event,
                    key,
                    job,
                    output,
                });
                let review_ms = self
                    .scenario
                    .stages
                    .review_ms
                    .sample(&mut self.review_stream);
                self.reviews_pending += 1;
                self.schedule(
                    self.now + review_ms,
                    Ev::ReviewDone {
                        event: event.0,
                        job: job.0,
                    },
                );
            }
            HandleOutcome::DuplicateEvent => self.record(Event::DuplicateEvent { event, key }),
        }
    }
}

//! Delivery: the relay, the consumer and the review stage.
//!
//! Owns: relay ticks (pruning, publishing the outbox's pending events), delivering one event to
//! the consumer and starting its review, and what a fault of the delivery side
//! (`vocab::faults::STRUCK`) does at each site (`Site`) and what its record's field holds.
//! Does not: decide duplicates (the consumer model does), store events (the outbox does) or
//! decide whether a fault strikes (`sim/faults.rs`, `strikes`).

use super::faults::strikes;
use super::kernel::{Ev, Sim};
use crate::base::ids::{EventId, JobId};
use crate::history::{Event, Observer, StruckRecord};
use crate::model::consumer::HandleOutcome;
use crate::model::semantics::QueueSemantics;
use crate::vocab::faults::{Site, Struck};
use crate::vocab::key::IdempotencyKey;
use crate::vocab::probes::Probe;

impl<'s, O: Observer, Q: QueueSemantics> Sim<'s, O, Q> {
    pub(super) fn on_relay_tick(&mut self) {
        if self.scenario.outbox.retention_ms.is_some() {
            let rows = self.outbox.prune(self.now);
            if rows > 0 {
                self.record(Event::OutboxPruned { rows });
            }
        }
        let count = self.outbox.pending().len();
        if count == 0 {
            self.probes.hit(Probe::RelayIdle);
        } else {
            let (mut sent, mut consumer_crashed) = (0, false);
            while sent < count && !consumer_crashed {
                let e = self.outbox.pending()[sent];
                consumer_crashed = self.deliver(e.id, e.key, e.job, e.output, e.sends + 1, false);
                sent += 1;
            }
            self.outbox.note_sent(sent);
            if sent < count {
                self.probes.hit(Probe::RelayBatchCut);
            }
            if consumer_crashed {
                // Site::ConsumerApplied: the relay heard nothing back, so the batch stays
                // unmarked and goes out again at its next tick.
            } else if let Some(fault) = self.struck_at(Site::RelayTick, None) {
                // Site::RelayTick: the batch went out and is not marked yet.
                self.probes.hit(Probe::RelayCrash);
                self.record(Event::Struck(StruckRecord {
                    fault,
                    job: None,
                    value: count as u64,
                }));
                // A crashed relay comes back after its restart delay (default: the next tick).
                if let Some(restart_ms) = self.scenario.relay.restart_ms {
                    self.probes.hit(Probe::RelayRestartDelay);
                    self.schedule(self.now + restart_ms, Ev::RelayTick);
                    return;
                }
            } else {
                self.probes.hit(Probe::RelayPublished);
                self.outbox.mark_published(self.now, count);
                self.record(Event::MarkedPublished {
                    count: count as u32,
                });
            }
        }
        self.schedule(self.now + self.scenario.relay.interval_ms, Ev::RelayTick);
    }

    /// The first fault of `site` (in `vocab::faults::STRUCK`'s order) that strikes this step of
    /// it (of `job`, when the site takes one), if any; none at once when no fault of the site
    /// can strike in this run (`faults::site_armed`). The step owns its block of the site's
    /// spare draws whatever strikes, and every fault of the site is asked (the relay crash draws
    /// the relay's stream every tick, whatever the rate: a frozen run, its crashes scripted,
    /// keeps that stream where the seeded run had it).
    pub(super) fn struck_at(&mut self, site: Site, job: Option<JobId>) -> Option<Struck> {
        if !self.site_armed[site as usize] {
            return None;
        }
        let spare = &mut self.site_spares[site as usize];
        let step = spare.next_step();
        let mut first = None;
        for fault in Struck::at(site) {
            let (hit, scripted) = strikes(
                fault,
                &self.rates,
                &mut self.relay_stream,
                spare,
                step,
                &mut self.script,
                self.now,
                job,
            );
            if scripted {
                self.probes.hit(Probe::ScriptStruck);
            }
            first = first.or(hit.then_some(fault));
        }
        first
    }

    /// One event reaches the consumer, which applies it once and hands the document to review.
    /// True when the consumer crashed right after applying a relayed event
    /// (`Site::ConsumerApplied`); a direct (naive) publish has no relay to send it again.
    pub(super) fn deliver(
        &mut self,
        event: EventId,
        key: IdempotencyKey,
        job: JobId,
        output: u64,
        send: u32,
        direct: bool,
    ) -> bool {
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
                if !direct {
                    if let Some(fault) = self.struck_at(Site::ConsumerApplied, Some(job)) {
                        self.probes.hit(Probe::ConsumerCrash);
                        self.record(Event::Struck(StruckRecord {
                            fault,
                            job: Some(job),
                            value: event.0,
                        }));
                        return true;
                    }
                }
            }
            HandleOutcome::DuplicateEvent => self.record(Event::DuplicateEvent { event, key }),
        }
        false
    }
}

//! Terminal filing: a job cancelled or dead-lettered, as the history records it.
//!
//! Owns: recording a cancellation (and remembering the first one, for operator targets), filing
//! a dead letter with its stored reason (code, or the raw text the `raw_dlq_reason` bug leaks),
//! recording a bounded DLQ's eviction before the new entry, and deleting an entry whose
//! retention (a profile's `[dlq] retention_ms`) is over.
//! Does not: decide that a job is terminal (the retry policy and the queue do).

use super::kernel::{Ev, Sim};
use crate::base::ids::{Fence, JobId, WorkerId};
use crate::history::{Event, Observer};
use crate::model::dead_letter::{DlqReason, StoredReason};
use crate::model::retry::ErrorKind;
use crate::model::semantics::QueueSemantics;
use crate::vocab::bugs::Bug;
use crate::vocab::probes::Probe;

impl<'s, O: Observer, Q: QueueSemantics> Sim<'s, O, Q> {
    pub(super) fn record_cancel(&mut self, e: Event) {
        if let Event::Cancelled { job, .. } = e {
            self.first_cancelled.get_or_insert(job);
        }
        self.record(e);
    }

    pub(super) fn file_dead_letter(
        &mut self,
        job: JobId,
        w: Option<WorkerId>,
        fence: Option<Fence>,
        attempts: u32,
        reason: DlqReason,
        error: Option<ErrorKind>,
    ) {
        let stored = if self.bugs.contains(Bug::RawDlqReason) {
            StoredReason::Raw(self.raw_error_text(job, error).into())
        } else {
            StoredReason::Code(reason)
        };
        let text: Box<str> = stored.text().into();
        // A full DLQ makes room first: the eviction is recorded before the new entry.
        let evicted = self.queue.dead_letters_mut().push(self.now, job, stored);
        if let Some(evicted) = evicted.filter(|_| !self.bugs.contains(Bug::UnrecordedEviction)) {
            self.probes.hit(Probe::DlqEvictionRecorded);
            self.record(Event::DlqEvicted {
                job: evicted,
                capacity: Some(
                    self.queue
                        .dead_letters()
                        .config()
                        .capacity
                        .expect("only a bounded DLQ evicts"),
                ),
                retention: None,
            });
        }
        self.record(Event::DeadLettered {
            job,
            worker: w,
            fence,
            attempts: Some(attempts),
            reason: text,
        });
        if let Some(at) = self.queue.dlq_expires_at(job, self.now) {
            self.probes.hit(Probe::DlqExpiryScheduled);
            self.schedule(at, Ev::DlqExpire { job: job.0 });
        }
    }

    /// The retention of `job`'s DLQ entry is over: the entry is deleted (unless a capacity
    /// eviction took it first), and the deletion recorded with the retention it followed.
    pub(super) fn on_dlq_expire(&mut self, job: JobId) {
        if self.queue.dead_letters_mut().expire(job) {
            self.record(Event::DlqEvicted {
                job,
                capacity: None,
                retention: self.queue.dlq_retention_ms(),
            });
        }
    }

    /// What a parser's error message looks like: it quotes the document. Only the
    /// `raw_dlq_reason` bug lets it into the DLQ.
    pub(super) fn raw_error_text(&self, job: JobId, error: Option<ErrorKind>) -> String {
        let j = self.queue.job(job);
        let document = self.names.documents.name(j.key.document);
        match error {
            Some(ErrorKind::SchemaInvalid) => format!("schema validation failed: field `total` in {document} reads \"ACME Corp, invoice for J. Silva, CPF 123.456.789-00\""),
            Some(e) => format!("{} while extracting {document}: provider said \"upstream 503\"", e.name()),
            None => format!("gave up on {document} after {} attempts: provider said \"upstream 503\"", j.attempt),
        }
    }
}

//! Invariant family: the enqueue-time uniqueness decision, restated from the header's mode.
//!
//! Owns: the part of `payload_conflict_rejected` that judges how a submit of a key already known
//! was resolved — a new job, a dedupe onto the key's newest job, a refusal, a replace of its
//! payload — against what the header's `unique` mode allows, recomputed from raw facts only:
//! the key's newest job as the history created it and that job's state as its records left it
//! (terminal, leased). The
//! record's own verdict is never taken for granted. The key's newest job is kept in its track
//! (`key_track.rs`: its first job's, no bytes of its own while the key has one job).
//! Does not: compare payloads (`effects`: a dedupe onto a different payload, a refusal of the
//! same one), or judge tenants (`tenancy`).
//!
//! The modes (docs/queues.md M10, docs/history-format.md `unique`):
//! - `forever` (durasim's key): never a second job; the newest job resolves every submit;
//! - `none`: always a new job;
//! - `while_active`: a dedupe while the newest job is not terminal, a new job after;
//! - `conflict_while_running`: a refusal (whatever the payload) while it is not terminal, a
//!   new job after;
//! - `replace`: the newest job takes the payload while it is neither leased (a lease not yet
//!   released or recorded as expired) nor terminal; a new job otherwise.

use super::checker::{Checker, JobTrack};
use super::invariant::Invariant;
use crate::base::ids::JobId;
use crate::history::Record;
use crate::profile::{Unique, Word};
use crate::vocab::key::IdempotencyKey;

/// How the history resolved a submit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Resolved {
    NewJob,
    Deduped,
    Refused,
    Replaced,
}

impl Resolved {
    fn what(self) -> &'static str {
        match self {
            Resolved::NewJob => "got a new job",
            Resolved::Deduped => "was deduplicated",
            Resolved::Refused => "was refused as a conflict",
            Resolved::Replaced => "replaced the payload",
        }
    }

    fn call(self) -> &'static str {
        match self {
            Resolved::NewJob => "a new job",
            Resolved::Deduped => "a dedupe onto it",
            Resolved::Refused => "a refusal",
            Resolved::Replaced => "a replace of its payload",
        }
    }
}

/// What the mode allows for a submit of a known key whose newest job is (or is not) terminal,
/// or leased. `None`: a dedupe or a refusal, which the payloads decide (`effects` judges which).
fn allowed(mode: Unique, terminal: bool, leased: bool) -> Option<Resolved> {
    match mode {
        Unique::Forever => None,
        Unique::None => Some(Resolved::NewJob),
        Unique::WhileActive | Unique::ConflictWhileRunning if terminal => Some(Resolved::NewJob),
        Unique::WhileActive => Some(Resolved::Deduped),
        Unique::ConflictWhileRunning => Some(Resolved::Refused),
        Unique::Replace if terminal || leased => Some(Resolved::NewJob),
        Unique::Replace => Some(Resolved::Replaced),
    }
}

impl Checker {
    /// The newest job the history created under `key`, if any (`existing`: the job the record
    /// names, which is usually the key's first).
    fn newest_job(&self, key: &IdempotencyKey, existing: JobId) -> Option<JobId> {
        self.tracks.newest(key, Some(existing))
    }

    /// An `enqueued` record creating `job` with track `t`: if the key already had a job, the
    /// mode must allow a second one. The job becomes the key's newest (and the key takes its
    /// payload if it is the key's first enqueue: `effects` compares later submits with it).
    pub(super) fn unique_enqueued(&mut self, r: &Record, job: JobId, t: &JobTrack) {
        if let Some(newest) = self.tracks.create(job, t) {
            self.unique_judge(r, Resolved::NewJob, newest, &t.key, job);
        }
    }

    /// An `enqueue_deduped`, `enqueue_conflict` or `enqueue_replaced` record naming `existing`: it must be the key's
    /// newest job, and the mode must allow that outcome in the state that job was in. Returns
    /// whether the mode refuses any payload here (`conflict_while_running` on a live job), so
    /// `effects` does not call the refusal of the same payload a conflict wrongly raised.
    pub(super) fn unique_resolved(
        &mut self,
        r: &Record,
        how: Resolved,
        existing: JobId,
        key: &IdempotencyKey,
    ) -> bool {
        let newest = self.newest_job(key, existing);
        if newest != Some(existing) {
            let said = how.what();
            let newest = newest.map_or("no job".to_string(), |j| j.to_string());
            self.violate(
                Invariant::PayloadConflictRejected,
                r.at,
                Some(existing),
                Some(*key),
                || {
                    format!(
                        "a submit {said} against {existing}, but the key's newest job is {newest}"
                    )
                },
                || vec![r.clone()],
            );
            return false;
        }
        self.unique_judge(r, how, existing, key, existing)
    }

    /// Judges `how` against the mode, the newest job being `newest`; `job` is the record's job.
    fn unique_judge(
        &mut self,
        r: &Record,
        how: Resolved,
        newest: JobId,
        key: &IdempotencyKey,
        job: JobId,
    ) -> bool {
        let mode = self.config.unique;
        let (terminal, leased) = self.read_job(newest, |t| (t.terminal.is_some(), t.lease_held));
        let want = allowed(mode, terminal, leased);
        let ok = match want {
            Some(w) => w == how,
            None => matches!(how, Resolved::Deduped | Resolved::Refused),
        };
        if !ok {
            let state = match (terminal, leased) {
                (true, _) => "terminal",
                (false, true) => "leased",
                (false, false) => "pending",
            };
            let must = want.map_or("a dedupe or a refusal", Resolved::call);
            let said = how.what();
            self.violate(
                Invariant::PayloadConflictRejected,
                r.at,
                Some(job),
                Some(*key),
                || format!("a submit of a known key {said}, but under unique = \"{}\" with the key's newest job {newest} {state} the mode calls for {must}", mode.name()),
                || vec![r.clone()],
            );
        }
        want == Some(Resolved::Refused) && how == Resolved::Refused
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mode_allows_what_its_system_does() {
        for leased in [false, true] {
            assert_eq!(allowed(Unique::Forever, true, leased), None);
            assert_eq!(allowed(Unique::None, false, leased), Some(Resolved::NewJob));
            let live = allowed(Unique::WhileActive, false, leased);
            assert_eq!(live, Some(Resolved::Deduped));
            let done = allowed(Unique::WhileActive, true, leased);
            assert_eq!(done, Some(Resolved::NewJob));
            let live = allowed(Unique::ConflictWhileRunning, false, leased);
            assert_eq!(live, Some(Resolved::Refused));
            let done = allowed(Unique::ConflictWhileRunning, true, leased);
            assert_eq!(done, Some(Resolved::NewJob));
            assert_eq!(
                allowed(Unique::Replace, true, leased),
                Some(Resolved::NewJob)
            );
        }
        let pending = allowed(Unique::Replace, false, false);
        assert_eq!(pending, Some(Resolved::Replaced));
        let held = allowed(Unique::Replace, false, true);
        assert_eq!(held, Some(Resolved::NewJob));
    }
}

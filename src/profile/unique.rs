//! Enqueue uniqueness (docs/queues.md M10): what a second submit of a known key does.
//!
//! Owns: the decision for one submit, from the profile's mode, the existing job's state and
//! whether the payloads are equal: a new job, the existing job standing for the request
//! (deduped), the existing job taking the request's payload (replaced), or a refusal (conflict). Queues compare keys, not payloads: a dedupe onto a
//! different payload is what the checker's `payload_conflict_rejected` then reports.
//! Does not: hold the key index (see `key_index`) or create the job (the queue does).

use super::params::Unique;

/// The existing job with the same key, as the queue sees it at the submit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Existing {
    pub terminal: bool,
    pub leased: bool,
    /// Leased at least once (now or before a retry).
    pub ever_leased: bool,
    pub same_payload: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SubmitDecision {
    Create,
    Dedupe,
    Conflict,
    Replace,
}

pub fn decide(mode: Unique, existing: Option<Existing>) -> SubmitDecision {
    let Some(e) = existing else {
        return SubmitDecision::Create;
    };
    match mode {
        Unique::Forever if e.same_payload => SubmitDecision::Dedupe,
        Unique::Forever => SubmitDecision::Conflict,
        Unique::None => SubmitDecision::Create,
        Unique::WhileActive if e.terminal => SubmitDecision::Create,
        Unique::WhileActive => SubmitDecision::Dedupe,
        Unique::ConflictWhileRunning if e.terminal => SubmitDecision::Create,
        Unique::ConflictWhileRunning => SubmitDecision::Conflict,
        // graphile-worker's `add_job`: a locked job (or one out of attempts) keeps running with
        // its key cleared and a new job takes the key; an unlocked one is overwritten.
        Unique::Replace if e.terminal || e.leased => SubmitDecision::Create,
        Unique::Replace => SubmitDecision::Replace,
        Unique::WhileWaiting if e.terminal || e.leased => SubmitDecision::Create,
        Unique::WhileWaiting if e.same_payload => SubmitDecision::Dedupe,
        Unique::WhileWaiting => SubmitDecision::Conflict,
        Unique::WhileNew if e.terminal || e.leased || e.ever_leased => SubmitDecision::Create,
        Unique::WhileNew if e.same_payload => SubmitDecision::Dedupe,
        Unique::WhileNew => SubmitDecision::Conflict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUNNING: Existing = Existing {
        terminal: false,
        leased: true,
        ever_leased: true,
        same_payload: true,
    };
    const DONE: Existing = Existing {
        terminal: true,
        leased: false,
        ever_leased: true,
        same_payload: true,
    };

    #[test]
    fn durasims_key_is_unique_for_ever() {
        assert_eq!(decide(Unique::Forever, None), SubmitDecision::Create);
        assert_eq!(decide(Unique::Forever, Some(DONE)), SubmitDecision::Dedupe);
        let other = Existing {
            same_payload: false,
            ..DONE
        };
        assert_eq!(
            decide(Unique::Forever, Some(other)),
            SubmitDecision::Conflict
        );
    }

    // open-mercato/cezar#69: deduped only against in-flight jobs, so a webhook retry after the
    // flow finished runs it again.
    #[test]
    fn while_active_lets_a_resubmit_after_completion_through() {
        assert_eq!(
            decide(Unique::WhileActive, Some(RUNNING)),
            SubmitDecision::Dedupe
        );
        assert_eq!(
            decide(Unique::WhileActive, Some(DONE)),
            SubmitDecision::Create
        );
        assert_eq!(decide(Unique::None, Some(RUNNING)), SubmitDecision::Create);
        assert_eq!(
            decide(Unique::ConflictWhileRunning, Some(RUNNING)),
            SubmitDecision::Conflict
        );
        assert_eq!(
            decide(Unique::ConflictWhileRunning, Some(DONE)),
            SubmitDecision::Create
        );
    }

    // graphile-worker's job_key, default mode `replace` (sql/000011.sql add_job; add_jobs: a
    // job that is not `is_available` gets its key cleared and a new job is inserted).
    #[test]
    fn replace_overwrites_only_a_job_nobody_holds() {
        let pending = Existing {
            leased: false,
            same_payload: false,
            ..RUNNING
        };
        assert_eq!(
            decide(Unique::Replace, Some(pending)),
            SubmitDecision::Replace
        );
        assert_eq!(
            decide(Unique::Replace, Some(RUNNING)),
            SubmitDecision::Create
        );
        assert_eq!(decide(Unique::Replace, Some(DONE)), SubmitDecision::Create);
    }
}

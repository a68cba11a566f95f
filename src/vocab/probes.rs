//! Coverage probes: a named probe at every decision of the model and the kernel, and the
//! counter array a run keeps of them.
//!
//! Owns: [`Probe`] with its table [`TABLE`] (for each probe, the name reports use, the source
//! file whose code counts it, and the branch it stands for), and [`Probes`], one counter per
//! probe indexed by the probe's discriminant. A probe is counted where its decision is taken
//! (`probes.hit(Probe::QueueLeaseGranted)`: one add to a field of the value that owns the
//! decision). Each model part that decides keeps a `Probes` of its own as part of its state
//! (the model stays pure: a count is state, not I/O), the kernel keeps one for its own
//! decisions, and the kernel adds them together into the run's outcome when the run ends. No
//! global, no thread-local: a sweep's threads each count their own runs, and the counts are
//! the same on every thread count.
//! Does not: decide anything, touch the trace (a probe is never recorded, so no trace hash
//! depends on one), or say which probes a sweep must reach (`sweep::coverage`, under
//! `--require-coverage`: every one).
//!
//! Adding a probe is a variant with its row (name, site, what branch) in the macro below, and
//! one `hit` at the branch; `tests/it/probes.rs` checks that each probe is counted in its site's
//! file and nowhere else. What is not a probe: the branches a bug switch takes (a probe marks
//! what the correct model does), and packed values that cannot spill within a run's limits (a
//! fence or an event id beyond 2^32 needs more leases than `base::limits::MAX_JOBS` jobs
//! make), and a branch the kernel cannot take (a stale write from the process that holds the
//! job's current lease: a worker runs one attempt at a time, so it never writes with an older
//! token while it holds a newer one).

use std::fmt;

macro_rules! probes {
    ($($variant:ident = $name:literal, $site:literal, $about:literal;)+) => {
        /// A coverage probe: one branch of one decision. Its discriminant indexes [`TABLE`] and
        /// [`Probes`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u16)]
        pub enum Probe {
            $($variant,)+
        }

        /// One row per [`Probe`], in its order.
        pub const TABLE: &[ProbeRow] = &[
            $(ProbeRow { probe: Probe::$variant, name: $name, site: $site, about: $about },)+
        ];
    };
}

/// Everything known about one probe.
#[derive(Clone, Copy, Debug, Hash)]
pub struct ProbeRow {
    pub probe: Probe,
    /// What reports call it: `area.decision.branch`.
    pub name: &'static str,
    /// The source file that counts it (from the repository's root).
    pub site: &'static str,
    /// The branch it stands for.
    pub about: &'static str,
}

probes! {
    // ---- the queue (model/queue.rs) --------------------------------------------------------
    QueueEnqueueNewKey = "queue.enqueue.new_key", "src/model/queue.rs", "the first submit of a key makes its job";
    UniqueForeverDedupe = "unique.forever.dedupe", "src/model/queue.rs", "unique for ever: a known key with the same payload is deduplicated";
    UniqueForeverConflict = "unique.forever.conflict", "src/model/queue.rs", "unique for ever: a known key with another payload is refused";
    UniqueNoneCreate = "unique.none.create", "src/model/queue.rs", "no uniqueness: a known key makes another job";
    UniqueWhileActiveCreate = "unique.while_active.create", "src/model/queue.rs", "unique while active: a known key whose job finished makes a new job";
    UniqueWhileActiveDedupe = "unique.while_active.dedupe", "src/model/queue.rs", "unique while active: a known key whose job is open is deduplicated";
    UniqueConflictWhileRunningCreate = "unique.conflict_while_running.create", "src/model/queue.rs", "conflict while running: a known key whose job finished makes a new job";
    UniqueConflictWhileRunningConflict = "unique.conflict_while_running.conflict", "src/model/queue.rs", "conflict while running: a known key whose job is open is refused";
    UniqueReplaceCreate = "unique.replace.create", "src/model/queue.rs", "replace: a known key whose job is leased or finished makes a new job";
    UniqueReplaceReplace = "unique.replace.replace", "src/model/queue.rs", "replace: a known key whose job waits takes the new payload";
    UniqueWhileWaitingCreate = "unique.while_waiting.create", "src/model/queue.rs", "unique while waiting: a known key whose job is leased or finished makes a new job";
    UniqueWhileWaitingDedupe = "unique.while_waiting.dedupe", "src/model/queue.rs", "unique while waiting: a known key whose job waits, with the same payload, is deduplicated";
    UniqueWhileWaitingConflict = "unique.while_waiting.conflict", "src/model/queue.rs", "unique while waiting: a known key whose job waits, with another payload, is refused";
    UniqueWhileNewCreate = "unique.while_new.create", "src/model/queue.rs", "unique while new: a known key whose job was ever leased makes a new job";
    UniqueWhileNewDedupe = "unique.while_new.dedupe", "src/model/queue.rs", "unique while new: a known key whose job was never leased, with the same payload, is deduplicated";
    UniqueWhileNewConflict = "unique.while_new.conflict", "src/model/queue.rs", "unique while new: a known key whose job was never leased, with another payload, is refused";
    QueueVisibleReady = "queue.visible.ready", "src/model/queue.rs", "a waiting job's visible time came: it is ready";
    QueueVisibleStale = "queue.visible.stale", "src/model/queue.rs", "a wake-up for a job that moved on meanwhile";
    QueueLeaseStaleEntry = "queue.lease.stale_entry", "src/model/queue.rs", "leaseNext skips a ready-heap entry the job no longer matches";
    QueueLeaseDeadlineCancel = "queue.lease.deadline_cancel", "src/model/queue.rs", "leaseNext cancels a job past its deadline";
    QueueLeaseExhausted = "queue.lease.exhausted", "src/model/queue.rs", "leaseNext hands back a job out of attempts for the DLQ";
    QueueLeaseDoomed = "queue.lease.doomed", "src/model/queue.rs", "leaseNext fails a job that stalled past its limit";
    QueueLeaseGranted = "queue.lease.granted", "src/model/queue.rs", "leaseNext leases a job";
    QueueLeaseAfterExpiry = "queue.lease.after_expiry", "src/model/queue.rs", "leaseNext leases a job whose last lease expired";
    QueueLeaseEmpty = "queue.lease.empty", "src/model/queue.rs", "leaseNext finds nothing ready";
    QueueFenceCurrent = "queue.fence.current", "src/model/queue.rs", "a fenced write carries the job's current token";
    QueueFenceStale = "queue.fence.stale", "src/model/queue.rs", "a fenced write carries an old token: refused";
    QueueFenceTerminal = "queue.fence.terminal", "src/model/queue.rs", "a fenced write to a finished job: refused";
    QueueHeartbeatRenewed = "queue.heartbeat.renewed", "src/model/queue.rs", "a heartbeat renews a live lease";
    QueueHeartbeatNotLeased = "queue.heartbeat.not_leased", "src/model/queue.rs", "the holder's heartbeat finds its lease expired (the job not leased): refused";
    QueueRetryWaits = "queue.retry.waits", "src/model/queue.rs", "a retry makes the job wait for its backoff";
    QueueFinishFromReady = "queue.finish.from_ready", "src/model/queue.rs", "a job finishes while ready (its holder's lease had expired, nobody took it)";
    QueueExpiryStale = "queue.expiry.stale", "src/model/queue.rs", "a lease check for a lease released or replaced meanwhile";
    QueueExpiryRenewed = "queue.expiry.renewed", "src/model/queue.rs", "a lease check finds the lease renewed: checked again later";
    QueueExpiryExpired = "queue.expiry.expired", "src/model/queue.rs", "a lease check finds the lease over: the job is ready again";
    QueueAckUnfencedApplied = "queue.ack_unfenced.applied", "src/model/queue.rs", "an ack the profile's guard took finishes the job";
    QueueAckUnfencedNoop = "queue.ack_unfenced.noop", "src/model/queue.rs", "an ack the profile's guard took lands on a finished job: nothing changes";
    QueueDeadLetterUnfencedApplied = "queue.dead_letter_unfenced.applied", "src/model/queue.rs", "a dead-letter the profile's guard took finishes the job";
    QueueDeadLetterUnfencedNoop = "queue.dead_letter_unfenced.noop", "src/model/queue.rs", "a dead-letter the profile's guard took lands on a finished job: nothing changes";
    QueueHeartbeatUnfencedRenewed = "queue.heartbeat_unfenced.renewed", "src/model/queue.rs", "a renewal the profile's guard took extends a leased job";
    QueueHeartbeatUnfencedNotLeased = "queue.heartbeat_unfenced.not_leased", "src/model/queue.rs", "a renewal the profile's guard took finds the job not leased: ignored";
    QueueReopenReady = "queue.reopen.ready", "src/model/queue.rs", "a reopened job is ready at once";
    QueueReopenHold = "queue.reopen.hold", "src/model/queue.rs", "a reopened job is held until its release";
    QueueReopenAt = "queue.reopen.at", "src/model/queue.rs", "a reopened job waits until a time (a retry by the profile's rules)";
    QueueReopenFromReady = "queue.reopen.from_ready", "src/model/queue.rs", "a job reopened while ready leaves the depth";
    QueueReopenRevived = "queue.reopen.revived", "src/model/queue.rs", "a finished job is reopened (a by-id write to a finished row)";
    QueueReleaseReady = "queue.release.ready", "src/model/queue.rs", "a held job is released to the ready line";
    QueueReleaseMovedOn = "queue.release.moved_on", "src/model/queue.rs", "a held job moved on before its release: nothing to do";
    QueueMutatePayload = "queue.mutate_payload", "src/model/queue.rs", "a job's payload changes in place";
    // ---- the queue's rows (model/job_rows.rs) ----------------------------------------------
    RowsSlotNew = "rows.slot.new", "src/model/job_rows.rs", "a new job takes a new live slot";
    RowsSlotReused = "rows.slot.reused", "src/model/job_rows.rs", "a new job reuses the live slot a finished job handed back";
    RowsSpillCreatedAt = "rows.spill.created_at", "src/model/job_rows.rs", "a createdAt offset beyond 16 bits goes to its side table";
    RowsSpillPayload = "rows.spill.payload", "src/model/job_rows.rs", "a payload that is not its document's default goes to its side table";
    RowsPayloadBackToDefault = "rows.payload.back_to_default", "src/model/job_rows.rs", "a payload set back to its document's default leaves its side table";
    RowsSpillAttempts = "rows.spill.attempts", "src/model/job_rows.rs", "a finished job's attempt count beyond 62 goes to its side table";
    RowsFinishCompact = "rows.finish.compact", "src/model/job_rows.rs", "a finished job's row turns compact and hands its slot back";
    RowsFinishKeptWhole = "rows.finish.kept_whole", "src/model/job_rows.rs", "a finished job keeps its whole row (a queue that can reopen it)";
    // ---- the outbox (model/outbox.rs) ------------------------------------------------------
    OutboxCommitNew = "outbox.commit.new", "src/model/outbox.rs", "a commit writes a new result and its event";
    OutboxCommitDedupe = "outbox.commit.dedupe", "src/model/outbox.rs", "a commit finds the key's result with the same payload: deduplicated";
    OutboxCommitConflict = "outbox.commit.conflict", "src/model/outbox.rs", "a commit finds the key's result with another payload: refused";
    OutboxSpillPayload = "outbox.spill.payload", "src/model/outbox.rs", "a result whose payload is not its document's default keeps it in a side table";
    OutboxSendAgain = "outbox.send.again", "src/model/outbox.rs", "the relay sends an event it sent before (it was never marked)";
    OutboxMarkRetained = "outbox.mark.retained", "src/model/outbox.rs", "marked rows are kept for the outbox's retention";
    OutboxMarkDropped = "outbox.mark.dropped", "src/model/outbox.rs", "marked rows leave at once (no retention)";
    OutboxPrunePruned = "outbox.prune.pruned", "src/model/outbox.rs", "the relay prunes published rows past their retention";
    OutboxPruneYoung = "outbox.prune.young", "src/model/outbox.rs", "the oldest published rows are still within their retention";
    // ---- the consumer (model/consumer.rs) --------------------------------------------------
    ConsumerApplied = "consumer.applied", "src/model/consumer.rs", "the consumer applies an event it never saw";
    ConsumerDuplicate = "consumer.duplicate", "src/model/consumer.rs", "the consumer absorbs an event it saw";
    ConsumerWindowFirst = "consumer.window.first", "src/model/consumer.rs", "a windowed consumer applies an event it never saw";
    ConsumerWindowDuplicate = "consumer.window.duplicate", "src/model/consumer.rs", "a windowed consumer absorbs an event it still remembers";
    ConsumerWindowForgotten = "consumer.window.forgotten", "src/model/consumer.rs", "a windowed consumer applies again an event it forgot";
    // ---- the dead-letter queue (model/dead_letter.rs) --------------------------------------
    DlqFiled = "dlq.push.filed", "src/model/dead_letter.rs", "a dead job is filed in the DLQ";
    DlqEvictOldest = "dlq.push.evict_oldest", "src/model/dead_letter.rs", "a full DLQ evicts its oldest entry to make room";
    DlqRefiled = "dlq.push.refiled", "src/model/dead_letter.rs", "a revived job dies again: its old entry leaves before the new one";
    DlqExpireHead = "dlq.expire.head", "src/model/dead_letter.rs", "retention deletes the oldest entry";
    DlqExpireOutOfOrder = "dlq.expire.out_of_order", "src/model/dead_letter.rs", "retention deletes an entry behind the oldest (the others keep their order)";
    DlqExpireGone = "dlq.expire.gone", "src/model/dead_letter.rs", "retention finds the entry already evicted by capacity";
    DlqReprocessAuthorized = "dlq.reprocess.authorized", "src/model/dead_letter.rs", "an operator's reprocess is authorized";
    DlqRefusedMissingOperator = "dlq.refused.missing_operator", "src/model/dead_letter.rs", "a reprocess names no operator: refused";
    DlqRefusedNotDeadLettered = "dlq.refused.not_dead_lettered", "src/model/dead_letter.rs", "a reprocess of a job that is not in the DLQ: refused";
    DlqRefusedAlreadyReprocessed = "dlq.refused.already_reprocessed", "src/model/dead_letter.rs", "a second reprocess of one entry: refused";
    DlqRefusedEvicted = "dlq.refused.evicted", "src/model/dead_letter.rs", "a reprocess of an evicted entry: refused";
    DlqRefusedRateLimited = "dlq.refused.rate_limited", "src/model/dead_letter.rs", "a reprocess past the tenant's rate limit: refused";
    DlqRefusedCancelled = "dlq.refused.cancelled_is_terminal", "src/model/dead_letter.rs", "a reprocess of a cancelled job: refused";
    DlqRateWindowSlid = "dlq.rate.window_slid", "src/model/dead_letter.rs", "the rate limit forgets reprocesses older than its window";
    // ---- the retry policy, through the chapter's queue (model/semantics.rs) ----------------
    RetryDecideRetry = "retry.decide.retry", "src/model/semantics.rs", "a failure is retried";
    RetryDecideDeadLetterPermanent = "retry.decide.dead_letter_permanent", "src/model/semantics.rs", "a permanent failure goes to the DLQ";
    RetryDecideDeadLetterExhausted = "retry.decide.dead_letter_exhausted", "src/model/semantics.rs", "a transient failure of the last attempt goes to the DLQ";
    RetryDecideCancel = "retry.decide.cancel", "src/model/semantics.rs", "a failure past the deadline cancels the job";
    RetryJitterNone = "retry.jitter.none", "src/model/semantics.rs", "a retry's delay without jitter";
    RetryJitterFull = "retry.jitter.full", "src/model/semantics.rs", "a retry's delay with full jitter";
    RetryJitterEqual = "retry.jitter.equal", "src/model/semantics.rs", "a retry's delay with equal jitter";
    RetryCapped = "retry.backoff.capped", "src/model/semantics.rs", "a retry's delay reaches the backoff's cap";
    // ---- a profile's rules (model/profiled_queue.rs) ---------------------------------------
    GuardHolder = "guard.holder", "src/model/profiled_queue.rs", "the lease holder's own write: taken under every guard";
    GuardLockExpired = "guard.lock_expired", "src/model/profiled_queue.rs", "the holder's write finds its lock's TTL run out: refused";
    GuardRejectRejected = "guard.reject.rejected", "src/model/profiled_queue.rs", "guard reject: a stale write is refused";
    GuardIfLeasedAccepted = "guard.if_leased.accepted", "src/model/profiled_queue.rs", "guard if_leased: a stale write to a leased job is taken";
    GuardIfLeasedIgnored = "guard.if_leased.ignored", "src/model/profiled_queue.rs", "guard if_leased: a stale write to a job not leased is ignored";
    GuardByIdAccepted = "guard.by_id.accepted", "src/model/profiled_queue.rs", "guard by_id: a stale write is taken";
    GuardByIdRowGone = "guard.by_id.row_gone", "src/model/profiled_queue.rs", "guard by_id: a write to a finished job whose row is gone is ignored";
    GuardIfNotTerminalAccepted = "guard.if_not_terminal.accepted", "src/model/profiled_queue.rs", "guard if_not_terminal: a stale write to an open job is taken";
    GuardIfNotTerminalIgnored = "guard.if_not_terminal.ignored", "src/model/profiled_queue.rs", "guard if_not_terminal: a write to a finished job is ignored";
    GuardIfSameProcessIgnored = "guard.if_same_process.ignored", "src/model/profiled_queue.rs", "guard if_same_process: a stale write from another process is ignored";
    GuardMayApplyAccepted = "guard.may_apply.accepted", "src/model/profiled_queue.rs", "guard may_apply: the coin lets a stale write take effect";
    GuardMayApplyIgnored = "guard.may_apply.ignored", "src/model/profiled_queue.rs", "guard may_apply: the coin drops a stale write";
    DetectTimer = "detect.timer", "src/model/profiled_queue.rs", "a lease's end is watched by an exact timer (under a profile's rescue)";
    DetectSweep = "detect.sweep", "src/model/profiled_queue.rs", "a lease's end is watched by a periodic sweeper";
    DetectTwoPass = "detect.two_pass", "src/model/profiled_queue.rs", "a lease's end is watched by a two-pass stalled checker";
    DetectWorkerLiveness = "detect.worker_liveness", "src/model/profiled_queue.rs", "a lease's end is watched through the process heartbeat";
    DetectNever = "detect.never", "src/model/profiled_queue.rs", "a lease's end is never detected";
    CheckMovedOn = "check.moved_on", "src/model/profiled_queue.rs", "a sweeper finds the lease released or replaced";
    CheckAgain = "check.again", "src/model/profiled_queue.rs", "a sweeper finds the lease renewed: looked at again later";
    CheckRescueAt = "check.rescue_at", "src/model/profiled_queue.rs", "a sweeper reads the job now and writes by id later";
    CheckRescue = "check.rescue", "src/model/profiled_queue.rs", "a sweeper rescues the job now";
    RescueReady = "rescue.on_expiry.ready", "src/model/profiled_queue.rs", "a rescued job is ready at once";
    RescueStall = "rescue.on_expiry.stall", "src/model/profiled_queue.rs", "a rescue counts a stall";
    RescueStallDoomed = "rescue.stall.doomed", "src/model/profiled_queue.rs", "a stall past the limit dooms the job";
    RescueRetry = "rescue.on_expiry.retry", "src/model/profiled_queue.rs", "a rescue schedules the job with the retry delay";
    RescueFail = "rescue.on_expiry.fail", "src/model/profiled_queue.rs", "a rescue counts a failed attempt";
    RescueHeld = "rescue.held", "src/model/profiled_queue.rs", "a rescued job is held until its delay is over";
    ReleaseRescuedReady = "rescue.release.ready", "src/model/profiled_queue.rs", "a held rescued job is released";
    ReleaseRescuedMovedOn = "rescue.release.moved_on", "src/model/profiled_queue.rs", "a held rescued job moved on before its release";
    AttemptsByFailures = "attempts.by_failures", "src/model/profiled_queue.rs", "the policy counts failed attempts, not leases";
    PermanentRetried = "retry.permanent_retried", "src/model/profiled_queue.rs", "a permanent error is retried (the profile has no dead-letter call)";
    BackoffExp2Offset = "backoff.exp2_offset", "src/model/profiled_queue.rs", "a delay from offset + unit x 2^n";
    BackoffPow4 = "backoff.pow4", "src/model/profiled_queue.rs", "a delay from unit x m^4 + offset";
    BackoffExpE = "backoff.exp_e", "src/model/profiled_queue.rs", "a delay from unit x e^n";
    BackoffImmediate = "backoff.immediate", "src/model/profiled_queue.rs", "no delay";
    BackoffVisibility = "backoff.visibility", "src/model/profiled_queue.rs", "the delay is what is left of the lease";
    JitterSymmetric = "backoff.jitter.symmetric", "src/model/profiled_queue.rs", "a delay jittered d(1 +- p)";
    JitterUp = "backoff.jitter.up", "src/model/profiled_queue.rs", "a delay jittered d(1 + [0, p])";
    JitterAdditive = "backoff.jitter.additive", "src/model/profiled_queue.rs", "a delay jittered d + [0, step(c + 1))";
    RetentionFromDeadLetter = "retention.from_dead_letter", "src/model/profiled_queue.rs", "a DLQ entry's retention counts from its filing";
    RetentionFromEnqueue = "retention.from_enqueue", "src/model/profiled_queue.rs", "a DLQ entry's retention counts from the job's enqueue (a redrive DLQ)";
    // ---- the kernel (src/sim/) -------------------------------------------------------------
    ArrivalCollision = "arrival.collision", "src/sim/arrivals.rs", "a generated arrival takes another tenant's document";
    ArrivalResubmit = "arrival.resubmit", "src/sim/arrivals.rs", "a generated arrival resubmits a recent document of its tenant";
    ArrivalResubmitChanged = "arrival.resubmit_changed", "src/sim/arrivals.rs", "a resubmission's payload changed";
    ArrivalInvalid = "arrival.invalid", "src/sim/arrivals.rs", "a generated document fails validation on every attempt";
    IntakeReprocessKeyTaken = "intake.reprocess.key_taken", "src/sim/intake.rs", "a reprocess's new version finds its key taken";
    IntakeBurst = "intake.burst", "src/sim/intake.rs", "a burst submits its documents";
    IntakeExplicit = "intake.explicit", "src/sim/intake.rs", "an [[enqueue]] entry is submitted";
    WorkerCrashAfterLease = "worker.crash.after_lease", "src/sim/attempts.rs", "a worker dies holding the lease, before extracting";
    WorkerCrashAfterExtract = "worker.crash.after_extract", "src/sim/attempts.rs", "a worker dies after extracting, before committing";
    WorkerCrashAfterCommit = "worker.crash.after_commit_before_ack", "src/sim/attempts.rs", "a worker dies after committing, before acking";
    WorkerStall = "worker.stall", "src/sim/attempts.rs", "an extraction stalls with no heartbeat";
    WorkerPause = "worker.pause", "src/sim/attempts.rs", "the holder pauses after its first heartbeat";
    WorkerSlowHeartbeat = "worker.slow_heartbeat", "src/sim/attempts.rs", "the first heartbeat reaches the queue late";
    WorkerSleepsPastLease = "worker.sleeps_past_lease", "src/sim/attempts.rs", "a step ends after the lease: the lease is watched";
    WorkerOutage = "worker.outage", "src/sim/attempts.rs", "an extraction starts inside the provider's outage";
    WorkerCommitConflict = "worker.commit_conflict", "src/sim/attempts.rs", "a refused commit fails the attempt with payload_conflict";
    WorkerJudgedDeadline = "worker.judged_deadline_exceeded", "src/sim/attempts.rs", "a transient failure past the deadline is judged deadline_exceeded";
    WorkerRetryPastDeadline = "worker.retry_past_deadline", "src/sim/attempts.rs", "a transient failure before the deadline is retried at a time past it (the queue cancels the job when it comes back)";
    WorkerCoinDrawn = "worker.write_coin", "src/sim/attempts.rs", "a stale write under may_apply draws its coin";
    ScriptAttemptFault = "script.attempt_fault", "src/sim/attempts.rs", "a scripted fault strikes its attempt";
    RefusedStaleFence = "refused.stale_fence", "src/sim/attempts.rs", "a write refused: stale_fence";
    RefusedTerminal = "refused.terminal", "src/sim/attempts.rs", "a write refused: the job finished";
    RefusedNotLeased = "refused.not_leased", "src/sim/attempts.rs", "a write refused: the job is not leased";
    RefusedLockExpired = "refused.lock_expired", "src/sim/attempts.rs", "a write refused: lease_expired (a lock's TTL)";
    RefusedIgnored = "refused.ignored", "src/sim/attempts.rs", "a write the store took and ignored";
    RefusedHeartbeat = "refused.op.heartbeat", "src/sim/attempts.rs", "a heartbeat changed nothing";
    RefusedAck = "refused.op.ack", "src/sim/attempts.rs", "an ack changed nothing";
    RefusedRetry = "refused.op.retry", "src/sim/attempts.rs", "a retry changed nothing";
    RefusedDeadLetter = "refused.op.dead_letter", "src/sim/attempts.rs", "a dead-letter changed nothing";
    RefusedCancel = "refused.op.cancel", "src/sim/attempts.rs", "a cancel changed nothing";
    ExpiryArmed = "lease_end.armed", "src/sim/lease_end.rs", "a lease check is armed for a holder that will not renew in time";
    ExpiryArmedStale = "lease_end.armed_stale", "src/sim/lease_end.rs", "nothing to arm: the holder's lease ended meanwhile";
    ExpiryNeverDetected = "lease_end.never_detected", "src/sim/lease_end.rs", "nothing to arm: the queue never detects the lease's end";
    RescueWriteLate = "lease_end.rescue_write", "src/sim/lease_end.rs", "a sweeper's late write by id lands";
    DlqEvictionRecorded = "terminal.dlq_evicted", "src/sim/terminal.rs", "a full DLQ's eviction is recorded before the new entry";
    DlqExpiryScheduled = "terminal.dlq_expiry_scheduled", "src/sim/terminal.rs", "a DLQ entry's deletion by age is scheduled";
    RelayIdle = "relay.idle", "src/sim/delivery.rs", "a relay tick finds nothing to publish";
    RelayPublished = "relay.published", "src/sim/delivery.rs", "a relay tick publishes and marks its batch";
    RelayCrash = "relay.crash", "src/sim/delivery.rs", "the relay dies after sending, before marking";
    RelayRestartDelay = "relay.crash.restart_delay", "src/sim/delivery.rs", "a crashed relay comes back after its restart delay";
    RelayBatchCut = "relay.batch_cut", "src/sim/delivery.rs", "a consumer crash cuts the relay's batch short";
    ConsumerCrash = "consumer.crash", "src/sim/delivery.rs", "the consumer dies after applying an event, before the relay hears";
    ScriptStruck = "script.struck", "src/sim/delivery.rs", "a scripted relay or consumer crash strikes";
    OperatorFixedJob = "operator.fixed_job", "src/sim/operator.rs", "an operator action names its job";
    OperatorFollowChain = "operator.follow", "src/sim/operator.rs", "an operator follows a job's reprocess chain to its newest job";
    OperatorOldest = "operator.oldest_dead_lettered", "src/sim/operator.rs", "an operator picks the oldest DLQ entry not yet reprocessed";
    OperatorCancelled = "operator.cancelled", "src/sim/operator.rs", "an operator picks the first cancelled job";
    OperatorNoSuchJob = "operator.no_such_job", "src/sim/operator.rs", "an operator's action names no job: refused";
    OperatorReprocessed = "operator.reprocessed", "src/sim/operator.rs", "an operator's reprocess makes a new job";
    MutatePayloadApplied = "script.mutate_payload", "src/sim/operator.rs", "a scripted payload change lands";
    MutatePayloadNoJob = "script.mutate_payload.no_job", "src/sim/operator.rs", "a scripted payload change comes before its job exists";
}

/// How many probes there are.
pub const PROBE_COUNT: usize = TABLE.len();

// Each row sits at its probe's discriminant, and no two share a name.
const _: () = {
    let mut i = 0;
    while i < PROBE_COUNT {
        assert!(
            TABLE[i].probe as usize == i,
            "TABLE is out of Probe's order"
        );
        i += 1;
    }
};

impl Probe {
    #[inline]
    pub const fn row(self) -> &'static ProbeRow {
        &TABLE[self as usize]
    }

    pub const fn name(self) -> &'static str {
        self.row().name
    }

    /// Every probe, in table order.
    pub fn all() -> impl Iterator<Item = Probe> {
        TABLE.iter().map(|r| r.probe)
    }

    /// The probe named `name`.
    pub fn parse(name: &str) -> Option<Probe> {
        TABLE.iter().find(|r| r.name == name).map(|r| r.probe)
    }
}

/// One counter per probe: how often each branch was taken. A model part's own counts are part
/// of its state; the kernel adds them up ([`Probes::add`]) when the run ends.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Probes([u64; PROBE_COUNT]);

impl Default for Probes {
    fn default() -> Probes {
        Probes([0; PROBE_COUNT])
    }
}

impl Probes {
    /// Counts one pass through `probe`'s branch.
    #[inline(always)]
    pub fn hit(&mut self, probe: Probe) {
        self.0[probe as usize] += 1;
    }

    #[inline]
    pub fn get(&self, probe: Probe) -> u64 {
        self.0[probe as usize]
    }

    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &Probes) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += b;
        }
    }

    /// The counts in table order.
    pub fn counts(&self) -> &[u64; PROBE_COUNT] {
        &self.0
    }

    /// Counts read back in table order (a seed's record); `None` unless there is one per probe.
    pub fn from_counts(counts: &[u64]) -> Option<Probes> {
        <[u64; PROBE_COUNT]>::try_from(counts).ok().map(Probes)
    }

    /// How many probes were reached at least once.
    pub fn reached(&self) -> usize {
        self.0.iter().filter(|n| **n > 0).count()
    }

    /// Each probe with its count, in table order.
    pub fn iter(&self) -> impl Iterator<Item = (Probe, u64)> + '_ {
        TABLE.iter().zip(self.0.iter()).map(|(r, n)| (r.probe, *n))
    }

    /// The probes never reached, in table order.
    pub fn unreached(&self) -> impl Iterator<Item = Probe> + '_ {
        self.iter().filter(|(_, n)| *n == 0).map(|(p, _)| p)
    }
}

/// Every probe by name with its count, in table order (`summary.json`'s `probes.counts`).
impl serde::Serialize for Probes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(PROBE_COUNT))?;
        for (p, n) in self.iter() {
            map.serialize_entry(p.name(), &n)?;
        }
        map.end()
    }
}

impl fmt::Debug for Probes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(
                self.iter()
                    .filter(|(_, n)| *n > 0)
                    .map(|(p, n)| (p.name(), n)),
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_probe_is_named_once_and_parses_back() {
        let mut names: Vec<&str> = TABLE.iter().map(|r| r.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), PROBE_COUNT, "two probes share a name");
        for p in Probe::all() {
            assert_eq!(Probe::parse(p.name()), Some(p));
            assert!(p.row().site.starts_with("src/") && !p.row().about.is_empty());
        }
    }

    #[test]
    fn counts_add_up_and_read_back() {
        let mut a = Probes::default();
        a.hit(Probe::QueueLeaseGranted);
        a.hit(Probe::QueueLeaseGranted);
        let mut b = Probes::default();
        b.hit(Probe::RelayIdle);
        b.add(&a);
        assert_eq!(b.get(Probe::QueueLeaseGranted), 2);
        assert_eq!(b.reached(), 2);
        assert_eq!(Probes::from_counts(b.counts()), Some(b.clone()));
        assert_eq!(Probes::from_counts(&[1, 2]), None);
        assert_eq!(b.unreached().count(), PROBE_COUNT - 2);
    }
}

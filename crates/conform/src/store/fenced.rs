//! The queue writes a lease holder makes, each fenced: heartbeat, ack, and a failed attempt's
//! retry, dead letter or cancel (the application's decision, handed in), refused with the reason
//! when the presented token is not the current one.
//! Does not: lease (`lease.rs`, `pgmq.rs`) or commit results (`effects.rs`).

use super::*;

impl Store {
    /// The fenced UPDATE every queue write goes through: it changes the row only if the job is
    /// leased under the presented token (any token with `no_fencing`). On refusal, records why.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn fenced_update(
        &mut self,
        now: i64,
        worker: u32,
        l: &Lease,
        op: &str,
        set: &str,
        extra: &[Val],
        live_only: bool,
    ) -> Result<bool> {
        let mut params: Vec<Val> = vec![l.job.into(), (l.fence as i64).into(), now.into()];
        params.extend_from_slice(extra);
        let fence = if self.cfg.no_fencing {
            ""
        } else {
            "AND fence = $2"
        };
        let live = if live_only {
            "AND lease_until_us >= $3"
        } else {
            ""
        };
        let sql = format!("UPDATE jobs SET {set} WHERE id = $1 AND state = 'leased' {fence} {live} AND CAST($2 AS BIGINT) IS NOT NULL AND CAST($3 AS BIGINT) IS NOT NULL");
        if self.db.exec(&sql, &params)? == 1 {
            return Ok(true);
        }
        let row = self.db.query(
            "SELECT state, fence FROM jobs WHERE id = $1",
            &[l.job.into()],
        )?;
        let (state, held) = (row[0][0].t().to_string(), row[0][1].i());
        let reason = if terminal(&state) {
            state
        } else if held != l.fence as i64 {
            "stale_fence".to_string()
        } else {
            // Leased under this token but expired (a heartbeat), or released: the model's
            // queue would have made it ready again.
            "ready".to_string()
        };
        self.hist(now, json!({"type": "rejected", "job": l.job, "worker": worker, "op": op, "presented": l.fence, "held": held, "reason": reason}))?;
        Ok(false)
    }

    pub fn heartbeat(&mut self, worker: u32, l: &Lease) -> Result<bool> {
        self.db.begin()?;
        let now = self.locked_now(l)?;
        let ok = if self.pgmq() {
            // set_vt(queue, msg_id, seconds): by message id, no token. The application's own row
            // follows pgmq's answer.
            let vt_s = self.cfg.lease_ms.div_ceil(1000) as i64;
            let row = self.db.query_opt(
                "SELECT (extract(epoch FROM vt - (SELECT t0 FROM run)) * 1000000)::bigint FROM pgmq.set_vt($1, $2::bigint, ($3::bigint)::integer)",
                &[PGMQ_QUEUE.into(), l.msg_id.into(), vt_s.into()],
            )?;
            match row {
                Some(r) => {
                    let until = r[0].i();
                    self.db.exec(
                        "UPDATE jobs SET lease_until_us = $2 WHERE id = $1",
                        &[l.job.into(), until.into()],
                    )?;
                    self.hist(now, json!({"type": "heartbeat", "job": l.job, "worker": worker, "fence": l.fence}))?;
                    true
                }
                None => {
                    self.pgmq_rejected(now, worker, l, "heartbeat")?;
                    false
                }
            }
        } else {
            let until = now + self.cfg.lease_ms as i64 * 1000;
            let ok = self.fenced_update(
                now,
                worker,
                l,
                "heartbeat",
                "lease_until_us = $4",
                &[until.into()],
                true,
            )?;
            if ok {
                self.hist(
                    now,
                    json!({"type": "heartbeat", "job": l.job, "worker": worker, "fence": l.fence}),
                )?;
            }
            ok
        };
        self.db.commit()?;
        Ok(ok)
    }

    pub fn ack(&mut self, worker: u32, l: &Lease) -> Result<bool> {
        self.db.begin()?;
        let now = self.locked_now(l)?;
        let ok = if self.pgmq() {
            let deleted = self.db.query(
                "SELECT pgmq.delete($1, $2::bigint)::int",
                &[PGMQ_QUEUE.into(), l.msg_id.into()],
            )?[0][0]
                .i()
                == 1;
            if deleted {
                self.db.exec(
                    "UPDATE jobs SET state = 'acked' WHERE id = $1",
                    &[l.job.into()],
                )?;
                self.hist(
                    now,
                    json!({"type": "acked", "job": l.job, "worker": worker, "fence": l.fence}),
                )?;
            } else {
                self.pgmq_rejected(now, worker, l, "ack")?;
            }
            deleted
        } else {
            let ok = self.fenced_update(now, worker, l, "ack", "state = 'acked'", &[], false)?;
            if ok {
                self.hist(
                    now,
                    json!({"type": "acked", "job": l.job, "worker": worker, "fence": l.fence}),
                )?;
            }
            ok
        };
        self.db.commit()?;
        Ok(ok)
    }

    pub(super) fn dead_letter_row(
        &mut self,
        now: i64,
        job: i64,
        worker: Option<u32>,
        fence: Option<u64>,
        attempts: i64,
        reason: &str,
    ) -> Result<()> {
        self.db.exec(
            "UPDATE jobs SET state = 'dead_lettered' WHERE id = $1",
            &[job.into()],
        )?;
        self.db.exec(
            "INSERT INTO dlq (job, reason, at_us) VALUES ($1, $2, $3)",
            &[job.into(), reason.into(), now.into()],
        )?;
        self.hist(now, json!({"type": "dead_lettered", "job": job, "worker": worker, "fence": fence, "attempts": attempts, "reason": reason}))
    }

    /// A failed attempt: the retry policy decides (with the store's clock for the deadline), the
    /// queue applies the decision if the token still holds.
    pub fn fail(
        &mut self,
        worker: u32,
        l: &Lease,
        error: ErrorKind,
        jitter_draw: f64,
    ) -> Result<()> {
        self.db.begin()?;
        let now = self.locked_now(l)?;
        let deadline = self.db.query(
            "SELECT deadline_us FROM jobs WHERE id = $1",
            &[l.job.into()],
        )?[0][0]
            .i();
        let error = if now > deadline && classify(error) == ErrorClass::Transient {
            ErrorKind::DeadlineExceeded
        } else {
            error
        };
        self.hist(now, json!({"type": "attempt_failed", "job": l.job, "worker": worker, "fence": l.fence, "error": error.name()}))?;
        match self.cfg.policy.decide(error, l.attempt, jitter_draw) {
            Decision::Retry { delay_ms } => {
                let visible = now + delay_ms as i64 * 1000;
                if self.pgmq() {
                    let vt_s = delay_ms.div_ceil(1000) as i64;
                    let row = self.db.query_opt(
                        "SELECT (extract(epoch FROM vt - (SELECT t0 FROM run)) * 1000000)::bigint FROM pgmq.set_vt($1, $2::bigint, ($3::bigint)::integer)",
                        &[PGMQ_QUEUE.into(), l.msg_id.into(), vt_s.into()],
                    )?;
                    match row {
                        Some(_) => {
                            // What the worker asked for (in pgmq's whole seconds), as the
                            // format wants; pgmq's own `vt` counts from its clock at set_vt, a
                            // fraction of a millisecond later.
                            let asked = now + vt_s * 1_000_000;
                            self.db.exec(
                                "UPDATE jobs SET state = 'queued', visible_us = $2 WHERE id = $1",
                                &[l.job.into(), asked.into()],
                            )?;
                            self.hist(now, json!({"type": "retry_scheduled", "job": l.job, "worker": worker, "fence": l.fence, "attempt": l.attempt, "visible_at": asked}))?;
                        }
                        None => self.pgmq_rejected(now, worker, l, "retry")?,
                    }
                } else if self.fenced_update(
                    now,
                    worker,
                    l,
                    "retry",
                    "state = 'queued', visible_us = $4",
                    &[visible.into()],
                    false,
                )? {
                    self.hist(now, json!({"type": "retry_scheduled", "job": l.job, "worker": worker, "fence": l.fence, "attempt": l.attempt, "visible_at": visible}))?;
                }
            }
            Decision::DeadLetter(reason) => {
                let reason = match reason {
                    durasim::model::dead_letter::DlqReason::PermanentError => "permanent_error",
                    durasim::model::dead_letter::DlqReason::MaxAttemptsExceeded => {
                        "max_attempts_exceeded"
                    }
                };
                if self.pgmq() {
                    let archived = self.db.query(
                        "SELECT pgmq.archive($1, $2::bigint)::int",
                        &[PGMQ_QUEUE.into(), l.msg_id.into()],
                    )?[0][0]
                        .i()
                        == 1;
                    if archived {
                        self.dead_letter_row(
                            now,
                            l.job as i64,
                            Some(worker),
                            Some(l.fence),
                            l.attempt as i64,
                            reason,
                        )?;
                    } else {
                        self.pgmq_rejected(now, worker, l, "dead_letter")?;
                    }
                } else if self.fenced_update(
                    now,
                    worker,
                    l,
                    "dead_letter",
                    "state = state",
                    &[],
                    false,
                )? {
                    self.dead_letter_row(
                        now,
                        l.job as i64,
                        Some(worker),
                        Some(l.fence),
                        l.attempt as i64,
                        reason,
                    )?;
                }
            }
            Decision::Cancel => {
                let done = if self.pgmq() {
                    let deleted = self.db.query(
                        "SELECT pgmq.delete($1, $2::bigint)::int",
                        &[PGMQ_QUEUE.into(), l.msg_id.into()],
                    )?[0][0]
                        .i()
                        == 1;
                    if !deleted {
                        self.pgmq_rejected(now, worker, l, "cancel")?;
                    }
                    deleted
                } else {
                    self.fenced_update(now, worker, l, "cancel", "state = 'cancelled'", &[], false)?
                };
                if done {
                    self.db.exec(
                        "UPDATE jobs SET state = 'cancelled' WHERE id = $1",
                        &[l.job.into()],
                    )?;
                    self.hist(now, json!({"type": "cancelled", "job": l.job, "worker": worker, "fence": l.fence}))?;
                }
            }
        }
        self.db.commit()
    }
}

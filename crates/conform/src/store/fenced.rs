//! The queue writes a lease holder makes, each fenced: heartbeat, ack, and a failed attempt's
//! retry, dead letter or cancel (the application's decision, handed in), refused with the reason
//! when the presented token is not the current one. Each goes through [`Store::fenced_write`]:
//! pgmq's call by message id, or the fenced UPDATE of the store's own `jobs` row.
//! Does not: lease (`lease.rs`, `pgmq.rs`) or commit results (`effects.rs`).

use super::*;

/// pgmq's side of a write under a lease, a call by message id: pgmq has no token (the message
/// is the lease), and a call on a message that is gone (deleted, archived) is the refusal.
#[derive(Clone, Copy)]
enum PgmqCall {
    /// `set_vt(queue, msg_id, seconds)`: the message stays hidden that long from now.
    SetVt {
        seconds: i64,
    },
    Delete,
    Archive,
}

/// pgmq's `set_vt`, answering the message's new visibility time in µs since the run's start.
const SET_VT: &str = "SELECT (extract(epoch FROM vt - (SELECT t0 FROM run)) * 1000000)::bigint FROM pgmq.set_vt($1, $2::bigint, ($3::bigint)::integer)";

/// One write under a lease, as either store takes it.
struct Write {
    /// The operation's name in a `rejected` record.
    op: &'static str,
    pgmq: PgmqCall,
    /// The store's own table: the fenced UPDATE's `SET`, with its parameters from `$4` on.
    set: &'static str,
    extra: Vec<Val>,
    /// The lease must also still be live (a heartbeat does not revive an expired one).
    live_only: bool,
}

/// A write under a lease that took effect.
#[derive(Clone, Copy)]
enum Written {
    /// The fenced UPDATE changed the store's own row.
    Fenced,
    /// pgmq's call found the message; after `set_vt`, the visibility time pgmq answered (µs
    /// since the run's start). The application's own row is the caller's to follow.
    Pgmq { vt_us: Option<i64> },
}

impl Store {
    /// The fenced UPDATE every write on the store's own table goes through: it changes the row
    /// only if the job is leased under the presented token (any token with `no_fencing`). On
    /// refusal, records why.
    fn fenced_update(&mut self, now: i64, worker: u32, l: &Lease, w: &Write) -> Result<bool> {
        let mut params: Vec<Val> = vec![l.job.into(), (l.fence as i64).into(), now.into()];
        params.extend_from_slice(&w.extra);
        let fence = if self.cfg.bugs.contains(Bug::NoFencing) {
            ""
        } else {
            "AND fence = $2"
        };
        let live = if w.live_only {
            "AND lease_until_us >= $3"
        } else {
            ""
        };
        let set = w.set;
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
        self.hist(now, json!({"type": "rejected", "job": l.job, "worker": worker, "op": w.op, "presented": l.fence, "held": held, "reason": reason}))?;
        Ok(false)
    }

    /// One write under lease `l` (inside the caller's transaction): on pgmq its call by
    /// message id, on the store's own table the fenced UPDATE. A refusal is recorded, with why,
    /// and answered `None`.
    fn fenced_write(
        &mut self,
        now: i64,
        worker: u32,
        l: &Lease,
        w: &Write,
    ) -> Result<Option<Written>> {
        if !self.pgmq() {
            let ok = self.fenced_update(now, worker, l, w)?;
            return Ok(ok.then_some(Written::Fenced));
        }
        let written = match w.pgmq {
            PgmqCall::SetVt { seconds } => {
                let args = [PGMQ_QUEUE.into(), l.msg_id.into(), seconds.into()];
                let row = self.db.query_opt(SET_VT, &args)?;
                row.map(|r| Written::Pgmq {
                    vt_us: Some(r[0].i()),
                })
            }
            PgmqCall::Delete | PgmqCall::Archive => {
                let call = if matches!(w.pgmq, PgmqCall::Delete) {
                    "SELECT pgmq.delete($1, $2::bigint)::int"
                } else {
                    "SELECT pgmq.archive($1, $2::bigint)::int"
                };
                let args = [PGMQ_QUEUE.into(), l.msg_id.into()];
                let found = self.db.query(call, &args)?[0][0].i() == 1;
                found.then_some(Written::Pgmq { vt_us: None })
            }
        };
        if written.is_none() {
            self.pgmq_rejected(now, worker, l, w.op)?;
        }
        Ok(written)
    }

    /// A holder's write that needs no decision (heartbeat, ack), one transaction: the store's
    /// clock under the job's lock, the write, on pgmq the same change on the application's own
    /// row (`pgmq_set`, with pgmq's answered `vt` as `$2` after `set_vt`: pgmq's calls are by
    /// message id, no token, and the row follows pgmq's answer), and the record `kind`.
    fn holder_write(
        &mut self,
        worker: u32,
        l: &Lease,
        kind: &str,
        pgmq_set: &str,
        write: impl FnOnce(i64) -> Write,
    ) -> Result<bool> {
        self.db.begin()?;
        let now = self.locked_now(l)?;
        let written = self.fenced_write(now, worker, l, &write(now))?;
        if let Some(Written::Pgmq { vt_us }) = written {
            let mut params: Vec<Val> = vec![l.job.into()];
            params.extend(vt_us.map(Val::from));
            self.db.exec(
                &format!("UPDATE jobs SET {pgmq_set} WHERE id = $1"),
                &params,
            )?;
        }
        if written.is_some() {
            self.hist(
                now,
                json!({"type": kind, "job": l.job, "worker": worker, "fence": l.fence}),
            )?;
        }
        self.db.commit()?;
        Ok(written.is_some())
    }

    pub fn heartbeat(&mut self, worker: u32, l: &Lease) -> Result<bool> {
        let lease_ms = self.cfg.lease_ms;
        self.holder_write(worker, l, "heartbeat", "lease_until_us = $2", |now| Write {
            op: "heartbeat",
            pgmq: PgmqCall::SetVt {
                seconds: lease_ms.div_ceil(1000) as i64,
            },
            set: "lease_until_us = $4",
            extra: vec![(now + lease_ms as i64 * 1000).into()],
            live_only: true,
        })
    }

    pub fn ack(&mut self, worker: u32, l: &Lease) -> Result<bool> {
        self.holder_write(worker, l, "acked", "state = 'acked'", |_| Write {
            op: "ack",
            pgmq: PgmqCall::Delete,
            set: "state = 'acked'",
            extra: vec![],
            live_only: false,
        })
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

    /// Ends `job` as cancelled (its deadline passed): the row and its record. `worker` and
    /// `fence` are the holder's when a worker's failed attempt cancels it, none when a lease
    /// finds the job past its deadline.
    pub(super) fn cancelled_row(
        &mut self,
        now: i64,
        job: i64,
        worker: Option<u32>,
        fence: Option<u64>,
    ) -> Result<()> {
        self.db.exec(
            "UPDATE jobs SET state = 'cancelled' WHERE id = $1",
            &[job.into()],
        )?;
        self.hist(
            now,
            json!({"type": "cancelled", "job": job, "worker": worker, "fence": fence}),
        )
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
                let seconds = delay_ms.div_ceil(1000) as i64;
                let write = Write {
                    op: "retry",
                    pgmq: PgmqCall::SetVt { seconds },
                    set: "state = 'queued', visible_us = $4",
                    extra: vec![visible.into()],
                    live_only: false,
                };
                if let Some(written) = self.fenced_write(now, worker, l, &write)? {
                    let visible_at = match written {
                        Written::Fenced => visible,
                        Written::Pgmq { .. } => {
                            // What the worker asked for (in pgmq's whole seconds), as the
                            // format wants; pgmq's own `vt` counts from its clock at set_vt, a
                            // fraction of a millisecond later.
                            let asked = now + seconds * 1_000_000;
                            self.db.exec(
                                "UPDATE jobs SET state = 'queued', visible_us = $2 WHERE id = $1",
                                &[l.job.into(), asked.into()],
                            )?;
                            asked
                        }
                    };
                    self.hist(now, json!({"type": "retry_scheduled", "job": l.job, "worker": worker, "fence": l.fence, "attempt": l.attempt, "visible_at": visible_at}))?;
                }
            }
            Decision::DeadLetter(reason) => {
                let reason = match reason {
                    durasim::model::dead_letter::DlqReason::PermanentError => "permanent_error",
                    durasim::model::dead_letter::DlqReason::MaxAttemptsExceeded => {
                        "max_attempts_exceeded"
                    }
                };
                let write = Write {
                    op: "dead_letter",
                    pgmq: PgmqCall::Archive,
                    set: "state = state",
                    extra: vec![],
                    live_only: false,
                };
                if self.fenced_write(now, worker, l, &write)?.is_some() {
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
                let write = Write {
                    op: "cancel",
                    pgmq: PgmqCall::Delete,
                    set: "state = 'cancelled'",
                    extra: vec![],
                    live_only: false,
                };
                if self.fenced_write(now, worker, l, &write)?.is_some() {
                    self.cancelled_row(now, l.job as i64, Some(worker), Some(l.fence))?;
                }
            }
        }
        self.db.commit()
    }
}

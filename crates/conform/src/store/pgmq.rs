//! pgmq, a real queue no one here wrote: `read` with a visibility timeout is the lease and its
//! `read_ct` the attempt and the token; a refused write is recorded with pgmq's reason.
//! (`set_vt`, `delete`, `archive` and `send` are the pgmq branches of `fenced.rs` and
//! `intake.rs`.)
//! Does not: lease on the store's own table (`lease.rs`).

use super::*;

impl Store {
    /// pgmq: `read(queue, vt, 1)` is the lease; `read_ct` is the attempt and the only token there
    /// is. The application's own checks (deadline, attempts) run in the same transaction.
    pub(super) fn lease_pgmq(&mut self, worker: u32) -> Result<Option<Lease>> {
        self.db.begin()?;
        let vt_s = self.cfg.lease_ms.div_ceil(1000) as i64;
        loop {
            let row = self.db.query_opt(
                "SELECT msg_id, read_ct::bigint, (extract(epoch FROM vt - (SELECT t0 FROM run)) * 1000000)::bigint, (message->>'job')::bigint
                 FROM pgmq.read($1, ($2::bigint)::integer, 1)",
                &[PGMQ_QUEUE.into(), vt_s.into()],
            )?;
            let Some(row) = row else {
                self.db.commit()?;
                return Ok(None);
            };
            let (msg, read_ct, vt, id) = (row[0].i(), row[1].i(), row[2].i(), row[3].i());
            // The message's row lock (taken by `read`), then the job's, then the clock.
            let j = self.db.query(
                "SELECT state, fence, deadline_us, key, payload, invalid, visible_us FROM jobs WHERE id = $1 FOR UPDATE",
                &[id.into()],
            )?;
            let now = self.db.now_us()?;
            // The lease began when pgmq read the message (its `vt` is that moment + the
            // timeout), not when this transaction next looked at the clock.
            let granted = (vt - vt_s * 1_000_000).min(now);
            let j = j
                .first()
                .ok_or_else(|| anyhow!("pgmq message {msg} names job {id}, which is not in jobs"))?
                .clone();
            if j[0].t() == "leased" {
                // Read again while the application still counts it leased: the visibility
                // timeout ran out, at the latest when pgmq read it.
                self.hist(
                    granted,
                    json!({"type": "lease_expired", "job": id, "fence": j[1].i()}),
                )?;
            }
            if now > j[2].i() {
                self.db.query(
                    "SELECT pgmq.delete($1, $2::bigint)",
                    &[PGMQ_QUEUE.into(), msg.into()],
                )?;
                self.cancelled_row(now, id, None, None)?;
                continue;
            }
            if read_ct > self.cfg.max_attempts as i64 {
                self.db.query(
                    "SELECT pgmq.archive($1, $2::bigint)",
                    &[PGMQ_QUEUE.into(), msg.into()],
                )?;
                self.dead_letter_row(now, id, None, None, read_ct - 1, "max_attempts_exceeded")?;
                continue;
            }
            self.db.exec(
                "UPDATE jobs SET state = 'leased', fence = $2, attempt = $2, lease_until_us = $3 WHERE id = $1",
                &[id.into(), read_ct.into(), vt.into()],
            )?;
            self.hist(granted, json!({"type": "leased", "job": id, "worker": worker, "fence": read_ct, "attempt": read_ct, "visible_at": j[6].i()}))?;
            self.db.commit()?;
            return Ok(Some(Lease {
                job: id as u32,
                fence: read_ct as u64,
                attempt: read_ct as u32,
                key: j[3].t().to_string(),
                payload: j[4].t().to_string(),
                invalid: j[5].i() != 0,
                leased_at_us: now,
                msg_id: Some(msg),
            }));
        }
    }

    /// pgmq refused (the message is gone: deleted or archived); the reason is the job's state
    /// in the application's own table.
    pub(super) fn pgmq_rejected(
        &mut self,
        now: i64,
        worker: u32,
        l: &Lease,
        op: &str,
    ) -> Result<()> {
        let row = self.db.query(
            "SELECT fence, state FROM jobs WHERE id = $1",
            &[l.job.into()],
        )?;
        let (held, state) = (row[0][0].i(), row[0][1].t().to_string());
        let reason = if state == "queued" {
            "ready".to_string()
        } else {
            state
        };
        self.hist(now, json!({"type": "rejected", "job": l.job, "worker": worker, "op": op, "presented": l.fence, "held": held, "reason": reason}))
    }
}

//! Leasing on the store's own `jobs` table (SQLite and PostgreSQL): the next ready job, or one
//! whose lease ran out, with `FOR UPDATE SKIP LOCKED` on PostgreSQL; deadlines and attempts
//! checked on the way (cancel, dead-letter), a new fencing token per lease.
//! Does not: lease on pgmq (`pgmq.rs`) or write under a lease (`fenced.rs`).

use super::*;

impl Store {
    /// `leaseNext`: cancels jobs past their deadline and dead-letters jobs out of attempts on
    /// the way, like the model, then leases the next ready job (if any).
    pub fn lease(&mut self, worker: u32) -> Result<Option<Lease>> {
        // A read first, outside any transaction: an idle worker polling must not take
        // SQLite's write lock (or open a PostgreSQL transaction) just to find nothing.
        let probe = self.db.now_us()?;
        let ready = if self.pgmq() {
            self.db.query_opt(
                &format!("SELECT 1 FROM pgmq.q_{PGMQ_QUEUE} WHERE vt <= clock_timestamp() LIMIT 1"),
                &[],
            )?
        } else {
            self.db.query_opt(
                "SELECT 1 FROM jobs WHERE (state = 'queued' AND visible_us <= $1) OR (state = 'leased' AND lease_until_us < $1) LIMIT 1",
                &[probe.into()],
            )?
        };
        if ready.is_none() {
            return Ok(None);
        }
        if self.pgmq() {
            return self.lease_pgmq(worker);
        }
        self.db.begin()?;
        let result = self.lease_own(worker);
        match result {
            Ok(l) => {
                self.db.commit()?;
                Ok(l)
            }
            Err(e) => {
                let _ = self.db.rollback();
                Err(e)
            }
        }
    }

    pub(super) fn lease_own(&mut self, worker: u32) -> Result<Option<Lease>> {
        let lock = if self.pg() {
            "FOR UPDATE SKIP LOCKED"
        } else {
            ""
        };
        let sql = format!(
            "SELECT id, state, lease_until_us, fence, attempt, deadline_us, visible_us, key, payload, invalid FROM jobs
             WHERE (state = 'queued' AND visible_us <= $1) OR (state = 'leased' AND lease_until_us < $1)
             ORDER BY CASE WHEN state = 'leased' THEN lease_until_us ELSE visible_us END, id LIMIT 1 {lock}"
        );
        loop {
            let probe = self.db.now_us()?;
            let Some(row) = self.db.query_opt(&sql, &[probe.into()])? else {
                return Ok(None);
            };
            let now = self.db.now_us()?;
            let (id, fence, attempt, deadline) = (row[0].i(), row[3].i(), row[4].i(), row[5].i());
            if row[1].t() == "leased" {
                self.hist(
                    now,
                    json!({"type": "lease_expired", "job": id, "fence": fence}),
                )?;
            }
            if now > deadline {
                self.cancelled_row(now, id, None, None)?;
                continue;
            }
            if attempt >= self.cfg.max_attempts as i64 {
                self.dead_letter_row(now, id, None, None, attempt, "max_attempts_exceeded")?;
                continue;
            }
            let fence = self.next("fence")?;
            let until = now + self.cfg.lease_ms as i64 * 1000;
            self.db.exec(
                "UPDATE jobs SET state = 'leased', fence = $2, attempt = attempt + 1, lease_until_us = $3 WHERE id = $1",
                &[id.into(), fence.into(), until.into()],
            )?;
            self.hist(now, json!({"type": "leased", "job": id, "worker": worker, "fence": fence, "attempt": attempt + 1, "visible_at": row[6].i()}))?;
            return Ok(Some(Lease {
                job: id as u32,
                fence: fence as u64,
                attempt: attempt as u32 + 1,
                key: row[7].t().to_string(),
                payload: row[8].t().to_string(),
                invalid: row[9].i() != 0,
                leased_at_us: now,
                msg_id: None,
            }));
        }
    }
}

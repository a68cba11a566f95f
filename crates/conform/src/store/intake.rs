//! Enqueue and operator reprocess: the idempotency key as a UNIQUE column (the same payload
//! deduplicates, another conflicts), a reprocess filed as a new version of a dead job, each with
//! its history record in the same transaction; on pgmq the job's message is sent there too; and
//! the job an operator action picks (a fixed job, a reprocess chain's newest, a target).
//! Does not: lease or finish jobs (`lease.rs`, `fenced.rs`).

use super::*;
use durasim::scenario::OperatorTarget;

impl Store {
    /// The harness is the only producer, so job ids are dense in enqueue order.
    pub fn enqueue(&mut self, r: &Request, from: Option<u32>) -> Result<Enqueued> {
        self.db.begin()?;
        let existing = self.db.query_opt(
            "SELECT id, payload, tenant FROM jobs WHERE key = $1",
            &[r.key.as_str().into()],
        )?;
        let now = self.db.now_us()?;
        let outcome = match existing {
            Some(row) => {
                let id = row[0].i() as u32;
                if row[1].t() == r.payload {
                    self.hist(now, json!({"type": "enqueue_deduped", "tenant": r.tenant, "key": r.key, "operation": r.operation, "content": r.content, "payload": r.payload, "existing": id}))?;
                    Enqueued::Deduped(id)
                } else {
                    self.hist(now, json!({"type": "enqueue_conflict", "tenant": r.tenant, "key": r.key, "operation": r.operation, "content": r.content, "payload": r.payload, "existing": id, "existing_payload": row[1].t()}))?;
                    Enqueued::Conflict(id)
                }
            }
            None => {
                let id = self.db.query("SELECT count(*) FROM jobs", &[])?[0][0].i();
                let deadline = now + self.cfg.deadline_ms as i64 * 1000;
                let msg_id = if self.pgmq() {
                    let row = self.db.query(
                        "SELECT pgmq.send($1, jsonb_build_object('job', $2::bigint))",
                        &[PGMQ_QUEUE.into(), id.into()],
                    )?;
                    Some(row[0][0].i())
                } else {
                    None
                };
                self.db.exec(
                    "INSERT INTO jobs (id, tenant, document, version, key, payload, invalid, state, created_us, visible_us, deadline_us, msg_id, operation, content)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, 'queued', $8, $8, $9, $10, $11, $12)",
                    &[
                        id.into(),
                        r.tenant.as_str().into(),
                        r.document.as_str().into(),
                        r.version.into(),
                        r.key.as_str().into(),
                        r.payload.as_str().into(),
                        (r.invalid as i64).into(),
                        now.into(),
                        deadline.into(),
                        msg_id.into(),
                        r.operation.as_str().into(),
                        r.content.as_str().into(),
                    ],
                )?;
                self.hist(now, json!({"type": "enqueued", "job": id, "tenant": r.tenant, "key": r.key, "operation": r.operation, "content": r.content, "payload": r.payload, "visible_at": now, "reprocess_of": from}))?;
                Enqueued::Created(id as u32)
            }
        };
        self.db.commit()?;
        Ok(outcome)
    }

    /// An operator's reprocess of a dead-lettered job: a new job, version + 1, and the audit
    /// entry, in one transaction.
    /// The job an operator action acts on, read from the store at the moment it runs, as the
    /// simulator picks it (`sim::operator`): a fixed `job`; with `follow`, the newest job of that
    /// job's reprocess chain (the `audit` rows, old → new); `target = "oldest_dead_lettered"`, the
    /// oldest DLQ entry not yet reprocessed (by the time it entered the DLQ); `target =
    /// "cancelled"`, the first job cancelled so far (the first `cancelled` record of the
    /// store's history). `None`: nothing to pick (refused as `no_such_job`, as simulated).
    pub fn operator_pick(
        &mut self,
        job: Option<u32>,
        target: Option<OperatorTarget>,
        follow: bool,
    ) -> Result<Option<u32>> {
        Ok(match (job, target) {
            (Some(job), _) if follow => {
                let mut at = job;
                while let Some(r) = self.db.query_opt(
                    "SELECT new_job FROM audit WHERE old_job = $1",
                    &[at.into()],
                )? {
                    at = r[0].i() as u32;
                }
                Some(at)
            }
            (Some(job), _) => Some(job),
            (None, Some(OperatorTarget::OldestDeadLettered)) => self
                .db
                .query_opt(
                    "SELECT job FROM dlq WHERE job NOT IN (SELECT old_job FROM audit) ORDER BY at_us, job LIMIT 1",
                    &[],
                )?
                .map(|r| r[0].i() as u32),
            (None, Some(OperatorTarget::Cancelled)) => {
                let rows = self.db.query(
                    "SELECT body FROM history WHERE body LIKE '%\"cancelled\"%' ORDER BY at_us, seq",
                    &[],
                )?;
                rows.iter()
                    .filter_map(|r| serde_json::from_str::<serde_json::Value>(r[0].t()).ok())
                    .find(|b| b["type"] == "cancelled")
                    .and_then(|b| b["job"].as_u64())
                    .map(|j| j as u32)
            }
            (None, None) => None,
        })
    }

    /// An operator action that found no job to act on (its target picked none).
    pub fn refuse_unpicked(&mut self, operator: Option<&str>) -> Result<()> {
        self.note(
            json!({"type": "reprocess_refused", "operator": operator, "reason": "no_such_job"}),
        )
    }

    pub fn reprocess(
        &mut self,
        old: u32,
        operator: Option<&str>,
        key_of: &dyn Fn(&str, &str, u32) -> String,
    ) -> Result<()> {
        let row = self.db.query_opt(
            "SELECT state, tenant, document, version, payload, invalid, operation, content FROM jobs WHERE id = $1",
            &[old.into()],
        )?;
        let refuse = |s: &mut Store, reason: &str| -> Result<()> {
            s.note(json!({"type": "reprocess_refused", "job": old, "operator": operator, "reason": reason}))
        };
        let Some(row) = row else {
            return refuse(self, "no_such_job");
        };
        let Some(operator) = operator.filter(|o| !o.trim().is_empty()) else {
            return refuse(self, "missing_operator");
        };
        match row[0].t() {
            "dead_lettered" => {}
            "cancelled" => return refuse(self, "cancelled_is_terminal"),
            _ => return refuse(self, "not_dead_lettered"),
        }
        let (tenant, document, version) = (
            row[1].t().to_string(),
            row[2].t().to_string(),
            row[3].i() as u32 + 1,
        );
        let request = Request {
            at_ms: 0,
            key: key_of(&tenant, &document, version),
            tenant,
            document,
            version,
            operation: row[6].t().to_string(),
            content: row[7].t().to_string(),
            payload: row[4].t().to_string(),
            invalid: row[5].i() != 0,
        };
        match self.enqueue(&request, Some(old))? {
            Enqueued::Created(new) => {
                self.db.begin()?;
                let now = self.db.now_us()?;
                self.db.exec(
                    "INSERT INTO audit (old_job, new_job, operator, at_us) VALUES ($1, $2, $3, $4)",
                    &[old.into(), new.into(), operator.into(), now.into()],
                )?;
                self.hist(now, json!({"type": "reprocessed", "old_job": old, "new_job": new, "operator": operator}))?;
                self.db.commit()
            }
            _ => refuse(self, "version_exists"),
        }
    }
}

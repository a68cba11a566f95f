//! The metrics' CSV files: `jobs.csv`, `retries.csv`, `tenants.csv`, `outbox.csv`, `dlq.csv`,
//! `depth.csv`,
//! each written to any writer from what the metrics counted (`attempts.csv` streams from
//! `metrics.rs` as attempts end).
//! Does not: open files (the shell hands over the writers) or count.

use super::Metrics;
use crate::base::ids::{SimTime, TenantId};
use serde::Serialize;
use std::io::Write;

impl Metrics {
    /// Writes `jobs.csv`: one row per job, in job order.
    pub fn write_jobs_csv(
        &self,
        out: impl Write,
        names: &crate::vocab::key::KeyNames,
    ) -> Result<(), csv::Error> {
        #[derive(Serialize, Hash)]
        #[serde(rename_all = "camelCase")]
        struct Row<'a> {
            job: u32,
            tenant: &'a str,
            key: String,
            created_at_ms: SimTime,
            state: &'static str,
            terminal_at_ms: Option<SimTime>,
            attempts: u32,
            job_age_ms: Option<u64>,
            reprocessed_from: Option<u32>,
        }
        let mut w = csv::Writer::from_writer(out);
        for (i, r) in self.job_rows.iter().enumerate() {
            let Some(r) = r else { continue };
            w.serialize(Row {
                job: i as u32,
                tenant: names.tenants.name(r.tenant),
                key: names.key(&r.key),
                created_at_ms: r.created_at,
                state: r.terminal.map_or("unfinished", |t| t.0),
                terminal_at_ms: r.terminal.map(|t| t.1),
                attempts: r.attempts,
                job_age_ms: r.terminal.map(|t| t.1 - r.created_at),
                reprocessed_from: r.reprocessed_from.map(|j| j.0),
            })?;
        }
        w.flush()?;
        Ok(())
    }

    /// Writes `retries.csv`: `timeMs,retries` for every 100 ms of the run (the retries scheduled
    /// in [timeMs, timeMs + 100)).
    pub fn write_retries_csv(&self, out: impl Write) -> Result<(), csv::Error> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record(["timeMs", "retries"])?;
        let windows = (self.end_ms / 100 + 1).max(self.retries_per_100ms.len() as u64);
        for i in 0..windows {
            let n = self.retries_per_100ms.get(i as usize).copied().unwrap_or(0);
            w.write_record([(i * 100).to_string(), n.to_string()])?;
        }
        w.flush()?;
        Ok(())
    }

    /// Writes `tenants.csv`: one row per tenant with its outcomes, queueWaitMs and jobAgeMs.
    pub fn write_tenants_csv(
        &self,
        out: impl Write,
        names: &crate::vocab::key::KeyNames,
    ) -> Result<(), csv::Error> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record([
            "tenant",
            "enqueued",
            "acked",
            "deadLettered",
            "cancelled",
            "queueWaitMsP50",
            "queueWaitMsP95",
            "queueWaitMsP99",
            "queueWaitMsMax",
            "queueWaitMsMean",
            "jobAgeMsP50",
            "jobAgeMsP95",
            "jobAgeMsMax",
        ])?;
        for (i, t) in self.tenants.iter().enumerate() {
            if t.enqueued == 0 {
                continue;
            }
            let (q, a) = (t.queue_wait.stats(), t.job_age.stats());
            w.write_record([
                names.tenants.name(TenantId(i as u16)).to_string(),
                t.enqueued.to_string(),
                t.acked.to_string(),
                t.dead_lettered.to_string(),
                t.cancelled.to_string(),
                q.p50.to_string(),
                q.p95.to_string(),
                q.p99.to_string(),
                q.max.to_string(),
                q.mean.to_string(),
                a.p50.to_string(),
                a.p95.to_string(),
                a.max.to_string(),
            ])?;
        }
        w.flush()?;
        Ok(())
    }

    /// Writes `outbox.csv`: `timeMs,rows,bytes` at each depth sample.
    pub fn write_outbox_csv(&self, out: impl Write) -> Result<(), csv::Error> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record(["timeMs", "rows", "bytes"])?;
        for (t, rows) in &self.outbox_rows {
            let bytes = rows * self.outbox.bytes_per_row;
            w.write_record([t.to_string(), rows.to_string(), bytes.to_string()])?;
        }
        w.flush()?;
        Ok(())
    }

    /// Writes `dlq.csv`: `timeMs,size` at each depth sample, the jobs the dead-letter queue
    /// holds (dead-lettered and not evicted).
    pub fn write_dlq_csv(&self, out: impl Write) -> Result<(), csv::Error> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record(["timeMs", "size"])?;
        for (t, size) in &self.dlq_rows {
            w.write_record([t.to_string(), size.to_string()])?;
        }
        w.flush()?;
        Ok(())
    }

    /// Writes `depth.csv`: `timeMs,depth`.
    pub fn write_depth_csv(&self, out: impl Write) -> Result<(), csv::Error> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record(["timeMs", "depth"])?;
        for (t, d) in &self.depth {
            w.write_record([t.to_string(), d.to_string()])?;
        }
        w.flush()?;
        Ok(())
    }
}

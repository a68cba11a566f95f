//! durasim's own worker, relay and consumer, written with the Rust client as a team would write
//! theirs: the roles a run with programs plays in-process for every role not given on the
//! command line (`--worker`, `--relay`, `--consumer`), and the model the JavaScript and Python
//! reference programs (examples/workers/) follow line for line.
//!
//! Owns: the chapter's pipeline as program code: the worker's lease → infer (heartbeating) →
//! one transaction writing the result and its outbox event under the tenant's key (or finding
//! the key's result: dedupe, or conflict) → ack, and its three decisions on an error (retry
//! while attempts remain and the deadline has not passed, DLQ, cancel); the relay's scan →
//! publish → mark; the consumer's dedupe by event id in the transaction that applies the effect.
//! Does not: know the simulator (it sees only the protocol).

use super::{CallError, Client, Lease, Result};
use serde_json::json;

/// Runs the role durasim started the program in, until durasim goes away.
pub fn run(mut c: Client) -> Result<()> {
    match c.role() {
        "worker" => worker(&mut c),
        "relay" => relay(&mut c),
        _ => consumer(&mut c),
    }
}

/// The chapter's `buildIdempotencyKey`: tenant, document and version, always in that order.
pub fn key(lease: &Lease) -> String {
    format!("{}:{}:v{}", lease.tenant, lease.document, lease.version)
}

fn worker(c: &mut Client) -> Result<()> {
    loop {
        let job = c.lease()?;
        c.keep_alive(&job)?;
        let output = c.infer(&job);
        let output = match output {
            Ok(o) => o,
            Err(CallError::Failed { code, .. }) => {
                c.stop_keep_alive();
                decide(c, &job, &code)?;
                continue;
            }
            Err(e) => return Err(e),
        };
        let existing = commit(c, &job, &output)?;
        c.stop_keep_alive();
        let done = match existing {
            Some(payload) if payload != job.payload => {
                c.fail(&job, "payload_conflict", "permanent_error")
            }
            _ => c.ack(&job),
        };
        match done {
            Ok(()) | Err(CallError::Failed { .. }) => {}
            Err(e) => return Err(e),
        }
    }
}

/// The result and its event in one transaction; a key that has a result already gives that
/// result's payload instead. A lost race for the key (a unique violation) reads it again.
fn commit(c: &mut Client, job: &Lease, output: &str) -> Result<Option<String>> {
    let key = key(job);
    let mut tries = 0;
    loop {
        tries += 1;
        let done = c.transaction(|tx| {
            if let Some(row) = tx.get("results", json!(key))? {
                return Ok(Some(row["payload"].as_str().unwrap_or("").to_string()));
            }
            let row = json!({"key": key, "job": job.job, "output": output});
            let event = tx.insert("outbox", row)?["event"].clone();
            let result = json!({"key": key, "job": job.job, "payload": job.payload,
                                "output": output, "event": event});
            tx.insert("results", result)?;
            Ok(None)
        });
        match done {
            Err(CallError::Failed { code, .. })
                if tries < 3 && (code == "unique_violation" || code == "serialization_failure") => {
            }
            other => return other,
        }
    }
}

/// Every error gets exactly one of three outcomes.
fn decide(c: &mut Client, job: &Lease, error: &str) -> Result<()> {
    let transient = error == "provider_unavailable";
    let done = if transient && c.now() > job.deadline_at {
        c.cancel(job, "deadline_exceeded")
    } else if transient && job.attempt < c.config("max_attempts") {
        c.retry(job, error).map(|_| ())
    } else if transient {
        c.fail(job, error, "max_attempts_exceeded")
    } else {
        c.fail(job, error, "permanent_error")
    };
    match done {
        Err(CallError::Gone) => Err(CallError::Gone),
        _ => Ok(()),
    }
}

fn relay(c: &mut Client) -> Result<()> {
    let every = c.config("relay_interval_ms").max(1);
    loop {
        c.sleep(every)?;
        let rows = c.transaction(|tx| tx.scan("outbox", true))?;
        let mut sent = Vec::new();
        for row in &rows {
            let event = row["event"].as_u64().unwrap_or(0);
            match c.publish(event) {
                Ok(()) => sent.push(event),
                // The consumer died with it: the batch stays unmarked and goes out again.
                Err(CallError::Failed { .. }) => {
                    sent.clear();
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        if !sent.is_empty() {
            c.transaction(|tx| {
                for &e in &sent {
                    tx.mark_published(e)?;
                }
                Ok(())
            })?;
        }
    }
}

fn consumer(c: &mut Client) -> Result<()> {
    loop {
        let d = c.receive()?;
        c.transaction(|tx| {
            if tx.get("consumer_seen", json!(d.event))?.is_some() {
                return Ok(());
            }
            tx.insert("consumer_seen", json!({"event": d.event}))?;
            let effect = json!({"event": d.event, "key": d.key, "job": d.job, "output": d.output});
            tx.insert("effects", effect)?;
            Ok(())
        })?;
    }
}

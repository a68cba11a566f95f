//! The worker and relay processes the harness spawns (hidden subcommands of `durasim-conform`).
//!
//! Owns: the worker's lease → extract (with heartbeats; a slow first heartbeat sent late, a
//! pause right after it, both real sleeps of this process) → validate → commit → ack loop and the
//! relay's claim → publish → mark loop, each against its own connection, and the handshake with
//! the harness: a line on stdout announces a kill point or a stall, and the process then blocks
//! on stdin, so the harness's SIGKILL (or SIGSTOP) lands exactly there, never a little later.
//! Under `--kills random` no kill point is announced (the harness kills from outside, at moments
//! of its own); the BUSY / DONE / IDLE lines still tell it which job a worker holds.
//! Does not: record crashes (the harness does, it is the one that kills) or decide fates (the
//! plan does).

use crate::kills::KillMode;
use crate::plan::{self, KillPoint, RELAY_KILL_POINT};
use crate::spec::Spec;
use crate::store::{Committed, Lease, OutboxRow, Store};
use anyhow::Result;
use durasim::model::retry::ErrorKind;
use durasim::vocab::bugs::Bug;
use durasim::vocab::faults::{Held, Struck};
use serde_json::json;
use std::io::{BufRead, Write};
use std::time::Duration;

/// Tells the harness something and, for a kill or a stall, waits for its answer on stdin. A
/// killed process never reads the answer.
fn handshake(line: &str, wait: bool) {
    let mut out = std::io::stdout().lock();
    // A harness that went away ends us: nothing would judge our writes.
    if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
        std::process::exit(3);
    }
    drop(out);
    if wait {
        let mut answer = String::new();
        if std::io::stdin().lock().read_line(&mut answer).unwrap_or(0) == 0 {
            std::process::exit(3);
        }
    }
}

fn sleep_ms(ms: u64) {
    if ms > 0 {
        std::thread::sleep(Duration::from_millis(ms));
    }
}

/// How long an idle worker waits before asking again.
const POLL_MS: u64 = 3;

pub fn worker(spec: &Spec, slot: u32) -> Result<()> {
    let scenario = spec.scenario()?;
    let mut store = spec.open(&scenario)?;
    let forced = spec.forced();
    let naive = spec.bug(Bug::NaiveDualWrite);
    let mut idle_said = false;
    loop {
        let Some(lease) = store.lease(slot)? else {
            if !idle_said {
                handshake("IDLE", false);
                idle_said = true;
            }
            sleep_ms(POLL_MS);
            continue;
        };
        idle_said = false;
        handshake(&format!("BUSY {} {}", lease.job, lease.fence), false);
        let mut fate = plan::fate(
            &scenario,
            spec.seed,
            lease.job,
            lease.attempt,
            lease.invalid,
            &forced,
        );
        let leased_ms = (lease.leased_at_us / 1000).max(0) as u64;
        for (index, _) in plan::scripted_for(&scenario, lease.job, lease.attempt, leased_ms) {
            if store.claim_script(index)? {
                plan::apply_script(&scenario, index, &mut fate);
            }
        }
        plan::force(&mut fate, lease.job, lease.attempt, &forced);
        if spec.kill_mode == KillMode::Random {
            // The harness kills from outside, at moments of its own: no announced point.
            fate.kill = None;
        }
        if let Some(outage) = scenario.faults.outage {
            durasim::sim::faults::apply_outage(&outage, leased_ms, &mut fate.plan);
        }
        attempt(&mut store, spec, &scenario, slot, &lease, &fate, naive)?;
        handshake(&format!("DONE {} {}", lease.job, lease.fence), false);
    }
}

fn kill_here(point: KillPoint, l: &Lease, evidence: &str) {
    handshake(
        &format!("KILL {} {} {} {evidence}", point.name(), l.job, l.fence),
        true,
    );
}

/// The held faults a real worker performs (`attempt` below); a scenario with any other row of
/// `vocab::faults::HELD` is refused (`conform::args::unsupported`), not run with it left out.
pub const PERFORMED: [Held; 3] = [Held::Stall, Held::Pause, Held::SlowHeartbeat];

/// The delivery side's faults the real relay and consumer perform (`relay` below); a scenario
/// with any other row of `vocab::faults::STRUCK` is refused (`conform::args::unsupported`), not
/// run with it left out.
pub const PERFORMED_STRUCK: [Struck; 1] = [Struck::RelayCrash];

/// Records that held fault `h` strikes (`stall_began`, `pause_began`, `heartbeat_delayed`: the
/// record and its length field in µs, as `vocab::faults::HELD` names them).
fn held(store: &mut Store, h: Held, w: u32, l: &Lease, ms: u64) -> Result<()> {
    let spec = h.spec();
    let mut body = json!({"type": spec.record, "worker": w, "job": l.job, "fence": l.fence});
    body[spec.field] = json!(ms * 1000);
    store.note(body)
}

fn attempt(
    store: &mut Store,
    spec: &Spec,
    scenario: &durasim::scenario::Scenario,
    w: u32,
    l: &Lease,
    fate: &plan::Fate,
    naive: bool,
) -> Result<()> {
    let p = &fate.plan;
    if fate.kill == Some(KillPoint::AfterLease) {
        kill_here(KillPoint::AfterLease, l, "-");
    }
    let stall = p.lengths.get(Held::Stall);
    let stalled = stall.is_some();
    store.note(json!({"type": "extract_started", "job": l.job, "worker": w, "fence": l.fence, "stalled": stalled}))?;
    // Measured from after the record is written, so the recorded inference lies within the
    // records' own times (the checker's `recorded_values_match` holds it to that): measured from
    // before, the time the store took to write `extract_started` counted in it.
    let began = std::time::Instant::now();
    if let Some(stall_ms) = stall {
        held(store, Held::Stall, w, l, stall_ms)?;
        // A real pause: the harness stops this process (SIGSTOP) for stall_ms; no heartbeat
        // can be sent while it is stopped.
        handshake(&format!("STALL {stall_ms} {} {}", l.job, l.fence), true);
    } else {
        let kill_at = (fate.kill == Some(KillPoint::MidExtract))
            .then(|| ((p.extract_ms as f64 * fate.kill_fraction) as u64).max(1));
        let heartbeat_ms = scenario.queue.heartbeat_ms.max(1);
        // The held faults of the first heartbeat, as the model's worker takes them: a slow
        // heartbeat holds it back before it is sent, a pause comes right after it; once each.
        let mut slow = p.lengths.get(Held::SlowHeartbeat);
        let mut pause = p.lengths.get(Held::Pause);
        let mut done = 0;
        while done < p.extract_ms {
            let slice = (p.extract_ms - done).min(heartbeat_ms);
            if let Some(k) = kill_at.filter(|k| *k > done && *k <= done + slice) {
                sleep_ms(k - done);
                kill_here(KillPoint::MidExtract, l, "-");
            }
            sleep_ms(slice);
            done += slice;
            if done < p.extract_ms {
                if let Some(ms) = slow.take() {
                    // The heartbeat reaches the store `ms` late: its UPDATE is sent only now,
                    // so the store's clock at it is past the lease it should renew, and the
                    // store must refuse it (the fence, or the lease's end).
                    held(store, Held::SlowHeartbeat, w, l, ms)?;
                    sleep_ms(ms);
                }
                store.heartbeat(w, l)?;
                if let Some(ms) = pause.take() {
                    // The holder stops right after its renewal (a GC pause, a VM freeze), with
                    // no heartbeat: the store's lease runs out, another worker leases the job,
                    // and this one wakes up a zombie.
                    held(store, Held::Pause, w, l, ms)?;
                    sleep_ms(ms);
                }
            }
        }
        if kill_at.is_some() && p.extract_ms == 0 {
            kill_here(KillPoint::MidExtract, l, "-");
        }
    }
    store.note(json!({"type": "extract_done", "job": l.job, "worker": w, "fence": l.fence, "inference": began.elapsed().as_micros() as u64, "output": crate::store::hex(p.output as i64)}))?;
    if fate.kill == Some(KillPoint::AfterExtract) {
        kill_here(KillPoint::AfterExtract, l, "-");
    }
    sleep_ms(p.validate_ms);
    if let Some(error) = p.error {
        return store.fail(w, l, error, fate.jitter);
    }
    let (outcome, _) = store.commit_begin(w, l, p.output, !naive)?;
    if outcome == Committed::Fresh && fate.kill == Some(KillPoint::MidCommit) {
        // The INSERTs are in, the COMMIT is not sent: the store must roll them back.
        kill_here(KillPoint::MidCommit, l, &l.key);
    }
    store.commit_end()?;
    if outcome == Committed::Conflict {
        return store.fail(w, l, ErrorKind::PayloadConflict, fate.jitter);
    }
    if fate.kill == Some(KillPoint::AfterCommitBeforeAck) {
        // Naive dual write: this falls between the database write and the publish.
        kill_here(KillPoint::AfterCommitBeforeAck, l, "-");
    }
    if naive && outcome == Committed::Fresh {
        let id = store.naive_event()?;
        let row = OutboxRow {
            event: id,
            key: l.key.clone(),
            job: l.job as i64,
            output: p.output as i64,
        };
        store.deliver(&row, true, plan::review_ms(scenario, spec.seed, id))?;
    }
    store.ack(w, l)?;
    Ok(())
}

/// The relay: claims unpublished outbox rows, publishes each to the consumer (its own
/// connection and transaction: the broker), then marks them and commits. Killed between publish
/// and mark, its transaction rolls back and another relay (or its successor) publishes the rows
/// again; the consumer's dedupe absorbs the repeats.
pub fn relay(spec: &Spec, slot: u32, generation: u32) -> Result<()> {
    let scenario = spec.scenario()?;
    let mut outbox = spec.open(&scenario)?;
    let mut consumer = spec.open(&scenario)?;
    let interval = scenario.relay.interval_ms.max(1);
    let mut batch = 0u64;
    let relay_scripts: Vec<usize> = scenario
        .script
        .iter()
        .enumerate()
        .filter(|(_, e)| e.fault.struck() == Some(Struck::RelayCrash))
        .map(|(i, _)| i)
        .collect();
    loop {
        let rows = outbox.relay_claim(100)?;
        if rows.is_empty() {
            outbox.relay_release()?;
            sleep_ms(interval);
            continue;
        }
        batch += 1;
        for r in &rows {
            consumer.deliver(r, false, plan::review_ms(&scenario, spec.seed, r.event))?;
        }
        let now_ms = (crate::db::mono_us() - spec.t0_us).max(0) as u64 / 1000;
        let random = spec.kill_mode == KillMode::Random;
        let mut kill = !random && plan::relay_killed(&scenario, spec.seed, slot, generation, batch);
        for &i in &relay_scripts {
            if !kill && !random && now_ms >= scenario.script[i].at_ms && consumer.claim_script(i)? {
                kill = true;
            }
        }
        if kill {
            handshake(&format!("KILL {RELAY_KILL_POINT} {}", rows.len()), true);
        }
        outbox.relay_mark(&rows)?;
        sleep_ms(interval);
    }
}

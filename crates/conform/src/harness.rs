//! The harness: one run against a real store with real processes.
//!
//! Owns: spawning the worker and relay processes, the producer (enqueues at their planned
//! times), operator actions, the review clock, the kill handshake (a child announces its kill
//! point and blocks; the harness records the crash, sends SIGKILL to that pid, reaps it and
//! respawns it after `restart_ms`), or under `--kills random` a SIGKILL at a seeded moment with
//! no handshake (the crash recorded once the process's last lines are read: the job it last
//! reported holding, never a point), stalls (SIGSTOP for the stall, then SIGCONT), operator
//! actions and their targets, and deciding when the run has settled.
//! Does not: touch any table except through `store`, or judge anything.

use crate::db::mono_us;
use crate::kills::{Doing, KillMode, KillRates};
use crate::plan;
use crate::spec::Spec;
use crate::store::{Kind, Store};
use anyhow::{bail, Context, Result};
use durasim::scenario::Scenario;
use durasim::vocab::bugs::Bug;
use serde_json::json;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Role {
    Worker,
    Relay,
}

struct Proc {
    child: Child,
    stdin: ChildStdin,
    generation: u32,
    busy: Option<(u32, u64)>,
    stopped_until: Option<i64>,
    /// `--kills random`: when the harness kills it (µs since the run's start).
    kill_at: Option<i64>,
    /// Killed at random and reaped; its last lines are still being read (what it was doing is
    /// known at their end). `Stopped` when it was killed in a stall.
    killed: Option<Doing>,
    /// When the harness sent that SIGKILL (ms since the run's start).
    killed_at_ms: u64,
}

/// A line from a child, tagged with who sent it.
struct Msg {
    role: Role,
    slot: u32,
    generation: u32,
    line: Option<String>,
}

/// What a run did, beyond the history.
#[derive(Clone, Debug, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunFacts {
    pub worker_kills: BTreeMap<String, u64>,
    pub relay_kills: u64,
    pub stalls: u64,
    pub wall_s: f64,
    pub settled: bool,
    pub relays: u32,
    pub workers: u32,
    /// Keys whose result INSERT was in when the worker was killed before COMMIT.
    pub mid_commit_keys: Vec<String>,
    /// `cooperative` or `random` (`--kills`); under `random`, `worker_kills` counts what the
    /// worker was doing (`holding_a_job`, `stopped_in_a_stall`, `idle`), not a point.
    pub kill_mode: &'static str,
    /// `--kills random`: the mean time between kills of each worker and relay process (ms).
    pub kill_rates: Option<KillRates>,
    /// `--kills random`: every kill, in order.
    pub random_kills: Vec<RandomKill>,
    /// `--kills random`: where the worker kills landed, by the last step the store recorded
    /// for the attempt (`kills::landed`, filled from the history after the run).
    pub kills_landed: BTreeMap<String, u64>,
}

/// One kill of `--kills random`, as the harness knows it.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RandomKill {
    /// ms since the run's start (the harness's clock, when it sent SIGKILL).
    pub at_ms: u64,
    pub role: &'static str,
    pub slot: u32,
    /// Workers: `holding_a_job`, `stopped_in_a_stall` or `idle`; relays: `unknown` (a relay
    /// reports nothing of its batches).
    pub doing: &'static str,
    pub job: Option<u32>,
    pub fence: Option<u64>,
}

pub struct Harness<'a> {
    spec: &'a Spec,
    spec_path: &'a Path,
    scenario: Scenario,
    store: Store,
    procs: BTreeMap<(Role, u32), Proc>,
    tx: Sender<Msg>,
    rx: Receiver<Msg>,
    respawn: Vec<(i64, Role, u32)>,
    generations: BTreeMap<(Role, u32), u32>,
    facts: RunFacts,
    /// `--kills random`'s rates; `None` in the cooperative mode.
    rates: Option<KillRates>,
}

fn us_to_ms(us: i64) -> u64 {
    (us.max(0) / 1000) as u64
}

impl<'a> Harness<'a> {
    pub fn new(spec: &'a Spec, spec_path: &'a Path, store: Store) -> Result<Harness<'a>> {
        let (tx, rx) = channel();
        let scenario = spec.scenario()?;
        let rates = (spec.kill_mode == KillMode::Random)
            .then(|| crate::kills::rates(&scenario, spec.kill_mean_ms));
        Ok(Harness {
            rates,
            scenario,
            spec,
            spec_path,
            store,
            procs: BTreeMap::new(),
            tx,
            rx,
            respawn: Vec::new(),
            generations: BTreeMap::new(),
            facts: RunFacts::default(),
        })
    }

    fn now_us(&self) -> i64 {
        mono_us() - self.spec.t0_us
    }

    fn spawn(&mut self, role: Role, slot: u32, generation: u32) -> Result<()> {
        let exe = std::env::current_exe().context("cannot find the durasim-conform executable")?;
        let sub = match role {
            Role::Worker => "__worker",
            Role::Relay => "__relay",
        };
        let mut child = Command::new(exe)
            .arg(sub)
            .arg(self.spec_path)
            .arg(slot.to_string())
            .arg(generation.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("cannot spawn a worker process")?;
        let stdout = child.stdout.take().expect("piped");
        let stdin = child.stdin.take().expect("piped");
        let tx = self.tx.clone();
        let pid = child.id() as i32;
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if role == Role::Worker && line.starts_with("KILL ") {
                    // A worker at once, from this thread: it may hold a lock (SQLite's write lock
                    // between INSERT and COMMIT) that the harness's own next write would wait on.
                    // Not a relay: its crash must be recorded while it still blocks holding its
                    // claim (`on_line`); killed here, its rows unlocked, another relay could send
                    // and mark them before the record, which would then be false (it was, once:
                    // `recorded_values_match` on PostgreSQL, "the relay crashed with 1 rows sent
                    // and unmarked, but the outbox had 0 unmarked").
                    // SAFETY: our child, not yet reaped (the main loop reaps it after this
                    // message), so the pid is still its own.
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                    }
                }
                if tx
                    .send(Msg {
                        role,
                        slot,
                        generation,
                        line: Some(line),
                    })
                    .is_err()
                {
                    return;
                }
            }
            let _ = tx.send(Msg {
                role,
                slot,
                generation,
                line: None,
            });
        });
        let mean = self.rates.and_then(|r| match role {
            Role::Worker => r.worker_mean_ms,
            Role::Relay => r.relay_mean_ms,
        });
        let kill_at = mean.map(|m| {
            let d =
                crate::kills::delay_ms(self.spec.seed, role == Role::Relay, slot, generation, m);
            self.now_us() + d as i64 * 1000
        });
        self.procs.insert(
            (role, slot),
            Proc {
                child,
                stdin,
                generation,
                busy: None,
                stopped_until: None,
                kill_at,
                killed: None,
                killed_at_ms: 0,
            },
        );
        Ok(())
    }

    fn kill(&mut self, role: Role, slot: u32) -> Result<()> {
        let p = self.procs.get_mut(&(role, slot)).expect("a live process");
        let pid = p.child.id() as i32;
        // SAFETY: sending a signal to a child we spawned and have not reaped (its pid cannot
        // have been reused).
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
        p.child.wait().context("cannot reap a killed process")?;
        Ok(())
    }

    fn signal(&mut self, role: Role, slot: u32, sig: i32) {
        if let Some(p) = self.procs.get(&(role, slot)) {
            // SAFETY: as in `kill`: our unreaped child.
            unsafe {
                libc::kill(p.child.id() as i32, sig);
            }
        }
    }

    fn on_line(&mut self, m: Msg) -> Result<()> {
        let Some(p) = self.procs.get_mut(&(m.role, m.slot)) else {
            return Ok(());
        };
        if p.generation != m.generation {
            return Ok(()); // a line from a process already killed
        }
        if p.killed.is_some() {
            // Killed at random: its last lines say which job it held when it died.
            match m
                .line
                .as_deref()
                .map(|l| l.split_whitespace().collect::<Vec<_>>())
            {
                None => return self.killed_at_random(m.role, m.slot),
                Some(parts) => match parts.as_slice() {
                    ["BUSY", job, fence] => p.busy = Some((job.parse()?, fence.parse()?)),
                    ["IDLE"] | ["DONE", ..] => p.busy = None,
                    _ => {} // a stall it announced: it is dead, nothing to stop
                },
            }
            return Ok(());
        }
        let Some(line) = m.line else {
            if crate::INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
                return Ok(()); // a terminal's Ctrl-C reached it too; the loop stops next
            }
            // The process ended without being killed: that is a bug in it.
            let status = p.child.wait().ok();
            bail!(
                "{:?} {} exited on its own ({status:?}); see its stderr above",
                m.role,
                m.slot
            );
        };
        let parts: Vec<&str> = line.split_whitespace().collect();
        match parts.as_slice() {
            ["IDLE"] => p.busy = None,
            ["BUSY", job, fence] => p.busy = Some((job.parse()?, fence.parse()?)),
            ["DONE", ..] => p.busy = None,
            ["STALL", ms, ..] => {
                let ms: i64 = ms.parse()?;
                let until = mono_us() - self.spec.t0_us + ms * 1000;
                p.stopped_until = Some(until);
                self.facts.stalls += 1;
                self.signal(m.role, m.slot, libc::SIGSTOP);
                let p = self.procs.get_mut(&(m.role, m.slot)).expect("live");
                writeln!(p.stdin, "go")?;
                p.stdin.flush()?;
            }
            ["KILL", point, rest @ ..] => {
                let point = point.to_string();
                match m.role {
                    Role::Worker => {
                        // Killed first: mid-commit, its open transaction would block the record's
                        // write under SQLite. Its lease stays held until it expires, so nothing
                        // moves between the kill and the record.
                        self.kill(m.role, m.slot)?;
                        let (job, fence) = (rest[0].parse::<u32>()?, rest[1].parse::<u64>()?);
                        self.store.note(json!({"type": "worker_crashed", "worker": m.slot, "job": job, "fence": fence, "point": point}))?;
                        *self.facts.worker_kills.entry(point.clone()).or_default() += 1;
                        if point == plan::KillPoint::MidCommit.name() {
                            self.facts.mid_commit_keys.push(rest[2].to_string());
                        }
                        let at = self.now_us() + self.scenario.workers.restart_ms as i64 * 1000;
                        self.respawn.push((at, Role::Worker, m.slot));
                    }
                    Role::Relay => {
                        // Recorded while the relay still blocks at its kill point, holding its
                        // claim (a read under SQLite's WAL: no lock on the record's write): once
                        // killed, its rows unlock, and another relay may send and mark them
                        // before a record written after the kill, which would then be false.
                        let unmarked: u32 = rest[0].parse()?;
                        self.store
                            .note(json!({"type": "relay_crashed", "unmarked": unmarked}))?;
                        self.kill(m.role, m.slot)?;
                        self.facts.relay_kills += 1;
                        let restart = self
                            .scenario
                            .relay
                            .restart_ms
                            .unwrap_or(self.scenario.relay.interval_ms);
                        let at = self.now_us() + restart as i64 * 1000;
                        self.respawn.push((at, Role::Relay, m.slot));
                    }
                }
                self.procs.remove(&(m.role, m.slot));
            }
            _ => bail!("unexpected line from {:?} {}: {line:?}", m.role, m.slot),
        }
        Ok(())
    }

    /// `--kills random`: SIGKILL at the drawn moment, with no handshake, and reap. The crash is
    /// recorded when the process's last lines have been read (`killed_at_random`).
    fn kill_at_random(&mut self, role: Role, slot: u32) -> Result<()> {
        let stopped = self.procs[&(role, slot)].stopped_until.is_some();
        let now_ms = us_to_ms(self.now_us());
        self.kill(role, slot)?;
        let p = self.procs.get_mut(&(role, slot)).expect("live");
        p.kill_at = None;
        p.stopped_until = None;
        p.killed_at_ms = now_ms;
        p.killed = Some(if stopped {
            Doing::Stopped
        } else {
            Doing::HoldingAJob
        });
        Ok(())
    }

    /// The end of a randomly killed process's output: record the crash with what the harness
    /// knows (a worker's last reported job and token, or none; never a point; a relay's unmarked
    /// rows are unknown), and respawn it after its restart time. Written after the kill, so no
    /// record the dead process could still write is contradicted (a COMMIT it sent may still
    /// land; the store's own record of it says so, with its time).
    fn killed_at_random(&mut self, role: Role, slot: u32) -> Result<()> {
        let p = self.procs.remove(&(role, slot)).expect("live");
        let at_ms = p.killed_at_ms;
        let restart = match role {
            Role::Worker => {
                let doing = match (p.busy, p.killed) {
                    (None, _) => Doing::Idle,
                    (Some(_), Some(d)) => d,
                    (Some(_), None) => unreachable!("only a killed process ends here"),
                };
                let body = match p.busy {
                    Some((job, fence)) => {
                        json!({"type": "worker_crashed", "worker": slot, "job": job, "fence": fence})
                    }
                    None => json!({"type": "worker_crashed", "worker": slot}),
                };
                self.store.note(body)?;
                *self
                    .facts
                    .worker_kills
                    .entry(doing.name().to_string())
                    .or_default() += 1;
                self.facts.random_kills.push(RandomKill {
                    at_ms,
                    role: "worker",
                    slot,
                    doing: doing.name(),
                    job: p.busy.map(|b| b.0),
                    fence: p.busy.map(|b| b.1),
                });
                self.scenario.workers.restart_ms
            }
            Role::Relay => {
                self.store.note(json!({"type": "relay_crashed"}))?;
                self.facts.relay_kills += 1;
                self.facts.random_kills.push(RandomKill {
                    at_ms,
                    role: "relay",
                    slot,
                    doing: "unknown",
                    job: None,
                    fence: None,
                });
                self.scenario
                    .relay
                    .restart_ms
                    .unwrap_or(self.scenario.relay.interval_ms)
            }
        };
        let at = self.now_us() + restart as i64 * 1000;
        self.respawn.push((at, role, slot));
        Ok(())
    }

    /// Kills and reaps every process the harness started.
    fn stop_all(&mut self) {
        for (_, p) in std::mem::take(&mut self.procs) {
            if p.killed.is_some() {
                continue; // killed at random and reaped already: its pid is no longer ours
            }
            let mut child = p.child;
            // SAFETY: our unreaped child; a stopped one is killed too.
            unsafe {
                libc::kill(child.id() as i32, libc::SIGKILL);
            }
            let _ = child.wait();
        }
    }

    fn tick_timers(&mut self) -> Result<()> {
        let now = self.now_us();
        let doomed: Vec<(Role, u32)> = self
            .procs
            .iter()
            .filter(|(_, p)| p.killed.is_none() && p.kill_at.is_some_and(|t| t <= now))
            .map(|(k, _)| *k)
            .collect();
        for (role, slot) in doomed {
            self.kill_at_random(role, slot)?;
        }
        let due: Vec<(Role, u32)> = self
            .procs
            .iter()
            .filter(|(_, p)| p.stopped_until.is_some_and(|t| t <= now))
            .map(|(k, _)| *k)
            .collect();
        for (role, slot) in due {
            self.signal(role, slot, libc::SIGCONT);
            self.procs
                .get_mut(&(role, slot))
                .expect("live")
                .stopped_until = None;
        }
        let mut i = 0;
        while i < self.respawn.len() {
            if self.respawn[i].0 <= now {
                let (_, role, slot) = self.respawn.remove(i);
                let generation = self.generations.entry((role, slot)).or_insert(0);
                *generation += 1;
                let g = *generation;
                if role == Role::Worker {
                    self.store
                        .note(json!({"type": "worker_restarted", "worker": slot}))?;
                }
                self.spawn(role, slot, g)?;
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    /// Runs the scenario to settlement (or the time limit) and returns what the harness saw.
    pub fn run(
        mut self,
        requests: Vec<crate::store::Request>,
        limit_ms: u64,
    ) -> Result<(Store, RunFacts)> {
        let started = std::time::Instant::now();
        let workers = self.scenario.workers.count;
        let relays = match self.spec.kind() {
            Kind::Sqlite => 1,
            _ => 2,
        };
        self.facts.workers = workers;
        self.facts.relays = relays;
        self.facts.kill_mode = self.spec.kill_mode.name();
        self.facts.kill_rates = self.rates;
        for w in 0..workers {
            self.spawn(Role::Worker, w, 0)?;
        }
        for r in 0..relays {
            self.spawn(Role::Relay, r, 0)?;
        }
        let tenantless = self.spec.bug(Bug::TenantlessKeys);
        let mut operators: Vec<(u64, usize)> = Vec::new();
        for (i, o) in self.scenario.operator.iter().enumerate() {
            for k in 0..=o.repeat as u64 {
                operators.push((o.at_ms + k * o.every_ms, i));
            }
        }
        operators.sort();
        let mut next_request = 0;
        let mut next_operator = 0;
        let mut last_review = 0;
        let result = loop {
            if crate::INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
                self.stop_all();
                bail!("interrupted: the run's processes were stopped and nothing was judged");
            }
            let now_ms = us_to_ms(self.now_us());
            while next_request < requests.len() && requests[next_request].at_ms <= now_ms {
                self.store.enqueue(&requests[next_request], None)?;
                next_request += 1;
            }
            while next_operator < operators.len() && operators[next_operator].0 <= now_ms {
                let o = &self.scenario.operator[operators[next_operator].1];
                // A fixed job, a reprocess chain's newest job or a target, read from the store
                // when the action runs, as the simulator picks it.
                let (job, target, follow) = (o.job, o.target, o.follow);
                let operator = o.operator.clone();
                match self.store.operator_pick(job, target, follow)? {
                    Some(job) => self.store.reprocess(job, operator.as_deref(), &|t, d, v| {
                        plan::key(t, d, v, tenantless)
                    })?,
                    None => self.store.refuse_unpicked(operator.as_deref())?,
                }
                next_operator += 1;
            }
            if now_ms >= last_review + 5 {
                self.store.finish_reviews()?;
                last_review = now_ms;
            }
            // Whatever the children said, then the timers; wait at most 1 ms for more.
            if let Ok(m) = self.rx.recv_timeout(Duration::from_millis(1)) {
                self.on_line(m)?;
                while let Ok(m) = self.rx.try_recv() {
                    self.on_line(m)?;
                }
            }
            self.tick_timers()?;
            let quiet = next_request == requests.len()
                && next_operator == operators.len()
                && self.respawn.is_empty()
                && self
                    .procs
                    .values()
                    .all(|p| p.busy.is_none() && p.stopped_until.is_none() && p.killed.is_none());
            if quiet && self.store.settled()? {
                break true;
            }
            if now_ms > limit_ms {
                break false;
            }
        };
        self.stop_all();
        self.store
            .note(json!({"type": "run_ended", "quiescent": result}))?;
        self.facts.settled = result;
        self.facts.wall_s = started.elapsed().as_secs_f64();
        if !result {
            eprintln!("warning: the run hit its time limit ({limit_ms} ms) before it settled");
        }
        Ok((self.store, self.facts))
    }
}

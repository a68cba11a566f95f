//! Driving programs in lockstep: one message at a time, each answered by the program's calls
//! and its `idle`, in virtual time.
//!
//! Owns: starting every program at the run's start and a new one after a crash, the inbox of
//! each (a reply joins it; the program gets the next only once it said `idle` after the last),
//! the hold of a paused or stalled program (its messages wait until the hold is over), what a
//! delivered reply arms and what fires at the next call, reading each call and sending it to
//! its handler, killing a program (its transactions rolled back, its memory gone), and the
//! fault that stops the run with the line and the role.
//! Does not: perform a call (`worker.rs`, `store_calls.rs`, `delivery.rs`) or talk to a process
//! (`shell::programs`).

use super::protocol::{self, call_name, Call, Line, Role};
use super::state::{Arm, Programs, Timed};
use super::Sent;
use crate::base::ids::{Fence, JobId, WorkerId};
use crate::history::{Event, Observer, StruckRecord};
use crate::model::semantics::QueueSemantics;
use crate::model::worker::CrashPoint;
use crate::profile::Effective;
use crate::sim::kernel::{decrement, Ev, Sim};
use crate::vocab::faults::Site;
use serde_json::{json, Value};

impl<'s, O: Observer, Q: QueueSemantics> Sim<'s, O, Q> {
    pub(in crate::sim) fn progs(&mut self) -> &mut Programs {
        self.programs.as_mut().expect("a run with programs")
    }

    /// Starts every program (workers first, then the relay, then the consumer). Workers join
    /// the idle line when they call `queue.lease`, not before.
    pub(in crate::sim) fn start_programs(&mut self) {
        let Some(p) = self.programs.as_ref() else {
            return;
        };
        let n = p.slots.len() as u32;
        self.idle.clear();
        for slot in 0..n {
            self.launch(slot);
        }
    }

    /// A new program in `slot`, and its `start` message.
    pub(in crate::sim) fn launch(&mut self, slot: u32) {
        let s = self.scenario;
        let eff = Effective::of(&s.semantics());
        let (role, instance) = {
            let sl = &self.progs().slots[slot as usize];
            (sl.role, sl.instance)
        };
        let started = self.progs().host.start(role, instance);
        let program = match started {
            Ok(p) => p,
            Err(e) => return self.program_fault(slot, None, &e.0),
        };
        let sl = &mut self.progs().slots[slot as usize];
        sl.described = program.describe();
        sl.program = Some(program);
        let start = json!({
            "type": "start",
            "protocol": protocol::VERSION,
            "role": role.name(),
            "instance": instance,
            "config": {
                "workers": s.workers.count,
                "lease_ms": eff.lease_ms,
                "heartbeat_ms": eff.heartbeat_ms,
                "deadline_ms": eff.deadline_ms,
                "max_attempts": eff.attempts_max,
                "relay_interval_ms": s.relay.interval_ms,
            },
        });
        self.post(slot, start, None);
    }

    /// Puts `message` in the program's inbox; `arm` is set off when it is delivered.
    pub(in crate::sim) fn post(&mut self, slot: u32, message: Value, arm: Option<Arm>) {
        let now = self.now;
        let p = self.progs();
        let draining = p.draining == Some(slot);
        let sl = &mut p.slots[slot as usize];
        if sl.program.is_none() {
            return;
        }
        sl.inbox.push_back((message, arm));
        if !draining && !sl.wake {
            sl.wake = true;
            let at = now.max(sl.held_until);
            self.schedule(at, Ev::ProgramWake { slot });
        }
    }

    pub(in crate::sim) fn on_program_wake(&mut self, slot: u32) {
        self.progs().slots[slot as usize].wake = false;
        let before = self.progs().draining.replace(slot);
        self.drain(slot);
        self.progs().draining = before;
    }

    /// Delivers the inbox's messages one at a time, each followed by the calls the program
    /// made before saying `idle`, until the inbox is empty, the program is held, or it died.
    fn drain(&mut self, slot: u32) {
        let now = self.now;
        loop {
            let p = self.progs();
            if p.fault.is_some() {
                return;
            }
            let sl = &mut p.slots[slot as usize];
            let Some(program) = sl.program.as_mut() else {
                sl.inbox.clear();
                return;
            };
            if sl.held_until > now {
                if !sl.inbox.is_empty() && !sl.wake {
                    sl.wake = true;
                    let at = sl.held_until;
                    self.schedule(at, Ev::ProgramWake { slot });
                }
                return;
            }
            let Some((mut message, arm)) = sl.inbox.pop_front() else {
                return;
            };
            message["now"] = json!(now);
            if arm.is_some() {
                sl.armed = arm;
            }
            let life = sl.life;
            let sent = match program.deliver(&message) {
                Ok(sent) => sent,
                Err(e) => return self.program_fault(slot, None, &e.0),
            };
            for s in sent {
                let p = self.progs();
                if p.fault.is_some() || p.slots[slot as usize].life != life {
                    break;
                }
                self.perform(slot, s);
            }
        }
    }

    /// Reads one call and performs it.
    fn perform(&mut self, slot: u32, sent: Sent) {
        let (id, call) = match protocol::parse(&sent.value) {
            Ok(Line::Idle) => return,
            Ok(Line::Call { id, call }) => (id, call),
            Err(m) => return self.program_fault(slot, Some(sent.line), &m),
        };
        let role = self.progs().slots[slot as usize].role;
        if !protocol::allowed(role, &call) {
            let m = format!(
                "{} is out of protocol for a {}",
                call_name(&call),
                role.name()
            );
            return self.program_fault(slot, Some(sent.line), &m);
        }
        if !matches!(call, Call::Log { .. }) {
            if let Some(arm) = self.progs().slots[slot as usize].armed.take() {
                if self.fire(slot, arm) {
                    return;
                }
            }
        }
        let line = sent.line;
        match call {
            Call::Lease
            | Call::Heartbeat { .. }
            | Call::Ack { .. }
            | Call::Retry { .. }
            | Call::Fail { .. }
            | Call::Cancel { .. }
            | Call::Infer { .. } => self.worker_call(slot, line, id, call),
            Call::Publish { .. } | Call::Receive => self.delivery_call(slot, line, id, call),
            Call::Sleep { ms } => {
                let life = self.progs().slots[slot as usize].life;
                let message = protocol::ok(id, json!({}));
                let i = self.progs().keep(Timed::Reply {
                    slot,
                    life,
                    message,
                });
                self.schedule(self.now + ms, Ev::ProgramTimed { index: i });
            }
            Call::Log { message } => self.program_log(slot, message, id),
            _ => self.store_call(slot, line, id, call),
        }
    }

    /// What a delivered reply armed, at the program's next call: a worker's crash (true: it is
    /// dead), or the chance of a consumer crash right after it applied an event.
    fn fire(&mut self, slot: u32, arm: Arm) -> bool {
        match arm {
            Arm::Crash(point) => {
                self.crash_worker(slot, point);
                true
            }
            Arm::Applied { job, event } => {
                let Some(fault) = self.struck_at(Site::ConsumerApplied, Some(job)) else {
                    return false;
                };
                self.record(Event::Struck(StruckRecord {
                    fault,
                    job: Some(job),
                    value: event,
                }));
                self.kill(slot);
                self.schedule(self.now, Ev::ProgramStart { slot });
                true
            }
        }
    }

    /// Worker `slot` dies at `point` (SIGKILL): its attempt is over, its lease runs out, and a
    /// new process starts after the restart time.
    fn crash_worker(&mut self, slot: u32, point: CrashPoint) {
        let w = WorkerId(slot);
        let attempt = self.progs().slots[slot as usize].attempt;
        self.kill(slot);
        let (job, fence) = attempt.map_or((JobId(0), Fence(0)), |a| (a.job, a.fence));
        self.workers[w.index()].down = true;
        self.record(Event::WorkerCrashed {
            worker: w,
            job,
            fence,
            point: point.name(),
        });
        self.schedule(
            self.now + self.scenario.workers.restart_ms,
            Ev::WorkerRestarts { worker: w.0 },
        );
    }

    /// Kills the program in `slot` and forgets what it held: its transactions are rolled back,
    /// its attempt ends, a publish waiting on a consumer that held its event fails.
    pub(in crate::sim) fn kill(&mut self, slot: u32) {
        let p = self.progs();
        p.store.abort_owner(slot);
        let sl = &mut p.slots[slot as usize];
        sl.forget();
        let attempt = sl.attempt.take();
        let in_hand = sl.in_hand.take();
        if attempt.is_some() {
            decrement(&mut self.attempts_in_flight, "attempts_in_flight");
        }
        self.idle.retain(|w| w.0 != slot);
        if let Some(d) = in_hand {
            let (publisher, life, id) = d.publisher;
            if self.progs().slots[publisher as usize].life == life {
                let m = format!("the consumer died handling event {}", d.event);
                self.post(publisher, protocol::error(id, "consumer_crashed", m), None);
            }
        }
    }

    /// A new program in `slot` after a crash (the relay, the consumer).
    pub(in crate::sim) fn on_program_start(&mut self, slot: u32) {
        if self.progs().slots[slot as usize].program.is_none() {
            self.launch(slot);
        }
    }

    /// A worker's restart: a new process, with nothing in memory but what the store kept.
    pub(in crate::sim) fn restart_worker_program(&mut self, w: WorkerId) {
        self.workers[w.index()].down = false;
        self.record(Event::WorkerRestarted { worker: w });
        self.launch(w.0);
    }

    /// A reply (or a slow heartbeat) whose time has come.
    pub(in crate::sim) fn on_program_timed(&mut self, index: u32) {
        let Some(t) = self.progs().take(index) else {
            return;
        };
        match t {
            Timed::Reply {
                slot,
                life,
                message,
            } => {
                if self.progs().slots[slot as usize].life == life {
                    self.post(slot, message, None);
                }
            }
            Timed::Infer { .. } => self.infer_returns(t),
            Timed::Heartbeat {
                slot,
                life,
                id,
                job,
                fence,
            } => {
                if self.progs().slots[slot as usize].life == life {
                    self.heartbeat(slot, id, job, fence);
                }
            }
        }
    }

    /// The run stops: `message` says what the program did, where.
    pub(in crate::sim) fn program_fault(&mut self, slot: u32, line: Option<u64>, message: &str) {
        let now = self.now;
        let p = self.progs();
        if p.fault.is_some() {
            return;
        }
        let sl = &p.slots[slot as usize];
        let who = match sl.role {
            Role::Worker => format!("worker {}", sl.instance),
            role => role.name().to_string(),
        };
        let at = match line {
            Some(n) => format!("line {n} of its output: "),
            None => String::new(),
        };
        let program = match sl.described.as_str() {
            "" => String::new(),
            d => format!(" ({d})"),
        };
        p.fault = Some(format!(
            "the {who} program{program} at {now} ms (virtual): {at}{message}"
        ));
    }

    /// The run's programs stopped (every one killed) and the fault, if one stopped the run.
    pub(in crate::sim) fn stop_programs(&mut self) -> Option<String> {
        let p = self.programs.as_mut()?;
        for sl in &mut p.slots {
            if let Some(mut program) = sl.program.take() {
                program.kill();
            }
        }
        p.fault.take()
    }

    pub(in crate::sim) fn program_failed(&self) -> bool {
        self.programs.as_ref().is_some_and(|p| p.fault.is_some())
    }

    /// A `log` call: its message in the history.
    fn program_log(&mut self, slot: u32, message: String, id: u64) {
        let (role, instance) = {
            let sl = &self.progs().slots[slot as usize];
            (sl.role, sl.instance)
        };
        let message: Box<str> = cut(&message, super::protocol::LOG_MAX).into();
        self.record(Event::Log {
            role: role.name(),
            instance,
            message,
        });
        self.post(slot, protocol::ok(id, json!({})), None);
    }
}

/// At most `max` bytes of `text`, cut at a character's boundary.
fn cut(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

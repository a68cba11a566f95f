//! What the kernel keeps for a run's programs: one slot per program (every worker, the relay,
//! the consumer), the store they share, the broker between the relay and the consumer, and the
//! replies waiting for their virtual time.
//!
//! Owns: the slots' state (the running program and its incarnation, its inbox, its hold, the
//! worker's attempt and the leases this process was given, the call a crash point waits for),
//! the slab of timed replies, and the fault that stops the run.
//! Does not: act on any of it (`drive.rs`, `worker.rs`, `store_calls.rs`, `delivery.rs`).

use super::{Program, ProgramHost, ProgramSpec, Role};
use crate::base::ids::{Fence, JobId, SimTime};
use crate::model::retry::ErrorKind;
use crate::model::store::Store;
use crate::model::worker::{AttemptPlan, CrashPoint};
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};

/// What a delivered reply sets off at the program's next call (a call other than `log`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(in crate::sim) enum Arm {
    /// The worker dies at its next call: the plan's crash point has come.
    Crash(CrashPoint),
    /// The consumer applied `event` (of `job`); at its next call a consumer crash may strike.
    Applied { job: JobId, event: u64 },
}

/// A worker's attempt, from the lease durasim handed it to its next `queue.lease` or its death.
#[derive(Clone, Copy, Debug, Hash)]
pub(in crate::sim) struct Attempt {
    pub job: JobId,
    pub fence: Fence,
    pub number: u32,
    pub plan: AttemptPlan,
    /// Heartbeats the queue accepted in this attempt.
    pub heartbeats: u32,
    /// The plan's stall has been taken (by the first `model.infer`).
    pub stalled: bool,
}

/// An event on its way from the relay to the consumer.
#[derive(Clone, Debug, Hash)]
pub(in crate::sim) struct Delivery {
    pub event: u64,
    pub key: String,
    pub job: JobId,
    pub output: u64,
    /// The relay's `broker.publish` call that waits for the consumer: (slot, life, call id).
    pub publisher: (u32, u32, u64),
}

/// A program's slot: the program in it now, and what the kernel knows of it.
pub(in crate::sim) struct Slot {
    pub role: Role,
    pub instance: u32,
    pub program: Option<Box<dyn Program>>,
    /// Incarnations so far: a reply timed for an earlier one is dropped.
    pub life: u32,
    pub described: String,
    pub inbox: VecDeque<(Value, Option<Arm>)>,
    /// A `ProgramWake` is on the event list.
    pub wake: bool,
    /// Nothing is delivered before this (a pause or a stall holds the program).
    pub held_until: SimTime,
    pub armed: Option<Arm>,
    // The worker's.
    pub attempt: Option<Attempt>,
    /// Every (job, fence) this process was given, oldest first.
    pub leases: Vec<(JobId, Fence)>,
    pub lease_call: Option<u64>,
    // The relay's: events it published since its last mark.
    pub unmarked: u64,
    // The consumer's.
    pub receive_call: Option<u64>,
    pub in_hand: Option<Delivery>,
}

impl Slot {
    fn new(role: Role, instance: u32) -> Slot {
        Slot {
            role,
            instance,
            program: None,
            life: 0,
            described: String::new(),
            inbox: VecDeque::new(),
            wake: false,
            held_until: 0,
            armed: None,
            attempt: None,
            leases: Vec::new(),
            lease_call: None,
            unmarked: 0,
            receive_call: None,
            in_hand: None,
        }
    }

    /// Forgets everything the process had in memory (it was killed).
    pub fn forget(&mut self) {
        if let Some(mut p) = self.program.take() {
            p.kill();
        }
        self.life += 1;
        self.inbox.clear();
        self.held_until = 0;
        self.armed = None;
        self.leases.clear();
        self.lease_call = None;
        self.unmarked = 0;
        self.receive_call = None;
    }

    /// The fence this process was given for `job` (its latest lease of it).
    pub fn own_fence(&self, job: JobId) -> Option<Fence> {
        self.leases
            .iter()
            .rev()
            .find(|(j, _)| *j == job)
            .map(|&(_, f)| f)
    }
}

/// A reply (or a call) waiting for its virtual time.
#[derive(Clone, Debug, Hash)]
pub(in crate::sim) enum Timed {
    /// Delivered as it is (a `timer.sleep`).
    Reply {
        slot: u32,
        life: u32,
        message: Value,
    },
    /// A `model.infer` returns (its `extract_done` is recorded then).
    Infer {
        slot: u32,
        life: u32,
        id: u64,
        job: JobId,
        fence: Fence,
        inference: u64,
        output: u64,
        error: Option<ErrorKind>,
    },
    /// A slow heartbeat reaches the queue.
    Heartbeat {
        slot: u32,
        life: u32,
        id: u64,
        job: JobId,
        fence: Option<Fence>,
    },
}

/// Every program of a run, and what they share.
pub(in crate::sim) struct Programs {
    pub host: Box<dyn ProgramHost>,
    pub slots: Vec<Slot>,
    pub timed: Vec<Option<Timed>>,
    pub free: Vec<u32>,
    pub store: Store,
    /// Per event: how many times the relay has published it.
    pub sends: BTreeMap<u64, u32>,
    /// Published events the consumer has not been handed yet, oldest first.
    pub broker: VecDeque<Delivery>,
    /// The slot whose messages are being delivered (its own replies join the loop, not the
    /// event list).
    pub draining: Option<u32>,
    pub fault: Option<String>,
    pub workers: u32,
}

impl Programs {
    pub fn new(spec: &ProgramSpec, workers: u32) -> Programs {
        let mut slots: Vec<Slot> = (0..workers).map(|w| Slot::new(Role::Worker, w)).collect();
        slots.push(Slot::new(Role::Relay, 0));
        slots.push(Slot::new(Role::Consumer, 0));
        Programs {
            host: (spec.host)(),
            slots,
            timed: Vec::new(),
            free: Vec::new(),
            store: Store::new(),
            sends: BTreeMap::new(),
            broker: VecDeque::new(),
            draining: None,
            fault: None,
            workers,
        }
    }

    pub fn consumer(&self) -> u32 {
        self.workers + 1
    }

    /// Keeps `t` until its time and returns its number.
    pub fn keep(&mut self, t: Timed) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.timed[i as usize] = Some(t);
                i
            }
            None => {
                self.timed.push(Some(t));
                (self.timed.len() - 1) as u32
            }
        }
    }

    pub fn take(&mut self, i: u32) -> Option<Timed> {
        let t = self.timed[i as usize].take();
        self.free.push(i);
        t
    }

    /// Nothing on its way between the outbox and the consumer.
    pub fn delivered(&self) -> bool {
        self.store.unpublished() == 0
            && self.broker.is_empty()
            && self.slots[self.consumer() as usize].in_hand.is_none()
    }
}

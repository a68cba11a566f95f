//! A proptest generator of arbitrary well-formed histories (issue 27): files the reader accepts
//! (docs/history-format.md) that explore what the simulator never writes: interleavings of many
//! jobs, workers, tenants, keys and versions; external string ids and µs times; optional records
//! and computed fields left out; retries, DLQ entries, evictions, reprocesses and refusals, relay
//! and consumer crashes; and impossible orders (an apply before its commit, a zombie's accepted
//! write, a record after a terminal one).
//!
//! Owns: [`plan`] (the proptest strategy: a header, id styles, a twist rate and a list of
//! actions) and [`Plan::history`] (the interpreter: a small world model that acts as a correct
//! recorder of a correct pipeline, and that an action's *twist* makes wrong in one
//! invariant-shaped way). A plan with no twist and `settle` writes a history that holds every
//! invariant of docs/checker-rules.md (a test says so); twists make each invariant fail some of
//! the time. Shrinking removes actions.
//! Does not: judge (the checkers do) or read the history back (the tests do, with the reader).

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

// ---- the plan ------------------------------------------------------------------------------

/// The header's settings, as drawn.
#[derive(Clone, Debug)]
pub struct HeaderPlan {
    pub micros: bool,
    pub emits: [bool; 3],
    pub lease: u64,
    pub deadline_leases: u64,
    pub attempts_max: u32,
    pub backoff: BackoffPlan,
    pub permanent_retry: bool,
    pub unique: u8,
    pub dlq_capacity: Option<u32>,
    pub dlq_retention: Option<(u64, bool)>,
    pub reprocess_limit: Option<(u32, u64)>,
    pub declared_workers: bool,
    pub workers: usize,
    pub tenants: usize,
    /// `lease_detection`: kind (0 timer, 1 sweep, 2 two passes), period (in leases / 4), slack
    /// (none: the reader's default). Written only where the reader knows the field (the checker
    /// of issue 27).
    pub detection: Option<(u8, u64, Option<u64>)>,
}

#[derive(Clone, Debug)]
pub enum BackoffPlan {
    Capped {
        base: u64,
        cap: u64,
        jitter: u8,
    },
    Formula {
        formula: u8,
        unit: u64,
        cap: Option<u64>,
        offset: u64,
        index_from: u32,
        jitter: u8,
        pct: u32,
        step: u64,
        failures: bool,
    },
}

/// One step of the world: what kind, which job or event it picks, how much time passes first,
/// whether (and how) it is twisted, and its own randomness.
#[derive(Clone, Debug)]
pub struct Action {
    pub kind: u8,
    pub dt: u8,
    pub roll: u8,
    pub seed: u64,
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub header: HeaderPlan,
    /// Job, worker and event id styles: 0 integers, 1 strings, 2 mixed.
    pub ids: [u8; 3],
    /// Computed fields (`lease_until`, `deadline_at`, payload hashes, ...) written: 0 never,
    /// 1 sometimes, 2 always.
    pub computed: u8,
    /// Out of 256: how often an action is twisted.
    pub twist_rate: u8,
    pub actions: Vec<Action>,
    /// Every job and result is driven to its end before `run_ended` (quiescent).
    pub settle: bool,
    pub seed: u64,
}

fn header_plan() -> impl Strategy<Value = HeaderPlan> {
    let backoff = prop_oneof![
        (0u64..400, 0u64..3000, 0u8..3).prop_map(|(base, cap, jitter)| BackoffPlan::Capped {
            base,
            cap: cap.max(base),
            jitter
        }),
        (
            (0u8..6, 0u64..300, prop::option::of(0u64..4000), 0u64..200),
            (0u32..3, 0u8..6, 0u32..=100, 0u64..50, any::<bool>())
        )
            .prop_map(
                |((formula, unit, cap, offset), (index_from, jitter, pct, step, failures))| {
                    BackoffPlan::Formula {
                        formula,
                        unit,
                        cap,
                        offset,
                        index_from,
                        jitter,
                        pct,
                        step,
                        failures,
                    }
                }
            ),
    ];
    (
        (
            any::<bool>(),
            [
                prop::bool::weighted(0.5),
                prop::bool::weighted(0.5),
                prop::bool::weighted(0.7),
            ],
            prop_oneof![Just(100u64), Just(500), 20u64..2000],
            3u64..30,
            1u32..6,
        ),
        (
            backoff,
            prop::bool::weighted(0.15),
            prop_oneof![3 => Just(0u8), 2 => 1u8..5],
            prop::option::weighted(0.4, 1u32..4),
            prop::option::weighted(0.2, (50u64..3000, any::<bool>())),
            prop::option::weighted(0.3, (1u32..3, 100u64..5000)),
        ),
        (
            any::<bool>(),
            1usize..5,
            1usize..4,
            prop::option::weighted(0.5, (0u8..3, 1u64..8, prop::option::of(0u64..50))),
        ),
    )
        .prop_map(
            |(
                (micros, emits, lease, deadline_leases, attempts_max),
                (backoff, permanent_retry, unique, dlq_capacity, dlq_retention, reprocess_limit),
                (declared_workers, workers, tenants, detection),
            )| HeaderPlan {
                micros,
                emits,
                lease,
                deadline_leases,
                attempts_max,
                backoff,
                permanent_retry,
                unique,
                dlq_capacity,
                dlq_retention,
                reprocess_limit,
                declared_workers,
                workers,
                tenants,
                detection,
            },
        )
}

/// Whether the reader knows the header's `lease_detection` (the checker of issue 27 does).
fn reads_lease_detection() -> bool {
    durasim::check::Invariant::parse("lease_end_detected").is_some()
}

fn action() -> impl Strategy<Value = Action> {
    (any::<u8>(), any::<u8>(), any::<u8>(), any::<u64>()).prop_map(|(kind, dt, roll, seed)| {
        Action {
            kind,
            dt,
            roll,
            seed,
        }
    })
}

/// The strategy: a plan of up to `max_actions` actions.
pub fn plan(max_actions: usize) -> impl Strategy<Value = Plan> {
    (
        header_plan(),
        [0u8..3, 0u8..3, 0u8..3],
        0u8..3,
        prop_oneof![Just(0u8), Just(10), Just(30), Just(80)],
        prop::collection::vec(action(), max_actions / 4..max_actions),
        prop::bool::weighted(0.6),
        any::<u64>(),
    )
        .prop_map(
            |(header, ids, computed, twist_rate, actions, settle, seed)| Plan {
                header,
                ids,
                computed,
                twist_rate,
                actions,
                settle,
                seed,
            },
        )
}

impl Plan {
    /// The history file the plan writes, a line each (the header first, `run_ended` last).
    pub fn history(&self) -> Vec<String> {
        let mut w = World::new(self);
        for a in &self.actions {
            w.act(a);
        }
        if self.settle {
            w.settle();
        }
        let quiescent = self.settle || self.seed.is_multiple_of(3);
        w.record("run_ended", json!({ "quiescent": quiescent }));
        w.lines.iter().map(|v| v.to_string()).collect()
    }
}

// ---- the world -----------------------------------------------------------------------------

/// SplitMix64, the action's own randomness.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

const TENANTS: [&str; 3] = ["acme", "globex", "initech"];
const DOCUMENTS: [&str; 6] = [
    "doc-1",
    "invoice-9",
    "doc-7",
    "scan/2024.pdf",
    "doc-12",
    "x_y-z",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Extracting(u64),
    Extracted(u64),
    /// Its own result is committed (or deduplicated) with this output.
    Committed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Waiting,
    Ready,
    Leased,
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Term {
    Acked,
    DeadLettered,
    Cancelled,
}

#[derive(Clone, Debug)]
struct Job {
    ext: Value,
    tenant: usize,
    document: &'static str,
    version: u32,
    key: String,
    operation: &'static str,
    content: u64,
    enqueued_at: u64,
    deadline_at: u64,
    visible_from: u64,
    /// Where it stands for the depth, as docs/checker-rules.md places it: waiting, ready,
    /// leased, done.
    place: Place,
    leases: u32,
    failures: u32,
    fence: u64,
    holder: usize,
    /// Every (token, worker) a lease gave it.
    issued: Vec<(u64, usize)>,
    renewed_at: u64,
    lease_held: bool,
    /// Its holder crashed: the lease runs out unused.
    abandoned: bool,
    phase: Phase,
    failure: Option<(u64, &'static str, u64)>,
    terminal: Option<Term>,
    /// 0 none, 1 held, 2 evicted.
    dlq: u8,
    dead_at: u64,
    reprocessed: bool,
}

/// A key's first commit: its job, output, event, and the committing payload.
type FirstCommit = (usize, u64, Option<usize>, (&'static str, u64));

#[derive(Clone, Debug, Default)]
struct Key {
    newest: Option<usize>,
    /// The first commit: its job, output, event, and the committing payload.
    first: Option<FirstCommit>,
    applied: bool,
}

#[derive(Clone, Debug)]
struct Ev {
    ext: Value,
    /// Its number as the reader will intern it (1, 2, ... in order of first appearance).
    interned: u64,
    key: String,
    job: usize,
    output: u64,
    published: bool,
    applies: u32,
    reviews: u32,
}

struct World<'p> {
    p: &'p Plan,
    h: &'p HeaderPlan,
    scale: u64,
    lease: u64,
    deadline: u64,
    now: u64,
    lines: Vec<Value>,
    jobs: Vec<Job>,
    keys: BTreeMap<String, Key>,
    events: Vec<Ev>,
    pending: VecDeque<usize>,
    dlq: VecDeque<usize>,
    workers: Vec<Value>,
    crashed: BTreeSet<usize>,
    reprocesses: BTreeMap<usize, Vec<u64>>,
    next_fence: u64,
    next_event_id: u64,
    /// Outbox rows marked published, and pruned.
    marked: u64,
    pruned: u64,
    /// `dead_lettered` and `dlq_evicted` records: never more evictions than entries, or
    /// `verify` panics (the report of issue 27's reference, finding F2).
    dead_lettered: u64,
    evicted: u64,
    rng: Rng,
    /// The action at hand is twisted.
    twist: bool,
    /// Driving every job to its end: no detours (heartbeats, held faults, crashes).
    settling: bool,
}

/// FNV-1a-64 of `document\noperation\ncontent as 16 hex digits` (docs/history-format.md).
fn payload_hash(document: &str, operation: &str, content: u64) -> u64 {
    let text = format!("{document}\n{operation}\n{content:016x}");
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl<'p> World<'p> {
    fn new(p: &'p Plan) -> World<'p> {
        let h = &p.header;
        let scale = if h.micros { 1000 } else { 1 };
        let lease = h.lease * scale;
        let mut w = World {
            p,
            h,
            scale,
            lease,
            deadline: lease * h.deadline_leases,
            now: 0,
            lines: Vec::new(),
            jobs: Vec::new(),
            keys: BTreeMap::new(),
            events: Vec::new(),
            pending: VecDeque::new(),
            dlq: VecDeque::new(),
            workers: Vec::new(),
            crashed: BTreeSet::new(),
            reprocesses: BTreeMap::new(),
            next_fence: 1,
            next_event_id: 1,
            marked: 0,
            pruned: 0,
            dead_lettered: 0,
            evicted: 0,
            rng: Rng(p.seed),
            twist: false,
            settling: false,
        };
        for i in 0..h.workers {
            let ext = match (p.ids[1], i % 2) {
                (0, _) | (2, 0) => json!(if h.declared_workers { i } else { 40 + i * 3 }),
                _ => json!(format!("pod-{}", (b'a' + i as u8) as char)),
            };
            w.workers.push(ext);
        }
        w.header();
        w
    }

    fn header(&mut self) {
        let h = self.h;
        let s = self.scale;
        let mut emits = Vec::new();
        for (on, name) in h
            .emits
            .iter()
            .zip(["visible", "lease_expired", "depth_sampled"])
        {
            if *on {
                emits.push(name);
            }
        }
        let mut config = Map::new();
        config.insert("seed".into(), json!(self.p.seed % 1000));
        if h.declared_workers {
            config.insert("workers".into(), json!(h.workers));
        }
        config.insert("lease".into(), json!(self.lease));
        config.insert("heartbeat".into(), json!((self.lease / 3).max(1)));
        config.insert("deadline".into(), json!(self.deadline));
        config.insert("attempts_max".into(), json!(h.attempts_max));
        match &h.backoff {
            BackoffPlan::Capped { base, cap, jitter } => {
                config.insert("backoff_base".into(), json!(base * s));
                config.insert("backoff_cap".into(), json!(cap * s));
                config.insert(
                    "jitter".into(),
                    json!(["none", "full", "equal"][*jitter as usize]),
                );
            }
            BackoffPlan::Formula {
                formula,
                unit,
                cap,
                offset,
                index_from,
                jitter,
                pct,
                step,
                failures,
            } => {
                let formulas = [
                    "exp2",
                    "exp2_offset",
                    "pow4",
                    "exp_e",
                    "immediate",
                    "visibility",
                ];
                let jitters = ["none", "full", "equal", "symmetric", "up", "additive"];
                config.insert(
                    "backoff".into(),
                    json!({
                        "formula": formulas[*formula as usize],
                        "unit": unit * s,
                        "cap": cap.map(|c| c * s),
                        "offset": offset * s,
                        "index_from": index_from,
                        "jitter": jitters[*jitter as usize],
                        "jitter_pct": pct,
                        "jitter_step": step * s,
                        "attempt": if *failures { "failures" } else { "leases" },
                    }),
                );
            }
        }
        config.insert("dlq_capacity".into(), json!(h.dlq_capacity));
        if let Some((max, window)) = h.reprocess_limit {
            config.insert(
                "reprocess_limit".into(),
                json!({ "max": max, "window": window * s }),
            );
        }
        if let Some((after, from_enqueue)) = h.dlq_retention {
            config.insert(
                "dlq_retention".into(),
                json!({ "after": after * s, "from": if from_enqueue { "enqueued" } else { "dead_lettered" } }),
            );
        }
        if h.permanent_retry {
            config.insert("permanent_error".into(), json!("retry"));
        }
        if let Some((kind, every, slack)) = h.detection.filter(|_| reads_lease_detection()) {
            let mut d = Map::new();
            d.insert(
                "kind".into(),
                json!(["timer", "sweep", "two_pass"][kind as usize]),
            );
            if kind > 0 {
                d.insert("every".into(), json!((every * self.lease / 4).max(1)));
            }
            if let Some(slack) = slack {
                // A timer's slack is at least its resolution, 1 (a stated 0 makes every expiry
                // late: the report of issue 27's reference, D3).
                let least = (kind == 0) as u64;
                d.insert("slack".into(), json!((slack * s).max(least)));
            }
            config.insert("lease_detection".into(), Value::Object(d));
        }
        if h.unique > 0 {
            let modes = [
                "forever",
                "none",
                "while_active",
                "conflict_while_running",
                "replace",
            ];
            config.insert("unique".into(), json!(modes[h.unique as usize]));
        }
        let header = json!({
            "format": "durasim-history",
            "version": 1,
            "time_unit": if h.micros { "us" } else { "ms" },
            "emits": emits,
            "config": config,
        });
        self.lines.push(header);
    }

    /// Writes a record at the current time.
    fn record(&mut self, ty: &str, fields: Value) {
        let mut m = Map::new();
        m.insert("at".into(), json!(self.now));
        m.insert("type".into(), json!(ty));
        if let Value::Object(f) = fields {
            for (k, v) in f {
                if !v.is_null() {
                    m.insert(k, v);
                }
            }
        }
        self.lines.push(Value::Object(m));
    }

    /// Whether to write a computed field (the plan's recorder style).
    fn computed(&mut self) -> bool {
        match self.p.computed {
            0 => false,
            1 => self.rng.chance(50),
            _ => true,
        }
    }

    /// A computed value, written or left out, and made wrong by a twist (`wrong`: how).
    fn value(&mut self, v: u64) -> Value {
        if self.twist && self.rng.chance(30) {
            return json!(v.wrapping_add(1 + self.rng.below(5)) & ((1 << 53) - 1));
        }
        match self.computed() {
            true => json!(v),
            false => Value::Null,
        }
    }

    fn hash_value(&mut self, document: &str, operation: &str, content: u64) -> Value {
        if self.twist && self.rng.chance(30) {
            return json!(format!("{:x}", self.rng.next()));
        }
        match self.computed() {
            true => json!(format!(
                "{:016x}",
                payload_hash(document, operation, content)
            )),
            false => Value::Null,
        }
    }

    fn twisted(&mut self, percent: u64) -> bool {
        self.twist && self.rng.chance(percent)
    }

    fn end(&self, j: usize) -> u64 {
        self.jobs[j].renewed_at + self.lease
    }

    fn live(&self, j: usize) -> bool {
        self.jobs[j].lease_held && self.now <= self.end(j)
    }

    // ---- time ----------------------------------------------------------------------------

    /// Moves time to `to`, writing the optional records that fall due on the way (when the
    /// header declares them) at their time.
    fn tick_to(&mut self, to: u64) {
        if to <= self.now {
            return;
        }
        let mut due: Vec<(u64, usize, bool)> = Vec::new();
        // (A twist: the queue notices a lease's end late, past its detection bound.)
        let late = self.twisted(30);
        for (i, j) in self.jobs.iter().enumerate() {
            if self.h.emits[0] && j.place == Place::Waiting && j.visible_from <= to {
                due.push((j.visible_from.max(self.now), i, true));
            }
            let end = j.renewed_at + self.lease;
            if self.h.emits[1] && j.lease_held && end < to && !late {
                due.push(((end + 1).max(self.now), i, false));
            }
        }
        due.sort();
        for (at, i, visible) in due {
            self.now = at;
            let ext = self.jobs[i].ext.clone();
            if visible {
                self.jobs[i].place = Place::Ready;
                self.record("visible", json!({ "job": ext }));
            } else {
                let fence = self.jobs[i].fence;
                self.jobs[i].lease_held = false;
                if self.jobs[i].place == Place::Leased {
                    self.jobs[i].place = Place::Ready;
                }
                self.record("lease_expired", json!({ "job": ext, "fence": fence }));
            }
        }
        self.now = to;
    }

    fn pass_time(&mut self, dt: u8) {
        let s = self.scale;
        let step = match dt % 16 {
            0..=6 => 0,
            7 | 8 => s,
            9..=13 => s * (1 + self.rng.below(self.h.lease / 5 + 1)),
            14 => self.lease / 2 + self.rng.below(self.lease),
            _ => self.lease * (1 + self.rng.below(3)),
        };
        self.tick_to(self.now + step);
    }

    // ---- actions -------------------------------------------------------------------------

    fn act(&mut self, a: &Action) {
        self.rng = Rng(self.p.seed ^ a.seed);
        self.twist = a.roll < self.p.twist_rate;
        self.pass_time(a.dt);
        match a.kind % 100 {
            0..=8 => self.enqueue(),
            9..=61 => {
                if let Some(j) = self.pick_to_advance() {
                    self.advance(j);
                }
            }
            62..=69 => self.relay(),
            70..=79 => self.consumer(),
            80..=87 => self.operator(),
            88..=91 => self.depth(),
            92..=95 => self.worker_event(),
            _ => {
                let far = self.lease * (1 + self.rng.below(4));
                self.tick_to(self.now + far);
            }
        }
        self.twist = false;
    }

    /// The job a worker or the queue takes up next: mostly the oldest unfinished one, or one
    /// under a live lease, so lifecycles run deep; sometimes any unfinished one.
    fn pick_to_advance(&mut self) -> Option<usize> {
        let open = (0..self.jobs.len()).filter(|j| self.jobs[*j].terminal.is_none());
        match self.rng.below(4) {
            0 | 1 => open.min(),
            2 => {
                let live: Vec<usize> = open.filter(|j| self.live(*j)).collect();
                match live.is_empty() {
                    true => self.pick_job(false),
                    false => Some(self.rng.pick(&live)),
                }
            }
            _ => self.pick_job(false),
        }
    }

    /// A job: an unfinished one (a twist: any).
    fn pick_job(&mut self, any: bool) -> Option<usize> {
        let open: Vec<usize> = (0..self.jobs.len())
            .filter(|j| any || self.twisted(20) || self.jobs[*j].terminal.is_none())
            .collect();
        (!open.is_empty()).then(|| self.rng.pick(&open))
    }

    fn job_ext(&mut self) -> Value {
        let n = self.jobs.len() as u64;
        match (self.p.ids[0], n % 2) {
            (0, _) | (2, 0) => json!(n * 7 + 3),
            _ => json!(format!(
                "{:08x}-{:04x}-4f11-8e3d-{:012x}",
                self.rng.next() as u32,
                n,
                self.rng.next() >> 16
            )),
        }
    }

    fn key_of(&self, tenant: usize, document: &str, version: u32) -> String {
        format!("{}:{document}:v{version}", TENANTS[tenant])
    }

    /// Creates a job (writing its `enqueued`); `of`: the reprocessed job it comes from.
    #[allow(clippy::too_many_arguments)]
    fn new_job(
        &mut self,
        tenant: usize,
        document: &'static str,
        version: u32,
        operation: &'static str,
        content: u64,
        of: Option<usize>,
    ) -> usize {
        let ext = self.job_ext();
        let mut key = self.key_of(tenant, document, version);
        if self.twisted(15) {
            // A key that does not embed the job's tenant.
            key = match self.rng.chance(50) {
                true => format!("{document}:v{version}"),
                false => self.key_of((tenant + 1) % 3, document, version),
            };
        }
        let delayed = self.rng.chance(15);
        let visible_from = match delayed {
            true => self.now + self.scale * (1 + self.rng.below(self.h.lease)),
            false => self.now,
        };
        let j = self.jobs.len();
        self.jobs.push(Job {
            ext: ext.clone(),
            tenant,
            document,
            version,
            key: key.clone(),
            operation,
            content,
            enqueued_at: self.now,
            deadline_at: self.now + self.deadline,
            visible_from,
            place: if delayed {
                Place::Waiting
            } else {
                Place::Ready
            },
            leases: 0,
            failures: 0,
            fence: 0,
            holder: 0,
            issued: Vec::new(),
            renewed_at: 0,
            lease_held: false,
            abandoned: false,
            phase: Phase::Idle,
            failure: None,
            terminal: None,
            dlq: 0,
            dead_at: 0,
            reprocessed: false,
        });
        let payload = self.hash_value(document, operation, content);
        let deadline_at = self.value(self.now + self.deadline);
        let visible_at = match delayed || self.computed() {
            true => json!(visible_from),
            false => Value::Null,
        };
        let reprocess_of = of.map(|o| self.jobs[o].ext.clone());
        self.record(
            "enqueued",
            json!({
                "job": ext, "tenant": TENANTS[tenant], "key": key, "operation": operation,
                "content": format!("{content:x}"), "payload": payload, "visible_at": visible_at,
                "deadline_at": deadline_at, "reprocess_of": reprocess_of,
            }),
        );
        let k = self.keys.entry(key).or_default();
        k.newest = Some(j);
        j
    }

    fn enqueue(&mut self) {
        let tenant = self.rng.below(self.h.tenants as u64) as usize;
        let resubmit = !self.jobs.is_empty() && self.rng.chance(35);
        if !resubmit {
            let document = self.rng.pick(&DOCUMENTS);
            let version = 1 + self.rng.below(2) as u32;
            let key = self.key_of(tenant, document, version);
            if self.keys.get(&key).is_some_and(|k| k.newest.is_some()) {
                return self.resubmit(key, tenant, None);
            }
            let operation = if self.rng.chance(85) {
                "extract"
            } else {
                "classify"
            };
            let content = if self.rng.chance(50) {
                0
            } else {
                self.rng.below(5)
            };
            self.new_job(tenant, document, version, operation, content, None);
            return;
        }
        let j = self.rng.below(self.jobs.len() as u64) as usize;
        let (key, tenant) = (self.jobs[j].key.clone(), self.jobs[j].tenant);
        let tenant = match self.twisted(15) {
            true => (tenant + 1) % 3,
            false => tenant,
        };
        self.resubmit(key, tenant, Some(j));
    }

    /// A submit of a known key, resolved as the header's `unique` mode calls for.
    fn resubmit(&mut self, key: String, tenant: usize, hint: Option<usize>) {
        let Some(n) = self.keys.get(&key).and_then(|k| k.newest) else {
            return;
        };
        let same = self.rng.chance(60);
        let (operation, content) = match same {
            true => (self.jobs[n].operation, self.jobs[n].content),
            false => ("extract", 100 + self.rng.below(3)),
        };
        let terminal = self.jobs[n].terminal.is_some();
        let leased = self.jobs[n].lease_held;
        // 0 a new job, 1 a dedupe, 2 a refusal, 3 a replace.
        let mut how = match self.h.unique {
            0 => 1 + !same as u8,
            1 => 0,
            2 if terminal => 0,
            2 => 1,
            3 if terminal => 0,
            3 => 2,
            _ if terminal || leased => 0,
            _ => 3,
        };
        // Modes that dedupe or replace whatever the payload: submit the same one.
        let (operation, content) = match how {
            1 | 3 if self.h.unique != 0 => (self.jobs[n].operation, self.jobs[n].content),
            _ => (operation, content),
        };
        if self.twisted(40) {
            how = self.rng.below(4) as u8;
        }
        let mut existing = n;
        if self.twisted(20) {
            existing = hint.unwrap_or(self.rng.below(self.jobs.len() as u64) as usize);
        }
        let ext = self.jobs[existing].ext.clone();
        let document = self.jobs[n].document;
        let payload = self.hash_value(document, operation, content);
        let common = json!({
            "tenant": TENANTS[tenant], "key": key, "operation": operation,
            "content": format!("{content:x}"), "payload": payload, "existing": ext,
        });
        let mut fields = common.as_object().unwrap().clone();
        match how {
            0 => {
                let (doc, version) = (self.jobs[n].document, self.jobs[n].version);
                self.new_job(tenant, doc, version, operation, content, None);
            }
            1 => self.record("enqueue_deduped", Value::Object(fields)),
            2 => {
                let e = &self.jobs[existing];
                let (eo, ec) = (e.operation, e.content);
                let h = self.hash_value(document, eo, ec);
                fields.insert("existing_payload".into(), h);
                self.record("enqueue_conflict", Value::Object(fields));
            }
            _ => {
                let e = &self.jobs[existing];
                let (eo, ec) = (e.operation, e.content);
                fields.insert("replaced_operation".into(), json!(eo));
                fields.insert("replaced_content".into(), json!(format!("{ec:x}")));
                let h = self.hash_value(document, eo, ec);
                fields.insert("replaced_payload".into(), h);
                self.record("enqueue_replaced", Value::Object(fields));
                self.jobs[existing].operation = operation;
                self.jobs[existing].content = content;
            }
        }
    }

    /// A worker: the holder's or another.
    fn worker(&mut self) -> usize {
        self.rng.below(self.workers.len() as u64) as usize
    }

    /// One step of job `j`'s life, as a correct pipeline takes it (a twist: a wrong one).
    fn advance(&mut self, j: usize) {
        let job = &self.jobs[j];
        if job.terminal.is_some() {
            // Only a twist picks a finished job: a lease or a write accepted after its end.
            if self.twisted(30) {
                return self.lease(j);
            }
            return self.zombie_write(j, true);
        }
        if job.abandoned && self.live(j) {
            // Its holder crashed: the job waits for the lease to run out (a twist: not).
            if !self.twisted(40) {
                let end = self.end(j) + 1;
                self.tick_to(end);
            }
            return self.pick_up(j);
        }
        if job.failure.is_some() && job.lease_held {
            return self.decide(j);
        }
        if self.live(j) {
            if self.twisted(15) {
                // Another lease while this one is live.
                return self.lease(j);
            }
            return self.holder_step(j);
        }
        self.pick_up(j);
    }

    /// The queue picks job `j` up (it is not leased): a lease, or at pick time a cancel past the
    /// deadline or a DLQ entry out of attempts.
    fn pick_up(&mut self, j: usize) {
        if self.jobs[j].visible_from > self.now && !self.twisted(50) {
            let to = self.jobs[j].visible_from;
            self.tick_to(to);
        }
        let (deadline_at, ext) = (self.jobs[j].deadline_at, self.jobs[j].ext.clone());
        if self.now > deadline_at && !self.twisted(40) {
            let d = self.value(deadline_at);
            self.record("cancelled", json!({ "job": ext, "deadline_at": d }));
            return self.finish(j, Term::Cancelled);
        }
        let leases = self.jobs[j].leases;
        if leases >= self.h.attempts_max && !self.twisted(40) {
            let attempts = self.value(leases as u64);
            self.make_room();
            self.record(
                "dead_lettered",
                json!({ "job": ext, "attempts": attempts, "reason": "max_attempts_exceeded" }),
            );
            return self.dead_letter(j);
        }
        self.lease(j);
    }

    fn lease(&mut self, j: usize) {
        let worker = self.worker();
        let mut fence = self.next_fence.max(self.jobs[j].fence + 1);
        if self.twisted(25) && self.jobs[j].leases > 0 {
            fence = self.jobs[j].fence.saturating_sub(self.rng.below(2));
        }
        self.next_fence = fence.max(self.next_fence) + 1 + self.rng.below(2);
        let visible = self.jobs[j].visible_from;
        let job = &mut self.jobs[j];
        job.leases += 1;
        job.fence = fence;
        job.holder = worker;
        job.issued.push((fence, worker));
        job.renewed_at = self.now;
        job.lease_held = true;
        job.abandoned = false;
        job.place = Place::Leased;
        job.phase = Phase::Idle;
        job.failure = None;
        let (ext, n) = (job.ext.clone(), job.leases);
        let attempt = self.value(n as u64);
        let lease_until = self.value(self.now + self.lease);
        let visible_at = self.value(visible);
        let w = self.workers[worker].clone();
        self.record(
            "leased",
            json!({ "job": ext, "worker": w, "fence": fence, "attempt": attempt,
                    "lease_until": lease_until, "visible_at": visible_at }),
        );
    }

    /// The holder of a live lease works: heartbeats, extracts, fails, commits, acks.
    fn holder_step(&mut self, j: usize) {
        let job = self.jobs[j].clone();
        let (ext, fence) = (job.ext.clone(), job.fence);
        let mut worker = job.holder;
        if self.twisted(15) {
            worker = self.worker();
        }
        let w = self.workers[worker].clone();
        let detours = !self.settling;
        if detours && self.rng.chance(20) {
            if self.jobs[j].fence == fence && worker == job.holder {
                self.jobs[j].renewed_at = self.now;
            }
            let lease_until = self.value(self.now + self.lease);
            return self.record(
                "heartbeat",
                json!({ "job": ext, "worker": w, "fence": fence, "lease_until": lease_until }),
            );
        }
        if detours && self.rng.chance(6) {
            let (ty, field) = self.rng.pick(&[
                ("stall_began", "stall"),
                ("pause_began", "pause"),
                ("heartbeat_delayed", "delay"),
            ]);
            let len = self.scale * (1 + self.rng.below(self.h.lease));
            return self.record(
                ty,
                json!({ "worker": w, "job": ext, "fence": fence, field: len }),
            );
        }
        if self.now > job.deadline_at && job.phase != Phase::Committed && self.rng.chance(60) {
            return self.fail(j, worker, "deadline_exceeded");
        }
        if job.phase != Phase::Committed && self.twisted(12) {
            // An ack with no result of its own.
            self.record("acked", json!({ "job": ext, "worker": w, "fence": fence }));
            return self.finish(j, Term::Acked);
        }
        match job.phase {
            Phase::Idle => {
                let stalled = self.rng.chance(5);
                self.jobs[j].phase = Phase::Extracting(self.now);
                self.record(
                    "extract_started",
                    json!({ "job": ext, "worker": w, "fence": fence, "stalled": if stalled { json!(true) } else { Value::Null } }),
                );
            }
            Phase::Extracting(started) => {
                if detours && self.rng.chance(25) {
                    let error = match self.rng.below(10) {
                        0..=2 => "schema_invalid",
                        _ => "provider_unavailable",
                    };
                    return self.fail(j, worker, error);
                }
                let mut inference = self.rng.below(self.now - started + 1);
                if self.twisted(20) {
                    inference = self.now - started + 1 + self.rng.below(100);
                }
                let output = payload_hash(job.document, "out", job.content ^ self.rng.below(2));
                self.jobs[j].phase = Phase::Extracted(output);
                self.record(
                    "extract_done",
                    json!({ "job": ext, "worker": w, "fence": fence, "inference": inference,
                            "output": format!("{output:x}") }),
                );
            }
            Phase::Extracted(output) => self.commit(j, worker, output),
            Phase::Committed => {
                if detours && self.rng.chance(8) {
                    return self.crash(j, "after_commit_before_ack");
                }
                self.record("acked", json!({ "job": ext, "worker": w, "fence": fence }));
                self.finish(j, Term::Acked);
            }
        }
    }

    /// The holder commits its result: a new result and its outbox event, a dedupe onto the key's
    /// same-payload result, or a refusal of another payload (then a permanent failure).
    fn commit(&mut self, j: usize, worker: usize, output: u64) {
        let job = self.jobs[j].clone();
        let w = self.workers[worker].clone();
        let mut key = job.key.clone();
        if self.twisted(10) {
            key = self.key_of(job.tenant, job.document, job.version + 1);
        }
        let payload = self.hash_value(job.document, job.operation, job.content);
        let mut first = self.keys.get(&key).and_then(|k| k.first);
        if self.twisted(30) {
            // A second result for the key.
            first = None;
        }
        match first {
            None => {
                let naive = self.rng.chance(12);
                let event = (!naive).then(|| self.new_event(&key, j, output));
                let ev = event.map(|e| self.events[e].ext.clone());
                self.record(
                    "result_committed",
                    json!({ "job": job.ext, "worker": w, "key": key, "payload": payload,
                            "output": format!("{output:x}"), "event": ev }),
                );
                if let Some(e) = event {
                    self.pending.push_back(e);
                }
                if self.twisted(25) {
                    // The same attempt's result written twice.
                    let again = self.new_event(&key, j, output);
                    let ev = self.events[again].ext.clone();
                    self.record(
                        "result_committed",
                        json!({ "job": job.ext, "worker": w, "key": key, "output": format!("{output:x}"), "event": ev }),
                    );
                    self.pending.push_back(again);
                }
                let k = self.keys.entry(key.clone()).or_default();
                k.first
                    .get_or_insert((j, output, event, (job.operation, job.content)));
                self.jobs[j].phase = Phase::Committed;
                if naive {
                    // The worker publishes itself, with no outbox row.
                    let e = self.new_event(&key, j, output);
                    self.publish(e, true);
                }
            }
            Some((_, _, event, p)) if p == (job.operation, job.content) => {
                let existing = self.hash_value(job.document, p.0, p.1);
                let ev = event.map(|e| self.events[e].ext.clone());
                let ev = match self.computed() {
                    true => ev.unwrap_or(Value::Null),
                    false => Value::Null,
                };
                self.record(
                    "commit_deduped",
                    json!({ "job": job.ext, "worker": w, "key": key, "payload": payload,
                            "output": format!("{output:x}"), "existing_payload": existing,
                            "existing_event": ev }),
                );
                self.jobs[j].phase = Phase::Committed;
            }
            Some((_, _, _, p)) => {
                let existing = self.hash_value(job.document, p.0, p.1);
                self.record(
                    "commit_conflict",
                    json!({ "job": job.ext, "worker": w, "key": key, "payload": payload,
                            "existing_payload": existing }),
                );
                self.fail(j, worker, "payload_conflict");
            }
        }
    }

    fn new_event(&mut self, key: &str, job: usize, output: u64) -> usize {
        let n = self.events.len() as u64;
        let ext = match (self.p.ids[2], n % 2) {
            (0, _) | (2, 0) => json!(self.next_event_id),
            _ => json!(format!("evt-{:x}", self.rng.next() >> 20)),
        };
        self.next_event_id += 1;
        self.events.push(Ev {
            ext,
            // Named in the record that follows.
            interned: n + 1,
            key: key.to_string(),
            job,
            output,
            published: false,
            applies: 0,
            reviews: 0,
        });
        self.events.len() - 1
    }

    fn fail(&mut self, j: usize, worker: usize, error: &'static str) {
        let job = &self.jobs[j];
        let (ext, fence) = (job.ext.clone(), job.fence);
        let class = match error {
            "provider_unavailable" => "transient",
            "schema_invalid" | "payload_conflict" if self.h.permanent_retry => "transient",
            "schema_invalid" | "payload_conflict" => "permanent",
            _ => "cancelled",
        };
        let class = match (self.computed(), self.twisted(20)) {
            (_, true) => json!("permanent"),
            (true, _) => json!(class),
            _ => Value::Null,
        };
        let w = self.workers[worker].clone();
        self.record(
            "attempt_failed",
            json!({ "job": ext, "worker": w, "fence": fence, "error": error, "class": class }),
        );
        let job = &mut self.jobs[j];
        job.failure = Some((fence, error, self.now));
        job.failures += 1;
        job.phase = Phase::Idle;
    }

    /// The retry delay bounds after attempt `n` (docs/history-format.md's table).
    fn bounds(&self, n: u32, left: u64) -> (u64, u64) {
        let s = self.scale;
        let n = n.max(1);
        let jit = |mode: u8, d: u64, pct: u32, step: u64| -> (u64, u64) {
            let p = d * pct as u64 / 100;
            match mode {
                0 => (d, d),
                1 => (0, d),
                2 => (d / 2, d),
                3 => (d.saturating_sub(p), d + p),
                4 => (d, d + p),
                _ => (d, (d + step * n as u64).saturating_sub(1).max(d)),
            }
        };
        match &self.h.backoff {
            BackoffPlan::Capped { base, cap, jitter } => {
                let d = (base * s).saturating_mul(1 << (n - 1).min(40)).min(cap * s);
                jit(*jitter, d, 0, 0)
            }
            BackoffPlan::Formula {
                formula,
                unit,
                cap,
                offset,
                index_from,
                jitter,
                pct,
                step,
                ..
            } => {
                let (u, o) = (unit * s, offset * s);
                let cap = cap.map_or(u64::MAX, |c| c * s);
                let e = [
                    2_718u64, 7_389, 20_086, 54_598, 148_413, 403_429, 1_096_633, 2_980_958,
                    8_103_084, 22_026_466,
                ];
                let d = match formula {
                    0 => u.saturating_mul(1 << (n - 1).min(40)).min(cap),
                    1 => (o + u.saturating_mul(1 << n.min(40))).min(cap),
                    2 => (u.saturating_mul((n.saturating_sub(*index_from) as u64).pow(4)) + o)
                        .min(cap),
                    3 => (u * e[n.min(10) as usize - 1] / 1000).min(cap),
                    4 => 0,
                    // What is left of the lease, uncapped.
                    _ => left,
                };
                jit(*jitter, d, *pct, step * s)
            }
        }
    }

    /// The holder's decision on its failed attempt, as the policy calls for.
    fn decide(&mut self, j: usize) {
        let job = self.jobs[j].clone();
        let (fence, error, at) = job.failure.expect("a failure to decide");
        let w = self.workers[job.holder].clone();
        let class = match error {
            "provider_unavailable" => "transient",
            "schema_invalid" | "payload_conflict" if self.h.permanent_retry => "transient",
            "schema_invalid" | "payload_conflict" => "permanent",
            _ => "cancelled",
        };
        let failures = matches!(self.h.backoff, BackoffPlan::Formula { failures: true, .. });
        let used = if failures { job.failures } else { job.leases };
        // 0 retry, 1 DLQ permanent, 2 DLQ out of attempts, 3 cancel.
        let mut call = match class {
            "permanent" => 1,
            "transient" if at > job.deadline_at => 3,
            "transient" if used < self.h.attempts_max => 0,
            "transient" => 2,
            _ => 3,
        };
        if self.twisted(50) {
            call = self.rng.below(4);
        }
        let ext = job.ext.clone();
        match call {
            0 => {
                let n = if failures { job.failures } else { job.leases };
                let left = (job.renewed_at + self.lease).saturating_sub(self.now);
                let (lo, hi) = self.bounds(n, left);
                let mut delay = lo + self.rng.below(hi - lo + 1);
                if self.twisted(40) {
                    delay = hi + 1 + self.rng.below(10);
                }
                let visible_at = self.now + delay;
                let attempt = self.value(job.leases as u64);
                self.record(
                    "retry_scheduled",
                    json!({ "job": ext, "worker": w, "fence": fence, "attempt": attempt, "visible_at": visible_at }),
                );
                let job = &mut self.jobs[j];
                job.failure = None;
                job.lease_held = false;
                job.visible_from = visible_at;
                job.place = Place::Waiting;
                job.phase = Phase::Idle;
            }
            1 | 2 => {
                let mut reason = ["permanent_error", "max_attempts_exceeded"][call as usize - 1];
                if self.twisted(60) {
                    reason = "provider said: 503 Service Unavailable";
                }
                let attempts = self.value(job.leases as u64);
                self.make_room();
                self.record(
                    "dead_lettered",
                    json!({ "job": ext, "worker": w, "fence": fence, "attempts": attempts, "reason": reason }),
                );
                self.dead_letter(j);
            }
            _ => {
                let d = self.value(job.deadline_at);
                self.record(
                    "cancelled",
                    json!({ "job": ext, "worker": w, "fence": fence, "deadline_at": d }),
                );
                self.finish(j, Term::Cancelled);
            }
        }
    }

    /// Before a DLQ entry: a full DLQ evicts its oldest entry (a twist: does not, or evicts
    /// another).
    fn make_room(&mut self) {
        let Some(c) = self.h.dlq_capacity else { return };
        if self.dlq.len() < c as usize || self.twisted(50) {
            return;
        }
        let mut victim = self.dlq[0];
        if self.twisted(40) {
            victim = *self.dlq.back().unwrap();
        }
        let ext = self.jobs[victim].ext.clone();
        let cap = self.value(c as u64);
        self.evicted += 1;
        self.record("dlq_evicted", json!({ "job": ext, "capacity": cap }));
        self.dlq.retain(|x| *x != victim);
        self.jobs[victim].dlq = 2;
    }

    fn dead_letter(&mut self, j: usize) {
        self.dead_lettered += 1;
        self.dlq.push_back(j);
        self.jobs[j].dlq = 1;
        self.jobs[j].dead_at = self.now;
        self.finish(j, Term::DeadLettered);
    }

    fn finish(&mut self, j: usize, t: Term) {
        let job = &mut self.jobs[j];
        job.lease_held = false;
        job.place = Place::Done;
        if job.terminal.is_none() {
            job.terminal = Some(t);
        }
    }

    fn crash(&mut self, j: usize, point: &str) {
        let job = &self.jobs[j];
        let (ext, fence, holder) = (job.ext.clone(), job.fence, job.holder);
        let w = self.workers[holder].clone();
        self.record(
            "worker_crashed",
            json!({ "worker": w, "job": ext, "fence": fence, "point": point }),
        );
        self.crashed.insert(holder);
        // The lease stays until it runs out; the work is lost.
        self.jobs[j].phase = Phase::Idle;
        self.jobs[j].abandoned = true;
    }

    /// A write of job `j` by a holder who is not (or no longer) its current one: refused as a
    /// correct queue refuses it (a twist: accepted).
    fn zombie_write(&mut self, j: usize, finished: bool) {
        let job = self.jobs[j].clone();
        let stale: Vec<(u64, usize)> = job
            .issued
            .iter()
            .copied()
            .filter(|(f, _)| *f != job.fence || finished)
            .collect();
        if stale.is_empty() {
            return;
        }
        let (fence, worker) = self.rng.pick(&stale);
        let w = self.workers[worker].clone();
        let op = self.rng.pick(&["heartbeat", "ack", "retry"]);
        if self.twisted(50) {
            // Accepted: the queue did not check.
            let ty = match op {
                "heartbeat" => "heartbeat",
                "ack" => "acked",
                _ => "retry_scheduled",
            };
            let mut f = json!({ "job": job.ext, "worker": w, "fence": fence });
            if ty == "retry_scheduled" {
                f["visible_at"] = json!(self.now + self.scale);
            }
            self.record(ty, f);
            match ty {
                "acked" => self.finish(j, Term::Acked),
                "retry_scheduled" => {
                    let job = &mut self.jobs[j];
                    job.lease_held = false;
                    job.visible_from = self.now + self.scale;
                    job.place = Place::Waiting;
                }
                _ => {}
            }
            return;
        }
        let reason = match job.terminal {
            Some(Term::Acked) => "acked",
            Some(Term::DeadLettered) => "dead_lettered",
            Some(Term::Cancelled) => "cancelled",
            None => "stale_fence",
        };
        let reason = if self.twisted(40) {
            "stale_fence"
        } else {
            reason
        };
        let held = if self.twisted(30) {
            job.fence + 1
        } else {
            job.fence
        };
        let held = if self.computed() || self.twist {
            json!(held)
        } else {
            Value::Null
        };
        self.record(
            "rejected",
            json!({ "job": job.ext, "worker": w, "op": op, "presented": fence, "held": held, "reason": reason }),
        );
    }

    // ---- delivery ------------------------------------------------------------------------

    fn publish(&mut self, e: usize, direct: bool) {
        let ev = self.events[e].clone();
        let first = !ev.published;
        let mut output = ev.output;
        if self.twisted(20) {
            output ^= 1;
        }
        let job = self.jobs[ev.job].ext.clone();
        let send = match (first, self.computed()) {
            (_, false) => Value::Null,
            (true, true) => json!(1),
            (false, true) => json!(2),
        };
        self.record(
            "published",
            json!({ "event": ev.ext, "key": ev.key, "job": job, "output": format!("{output:x}"),
                    "send": send,
                    "direct": if direct { json!(true) } else { Value::Null } }),
        );
        self.events[e].published = true;
    }

    fn relay(&mut self) {
        if self.twisted(15) {
            // An event no commit wrote.
            if let Some(j) = self.pick_job(true) {
                let key = self.jobs[j].key.clone();
                let e = self.new_event(&key, j, 0xbad);
                let direct = self.rng.chance(30);
                return self.publish(e, direct);
            }
        }
        if let Some(e) = self
            .pending
            .iter()
            .copied()
            .find(|e| !self.events[*e].published)
        {
            return self.publish(e, false);
        }
        let published = self
            .pending
            .iter()
            .take_while(|e| self.events[**e].published)
            .count();
        if published > 0 {
            let mut count = published as u64;
            if self.twisted(30) {
                count += 1 + self.rng.below(2);
            }
            if self.rng.chance(25) {
                // The relay dies before marking; it sends the batch again later.
                self.record("relay_crashed", json!({ "unmarked": count }));
                for i in 0..published.min(count as usize) {
                    let e = self.pending[i];
                    self.publish(e, false);
                }
                return;
            }
            self.record("marked_published", json!({ "count": count }));
            for _ in 0..count {
                // Rows written with a result (not more than were written: see `pruned`).
                self.marked += self.pending.pop_front().is_some() as u64;
            }
            if self.rng.chance(10) && self.marked > self.pruned {
                // At most the rows marked and not yet pruned: more makes `verify` panic (the
                // report of issue 27's reference, finding F2).
                let rows = 1 + self.rng.below(self.marked - self.pruned);
                self.pruned += rows;
                self.record("outbox_pruned", json!({ "rows": rows }));
            }
        }
    }

    fn consumer(&mut self) {
        let published: Vec<usize> = (0..self.events.len())
            .filter(|e| self.events[*e].published || self.twisted(15))
            .collect();
        if published.is_empty() {
            return;
        }
        let e = self.rng.pick(&published);
        let ev = self.events[e].clone();
        if ev.applies > ev.reviews && self.rng.chance(40) {
            return self.review(e);
        }
        let key_applied = self.keys.get(&ev.key).is_some_and(|k| k.applied);
        if (ev.applies > 0 || key_applied) && !self.twisted(60) {
            if ev.applies > 0 || self.twisted(50) {
                self.record("duplicate_event", json!({ "event": ev.ext, "key": ev.key }));
            }
            return;
        }
        self.apply(e);
    }

    fn apply(&mut self, e: usize) {
        let ev = self.events[e].clone();
        let job = self.jobs[ev.job].ext.clone();
        let mut output = ev.output;
        if self.twisted(40) {
            output ^= 2;
        }
        self.record(
            "effect_applied",
            json!({ "event": ev.ext, "key": ev.key, "job": job, "output": format!("{output:x}") }),
        );
        self.events[e].applies += 1;
        self.keys.entry(ev.key.clone()).or_default().applied = true;
        if !self.settling && self.rng.chance(10) {
            // The consumer dies right after applying; the relay sends it again. Its `event` is
            // a number (the reader does not map it): the event's own, or for a string id the
            // number the reader gives the event.
            let n = ev.ext.as_u64().unwrap_or(ev.interned);
            self.record("consumer_crashed", json!({ "job": job, "event": n }));
        }
    }

    fn review(&mut self, e: usize) {
        let ev = self.events[e].clone();
        let job = self.jobs[ev.job].ext.clone();
        self.record(
            "review_done",
            json!({ "event": ev.ext, "key": ev.key, "job": job }),
        );
        self.events[e].reviews += 1;
    }

    // ---- operators, samples, workers -----------------------------------------------------

    fn operator(&mut self) {
        match self.rng.below(10) {
            0..=4 => self.reprocess(),
            5 | 6 => self.refuse(),
            7 if self.twist && self.h.dlq_capacity.is_some() => {
                // An eviction from a DLQ that is not full, or not of its oldest entry.
                if let Some(j) = self
                    .pick_job(true)
                    .filter(|_| self.evicted < self.dead_lettered)
                {
                    let ext = self.jobs[j].ext.clone();
                    let c = self.h.dlq_capacity;
                    self.evicted += 1;
                    self.record("dlq_evicted", json!({ "job": ext, "capacity": c }));
                    self.dlq.retain(|x| *x != j);
                    self.jobs[j].dlq = 2;
                }
            }
            7 => self.expire_dlq(),
            _ => {
                if let Some(j) = self.pick_job(false) {
                    let (ext, doc, op) = (
                        self.jobs[j].ext.clone(),
                        self.jobs[j].document,
                        self.jobs[j].operation,
                    );
                    let content = 200 + self.rng.below(3);
                    let payload = self.hash_value(doc, op, content);
                    self.record(
                        "payload_mutated",
                        json!({ "job": ext, "content": format!("{content:x}"), "payload": payload }),
                    );
                    self.jobs[j].content = content;
                }
            }
        }
    }

    fn recent(&self, tenant: usize) -> u64 {
        let Some((_, window)) = self.h.reprocess_limit else {
            return 0;
        };
        let window = window * self.scale;
        self.reprocesses.get(&tenant).map_or(0, |ts| {
            ts.iter().filter(|t| *t + window > self.now).count() as u64
        })
    }

    fn reprocess(&mut self) {
        let held: Vec<usize> = (0..self.jobs.len())
            .filter(|j| {
                let x = &self.jobs[*j];
                (x.dlq == 1 && !x.reprocessed) || self.twisted(10)
            })
            .collect();
        if held.is_empty() {
            return;
        }
        let o = self.rng.pick(&held);
        let old = self.jobs[o].clone();
        let limited = self
            .h
            .reprocess_limit
            .is_some_and(|(max, _)| self.recent(old.tenant) >= max as u64);
        let next = self.key_of(old.tenant, old.document, old.version + 1);
        let exists = self.keys.get(&next).is_some_and(|k| k.newest.is_some());
        if (limited || exists) && !self.twisted(50) {
            let reason = if limited {
                "rate_limited"
            } else {
                "version_exists"
            };
            return self.record(
                "reprocess_refused",
                json!({ "job": old.ext, "operator": "ops-bot", "reason": reason }),
            );
        }
        let version = if self.twisted(20) {
            old.version
        } else {
            old.version + 1
        };
        let n = self.new_job(
            old.tenant,
            old.document,
            version,
            old.operation,
            old.content,
            Some(o),
        );
        if self.twisted(20) {
            return; // No audit entry.
        }
        let operator = if self.twisted(15) { " " } else { "ops-bot" };
        let new_ext = self.jobs[n].ext.clone();
        self.record(
            "reprocessed",
            json!({ "old_job": old.ext, "new_job": new_ext, "operator": operator }),
        );
        self.jobs[o].reprocessed = true;
        self.reprocesses
            .entry(old.tenant)
            .or_default()
            .push(self.now);
    }

    fn refuse(&mut self) {
        if self.rng.chance(10) {
            let reason = if self.twisted(50) {
                "evicted"
            } else {
                "no_such_job"
            };
            return self.record(
                "reprocess_refused",
                json!({ "operator": "ops-bot", "reason": reason }),
            );
        }
        let Some(j) = self.pick_job(true) else { return };
        let x = self.jobs[j].clone();
        let mut reasons = Vec::new();
        if x.terminal != Some(Term::DeadLettered) {
            reasons.push("not_dead_lettered");
        }
        if x.terminal == Some(Term::Cancelled) {
            reasons.push("cancelled_is_terminal");
        }
        if x.reprocessed {
            reasons.push("already_reprocessed");
        }
        if x.dlq == 2 {
            reasons.push("evicted");
        }
        if self
            .h
            .reprocess_limit
            .is_some_and(|(max, _)| self.recent(x.tenant) >= max as u64)
        {
            reasons.push("rate_limited");
        }
        let missing = reasons.is_empty() || self.rng.chance(15);
        if missing {
            reasons.push("missing_operator");
        }
        let mut reason = self.rng.pick(&reasons);
        if self.twisted(60) {
            reason = self.rng.pick(&[
                "evicted",
                "already_reprocessed",
                "version_exists",
                "rate_limited",
                "no_such_job",
            ]);
        }
        let operator = if reason == "missing_operator" && !self.twist {
            Value::Null
        } else {
            json!("ops-bot")
        };
        self.record(
            "reprocess_refused",
            json!({ "job": x.ext, "operator": operator, "reason": reason }),
        );
    }

    /// A DLQ entry past its retention is deleted.
    fn expire_dlq(&mut self) {
        let Some((after, from_enqueue)) = self.h.dlq_retention else {
            return;
        };
        let after = after * self.scale;
        let old = self.dlq.iter().copied().find(|j| {
            let x = &self.jobs[*j];
            let from = if from_enqueue {
                x.enqueued_at
            } else {
                x.dead_at
            };
            self.now - from > after || self.twist
        });
        if let Some(j) = old.filter(|_| self.evicted < self.dead_lettered) {
            let ext = self.jobs[j].ext.clone();
            self.evicted += 1;
            self.record("dlq_evicted", json!({ "job": ext, "retention": after }));
            self.dlq.retain(|x| *x != j);
            self.jobs[j].dlq = 2;
        }
    }

    /// The depth a correct recorder samples: jobs visible, unleased and not finished, as
    /// docs/checker-rules.md places them (a transition due this very tick not yet taken).
    fn depth(&mut self) {
        if !self.h.emits[2] {
            return;
        }
        let t = self.now;
        let mut depth = 0u64;
        for j in &self.jobs {
            let end = j.renewed_at + self.lease;
            depth += match j.place {
                Place::Ready => 1,
                Place::Waiting => (!self.h.emits[0] && j.visible_from < t) as u64,
                Place::Leased => (!self.h.emits[1] && end + 1 < t) as u64,
                Place::Done => 0,
            };
        }
        if self.twisted(60) {
            depth += 1 + self.rng.below(2);
        }
        self.record("depth_sampled", json!({ "depth": depth }));
    }

    fn worker_event(&mut self) {
        match self.rng.below(4) {
            0 => {
                let live: Vec<usize> = (0..self.jobs.len())
                    .filter(|j| self.live(*j) && self.jobs[*j].terminal.is_none())
                    .collect();
                if !live.is_empty() {
                    let j = self.rng.pick(&live);
                    let point = match self.jobs[j].phase {
                        Phase::Idle => "after_lease",
                        Phase::Committed => "after_commit_before_ack",
                        _ => "after_extract",
                    };
                    self.crash(j, point);
                }
            }
            1 => {
                if let Some(w) = self.crashed.iter().next().copied() {
                    self.crashed.remove(&w);
                    let ext = self.workers[w].clone();
                    self.record("worker_restarted", json!({ "worker": ext }));
                }
            }
            _ => {
                if let Some(j) = self.pick_job(true) {
                    let finished = self.jobs[j].terminal.is_some();
                    self.zombie_write(j, finished);
                }
            }
        }
    }

    // ---- the end -------------------------------------------------------------------------

    /// Drives every job to its end and every result to its review, as a correct pipeline does.
    fn settle(&mut self) {
        self.twist = false;
        self.settling = true;
        for _ in 0..40 * (self.jobs.len() + 1) {
            let Some(j) = (0..self.jobs.len()).find(|j| self.jobs[*j].terminal.is_none()) else {
                break;
            };
            let next = self.now + self.scale;
            self.tick_to(next);
            self.advance(j);
        }
        for _ in 0..4 * (self.events.len() + 2) {
            if let Some(e) = self
                .pending
                .iter()
                .copied()
                .find(|e| !self.events[*e].published)
            {
                self.publish(e, false);
                continue;
            }
            if !self.pending.is_empty() {
                let count = self.pending.len();
                self.record("marked_published", json!({ "count": count }));
                self.pending.clear();
                continue;
            }
            break;
        }
        for e in 0..self.events.len() {
            let ev = self.events[e].clone();
            let key_applied = self.keys.get(&ev.key).is_some_and(|k| k.applied);
            let is_key_event = self
                .keys
                .get(&ev.key)
                .and_then(|k| k.first)
                .is_some_and(|f| f.0 == ev.job && f.1 == ev.output);
            if ev.published && ev.applies == 0 && !key_applied && is_key_event {
                self.apply(e);
            }
            while self.events[e].applies > self.events[e].reviews {
                self.review(e);
            }
        }
    }
}

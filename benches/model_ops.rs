//! The model's hot operations, one call per criterion iteration, through the public API of
//! `durasim::model`: `Queue::{enqueue, lease_next, heartbeat, ack}` and `Outbox::commit`.
//!
//! Sizes follow pipeline-bench v2 (`scenarios/bench-pipeline.toml`): a queue that holds
//! 100,000 jobs, at most 128 of them ready at once (the depth peaks at ~127 at 1M jobs), 160
//! live leases (one per worker), keys of 4 tenants, results for 100,000 keys in the outbox.
//!
//! Operations that change state for good (enqueue, ack, a new commit) run over a pool of jobs
//! or keys; the pool is rebuilt outside the timed section (`iter_custom`), and so is
//! the work a run does between such calls (leasing the enqueued jobs, the relay draining the
//! outbox, putting leased jobs back in the ready heap), so only the calls themselves are timed.
//! Each reported time is per call.
//!
//! Run: `cargo bench --bench model_ops`.

use criterion::{criterion_group, criterion_main, Criterion};
use durasim::base::ids::{DocumentId, Fence, JobId, SimTime, TenantId};
use durasim::model::outbox::{CommitOutcome, Outbox, OutboxConfig};
use durasim::model::queue::{EnqueueOutcome, EnqueueRequest, LeaseOutcome, Queue, QueueConfig};
use durasim::vocab::key::IdempotencyKey;
use durasim::vocab::payload::{Payload, PayloadHash};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Jobs in the queue (and keys in the outbox): a 100,000-job run.
const JOBS: u32 = 100_000;
/// Ready jobs at once: v2's peak queue depth.
const READY: u32 = 128;
/// Live leases at once: v2's worker count.
const LEASED: u32 = 160;
/// Leased jobs acked before the pool is rebuilt (untimed, a clone of a template queue).
const POOL: u32 = 1 << 14;

/// bench-pipeline's queue section. `attempts_max` is unbounded so that the lease bench can put
/// the same jobs back in the ready heap for ever; it changes no cost (one comparison either way).
fn config(attempts_max: u32) -> QueueConfig {
    QueueConfig::new(500, 30_000, attempts_max)
}

/// Keys and payload hashes of jobs 0..JOBS, built once (a run builds them once per job too, at
/// enqueue; the kernel then reads them from the job row), so no timed call pays for them.
struct Inputs {
    keys: Vec<IdempotencyKey>,
    payloads: Vec<PayloadHash>,
}

impl Inputs {
    fn new() -> Inputs {
        Inputs {
            keys: (0..JOBS)
                .map(|i| {
                    IdempotencyKey::new(TenantId((i % 4) as u16), DocumentId(i), 1)
                        .expect("version 1 is valid")
                })
                .collect(),
            payloads: {
                let names = durasim::vocab::key::KeyNames::default();
                (0..JOBS)
                    .map(|i| Payload::of(DocumentId(i)).hash(&names))
                    .collect()
            },
        }
    }

    #[inline]
    fn request(&self, i: u32, now: SimTime) -> EnqueueRequest {
        EnqueueRequest {
            tenant: TenantId((i % 4) as u16),
            key: self.keys[i as usize],
            payload: self.payloads[i as usize],
            visible_at: now,
            reprocess: false,
        }
    }
}

fn lease(q: &mut Queue, now: SimTime) -> (JobId, Fence) {
    match q.lease_next(now) {
        LeaseOutcome::Leased { job, fence, .. } => (job, fence),
        other => panic!("expected a lease, got {other:?}"),
    }
}

/// A queue of `done` terminal (acked) jobs followed by `rest` jobs enqueued at `now` and ready.
fn queue_with_history(
    inputs: &Inputs,
    done: u32,
    rest: u32,
    now: SimTime,
    attempts_max: u32,
) -> Queue {
    let mut q = Queue::with_capacity(config(attempts_max), (done + rest) as usize);
    for i in 0..done {
        q.enqueue(now, inputs.request(i, now));
        let (job, fence) = lease(&mut q, now);
        q.ack(now, job, fence).expect("fresh lease");
    }
    for i in done..done + rest {
        q.enqueue(now, inputs.request(i, now));
    }
    q
}

/// Runs `op(state, i)` for i in 0..iters, timing only the calls; `fresh()` builds a new state
/// (untimed) every `POOL` calls.
fn pooled<S>(
    iters: u64,
    mut fresh: impl FnMut() -> S,
    mut op: impl FnMut(&mut S, u32),
) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(POOL as u64) as u32;
        let mut state = fresh();
        let started = Instant::now();
        for i in 0..n {
            op(&mut state, i);
        }
        total += started.elapsed();
        drop(black_box(state));
        left -= n as u64;
    }
    total
}

/// Like [`pooled`] with a pool of `pool` calls, but times the calls in chunks of `READY` and
/// runs `between(state)` untimed after each chunk (the part of a run that keeps the structures
/// at their usual size).
fn chunked<S>(
    iters: u64,
    pool: u32,
    mut fresh: impl FnMut() -> S,
    mut op: impl FnMut(&mut S, u32),
    mut between: impl FnMut(&mut S),
) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let mut state = fresh();
        let mut i = 0u32;
        while i < pool && left > 0 {
            let n = (left.min(READY as u64) as u32).min(pool - i);
            let started = Instant::now();
            for k in i..i + n {
                op(&mut state, k);
            }
            total += started.elapsed();
            between(&mut state);
            i += n;
            left -= n as u64;
        }
        drop(black_box(state));
    }
    total
}

fn queue_ops(c: &mut Criterion) {
    let inputs = Inputs::new();
    let now: SimTime = 1_000;
    let mut g = c.benchmark_group("queue");
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(3));

    // enqueue: key check (unique index), job row, ready-heap push: the JOBS enqueues of a run
    // into a fresh queue sized for them, as `Sim::new` sizes it. Timed in chunks of READY;
    // between chunks (untimed) the jobs are leased, so the ready heap stays as small as in a run.
    g.bench_function("enqueue", |b| {
        b.iter_custom(|iters| {
            chunked(
                iters,
                JOBS,
                || Queue::with_capacity(config(3), JOBS as usize),
                |q, i| {
                    let out = q.enqueue(now, inputs.request(i, now));
                    debug_assert!(matches!(out, EnqueueOutcome::Created(_)));
                    black_box(out);
                },
                |q| while !matches!(q.lease_next(now), LeaseOutcome::Empty) {},
            )
        })
    });

    // lease_next with READY jobs ready in a queue of JOBS. Timed: READY leases in a row;
    // untimed: the leased jobs go back to ready (retry_at now, make_visible).
    g.bench_function("lease_next", |b| {
        let mut q = queue_with_history(&inputs, JOBS - READY, READY, now, u32::MAX);
        let mut leased = Vec::with_capacity(READY as usize);
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let n = left.min(READY as u64) as usize;
                let started = Instant::now();
                for _ in 0..n {
                    match black_box(q.lease_next(now)) {
                        LeaseOutcome::Leased { job, fence, .. } => leased.push((job, fence)),
                        other => panic!("expected a lease, got {other:?}"),
                    }
                }
                total += started.elapsed();
                for (job, fence) in leased.drain(..) {
                    q.retry_at(now, job, fence, now).expect("current lease");
                    assert!(q.make_visible(now, job, now));
                }
                left -= n as u64;
            }
            total
        })
    });

    // heartbeat by the holders of LEASED live leases in a queue of JOBS, round robin.
    g.bench_function("heartbeat", |b| {
        let mut q = queue_with_history(&inputs, JOBS - LEASED, LEASED, now, 3);
        let holders: Vec<(JobId, Fence)> = (0..LEASED).map(|_| lease(&mut q, now)).collect();
        let mut i = 0usize;
        let mut t = now;
        b.iter(|| {
            let (job, fence) = holders[i];
            i += 1;
            if i == holders.len() {
                i = 0;
                t += 1;
            }
            black_box(q.heartbeat(t, job, fence)).expect("live lease")
        })
    });

    // ack by the current holder: POOL leased jobs (a fresh clone of the template per pool).
    g.bench_function("ack", |b| {
        let mut template = queue_with_history(&inputs, 0, POOL, now, 3);
        let holders: Vec<(JobId, Fence)> = (0..POOL).map(|_| lease(&mut template, now)).collect();
        b.iter_custom(|iters| {
            pooled(
                iters,
                || template.clone(),
                |q, i| {
                    let (job, fence) = holders[i as usize];
                    black_box(q.ack(now, job, fence)).expect("current lease");
                },
            )
        })
    });

    // A stale ack (the zombie's): rejected by the fence check, no state change.
    g.bench_function("ack_stale", |b| {
        let mut q = queue_with_history(&inputs, 0, LEASED, now, 3);
        let holders: Vec<(JobId, Fence)> = (0..LEASED).map(|_| lease(&mut q, now)).collect();
        let mut i = 0usize;
        b.iter(|| {
            let (job, fence) = holders[i];
            i = (i + 1) % holders.len();
            black_box(q.ack(now, job, Fence(fence.0 + 1_000_000))).expect_err("stale")
        })
    });
    g.finish();
}

fn outbox_ops(c: &mut Criterion) {
    let inputs = Inputs::new();
    let (keys, payloads) = (&inputs.keys, &inputs.payloads);
    let mut g = c.benchmark_group("outbox");
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(3));

    // commit of a new key (result row + outbox event, atomically): the JOBS commits of a run
    // into a fresh outbox sized for them, as `Sim::new` sizes it. Timed in chunks of READY;
    // between chunks (untimed) the relay publishes and marks the pending events, as it does
    // every 50 ms (~25 events) in a run.
    g.bench_function("commit_new", |b| {
        b.iter_custom(|iters| {
            chunked(
                iters,
                JOBS,
                || Outbox::with_capacity(OutboxConfig::default(), JOBS as usize),
                |o, i| {
                    let out = o.commit(
                        i,
                        keys[i as usize],
                        JobId(i),
                        payloads[i as usize],
                        i as u64,
                    );
                    debug_assert!(matches!(out, CommitOutcome::Committed { .. }));
                    black_box(out);
                },
                |o| {
                    let n = o.pending().len();
                    o.note_sent(n);
                    o.mark_published(0, n);
                },
            )
        })
    });

    // commit of a key that already has a result with the same payload (a retry after a crash
    // before ack, or a stale worker): returns the existing row, writes nothing. Keys walked in
    // commit order over a table of JOBS results, so each lookup is usually a cache miss: the
    // pessimistic end (in a run a deduped key was committed ~1 s, ~500 jobs, earlier).
    g.bench_function("commit_deduped", |b| {
        let mut o = Outbox::with_capacity(OutboxConfig::default(), JOBS as usize);
        for i in 0..JOBS {
            o.commit(
                i,
                keys[i as usize],
                JobId(i),
                payloads[i as usize],
                i as u64,
            );
        }
        let n = o.pending().len();
        o.note_sent(n);
        o.mark_published(0, n);
        let mut i = 0u32;
        b.iter(|| {
            i = (i + 1) % JOBS;
            let out = o.commit(i, keys[i as usize], JobId(i), payloads[i as usize], 0);
            debug_assert!(matches!(out, CommitOutcome::Deduped { .. }));
            black_box(out)
        })
    });
    g.finish();
}

criterion_group!(benches, queue_ops, outbox_ops);
criterion_main!(benches);

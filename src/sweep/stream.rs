//! A sweep's seeds run on its threads and handed on in seed order.
//!
//! Owns: taking seeds in order from a shared counter, the window that keeps every thread at most
//! `REORDER_AHEAD_PER_THREAD` × threads seeds ahead of the first seed not yet handed on, the
//! reorder buffer (one slot a seed of the window), handing records to the sink and the
//! aggregator in seed order, and stopping on a sink error or a panic.
//! Does not: run a seed (`seed::run_seed`), fold a record into sweep.json (`aggregate`) or shrink
//! (`shrunk`).
//!
//! Cost: the calling thread is one of the sweep's threads, and whichever thread finishes the
//! first seed not yet handed on hands it on, with every finished seed after it, so no thread
//! exists only to put records in order and no thread is woken for each seed. A thread blocks
//! only when it is a whole window ahead, and is woken only then: a sweep on one thread makes no
//! system call to synchronise, and on two threads about one futex call in 20 seeds (a channel
//! and a wake for every seed would cost several futex calls and context switches a seed).

use super::aggregate::Aggregator;
use super::seed::{run_seed, SeedRecord};
use super::{shrunk, Plan, SweepError, Swept};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// Seeds a thread may run ahead of the first seed not yet handed to the sink, per thread: the
/// reorder buffer holds at most this many records per thread, whatever the seed count.
pub const REORDER_AHEAD_PER_THREAD: u64 = 16;

/// Why a streamed sweep stopped: it could not run, or its sink refused a record (the sink's
/// own error, e.g. a failed write).
#[derive(Debug, thiserror::Error)]
pub enum StreamError<E: std::error::Error + 'static> {
    #[error(transparent)]
    Sweep(#[from] SweepError),
    #[error(transparent)]
    Sink(E),
}

/// What the threads share about the window, under one lock (with `Shared::first` and
/// `Shared::stop`, which change only under it).
struct Window {
    /// Finished seeds not yet handed on: index `i` in slot `i % ready.len()`. Every index held
    /// is in `first..first + ready.len()`, so no two share a slot.
    ready: Vec<Option<SeedRecord>>,
    /// A thread is handing records on; the others leave theirs in `ready` for it.
    handing: bool,
    /// Threads blocked until `first` moves (they are woken only when there are some).
    waiting: u32,
}

/// What only the thread handing records on touches: the fold of sweep.json and the sink.
struct Fold<'p, S, E> {
    aggregator: Aggregator<'p>,
    sink: S,
    failed: Option<E>,
}

struct Shared<'p, S, E> {
    plan: &'p Plan,
    count: u64,
    /// The window's width: seeds a thread may run ahead of `Window::first`.
    ahead: u64,
    next: AtomicU64,
    /// The index (from the plan's first seed) of the first seed not yet handed on. Written only
    /// under the window's lock; read without it to start a seed inside the window.
    first: AtomicU64,
    /// Take no more seeds: the sink refused a record, or a thread panicked. Written only under
    /// the window's lock.
    stop: AtomicBool,
    window: Mutex<Window>,
    moved: Condvar,
    fold: Mutex<Fold<'p, S, E>>,
}

/// Runs a sweep and hands each seed's record to `sink` in seed order as soon as it and every
/// seed before it have finished; keeps none of them (sweep.json is folded record by record), so
/// memory stays flat however many seeds run. The records, their order and sweep.json are the
/// same for any thread count: threads take seeds in order from a shared counter and run at most
/// `REORDER_AHEAD_PER_THREAD` × threads seeds ahead of the first one not yet handed on; the
/// finished ones wait in a reorder buffer. `sink` is called on whichever of the sweep's threads
/// (the calling thread is one) finished the seed that let records go on, one call at a time. A
/// sink error stops the threads (seeds already running finish first) and is returned.
pub fn sweep_streaming<S, E>(plan: &Plan, sink: S) -> Result<Swept, StreamError<E>>
where
    S: FnMut(SeedRecord) -> Result<(), E> + Send,
    E: std::error::Error + Send + 'static,
{
    let count = plan.seed_count();
    assert!(
        count <= crate::base::limits::MAX_SWEEP_SEEDS,
        "a sweep's seed count is checked before it starts"
    );
    let mut builder = rayon::ThreadPoolBuilder::new();
    if plan.threads > 0 {
        builder = builder.num_threads(plan.threads);
    }
    let pool = builder.build().map_err(SweepError::ThreadPool)?;
    let threads = pool.current_num_threads();
    let started = plan.wall_clock.map(|now| now());
    let ahead = REORDER_AHEAD_PER_THREAD * threads as u64;
    let shared = Shared {
        plan,
        count,
        ahead,
        next: AtomicU64::new(0),
        first: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        window: Mutex::new(Window {
            ready: (0..ahead).map(|_| None).collect(),
            handing: false,
            waiting: 0,
        }),
        moved: Condvar::new(),
        fold: Mutex::new(Fold {
            aggregator: Aggregator::new(plan),
            sink,
            failed: None,
        }),
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(|| shared.work());
        }
        shared.work();
    });
    let first = shared.first.into_inner();
    let window = shared
        .window
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    let fold = shared
        .fold
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(e) = fold.failed {
        return Err(StreamError::Sink(e));
    }
    assert!(
        first == count && !window.handing && window.ready.iter().all(Option::is_none),
        "every seed was handed on: {first} of {count}"
    );
    let wall = match (plan.wall_clock, started) {
        (Some(now), Some(started)) => now().duration_since(started).as_secs_f64(),
        _ => 0.0,
    };
    let mut json = fold.aggregator.finish(plan.shard, wall, threads);
    let files = if plan.shrink {
        pool.install(|| shrunk::shrink_groups(plan, &mut json))
    } else {
        Vec::new()
    };
    Ok(Swept { json, files })
}

impl<S, E> Shared<'_, S, E>
where
    S: FnMut(SeedRecord) -> Result<(), E>,
{
    fn lock(&self) -> MutexGuard<'_, Window> {
        self.window.lock().expect("sweep window lock")
    }

    /// Takes no more seeds, and wakes the threads waiting for the window to move.
    fn stop(&self) {
        let _w = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        self.stop.store(true, Ordering::Relaxed);
        self.moved.notify_all();
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn first(&self) -> u64 {
        self.first.load(Ordering::Relaxed)
    }

    /// One thread of the sweep: takes seeds in order, runs them, and hands records on when the
    /// one it finished is the first not yet handed on.
    fn work(&self) {
        // Stops the others should this thread panic (run_seed catches the model's panics; this
        // is for the sweep's own, and the sink's).
        let _guard = StopOnUnwind(|| self.stop());
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.count {
                return;
            }
            // Inside the window (the common case): no lock. A whole window ahead: wait, under the
            // lock, for `first` to move; whoever moves it wakes the waiters.
            if i >= self.first() + self.ahead {
                let mut w = self.lock();
                while !self.stopped() && i >= self.first() + self.ahead {
                    w.waiting += 1;
                    w = self.moved.wait(w).expect("sweep window lock");
                    w.waiting -= 1;
                }
            }
            if self.stopped() {
                return;
            }
            let r = run_seed(self.plan, self.plan.seed_at(i));
            if let Some(progress) = &self.plan.progress {
                (progress.0)(!r.failures.is_empty());
            }
            let mut w = self.lock();
            if self.stopped() {
                return;
            }
            let first = self.first();
            debug_assert!(
                first <= i && i < first + self.ahead,
                "seed {i} outside the window"
            );
            let slot = self.slot(i);
            assert!(w.ready[slot].is_none(), "two seeds in one reorder slot");
            w.ready[slot] = Some(r);
            // Whoever finished the first seed not yet handed on hands it on, unless a thread
            // already is (it will find this one when it looks again).
            if w.handing || i != first {
                continue;
            }
            w.handing = true;
            self.hand_on(w);
        }
    }

    fn slot(&self, i: u64) -> usize {
        (i % self.ahead) as usize
    }

    /// Hands every finished record from the first not yet handed on to the sink, in order, until
    /// the next one has not finished; the window's lock is released while the sink runs.
    fn hand_on<'s>(&'s self, mut w: MutexGuard<'s, Window>) {
        debug_assert!(w.handing);
        let mut batch = Vec::new();
        loop {
            while batch.len() < w.ready.len() {
                let slot = self.slot(self.first() + batch.len() as u64);
                match w.ready[slot].take() {
                    Some(r) => batch.push(r),
                    None => break,
                }
            }
            if batch.is_empty() {
                w.handing = false;
                return;
            }
            drop(w);
            let mut handed = 0u64;
            let failed = {
                let mut fold = self.fold.lock().expect("sweep fold lock");
                let fold = &mut *fold;
                for r in batch.drain(..) {
                    fold.aggregator.add(&r);
                    if let Err(e) = (fold.sink)(r) {
                        fold.failed = Some(e);
                        break;
                    }
                    handed += 1;
                }
                fold.failed.is_some()
            };
            batch.clear();
            w = self.lock();
            self.first.fetch_add(handed, Ordering::Relaxed);
            if failed {
                self.stop.store(true, Ordering::Relaxed);
                w.handing = false;
                self.moved.notify_all();
                return;
            }
            if w.waiting > 0 {
                self.moved.notify_all();
            }
        }
    }
}

/// Runs its function when dropped by a panic's unwinding.
struct StopOnUnwind<F: Fn()>(F);

impl<F: Fn()> Drop for StopOnUnwind<F> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            (self.0)();
        }
    }
}

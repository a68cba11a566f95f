//! An observer on a thread of its own, for a run on a machine with a second core.
//!
//! Owns: [`ObserverThread`], which hands the run's records, in order, in batches of [`BATCH`],
//! through a bounded channel to a thread that owns an [`Observer`] and hands it back when the
//! run ends. `run/` puts the checker and the metrics there (`run::Judges`): both read only the
//! history, in the order the run wrote it, so their verdicts, messages, evidence and figures are
//! those of the same observers inline, and the run's own thread no longer waits for them (they
//! are about 40% of a run's instructions).
//! Does not: judge or count anything, or decide when to use a thread (`RunRequest::observer_thread`:
//! the CLI's `run` on a machine with a second core; a sweep keeps every core busy with seeds).

use crate::history::{Observer, Record};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Records a batch: large enough that the channel costs nothing a record, small enough that
/// the batches in flight stay a few hundred kB.
pub const BATCH: usize = 4096;

/// Full batches the run may be ahead of the observer before it waits (bounded memory).
const IN_FLIGHT: usize = 4;

pub struct ObserverThread<T> {
    batch: Vec<Record>,
    to_observer: Option<SyncSender<Vec<Record>>>,
    /// Emptied batches the observer hands back, so the run allocates no batch in steady state.
    spare: Receiver<Vec<Record>>,
    observer: Option<JoinHandle<T>>,
}

impl<T: Observer + Send + 'static> ObserverThread<T> {
    /// Starts `observer`'s thread, or gives `observer` back when no thread can be had.
    pub fn start(observer: T) -> Result<ObserverThread<T>, T> {
        let (to_observer, batches) = sync_channel::<Vec<Record>>(IN_FLIGHT);
        let (give_back, spare) = sync_channel::<Vec<Record>>(IN_FLIGHT + 2);
        // The observer goes over once the thread runs, so a failed start still has it.
        let (hand_over, handed) = sync_channel::<T>(1);
        let started = std::thread::Builder::new()
            .name("durasim-observers".into())
            .spawn(move || {
                let mut observer = handed.recv().expect("the observer is handed over");
                for mut batch in batches {
                    for r in &batch {
                        observer.observe(r);
                    }
                    batch.clear();
                    // The run may have ended and dropped its end: the batch is not needed.
                    let _ = give_back.try_send(batch);
                }
                observer
            });
        let Ok(thread) = started else {
            return Err(observer);
        };
        hand_over
            .send(observer)
            .expect("the observer's thread waits for it");
        Ok(ObserverThread {
            batch: Vec::with_capacity(BATCH),
            to_observer: Some(to_observer),
            spare,
            observer: Some(thread),
        })
    }

    #[inline]
    pub fn observe(&mut self, r: &Record) {
        self.batch.push(r.clone());
        if self.batch.len() == BATCH {
            self.send();
        }
    }

    #[cold]
    fn send(&mut self) {
        let next = self
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH));
        let full = std::mem::replace(&mut self.batch, next);
        if let Some(to_observer) = &self.to_observer {
            // A send fails only when the observer's thread has panicked: `finish` raises it.
            let _ = to_observer.send(full);
        }
    }

    /// Hands over the last records, waits for the observer and returns it; a panic on the
    /// observer's thread is raised here, on the run's.
    pub fn finish(mut self) -> T {
        if !self.batch.is_empty() {
            self.send();
        }
        drop(self.to_observer.take());
        let observer = self.observer.take().expect("finish is called once");
        match observer.join() {
            Ok(observer) => observer,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

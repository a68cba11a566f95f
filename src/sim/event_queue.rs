//! The kernel's future-event list: pops events in (time, then scheduling order).
//!
//! Owns: ordering. Two events at the same virtual time pop first-in, first-out, exactly as a
//! binary heap ordered by (time, sequence number) would pop them, so the trace does not depend on
//! how this is built.
//! Does not: know what an event means.
//!
//! How: a calendar ("timing wheel") of one-millisecond buckets covering the next `WHEEL_MS` of
//! virtual time, each bucket a FIFO, plus a binary heap for the few events further ahead. Almost
//! every event of a run is due within a few seconds (extraction slices, heartbeats, reviews,
//! relay ticks), so push and pop are O(1) instead of O(log n) with its cache misses; the
//! profile of bench-pipeline had `BinaryHeap::pop` at 17% of all instructions.
//!
//! Why the order is the heap's: a bucket only ever holds events for its one time `t`, kept in
//! increasing sequence number (direct pushes arrive in sequence order; far events moved in from
//! the heap are inserted in place). An event scheduled in the past (before the cursor) stays in
//! the heap, and `pop` compares the heap's top with the cursor's bucket before taking either.
//! A property test checks the pop order against a (time, seq) binary heap.

use crate::ids::SimTime;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

const WHEEL_MS: u64 = 4096;
const MASK: u64 = WHEEL_MS - 1;

#[derive(Clone, Copy, Debug)]
struct Far<T> {
    at: SimTime,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Far<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl<T> Eq for Far<T> {}
impl<T> PartialOrd for Far<T> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Far<T> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

#[derive(Clone, Debug)]
pub struct EventQueue<T> {
    /// `wheel[t & MASK]` holds the events due at `t`, for `cursor <= t < cursor + WHEEL_MS`.
    wheel: Vec<VecDeque<(u64, T)>>,
    in_wheel: usize,
    far: BinaryHeap<Reverse<Far<T>>>,
    /// No event in the wheel is due before this time.
    cursor: SimTime,
    seq: u64,
}

impl<T: Copy> Default for EventQueue<T> {
    fn default() -> Self {
        EventQueue::new()
    }
}

impl<T: Copy> EventQueue<T> {
    pub fn new() -> EventQueue<T> {
        EventQueue {
            wheel: (0..WHEEL_MS).map(|_| VecDeque::new()).collect(),
            in_wheel: 0,
            far: BinaryHeap::new(),
            cursor: 0,
            seq: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.in_wheel + self.far.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Schedules `item` at `at`; among events at the same time, earlier pushes pop first.
    #[inline]
    pub fn push(&mut self, at: SimTime, item: T) {
        self.seq += 1;
        if at >= self.cursor && at - self.cursor < WHEEL_MS {
            self.wheel[(at & MASK) as usize].push_back((self.seq, item));
            self.in_wheel += 1;
        } else {
            self.far.push(Reverse(Far {
                at,
                seq: self.seq,
                item,
            }));
        }
    }

    /// The earliest event (ties: the first pushed) and its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, T)> {
        loop {
            // A far event due no later than the cursor (scheduled in the past, or moved
            // here by a jump) goes before the cursor's bucket if it is earlier.
            if let Some(Reverse(f)) = self.far.peek() {
                if f.at < self.cursor
                    || (f.at == self.cursor
                        && self.wheel[(self.cursor & MASK) as usize]
                            .front()
                            .is_none_or(|(seq, _)| f.seq < *seq))
                {
                    let Reverse(f) = self.far.pop().expect("peeked");
                    return Some((f.at, f.item));
                }
            }
            if self.in_wheel == 0 {
                let Reverse(f) = self.far.peek()?;
                // Jump over the empty stretch.
                self.cursor = f.at;
                self.pull_far();
                continue;
            }
            let bucket = &mut self.wheel[(self.cursor & MASK) as usize];
            if let Some((_, item)) = bucket.pop_front() {
                self.in_wheel -= 1;
                return Some((self.cursor, item));
            }
            self.cursor += 1;
            self.pull_far();
        }
    }

    /// Moves far events now within the wheel's reach into their buckets, in (time, seq) order.
    #[inline]
    fn pull_far(&mut self) {
        while let Some(Reverse(f)) = self.far.peek() {
            if f.at < self.cursor || f.at - self.cursor >= WHEEL_MS {
                // Past events stay in the heap (popped first); beyond reach stays too. The
                // heap is ordered, so nothing behind the top is within reach either, unless
                // the top is a past event: then stop as well (pop handles it first).
                return;
            }
            let Reverse(f) = self.far.pop().expect("peeked");
            let bucket = &mut self.wheel[(f.at & MASK) as usize];
            // Usually the bucket is empty or holds only later pushes; keep it in seq order
            // whatever happened before.
            match bucket.back() {
                Some((last, _)) if *last > f.seq => {
                    let i = bucket.partition_point(|(seq, _)| *seq < f.seq);
                    bucket.insert(i, (f.seq, f.item));
                }
                _ => bucket.push_back((f.seq, f.item)),
            }
            self.in_wheel += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any interleaving of pushes (near, far, past, equal times) and pops gives exactly the
        /// (time, sequence) order of a binary heap.
        #[test]
        fn pops_in_the_order_of_a_time_seq_heap(ops in proptest::collection::vec(
            prop_oneof![
                3 => (0u64..50).prop_map(Some),
                1 => (0u64..20_000).prop_map(Some),
                2 => Just(None),
            ],
            0..600,
        )) {
            let mut q: EventQueue<u32> = EventQueue::new();
            let mut reference: BinaryHeap<Reverse<(u64, u64, u32)>> = BinaryHeap::new();
            let (mut now, mut seq, mut id) = (0u64, 0u64, 0u32);
            for op in ops {
                match op {
                    // Mostly future pushes relative to now; a delay of 0 is "now".
                    Some(d) => {
                        let at = if d % 17 == 5 { now.saturating_sub(d % 3) } else { now + d };
                        seq += 1;
                        id += 1;
                        q.push(at, id);
                        reference.push(Reverse((at, seq, id)));
                    }
                    None => {
                        let want = reference.pop().map(|Reverse((at, _, id))| (at, id));
                        let got = q.pop();
                        prop_assert_eq!(got, want);
                        if let Some((at, _)) = got {
                            now = now.max(at);
                        }
                    }
                }
                prop_assert_eq!(q.len(), reference.len());
            }
            while let Some(Reverse((at, _, id))) = reference.pop() {
                prop_assert_eq!(q.pop(), Some((at, id)));
            }
            prop_assert_eq!(q.pop(), None);
        }
    }
}

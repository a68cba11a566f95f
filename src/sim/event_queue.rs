//! The kernel's future-event list: pops events in (time, then scheduling order).
//!
//! Owns: ordering. Two events at the same virtual time pop first-in, first-out, exactly as a
//! binary heap ordered by (time, sequence number) would pop them, so the trace does not depend on
//! how this is built.
//! Does not: know what an event means.
//!
//! How: a calendar ("timing wheel") of one-millisecond buckets covering the next `WHEEL_MS` of
//! virtual time, each bucket a FIFO linked through one node pool, with a bitmap of occupied
//! buckets to skip empty stretches, plus a binary heap for the few events further ahead. Almost
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
use std::collections::BinaryHeap;

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

const NIL: u32 = u32::MAX;

/// A scheduled event in a bucket's singly linked FIFO (nodes live in one pool, so a run does no
/// allocation per bucket).
#[derive(Clone, Copy, Debug)]
struct Node<T> {
    seq: u64,
    item: T,
    next: u32,
}

#[derive(Clone, Debug)]
pub struct EventQueue<T> {
    /// `(head, tail)` of the FIFO of events due at `t`, in bucket `t & MASK`, for
    /// `cursor <= t < cursor + WHEEL_MS`.
    buckets: Vec<(u32, u32)>,
    /// Which buckets are non-empty, one bit each: the next due bucket is a few word scans away.
    occupied: [u64; (WHEEL_MS / 64) as usize],
    nodes: Vec<Node<T>>,
    free: u32,
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
            buckets: vec![(NIL, NIL); WHEEL_MS as usize],
            occupied: [0; (WHEEL_MS / 64) as usize],
            nodes: Vec::new(),
            free: NIL,
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
            self.link_back(at, self.seq, item);
        } else {
            self.far.push(Reverse(Far {
                at,
                seq: self.seq,
                item,
            }));
        }
    }

    #[inline]
    fn new_node(&mut self, seq: u64, item: T, next: u32) -> u32 {
        let node = Node { seq, item, next };
        if self.free != NIL {
            let i = self.free;
            self.free = self.nodes[i as usize].next;
            self.nodes[i as usize] = node;
            i
        } else {
            self.nodes.push(node);
            (self.nodes.len() - 1) as u32
        }
    }

    #[inline]
    fn link_back(&mut self, at: SimTime, seq: u64, item: T) {
        let b = (at & MASK) as usize;
        let n = self.new_node(seq, item, NIL);
        let (head, tail) = self.buckets[b];
        if head == NIL {
            self.buckets[b] = (n, n);
            self.occupied[b / 64] |= 1 << (b % 64);
        } else {
            self.nodes[tail as usize].next = n;
            self.buckets[b].1 = n;
        }
        self.in_wheel += 1;
    }

    /// Inserts in sequence order (a far event moved in after later pushes for its time).
    fn link_sorted(&mut self, at: SimTime, seq: u64, item: T) {
        let b = (at & MASK) as usize;
        let (head, tail) = self.buckets[b];
        if head == NIL || self.nodes[tail as usize].seq < seq {
            return self.link_back(at, seq, item);
        }
        if self.nodes[head as usize].seq > seq {
            let n = self.new_node(seq, item, head);
            self.buckets[b].0 = n;
        } else {
            let mut prev = head;
            while self.nodes[self.nodes[prev as usize].next as usize].seq < seq {
                prev = self.nodes[prev as usize].next;
            }
            let n = self.new_node(seq, item, self.nodes[prev as usize].next);
            self.nodes[prev as usize].next = n;
        }
        self.in_wheel += 1;
    }

    /// The sequence number at the front of the cursor's bucket, if any.
    #[inline]
    fn front_seq(&self) -> Option<u64> {
        let head = self.buckets[(self.cursor & MASK) as usize].0;
        (head != NIL).then(|| self.nodes[head as usize].seq)
    }

    /// Distance from the cursor to the next occupied bucket (the wheel is not empty).
    #[inline]
    fn next_occupied(&self) -> u64 {
        let start = self.cursor & MASK;
        let words = self.occupied.len() as u64;
        let (w0, bit0) = (start / 64, start % 64);
        let first = self.occupied[w0 as usize] >> bit0;
        if first != 0 {
            return first.trailing_zeros() as u64;
        }
        for k in 1..=words {
            let w = (w0 + k) % words;
            let word = self.occupied[w as usize];
            if word != 0 {
                let at = w * 64 + word.trailing_zeros() as u64;
                return (at + WHEEL_MS - start) & MASK;
            }
        }
        unreachable!("next_occupied on an empty wheel")
    }

    /// The earliest event (ties: the first pushed) and its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, T)> {
        loop {
            // A far event due no later than the cursor (scheduled in the past, or not yet moved
            // in) goes before the cursor's bucket if it is earlier.
            if let Some(Reverse(f)) = self.far.peek() {
                if f.at < self.cursor
                    || (f.at == self.cursor && self.front_seq().is_none_or(|seq| f.seq < seq))
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
            let b = (self.cursor & MASK) as usize;
            let head = self.buckets[b].0;
            if head != NIL {
                let node = self.nodes[head as usize];
                self.buckets[b].0 = node.next;
                if node.next == NIL {
                    self.buckets[b].1 = NIL;
                    self.occupied[b / 64] &= !(1 << (b % 64));
                }
                self.nodes[head as usize].next = self.free;
                self.free = head;
                self.in_wheel -= 1;
                return Some((self.cursor, node.item));
            }
            self.cursor += self.next_occupied();
            self.pull_far();
        }
    }

    /// Moves far events now within the wheel's reach into their buckets, in (time, seq) order.
    #[inline]
    fn pull_far(&mut self) {
        while let Some(Reverse(f)) = self.far.peek() {
            if f.at < self.cursor || f.at - self.cursor >= WHEEL_MS {
                // Past events stay in the heap (`pop` takes them first); so does everything
                // beyond reach (the heap is ordered: nothing behind the top is nearer).
                return;
            }
            let Reverse(f) = self.far.pop().expect("peeked");
            self.link_sorted(f.at, f.seq, f.item);
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

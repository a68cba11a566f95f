//! The kernel's future-event list: pops events in (time, then scheduling order).
//!
//! Owns: ordering. Two events at the same virtual time pop first-in, first-out, exactly as a
//! binary heap ordered by (time, sequence number) would pop them, so the trace does not depend on
//! how this is built.
//! Does not: know what an event means.
//!
//! How: a calendar ("timing wheel") of one-millisecond buckets covering the next `WHEEL_MS` of
//! virtual time, each bucket a FIFO linked through one node pool (a run does no allocation per
//! bucket), with a bitmap of occupied buckets to skip empty stretches, plus a binary heap for
//! the few events further ahead. Almost every event of a run is due within a few seconds
//! (extraction slices, heartbeats, reviews, relay ticks), so push and pop are O(1) instead of
//! O(log n) with its cache misses; the profile of bench-pipeline had `BinaryHeap::pop` at 17% of
//! all instructions.
//!
//! Why the order is the heap's: nothing is scheduled before the last popped time (`push`
//! asserts it; the kernel's clock never goes back), so every event in the wheel is due in
//! `[cursor, cursor + WHEEL_MS)` and a bucket only ever holds events for its one time `t`.
//! Whenever the cursor moves, every far event now within reach moves into its bucket at once,
//! in (time, seq) order, before anything else can be pushed there: a bucket's FIFO is therefore
//! in push order, the far heap only ever holds events beyond the wheel's reach, and a wheel node
//! needs no sequence number. A property test checks the pop order against a (time, seq) binary
//! heap.

use crate::base::ids::SimTime;
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

/// A scheduled event in a bucket's singly linked FIFO (24 bytes for the kernel's 16-byte `Ev`).
#[derive(Clone, Copy, Debug, Hash)]
struct Node<T> {
    item: T,
    next: u32,
}

#[derive(Clone, Debug)]
pub struct EventQueue<T> {
    /// `(head, tail)` of the FIFO of events due at `t`, in bucket `t & MASK`, for
    /// `cursor <= t < cursor + WHEEL_MS`.
    buckets: Box<[(u32, u32)]>,
    /// Which buckets are non-empty, one bit each: the next due bucket is a few word scans away.
    occupied: [u64; (WHEEL_MS / 64) as usize],
    nodes: Vec<Node<T>>,
    free: u32,
    in_wheel: usize,
    /// Events due at `cursor + WHEEL_MS` or later, in (time, seq) order.
    far: BinaryHeap<Reverse<Far<T>>>,
    /// The time of the last popped event (0 before the first): nothing is due before it.
    cursor: SimTime,
    /// Orders far events of equal time (the wheel's FIFOs need none).
    far_seq: u64,
}

/// The pending events in pop order, with their times, and the last popped time.
impl<T: Copy + std::hash::Hash> std::hash::Hash for EventQueue<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.cursor.hash(state);
        state.write_usize(self.len());
        self.for_each_pending(|at, item| {
            at.hash(state);
            item.hash(state);
        });
    }
}

impl<T: Copy> Default for EventQueue<T> {
    fn default() -> Self {
        EventQueue::new()
    }
}

impl<T: Copy> EventQueue<T> {
    pub fn new() -> EventQueue<T> {
        EventQueue {
            buckets: vec![(NIL, NIL); WHEEL_MS as usize].into_boxed_slice(),
            occupied: [0; (WHEEL_MS / 64) as usize],
            nodes: Vec::new(),
            free: NIL,
            in_wheel: 0,
            far: BinaryHeap::new(),
            cursor: 0,
            far_seq: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.in_wheel + self.far.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Schedules `item` at `at`; among events at the same time, earlier pushes pop first.
    /// Panics if `at` is before the last popped event's time (time never goes backwards).
    #[inline]
    pub fn push(&mut self, at: SimTime, item: T) {
        assert!(
            at >= self.cursor,
            "event scheduled at {at} ms, before the last popped time ({} ms)",
            self.cursor
        );
        if at - self.cursor < WHEEL_MS {
            self.link_back(at, item);
        } else {
            self.push_far(at, item);
        }
    }

    #[cold]
    #[inline(never)]
    fn push_far(&mut self, at: SimTime, item: T) {
        self.far_seq += 1;
        self.far.push(Reverse(Far {
            at,
            seq: self.far_seq,
            item,
        }));
    }

    // Always inlined: called once for every event, its frame cost as much as its body.
    #[inline(always)]
    fn link_back(&mut self, at: SimTime, item: T) {
        let node = Node { item, next: NIL };
        let n = if self.free != NIL {
            let i = self.free;
            let slot = &mut self.nodes[i as usize];
            self.free = slot.next;
            *slot = node;
            i
        } else {
            self.nodes.push(node);
            (self.nodes.len() - 1) as u32
        };
        let b = (at & MASK) as usize;
        let bucket = &mut self.buckets[b];
        if bucket.0 == NIL {
            *bucket = (n, n);
            self.occupied[b / 64] |= 1 << (b % 64);
        } else {
            let tail = bucket.1;
            bucket.1 = n;
            self.nodes[tail as usize].next = n;
        }
        self.in_wheel += 1;
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
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(SimTime, T)> {
        if self.in_wheel == 0 {
            // Jump over the empty stretch to the first far event.
            let at = self.far.peek()?.0.at;
            self.move_cursor(at);
        }
        let mut b = (self.cursor & MASK) as usize;
        if self.buckets[b].0 == NIL {
            self.move_cursor(self.cursor + self.next_occupied());
            b = (self.cursor & MASK) as usize;
        }
        let head = self.buckets[b].0;
        debug_assert!(head != NIL, "the cursor's bucket is occupied");
        let node = self.nodes[head as usize];
        if node.next == NIL {
            self.buckets[b] = (NIL, NIL);
            self.occupied[b / 64] &= !(1 << (b % 64));
        } else {
            self.buckets[b].0 = node.next;
        }
        self.nodes[head as usize].next = self.free;
        self.free = head;
        self.in_wheel -= 1;
        Some((self.cursor, node.item))
    }

    /// How many events are due at the earliest pending time (0: none pending). Moves the cursor
    /// to that time, as the next pop would: nothing may be pushed before it afterwards.
    /// For a tie-break chooser (`kernel::TieBreak`); a run without one never calls this.
    pub fn due_first(&mut self) -> usize {
        if self.in_wheel == 0 {
            let Some(at) = self.far.peek().map(|f| f.0.at) else {
                return 0;
            };
            self.move_cursor(at);
        }
        let b = (self.cursor & MASK) as usize;
        if self.buckets[b].0 == NIL {
            self.move_cursor(self.cursor + self.next_occupied());
        }
        let mut n = 0;
        let mut at = self.buckets[(self.cursor & MASK) as usize].0;
        while at != NIL {
            n += 1;
            at = self.nodes[at as usize].next;
        }
        n
    }

    /// After [`EventQueue::due_first`]: the time those events are due.
    pub fn due_at(&self) -> SimTime {
        self.cursor
    }

    /// The `index`-th (from 0, in the default order) of the events due at the earliest pending
    /// time, taken out of the queue; call [`EventQueue::due_first`] first. `pop_due(0)` is
    /// `pop()`. Panics if fewer are due (a kernel bug: the chooser is asked within the count).
    pub fn pop_due(&mut self, index: usize) -> (SimTime, T) {
        let b = (self.cursor & MASK) as usize;
        let (head, tail) = self.buckets[b];
        assert!(
            head != NIL,
            "pop_due with nothing due at {} ms",
            self.cursor
        );
        let (mut prev, mut at) = (NIL, head);
        for _ in 0..index {
            prev = at;
            at = self.nodes[at as usize].next;
            assert!(at != NIL, "pop_due({index}): fewer events due");
        }
        let node = self.nodes[at as usize];
        if prev == NIL {
            if node.next == NIL {
                self.buckets[b] = (NIL, NIL);
                self.occupied[b / 64] &= !(1 << (b % 64));
            } else {
                self.buckets[b].0 = node.next;
            }
        } else {
            self.nodes[prev as usize].next = node.next;
            if at == tail {
                self.buckets[b].1 = prev;
            }
        }
        self.nodes[at as usize].next = self.free;
        self.free = at;
        self.in_wheel -= 1;
        (self.cursor, node.item)
    }

    /// Every pending event with its time, in the order they would pop (a run's state, which
    /// does not depend on where the events sit in the wheel or the heap).
    pub fn for_each_pending(&self, mut f: impl FnMut(SimTime, &T)) {
        // The occupied buckets from the cursor's on, wrapping round the wheel once: the cursor's
        // word from its bit, the other words, then the cursor's word below its bit.
        let start = (self.cursor & MASK) as usize;
        let words = self.occupied.len();
        for k in 0..=words {
            let w = (start / 64 + k) % words;
            let mut word = self.occupied[w];
            if k == 0 {
                word &= !0u64 << (start % 64);
            } else if k == words {
                word &= (1u64 << (start % 64)) - 1;
            }
            while word != 0 {
                let b = w * 64 + word.trailing_zeros() as usize;
                word &= word - 1;
                let d = ((b + WHEEL_MS as usize - start) & MASK as usize) as u64;
                let mut at = self.buckets[b].0;
                while at != NIL {
                    let node = &self.nodes[at as usize];
                    f(self.cursor + d, &node.item);
                    at = node.next;
                }
            }
        }
        let mut far: Vec<&Far<T>> = self.far.iter().map(|r| &r.0).collect();
        far.sort();
        for e in far {
            f(e.at, &e.item);
        }
    }

    /// Moves the cursor forward to `at`, then every far event now within the wheel's reach
    /// into its bucket, in (time, seq) order: before anything else can be pushed there.
    #[inline]
    fn move_cursor(&mut self, at: SimTime) {
        debug_assert!(at >= self.cursor, "the cursor never goes back");
        self.cursor = at;
        if !self.far.is_empty() {
            self.pull_far();
        }
    }

    #[cold]
    #[inline(never)]
    fn pull_far(&mut self) {
        while let Some(Reverse(f)) = self.far.peek() {
            debug_assert!(
                f.at >= self.cursor,
                "a far event was left behind the cursor"
            );
            if f.at - self.cursor >= WHEEL_MS {
                // The heap is ordered: nothing behind the top is nearer.
                return;
            }
            let Reverse(f) = self.far.pop().expect("peeked");
            self.link_back(f.at, f.item);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any interleaving of pushes (at the last popped time, near, at the wheel's edge, far,
        /// equal times) and pops gives exactly the (time, sequence) order of a binary heap.
        #[test]
        fn pops_in_the_order_of_a_time_seq_heap(ops in proptest::collection::vec(
            prop_oneof![
                3 => (0u64..50).prop_map(Some),
                1 => (WHEEL_MS - 3..WHEEL_MS + 3).prop_map(Some),
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
                    // A delay of 0 is "now", the last popped time.
                    Some(d) => {
                        let at = now + d;
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
                            prop_assert!(at >= now, "time went back");
                            now = at;
                        }
                    }
                }
                prop_assert_eq!(q.len(), reference.len());
            }
            while let Some(Reverse((at, _, id))) = reference.pop() {
                prop_assert_eq!(q.pop(), Some((at, id)));
            }
            prop_assert_eq!(q.pop(), None);
            prop_assert!(q.is_empty());
        }
    }

    /// Far events for one time, pushed in several rounds, pop in push order, before the events
    /// pushed for that time once it came within reach.
    #[test]
    fn far_events_keep_their_push_order_among_equal_times() {
        let mut q: EventQueue<u32> = EventQueue::new();
        let t = 3 * WHEEL_MS + 7;
        q.push(t, 1);
        q.push(10, 100);
        q.push(t, 2);
        assert_eq!(q.pop(), Some((10, 100)));
        q.push(t, 3);
        q.push(t - WHEEL_MS + 1, 200);
        assert_eq!(q.pop(), Some((t - WHEEL_MS + 1, 200)));
        // t is within reach now: 1, 2 and 3 moved into its bucket; 4 goes behind them.
        q.push(t, 4);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(t, 1), (t, 2), (t, 3), (t, 4)]);
    }

    /// Taking the n-th due event leaves the others in their order, the tail linkable, and the
    /// pending list (and its hash) as if that event had never been pushed.
    #[test]
    fn pop_due_takes_the_chosen_tie_and_keeps_the_rest_in_order() {
        use crate::base::state_hash::StateHasher;
        let mut q: EventQueue<u32> = EventQueue::new();
        for (at, id) in [(5, 1), (5, 2), (5, 3), (9, 4), (WHEEL_MS + 5, 5)] {
            q.push(at, id);
        }
        assert_eq!(q.due_first(), 3);
        assert_eq!(q.pop_due(2), (5, 3));
        q.push(5, 6);
        let mut seen = Vec::new();
        q.for_each_pending(|at, id| seen.push((at, *id)));
        assert_eq!(
            seen,
            vec![(5, 1), (5, 2), (5, 6), (9, 4), (WHEEL_MS + 5, 5)]
        );
        let mut same: EventQueue<u32> = EventQueue::new();
        for (at, id) in [(WHEEL_MS + 5, 5), (5, 1), (5, 2), (9, 4)] {
            same.push(at, id);
        }
        assert_eq!(same.due_first(), 2);
        same.push(5, 6);
        assert_eq!(StateHasher::of(&q), StateHasher::of(&same));
        assert_eq!(q.pop_due(1), (5, 2));
        assert_eq!(q.due_first(), 2);
        assert_eq!(q.pop_due(0), (5, 1));
        assert_eq!(q.pop_due(0), (5, 6));
        assert_eq!(q.due_first(), 1);
        assert_eq!(q.pop(), Some((9, 4)));
        assert_eq!(q.due_first(), 1);
        assert_eq!(q.pop_due(0), (WHEEL_MS + 5, 5));
        assert_eq!(q.due_first(), 0);
        assert!(q.is_empty());
    }

    /// The pending events come in pop order wherever the cursor sits in the wheel (across its
    /// wrap, and from the middle of a word).
    #[test]
    fn pending_events_come_in_pop_order_across_the_wheels_wrap() {
        for start in [
            0,
            1,
            63,
            64,
            100,
            WHEEL_MS - 65,
            WHEEL_MS - 1,
            WHEEL_MS + 70,
        ] {
            let mut q: EventQueue<u32> = EventQueue::new();
            q.push(start, 0);
            assert_eq!(q.pop(), Some((start, 0)));
            let times = [
                0,
                0,
                1,
                62,
                63,
                64,
                65,
                500,
                WHEEL_MS - 2,
                WHEEL_MS - 1,
                WHEEL_MS + 3,
            ];
            for (i, d) in times.iter().enumerate() {
                q.push(start + d, i as u32 + 1);
            }
            let mut seen = Vec::new();
            q.for_each_pending(|at, id| seen.push((at, *id)));
            let popped: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
            assert_eq!(seen, popped, "cursor at {start}");
            assert_eq!(seen.len(), times.len());
        }
    }

    #[test]
    #[should_panic(expected = "before the last popped time")]
    fn an_event_in_the_past_is_refused() {
        let mut q: EventQueue<u32> = EventQueue::new();
        q.push(50, 1);
        assert_eq!(q.pop(), Some((50, 1)));
        q.push(49, 2);
    }
}

//! A counting allocator for the test binary: each thread's live bytes and their peak, so that a
//! test can measure what a step allocates (deterministically: bytes asked for, not the
//! allocator's pages or the process's RSS) while other tests run on other threads.
//!
//! Owns: the binary's `#[global_allocator]` (the system allocator, counted) and [`peak_of`].

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static LIVE: Cell<i64> = const { Cell::new(0) };
    static PEAK: Cell<i64> = const { Cell::new(0) };
}

fn add(delta: i64) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call is the system allocator's, with the same arguments; the counting only
// touches this thread's cells (no allocation, no lock).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            add(layout.size() as i64);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            add(layout.size() as i64);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        add(-(layout.size() as i64));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            add(new_size as i64 - layout.size() as i64);
        }
        p
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Runs `f` on this thread and returns what it returns and the most bytes it held at once
/// (allocated by it and not yet freed), on top of what the thread held before.
pub fn peak_of<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let before = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(before));
    let out = f();
    let peak = PEAK.with(Cell::get) - before;
    (out, peak.max(0) as u64)
}

//! The C allocator's settings for a sweep.
//!
//! Owns: telling glibc's malloc to keep the memory a seed freed for the next seed.
//! Does not: change what any run computes (the allocator is invisible to the results).
//!
//! Why: a sweep runs thousands of short seeds in a row on each thread. Each seed allocates a
//! few hundred kB and frees all of it when it ends; glibc then hands the free top of the
//! thread's heap back to the kernel (an `madvise` a seed for `chaos`), and the next seed faults
//! the same pages in again: about 13 page faults and one system call a seed. With a trim
//! threshold above what a seed frees, the pages stay mapped and are reused; the heap stays as
//! large as one seed's peak a thread, so memory stays bounded (a 100,000-seed sweep peaks where
//! a 2,000-seed one does).

/// Free memory at the top of a heap that malloc keeps instead of returning it to the kernel.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD: libc::c_int = 64 << 20;

/// Allocations at least this large get their own mapping (glibc's largest automatic threshold,
/// so big per-seed vectors behave as they did once malloc had adjusted; setting the trim
/// threshold would otherwise pin this one at its 128 kB start).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 32 << 20;

/// Keeps the memory a seed frees for the next one (glibc only; elsewhere the allocator's
/// defaults stand). Call before the sweep starts its threads.
#[allow(unsafe_code)] // mallopt: the library's one `unsafe` (src/lib.rs denies it elsewhere)
pub fn keep_freed_memory_between_seeds() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes two of malloc's tuning parameters; it takes malloc's own lock
    // and is called before the sweep's threads start.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    }
}

//! # memory-meter — how much heap does this call hold at its peak?
//!
//! Test support for the rule every parser of the workspace keeps: the memory a parse takes is
//! at most a stated multiple of its input. A test binary installs [`Meter`] as its global
//! allocator and wraps the call in [`peak`]:
//!
//! ```text
//! #[global_allocator]
//! static METER: memory_meter::Meter = memory_meter::Meter;
//!
//! let (spec, bytes) = memory_meter::peak(|| cluster_spec::ClusterSpec::from_json(&json));
//! assert!(bytes <= 4 * json.len() + 4096);
//! ```
//!
//! Counts are kept per thread, so tests running in parallel in one binary do not see each
//! other's allocations. Each allocation is counted as the chunk glibc's malloc really uses for
//! it (the size plus 8 bytes of header, rounded up to 16, at least 32), so a million one-byte
//! strings count as the 32 MB they occupy, not 1 MB. A `realloc` counts the new block before
//! the old one is released, as a copying reallocation holds both.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, counting the bytes each thread holds and the most it has held.
#[derive(Debug, Clone, Copy, Default)]
pub struct Meter;

thread_local! {
    /// Bytes this thread has allocated and not freed (negative if it freed others' blocks).
    static CURRENT: Cell<isize> = const { Cell::new(0) };
    /// The highest `CURRENT` since the last [`peak`] began.
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

/// The bytes glibc's malloc takes for a request of `size` bytes.
fn chunk(size: usize) -> isize {
    let size = size.saturating_add(8 + 15) & !15;
    size.max(32) as isize
}

fn grow(bytes: isize) {
    // `try_with`: allocations made while the thread's locals are torn down go uncounted.
    let _ = CURRENT.try_with(|current| {
        let now = current.get() + bytes;
        current.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

fn shrink(bytes: isize) {
    let _ = CURRENT.try_with(|current| current.set(current.get() - bytes));
}

// SAFETY: every call is forwarded to `System` unchanged; only counters are updated around it.
unsafe impl GlobalAlloc for Meter {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is passed on to `System`.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grow(chunk(layout.size()));
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grow(chunk(layout.size()));
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as `alloc`.
        unsafe { System.dealloc(ptr, layout) };
        shrink(chunk(layout.size()));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `alloc`.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            grow(chunk(new_size));
            shrink(chunk(layout.size()));
        }
        p
    }
}

/// Runs `f` and returns its result with the most heap bytes this thread held at once while it
/// ran, above what it held before (the result included, if it is still held at the end).
///
/// Only meaningful in a binary whose global allocator is [`Meter`]; elsewhere it is always 0.
pub fn peak<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let before = CURRENT.with(Cell::get);
    PEAK.with(|peak| peak.set(before));
    let result = f();
    let most = PEAK.with(Cell::get);
    (result, (most - before).max(0) as usize)
}

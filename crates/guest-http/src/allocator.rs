//! The component's heap: dlmalloc (the allocator of Rust's wasm32 std and of wasi-libc) starting
//! in the memory the module begins with, above its data.
//!
//! std's allocator for wasm32-unknown-unknown asks for memory in 64 KiB steps and so grows the
//! memory at its first allocation even when the first page has room: every fresh instance would
//! grow its memory once a request (costlier to make and to reset, and a recycled instance whose
//! memory grew is discarded). With a finer granularity dlmalloc takes the rest of the first page
//! first, as wasi-libc's does for a wasm32-wasip2 build.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;

use dlmalloc::Dlmalloc;

/// The smallest step dlmalloc asks the memory for; a step it cannot get from what the module
/// began with grows the memory by whole 64 KiB pages.
const GRANULARITY: usize = 4096;

struct Heap(UnsafeCell<Dlmalloc>);

// SAFETY: a component instance runs on one thread, and this guest starts none.
unsafe impl Sync for Heap {}

#[global_allocator]
static HEAP: Heap = Heap(UnsafeCell::new(
    const {
        let mut heap = Dlmalloc::new();
        assert!(heap.set_granularity(GRANULARITY));
        heap
    },
));

// SAFETY: each method hands dlmalloc the layout the caller gave, as `GlobalAlloc` requires; only
// one call runs at a time (above).
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe { (*self.0.get()).malloc(layout.size(), layout.align()) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe { (*self.0.get()).calloc(layout.size(), layout.align()) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { (*self.0.get()).free(ptr, layout.size(), layout.align()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe { (*self.0.get()).realloc(ptr, layout.size(), layout.align(), new_size) }
    }
}

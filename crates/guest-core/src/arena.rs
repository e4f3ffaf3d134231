//! The guest's allocator: a bump allocator over a small static arena, emptied at the start of each
//! request.
//!
//! Nothing needs freeing: a request's allocations are dead once the host has read its response,
//! which it does before it calls the guest again (docs/guest-abi.md). In a fresh instance per
//! request the arena starts empty anyway; in an instance kept for more requests (the shared
//! executor) [`reset`] empties it at the start of each, so memory does not grow request after
//! request. An arena in the module's initial memory means a request does not `memory.grow`:
//! growing (and shrinking back on the next instantiation) costs the pooling allocator two
//! `mprotect` calls and TLB shootdowns across the host's threads. A request larger than the arena
//! takes pages past the initial memory, grown once and reused by later requests.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;

const ARENA_BYTES: usize = 32 << 10;
const PAGE: usize = 64 << 10;

#[repr(C, align(16))]
struct Arena {
    bytes: UnsafeCell<[u8; ARENA_BYTES]>,
    /// Next free address and end of the current region (the arena, then the grown pages).
    next: UnsafeCell<usize>,
    end: UnsafeCell<usize>,
    /// The pages grown past the initial memory, kept for later requests: [grown_base, grown_end).
    grown_base: UnsafeCell<usize>,
    grown_end: UnsafeCell<usize>,
}

// SAFETY: wasm32 guests here are single-threaded.
unsafe impl Sync for Arena {}

#[global_allocator]
static ARENA: Arena = Arena {
    bytes: UnsafeCell::new([0; ARENA_BYTES]),
    next: UnsafeCell::new(0),
    end: UnsafeCell::new(0),
    grown_base: UnsafeCell::new(0),
    grown_end: UnsafeCell::new(0),
};

/// Empties the arena: every earlier allocation is dead. Called at the start of each request.
pub fn reset() {
    // SAFETY: single-threaded, and no allocation of an earlier request is used after this.
    unsafe {
        *ARENA.next.get() = ARENA.bytes.get() as usize;
        *ARENA.end.get() = ARENA.bytes.get() as usize + ARENA_BYTES;
    }
}

unsafe impl GlobalAlloc for Arena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: single-threaded; the cells are only touched here, in realloc and in reset.
        unsafe {
            let (next, end) = (&mut *self.next.get(), &mut *self.end.get());
            let (base, grown_end) = (&mut *self.grown_base.get(), &mut *self.grown_end.get());
            if *end == 0 {
                reset();
            }
            let fit = |from: usize, to: usize| {
                let start = (from + layout.align() - 1) & !(layout.align() - 1);
                start
                    .checked_add(layout.size())
                    .filter(|&s| s <= to)
                    .map(|stop| (start, stop))
            };
            if let Some((start, stop)) = fit(*next, *end) {
                *next = stop;
                return start as *mut u8;
            }
            // The arena is full: move on to the pages grown past the initial memory, if any.
            if *grown_end != 0 && *end != *grown_end {
                *next = *base;
                *end = *grown_end;
                if let Some((start, stop)) = fit(*next, *end) {
                    *next = stop;
                    return start as *mut u8;
                }
            }
            // Grow memory for this allocation (and what follows it).
            let pages = (layout.size() + layout.align()).div_ceil(PAGE);
            let prev = core::arch::wasm32::memory_grow(0, pages);
            if prev == usize::MAX {
                return core::ptr::null_mut();
            }
            if *grown_end == prev * PAGE {
                // Contiguous with the grown pages (only this allocator grows memory).
                *grown_end += pages * PAGE;
            } else {
                *base = prev * PAGE;
                *grown_end = *base + pages * PAGE;
                *next = *base;
            }
            *end = *grown_end;
            let (start, stop) = fit(*next, *end).expect("grown to fit");
            *next = stop;
            start as *mut u8
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // Only the latest allocation can be given back; the rest goes at the next reset.
        unsafe {
            let next = &mut *self.next.get();
            if ptr as usize + layout.size() == *next {
                *next = ptr as usize;
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe {
            let (next, end) = (&mut *self.next.get(), &*self.end.get());
            // Growing the latest allocation in place avoids a copy (Vec pushes, String building).
            if ptr as usize + layout.size() == *next && ptr as usize + new_size <= *end {
                *next = ptr as usize + new_size;
                return ptr;
            }
            let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
            let new = self.alloc(new_layout);
            if !new.is_null() {
                core::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
            }
            new
        }
    }
}

//! The guest's allocator: a bump allocator over a small static arena that is never freed.
//!
//! Each request runs in a fresh instance, so nothing needs freeing, and an arena that lives in the
//! module's initial memory means a request does not `memory.grow`: growing (and shrinking back on
//! the next instantiation) costs the pooling allocator two `mprotect` calls and TLB shootdowns
//! across the host's threads. Requests larger than the arena fall back to growing memory.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;

const ARENA_BYTES: usize = 32 << 10;
const PAGE: usize = 64 << 10;

#[repr(C, align(16))]
struct Arena {
    bytes: UnsafeCell<[u8; ARENA_BYTES]>,
    /// Next free address and end of the current region (the arena, then grown pages).
    next: UnsafeCell<usize>,
    end: UnsafeCell<usize>,
}

// SAFETY: wasm32 guests here are single-threaded.
unsafe impl Sync for Arena {}

#[global_allocator]
static ARENA: Arena = Arena {
    bytes: UnsafeCell::new([0; ARENA_BYTES]),
    next: UnsafeCell::new(0),
    end: UnsafeCell::new(0),
};

unsafe impl GlobalAlloc for Arena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: single-threaded; the cells are only touched here and in realloc.
        unsafe {
            let (next, end) = (&mut *self.next.get(), &mut *self.end.get());
            if *end == 0 {
                *next = self.bytes.get() as usize;
                *end = *next + ARENA_BYTES;
            }
            let start = (*next + layout.align() - 1) & !(layout.align() - 1);
            if let Some(stop) = start.checked_add(layout.size()).filter(|&s| s <= *end) {
                *next = stop;
                return start as *mut u8;
            }
            // Out of room: take fresh pages for this allocation (and what follows it).
            let need = layout.size() + layout.align();
            let pages = need.div_ceil(PAGE);
            let prev = core::arch::wasm32::memory_grow(0, pages);
            if prev == usize::MAX {
                return core::ptr::null_mut();
            }
            let base = prev * PAGE;
            let start = (base + layout.align() - 1) & !(layout.align() - 1);
            *next = start + layout.size();
            *end = base + pages * PAGE;
            start as *mut u8
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // Only the latest allocation can be given back; everything goes when the instance does.
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

;; A guest that keeps state in every place an instance has: a mutable global, a table slot, a byte
;; of linear memory, and the memory's size. Its answer shows all four, so a request that sees
;; anything an earlier request left behind says so. The isolation tests and the
;; `recycled_equals_fresh` fuzz target aim sequences of these at executors that keep instances.
;;
;; The character after the target's '/' says what the request does first:
;;   g  add one to the global        t  put a function in the table slot
;;   m  add one to the memory byte   w  grow the memory by a page
;;   x  trap                         anything else: nothing
;; The body is four digits: the global, the memory byte (both mod 10), whether the table slot is
;; empty (1) or not (0), and the memory's size in pages.
(module
  (import "wasmlab" "request_sizes" (func $sizes (param i32)))
  (import "wasmlab" "request_read" (func $read (param i32 i32 i32)))
  (memory (export "memory") 1)
  (global $g (mut i32) (i32.const 0))
  (table $t 1 funcref)
  (func $marker)
  (elem declare func $marker)
  (func (export "wasmlab_handle") (result i32)
    (local $cmd i32)
    (call $sizes (i32.const 0))
    ;; The method at 64, the target at 128, the body at 8192 (up to the end of the first page).
    (call $read (i32.const 64) (i32.const 128) (i32.const 8192))
    (local.set $cmd (i32.load8_u (i32.const 129)))
    (if (i32.eq (local.get $cmd) (i32.const 103))
      (then (global.set $g (i32.add (global.get $g) (i32.const 1)))))
    (if (i32.eq (local.get $cmd) (i32.const 116))
      (then (table.set $t (i32.const 0) (ref.func $marker))))
    (if (i32.eq (local.get $cmd) (i32.const 109))
      (then (i32.store8 (i32.const 4096)
        (i32.add (i32.load8_u (i32.const 4096)) (i32.const 1)))))
    (if (i32.eq (local.get $cmd) (i32.const 119))
      (then (drop (memory.grow (i32.const 1)))))
    (if (i32.eq (local.get $cmd) (i32.const 120))
      (then unreachable))
    (i32.store8 (i32.const 2100)
      (i32.add (i32.const 48) (i32.rem_u (global.get $g) (i32.const 10))))
    (i32.store8 (i32.const 2101)
      (i32.add (i32.const 48) (i32.rem_u (i32.load8_u (i32.const 4096)) (i32.const 10))))
    (i32.store8 (i32.const 2102)
      (i32.add (i32.const 48) (ref.is_null (table.get $t (i32.const 0)))))
    (i32.store8 (i32.const 2103)
      (i32.add (i32.const 48) (memory.size)))
    ;; The response descriptor at 2000: status 200, no headers, the 4-byte body at 2100.
    (i32.store (i32.const 2000) (i32.const 200))
    (i32.store (i32.const 2004) (i32.const 0))
    (i32.store (i32.const 2008) (i32.const 0))
    (i32.store (i32.const 2012) (i32.const 2100))
    (i32.store (i32.const 2016) (i32.const 4))
    (i32.const 2000)))

;; A minimal guest for the wasmlab handler ABI (docs/guest-abi.md), in the WebAssembly text format.
;; It answers every request with 200 and the body "hello from wat", echoing nothing of the request.
;; Run it: wasmlab-gateway-wasm --wasm docs/examples/minimal-guest.wat  (Wasmtime reads text too)
(module
  (memory (export "memory") 1)
  ;; The response descriptor at 0: status 200, headers at 32 (25 bytes), body at 64 (14 bytes).
  (data (i32.const 0) "\c8\00\00\00" "\20\00\00\00" "\19\00\00\00" "\40\00\00\00" "\0e\00\00\00")
  (data (i32.const 32) "content-type: text/plain\n")
  (data (i32.const 64) "hello from wat")
  (func (export "wasmlab_abi_version") (result i32) (i32.const 1))
  ;; One call per request: return where the response lies.
  (func (export "wasmlab_handle") (result i32) (i32.const 0)))

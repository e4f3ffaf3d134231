# workerd-wasm: wasmlab's core-module guest (the handlers compiled to Wasm, docs/guest-abi.md) in a
# Worker whose fetch handler calls it, as workers-rs apps run. The lab copies this file,
# wasm-worker.mjs and the guest (as guest.wasm) into one directory and starts
#   workerd serve wasm.capnp --socket-addr http=127.0.0.1:PORT
# with WASMLAB_UPSTREAM in the environment.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .wasmWorker),
    # The Worker's fetch() goes out here: the upstream is on loopback, which workerd's default
    # outbound (public addresses only) refuses.
    (name = "loopback", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [
    # Its address is given on the command line (--socket-addr http=ADDR).
    (name = "http", http = (), service = "main"),
  ],
);

const wasmWorker :Workerd.Worker = (
  modules = [
    (name = "wasm-worker.mjs", esModule = embed "wasm-worker.mjs"),
    # Compiled by V8 when the Worker loads, as an uploaded Worker's Wasm module is.
    (name = "guest.wasm", wasm = embed "guest.wasm"),
  ],
  # JSPI (WebAssembly.Suspending, WebAssembly.promising) is on at this date: the guest's
  # synchronous proxy_get waits on fetch() through it.
  compatibilityDate = "2026-11-17",
  bindings = [
    (name = "UPSTREAM", fromEnvironment = "WASMLAB_UPSTREAM"),
  ],
  globalOutbound = "loopback",
);

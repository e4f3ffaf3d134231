# workerd-js: wasmlab's JavaScript routes (peers/js/handlers.mjs, the Node, Bun and Deno peers'
# module) as a Worker. The lab copies this file, js-worker.mjs and peers/js/*.mjs into one
# directory (embed paths are relative to this file) and starts
#   workerd serve js.capnp --socket-addr http=127.0.0.1:PORT
# with WASMLAB_UPSTREAM in the environment.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .jsWorker),
    # The Worker's fetch() goes out here: the upstream is on loopback, which workerd's default
    # outbound (public addresses only) refuses.
    (name = "loopback", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [
    # Its address is given on the command line (--socket-addr http=ADDR).
    (name = "http", http = (), service = "main"),
  ],
);

const jsWorker :Workerd.Worker = (
  modules = [
    (name = "js-worker.mjs", esModule = embed "js-worker.mjs"),
    (name = "handlers.mjs", esModule = embed "handlers.mjs"),
    (name = "routes.mjs", esModule = embed "routes.mjs"),
  ],
  # node:buffer and node:crypto, which handlers.mjs imports, are on by default from this date
  # (nodejs_compat is the default from 2026-08-04; naming the flag only logs a warning).
  compatibilityDate = "2026-11-17",
  bindings = [
    (name = "UPSTREAM", fromEnvironment = "WASMLAB_UPSTREAM"),
  ],
  globalOutbound = "loopback",
);

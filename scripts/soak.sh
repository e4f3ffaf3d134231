#!/bin/sh
# The soak tests for minutes: the Wasm gateway, once per executor (pooled, recycled, shared,
# component, component-recycled), under healthy and hostile traffic mixed for SECS seconds each
# (default 120), its RSS, open files, threads and healthy p99 printed every SECS/8 and checked
# flat (crates/gateway-wasm/tests/all/soak.rs; the test command runs the same for 2 s each).
#   SECS=600 scripts/soak.sh                 ten minutes each
#   scripts/soak.sh pooled                   one executor (the start of its test's name)
set -eu
cd "$(dirname "$0")/.."
export WASMLAB_SOAK_SECS="${SECS:-120}"
unset RUST_BACKTRACE
# --workspace, as the test command builds: the same features, so nothing is rebuilt for it. The
# soak tests are a module of the gateway's test binary (`all`): an executor names `soak::EXECUTOR`.
exec cargo test --release --workspace --test all -- "soak::${1:-}" --test-threads 1

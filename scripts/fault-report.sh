#!/usr/bin/env bash
# For each fault: healthy traffic (GET /) and the fault injected side by side for a few seconds,
# both measured with `wasmlab load`; prints requests served, counts by status and the gateway's RSS
# before and after. Misbehaving raw clients come from scripts/fault_clients.py (Python's standard
# library only). Loopback only, bounded in time. Run after `cargo build --release`.
set -euo pipefail
cd "$(dirname "$0")/.."
T=target/release
SECS=${SECS:-3}

need_tool() { # tool, how to get it
  command -v "$1" > /dev/null || { echo "fault-report.sh: needs $1, which is not installed: $2" >&2; exit 2; }
}
need_tool python3 "apt-get install python3"
need_tool awk "apt-get install gawk"
for bin in wasmlab wasmlab-gateway-wasm wasmlab-gateway-native; do
  [ -x "$T/$bin" ] || { echo "fault-report.sh: $T/$bin not found: run 'cargo build --release' first" >&2; exit 2; }
done
HOSTILE=target/guests/hostile/wasm32-unknown-unknown/guest/wasmlab_guest_hostile.wasm
HOSTILE_HTTP=target/guests/hostile/wasm32-wasip2/guest/wasmlab_guest_hostile.wasm
for guest in "$HOSTILE" "$HOSTILE_HTTP"; do
  [ -f "$guest" ] || { echo "fault-report.sh: $guest not found: run 'cargo build --release' first" >&2; exit 2; }
done

OUT=$(mktemp -d)
trap 'kill $PID 2>/dev/null || true; rm -rf "$OUT"' EXIT
clients() { python3 scripts/fault_clients.py --port "${URL##*:}" "$@"; }
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
start() { # binary args... ; sets PID and URL
  "$@" --port 0 > "$OUT/gw.out" 2> "$OUT/gw.err" &
  PID=$!
  for _ in $(seq 100); do grep -q listening "$OUT/gw.out" 2>/dev/null && break; sleep 0.05; done
  URL=$(sed -n 's/listening on //p' "$OUT/gw.out")
  [ -n "$URL" ] || { echo "fault-report.sh: $1 did not start: $(tail -3 "$OUT/gw.err")" >&2; exit 1; }
}
stop() { kill "$PID"; wait "$PID" 2>/dev/null || true; echo "  gateway log: $(grep -c 'request ' "$OUT/gw.err") incident lines; at stop: $(grep 'incidents:' "$OUT/gw.err" | sed 's/.*incidents: //')"; }
summary() { # load report JSON on stdin -> one line
  python3 -c '
import json, sys
r = json.load(sys.stdin)
e = r["errors"]
print(r["responses"], "responses", "{:.0f} req/s p99 {:.3f} ms".format(r["rps"], r["latency_ms"]["p99"]), dict(r["status_counts"]), "conn/rw/timeout errors", e["connect"], e["read_write"], e["timeout"])
'
}
fault() { # name, fault command (uses $URL)
  local name=$1; shift
  local before; before=$(rss "$PID")
  $T/wasmlab load "$URL/" -c 10 -d "${SECS}s" --json > "$OUT/healthy.json" &
  local healthy=$!
  local injected; injected=$(eval "$@" 2>&1 || true)
  wait $healthy
  printf '%-30s healthy: %s\n%-30s fault:   %s\n%-30s RSS KiB: %s -> %s\n' "$name" "$(summary < "$OUT/healthy.json")" "" "$injected" "" "$before" "$(rss "$PID")"
}

start $T/wasmlab-gateway-wasm --wasm "$HOSTILE" --deadline-ms 200 --max-memory-mib 16
echo "wasm gateway (pooled) with the hostile guest: $(grep limits "$OUT/gw.err")"
for f in trap loop grow stack; do
  fault "guest /$f" "$T/wasmlab load $URL/$f -c 4 -d ${SECS}s --json | summary"
done
fault "guest secret write+read" "$T/wasmlab load '$URL/secret/write?s=hunter2' -c 2 -d ${SECS}s --json | summary; clients read-back --target /secret/read"
fault "guest content-length 1000" "clients framing --name content-length --value 1000"
fault "guest content-length 3" "clients framing --name content-length --value 3"
fault "guest transfer-encoding" "clients framing --name transfer-encoding --value chunked"
fault "guest status 101" "$T/wasmlab load '$URL/status?code=101' -c 2 -d ${SECS}s --json | summary"
stop

# A component that fails without answering, at a steady rate beside healthy traffic: each such
# request is answered 500 at once and its instance freed, not held to the 5 s deadline.
start $T/wasmlab-gateway-wasm --executor component --wasm "$HOSTILE_HTTP" --deadline-ms 5000
echo "wasm gateway (component) with the hostile component: $(grep limits "$OUT/gw.err")"
fault "nothing beside (healthy alone)" "true"
for f in no-response drop-response unfinished; do
  fault "component /$f, 200 req/s" "$T/wasmlab load $URL/$f -R 200 -c 300 -d ${SECS}s --json | summary"
done
stop

start $T/wasmlab-gateway-wasm --wasm "$HOSTILE" --max-instances 2 --max-queue 4 --queue-timeout-ms 50 --deadline-ms 300
fault "pool full (2 slots, queue 4)" "$T/wasmlab load $URL/loop -c 20 -d ${SECS}s --json | summary"
stop

start $T/wasmlab-gateway-native --header-timeout-secs 0.5 --body-timeout-secs 1 --max-body-bytes 65536 --max-header-bytes 16384
echo "native gateway: $(head -1 "$OUT/gw.err")"
fault "malformed request line" "clients malformed -n 20"
BIG_HEAD=$(python3 -c 'print("x" * 40000)')
BIG_BODY=$(python3 -c 'print("x" * 100000)')
fault "oversized head (40 KB)" "$T/wasmlab load $URL/ -H \"X-Big: \$BIG_HEAD\" -c 4 -d ${SECS}s --json | summary"
fault "one 100 KB header line" "clients big-header --bytes 100000"
fault "oversized body (100 KB)" "$T/wasmlab load $URL/echo -m POST -b \"\$BIG_BODY\" -c 4 -d ${SECS}s --json | summary"
fault "byte-at-a-time heads (50)" "clients slow-heads -n 50 --secs $SECS"
fault "byte-at-a-time bodies (200)" "clients slow-bodies -n 200 --secs $SECS"
stop

start $T/wasmlab-gateway-wasm
fault "10,000 idle connections" "clients storm -n 10000 --pid $PID"
stop

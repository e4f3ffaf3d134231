#!/usr/bin/env bash
# For each fault: healthy traffic (GET /) and the fault injected side by side for a few seconds,
# both measured with `wasmlab load`; prints requests served, counts by status and the gateway's RSS
# before, at its highest (sampled every 0.2 s) and after. Last, the HTTP/2 and TLS abuses against
# each gateway and executor over HTTPS with HTTP/2 (needs openssl for a throwaway certificate). Misbehaving raw clients come from scripts/fault_clients.py (Python's standard
# library only). Loopback only, bounded in time. Run after `cargo build --release`.
set -euo pipefail
cd "$(dirname "$0")/.."
T=${T:-target/release}  # T=DIR: the binaries of another build (a before/after)
SECS=${SECS:-3}

need_tool() { # tool, how to get it
  command -v "$1" > /dev/null || { echo "fault-report.sh: needs $1, which is not installed: $2" >&2; exit 2; }
}
need_tool python3 "apt-get install python3"
need_tool awk "apt-get install gawk"
for bin in wasmlab wasmlab-gateway-wasm wasmlab-gateway-native wasmlab-socket-server; do
  [ -x "$T/$bin" ] || { echo "fault-report.sh: $T/$bin not found: run 'cargo build --release' first" >&2; exit 2; }
done
HOSTILE=target/guests/hostile/wasm32-unknown-unknown/guest/wasmlab_guest_hostile.wasm
HOSTILE_HTTP=target/guests/hostile/wasm32-wasip2/guest/wasmlab_guest_hostile.wasm
for guest in "$HOSTILE" "$HOSTILE_HTTP"; do
  [ -f "$guest" ] || { echo "fault-report.sh: $guest not found: run 'cargo build --release' first" >&2; exit 2; }
done

OUT=$(mktemp -d)
trap 'kill $PID 2>/dev/null || true; rm -rf "$OUT"' EXIT
# shellcheck disable=SC2086
clients() { python3 scripts/fault_clients.py --port "${URL##*:}" ${CLIENT_TLS:-} "$@"; }
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
peak_rss() { # pid, file: writes the highest RSS seen until the file's sampler is killed
  local max=0 r
  while r=$(rss "$1" 2>/dev/null); do
    [ "${r:-0}" -gt "$max" ] && { max=$r; echo "$max" > "$2"; }
    sleep 0.2
  done
}
fault() { # name, fault command (uses $URL); $HEALTHY: extra flags for the healthy load (e.g. --h2 -k)
  local name=$1; shift
  local before; before=$(rss "$PID")
  echo "$before" > "$OUT/peak"
  peak_rss "$PID" "$OUT/peak" & local sampler=$!
  # shellcheck disable=SC2086
  $T/wasmlab load "$URL/" -c 10 -d "${SECS}s" ${HEALTHY:-} --json > "$OUT/healthy.json" &
  local healthy=$!
  local injected; injected=$(eval "$@" 2>&1 || true)
  wait $healthy
  kill $sampler 2>/dev/null; wait $sampler 2>/dev/null || true
  printf '%-30s healthy: %s\n%-30s fault:   %s\n%-30s RSS KiB: %s before, %s at most, %s after\n' "$name" "$(summary < "$OUT/healthy.json")" "" "$injected" "" "$before" "$(cat "$OUT/peak")" "$(rss "$PID")"
}

# ONLY=guests, ONLY=socket or ONLY=h2 runs one part alone.
part() { [ -z "${ONLY:-}" ] || [ "$ONLY" = "$1" ]; }

if part guests; then
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
fi

# The socket server (crates/socket-server, what users deploy under containerd) with its HTTP/1.1 limits.
if part socket; then
start $T/wasmlab-socket-server --header-timeout-secs 0.5 --body-timeout-secs 1 --max-body-bytes 65536 --max-header-bytes 16384
echo "socket server: $(head -1 "$OUT/gw.err")"
fault "malformed request line" "clients malformed -n 20"
fault "one 100 KB header line" "clients big-header --bytes 100000"
fault "byte-at-a-time heads (50)" "clients slow-heads -n 50 --secs $SECS"
fault "byte-at-a-time bodies (200)" "clients slow-bodies -n 200 --secs $SECS"
fault "5,000 idle connections" "clients storm -n 5000 --pid $PID"
stop
fi

# HTTP/2 and TLS, the abuses of recent CVEs, against every gateway and executor; healthy traffic
# is HTTP/2 over TLS beside each (GATEWAYS="native pooled" narrows the list; H2_SECS the waits;
# ONLY=h2 runs this part alone).
if part h2; then
H2_SECS=${H2_SECS:-14}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
  -addext subjectAltName=DNS:localhost -keyout "$OUT/key.pem" -out "$OUT/cert.pem" 2> /dev/null \
  || { echo "fault-report.sh: needs openssl to make a certificate (apt-get install openssl)" >&2; exit 2; }
TLS=(--http2 --tls-cert "$OUT/cert.pem" --tls-key "$OUT/key.pem")
for gw in ${GATEWAYS:-native pooled recycled shared component}; do
  case $gw in
    native) start $T/wasmlab-gateway-native "${TLS[@]}" ;;
    component) start $T/wasmlab-gateway-wasm --executor component "${TLS[@]}" ;;
    *) start $T/wasmlab-gateway-wasm --executor "$gw" "${TLS[@]}" ;;
  esac
  echo "$gw gateway, HTTP/2 over TLS: $(grep -o 'protocols=.*' "$OUT/gw.err" | head -1)"
  HEALTHY="--h2 -k" CLIENT_TLS=--tls
  fault "h2 100 idle connections" "clients h2-idle -n 100 --secs $H2_SECS"
  fault "h2 rapid reset (20,000)" "clients h2-rapid-reset -n 20000"
  fault "h2 CONTINUATION flood" "clients h2-continuation"
  fault "h2 PING flood (100,000)" "clients h2-ping-flood"
  fault "h2 SETTINGS flood (100,000)" "clients h2-settings-flood"
  fault "h2 HPACK bomb" "clients h2-hpack-bomb"
  fault "h2 1,000 streams at once" "clients h2-streams -n 1000"
  fault "h2 zero window (10 x 100 streams)" "clients h2-zero-window -c 10 --streams 100 --bytes 131072 --secs $H2_SECS"
  for f in tls-idle tls-slow tls-unfinished tls-garbage; do
    fault "$f (50 clients)" "clients $f -n 50 --secs $H2_SECS"
  done
  HEALTHY="" CLIENT_TLS=""
  stop
done
fi

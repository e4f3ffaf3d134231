#!/usr/bin/env bash
# For each fault: healthy traffic (GET /) and the fault injected side by side for a few seconds,
# both measured with `wasmlab load`; prints requests served, counts by status and the gateway's RSS
# before and after. Loopback only, bounded in time. Run after `cargo build --release`.
set -euo pipefail
cd "$(dirname "$0")/.."
T=target/release
HOSTILE=$(ls target/guests/wasm32-unknown-unknown/guest/wasmlab_guest_hostile.wasm)
SECS=${SECS:-3}

rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
start() { # binary args... ; sets PID and URL
  "$@" --port 0 > /tmp/fault-gw.out 2> /tmp/fault-gw.err &
  PID=$!
  for _ in $(seq 100); do grep -q listening /tmp/fault-gw.out 2>/dev/null && break; sleep 0.05; done
  URL=$(sed -n 's/listening on //p' /tmp/fault-gw.out)
}
summary() { # load report JSON on stdin -> one line
  python3 -c '
import json, sys
r = json.load(sys.stdin)
e = r["errors"]
print(r["responses"], "responses", dict(r["status_counts"]), "conn/rw/timeout errors", e["connect"], e["read_write"], e["timeout"])
'
}
fault() { # name, fault command (uses $URL)
  local name=$1; shift
  local before; before=$(rss "$PID")
  $T/wasmlab load "$URL/" -c 10 -d "${SECS}s" --json > /tmp/fault-healthy.json &
  local healthy=$!
  local injected; injected=$(eval "$@" || true)
  wait $healthy
  printf '%-28s healthy: %s\n%-28s fault:   %s\n%-28s RSS KiB: %s -> %s\n' "$name" "$(summary < /tmp/fault-healthy.json)" "" "$injected" "" "$before" "$(rss "$PID")"
}

start $T/wasmlab-gateway-wasm --wasm "$HOSTILE" --deadline-ms 200 --max-memory-mib 16
echo "wasm gateway (pooled) with the hostile guest: $(grep limits /tmp/fault-gw.err)"
for f in trap loop grow stack; do
  fault "guest /$f" "$T/wasmlab load $URL/$f -c 4 -d ${SECS}s --json | summary"
done
fault "guest secret write+read" "$T/wasmlab load '$URL/secret/write?s=hunter2' -c 2 -d ${SECS}s --json | summary; curl -s $URL/secret/read | wc -c | sed 's/^/bytes read back: /'"
kill $PID; wait $PID 2>/dev/null || true

start $T/wasmlab-gateway-wasm --wasm "$HOSTILE" --max-instances 2 --max-queue 4 --queue-timeout-ms 50 --deadline-ms 300
fault "pool full (2 slots, queue 4)" "$T/wasmlab load $URL/loop -c 20 -d ${SECS}s --json | summary"
kill $PID; wait $PID 2>/dev/null || true

start $T/wasmlab-gateway-native --header-timeout-secs 0.5 --max-body-bytes 65536 --max-header-bytes 16384
echo "native gateway: $(cat /tmp/fault-gw.err)"
fault "malformed request line" "for i in \$(seq 20); do printf 'NOT HTTP\r\n\r\n' | timeout 2 nc -N 127.0.0.1 \${URL##*:} | head -1; done | sort | uniq -c | tr '\n' ' '"
BIG_HEAD=$(python3 -c 'print("x" * 40000)')
BIG_BODY=$(python3 -c 'print("x" * 100000)')
fault "oversized head (40 KB)" "$T/wasmlab load $URL/ -H \"X-Big: \$BIG_HEAD\" -c 4 -d ${SECS}s --json | summary"
fault "oversized body (100 KB)" "$T/wasmlab load $URL/echo -m POST -b \"\$BIG_BODY\" -c 4 -d ${SECS}s --json | summary"
fault "byte-at-a-time heads (50)" "slow=(); for i in \$(seq 50); do (printf 'GET / HTTP/1.1\r\nHost: x\r\n'; while sleep 0.1; do printf 'a'; done) 2>/dev/null | timeout 3 nc 127.0.0.1 \${URL##*:} > /dev/null & slow+=(\$!); done; sleep $SECS; open=0; for p in \${slow[@]}; do kill -0 \$p 2>/dev/null && open=\$((open+1)); kill \$p 2>/dev/null; done; echo \"50 slow clients; still connected after ${SECS} s: \$open\""
kill $PID; wait $PID 2>/dev/null || true

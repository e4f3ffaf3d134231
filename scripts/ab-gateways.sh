#!/usr/bin/env bash
# Interleaved A/B of two gateway command lines under the same load: alternates A and B for ROUNDS
# rounds of `wasmlab load -t1 -c50 -d3s` on GET / (loopback), then prints each side's req/s, sorted.
# Usage: scripts/ab-gateways.sh "CMD_A" "CMD_B" [ROUNDS]   (each CMD gets --port 18085 appended)
set -euo pipefail
cd "$(dirname "$0")/.."
A=$1 B=$2 ROUNDS=${3:-4}
for _ in $(seq "$ROUNDS"); do
  for side in A B; do
    if [ $side = A ]; then cmd=$A; else cmd=$B; fi
    $cmd --port 18085 > /dev/null 2>&1 & pid=$!
    sleep 0.4
    echo "$side $(target/release/wasmlab load -t1 -c50 -d3s http://127.0.0.1:18085/ | grep -o '[0-9]* req/s' | cut -d' ' -f1)"
    kill $pid; wait $pid 2>/dev/null || true
    sleep 0.2
  done
done | sort -k1,1 -k2n | awk '{a[$1] = a[$1] " " $2} END {for (k in a) print k ":" a[k]}' | sort

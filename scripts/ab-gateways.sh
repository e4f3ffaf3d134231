#!/usr/bin/env bash
# Interleaved A/B of two gateway command lines under the same load: alternates A and B for ROUNDS
# rounds of `wasmlab load -t1 -c50 -d3s` on GET $TARGET (default /; loopback, after a 1 s warm-up;
# CONNECTIONS=N for another load than 50), then prints each
# side's rounds, sorted by req/s, as REQ_PER_S/USER_US+SYS_US: the gateway's CPU per request (from
# /proc/PID/stat), the figure that tells a cheaper server from a saturated load generator.
# As `wasmlab run` does by default, the generator runs on CPU 0 and the gateway on the other CPUs
# (on a 1-CPU machine both share it). LOAD_ARGS adds to the load's options, e.g.
# LOAD_ARGS="--h2 --streams 10" CONNECTIONS=5 for HTTP/2 (the gateways need --http2).
# Usage: scripts/ab-gateways.sh "CMD_A" "CMD_B" [ROUNDS]   (each CMD gets --port 18085 appended)
# For /proxy, give the gateways an upstream: `target/release/wasmlab upstream --port 18086 &` and
# `--upstream http://127.0.0.1:18086` in each CMD.
set -euo pipefail
# Idle CPUs poll while it measures, as in `wasmlab run` (docs/method.md, "Idle CPUs: polling");
# CPU_IDLE=system leaves them as the machine has them.
if [ "${CPU_IDLE:-poll}" = poll ] && [ -z "${IDLE_HELD:-}" ]; then
  IDLE_HELD=1 exec "$(dirname "$0")/with-idle-poll" "$0" "$@"
fi
cd "$(dirname "$0")/.."
A=$1 B=$2 ROUNDS=${3:-4} TARGET=${TARGET:-/}
# shellcheck disable=SC2206 # LOAD_ARGS is split on purpose
LOAD=(target/release/wasmlab load -t1 -c"${CONNECTIONS:-50}" ${LOAD_ARGS:-})
SERVER=()
if [ "$(nproc)" -ge 2 ]; then
  LOAD=(taskset -c 0 "${LOAD[@]}")
  SERVER=(taskset -c "1-$(($(nproc) - 1))")
fi
TICK=$(getconf CLK_TCK)
# user and system ticks of a process (fields 14 and 15 of /proc/PID/stat; the name may hold spaces)
ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12, $13}'; }
# However it ends (Ctrl-C too), the gateway of the round under way stopped.
{ pid=""; trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi' EXIT; trap 'exit 130' INT TERM
for _ in $(seq "$ROUNDS"); do
  for side in A B; do
    if [ $side = A ]; then cmd=$A; else cmd=$B; fi
    # shellcheck disable=SC2086 # the command line is split on purpose
    "${SERVER[@]}" $cmd --port 18085 > /dev/null 2>&1 & pid=$!
    sleep 0.4
    "${LOAD[@]}" -d1s "http://127.0.0.1:18085$TARGET" > /dev/null
    read -r u0 s0 < <(ticks $pid)
    out=$("${LOAD[@]}" -d3s "http://127.0.0.1:18085$TARGET")
    read -r u1 s1 < <(ticks $pid)
    kill $pid; wait $pid 2>/dev/null || true
    n=$(echo "$out" | grep -o 'responses ([0-9]*' | grep -o '[0-9]*$')
    rps=$(echo "$out" | grep -o '[0-9]* req/s' | head -1 | cut -d' ' -f1)
    echo "$side $rps $(awk -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v n="$n" -v t="$TICK" \
      'BEGIN {printf "%.1f+%.1f", u * 1e6 / t / n, s * 1e6 / t / n}')"
    sleep 0.2
  done
done; } | sort -k1,1 -k2n | awk '{a[$1] = a[$1] " " $2 "/" $3} END {for (k in a) print k ":" a[k]}' | sort

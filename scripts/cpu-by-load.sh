#!/usr/bin/env bash
# What utilization does to a server's CPU per request: one gateway alone on CPU 1, `wasmlab load
# -t1 --spin -c50` on CPU 0 at each offered rate (`max`: closed loop), 2 s after a 0.5 s warm-up at
# the same rate; prints the answered req/s, how busy the gateway kept its CPU and its CPU µs per
# request, from its process CPU clock (clock_getcpuclockid, to the nanosecond). docs/method.md,
# "What utilization does to CPU per request", has what it showed on the team's VM.
# Usage: scripts/cpu-by-load.sh "GATEWAY CMD" "RATE..." [PATH]   (the CMD gets --port 18085)
# e.g.   scripts/cpu-by-load.sh target/release/wasmlab-gateway-native "20000 60000 max"
set -euo pipefail
# Idle CPUs poll while it measures, as in `wasmlab run` (docs/method.md, "Idle CPUs: polling");
# CPU_IDLE=system leaves them as the machine has them.
if [ "${CPU_IDLE:-poll}" = poll ] && [ -z "${IDLE_HELD:-}" ]; then
  IDLE_HELD=1 exec "$(dirname "$0")/with-idle-poll" "$0" "$@"
fi
cd "$(dirname "$0")/.."
CMD=$1 RATES=$2 TARGET=${3:-/}
LOAD=(target/release/wasmlab load -t1 --spin -c50)
SERVER=()
if [ "$(nproc)" -ge 2 ]; then
  LOAD=(taskset -c 0 "${LOAD[@]}")
  SERVER=(taskset -c 1)
fi
# A process's CPU time in seconds: its CPU clock, through libc (no tick rounding).
cpu() {
  python3 -c '
import ctypes, sys, time
clock = ctypes.c_int()
if ctypes.CDLL(None).clock_getcpuclockid(int(sys.argv[1]), ctypes.byref(clock)):
    sys.exit("no CPU clock for process " + sys.argv[1])
print(time.clock_gettime(clock.value))' "$1"
}
# shellcheck disable=SC2086 # the command line is split on purpose
"${SERVER[@]}" $CMD --port 18085 > /dev/null 2>&1 & pid=$!
trap 'kill $pid 2>/dev/null' EXIT
trap 'exit 130' INT TERM
sleep 0.5
for r in $RATES; do
  rate=(); [ "$r" = max ] || rate=(-R "$r")
  "${LOAD[@]}" "${rate[@]}" -d0.5s "http://127.0.0.1:18085$TARGET" > /dev/null
  c0=$(cpu $pid)
  out=$("${LOAD[@]}" "${rate[@]}" -d2s --json "http://127.0.0.1:18085$TARGET")
  c1=$(cpu $pid)
  echo "$out" | python3 -c '
import json, sys
r = json.load(sys.stdin); cpu = float(sys.argv[2]) - float(sys.argv[1])
n, el, gen = r["responses"], r["elapsed_secs"], r["generator_busy"]
print(f"{sys.argv[3]:>8}: {n / el:9.0f} req/s  busy {cpu / el * 100:5.1f}%  {cpu * 1e6 / n:6.2f} us/req  generator busy {gen * 100:.0f}%")' "$c0" "$c1" "$r"
done

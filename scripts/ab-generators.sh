#!/usr/bin/env bash
# Interleaved A/B of load generators against the native gateway: wrk -t1, `wasmlab load -t1` and
# `wasmlab load -t1 --spin` (and, with OLD=PATH, another wasmlab binary), -c50 for 3 s each, ROUNDS rounds. The gateway runs
# with one worker on CPU 1, the generators on CPU 0. Prints, per run: req/s, the gateway's share
# of its core (from /proc), the generator's share of its core and its CPU microseconds per
# response (user + sys from /usr/bin/time). With QUOTA=N (percent) each generator runs in a cgroup
# v1 cpu controller limited to N% of a core (period 10 ms), so the generator rather than the
# gateway is the limit and req/s compares the generators at an equal CPU budget.
# Usage: scripts/ab-generators.sh [ROUNDS]    (needs wrk, taskset, /usr/bin/time; QUOTA needs root)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
for tool in wrk taskset /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "ab-generators: $tool is missing (apt-get install wrk util-linux time)"; exit 3; }
done
[ "$(nproc)" -ge 2 ] || { echo "ab-generators: needs 2 CPUs (one for the gateway, one for the generator)"; exit 3; }
WASMLAB=target/release/wasmlab
GATEWAY=target/release/wasmlab-gateway-native
[ -x "$WASMLAB" ] && [ -x "$GATEWAY" ] || { echo "ab-generators: build first: cargo build-wasmlab --release"; exit 3; }
CG=""
if [ -n "${QUOTA:-}" ]; then
  CG=/sys/fs/cgroup/cpu/wasmlab-ab-generators
  mkdir -p "$CG" && echo 10000 > "$CG/cpu.cfs_period_us" && echo $((QUOTA * 100)) > "$CG/cpu.cfs_quota_us"
fi
TICK=$(getconf CLK_TCK)
ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
# Runs "$@" on CPU 0, in the cgroup when there is one.
gen() { if [ -n "$CG" ]; then sh -c 'echo $$ > "$0/tasks"; exec "$@"' "$CG" taskset -c 0 "$@"; else taskset -c 0 "$@"; fi; }
taskset -c 1 "$GATEWAY" --threads 1 --port 18097 > /dev/null 2>&1 & pid=$!
# However the script ends: the gateway stopped, the cgroup removed (once its generators are gone).
trap 'kill $pid 2>/dev/null; if [ -n "$CG" ]; then rmdir "$CG" 2>/dev/null || true; fi' EXIT
trap 'exit 130' INT TERM
sleep 0.5
gen wrk -t1 -c50 -d1s http://127.0.0.1:18097/ > /dev/null
sides="wrk new spin${OLD:+ old}"
for _ in $(seq "$ROUNDS"); do
  for side in $sides; do
    case $side in
      wrk) cmd=(wrk -t1 -c50 -d3s http://127.0.0.1:18097/) ;;
      new) cmd=("$WASMLAB" load -t1 -c50 -d3s http://127.0.0.1:18097/) ;;
      spin) cmd=("$WASMLAB" load -t1 -c50 -d3s --spin http://127.0.0.1:18097/) ;;
      old) cmd=("$OLD" load -t1 -c50 -d3s http://127.0.0.1:18097/) ;;
    esac
    t0=$(ticks $pid); s0=$(date +%s.%N)
    out=$(/usr/bin/time -f "TIME %U %S %e" bash -c "$(declare -f gen); CG='$CG'; gen \"\$@\"" _ "${cmd[@]}" 2>&1)
    t1=$(ticks $pid); s1=$(date +%s.%N)
    if [ "$side" = wrk ]; then
      rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    else
      rps=$(echo "$out" | grep -o '[0-9]* req/s' | head -1 | cut -d' ' -f1)
    fi
    read -r u s e < <(echo "$out" | awk '/^TIME/ {print $2, $3, $4}')
    awk -v n="$side" -v r="$rps" -v t=$((t1 - t0)) -v k="$TICK" -v a="$s0" -v b="$s1" -v u="$u" -v s="$s" -v e="$e" \
      'BEGIN {printf "%-4s %8.0f req/s  gateway %.2f  generator %.2f  %.2f us/response\n", n, r, t / k / (b - a), (u + s) / e, (u + s) * 1e6 / (r * 3)}'
  done
done

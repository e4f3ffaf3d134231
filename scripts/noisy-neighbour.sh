#!/usr/bin/env bash
# A noisy neighbour, to see what one does to a run (docs/continuous.md, "Why a machine of your
# own"): on each CPU a process busy for a random 0-400 ms, then idle for a random 0-400 ms (about
# half of each CPU), for SECONDS, then gone; Ctrl-C or the end stops every one of them.
# Usage: scripts/noisy-neighbour.sh SECONDS
# e.g.   scripts/noisy-neighbour.sh 600 & ./wasmlab run --suite continuous; kill %1
set -euo pipefail
SECONDS_LEFT=${1:?usage: scripts/noisy-neighbour.sh SECONDS}
[[ $SECONDS_LEFT =~ ^[0-9]+$ ]] || { echo "SECONDS is a whole number of seconds, not $SECONDS_LEFT" >&2; exit 2; }
# Busy without forking: bash's own clock, in microseconds.
burn() {
  local t until
  while :; do
    t=${EPOCHREALTIME/./}
    until=$(( 10#$t + RANDOM % 400 * 1000 ))
    while t=${EPOCHREALTIME/./}; (( 10#$t < until )); do :; done
    sleep "0.$(printf '%03d' $((RANDOM % 400)))"
  done
}
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT INT TERM
for _ in $(seq "$(nproc)"); do
  burn &
  pids+=($!)
done
sleep "$SECONDS_LEFT"

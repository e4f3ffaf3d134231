#!/usr/bin/env python3
"""Copies a server run's results directory keeping only its first K repetitions, as if the run had
stopped there: what a run of K repetitions would have shown on the same machine at the same
time (docs/method.md, "Repetitions added on a noisy machine"). Cold starts are kept whole (their
launches are not repetitions). Then `wasmlab report OUT` writes its outputs, and `wasmlab compare`
sets it against another.
Usage: scripts/first-repetitions.py RUN_DIR K OUT_DIR"""
import json
import os
import sys

if len(sys.argv) != 4:
    sys.exit(__doc__)
src, out = sys.argv[1], sys.argv[3]
try:
    k = int(sys.argv[2])
except ValueError:
    sys.exit(f"first-repetitions: K must be a whole number, not {sys.argv[2]!r}")
with open(os.path.join(src, "run.json")) as f:
    run = json.load(f)
if run.get("kind") is not None:
    sys.exit(f"first-repetitions: {src} is a program suite's run; this keeps a server run's repetitions")
measured = len(run.get("orders", []))
if not 1 <= k <= measured:
    sys.exit(f"first-repetitions: K must be between 1 and the {measured} repetitions {src} measured")
if os.path.exists(out):
    sys.exit(f"first-repetitions: {out} exists; name a new directory")
os.makedirs(out)
run["suite"]["repetitions"] = k
run["orders"] = run["orders"][:k]
# The run stopped after K: whatever it added after a look at its intervals did not happen.
run.pop("added_repetitions", None)
run["run_id"] = f"{run['run_id']}-first{k}"
with open(os.path.join(out, "run.json"), "w") as f:
    json.dump(run, f, indent=2)
kept = 0
with open(os.path.join(src, "samples.jsonl")) as lines, open(os.path.join(out, "samples.jsonl"), "w") as f:
    for line in lines:
        s = json.loads(line)
        if s["kind"] == "cold_start" or s["repetition"] < k:
            f.write(line)
            kept += 1
print(f"first-repetitions: {out}: {kept} samples of the first {k} of {measured} repetitions; now `wasmlab report {out}`")

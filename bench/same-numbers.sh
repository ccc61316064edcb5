#!/usr/bin/env bash
# Two builds of the CLI, one config, the same seed: do they train to the same numbers? Runs each build for
# a few iterations on this machine's GPU and compares the JSON lines with the timings removed; prints
# "same" or the first differing line. Used to check that a refactor keeps a run's numbers (README: the
# learning runs reproduce). Usage (on a GPU machine, both builds of src/cli/marft.ts bundled into the kit's app/):
#   bash bench/same-numbers.sh "$DEVICE_KIT/app/marft-old.mjs" "$DEVICE_KIT/app/marft.mjs" configs/classroom.json 3
# DEVICE_KIT (default .devcarry) is the kit folder: enter.sh, which runs its arguments with Node.js, Dawn and the
# Vulkan loader set up, and app/, the bundled entry points (BENCHMARKS.md, "Running on a remote GPU machine").
set -uo pipefail
KIT=${DEVICE_KIT:-.devcarry}
OUT=${OUT:-/tmp/out}
[ $# -eq 4 ] || { echo "usage: bench/same-numbers.sh OLD.mjs NEW.mjs CONFIG.json ITERATIONS" >&2; exit 2; }
name=$(basename "$3" .json)
for side in old new; do
  bundle=$([ $side = old ] && echo "$1" || echo "$2")
  rm -rf "/tmp/same-$side"
  bash "$KIT/enter.sh" node "$bundle" train --config "$3" --iterations "$4" --out "/tmp/same-$side" --json 2>/dev/null > "$OUT/same-$name-$side.jsonl"
done
python3 - "$OUT/same-$name-old.jsonl" "$OUT/same-$name-new.jsonl" <<'PY'
import json, sys
def load(p):
    out = []
    for line in open(p):
        m = json.loads(line)
        for k in ('tokensPerSecond', 'seconds', 'profile', 'checkpoint'): m.pop(k, None)
        out.append(m)
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
if not a: print('no iterations from the first build'); sys.exit(1)
for i, (x, y) in enumerate(zip(a, b)):
    if x != y: print(f'iteration {i} differs:\n  old {json.dumps(x)[:600]}\n  new {json.dumps(y)[:600]}'); sys.exit(1)
print(f'same: {len(a)} iterations, every metric equal' if len(a) == len(b) else f'different lengths {len(a)} vs {len(b)}'); sys.exit(0 if len(a) == len(b) else 1)
PY

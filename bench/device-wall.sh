#!/usr/bin/env bash
# What a user waits for, in Node on a GPU machine: bench:iteration --wall 10 for the classroom and duo-token
# presets and the SmolLM2-135M shape, on the default checkpoint cadence and with a checkpoint after every
# iteration (--checkpoint-every 1). Needs .devcarry (Node, Dawn, the Vulkan loader; see bench/device-run.sh)
# with bench/iteration.ts bundled into .devcarry/app. Results in $OUT/wall.txt and one JSON per run.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
R="bash .devcarry/enter.sh node .devcarry/app/iteration.mjs"
f='^Warning\|^    at \|XDG'
for p in classroom duo-token; do
  $R --preset $p --wall 10 --out $OUT/$p.json 2>&1 | grep -v "$f" | tail -4 | tee -a $OUT/wall.txt
  $R --preset $p --wall 10 --checkpoint-every 1 --out $OUT/$p-every1.json 2>&1 | grep -v "$f" | tail -2 | tee -a $OUT/wall.txt
done
$R --models smollm2-135m --dtype f32 --recompute off --wall 10 --out $OUT/135m.json 2>&1 | grep -v "$f" | tail -4 | tee -a $OUT/wall.txt
$R --models smollm2-135m --dtype f32 --recompute off --wall 10 --checkpoint-every 1 --out $OUT/135m-every1.json 2>&1 | grep -v "$f" | tail -2 | tee -a $OUT/wall.txt

#!/usr/bin/env bash
# What a user waits for, in Node on a GPU machine: bench:iteration --wall 10 for the classroom and duo-token
# presets and the SmolLM2-135M shape, on the default checkpoint cadence and with a checkpoint after every
# iteration (--checkpoint-every 1). Needs bench/iteration.ts bundled into the kit's app/. Results in
# $OUT/wall.txt and one JSON per run.
# DEVICE_KIT (default .devcarry) is the kit folder: enter.sh, which runs its arguments with Node.js, Dawn and the
# Vulkan loader set up, and app/, the bundled entry points (BENCHMARKS.md, "Running on a remote GPU machine").
set -uo pipefail
KIT=${DEVICE_KIT:-.devcarry}
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
R="bash $KIT/enter.sh node $KIT/app/iteration.mjs"
f='^Warning\|^    at \|XDG'
for p in classroom duo-token; do
  $R --preset $p --wall 10 --out $OUT/$p.json 2>&1 | grep -v "$f" | tail -4 | tee -a $OUT/wall.txt
  $R --preset $p --wall 10 --checkpoint-every 1 --out $OUT/$p-every1.json 2>&1 | grep -v "$f" | tail -2 | tee -a $OUT/wall.txt
done
$R --models smollm2-135m --dtype f32 --recompute off --wall 10 --out $OUT/135m.json 2>&1 | grep -v "$f" | tail -4 | tee -a $OUT/wall.txt
$R --models smollm2-135m --dtype f32 --recompute off --wall 10 --checkpoint-every 1 --out $OUT/135m-every1.json 2>&1 | grep -v "$f" | tail -2 | tee -a $OUT/wall.txt

#!/usr/bin/env bash
# The PyTorch peers and our benchmarks on the same GPU in one run, results under $OUT (default /tmp/out): run on
# a GPU machine from this checkout with Python 3, PyTorch, transformers and peft installed.
# DEVICE_KIT (default .devcarry) is the kit folder: enter.sh, which runs its arguments with Node.js, Dawn and the
# Vulkan loader set up, and app/, the bundled entry points (BENCHMARKS.md, "Running on a remote GPU machine").
# Prepare: for b in kernels model iteration; do node scripts/bundle.mjs bench/$b.ts "$DEVICE_KIT/app"; done
# Run: bash bench/device-run.sh [fixtures] [kernels] [model] [iteration]
set -uo pipefail
KIT=${DEVICE_KIT:-.devcarry}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
steps=" $* "
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
if [[ -z "$*" || "$steps" == *" fixtures "* ]]; then
  python3 scripts/fixtures/make_parity.py "$OUT/parity.tar" 2>&1 | grep -v -i "warn\|Writing" | tail -6
fi
if [[ -z "$*" || "$steps" == *" kernels "* ]]; then
  python3 bench/baselines/kernels.py --matmul 4096x4096x4096,2048x2048x2048,1024x1024x1024,4096x576x576,8x1536x576 \
    --attn 8x512x9x3x64,4x1024x9x3x64,2x2048x16x4x64 --out "$OUT/torch-kernels.json" > /dev/null
  bash "$KIT/enter.sh" node $KIT/app/kernels.mjs --peer "$OUT/torch-kernels.json" --out "$OUT/kernels.json" 2>&1 | grep -v "^Warning\|^    at " | tee "$OUT/kernels.txt"
fi
if [[ -z "$*" || "$steps" == *" model "* ]]; then
  python3 bench/baselines/model.py --out "$OUT/torch-model.json" 2>&1 | grep -v -i warn
  bash "$KIT/enter.sh" node $KIT/app/model.mjs --peer "$OUT/torch-model.json" --out "$OUT/model.json" 2>&1 | grep -v "^Warning\|^    at " | tee "$OUT/model.txt"
fi
if [[ -z "$*" || "$steps" == *" iteration "* ]]; then
  # bundle bench/iteration.ts too. Speed: 2 agents, f32, against transformers + peft; memory: 4 agents, bf16 base.
  # the peer's prompts as long as the bench's (its promptTokens; it prints a note when they differ)
  python3 bench/baselines/iteration.py --prompts 275,394 --out "$OUT/torch-iteration.json" 2>&1 | grep -v -i warn | tail -3
  bash "$KIT/enter.sh" node $KIT/app/iteration.mjs --models smollm2-135m,builtin --dtype f32 --recompute off --peer "$OUT/torch-iteration.json" \
    --out "$OUT/iteration-f32.json" --profile 2>&1 | grep -v "^Warning\|^    at \|XDG" | tee "$OUT/iteration.txt"
  bash "$KIT/enter.sh" node $KIT/app/iteration.mjs --models smollm2-135m --dtype bf16 --agents 4 --out "$OUT/iteration-bf16-4.json" 2>&1 \
    | grep -v "^Warning\|^    at \|XDG" | tail -4 | tee -a "$OUT/iteration.txt"
fi

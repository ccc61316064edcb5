#!/usr/bin/env bash
# The learning matrix on a GPU machine, one run per seed.
# DEVICE_KIT (default .devcarry) is the kit folder: enter.sh, which runs its arguments with Node.js, Dawn and the
# Vulkan loader set up, and app/, the bundled entry points (BENCHMARKS.md, "Running on a remote GPU machine").
# Prepare (the CLI and the runner bundled into the kit's app/):
#   node scripts/bundle.mjs src/cli/marft.ts "$DEVICE_KIT/app" && node scripts/bundle.mjs bench/matrix.ts "$DEVICE_KIT/app"
# then:
#   bash bench/matrix.sh --seeds 1 --base --parallel 16      (every row, seed 1, and the untuned bases)
#   bash bench/matrix.sh --seeds 2 --parallel 16             (every row, seed 2)
# Rows (default all, bench/matrix-rows.ts) and every option: bench/matrix.ts. Logs go to $OUT/matrix/; copy them
# to bench/results/matrix/ and run `npm run bench:matrix-report` for docs/MATRIX.md and the plots.
# The row team-orchestrated-routing trains a model that has seen routing, made first (about 3 minutes):
#   bash "$DEVICE_KIT/enter.sh" node "$DEVICE_KIT/app/marft.mjs" pretrain --out .build/models/marft-tiny-orchestrated --seed 0 --bf16 --teams solo,duo,orchestrated
# The plan-* rows train public/models/marft-tiny-plan (model.path builtin:marft-tiny-plan), made first (docs/LEARNING.md):
#   bash "$DEVICE_KIT/enter.sh" node "$DEVICE_KIT/app/marft.mjs" pretrain --out public/models/marft-tiny-plan --seed 0 --bf16 --tasks coop-arith,coop-plan --teams solo,duo,orchestrated --steps 6000
set -euo pipefail
KIT=${DEVICE_KIT:-.devcarry}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/matrix"
bash "$KIT/enter.sh" node "$KIT/app/matrix.mjs" --out "$OUT/matrix" "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG_RUNTIME" | tee "$OUT/matrix/progress-$(date +%Y%m%d-%H%M%S).txt"

#!/usr/bin/env bash
# The learning matrix on the GPU machine lent by the `device` tool (../shared/device/README.md), one call per
# seed. Prepare here (the CLI and the runner bundled into .devcarry/app/):
#   bash ../shared/device/pack.sh && node scripts/bundle.mjs src/cli/marft.ts .devcarry/app && node scripts/bundle.mjs bench/matrix.ts .devcarry/app
# then run with carry [".devcarry"]:
#   bash bench/matrix.sh --seeds 1 --base --parallel 16      (call 1: every row, seed 1, and the untuned bases)
#   bash bench/matrix.sh --seeds 2 --parallel 16             (call 2: every row, seed 2)
# Rows (default all, bench/matrix-rows.ts) and every option: bench/matrix.ts. Logs go to $OUT/matrix/; copy them
# to bench/results/matrix/ and run `npm run bench:matrix-report` for docs/MATRIX.md and the plots.
# The row team-orchestrated-routing trains a model that has seen routing, made first (about 3 minutes):
#   bash .devcarry/enter.sh node .devcarry/app/marft.mjs pretrain --out .build/models/marft-tiny-orchestrated --seed 0 --bf16 --teams solo,duo,orchestrated
set -euo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/matrix"
bash .devcarry/enter.sh node .devcarry/app/matrix.mjs --out "$OUT/matrix" "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG_RUNTIME" | tee "$OUT/matrix/progress-$(date +%Y%m%d-%H%M%S).txt"

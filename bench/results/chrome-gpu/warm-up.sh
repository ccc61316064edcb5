# The kernel warm-up in Chrome on the GPU, one call after the Chromium kit is staged (bench/device-chrome.sh):
# the first Step in a fresh browser without the warm-up (?warmup=off, Chrome only), then with it (the lab's
# default) for every preset run beside Node, with the continuous runs and the revisit.
set -uo pipefail
OUT=${OUT:-/tmp/out}
OUT=$OUT/off NODE=0 RUNS="classroom duo-token smollm2-135m" BROWSER_ARGS="--warmup off --wall 0 --revisit 0" \
  DEADLINE_S=100 END_S=140 bash .devchrome/app/device-chrome.sh 2>&1 | tail -25
OUT=$OUT/auto RUNS="${RUNS:-classroom smollm2-135m duo-token lab duo-action solo-ppo class-per-step duo-anonymous}" \
  DEADLINE_S=360 END_S=420 bash .devchrome/app/device-chrome.sh 2>&1 | tail -60

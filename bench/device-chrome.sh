#!/usr/bin/env bash
# bench:browser (the lab in headless Chromium) and bench:iteration (Node/Dawn) on the GPU machine lent by the
# device tool, in one call, run by run, for the preset runs and the SmolLM2-135M-shaped random model; every
# browser figure names the adapter it got, and --expect gpu refuses a SwiftShader run (exit 3 of that run).
# Results in $OUT: gpu.txt, browser.txt + browser.json (bench:browser), iteration.txt + iteration.json
# (bench:iteration), summary.txt (side by side). See ../shared/device/README.md and ../shared/device/chrome/README.md.
#
# Here (the checkout the device tool sends, i.e. the session's own repo; after `npm ci`):
#   bash ../shared/device/pack.sh                          # .devcarry: Node, Dawn, Vulkan loader (once)
#   PART_MIB=35 bash ../shared/device/chrome/pack.sh       # .devchrome/part-00 + part-01, as root (once)
#   bash bench/device-chrome.sh prepare [CHECKOUT]         # CHECKOUT/.devchrome/app: lab build, bundles, playwright-core
#                                                          # (built from this checkout); checks the calls below against
#                                                          # the 64 MiB limit with CHECKOUT's tree (default: this one)
# The limit counts the tracked files too (18.8 MiB in /work/main on 2026-11-27), so the 68.6 MiB Chrome pack
# goes in two parts of 35.0 + 33.6 MiB (PART_MIB=35: the pack's default 55 MiB part would not fit beside
# them), and the measurement in a third call. Start each call at once after the previous one: the machine is
# handed back after ~30 s idle, and /tmp/chrome with it. Measured with du -sb on 2026-11-27 (prepare reprints):
#   call 1: carry [".devchrome/part-00"]                      35.0 + 18.8 (tree) = 53.8 MiB
#           command: bash .devchrome/part-00/stage.sh
#   call 2: carry [".devchrome/part-01"]                      33.6 + 18.8 (tree) = 52.4 MiB
#           command: bash .devchrome/part-01/stage.sh
#   call 3: carry [".devcarry", ".devchrome/app"]             31.5 + 3.1 + 18.8 (tree) = 53.4 MiB
#           command: bash .devchrome/app/device-chrome.sh
#           (timeout_s 600; RUNS="classroom smollm2-135m" bash .devchrome/app/device-chrome.sh for fewer runs)
# If call 2 answers "still missing: chrome.tar.xz.00", the machine went cold: start again from call 1.
# If call 3 answers "machine not warm", likewise (calls 1 and 2, then 3).
#
# Device side options (environment): RUNS (default: classroom, smollm2-135m, then the other distinct preset
# runs; a run is a preset run's name or a random model's shape), EPISODES (both benchmarks' --episodes;
# default: each run's own), NEW (random models' new tokens, default 128), EXPECT (gpu|any, default gpu),
# DEADLINE_S (no run starts after this many seconds, default 450), END_S (every benchmark is stopped by then,
# default 570), RUN_TIMEOUT_S (per benchmark, default 240), NODE_RUN (default `bash .devcarry/enter.sh`).
# Runs go Chrome then Node, run by run, and summary.txt is rewritten after each, so a call cut short still
# brings back the pairs it finished.
# Local rehearsal on SwiftShader (no GPU): stage the parts into /tmp/chrome with DEVCARRY=/nonexistent, then
#   VK_ICD_FILENAMES=/tmp/chrome/vk_swiftshader_icd.json EXPECT=any EPISODES=1 NEW=4 RUNS="lab tiny" \
#     NODE_RUN="bash .devcarry/enter-local.sh" OUT=/tmp/out bash .devchrome/app/device-chrome.sh
# (enter-local.sh: enter.sh without its dpkg/ldconfig into / and without the NVIDIA driver variable.)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
case $here in
  */.devchrome/app) ROOT=${here%/.devchrome/app} ;;
  */bench) ROOT=${here%/bench} ;;
  *) echo "device-chrome.sh: run it as bench/device-chrome.sh or .devchrome/app/device-chrome.sh" >&2; exit 2 ;;
esac
cd "$ROOT"
A=.devchrome/app
LIMIT=$((64 * 1024 * 1024))
die() { echo "device-chrome.sh: $*" >&2; exit 1; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
bytes() { du -sb "$@" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }

prepare() {  # [CHECKOUT]: the checkout the device tool sends (default: this one); the app is built from this one
  local D
  D=$(cd "${1:-$ROOT}" && pwd) || die "no checkout at $1"
  [ -f "$D/.devcarry/node.xz" ] || die "$D/.devcarry is missing: bash ../shared/device/pack.sh there first"
  local parts=("$D"/.devchrome/part-[0-9][0-9])
  [ -d "${parts[0]}" ] || die "$D/.devchrome/part-NN is missing: PART_MIB=35 bash ../shared/device/chrome/pack.sh there first (as root)"
  local last=${parts[-1]} app=$D/$A
  rm -rf "$app" .build/device-dist && mkdir -p "$app"
  echo "device-chrome.sh: building the lab into .build/device-dist"
  npx vite build --logLevel warn --outDir .build/device-dist --emptyOutDir || die "vite build failed"
  # models/ and demo/ are public/'s (tracked: they travel anyway); the onnxruntime wasm is ONNX export's only
  tar -C .build/device-dist --exclude=./models --exclude=./demo --exclude='*.wasm' -cJf "$app/dist.tar.xz" . || die "tar dist"
  for e in browser iteration device-chrome-summary; do node scripts/bundle.mjs "bench/$e.ts" "$app" >/dev/null || die "bundling bench/$e.ts"; done
  tar -C node_modules -cJf "$app/playwright-core.tar.xz" playwright-core || die "tar playwright-core"
  cp bench/device-chrome.sh "$app/" && cp "$last/env.sh" "$app/env.sh"
  echo "device-chrome.sh: $app ready (from $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' + uncommitted changes')):"; du -sh "$app"/* | sed 's/^/  /'
  # what travels besides the carry: tracked files and untracked files that git does not ignore
  local tracked untracked tree
  tracked=$(git -C "$D" ls-files -z | (cd "$D" && du -cb --files0-from=- 2>/dev/null) | tail -1 | cut -f1)
  untracked=$(git -C "$D" ls-files -z -o --exclude-standard | (cd "$D" && du -cb --files0-from=- 2>/dev/null) | tail -1 | cut -f1)
  tree=$((${tracked:-0} + ${untracked:-0}))
  echo "device-chrome.sh: the working tree of $D that travels with every call: $(mib "$tree") MiB (tracked $(mib "${tracked:-0}"), untracked $(mib "${untracked:-0}"))"
  local i=1 ok=1 sum p
  for p in "${parts[@]}"; do
    p=${p#"$D"/}
    sum=$(( $(cd "$D" && bytes "$p") + tree ))
    printf '  call %d: carry ["%s"]  %s MiB in all%s\n          command: bash %s/stage.sh\n' "$i" "$p" "$(mib "$sum")" "$([ "$sum" -le "$LIMIT" ] || echo '  OVER 64 MiB')" "$p"
    [ "$sum" -le "$LIMIT" ] || ok=0; i=$((i + 1))
  done
  sum=$(( $(cd "$D" && bytes .devcarry "$A") + tree ))
  printf '  call %d: carry [".devcarry", "%s"]  %s MiB in all%s\n          command: bash %s/device-chrome.sh   (timeout_s 600)\n' "$i" "$A" "$(mib "$sum")" "$([ "$sum" -le "$LIMIT" ] || echo '  OVER 64 MiB')" "$A"
  [ "$sum" -le "$LIMIT" ] || ok=0
  [ $ok = 1 ] && echo "device-chrome.sh: every call within 64 MiB" || die "a call is over 64 MiB: make the parts smaller (PART_MIB) or carry less"
}

measure() {
  local OUT=${OUT:-/tmp/out} W=/tmp/marft-chrome
  local NODE_RUN=${NODE_RUN:-bash .devcarry/enter.sh} EXPECT=${EXPECT:-gpu}
  local RUNS=${RUNS:-classroom smollm2-135m lab duo-token duo-action solo-ppo class-per-step duo-anonymous}
  local DEADLINE_S=${DEADLINE_S:-450} END_S=${END_S:-570} RUN_TIMEOUT_S=${RUN_TIMEOUT_S:-240}
  mkdir -p "$OUT"
  [ -f "$A/browser.mjs" ] || die "$A/browser.mjs is missing: run 'bash bench/device-chrome.sh prepare' here and carry $A"
  [ -x /tmp/chrome/chromium-headless-shell ] || die "/tmp/chrome is missing: machine not warm: run the stage.sh calls again (part-00 first, then the rest at once)"
  # the lab: the build without models/ and demo/, which come from public/ (tracked)
  rm -rf "$W" && mkdir -p "$W/dist" "$W/json"
  tar -C "$W/dist" -xJf "$A/dist.tar.xz" || die "unpacking the lab"
  ln -s "$ROOT/public/models" "$W/dist/models" && ln -s "$ROOT/public/demo" "$W/dist/demo"
  # the bundles beside .devcarry's node_modules (webgpu there), so that their imports resolve; playwright-core too
  mkdir -p .devcarry/app .devcarry/node_modules
  cp "$A"/*.mjs .devcarry/app/
  [ -f .devcarry/node_modules/playwright-core/package.json ] || tar -C .devcarry/node_modules -xJf "$A/playwright-core.tar.xz" || die "unpacking playwright-core"
  { command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; cat /tmp/chrome/VERSION; } 2>&1 | tee "$OUT/gpu.txt"
  : > "$OUT/browser.txt"; : > "$OUT/iteration.txt"
  local ep=() new=()
  [ -n "${EPISODES:-}" ] && ep=(--episodes "$EPISODES")
  [ -n "${NEW:-}" ] && new=(--new "$NEW")
  local t0=$SECONDS r
  # a benchmark's time limit: RUN_TIMEOUT_S, cut so that everything ends by END_S (the device call's 600 s)
  left() { local l=$((END_S - (SECONDS - t0))); [ "$l" -lt "$RUN_TIMEOUT_S" ] || l=$RUN_TIMEOUT_S; [ "$l" -gt 5 ] || l=5; echo "$l"; }
  for r in $RUNS; do
    if [ $((SECONDS - t0)) -gt "$DEADLINE_S" ]; then
      echo "device-chrome.sh: ${DEADLINE_S} s gone: not starting $r" | tee -a "$OUT/browser.txt" "$OUT/iteration.txt"; continue
    fi
    echo "== $r (Chrome) at $((SECONDS - t0)) s" | tee -a "$OUT/browser.txt"
    # env.sh after enter.sh (enter.sh's dpkg/ldconfig with the system's libraries), in this run's shell only
    timeout "$(left)" $NODE_RUN bash -c '. .devchrome/app/env.sh && exec node .devcarry/app/browser.mjs "$@"' browser \
      --no-build --dist "$W/dist" --runs "$r" --expect "$EXPECT" --out "$W/json/browser-$r.json" "${ep[@]}" "${new[@]}" 2>&1 \
      | grep -v '^Warning\|^    at \|XDG' | tee -a "$OUT/browser.txt"
    echo "== $r (Node/Dawn) at $((SECONDS - t0)) s" | tee -a "$OUT/iteration.txt"
    local what=(--preset "$r")
    # random models as the lab loads them (its tokenizer, hence its sequences): bench:iteration --tokenizer lab
    case $r in smollm2-135m|tiny) what=(--models "$r" --tokenizer lab --max-tokens 4096) ;; esac
    timeout "$(left)" $NODE_RUN node .devcarry/app/iteration.mjs "${what[@]}" --out "$W/json/iteration-$r.json" "${ep[@]}" "${new[@]}" 2>&1 \
      | grep -v '^Warning\|^    at \|XDG' | tee -a "$OUT/iteration.txt"
    $NODE_RUN node .devcarry/app/device-chrome-summary.mjs "$W/json" "$OUT" $RUNS > "$OUT/summary.txt" 2>&1
  done
  echo; cat "$OUT/summary.txt"
}

case ${1:-measure} in
  prepare) prepare "${2:-}" ;;
  measure) measure ;;
  *) die "usage: bash bench/device-chrome.sh prepare (here) | bash .devchrome/app/device-chrome.sh (on the GPU machine)" ;;
esac

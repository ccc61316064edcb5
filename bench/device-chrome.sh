#!/usr/bin/env bash
# bench:browser (the lab in headless Chromium) and bench:iteration (Node/Dawn) on a GPU machine, run by run, for
# the preset runs and the SmolLM2-135M-shaped random model; every browser figure names the adapter it got, and
# --expect gpu refuses a SwiftShader run (exit 3 of that run). Results in $OUT: gpu.txt, browser.txt + browser.json
# (bench:browser), iteration.txt + iteration.json (bench:iteration), summary.txt (side by side).
#
# Two kits, both made outside this repository (BENCHMARKS.md, "Running on a remote GPU machine", says what they hold):
#   DEVICE_KIT (default .devcarry): enter.sh, which runs its arguments with Node.js, Dawn and the Vulkan loader set
#     up (a node.xz beside it marks a packed kit), and app/;
#   CHROME_KIT (default .devchrome): part-00, part-01, ... each with a stage.sh that unpacks its share of a Chromium
#     headless shell into /tmp/chrome; the last part also holds env.sh (the shell's library paths).
# Here, after `npm ci`:
#   bash bench/device-chrome.sh prepare [CHECKOUT]   # $CHROME_KIT/app: lab build, bundles, playwright-core, built
#                                                    # from this checkout; prints the steps below with their sizes
#                                                    # against a 64 MiB limit on what one remote run may carry
# On the GPU machine, one run after another, without a pause (a machine handed back loses /tmp/chrome):
#   step 1..N-1: bash $CHROME_KIT/part-NN/stage.sh   (carry that part)
#   last step:   bash $CHROME_KIT/app/device-chrome.sh (carry $DEVICE_KIT but its app/, and $CHROME_KIT/app; about 10 minutes;
#                RUNS="classroom smollm2-135m" for fewer runs)
# If a stage.sh answers "still missing: chrome.tar.xz.00", or the last step "machine not warm", the machine went
# cold: start again from step 1.
#
# Device side options (environment): RUNS (default: classroom, smollm2-135m, then the other distinct preset
# runs; a run is a preset run's name or a random model's shape), EPISODES (both benchmarks' --episodes;
# default: each run's own), NEW (random models' new tokens, default 128), EXPECT (gpu|any, default gpu),
# BROWSER_ARGS (more bench:browser options, e.g. "--wall 0 --revisit 0" for the large random models),
# NODE=0 (Chrome only: no bench:iteration beside each run, e.g. for a baseline of the lab's own),
# DEADLINE_S (no run starts after this many seconds, default 450), END_S (every benchmark is stopped by then,
# default 570), RUN_TIMEOUT_S (per benchmark, default 240), NODE_RUN (default `bash $DEVICE_KIT/enter.sh`).
# Runs go Chrome then Node, run by run, and summary.txt is rewritten after each, so a run cut short still
# brings back the pairs it finished.
# Local rehearsal on SwiftShader (no GPU): stage the parts into /tmp/chrome with DEVCARRY=/nonexistent (read by the
# parts' stage.sh), then
#   VK_ICD_FILENAMES=/tmp/chrome/vk_swiftshader_icd.json EXPECT=any EPISODES=1 NEW=4 RUNS="lab tiny" \
#     NODE_RUN="bash $DEVICE_KIT/enter-local.sh" OUT=/tmp/out bash $CHROME_KIT/app/device-chrome.sh
# (enter-local.sh: enter.sh without its dpkg/ldconfig into / and without the NVIDIA driver variable.)
set -uo pipefail
KIT=${DEVICE_KIT:-.devcarry} CK=${CHROME_KIT:-.devchrome}   # both relative to the checkout's root
here=$(cd "$(dirname "$0")" && pwd)
case $here in
  */"$CK"/app) ROOT=${here%/"$CK"/app} ;;
  */bench) ROOT=${here%/bench} ;;
  *) echo "device-chrome.sh: run it as bench/device-chrome.sh or $CK/app/device-chrome.sh" >&2; exit 2 ;;
esac
cd "$ROOT"
A=$CK/app
LIMIT=$((64 * 1024 * 1024))
die() { echo "device-chrome.sh: $*" >&2; exit 1; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
bytes() { du -sb "$@" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }

prepare() {  # [CHECKOUT]: the checkout the GPU machine gets (default: this one); the app is built from this one
  local D
  D=$(cd "${1:-$ROOT}" && pwd) || die "no checkout at $1"
  [ -f "$D/$KIT/node.xz" ] || die "$D/$KIT is missing: put the packed device kit there first (BENCHMARKS.md, \"Running on a remote GPU machine\")"
  local parts=("$D"/"$CK"/part-[0-9][0-9])
  [ -d "${parts[0]}" ] || die "$D/$CK/part-NN is missing: put the Chromium kit's parts there first (BENCHMARKS.md, \"Running on a remote GPU machine\")"
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
  echo "device-chrome.sh: the working tree of $D that travels with every run: $(mib "$tree") MiB (tracked $(mib "${tracked:-0}"), untracked $(mib "${untracked:-0}"))"
  local i=1 ok=1 sum p
  for p in "${parts[@]}"; do
    p=${p#"$D"/}
    sum=$(( $(cd "$D" && bytes "$p") + tree ))
    printf '  step %d: carry ["%s"]  %s MiB in all%s\n          command: bash %s/stage.sh\n' "$i" "$p" "$(mib "$sum")" "$([ "$sum" -le "$LIMIT" ] || echo '  OVER 64 MiB')" "$p"
    [ "$sum" -le "$LIMIT" ] || ok=0; i=$((i + 1))
  done
  # the kit without its app/ (the measurement copies its bundles from $A there): what it needs of the kit
  local kit=() k
  for k in "$D/$KIT"/*; do [ "$(basename "$k")" = app ] || kit+=("$KIT/$(basename "$k")"); done
  sum=$(( $(cd "$D" && bytes "${kit[@]}" "$A") + tree ))
  printf '  step %d: carry [%s, "%s"]  %s MiB in all%s\n          command: bash %s/device-chrome.sh   (up to 600 s)\n' "$i" "$(printf '"%s", ' "${kit[@]}" | sed 's/, $//')" "$A" "$(mib "$sum")" "$([ "$sum" -le "$LIMIT" ] || echo '  OVER 64 MiB')" "$A"
  [ "$sum" -le "$LIMIT" ] || ok=0
  [ $ok = 1 ] && echo "device-chrome.sh: every step within 64 MiB" || die "a step is over 64 MiB: make the parts smaller (PART_MIB) or carry less"
}

measure() {
  local OUT=${OUT:-/tmp/out} W=/tmp/marft-chrome
  local NODE_RUN=${NODE_RUN:-bash $KIT/enter.sh} EXPECT=${EXPECT:-gpu}
  local RUNS=${RUNS:-classroom smollm2-135m lab duo-token duo-action solo-ppo class-per-step duo-anonymous}
  local DEADLINE_S=${DEADLINE_S:-450} END_S=${END_S:-570} RUN_TIMEOUT_S=${RUN_TIMEOUT_S:-240} BROWSER_ARGS=${BROWSER_ARGS:-}
  mkdir -p "$OUT"
  [ -f "$A/browser.mjs" ] || die "$A/browser.mjs is missing: run 'bash bench/device-chrome.sh prepare' here and carry $A"
  [ -x /tmp/chrome/chromium-headless-shell ] || die "/tmp/chrome is missing: machine not warm: run the stage.sh steps again (part-00 first, then the rest at once)"
  # the lab: the build without models/ and demo/, which come from public/ (tracked)
  rm -rf "$W" && mkdir -p "$W/dist" "$W/json"
  tar -C "$W/dist" -xJf "$A/dist.tar.xz" || die "unpacking the lab"
  ln -s "$ROOT/public/models" "$W/dist/models" && ln -s "$ROOT/public/demo" "$W/dist/demo"
  # the bundles beside the kit's node_modules (webgpu there), so that their imports resolve; playwright-core too
  mkdir -p "$KIT/app" "$KIT/node_modules"
  cp "$A"/*.mjs "$KIT/app/"
  [ -f "$KIT/node_modules/playwright-core/package.json" ] || tar -C "$KIT/node_modules" -xJf "$A/playwright-core.tar.xz" || die "unpacking playwright-core"
  { command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; cat /tmp/chrome/VERSION; } 2>&1 | tee "$OUT/gpu.txt"
  : > "$OUT/browser.txt"; : > "$OUT/iteration.txt"
  local ep=() new=()
  [ -n "${EPISODES:-}" ] && ep=(--episodes "$EPISODES")
  [ -n "${NEW:-}" ] && new=(--new "$NEW")
  local t0=$SECONDS r
  # a benchmark's time limit: RUN_TIMEOUT_S, cut so that everything ends by END_S (a remote run's 600 s)
  left() { local l=$((END_S - (SECONDS - t0))); [ "$l" -lt "$RUN_TIMEOUT_S" ] || l=$RUN_TIMEOUT_S; [ "$l" -gt 5 ] || l=5; echo "$l"; }
  for r in $RUNS; do
    if [ $((SECONDS - t0)) -gt "$DEADLINE_S" ]; then
      echo "device-chrome.sh: ${DEADLINE_S} s gone: not starting $r" | tee -a "$OUT/browser.txt" "$OUT/iteration.txt"; continue
    fi
    echo "== $r (Chrome) at $((SECONDS - t0)) s" | tee -a "$OUT/browser.txt"
    # env.sh after enter.sh (enter.sh's dpkg/ldconfig with the system's libraries), in this run's shell only
    timeout "$(left)" $NODE_RUN bash -c ". $A/env.sh && exec node $KIT/app/browser.mjs \"\$@\"" browser \
      --no-build --dist "$W/dist" --runs "$r" --expect "$EXPECT" --out "$W/json/browser-$r.json" "${ep[@]}" "${new[@]}" $BROWSER_ARGS 2>&1 \
      | grep -v '^Warning\|^    at \|XDG' | tee -a "$OUT/browser.txt"
    [ "${NODE:-1}" = 0 ] && continue
    echo "== $r (Node/Dawn) at $((SECONDS - t0)) s" | tee -a "$OUT/iteration.txt"
    local what=(--preset "$r")
    # random models as the lab loads them (its tokenizer, hence its sequences): bench:iteration --tokenizer lab
    case $r in smollm2-*|qwen*|tiny) what=(--models "$r" --tokenizer lab --max-tokens 4096) ;; esac
    timeout "$(left)" $NODE_RUN node "$KIT/app/iteration.mjs" "${what[@]}" --out "$W/json/iteration-$r.json" "${ep[@]}" "${new[@]}" 2>&1 \
      | grep -v '^Warning\|^    at \|XDG' | tee -a "$OUT/iteration.txt"
    $NODE_RUN node "$KIT/app/device-chrome-summary.mjs" "$W/json" "$OUT" $RUNS > "$OUT/summary.txt" 2>&1
  done
  echo; cat "$OUT/summary.txt"
}

case ${1:-measure} in
  prepare) prepare "${2:-}" ;;
  measure) measure ;;
  *) die "usage: bash bench/device-chrome.sh prepare (here) | bash $CK/app/device-chrome.sh (on the GPU machine)" ;;
esac

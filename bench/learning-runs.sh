#!/usr/bin/env bash
# The measured-learning runs of docs/LEARNING.md on a GPU machine, with the CLI bundled into the kit's app/
# (node scripts/bundle.mjs src/cli/marft.ts "$DEVICE_KIT/app"). Steps (any subset, in order):
#   pretrain  make public/models/marft-tiny (bf16), copy it to $OUT/marft-tiny
#   base      held-out accuracy of the untuned model (solo, duo, anonymous duo), greedy and sampled
#   <config>  train configs/<config>.json (or a path to a .json), then evaluate its checkpoint (e.g. duo-action solo-ppo)
# ITERATIONS=N trains N iterations instead of the config's; EVAL_EPISODES=N evaluates on N episodes (1024).
# DEVICE_KIT (default .devcarry) is the kit folder: enter.sh, which runs its arguments with Node.js, Dawn and the
# Vulkan loader set up, and app/, the bundled entry points (BENCHMARKS.md, "Running on a remote GPU machine").
set -uo pipefail
KIT=${DEVICE_KIT:-.devcarry}
OUT=${OUT:-/tmp/out}
M="bash $KIT/enter.sh node $KIT/app/marft.mjs"
EPISODES=${EVAL_EPISODES:-1024}
filter() { grep -v "^Warning\|^    at \|XDG_RUNTIME"; }
for step in "$@"; do
  t0=$(date +%s)
  case "$step" in
    pretrain)
      $M pretrain --out public/models/marft-tiny --steps 4800 --batch 32 --seq 384 --lr 1e-3 --seed 0 --eval-every 0 --log-every 1200 --bf16 --error-rate 0.4 --plan-error-rate 0.3 --solo-misread-rate 0.95 --precedence 0.5 --difficulty 1,2,3 2>&1 | filter | tee "$OUT/pretrain.txt"
      mkdir -p "$OUT/marft-tiny" && cp public/models/marft-tiny/* "$OUT/marft-tiny/" ;;
    base)
      for c in ${BASE_CONFIGS:-solo-ppo duo-action duo-anonymous}; do
        for mode in greedy sampled; do
          extra=$([ $mode = sampled ] && echo --sampled)
          echo "{\"run\":\"base\",\"config\":\"$c\",\"result\":$($M eval --config $([[ "$c" == *.json ]] && echo "$c" || echo "configs/$c.json") --base --episodes $EPISODES $extra --json 2>/dev/null)}" | tee -a "$OUT/results.jsonl"
        done
      done ;;
    *)
      cfg="configs/$step.json"
      if [[ "$step" == *.json ]]; then cfg="$step"; step=$(basename "$step" .json); fi
      $M train --config "$cfg" ${ITERATIONS:+--iterations $ITERATIONS} --out "/tmp/runs/$step" --json 2> >(filter > "$OUT/$step.err") > "$OUT/$step.jsonl"
      tail -n 2 "$OUT/$step.jsonl" | cut -c1-400
      for mode in greedy sampled; do
        extra=$([ $mode = sampled ] && echo --sampled)
        echo "{\"run\":\"trained\",\"config\":\"$step\",\"result\":$($M eval --checkpoint /tmp/runs/$step --episodes $EPISODES $extra --json 2>/dev/null)}" | tee -a "$OUT/results.jsonl"
      done ;;
  esac
  echo "== $step: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/times.txt"
done

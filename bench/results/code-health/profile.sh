# The code-health work on a GPU, one call: the same numbers (CLI before/after), per-kernel update times of
# bench:iteration before and after (duo-token), and the Qwen2.5-0.5B shape under WebGPU's default limits.
set -uo pipefail
K=.devcarry; OUT=${OUT:-/tmp/out}; mkdir -p $OUT
f='^Warning\|^    at \|XDG'
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for c in classroom duo-token; do
  echo "== same numbers: $c, 3 iterations"
  timeout 150 bash bench/same-numbers.sh $K/app/marft-old.mjs $K/app/marft.mjs configs/$c.json 3 2>&1 | tail -2
done
for side in old new; do
  b=$K/app/iteration.mjs; [ $side = old ] && b=$K/app/iteration-old.mjs
  timeout 120 bash $K/enter.sh node $b --preset duo-token --iterations 5 --wall 0 --profile --out $OUT/prof-$side.json 2>&1 | grep -v "$f" > $OUT/prof-$side.txt
  echo "== $side"; grep -A30 "^  update:" $OUT/prof-$side.txt | head -32
done
echo "== Qwen2.5-0.5B shape under the default limits"
timeout 150 bash $K/enter.sh node $K/app/default-limits.mjs --layers 24 2>&1 | grep -v "$f" | tail -30

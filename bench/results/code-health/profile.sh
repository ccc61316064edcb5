# After run.sh, in the same call: per-kernel update times of bench:iteration before and after (duo-token,
# dispatches timed one by one), and the Qwen2.5-0.5B shape under WebGPU's default limits.
set -uo pipefail
K=.devcarry; OUT=${OUT:-/tmp/out}; mkdir -p $OUT
f='^Warning\|^    at \|XDG'
for side in old new; do
  b=$K/app/iteration.mjs; [ $side = old ] && b=$K/app/iteration-old.mjs
  timeout 120 bash $K/enter.sh node $b --preset duo-token --iterations 3 --wall 0 --profile --out $OUT/prof-$side.json 2>&1 | grep -v "$f" > $OUT/prof-$side.txt
  echo "== $side, profiled"; grep -A30 "^  update:" $OUT/prof-$side.txt | head -32
done
echo "== Qwen2.5-0.5B shape under the default limits"
timeout 150 bash $K/enter.sh node $K/app/default-limits.mjs --layers 24 2>&1 | grep -v "$f" | tail -30 | tee $OUT/default-limits.txt

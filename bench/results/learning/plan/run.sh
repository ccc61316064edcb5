# One GPU call: the plan family's model, marft-tiny-plan, pretrained on coop-arith and coop-plan transcripts
# beside two correctness checks (the CLI's same numbers before and after the code-health work, and the
# Qwen2.5-0.5B shape under the default limits); then, alone on the machine, the code-health speed check
# (bench:iteration before and after, alternating). The plan-* matrix rows get a call of their own
# (bench/matrix.sh), since a row cut short by the call's limit is no row.
set -uo pipefail
K=.devcarry; OUT=${OUT:-/tmp/out}; mkdir -p $OUT/code-health
f='^Warning\|^    at \|XDG'
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
t0=$SECONDS
( for c in classroom duo-token; do
    echo "== same numbers: $c, 3 iterations"
    timeout 200 bash bench/same-numbers.sh $K/app/marft-old.mjs $K/app/marft.mjs configs/$c.json 3 2>&1 | tail -3
  done > $OUT/code-health/same.txt 2>&1
  timeout 200 bash $K/enter.sh node $K/app/default-limits.mjs --layers 24 2>&1 | grep -v "$f" | tail -30 > $OUT/code-health/default-limits.txt ) &
side=$!
# 4800 steps took 173 s on one H100; hosts of a kind differ by up to 1.6x, hence the margin
timeout 420 bash $K/enter.sh node $K/app/marft.mjs pretrain --out public/models/marft-tiny-plan --seed 0 --bf16 \
  --tasks coop-arith,coop-plan --teams solo,duo,orchestrated --steps ${STEPS:-6000} 2>&1 | grep -v "$f" > $OUT/pretrain.txt
tail -5 $OUT/pretrain.txt; grep -i "plan" $OUT/pretrain.txt | tail -4
echo "pretrain done: $((SECONDS - t0)) s"
cp -r public/models/marft-tiny-plan $OUT/ 2>/dev/null
wait $side; cat $OUT/code-health/same.txt; tail -8 $OUT/code-health/default-limits.txt
left=$(( ${END_S:-585} - (SECONDS - t0) ))
echo "timing: $left s left"
for round in 1 2 3; do for side in old new; do
  [ $((${END_S:-585} - (SECONDS - t0))) -lt 40 ] && break 2
  b=$K/app/iteration.mjs; [ $side = old ] && b=$K/app/iteration-old.mjs
  echo "== round $round $side: duo-token, 5 timed iterations" | tee -a $OUT/code-health/iteration.txt
  timeout 60 bash $K/enter.sh node $b --preset duo-token --iterations 5 --wall 0 --out $OUT/code-health/duo-$side-$round.json 2>&1 | grep -v "$f" | tail -4 | tee -a $OUT/code-health/iteration.txt
done; done
echo "end: $((SECONDS - t0)) s"

# same numbers and no regression: the CLI and bench:iteration before the code-health work (1f11326) and after
set -uo pipefail
K=.devcarry; export OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for c in classroom duo-token; do
  echo "== same numbers: $c, 3 iterations" | tee -a $OUT/same.txt
  timeout 150 bash bench/same-numbers.sh $K/app/marft-old.mjs $K/app/marft.mjs configs/$c.json 3 2>&1 | tail -3 | tee -a $OUT/same.txt
done
f='^Warning\|^    at \|XDG'
for round in 1 2 3; do for side in old new; do
  b=$K/app/iteration.mjs; [ $side = old ] && b=$K/app/iteration-old.mjs
  echo "== round $round $side: duo-token, 5 timed iterations" | tee -a $OUT/iteration.txt
  timeout 120 bash $K/enter.sh node $b --preset duo-token --iterations 5 --wall 0 --out $OUT/duo-$side-$round.json 2>&1 | grep -v "$f" | tail -4 | tee -a $OUT/iteration.txt
done; done

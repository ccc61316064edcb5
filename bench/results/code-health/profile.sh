set -uo pipefail
K=.devcarry; OUT=${OUT:-/tmp/out}; mkdir -p $OUT
f='^Warning\|^    at \|XDG'
for side in old new; do
  b=$K/app/iteration.mjs; [ $side = old ] && b=$K/app/iteration-old.mjs
  timeout 120 bash $K/enter.sh node $b --preset duo-token --iterations 5 --wall 0 --profile --out $OUT/prof-$side.json 2>&1 | grep -v "$f" > $OUT/prof-$side.txt
  echo "== $side"; grep -A42 "^  update:" $OUT/prof-$side.txt | head -44
done

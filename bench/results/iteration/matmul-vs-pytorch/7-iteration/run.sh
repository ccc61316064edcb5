set -uo pipefail
OUT=${OUT:-/tmp/out}; W=$OUT/r; mkdir -p $W
R() { timeout ${TMO:-200} bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
for i in 1 2; do
for s in old new; do
f=.devcarry/app/iteration.mjs; [ $s = old ] && f=.devcarry/app/iteration-old.mjs
R $f --models smollm2-135m --dtype f32 --recompute off --out $W/it-$s-$i.json > $W/it-$s-$i.txt
echo "== $s $i"; grep -i 'iteration\|scoring\|update\|rollout' $W/it-$s-$i.txt | head -8 | cut -c1-200
done; done
cp .devcarry/dev-s21-7.sh $W/run.sh

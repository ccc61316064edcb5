set -uo pipefail
OUT=${OUT:-/tmp/out}; W=/tmp/res; mkdir -p $W
R() { timeout ${TMO:-200} bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
for k in 1 2; do
  timeout 200 python3 bench/baselines/iteration.py --prompts 275,394 --iterations 5 --out $W/torch-$k.json 2>&1 | grep -v -i warn | tail -1 | cut -c1-240
  for v in old new; do
    B=iteration; X=--cpu; [ $v = old ] && B=iteration-old && X=
    R .devcarry/app/$B.mjs --models smollm2-135m --dtype f32 --recompute off --iterations 5 $X --peer $W/torch-$k.json --out $W/it-$k-$v.json > $W/it-$k-$v.txt
    echo "== $k $v"; grep -A5 'JS thread' $W/it-$k-$v.txt | grep -v advantages | cut -c1-250; grep -h '^| smollm2' $W/it-$k-$v.txt | cut -c1-120
  done
done
for v in old new; do
  B=iteration; [ $v = old ] && B=iteration-old
  R .devcarry/app/$B.mjs --preset duo-action --iterations 3 --out $W/duo-$v.json > $W/duo-$v.txt
  echo "== duo $v"; grep -h '^| ' $W/duo-$v.txt | tail -1 | cut -c1-200
done
cp .devcarry/dev-s23-5.sh $W/run.sh
tar czf $OUT/res.tgz -C $W .

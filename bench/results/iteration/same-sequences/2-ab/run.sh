set -uo pipefail
OUT=${OUT:-/tmp/out}; W=/tmp/res; mkdir -p $W
R() { bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
python3 bench/baselines/iteration.py --out $W/torch-iteration.json 2>&1 | grep -v -i warn | tail -1
for v in new old; do
  s=$([ $v = new ] && echo iteration || echo iteration-old)
  R .devcarry/app/$s.mjs --models smollm2-135m --dtype f32 --recompute off --profile --peer $W/torch-iteration.json --out $W/it-$v.json > $W/it-$v.txt
done
R .devcarry/app/iteration.mjs --models smollm2-135m --dtype f32 --recompute off --peer $W/torch-iteration.json --out $W/it-new2.json > $W/it-new2.txt
R .devcarry/app/iteration-old.mjs --models smollm2-135m --dtype f32 --recompute off --peer $W/torch-iteration.json --out $W/it-old2.json > $W/it-old2.txt
R .devcarry/app/iteration.mjs --models smollm2-135m --dtype bf16 --agents 4 --out $W/b4-new.json > $W/b4-new.txt
R .devcarry/app/iteration-old.mjs --models smollm2-135m --dtype bf16 --agents 4 --out $W/b4-old.json > $W/b4-old.txt
for i in 1 2; do for v in new old; do s=$([ $v = new ] && echo iteration || echo iteration-old); R .devcarry/app/$s.mjs --preset duo-action --out $W/duo-$v-$i.json > $W/duo-$v-$i.txt; done; done
R .devcarry/app/score-exp.mjs > $W/se-new.txt
python3 .devcarry/sum.py $W/*.json 2>/dev/null | cut -c1-250
grep -h "wall" $W/se-new.txt
tar czf $OUT/res.tgz -C $W .

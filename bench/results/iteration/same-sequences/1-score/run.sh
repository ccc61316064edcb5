set -uo pipefail
OUT=${OUT:-/tmp/out}; W=/tmp/res; mkdir -p $W
R() { bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > $W/gpu.txt
R .devcarry/app/score-exp.mjs > $W/se-new.txt
R .devcarry/app/score-exp-old.mjs > $W/se-old.txt
R .devcarry/app/iteration.mjs --models smollm2-135m --dtype f32 --recompute off --profile --out $W/it-new.json > $W/it-new.txt
R .devcarry/app/iteration-old.mjs --models smollm2-135m --dtype f32 --recompute off --profile --out $W/it-old.json > $W/it-old.txt
python3 bench/baselines/iteration.py --out $W/torch-iteration.json 2>&1 | grep -v -i warn | tail -1
R .devcarry/app/score-exp.mjs > $W/se-new2.txt
grep -h "wall\|forward B" $W/se-*.txt; for f in $W/it-*.txt; do head -3 $f | tail -1 | cut -c1-330; done
tar czf $OUT/res.tgz -C $W .

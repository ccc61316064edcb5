set -uo pipefail
OUT=${OUT:-/tmp/out}; W=/tmp/res; mkdir -p $W
R() { bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
python3 bench/baselines/iteration.py --prompts 275,394 --out $W/torch-fair.json 2>&1 | grep -v -i warn | tail -1
R .devcarry/app/iteration-marks.mjs --models smollm2-135m --dtype f32 --recompute off --peer $W/torch-fair.json --out $W/it-marks.json > $W/it-marks.txt
R .devcarry/app/iteration.mjs --models smollm2-135m --dtype f32 --recompute off --profile --peer $W/torch-fair.json --out $W/it-new.json > $W/it-new.txt
R .devcarry/app/iteration-old.mjs --models smollm2-135m --dtype f32 --recompute off --peer $W/torch-fair.json --out $W/it-old.json > $W/it-old.txt
R .devcarry/app/iteration.mjs --models smollm2-135m --dtype f32 --recompute off --peer $W/torch-fair.json --out $W/it-new2.json > $W/it-new2.txt
R .devcarry/app/iteration.mjs --models smollm2-135m --dtype bf16 --agents 4 --out $W/b4-new.json > $W/b4-new.txt
python3 .devcarry/sum.py $W/*.json 2>/dev/null | cut -c1-250
grep -A16 MARKS $W/it-marks.txt | cut -c1-300
tar czf $OUT/res.tgz -C $W .

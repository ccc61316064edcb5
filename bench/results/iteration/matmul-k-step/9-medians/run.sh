set -uo pipefail
OUT=${OUT:-/tmp/out}; W=/tmp/res; mkdir -p $W
R() { timeout ${TMO:-200} bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
for i in 1 2; do
timeout 200 python3 bench/baselines/iteration.py --prompts 275,394 --iterations 5 --out $W/torch-$i.json 2>&1 | grep -v -i warn | tail -1 | cut -c1-220
R .devcarry/app/iteration.mjs --models smollm2-135m --dtype f32 --recompute off --iterations 5 --peer $W/torch-$i.json --out $W/it-$i.json > $W/it-$i.txt
grep -h '^| smollm2' $W/it-$i.txt | cut -c1-120
done
cp .devcarry/dev-s22-9.sh $W/run.sh
tar czf $OUT/res.tgz -C $W .

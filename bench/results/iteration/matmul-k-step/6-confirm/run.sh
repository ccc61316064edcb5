set -uo pipefail
OUT=${OUT:-/tmp/out}; W=/tmp/res; mkdir -p $W
R() { timeout ${TMO:-200} bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
python3 bench/baselines/iteration.py --prompts 275,394 --out $W/torch-fair.json 2>&1 | grep -v -i warn | tail -1
for i in 1 2; do
R .devcarry/app/iteration.mjs --models smollm2-135m --dtype f32 --recompute off --peer $W/torch-fair.json --out $W/it-$i.json > $W/it-$i.txt
grep -h '^| smollm2' $W/it-$i.txt | cut -c1-260
R .devcarry/app/iteration.mjs --preset duo-action --out $W/duo-$i.json > $W/duo-$i.txt
grep -h '^| ' $W/duo-$i.txt | tail -1 | cut -c1-200
done
cp .devcarry/dev-s22-6.sh $W/run.sh
tar czf $OUT/res.tgz -C $W .

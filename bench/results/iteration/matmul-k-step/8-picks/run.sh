set -uo pipefail
OUT=${OUT:-/tmp/out}; W=/tmp/res; mkdir -p $W
R() { timeout ${TMO:-200} bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
python3 bench/baselines/iteration.py --prompts 275,394 --out $W/torch-fair.json 2>&1 | grep -v -i warn | tail -1
for i in 1 2 3; do
for s in old new; do
f=.devcarry/app/iteration.mjs; [ $s = old ] && f=.devcarry/app/iteration-old.mjs
R $f --models smollm2-135m --dtype f32 --recompute off --peer $W/torch-fair.json --out $W/it-$s-$i.json > $W/it-$s-$i.txt
echo "$s $i $(grep -h '^| smollm2' $W/it-$s-$i.txt | cut -c1-80)"
done; done
cp .devcarry/dev-s22-8.sh $W/run.sh
tar czf $OUT/res.tgz -C $W .

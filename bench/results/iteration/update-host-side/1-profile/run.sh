set -uo pipefail
OUT=${OUT:-/tmp/out}; W=/tmp/res; mkdir -p $W
R() { timeout ${TMO:-200} bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
timeout 240 python3 bench/baselines/iteration.py --prompts 275,394 --iterations 3 --profile --out $W/torch.json > $W/torch.txt 2>&1
grep -v -i warn $W/torch.txt | head -45 | cut -c1-200
R .devcarry/app/iteration.mjs --models smollm2-135m --dtype f32 --recompute off --iterations 3 --profile --peer $W/torch.json --out $W/it.json > $W/it.txt
grep -A45 '^  update:' $W/it.txt | cut -c1-150
grep -h '^| smollm2' $W/it.txt | cut -c1-120
TMO=300 R .devcarry/app/matmul-sweep.mjs --only q/o,qkv,gate+up,down --tokens 4192,8384 --rounds 5 --variants big:v4:w,big8:v4:w,half:v4:w,half:w,half:v4,tall4:w,mid:v4:w --out $W/sweep.json > $W/sweep.txt
grep -A40 '^summary' $W/sweep.txt | grep -v ' tn ' | cut -c1-130
cp .devcarry/dev-s23-1.sh $W/run.sh
tar czf $OUT/res.tgz -C $W .

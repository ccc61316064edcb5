set -uo pipefail
OUT=${OUT:-/tmp/out}; W=$OUT/r; mkdir -p $W
R() { timeout ${TMO:-300} bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
SH=4096x4096x4096,4096x576x576,576x576x4096,2048x2048x2048
P() { python3 bench/baselines/kernels.py --matmul $SH --attn 8x512x9x3x64 --out $W/$1 2>&1 | tail -2
python3 -c "import json;[print(r['op'],r['shape'],round(r['ms'],4),round(r['gflops'])) for r in json.load(open('$W/$1'))['rows']]" 2>&1 | tail -8; }
P torch-1.json
V=big:v4:w,mid:w,mid84,n96q:v4,mid:v4:w,tall4:w,big:w
for i in 1 2; do
for s in old new; do
f=.devcarry/app/matmul-sweep.mjs; [ $s = old ] && f=.devcarry/app/matmul-sweep-old.mjs
TMO=150 R $f --only cube4096,q/o --tokens 4096 --rounds 11 --variants $V --peer $W/torch-1.json --out $W/sweep-$s-$i.json > $W/sweep-$s-$i.txt
python3 .devcarry/pr.py $W/sweep-$s-$i.json | sed "s/^/$s$i /" | cut -c1-260
done; done
R .devcarry/app/kernels.mjs --shapes 4096x4096x4096,4096x576x576 --attn 8x512x9x3x64 --no-tfjs --peer $W/torch-1.json --out $W/kernels.json > $W/kernels.txt
grep -h '| matmul\|this run' $W/kernels.txt
P torch-2.json
cp .devcarry/dev-s21-4.sh $W/run.sh

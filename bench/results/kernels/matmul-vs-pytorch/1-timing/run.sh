set -uo pipefail
OUT=${OUT:-/tmp/out}; W=$OUT/r; mkdir -p $W
R() { timeout ${TMO:-400} bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
SH=4096x4096x4096,4096x576x576,576x576x4096,2048x2048x2048
P() { python3 bench/baselines/kernels.py --matmul $SH --attn 8x512x9x3x64 --out $W/$1 2>&1 | tail -2
python3 -c "import json;[print(r['op'],r['shape'],round(r['ms'],4),round(r['gflops'])) for r in json.load(open('$W/$1'))['rows']]" 2>&1 | tail -8; }
P torch-1.json
R .devcarry/app/kernels.mjs --shapes 4096x4096x4096,4096x576x576 --attn 8x512x9x3x64 --no-tfjs --peer $W/torch-1.json --out $W/kernels.json > $W/kernels.txt
grep -i 'matmul' $W/kernels.txt | head -12
TMO=240 R .devcarry/app/matmul-sweep.mjs --only cube4096,q/o --tokens 4096 --rounds 15 --peer $W/torch-1.json --out $W/sweep.json > $W/sweep.txt
grep -A8 'cube 4096\|q/o fwd T=4096\|q/o dX T=4096' $W/sweep.txt | cut -c1-110
DAWN_FLAGS="enable-dawn-features=disable_robustness" TMO=200 R .devcarry/app/matmul-sweep-nr.mjs --only cube4096,q/o --tokens 4096 --rounds 7 --peer $W/torch-1.json --out $W/sweep-nr.json > $W/sweep-nr.txt
grep -A8 'cube 4096\|q/o fwd T=4096\|q/o dX T=4096' $W/sweep-nr.txt | cut -c1-110
P torch-2.json
cp .devcarry/dev-s21-1.sh $W/run.sh

set -uo pipefail
OUT=${OUT:-/tmp/out}; W=$OUT/r; mkdir -p $W
R() { timeout ${TMO:-300} bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
SH=4096x4096x4096,4096x576x576,576x576x4096,2048x2048x2048
P() { python3 bench/baselines/kernels.py --matmul $SH --attn 8x512x9x3x64 --out $W/$1 2>&1 | tail -2
python3 -c "import json;[print(r['op'],r['shape'],round(r['ms'],4),round(r['gflops'])) for r in json.load(open('$W/$1'))['rows']]" 2>&1 | tail -8; }
P torch-1.json
V=big:v4:w,big:v4:vk:w,big:vk:w,huge:v4:vk:w,big8:v4:vk:w,tall4:v4:vk:w,mid84:v4:vk:w,mid84,mid84:vk,mid84:vk:w,mid:w,mid:vk:w,mid:vk,n96q:vk,tall4:vk:w,wide:vk,n96q:v4,n96q:v4:vk,mid84:v4:vk,mid:v4:vk:w,mid:v4:w
TMO=300 R .devcarry/app/matmul-sweep.mjs --only cube4096,q/o --tokens 4096 --rounds 15 --variants $V --peer $W/torch-1.json --out $W/sweep.json > $W/sweep.txt
grep -A9 'cube 4096\|q/o fwd T=4096\|q/o dX T=4096' $W/sweep.txt | grep -v '^|---' | cut -c1-100
grep -i 'fail' $W/sweep.txt | head
R .devcarry/app/kernels.mjs --shapes 4096x4096x4096,4096x576x576 --attn 8x512x9x3x64 --no-tfjs --peer $W/torch-1.json --out $W/kernels.json > $W/kernels.txt
grep -h '| matmul\|this run' $W/kernels.txt
DAWN_FLAGS="enable-dawn-features=disable_robustness" TMO=120 R .devcarry/app/matmul-sweep-nr.mjs --only cube4096 --rounds 9 --variants big:v4:w,big:v4:vk:w,big:vk:w --peer $W/torch-1.json > $W/sweep-nr.txt
grep -A5 'cube 4096' $W/sweep-nr.txt | grep -v '^|---' | cut -c1-100
P torch-2.json
cp .devcarry/dev-s21-3.sh $W/run.sh

set -uo pipefail
OUT=${OUT:-/tmp/out}; W=$OUT/r; mkdir -p $W
R() { timeout ${TMO:-300} bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
SH=4096x4096x4096,4096x576x576,576x576x4096,2048x2048x2048
P() { python3 bench/baselines/kernels.py --matmul $SH --attn 8x512x9x3x64 --out $W/$1 2>&1 | tail -2
python3 -c "import json;[print(r['op'],r['shape'],round(r['ms'],4),round(r['gflops'])) for r in json.load(open('$W/$1'))['rows']]" 2>&1 | tail -8; }
P torch-1.json
V=big:v4:w,big:v4:vk:w,big:vk:w,big:w,huge:v4:vk:w,big8:v4:vk:w,mid,mid:w,mid:vk,mid:vk:w,mid84,mid84:w,mid84:vk,mid84:vk:w,tall4:w,tall4:vk:w,n96q,n96q:vk,mid48:vk,mid32:vk:w,mid:v4:vk:w,mid:v4:w,n96q:v4,n96q:v4:vk,mid84:v4:vk:w,mid84:v4:w,mid84:v4:vk,tall4:v4:vk:w,mid48:v4:vk,mid32:v4:vk:w
TMO=300 R .devcarry/app/matmul-sweep.mjs --only cube4096,q/o --tokens 4096 --rounds 15 --variants $V --peer $W/torch-1.json --out $W/sweep.json > $W/sweep.txt
grep -A12 'cube 4096\|q/o fwd T=4096\|q/o dX T=4096' $W/sweep.txt | grep -v '^|---' | cut -c1-100
grep -i 'fail' $W/sweep.txt | head
R .devcarry/app/gap.mjs 4096x576x576 mid:w > $W/gap.txt; cat $W/gap.txt
R .devcarry/app/kernels.mjs --shapes 4096x576x576 --attn 8x512x9x3x64 --no-tfjs --peer $W/torch-1.json --out $W/kernels-1.json > $W/kernels-1.txt
R .devcarry/app/kernels.mjs --shapes 4096x4096x4096,4096x576x576 --attn 8x512x9x3x64 --no-tfjs --peer $W/torch-1.json --out $W/kernels-2.json > $W/kernels-2.txt
grep -h '| matmul' $W/kernels-*.txt
P torch-2.json
cp .devcarry/dev-s21-2.sh $W/run.sh

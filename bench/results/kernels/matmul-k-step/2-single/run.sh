set -uo pipefail
OUT=${OUT:-/tmp/out}; W=$OUT/r; mkdir -p $W
R() { timeout ${TMO:-300} bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
SH=4096x4096x4096,2048x2048x2048,1024x1024x1024,4096x576x576,8x1536x576
python3 bench/baselines/kernels.py --matmul $SH --attn 8x512x9x3x64,4x1024x9x3x64 --out $W/torch.json > /dev/null 2>&1
R .devcarry/app/kernels.mjs --shapes $SH --attn 8x512x9x3x64,4x1024x9x3x64 --no-tfjs --peer $W/torch.json --out $W/kernels.json > $W/kernels.txt
grep -h '| matmul\|| attention' $W/kernels.txt
TMO=150 R .devcarry/app/matmul-sweep.mjs --only cube --rounds 7 --peer $W/torch.json --out $W/sweep-cube.json > $W/sweep-cube.txt
grep -A12 '^| variant' $W/sweep-cube.txt | cut -c1-110
V=big:v4,half:v4,half:v4:w,half:w,halfn,mid32:v4:w,mid:k4,mid:v4,mid:v4:k4,mid:v4:k8,mid:v4:w,mid:v4:w:k8,mid:w,n96q:v4,tall4:v4:w,tall4:w,big:v4:w,huge:v4:w,big8:v4:w,mid84:v4:w,huge:v4
TMO=330 R .devcarry/app/matmul-sweep.mjs --only q/o,k/v,gate/up,gate+up,down,lm_head --tokens 1365,4096 --rounds 5 --variants $V --out $W/sweep-lin.json > $W/sweep-lin.txt
grep -A40 '^| product' $W/sweep-lin.txt | cut -c1-150
cp .devcarry/dev-s22-2.sh $W/run.sh

set -uo pipefail
OUT=${OUT:-/tmp/out}; W=$OUT/r; mkdir -p $W
R() { timeout ${TMO:-300} bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
SH=4096x4096x4096,2048x2048x2048,1024x1024x1024,4096x576x576,8x1536x576
A=8x512x9x3x64,4x1024x9x3x64,2x2048x16x4x64
for i in 1 2; do
python3 bench/baselines/kernels.py --matmul $SH --attn $A --out $W/torch-$i.json > /dev/null 2>&1
R .devcarry/app/kernels.mjs --shapes $SH --attn $A --no-tfjs --peer $W/torch-$i.json --out $W/kernels-$i.json > $W/kernels-$i.txt
grep -h '| matmul\|| attention' $W/kernels-$i.txt
done
V=big:v4,half:v4,half:v4:w,half:w,halfn,mid32:v4:w,mid:k4,mid:v4,mid:v4:k4,mid:v4:k8,mid:v4:w,mid:v4:w:k8,mid:w,n96q:v4,tall4:v4:w,tall4:w,big:v4:w,huge:v4:w,big8:v4:w,mid84:v4:w,huge:v4
TMO=330 R .devcarry/app/matmul-sweep.mjs --only cube4096,q/o,k/v,gate/up,gate+up,down,lm_head --tokens 1365,4096 --rounds 5 --variants $V --out $W/sweep.json > $W/sweep.txt
grep -A40 '^| product' $W/sweep.txt | cut -c1-150
cp .devcarry/dev-s22-3.sh $W/run.sh

set -uo pipefail
OUT=${OUT:-/tmp/out}; W=$OUT/r; mkdir -p $W
R() { timeout ${TMO:-300} bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
SH=4096x4096x4096,2048x2048x2048,1024x1024x1024,4096x576x576,8x1536x576
A=8x512x9x3x64,4x1024x9x3x64,2x2048x16x4x64
for i in 1 2; do
python3 bench/baselines/kernels.py --matmul $SH --attn $A --out $W/torch-$i.json > /dev/null 2>&1
R .devcarry/app/kernels.mjs --shapes $SH --attn $A --no-tfjs --peer $W/torch-$i.json --out $W/kernels-$i.json > $W/kernels-$i.txt
grep -h '| matmul\|| attention\|this run' $W/kernels-$i.txt
done
cp .devcarry/dev-s21-9.sh $W/run.sh

set -uo pipefail
OUT=${OUT:-/tmp/out}; W=$OUT/r; mkdir -p $W
R() { timeout ${TMO:-300} bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
SH=4096x4096x4096,4096x576x576,1536x576x576,2688x576x576
python3 bench/baselines/kernels.py --matmul $SH --attn 8x512x9x3x64 --out $W/torch.json 2>&1 | tail -1
V=mid:w,mid84,mid,n96q:v4,mid:v4:w,half,half:v4,half:w,half:v4:w,halfn,halfn:v4,tall4:w
TMO=300 R .devcarry/app/matmul-sweep.mjs --only q/o,k/v,gate/up,down --tokens 1536,2688,4096 --rounds 11 --variants $V --peer $W/torch.json --out $W/sweep.json > $W/sweep.txt
python3 .devcarry/pr.py $W/sweep.json | cut -c1-300
grep -A20 '^| product' $W/sweep.txt | cut -c1-150
cp .devcarry/dev-s21-5.sh $W/run.sh

set -uo pipefail
OUT=${OUT:-/tmp/out}; W=$OUT/r; mkdir -p $W
R() { timeout ${TMO:-250} bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
SH=4096x4096x4096,2048x2048x2048,1024x1024x1024,4096x576x576,8x1536x576
python3 bench/baselines/kernels.py --matmul $SH --attn 8x512x9x3x64 --out $W/torch.json > /dev/null 2>&1
V=big:v4:w,big:v4:a2:w,big:a2:w,big:v4:a2,tall4:v4:w,tall4:v4:a2:w,mid84,mid84:a2,mid84:v4:a2:w,n96q:v4,n96q:v4:a2,half:v4:w,half:w,mid32:v4:w,mid32:v4:a2:w
R .devcarry/app/matmul-sweep.mjs --only cube,q/o,gate/up,down --tokens 1536,4096 --rounds 11 --variants $V --peer $W/torch.json --out $W/sweep.json > $W/sweep.txt
grep -i 'fail' $W/sweep.txt | head -5
python3 .devcarry/pr.py $W/sweep.json | cut -c1-330
cp .devcarry/dev-s21-10.sh $W/run.sh

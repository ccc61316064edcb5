set -uo pipefail
OUT=${OUT:-/tmp/out}; W=$OUT/r; mkdir -p $W
R() { timeout ${TMO:-300} bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
python3 bench/baselines/kernels.py --matmul 4096x4096x4096,4096x576x576 --attn 8x512x9x3x64 --out $W/torch.json > /dev/null 2>&1
for e in x o s h os oh sh osh x o; do
MM_EXP=$e TMO=120 R .devcarry/app/matmul-sweep.mjs --only cube4096 --variants big:v4:w,big8:v4:w,huge:v4:w --rounds 7 --peer $W/torch.json --out $W/sweep-$e.json > $W/sweep-$e.txt
echo "== $e"; grep '^| big\|^| huge\|passed\|FAIL\|fail' $W/sweep-$e.txt | cut -c1-100
done
cp .devcarry/dev-s22-1.sh $W/run.sh

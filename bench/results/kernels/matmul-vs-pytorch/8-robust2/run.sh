set -uo pipefail
OUT=${OUT:-/tmp/out}; W=$OUT/r; mkdir -p $W
R() { timeout ${TMO:-200} bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
SH=4096x4096x4096,2048x2048x2048,1024x1024x1024,4096x576x576,8x1536x576
python3 bench/baselines/kernels.py --matmul $SH --attn 8x512x9x3x64 --out $W/torch.json > /dev/null 2>&1
V=big:v4:w,half:v4:w,half:w,mid:w
RB2="enable-dawn-features=vulkan_use_buffer_robust_access_2"
for i in 1 2; do
for s in base rb2; do
F=""; [ $s = rb2 ] && F=$RB2
DAWN_FLAGS=$F R .devcarry/app/matmul-sweep.mjs --only cube4096,q/o --tokens 4096 --rounds 11 --variants $V --peer $W/torch.json --out $W/sweep-$s-$i.json > $W/sweep-$s-$i.txt
python3 .devcarry/pr.py $W/sweep-$s-$i.json | sed "s/^/$s$i /" | cut -c1-200
done; done
for s in base rb2; do
F=""; [ $s = rb2 ] && F=$RB2
DAWN_FLAGS=$F R .devcarry/app/kernels.mjs --shapes $SH --attn 8x512x9x3x64 --no-tfjs --peer $W/torch.json --out $W/kernels-$s.json > $W/kernels-$s.txt
echo "== $s"; grep -h '| matmul' $W/kernels-$s.txt
done
cp .devcarry/dev-s21-8.sh $W/run.sh

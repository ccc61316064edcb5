set -uo pipefail
OUT=${OUT:-/tmp/out}; W=$OUT/r; mkdir -p $W
R() { timeout ${TMO:-200} bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
SH=4096x4096x4096,2048x2048x2048,1024x1024x1024,4096x576x576,8x1536x576
A=8x512x9x3x64,4x1024x9x3x64,2x2048x16x4x64
for i in 1 2; do
python3 bench/baselines/kernels.py --matmul $SH --attn $A --out $W/torch-$i.json > /dev/null 2>&1
R .devcarry/app/kernels.mjs --shapes $SH --attn $A --no-tfjs --peer $W/torch-$i.json --out $W/kernels-$i.json > $W/kernels-$i.txt
grep -h '| matmul\|| attention' $W/kernels-$i.txt
done
rm -f $W/torch-*.json $W/kernels-*.json
V=big:v4,half:v4,half:v4:w,half:w,halfn,mid32:v4:w,mid:k4,mid:v4,mid:v4:k4,mid:v4:k8,mid:v4:w,mid:v4:w:k8,mid:w,n96q:v4,tall4:v4:w,tall4:w,big:v4:w,huge:v4:w,big8:v4:w,mid84:v4:w
TMO=300 R .devcarry/app/matmul-sweep.mjs --only cube4096,q/o,k/v,gate/up,down --tokens 1365,4096 --rounds 5 --variants $V --out $W/sweep.json > $W/sweep.txt
grep -A30 '^| product' $W/sweep.txt | cut -c1-150
for i in 1 2; do
for s in old new; do
f=.devcarry/app/iteration.mjs; [ $s = old ] && f=.devcarry/app/iteration-old.mjs
R $f --models smollm2-135m --dtype f32 --recompute off --out $W/it-$s-$i.json > $W/it-$s-$i.txt
echo "== $s $i"; grep -i 'iteration\|scoring\|update\|rollout' $W/it-$s-$i.txt | head -8 | cut -c1-200
done; done
rm -f $W/it-*.json
for f in $W/it-*.txt; do echo "##### $f"; cat $f; done > $W/iteration.txt; rm -f $W/it-*.txt
cp .devcarry/dev-s22-4.sh $W/run.sh

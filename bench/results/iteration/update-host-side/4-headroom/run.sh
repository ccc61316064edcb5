set -uo pipefail
OUT=${OUT:-/tmp/out}; W=/tmp/res; mkdir -p $W
R() { timeout ${TMO:-200} bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
for h in 0 1024 2048 0 1024; do
  H0=$h R .devcarry/app/iteration.mjs --models smollm2-135m --dtype f32 --recompute off --iterations 3 --cpu --out $W/it-h$h.json > $W/it-h$h.txt
  echo "== headroom $h MiB"; grep -A5 'JS thread' $W/it-h$h.txt | grep -v advantages | cut -c1-250; grep -h '^| smollm2' $W/it-h$h.txt | cut -c1-120
done
cp .devcarry/dev-s23-4.sh $W/run.sh
tar czf $OUT/res.tgz -C $W .

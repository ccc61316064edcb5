set -uo pipefail
OUT=${OUT:-/tmp/out}; W=/tmp/res; mkdir -p $W
R() { timeout ${TMO:-200} bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
timeout 200 python3 bench/baselines/iteration.py --prompts 275,394 --iterations 5 --out $W/torch.json 2>&1 | grep -v -i warn | tail -1 | cut -c1-220
for i in 1 2 3 4; do v=old; [ $((i % 2)) = 0 ] && v=new
  B=iteration; [ $v = old ] && B=iteration-old
  R .devcarry/app/$B.mjs --models smollm2-135m --dtype f32 --recompute off --iterations 5 --cpu --peer $W/torch.json --out $W/it-$i-$v.json > $W/it-$i-$v.txt
  echo "== $v"; grep -A5 'JS thread' $W/it-$i-$v.txt | cut -c1-220; grep -h '^| smollm2' $W/it-$i-$v.txt | cut -c1-120
done
cp .devcarry/dev-s23-3.sh $W/run.sh
tar czf $OUT/res.tgz -C $W .

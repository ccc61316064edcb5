set -uo pipefail
OUT=${OUT:-/tmp/out}; W=/tmp/res; mkdir -p $W
R() { timeout ${TMO:-200} bash .devcarry/enter.sh node "$@" 2>&1 | grep -v "^Warning\|^    at \|XDG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/gpu.txt
R .devcarry/app/iteration-shapes.mjs --models smollm2-135m --dtype f32 --recompute off > $W/shapes.txt
grep MMSHAPE $W/shapes.txt | awk '{ split($4, d, "x"); T = ($3 == "tn") ? d[3] : d[1]; if (T >= 256) print }' | head -60
TOK=$(grep MMSHAPE $W/shapes.txt | awk '{ split($4, d, "x"); T = ($3 == "tn") ? d[3] : d[1]; if (T >= 256 && (d[2] == 576 || d[2] == 192 || d[2] == 960 || d[2] == 1536 || d[2] == 3072)) c[T] += $2 } END { for (t in c) print c[t], t }' | sort -rn | head -4 | awk '{print $2}' | sort -n | paste -sd,)
echo "tokens: $TOK"
V=big:v4:w,big8:v4:w,mid:v4:w,mid:w,mid:v4,half:v4,half:v4:w,half:w,halfn,n96q:v4,tall4:w,tall4:v4:w,mid84:v4:w,mid32:v4:w,mid:v4:k4,mid:v4:k8,mid:v4:w:k8,mid:k4
TMO=420 R .devcarry/app/matmul-sweep.mjs --only q/o,k/v,qkv,gate/up,gate+up,down --tokens $TOK --rounds 5 --variants $V --out $W/sweep.json > $W/sweep.txt
grep -A80 '^| product' $W/sweep.txt | cut -c1-150
cp .devcarry/dev-s22-7.sh $W/run.sh
tar czf $OUT/res.tgz -C $W .

# The plan family on a GPU, one call: the model marft-tiny-plan pretrained (coop-arith and coop-plan
# transcripts), then the plan-* matrix rows on it, seed 1, with the untuned bases (bench/matrix.sh).
set -uo pipefail
K=.devcarry; OUT=${OUT:-/tmp/out}; mkdir -p $OUT
f='^Warning\|^    at \|XDG'
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
t0=$SECONDS
timeout 300 bash $K/enter.sh node $K/app/marft.mjs pretrain --out public/models/marft-tiny-plan --seed 0 --bf16 \
  --tasks coop-arith,coop-plan --teams solo,duo,orchestrated --steps ${STEPS:-6000} 2>&1 | grep -v "$f" | tee $OUT/pretrain.txt | grep -i "eval\|plan\|step 6000\|error" | tail -12
echo "pretrain: $((SECONDS - t0)) s"
cp -r public/models/marft-tiny-plan $OUT/ 2>/dev/null
left=$(( ${END_S:-585} - (SECONDS - t0) ))
echo "matrix: $left s left"
[ -f public/models/marft-tiny-plan/model.safetensors ] && OUT=$OUT timeout $left bash bench/matrix.sh --seeds ${SEEDS:-1} --base --parallel 16 \
  --deadline $((left - 15)) --eval-reserve 75 ${ROWS:-plan-ppo-action plan-credit-step-discount plan-credit-per-step plan-credit-sharing plan-schedule-agent-by-agent plan-critic-lora plan-orchestrated-routing} 2>&1 | tail -30

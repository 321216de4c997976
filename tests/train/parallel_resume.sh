#!/usr/bin/env bash
# A distributed run stopped at step 6 and resumed from its checkpoints (every rank's part and
# shard, with the gradient compressors' error-feedback state) repeats the uninterrupted run's
# losses exactly: dp 2 x pp 2 with ZeRO 2 and the hybrid policy on 4 ranks.
#   parallel_resume.sh MPIEXEC HYCC_TRAIN
set -euo pipefail
mpiexec="$1"
train="$2"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=1
run=("$mpiexec" -n 4 --oversubscribe --mca btl_vader_single_copy_mechanism none "$train"
  --layers 2 --hidden 64 --heads 4 --seq 32 --batch 8 --steps 12 --lr 3e-3 --eval-every 6
  --eval-sequences 8 --dp 2 --pp 2 --micro-batches 2 --zero 2 --bucket-mb 0.05 --policy hybrid)
"${run[@]}" --json "$dir/full.json" >"$dir/full.log"
"${run[@]}" --json "$dir/part.json" --checkpoint "$dir/ckpt" --stop-at 6 >"$dir/first.log"
"${run[@]}" --json "$dir/part.json" --checkpoint "$dir/ckpt" --resume >"$dir/resumed.log"
grep -q "resumed from .* at step 6" "$dir/resumed.log"
ls "$dir/ckpt"
python3 "$(dirname "$0")/compare_losses.py" "$dir/full.json" "$dir/part.json" 12 0

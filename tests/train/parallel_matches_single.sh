#!/usr/bin/env bash
# hycc-train under mpirun with --policy baseline against one rank: the loss after each of 20 steps
# must match the single-rank run with the same global batch to a relative 1e-4 (and the final
# validation loss too).
#   parallel_matches_single.sh MPIEXEC HYCC_TRAIN RANKS [PARALLEL FLAGS...]
set -euo pipefail
mpiexec="$1"
train="$2"
ranks="$3"
shift 3
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
# The layout's flags may set --batch (both runs then use it); the rest stay fixed.
batch=(--batch 8)
args=()
while [ $# -gt 0 ]; do
  if [ "$1" = --batch ]; then batch=(--batch "$2"); shift 2; else args+=("$1"); shift; fi
done
model=(--layers 4 --hidden 32 --heads 4 --seq 16 "${batch[@]}" --steps 20 --lr 3e-3
  --eval-every 10 --eval-sequences 8 --policy baseline)
export OMP_NUM_THREADS=1
"$train" "${model[@]}" --json "$dir/single.json" >"$dir/single.log"
"$mpiexec" -n "$ranks" --oversubscribe --mca btl_vader_single_copy_mechanism none \
  "$train" "${model[@]}" --json "$dir/parallel.json" "${args[@]}" >"$dir/parallel.log"
python3 "$(dirname "$0")/compare_losses.py" "$dir/single.json" "$dir/parallel.json" 20 1e-4

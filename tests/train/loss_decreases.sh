#!/usr/bin/env bash
# hycc-train end to end on the training text: a tiny model for a few steps; the loss of the last
# step must be below the first one's, and the run must write one JSON line per step.
#   loss_decreases.sh HYCC_TRAIN [ARGS...]
set -euo pipefail
train="$1"
shift
json="$(mktemp)"
trap 'rm -f "$json"' EXIT
OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" "$train" --layers 2 --hidden 32 --heads 2 --seq 32 \
  --batch 4 --micro-batches 2 --steps 8 --lr 3e-3 --eval-every 4 --eval-sequences 4 \
  --json "$json" "$@"
lines=$(wc -l <"$json")
first=$(head -n 1 "$json" | sed -E 's/.*"loss":([-0-9.eE+]+).*/\1/')
last=$(tail -n 1 "$json" | sed -E 's/.*"loss":([-0-9.eE+]+).*/\1/')
echo "json lines: $lines, first loss: $first, last loss: $last"
[ "$lines" -eq 8 ] || { echo "expected 8 JSON lines" >&2; exit 1; }
grep -q '"val_loss":[0-9]' "$json" || { echo "no validation loss in the JSON lines" >&2; exit 1; }
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' || { echo "loss did not decrease" >&2; exit 1; }
echo "loss decreased"

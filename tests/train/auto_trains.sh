#!/usr/bin/env bash
# The auto policy at dp 2 x pp 2 (4 ranks) with ZeRO 2: every rank measures and decides alike
# (a rank that chose differently would deadlock or fail the collectives' argument check), the
# loss decreases, and every dimension that carried traffic is in the statistics. Which
# candidates win depends on the measured links, so the test does not assert them.
#   auto_trains.sh MPIEXEC HYCC_TRAIN
set -euo pipefail
mpiexec="$1"
train="$2"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=1
HYCC_LOG=decisions "$mpiexec" -n 4 --oversubscribe --mca btl_vader_single_copy_mechanism none \
  -x HYCC_LOG "$train" --layers 2 --hidden 64 --heads 4 --seq 32 --batch 16 --steps 20 \
  --lr 3e-3 --eval-every 0 --dp 2 --pp 2 --micro-batches 2 --zero 2 --bucket-mb 0.05 \
  --policy auto --json "$dir/run.json" >"$dir/run.log" 2>"$dir/decisions.log"
grep -q "modelled on links of" "$dir/decisions.log" || { cat "$dir/decisions.log"; exit 1; }
python3 - "$dir/run.json" <<'PY'
import json
import sys

lines = [json.loads(line) for line in open(sys.argv[1])]
first, last = lines[0]["loss"], lines[-1]["loss"]
stats = lines[-1]["stats"]
print(f"{len(lines)} steps, loss {first:.4f} -> {last:.4f}")
for dim in ("zero_grad", "zero_param", "pp"):
    print(f"{dim}: {stats.get(dim)}")
    assert stats.get(dim, {}).get("calls", 0) > 0, f"no {dim} calls"
assert len(lines) == 20, "expected 20 JSON lines"
assert last < first - 0.5, "loss did not decrease"
print("OK")
PY

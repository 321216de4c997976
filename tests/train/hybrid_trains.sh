#!/usr/bin/env bash
# The hybrid policy at dp 2 x tp 2 (4 ranks): the loss decreases, and the statistics in the JSON
# lines show compressed dp gradients (ef2+quant:bits=6) and tp activations (bf16). Then a
# powersgd rule on dp (2 ranks): the trainer's buckets name their tensors, so PowerSGD
# compresses each weight matrix (a flat bucket would go uncompressed), and the loss decreases.
#   hybrid_trains.sh MPIEXEC HYCC_TRAIN
set -euo pipefail
mpiexec="$1"
train="$2"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=1
# (B/dp) x T x C x 4 bytes = 8 x 32 x 64 x 4 = 64 KiB: tp messages reach the 64K threshold.
"$mpiexec" -n 4 --oversubscribe --mca btl_vader_single_copy_mechanism none "$train" \
  --layers 2 --hidden 64 --heads 4 --seq 32 --batch 16 --steps 20 --lr 3e-3 --eval-every 0 \
  --dp 2 --tp 2 --policy hybrid --json "$dir/run.json" >"$dir/run.log"
python3 - "$dir/run.json" <<'PY'
import json
import sys

lines = [json.loads(line) for line in open(sys.argv[1])]
first, last = lines[0]["loss"], lines[-1]["loss"]
stats = lines[-1]["stats"]
print(f"{len(lines)} steps, loss {first:.4f} -> {last:.4f}")
for dim in ("dp", "tp"):
    s = stats.get(dim, {})
    print(f"{dim}: {s}")
    assert s.get("compressed_calls", 0) > 0, f"no compressed {dim} calls"
    assert s["wire_bytes"] < s["raw_bytes"], f"{dim} bytes not reduced"
assert len(lines) == 20, "expected 20 JSON lines"
assert last < first - 0.5, "loss did not decrease"
PY
cat >"$dir/powersgd.toml" <<'TOML'
name = "dp-powersgd"
[[rule]]
dimension = "dp"
operation = "allreduce"
compressor = "powersgd:rank=4"
TOML
"$mpiexec" -n 2 --oversubscribe --mca btl_vader_single_copy_mechanism none "$train" \
  --layers 2 --hidden 64 --heads 4 --seq 32 --batch 16 --steps 20 --lr 3e-3 --eval-every 0 \
  --dp 2 --policy "$dir/powersgd.toml" --json "$dir/powersgd.json" >"$dir/powersgd.log"
python3 - "$dir/powersgd.json" <<'PY'
import json
import sys

lines = [json.loads(line) for line in open(sys.argv[1])]
first, last = lines[0]["loss"], lines[-1]["loss"]
s = lines[-1]["stats"]["dp"]
print(f"powersgd: loss {first:.4f} -> {last:.4f}, dp {s}")
assert s["compressed_calls"] == s["calls"] > 0, "dp buckets not all compressed"
assert s["wire_bytes"] * 5 < s["raw_bytes"], "PowerSGD sent more than a fifth (10x measured)"
assert last < first - 0.5, "loss did not decrease"
print("OK")
PY

#!/usr/bin/env bash
# hycc-train --precision bf16 on dp 2 x tp 2 x pp 2: every tensor sent travels as bf16 (half the
# float32 run's bytes per dimension under baseline), the loss decreases, hybrid compresses the
# tp and pp traffic (exphuff, lossless) and the gradients, the single-rank run is within a
# stated tolerance, and a run stopped and resumed (ZeRO 1 with fp32 masters) repeats the
# uninterrupted losses exactly.
#   bf16.sh MPIEXEC HYCC_TRAIN
set -euo pipefail
mpiexec="$1"
train="$2"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=1
# Micro-batches of 8 x 64 tokens x 128: 128 KiB of bf16 per tp and pp message, above the
# presets' 64 KiB threshold.
common=(--layers 2 --hidden 128 --heads 4 --seq 64 --batch 32 --lr 3e-3 --eval-every 0)
grid=(-n 8 --oversubscribe "$train" "${common[@]}" --dp 2 --tp 2 --pp 2 --micro-batches 2)
"$mpiexec" "${grid[@]}" --steps 12 --policy baseline --precision fp32 --json "$dir/f32.json" >/dev/null
"$mpiexec" "${grid[@]}" --steps 12 --policy baseline --precision bf16 --json "$dir/b.json" >/dev/null
"$mpiexec" "${grid[@]}" --steps 12 --policy hybrid --precision bf16 --json "$dir/h.json" >/dev/null
"$mpiexec" -n 1 "$train" "${common[@]}" --steps 12 --precision bf16 --json "$dir/one.json" >/dev/null
zero=(-n 4 --oversubscribe "$train" "${common[@]}" --dp 2 --pp 2 --micro-batches 2 --zero 1
  --precision bf16 --policy hybrid --steps 8)
"$mpiexec" "${zero[@]}" --json "$dir/full.json" >/dev/null
"$mpiexec" "${zero[@]}" --json "$dir/part.json" --checkpoint "$dir/ckpt" --stop-at 4 >/dev/null
"$mpiexec" "${zero[@]}" --json "$dir/part.json" --checkpoint "$dir/ckpt" --resume >/dev/null
python3 "$(dirname "$0")/compare_losses.py" "$dir/full.json" "$dir/part.json" 8 0
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
runs = {k: [json.loads(l) for l in open(f"{d}/{k}.json")] for k in ("f32", "b", "h", "one")}
assert runs["b"][0]["run"]["precision"] == "bf16" and runs["f32"][0]["run"]["precision"] == "fp32"
f32, b, h = (runs[k][-1]["stats"] for k in ("f32", "b", "h"))
for dim in ("dp", "tp", "pp", "embedding"):
    assert 2 * b[dim]["raw_bytes"] in range(f32[dim]["raw_bytes"] - 64, f32[dim]["raw_bytes"] + 65), (
        dim, b[dim]["raw_bytes"], f32[dim]["raw_bytes"])
losses = [l["loss"] for l in runs["b"]]
assert losses[-1] < losses[0] - 0.5, losses
for dim, least in (("tp", 1.3), ("pp", 1.3), ("dp", 2.0)):
    assert h[dim]["ratio"] > least and h[dim]["compressed_calls"] > 0, (dim, h[dim])
# One rank sends nothing and rounds nothing on a wire: within 1% of the parallel run.
for x, y in zip(runs["one"], runs["b"]):
    assert abs(x["loss"] - y["loss"]) <= 0.01 * y["loss"], (x["step"], x["loss"], y["loss"])
print("bf16: bytes halved, loss decreases, hybrid tp %.2fx pp %.2fx dp %.2fx, one rank within 1%%"
      % (h["tp"]["ratio"], h["pp"]["ratio"], h["dp"]["ratio"]))
PY
echo "bf16 test: OK"

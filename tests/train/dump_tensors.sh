#!/usr/bin/env bash
# hycc-train --dump-tensors: each rank writes, at each dumped step, the first tensor of every
# (dimension, kind) it sends, within its budget, with an index; hycc-bench codec reads the files
# (HYCC_BENCH "-": not; the sanitizer suite leaves the benchmark tool out of its build).
#   dump_tensors.sh MPIEXEC HYCC_TRAIN HYCC_BENCH|-
set -euo pipefail
mpiexec="$1"
train="$2"
bench="$3"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=1
common=(--layers 2 --hidden 64 --heads 4 --seq 32 --batch 8 --steps 3 --eval-every 0)
"$mpiexec" -n 4 --oversubscribe "$train" "${common[@]}" --dp 2 --tp 2 \
  --dump-tensors "$dir/a" --dump-steps 2 3 >"$dir/a.log"
"$mpiexec" -n 4 --oversubscribe "$train" "${common[@]}" --dp 2 --pp 2 --micro-batches 2 --zero 2 \
  --dump-tensors "$dir/b" --dump-mib 0.2 >"$dir/b.log"
grep -q "dumped .* MiB of sent tensors to $dir/a" "$dir/a.log"
python3 - "$dir" <<'PY'
import json, math, os, struct, sys
root = sys.argv[1]

def check(d, ranks, steps, kinds, budget=None):
    seen = set()
    for r in range(ranks):
        index = json.load(open(f"{root}/{d}/index-rank{r}.json"))
        total = 0
        for e in index:
            path = f"{root}/{d}/{e['file']}"
            assert os.path.getsize(path) == 4 * e["count"], e
            assert e["count"] <= e["sent_count"] and e["rank"] == r and e["step"] in steps, e
            values = struct.unpack(f"<{e['count']}f", open(path, "rb").read())
            assert all(math.isfinite(v) for v in values) and any(v != 0 for v in values), e
            total += 4 * e["count"]
            seen.add((e["dimension"], e["kind"], e["step"]))
        if budget is not None:
            assert total <= budget, (r, total)
    for dimension, kind in kinds:
        for s in steps:
            assert (dimension, kind, s) in seen, (d, dimension, kind, s, sorted(seen))
    return seen

check("a", 4, {2, 3}, [("dp", "gradient"), ("tp", "attn_proj"), ("tp", "mlp_proj"),
                       ("tp", "attn_qkv_dinput"), ("tp", "mlp_fc_dinput")])
# Step 2's and step 3's gradients are different tensors.
a2 = open(f"{root}/a/rank0-step2-dp-gradient.f32", "rb").read()
a3 = open(f"{root}/a/rank0-step3-dp-gradient.f32", "rb").read()
assert a2 != a3
seen = check("b", 4, {3}, [("pp", "activation"), ("pp", "gradient")], budget=int(0.2 * 2**20))
# The budget cuts the last tensor that fits in part (the ZeRO gradient bucket here).
cut = [e for r in range(4) for e in json.load(open(f"{root}/b/index-rank{r}.json"))
       if e["count"] < e["sent_count"]]
assert cut and all(e["dimension"] == "zero_grad" for e in cut), cut
print("dump: index, sizes, steps, budget OK")
PY
if [ "$bench" = - ]; then
  echo "dump: files not read with hycc-bench (none given)"
else
  "$bench" codec --data "$dir/a/rank0-step3-dp-gradient.f32" --dtype bf16 --codec exphuff \
    --min-time 0.01 | tee "$dir/bench.log"
  grep -Eq "^  exphuff:block=16384 .* 0\.000e\+00 +0\.000e\+00 +0\.000e\+00$" "$dir/bench.log"
fi
echo OK

#!/usr/bin/env bash
# `make demo`'s pipeline end to end, small: tools/experiment on shared memory with 3 steps of
# baseline and hybrid writes a report whose table, statistics and summary hold both runs.
#   experiment_smoke.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
"$root/tools/experiment" --shm --build "$build" --steps 3 --out "$dir/report" \
  --policies baseline,hybrid -- --eval-every 3 --eval-sequences 8 >"$dir/log" 2>&1 ||
  { tail -20 "$dir/log"; exit 1; }
# The report names paths under the repository relative to its root.
if grep -qF "$root/" "$dir/report/commands.txt"; then
  grep -F "$root/" "$dir/report/commands.txt" | head -2
  echo "FAIL: the report's commands name paths under $root/"
  exit 1
fi
/usr/bin/python3 - "$dir/report" <<'PY'
import json
import os
import sys

out = sys.argv[1]
summary = json.load(open(f"{out}/summary.json"))
runs = {r["policy"]: r for r in summary["runs"]}
assert set(runs) == {"baseline", "hybrid"}, runs.keys()
assert summary["precision"] == "bf16", summary.get("precision")  # the default
for name, r in runs.items():
    print(name, {k: r[k] for k in ("tokens_per_s", "speedup", "final_val_loss")})
    assert r["tokens_per_s"] > 0 and r["final_val_loss"] > 0, r
assert runs["baseline"]["speedup"] == 1.0
readme = open(f"{out}/README.md").read()
for text in ("| baseline |", "| hybrid |", "shared memory", "## Compression statistics",
             "## Commands", "--policy hybrid", "Precision: bf16", "--precision bf16"):
    assert text in readme, f"README.md lacks {text!r}"
assert "load average" in readme
assert os.path.exists(f"{out}/commands.txt")
# The bar chart of bytes per dimension, when gnuplot is there (scripts/setup-deps installs it).
assert "![bytes per dimension](bytes.png)" in readme and os.path.getsize(f"{out}/bytes.png") > 0
with open(f"{out}/bytes.dat") as f:
    rows = [line.split() for line in f if not line.startswith("#")]
assert {r[0] for r in rows} == {"dp", "tp", "pp", "embedding"}, rows
dp = next(r for r in rows if r[0] == "dp")  # columns: baseline, hybrid
assert 0 < float(dp[2]) < float(dp[1]) / 2, dp
print("OK")
PY

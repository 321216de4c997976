#!/usr/bin/env bash
# tools/torch_bench.py end to end, small: FSDP2 x TP on 2 emulated hosts x 2 ranks, gloo and the
# hycc backend under baseline and hybrid, 2 timed steps each; the table must hold the three runs.
#
# usage: tests/netemu/torch_bench_test.sh PYTHON   (root; exits 77 otherwise)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PYTHON=${1:?usage: $0 PYTHON}

[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (network namespaces and tc)"; exit 77; }
"$ROOT/tools/netemu" check >/dev/null 2>&1 || { echo "SKIP: netemu cannot run here"; exit 77; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$PYTHON" "$ROOT/tools/torch_bench.py" --configs gloo,baseline,hybrid --hosts 2 \
  --ranks-per-host 2 --steps 2 --warmup 1 --python "$PYTHON" --out "$out"
rows=$(grep -cE '^\| (gloo|hycc baseline|hycc hybrid) \| [0-9]+ \| [0-9.]+ \| [0-9.]+ \|' \
  "$out/README.md" || true)
[[ $rows -eq 3 ]] || { echo "FAIL: $rows of 3 rows in the table"; exit 1; }
[[ -s "$out/results.json" ]] || { echo "FAIL: no results.json"; exit 1; }
echo "PASS: torch_bench, 3 configurations"

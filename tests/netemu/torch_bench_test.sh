#!/usr/bin/env bash
# tools/torch_bench.py end to end, small: FSDP2 x TP, the pipeline of FSDP2 stages (pp_fsdp) and
# DDP, on 2 emulated hosts x 2 ranks (DDP x 1 rank: a run's time is mostly its processes'
# start), gloo and the hycc backend under baseline and hybrid, 2 timed steps after 1 each, and
# (fsdp_tp) gloo on faster links, (ddp) gloo with PyTorch's fp16 and PowerSGD hooks (PowerSGD
# compresses from the third step); each table must hold the runs,
# baseline gloo's losses, fsdp_tp's the links' share of gloo's step, and the pipeline's hybrid
# row a compressed pp column.
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
for parallel in fsdp_tp pp_fsdp ddp; do
  configs=gloo,baseline,hybrid per_host=2
  [[ $parallel == fsdp_tp ]] && configs+=,gloo@1gbit
  [[ $parallel == ddp ]] && configs+=,fp16,powersgd per_host=1
  "$PYTHON" "$ROOT/tools/torch_bench.py" --parallel $parallel --configs $configs \
    --hosts 2 --ranks-per-host $per_host --steps 2 --warmup 1 --python "$PYTHON" \
    --out "$out/$parallel"
  table="$out/$parallel/README.md"
  rows=$(grep -cE '^\| (gloo|hycc baseline|hycc hybrid) \| [0-9]+ \| [0-9.]+ \| [0-9.]+ \|' \
    "$table" || true)
  [[ $rows -eq 3 ]] || { echo "FAIL: $parallel: $rows of 3 rows in the table"; exit 1; }
  [[ -s "$out/$parallel/results.json" ]] || { echo "FAIL: $parallel: no results.json"; exit 1; }
  "$PYTHON" - "$out/$parallel/results.json" <<'PY' || { echo "FAIL: $parallel: losses not gloo's"; exit 1; }
import json, sys
r = {x["config"]: x for x in json.load(open(sys.argv[1]))}
same = [c for c in r if c == "baseline" or c.startswith("gloo@")]
sys.exit(any(r[c]["losses"] != r["gloo"]["losses"] for c in same))
PY
done
grep -qE '^\| gloo, 1gbit links \| [0-9]+ \|' "$out/fsdp_tp/README.md" ||
  { echo "FAIL: fsdp_tp: no row of gloo on 1gbit links"; exit 1; }
grep -qE '^The 1gbit links. gloo runs at [0-9]+ tokens/s: the links take -?[0-9]+% of gloo.s step' \
  "$out/fsdp_tp/README.md" || { echo "FAIL: fsdp_tp: no share of the links"; exit 1; }
grep -qE '^\| hycc hybrid \|.*\| [0-9.]+ \([0-9.]+x\) \|' "$out/pp_fsdp/README.md" ||
  { echo "FAIL: pp_fsdp: no compressed column in hybrid's row"; exit 1; }
grep -q 'pp MB' "$out/pp_fsdp/README.md" || { echo "FAIL: pp_fsdp: no pp column"; exit 1; }
for hook in fp16 powersgd; do
  grep -qE "^\| gloo \+ DDP $hook hook \| [0-9]+ \|" "$out/ddp/README.md" ||
    { echo "FAIL: ddp: no row of the $hook hook"; exit 1; }
done
echo "PASS: torch_bench, 4 configurations of fsdp_tp, 3 of pp_fsdp, 5 of ddp"

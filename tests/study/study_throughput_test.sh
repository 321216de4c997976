#!/usr/bin/env bash
# tools/study's throughput phase on the emulated cluster, small: for two seeds, 1 step (one
# round) of the baseline and one preset and 2 of each calibration run (tools/experiment on
# tools/netemu), then its table and summary; a second invocation keeps both seeds. Needs root and
# network namespaces: skipped (77) otherwise.
#   study_throughput_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1
"$root/tools/netemu" check >/dev/null 2>&1 || { echo "SKIP: tools/netemu cannot run here"; exit 77; }
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
study() {
  "$root/tools/study" --build "$build" --out "$dir/study" --steps 2 --seeds 1,2 --dims tp \
    --codecs "quant:bits=4" --policies hybrid --throughput-steps 1 \
    --calibration-steps 2 -- --eval-sequences 8 \
    >"$dir/log" 2>&1 || { tail -20 "$dir/log"; fail "tools/study failed"; }
}
study
grep -q "first the presets' throughput on the emulated cluster, 2 seeds, about" "$dir/log" ||
  fail "no estimate: $(head -2 "$dir/log")"
grep -q "^study: \[throughput 2/2\] seed 2" "$dir/log" || fail "no progress line"
/usr/bin/python3 - "$dir/study" <<'PY'
import json
import sys

out = sys.argv[1]
t = json.load(open(f"{out}/summary.json"))["throughput"]
assert t["network"].startswith("tools/netemu: 4 nodes x 2 ranks"), t
assert t["steps"] == 1 and set(t["policies"]) == {"baseline", "hybrid"}, t
for policy, c in t["policies"].items():
    assert c["seeds"] == [1, 2] and all(x > 0 for x in c["tokens_per_s"]), c
    assert c["ci95"] is not None and c["ci95"] >= 0, c
assert t["policies"]["baseline"]["speedups"] == [1.0, 1.0], t
readme = open(f"{out}/README.md").read()
assert "| hybrid | " in readme and "Throughput on tools/netemu" in readme, readme
commands = open(f"{out}/commands.txt").read()
assert commands.count("tools/experiment --out") == 2, commands
PY
study
grep -q "^study: \[throughput" "$dir/log" && fail "resumed study ran throughput again"
echo OK

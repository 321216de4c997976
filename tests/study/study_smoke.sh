#!/usr/bin/env bash
# `make study`'s pipeline end to end, small: tools/study with 2 steps, two seeds, one dimension,
# one codec and one preset writes a report with the gaps and their intervals, resumes without
# rerunning what is complete, and reruns a run whose output is incomplete.
#   study_smoke.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
study() {
  "$root/tools/study" --build "$build" --out "$dir/study" --steps 2 --seeds 1,2 --dims tp \
    --codecs "quant:bits=4;ef2+quant:bits=4" --policies hybrid --throughput-steps 0 -- --eval-sequences 8 >"$dir/log" 2>&1 ||
    { tail -20 "$dir/log"; fail "tools/study failed"; }
}
study
grep -q "^study: 6 runs, 0 done, 6 to go; expected" "$dir/log" || fail "$(head -3 "$dir/log")"
grep -q "^study: \[6/6\] policy-hybrid-s2" "$dir/log" || fail "no progress line"
/usr/bin/python3 - "$dir/study" <<'PY'
import json
import sys

out = sys.argv[1]
summary = json.load(open(f"{out}/summary.json"))
cells = {(c["dimension"], c["codec"]): c for c in summary["cells"]}
assert set(cells) == {("tp", "quant:bits=4")}, cells.keys()  # ef2+ is for gradients only
cell = cells[("tp", "quant:bits=4")]
assert cell["seeds"] == 2 and len(cell["gaps_percent"]) == 2, cell
assert cell["ci95_percent"] is not None and cell["ci95_percent"] >= 0, cell
assert 3.0 < cell["ratio"] < 3.3, cell  # quant:bits=4 on bf16 activations
assert len(summary["baseline"]["zero0"]["losses"]) == 2, summary["baseline"]
policies = {c["policy"]: c for c in summary["policies"]}
assert set(policies) == {"hybrid"} and policies["hybrid"]["seeds"] == 2, policies
wire = summary["wire_mb_per_step"]  # mean over the seeds of the baseline's and hybrid's bytes
assert set(wire) == {"baseline", "hybrid"} and set(wire["baseline"]) == {"dp", "tp", "pp", "embedding"}
assert wire["hybrid"]["dp"] < wire["baseline"]["dp"] / 2, wire
assert summary["throughput"]["policies"] == {}, summary["throughput"]
readme = open(f"{out}/README.md").read()
for text in ("| tp |", "`quant:bits=4`", "Baseline, ZeRO 0", "commands.txt", "| hybrid |",
             "loss_curves.png", "Throughput: not measured (--throughput-steps 0)",
             "![bytes per dimension](bytes.png)"):
    assert text in readme, f"README.md lacks {text!r}"
PY
[ "$(wc -l <"$dir/study/commands.txt")" -eq 6 ] || fail "commands.txt: $(cat "$dir/study/commands.txt")"
# Resumed: nothing to run. An incomplete run is run again.
study
grep -q "^study: 6 runs, 6 done, 0 to go" "$dir/log" || fail "resume: $(head -2 "$dir/log")"
head -n 1 "$dir/study/runs/tp-quant_bits_4-s1.jsonl" >"$dir/cut" && mv "$dir/cut" "$dir/study/runs/tp-quant_bits_4-s1.jsonl"
study
grep -q "^study: 6 runs, 5 done, 1 to go" "$dir/log" || fail "rerun: $(head -2 "$dir/log")"
# Another training recipe in the same directory is refused: it would mix runs.
if "$root/tools/study" --build "$build" --out "$dir/study" --steps 2 --seeds 1,2 --dims tp \
  --codecs "quant:bits=4" --policies hybrid --throughput-steps 0 -- --eval-sequences 16 \
  >"$dir/log" 2>&1; then
  fail "another recipe accepted"
fi
grep -q "holds runs of another recipe" "$dir/log" || fail "$(cat "$dir/log")"
if "$root/tools/study" --build "$build" --out "$dir/x" --seeds 1 >/dev/null 2>&1; then
  fail "one seed accepted"
fi
echo OK

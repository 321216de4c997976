#!/usr/bin/env bash
# hycc-policy: check warns about lossy rules without error feedback above the bound and about
# rules that never match, --strict turns warnings into exit 1, errors are exit 2 with the
# library's message; explain names the rule a call matches; list names the presets.
#   policy_tool.sh HYCC_POLICY
set -euo pipefail
tool="$1"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$tool" check hybrid >"$dir/hybrid.txt"
grep -q "^0 warnings$" "$dir/hybrid.txt" || fail "hybrid has warnings: $(cat "$dir/hybrid.txt")"
grep -q "bf16: ratio 2.00, relative error 0.00166" "$dir/hybrid.txt" || fail "bf16 not measured"

# No preset loses more than the bound without error feedback.
"$tool" list >"$dir/list.txt"
for preset in $(cut -d' ' -f1 "$dir/list.txt"); do
  "$tool" check "$preset" --strict >"$dir/preset.txt" || fail "$preset: $(cat "$dir/preset.txt")"
done

# The study's zfp:rate=4 on dp gradients, without error feedback.
cat >"$dir/study.toml" <<'TOML'
name = "study"
[[rule]]
dimension = "dp"
compressor = "zfp:rate=4"
[[rule]]
dimension = "zero_grad"
operation = "reduce_scatter"
compressor = "zfp:rate=4"
[[rule]]
dimension = "default"
compressor = "mpc"
TOML
"$tool" check "$dir/study.toml" >"$dir/mz.txt"
grep -q "^2 warnings$" "$dir/mz.txt" || fail "study: $(cat "$dir/mz.txt")"
grep -q "zfp:rate=4 loses more than 0.1 of the signal (0.969)" "$dir/mz.txt" || fail "no zfp warning"
if "$tool" check "$dir/study.toml" --strict >/dev/null; then fail "--strict ignored the warnings"; fi
"$tool" check naive --bound 0.05 >"$dir/naive.txt"  # to a file: grep -q in a pipe can end it early
grep -q "^1 warning$" "$dir/naive.txt" || fail "--bound 0.05 on naive"

cat >"$dir/shadowed.toml" <<'TOML'
name = "shadowed"
[[rule]]
dimension = "default"
compressor = "bf16"
[[rule]]
dimension = "dp"
operation = "allreduce"
compressor = "ef+quant:bits=2"
TOML
"$tool" check "$dir/shadowed.toml" >"$dir/shadowed.txt"
grep -q "never used: rule 1 matches every call it would" "$dir/shadowed.txt" ||
  fail "shadowed rule not reported: $(cat "$dir/shadowed.txt")"

printf 'name = "bad"\n[[rule]]\ndimension = "dq"\ncompressor = "bf16"\n' >"$dir/bad.toml"
set +e
"$tool" check "$dir/bad.toml" 2>"$dir/bad.err"
status=$?
set -e
[ "$status" -eq 2 ] || fail "a bad file exited $status"
grep -q "hycc-policy: .*bad.toml:3" "$dir/bad.err" || fail "no file:line: $(cat "$dir/bad.err")"

"$tool" explain hybrid --dim tp --op allreduce --bytes 4M >"$dir/explain.txt"
grep -q "rule 6 (hybrid.toml:[0-9]*) matches" "$dir/explain.txt" || fail "$(cat "$dir/explain.txt")"
grep -q -- "-> codec bf16" "$dir/explain.txt" || fail "$(cat "$dir/explain.txt")"
"$tool" explain hybrid --dim pp --op sendrecv --dtype bf16 >"$dir/bf16.txt"
grep -q "skipped: dtype is bf16, not f16" "$dir/bf16.txt" && fail "rule order: $(cat "$dir/bf16.txt")"
grep -q -- "-> codec exphuff:block=16384" "$dir/bf16.txt" || fail "$(cat "$dir/bf16.txt")"
"$tool" explain hybrid --dim tp --bytes 1K >"$dir/small.txt"
grep -q "below the threshold" "$dir/small.txt" || fail "threshold"
if "$tool" explain hybrid --dim tq 2>"$dir/dim.err"; then fail "unknown dimension accepted"; fi
grep -q "unknown dimension 'tq'" "$dir/dim.err" || fail "$(cat "$dir/dim.err")"
grep -q "^hybrid-mz " "$dir/list.txt" || fail "list"
echo OK

#!/usr/bin/env bash
# libhycc_mpi.so on unmodified programs (a C program, a Fortran program built with `use mpi` and
# with `use mpi_f08`, and an mpi4py script), 4 ranks:
#  1. with HYCC_POLICY=baseline every result is bit-identical to a run without the library;
#  2. with HYCC_POLICY=hybrid every result is within the bound, calls the library must leave
#     alone are exact, and the statistics (HYCC_LOG json) show compressed bytes;
#  3. with HYCC_POLICY=auto every result is within hybrid's bound and the links were measured.
# Then PowerSGD on the flat gradient buffer of an mpi4py training loop (dropin_powersgd.py): it
# compresses, and ends at the uncompressed run's loss; without error feedback it does not. Then
# HYCC_CHECK_ARGUMENTS (the argument agreement of the routed collectives).
# Usage: dropin_test.sh LIBHYCC_MPI DROPIN_PROGRAM SCRIPT_DIR [RANKS]
set -euo pipefail
lib=$1 program=$2 dir=$3 ranks=${4:-4}
work=$(mktemp -d /tmp/hycc-dropin.XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
mpi=(mpirun -n "$ranks" --oversubscribe --mca btl_vader_single_copy_mechanism none)
# Relative error allowed under hybrid: 6-bit quantization with error feedback on dp/zero
# gradients, summed over the ring's hops (at most p / 15 of the largest value); bf16 elsewhere.
bound=0.3
# Without compression: float32 rounding of the sums only.


same_results() {  # prefix-a prefix-b
  for r in $(seq 0 $((ranks - 1))); do
    if ! cmp -s "$1.rank$r" "$2.rank$r"; then
      echo "FAIL: rank $r results differ between $1 and $2"
      return 1
    fi
  done
}

check_stats() {  # json-file [dimension/operation=compressed-calls-per-rank...]
  /usr/bin/python3 "$dir/check_stats.py" "$ranks" "$@"
}

run_case() {  # name "expected compressed calls (check_stats)" command...
  local name=$1 calls=$2
  shift 2
  echo "== $name: without the library"
  "${mpi[@]}" "$@" "$work/$name-native" 1e-6 >"$work/$name-native.out" || {
    cat "$work/$name-native.out"; echo "FAIL: $name without the library"; return 1; }
  echo "== $name: HYCC_POLICY=baseline"
  "${mpi[@]}" -x LD_PRELOAD="$lib" -x HYCC_POLICY=baseline -x HYCC_LOG=summary \
    "$@" "$work/$name-baseline" 1e-6 2>"$work/$name-baseline.err"
  grep -q "policy 'baseline'" "$work/$name-baseline.err" || {
    cat "$work/$name-baseline.err"; echo "FAIL: the library did not report (not loaded?)"; return 1; }
  same_results "$work/$name-native" "$work/$name-baseline"
  echo "   bit-identical to the run without the library"
  echo "== $name: HYCC_POLICY=hybrid"
  "${mpi[@]}" -x LD_PRELOAD="$lib" -x HYCC_POLICY=hybrid -x HYCC_SAMPLE_ERROR=1 \
    -x HYCC_LOG="summary,json=$work/$name-hybrid.json" "$@" "$work/$name-hybrid" "$bound"
  check_stats "$work/$name-hybrid.json" $calls
  # auto chooses among hybrid's compressors and milder ones, so hybrid's bound holds; which
  # candidate wins depends on the measured links, so only the measuring is checked.
  echo "== $name: HYCC_POLICY=auto"
  "${mpi[@]}" -x LD_PRELOAD="$lib" -x HYCC_POLICY=auto -x HYCC_LOG=decisions \
    "$@" "$work/$name-auto" "$bound" 2>"$work/$name-auto.err"
  grep -q "modelled on links of" "$work/$name-auto.err" || {
    cat "$work/$name-auto.err"; echo "FAIL: $name under auto measured nothing"; return 1; }
  echo "   within the bound; the links were measured and the candidates modelled"
}

# The C program: MPI_Reduce_scatter_block and MPI_Reduce_scatter twice each on zero, two
# MPI_Allgather and three MPI_Allgatherv (a fourth, counts two apart, is MPI's own); 23 float
# messages a rank on pp (sendrecv, two isends, six send modes, eight in four persistent rounds,
# two probed, three matched-probed, one blocking send).
run_case c "zero_grad/reduce_scatter=4 zero_param/allgather=5 pp/sendrecv=151" "$program"
# The Fortran program, built here with Open MPI's wrapper compiler (gfortran underneath).
if command -v mpif90 >/dev/null && command -v gfortran >/dev/null; then
  for binding in mpi f08; do
    flags=()
    [ "$binding" = f08 ] && flags=(-DHYCC_F08)
    mpif90 -O1 "${flags[@]}" "$dir/dropin_program.F90" -o "$work/fortran-$binding" \
      -J "$work" || { echo "FAIL: the Fortran program ($binding) does not build"; exit 1; }
    # Two MPI_Reduce_scatter_block and one MPI_Reduce_scatter; two MPI_Allgather, one
    # MPI_Iallgather, one MPI_Allgatherv and one MPI_Iallgatherv; 15 float messages a rank on pp
    # (four in two persistent rounds, one matched-probed).
    run_case "fortran-$binding" \
      "zero_grad/reduce_scatter=3 zero_param/allgather=5 pp/sendrecv=15" \
      "$work/fortran-$binding"
  done
else
  echo "FAIL: gfortran and mpif90 are needed (scripts/setup-deps installs them)"
  exit 1
fi
if /usr/bin/python3 -c "import mpi4py, numpy" 2>/dev/null; then
  # Four float messages a rank on pp: a send, two persistent rounds, one matched-probed.
  run_case mpi4py "zero_grad/reduce_scatter=2 zero_param/allgather=2 pp/sendrecv=4" \
    /usr/bin/python3 "$dir/dropin_mpi4py.py"
else
  echo "FAIL: python3-mpi4py and python3-numpy are needed (scripts/setup-deps installs them)"
  exit 1
fi

powersgd_loss() {  # name compressor: runs dropin_powersgd.py under that dp rule, prints the loss
  printf 'name = "dp-%s"\nthreshold = 0\n[[rule]]\ndimension = "dp"\noperation = "allreduce"\ncompressor = "%s"\n' \
    "$1" "$2" >"$work/$1.toml"
  "${mpi[@]}" -x LD_PRELOAD="$lib" -x HYCC_POLICY="$work/$1.toml" \
    -x HYCC_LOG="summary,json=$work/$1.json" /usr/bin/python3 "$dir/dropin_powersgd.py" |
    sed -n 's/^loss //p'
}
echo "== powersgd on a flat gradient buffer (mpi4py training loop)"
exact=$("${mpi[@]}" /usr/bin/python3 "$dir/dropin_powersgd.py" | sed -n 's/^loss //p')
lowrank=$(powersgd_loss powersgd "powersgd:rank=4")
no_ef=$(powersgd_loss powersgd-no-ef "powersgd:rank=4,ef=off")
echo "   final loss: uncompressed $exact, powersgd:rank=4 $lowrank, without error feedback $no_ef"
/usr/bin/python3 - "$exact" "$lowrank" "$no_ef" "$work/powersgd.json" <<'PY'
import json, sys
exact, lowrank, no_ef = (float(v) for v in sys.argv[1:4])
assert lowrank <= 1.01 * exact, f"powersgd ends at {lowrank}, uncompressed {exact}"
assert no_ef > 1.01 * exact, f"without error feedback it ends at {no_ef}: the check cannot fail"
s = json.load(open(sys.argv[4]))
dp = {(e["dimension"], e["operation"]): e for e in s["statistics"]["entries"]}[("dp", "allreduce")]
assert dp["compressed_calls"] == dp["calls"] > 0 and dp["wire_bytes"] * 4 < dp["raw_bytes"], dp
print(f"   compressed {dp['raw_bytes'] / dp['wire_bytes']:.2f}x")
PY
# HYCC_CHECK_ARGUMENTS: rank 0's policy has threshold 1001 bytes, the others' 1002 (the same
# for float messages, whose sizes are multiples of 4, but not the same arguments). The routed
# collectives' agreement refuses the call by default; with never there is none, and the results
# are those of agreeing policies. A bad value stops the job at MPI_Init.
echo "== HYCC_CHECK_ARGUMENTS: policies whose thresholds differ across ranks"
for t in 1001 1002; do
  printf 'name = "bf16-%s"
threshold = %s
[[rule]]
dimension = "default"
compressor = "bf16"
' \
    "$t" "$t" >"$work/bf16-$t.toml"
done
mixed() {  # output-prefix [-x VAR=value...]: rank 0 under bf16-1001, the others under bf16-1002
  local out=$1
  shift
  # Every app context names its own -x options (Open MPI gives those before the first context to
  # that context only).
  local env=(-x LD_PRELOAD="$lib" -x HYCC_LOG=off "$@")
  timeout 300 mpirun --oversubscribe --mca btl_vader_single_copy_mechanism none \
    -n 1 "${env[@]}" -x HYCC_POLICY="$work/bf16-1001.toml" "$program" "$out" "$bound" : \
    -n $((ranks - 1)) "${env[@]}" -x HYCC_POLICY="$work/bf16-1002.toml" "$program" "$out" "$bound"
}
"${mpi[@]}" -x LD_PRELOAD="$lib" -x HYCC_LOG=off -x HYCC_POLICY="$work/bf16-1001.toml" \
  "$program" "$work/agreeing" "$bound" >/dev/null
if mixed "$work/checked" >"$work/checked.out" 2>&1; then
  echo "FAIL: ranks with different thresholds were not refused"; exit 1
fi
grep -q "disagree on the arguments of .*threshold_bytes" "$work/checked.out" || {
  cat "$work/checked.out"; echo "FAIL: no disagreement on threshold_bytes reported"; exit 1; }
echo "   refused by default: $(grep -o -m1 'ranks disagree[^;]*' "$work/checked.out")"
mixed "$work/unchecked" -x HYCC_CHECK_ARGUMENTS=never >/dev/null
same_results "$work/agreeing" "$work/unchecked"
echo "   with HYCC_CHECK_ARGUMENTS=never: the results of agreeing policies, bit for bit"
refused() {  # VARIABLE=value "the message": the job stops at MPI_Init with that message
  if "${mpi[@]}" -x LD_PRELOAD="$lib" -x "$1" "$program" "$work/bad" "$bound" \
    >"$work/bad.out" 2>&1; then
    echo "FAIL: $1 accepted"; exit 1
  fi
  grep -q "$2" "$work/bad.out" || { cat "$work/bad.out"; echo "FAIL: no message for $1"; exit 1; }
  echo "   $1 stops the job at MPI_Init, naming the variable"
}
refused HYCC_CHECK_ARGUMENTS=sometimes \
  "HYCC_CHECK_ARGUMENTS 'sometimes' is not one of auto, always, never"
refused HYCC_PROGRESS=always "HYCC_PROGRESS=always: expected auto, thread or off"
refused HYCC_DEVICE_CODECS=on "HYCC_DEVICE_CODECS=on: expected auto"
refused HYCC_TOPOLOGY=ranks-per-node=0 "HYCC_TOPOLOGY 'ranks-per-node=0': ranks per node must be"
# HYCC_COMM_NAMES: the program's communicator names read as dimensions. MPI_COMM_WORLD=dp puts
# the program's allreduce on MPI_COMM_WORLD (dimension other, bf16, without it) under dp's
# gradient rule, as a data-parallel program that never names a communicator would want;
# @world=dp its allreduce on an unnamed duplicate of MPI_COMM_WORLD too (Horovod reduces on
# one), while the communicators it named keep their names.
for names in MPI_COMM_WORLD=dp @world=dp; do
  echo "== HYCC_COMM_NAMES=$names"
  "${mpi[@]}" -x LD_PRELOAD="$lib" -x HYCC_POLICY=hybrid -x HYCC_COMM_NAMES="$names" \
    -x HYCC_LOG="json=$work/names.json" "$program" "$work/names" "$bound" >/dev/null
  /usr/bin/python3 - "$work/c-hybrid.json" "$work/names.json" "$ranks" "$names" <<'PY'
import json, sys
def rows(path):
    s = json.load(open(path))
    return {(e["dimension"], e["operation"]): e for e in s["statistics"]["entries"]}
plain, named = rows(sys.argv[1]), rows(sys.argv[2])
ranks, names = int(sys.argv[3]), sys.argv[4]
keys = ("calls", "compressed_calls", "message_bytes", "wire_bytes")
# Unnamed: the allreduces on MPI_COMM_WORLD and on its duplicate, bf16 under hybrid.
other = plain[("other", "allreduce")]
left = named.get(("other", "allreduce"), dict.fromkeys(keys, 0))
moved = {k: other[k] - left[k] for k in keys}
assert moved["calls"] == ranks * (2 if names.startswith("@world") else 1), (names, other, left)
dp, dp_named = plain[("dp", "allreduce")], named[("dp", "allreduce")]
for k in ("calls", "compressed_calls", "message_bytes"):
    assert dp_named[k] == dp[k] + moved[k], (k, dp, dp_named, moved)
# 6-bit quantization instead of bf16: fewer bytes for the same calls.
assert dp_named["wire_bytes"] < dp["wire_bytes"] + moved["wire_bytes"], (dp_named, dp, moved)
# The named communicators keep their dimensions.
for key in (("tp", "allreduce"), ("zero_grad", "reduce_scatter"), ("pp", "sendrecv")):
    assert named[key]["calls"] == plain[key]["calls"], (key, plain[key], named[key])
print(f"   {moved['calls'] // ranks} allreduce(s) a rank counted under dp instead of other")
PY
done
refused HYCC_COMM_NAMES=MPI_COMM_WORLD=data \
  "HYCC_COMM_NAMES: 'MPI_COMM_WORLD=data': 'data' is not a dimension"
echo "dropin: OK"

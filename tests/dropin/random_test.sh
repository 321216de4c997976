#!/usr/bin/env bash
# dropin_random_program.c (random sequences of every routed call, checked bit for bit) without
# the library, then under libhycc_mpi.so and random_policy.toml, for each seed; under the
# library the statistics must show compressed calls on every named communicator.
# Usage: random_test.sh LIBHYCC_MPI PROGRAM POLICY RANKS CALLS SEED...
set -euo pipefail
lib=$1 program=$2 policy=$3 ranks=$4 calls=$5
shift 5
work=$(mktemp -d /tmp/hycc-random.XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
mpi=(mpirun -n "$ranks" --oversubscribe --mca btl_vader_single_copy_mechanism none)
for seed in "$@"; do
  echo "== seed $seed, $ranks ranks, $calls calls: without the library"
  "${mpi[@]}" "$program" "$seed" "$calls"
  echo "== seed $seed: under the library"
  "${mpi[@]}" -x LD_PRELOAD="$lib" -x HYCC_POLICY="$policy" \
    -x HYCC_LOG="summary,json=$work/$seed.json" "$program" "$seed" "$calls"
  /usr/bin/python3 - "$work/$seed.json" <<'PY'
import json, sys
entries = json.load(open(sys.argv[1]))["statistics"]["entries"]
compressed = {e["dimension"] for e in entries if e["compressed_calls"] > 0}
want = {"dp", "tp", "pp", "zero_grad", "zero_param", "embedding"}
assert want <= compressed, f"no compressed calls on {sorted(want - compressed)}"
print("compressed calls on", ", ".join(sorted(compressed)))
PY
done
echo "dropin random: all seeds OK"

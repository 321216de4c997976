#!/usr/bin/env bash
# The drop-in library is invisible under every lossless policy: transparency_program.c writes
# down what an MPI program can observe of every call the library intercepts (results, every
# byte of every buffer, statuses, request completion, error classes), without the library and
# under it with each lossless policy at threshold 0 (one rule on the `default` dimension, so
# every routed call is hycc's: mpc, zstd, none; and the baseline preset), at each rank count;
# each run's observations must equal those without the library byte for byte.
# Usage: transparency_test.sh LIBHYCC_MPI PROGRAM RANKS... (MPIEXEC: the launcher, default
# Open MPI's mpirun; POLICIES: the policies, default "mpc zstd none baseline"; MPI_PRELOAD:
# libraries preloaded into every run, the one without the library too)
set -euo pipefail
lib=$1 program=$2
shift 2
work=$(mktemp -d /tmp/hycc-transparency.XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
launcher=${MPIEXEC:-mpirun}
if [[ $launcher == *mpich* ]]; then
  mpich=1 mpi=(timeout 600 "$launcher")
  export HYDRA_LAUNCHER=fork
else
  mpich=0 mpi=(timeout 600 "$launcher" --oversubscribe --mca btl_vader_single_copy_mechanism none)
fi

run() {  # ranks output-prefix [policy]: the program, under the library when a policy is given
  local ranks=$1 out=$2 policy=${3:-}
  local preload=${MPI_PRELOAD:-}
  if [ -n "$policy" ]; then
    preload="$lib${preload:+ $preload}"
  fi
  if [ $mpich = 1 ]; then  # Hydra passes its environment on
    LD_PRELOAD=$preload HYCC_POLICY=$policy HYCC_LOG=summary \
      "${mpi[@]}" -n "$ranks" "$program" "$out"
  elif [ -z "$preload" ]; then
    "${mpi[@]}" -n "$ranks" "$program" "$out"
  else
    "${mpi[@]}" -n "$ranks" -x LD_PRELOAD="$preload" -x HYCC_POLICY="$policy" -x HYCC_LOG=summary \
      "$program" "$out"
  fi
}

for codec in mpc zstd none; do
  cat >"$work/$codec.toml" <<EOF
name = "transparency-$codec"
threshold = 0

[[rule]]
dimension = "default"
compressor = "$codec"
EOF
done

passed=0 failed=0
for ranks in "$@"; do
  echo "== $ranks ranks: without the library"
  run "$ranks" "$work/native-$ranks" >/dev/null || {
    echo "FAIL: the program without the library at $ranks ranks"; exit 1; }
  for policy in ${POLICIES:-mpc zstd none baseline}; do
    file=$policy
    [ "$policy" = baseline ] || file=$work/$policy.toml
    if ! run "$ranks" "$work/$policy-$ranks" "$file" >"$work/$policy-$ranks.out" 2>&1; then
      tail -20 "$work/$policy-$ranks.out"
      echo "FAIL: $ranks ranks under $policy: the program stopped"
      failed=$((failed + 1))
      continue
    fi
    grep -q "policy 'transparency-$policy'\|policy '$policy'" "$work/$policy-$ranks.out" || {
      cat "$work/$policy-$ranks.out"; echo "FAIL: the library did not report (not loaded?)"; exit 1; }
    same=1
    for ((r = 0; r < ranks; ++r)); do
      if ! cmp -s "$work/native-$ranks.rank$r" "$work/$policy-$ranks.rank$r"; then
        echo "FAIL: $ranks ranks under $policy: rank $r observed another thing than without the library:"
        diff "$work/native-$ranks.rank$r" "$work/$policy-$ranks.rank$r" | head -12
        same=0
      fi
    done
    if [ $same = 1 ]; then
      echo "   under $policy: the same $(wc -l <"$work/native-$ranks.rank0") observations on every rank"
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
    fi
  done
done
echo "transparency: $passed passed, $failed failed"
[ "$failed" = 0 ]

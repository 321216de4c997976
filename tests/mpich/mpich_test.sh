#!/usr/bin/env bash
# hycc built against MPICH instead of Open MPI (docs/dropin.md, "MPI implementations"): the
# library and the drop-in library compile against MPICH's mpi.h (its handles are integers, Open
# MPI's pointers), and the drop-in test programs run under MPICH's launcher with
# LD_PRELOAD=libhycc_mpi.so and HYCC_POLICY=hybrid, 4 ranks:
#  - the C program and the Fortran program (mpif.h and mpi_f08, built with MPICH's mpif90):
#    every result within the bound, calls the library leaves alone exact (the programs check),
#    and the statistics count every routed call of each program as compressed;
#  - the MPI 4 program (the large-count MPI_Allreduce_c, ..., which mpi4py 4 makes, and
#    MPI_Isendrecv): each _c call the same bits as its int form, and counted as compressed;
#  - the nonblocking program, the threads program (MPI_THREAD_MULTIPLE), the progress program
#    (HYCC_PROGRESS=thread: the progress thread, the communicators' workers, generalized
#    requests), the device-buffer program and the random program on host and device buffers
#    (checks of their own);
#  - the transparency program (tests/dropin/transparency_test.sh) at 2, 3 and 4 ranks.
# Every MPICH run preloads tests/mpich/yield_when_idle.c, which yields the core where MPICH's
# device would poll through its time slice (the ranks outnumber the cores).
# The programs' results are checked against the values they know, not against a run without
# the library: MPICH 4.0.2's own runs of them stop in MPI_Reduce_scatter with MPI_IN_PLACE.
# With --full, also hycc's MPI test suite (hycc_mpi_tests) at 1 to 4 ranks; with --build-only, the
# build and nothing else (make test builds it behind the Release suite: scripts/build-behind).
# Usage: mpich_test.sh BUILD_DIR [JOBS] [--full | --build-only]
set -euo pipefail
build=$1 jobs=${2:-2} mode=${3:-}
case $mode in
  "" | --full | --build-only) ;;
  *) echo "usage: mpich_test.sh BUILD_DIR [JOBS] [--full | --build-only]" >&2; exit 2 ;;
esac
src=$(cd "$(dirname "$0")/../.." && pwd)
for tool in mpicc.mpich mpicxx.mpich mpif90.mpich mpiexec.mpich; do
  command -v "$tool" >/dev/null || {
    echo "FAIL: $tool not found (scripts/setup-deps installs mpich and libmpich-dev)"; exit 1; }
done

targets=(hycc_mpi dropin_program dropin_nonblocking_program dropin_device_program
  dropin_mpi4_program dropin_threads_program dropin_progress_program dropin_random_program
  dropin_random_device_program transparency_program)
[ "$mode" = --full ] && targets+=(hycc_mpi_tests)
echo "== build against $(mpichversion | head -1 | tr -s ' \t' ' ') in $build"
mkdir -p "$build"
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DHYCC_WERROR=ON -DHYCC_WITH_CUDA=OFF \
  -DMPI_C_COMPILER="$(command -v mpicc.mpich)" -DMPI_CXX_COMPILER="$(command -v mpicxx.mpich)" \
  -DMPIEXEC_EXECUTABLE="$(command -v mpiexec.mpich)" >"$build/configure.log" 2>&1 || {
  cat "$build/configure.log"; echo "FAIL: configure against MPICH"; exit 1; }
grep -q "^MPI_C_LIB_NAMES:STRING=mpich$" "$build/CMakeCache.txt" || {
  grep "^MPI_C_LIB_NAMES" "$build/CMakeCache.txt"; echo "FAIL: the build did not take MPICH"; exit 1; }
cmake --build "$build" -j "$jobs" --target "${targets[@]}"
lib=$build/lib/libhycc_mpi.so
# (ldd's output read whole: `ldd | grep -q` under pipefail fails when grep stops reading early.)
ldd "$lib" >"$build/ldd.txt"
grep -q libmpich "$build/ldd.txt" || { echo "FAIL: $lib is not linked to MPICH"; exit 1; }
# Preloaded into every MPICH run: yields the core when a poll made no progress (the ranks
# outnumber the cores here; tests/mpich/yield_when_idle.c).
yield=$build/lib/libyield_when_idle.so
cc -O2 -Wall -Wextra -Werror -shared -fPIC "$src/tests/mpich/yield_when_idle.c" -o "$yield" -ldl
[ "$mode" = --build-only ] && exit 0

work=$(mktemp -d /tmp/hycc-mpich.XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1 HYDRA_LAUNCHER=fork
ranks=4
passed=0 # every check exits on failure
mpi=(timeout 300 mpiexec.mpich -n "$ranks")

run_hybrid() {  # name "compressed calls (check_stats.py)" program
  echo "== $1 under HYCC_POLICY=hybrid"
  LD_PRELOAD="$lib $yield" HYCC_POLICY=hybrid HYCC_SAMPLE_ERROR=1 \
    HYCC_LOG="summary,json=$work/$1.json" "${mpi[@]}" "$3" "$work/$1" 0.3 >"$work/$1.out" 2>&1 || {
    cat "$work/$1.out"; echo "FAIL: $1 under MPICH"; exit 1; }
  grep -q "policy 'hybrid'" "$work/$1.out" || {
    cat "$work/$1.out"; echo "FAIL: the library did not report (not loaded?)"; exit 1; }
  grep -E "(dropin_program(_fortran)?|dropin mpi4): OK" "$work/$1.out"
  # shellcheck disable=SC2086
  /usr/bin/python3 "$src/tests/dropin/check_stats.py" "$ranks" "$work/$1.json" $2
  passed=$((passed + 1))
}

# The same expected counts as tests/dropin/dropin_test.sh.
run_hybrid c "zero_grad/reduce_scatter=4 zero_param/allgather=5 pp/sendrecv=151" \
  "$build/bin/dropin_program"
for binding in mpi f08; do
  flags=()
  [ "$binding" = f08 ] && flags=(-DHYCC_F08)
  mpif90.mpich -O1 "${flags[@]}" "$src/tests/dropin/dropin_program.F90" \
    -o "$work/fortran-$binding" -J "$work" 2>"$work/fortran-$binding.build" || {
    cat "$work/fortran-$binding.build"; echo "FAIL: the Fortran program ($binding)"; exit 1; }
  run_hybrid "fortran-$binding" \
    "zero_grad/reduce_scatter=3 zero_param/allgather=5 pp/sendrecv=15" "$work/fortran-$binding"
done

# MPI 4's calls: each _c call the same bits as its int form, both counted as compressed (twice
# the calls of each; the persistent collectives as many again: two rounds against two calls),
# point to point mixing the forms, persistent requests (two rounds of five), matched receives
# (two) and MPI_Isendrecv (35.5 sends a rank: a shift without wrap-around each way has 2 (p - 1)
# sends).
run_hybrid mpi4 \
  "dp/allreduce=8 zero_grad/reduce_scatter=16 zero_param/allgather=16 tp/alltoall=8 pp/sendrecv=35.5" \
  "$build/bin/dropin_mpi4_program"
run_checked() {  # name policy log "the OK line" program [arguments]: a program that checks
  echo "== the $1 program"   # its own results
  LD_PRELOAD="$lib $yield" HYCC_POLICY=$2 HYCC_LOG=$3 \
    "${mpi[@]}" "${@:5}" >"$work/$1.out" 2>&1 || {
    cat "$work/$1.out"; echo "FAIL: the $1 program under MPICH"; exit 1; }
  grep "$4" "$work/$1.out"
  passed=$((passed + 1))
}
# The nonblocking program reads back the warnings the library writes (HYCC_LOG's default).
run_checked nonblocking "$src/tests/dropin/nonblocking_policy.toml" summary \
  "dropin nonblocking: OK" "$build/bin/dropin_nonblocking_program"
run_checked threads hybrid off "dropin threads: OK" "$build/bin/dropin_threads_program"
HYCC_PROGRESS=thread run_checked progress "$src/tests/dropin/progress_policy.toml" off \
  "dropin progress: OK" "$build/bin/dropin_progress_program"
# The device-buffer program runs with a stand-in CUDA driver.
run_checked device-buffer hybrid off "dropin device: OK" "$build/bin/dropin_device_program"
# Random sequences of every routed call, checked bit for bit (host, then device buffers).
run_checked random "$src/tests/dropin/random_policy.toml" off "dropin random: OK" \
  "$build/bin/dropin_random_program" 5 150
run_checked random-device "$src/tests/dropin/random_policy.toml" off "dropin random: OK" \
  "$build/bin/dropin_random_device_program" 6 150

# What a program observes of every intercepted call, byte for byte as without the library
# (tests/dropin/transparency_test.sh): under each lossless policy at 2 and 3 ranks, under mpc
# at 4 (a run of the program: 2 s at 2 ranks, 5 s at 3, 6 s at 4, on 2 cores); Open MPI's ctest
# dropin_transparency runs every policy at each.
for case in "2 mpc zstd none baseline" "3 mpc zstd none baseline" "4 mpc"; do
  read -r n policies <<<"$case"
  echo "== the transparency program, $n ranks"
  MPIEXEC=mpiexec.mpich MPI_PRELOAD=$yield POLICIES=$policies \
    "$src/tests/dropin/transparency_test.sh" "$lib" \
    "$build/bin/transparency_program" "$n" >"$work/transparency-$n.out" 2>&1 || {
    cat "$work/transparency-$n.out"; echo "FAIL: the transparency program under MPICH"; exit 1; }
  grep "transparency:" "$work/transparency-$n.out"
  passed=$((passed + 1))
done

if [ "$mode" = --full ]; then
  for n in 1 2 3 4; do
    echo "== hycc_mpi_tests, $n ranks"
    LD_PRELOAD=$yield timeout 1200 mpiexec.mpich -n "$n" "$build/bin/hycc_mpi_tests" \
      >"$work/mpi-$n.out" 2>&1 || {
      tail -50 "$work/mpi-$n.out"; echo "FAIL: hycc_mpi_tests at $n ranks under MPICH"; exit 1; }
    grep -E "^\[  (PASSED|SKIPPED|FAILED)  \] [0-9]" "$work/mpi-$n.out"
    passed=$((passed + 1))
  done
fi
echo "mpich: OK"
echo "mpich: $passed passed, 0 failed"

#!/usr/bin/env bash
# The drop-in library's threads under ThreadSanitizer: libhycc_mpi.so and the two programs that
# run it on several threads at once are built with -fsanitize=thread and run on 4 ranks (Open
# MPI, as `make test` does):
#  - dropin_threads_program: five threads of the program calling MPI at once, each on its own
#    communicator (HYCC_POLICY=hybrid);
#  - dropin_progress_program: the library's own threads (HYCC_PROGRESS=thread: the progress
#    thread of the two-stage allreduces, the communicators' workers) beside the program's.
# Each program must print its OK line and TSan must report nothing. Open MPI is not
# instrumented, so reports with a frame in it are suppressed (tests/tsan/mpi.supp says why);
# what remains are races and lock-order inversions among the library's and the program's own
# accesses. Not part of `make test` (about 7 minutes on 2 cores, the build most of it): `make
# test-tsan`.
# Usage: tsan_test.sh BUILD_DIR [JOBS]
set -euo pipefail
build=$(realpath -m "${1:?usage: tsan_test.sh BUILD_DIR [JOBS]}") jobs=${2:-2}
src=$(cd "$(dirname "$0")/../.." && pwd)

echo "== build with -fsanitize=thread in $build"
mkdir -p "$build"
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHYCC_WITH_CUDA=OFF \
  -DCMAKE_C_FLAGS=-fsanitize=thread -DCMAKE_CXX_FLAGS=-fsanitize=thread \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread \
  >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; echo "FAIL: configure"; exit 1; }
cmake --build "$build" -j "$jobs" --target hycc_mpi dropin_threads_program dropin_progress_program

work=$(mktemp -d /tmp/hycc-tsan.XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
failed=0

run() {  # name "OK line" program [mpirun -x options]
  local name=$1 ok=$2 program=$3
  shift 3
  echo "== $name"
  local start=$SECONDS rc=0
  timeout 1500 mpirun -n 4 --oversubscribe --mca btl_vader_single_copy_mechanism none \
    -x LD_PRELOAD="$build/lib/libhycc_mpi.so" -x HYCC_LOG=summary "$@" \
    -x TSAN_OPTIONS="log_path=$work/$name exitcode=0 report_signal_unsafe=0 ignore_noninstrumented_modules=1 suppressions=$src/tests/tsan/mpi.supp" \
    "$build/bin/$program" >"$work/$name.out" 2>&1 || rc=$?
  local reports
  reports=$(cat "$work/$name".[0-9]* 2>/dev/null | grep -c "^WARNING: ThreadSanitizer" || true)
  echo "   rc $rc, $((SECONDS - start)) s, ThreadSanitizer reports: $reports"
  if [[ $rc -ne 0 ]] || ! grep -q "$ok" "$work/$name.out"; then
    tail -30 "$work/$name.out"
    echo "FAIL: $name did not finish with '$ok'"
    failed=1
  fi
  if [[ $reports -ne 0 ]]; then
    cat "$work/$name".[0-9]* | grep -A40 "^WARNING: ThreadSanitizer" | head -200
    echo "FAIL: $name: $reports ThreadSanitizer reports"
    failed=1
  fi
}

run threads "dropin threads: OK" dropin_threads_program -x HYCC_POLICY=hybrid
run progress "dropin progress: OK" dropin_progress_program \
  -x HYCC_POLICY="$src/tests/dropin/progress_policy.toml" -x HYCC_PROGRESS=thread

[[ $failed -eq 0 ]] || exit 1
echo "tsan: OK (no reports in either program)"

#!/usr/bin/env bash
# hycc as installed (cmake --install; docs/install.md), used the ways a program built elsewhere
# uses it, from a copy of the installed tree moved to another directory (nothing may point back
# into the build or the first prefix):
#   1. every file where docs/install.md says;
#   2. a CMake project (tests/install/consumer) with find_package(hycc): a C++ program on
#      hycc::hycc and hycc's C test program on hycc::hycc_c, run on 2 ranks; then examples/,
#      built the same way, each example run (the Python one with the installed package);
#   3. the C test program again, compiled with mpicc and `pkg-config hycc_c`;
#   4. an MPI program that knows nothing of hycc, under LD_PRELOAD of the installed
#      libhycc_mpi.so and HYCC_POLICY=hybrid: its dp allreduces must be compressed;
#   5. the installed Python package, loading the installed libhycc_c.so;
#   6. the installed tools start.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR LIBDIR PYTHONDIR MPICC MPIEXEC
# Prints "install: OK" when every step passed.
set -euo pipefail
build=$1 src=$2 libdir=$3 pydir=$4 mpicc=$5 mpiexec=$6
work=$(mktemp -d /tmp/hycc-install-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
run() { "$mpiexec" -n 2 --oversubscribe --mca btl_vader_single_copy_mechanism none "$@"; }
fail() { echo "install: FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$work/first" >"$work/install.log" ||
  { cat "$work/install.log"; fail "cmake --install"; }
mv "$work/first" "$work/moved"
prefix=$work/moved
unset HYCC_LIBRARY LD_LIBRARY_PATH PYTHONPATH

echo "== 1. the installed files"
for f in include/hycc/hycc.h include/hycc/collectives.h include/hycc/config.h \
  "$libdir/libhycc.a" "$libdir/libhycc_c.so" "$libdir/libhycc_mpi.so" \
  "$libdir/cmake/hycc/hyccConfig.cmake" "$libdir/cmake/hycc/hyccConfigVersion.cmake" \
  "$libdir/pkgconfig/hycc_c.pc" bin/hycc-bench bin/hycc-sim bin/hycc-train \
  "$pydir/hycc/__init__.py" "$pydir/hycc/ddp.py" "$pydir/hycc/_installed.py"; do
  [ -e "$prefix/$f" ] || fail "$f is not installed"
done
if grep -rl --binary-files=without-match -e "$build" -e "$work/first" "$prefix" | grep .; then
  fail "the files above name the build directory or the first prefix"
fi

echo "== 2. a CMake project: find_package(hycc)"
cmake -S "$src/tests/install/consumer" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DMPI_C_COMPILER="$mpicc" \
  -DCAPI_PROGRAM="$src/tests/capi/capi_program.c" >"$work/configure.log" ||
  { cat "$work/configure.log"; fail "configuring the consumer project"; }
cmake --build "$work/consumer" -j 2 >"$work/build.log" ||
  { cat "$work/build.log"; fail "building the consumer project"; }
run "$work/consumer/consumer_cxx" | tee "$work/cxx.out"
grep -q "consumer_cxx .*: OK" "$work/cxx.out" || fail "the C++ program"
run "$work/consumer/consumer_c" | tee "$work/c.out"
grep -q "capi: OK" "$work/c.out" || fail "the C program (CMake)"

echo "== 2b. the examples (examples/), built the same way"
cmake -S "$src/examples" -B "$work/examples" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DMPI_C_COMPILER="$mpicc" >"$work/examples.log" ||
  { cat "$work/examples.log"; fail "configuring the examples"; }
cmake --build "$work/examples" -j 2 >>"$work/examples.log" ||
  { cat "$work/examples.log"; fail "building the examples"; }
"$work/examples/codecs" | tee "$work/codecs.out"
grep -q "codecs: OK" "$work/codecs.out" || fail "examples/codecs"
run "$work/examples/allreduce" | tee "$work/allreduce.out"
grep -q "allreduce: OK" "$work/allreduce.out" || fail "examples/allreduce"
run "$work/examples/c_api" | tee "$work/c_api.out"
grep -q "c_api: OK" "$work/c_api.out" || fail "examples/c_api"
PYTHONPATH=$prefix/$pydir run -x PYTHONPATH /usr/bin/python3 "$src/examples/allreduce.py" |
  tee "$work/allreduce_py.out"
grep -q "allreduce.py: OK" "$work/allreduce_py.out" || fail "examples/allreduce.py"

echo "== 3. pkg-config hycc_c"
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
version=$(sed -n 's/.*HYCC_VERSION "\(.*\)"/\1/p' "$prefix/include/hycc/config.h")
[ "$(pkg-config --modversion hycc_c)" = "$version" ] || fail "pkg-config's version is not $version"
# shellcheck disable=SC2046  # the flags are words
"$mpicc" -std=c11 -Wall -o "$work/capi_pc" "$src/tests/capi/capi_program.c" \
  $(pkg-config --cflags --libs hycc_c) -Wl,-rpath,"$prefix/$libdir" -lm
run "$work/capi_pc" | tee "$work/pc.out"
grep -q "capi: OK" "$work/pc.out" || fail "the C program (pkg-config)"

echo "== 4. the drop-in library under an unmodified MPI program"
"$mpicc" -std=c11 -O2 -o "$work/plain_mpi" "$src/tests/install/plain_mpi.c" -lm
HYCC_POLICY=hybrid HYCC_LOG="summary,json=$work/stats.json" \
  run -x LD_PRELOAD="$prefix/$libdir/libhycc_mpi.so" -x HYCC_POLICY -x HYCC_LOG \
  "$work/plain_mpi" | tee "$work/plain.out"
grep -q "plain_mpi: OK" "$work/plain.out" || fail "the MPI program under the drop-in library"
/usr/bin/python3 - "$work/stats.json" <<'PY'
import json, sys
rows = {(e["dimension"], e["operation"]): e for e in json.load(open(sys.argv[1]))["statistics"]["entries"]}
dp = rows[("dp", "allreduce")]
assert dp["compressed_calls"] == dp["calls"] == 40 and 3 * dp["wire_bytes"] < dp["raw_bytes"], dp
print("drop-in: 40 dp allreduces compressed, ratio %.2f" % (dp["raw_bytes"] / dp["wire_bytes"]))
PY

echo "== 5. the Python package"
PYTHONPATH=$prefix/$pydir /usr/bin/python3 - "$prefix/$libdir/libhycc_c.so" <<'PY'
import os, sys
import numpy as np
import hycc
import hycc._lib
assert os.path.realpath(hycc._lib.lib._name) == os.path.realpath(sys.argv[1]), hycc._lib.lib._name
assert os.path.realpath(hycc.__file__).startswith(os.path.realpath(os.environ["PYTHONPATH"]))
x = np.linspace(-1, 1, 4096, dtype=np.float32)
assert np.array_equal(x, hycc.decompress(hycc.Codec("mpc").compress(x)))
print("python: hycc", hycc.__version__, "from", os.path.dirname(hycc.__file__))
PY

echo "== 6. the tools"
for tool in hycc-bench hycc-sim hycc-train; do
  "$prefix/bin/$tool" --help >/dev/null || fail "$tool --help"
  said=$("$prefix/bin/$tool" --version) || fail "$tool --version"
  echo "$said"
  [[ $said == "$tool $version "* ]] || fail "$tool --version says '$said', config.h $version"
done
echo "install: OK"

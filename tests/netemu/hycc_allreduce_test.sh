#!/usr/bin/env bash
# hycc's allreduce across an emulated 2-host cluster (tools/netemu, 1 Gbit/s links): the ring and
# recursive-doubling allreduce tests of the MPI test binary must pass with real TCP traffic between
# network namespaces, and netemu must leave nothing behind.
#
# usage: tests/netemu/hycc_allreduce_test.sh PATH/TO/hycc_mpi_tests   (root; exits 77 otherwise)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NETEMU=$(cd "$HERE/../.." && pwd)/tools/netemu
TESTS=${1:?usage: $0 PATH/TO/hycc_mpi_tests}

[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (network namespaces and tc)"; exit 77; }
"$NETEMU" check >/dev/null 2>&1 || { echo "SKIP: netemu cannot run here ($NETEMU check)"; exit 77; }

before=$(ip netns list | grep -c '^hynet' || true)
rc=0
"$NETEMU" run --hosts 2 --rate 1gbit -- "$TESTS" \
  --gtest_filter='Ring/AllreduceTest.*:RecursiveDoubling/AllreduceTest.*:AllreduceAuto.*' || rc=$?
after=$(ip netns list | grep -c '^hynet' || true)

if [[ $rc -ne 0 ]]; then
  echo "FAIL: allreduce tests across 2 emulated hosts exited $rc"
  exit 1
fi
echo "PASS: allreduce tests across 2 emulated hosts"
if [[ $after -gt $before ]]; then
  echo "FAIL: netemu left $((after - before)) namespace(s) behind"
  exit 1
fi
echo "PASS: nothing left behind (namespaces before: $before, after: $after)"
echo "1 passed, 0 failed"

#!/usr/bin/env bash
# The include rules of the layers (CONTRIBUTING.md, docs/architecture.md): no file of a lower
# layer includes a header of a higher one, and the gradient compressors use only the interface
# headers of the algorithm layer. Prints every violation and exits 1 if there is one.
set -euo pipefail
src="${1:?usage: layering_test.sh SRC_DIR}"
here="$(cd "$(dirname "$0")" && pwd)"
cd "$src"
status=0
# violations FOLDERS -- PATTERN WHY: #include lines in FOLDERS that match PATTERN.
violations() {
  local why="$1" pattern="$2"
  shift 2
  local found
  found=$(grep -rnE --include='*.h' --include='*.cc' --include='*.cu' --include='*.cuh' \
    "^#include \"($pattern)" "$@" || true)
  if [[ -n "$found" ]]; then
    echo "layering: $why:"
    echo "$found"
    status=1
  fi
}
violations "codec, device, comm and coll include no higher layer" 'policy/|grad/|interpose/|torch/' \
  codec device comm coll
violations "policy and grad include no entry layer" 'interpose/|torch/' policy grad
violations "the drop-in library and the PyTorch backend are separate entry layers" 'torch/' interpose
violations "the PyTorch backend and the drop-in library are separate entry layers" 'interpose/' torch
violations "codec includes nothing above it" 'device/|comm/|coll/' codec
violations "device includes nothing above it" 'comm/|coll/' device
violations "comm includes no algorithm" 'coll/' comm
# grep -E has no lookahead: list grad's coll includes and keep the ones not allowed.
bad=$(grep -rnE '^#include "coll/' grad | grep -vE 'coll/(entry|payload_gather)\.h"' || true)
if [[ -n "$bad" ]]; then
  echo "layering: grad uses only coll's interface headers (entry.h, payload_gather.h):"
  echo "$bad"
  status=1
fi
[[ -d coll/device ]] && { echo "layering: src/coll/device is back"; status=1; }
# The drop-in library: its runtime knows nothing of the MPI entry points built on it, and its
# units do not include each other in a loop.
violations "the drop-in runtime includes no entry point" 'interpose/mpi/' interpose/runtime
violations "the drop-in library reaches the gradient compressors through the policy" 'grad/' interpose
python3 "$here/include_cycles.py" interpose/runtime interpose/runtime || status=1
if [[ $status -eq 0 ]]; then echo "OK: the layers include downward only"; fi
exit $status

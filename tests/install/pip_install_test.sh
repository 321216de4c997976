#!/usr/bin/env bash
# `pip install SOURCE_DIR` into a new virtual environment (pyproject.toml, scikit-build-core),
# then the package used from there alone, as a user of the wheel would:
#   1. the wheel's files: the package with libhycc_c.so and libhycc_mpi.so beside it, the tools
#      on the environment's PATH;
#   2. `import hycc` from another directory, with no HYCC_LIBRARY: the library it loads is the
#      environment's, its version the package metadata's, and codecs round-trip (lossless ones
#      bit for bit, quant within its bound, a damaged stream rejected);
#   3. the tools start;
#   4. the entry point `import torch` calls (torch.backends: hycc) is declared and its module
#      installed (docs/torch.md, "Autoload").
# Usage: pip_install_test.sh SOURCE_DIR BASE_PYTHON [PIP_ARGS...]
# Prints "pip install: OK" when every step passed.
set -euo pipefail
src=$1 base_python=$2
shift 2
work=$(mktemp -d /tmp/hycc-pip-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "pip install: FAIL: $*" >&2; exit 1; }
unset HYCC_LIBRARY PYTHONPATH LD_LIBRARY_PATH

"$base_python" -m venv "$work/venv" || fail "$base_python -m venv"
py=$work/venv/bin/python
start=$SECONDS
"$py" -m pip install --disable-pip-version-check --progress-bar off "$@" "$src" \
  >"$work/pip.log" 2>&1 || { tail -n 40 "$work/pip.log"; fail "pip install $src"; }
echo "pip install $src: $((SECONDS - start)) s"

echo "== 1. the wheel's files"
site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
for f in "$site/hycc/__init__.py" "$site/hycc/ddp.py" "$site/hycc/libhycc_c.so" \
  "$site/hycc/libhycc_mpi.so" "$work/venv/bin/hycc-train" "$work/venv/bin/hycc-bench" \
  "$work/venv/bin/hycc-sim"; do
  [ -e "$f" ] || fail "$f is not installed"
done

echo "== 2. import hycc from the environment"
(cd "$work" && "$py" - "$site" <<'PY') || fail "the installed package"
import importlib.metadata, os, sys
import numpy as np
import hycc
site = sys.argv[1]
assert hycc.__file__.startswith(site), f"hycc imported from {hycc.__file__}, not {site}"
library = hycc.lib._name
assert os.path.realpath(library) == os.path.realpath(os.path.join(site, "hycc", "libhycc_c.so")), library
assert hycc.__version__ == importlib.metadata.version("hycc"), (hycc.__version__, importlib.metadata.version("hycc"))
x = np.random.default_rng(1).standard_normal(4 + 64 * 1563).astype(np.float32)
x[:4] = [np.nan, np.inf, -0.0, 1e-40]
for spec in ("none", "mpc", "zstd"):
    y = hycc.decompress(hycc.Codec(spec).compress(x))
    assert y.tobytes() == x.tobytes(), spec
finite = x[4:]  # whole blocks of 64
stream = hycc.Codec("quant:bits=8,block=64").compress(finite)
blocks = finite.reshape(-1, 64).astype(np.float64)
error = np.abs(hycc.decompress(stream).reshape(-1, 64) - blocks).max(axis=1)
bound = (blocks.max(axis=1) - blocks.min(axis=1)) / 255 / 2 * (1 + 1e-5)
assert (error <= bound).all(), "quant:bits=8 outside half a step of its block"
damaged = bytearray(stream)
damaged[len(damaged) // 2] ^= 0xFF
try:
    hycc.decompress(bytes(damaged))
    raise AssertionError("a damaged stream was decoded")
except hycc.CorruptStream:
    pass
print(f"hycc {hycc.__version__} from {library}: codecs OK")
PY

echo "== 3. the tools"
for tool in hycc-train hycc-bench hycc-sim; do
  "$work/venv/bin/$tool" --help >"$work/$tool.out" 2>&1 || { cat "$work/$tool.out"; fail "$tool --help"; }
  grep -q "$tool" "$work/$tool.out" || fail "$tool --help does not name itself"
done
echo "== 4. the torch.backends entry point"
[ -e "$site/_hycc_autoload/__init__.py" ] || fail "_hycc_autoload is not installed"
(cd "$work" && "$py" - <<'PY') || fail "the torch.backends entry point"
import importlib.metadata
points = importlib.metadata.entry_points(group="torch.backends")
assert [(p.name, p.value) for p in points] == [("hycc", "_hycc_autoload:register")], list(points)
print("torch.backends: hycc = _hycc_autoload:register")
PY
echo "pip install: OK"

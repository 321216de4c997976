"""Autoload of the backend "hycc": a program that never imports hycc names it and runs on it.

The package's metadata as pip installs it (a dist-info whose entry_points.txt is the
`[project.entry-points]` table of pyproject.toml) is put on the path of two programs that import
torch and never hycc:
  1. `import torch` registers the backend and loads nothing of hycc's (no hycc package, no backend
     module), then `init_process_group("hycc")` makes a hycc group (the backend module loads
     then) whose all_reduce runs;
  2. with TORCH_DEVICE_BACKEND_AUTOLOAD=0 the backend is unknown: init_process_group raises
     torch's error for an unknown backend, naming it.
Prints "hycc torch autoload: OK" when both behaved. Usage: PYTHON hycc_torch_autoload_test.py
(PYTHON: the project's environment, with torch; HYCC_TORCH_EXTENSION: the backend module).
"""
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import tomllib

SOURCE = pathlib.Path(__file__).resolve().parents[2]

PROGRAM = r"""
import sys, time
start = time.perf_counter()
import torch
import torch.distributed as dist
took = time.perf_counter() - start
loaded = sorted(m for m in sys.modules if m == "hycc" or m.startswith(("hycc.", "_hycc_torch")))
assert "_hycc_autoload" in sys.modules, "import torch did not call hycc's entry point"
assert not loaded, f"import torch loaded {loaded}"
print(f"import torch: {took:.2f} s, with the backend hycc registered and nothing of hycc loaded")
dist.init_process_group("hycc", init_method=sys.argv[1], rank=0, world_size=1)
backend = dist.group.WORLD._get_backend(torch.device("cpu"))
assert backend.name() == "hycc", backend.name()
t = torch.arange(8, dtype=torch.float32)
dist.all_reduce(t)
assert torch.equal(t, torch.arange(8, dtype=torch.float32)), t
assert "hycc.torch" in sys.modules
dist.destroy_process_group()
print("autoloaded: a hycc group made and used")
"""

WITHOUT = r"""
import sys
import torch.distributed as dist
try:
    dist.init_process_group("hycc", init_method=sys.argv[1], rank=0, world_size=1)
except (ValueError, RuntimeError, AssertionError) as e:  # torch 2.15: AssertionError
    print(f"TORCH_DEVICE_BACKEND_AUTOLOAD=0: {type(e).__name__}: {str(e)[:100]}")
    sys.exit(0 if "hycc" in str(e) else f"an error that does not name hycc: {e}")
sys.exit("TORCH_DEVICE_BACKEND_AUTOLOAD=0: the backend hycc was registered all the same")
"""


def dist_info(root):
    """hycc's metadata under `root` as pip writes it: METADATA and entry_points.txt."""
    project = tomllib.loads((SOURCE / "pyproject.toml").read_text())["project"]
    info = root / "hycc-0.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\n"
                                   "Version: 0.0.0\n")
    lines = []
    for group, points in project.get("entry-points", {}).items():
        lines.append(f"[{group}]")
        lines += [f"{name} = {target}" for name, target in points.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(code, env):
    init = f"tcp://127.0.0.1:{free_port()}"
    p = subprocess.run([sys.executable, "-c", code, init], env=env, capture_output=True,
                       text=True, timeout=120)
    print(p.stdout, end="")
    if p.returncode != 0:
        print(p.stderr[-2000:], end="", file=sys.stderr)
    return p.returncode == 0


def main():
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        dist_info(root)
        env = dict(os.environ, OMP_NUM_THREADS="1",
                   PYTHONPATH=os.pathsep.join([str(root), str(SOURCE / "python")]))
        env.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)
        ok = run(PROGRAM, env)
        ok = run(WITHOUT, dict(env, TORCH_DEVICE_BACKEND_AUTOLOAD="0")) and ok
    print("hycc torch autoload: OK" if ok else "hycc torch autoload: FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

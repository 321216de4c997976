"""What the Python tests share: failures counted per rank, bit-identity across ranks, and the
verdict line on rank 0 ("hycc SUITE: OK")."""
import sys
import tempfile

import numpy as np
from mpi4py import MPI

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
_failures = 0


def expect(cond, what, suite="hycc"):
    """Counts a failed check and says which on stderr."""
    global _failures
    if not cond:
        _failures += 1
        print(f"{suite}: rank {rank}: FAILED: {what}", file=sys.stderr)


def identical_on_every_rank(a):
    """True on every rank if every rank holds the same bits in a."""
    first = a.copy()
    world.Bcast(first, root=0)
    same = np.array_equal(first.view(np.uint8), a.view(np.uint8))
    return bool(world.allreduce(int(same), op=MPI.MIN))


def dp_policy_file(compressor):
    """A policy file (this rank's own temporary file) with one rule: `compressor` on the
    allreduces of communicators named "dp"."""
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(f'name = "dp-only"\n\n[[rule]]\ndimension = "dp"\noperation = "allreduce"\n'
                f'compressor = "{compressor}"\nthreshold = 0\n')
    return f.name


def finish(suite, detail):
    """Prints the verdict on rank 0 and exits 0 when no rank failed a check, 1 otherwise."""
    total = world.allreduce(_failures)
    if rank == 0:
        print(f"{suite}: OK ({detail}; {size} ranks)" if total == 0
              else f"{suite}: {total} checks FAILED")
    sys.exit(0 if total == 0 else 1)

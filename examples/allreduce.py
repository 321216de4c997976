"""hycc from Python (numpy and mpi4py): a compressed allreduce, and the hybrid policy choosing by
the communicator's name. Run: mpirun -n 4 python3 allreduce.py (with hycc installed on
PYTHONPATH, docs/install.md). Rank 0 prints."""
import numpy as np
from mpi4py import MPI

import hycc

comm = MPI.COMM_WORLD
grad = np.sin(0.001 * np.arange(1 << 20, dtype=np.float32) + comm.rank).astype(np.float32)
exact = np.empty_like(grad)
comm.Allreduce(grad, exact)

stats = hycc.CallStats()
out = hycc.allreduce(grad, np.empty_like(grad), codec="quant:bits=8", threshold=0, stats=stats)
if comm.rank == 0:
    print(f"allreduce quant:bits=8: {stats.wire_bytes} bytes sent for {stats.raw_bytes}, "
          f"largest error {np.abs(out - exact).max():.3g}")

dp = comm.Dup()
dp.Set_name("dp")
engine = hycc.Engine("hybrid")
for step in range(3):  # error feedback keyed by the tensor's id
    g = grad.copy()
    hycc.allreduce(g, comm=dp, engine=engine, key=1)
engine.finish(dp)  # rank 0: the policy's statistics on stderr
if comm.rank == 0:
    print("allreduce.py: OK")

"""Data-parallel training written without hycc, as Horovod-style code does it: every step's
gradients in one flat float32 buffer, summed by MPI_Allreduce on a communicator named "dp".

Distributed multi-output least squares (W 64 x 32, b 32: a flat buffer of 2080 values) with a
known optimum, each rank on its own shard (the shards differ in their feature means), 300 steps
of gradient descent. Under a policy whose dp allreduce is PowerSGD, the library sees a flat
buffer, views it as its square matrix, and the run must end where the uncompressed one does.
Prints "loss L" (mean over all ranks' data) and the median seconds per step on rank 0; exits 1
if the ranks' models differ. Larger problems (--inputs, --outputs) measure the drop-in library
on an emulated cluster (docs/results.md).
Usage: python3 dropin_powersgd.py [--inputs 64] [--outputs 32] [--steps 300]
"""
import argparse
import sys
import time

import numpy as np
from mpi4py import MPI

parser = argparse.ArgumentParser()
parser.add_argument("--inputs", type=int, default=64)
parser.add_argument("--outputs", type=int, default=32)
parser.add_argument("--steps", type=int, default=300)
args = parser.parse_args()
IN, OUT, SAMPLES, STEPS = args.inputs, args.outputs, 256, args.steps
RATE = 3.2 / IN  # 0.05 at 64 inputs: stable for the features drawn below
world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
dp = world.Dup()
dp.Set_name("dp")

truth = np.random.default_rng(7)
w_star = truth.standard_normal((IN, OUT)) / np.sqrt(IN)
b_star = 0.3 * np.sin(np.arange(OUT))
rng = np.random.default_rng(100 + rank)
x = rng.uniform(-1.5, 1.5, (SAMPLES, IN)) + 0.5 * (-1) ** rank * (np.arange(IN) % 3 == 0)
y = x @ w_star + b_star + 0.5 * rng.uniform(-1, 1, (SAMPLES, OUT))
x, y = x.astype(np.float32), y.astype(np.float32)

w = np.zeros((IN, OUT), np.float32)
b = np.zeros(OUT, np.float32)
grad = np.empty(IN * OUT + OUT, np.float32)
seconds = []
for step in range(STEPS):
    start = time.perf_counter()
    r = x @ w + b - y
    grad[: IN * OUT] = (x.T @ r / SAMPLES).ravel()
    grad[IN * OUT:] = r.mean(axis=0)
    dp.Allreduce(MPI.IN_PLACE, grad, op=MPI.SUM)
    grad /= size
    w -= RATE * grad[: IN * OUT].reshape(IN, OUT)
    b -= RATE * grad[IN * OUT:]
    seconds.append(time.perf_counter() - start)

loss = world.allreduce(float(0.5 * np.sum((x @ w + b - y).astype(np.float64) ** 2)), op=MPI.SUM)
models = world.allgather(np.concatenate([w.ravel(), b]).tobytes())
if any(m != models[0] for m in models):
    print(f"rank {rank}: the ranks' models differ", file=sys.stderr)
    sys.exit(1)
if rank == 0:
    print(f"loss {loss / (SAMPLES * size):.6f}")
    print(f"seconds per step {np.median(seconds):.4f} (median of {STEPS})")
dp.Free()

#!/usr/bin/env python3
"""A data-parallel mpi4py program that never names a communicator, timed: the gradient
allreduce on MPI_COMM_WORLD, for libhycc_mpi.so with and without HYCC_COMM_NAMES
(docs/dropin.md).

Allreduces COUNT float32 (random normal, a gradient stand-in) on MPI_COMM_WORLD and prints the
median time of ROUNDS calls (after one warm-up call), the bus bandwidth and the relative error
of the last call against the float64 sum. Run it three ways, e.g. on the emulated cluster:
  tools/netemu run -q --hosts 4 --rate 1gbit -- python3 tools/dropin_world_bench.py
  tools/netemu run -q --hosts 4 --rate 1gbit --env LD_PRELOAD=$PWD/build/lib/libhycc_mpi.so \\
      --env HYCC_POLICY=hybrid [--env HYCC_COMM_NAMES=MPI_COMM_WORLD=dp] \\
      -- python3 tools/dropin_world_bench.py
"""
import argparse
import time

import numpy as np
from mpi4py import MPI


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1 << 22, help="floats (default 2^22)")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds (default 7)")
    args = parser.parse_args()
    if args.count < 1 or args.rounds < 1:
        parser.error("--count and --rounds must be at least 1")
    world = MPI.COMM_WORLD
    size, rank = world.Get_size(), world.Get_rank()
    grad = np.random.default_rng(rank).standard_normal(args.count).astype(np.float32)
    total = np.empty_like(grad)
    world.Allreduce(grad, total)  # warm-up (and the library's first call on the communicator)
    times = []
    for _ in range(args.rounds):
        world.Barrier()
        start = time.perf_counter()
        world.Allreduce(grad, total)
        times.append(world.allreduce(time.perf_counter() - start, op=MPI.MAX))
    exact = np.empty(args.count, np.float64)
    world.Allreduce(grad.astype(np.float64), exact)
    rel = float(np.linalg.norm(total - exact) / np.linalg.norm(exact))
    if rank == 0:
        t = sorted(times)[len(times) // 2]
        busbw = args.count * 4 / t * 2 * (size - 1) / size / 1e9
        print(f"# {size} ranks, {args.count} float32 ({args.count * 4 / 2**20:.1f} MiB) on "
              f"MPI_COMM_WORLD, median of {args.rounds} rounds")
        print(f"Allreduce {t * 1e3:9.1f} ms  busbw {busbw:6.3f} GB/s  rel_l2 {rel:.2e}")


if __name__ == "__main__":
    main()

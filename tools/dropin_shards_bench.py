#!/usr/bin/env python3
"""ZeRO-style shards through MPI, timed: an mpi4py program written without hycc, for
libhycc_mpi.so's vector variants (docs/dropin.md, "Counts one element apart").

Shards COUNT + ranks - 1 float32 (random normal, not a multiple of the ranks) with
numpy.array_split on a communicator named "zero" and prints the median time of ROUNDS rounds (after
one warm-up call) of: MPI_Reduce_scatter with those counts, the same with the longer shards last,
MPI_Reduce_scatter_block and MPI_Allgather of equal blocks, MPI_Allgatherv with the
array_split counts, and MPI_Ireduce_scatter and MPI_Iallgatherv with them (each waited for at
once). Run it with and without the library, e.g. on the emulated cluster:
  tools/netemu run -q --hosts 4 --rate 1gbit --env LD_PRELOAD=$PWD/build/lib/libhycc_mpi.so \\
      --env HYCC_POLICY=hybrid -- python3 tools/dropin_shards_bench.py
"""
import argparse
import time

import numpy as np
from mpi4py import MPI


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1 << 22,
                        help="floats to shard, before adding ranks - 1 (default 2^22)")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds (default 7)")
    args = parser.parse_args()
    world = MPI.COMM_WORLD
    size, rank = world.Get_size(), world.Get_rank()
    if args.count < size or args.rounds < 1:
        parser.error("--count must be at least the number of ranks, --rounds at least 1")
    zero = world.Dup()
    zero.Set_name("zero")
    total = args.count + size - 1
    counts = [len(part) for part in np.array_split(np.empty(total), size)]
    last = counts[::-1]  # the longer shards last
    x = np.random.default_rng(rank).standard_normal(total).astype(np.float32)
    shard = np.empty(max(counts), np.float32)
    gathered = np.empty(total, np.float32)
    per = total // size
    block = np.empty(per, np.float32)
    blocks = np.empty(per * size, np.float32)
    calls = [
        ("Reduce_scatter, array_split counts",
         lambda: zero.Reduce_scatter(x, shard[:counts[rank]], recvcounts=counts)),
        ("Reduce_scatter, longer shards last",
         lambda: zero.Reduce_scatter(x, shard[:last[rank]], recvcounts=last)),
        ("Reduce_scatter_block, equal", lambda: zero.Reduce_scatter_block(x[:per * size], block)),
        ("Allgatherv, array_split counts",
         lambda: zero.Allgatherv(x[:counts[rank]], [gathered, counts])),
        ("Allgather, equal", lambda: zero.Allgather(x[:per], blocks)),
        ("Ireduce_scatter + Wait, array_split",
         lambda: zero.Ireduce_scatter(x, shard[:counts[rank]], recvcounts=counts).Wait()),
        ("Iallgatherv + Wait, array_split",
         lambda: zero.Iallgatherv(x[:counts[rank]], [gathered, counts]).Wait()),
    ]
    if rank == 0:
        print(f"# {size} ranks, {total} float32 ({total * 4 / 2**20:.1f} MiB) on 'zero', "
              f"median of {args.rounds} rounds")
    for name, call in calls:
        call()  # warm-up (and the library's first call on the communicator)
        times = []
        for _ in range(args.rounds):
            world.Barrier()
            start = time.perf_counter()
            call()
            times.append(world.allreduce(time.perf_counter() - start, op=MPI.MAX))
        if rank == 0:
            print(f"{name:<38} {sorted(times)[len(times) // 2] * 1e3:9.1f} ms")
    zero.Free()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The cost of one call of the hycc torch.distributed backend next to gloo's, in the same run:
for each message size, the time per call of an operation on a gloo group and on the hycc group
(policy from HYCC_POLICY), and their ratio. Launch it like any PyTorch program:

    HYCC_POLICY=baseline torchrun --standalone --nproc-per-node 2 tools/torch_calls_bench.py

Under baseline hycc hands every call to gloo (the ratio is the backend's own overhead: the
queue to its worker thread, the policy's decision, the Work); under a compressing policy, on
shared memory, compression costs more than it saves (run it where the network is slow to see
it win). Prints one table on rank 0.
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import hycc.torch as ht  # noqa: E402

OPS = ("all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "broadcast")


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--op", choices=OPS, default="all_reduce")
    p.add_argument("--sizes", default="4K,64K,1M,16M",
                   help="message sizes in bytes of float32 (K, M suffixes); default %(default)s")
    p.add_argument("--iters", type=int, default=20, help="calls per timed round")
    p.add_argument("--rounds", type=int, default=15, help="timed rounds per size and backend")
    p.add_argument("--warmup", type=int, default=5)
    args = p.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    if any(s <= 0 or s % 4 for s in sizes):
        p.error("--sizes: positive multiples of 4 bytes")

    torch.set_num_threads(1)
    dist.init_process_group("hycc")
    rank, world = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")

    def call(group, x, out):
        if args.op == "all_reduce":
            dist.all_reduce(x, group=group)
        elif args.op == "all_gather_into_tensor":
            dist.all_gather_into_tensor(out, x, group=group)
        elif args.op == "reduce_scatter_tensor":
            dist.reduce_scatter_tensor(x[: x.numel() // world], x, group=group)
        else:
            dist.broadcast(x, 0, group=group)

    def timed_round(group, x, out):
        dist.barrier(group=gloo)
        t = time.perf_counter()
        for _ in range(args.iters):
            call(group, x, out)
        return (time.perf_counter() - t) / args.iters

    def paired_seconds(count):
        """Seconds per call on gloo and on hycc: rounds of back-to-back calls, gloo's and hycc's
        rounds alternated (the machine's noise hits both alike), the median round of each and
        the median of the rounds' ratios, the slowest rank."""
        x = torch.randn(count)
        out = torch.empty(count * world)
        for group in (gloo, None):
            for _ in range(args.warmup):
                call(group, x, out)
        g, h = [], []
        for _ in range(args.rounds):
            g.append(timed_round(gloo, x, out))
            h.append(timed_round(None, x, out))
        ratio = statistics.median(b / a for a, b in zip(g, h))
        figures = torch.tensor([statistics.median(g), statistics.median(h), ratio],
                               dtype=torch.float64)
        dist.all_reduce(figures, op=dist.ReduceOp.MAX, group=gloo)
        return figures.tolist()

    if rank == 0:
        print(f"# {args.op}, {world} ranks, hycc policy {ht.policy_name()}; time per call: "
              f"{args.rounds} rounds of {args.iters} calls, gloo's and hycc's alternated, the "
              f"median round, the median of the rounds' ratios, the slowest rank")
        print(f"{'bytes':>10} {'gloo us':>10} {'hycc us':>10} {'hycc/gloo':>10}")
    for size in sizes:
        g, h, ratio = paired_seconds(size // 4)
        if rank == 0:
            print(f"{size:>10} {g * 1e6:>10.1f} {h * 1e6:>10.1f} {ratio:>10.2f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

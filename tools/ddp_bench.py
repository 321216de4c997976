#!/usr/bin/env python3
"""PyTorch DistributedDataParallel with and without hycc, in the same run: the same model, data
and steps with DDP's own gloo allreduce, with hycc's hook uncompressed (MPI), and with hycc's
hook under one or more policies (hybrid: ef2+quant:bits=6 with error feedback on "dp"; auto:
the same or less, where the measured links say it pays), the latter with its
allreduces inside the hook and (the default) on a worker thread that overlaps the backward
pass. Prints the time per step (median of the timed steps), the speedup over gloo, the final
training loss and, for the policy runs, the bytes on the wire. Run it on the emulated cluster, where the network is the
bottleneck (as root):

    tools/netemu run --hosts 2 --rate 200mbit --env HYCC_LIBRARY=$PWD/build/lib/libhycc_c.so \\
        -- ~/.cache/hycc/venv/bin/python tools/ddp_bench.py

(the project's Python environment, scripts/setup-python, has PyTorch 2) or on shared memory
with mpirun (where compression cannot win). One rank per process; the
process group's master is rank 0's address on the emulated link (eth0), else 127.0.0.1.
"""
import argparse
import fcntl
import os
import socket
import struct
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
from mpi4py import MPI

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import hycc  # noqa: E402
import hycc.ddp  # noqa: E402


def interface_address(name):
    """The IPv4 address of a network interface, or None."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            packed = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))
            return socket.inet_ntoa(packed[20:24])  # SIOCGIFADDR
    except OSError:
        return None


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=12, help="timed steps per run (default 12)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    p.add_argument("--hidden", type=int, default=1024, help="MLP width (default 1024)")
    p.add_argument("--layers", type=int, default=4, help="hidden layers (default 4)")
    p.add_argument("--batch", type=int, default=32, help="samples per rank and step (default 32)")
    p.add_argument("--policy", default="hybrid",
                   help="hycc policies (presets or TOML files) of the compressed runs, "
                   "comma-separated (default hybrid; "
                   "e.g. hybrid,auto)")
    p.add_argument("--bucket-mb", type=float, default=4.0, help="DDP bucket cap (default 4)")
    return p.parse_args()


def train(args, world, hook_state):
    """Times the steps of one run; returns (median seconds per step, final loss)."""
    rank, size = world.Get_rank(), world.Get_size()
    torch.manual_seed(0)
    layers = [torch.nn.Linear(64, args.hidden), torch.nn.Tanh()]
    for _ in range(args.layers - 1):
        layers += [torch.nn.Linear(args.hidden, args.hidden), torch.nn.Tanh()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(args.hidden, 1))
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_mb)
    if hook_state is not None:
        ddp.register_comm_hook(hook_state, hycc.ddp.allreduce_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.02)
    data = torch.Generator().manual_seed(1000 + rank)
    target = torch.randn(64, 1, generator=torch.Generator().manual_seed(5))
    times, loss = [], None
    for step in range(args.warmup + args.steps):
        x = torch.randn(args.batch, 64, generator=data)
        y = torch.tanh(x @ target / 8)
        world.Barrier()
        start = time.perf_counter()
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        elapsed = world.allreduce(time.perf_counter() - start, op=MPI.MAX)
        if step >= args.warmup:
            times.append(elapsed)
    params = sum(p.numel() for p in model.parameters())
    return float(np.median(times)), world.allreduce(loss.item()) / size, params


def main():
    args = parse_args()
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    torch.set_num_threads(1)
    emulated = "NETEMU_HOSTS" in os.environ and interface_address("eth0") is not None
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "eth0" if emulated else "lo")
    master = (interface_address("eth0") if emulated else "127.0.0.1") if rank == 0 else None
    hycc.ddp.init_process_group(world, master_addr=master)

    dp = world.Dup()
    dp.Set_name("dp")
    # Each policy run gets its own engine: no error-feedback residual carries over between runs.
    runs = [("gloo (DDP's allreduce)", None, None), ("hycc, uncompressed", None, {})]
    for policy in args.policy.split(","):
        name = hycc.Engine(policy).policy_name  # a TOML file's own name, not its path
        runs += [(f"hycc, {name}, in hook", hycc.Engine(policy), {"overlap": False}),
                 (f"hycc, {name}", hycc.Engine(policy), {})]
    rows = []
    for name, engine, hook in runs:
        state = None if hook is None else hycc.ddp.HookState(comm=dp, engine=engine, **hook)
        seconds, loss, params = train(args, world, state)
        if state is not None:
            state.close()
        total = engine.stats(comm=world)["total"] if engine else {"wire_bytes": 0, "raw_bytes": 0}
        rows.append((name, seconds, loss, total["wire_bytes"], total["raw_bytes"]))

    if rank == 0:
        network = (f"{os.environ['NETEMU_HOSTS']} hosts x {os.environ['NETEMU_RANKS_PER_HOST']} "
                   f"ranks, {os.environ['NETEMU_RATE']} links" if emulated else
                   "shared memory (no emulated network)")
        print(f"# hycc {hycc.__version__} DDP benchmark: {size} ranks, {network}; MLP "
              f"{args.layers}x{args.hidden} ({params / 1e6:.2f}M parameters, "
              f"{params * 4 / 2**20:.1f} MiB of gradients per step), batch {args.batch}/rank, "
              f"{args.steps} timed steps after {args.warmup}")
        print(f"{'#run':<28} {'s/step':>8} {'speedup':>8} {'final loss':>11} {'wire/raw':>9}")
        for name, seconds, loss, wire, raw in rows:
            ratio = f"{wire / raw:.3f}" if raw else "-"
            print(f"{name:<28} {seconds:>8.4f} {rows[0][1] / seconds:>7.2f}x {loss:>11.5f} "
                  f"{ratio:>9}")
    for _, engine, _ in runs:
        if engine is not None:
            engine.close()
    dp.Free()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""One configuration of tools/torch_bench.py's training benchmark, on every rank: a GPT-style
model written with PyTorch's own parallel APIs (FSDP2 over the hosts x DTensor tensor
parallelism within a host; a torch.distributed.pipelining schedule of FSDP2 stages; or
DistributedDataParallel), trained on synthetic token sequences
with a learnable rule, on the backend given (gloo, or hycc under HYCC_POLICY), optionally with a
PyTorch DDP communication hook. Launched by mpirun (tools/netemu run): the ranks learn their
rank from Open MPI's environment and rank 0's address on the emulated link through mpi4py.
Rank 0 prints one line, "RESULT {json}": tokens per second (median step), the losses, and for
hycc the bytes each dimension sent before and after compression (all ranks).
"""
import argparse
import fcntl
import json
import os
import socket
import struct
import sys
import time

import torch
import torch.distributed as dist
from mpi4py import MPI
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

HOOKS = ("none", "fp16", "bf16", "powersgd", "hycc_shapes")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", choices=("gloo", "hycc"), required=True)
    p.add_argument("--parallel", choices=("fsdp_tp", "pp_fsdp", "ddp"), default="fsdp_tp")
    p.add_argument("--pp", type=int, default=2, help="pipeline stages (pp_fsdp)")
    p.add_argument("--microbatches", type=int, default=4, help="per step (pp_fsdp)")
    p.add_argument("--hook", choices=HOOKS, default="none", help="DDP communication hook (ddp)")
    p.add_argument("--tp", type=int, default=0,
                   help="tensor-parallel ranks (default: the ranks of one emulated host)")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--batch", type=int, default=8, help="sequences per data-parallel rank")
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--port", type=int, default=29561)
    return p.parse_args()


def interface_address(name):
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            packed = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))
            return socket.inet_ntoa(packed[20:24])
    except OSError:
        return None


class Attention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.head_dim = hidden // heads
        self.wq, self.wk, self.wv = (nn.Linear(hidden, hidden) for _ in range(3))
        self.wo = nn.Linear(hidden, hidden)

    def forward(self, x):
        b, s, _ = x.shape
        # -1: the heads of this rank (tensor parallelism shards them)
        q, k, v = (w(x).view(b, s, -1, self.head_dim).transpose(1, 2)
                   for w in (self.wq, self.wk, self.wv))
        y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(b, s, -1))


class Block(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.attn = Attention(hidden, heads)
        self.up, self.down = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.down(nn.functional.gelu(self.up(self.norm2(x))))


class GPT(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.embed = nn.Embedding(a.vocab, a.hidden)
        self.pos = nn.Parameter(torch.randn(a.seq, a.hidden) * 0.02)
        self.blocks = nn.ModuleList([Block(a.hidden, a.heads) for _ in range(a.layers)])
        self.norm = nn.LayerNorm(a.hidden)
        self.head = nn.Linear(a.hidden, a.vocab)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos
        for b in self.blocks:
            x = b(x)
        return self.head(self.norm(x))


def batches(a, dp_rank):
    """Sequences of a rule the model can learn: t[i+1] = (3 t[i] + t[i-1]) mod vocab."""
    g = torch.Generator().manual_seed(1000 + dp_rank)
    while True:
        t = torch.empty(a.batch, a.seq + 1, dtype=torch.long)
        t[:, :2] = torch.randint(0, a.vocab, (a.batch, 2), generator=g)
        for i in range(2, a.seq + 1):
            t[:, i] = (3 * t[:, i - 1] + t[:, i - 2]) % a.vocab
        yield t[:, :-1], t[:, 1:]


class Stage(nn.Module):
    """Stage `index` of `count` of the GPT: its share of the blocks, the embedding before the
    first, the final norm and head after the last."""

    def __init__(self, gpt, index, count):
        super().__init__()
        per = len(gpt.blocks) // count
        self.blocks = nn.ModuleList(gpt.blocks[index * per:(index + 1) * per])
        self.first, self.last = index == 0, index == count - 1
        if self.first:
            self.embed, self.pos = gpt.embed, gpt.pos
        if self.last:
            self.norm, self.head = gpt.norm, gpt.head

    def forward(self, x):
        if self.first:
            x = self.embed(x) + self.pos
        for b in self.blocks:
            x = b(x)
        return self.head(self.norm(x)) if self.last else x


def build_pipeline(a, world, rank):
    """pp_fsdp: `a.pp` stages, each FSDP2-sharded over its data-parallel ranks; the stages talk
    over the mesh's pp groups (GPipe schedule, `a.microbatches` per step)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.pipelining import PipelineStage, ScheduleGPipe
    mesh = init_device_mesh("cpu", (a.pp, world // a.pp), mesh_dim_names=("pp", "dp"))
    index = mesh["pp"].get_local_rank()
    torch.manual_seed(0)  # the same model on every rank; each stage keeps its part
    stage = Stage(GPT(a), index, a.pp)
    for b in stage.blocks:
        fully_shard(b, mesh=mesh["dp"])
    fully_shard(stage, mesh=mesh["dp"])
    pipe = PipelineStage(stage, index, a.pp, torch.device("cpu"), group=mesh["pp"].get_group())

    def loss_fn(logits, y):
        return nn.functional.cross_entropy(logits.reshape(-1, a.vocab), y.reshape(-1))

    schedule = ScheduleGPipe(pipe, n_microbatches=a.microbatches, loss_fn=loss_fn)
    return stage, schedule, index, mesh["dp"].get_local_rank(), world // a.pp


def build(a, world, rank):
    torch.manual_seed(0)
    model = GPT(a)
    if a.parallel == "ddp":
        # One bucket here (25 MB, named: by default DDP cuts a first bucket of 1 MB), for every
        # configuration: PowerSGD's hook starts its second and third allreduces from completion
        # callbacks, which on gloo interleave with the next bucket's first in an order that
        # differs between ranks (gloo aborts: "Received data size doesn't match").
        ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=25)
        if a.hook in ("fp16", "bf16"):
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
            ddp.register_comm_hook(None, getattr(default_hooks, f"{a.hook}_compress_hook"))
        elif a.hook == "hycc_shapes":  # hycc learns the buckets' shapes (PowerSGD per matrix)
            import hycc.torch as ht
            ht.register_ddp(ddp)
        elif a.hook == "powersgd":
            from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as ps
            state = ps.PowerSGDState(process_group=None, matrix_approximation_rank=4,
                                     start_powerSGD_iter=2, batch_tensors_with_same_shape=True)
            ddp.register_comm_hook(state, ps.powerSGD_hook)
        return ddp, rank, world
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)
    mesh = init_device_mesh("cpu", (world // a.tp, a.tp), mesh_dim_names=("dp", "tp"))
    plan = {"attn.wq": ColwiseParallel(), "attn.wk": ColwiseParallel(),
            "attn.wv": ColwiseParallel(), "attn.wo": RowwiseParallel(),
            "up": ColwiseParallel(), "down": RowwiseParallel()}
    for b in model.blocks:
        parallelize_module(b, mesh["tp"], plan)
        fully_shard(b, mesh=mesh["dp"])
    fully_shard(model, mesh=mesh["dp"])
    return model, mesh["dp"].get_local_rank(), world // a.tp


def main():
    a = parse_args()
    comm = MPI.COMM_WORLD
    rank, world = comm.Get_rank(), comm.Get_size()
    per_host = int(os.environ.get("NETEMU_RANKS_PER_HOST", "1"))
    a.tp = a.tp or per_host
    if a.parallel == "fsdp_tp" and (world % a.tp or a.heads % a.tp):
        sys.exit(f"--tp {a.tp}: must divide the ranks ({world}) and the heads ({a.heads})")
    if a.parallel == "pp_fsdp" and (world % a.pp or a.layers % a.pp or a.batch % a.microbatches):
        sys.exit(f"--pp {a.pp}: must divide the ranks ({world}) and the layers ({a.layers}), and "
                 f"--microbatches {a.microbatches} the batch ({a.batch})")
    emulated = "NETEMU_HOSTS" in os.environ and interface_address("eth0") is not None
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "eth0" if emulated else "lo")
    master = comm.bcast(interface_address("eth0") if emulated else "127.0.0.1", root=0)
    os.environ.update(MASTER_ADDR=master, MASTER_PORT=str(a.port), RANK=str(rank),
                      WORLD_SIZE=str(world), LOCAL_RANK=str(rank % per_host))
    torch.set_num_threads(1)
    if a.backend == "hycc":
        import hycc.torch as ht
    dist.init_process_group(a.backend)

    schedule, last_stage = None, True
    if a.parallel == "pp_fsdp":
        model, schedule, index, dp_rank, dp_size = build_pipeline(a, world, rank)
        last_stage = index == a.pp - 1
    else:
        model, dp_rank, dp_size = build(a, world, rank)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    data = batches(a, dp_rank)
    times, losses = [], []
    reporters = comm.allreduce(int(last_stage), op=MPI.SUM)  # ranks whose loss counts
    for step in range(a.warmup + a.steps):
        x, y = next(data)
        comm.Barrier()
        start = time.perf_counter()
        opt.zero_grad()
        if schedule is not None:  # the first stage feeds the tokens, the last the targets
            parts = []
            if index == 0:
                schedule.step(x)
            else:
                schedule.step(target=y, losses=parts)
            loss = torch.stack(parts).mean() if last_stage else torch.zeros(())
        else:
            logits = model(x)
            loss = nn.functional.cross_entropy(logits.reshape(-1, a.vocab), y.reshape(-1))
            loss.backward()
        opt.step()
        elapsed = comm.allreduce(time.perf_counter() - start, op=MPI.MAX)
        mine = float(loss.detach()) if last_stage else 0.0
        losses.append(comm.allreduce(mine, op=MPI.SUM) / reporters)
        if step >= a.warmup:
            times.append(elapsed)
    params = sum(p.numel() for p in model.parameters())  # a DTensor counts its whole size
    if schedule is not None:  # a stage's: add the stages up, once per stage
        params = comm.allreduce(params if dp_rank == 0 else 0, op=MPI.SUM)
    times.sort()
    step_s = times[len(times) // 2]
    result = {"backend": a.backend, "parallel": a.parallel, "hook": a.hook, "ranks": world,
              "dp": dp_size, "tp": a.tp if a.parallel == "fsdp_tp" else 1,
              "pp": a.pp if a.parallel == "pp_fsdp" else 1,
              "tokens_per_s": dp_size * a.batch * a.seq / step_s, "step_s": step_s,
              "losses": losses, "params": params}
    if a.backend == "hycc":
        result["policy"] = ht.policy_name()
        dims = {}
        for e in ht.statistics()["entries"]:
            d = dims.setdefault(e["dimension"], [0, 0])
            d[0] += e["raw_bytes"]
            d[1] += e["wire_bytes"]
        result["bytes"] = comm.reduce(dims, op=lambda x, y: {k: [x.get(k, [0, 0])[i] + y.get(k, [0, 0])[i] for i in range(2)] for k in set(x) | set(y)}, root=0)
    if rank == 0:
        print("RESULT " + json.dumps(result), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

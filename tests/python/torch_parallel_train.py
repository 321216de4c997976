"""A small transformer-style model trained for a few steps with one of PyTorch's parallel APIs,
on the backend named by the first argument (gloo or hycc); rank 0 prints one JSON line: the
losses, and under hycc the statistics of its calls per dimension. Run by
hycc_torch_parallel_test.py under torchrun:

    torchrun --standalone --nproc-per-node 4 torch_parallel_train.py hycc fsdp_tp

Modes: fsdp (FSDP2 fully_shard on a 1-D mesh), tp (DTensor ColwiseParallel/RowwiseParallel on a
1-D mesh), fsdp_tp (FSDP2 x TP on a 2 x N/2 mesh "dp", "tp"), ddp (DistributedDataParallel), pp
(a two-stage GPipe schedule of torch.distributed.pipelining).

Checkpoints (fsdp, tp, fsdp_tp, ddp; hycc_torch_state_test.py): with HYCC_TEST_CHECKPOINT=DIR and
HYCC_TEST_SAVE_AT=K each rank saves, before step K, its parameters (its shards), its data
generator and hycc.torch.state_dict() to DIR; with HYCC_TEST_RESUME=all (or =model: without
hycc's states) it loads them and trains steps K.. only.
"""
import json
import os
import sys

import torch
import torch.distributed as dist
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

BACKEND, MODE = sys.argv[1], sys.argv[2]
if BACKEND == "hycc":
    import hycc.torch as ht  # noqa: E402
torch.set_num_threads(1)
dist.init_process_group(BACKEND)
rank, world = dist.get_rank(), dist.get_world_size()
WIDTH, STEPS = 64, 8


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(WIDTH)
        self.up = nn.Linear(WIDTH, 4 * WIDTH)
        self.down = nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(self.norm(x))))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(WIDTH, 1)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def target(x):
    w = torch.randn(WIDTH, 1, generator=torch.Generator().manual_seed(7))
    return torch.tanh(x @ w / 4)


CHECKPOINT = os.environ.get("HYCC_TEST_CHECKPOINT")
SAVE_AT = int(os.environ.get("HYCC_TEST_SAVE_AT", "0"))
RESUME = os.environ.get("HYCC_TEST_RESUME", "")


def local(p):
    return p.to_local() if hasattr(p, "to_local") else p


def checkpoint(model, g, load):
    """Saves (or loads) this rank's parameters, data generator and hycc's gradient states."""
    path = os.path.join(CHECKPOINT, f"rank{rank}.pt")
    if not load:
        torch.save({"params": {n: local(p).detach().clone() for n, p in model.named_parameters()},
                    "data": g.get_state(),
                    "hycc": ht.state_dict() if BACKEND == "hycc" else None}, path)
        return
    saved = torch.load(path)
    with torch.no_grad():
        for n, p in model.named_parameters():
            local(p).copy_(saved["params"][n])
    g.set_state(saved["data"])
    if RESUME == "all" and BACKEND == "hycc":
        ht.load_state_dict(saved["hycc"])


STATES = {}  # hycc's gradient states when the checkpoint is saved and at the end


def train_sharded():
    """fsdp, tp, fsdp_tp, ddp: every rank runs the whole step; data differ across the dp ranks."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)
    torch.manual_seed(0)
    model = Net()
    tp_plan = {"up": ColwiseParallel(), "down": RowwiseParallel()}
    if MODE == "fsdp":
        mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("fsdp",))
        for b in model.blocks:
            fully_shard(b, mesh=mesh)
        fully_shard(model, mesh=mesh)
        dp_rank = rank
    elif MODE == "tp":
        mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("tp",))
        for b in model.blocks:
            parallelize_module(b, mesh, tp_plan)
        dp_rank = 0
    elif MODE == "ddp":
        model = nn.parallel.DistributedDataParallel(model)
        dp_rank = rank
    else:
        mesh = init_device_mesh("cpu", (2, world // 2), mesh_dim_names=("dp", "tp"))
        for b in model.blocks:
            parallelize_module(b, mesh["tp"], tp_plan)
            fully_shard(b, mesh=mesh["dp"])
        fully_shard(model, mesh=mesh["dp"])
        dp_rank = mesh["dp"].get_local_rank()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(100 + dp_rank)
    losses = []
    first = SAVE_AT if RESUME else 0
    if RESUME:
        checkpoint(model, g, load=True)
    for step in range(first, STEPS):
        if CHECKPOINT and not RESUME and step == SAVE_AT:
            checkpoint(model, g, load=False)
            if BACKEND == "hycc":
                STATES["saved"] = ht.gradient_states()
        x = torch.randn(16, WIDTH, generator=g)
        loss = nn.functional.mse_loss(model(x), target(x))
        opt.zero_grad()
        loss.backward()
        opt.step()
        avg = loss.detach().clone()
        dist.all_reduce(avg)
        losses.append(float(avg) / world)
    return losses


def train_pipeline():
    """pp: two stages, GPipe with two micro-batches; the last stage computes the loss."""
    from torch.distributed.pipelining import PipelineStage, ScheduleGPipe
    torch.manual_seed(0)
    layers = [nn.Linear(WIDTH, 4 * WIDTH), nn.ReLU(), nn.Linear(4 * WIDTH, WIDTH), nn.ReLU(),
              nn.Linear(WIDTH, 1)]
    part = nn.Sequential(*(layers[:2] if rank == 0 else layers[2:]))
    stage = PipelineStage(part, rank, world, torch.device("cpu"))
    schedule = ScheduleGPipe(stage, n_microbatches=2, loss_fn=nn.functional.mse_loss)
    opt = torch.optim.SGD(part.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(100)
    losses = []
    for _ in range(STEPS):
        x = torch.randn(16, WIDTH, generator=g)
        opt.zero_grad()
        if rank == 0:
            schedule.step(x)
            loss = torch.zeros(1)
        else:
            parts = []
            schedule.step(target=target(x), losses=parts)
            loss = torch.stack(parts).mean().detach().reshape(1)
        opt.step()
        dist.all_reduce(loss)
        losses.append(float(loss))
    return losses


losses = train_pipeline() if MODE == "pp" else train_sharded()
if rank == 0:
    out = {"backend": BACKEND, "mode": MODE, "losses": losses}
    if BACKEND == "hycc":
        out["policy"] = ht.policy_name()
        out["states"] = {**STATES, "end": ht.gradient_states()}
        out["compressed"] = {}
        for e in ht.statistics()["entries"]:
            key = e["dimension"]
            out["compressed"][key] = out["compressed"].get(key, 0) + e["compressed_calls"]
    print("RESULT " + json.dumps(out), flush=True)
dist.destroy_process_group()

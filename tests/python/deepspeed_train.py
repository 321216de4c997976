"""A small model trained for a few steps with DeepSpeed's ZeRO on the backend named by the first
argument (gloo or hycc), ZeRO stage the second (1 or 2); rank 0 prints one JSON line: the losses
and, under hycc, the calls per dimension and operation. Run by hycc_torch_deepspeed_test.py under
torchrun with DS_ACCELERATOR=cpu:

    torchrun --standalone --nproc-per-node 2 deepspeed_train.py hycc 2
"""
import json
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

BACKEND, STAGE, STEPS, WIDTH = sys.argv[1], int(sys.argv[2]), 8, 64
if BACKEND == "hycc":
    import hycc.torch as ht  # noqa: E402
import deepspeed  # noqa: E402
import torch.distributed as dist  # noqa: E402

torch.set_num_threads(1)
deepspeed.init_distributed(dist_backend=BACKEND)
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.ReLU(), nn.Linear(4 * WIDTH, WIDTH), nn.ReLU(),
                      nn.Linear(WIDTH, 1))
config = {"train_micro_batch_size_per_gpu": 16, "steps_per_print": 1000,
          "optimizer": {"type": "SGD", "params": {"lr": 0.05}}, "zero_allow_untested_optimizer": True,
          "zero_optimization": {"stage": STAGE, "reduce_bucket_size": 1 << 16,
                                "allgather_bucket_size": 1 << 16}}
engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                       config=config)
g = torch.Generator().manual_seed(100 + rank)
w = torch.randn(WIDTH, 1, generator=torch.Generator().manual_seed(7))
losses = []
for _ in range(STEPS):
    x = torch.randn(16, WIDTH, generator=g)
    loss = nn.functional.mse_loss(engine(x), torch.tanh(x @ w / 4))
    engine.backward(loss)
    engine.step()
    avg = loss.detach().clone()
    dist.all_reduce(avg)
    losses.append(float(avg) / world)
if rank == 0:
    out = {"backend": BACKEND, "stage": STAGE, "losses": losses}
    if BACKEND == "hycc":
        out["policy"] = ht.policy_name()
        out["calls"] = {f"{e['dimension']}/{e['operation']}": [e["calls"], e["compressed_calls"]]
                        for e in ht.statistics()["entries"]}
    print("RESULT " + json.dumps(out), flush=True)
dist.destroy_process_group()

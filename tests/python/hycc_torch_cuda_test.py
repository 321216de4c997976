"""hycc.torch on CUDA tensors, on a machine with a GPU: 2 ranks under torchrun (sharing the GPU
when there is one: hycc then stages its payloads over gloo; with a GPU each, over NCCL), a policy
that compresses every call (tests/python/cuda_every_call.toml), so that every call runs through
hycc's device collectives and none reaches the NCCL backend under it (which refuses ranks that
share a GPU). Checks, against gloo on CPU copies:
- every operation hycc takes, float32 and bfloat16, three counts: within the codec's error, the
  same on every rank, recorded as compressed;
- a call made on a side stream after a long kernel sees what that stream wrote (the lane waits
  for the caller's stream);
- an asynchronous call's future holds the CUDA result;
- DistributedDataParallel on CUDA trains (the same finite losses on every rank), where each
  rank has a GPU of its own.
Without CUDA it says so and exits 77 (ctest: skipped). HYCC_CUDA_TEST_DEVICE=cpu runs the same
checks on CPU tensors (the stream check aside): the test's own logic, where no GPU is.
Prints "hycc torch cuda: OK" when every check passed.
Usage: python hycc_torch_cuda_test.py
"""
import os
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
DEVICE = os.environ.get("HYCC_CUDA_TEST_DEVICE", "cuda")


def launch():
    if DEVICE == "cuda" and not torch.cuda.is_available():
        print("hycc torch cuda: SKIP: no CUDA device here")
        sys.exit(77)
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "HYCC_POLICY": os.path.join(HERE, "cuda_every_call.toml")}
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           "--nproc-per-node=2", os.path.abspath(__file__)], env=env, timeout=600)
    sys.exit(done.returncode)


if "LOCAL_RANK" not in os.environ:
    launch()

import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import hycc.torch as ht  # noqa: E402
from rank_checks import RankChecks  # noqa: E402

torch.set_num_threads(1)
if DEVICE == "cuda":
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]) % torch.cuda.device_count())
dist.init_process_group("hycc")
rank, size = dist.get_rank(), dist.get_world_size()
gloo = dist.new_group(backend="gloo")
BOUND = 0.05  # quant:bits=8 and ef2+quant:bits=6, relative L2, a reduction of 2 ranks
checks = RankChecks("hycc torch cuda", gloo)
expect, same_on_every_rank = checks.expect, checks.same_on_every_rank


def close(what, got, want):
    checks.within(what, got, want, BOUND)


def data(count, dtype, salt=0):
    g = torch.Generator().manual_seed(100 * rank + salt)
    return torch.randn(count, generator=g).to(dtype)


def counts():
    """This rank's calls through hycc so far and those of them that sent compressed streams."""
    entries = ht.statistics()["entries"]
    return (sum(e["calls"] for e in entries), sum(e["compressed_calls"] for e in entries))


for dtype in (torch.float32, torch.bfloat16):
    for count in (1, 1001, 300007):
        name = f"{DEVICE} {dtype} x {count}"
        before = counts()
        x = data(count, dtype)
        for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG):
            got, want = x.to(DEVICE), x.clone()
            dist.all_reduce(got, op=op)
            dist.all_reduce(want, group=gloo)
            if op == dist.ReduceOp.AVG:
                want.div_(size)
            close(f"all_reduce {op} {name}", got, want)
            expect(same_on_every_rank(got), f"all_reduce {op} {name}: ranks differ")
        got, want = x.to(DEVICE), x.clone()
        dist.all_reduce(got, op=dist._make_nccl_premul_sum(0.5))
        dist.all_reduce(want.mul_(0.5), group=gloo)
        close(f"all_reduce premul {name}", got, want)

        full = data(count * size, dtype, 1)
        got, want = torch.empty(count, dtype=dtype, device=DEVICE), torch.empty(count, dtype=dtype)
        dist.reduce_scatter_tensor(got, full.to(DEVICE))
        dist.reduce_scatter_tensor(want, full, group=gloo)
        close(f"reduce_scatter_tensor {name}", got, want)

        got = torch.empty(count * size, dtype=dtype, device=DEVICE)
        want = torch.empty(count * size, dtype=dtype)
        dist.all_gather_into_tensor(got, x.to(DEVICE))
        dist.all_gather_into_tensor(want, x, group=gloo)
        close(f"all_gather_into_tensor {name}", got, want)
        expect(same_on_every_rank(got), f"all_gather_into_tensor {name}: ranks differ")

        got = [torch.empty(count, dtype=dtype, device=DEVICE) for _ in range(size)]
        want = [torch.empty(count, dtype=dtype) for _ in range(size)]
        dist.all_gather(got, x.to(DEVICE))
        dist.all_gather(want, x, group=gloo)
        close(f"all_gather list {name}", torch.cat(got), torch.cat(want))

        got, want = x.to(DEVICE), x.clone()
        dist.broadcast(got, size - 1)
        dist.broadcast(want, size - 1, group=gloo)
        close(f"broadcast {name}", got, want)
        expect(same_on_every_rank(got), f"broadcast {name}: ranks differ")

        got, want = torch.empty(count * size, dtype=dtype, device=DEVICE), torch.empty_like(full)
        dist.all_to_all_single(got, full.to(DEVICE))
        dist.all_to_all_single(want, full, group=gloo)
        close(f"all_to_all_single {name}", got, want)
        # 8 calls through hycc, each compressed (but a broadcast on the rank that only
        # receives: it decodes, and sends no stream).
        calls, compressed = (now - then for now, then in zip(counts(), before))
        expect(calls == 8 and compressed >= 7, f"{name}: {compressed} of {calls} calls compressed")

# A call on a side stream, after a long kernel on it: the lane must wait for that stream.
if DEVICE == "cuda":
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        late = torch.zeros(300007, device=DEVICE)
        torch.cuda._sleep(200_000_000)  # about 0.1 s of GPU time before the fill
        late.fill_(rank + 1.0)
        dist.all_reduce(late)
    torch.cuda.synchronize()
    close("all_reduce after a long kernel on a side stream", late,
          torch.full((300007,), size * (size + 1) / 2))

# An asynchronous call's future.
x = data(200000, torch.float32, 3).to(DEVICE)
want = x.cpu()
dist.all_reduce(want, group=gloo)
work = dist.all_reduce(x, async_op=True)
result = work.get_future().wait()
got = result[0] if isinstance(result, list) else result
expect(got.device.type == DEVICE, f"the future's tensor is on {got.device}")
close("all_reduce future", got, want)

# DDP on the device, where each rank has a GPU of its own: DDP checks the parameters' shapes
# with an int64 all-gather, which hycc leaves to NCCL, and NCCL refuses ranks sharing a GPU.
own_gpus = DEVICE == "cpu" or torch.cuda.device_count() >= size
if not own_gpus and rank == 0:
    print("hycc torch cuda: DDP not checked (the ranks share a GPU)", flush=True)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 1)).to(DEVICE)
ddp = nn.parallel.DistributedDataParallel(model) if own_gpus else model
opt = torch.optim.SGD(ddp.parameters(), lr=0.02)
g = torch.Generator().manual_seed(7 + rank)
losses = []
for _ in range(5 if own_gpus else 0):
    xb = torch.randn(32, 256, generator=g).to(DEVICE)
    loss = nn.functional.mse_loss(ddp(xb), xb[:, :1])
    opt.zero_grad()
    loss.backward()
    opt.step()
    avg = loss.detach().clone().cpu()
    dist.all_reduce(avg, group=gloo)
    losses.append(float(avg) / size)
if own_gpus:
    expect(all(l == l and abs(l) < 1e6 for l in losses), f"DDP losses: {losses}")
    expect(losses[-1] < losses[0], f"DDP did not learn: {losses}")
    expect(same_on_every_rank(next(model.parameters()).detach()), "DDP: parameters differ")

status = checks.verdict("OK")
dist.destroy_process_group()
sys.exit(status)

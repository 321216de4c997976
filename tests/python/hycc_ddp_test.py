"""hycc.ddp under mpirun: a PyTorch DistributedDataParallel model (gloo process group, CPU)
whose gradient buckets go through hycc's allreduce. Checks: uncompressed hycc equals DDP's own
allreduce to float32 rounding; the emulated device path equals the host path bit for bit; the
hybrid policy (ef2+quant:bits=6 with error feedback on "dp") compresses every bucket, keeps the
replicas identical, gives the same bits with the allreduces on the worker thread (overlapping
the backward pass) as inside the hook, and trains as well as uncompressed DDP; PowerSGD on "dp"
compresses each weight matrix of every bucket (the hook passes the gradients' shapes) and trains;
bucket keys follow the bucket's tensors (DDP's rebuilt buckets do not inherit other tensors' state);
HookState refuses a misspelt setting when it is made.
Prints "hycc ddp: OK" on rank 0 when every check passed; exit status 1 otherwise.
Usage: HYCC_LIBRARY=build/lib/libhycc_c.so mpirun -n N python3 hycc_ddp_test.py
"""
import os
import sys

import numpy as np
import torch
import torch.distributed as dist
from mpi4py import MPI

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import hycc  # noqa: E402
from mpi_checks import dp_policy_file, expect, finish, identical_on_every_rank  # noqa: E402
import hycc.ddp  # noqa: E402

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
torch.set_num_threads(1)


hycc.ddp.init_process_group(world, master_addr="127.0.0.1")
expect(dist.get_rank() == rank and dist.get_world_size() == size,
       f"the process group has the communicator's ranks: {dist.get_rank()} of "
       f"{dist.get_world_size()}")

STEPS = 25


def train(hook_state=None):
    """Trains the same model on the same per-rank data; returns (parameters, last losses)."""
    torch.manual_seed(0)  # the same initial model everywhere (DDP also broadcasts it)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.Tanh(),
                                torch.nn.Linear(1024, 256), torch.nn.Tanh(),
                                torch.nn.Linear(256, 1))
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.25)
    if hook_state is not None:
        ddp.register_comm_hook(hook_state, hycc.ddp.allreduce_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(100 + rank)  # each rank its own batches
    w = torch.randn(256, 1, generator=torch.Generator().manual_seed(7))
    losses = []
    for _ in range(STEPS):
        x = torch.randn(64, 256, generator=g)
        y = torch.tanh(x @ w / 16)
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(world.allreduce(loss.item())) / size)
    return torch.cat([p.detach().flatten() for p in model.parameters()]).numpy(), losses


def expect_compressed_and_trained(engine, name, losses, min_ratio, max_gap):
    """Every dp bucket of every step compressed at least min_ratio x; the loss halved and within
    max_gap of uncompressed DDP's."""
    rows = [e for e in engine.stats(comm=world)["entries"]
            if e["dimension"] == "dp" and e["operation"] == "allreduce"]
    expect(len(rows) == 1 and rows[0]["calls"] >= STEPS * size and
           rows[0]["compressed_calls"] == rows[0]["calls"] and
           rows[0]["wire_bytes"] * min_ratio < rows[0]["raw_bytes"],
           f"{name}: every dp bucket compressed {min_ratio}x or more: {rows}")
    gap = losses[-1] / base_losses[-1] - 1
    expect(losses[-1] < 0.5 * losses[0] and abs(gap) < max_gap,
           f"{name} loss {losses[0]:.4f} -> {losses[-1]:.4f}, uncompressed "
           f"{base_losses[-1]:.4f} ({gap:+.2%})")


class FakeBucket:
    """What _bucket_key reads of a torch.distributed.GradBucket."""

    def __init__(self, index, params):
        self._index, self._params = index, params

    def index(self):
        return self._index

    def parameters(self):
        return self._params


def bucket_keys_follow_the_tensors():
    """Keys of one bucket layout agree across ranks (other Parameter objects, same model) and
    steps; a rebuilt bucket of the same index and size but other tensors gets another key (the
    index and size alone gave it the first layout's residuals before)."""
    def model():
        return [torch.nn.Parameter(torch.zeros(s)) for s in ((4, 3), (5,), (4, 3))]

    def key(state, index, params):
        buf = torch.zeros(sum(p.numel() for p in params))
        return hycc.ddp._bucket_key(state, FakeBucket(index, params), buf)

    a, b = hycc.ddp.HookState(overlap=False), hycc.ddp.HookState(overlap=False)
    pa, pb = model(), model()
    first = [key(a, 0, pa[:2]), key(a, 1, pa[2:])]
    expect(first == [key(b, 0, pb[:2]), key(b, 1, pb[2:])] and first[0] != first[1] and
           min(first) > 0, f"bucket keys agree across ranks: {first}")
    expect(key(a, 0, pa[:2]) == first[0], "a bucket keeps its key from step to step")
    rebuilt = key(a, 0, [pa[2], pa[1]])  # same index, same size, another matrix
    expect(rebuilt not in first and rebuilt == key(b, 0, [pb[2], pb[1]]),
           "a rebuilt bucket of other tensors gets another key, the same on every rank")


bucket_keys_follow_the_tensors()


def hook_state_refuses_bad_settings():
    """A misspelt setting stops HookState's construction, before any training step."""
    for name, value in (("check_arguments", "sometimes"), ("transport", "tcp"),
                        ("device_backend", "rocm"), ("algorithm", "tree")):
        try:
            hycc.ddp.HookState(overlap=False, **{name: value})
            expect(False, f"HookState({name}={value!r}) is refused")
        except hycc.InvalidArgument as e:
            expect(name in str(e) and repr(value) in str(e),
                   f"HookState({name}={value!r}) names the setting: {e}")


hook_state_refuses_bad_settings()
base, base_losses = train()
plain, _ = train(hycc.ddp.HookState(comm=world))
expect(np.allclose(plain, base, rtol=0, atol=1e-5),
       f"uncompressed hycc vs DDP's allreduce: {np.max(np.abs(plain - base))}")

host, _ = train(hycc.ddp.HookState(comm=world, codec="quant:bits=8", threshold=0,
                                   algorithm="ring", segment=1 << 16))
emulated, _ = train(hycc.ddp.HookState(comm=world, codec="quant:bits=8", threshold=0,
                                       segment=1 << 16, device_backend="emulation",
                                       check_arguments="never"))
expect(np.array_equal(host.view(np.uint32), emulated.view(np.uint32)),
       "the emulated device path (without the argument agreement) equals the host ring bit for "
       "bit")
expect(identical_on_every_rank(host), "quant:bits=8 replicas identical")

dp = world.Dup()
dp.Set_name("dp")
in_hook, _ = train(hycc.ddp.HookState(comm=dp, engine=hycc.Engine("hybrid"), overlap=False,
                                      check_arguments="never"))
engine = hycc.Engine("hybrid")
state = hycc.ddp.HookState(comm=dp, engine=engine)  # overlap: allreduces on the worker thread
hybrid, hybrid_losses = train(state)
state.close()
expect(identical_on_every_rank(hybrid), "hybrid replicas identical")
expect(np.array_equal(hybrid.view(np.uint32), in_hook.view(np.uint32)),
       "allreduces on the worker thread give the bits of allreduces in the hook (unchecked)")
expect_compressed_and_trained(engine, "hybrid", hybrid_losses, 4, 0.05)
# Checkpoints: a HookState restored from another's state_dict holds the same compressor state.
saved = state.state_dict()
restored = hycc.ddp.HookState(comm=dp, engine=hycc.Engine("hybrid"), overlap=False)
restored.load_state_dict(saved)
expect(restored.calls == state.calls and restored.engine.save_state() == saved["engine"] and
       len(saved["engine"]) > 1000, "state_dict / load_state_dict carry the residuals")
engine.close()

# PowerSGD on dp: the hook hands DDP's gradient shapes over (pieces), so each weight matrix of a
# bucket is compressed on its own (a flat bucket would go uncompressed).
engine = hycc.Engine(dp_policy_file("powersgd:rank=4"))
state = hycc.ddp.HookState(comm=dp, engine=engine)
lowrank, lowrank_losses = train(state)
state.close()
expect(identical_on_every_rank(lowrank), "powersgd replicas identical")
expect_compressed_and_trained(engine, "powersgd", lowrank_losses, 20, 0.1)
engine.close()
dp.Free()
dist.destroy_process_group()

finish("hycc ddp", f"losses {base_losses[0]:.4f} -> uncompressed {base_losses[-1]:.4f}, "
                   f"hybrid {hybrid_losses[-1]:.4f}, powersgd {lowrank_losses[-1]:.4f}; "
                   f"torch {torch.__version__}")

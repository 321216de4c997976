"""PyTorch DistributedDataParallel with hycc: a communication hook that sends every gradient
bucket through hycc's compressed allreduce (a codec, or a policy engine with error feedback).

    import hycc, hycc.ddp
    dp = MPI.COMM_WORLD.Dup(); dp.Set_name("dp")                  # the policy's dimension
    state = hycc.ddp.HookState(comm=dp, engine=hycc.Engine("hybrid"))
    model = torch.nn.parallel.DistributedDataParallel(model)
    model.register_comm_hook(state, hycc.ddp.allreduce_hook)

torch.distributed must be initialized (any backend: DDP still uses it to broadcast the initial
parameters); the gradients travel over MPI through hycc instead of the process group. CPU
buckets take the host collectives, CUDA buckets the device collectives on the current stream.
Autograd runs the hooks of CUDA buckets on its own device thread: MPI must then be initialized
with at least MPI_THREAD_SERIALIZED (mpi4py's default is MPI_THREAD_MULTIPLE).
"""
import numpy as np
import torch

from ._collectives import allreduce
from ._device import allreduce_device
from ._lib import InvalidArgument


class HookState:
    """comm: the data-parallel mpi4py communicator (same ranks as the process group). codec
    (spec or hycc.Codec) or engine (hycc.Engine: its rule for the communicator's name decides,
    e.g. "hybrid" runs ef+quant:bits=6 on "dp" with error feedback per bucket). threshold,
    segment, algorithm: as for hycc.allreduce (algorithm: host buckets only). device_backend:
    "cuda", or "emulation" to run the device algorithm on CPU buckets (tests). transport: the
    device transport ("auto", "mpi", "nccl")."""

    def __init__(self, comm=None, codec=None, engine=None, threshold=None, segment=None,
                 algorithm="auto", device_backend="cuda", transport="auto"):
        if codec is not None and engine is not None:
            raise InvalidArgument("hycc.ddp: give a codec or an engine, not both")
        self.comm, self.codec, self.engine = comm, codec, engine
        self.threshold, self.segment, self.algorithm = threshold, segment, algorithm
        self.device_backend, self.transport = device_backend, transport
        self.calls = 0  # the stochastic-rounding seed of each call


def _bucket_key(bucket, buf):
    # Stable across steps, and distinct when DDP rebuilds its buckets after the first step (a
    # bucket index may then hold other parameters): the index and the size together.
    return 1 + (bucket.index() << 32) + buf.numel()


def _require_thread_level():
    from mpi4py import MPI
    if MPI.Query_thread() < MPI.THREAD_SERIALIZED:
        raise InvalidArgument("hycc.ddp: CUDA buckets are reduced on autograd's device thread, "
                              "which needs MPI initialized with MPI_THREAD_SERIALIZED or more")


def allreduce_hook(state, bucket):
    """The DDP communication hook: the bucket averaged over the ranks in place."""
    buf = bucket.buffer()
    kw = dict(comm=state.comm, codec=state.codec, engine=state.engine,
              key=_bucket_key(bucket, buf), seed=state.calls)
    if state.threshold is not None:
        kw["threshold"] = state.threshold
    if state.segment is not None:
        kw["segment"] = state.segment
    if buf.is_cuda or state.device_backend == "emulation":
        if buf.is_cuda:
            _require_thread_level()
        stream = torch.cuda.current_stream(buf.device).cuda_stream if buf.is_cuda else None
        allreduce_device(buf, op="avg", backend="cuda" if buf.is_cuda else "emulation",
                         transport=state.transport, stream=stream, **kw)
    else:
        if buf.dtype == torch.bfloat16:  # numpy has no bfloat16: its bits as uint16
            array, kw["dtype"] = buf.view(torch.int16).numpy().view(np.uint16), "bf16"
        else:
            array = buf.numpy()
        allreduce(array, op="avg", algorithm=state.algorithm, **kw)
    state.calls += 1
    future = torch.futures.Future()
    future.set_result(buf)
    return future

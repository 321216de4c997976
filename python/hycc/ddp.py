"""PyTorch DistributedDataParallel with hycc: a communication hook that sends every gradient
bucket through hycc's compressed allreduce (a codec, or a policy engine with error feedback).

    import hycc, hycc.ddp
    dp = MPI.COMM_WORLD.Dup(); dp.Set_name("dp")                  # the policy's dimension
    state = hycc.ddp.HookState(comm=dp, engine=hycc.Engine("hybrid"))
    model = torch.nn.parallel.DistributedDataParallel(model)
    model.register_comm_hook(state, hycc.ddp.allreduce_hook)

torch.distributed must be initialized (any backend: DDP still uses it to broadcast the initial
parameters), e.g. with init_process_group(MPI.COMM_WORLD) below under mpirun; the gradients
travel over MPI through hycc instead of the process group. CPU
buckets take the host collectives, CUDA buckets the device collectives on the current stream.
By default (overlap=True) the allreduces run on a worker thread of the state, one bucket after
the other in the order DDP hands them over (the same on every rank), while autograd computes the
gradients of the next buckets: MPI must then be initialized with MPI_THREAD_MULTIPLE (mpi4py's
default). overlap=False runs each allreduce inside the hook; autograd runs the hooks of CUDA
buckets on its own device thread, so that still needs MPI_THREAD_SERIALIZED or more.
"""
import concurrent.futures
import datetime
import math
import os
import socket

import numpy as np
import torch

from ._collectives import _ALGORITHMS, allreduce
from ._device import _BACKENDS, _TRANSPORTS, allreduce_device
from ._lib import InvalidArgument
from ._options import _CHECKS


def init_process_group(comm, backend="gloo", master_addr=None,
                       timeout=datetime.timedelta(minutes=30)):
    """Initializes torch.distributed on the ranks of an mpi4py communicator (its rank and size)
    without MASTER_PORT: rank 0 opens the rendezvous store on a port the system chooses and sends
    its address and port to the others over MPI, so no other process can take the port in
    between (as one can between finding a free port and listening on it). master_addr: rank 0's
    address as the other ranks reach it (default: $MASTER_ADDR, else rank 0's host name). Returns
    the store. Collective over comm."""
    import torch.distributed as dist

    rank, size = comm.Get_rank(), comm.Get_size()
    if rank == 0:
        try:
            addr = master_addr or os.environ.get("MASTER_ADDR") or socket.getfqdn()
            # Not waiting for the others here: they learn the port from the broadcast below.
            store = dist.TCPStore(addr, 0, size, True, timeout=timeout, wait_for_workers=False)
            comm.bcast((addr, store.port, None), root=0)
        except Exception as e:
            comm.bcast((None, None, f"{type(e).__name__}: {e}"), root=0)
            raise
    else:
        addr, port, error = comm.bcast(None, root=0)
        if error is not None:
            raise RuntimeError(f"hycc.ddp.init_process_group: rank 0 could not open the "
                               f"store: {error}")
        store = dist.TCPStore(addr, port, size, False, timeout=timeout)
    dist.init_process_group(backend, store=store, rank=rank, world_size=size, timeout=timeout)
    return store


class HookState:
    """comm: the data-parallel mpi4py communicator (same ranks as the process group). codec
    (spec or hycc.Codec) or engine (hycc.Engine: its rule for the communicator's name decides,
    e.g. "hybrid" runs ef2+quant:bits=6 on "dp" with error feedback per bucket; the hook passes
    the shapes of the bucket's gradients, so that a powersgd rule compresses each matrix). threshold,
    segment, algorithm: as for hycc.allreduce (algorithm: host buckets only). device_backend:
    "cuda", or "emulation" to run the device algorithm on CPU buckets (tests). transport: the
    device transport ("auto", "mpi", "nccl"). overlap: run the allreduces on a worker thread,
    overlapping the backward pass (default), or inside the hook. check_arguments: "auto"
    (default), "always", or "never": DDP gives every rank the same buckets in the same order, so
    "never" saves each allreduce its agreement round trip (hycc.allreduce). close() stops the
    worker."""

    def __init__(self, comm=None, codec=None, engine=None, threshold=None, segment=None,
                 algorithm="auto", device_backend="cuda", transport="auto", overlap=True,
                 check_arguments="auto"):
        if codec is not None and engine is not None:
            raise InvalidArgument("hycc.ddp: give a codec or an engine, not both")
        # Checked here, not at the first allreduce: a typo stops the script before training.
        for name, value, allowed in (("algorithm", algorithm, _ALGORITHMS),
                                     ("device_backend", device_backend, _BACKENDS),
                                     ("transport", transport, _TRANSPORTS),
                                     ("check_arguments", check_arguments, _CHECKS)):
            if value not in allowed:
                raise InvalidArgument(f"hycc.ddp: {name} {value!r} is not one of "
                                      f"{sorted(allowed)}")
        self.comm, self.codec, self.engine = comm, codec, engine
        self.threshold, self.segment, self.algorithm = threshold, segment, algorithm
        self.device_backend, self.transport = device_backend, transport
        self.check_arguments = check_arguments
        self.calls = 0  # the stochastic-rounding seed of each call
        self._names = {}  # id(parameter) -> (bucket index, position) where it first appeared
        self._worker = None
        if overlap:
            _require_thread_level("overlap=True", "MULTIPLE")
            # One thread: the buckets are reduced in the order they arrive, as on every rank.
            self._worker = concurrent.futures.ThreadPoolExecutor(1, "hycc-ddp")

    def state_dict(self):
        """What a checkpoint needs to continue with the same bits: the call counter (the
        stochastic-rounding seeds) and the engine's gradient compressor state (error-feedback
        residuals, PowerSGD's Q). Waits for the allreduces in flight."""
        if self._worker is not None:
            self._worker.submit(lambda: None).result()  # one thread: everything before is done
        engine = self.engine.save_state() if self.engine is not None else None
        return {"calls": self.calls, "engine": engine}

    def load_state_dict(self, state):
        """Restores what state_dict() returned (before the first step of the resumed run)."""
        self.calls = int(state["calls"])
        if state.get("engine") is not None:
            if self.engine is None:
                raise InvalidArgument("hycc.ddp: the state holds an engine's state; this "
                                      "HookState has no engine")
            self.engine.load_state(state["engine"], backend=self.device_backend)

    def close(self):
        """Waits for the allreduces in flight and stops the worker thread."""
        if self._worker is not None:
            self._worker.shutdown(wait=True)
            self._worker = None


def _bucket_key(state, bucket, buf):
    # One key per bucket layout, the same on every rank and at every step: each parameter is
    # named by where it first appeared (bucket index, position: DDP's first buckets are the same
    # on every rank), and the key hashes the names of the bucket's parameters in order, with its
    # size. When DDP rebuilds its buckets after the first step, a bucket index that now holds
    # other parameters gets another key, so no error-feedback residual or PowerSGD factor made
    # for some tensors is applied to others, even where the sizes happen to agree.
    h = 0xCBF29CE484222325  # FNV-1a over 64-bit words
    for position, p in enumerate(bucket.parameters()):
        first_index, first_position = state._names.setdefault(id(p), (bucket.index(), position))
        for word in (first_index, first_position):
            h = ((h ^ word) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    h = ((h ^ buf.numel()) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return 1 + h % (2**63 - 1)  # never 0 (0 asks for a key from the buffer's address)


def _bucket_pieces(bucket, buf):
    # The shapes of the bucket's gradients, laid end to end in its buffer (PowerSGD compresses
    # each matrix among them); None if they do not tile the buffer.
    shapes = [tuple(g.shape) for g in bucket.gradients()]
    if sum(math.prod(s) for s in shapes) != buf.numel():
        return None
    return shapes


def _require_thread_level(why, level):
    from mpi4py import MPI
    if MPI.Query_thread() < getattr(MPI, "THREAD_" + level):
        raise InvalidArgument(f"hycc.ddp: {why} calls MPI from another thread, which needs MPI "
                              f"initialized with MPI_THREAD_{level} or more")


def _reduce(state, buf, kw):
    """Averages one bucket in place (on whichever thread runs it)."""
    if buf.is_cuda or state.device_backend == "emulation":
        allreduce_device(buf, op="avg", backend="cuda" if buf.is_cuda else "emulation",
                         transport=state.transport, **kw)
    else:
        if buf.dtype == torch.bfloat16:  # numpy has no bfloat16: its bits as uint16
            array, kw["dtype"] = buf.view(torch.int16).numpy().view(np.uint16), "bf16"
        else:
            array = buf.numpy()
        allreduce(array, op="avg", algorithm=state.algorithm, **kw)
    return buf


def allreduce_hook(state, bucket):
    """The DDP communication hook: the bucket averaged over the ranks in place."""
    buf = bucket.buffer()
    kw = dict(comm=state.comm, codec=state.codec, engine=state.engine,
              key=_bucket_key(state, bucket, buf), seed=state.calls,
              check_arguments=state.check_arguments)
    state.calls += 1
    if state.engine is not None:
        kw["pieces"] = _bucket_pieces(bucket, buf)
    if state.threshold is not None:
        kw["threshold"] = state.threshold
    if state.segment is not None:
        kw["segment"] = state.segment
    if buf.is_cuda:
        # The stream autograd produced the bucket on: the device allreduce queues after it.
        kw["stream"] = torch.cuda.current_stream(buf.device).cuda_stream
    future = torch.futures.Future()
    if state._worker is None:
        if buf.is_cuda:
            _require_thread_level("a hook of CUDA buckets (autograd's device thread)",
                                  "SERIALIZED")
        future.set_result(_reduce(state, buf, kw))
        return future

    def run():
        try:
            future.set_result(_reduce(state, buf, kw))
        except BaseException as e:  # noqa: BLE001 - DDP's wait() raises it on its thread
            future.set_exception(e)

    state._worker.submit(run)
    return future

"""Collectives on device memory (CUDA tensors) through the device C API."""
import contextlib
import ctypes

from ._arrays import comm_handle, dtype_from_name
from ._codec import Codec
from ._lib import CallStats, DeviceOptions, InvalidArgument, check, lib

_BACKENDS = {"cuda": 0, "emulation": 1}
_TRANSPORTS = {"auto": 0, "mpi": 1, "nccl": 2}
_TORCH_DTYPES = {"torch.float32": "f32", "torch.float16": "f16", "torch.bfloat16": "bf16"}


def device_count():
    """CUDA devices hycc can use (0 in a build without CUDA or on a machine without a GPU)."""
    return lib.hycc_device_count()


def _tensor(t, dtype):
    """(pointer, element count, hycc dtype) of a contiguous torch tensor, or of a raw pointer
    with count and dtype given as (pointer, count)."""
    if isinstance(t, tuple):
        ptr, count = t
        return ctypes.c_void_p(ptr), count, dtype_from_name(dtype or "f32")
    if not t.is_contiguous():
        raise InvalidArgument("hycc: the tensor must be contiguous")
    name = _TORCH_DTYPES.get(str(t.dtype))
    if name is None:
        raise InvalidArgument(f"hycc: tensors of {t.dtype} are not supported: float32, float16, "
                              "bfloat16")
    return ctypes.c_void_p(t.data_ptr()), t.numel(), dtype_from_name(name)


def _on_device_of(tensor):
    """The tensor's CUDA device as the thread's current one while hycc runs (hycc's CUDA backend
    takes the calling thread's current device)."""
    if getattr(tensor, "is_cuda", False):
        import torch
        return torch.cuda.device(tensor.device)
    return contextlib.nullcontext()


_KEYWORDS = {"comm", "codec", "engine", "backend", "transport", "segment", "threshold", "seed",
             "tag", "key", "stream", "checksum", "stats", "dtype"}


def _options(kw):
    unknown = set(kw) - _KEYWORDS
    if unknown:  # a misspelt keyword must not silently run uncompressed
        raise TypeError(f"hycc: unknown keyword(s) {sorted(unknown)}; expected {sorted(_KEYWORDS)}")
    o = DeviceOptions()
    lib.hycc_device_options_init(ctypes.byref(o))
    keep = None
    if kw.get("codec") is not None:
        keep = kw["codec"] if isinstance(kw["codec"], Codec) else Codec(kw["codec"])
        o.codec = keep.handle
    if kw.get("engine") is not None:
        o.engine = kw["engine"].handle
    backend, transport = kw.get("backend", "cuda"), kw.get("transport", "auto")
    if backend not in _BACKENDS or transport not in _TRANSPORTS:
        raise InvalidArgument(f"hycc: backend in {sorted(_BACKENDS)}, transport in "
                              f"{sorted(_TRANSPORTS)}; not {backend!r}, {transport!r}")
    o.backend, o.transport = _BACKENDS[backend], _TRANSPORTS[transport]
    if kw.get("segment") is not None:
        o.segment_bytes = kw["segment"]
    if kw.get("threshold") is not None:
        o.threshold_bytes = kw["threshold"]
    o.seed, o.tag, o.key = kw.get("seed", 0), kw.get("tag", 0), kw.get("key", 0)
    o.stream = kw.get("stream")
    o.checksum = 1 if kw.get("checksum", True) else 0
    if kw.get("stats") is not None:
        if not isinstance(kw["stats"], CallStats):
            raise InvalidArgument("hycc: stats must be a hycc.CallStats")
        o.stats = ctypes.pointer(kw["stats"])
    return o, keep


def allreduce_device(tensor, op="sum", **kw):
    """In place: tensor = op ("sum" or "avg") over ranks, on the device (collectives_device.h).
    tensor: a contiguous CUDA torch tensor, or (pointer, count) with dtype=. Keywords: comm,
    codec, engine, stream (a cudaStream_t as an int, e.g. torch.cuda.current_stream().cuda_stream),
    backend ("cuda"; "emulation": host memory, the device algorithm on the CPU), transport
    ("auto", "mpi", "nccl"), segment, threshold, seed, tag, key, checksum, stats, dtype."""
    ptr, count, code = _tensor(tensor, kw.get("dtype"))
    if op not in ("sum", "avg", "average"):
        raise InvalidArgument(f"hycc: op {op!r} is not 'sum' or 'avg'")
    o, _keep = _options(kw)
    with _on_device_of(tensor):
        check(lib.hycc_allreduce_device(ptr, ptr, count, code, 0 if op == "sum" else 1,
                                        comm_handle(kw.get("comm")), ctypes.byref(o)))
    return tensor


def broadcast_device(tensor, root=0, **kw):
    """tensor on every rank = tensor of root, on the device. Keywords as allreduce_device."""
    ptr, count, code = _tensor(tensor, kw.get("dtype"))
    o, _keep = _options(kw)
    with _on_device_of(tensor):
        check(lib.hycc_broadcast_device(ptr, count, code, root, comm_handle(kw.get("comm")),
                                        ctypes.byref(o)))
    return tensor

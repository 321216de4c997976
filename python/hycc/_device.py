"""Codecs and collectives on device memory (CUDA tensors) through the device C API. Every
function takes a contiguous torch tensor, a numpy array (host memory: for the "emulation"
backend), or (pointer, count) with dtype=."""
import contextlib
import ctypes

import numpy as np

from ._arrays import comm_handle, dtype_code, dtype_from_name
from ._codec import as_codec
from ._lib import ABI_VERSION, DeviceOptions, InvalidArgument, check, lib
from ._options import check_keywords, fill_common, op_code

_BACKENDS = {"cuda": 0, "emulation": 1}
_TRANSPORTS = {"auto": 0, "mpi": 1, "nccl": 2}
_TORCH_DTYPES = {"torch.float32": "f32", "torch.float16": "f16", "torch.bfloat16": "bf16"}


def device_count():
    """CUDA devices hycc can use (0 in a build without CUDA or on a machine without a GPU)."""
    return lib.hycc_device_count()


def _tensor(t, dtype=None):
    """(pointer, element count, hycc dtype) of a torch tensor, a numpy array or (pointer, count)."""
    if isinstance(t, tuple):
        ptr, count = t
        return ctypes.c_void_p(ptr), count, dtype_from_name(dtype or "f32")
    if isinstance(t, np.ndarray):
        if not t.flags.c_contiguous:
            raise InvalidArgument("hycc: the array must be C-contiguous")
        return ctypes.c_void_p(t.ctypes.data if t.size else 0), t.size, dtype_code(t, dtype)
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


def _options(kw):
    """hycc_device_options from the keywords of a device call."""
    check_keywords(kw, {"backend", "transport", "stream", "checksum", "stream_ordered"})
    o = DeviceOptions()
    lib.hycc_device_options_init_abi(ctypes.byref(o), ABI_VERSION)
    keep = fill_common(o, kw)
    backend, transport = kw.get("backend", "cuda"), kw.get("transport", "auto")
    if backend not in _BACKENDS or transport not in _TRANSPORTS:
        raise InvalidArgument(f"hycc: backend in {sorted(_BACKENDS)}, transport in "
                              f"{sorted(_TRANSPORTS)}; not {backend!r}, {transport!r}")
    o.backend, o.transport = _BACKENDS[backend], _TRANSPORTS[transport]
    o.stream = kw.get("stream")
    o.checksum = 1 if kw.get("checksum", True) else 0
    o.stream_ordered = 1 if kw.get("stream_ordered", False) else 0
    return o, keep  # keep: the codec and pieces must outlive the call


def _run(call, anchor, kw, *args):
    """Runs a device C call with the options of kw on the device of `anchor`."""
    o, _keep = _options(kw)
    with _on_device_of(anchor):
        check(call(*args, comm_handle(kw.get("comm")), ctypes.byref(o)))


def allreduce_device(tensor, op="sum", **kw):
    """In place: tensor = op ("sum" or "avg") over ranks, on the device (collectives_device.h).
    Keywords: comm, codec, engine, stream (a cudaStream_t as an int, e.g.
    torch.cuda.current_stream().cuda_stream), backend ("cuda"; "emulation": host memory, the
    device algorithm on the CPU), transport ("auto", "mpi", "nccl"), segment, threshold, seed,
    tag, key, checksum, stats, dtype, check_arguments (as hycc.allreduce), stream_ordered (True:
    return once queued on the stream, NCCL's contract)."""
    ptr, count, code = _tensor(tensor, kw.get("dtype"))
    _run(lib.hycc_allreduce_device, tensor, kw, ptr, ptr, count, code, op_code(op))
    return tensor


def reduce_scatter_device(send, recv, op="sum", **kw):
    """recv = this rank's chunk of op over ranks of send, on the device."""
    s, n, code = _tensor(send, kw.get("dtype"))
    r, _, _ = _tensor(recv, kw.get("dtype"))
    _run(lib.hycc_reduce_scatter_device, send, kw, s, n, r, code, op_code(op))
    return recv


def allgather_device(send, recv, **kw):
    """recv = every rank's send in rank order, on the device."""
    s, n, code = _tensor(send, kw.get("dtype"))
    r, _, _ = _tensor(recv, kw.get("dtype"))
    _run(lib.hycc_allgather_device, send, kw, s, n, r, code)
    return recv


def broadcast_device(tensor, root=0, **kw):
    """tensor on every rank = tensor of root, on the device."""
    ptr, count, code = _tensor(tensor, kw.get("dtype"))
    _run(lib.hycc_broadcast_device, tensor, kw, ptr, count, code, root)
    return tensor


def alltoall_device(send, recv=None, **kw):
    """Block j of send goes to rank j, block i of recv comes from rank i; in place when recv is
    None."""
    s, n, code = _tensor(send, kw.get("dtype"))
    r = s if recv is None else _tensor(recv, kw.get("dtype"))[0]
    _run(lib.hycc_alltoall_device, send, kw, s, r, n, code)
    return send if recv is None else recv


def send_device(data, dest, tag=0, **kw):
    """Sends device data to dest, compressed with the codec (or the engine's choice)."""
    ptr, count, code = _tensor(data, kw.get("dtype"))
    _run(lib.hycc_send_device, data, kw, ptr, count, code, dest, tag)


def recv_device(data, source=None, tag=0, **kw):
    """Receives into device data from source (None: any source); returns the sender. Keywords:
    comm, backend, transport, stream, dtype (the message names its codec)."""
    ptr, count, code = _tensor(data, kw.get("dtype"))
    if source is None:
        from mpi4py import MPI
        source = MPI.ANY_SOURCE
    sender = ctypes.c_int(-1)
    o, _keep = _options(kw)
    with _on_device_of(data):
        check(lib.hycc_recv_device(ptr, count, code, source, tag, comm_handle(kw.get("comm")),
                                   ctypes.byref(o), ctypes.byref(sender)))
    return sender.value


def max_payload_bytes(codec, count, dtype="f32"):
    """Upper bound of a device payload (a stream without its 48-byte header)."""
    codec = as_codec(codec)
    out = ctypes.c_size_t()
    check(lib.hycc_max_payload_bytes(codec.handle, dtype_from_name(dtype), count,
                                     ctypes.byref(out)))
    return out.value


def encode_device(codec, tensor, payload, seed=0, stream=None, dtype=None):
    """Encodes a device tensor into `payload` (device memory of max_payload_bytes, e.g. a uint8
    CUDA tensor); returns the payload's size in bytes: the bytes after the header of the stream
    hycc.Codec.compress writes for the same input and seed."""
    codec = as_codec(codec)
    ptr, count, code = _tensor(tensor, dtype)
    out, capacity = _bytes_of(payload)
    size = ctypes.c_size_t()
    with _on_device_of(tensor):
        check(lib.hycc_encode_device(codec.handle, code, count, ptr, out, capacity, seed, stream,
                                     ctypes.byref(size)))
    return size.value


def decode_device(codec, payload, nbytes, tensor, stream=None, dtype=None):
    """Decodes nbytes of a device payload of the codec into a device tensor."""
    codec = as_codec(codec)
    ptr, count, code = _tensor(tensor, dtype)
    src, capacity = _bytes_of(payload)
    if nbytes > capacity:
        raise InvalidArgument(f"hycc: nbytes {nbytes} exceeds the payload's {capacity} bytes")
    with _on_device_of(tensor):
        check(lib.hycc_decode_device(codec.handle, src, nbytes, code, count, ptr, stream))
    return tensor


def _bytes_of(buffer):
    """(pointer, size in bytes) of a byte buffer: a torch tensor, a numpy array or (ptr, size)."""
    if isinstance(buffer, tuple):
        return ctypes.c_void_p(buffer[0]), buffer[1]
    if isinstance(buffer, np.ndarray):
        return ctypes.c_void_p(buffer.ctypes.data), buffer.nbytes
    return ctypes.c_void_p(buffer.data_ptr()), buffer.numel() * buffer.element_size()

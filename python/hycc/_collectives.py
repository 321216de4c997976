"""Compressed collectives and point to point on numpy arrays (or CPU tensors numpy shares)."""
import ctypes

from ._arrays import as_array, comm_handle, dtype_code, pointer
from ._lib import ABI_VERSION, InvalidArgument, Options, check, lib
from ._options import check_keywords, fill_common, op_code

_ALGORITHMS = {"auto": 0, "native": 1, "ring": 2, "rd": 3, "recursive_doubling": 3,
               "compress_once": 4, "chain": 5, "pairwise": 6, "two_level": 7}


def _common(kw):
    """hycc_options from the keywords of a host call."""
    check_keywords(kw, {"algorithm"})
    o = Options()
    lib.hycc_options_init_abi(ctypes.byref(o), ABI_VERSION)
    keep = fill_common(o, kw)
    algorithm = kw.get("algorithm", "auto")
    if algorithm not in _ALGORITHMS:
        raise InvalidArgument(f"hycc: algorithm {algorithm!r} is not one of {sorted(_ALGORITHMS)}")
    o.algorithm = _ALGORITHMS[algorithm]
    return o, keep  # keep: the codec and pieces must outlive the call


_DOC = """
    Keywords: comm (mpi4py communicator, default COMM_WORLD), codec (spec or Codec; default none),
    engine (Engine: its policy chooses the codec by the communicator's name), algorithm,
    threshold (bytes; below it the native MPI call), segment (bytes), seed, tag, key (error
    feedback id), pieces (the shapes of a gradient bucket's tensors, for a powersgd rule), dtype ("bf16" for uint16 arrays of bfloat16 bits), stats (a CallStats to fill),
    check_arguments ("auto", "always" or "never": whether the ranks first agree on the call's
    arguments, one small MPI_Allreduce; "never" saves it where the caller guarantees agreement).
"""


def allreduce(send, recv=None, op="sum", **kw):
    """recv = op ("sum" or "avg") over ranks of send; in place when recv is None."""
    s = as_array(send, writable=recv is None, what="send")
    code = dtype_code(s, kw.get("dtype"))
    r = s if recv is None else as_array(recv, writable=True, what="recv")
    o, _keep = _common(kw)
    check(lib.hycc_allreduce(pointer(s), pointer(r), s.size, code,
                             op_code(op), comm_handle(kw.get("comm")), ctypes.byref(o)))
    return send if recv is None else recv


def reduce_scatter(send, recv, op="sum", **kw):
    """recv = this rank's chunk (chunk_range) of op over ranks of send."""
    s = as_array(send, what="send")
    r = as_array(recv, writable=True, what="recv")
    o, _keep = _common(kw)
    check(lib.hycc_reduce_scatter(pointer(s), s.size, pointer(r), dtype_code(s, kw.get("dtype")),
                                  op_code(op), comm_handle(kw.get("comm")), ctypes.byref(o)))
    return recv


def allgather(send, recv, **kw):
    """recv = every rank's send, in rank order (recv holds size * send.size elements)."""
    s = as_array(send, what="send")
    r = as_array(recv, writable=True, what="recv")
    o, _keep = _common(kw)
    check(lib.hycc_allgather(pointer(s), s.size, pointer(r), dtype_code(s, kw.get("dtype")),
                             comm_handle(kw.get("comm")), ctypes.byref(o)))
    return recv


def broadcast(buffer, root=0, **kw):
    """buffer on every rank = buffer of root."""
    b = as_array(buffer, writable=True, what="buffer")
    o, _keep = _common(kw)
    check(lib.hycc_broadcast(pointer(b), b.size, dtype_code(b, kw.get("dtype")), root,
                             comm_handle(kw.get("comm")), ctypes.byref(o)))
    return buffer


def alltoall(send, recv=None, **kw):
    """Block j of send goes to rank j, block i of recv comes from rank i; in place when recv is
    None."""
    s = as_array(send, writable=recv is None, what="send")
    r = s if recv is None else as_array(recv, writable=True, what="recv")
    o, _keep = _common(kw)
    check(lib.hycc_alltoall(pointer(s), pointer(r), s.size,
                            dtype_code(s, kw.get("dtype")), comm_handle(kw.get("comm")),
                            ctypes.byref(o)))
    return send if recv is None else recv


def send(data, dest, tag=0, **kw):
    """Sends data to dest, compressed with the codec (or the engine's choice)."""
    d = as_array(data, what="data")
    o, _keep = _common(kw)
    check(lib.hycc_send(pointer(d), d.size, dtype_code(d, kw.get("dtype")), dest, tag,
                        comm_handle(kw.get("comm")), ctypes.byref(o)))


def recv(data, source=None, tag=0, comm=None, dtype=None):
    """Receives into data from source (None: any source); returns the sender. The message names
    its codec."""
    d = as_array(data, writable=True, what="data")
    sender = ctypes.c_int(-1)
    if source is None:
        from mpi4py import MPI
        source = MPI.ANY_SOURCE
    check(lib.hycc_recv(pointer(d), d.size, dtype_code(d, dtype), source, tag, comm_handle(comm),
                        ctypes.byref(sender)))
    return sender.value


for _f in (allreduce, reduce_scatter, allgather, broadcast, alltoall, send):
    _f.__doc__ += _DOC

"""hycc from Python: codecs, compressed collectives and the compression policy over
libhycc_c.so (ctypes), on numpy arrays and mpi4py communicators. docs/c_api.md.

    import hycc
    from mpi4py import MPI
    stream = hycc.Codec("quant:bits=4").compress(grad)      # numpy float32 -> uint8 stream
    grad2 = hycc.decompress(stream)
    hycc.allreduce(grad, op="avg", codec="quant:bits=8")    # in place, over COMM_WORLD

hycc.ddp (imports torch) has a DistributedDataParallel communication hook.
The library is found through HYCC_LIBRARY, next to this package, in a source checkout's
build/lib, or on the loader's path.
"""
from ._codec import Codec, codec_help, decompress, inspect
from ._collectives import allgather, allreduce, alltoall, broadcast, recv, reduce_scatter, send
from ._device import (allgather_device, allreduce_device, alltoall_device, broadcast_device,
                      decode_device, device_count, encode_device, max_payload_bytes,
                      recv_device, reduce_scatter_device, send_device)
from ._engine import Engine
from ._lib import (CallStats, CommError, CorruptStream, HyccError, InvalidArgument, IoError,
                   Unavailable, lib)

__version__ = lib.hycc_version().decode()

__all__ = ["Codec", "codec_help", "decompress", "inspect", "allgather", "allreduce", "alltoall",
           "broadcast", "recv", "reduce_scatter", "send", "allgather_device", "allreduce_device",
           "alltoall_device", "broadcast_device", "decode_device", "device_count", "encode_device",
           "max_payload_bytes", "recv_device", "reduce_scatter_device", "send_device", "Engine", "CallStats", "CommError",
           "CorruptStream", "HyccError", "InvalidArgument", "IoError", "Unavailable",
           "__version__"]

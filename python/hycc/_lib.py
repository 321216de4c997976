"""Loading libhycc_c.so, the C prototypes, and statuses as exceptions."""
import ctypes
import os
import pathlib

c_size_p = ctypes.POINTER(ctypes.c_size_t)
c_void_pp = ctypes.POINTER(ctypes.c_void_p)

F32, BF16, F16 = 0, 1, 2


class HyccError(RuntimeError):
    """A failed hycc call; the message is the library's."""


class InvalidArgument(HyccError, ValueError):
    """A bad spec, buffer, size or argument."""


class CorruptStream(HyccError):
    """A malformed, truncated or corrupted compressed stream."""


class CommError(HyccError):
    """MPI failed, MPI is not running, or ranks disagree on a call's arguments."""


class IoError(HyccError, OSError):
    """A file could not be read or written."""


class Unavailable(HyccError):
    """Not in this build (e.g. the device codecs without CUDA or a GPU)."""


_ERRORS = {1: InvalidArgument, 2: CorruptStream, 3: CommError, 4: IoError, 5: Unavailable,
           6: MemoryError}


def _candidates():
    if os.environ.get("HYCC_LIBRARY"):
        yield os.environ["HYCC_LIBRARY"]
    here = pathlib.Path(__file__).resolve().parent
    yield str(here / "libhycc_c.so")
    try:  # an installed package (cmake --install): written by the install, beside this file
        from ._installed import LIBRARY_DIR
        yield str((here / LIBRARY_DIR / "libhycc_c.so").resolve())
    except ImportError:
        pass
    yield str(here.parent.parent / "build" / "lib" / "libhycc_c.so")  # a source checkout
    yield "libhycc_c.so"  # the loader's search path (LD_LIBRARY_PATH, ldconfig)


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
    raise ImportError("hycc: libhycc_c.so not found; set HYCC_LIBRARY to its path. Tried: " +
                      "; ".join(tried))


lib = _load()


def _proto(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)


V, I, S, U64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint64
_proto("hycc_last_error", ctypes.c_char_p)
_proto("hycc_version", ctypes.c_char_p)
_proto("hycc_free", None, V)
_proto("hycc_codec_create", I, ctypes.c_char_p, c_void_pp)
_proto("hycc_codec_destroy", None, V)
_proto("hycc_codec_spec", ctypes.c_char_p, V)
_proto("hycc_codec_lossless", I, V)
_proto("hycc_codec_help", ctypes.c_char_p)
_proto("hycc_max_compressed_bytes", I, V, I, S, c_size_p)
_proto("hycc_compress", I, V, I, S, V, V, S, U64, c_size_p)
_proto("hycc_decompress", I, V, S, I, S, V)
_proto("hycc_engine_create", I, ctypes.c_char_p, c_void_pp)
_proto("hycc_engine_destroy", None, V)
_proto("hycc_engine_policy_name", ctypes.c_char_p, V)
_proto("hycc_engine_finish", I, V, V)
_proto("hycc_engine_stats_json", I, V, V, c_void_pp)
_proto("hycc_engine_calibrate", I, V, V, ctypes.POINTER(ctypes.c_double),
       ctypes.POINTER(ctypes.c_double))
_proto("hycc_engine_set_link", I, V, V, ctypes.c_double, ctypes.c_double)
_proto("hycc_engine_save_state", I, V, c_void_pp, c_size_p)
_proto("hycc_engine_load_state", I, V, ctypes.c_char_p, S, V)
_proto("hycc_chunk_range", I, S, I, I, c_size_p, c_size_p)


# The layout of the structs below (HYCC_ABI_VERSION of the hycc.h they mirror): the library must
# have the same, or it would read them wrongly.
ABI_VERSION = 4
_abi = getattr(lib, "hycc_abi_version", None)  # libraries before version 2 lack the function
if _abi is not None:
    _abi.restype, _abi.argtypes = I, []
if _abi is None or _abi() != ABI_VERSION:
    raise ImportError(f"hycc: {lib._name} has struct layout (ABI) version "
                      f"{_abi() if _abi is not None else 1}, this package {ABI_VERSION}: use the "
                      "Python package of the same hycc build as the library (HYCC_LIBRARY)")


class CallStats(ctypes.Structure):
    """hycc_call_stats: what one call did on this rank."""
    _fields_ = [("algorithm", I), ("compressed", I), ("message_bytes", S), ("raw_bytes", S),
                ("wire_bytes", S), ("streams", S), ("codec_seconds", ctypes.c_double),
                ("seconds", ctypes.c_double), ("host_syncs", U64)]


class StreamInfo(ctypes.Structure):
    """hycc_stream_info: what a validated stream header says."""
    _fields_ = [("dtype", I), ("count", U64), ("payload_bytes", U64), ("stream_bytes", U64),
                ("spec", ctypes.c_char * 128)]


class Options(ctypes.Structure):
    """hycc_options."""
    _fields_ = [("abi_version", I), ("codec", V), ("engine", V), ("algorithm", I),
                ("threshold_bytes", S), ("segment_bytes", S), ("seed", U64), ("tag", I),
                ("key", U64), ("stats", ctypes.POINTER(CallStats)), ("pieces", ctypes.POINTER(S)),
                ("pieces_length", S), ("check_arguments", I), ("stream_ordered", I)]


_proto("hycc_stream_inspect", I, V, S, ctypes.POINTER(StreamInfo))
_proto("hycc_options_init_abi", None, ctypes.POINTER(Options), I)
_OPT = ctypes.POINTER(Options)
_proto("hycc_allreduce", I, V, V, S, I, I, V, _OPT)
_proto("hycc_reduce_scatter", I, V, S, V, I, I, V, _OPT)
_proto("hycc_allgather", I, V, S, V, I, V, _OPT)
_proto("hycc_broadcast", I, V, S, I, I, V, _OPT)
_proto("hycc_alltoall", I, V, V, S, I, V, _OPT)
_proto("hycc_send", I, V, S, I, I, I, V, _OPT)
_proto("hycc_recv", I, V, S, I, I, I, V, ctypes.POINTER(I))


class DeviceOptions(ctypes.Structure):
    """hycc_device_options."""
    _fields_ = [("abi_version", I), ("codec", V), ("engine", V), ("segment_bytes", S),
                ("threshold_bytes", S), ("seed", U64), ("tag", I), ("stream", V), ("backend", I),
                ("transport", I), ("checksum", I), ("key", U64),
                ("stats", ctypes.POINTER(CallStats)), ("pieces", ctypes.POINTER(S)),
                ("pieces_length", S), ("check_arguments", I)]


_DOPT = ctypes.POINTER(DeviceOptions)
_proto("hycc_device_count", I)
_proto("hycc_device_options_init_abi", None, _DOPT, I)
_proto("hycc_allreduce_device", I, V, V, S, I, I, V, _DOPT)
_proto("hycc_reduce_scatter_device", I, V, S, V, I, I, V, _DOPT)
_proto("hycc_allgather_device", I, V, S, V, I, V, _DOPT)
_proto("hycc_broadcast_device", I, V, S, I, I, V, _DOPT)
_proto("hycc_alltoall_device", I, V, V, S, I, V, _DOPT)
_proto("hycc_send_device", I, V, S, I, I, I, V, _DOPT)
_proto("hycc_recv_device", I, V, S, I, I, I, V, _DOPT, ctypes.POINTER(I))
_proto("hycc_codec_device_kernels", I, V)
_proto("hycc_max_payload_bytes", I, V, I, S, c_size_p)
_proto("hycc_encode_device", I, V, I, S, V, V, S, U64, V, c_size_p)
_proto("hycc_decode_device", I, V, V, S, I, S, V, V)


def check(status):
    """Raises the exception of a status other than 0, with the library's message."""
    if status != 0:
        raise _ERRORS.get(status, HyccError)(lib.hycc_last_error().decode())

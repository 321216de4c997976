"""Arrays and communicators as the C API takes them."""
import ctypes

import numpy as np

from ._lib import BF16, F16, F32, InvalidArgument

_BY_NAME = {"f32": F32, "float32": F32, "bf16": BF16, "bfloat16": BF16, "f16": F16,
            "float16": F16}
_NUMPY = {F32: np.float32, BF16: np.uint16, F16: np.float16}


def dtype_code(array, dtype=None):
    """The hycc dtype of an array: float32 and float16 by their numpy type; bfloat16 needs
    dtype="bf16" on a uint16 array (numpy has no bfloat16)."""
    if dtype is not None:
        code = dtype_from_name(dtype)
        if array.dtype != _NUMPY[code]:
            raise InvalidArgument(f"hycc: dtype {dtype} needs a {np.dtype(_NUMPY[code])} array, "
                                  f"not {array.dtype}")
        return code
    if array.dtype == np.float32:
        return F32
    if array.dtype == np.float16:
        return F16
    raise InvalidArgument(f"hycc: arrays of {array.dtype} are not supported: float32, float16, "
                          "or uint16 with dtype='bf16'")


def dtype_from_name(name):
    if name not in _BY_NAME:
        raise InvalidArgument(f"hycc: dtype {name!r} is not one of {sorted(_BY_NAME)}")
    return _BY_NAME[name]


def numpy_dtype(code):
    return _NUMPY[code]


def as_array(x, writable=False, what="array"):
    """A C-contiguous numpy view of x (a numpy array, or anything np.asarray shares memory with,
    such as a CPU torch tensor); never a copy, so that results land in the caller's memory."""
    a = np.asarray(x)
    if not a.flags.c_contiguous:
        raise InvalidArgument(f"hycc: {what} must be C-contiguous")
    if writable and not a.flags.writeable:
        raise InvalidArgument(f"hycc: {what} is read-only")
    return a


def pointer(a):
    return ctypes.c_void_p(a.ctypes.data if a.size else 0)


def comm_handle(comm):
    """An mpi4py communicator (or an MPI_Comm handle as an int) as the C API's MPI_Comm."""
    if comm is None:
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
    if isinstance(comm, int):
        return ctypes.c_void_p(comm)
    from mpi4py import MPI
    return ctypes.c_void_p(MPI._handleof(comm))

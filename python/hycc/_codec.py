"""Codecs: compress arrays into self-describing streams and back."""
import ctypes

import numpy as np

from ._arrays import as_array, dtype_code, dtype_from_name, numpy_dtype, pointer
from ._lib import StreamInfo, check, lib


class Codec:
    """A parsed codec spec ("quant:bits=4", "mpc", "zfp:rate=8", ...; see codec_help())."""

    def __init__(self, spec):
        self._handle = ctypes.c_void_p()
        check(lib.hycc_codec_create(spec.encode(), ctypes.byref(self._handle)))

    def __del__(self):
        if getattr(self, "_handle", None):
            lib.hycc_codec_destroy(self._handle)
            self._handle = None

    @property
    def handle(self):
        return self._handle

    @property
    def spec(self):
        """The canonical spec: every parameter spelled out."""
        return lib.hycc_codec_spec(self._handle).decode()

    @property
    def lossless(self):
        return bool(lib.hycc_codec_lossless(self._handle))

    def __repr__(self):
        return f"hycc.Codec({self.spec!r})"

    def max_compressed_bytes(self, count, dtype="f32"):
        out = ctypes.c_size_t()
        check(lib.hycc_max_compressed_bytes(self._handle, dtype_from_name(dtype), count,
                                            ctypes.byref(out)))
        return out.value

    def compress(self, array, seed=0, dtype=None):
        """The stream of `array` as a numpy uint8 array. seed drives stochastic rounding."""
        a = as_array(array)
        code = dtype_code(a, dtype)
        capacity = ctypes.c_size_t()
        check(lib.hycc_max_compressed_bytes(self._handle, code, a.size, ctypes.byref(capacity)))
        out = np.empty(capacity.value, dtype=np.uint8)
        size = ctypes.c_size_t()
        check(lib.hycc_compress(self._handle, code, a.size, pointer(a), pointer(out), out.size,
                                seed, ctypes.byref(size)))
        return out[:size.value].copy()


def as_codec(codec):
    """A Codec from a Codec or a spec string."""
    return codec if isinstance(codec, Codec) else Codec(codec)


def _stream_array(stream):
    s = np.frombuffer(stream, dtype=np.uint8) if isinstance(stream, (bytes, bytearray)) else \
        as_array(stream, what="stream")
    return s.view(np.uint8).reshape(-1)


def inspect(stream):
    """What a stream's header says, after validation: dict with dtype, count, payload_bytes,
    stream_bytes and spec."""
    s = _stream_array(stream)
    info = StreamInfo()
    check(lib.hycc_stream_inspect(pointer(s), s.size, ctypes.byref(info)))
    names = {0: "f32", 1: "bf16", 2: "f16"}
    return {"dtype": names[info.dtype], "count": info.count, "payload_bytes": info.payload_bytes,
            "stream_bytes": info.stream_bytes, "spec": info.spec.decode()}


def decompress(stream, out=None):
    """Decodes a stream into `out` (an array of the stream's dtype and count), or into a new
    array: float32, float16, or uint16 holding bfloat16 bits."""
    s = _stream_array(stream)
    info = StreamInfo()
    check(lib.hycc_stream_inspect(pointer(s), s.size, ctypes.byref(info)))
    if out is None:
        out = np.empty(info.count, dtype=numpy_dtype(info.dtype))
    o = as_array(out, writable=True, what="out")
    code = dtype_code(o, "bf16" if o.dtype == np.uint16 else None)
    check(lib.hycc_decompress(pointer(s), s.size, code, o.size, pointer(o)))
    return out


def codec_help():
    """Every codec and its parameters."""
    return lib.hycc_codec_help().decode()

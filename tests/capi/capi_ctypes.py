"""hycc's C API from Python through ctypes (no compiled binding), with numpy arrays and mpi4py
communicators: a codec round trip, compressed collectives checked against mpi4py's own, the
policy by communicator name, and errors as exceptions with the library's message.
Prints "capi ctypes: OK" on rank 0 when every check passed; exit status 1 otherwise.
Usage: mpirun -n N python3 capi_ctypes.py path/to/libhycc_c.so
"""
import ctypes
import sys

import numpy as np
from mpi4py import MPI

lib = ctypes.CDLL(sys.argv[1])
c_size_p = ctypes.POINTER(ctypes.c_size_t)
F32 = 0
SUM = 0
lib.hycc_last_error.restype = ctypes.c_char_p
lib.hycc_status_name.restype = ctypes.c_char_p
lib.hycc_version.restype = ctypes.c_char_p
lib.hycc_codec_spec.restype = ctypes.c_char_p
lib.hycc_codec_spec.argtypes = [ctypes.c_void_p]
lib.hycc_codec_create.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
lib.hycc_codec_destroy.argtypes = [ctypes.c_void_p]
lib.hycc_max_compressed_bytes.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, c_size_p]
lib.hycc_compress.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p,
                              ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint64, c_size_p]
lib.hycc_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_size_t,
                                ctypes.c_void_p]
lib.hycc_engine_create.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
lib.hycc_engine_destroy.argtypes = [ctypes.c_void_p]
lib.hycc_engine_stats_json.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                       ctypes.POINTER(ctypes.c_void_p)]
lib.hycc_free.argtypes = [ctypes.c_void_p]


class CallStats(ctypes.Structure):
    _fields_ = [("algorithm", ctypes.c_int), ("compressed", ctypes.c_int),
                ("message_bytes", ctypes.c_size_t), ("raw_bytes", ctypes.c_size_t),
                ("wire_bytes", ctypes.c_size_t), ("streams", ctypes.c_size_t),
                ("codec_seconds", ctypes.c_double), ("seconds", ctypes.c_double)]


class Options(ctypes.Structure):
    _fields_ = [("codec", ctypes.c_void_p), ("engine", ctypes.c_void_p),
                ("algorithm", ctypes.c_int), ("threshold_bytes", ctypes.c_size_t),
                ("segment_bytes", ctypes.c_size_t), ("seed", ctypes.c_uint64),
                ("tag", ctypes.c_int), ("key", ctypes.c_uint64),
                ("stats", ctypes.POINTER(CallStats))]


lib.hycc_options_init.argtypes = [ctypes.POINTER(Options)]
lib.hycc_allreduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                               ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(Options)]


class HyccError(RuntimeError):
    pass


def check(status):
    if status != 0:
        raise HyccError(f"{lib.hycc_status_name(status).decode()}: "
                        f"{lib.hycc_last_error().decode()}")


def handle_of(comm):
    return ctypes.c_void_p(MPI._handleof(comm))


def ptr(a):
    return ctypes.c_void_p(a.ctypes.data)


class Codec:
    def __init__(self, spec):
        self.h = ctypes.c_void_p()
        check(lib.hycc_codec_create(spec.encode(), ctypes.byref(self.h)))

    def __del__(self):
        lib.hycc_codec_destroy(self.h)

    def compress(self, a):
        cap = ctypes.c_size_t()
        check(lib.hycc_max_compressed_bytes(self.h, F32, a.size, ctypes.byref(cap)))
        out = np.empty(cap.value, dtype=np.uint8)
        n = ctypes.c_size_t()
        check(lib.hycc_compress(self.h, F32, a.size, ptr(a), ptr(out), out.size, 0,
                                ctypes.byref(n)))
        return out[:n.value].copy()


def decompress(stream, count):
    out = np.empty(count, dtype=np.float32)
    check(lib.hycc_decompress(ptr(stream), stream.size, F32, count, ptr(out)))
    return out


world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
failures = 0


def expect(cond, what):
    global failures
    if not cond:
        failures += 1
        print(f"capi ctypes: rank {rank}: FAILED: {what}", file=sys.stderr)


# Codecs: lossless is bit-exact, 8-bit quantization within half a step of each 64-block's range.
x = (np.sin(np.arange(10240) * 0.003) * 5).astype(np.float32)  # 160 blocks of 64
mpc = Codec("mpc")
expect(lib.hycc_codec_spec(mpc.h) == b"mpc:dim=1", "canonical spec")
expect(np.array_equal(decompress(mpc.compress(x), x.size).view(np.uint32), x.view(np.uint32)),
       "mpc round trip is bit-exact")
quant = Codec("quant:bits=8")
stream = quant.compress(x)
expect(stream.size < x.nbytes // 3, f"quant:bits=8 stream of {stream.size} bytes")
blocks = x.reshape(-1, 64)
step = (blocks.max(axis=1) - blocks.min(axis=1)) / 255
err = np.abs(decompress(stream, x.size) - x).reshape(-1, 64).max(axis=1)
expect(np.all(err <= step / 2 * 1.0001 + 1e-7), f"quant error {err.max()}")
stream[stream.size // 2] ^= 1
try:
    decompress(stream, x.size)
    expect(False, "a corrupted stream was accepted")
except HyccError as e:
    expect("HYCC_ERR_CORRUPT_STREAM" in str(e), str(e))
try:
    Codec("zfp:rate=99")
    expect(False, "zfp:rate=99 was accepted")
except HyccError as e:
    expect("HYCC_ERR_INVALID_ARGUMENT" in str(e) and "rate" in str(e), str(e))

# Collectives on mpi4py communicators: uncompressed equals mpi4py's, compressed is close and the
# same on every rank.
a = ((np.arange(50000) + rank) % 7).astype(np.float32)
want = np.empty_like(a)
world.Allreduce(a, want, op=MPI.SUM)
got = np.empty_like(a)
check(lib.hycc_allreduce(ptr(a), ptr(got), a.size, F32, SUM, handle_of(world), None))
expect(np.array_equal(got, want), "uncompressed allreduce equals MPI's")
opts = Options()
lib.hycc_options_init(ctypes.byref(opts))
opts.codec = quant.h
opts.threshold_bytes = 0
opts.algorithm = 2  # HYCC_ALGO_RING: only compressed streams on the wire
stats = CallStats()
opts.stats = ctypes.pointer(stats)
check(lib.hycc_allreduce(ptr(a), ptr(got), a.size, F32, SUM, handle_of(world), ctypes.byref(opts)))
expect(np.max(np.abs(got - want)) <= 6 * size * size / 255, "compressed allreduce error")
expect(size == 1 or (stats.compressed == 1 and stats.wire_bytes < stats.raw_bytes / 3),
       f"wire {stats.wire_bytes} of {stats.raw_bytes} bytes")
first = got.copy()
world.Bcast(first, root=0)  # rank 0's result, on every rank
expect(np.array_equal(first, got), "every rank holds the same result")

# The policy: a communicator named "tp" takes the hybrid preset's bf16.
tp = world.Dup()
tp.Set_name("tp")
engine = ctypes.c_void_p()
check(lib.hycc_engine_create(b"hybrid", ctypes.byref(engine)))
opts = Options()
lib.hycc_options_init(ctypes.byref(opts))
opts.engine = engine
opts.stats = ctypes.pointer(stats)
big = np.random.default_rng(rank).standard_normal(1 << 18).astype(np.float32)
check(lib.hycc_allreduce(ptr(big), ptr(big), big.size, F32, SUM, handle_of(tp), ctypes.byref(opts)))
expect(size == 1 or stats.wire_bytes < stats.raw_bytes * 0.6, "tp allreduce went as bf16")
json = ctypes.c_void_p()
check(lib.hycc_engine_stats_json(engine, handle_of(tp), ctypes.byref(json)))
text = ctypes.string_at(json).decode()
lib.hycc_free(json)
expect('"dimension": "tp"' in text, text)
lib.hycc_engine_destroy(engine)
tp.Free()

total = world.allreduce(failures)
if rank == 0:
    print(f"capi ctypes: OK (hycc {lib.hycc_version().decode()}, {size} ranks)" if total == 0
          else f"capi ctypes: {total} checks FAILED")
sys.exit(0 if total == 0 else 1)

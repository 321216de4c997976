"""The hycc Python package (python/hycc, ctypes over libhycc_c.so) under mpirun: codecs on numpy
arrays, every collective and send/recv against mpi4py's own calls (exact without a codec and with
lossless ones, within the bound and identical on every rank with lossy ones), the policy engine by
communicator name, and failures as typed exceptions with the library's message.
Prints "hycc package: OK" on rank 0 when every check passed; exit status 1 otherwise.
Usage: HYCC_LIBRARY=build/lib/libhycc_c.so mpirun -n N python3 hycc_package_test.py
"""
import os
import sys

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import hycc  # noqa: E402
from mpi_checks import dp_policy_file, expect, finish, identical_on_every_rank  # noqa: E402

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()



def raises(exc, fn, part=""):
    try:
        fn()
    except exc as e:
        return part in str(e)
    except Exception as e:  # noqa: BLE001 - the wrong kind is a failure too
        print(f"hycc package: rank {rank}: {type(e).__name__}: {e}", file=sys.stderr)
        return False
    return False



def small_ints(n, r):
    return ((np.arange(n) + r) % 7 - 3).astype(np.float32)


# ---- codecs -----------------------------------------------------------------------------------
x = (np.sin(np.arange(10240) * 0.003) * 5).astype(np.float32)  # 160 blocks of 64
mpc = hycc.Codec("mpc")
expect(mpc.spec == "mpc:dim=1" and mpc.lossless, f"{mpc!r}")
stream = mpc.compress(x)
expect(hycc.inspect(stream)["count"] == x.size, "inspect")
expect(np.array_equal(hycc.decompress(stream).view(np.uint32), x.view(np.uint32)), "mpc exact")
quant = hycc.Codec("quant:bits=8")
stream = quant.compress(x)
expect(stream.size < x.nbytes // 3, f"quant:bits=8 stream of {stream.size} bytes")
blocks = x.reshape(-1, 64)
half_step = (blocks.max(axis=1) - blocks.min(axis=1)) / 255 / 2
err = np.abs(hycc.decompress(stream) - x).reshape(-1, 64).max(axis=1)
expect(np.all(err <= half_step * 1.0001 + 1e-7), f"quant error {err.max()}")
h = x.astype(np.float16)
expect(np.array_equal(hycc.decompress(hycc.Codec("zstd").compress(h)), h), "float16 arrays")
bf = (x.view(np.uint32) >> 16).astype(np.uint16)  # bfloat16 bits (truncated)
got = hycc.decompress(mpc.compress(bf, dtype="bf16"))
expect(got.dtype == np.uint16 and np.array_equal(got, bf), "bfloat16 as uint16 bits")
bad = stream.copy()
bad[bad.size // 2] ^= 1
expect(raises(hycc.CorruptStream, lambda: hycc.decompress(bad)), "a flipped bit is refused")
expect(raises(hycc.InvalidArgument, lambda: hycc.Codec("zfp:rate=99"), "rate"), "bad spec")
expect(raises(hycc.InvalidArgument, lambda: quant.compress(x[::2]), "contiguous"), "strided")
expect(raises(hycc.InvalidArgument, lambda: quant.compress(x.astype(np.float64)), "float64"),
       "float64")
expect(raises(hycc.InvalidArgument, lambda: hycc.decompress(stream, np.empty(5, np.float32))),
       "wrong-size output")
expect(raises(TypeError, lambda: hycc.allreduce(x.copy(), codc="mpc"), "codc"),
       "a misspelt keyword is refused, not ignored")

# ---- collectives ------------------------------------------------------------------------------
a = small_ints(50000, rank)
want = np.empty_like(a)
world.Allreduce(a, want, op=MPI.SUM)
expect(np.array_equal(hycc.allreduce(a, np.empty_like(a)), want), "allreduce, no codec")
expect(np.array_equal(hycc.allreduce(a.copy(), codec="mpc", threshold=0), want),
       "allreduce in place, mpc")
stats = hycc.CallStats()
got = hycc.allreduce(a, np.empty_like(a), codec=quant, threshold=0, algorithm="ring",
                     stats=stats)
expect(np.max(np.abs(got - want)) <= 6.0 * size * size / 255, "allreduce, quant:bits=8")
expect(identical_on_every_rank(got), "allreduce result identical on every rank")
expect(size == 1 or (stats.compressed and stats.wire_bytes < stats.raw_bytes / 3),
       f"{stats.wire_bytes} of {stats.raw_bytes} bytes on the wire")

start = [(1001 // size) * j + min(j, 1001 % size) for j in range(size + 1)]
mine = np.empty(start[rank + 1] - start[rank], np.float32)
total = np.empty(1001, np.float32)
world.Allreduce(small_ints(1001, rank), total, op=MPI.SUM)
hycc.reduce_scatter(small_ints(1001, rank), mine, codec="mpc", threshold=0)
expect(np.array_equal(mine, total[start[rank]:start[rank + 1]]), "reduce_scatter, mpc")

blk = small_ints(300, rank)
gathered, want_g = np.empty(300 * size, np.float32), np.empty(300 * size, np.float32)
world.Allgather(blk, want_g)
hycc.allgather(blk, gathered, codec="mpc", threshold=0)
expect(np.array_equal(gathered, want_g), "allgather, mpc")

buf = small_ints(777, rank)
hycc.broadcast(buf, root=size - 1, codec="bf16", threshold=0)
expect(np.array_equal(buf, small_ints(777, size - 1)), "broadcast, bf16 (small integers)")

s2 = small_ints(200 * size, rank)
want_a = np.empty_like(s2)
world.Alltoall(s2, want_a)
expect(np.array_equal(hycc.alltoall(s2, np.empty_like(s2), codec="mpc", threshold=0), want_a),
       "alltoall, mpc")
expect(np.array_equal(hycc.alltoall(s2.copy()), want_a), "alltoall in place")

if size > 1:
    msg = small_ints(5000, rank)
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    inbox = np.empty_like(msg)
    if rank % 2 == 0:
        hycc.send(msg, nxt, tag=3, codec="mpc")
        sender = hycc.recv(inbox, tag=3)
    else:
        sender = hycc.recv(inbox, tag=3)
        hycc.send(msg, nxt, tag=3, codec="mpc")
    expect(sender == prv and np.array_equal(inbox, small_ints(5000, prv)), "send/recv, mpc")
    short = np.ones(100 + rank, np.float32)
    expect(raises(hycc.CommError, lambda: hycc.allreduce(short, codec=quant, threshold=0),
                  "count"), "counts that differ across ranks")
    # Thresholds that differ (both below the tensor): refused unless check_arguments="never",
    # which gives the bits of agreeing ones.
    data = small_ints(3001, rank) * np.float32(0.37)
    agreed = hycc.allreduce(data, np.empty_like(data), codec=quant, threshold=0, algorithm="ring")
    differing = 0 if rank == 0 else 1024
    expect(raises(hycc.CommError, lambda: hycc.allreduce(
        data, np.empty_like(data), codec=quant, threshold=differing, algorithm="ring"),
        "threshold_bytes"), "thresholds that differ, checked")
    unchecked = hycc.allreduce(data, np.empty_like(data), codec=quant, threshold=differing,
                               algorithm="ring", check_arguments="never")
    expect(np.array_equal(unchecked.view(np.uint32), agreed.view(np.uint32)),
           "thresholds that differ, check_arguments=never")
expect(raises(hycc.InvalidArgument, lambda: hycc.allreduce(
    np.ones(10, np.float32), check_arguments="sometimes"), "check_arguments"),
    "check_arguments outside auto/always/never")

# ---- device collectives, host-emulated device: the host calls' bits --------------------------
def bits(a):
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint16)


lossy = small_ints(3001, rank) * np.float32(0.37)
dev = hycc.allreduce_device(lossy.copy(), op="avg", codec=quant, backend="emulation", seed=5)
host = hycc.allreduce(lossy, np.empty_like(lossy), op="avg", codec=quant, algorithm="ring",
                      threshold=0, seed=5)
expect(np.array_equal(bits(dev), bits(host)), "allreduce_device == host ring")
queued_stats = hycc.CallStats()
queued = hycc.allreduce_device(lossy.copy(), op="avg", codec=quant, backend="emulation", seed=5,
                               stream_ordered=True, stats=queued_stats)
expect(np.array_equal(bits(queued), bits(host)) and queued_stats.host_syncs == 0,
       "allreduce_device stream_ordered == host ring, no host waits on the emulation")
mine_d, mine_h = np.empty_like(mine), np.empty_like(mine)
hycc.reduce_scatter_device(small_ints(1001, rank), mine_d, codec=quant, backend="emulation")
hycc.reduce_scatter(small_ints(1001, rank), mine_h, codec=quant, algorithm="ring", threshold=0)
expect(np.array_equal(bits(mine_d), bits(mine_h)), "reduce_scatter_device == host ring")
g_d, g_h = np.empty_like(gathered), np.empty_like(gathered)
hycc.allgather_device(blk * np.float32(0.3), g_d, codec=quant, backend="emulation")
hycc.allgather(blk * np.float32(0.3), g_h, codec=quant, algorithm="ring", threshold=0)
expect(np.array_equal(bits(g_d), bits(g_h)), "allgather_device == host ring")
b_d, b_h = lossy.copy(), lossy.copy()
hycc.broadcast_device(b_d, root=0, codec=quant, backend="emulation")
hycc.broadcast(b_h, root=0, codec=quant, algorithm="chain", threshold=0)
expect(np.array_equal(bits(b_d), bits(b_h)), "broadcast_device == host chain")
a_d = hycc.alltoall_device(s2 * np.float32(0.3), codec=quant, backend="emulation")
a_h = hycc.alltoall(s2 * np.float32(0.3), np.empty_like(s2), codec=quant, algorithm="pairwise",
                    threshold=0)
expect(np.array_equal(bits(a_d), bits(a_h)), "alltoall_device in place == host pairwise")
if size > 1:
    msg, inbox = small_ints(4000, rank), np.empty(4000, np.float32)
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    if rank % 2 == 0:
        hycc.send_device(msg, nxt, tag=4, codec="mpc", backend="emulation")
        sender = hycc.recv_device(inbox, tag=4, backend="emulation")
    else:
        sender = hycc.recv_device(inbox, tag=4, backend="emulation")
        hycc.send_device(msg, nxt, tag=4, codec="mpc", backend="emulation")
    expect(sender == prv and np.array_equal(inbox, small_ints(4000, prv)),
           "send_device/recv_device, mpc")
expect(hycc.max_payload_bytes(quant, 1000) + 48 == quant.max_compressed_bytes(1000),
       "payload bound = stream bound - header")
if hycc.device_count() == 0:
    payload = np.empty(hycc.max_payload_bytes(quant, x.size), np.uint8)
    expect(raises(hycc.Unavailable, lambda: hycc.encode_device(quant, x, payload)),
           "device codecs without a device: Unavailable")

# ---- the policy -------------------------------------------------------------------------------
tp = world.Dup()
tp.Set_name("tp")
with hycc.Engine("hybrid") as engine:
    expect(engine.policy_name == "hybrid", engine.policy_name)
    big = np.random.default_rng(rank).standard_normal(1 << 18).astype(np.float32)
    hycc.allreduce(big, engine=engine, comm=tp, stats=stats)
    expect(size == 1 or stats.wire_bytes < stats.raw_bytes * 0.6, "tp allreduce went as bf16")
    entries = engine.stats(comm=tp)["entries"]
    expect(any(e["dimension"] == "tp" and e["calls"] == size for e in entries), f"{entries}")
    expect(engine.stats(local=True)["total"]["calls"] == 1, "this rank's one call")
# auto: set link figures decide; calibrate measures, collectively, the same on every rank.
with hycc.Engine("auto") as engine:
    for bandwidth, compressed in ((1e6, size > 1), (1e18, False)):
        engine.set_link(1e-5, bandwidth, comm=tp)
        hycc.allreduce(big, engine=engine, comm=tp, stats=stats)
        expect(bool(stats.compressed) == compressed, f"auto at {bandwidth} B/s: {stats}")
    latency, bandwidth = engine.calibrate(comm=tp)
    expect(latency >= 0 and bandwidth >= 0, f"measured {latency} s, {bandwidth} B/s")
    expect(len(set(world.allgather(bandwidth))) == 1, "every rank holds the same figures")
    expect(raises(hycc.InvalidArgument, lambda: engine.set_link(-1, 1e9, comm=tp), "negative"),
           "negative link figures are refused")
tp.Free()
# A bucket of tensors (pieces=): PowerSGD compresses each matrix among them; a flat bucket is
# compressed as its square view (51 x 50 and 7 values plain), or goes uncompressed under
# flat=plain.
dp = world.Dup()
dp.Set_name("dp")
with hycc.Engine(dp_policy_file("powersgd:rank=2")) as engine, \
        hycc.Engine(dp_policy_file("powersgd:rank=2,flat=plain")) as plain_engine:
    shapes = [(48, 40), (37,), (30, 2, 10)]
    bucket = np.random.default_rng(rank).standard_normal(1920 + 37 + 600).astype(np.float32)
    flat, pieces, plain = bucket.copy(), bucket.copy(), bucket.copy()
    flat_stats, piece_stats, plain_stats = hycc.CallStats(), hycc.CallStats(), hycc.CallStats()
    hycc.allreduce(flat, op="avg", engine=engine, comm=dp, key=1, stats=flat_stats)
    hycc.allreduce(pieces, op="avg", engine=engine, comm=dp, key=2, pieces=shapes,
                   stats=piece_stats)
    hycc.allreduce(plain, op="avg", engine=plain_engine, comm=dp, key=1, stats=plain_stats)
    expect(identical_on_every_rank(pieces), "PowerSGD bucket identical on every rank")
    expect(identical_on_every_rank(flat), "PowerSGD flat bucket identical on every rank")
    # P: (48 + 30) x 2, Q: 2 x (40 + 20), plain: 37 floats; flat: P 50 x 2, Q 2 x 51, 7 plain;
    # against 2557 floats.
    expect(bool(flat_stats.compressed) and bool(piece_stats.compressed) and
           not plain_stats.compressed and
           (size == 1 or (4 * piece_stats.wire_bytes < plain_stats.wire_bytes and
                          4 * flat_stats.wire_bytes < plain_stats.wire_bytes)),
           f"flat {flat_stats}, pieces {piece_stats}, plain {plain_stats}")
    expect(np.allclose(pieces[1920:1957], plain[1920:1957], rtol=0, atol=1e-6),
           "the vector among the pieces is allreduced plainly")
    expect(raises(hycc.InvalidArgument, lambda: hycc.allreduce(
        bucket.copy(), engine=engine, comm=dp, key=3, pieces=[(48, 40)]),
        "pieces of key 3 hold 1920 elements, the tensor 2557"), "pieces must tile the bucket")
    expect(raises(hycc.InvalidArgument, lambda: hycc.allreduce(
        bucket.copy(), engine=engine, comm=dp, key=4, pieces=[(0, 4)]), "positive"),
        "a piece with a dimension 0 is refused")
# The device path takes the pieces too: the emulated device's PowerSGD has the host's bits.
with hycc.Engine(dp_policy_file("powersgd:rank=2")) as host_engine, \
        hycc.Engine(dp_policy_file("powersgd:rank=2")) as device_engine:
    for step in range(2):
        on_host, on_device = bucket.copy(), bucket.copy()
        hycc.allreduce(on_host, op="avg", engine=host_engine, comm=dp, key=7, pieces=shapes)
        hycc.allreduce_device(on_device, op="avg", engine=device_engine, comm=dp, key=7,
                              pieces=shapes, backend="emulation")
        expect(np.array_equal(on_host.view(np.uint32), on_device.view(np.uint32)),
               f"PowerSGD bucket step {step}: emulated device == host")
# Checkpoints: an engine loaded from another's saved state continues with the same bits.
with hycc.Engine("hybrid") as first, hycc.Engine("hybrid") as resumed:
    def grad_of(step):
        return np.random.default_rng(100 * step + rank).standard_normal(1 << 16).astype(np.float32)
    for step in range(2):
        hycc.allreduce(grad_of(step), op="avg", engine=first, comm=dp, key=3)
    saved = first.save_state()
    resumed.load_state(saved)
    a, b = grad_of(2), grad_of(2)
    hycc.allreduce(a, op="avg", engine=first, comm=dp, key=3)
    hycc.allreduce(b, op="avg", engine=resumed, comm=dp, key=3)
    expect(np.array_equal(a.view(np.uint32), b.view(np.uint32)),
           "a loaded engine continues with the same bits")
    expect(raises(hycc.CorruptStream, lambda: resumed.load_state(saved[:-1]), "checksum"),
           "a damaged state is refused")
dp.Free()
expect(raises(hycc.InvalidArgument, lambda: hycc.Engine("no-such-policy"), "hybrid"),
       "an unknown policy lists the presets")

finish("hycc package", f"hycc {hycc.__version__}")

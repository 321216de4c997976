"""An mpi4py program written without hycc: the Python evidence for libhycc_mpi.so.

Names communicators after parallel dimensions, runs buffer-based collectives (two of them
nonblocking, four with ZeRO shards of uneven sizes, two of those nonblocking) and point to point
on float32 numpy arrays (plus an int64 allreduce the library must leave alone), writes every
result to PREFIX.rankR and prints each call's error relative to the exact result (rank 0).
Exit status 1 if an error exceeds BOUND, or the untouched call is not exact.
Usage: python3 dropin_mpi4py.py PREFIX BOUND
"""
import sys

import numpy as np
from mpi4py import MPI

N = 300000
world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
prefix, bound = sys.argv[1], float(sys.argv[2])
failures = 0
out = open(f"{prefix}.rank{rank}", "wb")


def inputs(r, n=N):
    i = np.arange(n, dtype=np.float64)
    return (np.sin(0.001 * i + r) + 0.01 * r).astype(np.float32)


def check(what, got, exact, must_be_exact=False):
    global failures
    err = np.max(np.abs(got.astype(np.float64) - exact)) if got.size else 0.0
    scale = np.max(np.abs(exact)) if got.size else 0.0
    rel = world.allreduce(err / scale if scale > 0 else err, op=MPI.MAX)
    out.write(got.tobytes())
    bad = rel != 0 if must_be_exact else rel > bound
    failures += int(bad)
    if rank == 0:
        print(f"{what:<28} relative error {rel:.3e}{'  TOO LARGE' if bad else ''}")


def named(name):
    c = world.Dup()
    c.Set_name(name)
    return c


dp, tp, pp = named("dp"), named("tp"), named("pp")
exact = sum(inputs(r).astype(np.float64) for r in range(size))

x = inputs(rank)
y = np.empty_like(x)
world.Allreduce(x, y, op=MPI.SUM)
check("Allreduce world", y, exact)
y[:] = x
dp.Allreduce(MPI.IN_PLACE, y, op=MPI.SUM)
check("Allreduce dp in place", y, exact)
y[:] = x
dp.Iallreduce(MPI.IN_PLACE, y, op=MPI.SUM).Wait()  # hybrid: ef2+'s error feedback at initiation
check("Iallreduce dp in place", y, exact)
tp.Allreduce(x, y, op=MPI.SUM)
check("Allreduce tp", y, exact)

root = 1 % size
b = inputs(root) if rank == root else np.zeros(N, dtype=np.float32)
pp.Bcast(b, root=root)
check("Bcast pp", b, inputs(root).astype(np.float64))

per = N // size
g = np.empty(per * size, dtype=np.float32)
tp.Allgather(inputs(rank, per), g)
check("Allgather tp", g, np.concatenate([inputs(r, per) for r in range(size)]).astype(np.float64))
mine = inputs(rank, per)
gi = np.empty(per * size, dtype=np.float32)
tp.Iallgather(mine, gi).Wait()  # hybrid: bf16 slots through MPI's own nonblocking allgather
check("Iallgather tp", gi, np.concatenate([inputs(r, per) for r in range(size)]).astype(np.float64))

# ZeRO-style shards of numpy.array_split (sizes differ by one element): MPI_Reduce_scatter and
# MPI_Allgatherv and their nonblocking forms, compressed like the block calls.
zero = named("zero")
total = N + size - 1
counts = [len(part) for part in np.array_split(np.empty(total), size)]
offset = sum(counts[:rank])
shard = np.empty(counts[rank], dtype=np.float32)
zero.Reduce_scatter(inputs(rank, total), shard, recvcounts=counts, op=MPI.SUM)
check("Reduce_scatter zero", shard,
      sum(inputs(r, total).astype(np.float64) for r in range(size))[offset:offset + counts[rank]])
gv = np.empty(total, dtype=np.float32)
zero.Allgatherv(inputs(rank, counts[rank]), [gv, counts])
check("Allgatherv zero", gv, np.concatenate([inputs(r, counts[r]) for r in range(size)]).astype(np.float64))
whole = inputs(rank, total)  # a nonblocking call's buffers must outlive it
zero.Ireduce_scatter(whole, shard, recvcounts=counts, op=MPI.SUM).Wait()
check("Ireduce_scatter zero", shard,
      sum(inputs(r, total).astype(np.float64) for r in range(size))[offset:offset + counts[rank]])
gv[:] = 0
part = inputs(rank, counts[rank])
zero.Iallgatherv(part, [gv, counts]).Wait()
check("Iallgatherv zero", gv, np.concatenate([inputs(r, counts[r]) for r in range(size)]).astype(np.float64))

if size > 1:
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    req = pp.Irecv(y, source=prv, tag=5)
    pp.Send(x, dest=nxt, tag=5)
    status = MPI.Status()
    req.Wait(status)
    if status.Get_count(MPI.FLOAT) != N or status.Get_source() != prv:
        print(f"rank {rank}: status count {status.Get_count(MPI.FLOAT)} source {status.Get_source()}")
        failures += 1
    check("Send/Irecv pp", y, inputs(prv).astype(np.float64))

    # A persistent send and receive round the ring, two rounds of new data (Prequest).
    xs, yr = inputs(rank), np.zeros(N, dtype=np.float32)
    persistent = [pp.Send_init(xs, dest=nxt, tag=6), pp.Recv_init(yr, source=prv, tag=6)]
    for scale in (1, 2):
        xs[:] = inputs(rank) * np.float32(scale)
        MPI.Prequest.Startall(persistent)
        MPI.Request.Waitall(persistent)
        check("Send_init/Recv_init pp", yr, (inputs(prv) * np.float32(scale)).astype(np.float64))
    for q in persistent:
        q.Free()

    # A message of the sender's own length, received after a matched probe (Mprobe, Message.Recv).
    sent = pp.Isend(x[: N - 1000 * (rank + 1)], dest=nxt, tag=7)
    status = MPI.Status()
    message = pp.Mprobe(source=prv, tag=7, status=status)
    count = status.Get_count(MPI.FLOAT)
    z = np.zeros(max(count, 0), dtype=np.float32)
    message.Recv(z)
    sent.Wait()
    if count != N - 1000 * (prv + 1):
        print(f"rank {rank}: Mprobe count {count}")
        failures += 1
    check("Mprobe/Mrecv pp", z, inputs(prv, z.size).astype(np.float64))

k = np.arange(N, dtype=np.int64) % 1000 + rank
dp.Allreduce(MPI.IN_PLACE, k, op=MPI.SUM)
check("Allreduce int64 (untouched)", k.astype(np.float32),
      (size * (np.arange(N) % 1000) + size * (size - 1) // 2).astype(np.float64), True)

out.close()
for c in (dp, tp, pp, zero):
    c.Free()
failures = world.allreduce(failures, op=MPI.SUM)
if rank == 0:
    print("dropin_mpi4py: OK" if failures == 0 else "dropin_mpi4py: FAILED")
sys.exit(0 if failures == 0 else 1)

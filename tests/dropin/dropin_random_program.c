/* Random sequences of the calls libhycc_mpi.so routes, checked exactly: an MPI program written
 * without hycc that draws, from a seed every rank shares, CALLS calls among MPI_Allreduce,
 * MPI_Reduce_scatter_block, MPI_Reduce_scatter, MPI_Allgather, MPI_Allgatherv, MPI_Bcast,
 * MPI_Alltoall, MPI_Sendrecv, MPI_Isend/MPI_Irecv round a ring, MPI_Probe from any source then
 * MPI_Recv of the probed count, persistent sends and receives over two rounds, and the
 * nonblocking forms of the collectives (and int allreduces, which the library leaves to MPI); each
 * on one of six communicators (named dp, tp, pp, zero, embedding, and an unnamed one; of 2, p - 1
 * and p ranks), at a length from 0 to 300000 floats around the codecs' block sizes, in place or
 * not, vector counts equal, one apart either way or further apart, with gaps between blocks or
 * none. Up to four nonblocking calls stay pending at once and complete together (MPI_Waitall,
 * MPI_Waitany or MPI_Testall polling).
 *
 * The data are small integers (-4..4), whose sums over 8 ranks bf16, fp16 and float32 hold
 * exactly, so under tests/dropin/random_policy.toml (codecs that keep such values exactly,
 * error feedback around them, threshold 0: every call on a named communicator compressed) and
 * without the library alike each rank knows every result it must hold, bit for bit, and what
 * must stay untouched (the gaps, the rest of a longer receive buffer). Any difference names
 * the call, its arguments and the first wrong element. Prints "dropin random: OK (N calls)" on
 * rank 0; exits with 1 on a difference.
 *
 * Built with RANDOM_DEVICE (dropin_random_device_program, linked with tests/dropin/fake_cuda.c,
 * under the library only), every buffer of a call the library compresses is device memory of
 * the stand-in driver, which the CPU cannot touch: the library stages it through host memory.
 *
 * With a third argument "lossy" (under HYCC_POLICY=hybrid: 6-bit quantization with error
 * feedback on dp and zero gradients, bf16 elsewhere) the values get fractions no codec keeps,
 * each result must be within bound() of the exact one, what must stay untouched exactly so, and the
 * result of an allreduce, allgather or broadcast the same bits on every rank of the call.
 *
 * Usage: dropin_random_program SEED CALLS [lossy] (RANDOM_TRACE=1: each call on stderr once
 * started) */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kComms = 6, kMaxPending = 4 };
static const float kGuard = 12345.0f; /* what must stay untouched */

static int world_rank, world_size, failures;
static int trace;    /* RANDOM_TRACE set: each call on stderr once started */
static int lossy;    /* third argument "lossy": results within a bound, the same on every rank */
static double worst; /* lossy: the largest error relative to bound() seen */
static MPI_Comm comms[kComms];
static const char* comm_names[kComms] = {"dp", "tp", "pp", "zero", "embedding", "(unnamed)"};

/* The shared random sequence (xorshift64*): every rank draws the same numbers. */
static uint64_t state;
static uint64_t next(void) {
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 2685821657736338717ull;
}
static int below(int n) { return (int)(next() % (uint64_t)n); }

/* The value rank r contributes at element i of a call with this salt: an integer in -4..4;
 * lossy, plus up to 14/128, which bf16 cannot hold either (so every codec loses something). */
static float value(int r, long i, unsigned salt) {
  const float v = (float)((int)(((unsigned)r * 7u + (unsigned long)i * 3u + salt) % 9u) - 4);
  return lossy ? v + 0.0078125f * (float)(((unsigned long)r * 5u + (unsigned long)i) % 15u) : v;
}
static float sum_over(int size, long i, unsigned salt) {
  float s = 0;
  for (int r = 0; r < size; ++r) s += value(r, i, salt);
  return s;
}

static float* alloc(long n) {
  float* p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  if (p == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
  for (long i = 0; i < n; ++i) p[i] = kGuard;
  return p;
}

#ifdef RANDOM_DEVICE
/* The CUDA driver calls of a CUDA-aware program (tests/dropin/fake_cuda.c stands in). */
typedef unsigned long long CUdeviceptr;
int cuMemAlloc_v2(CUdeviceptr* p, size_t bytes);
int cuMemFree_v2(CUdeviceptr p);
int cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes);
int cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes);

static float* device_copy(const float* host, long n) {
  CUdeviceptr p;
  const size_t bytes = sizeof(float) * (size_t)(n > 0 ? n : 1);
  if (cuMemAlloc_v2(&p, bytes) != 0 || cuMemcpyHtoD_v2(p, host, bytes) != 0) {
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return (float*)(uintptr_t)p;
}
#endif

/* A call and what its results must be. */
enum Kind {
  kAllreduce,
  kReduceScatterBlock,
  kReduceScatter,
  kAllgather,
  kAllgatherv,
  kBcast,
  kAlltoall,
  kIntAllreduce,
  kSendrecv,
  kRing,
  kProbeRecv,
  kPersistent,
  kKinds
};
static const char* kind_names[kKinds] = {"allreduce",
                                         "reduce_scatter_block",
                                         "reduce_scatter",
                                         "allgather",
                                         "allgatherv",
                                         "bcast",
                                         "alltoall",
                                         "int allreduce (left to MPI)",
                                         "sendrecv",
                                         "isend/irecv",
                                         "probe + recv from any source",
                                         "persistent send/recv (2 rounds)"};
typedef struct {
  int call, kind, comm, nonblocking, in_place, root, size, rank;
  long count, total; /* count: per block or rank; total: the receive buffer's length */
  unsigned salt;
  int far;     /* vector counts further apart than one: left to MPI */
  int* counts; /* vector variants: per rank; displs: the blocks' offsets */
  int* displs;
  float *send, *recv;   /* on the host: the values, and what the results are checked in */
  float *dsend, *drecv; /* what the MPI calls take: these, or device copies (RANDOM_DEVICE) */
  MPI_Request requests[2];
  int nrequests;
} Call;

static void fail(const Call* c, long i, float got, float want) {
  if (failures++ < 10) {
    fprintf(stderr,
            "rank %d: call %d: %s%s on %s (%d ranks), count %ld, %s: element %ld is %g, "
            "expected %g\n",
            world_rank, c->call, c->nonblocking ? "nonblocking " : "", kind_names[c->kind],
            comm_names[c->comm], c->size, c->count, c->in_place ? "in place" : "not in place", i,
            (double)got, (double)want);
  }
}

/* Whether the library leaves the call to MPI whatever the policy: on the unnamed
 * communicator or one of a single rank, or vector counts further apart. */
static int left_to_mpi(const Call* c) { return c->comm == kComms - 1 || c->size == 1 || c->far; }

/* Whether element i of the receive buffer lies past the result of an in-place reduce-scatter:
 * the rank's input, which the library leaves as it was, as Open MPI does. */
static int past_result(const Call* c, long i) {
  if (!c->in_place) return 0;
  if (c->kind == kReduceScatterBlock) return i >= c->count;
  return c->kind == kReduceScatter && i >= c->counts[c->rank];
}

/* What an element past the result of an in-place reduce-scatter must hold: the input, or NaN
 * (anything) where MPICH runs the call: the MPI standard leaves that part undefined, and MPICH
 * 4.0.2's own algorithms write partial sums there. */
static float input_past_result(const Call* c, long i) {
#ifdef MPICH_VERSION
  if (left_to_mpi(c)) return NAN;
#endif
  return value(c->rank, i, c->salt);
}

/* What element i of the receive buffer must hold after the call; NaN: anything. */
static float expected(const Call* c, long i) {
  const int r = c->rank, p = c->size;
  switch (c->kind) {
    case kAllreduce:
      return sum_over(p, i, c->salt);
    case kReduceScatterBlock:
      if (i < c->count) return sum_over(p, (long)r * c->count + i, c->salt);
      return past_result(c, i) ? input_past_result(c, i) : kGuard;
    case kReduceScatter:
      if (i < c->counts[r]) return sum_over(p, c->displs[r] + i, c->salt);
      return past_result(c, i) ? input_past_result(c, i) : kGuard;
    case kAllgather:
      return value((int)(i / c->count), i % c->count, c->salt);
    case kAllgatherv:
      for (int q = 0; q < p; ++q) {
        if (i >= c->displs[q] && i < c->displs[q] + c->counts[q]) {
          return value(q, i - c->displs[q], c->salt);
        }
      }
      return kGuard;
    case kBcast:
      return value(c->root, i, c->salt);
    case kAlltoall:
      return value((int)(i / c->count), (long)r * c->count + i % c->count, c->salt);
    default: /* point to point: from the left neighbour */
      return value((r + p - 1) % p, i, c->salt);
  }
}

/* Makes the buffers the MPI calls take, once the host buffers hold their values: the host
 * buffers themselves, or device copies of them (send_n floats to send). Calls left to MPI keep
 * host buffers: MPI cannot read the stand-in's device memory. */
static void stage(Call* c, long send_n) {
#ifdef RANDOM_DEVICE
  if (left_to_mpi(c)) {
    c->dsend = c->send;
    c->drecv = c->recv;
    return;
  }
  c->dsend = c->send != NULL ? device_copy(c->send, send_n) : NULL;
  c->drecv = device_copy(c->recv, c->total);
#else
  (void)send_n;
  c->dsend = c->send;
  c->drecv = c->recv;
#endif
}

/* The send buffer's new values to the device (persistent requests send it again). */
static void restage_send(Call* c, long n) {
#ifdef RANDOM_DEVICE
  if (n > 0 && c->dsend != c->send &&
      cuMemcpyHtoD_v2((CUdeviceptr)(uintptr_t)c->dsend, c->send, sizeof(float) * (size_t)n)) {
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
#else
  (void)c;
  (void)n;
#endif
}

/* The results into the host buffer. */
static void fetch(Call* c) {
#ifdef RANDOM_DEVICE
  if (c->total > 0 && c->drecv != c->recv &&
      cuMemcpyDtoH_v2(c->recv, (CUdeviceptr)(uintptr_t)c->drecv,
                      sizeof(float) * (size_t)c->total)) {
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
#else
  (void)c;
#endif
}

/* FNV-1a of n floats' bytes. */
static uint64_t hash(const float* x, long n) {
  uint64_t h = 1469598103934665603ull;
  const unsigned char* b = (const unsigned char*)x;
  for (long i = 0; i < n * (long)sizeof(float); ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* Lossy: how far a result may be from the exact sum of p ranks' values (about -4..4) under
 * hybrid (6-bit quantization with two-stage error feedback on dp and zero gradients: steps of
 * 8/63 on each rank's values, 8p/63 on the sums, and the residual carried in; bf16 elsewhere,
 * 1/128 of a value). Seen: 0.04 to 0.24 of it at 2 to 5 ranks. A result from the wrong
 * elements or ranks is off by 1 or more. */
static double bound(int p) { return 0.1 * p + 0.2; }

/* Whether element i is what it must be: exactly, or a result lossy within bound() (what must
 * stay untouched always exactly); NaN wants anything. */
static int matches(const Call* c, long i, float got, float want) {
  if (isnan(want)) return 1;
  if (!lossy || want == kGuard || past_result(c, i)) return got == want;
  const double error = fabs((double)got - want) / bound(c->size);
  worst = fmax(worst, error);
  return error <= 1;
}

/* Fetches the results and reports the first element that is not what it must be. */
static void verify(Call* c) {
  fetch(c);
  for (long i = 0; i < c->total; ++i) {
    if (!matches(c, i, c->recv[i], expected(c, i))) {
      fail(c, i, c->recv[i], expected(c, i));
      break;
    }
  }
}

/* Verifies a completed call, and frees it. */
static void check(Call* c) {
  verify(c);
  /* Lossy: a collective whose result every rank holds must give every rank the same bits. */
  if (lossy && (c->kind == kAllreduce || c->kind == kAllgather || c->kind == kAllgatherv ||
                c->kind == kBcast)) {
    uint64_t h = hash(c->recv, c->total), lo = 0, hi = 0;
    MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, comms[c->comm]);
    MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, comms[c->comm]);
    if (lo != hi && failures++ < 10) {
      fprintf(stderr, "rank %d: call %d: %s on %s: the ranks' results differ\n", world_rank,
              c->call, kind_names[c->kind], comm_names[c->comm]);
    }
  }
#ifdef RANDOM_DEVICE
  if (c->dsend != c->send) cuMemFree_v2((CUdeviceptr)(uintptr_t)c->dsend);
  if (c->drecv != c->recv) cuMemFree_v2((CUdeviceptr)(uintptr_t)c->drecv);
#endif
  free(c->send);
  free(c->recv);
  free(c->counts);
  free(c->displs);
}

/* Counts of a vector call over p ranks of about `count` each: equal, the first total % p one
 * longer (hycc's chunks), the last ones longer, or further apart (left to MPI); offsets
 * adjacent or with gaps of 1 or 2 elements. Returns the receive buffer's length. */
static long vector_layout(Call* c, long count) {
  const int p = c->size, style = below(4), gaps = below(2);
  c->counts = malloc(sizeof(int) * (size_t)p);
  c->displs = malloc(sizeof(int) * (size_t)p);
  if (c->counts == NULL || c->displs == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
  const int extra = p > 1 ? below(p) : 0;
  c->far = style == 3;
  long at = 0;
  for (int q = 0; q < p; ++q) {
    long n = count;
    if (style == 1) n += q < extra ? 1 : 0;
    if (style == 2) n += q >= p - extra ? 1 : 0;
    if (style == 3) n += (q * 37) % 5;
    c->counts[q] = (int)n;
    c->displs[q] = (int)at;
    at += n + (gaps && c->kind == kAllgatherv ? 1 + q % 2 : 0);
  }
  return at;
}

/* Draws and starts call number `number` on this rank (its communicator is not null). */
static void start(Call* c, int number, int comm, int kind, int nonblocking) {
  static const long lengths[] = {0, 1, 3, 63, 64, 65, 1000, 4097, 65536, 100003, 300000};
  memset(c, 0, sizeof *c);
  c->call = number;
  c->comm = comm;
  c->kind = kind;
  c->nonblocking = nonblocking;
  c->salt = (unsigned)next() % 1000u;
  c->in_place = below(2);
  MPI_Comm m = comms[comm];
  MPI_Comm_size(m, &c->size);
  MPI_Comm_rank(m, &c->rank);
  const int p = c->size, r = c->rank;
  long n = lengths[below((int)(sizeof lengths / sizeof lengths[0]))];
  if (kind == kAlltoall || kind == kAllgather || kind == kReduceScatterBlock) n /= p;
  c->count = n;
  c->root = below(p);
  MPI_Request* q = c->requests;
  c->nrequests = 1;
  switch (kind) {
    case kAllreduce:
      c->total = n;
      c->send = alloc(n);
      c->recv = alloc(n);
      for (long i = 0; i < n; ++i) (c->in_place ? c->recv : c->send)[i] = value(r, i, c->salt);
      stage(c, n);
      if (nonblocking) {
        MPI_Iallreduce(c->in_place ? MPI_IN_PLACE : c->dsend, c->drecv, (int)n, MPI_FLOAT, MPI_SUM,
                       m, q);
      } else {
        MPI_Allreduce(c->in_place ? MPI_IN_PLACE : c->dsend, c->drecv, (int)n, MPI_FLOAT, MPI_SUM,
                      m);
      }
      break;
    case kReduceScatterBlock:
      c->total = c->in_place ? n * p : n;
      c->send = alloc(n * p);
      c->recv = alloc(c->total);
      for (long i = 0; i < n * p; ++i) (c->in_place ? c->recv : c->send)[i] = value(r, i, c->salt);
      stage(c, n * p);
      if (nonblocking) {
        MPI_Ireduce_scatter_block(c->in_place ? MPI_IN_PLACE : c->dsend, c->drecv, (int)n,
                                  MPI_FLOAT, MPI_SUM, m, q);
      } else {
        MPI_Reduce_scatter_block(c->in_place ? MPI_IN_PLACE : c->dsend, c->drecv, (int)n, MPI_FLOAT,
                                 MPI_SUM, m);
      }
      break;
    case kReduceScatter: {
      c->count = n / p;
      const long all = vector_layout(c, c->count);
#ifdef MPICH_VERSION
      /* MPICH 4.0.2's own in-place MPI_Reduce_scatter stops with an internal error ("memcpy
       * argument memory ranges overlap", typerep_yaksa_pack.c): not in place where the library
       * leaves the call to MPI. */
      if (left_to_mpi(c)) c->in_place = 0;
#endif
      c->total = c->in_place ? all : c->counts[r];
      c->send = alloc(all);
      c->recv = alloc(c->total);
      for (long i = 0; i < all; ++i) (c->in_place ? c->recv : c->send)[i] = value(r, i, c->salt);
      stage(c, all);
      if (nonblocking) {
        MPI_Ireduce_scatter(c->in_place ? MPI_IN_PLACE : c->dsend, c->drecv, c->counts, MPI_FLOAT,
                            MPI_SUM, m, q);
      } else {
        MPI_Reduce_scatter(c->in_place ? MPI_IN_PLACE : c->dsend, c->drecv, c->counts, MPI_FLOAT,
                           MPI_SUM, m);
      }
      break;
    }
    case kAllgather:
      c->total = n * p;
      c->send = alloc(n);
      c->recv = alloc(c->total);
      for (long i = 0; i < n; ++i) {
        (c->in_place ? c->recv + (long)r * n : c->send)[i] = value(r, i, c->salt);
      }
      stage(c, n);
      if (nonblocking) {
        MPI_Iallgather(c->in_place ? MPI_IN_PLACE : c->dsend, (int)n, MPI_FLOAT, c->drecv, (int)n,
                       MPI_FLOAT, m, q);
      } else {
        MPI_Allgather(c->in_place ? MPI_IN_PLACE : c->dsend, (int)n, MPI_FLOAT, c->drecv, (int)n,
                      MPI_FLOAT, m);
      }
      break;
    case kAllgatherv:
      c->count = n / p;
      c->total = vector_layout(c, c->count);
      c->send = alloc(c->counts[r]);
      c->recv = alloc(c->total);
      for (long i = 0; i < c->counts[r]; ++i) {
        (c->in_place ? c->recv + c->displs[r] : c->send)[i] = value(r, i, c->salt);
      }
      stage(c, c->counts[r]);
      if (nonblocking) {
        MPI_Iallgatherv(c->in_place ? MPI_IN_PLACE : c->dsend, c->counts[r], MPI_FLOAT, c->drecv,
                        c->counts, c->displs, MPI_FLOAT, m, q);
      } else {
        MPI_Allgatherv(c->in_place ? MPI_IN_PLACE : c->dsend, c->counts[r], MPI_FLOAT, c->drecv,
                       c->counts, c->displs, MPI_FLOAT, m);
      }
      break;
    case kBcast:
      c->total = n;
      c->recv = alloc(n);
      if (r == c->root) {
        for (long i = 0; i < n; ++i) c->recv[i] = value(r, i, c->salt);
      }
      stage(c, 0);
      if (nonblocking) {
        MPI_Ibcast(c->drecv, (int)n, MPI_FLOAT, c->root, m, q);
      } else {
        MPI_Bcast(c->drecv, (int)n, MPI_FLOAT, c->root, m);
      }
      break;
    case kAlltoall:
      c->in_place = 0;
      c->total = n * p;
      c->send = alloc(n * p);
      c->recv = alloc(n * p);
      for (long i = 0; i < n * p; ++i) c->send[i] = value(r, i, c->salt);
      stage(c, n * p);
      if (nonblocking) {
        MPI_Ialltoall(c->dsend, (int)n, MPI_FLOAT, c->drecv, (int)n, MPI_FLOAT, m, q);
      } else {
        MPI_Alltoall(c->dsend, (int)n, MPI_FLOAT, c->drecv, (int)n, MPI_FLOAT, m);
      }
      break;
    case kIntAllreduce: { /* MPI's own call, untouched: checked here, exactly */
      c->nonblocking = 0;
      int* in = malloc(sizeof(int) * (size_t)(n + 1));
      int* out = malloc(sizeof(int) * (size_t)(n + 1));
      if (in == NULL || out == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
      for (long i = 0; i < n; ++i) in[i] = (int)value(r, i, c->salt) * 1000003;
      MPI_Allreduce(in, out, (int)n, MPI_INT, MPI_SUM, m);
      for (long i = 0; i < n; ++i) {
        int want = 0;
        for (int q = 0; q < p; ++q) want += (int)value(q, i, c->salt) * 1000003;
        if (out[i] != want) {
          fail(c, i, (float)out[i], (float)want);
          break;
        }
      }
      free(in);
      free(out);
      break;
    }
    default: { /* point to point: to the right neighbour, from the left one */
      const int right = (r + 1) % p, left = (r + p - 1) % p, tag = number % 1000;
      c->in_place = 0;
      c->total = n;
      c->send = alloc(n);
      c->recv = alloc(n);
      for (long i = 0; i < n; ++i) c->send[i] = value(r, i, c->salt);
      stage(c, n);
      if (kind == kSendrecv) {
        MPI_Sendrecv(c->dsend, (int)n, MPI_FLOAT, right, tag, c->drecv, (int)n, MPI_FLOAT, left,
                     tag, m, MPI_STATUS_IGNORE);
        c->nonblocking = 0;
      } else if (kind == kProbeRecv) { /* the length from the probed status */
        MPI_Request sent;
        MPI_Status status;
        int got = -1;
        MPI_Isend(c->dsend, (int)n, MPI_FLOAT, right, tag, m, &sent);
        MPI_Probe(MPI_ANY_SOURCE, tag, m, &status);
        MPI_Get_count(&status, MPI_FLOAT, &got);
        if (got != n || status.MPI_SOURCE != left) fail(c, -1, (float)got, (float)n);
        MPI_Recv(c->drecv, got, MPI_FLOAT, status.MPI_SOURCE, tag, m, MPI_STATUS_IGNORE);
        MPI_Wait(&sent, MPI_STATUS_IGNORE);
        c->nonblocking = 0;
      } else if (kind == kPersistent) { /* round 1 checked here, round 2 by check() */
        MPI_Request both[2];
        MPI_Recv_init(c->drecv, (int)n, MPI_FLOAT, left, tag, m, &both[0]);
        MPI_Send_init(c->dsend, (int)n, MPI_FLOAT, right, tag, m, &both[1]);
        for (int round = 0; round < 2; ++round) {
          for (long i = 0; i < n; ++i) c->send[i] = value(r, i, c->salt + (unsigned)round);
          restage_send(c, n);
          MPI_Startall(2, both);
          MPI_Waitall(2, both, MPI_STATUSES_IGNORE);
          if (round == 0) verify(c);
        }
        MPI_Request_free(&both[0]);
        MPI_Request_free(&both[1]);
        c->salt += 1;
        c->nonblocking = 0;
      } else {
        MPI_Irecv(c->drecv, (int)n, MPI_FLOAT, left, tag, m, &q[0]);
        MPI_Isend(c->dsend, (int)n, MPI_FLOAT, right, tag, m, &q[1]);
        c->nrequests = 2;
        c->nonblocking = 1;
      }
    }
  }
  if (!c->nonblocking) c->nrequests = 0;
  if (trace) {
    fprintf(stderr, "rank %d: call %d: %s%s on %s (%d ranks), count %ld, %s%s\n", world_rank,
            number, c->nonblocking ? "nonblocking " : "", kind_names[kind], comm_names[comm], p,
            c->count, c->in_place ? "in place" : "not in place",
            c->far ? ", counts far apart" : "");
  }
}

/* Completes every pending call, one of three ways, and checks them. */
static void complete(Call* pending, int* npending, int how) {
  MPI_Request all[2 * kMaxPending];
  int n = 0;
  for (int k = 0; k < *npending; ++k) {
    for (int j = 0; j < pending[k].nrequests; ++j) all[n++] = pending[k].requests[j];
  }
  if (how == 0) {
    MPI_Waitall(n, all, MPI_STATUSES_IGNORE);
  } else if (how == 1) {
    for (int left = n; left > 0; --left) {
      int index = 0;
      MPI_Waitany(n, all, &index, MPI_STATUS_IGNORE);
    }
  } else {
    int done = 0;
    while (!done) MPI_Testall(n, all, &done, MPI_STATUSES_IGNORE);
  }
  for (int k = 0; k < *npending; ++k) check(&pending[k]);
  *npending = 0;
}

static void make_communicators(void) {
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]);
  MPI_Comm_split(MPI_COMM_WORLD, world_rank / 2, world_rank, &comms[1]); /* pairs */
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[2]);
  MPI_Comm_split(MPI_COMM_WORLD, world_rank < world_size - 1 ? 0 : MPI_UNDEFINED, world_rank,
                 &comms[3]);                                             /* p - 1 ranks */
  MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - world_rank, &comms[4]); /* reversed */
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[5]);
  for (int k = 0; k < 5; ++k) {
    if (comms[k] != MPI_COMM_NULL) MPI_Comm_set_name(comms[k], comm_names[k]);
  }
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "lossy") != 0)) {
    if (world_rank == 0) fprintf(stderr, "usage: %s SEED CALLS [lossy]\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  state = strtoull(argv[1], NULL, 10) * 0x9E3779B97F4A7C15ull + 1;
  const int calls = atoi(argv[2]);
  trace = getenv("RANDOM_TRACE") != NULL;
  lossy = argc == 4;
  make_communicators();
  Call pending[kMaxPending];
  int npending = 0, made = 0, drawn = 0; /* drawn: calls since the last completion, all ranks' */
  for (int k = 0; k < calls; ++k) {
    /* Every rank draws the same numbers whether or not it takes part. */
    const int comm = below(kComms), kind = below(kKinds), nonblocking = below(3) == 0;
    const int how = below(3), flush = below(4) == 0;
    const uint64_t saved = state;
    if (comms[comm] != MPI_COMM_NULL) {
      Call c;
      start(&c, k, comm, kind, nonblocking);
      ++made;
      if (c.nrequests == 0) {
        check(&c);
      } else {
        pending[npending++] = c;
      }
    }
    /* The call's own draws differ by communicator size and rank: skip them alike everywhere. */
    state = saved;
    for (int j = 0; j < 8; ++j) (void)next();
    /* When to complete: the same point on every rank (a rank's own count of pending calls is
     * not: it takes part in only some), which the lossy checks' allreduces need. */
    if (++drawn == kMaxPending || flush) {
      complete(pending, &npending, how);
      drawn = 0;
    }
  }
  complete(pending, &npending, 0);
  int all = 0, total = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&made, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  double largest = 0;
  MPI_Allreduce(&worst, &largest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (world_rank == 0 && lossy) printf("largest error: %.3f of the bound\n", largest);
  if (world_rank == 0) {
    if (all == 0) {
      printf("dropin random: OK (%d calls)\n", total);
    } else {
      printf("dropin random: %d differences\n", all);
    }
  }
  for (int k = 0; k < kComms; ++k) {
    if (comms[k] != MPI_COMM_NULL) MPI_Comm_free(&comms[k]);
  }
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}

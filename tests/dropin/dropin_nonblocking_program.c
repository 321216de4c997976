/* Nonblocking collectives of an MPI program written without hycc, under libhycc_mpi.so and
 * tests/dropin/nonblocking_policy.toml (quant:bits=8 on dp allreduces, error feedback on zero
 * reductions, eb on pp, top-k on embedding, bf16 elsewhere), 4 ranks:
 *  - compressed calls: MPI_Iallreduce on dp (quant, 4 ranks) and tp (bf16, 2 ranks; in and out
 *    of place) within the codec's bound of the exact sum and not exact, the same bits on every
 *    rank; MPI_Ibcast, MPI_Iallgather (in and out of place) and MPI_Ialltoall on tp equal to the
 *    bf16 rounding of the data, bit for bit (the own alltoall block exact), and to the blocking
 *    calls' results; MPI_Ireduce_scatter_block on the unnamed 4-rank communicator (bf16) equal
 *    to the sum of the others' bf16 roundings and the own exact contribution;
 *  - error feedback (ef+quant:bits=4 on zero allreduces, ef2+quant:bits=8 on zero
 *    reduce-scatters): MPI_Iallreduce gives MPI_Allreduce's bits (ef+'s compress-once step)
 *    step after step, with buffers of their own (residuals kept per buffer); over 16 steps of
 *    the same input the mean result of an allreduce and of a reduce-scatter (in and out of
 *    place) is at least 4x closer to the exact sum than one step's (what error feedback is
 *    for: without it every step repeats the same error);
 *  - special values: a few infinities and NaN in one rank's dp input come through the quant
 *    stream's special blocks (infinite and NaN sums exactly there); an input that is a quarter
 *    infinities fits too (quant's size never depends on the data): infinite sums there, finite
 *    elsewhere;
 *  - calls left to MPI, exact (integers that bf16, quant and eb:abs=4 cannot hold, whose sums
 *    float32 holds): eb's MPI_Iallreduce on pp (its size depends on the data), top-k's on
 *    embedding, and bf16's on the 4-rank "other" communicator (gathering 4 bf16 streams
 *    would move more bytes than MPI's allreduce), each said once on rank 0's stderr with its
 *    reason;
 *  - the vector variants with counts one apart (MPI_Iallgatherv on tp, bf16, blocks apart;
 *    MPI_Ireduce_scatter on the unnamed communicator, bf16, and on zero, ef2+), as above;
 *  - MPI's semantics kept: rank 0 receives a large message from rank 1 between initiating and
 *    completing a tp allreduce that rank 1 initiates only after sending (a library that ran the
 *    collective at initiation would hang here); ranks initiate on tp and "other" in opposite
 *    orders; a communicator freed before its request completes; MPI_Test polling, MPI_Waitall
 *    over several collectives.
 * Prints "dropin nonblocking: OK" on rank 0; exits with 1 on a difference. */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { N = 200000 }; /* per rank and block */

static int rank, size, failures;
static MPI_Comm dp, tp, pp, zero, embedding, other;

static void fail(const char* what, long i, double got, double want) {
  if (failures++ < 10) {
    fprintf(stderr, "rank %d: %s: element %ld is %.9g, expected %.9g\n", rank, what, i, got, want);
  }
}

static float input(int r, long i) { return (float)(sin(0.001 * (double)i + r) + 0.01 * r); }

/* An integer bf16 cannot hold (more than 8 significant bits), nor 8-bit quantization of its
 * block (a range of 126), nor eb:abs=4 (odd); sums of 4 fit float32 exactly. */
static float integer(int r, long i) { return (float)(1001 + 2 * (i % 1000) + r); }

/* Round to nearest even bf16, back to float32 (finite inputs). */
static float bf16(float x) {
  uint32_t b;
  memcpy(&b, &x, 4);
  b += 0x7fffu + ((b >> 16) & 1u);
  b &= 0xffff0000u;
  memcpy(&x, &b, 4);
  return x;
}

static float* alloc(long n) {
  float* p = malloc(sizeof(float) * (size_t)n);
  if (p == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
  return p;
}

/* The same bits on every rank of comm. */
static void same_everywhere(const char* what, const float* x, long n, MPI_Comm comm) {
  uint64_t h = 1469598103934665603ull, lo, hi;
  const unsigned char* p = (const unsigned char*)x;
  for (long i = 0; i < n * 4; ++i) h = (h ^ p[i]) * 1099511628211ull;
  MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, comm);
  MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, comm);
  if (lo != hi) fail(what, -1, 0, 0);
}

static void wait(MPI_Request* r) {
  int flag = 0;
  while (!flag) MPI_Test(r, &flag, MPI_STATUS_IGNORE); /* polling, as overlapping programs do */
}

/* An allreduce of input(), out of place or in place: within `bound` per input of the exact sum,
 * not exact (so it was compressed), the same bits on every rank. */
static void check_allreduce(MPI_Comm comm, double bound, int in_place, const char* what) {
  int p, c;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &c);
  float* send = alloc(N);
  float* recv = alloc(N);
  for (long i = 0; i < N; ++i) (in_place ? recv : send)[i] = input(c, i);
  MPI_Request r;
  MPI_Iallreduce(in_place ? MPI_IN_PLACE : send, recv, N, MPI_FLOAT, MPI_SUM, comm, &r);
  wait(&r);
  double worst = 0;
  for (long i = 0; i < N; ++i) {
    double exact = 0;
    for (int j = 0; j < p; ++j) exact += input(j, i);
    const double e = fabs(recv[i] - exact);
    if (e > worst) worst = e;
    if (!(e <= p * bound)) fail(what, i, recv[i], exact);
  }
  if (worst < 1e-4) fail(what, -1, worst, 1e-4); /* float32 rounding only: not compressed */
  same_everywhere(what, recv, N, comm);
  free(send);
  free(recv);
}

/* Special values in rank 2's dp input: a few come through exactly, and so does a quarter of the
 * input infinite (quant stores them in its blocks: its slot never overflows). */
static void check_special_values(void) {
  float* x = alloc(N);
  for (long i = 0; i < N; ++i) x[i] = input(rank, i);
  if (rank == 2) x[100] = INFINITY, x[5000] = -INFINITY, x[77777] = NAN;
  MPI_Request r;
  MPI_Iallreduce(MPI_IN_PLACE, x, N, MPI_FLOAT, MPI_SUM, dp, &r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  if (!(isinf(x[100]) && x[100] > 0)) fail("dp Iallreduce of an infinity", 100, x[100], INFINITY);
  if (!(isinf(x[5000]) && x[5000] < 0))
    fail("dp Iallreduce of -infinity", 5000, x[5000], -INFINITY);
  if (!isnan(x[77777])) fail("dp Iallreduce of a NaN", 77777, x[77777], NAN);
  for (long i = 0; i < N; ++i) {
    if (i != 100 && i != 5000 && i != 77777 && !isfinite(x[i]))
      fail("dp Iallreduce, finite", i, x[i], 0);
  }
  for (long i = 0; i < N; ++i) x[i] = rank == 2 && i % 4 == 0 ? INFINITY : input(rank, i);
  MPI_Iallreduce(MPI_IN_PLACE, x, N, MPI_FLOAT, MPI_SUM, dp, &r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  for (long i = 0; i < N; ++i) {
    if (i % 4 == 0 ? !(isinf(x[i]) && x[i] > 0) : !isfinite(x[i]))
      fail("dp Iallreduce of a quarter infinities", i, x[i], i % 4 == 0 ? INFINITY : 0);
  }
  free(x);
}

/* Allreduces the library must leave to MPI: exact sums of integers bf16 cannot hold. */
static void check_exact_allreduce(MPI_Comm comm, const char* what) {
  int p, c;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &c);
  float* x = alloc(N);
  for (long i = 0; i < N; ++i) x[i] = integer(c, i);
  MPI_Request r;
  MPI_Iallreduce(MPI_IN_PLACE, x, N, MPI_FLOAT, MPI_SUM, comm, &r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  for (long i = 0; i < N; ++i) {
    double exact = 0;
    for (int j = 0; j < p; ++j) exact += integer(j, i);
    if (x[i] != exact) fail(what, i, x[i], exact);
  }
  free(x);
}

/* Rank 0's stderr goes to a file between capture_stderr() and the returned text of
 * captured_stderr() (what the library said meanwhile). */
static int saved_stderr = -1;
static FILE* capture;

static void capture_stderr(void) {
  if (rank != 0) return;
  fflush(stderr);
  capture = tmpfile();
  if (capture == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
  saved_stderr = dup(2);
  dup2(fileno(capture), 2);
}

static char* captured_stderr(void) {
  static char text[8192];
  text[0] = 0;
  if (rank != 0) return text;
  fflush(stderr);
  dup2(saved_stderr, 2);
  close(saved_stderr);
  rewind(capture);
  const size_t n = fread(text, 1, sizeof text - 1, capture);
  text[n] = 0;
  fclose(capture);
  fputs(text, stderr);
  return text;
}

/* Rank 0 was told, once, why a nonblocking call its rule would compress went to MPI. */
static void expect_warning(const char* text, const char* call_on, const char* reason) {
  if (rank != 0) return;
  const char* at = strstr(text, call_on);
  if (at == NULL || strstr(at, reason) == NULL || strstr(at + 1, call_on) != NULL) {
    fprintf(stderr, "rank 0: expected one warning \"%s ... %s\"\n", call_on, reason);
    ++failures;
  }
}

/* tp broadcast, allgather (both ways) and alltoall: bf16 roundings, bit for bit, as the
 * blocking calls give them. */
static void check_tp(void) {
  int p, t;
  MPI_Comm_size(tp, &p);
  MPI_Comm_rank(tp, &t);
  const int root = p - 1;
  float* b = alloc(N);
  float* g = alloc((long)p * N);
  float* gi = alloc((long)p * N);
  float* a = alloc((long)p * N);
  float* a_send = alloc((long)p * N);
  float* blocking = alloc((long)p * N);
  for (long i = 0; i < N; ++i) b[i] = t == root ? input(root, i) : 0.0f;
  for (long i = 0; i < N; ++i) gi[(long)t * N + i] = input(t, i);
  for (long i = 0; i < (long)p * N; ++i) a_send[i] = input(10 * t + (int)(i / N), i);
  float* mine = alloc(N);
  for (long i = 0; i < N; ++i) mine[i] = input(t, i);
  MPI_Request r[4];
  MPI_Ibcast(b, N, MPI_FLOAT, root, tp, &r[0]);
  MPI_Iallgather(mine, N, MPI_FLOAT, g, N, MPI_FLOAT, tp, &r[1]);
  MPI_Iallgather(MPI_IN_PLACE, N, MPI_FLOAT, gi, N, MPI_FLOAT, tp, &r[2]);
  MPI_Ialltoall(a_send, N, MPI_FLOAT, a, N, MPI_FLOAT, tp, &r[3]);
  MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
  for (long i = 0; i < N; ++i) {
    if (b[i] != bf16(input(root, i))) fail("tp Ibcast", i, b[i], bf16(input(root, i)));
  }
  for (int j = 0; j < p; ++j) {
    for (long i = 0; i < N; ++i) {
      const float want = bf16(input(j, i));
      if (g[(long)j * N + i] != want) fail("tp Iallgather", i, g[(long)j * N + i], want);
      if (gi[(long)j * N + i] != want) fail("tp Iallgather in place", i, gi[(long)j * N + i], want);
      const float sent = input(10 * j + t, (long)t * N + i);
      const float want_a = j == t ? sent : bf16(sent);
      if (a[(long)j * N + i] != want_a) fail("tp Ialltoall", i, a[(long)j * N + i], want_a);
    }
  }
  MPI_Allgather(mine, N, MPI_FLOAT, blocking, N, MPI_FLOAT, tp);
  if (memcmp(blocking, g, sizeof(float) * (size_t)p * N) != 0)
    fail("tp Iallgather vs blocking", -1, 0, 0);
  MPI_Alltoall(a_send, N, MPI_FLOAT, blocking, N, MPI_FLOAT, tp);
  if (memcmp(blocking, a, sizeof(float) * (size_t)p * N) != 0)
    fail("tp Ialltoall vs blocking", -1, 0, 0);
  free(b), free(g), free(gi), free(a), free(a_send), free(blocking), free(mine);
}

/* Reduce-scatter on the unnamed communicator (bf16, the default rule): the contributions of the
 * other ranks bf16-rounded, this rank's own exact, summed in rank order; out of place and in
 * place. */
static void check_reduce_scatter(int in_place) {
  float* send = alloc(4L * N);
  float* recv = alloc(in_place ? 4L * N : N);
  float* x = in_place ? recv : send;
  for (long i = 0; i < 4L * N; ++i) x[i] = input(rank, i);
  MPI_Request r;
  MPI_Ireduce_scatter_block(in_place ? MPI_IN_PLACE : send, recv, N, MPI_FLOAT, MPI_SUM, other, &r);
  wait(&r);
  const char* what = in_place ? "Ireduce_scatter_block in place" : "Ireduce_scatter_block";
  for (long i = 0; i < N; ++i) {
    float want = 0;
    for (int j = 0; j < 4; ++j) {
      const float v = input(j, (long)rank * N + i);
      const float c = j == rank ? v : bf16(v);
      want = j == 0 ? c : want + c;
    }
    if (recv[i] != want) fail(what, i, recv[i], want);
  }
  free(send);
  free(recv);
}

/* zero allreduces under ef+quant:bits=4: MPI_Iallreduce (out of place) and MPI_Allreduce (in
 * place) on buffers of their own, the same inputs step after step: the same bits (the
 * nonblocking call runs ef+'s compress-once step, and each buffer keeps its own residual). An
 * infinity in step 1 is infinite or NaN there only, and the steps after it are finite. */
static void check_feedback_like_blocking(void) {
  float* send = alloc(N);
  float* recv = alloc(N);
  float* blocking = alloc(N);
  for (int step = 0; step < 4; ++step) {
    for (long i = 0; i < N; ++i) send[i] = blocking[i] = input(rank, i) * (float)(1 + step);
    if (step == 1 && rank == 2) send[123] = blocking[123] = INFINITY; /* an overflowed step */
    MPI_Request r;
    MPI_Iallreduce(send, recv, N, MPI_FLOAT, MPI_SUM, zero, &r);
    wait(&r);
    MPI_Allreduce(MPI_IN_PLACE, blocking, N, MPI_FLOAT, MPI_SUM, zero);
    if (memcmp(recv, blocking, sizeof(float) * N) != 0)
      fail("zero Iallreduce (ef+) vs MPI_Allreduce", step, 0, 0);
    same_everywhere("zero Iallreduce (ef+)", recv, N, zero);
    for (long i = 0; i < N; ++i) {
      /* the overflow shows in its step, and does not outlive it (docs/gradients.md) */
      if ((step == 1 && i == 123) == (isfinite(recv[i]) != 0))
        fail("zero Iallreduce (ef+) around an overflowed step", i, recv[i], step);
    }
  }
  free(send), free(recv), free(blocking);
}

/* The same input for 16 steps of a zero allreduce (ef+quant:bits=4) or reduce-scatter
 * (ef2+quant:bits=8, in or out of place): the result is compressed (not exact) and the mean of
 * the results is at least 4x closer to the exact sum than the first step's result: the residual
 * carries what a step lost into the next, so the errors cancel (sum of results = 16 x the exact
 * sum - the last residuals, within p half quantization steps / 16 on average). */
static void check_feedback_averages_out(int reduce_scatter, int in_place) {
  enum { kSteps = 16 };
  const long total = reduce_scatter ? 4L * N : N;
  float* send = alloc(total);
  float* recv = alloc(total);
  double* sum = calloc((size_t)N, sizeof(double));
  if (sum == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
  const long first = reduce_scatter ? (long)rank * N : 0; /* this rank's part of the result */
  double first_error = 0, mean_error = 0;
  for (int step = 0; step < kSteps; ++step) {
    float* x = in_place ? recv : send;
    for (long i = 0; i < total; ++i) x[i] = input(rank, i);
    MPI_Request r;
    if (reduce_scatter) {
      MPI_Ireduce_scatter_block(in_place ? MPI_IN_PLACE : send, recv, N, MPI_FLOAT, MPI_SUM, zero,
                                &r);
    } else {
      MPI_Iallreduce(in_place ? MPI_IN_PLACE : send, recv, N, MPI_FLOAT, MPI_SUM, zero, &r);
    }
    wait(&r);
    for (long i = 0; i < N; ++i) {
      double exact = 0;
      for (int j = 0; j < 4; ++j) exact += input(j, first + i);
      sum[i] += recv[i];
      if (step == 0 && fabs(recv[i] - exact) > first_error) first_error = fabs(recv[i] - exact);
      if (step == kSteps - 1 && fabs(sum[i] / kSteps - exact) > mean_error)
        mean_error = fabs(sum[i] / kSteps - exact);
    }
  }
  const char* what = reduce_scatter ? (in_place ? "zero Ireduce_scatter_block (ef2+) in place"
                                                : "zero Ireduce_scatter_block (ef2+)")
                                    : "zero Iallreduce (ef+)";
  if (first_error < 1e-4) fail(what, -1, first_error, 1e-4); /* not compressed */
  if (!(mean_error * 4 <= first_error)) fail(what, -1, mean_error, first_error / 4);
  free(send), free(recv), free(sum);
}

/* Rank 0 waits for a large message from rank 1 between initiating and completing a tp
 * allreduce; rank 1 initiates it only after sending. Ranks initiate on tp and "other" in
 * opposite orders. */
/* The vector variants with counts one apart (the longer blocks first). MPI_Iallgatherv on tp
 * (bf16) into blocks 4 floats apart: each block the bf16 rounding of its rank's input, bit for
 * bit, the floats between them untouched (-1), in and out of place, and the blocking call's bits.
 * MPI_Ireduce_scatter on the unnamed communicator (bf16): the others' contributions bf16-rounded,
 * the own exact, summed in rank order (in and out of place); on zero (ef2+quant:bits=8): within
 * 8-bit quantization of the 4 inputs (error feedback compresses the own chunk too, as the
 * blocking call does), not exact. */
static void check_vector_variants(void) {
  int p, t;
  MPI_Comm_size(tp, &p);
  MPI_Comm_rank(tp, &t);
  int counts[4], displs[4];
  const long stride = N + 4;
  for (int j = 0; j < p; ++j) counts[j] = N + (j == 0), displs[j] = (int)(j * stride);
  float* g = alloc(stride * p);
  float* gi = alloc(stride * p);
  float* blocking = alloc(stride * p);
  float* mine = alloc(N + 1);
  for (long i = 0; i < stride * p; ++i) g[i] = gi[i] = blocking[i] = -1;
  for (long i = 0; i < counts[t]; ++i) mine[i] = gi[t * stride + i] = input(t, i);
  MPI_Request r[2];
  MPI_Iallgatherv(mine, counts[t], MPI_FLOAT, g, counts, displs, MPI_FLOAT, tp, &r[0]);
  MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_FLOAT, gi, counts, displs, MPI_FLOAT, tp, &r[1]);
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  for (int j = 0; j < p; ++j) {
    for (long i = 0; i < stride; ++i) {
      const float want = i < counts[j] ? bf16(input(j, i)) : -1.0f;
      if (g[j * stride + i] != want) fail("tp Iallgatherv", i, g[j * stride + i], want);
      if (gi[j * stride + i] != want) fail("tp Iallgatherv in place", i, gi[j * stride + i], want);
    }
  }
  MPI_Allgatherv(mine, counts[t], MPI_FLOAT, blocking, counts, displs, MPI_FLOAT, tp);
  if (memcmp(blocking, g, sizeof(float) * (size_t)(stride * p)) != 0)
    fail("tp Iallgatherv vs blocking", -1, 0, 0);
  free(g), free(gi), free(blocking), free(mine);

  const long total = 4L * N + 3;
  long offset = 0;
  for (int j = 0; j < 4; ++j) {
    counts[j] = N + (j < 3);
    if (j < rank) offset += counts[j];
  }
  for (int in_place = 0; in_place < 2; ++in_place) {
    for (int on_zero = 0; on_zero < 2; ++on_zero) {
      float* send = alloc(total);
      float* recv = alloc(in_place ? total : N + 1);
      float* x = in_place ? recv : send;
      for (long i = 0; i < total; ++i) x[i] = input(rank, i);
      MPI_Request q;
      MPI_Ireduce_scatter(in_place ? MPI_IN_PLACE : send, recv, counts, MPI_FLOAT, MPI_SUM,
                          on_zero ? zero : other, &q);
      wait(&q);
      const char* what = on_zero ? (in_place ? "zero Ireduce_scatter (ef2+) in place"
                                             : "zero Ireduce_scatter (ef2+)")
                                 : (in_place ? "Ireduce_scatter in place" : "Ireduce_scatter");
      double worst = 0;
      for (long i = 0; i < counts[rank]; ++i) {
        float want = 0;
        double exact = 0;
        for (int j = 0; j < 4; ++j) {
          const float v = input(j, offset + i);
          const float c = j == rank ? v : bf16(v);
          want = j == 0 ? c : want + c;
          exact += v;
        }
        if (!on_zero && recv[i] != want) fail(what, i, recv[i], want);
        const double e = fabs(recv[i] - exact);
        if (e > worst) worst = e;
        if (on_zero && !(e <= 4 * 2.1 / 510 + 1e-5)) fail(what, i, recv[i], exact);
      }
      if (on_zero && worst < 1e-4) fail(what, -1, worst, 1e-4); /* not compressed */
      free(send);
      free(recv);
    }
  }
}

static void check_semantics(void) {
  enum { M = 1 << 20 }; /* 4 MB: above any eager limit */
  float* big = alloc(M);
  float* x = alloc(N);
  float* y = alloc(N);
  float* b = alloc(N);
  for (long i = 0; i < N; ++i) x[i] = input(rank, i), y[i] = input(rank, i);
  for (long i = 0; i < N; ++i) b[i] = rank == 3 ? input(3, i) : 0.0f;
  MPI_Request r[2];
  if (rank == 0) {
    MPI_Iallreduce(MPI_IN_PLACE, x, N, MPI_FLOAT, MPI_SUM, tp, &r[0]);
    MPI_Recv(big, M, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (rank == 1) {
    for (long i = 0; i < M; ++i) big[i] = 0;
    MPI_Send(big, M, MPI_INT, 0, 7, MPI_COMM_WORLD);
    MPI_Iallreduce(MPI_IN_PLACE, x, N, MPI_FLOAT, MPI_SUM, tp, &r[0]);
  } else {
    MPI_Iallreduce(MPI_IN_PLACE, x, N, MPI_FLOAT, MPI_SUM, tp, &r[0]);
  }
  MPI_Wait(&r[0], MPI_STATUS_IGNORE);
  same_everywhere("tp Iallreduce around a large message", x, N, tp);
  float* g = alloc(2L * N);
  if (rank % 2 == 0) {
    MPI_Iallgather(y, N, MPI_FLOAT, g, N, MPI_FLOAT, tp, &r[0]);
    MPI_Ibcast(b, N, MPI_FLOAT, 3, other, &r[1]);
  } else {
    MPI_Ibcast(b, N, MPI_FLOAT, 3, other, &r[1]);
    MPI_Iallgather(y, N, MPI_FLOAT, g, N, MPI_FLOAT, tp, &r[0]);
  }
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  same_everywhere("tp Iallgather in crossed order", g, 2L * N, tp);
  for (long i = 0; i < N; ++i) {
    if (b[i] != bf16(input(3, i)))
      fail("other Ibcast in crossed order", i, b[i], bf16(input(3, i)));
  }
  /* A communicator freed before its request completes (MPI lets the operation finish). */
  MPI_Comm tmp;
  MPI_Comm_dup(tp, &tmp);
  MPI_Comm_set_name(tmp, "tp");
  MPI_Iallgather(y, N, MPI_FLOAT, g, N, MPI_FLOAT, tmp, &r[0]);
  MPI_Comm_free(&tmp);
  MPI_Wait(&r[0], MPI_STATUS_IGNORE);
  int t;
  MPI_Comm_rank(tp, &t);
  for (long i = 0; i < N; ++i) {
    const float want = bf16(input(rank - t + 1, i));
    if (g[N + i] != want) fail("tp Iallgather on a freed communicator", i, g[N + i], want);
  }
  free(big), free(x), free(y), free(b), free(g);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 4) {
    if (rank == 0) fprintf(stderr, "run on 4 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  /* dp: all 4 ranks; tp: pairs {0,1} and {2,3}; zero, embedding and other: all 4 ranks. */
  MPI_Comm_dup(MPI_COMM_WORLD, &dp);
  MPI_Comm_set_name(dp, "dp");
  MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &tp);
  MPI_Comm_set_name(tp, "tp");
  MPI_Comm_dup(MPI_COMM_WORLD, &pp);
  MPI_Comm_set_name(pp, "pp");
  MPI_Comm_dup(MPI_COMM_WORLD, &zero);
  MPI_Comm_set_name(zero, "zero");
  MPI_Comm_dup(MPI_COMM_WORLD, &embedding);
  MPI_Comm_set_name(embedding, "embedding");
  MPI_Comm_dup(MPI_COMM_WORLD, &other);

  /* 8-bit blocks of a range below 2.1: each input within 2.1/510; bf16 keeps 8 significant
   * bits, each input (below 1.1) within 2^-8. */
  check_allreduce(dp, 2.1 / 510, 0, "dp Iallreduce");
  check_allreduce(dp, 2.1 / 510, 1, "dp Iallreduce in place");
  check_allreduce(tp, 1.1 / 256, 0, "tp Iallreduce");
  check_allreduce(tp, 1.1 / 256, 1, "tp Iallreduce in place");
  check_special_values();
  capture_stderr();
  for (int twice = 0; twice < 2; ++twice) { /* the library says it once */
    check_exact_allreduce(pp, "pp Iallreduce (eb's size depends on the data: MPI's)");
    check_exact_allreduce(embedding, "embedding Iallreduce (top-k: MPI's)");
    check_exact_allreduce(other, "other Iallreduce (bf16 would not pay: MPI's)");
  }
  const char* said = captured_stderr();
  expect_warning(said, "MPI_Iallreduce on pp", "stream size depends on the data");
  expect_warning(said, "MPI_Iallreduce on embedding", "top-k");
  expect_warning(said, "MPI_Iallreduce on an unnamed communicator", "more bytes than MPI's");
  check_tp();
  check_reduce_scatter(0);
  check_reduce_scatter(1);
  check_feedback_like_blocking();
  check_feedback_averages_out(0, 0);
  check_feedback_averages_out(1, 0);
  check_feedback_averages_out(1, 1);
  check_vector_variants();
  check_semantics();

  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf(total == 0 ? "dropin nonblocking: OK\n" : "dropin nonblocking: FAILED\n");
  MPI_Comm_free(&dp);
  MPI_Comm_free(&tp);
  MPI_Comm_free(&pp);
  MPI_Comm_free(&zero);
  MPI_Comm_free(&embedding);
  MPI_Comm_free(&other);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}

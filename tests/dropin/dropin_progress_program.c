/* Nonblocking collectives that need the library's threads (docs/dropin.md, "Nonblocking
 * collectives"): an MPI program written without hycc that calls MPI_Init, run under
 * libhycc_mpi.so with HYCC_POLICY=tests/dropin/progress_policy.toml (hybrid's rules, top-k on
 * embedding allreduces, mpc on other embedding calls) and HYCC_PROGRESS=thread, at 3 ranks or
 * more:
 *  - MPI_Query_thread says MPI_THREAD_MULTIPLE (HYCC_PROGRESS=thread asked MPI for it);
 *  - two stages, on the progress thread: dp (ef2+quant:bits=6) MPI_Iallreduce gives
 *    MPI_Allreduce's bits (ef2+'s step, which the blocking call runs) step after step, each on a
 *    buffer of its own (residuals per buffer), the same bits on every rank; over 16 steps of the
 *    same input the mean result is at least 4x closer to the exact sum than one step's (error
 *    feedback); tp (bf16, a duplicate of MPI_COMM_WORLD named "tp"): in and out of place, within
 *    bf16's bound of the exact sum (each input's chunk rounded once, the sum once more), not
 *    exact, the same bits on every rank;
 *  - the communicator's worker: embedding MPI_Iallreduce (top-k with error feedback) gives
 *    MPI_Allreduce's bits step after step on buffers of their own; MPI_Iallgather and MPI_Ibcast
 *    (mpc, lossless) give the data exactly;
 *  - progress: rank 0 sends rank 1 a large message with a blocking MPI_Send between initiating
 *    and completing a tp allreduce and an embedding allgather that rank 1 completes before
 *    receiving, so rank 0's threads must run them while it is blocked in MPI_Send (a library
 *    that ran them at completion would hang); then rank 1 sends rank 0 one before initiating an
 *    allgather that rank 0 initiates before receiving it (one that ran it at initiation would
 *    hang);
 *  - order: three allreduces outstanding, on dp and tp initiated in opposite orders on even and
 *    odd ranks, completed by MPI_Waitany, MPI_Waitsome and MPI_Testall polling; allgathers on
 *    two embedding communicators in opposite orders (two workers); three more completed by
 *    MPI_Waitall; a communicator freed before its allreduce completes (MPI_Test polling).
 * Prints "dropin progress: OK" on rank 0; exits with 1 on a difference. */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 100003, STEPS = 16, BIG = 1 << 20 };

static int rank, size, failures;
static MPI_Comm dp, tp, embedding;

static void fail(const char* what, long i, double got, double want) {
  if (failures++ < 10) {
    fprintf(stderr, "rank %d: %s: element %ld is %.9g, expected %.9g\n", rank, what, i, got, want);
  }
}

static float input(int r, long i) { return (float)(sin(0.001 * (double)i + r) + 0.01 * r); }

static float* alloc(long n) {
  float* p = malloc(sizeof(float) * (size_t)n);
  if (p == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
  return p;
}

static MPI_Comm named(const char* name) {
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_name(c, name);
  return c;
}

/* The same bits on every rank of MPI_COMM_WORLD. */
static void same_everywhere(const char* what, const float* x, long n) {
  uint64_t h = 1469598103934665603ull, lo, hi;
  const unsigned char* p = (const unsigned char*)x;
  for (long i = 0; i < n * 4; ++i) h = (h ^ p[i]) * 1099511628211ull;
  MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  if (lo != hi) fail(what, -1, 0, 0);
}

static double exact(long i) {
  double s = 0;
  for (int j = 0; j < size; ++j) s += input(j, i);
  return s;
}

/* A bf16 result of input(): each input's chunk rounded to bf16 once (relative 2^-8), the sum
 * once more; not exact (so it was compressed). */
static void check_bf16(const float* got, const char* what) {
  double worst = 0;
  for (long i = 0; i < N; ++i) {
    double magnitude = 0;
    for (int j = 0; j < size; ++j) magnitude += fabs(input(j, i));
    const double e = fabs(got[i] - exact(i));
    if (e > worst) worst = e;
    if (!(e <= 2 * magnitude * ldexp(1, -8) + 1e-6)) fail(what, i, got[i], exact(i));
  }
  if (worst < 1e-4) fail(what, -1, worst, 1e-4);
  same_everywhere(what, got, N);
}

/* The same bits as `want` here and on every rank. */
static void same_bits(const float* got, const float* want, const char* what) {
  for (long i = 0; i < N; ++i) {
    if (memcmp(&got[i], &want[i], 4) != 0) {
      fail(what, i, got[i], want[i]);
      break;
    }
  }
  same_everywhere(what, got, N);
}

/* embedding (top-k with error feedback, on the worker): the nonblocking allreduce against the
 * blocking one on buffers of their own, step after step; allgather and broadcast (mpc) exact,
 * on two embedding communicators initiated in opposite orders. */
static void check_worker(void) {
  float* x = alloc(N);
  float* nonblocking = alloc(N);
  float* blocking = alloc(N);
  for (int step = 0; step < 4; ++step) {
    for (long i = 0; i < N; ++i) x[i] = input(rank + step, i);
    MPI_Request r;
    MPI_Iallreduce(x, nonblocking, N, MPI_FLOAT, MPI_SUM, embedding, &r);
    int flag = 0;
    while (!flag) MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
    MPI_Allreduce(x, blocking, N, MPI_FLOAT, MPI_SUM, embedding);
    same_bits(nonblocking, blocking, "embedding Iallreduce against MPI_Allreduce");
  }
  MPI_Comm second = named("embedding");
  const long all = N * (long)size;
  float* g1 = alloc(all);
  float* g2 = alloc(all);
  float* b = alloc(N);
  float* y = alloc(N); /* the second communicator's data: a call matched on the wrong one shows */
  for (long i = 0; i < N; ++i) {
    x[i] = input(rank, i), y[i] = input(rank + 10, i), b[i] = rank == 1 ? input(7, i) : 0;
  }
  MPI_Request r[3];
  if (rank % 2 == 0) {
    MPI_Iallgather(x, N, MPI_FLOAT, g1, N, MPI_FLOAT, embedding, &r[0]);
    MPI_Iallgather(y, N, MPI_FLOAT, g2, N, MPI_FLOAT, second, &r[1]);
  } else {
    MPI_Iallgather(y, N, MPI_FLOAT, g2, N, MPI_FLOAT, second, &r[1]);
    MPI_Iallgather(x, N, MPI_FLOAT, g1, N, MPI_FLOAT, embedding, &r[0]);
  }
  MPI_Ibcast(b, N, MPI_FLOAT, 1, embedding, &r[2]);
  MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
  for (int j = 0; j < size; ++j) {
    for (long i = 0; i < N; ++i) {
      if (g1[j * N + i] != input(j, i) || g2[j * N + i] != input(j + 10, i)) {
        fail("embedding Iallgather (mpc)", j * N + i, g1[j * N + i], input(j, i));
        break;
      }
    }
  }
  for (long i = 0; i < N; ++i) {
    if (b[i] != input(7, i)) {
      fail("embedding Ibcast (mpc)", i, b[i], input(7, i));
      break;
    }
  }
  MPI_Comm_free(&second);
  free(x);
  free(nonblocking);
  free(blocking);
  free(g1);
  free(g2);
  free(b);
  free(y);
}

/* dp: the nonblocking allreduce against the blocking one, step after step, and the mean. */
static void check_dp_feedback(void) {
  float* x = alloc(N);
  float* nonblocking = alloc(N);
  float* blocking = alloc(N);
  double* mean = calloc(N, sizeof(double));
  double first = 0, averaged = 0;
  for (int step = 0; step < STEPS; ++step) {
    for (long i = 0; i < N; ++i) x[i] = input(rank, i);
    MPI_Request r;
    MPI_Iallreduce(x, nonblocking, N, MPI_FLOAT, MPI_SUM, dp, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Allreduce(x, blocking, N, MPI_FLOAT, MPI_SUM, dp);
    same_bits(nonblocking, blocking, "dp Iallreduce against MPI_Allreduce");
    for (long i = 0; i < N; ++i) {
      mean[i] += nonblocking[i] / STEPS;
      if (step == 0) first = fmax(first, fabs(nonblocking[i] - exact(i)));
    }
  }
  for (long i = 0; i < N; ++i) averaged = fmax(averaged, fabs(mean[i] - exact(i)));
  if (!(averaged * 4 <= first)) fail("dp Iallreduce, mean over steps", -1, averaged, first / 4);
  free(x);
  free(nonblocking);
  free(blocking);
  free(mean);
}

/* Rank 0 blocks in MPI_Send to rank 1 while rank 1 waits for the allreduce. */
static void check_progress_while_blocked(void) {
  float* x = alloc(N);
  int* message = calloc(BIG, sizeof(int));
  for (long i = 0; i < N; ++i) x[i] = input(rank, i);
  float* e = alloc(N);
  float* g = alloc(N * (long)size);
  for (long i = 0; i < N; ++i) e[i] = input(rank, i);
  MPI_Request r[2];
  MPI_Iallreduce(MPI_IN_PLACE, x, N, MPI_FLOAT, MPI_SUM, tp, &r[0]);
  MPI_Iallgather(e, N, MPI_FLOAT, g, N, MPI_FLOAT, embedding, &r[1]); /* mpc, the worker */
  if (rank == 0) {
    message[BIG - 1] = 42;
    MPI_Send(message, BIG, MPI_INT, 1, 7, MPI_COMM_WORLD);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  } else if (rank == 1) {
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    MPI_Recv(message, BIG, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (message[BIG - 1] != 42) fail("message sent during the allreduces", BIG - 1, 0, 42);
  } else {
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  }
  check_bf16(x, "tp Iallreduce while rank 0 is in MPI_Send");
  for (long i = 0; i < N * (long)size; ++i) {
    if (g[i] != input((int)(i / N), i % N)) {
      fail("embedding Iallgather while rank 0 is in MPI_Send", i, g[i], input((int)(i / N), i % N));
      break;
    }
  }
  /* The other way round: rank 1 sends before initiating, rank 0 receives after initiating. */
  MPI_Request a;
  if (rank == 1) MPI_Send(message, BIG, MPI_INT, 0, 8, MPI_COMM_WORLD);
  MPI_Iallgather(e, N, MPI_FLOAT, g, N, MPI_FLOAT, embedding, &a);
  if (rank == 0) MPI_Recv(message, BIG, MPI_INT, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Wait(&a, MPI_STATUS_IGNORE);
  if (g[N + 5] != input(1, 5)) fail("embedding Iallgather around a message", N + 5, g[N + 5], 0);
  free(e);
  free(g);
  free(x);
  free(message);
}

/* Three allreduces outstanding, initiated on dp and tp in opposite orders on even and odd ranks
 * (MPI orders collectives per communicator only), then one on a communicator freed before it
 * completes. */
static void check_order(void) {
  float* a = alloc(N);
  float* b = alloc(N);
  float* c = alloc(N);
  float* out = alloc(N);
  for (long i = 0; i < N; ++i) a[i] = b[i] = c[i] = input(rank, i);
  MPI_Request r[3];
  if (rank % 2 == 0) {
    MPI_Iallreduce(MPI_IN_PLACE, a, N, MPI_FLOAT, MPI_SUM, tp, &r[0]);
    MPI_Iallreduce(MPI_IN_PLACE, b, N, MPI_FLOAT, MPI_SUM, dp, &r[1]);
    MPI_Iallreduce(MPI_IN_PLACE, c, N, MPI_FLOAT, MPI_SUM, tp, &r[2]);
  } else {
    MPI_Iallreduce(MPI_IN_PLACE, b, N, MPI_FLOAT, MPI_SUM, dp, &r[1]);
    MPI_Iallreduce(MPI_IN_PLACE, a, N, MPI_FLOAT, MPI_SUM, tp, &r[0]);
    MPI_Iallreduce(MPI_IN_PLACE, c, N, MPI_FLOAT, MPI_SUM, tp, &r[2]);
  }
  int which = -1;
  MPI_Waitany(3, r, &which, MPI_STATUS_IGNORE);
  if (which < 0 || which > 2 || r[which] != MPI_REQUEST_NULL) fail("MPI_Waitany", which, 0, 0);
  int count = 0, indices[3];
  MPI_Waitsome(3, r, &count, indices, MPI_STATUSES_IGNORE);
  if (count < 1 || count > 2) fail("MPI_Waitsome", count, 0, 0);
  int all_done = 0;
  while (!all_done) MPI_Testall(3, r, &all_done, MPI_STATUSES_IGNORE);
  MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
  check_bf16(a, "tp Iallreduce, first of two outstanding");
  check_bf16(c, "tp Iallreduce, second of two outstanding");
  same_everywhere("dp Iallreduce among others", b, N);
  for (long i = 0; i < N; ++i) a[i] = c[i] = input(rank, i);
  MPI_Iallreduce(MPI_IN_PLACE, a, N, MPI_FLOAT, MPI_SUM, tp, &r[0]);
  MPI_Iallreduce(c, out, N, MPI_FLOAT, MPI_SUM, tp, &r[1]);
  r[2] = MPI_REQUEST_NULL;
  MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
  check_bf16(a, "tp Iallreduce by MPI_Waitall");
  check_bf16(out, "tp Iallreduce by MPI_Waitall, out of place");

  MPI_Comm soon_freed = named("tp");
  MPI_Request fr;
  for (long i = 0; i < N; ++i) a[i] = input(rank, i);
  MPI_Iallreduce(a, out, N, MPI_FLOAT, MPI_SUM, soon_freed, &fr);
  MPI_Comm_free(&soon_freed);
  int flag = 0;
  while (!flag) MPI_Test(&fr, &flag, MPI_STATUS_IGNORE);
  check_bf16(out, "tp Iallreduce on a freed communicator");
  free(a);
  free(b);
  free(c);
  free(out);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  if (level != MPI_THREAD_MULTIPLE) fail("MPI_Query_thread", -1, level, MPI_THREAD_MULTIPLE);
  dp = named("dp");
  tp = named("tp");
  embedding = named("embedding");
  check_dp_feedback();
  check_worker();
  check_progress_while_blocked();
  check_order();
  MPI_Comm_free(&dp);
  MPI_Comm_free(&tp);
  MPI_Comm_free(&embedding);
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && all == 0) printf("dropin progress: OK\n");
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}

/* MPI 4's calls under libhycc_mpi.so: the large-count forms (MPI_Allreduce_c, MPI_Send_c, ...;
 * mpi4py 4 makes only these), MPI_Isendrecv and MPI_Isendrecv_replace, the persistent
 * collectives (two rounds of each give the bits of two nonblocking calls). Every call the library
 * routes is made twice on equal inputs in buffers of their own, once in its int form and once in
 * its _c form, and the two results must be the same bits (the policy's codecs and error feedback
 * are deterministic and each buffer starts with no residual). A _c call that went to MPI instead
 * would give MPI's exact result where the int call gives a compressed one; the run's statistics
 * (checked by the caller) count both forms as compressed. Point to point mixes the forms on one
 * message (a _c send into an int receive and the reverse, MPI_Isendrecv against MPI_Sendrecv_c):
 * on a routed communicator a message that one end left to MPI would never arrive.
 * Needs an MPI 4 library (MPICH 4); otherwise it says so and exits with 77. Prints
 * "dropin mpi4: OK" on rank 0 when every check passed.
 * Usage: dropin_mpi4_program */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if MPI_VERSION >= 4

#include <math.h>

enum { N = 120000 };

static int rank, size, failures;

static float value(int r, long i) { return (float)(sin(0.002 * (double)i + r) + 0.01 * r); }

/* Every buffer is new and kept to the end: error feedback keys its residual by the buffer's
 * address, so a freed buffer's address reused by another would carry a residual over. */
static float* kept[128];
static int nkept;

static float* fresh(void) {
  if (nkept == 128) MPI_Abort(MPI_COMM_WORLD, 3);
  return kept[nkept++] = calloc(N, sizeof(float));
}

static float* filled(int r) {
  float* x = fresh();
  for (long i = 0; i < N; ++i) x[i] = value(r, i);
  return x;
}

/* The int form's result `a` and the _c form's `b`, n floats: the same bits on every rank. */
static void same(const char* what, const float* a, const float* b, long n) {
  int bad = memcmp(a, b, sizeof(float) * (size_t)n) != 0;
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) printf("%-34s %s\n", what, bad ? "DIFFERS" : "same bits");
  failures += bad;
}

static MPI_Comm named_dup(const char* name) {
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_name(c, name);
  return c;
}

/* Counts one apart (numpy.array_split's shards of `total`) and their displacements. */
static long shards(long total, int counts[], MPI_Count big_counts[], int displs[],
                   MPI_Aint big_displs[]) {
  long at = 0;
  for (int r = 0; r < size; ++r) {
    const long c = total / size + (r < total % size ? 1 : 0);
    counts[r] = (int)c, big_counts[r] = c, displs[r] = (int)at, big_displs[r] = at;
    at += c;
  }
  return at;
}

static void blocking(MPI_Comm dp, MPI_Comm tp, MPI_Comm zero) {
  /* x is the int calls' input, y the _c calls' (reduce-scatters key the residual by it). */
  float *x = filled(rank), *y = filled(rank), *a = fresh(), *b = fresh();
  MPI_Allreduce(x, a, N, MPI_FLOAT, MPI_SUM, dp);
  MPI_Allreduce_c(y, b, N, MPI_FLOAT, MPI_SUM, dp);
  same("MPI_Allreduce_c dp", a, b, N);

  MPI_Bcast(memcpy(a, x, sizeof(float) * N), N, MPI_FLOAT, 1 % size, tp);
  MPI_Bcast_c(memcpy(b, y, sizeof(float) * N), N, MPI_FLOAT, 1 % size, tp);
  same("MPI_Bcast_c tp", a, b, N);

  const long per = N / size;
  MPI_Reduce_scatter_block(x, a, (int)per, MPI_FLOAT, MPI_SUM, zero);
  MPI_Reduce_scatter_block_c(y, b, per, MPI_FLOAT, MPI_SUM, zero);
  same("MPI_Reduce_scatter_block_c", a, b, per);

  MPI_Allgather(x, (int)per, MPI_FLOAT, a, (int)per, MPI_FLOAT, zero);
  MPI_Allgather_c(y, per, MPI_FLOAT, b, per, MPI_FLOAT, zero);
  same("MPI_Allgather_c zero", a, b, per * size);

  MPI_Alltoall(x, (int)per, MPI_FLOAT, a, (int)per, MPI_FLOAT, tp);
  MPI_Alltoall_c(y, per, MPI_FLOAT, b, per, MPI_FLOAT, tp);
  same("MPI_Alltoall_c tp", a, b, per * size);

  int counts[64], displs[64];
  MPI_Count big_counts[64];
  MPI_Aint big_displs[64];
  const long total = shards(N - 1, counts, big_counts, displs, big_displs);
  MPI_Reduce_scatter(x, a, counts, MPI_FLOAT, MPI_SUM, zero);
  MPI_Reduce_scatter_c(y, b, big_counts, MPI_FLOAT, MPI_SUM, zero);
  same("MPI_Reduce_scatter_c", a, b, counts[rank]);

  MPI_Allgatherv(x, counts[rank], MPI_FLOAT, a, counts, displs, MPI_FLOAT, zero);
  MPI_Allgatherv_c(y, big_counts[rank], MPI_FLOAT, b, big_counts, big_displs, MPI_FLOAT, zero);
  same("MPI_Allgatherv_c zero", a, b, total);
}

static void nonblocking(MPI_Comm dp, MPI_Comm tp, MPI_Comm zero) {
  /* x is the int calls' input, y the _c calls' (reduce-scatters key the residual by it). */
  float *x = filled(rank), *y = filled(rank), *a = fresh(), *b = fresh();
  MPI_Request r[2];
  MPI_Status st[2];
  MPI_Iallreduce(x, a, N, MPI_FLOAT, MPI_SUM, dp, &r[0]);
  MPI_Iallreduce_c(y, b, N, MPI_FLOAT, MPI_SUM, dp, &r[1]);
  MPI_Waitall(2, r, st);
  same("MPI_Iallreduce_c dp", a, b, N);

  MPI_Ibcast(memcpy(a, x, sizeof(float) * N), N, MPI_FLOAT, 0, tp, &r[0]);
  MPI_Ibcast_c(memcpy(b, y, sizeof(float) * N), N, MPI_FLOAT, 0, tp, &r[1]);
  MPI_Waitall(2, r, st);
  same("MPI_Ibcast_c tp", a, b, N);

  const long per = N / size;
  MPI_Ireduce_scatter_block(x, a, (int)per, MPI_FLOAT, MPI_SUM, zero, &r[0]);
  MPI_Ireduce_scatter_block_c(y, b, per, MPI_FLOAT, MPI_SUM, zero, &r[1]);
  MPI_Waitall(2, r, st);
  same("MPI_Ireduce_scatter_block_c", a, b, per);

  MPI_Iallgather(x, (int)per, MPI_FLOAT, a, (int)per, MPI_FLOAT, zero, &r[0]);
  MPI_Iallgather_c(y, per, MPI_FLOAT, b, per, MPI_FLOAT, zero, &r[1]);
  MPI_Waitall(2, r, st);
  same("MPI_Iallgather_c zero", a, b, per * size);

  MPI_Ialltoall(x, (int)per, MPI_FLOAT, a, (int)per, MPI_FLOAT, tp, &r[0]);
  MPI_Ialltoall_c(y, per, MPI_FLOAT, b, per, MPI_FLOAT, tp, &r[1]);
  MPI_Waitall(2, r, st);
  same("MPI_Ialltoall_c tp", a, b, per * size);

  int counts[64], displs[64];
  MPI_Count big_counts[64];
  MPI_Aint big_displs[64];
  const long total = shards(N - 1, counts, big_counts, displs, big_displs);
  MPI_Ireduce_scatter(x, a, counts, MPI_FLOAT, MPI_SUM, zero, &r[0]);
  MPI_Ireduce_scatter_c(y, b, big_counts, MPI_FLOAT, MPI_SUM, zero, &r[1]);
  MPI_Waitall(2, r, st);
  same("MPI_Ireduce_scatter_c", a, b, counts[rank]);

  MPI_Iallgatherv(x, counts[rank], MPI_FLOAT, a, counts, displs, MPI_FLOAT, zero, &r[0]);
  MPI_Iallgatherv_c(y, big_counts[rank], MPI_FLOAT, b, big_counts, big_displs, MPI_FLOAT, zero,
                    &r[1]);
  MPI_Waitall(2, r, st);
  same("MPI_Iallgatherv_c zero", a, b, total);

  /* Blocks of unequal length (every other rank's half as long) go to MPI with the program's
   * arrays: exactly every rank's values, the same as the int call. */
  long at = 0;
  for (int q = 0; q < size; ++q) {
    big_counts[q] = counts[q] = (int)(q % 2 ? per / 2 : per);
    big_displs[q] = displs[q] = (int)at;
    at += counts[q];
  }
  float* exact = fresh();
  for (int q = 0; q < size; ++q)
    for (long i = 0; i < counts[q]; ++i) exact[displs[q] + i] = value(q, i);
  MPI_Iallgatherv(x, counts[rank], MPI_FLOAT, a, counts, displs, MPI_FLOAT, zero, &r[0]);
  MPI_Iallgatherv_c(y, big_counts[rank], MPI_FLOAT, b, big_counts, big_displs, MPI_FLOAT, zero,
                    &r[1]);
  MPI_Waitall(2, r, st);
  same("MPI_Iallgatherv_c unequal blocks", a, b, at);
  same("  ... exact", exact, b, at);
}

/* Collective k of the seven (allreduce dp, bcast tp from rank 1, reduce-scatter-block zero,
 * allgather zero, alltoall tp, reduce-scatter zero and allgatherv zero with counts one apart),
 * on input x and output a: started as the int nonblocking call, or (init) made persistent. */
static void collective(int k, int init, const float* x, float* a, MPI_Comm dp, MPI_Comm tp,
                       MPI_Comm zero, MPI_Request* r) {
  const int per = N / size;
  static int counts[64], displs[64];
  MPI_Count big_counts[64];
  MPI_Aint big_displs[64];
  shards(N - 1, counts, big_counts, displs, big_displs);
  const MPI_Info none = MPI_INFO_NULL;
  switch (k) {
    case 0:
      if (init)
        MPI_Allreduce_init(x, a, N, MPI_FLOAT, MPI_SUM, dp, none, r);
      else
        MPI_Iallreduce(x, a, N, MPI_FLOAT, MPI_SUM, dp, r);
      break;
    case 1:
      if (init)
        MPI_Bcast_init(a, N, MPI_FLOAT, 1 % size, tp, none, r);
      else
        MPI_Ibcast(a, N, MPI_FLOAT, 1 % size, tp, r);
      break;
    case 2:
      if (init)
        MPI_Reduce_scatter_block_init(x, a, per, MPI_FLOAT, MPI_SUM, zero, none, r);
      else
        MPI_Ireduce_scatter_block(x, a, per, MPI_FLOAT, MPI_SUM, zero, r);
      break;
    case 3:
      if (init)
        MPI_Allgather_init(x, per, MPI_FLOAT, a, per, MPI_FLOAT, zero, none, r);
      else
        MPI_Iallgather(x, per, MPI_FLOAT, a, per, MPI_FLOAT, zero, r);
      break;
    case 4:
      if (init)
        MPI_Alltoall_init(x, per, MPI_FLOAT, a, per, MPI_FLOAT, tp, none, r);
      else
        MPI_Ialltoall(x, per, MPI_FLOAT, a, per, MPI_FLOAT, tp, r);
      break;
    case 5:
      if (init)
        MPI_Reduce_scatter_init(x, a, counts, MPI_FLOAT, MPI_SUM, zero, none, r);
      else
        MPI_Ireduce_scatter(x, a, counts, MPI_FLOAT, MPI_SUM, zero, r);
      break;
    default:
      if (init) {
        MPI_Allgatherv_init(x, counts[rank], MPI_FLOAT, a, counts, displs, MPI_FLOAT, zero, none,
                            r);
      } else {
        MPI_Iallgatherv(x, counts[rank], MPI_FLOAT, a, counts, displs, MPI_FLOAT, zero, r);
      }
      break;
  }
}

/* MPI 4's persistent collectives: two rounds (MPI_Start, MPI_Wait) of each give the bits of two
 * rounds of the nonblocking call on buffers of their own (the second round carries the first's
 * error feedback residual); the handle stays until MPI_Request_free. */
static void persistent_collectives(MPI_Comm dp, MPI_Comm tp, MPI_Comm zero) {
  static const char* const names[] = {"MPI_Allreduce_init dp",         "MPI_Bcast_init tp",
                                      "MPI_Reduce_scatter_block_init", "MPI_Allgather_init zero",
                                      "MPI_Alltoall_init tp",          "MPI_Reduce_scatter_init",
                                      "MPI_Allgatherv_init zero"};
  for (int k = 0; k < 7; ++k) {
    float *x = filled(rank), *y = filled(rank), *a = fresh(), *b = fresh();
    MPI_Request p, r;
    collective(k, 1, y, b, dp, tp, zero, &p);
    const MPI_Request handle = p;
    for (int round = 0; round < 2; ++round) {
      if (k == 1) memcpy(a, x, sizeof(float) * N), memcpy(b, y, sizeof(float) * N);
      collective(k, 0, x, a, dp, tp, zero, &r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
      MPI_Start(&p);
      MPI_Wait(&p, MPI_STATUS_IGNORE);
    }
    same(names[k], a, b, N);
    int bad = p != handle;
    MPI_Request_free(&p);
    bad |= p != MPI_REQUEST_NULL;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (bad && rank == 0) printf("  the persistent handle is WRONG\n");
    failures += bad;
  }

  /* A persistent collective that stays MPI's (ints), after hycc's persistent requests came and
   * went: MPICH 4.0.2 hangs it when those stood on persistent requests from MPI_PROC_NULL. */
  const int per = N / size;
  int *xi = malloc(sizeof(int) * N), *bi = calloc((size_t)per, sizeof(int));
  for (long i = 0; i < N; ++i) xi[i] = rank + (int)(i % 7);
  MPI_Request pi;
  MPI_Reduce_scatter_block_init(xi, bi, per, MPI_INT, MPI_SUM, zero, MPI_INFO_NULL, &pi);
  for (int round = 0; round < 2; ++round) {
    MPI_Start(&pi);
    MPI_Wait(&pi, MPI_STATUS_IGNORE);
  }
  MPI_Request_free(&pi);
  int bad = 0;
  for (long i = 0; i < per; ++i) {
    bad |= bi[i] != size * (int)((rank * per + i) % 7) + size * (size - 1) / 2;
  }
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) printf("%-34s %s\n", "MPI_Reduce_scatter_block_init int", bad ? "WRONG" : "exact");
  failures += bad;
  free(xi), free(bi);
}

/* Round the ring on pp: rank r sends its values to r + 1. The int exchange is the reference;
 * each other one has a _c form at one end or both. */
static void point_to_point(MPI_Comm pp) {
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  float *x = filled(rank), *ref = fresh(), *got = fresh();
  MPI_Request r;
  MPI_Status st;
  MPI_Irecv(ref, N, MPI_FLOAT, prev, 1, pp, &r);
  MPI_Send(x, N, MPI_FLOAT, next, 1, pp);
  MPI_Wait(&r, MPI_STATUS_IGNORE);

  MPI_Isend_c(x, N, MPI_FLOAT, next, 2, pp, &r);
  MPI_Recv(got, N, MPI_FLOAT, prev, 2, pp, MPI_STATUS_IGNORE);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  same("MPI_Isend_c into MPI_Recv", ref, got, N);

  memset(got, 0, sizeof(float) * N);
  MPI_Isend(x, N, MPI_FLOAT, next, 3, pp, &r);
  MPI_Recv_c(got, N, MPI_FLOAT, prev, 3, pp, &st);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  same("MPI_Isend into MPI_Recv_c", ref, got, N);
  MPI_Count count = -1;
  MPI_Get_count_c(&st, MPI_FLOAT, &count);
  int bad = count != N;
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) printf("%-34s %s\n", "MPI_Get_count_c", bad ? "WRONG" : "the sent count");
  failures += bad;

  memset(got, 0, sizeof(float) * N);
  MPI_Irecv_c(got, N, MPI_FLOAT, prev, 4, pp, &r);
  MPI_Send_c(x, N, MPI_FLOAT, next, 4, pp);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  same("MPI_Send_c into MPI_Irecv_c", ref, got, N);

  memset(got, 0, sizeof(float) * N);
  MPI_Irecv(got, N, MPI_FLOAT, prev, 5, pp, &r);
  MPI_Ssend_c(x, N, MPI_FLOAT, next, 5, pp);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  same("MPI_Ssend_c into MPI_Irecv", ref, got, N);

  memset(got, 0, sizeof(float) * N);
  MPI_Sendrecv_c(x, N, MPI_FLOAT, next, 6, got, N, MPI_FLOAT, prev, 6, pp, MPI_STATUS_IGNORE);
  same("MPI_Sendrecv_c", ref, got, N);

  memcpy(got, x, sizeof(float) * N);
  MPI_Sendrecv_replace_c(got, N, MPI_FLOAT, next, 7, prev, 7, pp, MPI_STATUS_IGNORE);
  same("MPI_Sendrecv_replace_c", ref, got, N);

  /* The other send modes' _c forms, each into an int receive posted before the barrier. */
  const int attached = 2 * ((int)(sizeof(float) * N) + 48 + MPI_BSEND_OVERHEAD);
  void* buffer = malloc((size_t)attached);
  MPI_Buffer_attach(buffer, attached);
  static const char* const modes[] = {"MPI_Issend_c", "MPI_Ibsend_c", "MPI_Irsend_c", "MPI_Bsend_c",
                                      "MPI_Rsend_c"};
  for (int mode = 0; mode < 5; ++mode) {
    MPI_Request q[2];
    MPI_Status qs[2];
    memset(got, 0, sizeof(float) * N);
    MPI_Irecv(got, N, MPI_FLOAT, prev, 30 + mode, pp, &q[0]);
    MPI_Barrier(pp);
    q[1] = MPI_REQUEST_NULL;
    if (mode == 0) MPI_Issend_c(x, N, MPI_FLOAT, next, 30, pp, &q[1]);
    if (mode == 1) MPI_Ibsend_c(x, N, MPI_FLOAT, next, 31, pp, &q[1]);
    if (mode == 2) MPI_Irsend_c(x, N, MPI_FLOAT, next, 32, pp, &q[1]);
    if (mode == 3) MPI_Bsend_c(x, N, MPI_FLOAT, next, 33, pp);
    if (mode == 4) MPI_Rsend_c(x, N, MPI_FLOAT, next, 34, pp);
    MPI_Waitall(2, q, qs);
    same(modes[mode], ref, got, N);
  }

  /* The persistent requests' _c forms: each send mode's into an int receive, and a receive of
   * an int send; started twice (the second round's result is checked). */
  static const char* const inits[] = {"MPI_Send_init_c", "MPI_Ssend_init_c", "MPI_Bsend_init_c",
                                      "MPI_Rsend_init_c", "MPI_Recv_init_c"};
  for (int mode = 0; mode < 5; ++mode) {
    MPI_Request p = MPI_REQUEST_NULL, q = MPI_REQUEST_NULL;
    const int tag = 40 + mode;
    if (mode == 0) MPI_Send_init_c(x, N, MPI_FLOAT, next, tag, pp, &p);
    if (mode == 1) MPI_Ssend_init_c(x, N, MPI_FLOAT, next, tag, pp, &p);
    if (mode == 2) MPI_Bsend_init_c(x, N, MPI_FLOAT, next, tag, pp, &p);
    if (mode == 3) MPI_Rsend_init_c(x, N, MPI_FLOAT, next, tag, pp, &p);
    if (mode == 4) MPI_Recv_init_c(got, N, MPI_FLOAT, prev, tag, pp, &p);
    for (int round = 0; round < 2; ++round) {
      memset(got, 0, sizeof(float) * N);
      if (mode < 4) MPI_Irecv(got, N, MPI_FLOAT, prev, tag, pp, &q);
      MPI_Barrier(pp);
      MPI_Start(&p);
      if (mode == 4) MPI_Isend(x, N, MPI_FLOAT, next, tag, pp, &q);
      MPI_Wait(&p, MPI_STATUS_IGNORE);
      MPI_Wait(&q, MPI_STATUS_IGNORE);
    }
    MPI_Request_free(&p);
    same(inits[mode], ref, got, N);
  }

  /* The matched receives' _c forms: MPI_Mprobe then MPI_Mrecv_c, MPI_Improbe then MPI_Imrecv_c. */
  for (int k = 0; k < 2; ++k) {
    MPI_Message msg = MPI_MESSAGE_NULL;
    memset(got, 0, sizeof(float) * N);
    MPI_Isend(x, N, MPI_FLOAT, next, 50 + k, pp, &r);
    if (k == 0) {
      MPI_Mprobe(prev, 50, pp, &msg, MPI_STATUS_IGNORE);
      MPI_Mrecv_c(got, N, MPI_FLOAT, &msg, MPI_STATUS_IGNORE);
    } else {
      for (int flag = 0; !flag;) MPI_Improbe(prev, 51, pp, &flag, &msg, MPI_STATUS_IGNORE);
      MPI_Request q;
      MPI_Imrecv_c(got, N, MPI_FLOAT, &msg, &q);
      MPI_Wait(&q, MPI_STATUS_IGNORE);
    }
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    same(k == 0 ? "MPI_Mrecv_c" : "MPI_Imrecv_c", ref, got, N);
  }
  int detached_size = 0;
  MPI_Buffer_detach(&buffer, &detached_size);
  free(buffer);
}

/* A shift along the ring without its wrap-around (step +1: rank size - 1 sends to, and rank 0
 * receives from, MPI_PROC_NULL; step -1 the other way): where a rank receives, `ref`; where it
 * does not, its buffer as it was. */
static void shift(MPI_Comm pp, int step, const float* x, const float* ref, const char* what) {
  const int dest = rank + step, source = rank - step;
  float* got = filled(size + 5);
  float* kept_as_was = filled(size + 5);
  MPI_Request r;
  MPI_Isendrecv(x, N, MPI_FLOAT, dest >= 0 && dest < size ? dest : MPI_PROC_NULL, 20 + step, got, N,
                MPI_FLOAT, source >= 0 && source < size ? source : MPI_PROC_NULL, 20 + step, pp,
                &r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  same(what, source >= 0 && source < size ? ref : kept_as_was, got, N);
}

/* MPI 4's MPI_Isendrecv and MPI_Isendrecv_replace in both forms round the ring on pp, against
 * the int exchange `ref` of point_to_point(); against MPI_Sendrecv_c on the other ranks; at the
 * ends of a shift without wrap-around (MPI_PROC_NULL). */
static void isendrecv(MPI_Comm pp) {
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  float *x = filled(rank), *ref = fresh(), *down = fresh(), *got = fresh();
  MPI_Request r;
  MPI_Irecv(ref, N, MPI_FLOAT, prev, 10, pp, &r);
  MPI_Send(x, N, MPI_FLOAT, next, 10, pp);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  MPI_Irecv(down, N, MPI_FLOAT, next, 11, pp, &r);
  MPI_Send(x, N, MPI_FLOAT, prev, 11, pp);
  MPI_Wait(&r, MPI_STATUS_IGNORE);

  MPI_Isendrecv(x, N, MPI_FLOAT, next, 12, got, N, MPI_FLOAT, prev, 12, pp, &r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  same("MPI_Isendrecv", ref, got, N);

  memset(got, 0, sizeof(float) * N);
  MPI_Isendrecv_c(x, N, MPI_FLOAT, next, 13, got, N, MPI_FLOAT, prev, 13, pp, &r);
  for (int done = 0; !done;) MPI_Test(&r, &done, MPI_STATUS_IGNORE);
  same("MPI_Isendrecv_c (MPI_Test)", ref, got, N);

  memcpy(got, x, sizeof(float) * N);
  MPI_Isendrecv_replace(got, N, MPI_FLOAT, next, 14, prev, 14, pp, &r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  same("MPI_Isendrecv_replace", ref, got, N);

  memcpy(got, x, sizeof(float) * N);
  MPI_Isendrecv_replace_c(got, N, MPI_FLOAT, next, 15, prev, 15, pp, &r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  same("MPI_Isendrecv_replace_c", ref, got, N);

  memset(got, 0, sizeof(float) * N);
  if (rank % 2 == 0) {
    MPI_Isendrecv(x, N, MPI_FLOAT, next, 16, got, N, MPI_FLOAT, prev, 16, pp, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  } else {
    MPI_Sendrecv_c(x, N, MPI_FLOAT, next, 16, got, N, MPI_FLOAT, prev, 16, pp, MPI_STATUS_IGNORE);
  }
  same("MPI_Isendrecv with MPI_Sendrecv_c", ref, got, N);

  /* A probed message is the one MPI_Isendrecv then receives (the probe holds it): with a send
   * (into a receive posted before), and with MPI_PROC_NULL as the destination. */
  for (int k = 0; k < 2; ++k) {
    MPI_Request s, q = MPI_REQUEST_NULL;
    MPI_Status st;
    float* sent = fresh();
    memset(got, 0, sizeof(float) * N);
    MPI_Isend(x, N, MPI_FLOAT, next, 17 + k, pp, &s);
    if (k == 0) MPI_Irecv(sent, N, MPI_FLOAT, prev, 19, pp, &q);
    MPI_Probe(prev, 17 + k, pp, MPI_STATUS_IGNORE);
    MPI_Isendrecv(x, N, MPI_FLOAT, k == 0 ? next : MPI_PROC_NULL, 19, got, N, MPI_FLOAT, prev,
                  17 + k, pp, &r);
    MPI_Wait(&r, &st);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    MPI_Wait(&s, MPI_STATUS_IGNORE);
    int count = -1;
    MPI_Get_count(&st, MPI_FLOAT, &count);
    int bad = count != N || st.MPI_SOURCE != prev || st.MPI_TAG != 17 + k;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    failures += bad;
    same(k == 0 ? "MPI_Isendrecv of a probed message" : "  ... from MPI_PROC_NULL", ref, got, N);
    if (bad && rank == 0) printf("  its status is WRONG\n");
    if (k == 0) same("  ... and its send", ref, sent, N);
  }

  shift(pp, 1, x, ref, "MPI_Isendrecv, MPI_PROC_NULL ends");
  shift(pp, -1, x, down, "  ... the other way");
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 64) {
    if (rank == 0) fprintf(stderr, "dropin mpi4: at most 64 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Comm dp = named_dup("dp"), tp = named_dup("tp"), pp = named_dup("pp");
  /* "zero": zero_grad for the reductions, zero_param for the rest (docs/policy.md). */
  MPI_Comm zero = named_dup("zero");
  blocking(dp, tp, zero);
  nonblocking(dp, tp, zero);
  persistent_collectives(dp, tp, zero);
  point_to_point(pp);
  isendrecv(pp);
  MPI_Comm_free(&dp), MPI_Comm_free(&tp), MPI_Comm_free(&pp);
  MPI_Comm_free(&zero);
  if (rank == 0) printf(failures ? "dropin mpi4: FAILED\n" : "dropin mpi4: OK\n");
  for (int i = 0; i < nkept; ++i) free(kept[i]);
  MPI_Finalize();
  return failures ? 1 : 0;
}

#else

int main(void) {
  printf("dropin mpi4: this MPI (version %d.%d) has no large-count calls\n", MPI_VERSION,
         MPI_SUBVERSION);
  return 77;
}

#endif

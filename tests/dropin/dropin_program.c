/* An ordinary MPI program, written without hycc: the evidence for libhycc_mpi.so. It names its
 * communicators after the parallel dimensions, runs every intercepted call (in place and out of
 * place, blocking and nonblocking point to point) plus calls the library must leave alone, and
 *   - writes every result, as raw bytes, to PREFIX.rankR (compared bit for bit across runs);
 *   - prints, on rank 0, the largest error of each call against the exact result (computed in
 *     double from every rank's inputs), relative to the largest exact value;
 *   - exits with 1 if a call the library must not change (int, MPI_MAX, small messages) is not
 *     exact, or if a float call's relative error exceeds BOUND.
 * Usage: dropin_program PREFIX BOUND */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { N = 300000, SMALL = 100 };

static int rank, size;
static FILE* out;
static int failures;
static double bound;

/* Rank r's input element i: smooth, not exactly representable in bf16. */
static float input(int r, long i) { return (float)(sin(0.001 * (double)i + r) + 0.01 * r); }

static float* inputs(int r, long n) {
  float* x = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  for (long i = 0; i < n; ++i) x[i] = input(r, i);
  return x;
}

/* Records a result: its bytes go to the output file, its error against `exact` to stdout. */
static void check(const char* what, const float* got, const double* exact, long n,
                  int must_be_exact) {
  double err = 0, scale = 0;
  for (long i = 0; i < n; ++i) {
    err = fmax(err, fabs((double)got[i] - exact[i]));
    scale = fmax(scale, fabs(exact[i]));
  }
  double rel = scale > 0 ? err / scale : err;
  MPI_Allreduce(MPI_IN_PLACE, &rel, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  fwrite(got, sizeof(float), (size_t)n, out);
  const int bad = must_be_exact ? rel != 0 : rel > bound;
  if (rank == 0) printf("%-28s relative error %.3e%s\n", what, rel, bad ? "  TOO LARGE" : "");
  failures += bad;
}

static double* sum_of_inputs(long n, long offset) {
  double* e = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
  for (int r = 0; r < size; ++r)
    for (long i = 0; i < n; ++i) e[i] += input(r, offset + i);
  return e;
}

static MPI_Comm named_dup(const char* name) {
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_name(c, name);
  return c;
}

/* world_dup: an unnamed duplicate of MPI_COMM_WORLD, as Horovod reduces on. */
static void reductions(MPI_Comm world_dup, MPI_Comm dp, MPI_Comm tp, MPI_Comm zero) {
  float* x = inputs(rank, N);
  float* y = malloc(sizeof(float) * N);
  double* e = sum_of_inputs(N, 0);
  MPI_Allreduce(x, y, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  check("allreduce world", y, e, N, 0);
  MPI_Allreduce(x, y, N, MPI_FLOAT, MPI_SUM, world_dup);
  check("allreduce world dup", y, e, N, 0);
  memcpy(y, x, sizeof(float) * N);
  MPI_Allreduce(MPI_IN_PLACE, y, N, MPI_FLOAT, MPI_SUM, dp);
  check("allreduce dp in place", y, e, N, 0);
  MPI_Allreduce(x, y, N, MPI_FLOAT, MPI_SUM, tp);
  check("allreduce tp", y, e, N, 0);
  MPI_Allreduce(x, y, SMALL, MPI_FLOAT, MPI_SUM, dp);
  /* Below the threshold the library hands the call to MPI: exactly what MPI computes. */
  float small[SMALL];
  PMPI_Allreduce(x, small, SMALL, MPI_FLOAT, MPI_SUM, dp);
  double small_exact[SMALL];
  for (int i = 0; i < SMALL; ++i) small_exact[i] = small[i];
  check("allreduce dp small", y, small_exact, SMALL, 1);

  /* Reduce-scatter: N / size per rank, out of place and in place. */
  const long per = N / size;
  float* all = inputs(rank, per * size);
  double* ez = sum_of_inputs(per, per * rank);
  MPI_Reduce_scatter_block(all, y, (int)per, MPI_FLOAT, MPI_SUM, zero);
  check("reduce_scatter zero", y, ez, per, 0);
  MPI_Reduce_scatter_block(MPI_IN_PLACE, all, (int)per, MPI_FLOAT, MPI_SUM, zero);
  check("reduce_scatter zero in place", all, ez, per, 0);
  free(all);
  free(ez);
  free(e);
  free(x);
  free(y);
}

static void movements(MPI_Comm zero, MPI_Comm tp, MPI_Comm pp) {
  const long per = N / size;
  float* mine = inputs(rank, per);
  float* all = malloc(sizeof(float) * (size_t)(per * size));
  double* e = malloc(sizeof(double) * (size_t)(per * size));
  for (int r = 0; r < size; ++r)
    for (long i = 0; i < per; ++i) e[r * per + i] = input(r, i);
  MPI_Allgather(mine, (int)per, MPI_FLOAT, all, (int)per, MPI_FLOAT, zero);
  check("allgather zero", all, e, per * size, 0);
  memset(all, 0, sizeof(float) * (size_t)(per * size));
  memcpy(all + rank * per, mine, sizeof(float) * (size_t)per);
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, (int)per, MPI_FLOAT, zero);
  check("allgather zero in place", all, e, per * size, 0);

  const int root = 1 % size;
  float* b = inputs(root == rank ? root : size + 7, N);
  double* eb = malloc(sizeof(double) * N);
  for (long i = 0; i < N; ++i) eb[i] = input(root, i);
  MPI_Bcast(b, N, MPI_FLOAT, root, pp);
  check("bcast pp", b, eb, N, 0);

  /* Alltoall: block j of rank r holds input(r, j * per + i). */
  float* s = inputs(rank, per * size);
  for (int j = 0; j < size; ++j)
    for (long i = 0; i < per; ++i) e[j * per + i] = input(j, rank * per + i);
  MPI_Alltoall(s, (int)per, MPI_FLOAT, all, (int)per, MPI_FLOAT, tp);
  check("alltoall tp", all, e, per * size, 0);
  MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, s, (int)per, MPI_FLOAT, tp);
  check("alltoall tp in place", s, e, per * size, 0);
  free(s);
  free(b);
  free(eb);
  free(mine);
  free(all);
  free(e);
}

/* Vector variants: MPI_Reduce_scatter and MPI_Allgatherv with counts that differ by at most one
 * (compressed like the block calls) and by more (left to MPI: exact). */
static void vector_variants(MPI_Comm zero) {
  const long total = N + size - 1;                 /* not a multiple of size when size > 1 */
  int* first = malloc(sizeof(int) * (size_t)size); /* the longer chunks first (array_split) */
  int* last = malloc(sizeof(int) * (size_t)size);  /* the longer chunks last */
  int* displs = malloc(sizeof(int) * (size_t)size);
  for (int r = 0; r < size; ++r) {
    first[r] = (int)(total / size + (r < total % size));
    last[r] = (int)(total / size + (r >= size - total % size));
  }
  float* x = inputs(rank, total);
  float* y = malloc(sizeof(float) * (size_t)total);
  long offset = 0;
  for (int r = 0; r < rank; ++r) offset += first[r];
  double* e = sum_of_inputs(first[rank], offset);
  MPI_Reduce_scatter(x, y, first, MPI_FLOAT, MPI_SUM, zero);
  check("reduce_scatter v zero", y, e, first[rank], 0);
  free(e);
  offset = 0;
  for (int r = 0; r < rank; ++r) offset += last[r];
  e = sum_of_inputs(last[rank], offset);
  MPI_Reduce_scatter(MPI_IN_PLACE, x, last, MPI_FLOAT, MPI_SUM, zero);
  check("reduce_scatter v in place", x, e, last[rank], 0);
  free(e);

  /* Allgatherv: blocks of `last` at displacements with gaps of 3 floats that must keep -1. */
  const long stride = total / size + 4, extent = stride * size;
  float* all = malloc(sizeof(float) * (size_t)extent);
  e = malloc(sizeof(double) * (size_t)extent);
  for (long i = 0; i < extent; ++i) e[i] = -1;
  for (int r = 0; r < size; ++r) {
    displs[r] = (int)(r * stride);
    for (long i = 0; i < last[r]; ++i) e[r * stride + i] = input(r, i);
  }
  float* mine = inputs(rank, last[rank]);
  for (long i = 0; i < extent; ++i) all[i] = -1;
  MPI_Allgatherv(mine, last[rank], MPI_FLOAT, all, last, displs, MPI_FLOAT, zero);
  check("allgatherv gaps zero", all, e, extent, 0);
  for (long i = 0; i < extent; ++i)
    all[i] = i >= rank * stride && i < rank * stride + last[rank] ? e[i] : -1;
  MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, last, displs, MPI_FLOAT, zero);
  check("allgatherv gaps in place", all, e, extent, 0);
  /* Equal, adjacent blocks: an allgather. */
  const long per = N / size;
  for (int r = 0; r < size; ++r) {
    first[r] = (int)per;
    displs[r] = (int)(r * per);
    for (long i = 0; i < per; ++i) e[r * per + i] = input(r, i);
  }
  free(mine);
  mine = inputs(rank, per);
  MPI_Allgatherv(mine, (int)per, MPI_FLOAT, all, first, displs, MPI_FLOAT, zero);
  check("allgatherv equal zero", all, e, per * size, 0);
  /* Counts 2 apart: MPI's own call, exact. */
  if (size > 1) {
    for (int r = 0; r < size; ++r) {
      first[r] = (int)(per - 2 * (r == 0));
      displs[r] = (int)(r * per);
      for (long i = 0; i < per; ++i) e[r * per + i] = r == 0 && i >= per - 2 ? -2 : input(r, i);
    }
    for (long i = 0; i < per * size; ++i) all[i] = -2;
    MPI_Allgatherv(mine, first[rank], MPI_FLOAT, all, first, displs, MPI_FLOAT, zero);
    check("allgatherv uneven (untouched)", all, e, per * size, 1);
  }
  free(mine);
  free(all);
  free(e);
  free(x);
  free(y);
  free(displs);
  free(last);
  free(first);
}

/* Persistent requests, four rounds, data new each round: a persistent send (MPI_Send_init,
 * MPI_Ssend_init, MPI_Bsend_init, MPI_Rsend_init in turn) into a plain MPI_Irecv, and a
 * persistent receive (MPI_Recv_init) of a plain MPI_Isend; started by MPI_Start or
 * MPI_Startall; completed by MPI_Waitall over all four, MPI_Wait and MPI_Test polling,
 * MPI_Waitany, MPI_Testall. Each routed end would miss a message MPI's persistent request sent.
 * Needs the attached buffer of point_to_point (MPI_Bsend_init). */
static void persistent(MPI_Comm pp, const float* x) {
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  float* mine = malloc(sizeof(float) * N);
  float* got_plain = malloc(sizeof(float) * N);
  float* got_persistent = malloc(sizeof(float) * N);
  double* e = malloc(sizeof(double) * N);
  MPI_Request sends[4], recv;
  MPI_Send_init(mine, N, MPI_FLOAT, next, 50, pp, &sends[0]);
  MPI_Ssend_init(mine, N, MPI_FLOAT, next, 51, pp, &sends[1]);
  MPI_Bsend_init(mine, N, MPI_FLOAT, next, 52, pp, &sends[2]);
  MPI_Rsend_init(mine, N, MPI_FLOAT, next, 53, pp, &sends[3]);
  MPI_Recv_init(got_persistent, N, MPI_FLOAT, prev, 54, pp, &recv);
  static const char* const names[] = {"send_init pp", "ssend_init pp", "bsend_init pp",
                                      "rsend_init pp"};
  for (int round = 0; round < 4; ++round) {
    for (long i = 0; i < N; ++i) {
      mine[i] = x[i] * (float)(round + 1);
      e[i] = (double)(input(prev, i) * (float)(round + 1));
    }
    memset(got_plain, 0, sizeof(float) * N);
    memset(got_persistent, 0, sizeof(float) * N);
    MPI_Request r[4] = {sends[round], recv, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Irecv(got_plain, N, MPI_FLOAT, prev, 50 + round, pp, &r[2]);
    MPI_Barrier(pp); /* MPI_Rsend_init's receive is posted */
    if (round % 2 == 0) {
      MPI_Start(&r[0]);
      MPI_Start(&r[1]);
    } else {
      MPI_Startall(2, r);
    }
    MPI_Isend(mine, N, MPI_FLOAT, next, 54, pp, &r[3]);
    MPI_Status st[4];
    int flag = 0, index = 0;
    if (round == 0) {
      MPI_Waitall(4, r, st);
    } else if (round == 1) {
      MPI_Wait(&r[1], &st[1]);
      while (!flag) MPI_Test(&r[0], &flag, MPI_STATUS_IGNORE);
      MPI_Waitall(2, r + 2, MPI_STATUSES_IGNORE);
    } else if (round == 2) {
      for (int k = 0; k < 4; ++k) {
        MPI_Waitany(4, r, &index, &st[1]);
        if (index == 1) break;
      }
      MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
    } else {
      while (!flag) MPI_Testall(4, r, &flag, st);
    }
    int count = 0;
    MPI_Get_count(&st[1], MPI_FLOAT, &count);
    if (r[0] != sends[round] || r[1] != recv || r[2] != MPI_REQUEST_NULL || count != N ||
        st[1].MPI_SOURCE != prev || st[1].MPI_TAG != 54) {
      printf("rank %d: persistent round %d: handles %d %d %d, count %d source %d tag %d\n", rank,
             round, r[0] == sends[round], r[1] == recv, r[2] == MPI_REQUEST_NULL, count,
             st[1].MPI_SOURCE, st[1].MPI_TAG);
      ++failures;
    }
    check(names[round], got_plain, e, N, 0);
    check("recv_init pp", got_persistent, e, N, 0);
  }
  for (int k = 0; k < 4; ++k) MPI_Request_free(&sends[k]);
  MPI_Request_free(&recv);
  if (recv != MPI_REQUEST_NULL || sends[0] != MPI_REQUEST_NULL) {
    printf("rank %d: MPI_Request_free left a persistent handle\n", rank);
    ++failures;
  }
  free(e);
  free(got_persistent);
  free(got_plain);
  free(mine);
}

/* Bytes of this process's memory in RAM (/proc/self/statm), or -1. */
static long resident_bytes(void) {
  long pages = 0, resident = -1;
  FILE* f = fopen("/proc/self/statm", "r");
  if (f == NULL) return -1;
  if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  fclose(f);
  return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

/* Sends given to MPI_Request_free before they complete (MPI completes them in the background):
 * every message arrives, and the library keeps no stream after its transfer. Each rank sends
 * FREED_ROUNDS batches of FREED_BATCH messages of 2 MiB of floats round the ring, each batch
 * acknowledged (an int message) before the next, so at most two batches are in flight: 16 MiB
 * of streams at most, against 256 MiB (128 MiB in bf16) if every stream were kept. */
enum { FREED_N = 1 << 19, FREED_ROUNDS = 32, FREED_BATCH = 4 };
/* Growth of a rank's resident memory the checks below allow. */
static const long kGrowthLimit = 64L << 20;

static void freed_sends(MPI_Comm pp) {
  if (size < 2) return;
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  float* x = inputs(rank, FREED_N);
  float* y = calloc(FREED_N, sizeof(float));
  double* e = malloc(sizeof(double) * FREED_N);
  for (long i = 0; i < FREED_N; ++i) e[i] = input(prev, i);
  const long before = resident_bytes();
  long most = before;
  for (int round = 0; round < FREED_ROUNDS; ++round) {
    for (int k = 0; k < FREED_BATCH; ++k) {
      MPI_Request r;
      MPI_Isend(x, FREED_N, MPI_FLOAT, next, 20, pp, &r);
      MPI_Request_free(&r);
      if (r != MPI_REQUEST_NULL) {
        printf("rank %d: MPI_Request_free left the send's handle\n", rank);
        ++failures;
      }
    }
    for (int k = 0; k < FREED_BATCH; ++k) {
      MPI_Recv(y, FREED_N, MPI_FLOAT, prev, 20, pp, MPI_STATUS_IGNORE);
    }
    int arrived = 1, mine_arrived = 0;
    MPI_Sendrecv(&arrived, 1, MPI_INT, prev, 21, &mine_arrived, 1, MPI_INT, next, 21, pp,
                 MPI_STATUS_IGNORE);
    const long now = resident_bytes();
    if (now > most) most = now;
  }
  check("isend + request_free pp", y, e, FREED_N, 0);
  if (before < 0 || most - before > kGrowthLimit) {
    printf("rank %d: %d freed sends of %ld floats: memory grew by %ld MiB (limit %ld)\n", rank,
           FREED_ROUNDS * FREED_BATCH, (long)FREED_N, (most - before) >> 20, kGrowthLimit >> 20);
    ++failures;
  }
  free(e);
  free(y);
  free(x);
}

/* A fusion buffer (Horovod's): one buffer allreduced on dp at a new length each round. Under
 * hybrid its gradient rule keeps an error-feedback state per buffer; one state per length, kept
 * for good, grew each rank by 2.5 MiB a round here (FUSED_ROUNDS x 2 MiB of floats: 120 MiB). */
enum { FUSED_N = 1 << 19, FUSED_ROUNDS = 48 };

static void fusion_buffer(MPI_Comm dp) {
  float* x = inputs(rank, FUSED_N);
  float* y = malloc(sizeof(float) * FUSED_N);
  const long before = resident_bytes();
  long most = before;
  for (int round = 0; round < FUSED_ROUNDS; ++round) {
    const int n = FUSED_N - 64 * round;
    MPI_Allreduce(x, y, n, MPI_FLOAT, MPI_SUM, dp);
    const long now = resident_bytes();
    if (now > most) most = now;
  }
  double* e = sum_of_inputs(FUSED_N - 64 * (FUSED_ROUNDS - 1), 0);
  check("allreduce dp fusion buffer", y, e, FUSED_N - 64 * (FUSED_ROUNDS - 1), 0);
  if (before < 0 || most - before > kGrowthLimit) {
    printf(
        "rank %d: %d allreduces of one buffer at %d lengths: memory grew by %ld MiB (limit %ld)\n",
        rank, FUSED_ROUNDS, FUSED_ROUNDS, (most - before) >> 20, kGrowthLimit >> 20);
    ++failures;
  }
  free(e);
  free(y);
  free(x);
}

static void point_to_point(MPI_Comm pp) {
  if (size < 2) return;
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  float* x = inputs(rank, N);
  float* y = malloc(sizeof(float) * (N + 10));
  double* e = malloc(sizeof(double) * N);
  for (long i = 0; i < N; ++i) e[i] = input(prev, i);
  MPI_Status st;
  int count = 0;

  MPI_Sendrecv(x, N, MPI_FLOAT, next, 3, y, N + 10, MPI_FLOAT, prev, 3, pp, &st);
  MPI_Get_count(&st, MPI_FLOAT, &count);
  if (count != N || st.MPI_SOURCE != prev || st.MPI_TAG != 3) {
    printf("rank %d: sendrecv status count %d source %d tag %d\n", rank, count, st.MPI_SOURCE,
           st.MPI_TAG);
    ++failures;
  }
  check("sendrecv pp", y, e, N, 0);

  MPI_Request r[2];
  MPI_Irecv(y, N, MPI_FLOAT, MPI_ANY_SOURCE, MPI_ANY_TAG, pp, &r[0]);
  MPI_Isend(x, N, MPI_FLOAT, next, 9, pp, &r[1]);
  MPI_Status sts[2];
  MPI_Waitall(2, r, sts);
  MPI_Get_count(&sts[0], MPI_FLOAT, &count);
  if (count != N || sts[0].MPI_SOURCE != prev || sts[0].MPI_TAG != 9) {
    printf("rank %d: irecv status count %d source %d tag %d\n", rank, count, sts[0].MPI_SOURCE,
           sts[0].MPI_TAG);
    ++failures;
  }
  check("isend/irecv pp", y, e, N, 0);

  /* MPI_Request_get_status polled (it leaves the request to its completion call): its status
   * says the sent count before MPI_Waitall decodes the message. */
  memset(y, 0, sizeof(float) * N);
  MPI_Irecv(y, N, MPI_FLOAT, prev, 10, pp, &r[0]);
  MPI_Isend(x, N - 7, MPI_FLOAT, next, 10, pp, &r[1]);
  for (int flag = 0; !flag;) MPI_Request_get_status(r[0], &flag, &st);
  MPI_Get_count(&st, MPI_FLOAT, &count);
  MPI_Waitall(2, r, sts);
  if (count != N - 7 || st.MPI_SOURCE != prev || st.MPI_TAG != 10) {
    printf("rank %d: get_status count %d source %d tag %d\n", rank, count, st.MPI_SOURCE,
           st.MPI_TAG);
    ++failures;
  }
  check("irecv get_status pp", y, e, N - 7, 0);

  /* The other send modes round the ring, each into a receive posted first (MPI_Rsend and
   * MPI_Irsend need it posted; the barrier says it is): synchronous, buffered (in a buffer
   * attached for two messages: the floats, room for a stream's 48-byte header, MPI's overhead),
   * ready. */
  const int attached = 2 * ((int)(sizeof(float) * N) + 48 + MPI_BSEND_OVERHEAD);
  void* buffer = malloc((size_t)attached);
  MPI_Buffer_attach(buffer, attached);
  static const char* const modes[] = {"issend pp", "ibsend pp", "irsend pp",
                                      "bsend pp",  "rsend pp",  "ssend pp"};
  for (int mode = 0; mode < 6; ++mode) {
    memset(y, 0, sizeof(float) * N);
    MPI_Irecv(y, N, MPI_FLOAT, prev, 20 + mode, pp, &r[0]);
    MPI_Barrier(pp);
    r[1] = MPI_REQUEST_NULL;
    switch (mode) {
      case 0:
        MPI_Issend(x, N, MPI_FLOAT, next, 20, pp, &r[1]);
        break;
      case 1:
        MPI_Ibsend(x, N, MPI_FLOAT, next, 21, pp, &r[1]);
        break;
      case 2:
        MPI_Irsend(x, N, MPI_FLOAT, next, 22, pp, &r[1]);
        break;
      case 3:
        MPI_Bsend(x, N, MPI_FLOAT, next, 23, pp);
        break;
      case 4:
        MPI_Rsend(x, N, MPI_FLOAT, next, 24, pp);
        break;
      default:
        MPI_Ssend(x, N, MPI_FLOAT, next, 25, pp);
        break;
    }
    MPI_Waitall(2, r, sts);
    check(modes[mode], y, e, N, 0);
  }
  persistent(pp, x);
  int detached_size = 0;
  MPI_Buffer_detach(&buffer, &detached_size);
  free(buffer);

  /* Messages whose length the receiver learns from a probe, each after an int header (which
   * travels as MPI's own) probed and received first: MPI_Probe, twice (the same message), then
   * MPI_Get_count and MPI_Recv; MPI_Iprobe polled with wildcards, then MPI_Irecv. */
  const int mine_len = N - 1000 * (rank + 1), prev_len = N - 1000 * (prev + 1);
  for (int k = 0; k < 2; ++k) {
    MPI_Request sends[2];
    MPI_Status pst;
    int header = mine_len, got_header = -1, header_count = -1;
    MPI_Isend(&header, 1, MPI_INT, next, 40 + k, pp, &sends[0]);
    MPI_Isend(x, mine_len, MPI_FLOAT, next, 42 + k, pp, &sends[1]);
    MPI_Probe(prev, 40 + k, pp, &pst);
    MPI_Get_count(&pst, MPI_INT, &header_count);
    MPI_Recv(&got_header, 1, MPI_INT, prev, 40 + k, pp, MPI_STATUS_IGNORE);
    if (k == 0) {
      MPI_Probe(prev, 42, pp, &pst);
      MPI_Probe(MPI_ANY_SOURCE, 42, pp, &pst);
    } else {
      for (int flag = 0; !flag;) MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, pp, &flag, &pst);
    }
    MPI_Get_count(&pst, MPI_FLOAT, &count);
    if (header_count != 1 || got_header != prev_len || count != prev_len ||
        pst.MPI_SOURCE != prev || pst.MPI_TAG != 42 + k) {
      printf("rank %d: probe %d: header count %d value %d, count %d source %d tag %d\n", rank, k,
             header_count, got_header, count, pst.MPI_SOURCE, pst.MPI_TAG);
      ++failures;
      count = prev_len;
    }
    float* z = malloc(sizeof(float) * (size_t)count);
    if (k == 0) {
      MPI_Recv(z, count, MPI_FLOAT, pst.MPI_SOURCE, pst.MPI_TAG, pp, MPI_STATUS_IGNORE);
    } else {
      MPI_Irecv(z, count, MPI_FLOAT, pst.MPI_SOURCE, pst.MPI_TAG, pp, &r[0]);
      MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    }
    MPI_Waitall(2, sends, MPI_STATUSES_IGNORE);
    check(k == 0 ? "probe/recv pp" : "iprobe/irecv pp", z, e, prev_len, 0);
    free(z);
  }

  /* The matched probes, on messages of each sender's own length after an int header: MPI_Mprobe
   * and MPI_Mrecv for both (the header is MPI's own message); the header by MPI_Recv, then a
   * wildcard MPI_Improbe loop and MPI_Imrecv; MPI_Probe (which holds the message), then
   * MPI_Mprobe of that message and MPI_Mrecv. Each message handle ends as MPI_MESSAGE_NULL. */
  static const char* const matched[] = {"mprobe/mrecv pp", "improbe/imrecv pp",
                                        "probe/mprobe/mrecv pp"};
  for (int k = 0; k < 3; ++k) {
    MPI_Request sends[2];
    MPI_Message msg = MPI_MESSAGE_NULL, header_msg = MPI_MESSAGE_NULL;
    MPI_Status pst, rst;
    int header = mine_len, got_header = -1, recv_count = -1;
    MPI_Isend(&header, 1, MPI_INT, next, 60 + k, pp, &sends[0]);
    MPI_Isend(x, mine_len, MPI_FLOAT, next, 63 + k, pp, &sends[1]);
    if (k == 0) {
      MPI_Mprobe(prev, 60, pp, &header_msg, MPI_STATUS_IGNORE);
      MPI_Mrecv(&got_header, 1, MPI_INT, &header_msg, MPI_STATUS_IGNORE);
      MPI_Mprobe(prev, 63, pp, &msg, &pst);
    } else {
      MPI_Recv(&got_header, 1, MPI_INT, prev, 60 + k, pp, MPI_STATUS_IGNORE);
      if (k == 1) {
        for (int flag = 0; !flag;) MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, pp, &flag, &msg, &pst);
      } else {
        MPI_Probe(prev, 65, pp, &pst);
        MPI_Mprobe(MPI_ANY_SOURCE, 65, pp, &msg, &pst);
      }
    }
    MPI_Get_count(&pst, MPI_FLOAT, &count);
    const int probed = count;
    float* z = malloc(sizeof(float) * (size_t)(count > 0 ? count : 1));
    if (k == 1) {
      MPI_Imrecv(z, count, MPI_FLOAT, &msg, &r[0]);
      MPI_Wait(&r[0], &rst);
    } else {
      MPI_Mrecv(z, count, MPI_FLOAT, &msg, &rst);
    }
    MPI_Get_count(&rst, MPI_FLOAT, &recv_count);
    MPI_Waitall(2, sends, MPI_STATUSES_IGNORE);
    if (got_header != prev_len || probed != prev_len || recv_count != prev_len ||
        pst.MPI_SOURCE != prev || pst.MPI_TAG != 63 + k || msg != MPI_MESSAGE_NULL ||
        header_msg != MPI_MESSAGE_NULL) {
      printf("rank %d: %s: header %d, count %d/%d, source %d tag %d, handles null %d %d\n", rank,
             matched[k], got_header, probed, recv_count, pst.MPI_SOURCE, pst.MPI_TAG,
             msg == MPI_MESSAGE_NULL, header_msg == MPI_MESSAGE_NULL);
      ++failures;
    }
    if (probed == prev_len) check(matched[k], z, e, prev_len, 0);
    free(z);
  }

  /* Blocking, in pairs (0 <-> 1, 2 <-> 3, ...) so that it cannot deadlock: even sizes only. */
  if (size % 2 == 0) {
    const int peer = rank ^ 1;
    for (long i = 0; i < N; ++i) e[i] = input(peer, i);
    if (rank % 2 == 0) {
      MPI_Send(x, N, MPI_FLOAT, peer, 4, pp);
      MPI_Recv(y, N, MPI_FLOAT, peer, 4, pp, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(y, N, MPI_FLOAT, peer, 4, pp, MPI_STATUS_IGNORE);
      MPI_Send(x, N, MPI_FLOAT, peer, 4, pp);
    }
    check("send/recv pp", y, e, N, 0);
  }
  free(x);
  free(y);
  free(e);
}

/* Calls the library must leave alone: integers, MPI_MAX. Their results are exact. */
static void untouched(MPI_Comm dp) {
  int* k = malloc(sizeof(int) * N);
  for (long i = 0; i < N; ++i) k[i] = (int)(i % 1000) + rank;
  MPI_Allreduce(MPI_IN_PLACE, k, N, MPI_INT, MPI_SUM, dp);
  float* kf = malloc(sizeof(float) * N);
  double* ek = malloc(sizeof(double) * N);
  for (long i = 0; i < N; ++i) {
    kf[i] = (float)k[i];
    ek[i] = (double)size * (double)(i % 1000) + size * (size - 1) / 2.0;
  }
  check("allreduce int (untouched)", kf, ek, N, 1);
  float* x = inputs(rank, N);
  MPI_Allreduce(MPI_IN_PLACE, x, N, MPI_FLOAT, MPI_MAX, dp);
  for (long i = 0; i < N; ++i) {
    double m = input(0, i);
    for (int r = 1; r < size; ++r) m = fmax(m, input(r, i));
    ek[i] = (float)m;
  }
  check("allreduce max (untouched)", x, ek, N, 1);
  free(k);
  free(kf);
  free(ek);
  free(x);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (argc != 3) {
    fprintf(stderr, "usage: %s PREFIX BOUND\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  bound = atof(argv[2]);
  char path[4096];
  snprintf(path, sizeof path, "%s.rank%d", argv[1], rank);
  out = fopen(path, "wb");
  if (out == NULL) {
    perror(path);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Comm dp = named_dup("dp"), tp = named_dup("tp"), pp = named_dup("pp"),
           zero = named_dup("zero");
  MPI_Comm world_dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &world_dup);
  reductions(world_dup, dp, tp, zero);
  movements(zero, tp, pp);
  vector_variants(zero);
  point_to_point(pp);
  freed_sends(pp);
  fusion_buffer(dp);
  untouched(dp);
  fclose(out);
  MPI_Comm_free(&dp);
  MPI_Comm_free(&tp);
  MPI_Comm_free(&pp);
  MPI_Comm_free(&zero);
  MPI_Comm_free(&world_dup);
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("%s\n", failures == 0 ? "dropin_program: OK" : "dropin_program: FAILED");
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}

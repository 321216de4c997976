/* A program that calls MPI from several threads at once (MPI_THREAD_MULTIPLE, as Horovod asks
 * for), under libhycc_mpi.so: four threads, each on a communicator of its own, for 20 steps:
 *   - two "dp" communicators: blocking allreduces, and nonblocking ones completed by MPI_Test
 *     polling (under hybrid both take the gradient compressor, ef2+quant:bits=6);
 *   - "zero": blocking reduce-scatters (the gradient compressor too);
 *   - "pp": messages round the ring whose length the receiver learns from a probe: MPI_Probe and
 *     MPI_Irecv beside the MPI_Isend (MPI_Waitall) on even steps, MPI_Mprobe and MPI_Mrecv on odd
 *     ones;
 *   - a second "pp": a persistent send and a persistent receive round the ring, both started by
 *     MPI_Startall each step and completed by MPI_Waitall.
 * Every result must be within 5% of the exact sum (relative to the largest), an allreduce the
 * same bits on every rank (rank 0's result, broadcast as bytes, which the library leaves to MPI);
 * every message the sent count, within 1% of the sent values. Blocking gradient steps on two
 * communicators at once hung when one lock covered a whole step, communication included.
 * Prints "dropin threads: OK" on rank 0. Exits with 77 when MPI does not provide
 * MPI_THREAD_MULTIPLE.
 * Usage: dropin_threads_program */
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 200000, STEPS = 20, THREADS = 5 };

static int rank, size;

static float value(int r, long i, int step) {
  return (float)(sin(0.001 * (double)i + r + step) + 0.01 * r);
}

typedef enum { BLOCKING, NONBLOCKING, REDUCE_SCATTER, RING, PERSISTENT } Kind;

typedef struct {
  const char* name;
  Kind kind;
  MPI_Comm comm;
  int failures;
} Job;

static void* reductions(void* arg) {
  Job* j = arg;
  float* x = malloc(sizeof(float) * N);
  float* y = malloc(sizeof(float) * N);
  float* first = malloc(sizeof(float) * N);
  for (int step = 0; step < STEPS; ++step) {
    for (long i = 0; i < N; ++i) x[i] = value(rank, i, step);
    const long per = N / size, offset = j->kind == REDUCE_SCATTER ? per * rank : 0;
    const long n = j->kind == REDUCE_SCATTER ? per : N;
    if (j->kind == NONBLOCKING) {
      MPI_Request r;
      MPI_Iallreduce(x, y, N, MPI_FLOAT, MPI_SUM, j->comm, &r);
      for (int done = 0; !done;) MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    } else if (j->kind == REDUCE_SCATTER) {
      MPI_Reduce_scatter_block(x, y, (int)per, MPI_FLOAT, MPI_SUM, j->comm);
    } else {
      MPI_Allreduce(x, y, N, MPI_FLOAT, MPI_SUM, j->comm);
    }
    double err = 0, scale = 0;
    for (long i = 0; i < n; ++i) {
      double exact = 0;
      for (int r = 0; r < size; ++r) exact += value(r, offset + i, step);
      err = fmax(err, fabs(y[i] - exact));
      scale = fmax(scale, fabs(exact));
    }
    int same = 1; /* each rank holds a chunk of its own after a reduce-scatter */
    if (j->kind != REDUCE_SCATTER) {
      memcpy(first, y, sizeof(float) * N);
      MPI_Bcast(first, N * (int)sizeof(float), MPI_BYTE, 0, j->comm);
      same = memcmp(first, y, sizeof(float) * N) == 0;
    }
    if (!same || err > 0.05 * scale) {
      printf("rank %d %s step %d: relative error %.3e, %s rank 0's\n", rank, j->name, step,
             err / scale, same ? "the same bits as" : "NOT the same bits as");
      ++j->failures;
    }
  }
  free(x), free(y), free(first);
  return NULL;
}

static void* ring(void* arg) {
  Job* j = arg;
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  float* x = malloc(sizeof(float) * N);
  float* y = malloc(sizeof(float) * N);
  for (int step = 0; step < STEPS; ++step) {
    for (long i = 0; i < N; ++i) x[i] = value(rank, i, step);
    MPI_Request r[2];
    MPI_Status st;
    int count = 0;
    MPI_Isend(x, N - step, MPI_FLOAT, next, step, j->comm, &r[0]);
    if (step % 2 == 0) {
      MPI_Probe(prev, step, j->comm, &st);
      MPI_Get_count(&st, MPI_FLOAT, &count);
      if (count < 0 || count > N) count = N;
      MPI_Irecv(y, count, MPI_FLOAT, prev, step, j->comm, &r[1]);
      MPI_Status sts[2];
      MPI_Waitall(2, r, sts);
    } else {
      MPI_Message m;
      MPI_Mprobe(prev, step, j->comm, &m, &st);
      MPI_Get_count(&st, MPI_FLOAT, &count);
      if (count < 0 || count > N) count = N;
      MPI_Mrecv(y, count, MPI_FLOAT, &m, MPI_STATUS_IGNORE);
      MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    }
    double err = 0;
    for (long i = 0; i < count; ++i) err = fmax(err, fabs(y[i] - value(prev, i, step)));
    if (count != N - step || err > 0.01) {
      printf("rank %d pp step %d: count %d (sent %d), error %.3e\n", rank, step, count, N - step,
             err);
      ++j->failures;
    }
  }
  free(x), free(y);
  return NULL;
}

static void* persistent(void* arg) {
  Job* j = arg;
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  float* x = malloc(sizeof(float) * N);
  float* y = malloc(sizeof(float) * N);
  MPI_Request r[2];
  MPI_Send_init(x, N, MPI_FLOAT, next, 0, j->comm, &r[0]);
  MPI_Recv_init(y, N, MPI_FLOAT, prev, 0, j->comm, &r[1]);
  for (int step = 0; step < STEPS; ++step) {
    for (long i = 0; i < N; ++i) x[i] = value(rank, i, step);
    MPI_Startall(2, r);
    MPI_Status st[2];
    MPI_Waitall(2, r, st);
    int count = 0;
    MPI_Get_count(&st[1], MPI_FLOAT, &count);
    double err = 0;
    for (long i = 0; i < N; ++i) err = fmax(err, fabs(y[i] - value(prev, i, step)));
    if (count != N || err > 0.01 || r[0] == MPI_REQUEST_NULL || r[1] == MPI_REQUEST_NULL) {
      printf("rank %d persistent pp step %d: count %d, error %.3e\n", rank, step, count, err);
      ++j->failures;
    }
  }
  MPI_Request_free(&r[0]);
  MPI_Request_free(&r[1]);
  free(x), free(y);
  return NULL;
}

int main(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0) printf("dropin threads: this MPI does not provide MPI_THREAD_MULTIPLE\n");
    MPI_Finalize();
    return 77;
  }
  Job jobs[THREADS] = {{"dp", BLOCKING, MPI_COMM_NULL, 0},
                       {"dp", NONBLOCKING, MPI_COMM_NULL, 0},
                       {"zero", REDUCE_SCATTER, MPI_COMM_NULL, 0},
                       {"pp", RING, MPI_COMM_NULL, 0},
                       {"pp", PERSISTENT, MPI_COMM_NULL, 0}};
  pthread_t threads[THREADS];
  for (int k = 0; k < THREADS; ++k) {
    MPI_Comm_dup(MPI_COMM_WORLD, &jobs[k].comm);
    MPI_Comm_set_name(jobs[k].comm, jobs[k].name);
  }
  for (int k = 0; k < THREADS; ++k) {
    void* (*run)(void*) = jobs[k].kind == RING         ? ring
                          : jobs[k].kind == PERSISTENT ? persistent
                                                       : reductions;
    pthread_create(&threads[k], NULL, run, &jobs[k]);
  }
  int failures = 0;
  for (int k = 0; k < THREADS; ++k) {
    pthread_join(threads[k], NULL);
    failures += jobs[k].failures;
    MPI_Comm_free(&jobs[k].comm);
  }
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf(failures ? "dropin threads: FAILED\n" : "dropin threads: OK\n");
  MPI_Finalize();
  return failures != 0;
}

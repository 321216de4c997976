/* hycc-nonblocking-bench: an MPI program written without hycc that times MPI_Iallreduce (or
 * MPI_Ireduce_scatter_block) of a float32 tensor on a communicator named after a parallel
 * dimension, overlapped with computation (polling MPI_Test every millisecond, as overlapping
 * programs do), against the blocking call on the same tensor. Run it with and without
 * libhycc_mpi.so (docs/dropin.md, "Nonblocking collectives"), e.g. on tools/netemu:
 *   tools/netemu run --hosts 4 --rate 200mbit --env LD_PRELOAD=$PWD/build/lib/libhycc_mpi.so \
 *       --env HYCC_POLICY=hybrid-z -- build/bin/hycc-nonblocking-bench --compute-ms 200
 * Options: --count N floats (default 4194304), --rounds R (default 5), --compute-ms C (default
 * 0), --name NAME of the communicator (default dp), --op allreduce|reduce_scatter (default
 * allreduce; a reduce-scatter of N floats, N / ranks to each). Prints the median time per round
 * of each. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compare(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median(double* t, int n) {
  qsort(t, (size_t)n, sizeof *t, compare);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* Computes for `ms` milliseconds, calling MPI_Test every millisecond (r may be null). */
static double compute(double ms, MPI_Request* r, volatile float* sink) {
  const double end = MPI_Wtime() + ms / 1000;
  double next = MPI_Wtime();
  float acc = 0;
  while (MPI_Wtime() < end) {
    for (int i = 0; i < 10000; ++i) acc = acc * 0.999f + 1.0f;
    if (r != NULL && MPI_Wtime() >= next) {
      int flag;
      MPI_Test(r, &flag, MPI_STATUS_IGNORE);
      next += 0.001;
    }
  }
  *sink = acc;
  return ms;
}

int main(int argc, char** argv) {
  long count = 4194304;
  int rounds = 5;
  double compute_ms = 0;
  const char* name = "dp";
  int scatter = 0; /* --op reduce_scatter */
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      printf(
          "usage: hycc-nonblocking-bench [--count N] [--rounds R] [--compute-ms C] [--name NAME]\n"
          "                              [--op allreduce|reduce_scatter]\n"
          "Times MPI_Iallreduce of N float32 (default 4194304) on a communicator named NAME\n"
          "(default dp), overlapped with C ms of computation (default 0) that polls MPI_Test\n"
          "every millisecond, against MPI_Allreduce followed by the same computation; prints the\n"
          "median of R rounds (default 5). --op reduce_scatter: MPI_Ireduce_scatter_block and\n"
          "MPI_Reduce_scatter_block of N floats (N / ranks to each; hybrid's rule is on 'zero').\n"
          "Run under mpirun, with or without libhycc_mpi.so.\n");
      return 0;
    }
  }
  if (argc % 2 == 0) {
    fprintf(stderr, "%s needs a value (--help)\n", argv[argc - 1]);
    return 2;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--count") == 0)
      count = atol(argv[i + 1]);
    else if (strcmp(argv[i], "--rounds") == 0)
      rounds = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--compute-ms") == 0)
      compute_ms = atof(argv[i + 1]);
    else if (strcmp(argv[i], "--name") == 0)
      name = argv[i + 1];
    else if (strcmp(argv[i], "--op") == 0 && strcmp(argv[i + 1], "allreduce") == 0)
      scatter = 0;
    else if (strcmp(argv[i], "--op") == 0 && strcmp(argv[i + 1], "reduce_scatter") == 0)
      scatter = 1;
    else if (strcmp(argv[i], "--op") == 0) {
      fprintf(stderr, "--op takes allreduce or reduce_scatter, not '%s'\n", argv[i + 1]);
      return 2;
    } else {
      fprintf(stderr, "unknown option %s (--help)\n", argv[i]);
      return 2;
    }
  }
  if (count <= 0 || count > 1L << 29 || rounds <= 0 || rounds > 1000 || compute_ms < 0) {
    fprintf(stderr, "--count 1..2^29, --rounds 1..1000, --compute-ms >= 0\n");
    return 2;
  }
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_name(comm, name);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const long chunk = count / size; /* a reduce-scatter's floats per rank */
  if (scatter && chunk == 0) {
    if (rank == 0) fprintf(stderr, "--count must be at least the number of ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  float* x = malloc(sizeof(float) * (size_t)count);
  float* y = malloc(sizeof(float) * (size_t)(scatter ? chunk : 1));
  double* blocking = malloc(sizeof(double) * (size_t)rounds);
  double* overlapped = malloc(sizeof(double) * (size_t)rounds);
  if (x == NULL || y == NULL || blocking == NULL || overlapped == NULL)
    MPI_Abort(MPI_COMM_WORLD, 2);
  volatile float sink;
  for (int k = 0; k < rounds; ++k) {
    for (long i = 0; i < count; ++i) x[i] = (float)((i * 7 + rank * 13 + k) % 1000) / 500 - 1;
    MPI_Barrier(comm);
    double t = MPI_Wtime();
    if (scatter)
      MPI_Reduce_scatter_block(x, y, (int)chunk, MPI_FLOAT, MPI_SUM, comm);
    else
      MPI_Allreduce(MPI_IN_PLACE, x, (int)count, MPI_FLOAT, MPI_SUM, comm);
    compute(compute_ms, NULL, &sink);
    blocking[k] = MPI_Wtime() - t;
    MPI_Barrier(comm);
    MPI_Request r;
    t = MPI_Wtime();
    if (scatter)
      MPI_Ireduce_scatter_block(x, y, (int)chunk, MPI_FLOAT, MPI_SUM, comm, &r);
    else
      MPI_Iallreduce(MPI_IN_PLACE, x, (int)count, MPI_FLOAT, MPI_SUM, comm, &r);
    compute(compute_ms, &r, &sink);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    overlapped[k] = MPI_Wtime() - t;
  }
  if (rank == 0) {
    printf("# %d ranks, %ld float32 (%.1f MiB) on '%s', %d rounds, %.0f ms of computation\n", size,
           count, count * 4.0 / (1 << 20), name, rounds, compute_ms);
    const char* op = scatter ? "reduce-scatter" : "allreduce";
    printf("blocking %s, then compute:     %.4f s (median)\n", op, median(blocking, rounds));
    printf("nonblocking %s during compute: %.4f s (median)\n", op, median(overlapped, rounds));
  }
  free(x), free(y), free(blocking), free(overlapped);
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return 0;
}

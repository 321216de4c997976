/* An MPI program that knows nothing of hycc, for the installed drop-in library
 * (tests/install/install_test.sh runs it with LD_PRELOAD=PREFIX/lib/libhycc_mpi.so and
 * HYCC_POLICY=hybrid): 20 allreduces of 1 Mi floats on a communicator named "dp". Prints
 * "plain_mpi: OK" on rank 0 when every rank holds the same sums, each within 5% of the exact
 * one (hybrid compresses dp gradients lossily). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { kCount = 1 << 20, kSteps = 20 };

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm dp;
  MPI_Comm_dup(MPI_COMM_WORLD, &dp);
  MPI_Comm_set_name(dp, "dp");
  int rank = 0, size = 0;
  MPI_Comm_rank(dp, &rank);
  MPI_Comm_size(dp, &size);
  float* in = malloc(kCount * sizeof(float));
  float* out = malloc(kCount * sizeof(float));
  float* first = malloc(kCount * sizeof(float));
  int failures = (in == NULL || out == NULL || first == NULL);
  for (int step = 0; step < kSteps && failures == 0; ++step) {
    double worst = 0;
    for (int i = 0; i < kCount; ++i) in[i] = sinf(0.001f * (float)(i + step)) + 0.1f * (float)rank;
    MPI_Allreduce(in, out, kCount, MPI_FLOAT, MPI_SUM, dp);
    for (int i = 0; i < kCount; ++i) {
      const double want = size * sin(0.001 * (i + step)) + 0.05 * size * (size - 1);
      worst = fmax(worst, fabs(out[i] - want));
    }
    if (worst > 0.05 * size) {
      fprintf(stderr, "plain_mpi: step %d: error %g\n", step, worst);
      failures += 1;
    }
    /* The same bits on every rank: rank 0's result against each rank's. */
    if (rank == 0) {
      for (int i = 0; i < kCount; ++i) first[i] = out[i];
    }
    MPI_Bcast(first, kCount * (int)sizeof(float), MPI_BYTE, 0, MPI_COMM_WORLD); /* untouched */
    for (int i = 0; i < kCount; ++i) {
      if (first[i] != out[i]) {
        fprintf(stderr, "plain_mpi: step %d: rank %d differs from rank 0 at %d\n", step, rank, i);
        failures += 1;
        break;
      }
    }
  }
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("plain_mpi: %s\n", all == 0 ? "OK" : "FAIL");
  free(in);
  free(out);
  free(first);
  MPI_Comm_free(&dp);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}

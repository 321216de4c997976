/* mpi_probe: checks that an MPI job works across the emulated hosts of tools/netemu and measures
 * how fast bytes cross them.
 *
 * usage: mpi_probe [ALLREDUCE_MIB [P2P_MIB [SLEEP_S]]]   (defaults 64, 16, 0)
 *
 * 1. Correctness: MPI_Allreduce (sum) of 1027 floats where rank r holds r + 1 + (i % 7); the exact
 *    result is n(n+1)/2 + n * (i % 7), small integers, so float sums are exact.
 * 2. Throughput: a timed MPI_Allreduce of ALLREDUCE_MIB MiB of floats (algbw = bytes / time,
 *    busbw = algbw * 2(n-1)/n as in nccl-tests) and a timed MPI_Send of P2P_MIB MiB from rank 0 to
 *    the last rank (bytes / time, time taken on rank 0 until a 1-byte ack comes back).
 * 3. SLEEP_S > 0: every rank prints "probe: sleeping" and sleeps, for tests of interruption.
 *
 * Rank 0 prints machine-readable lines ("key value ...") on stdout; exit code 1 when the check
 * fails.
 */
#define _POSIX_C_SOURCE 200809L /* gethostname */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int check_small_allreduce(int rank, int size) {
  enum { kCount = 1027 };
  float in[kCount], out[kCount];
  for (int i = 0; i < kCount; ++i) in[i] = (float)(rank + 1 + i % 7);
  MPI_Allreduce(in, out, kCount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  int wrong = 0;
  for (int i = 0; i < kCount; ++i) {
    float want = (float)(size * (size + 1) / 2 + size * (i % 7));
    if (out[i] != want) ++wrong;
  }
  int wrong_total = 0;
  MPI_Allreduce(&wrong, &wrong_total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return wrong_total;
}

/* Seconds for one allreduce of `mib` MiB, the slowest rank's time. */
static double time_allreduce(size_t mib) {
  size_t count = mib * 1024 * 1024 / sizeof(float);
  float* buf = malloc(count * sizeof(float));
  if (!buf) MPI_Abort(MPI_COMM_WORLD, 2);
  for (size_t i = 0; i < count; ++i) buf[i] = 1.0f;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double t = MPI_Wtime() - t0, t_max = 0;
  MPI_Allreduce(&t, &t_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  free(buf);
  return t_max;
}

/* Seconds on rank 0 to send `mib` MiB to the last rank and get a 1-byte ack; 0 with one rank. */
static double time_p2p(int rank, int size, size_t mib) {
  if (size < 2) return 0;
  size_t bytes = mib * 1024 * 1024;
  int last = size - 1;
  char ack = 0, *buf = NULL;
  if (rank == 0 || rank == last) {
    buf = calloc(bytes ? bytes : 1, 1);
    if (!buf) MPI_Abort(MPI_COMM_WORLD, 2);
  }
  double t = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    double t0 = MPI_Wtime();
    MPI_Send(buf, (int)bytes, MPI_BYTE, last, 1, MPI_COMM_WORLD);
    MPI_Recv(&ack, 1, MPI_BYTE, last, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    t = MPI_Wtime() - t0;
  } else if (rank == last) {
    MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(&ack, 1, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
  }
  free(buf);
  return t;
}

int main(int argc, char** argv) {
  size_t allreduce_mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
  size_t p2p_mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 16;
  int sleep_s = argc > 3 ? atoi(argv[3]) : 0;

  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  char host[256] = "";
  gethostname(host, sizeof host - 1);
  /* Every rank names its host, so a test can see one rank per emulated host. */
  printf("rank %d of %d on %s\n", rank, size, host);
  fflush(stdout);

  int wrong = check_small_allreduce(rank, size);
  if (rank == 0) printf("allreduce_check %s wrong %d\n", wrong ? "FAILED" : "OK", wrong);

  if (allreduce_mib > 0) {
    double t = time_allreduce(allreduce_mib);
    double bytes = (double)allreduce_mib * 1024 * 1024;
    double algbw = bytes / t, busbw = algbw * 2.0 * (size - 1) / size;
    if (rank == 0)
      printf(
          "allreduce_bytes %.0f seconds %.3f algbw_MBps %.2f busbw_MBps %.2f busbw_Mbitps %.1f\n",
          bytes, t, algbw / 1e6, busbw / 1e6, busbw * 8 / 1e6);
  }
  if (p2p_mib > 0 && size > 1) {
    double t = time_p2p(rank, size, p2p_mib);
    double bytes = (double)p2p_mib * 1024 * 1024;
    if (rank == 0)
      printf("p2p_bytes %.0f seconds %.3f MBps %.2f Mbitps %.1f\n", bytes, t, bytes / t / 1e6,
             bytes / t * 8 / 1e6);
  }
  if (sleep_s > 0) {
    printf("probe: rank %d sleeping %d s\n", rank, sleep_s);
    fflush(stdout);
    sleep((unsigned)sleep_s);
  }
  fflush(stdout);
  MPI_Finalize();
  return wrong ? 1 : 0;
}

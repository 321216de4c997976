// Main of hycc_gpu_coll_tests (run under mpirun with 1 or 2 ranks sharing the machine's GPU):
// exits 77 (ctest's SKIP_RETURN_CODE) on every rank when no CUDA device is present.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

#include "hycc/device.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, has_device = hycc::device_count() > 0 ? 1 : 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Allreduce(MPI_IN_PLACE, &has_device, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!has_device) {
    if (rank == 0) {
      std::printf("hycc_gpu_coll_tests: %s; skipped\n", hycc::device_unavailable_reason().c_str());
    }
    MPI_Finalize();
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return failed;
}

// Main of hycc_gpu_tests: exits 77 (ctest's SKIP_RETURN_CODE) when no CUDA device is present,
// so the CPU-only runs report the GPU tests as skipped instead of failed.
#include <gtest/gtest.h>

#include <cstdio>

#include "hycc/device.h"

int main(int argc, char** argv) {
  if (hycc::device_count() == 0) {
    std::printf("hycc_gpu_tests: %s; skipped\n", hycc::device_unavailable_reason().c_str());
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

// Helpers of the GPU tests of the device collectives: the codecs they run, device copies of
// host buffers, and inputs without NaN.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "common/synthetic_data.h"
#include "hycc/device.h"
#include "test_util.h"

namespace hycc::test {

inline const std::vector<std::string>& device_coll_codecs() {
  // zstd has no kernels: the host path of codec_device.h on CUDA. zfp:accuracy's kernels are
  // slow on the emulator (each position of the walk decodes a block); hycc_gpu_tests compares
  // them with the CPU codec there.
  static const std::vector<std::string> specs = {
    "none",
    "bf16",
    "fp16",
    "quant:bits=4",
    "quant:bits=8,round=stochastic",
    "eb:abs=1e-3",
    "eb:rel=1e-2",
    "mpc",
    "zfp:rate=8",
#if !defined(HYCC_CUDA_EMULATION)
    "zfp:accuracy=1e-3",
#endif
    "zstd"
  };
  return specs;
}
inline constexpr DType kDtypes[] = {DType::kF32, DType::kBF16, DType::kF16};

// The largest tensor of the device operation and collective tests: 2^18 + 3 values, 2^16 + 3 on
// the CUDA emulator (HYCC_CUDA_EMULATION builds, docs/gpu.md), which runs every thread of a
// kernel on the CPU, about a thousand times slower than a GPU.
#if defined(HYCC_CUDA_EMULATION)
inline constexpr bool kEmulatedDevice = true;
inline constexpr size_t kLargeTensor = (size_t{1} << 16) + 3;
#else
inline constexpr bool kEmulatedDevice = false;
inline constexpr size_t kLargeTensor = (size_t{1} << 18) + 3;
#endif

// A device copy of a host Buffer, and back.
struct OnDevice {
  DeviceBuffer memory;
  DType dtype;
  size_t count;
  explicit OnDevice(const Buffer& b)
      : memory(std::max<size_t>(b.count() * dtype_size(b.dtype()), 1)),
        dtype(b.dtype()),
        count(b.count()) {
    copy_to_device(memory.data(), b.view().data, b.count() * dtype_size(b.dtype()));
  }
  TensorView view() const { return {dtype, count, memory.data()}; }
  Buffer to_host() const {
    Buffer b(dtype, count);
    copy_to_host(b.data(), memory.data(), count * dtype_size(dtype));
    return b;
  }
};

inline std::vector<std::byte> host_bytes(const void* device, size_t n) {
  std::vector<std::byte> v(n);
  copy_to_host(v.data(), device, n);
  return v;
}

// Gaussian values: NaN would make the comparison of sums meaningless (x86 and CUDA propagate
// different NaN payloads through an addition); the codec tests cover special values.
inline Buffer input(DType d, size_t n, uint64_t seed) {
  return Buffer::from_floats(d, make_data(DataKind::kGaussian, n, seed));
}

}  // namespace hycc::test

// cub::DeviceScan of the CPU emulator: the scans hycc uses, run in order on the stream's worker
// (the sequential scan is the reference a GPU's tree order must match for associative ops).
// The first call (temp_storage == nullptr) asks for a temporary size, as CUB's does; the second
// checks that the caller passed at least that much.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>

#include "cuda_runtime.h"

namespace cub {

struct Sum {
  template <typename T>
  T operator()(const T& a, const T& b) const {
    return a + b;
  }
};

namespace emu_detail {

inline constexpr size_t kTempBytes = 1;

template <typename NumItems>
cudaError_t check_temp(void* temp, size_t& temp_bytes, NumItems n) {
  if (n < 0) return cudaErrorInvalidValue;
  if (temp == nullptr) {
    temp_bytes = kTempBytes;
    return cudaSuccess;
  }
  if (temp_bytes < kTempBytes) {
    ::cuda_emu::fail("cub::DeviceScan: temporary storage smaller than asked for");
    return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

template <typename In, typename Out, typename Op, typename T, typename NumItems>
cudaError_t scan(void* temp, size_t& temp_bytes, In in, Out out, Op op, T init, bool inclusive,
                 NumItems n, cudaStream_t stream) {
  if (const cudaError_t e = check_temp(temp, temp_bytes, n); e != cudaSuccess || temp == nullptr) {
    return e;
  }
  ::cuda_emu::enqueue(stream, [in, out, op, init, inclusive, n] {
    T acc = init;
    for (NumItems i = 0; i < n; ++i) {
      const T x = in[i];  // read before the write: in and out may alias
      if (inclusive) {
        acc = i == 0 ? x : op(acc, x);
        out[i] = acc;
      } else {
        out[i] = acc;
        acc = op(acc, x);
      }
    }
  });
  return cudaSuccess;
}

}  // namespace emu_detail

struct DeviceScan {
  template <typename In, typename Out, typename NumItems>
  static cudaError_t ExclusiveSum(void* temp, size_t& temp_bytes, In in, Out out, NumItems n,
                                  cudaStream_t stream = nullptr) {
    using T = typename std::iterator_traits<In>::value_type;
    return emu_detail::scan(temp, temp_bytes, in, out, Sum{}, T{}, false, n, stream);
  }
  template <typename In, typename Out, typename NumItems>
  static cudaError_t InclusiveSum(void* temp, size_t& temp_bytes, In in, Out out, NumItems n,
                                  cudaStream_t stream = nullptr) {
    using T = typename std::iterator_traits<In>::value_type;
    return emu_detail::scan(temp, temp_bytes, in, out, Sum{}, T{}, true, n, stream);
  }
  template <typename In, typename Out, typename Op, typename T, typename NumItems>
  static cudaError_t ExclusiveScan(void* temp, size_t& temp_bytes, In in, Out out, Op op, T init,
                                   NumItems n, cudaStream_t stream = nullptr) {
    return emu_detail::scan(temp, temp_bytes, in, out, op, init, false, n, stream);
  }
  template <typename In, typename Out, typename Op, typename NumItems>
  static cudaError_t InclusiveScan(void* temp, size_t& temp_bytes, In in, Out out, Op op,
                                   NumItems n, cudaStream_t stream = nullptr) {
    using T = typename std::iterator_traits<In>::value_type;
    return emu_detail::scan(temp, temp_bytes, in, out, op, T{}, true, n, stream);
  }
};

}  // namespace cub

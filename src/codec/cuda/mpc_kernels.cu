// "mpc" on the device: the stages of codec/block/mpc_stages.h, one thread per group of W words
// (the CPU replay in tests/unit/mpc_stages_test.cc loops over the same functions). Encoding:
// every group into a fixed-capacity slot, exclusive scan of the sizes, compaction. Decoding: find
// every group's offset (the parallel walk of parallel_walk.cu), decode every group's deltas, and
// sum them along the stride with one inclusive scan (after gathering the residue classes into runs
// when dim > 1).
#include <cub/device/device_scan.cuh>

#include "codec/block/mpc_stages.h"
#include "codec/cuda/device_util.cuh"
#include "codec/cuda/kernels.h"
#include "codec/cuda/parallel_walk.h"

namespace hycc::codec::cuda {
namespace {

using mpc::GroupError;

template <typename Word>
__global__ void encode_kernel(const Word* w, uint64_t count, uint32_t dim, uint64_t groups,
                              uint8_t* slots, uint64_t* sizes) {
  const uint64_t g = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (g < groups) mpc::encode_stage(w, count, dim, g, slots, sizes);
}

template <typename Word>
__global__ void compact_kernel(const uint8_t* slots, const uint64_t* offsets, const uint64_t* sizes,
                               uint64_t groups, uint8_t* out) {
  const uint64_t g = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (g < groups) mpc::compact_stage<Word>(slots, offsets, sizes, g, out);
}

// errors: the smallest (group << 8 | error code) of a malformed group, ~0 if none.
template <typename Word>
__global__ void decode_kernel(const uint8_t* payload, uint64_t bytes, uint64_t count,
                              const uint64_t* offsets, uint64_t groups, uint32_t* deltas,
                              unsigned long long* errors) {
  const uint64_t g = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (g >= groups) return;
  const GroupError e = mpc::decode_stage<Word>(payload, bytes, count, offsets, g, deltas);
  if (e != GroupError::kNone) {
    atomicMin(errors, static_cast<unsigned long long>(g << 8 | static_cast<uint64_t>(e)));
  }
}

__global__ void gather_kernel(const uint32_t* deltas, uint64_t count, uint32_t dim,
                              uint32_t* runs) {
  const uint64_t i = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (i < count) mpc::gather_stage(deltas, count, dim, i, runs);
}

template <typename Word>
__global__ void scatter_kernel(const uint32_t* sums, uint64_t count, uint32_t dim, Word* out) {
  const uint64_t i = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (i < count) mpc::scatter_stage(sums, count, dim, i, out);
}

size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

[[noreturn]] void corrupt(const std::string& what) {
  throw CorruptStream(tagged("codec:mpc", "device decode: ", what));
}

template <typename Word>
size_t encode_words(const Word* w, uint64_t count, uint32_t dim, uint8_t* out,
                    cudaStream_t stream) {
  const uint64_t groups = mpc::groups_of(count, mpc::kBits<Word>);
  if (groups == 0) return 0;
  const auto n = static_cast<int64_t>(groups);
  size_t cub_bytes = 0;
  HYCC_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, cub_bytes, static_cast<uint64_t*>(nullptr),
                                                static_cast<uint64_t*>(nullptr), n));
  const size_t slot_area = aligned(groups * mpc::slot_bytes<Word>());
  auto* base = static_cast<uint8_t*>(
      scratch(slot_area + 2 * aligned(groups * 8) + aligned(cub_bytes), stream));
  uint8_t* slots = base;
  auto* sizes = reinterpret_cast<uint64_t*>(base + slot_area);
  auto* offsets = reinterpret_cast<uint64_t*>(base + slot_area + aligned(groups * 8));
  void* cub_temp = base + slot_area + 2 * aligned(groups * 8);

  const unsigned grid = grid_for(groups, kThreads);
  encode_kernel<Word><<<grid, kThreads, 0, stream>>>(w, count, dim, groups, slots, sizes);
  HYCC_CUDA_CHECK(cudaGetLastError());
  HYCC_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(cub_temp, cub_bytes, sizes, offsets, n, stream));
  compact_kernel<Word><<<grid, kThreads, 0, stream>>>(slots, offsets, sizes, groups, out);
  HYCC_CUDA_CHECK(cudaGetLastError());
  uint64_t last[2];
  copy_to_host(&last[0], offsets + groups - 1, 8, stream);
  copy_to_host(&last[1], sizes + groups - 1, 8, stream);
  return last[0] + last[1];
}

template <typename Word>
void decode_words(const uint8_t* payload, size_t bytes, uint64_t count, uint32_t dim, Word* out,
                  cudaStream_t stream) {
  if (bytes % sizeof(Word) != 0) {
    corrupt(detail::concat("payload of ", bytes, " bytes is not a whole number of ", sizeof(Word),
                           "-byte words"));
  }
  const uint64_t groups = mpc::groups_of(count, mpc::kBits<Word>);
  if (groups == 0) {
    if (bytes != 0) corrupt(detail::concat("payload of ", bytes, " bytes for 0 elements"));
    return;
  }
  const auto n = static_cast<int64_t>(count);
  size_t cub_bytes = 0;
  HYCC_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, cub_bytes, static_cast<uint32_t*>(nullptr),
                                                static_cast<uint32_t*>(nullptr), n));
  const size_t values_area = aligned(count * 4);
  const mpc::MpcChain<Word> chain{payload, bytes, groups};
  const size_t walk_bytes = parallel_walk_scratch_bytes(chain);
  auto* base = static_cast<uint8_t*>(scratch(
      aligned(groups * 8) + 3 * values_area + 512 + walk_bytes + aligned(cub_bytes), stream));
  auto* offsets = reinterpret_cast<uint64_t*>(base);
  base += aligned(groups * 8);
  auto* deltas = reinterpret_cast<uint32_t*>(base);
  auto* runs = reinterpret_cast<uint32_t*>(base + values_area);
  auto* sums = reinterpret_cast<uint32_t*>(base + 2 * values_area);
  auto* result = reinterpret_cast<mpc::WalkResult*>(base + 3 * values_area);
  auto* errors = reinterpret_cast<unsigned long long*>(base + 3 * values_area + 256);
  void* walk_temp = base + 3 * values_area + 512;
  void* cub_temp = base + 3 * values_area + 512 + walk_bytes;

  parallel_walk(chain, walk_temp, offsets, result, stream);
  mpc::WalkResult walk;
  copy_to_host(&walk, result, sizeof(walk), stream);
  if (walk.error != GroupError::kNone) {
    corrupt(detail::concat(mpc::describe(walk.error), " (group ", walk.group, ")"));
  }
  if (walk.end != bytes) {
    corrupt(detail::concat("payload of ", bytes, " bytes has ", bytes - walk.end,
                           " bytes after the last group"));
  }
  HYCC_CUDA_CHECK(cudaMemsetAsync(errors, 0xff, 8, stream));
  decode_kernel<Word><<<grid_for(groups, kThreads), kThreads, 0, stream>>>(
      payload, bytes, count, offsets, groups, deltas, errors);
  HYCC_CUDA_CHECK(cudaGetLastError());
  unsigned long long error = 0;
  copy_to_host(&error, errors, 8, stream);
  if (error != ~0ull) {
    corrupt(detail::concat(mpc::describe(static_cast<GroupError>(error & 0xff)), " (group ",
                           error >> 8, ")"));
  }
  const unsigned grid = grid_for(count, kThreads);
  const uint32_t* scanned = deltas;
  if (dim > 1) {
    gather_kernel<<<grid, kThreads, 0, stream>>>(deltas, count, dim, runs);
    HYCC_CUDA_CHECK(cudaGetLastError());
    scanned = runs;
  }
  HYCC_CUDA_CHECK(cub::DeviceScan::InclusiveSum(cub_temp, cub_bytes, scanned, sums, n, stream));
  scatter_kernel<Word><<<grid, kThreads, 0, stream>>>(sums, count, dim, out);
  HYCC_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

size_t mpc_encode(int dim, ConstTensorView in, uint8_t* out, cudaStream_t stream) {
  const auto d = static_cast<uint32_t>(dim);
  if (in.dtype == DType::kF32) {
    return encode_words(static_cast<const uint32_t*>(in.data), in.count, d, out, stream);
  }
  return encode_words(static_cast<const uint16_t*>(in.data), in.count, d, out, stream);
}

void mpc_decode(int dim, const uint8_t* payload, size_t payload_bytes, TensorView out,
                cudaStream_t stream) {
  const auto d = static_cast<uint32_t>(dim);
  if (out.dtype == DType::kF32) {
    decode_words(payload, payload_bytes, out.count, d, static_cast<uint32_t*>(out.data), stream);
  } else {
    decode_words(payload, payload_bytes, out.count, d, static_cast<uint16_t*>(out.data), stream);
  }
}

}  // namespace hycc::codec::cuda

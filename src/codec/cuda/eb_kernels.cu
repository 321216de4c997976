// "eb" on the device: the stages of codec/block/eb_stages.h, one thread per block of 64 values
// (the CPU replay in tests/unit/eb_stages_test.cc loops over the same functions). Encoding:
// summarize, resolve the carries (one thread per run between anchors), exclusive scan of the
// sizes, write every block at its offset. Decoding: find every block's offset (the parallel walk
// of parallel_walk.cu), carry effects, exclusive scan of the effects, decode every block. rel
// bounds take the finite range from a reduction kernel first.
#include <cub/device/device_scan.cuh>

#include "codec/block/eb_stages.h"
#include "codec/block/quant_block.h"
#include "codec/cuda/device_util.cuh"
#include "codec/cuda/kernels.h"
#include "codec/cuda/parallel_walk.h"
#include "codec/eb_reference.h"

namespace hycc::codec::cuda {
namespace {

using eb::BlockSummary;
using eb::CarryEffect;

__global__ void range_kernel(const void* in, DType dtype, uint64_t count, int* keys,
                             unsigned long long* first_finite) {
  const uint64_t i = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (i >= count) return;
  const float x = load_float(in, dtype, i);
  if (!quant::is_finite(x)) return;
  const int key = quant::order_key(x);
  atomicMin(&keys[0], key);
  atomicMax(&keys[1], key);
  atomicMin(first_finite, static_cast<unsigned long long>(i));
}

__global__ void summarize_kernel(eb::EncodeGeometry g, BlockSummary* summaries) {
  const uint64_t b = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (b < g.blocks) eb::summarize_stage(g, b, summaries);
}

__global__ void resolve_kernel(eb::EncodeGeometry g, const BlockSummary* summaries,
                               int32_t* carries, uint64_t* sizes) {
  const uint64_t b = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (b < g.blocks) eb::resolve_stage(g, b, summaries, carries, sizes);
}

__global__ void write_kernel(eb::EncodeGeometry g, const int32_t* carries, const uint64_t* offsets,
                             uint8_t* payload) {
  const uint64_t b = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (b < g.blocks) eb::write_stage(g, b, carries, offsets, payload);
}

__global__ void effect_kernel(eb::DecodeGeometry g, const uint64_t* offsets, CarryEffect* effects) {
  const uint64_t b = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (b < g.nblocks) eb::effect_stage(g, b, offsets, effects);
}

__global__ void decode_kernel(eb::DecodeGeometry g, const uint64_t* offsets,
                              const CarryEffect* carries, void* out) {
  const uint64_t b = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (b < g.nblocks) eb::decode_stage(g, b, offsets, carries, out);
}

struct ThenOp {
  __device__ CarryEffect operator()(const CarryEffect& earlier, const CarryEffect& later) const {
    return CarryEffect::then(earlier, later);
  }
};

// 256-byte aligned pieces carved from the per-thread scratch buffer.
class Carver {
 public:
  Carver(size_t total, cudaStream_t stream)
      : base_(static_cast<uint8_t*>(scratch(total, stream))) {}
  static size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }
  template <typename T>
  T* take(size_t count) {
    T* p = reinterpret_cast<T*>(base_ + at_);
    at_ += aligned(count * sizeof(T));
    return p;
  }

 private:
  uint8_t* base_;
  size_t at_ = 0;
};

[[noreturn]] void corrupt(const std::string& what) {
  throw CorruptStream(tagged("codec:eb", "device decode: ", what));
}

}  // namespace

EbRange eb_finite_range(ConstTensorView in, cudaStream_t stream) {
  EbRange r;
  if (in.count == 0) return r;
  Carver c(256 * 2, stream);
  auto* keys = c.take<int>(2);
  auto* first = c.take<unsigned long long>(1);
  const int init_keys[2] = {INT32_MAX, INT32_MIN};
  const unsigned long long init_first = ~0ull;
  HYCC_CUDA_CHECK(cudaMemcpyAsync(keys, init_keys, 8, cudaMemcpyHostToDevice, stream));
  HYCC_CUDA_CHECK(cudaMemcpyAsync(first, &init_first, 8, cudaMemcpyHostToDevice, stream));
  range_kernel<<<grid_for(in.count, kThreads), kThreads, 0, stream>>>(in.data, in.dtype, in.count,
                                                                      keys, first);
  HYCC_CUDA_CHECK(cudaGetLastError());
  int host_keys[2];
  unsigned long long host_first;
  copy_to_host(host_keys, keys, 8, stream);
  copy_to_host(&host_first, first, 8, stream);
  if (host_first == ~0ull) return r;
  r.any = true;
  r.lo = quant::from_order_key(host_keys[0]);
  r.hi = quant::from_order_key(host_keys[1]);
  const size_t elem = dtype_size(in.dtype);
  uint32_t bits = 0;
  copy_to_host(&bits, static_cast<const uint8_t*>(in.data) + host_first * elem, elem, stream);
  r.first = in.dtype == DType::kF32
                ? bits_to_f32(bits)
                : (in.dtype == DType::kBF16 ? bf16_to_f32(static_cast<uint16_t>(bits))
                                            : f16_to_f32(static_cast<uint16_t>(bits)));
  return r;
}

size_t eb_encode(const eb::Quantizer& qz, ConstTensorView in, uint8_t* out, cudaStream_t stream) {
  if (in.count == 0) return 0;
  const auto g = eb::EncodeGeometry::of(qz, in.data, in.dtype, in.count);
  const auto n = static_cast<int64_t>(g.blocks);
  size_t cub_bytes = 0;
  HYCC_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, cub_bytes, static_cast<uint64_t*>(nullptr),
                                                static_cast<uint64_t*>(nullptr), n));
  Carver c(Carver::aligned(g.blocks * sizeof(BlockSummary)) + Carver::aligned(g.blocks * 4) +
               2 * Carver::aligned(g.blocks * 8) + Carver::aligned(cub_bytes),
           stream);
  auto* summaries = c.take<BlockSummary>(g.blocks);
  auto* carries = c.take<int32_t>(g.blocks);
  auto* sizes = c.take<uint64_t>(g.blocks);
  auto* offsets = c.take<uint64_t>(g.blocks);
  void* cub_temp = c.take<uint8_t>(cub_bytes);

  uint8_t host_preamble[eb::kPreambleBytes];
  std::memcpy(host_preamble, &qz.bound, 8);
  std::memcpy(host_preamble + 8, &qz.step, 8);
  const unsigned grid = grid_for(g.blocks, kThreads);
  summarize_kernel<<<grid, kThreads, 0, stream>>>(g, summaries);
  HYCC_CUDA_CHECK(cudaGetLastError());
  resolve_kernel<<<grid, kThreads, 0, stream>>>(g, summaries, carries, sizes);
  HYCC_CUDA_CHECK(cudaGetLastError());
  HYCC_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(cub_temp, cub_bytes, sizes, offsets, n, stream));
  write_kernel<<<grid, kThreads, 0, stream>>>(g, carries, offsets, out);
  HYCC_CUDA_CHECK(cudaGetLastError());
  HYCC_CUDA_CHECK(
      cudaMemcpyAsync(out, host_preamble, eb::kPreambleBytes, cudaMemcpyHostToDevice, stream));
  uint64_t last[2];
  copy_to_host(&last[0], offsets + g.blocks - 1, 8, stream);
  copy_to_host(&last[1], sizes + g.blocks - 1, 8, stream);
  return eb::kPreambleBytes + last[0] + last[1];
}

void eb_decode(const uint8_t* payload, size_t payload_bytes, TensorView out, cudaStream_t stream) {
  if (out.count == 0) {
    if (payload_bytes != 0) corrupt("non-empty payload for 0 elements");
    return;
  }
  if (payload_bytes < eb::kPreambleBytes) {
    corrupt(detail::concat("payload of ", payload_bytes, " bytes ends inside the preamble"));
  }
  double preamble[2];
  copy_to_host(preamble, payload, eb::kPreambleBytes, stream);
  if (const char* error = eb::preamble_error(preamble[0], preamble[1])) corrupt(error);

  eb::DecodeGeometry g;
  g.blocks = payload + eb::kPreambleBytes;
  g.bytes = payload_bytes - eb::kPreambleBytes;
  g.count = out.count;
  g.nblocks = (out.count + eb::kBlockValues - 1) / eb::kBlockValues;
  g.dtype = out.dtype;
  g.step = preamble[1];
  const auto n = static_cast<int64_t>(g.nblocks);
  size_t cub_bytes = 0;
  HYCC_CUDA_CHECK(cub::DeviceScan::ExclusiveScan(
      nullptr, cub_bytes, static_cast<CarryEffect*>(nullptr), static_cast<CarryEffect*>(nullptr),
      ThenOp{}, CarryEffect{}, n));
  const eb::EbChain chain{g};
  const size_t walk_bytes = parallel_walk_scratch_bytes(chain);
  Carver c(Carver::aligned(g.nblocks * 8) + 2 * Carver::aligned(g.nblocks * sizeof(CarryEffect)) +
               Carver::aligned(sizeof(eb::WalkResult)) + Carver::aligned(cub_bytes) + walk_bytes,
           stream);
  auto* offsets = c.take<uint64_t>(g.nblocks);
  auto* effects = c.take<CarryEffect>(g.nblocks);
  auto* carries = c.take<CarryEffect>(g.nblocks);
  auto* result = c.take<eb::WalkResult>(1);
  void* cub_temp = c.take<uint8_t>(cub_bytes);
  void* walk_temp = c.take<uint8_t>(walk_bytes);

  parallel_walk(chain, walk_temp, offsets, result, stream);
  eb::WalkResult walk;
  copy_to_host(&walk, result, sizeof(walk), stream);
  if (walk.error != eb::BlockError::kNone) {
    corrupt(detail::concat(eb::describe(walk.error), " (block ", walk.block, ")"));
  }
  if (walk.end != g.bytes) {
    corrupt(detail::concat(g.bytes - walk.end, " trailing bytes after the last block"));
  }
  const unsigned grid = grid_for(g.nblocks, kThreads);
  effect_kernel<<<grid, kThreads, 0, stream>>>(g, offsets, effects);
  HYCC_CUDA_CHECK(cudaGetLastError());
  HYCC_CUDA_CHECK(cub::DeviceScan::ExclusiveScan(cub_temp, cub_bytes, effects, carries, ThenOp{},
                                                 CarryEffect{}, n, stream));
  decode_kernel<<<grid, kThreads, 0, stream>>>(g, offsets, carries, out.data);
  HYCC_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hycc::codec::cuda

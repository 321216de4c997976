// "exphuff" on the device (format at the top of src/codec/codec_exphuff.cc). The kernels do the
// per-element work, the host the per-block tables (codec/exphuff_plan.h, with the CPU codec's
// Huffman construction, so both write the same bits).
//
// Encoding: (1) one thread per group of 8 elements splits them into exponents (scratch) and rests
// (the payload's rest area) and counts the exponents per block and stream; (2) the host plans
// every block from the counts: mode, code, and where each stream goes; (3) one thread per
// (block, stream) writes its stream, or its quarter of a raw block's exponents.
// Decoding: (1) the host checks the directory; (2) one thread per coded block gathers its head
// (code lengths and stream sizes), which the host checks and turns into codes; (3) one CUDA block
// per codec block builds the decoding table in shared memory and decodes the four streams, one
// thread each; (4) one thread per group of 8 elements joins exponents and rests.
#include "codec/cuda/device_util.cuh"
#include "codec/cuda/kernels.h"
#include "codec/exphuff_plan.h"
#include "common/host_syncs.h"

namespace hycc::codec::cuda {
namespace {

using exphuff::BlockMode;
using exphuff::Fields;
using exphuff::kGroup;
using exphuff::kHeadStride;
using exphuff::kMaxCodeBits;
using exphuff::kStreams;
using exphuff::StreamSpan;

constexpr uint32_t kBadRawExponent = 1;
constexpr uint32_t kBadCode = 2;

__device__ inline uint64_t block_elements(uint64_t count, uint64_t block, uint64_t b) {
  return count - b * block < block ? count - b * block : block;
}

template <typename Word>
__global__ void split_kernel(const Word* in, uint64_t count, uint64_t block, Fields f,
                             uint8_t* exponents, uint8_t* rest_area, uint32_t* histograms) {
  const uint64_t g = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (g * kGroup >= count) return;
  exphuff::split_group(in, count, g, f, exponents, rest_area);
  const uint64_t first = g * kGroup;
  for (uint64_t i = first; i < first + kGroup && i < count; ++i) {
    const uint64_t b = i / block;
    const uint64_t k = (i - b * block) / exphuff::stream_elements(block_elements(count, block, b));
    atomicAdd(&histograms[(b * kStreams + k) * 256 + exponents[i]], 1u);
  }
}

// One thread per (block, stream); the directory is already in `out`.
__global__ void write_kernel(uint64_t count, uint64_t block, Fields f, const uint8_t* exponents,
                             const uint8_t* heads, const uint32_t* codes, const StreamSpan* streams,
                             uint8_t* out) {
  const uint64_t t = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  const uint64_t blocks = (count + block - 1) / block;
  if (t >= blocks * kStreams) return;
  const uint64_t b = t / kStreams;
  const int k = static_cast<int>(t % kStreams);
  const uint64_t n = block_elements(count, block, b);
  const uint64_t first = exphuff::stream_first(n, k), m = exphuff::stream_count(n, k);
  const uint8_t* e = exponents + b * block + first;
  const auto mode = static_cast<BlockMode>(out[b * exphuff::kDirectoryEntryBytes + 4]);
  if (mode == BlockMode::kRaw) {
    uint8_t* dst = out + streams[b * kStreams].at + first;
    for (uint64_t i = 0; i < m; ++i) dst[i] = e[i];
  } else if (mode == BlockMode::kHuffman) {
    if (k == 0) {
      const uint64_t head_bytes = f.table_bytes() + exphuff::kStreamSizesBytes;
      uint8_t* dst = out + streams[b * kStreams].at - head_bytes;
      for (uint64_t i = 0; i < head_bytes; ++i) dst[i] = heads[b * kHeadStride + i];
    }
    exphuff::put_stream(e, m, codes + b * 256, out + streams[t].at);
  }
}

// One thread per block: a coded block's head (or as much of it as its section holds).
__global__ void gather_heads_kernel(const uint8_t* payload, uint64_t blocks, Fields f,
                                    const uint64_t* section_at, uint8_t* heads) {
  const uint64_t b = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (b >= blocks) return;
  const uint8_t* entry = payload + b * exphuff::kDirectoryEntryBytes;
  if (static_cast<BlockMode>(entry[4]) != BlockMode::kHuffman) return;
  const uint64_t bytes =
      entry[0] | uint64_t{entry[1]} << 8 | uint64_t{entry[2]} << 16 | uint64_t{entry[3]} << 24;
  const uint64_t head_bytes = f.table_bytes() + exphuff::kStreamSizesBytes;
  for (uint64_t i = 0; i < head_bytes && i < bytes; ++i) {
    heads[b * kHeadStride + i] = payload[section_at[b] + i];
  }
}

// One CUDA block per codec block.
__global__ void decode_kernel(const uint8_t* payload, uint64_t count, uint64_t block, Fields f,
                              const uint32_t* codes, const StreamSpan* streams, uint8_t* exponents,
                              uint32_t* error) {
  __shared__ uint16_t table[1u << kMaxCodeBits];
  const uint64_t b = blockIdx.x;
  const uint8_t* entry = payload + b * exphuff::kDirectoryEntryBytes;
  const auto mode = static_cast<BlockMode>(entry[4]);
  const uint64_t n = block_elements(count, block, b);
  uint8_t* e = exponents + b * block;
  if (mode == BlockMode::kConstant) {
    for (uint64_t i = threadIdx.x; i < n; i += kThreads) e[i] = entry[5];
    return;
  }
  if (mode == BlockMode::kRaw) {
    const uint8_t* src = payload + streams[b * kStreams].at;
    bool bad = false;
    for (uint64_t i = threadIdx.x; i < n; i += kThreads) {
      bad = bad || src[i] >= f.symbols();
      e[i] = src[i];
    }
    if (bad) atomicOr(error, kBadRawExponent);
    return;
  }
  for (uint32_t w = threadIdx.x; w < (1u << kMaxCodeBits); w += kThreads) table[w] = 0;
  __syncthreads();
  for (uint32_t s = threadIdx.x; s < static_cast<uint32_t>(f.symbols()); s += kThreads) {
    const uint32_t c = codes[b * 256 + s];
    if ((c >> 16) != 0) exphuff::put_table_entries(table, s, c & 0xffffu, c >> 16);
  }
  __syncthreads();
  if (threadIdx.x >= kStreams) return;
  const int k = static_cast<int>(threadIdx.x);
  const StreamSpan span = streams[b * kStreams + k];
  if (!exphuff::get_stream(payload + span.at, span.bytes, exphuff::stream_count(n, k), table,
                           e + exphuff::stream_first(n, k))) {
    atomicOr(error, kBadCode);
  }
}

template <typename Word>
__global__ void join_kernel(const uint8_t* rest_area, uint64_t rest_bytes, const uint8_t* exponents,
                            uint64_t count, Fields f, Word* out) {
  const uint64_t g = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (g * kGroup < count) exphuff::join_group(rest_area, rest_bytes, exponents, count, g, f, out);
}

size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

template <typename T>
void upload(T* device, const std::vector<T>& host, cudaStream_t stream) {
  if (host.empty()) return;
  HYCC_CUDA_CHECK(cudaMemcpyAsync(device, host.data(), host.size() * sizeof(T),
                                  cudaMemcpyHostToDevice, stream));
}

[[noreturn]] void corrupt(const std::string& what) {
  throw CorruptStream(tagged("codec:exphuff", "device decode: ", what));
}

}  // namespace

size_t exphuff_encode(size_t block, ConstTensorView in, uint8_t* out, cudaStream_t stream) {
  const Fields f = exphuff::fields_of(in.dtype);
  const exphuff::PayloadLayout layout(in.count, block, f);
  if (layout.blocks == 0) return 0;
  // Scratch: exponents, histograms, codes, stream spans, heads.
  const size_t hist_count = layout.blocks * kStreams * 256;
  const size_t exps_bytes = aligned(in.count), hist_bytes = aligned(hist_count * 4);
  const size_t codes_bytes = aligned(layout.blocks * 256 * 4);
  const size_t spans_bytes = aligned(layout.blocks * kStreams * sizeof(StreamSpan));
  auto* base = static_cast<uint8_t*>(scratch(
      exps_bytes + hist_bytes + codes_bytes + spans_bytes + layout.blocks * kHeadStride, stream));
  uint8_t* exponents = base;
  auto* histograms = reinterpret_cast<uint32_t*>(base + exps_bytes);
  auto* codes = reinterpret_cast<uint32_t*>(base + exps_bytes + hist_bytes);
  auto* spans = reinterpret_cast<StreamSpan*>(base + exps_bytes + hist_bytes + codes_bytes);
  uint8_t* heads = base + exps_bytes + hist_bytes + codes_bytes + spans_bytes;

  HYCC_CUDA_CHECK(cudaMemsetAsync(histograms, 0, hist_count * 4, stream));
  const uint64_t groups = (in.count + kGroup - 1) / kGroup;
  uint8_t* rest_area = out + layout.rest_at;
  if (in.dtype == DType::kF32) {
    split_kernel<uint32_t><<<grid_for(groups, kThreads), kThreads, 0, stream>>>(
        static_cast<const uint32_t*>(in.data), in.count, block, f, exponents, rest_area,
        histograms);
  } else {
    split_kernel<uint16_t><<<grid_for(groups, kThreads), kThreads, 0, stream>>>(
        static_cast<const uint16_t*>(in.data), in.count, block, f, exponents, rest_area,
        histograms);
  }
  HYCC_CUDA_CHECK(cudaGetLastError());
  std::vector<uint32_t> host_histograms(hist_count);
  copy_to_host(host_histograms.data(), histograms, hist_count * 4, stream);

  const exphuff::DevicePlan plan =
      exphuff::plan_encoding(host_histograms.data(), in.count, block, f);
  upload(out, plan.directory, stream);
  upload(codes, plan.codes, stream);
  upload(spans, plan.streams, stream);
  upload(heads, plan.heads, stream);
  write_kernel<<<grid_for(layout.blocks * kStreams, kThreads), kThreads, 0, stream>>>(
      in.count, block, f, exponents, heads, codes, spans, out);
  HYCC_CUDA_CHECK(cudaGetLastError());
  count_host_sync();
  HYCC_CUDA_CHECK(cudaStreamSynchronize(stream));  // the plan's host vectors feed the uploads
  return plan.payload_bytes;
}

void exphuff_decode(size_t block, const uint8_t* payload, size_t payload_bytes, TensorView out,
                    cudaStream_t stream) {
  const Fields f = exphuff::fields_of(out.dtype);
  const exphuff::PayloadLayout layout(out.count, block, f);
  std::vector<uint8_t> directory(layout.rest_at);
  if (payload_bytes >= layout.exponents_at) {
    copy_to_host(directory.data(), payload, directory.size(), stream);
  }
  std::vector<uint64_t> section_at =
      exphuff::check_directory(directory.data(), payload_bytes, out.count, block, f);
  if (layout.blocks == 0) return;

  // Scratch: exponents, section offsets, heads, codes, stream spans, the error word.
  const size_t exps_bytes = aligned(out.count), at_bytes = aligned(layout.blocks * 8);
  const size_t heads_bytes = aligned(layout.blocks * kHeadStride);
  const size_t codes_bytes = aligned(layout.blocks * 256 * 4);
  const size_t spans_bytes = aligned(layout.blocks * kStreams * sizeof(StreamSpan));
  auto* base = static_cast<uint8_t*>(
      scratch(exps_bytes + at_bytes + heads_bytes + codes_bytes + spans_bytes + 256, stream));
  uint8_t* exponents = base;
  auto* device_section_at = reinterpret_cast<uint64_t*>(base + exps_bytes);
  uint8_t* heads = base + exps_bytes + at_bytes;
  auto* codes = reinterpret_cast<uint32_t*>(base + exps_bytes + at_bytes + heads_bytes);
  auto* spans =
      reinterpret_cast<StreamSpan*>(base + exps_bytes + at_bytes + heads_bytes + codes_bytes);
  auto* error = reinterpret_cast<uint32_t*>(base + exps_bytes + at_bytes + heads_bytes +
                                            codes_bytes + spans_bytes);

  upload(device_section_at, section_at, stream);
  HYCC_CUDA_CHECK(cudaMemsetAsync(heads, 0, layout.blocks * kHeadStride, stream));
  gather_heads_kernel<<<grid_for(layout.blocks, kThreads), kThreads, 0, stream>>>(
      payload, layout.blocks, f, device_section_at, heads);
  HYCC_CUDA_CHECK(cudaGetLastError());
  std::vector<uint8_t> host_heads(layout.blocks * kHeadStride);
  copy_to_host(host_heads.data(), heads, host_heads.size(), stream);
  const exphuff::DevicePlan plan = exphuff::plan_decoding(directory.data(), std::move(section_at),
                                                          host_heads.data(), payload_bytes, f);

  upload(codes, plan.codes, stream);
  upload(spans, plan.streams, stream);
  HYCC_CUDA_CHECK(cudaMemsetAsync(error, 0, 4, stream));
  const auto grid = static_cast<unsigned>(layout.blocks);  // one CUDA block per codec block
  decode_kernel<<<grid, kThreads, 0, stream>>>(payload, out.count, block, f, codes, spans,
                                               exponents, error);
  HYCC_CUDA_CHECK(cudaGetLastError());
  uint32_t flags = 0;
  copy_to_host(&flags, error, 4, stream);
  if ((flags & kBadRawExponent) != 0) corrupt("a raw exponent outside the format's range");
  if ((flags & kBadCode) != 0) {
    corrupt("a bit pattern that is no code of its block's table, or a stream of the wrong size");
  }
  const uint64_t groups = (out.count + kGroup - 1) / kGroup;
  const uint8_t* rest_area = payload + layout.rest_at;
  const uint64_t rest_bytes = layout.exponents_at - layout.rest_at;
  if (out.dtype == DType::kF32) {
    join_kernel<uint32_t><<<grid_for(groups, kThreads), kThreads, 0, stream>>>(
        rest_area, rest_bytes, exponents, out.count, f, static_cast<uint32_t*>(out.data));
  } else {
    join_kernel<uint16_t><<<grid_for(groups, kThreads), kThreads, 0, stream>>>(
        rest_area, rest_bytes, exponents, out.count, f, static_cast<uint16_t*>(out.data));
  }
  HYCC_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hycc::codec::cuda

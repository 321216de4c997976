// "bf16"/"fp16" on the device: one thread per element, the conversions of codec/float_convert.h.
#include "codec/cuda/device_util.cuh"
#include "codec/cuda/kernels.h"

namespace hycc::codec::cuda {
namespace {

// f32 -> target: f32_bits_to_bf16 / f32_bits_to_f16 of the bits, as codec_cast.cc; other input
// dtypes go through float (convert()).
__global__ void cast_encode_kernel(DType target, const void* in, DType in_dtype, uint64_t count,
                                   uint16_t* out) {
  const uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const uint32_t bits = f32_to_bits(load_float(in, in_dtype, i));
  out[i] = target == DType::kBF16 ? f32_bits_to_bf16(bits) : f32_bits_to_f16(bits);
}

__global__ void cast_decode_kernel(DType target, const uint16_t* payload, uint64_t count, void* out,
                                   DType out_dtype) {
  const uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= count) return;
  if (out_dtype == DType::kF32) {
    const uint16_t h = payload[i];
    static_cast<uint32_t*>(out)[i] =
        target == DType::kBF16 ? bf16_to_f32_bits(h) : f16_to_f32_bits(h);
  } else {
    store_float(load_float(payload, target, i), out, out_dtype, i);
  }
}

// decode -> add -> encode of one element (cast_hop).
__global__ void cast_hop_kernel(DType target, const uint16_t* payload, DType wire, const void* own,
                                DType own_dtype, uint64_t count, uint16_t* out) {
  const uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= count) return;
  float decoded = load_float(payload, target, i);
  if (wire != DType::kF32 && wire != target) {  // decoded into the wire dtype first
    const uint16_t narrow = wire == DType::kBF16 ? f32_to_bf16(decoded) : f32_to_f16(decoded);
    decoded = wire == DType::kBF16 ? bf16_to_f32(narrow) : f16_to_f32(narrow);
  }
  const uint32_t bits = f32_to_bits(decoded + load_float(own, own_dtype, i));
  out[i] = target == DType::kBF16 ? f32_bits_to_bf16(bits) : f32_bits_to_f16(bits);
}

}  // namespace

void cast_hop(DType target, const void* payload, DType wire, ConstTensorView own, void* out,
              cudaStream_t stream) {
  if (own.count == 0) return;
  cast_hop_kernel<<<grid_for(own.count, kThreads), kThreads, 0, stream>>>(
      target, static_cast<const uint16_t*>(payload), wire, own.data, own.dtype, own.count,
      static_cast<uint16_t*>(out));
  HYCC_CUDA_CHECK(cudaGetLastError());
}

void cast_encode(DType target, ConstTensorView in, void* out, cudaStream_t stream) {
  if (in.count == 0) return;
  if (in.dtype == target) {  // convert() copies bit for bit
    HYCC_CUDA_CHECK(cudaMemcpyAsync(out, in.data, in.bytes(), cudaMemcpyDeviceToDevice, stream));
    return;
  }
  cast_encode_kernel<<<grid_for(in.count, kThreads), kThreads, 0, stream>>>(
      target, in.data, in.dtype, in.count, static_cast<uint16_t*>(out));
  HYCC_CUDA_CHECK(cudaGetLastError());
}

void cast_decode(DType target, const void* payload, TensorView out, cudaStream_t stream) {
  if (out.count == 0) return;
  if (out.dtype == target) {
    HYCC_CUDA_CHECK(
        cudaMemcpyAsync(out.data, payload, out.bytes(), cudaMemcpyDeviceToDevice, stream));
    return;
  }
  cast_decode_kernel<<<grid_for(out.count, kThreads), kThreads, 0, stream>>>(
      target, static_cast<const uint16_t*>(payload), out.count, out.data, out.dtype);
  HYCC_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hycc::codec::cuda

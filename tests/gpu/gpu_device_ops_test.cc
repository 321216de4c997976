// The CUDA device operations of the device collectives against their host emulation, bit for
// bit (no MPI needed): payloads, decodes, decode-and-accumulate (with the caller's dtype on the
// wire, as at step 0 of a ring, and float32, as later), malformed payloads (CorruptStream on
// both, the partial sum then holds this rank's own elements) and the final rounding (sum and
// average). With the CPU tests (host emulation == host collectives) this ties the CUDA
// collectives to the host ones.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if defined(HYCC_CUDA_EMULATION)
#include <cuda_emu/host.h>
#include <cuda_runtime.h>

#include <chrono>
#endif

#include "codec/float_io.h"
#include "device/device_ops.h"
#include "device_test_util.h"
#include "grad/device_kernels.h"
#include "grad/topk_select.h"
#include "hycc/codec_device.h"
#include "hycc/device.h"

namespace hycc::codec::cuda {
// codec/cuda/device_util.cuh (a CUDA header): the codecs' scratch buffer.
void* scratch(size_t bytes, DeviceStream stream);
}  // namespace hycc::codec::cuda

namespace hycc::test {
namespace {

namespace dev = ::hycc::device;

class GpuDeviceOps : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuDeviceOps, CudaEqualsHostEmulation) {
  const CodecConfig config = CodecConfig::parse(GetParam());
  const auto emu = dev::make_host_emulated_ops();
  const auto gpu = dev::make_cuda_ops(nullptr);
  for (const DType d : kDtypes) {
    for (const size_t n : {size_t{1}, size_t{3}, size_t{4097}, kLargeTensor}) {
      const std::string what =
          GetParam() + " " + std::string(dtype_name(d)) + " n=" + std::to_string(n);
      // The ring encodes the caller's dtype at step 0 and float32 partial sums later.
      for (const DType wire : {d, DType::kF32}) {
        const Buffer x = input(wire, n, 11), own = input(d, n, 12);
        const size_t cap = config.codec().max_payload_bytes(wire, n);
        std::vector<std::byte> hp(cap);
        const size_t hsize = emu->encode(config, x.view(), hp.data(), cap, 99);
        const OnDevice dx(x);
        DeviceBuffer dp(cap);
        const size_t dsize = gpu->encode(config, dx.view(), dp.data(), cap, 99);
        ASSERT_EQ(dsize, hsize) << what << ": payload size";
        EXPECT_TRUE(std::memcmp(host_bytes(dp.data(), dsize).data(), hp.data(), hsize) == 0)
            << what << ": payload bytes";
        // decode
        Buffer hout(wire, n);
        emu->decode(config, hp.data(), hsize, hout.view());
        OnDevice dout(Buffer(wire, n));
        gpu->decode(config, dp.data(), dsize, dout.view());
        EXPECT_TRUE(dout.to_host().bits_equal(hout)) << what << ": decode";
        // decode and accumulate
        std::vector<float> hpartial(n);
        emu->decode_accumulate(config, hp.data(), hsize, wire, own.view(), hpartial.data());
        const OnDevice down(own);
        DeviceBuffer dpartial(n * 4);
        gpu->decode_accumulate(config, dp.data(), dsize, wire, down.view(),
                               static_cast<float*>(dpartial.data()));
        gpu->synchronize();
        EXPECT_TRUE(
            std::memcmp(host_bytes(dpartial.data(), n * 4).data(), hpartial.data(), n * 4) == 0)
            << what << ": decode_accumulate";
        // a truncated payload: CorruptStream on both, partial = own
        if (hsize > 0) {
          std::vector<float> hbad(n), dbad(n);
          EXPECT_THROW(
              emu->decode_accumulate(config, hp.data(), hsize - 1, wire, own.view(), hbad.data()),
              CorruptStream)
              << what;
          EXPECT_THROW(gpu->decode_accumulate(config, dp.data(), dsize - 1, wire, down.view(),
                                              static_cast<float*>(dpartial.data())),
                       CorruptStream)
              << what;
          copy_to_host(dbad.data(), dpartial.data(), n * 4);
          EXPECT_TRUE(std::memcmp(hbad.data(), dbad.data(), n * 4) == 0)
              << what << ": a malformed payload counts as zeros";
        }
        // rounding of the partial sums: sum and average over 3 ranks
        DeviceBuffer dsum(n * 4);
        copy_to_device(dsum.data(), hpartial.data(), n * 4);
        for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
          Buffer hr(d, n);
          emu->round_into(hpartial.data(), op, 3, hr.view());
          OnDevice dr(Buffer(d, n));
          gpu->round_into(static_cast<const float*>(dsum.data()), op, 3, dr.view());
          gpu->synchronize();
          EXPECT_TRUE(dr.to_host().bits_equal(hr)) << what << ": round_into";
        }
        // subtraction (the error-feedback residual): partial - own, widened
        std::vector<float> hown(n), hdiff(n), ddiff(n);
        codec::load_as_float(own.view(), 0, n, hown.data());
        emu->subtract(hpartial.data(), hown.data(), hdiff.data(), n);
        DeviceBuffer down_f32(n * 4), ddiff_buf(n * 4);
        copy_to_device(down_f32.data(), hown.data(), n * 4);
        gpu->subtract(static_cast<const float*>(dsum.data()),
                      static_cast<const float*>(down_f32.data()),
                      static_cast<float*>(ddiff_buf.data()), n);
        gpu->synchronize();
        copy_to_host(ddiff.data(), ddiff_buf.data(), n * 4);
        EXPECT_TRUE(std::memcmp(hdiff.data(), ddiff.data(), n * 4) == 0) << what << ": subtract";
        // the payload checksum, aligned and not
        EXPECT_EQ(gpu->checksum(dp.data(), dsize), emu->checksum(hp.data(), hsize)) << what;
        if (hsize > 1) {
          EXPECT_EQ(gpu->checksum(static_cast<const std::byte*>(dp.data()) + 1, dsize - 1),
                    emu->checksum(hp.data() + 1, hsize - 1))
              << what << ": checksum at an odd address";
        }
      }
    }
  }
}

// The fused ring hop of quant (DeviceOps::hop, one kernel) gives the bytes of its separate steps
// (decode_accumulate, then the encode of the float32 sums): special blocks in the payload and in
// the sums (values near FLT_MAX add to infinities, NaN and infinities in both), nearest and
// stochastic, float32 and the caller's dtype on the wire, blocks of 8 to 256 values. Other
// parameters have no fused kernel: false, nothing done.
TEST(GpuDeviceOpsHop, QuantFusedHopEqualsItsSteps) {
  const auto gpu = dev::make_cuda_ops(nullptr);
  const size_t n = 4097;
  for (const char* spec :
       {"quant:bits=8", "quant:bits=4,round=stochastic", "quant:bits=1", "quant:bits=3,block=72",
        "quant:bits=6,block=256,round=stochastic", "quant:bits=5,block=8"}) {
    const CodecConfig config = CodecConfig::parse(spec);
    const size_t cap = config.codec().max_payload_bytes(DType::kF32, n);
    for (const auto& [wire, own_dtype] :
         {std::pair{DType::kF32, DType::kF32}, std::pair{DType::kF32, DType::kBF16},
          std::pair{DType::kBF16, DType::kBF16}}) {
      const std::string what = std::string(spec) + " wire " + std::string(dtype_name(wire)) +
                               " own " + std::string(dtype_name(own_dtype));
      const OnDevice x(Buffer::from_floats(wire, data_with_specials(n, 3)));
      const OnDevice own(Buffer::from_floats(own_dtype, data_with_specials(n, 4)));
      DeviceBuffer in(cap), partial(n * 4), steps_out(cap), fused_out(cap);
      const size_t in_bytes = gpu->encode(config, x.view(), in.data(), cap, 5);
      gpu->decode_accumulate(config, in.data(), in_bytes, wire, own.view(),
                             static_cast<float*>(partial.data()));
      const size_t steps_bytes =
          gpu->encode(config, {DType::kF32, n, partial.data()}, steps_out.data(), cap, 77);
      size_t fused_bytes = 0;
      ASSERT_TRUE(gpu->hop(config, in.data(), in_bytes, wire, own.view(), fused_out.data(), cap, 77,
                           &fused_bytes))
          << what;
      gpu->synchronize();
      ASSERT_EQ(fused_bytes, steps_bytes) << what;
      EXPECT_TRUE(host_bytes(fused_out.data(), fused_bytes) ==
                  host_bytes(steps_out.data(), steps_bytes))
          << what;
    }
  }
  const OnDevice own(input(DType::kF32, n, 1));
  for (const char* spec : {"quant:bits=8,rotate=hadamard", "quant:bits=8,block=1024"}) {
    const CodecConfig config = CodecConfig::parse(spec);
    const size_t cap = config.codec().max_payload_bytes(DType::kF32, n);
    DeviceBuffer in(cap), out(cap);
    const size_t in_bytes = gpu->encode(config, own.view(), in.data(), cap, 5);
    size_t size = 0;
    EXPECT_FALSE(
        gpu->hop(config, in.data(), in_bytes, DType::kF32, own.view(), out.data(), cap, 77, &size))
        << spec;
  }
}

// The top-k payload (selection, values, packed indices, residual) of the CUDA kernels equals the
// host emulation's (grad::select_topk), on data with NaN, infinities, signed zeros and many ties
// (bf16-rounded values of a few magnitudes), for k from 1 to n; decoding adds every rank's pairs
// alike and reports the first payload holding an index beyond the tensor.
TEST(GpuDeviceOpsGrad, TopKEqualsHostEmulation) {
  const auto emu_ops = dev::make_host_emulated_ops();
  const auto gpu_ops = dev::make_cuda_ops(nullptr);
  DeviceCollectiveOptions host;
  host.backend = DeviceBackend::kHostEmulation;
  const auto emu = grad::make_device_kernels(host, *emu_ops);
  const auto gpu = grad::make_cuda_kernels(*gpu_ops, nullptr);
  for (const size_t n : {size_t{1}, size_t{5}, size_t{1000}, kLargeTensor}) {
    std::vector<float> specials = data_with_specials(n, 4), ties(n);
    for (size_t i = 0; i < n; ++i) ties[i] = float(int(i * 7919 % 13) - 6) * 0.25f;
    for (const std::vector<float>* data : {&specials, &ties}) {
      for (const size_t k : {size_t{1}, n / 3 + 1, n > 1 ? n - 1 : 1, n}) {
        const std::string what = std::string(data == &ties ? "ties" : "specials") +
                                 " n=" + std::to_string(n) + " k=" + std::to_string(k);
        const int bits = grad::index_bits(n);
        const size_t words = k + grad::packed_words(k, bits);
        std::vector<uint32_t> hwords(words);
        std::vector<float> hres(n);
        emu->topk_encode(data->data(), n, k, bits, hwords.data(), hres.data());
        const Buffer x = Buffer::from_floats(DType::kF32, *data);
        const OnDevice dx(x);
        DeviceBuffer dwords(words * 4), dres(n * 4);
        gpu->topk_encode(static_cast<const float*>(dx.view().data), n, k, bits,
                         static_cast<uint32_t*>(dwords.data()), static_cast<float*>(dres.data()));
        gpu_ops->synchronize();
        EXPECT_TRUE(
            std::memcmp(host_bytes(dwords.data(), words * 4).data(), hwords.data(), words * 4) == 0)
            << what << ": payload";
        EXPECT_TRUE(std::memcmp(host_bytes(dres.data(), n * 4).data(), hres.data(), n * 4) == 0)
            << what << ": residual";

        // Two payloads (the second this one with its first index set to n when it fits).
        std::vector<uint32_t> both = hwords;
        both.insert(both.end(), hwords.begin(), hwords.end());
        std::vector<float> hsum(n, 0.0f);
        EXPECT_EQ(emu->topk_accumulate(both.data(), words, 2, k, bits, n, hsum.data()), -1);
        DeviceBuffer dboth(both.size() * 4), dsum(n * 4);
        copy_to_device(dboth.data(), both.data(), both.size() * 4);
        gpu_ops->zero(dsum.data(), n * 4);
        EXPECT_EQ(gpu->topk_accumulate(static_cast<const uint32_t*>(dboth.data()), words, 2, k,
                                       bits, n, static_cast<float*>(dsum.data())),
                  -1)
            << what;
        EXPECT_TRUE(std::memcmp(host_bytes(dsum.data(), n * 4).data(), hsum.data(), n * 4) == 0)
            << what << ": sums";
        if (n < (uint64_t{1} << bits)) {
          std::vector<uint64_t> idx(k);
          grad::unpack_indices({both.data() + words + k, words - k}, bits, idx);
          idx[0] = n;
          grad::pack_indices(idx, bits, {both.data() + words + k, words - k});
          copy_to_device(dboth.data(), both.data(), both.size() * 4);
          EXPECT_EQ(gpu->topk_accumulate(static_cast<const uint32_t*>(dboth.data()), words, 2, k,
                                         bits, n, static_cast<float*>(dsum.data())),
                    1)
              << what << ": an index beyond the tensor";
          EXPECT_EQ(emu->topk_accumulate(both.data(), words, 2, k, bits, n, hsum.data()), 1);
        }
      }
    }
  }
}

std::string spec_name(const ::testing::TestParamInfo<std::string>& param) {
  std::string s;
  for (const char c : param.param) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Codecs, GpuDeviceOps, ::testing::ValuesIn(device_coll_codecs()),
                         spec_name);

}  // namespace
}  // namespace hycc::test

namespace hycc::test {
namespace {

#if defined(HYCC_CUDA_EMULATION)
// Memory freed while the work queued on its stream still uses it (a stream-ordered call returns
// so): work on the same stream may reuse it at once, work on another stream only once that work
// is done.
TEST(GpuDevice, FreedMemoryIsReusedInStreamOrder) {
  cudaStream_t a = nullptr, b = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  const auto on_a = dev::make_cuda_ops(a);
  const auto on_b = dev::make_cuda_ops(b);
  const size_t bytes = size_t{3} << 20;  // a size no other test keeps in the cache
  void* used = nullptr;
  {
    dev::Memory m = on_a->allocate(bytes);
    used = m.data();
    cuda_emu::occupy_stream(a, std::chrono::milliseconds(200));
  }
  {
    const dev::Memory other = on_b->allocate(bytes);
    EXPECT_NE(other.data(), used) << "handed to another stream while its work was queued";
  }
  {
    const dev::Memory same = on_a->allocate(bytes);
    EXPECT_EQ(same.data(), used) << "not reused in the order of its own stream";
  }
  cudaStreamSynchronize(a);
  cudaStreamSynchronize(b);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
}
#endif

// The codecs' scratch is one buffer per host thread and stream: a stream-ordered call returns
// before its kernels are done, so another stream's call must not share it; the same stream may.
TEST(GpuDevice, CodecScratchIsPerStream) {
  const OwnedDeviceStream a, b;
  void* on_a = codec::cuda::scratch(4096, a.get());
  EXPECT_NE(codec::cuda::scratch(4096, b.get()), on_a);
  EXPECT_EQ(codec::cuda::scratch(1024, a.get()), on_a);
}

#if defined(HYCC_CUDA_EMULATION)
// DeviceEvent orders another stream's later work after the work a stream had queued when the
// event was recorded: a copy on b waits for a copy on a that a long operation delays.
TEST(GpuDevice, EventsOrderWorkAcrossStreams) {
  const OwnedDeviceStream a, b;
  const Buffer x = input(DType::kF32, 1000, 3);
  const OnDevice source(x), middle(Buffer(DType::kF32, 1000)), last(Buffer(DType::kF32, 1000));
  cuda_emu::occupy_stream(a.get(), std::chrono::milliseconds(100));
  copy_on_device(middle.view().data, source.view().data, 4000, a.get());
  DeviceEvent copied;
  copied.record(a.get());
  copied.wait(b.get());
  copy_on_device(last.view().data, middle.view().data, 4000, b.get());
  synchronize_stream(b.get());
  EXPECT_TRUE(last.to_host().bits_equal(x));
  synchronize_stream(a.get());
}
#endif

// A GPU of an architecture the build's kernels were not compiled for (on the CUDA emulator,
// HYCC_CUDA_EMU_NO_KERNEL_IMAGE=1; ctest gpu_other_architecture): the device operations and the
// codecs are Unavailable, saying why and what to configure, instead of failing in a launch.
TEST(GpuDevice, AnotherArchitectureIsUnavailableWithItsReason) {
  const char* other = std::getenv("HYCC_CUDA_EMU_NO_KERNEL_IMAGE");
  if (other == nullptr || std::string(other) != "1") GTEST_SKIP() << "the device runs the kernels";
  EXPECT_FALSE(device_runs_kernels());
  EXPECT_NE(device_unavailable_reason().find("runs none of this build's kernels"),
            std::string::npos)
      << device_unavailable_reason();
  EXPECT_THROW(::hycc::device::make_cuda_ops(nullptr), Unavailable);
  const Buffer x = input(DType::kF32, 100, 1);
  const OnDevice dx(x);
  const DeviceBuffer out(1024);
  EXPECT_THROW(encode_device(CodecConfig::parse("bf16"), dx.view(), out.data(), out.size()),
               Unavailable);
}

}  // namespace
}  // namespace hycc::test

// The CUDA device operations of the device collectives against their host emulation, bit for
// bit (no MPI needed): payloads, decodes, decode-and-accumulate (with the caller's dtype on the
// wire, as at step 0 of a ring, and float32, as later), malformed payloads (CorruptStream on
// both, the partial sum then holds this rank's own elements) and the final rounding (sum and
// average). With the CPU tests (host emulation == host collectives) this ties the CUDA
// collectives to the host ones.
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <string>
#include <vector>

#include "codec/float_io.h"
#include "coll/device/device_ops.h"
#include "device_test_util.h"

namespace hycc::test {
namespace {

namespace dev = coll::device;

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

std::string spec_name(const ::testing::TestParamInfo<std::string>& param) {
  std::string s;
  for (const char c : param.param) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Codecs, GpuDeviceOps, ::testing::ValuesIn(device_coll_codecs()),
                         spec_name);

}  // namespace
}  // namespace hycc::test

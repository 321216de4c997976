// The device collectives on a real GPU under mpirun (hycc_gpu_coll_tests, tools/gpu-check;
// the device operations alone are checked without MPI in tests/gpu/gpu_device_ops_test.cc):
// - the CUDA collectives (staged MPI; 1 or 2 ranks sharing the GPU) against the emulated ones on
//   the same inputs, bit for bit, broadcast and point to point;
// - the NCCL transport on one rank (a loopback round on MPI_COMM_SELF), when libnccl.so.2 loads;
// - the collectives over NCCL against the emulated ones where every rank has a GPU of its own
//   (on the CUDA emulator: every process; its libnccl.so.2 joins processes of one machine).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "coll/device_entry.h"
#include "comm/transport.h"
#include "device/device_ops.h"
#include "device_test_util.h"
#include "hycc/collectives_device.h"
#include "hycc/device.h"
#include "hycc/grad_device.h"

namespace hycc::test {
namespace {

namespace dev = ::hycc::device;

// ---- collectives: CUDA (staged MPI) vs host emulation ----------------------------------------

enum class Op { kAllreduce, kReduceScatter, kAllgather };

void run_op(Op op, const Communicator& comm, TensorView send, TensorView recv,
            const DeviceCollectiveOptions& o) {
  if (op == Op::kAllreduce) allreduce_device(comm, send, recv, ReduceOp::kAverage, o);
  if (op == Op::kReduceScatter) reduce_scatter_device(comm, send, recv, ReduceOp::kSum, o);
  if (op == Op::kAllgather) allgather_device(comm, send, recv, o);
}

// Every op x spec x dtype x count, out of place and in place, on `transport`: the CUDA
// collective on device buffers equals the host-emulated one on host buffers, bit for bit. With
// `stream_ordered`, the CUDA calls return once queued (the result is read after them on the
// stream).
void expect_collectives_match(DeviceTransport transport, const std::vector<std::string>& specs,
                              const std::vector<DType>& dtypes, const std::vector<size_t>& counts,
                              bool stream_ordered = false) {
  const Communicator world = Communicator::world();
  const int p = world.size(), r = world.rank();
  for (const Op op : {Op::kAllreduce, Op::kReduceScatter, Op::kAllgather}) {
    for (const std::string& spec : specs) {
      for (const DType d : dtypes) {
        for (const size_t n : counts) {
          for (const bool in_place : {false, true}) {
            const std::string what = std::to_string(static_cast<int>(op)) + " " + spec + " " +
                                     std::string(dtype_name(d)) + " n=" + std::to_string(n) +
                                     (in_place ? " in place" : "");
            DeviceCollectiveOptions o;
            o.codec = CodecConfig::parse(spec);
            o.segment_bytes = n > 7 ? 64 << 10 : 4;
            o.seed = 5;
            o.transport = transport;
            const ChunkRange mine = chunk_range(n, p, r);
            const size_t out_n = op == Op::kAllreduce       ? n
                                 : op == Op::kReduceScatter ? mine.count
                                                            : n * static_cast<size_t>(p);
            const Buffer x = input(d, n, 100 + static_cast<uint64_t>(r));
            // Host emulation on host buffers.
            Buffer hin = Buffer::from_floats(d, x.to_floats()), hout(d, out_n);
            Buffer hall(d, op == Op::kAllgather ? out_n : 0);
            // CUDA on device buffers.
            OnDevice din(x), dout(Buffer(d, out_n));
            const auto views = [&](TensorView in, TensorView out, bool host) {
              TensorView send = in, recv = out;
              if (in_place && op == Op::kAllreduce) recv = send;
              if (in_place && op == Op::kReduceScatter) {
                recv = {d, mine.count,
                        static_cast<std::byte*>(in.data) + mine.offset * dtype_size(d)};
              }
              if (in_place && op == Op::kAllgather) {
                send = {d, n, static_cast<std::byte*>(out.data) + r * n * dtype_size(d)};
                if (host) {
                  std::memcpy(send.data, in.data, n * dtype_size(d));
                } else if (n != 0) {
                  copy_on_device(send.data, in.data, n * dtype_size(d));
                  synchronize_device();
                }
              }
              return std::pair{send, recv};
            };
            o.backend = DeviceBackend::kHostEmulation;
            auto [hs, hr] = views(hin.view(), hout.view(), true);
            run_op(op, world, hs, hr, o);
            o.backend = DeviceBackend::kCuda;
            o.stream_ordered = stream_ordered;
            auto [ds, dr] = views(din.view(), dout.view(), false);
            run_op(op, world, ds, dr, o);
            const bool result_in_input = in_place && op != Op::kAllgather;
            const Buffer want = result_in_input ? hin : hout;
            const Buffer got = result_in_input ? din.to_host() : dout.to_host();
            EXPECT_TRUE(got.bits_equal(want)) << what;
          }
        }
      }
    }
  }
}

TEST(GpuDeviceCollectives, CudaEqualsHostEmulation) {
  expect_collectives_match(DeviceTransport::kStagedMpi, device_coll_codecs(),
                           {std::begin(kDtypes), std::end(kDtypes)}, {0, 1, 7, kLargeTensor});
}

TEST(GpuDeviceCollectives, SendRecvCudaEqualsHostEmulation) {
  const Communicator world = Communicator::world();
  if (world.size() < 2) GTEST_SKIP() << "needs two ranks";
  for (const std::string& spec : device_coll_codecs()) {
    const Buffer x = input(DType::kBF16, 100003, 3);
    DeviceCollectiveOptions o;
    o.codec = CodecConfig::parse(spec);
    o.segment_bytes = 32 << 10;
    o.transport = DeviceTransport::kStagedMpi;
    if (world.rank() == 0) {
      const OnDevice dx(x);
      send_device(world, dx.view(), 1, 1, o);  // CUDA
      o.backend = DeviceBackend::kHostEmulation;
      send_device(world, x.view(), 1, 1, o);
    } else if (world.rank() == 1) {
      OnDevice got(Buffer(DType::kBF16, x.count()));
      recv_device(world, got.view(), 0, 1, o);
      Buffer want(DType::kBF16, x.count());
      o.backend = DeviceBackend::kHostEmulation;
      recv_device(world, want.view(), 0, 1, o);
      EXPECT_TRUE(got.to_host().bits_equal(want)) << spec;
    }
  }
}

TEST(GpuDeviceCollectives, BroadcastCudaEqualsHostEmulation) {
  const Communicator world = Communicator::world();
  for (const std::string& spec : device_coll_codecs()) {
    for (const DType d : kDtypes) {
      for (const size_t n : {size_t{7}, kLargeTensor}) {
        DeviceCollectiveOptions o;
        o.codec = CodecConfig::parse(spec);
        o.segment_bytes = n > 7 ? 64 << 10 : 4;
        o.transport = DeviceTransport::kStagedMpi;
        Buffer host = input(d, n, 200 + static_cast<uint64_t>(world.rank()));
        OnDevice dev(host);
        o.backend = DeviceBackend::kHostEmulation;
        broadcast_device(world, host.view(), world.size() - 1, o);
        o.backend = DeviceBackend::kCuda;
        broadcast_device(world, dev.view(), world.size() - 1, o);
        EXPECT_TRUE(dev.to_host().bits_equal(host)) << "broadcast " << spec << " n=" << n;
      }
    }
  }
}

TEST(GpuDeviceCollectives, AlltoallCudaEqualsHostEmulation) {
  const Communicator world = Communicator::world();
  const size_t p = static_cast<size_t>(world.size());
  for (const std::string& spec : device_coll_codecs()) {
    for (const DType d : kDtypes) {
      for (const size_t block : {size_t{7}, size_t{65537}}) {
        DeviceCollectiveOptions o;
        o.codec = CodecConfig::parse(spec);
        o.segment_bytes = block > 7 ? 16 << 10 : 4;
        o.transport = DeviceTransport::kStagedMpi;
        const Buffer x = input(d, block * p, 400 + static_cast<uint64_t>(world.rank()));
        Buffer want(d, x.count());
        o.backend = DeviceBackend::kHostEmulation;
        alltoall_device(world, x.view(), want.view(), o);
        OnDevice din(x), dout(Buffer(d, x.count()));
        o.backend = DeviceBackend::kCuda;
        alltoall_device(world, din.view(), dout.view(), o);
        EXPECT_TRUE(dout.to_host().bits_equal(want))
            << "alltoall " << spec << " " << dtype_name(d) << " block=" << block;
      }
    }
  }
}

// Gradient compressors on the GPU (DeviceGradCompressor) against the emulated ones: results and
// residuals bit for bit, three steps: error feedback (ef+zstd: a codec without kernels; ef2+ in
// two stages, with the add kernel), sign (its chunk coding in kernels: 100003 values make 13
// tiles, with 2 ranks 7 per chunk; on the CUDA emulator 40009 values, 5 tiles, 3 per chunk) and
// top-k (selection in kernels). The reduce-scatter too (ef+, ef2+ and sign stop after the first
// stage).
TEST(GpuDeviceCollectives, ErrorFeedbackCudaEqualsHostEmulation) {
  const Communicator world = Communicator::world();
  const size_t count = kEmulatedDevice ? 40009 : 100003;
  for (const char* spec :
       {"ef+quant:bits=4", "ef+zfp:rate=4", "ef+eb:abs=0.01", "ef+zstd", "ef2+quant:bits=4",
        "ef2+zfp:rate=4", "sign", "sign:ef=off", "topk:ratio=0.01", "topk:count=5000,ef=off"}) {
    for (const DType d : kDtypes) {
      DeviceGradCompressor emulated(spec), cuda(spec), emulated_rs(spec), cuda_rs(spec);
      DeviceCollectiveOptions o;
      o.transport = DeviceTransport::kStagedMpi;
      const ChunkRange mine = chunk_range(count, world.size(), world.rank());
      for (int step = 0; step < 3; ++step) {
        const Buffer g = input(d, count, 300 + static_cast<uint64_t>(world.rank() + 7 * step));
        Buffer want(d, g.count());
        o.backend = DeviceBackend::kHostEmulation;
        emulated.allreduce(world, 1, g.view(), want.view(), ReduceOp::kAverage, o);
        OnDevice got(g);
        o.backend = DeviceBackend::kCuda;
        cuda.allreduce(world, 1, got.view(), got.view(), ReduceOp::kAverage, o);
        const std::string what =
            std::string(spec) + " " + std::string(dtype_name(d)) + " step " + std::to_string(step);
        EXPECT_TRUE(got.to_host().bits_equal(want)) << what;
        EXPECT_TRUE(cuda.residual(1) == emulated.residual(1)) << what << ": residuals";

        Buffer shard_want(d, mine.count);
        o.backend = DeviceBackend::kHostEmulation;
        emulated_rs.reduce_scatter(world, 1, g.view(), shard_want.view(), ReduceOp::kAverage, o);
        const OnDevice whole(g);
        OnDevice shard(Buffer(d, mine.count));
        o.backend = DeviceBackend::kCuda;
        cuda_rs.reduce_scatter(world, 1, whole.view(), shard.view(), ReduceOp::kAverage, o);
        EXPECT_TRUE(shard.to_host().bits_equal(shard_want)) << what << " reduce_scatter";
        EXPECT_TRUE(cuda_rs.residual(1) == emulated_rs.residual(1))
            << what << ": reduce_scatter residuals";
      }
    }
  }
}

// A step whose gradient overflowed on rank 0, then two finite steps: the CUDA zero_nonfinite
// kernel restarts the state as the emulated device (and the host compressor) does; results,
// residuals and saved states bit for bit.
TEST(GpuDeviceCollectives, OverflowedStepCudaEqualsHostEmulation) {
  const Communicator world = Communicator::world();
  const struct {
    const char* spec;
    std::vector<size_t> shape;
  } cases[] = {{"ef+quant:bits=4", {}},
               {"ef2+quant:bits=6", {}},
               {"sign", {}},
               {"powersgd:rank=2", {61, 37}}};
  for (const auto& c : cases) {
    const size_t n = c.shape.empty() ? 40009 : c.shape[0] * c.shape[1];
    DeviceGradCompressor emulated(c.spec), cuda(c.spec);
    DeviceCollectiveOptions o;
    o.transport = DeviceTransport::kStagedMpi;
    const GradTensor tensor{6, c.shape};
    for (int step = 0; step < 3; ++step) {
      std::vector<float> v =
          input(DType::kF32, n, 700 + static_cast<uint64_t>(world.rank() + 7 * step)).to_floats();
      if (step == 0 && world.rank() == 0) v[n / 3] = INFINITY;
      const Buffer g = Buffer::from_floats(DType::kF32, v);
      Buffer want(DType::kF32, n);
      o.backend = DeviceBackend::kHostEmulation;
      emulated.allreduce(world, tensor, g.view(), want.view(), ReduceOp::kSum, o);
      OnDevice got(g);
      o.backend = DeviceBackend::kCuda;
      cuda.allreduce(world, tensor, got.view(), got.view(), ReduceOp::kSum, o);
      const std::string what = std::string(c.spec) + " step " + std::to_string(step);
      EXPECT_TRUE(got.to_host().bits_equal(want)) << what;
      EXPECT_TRUE(cuda.residual(6) == emulated.residual(6)) << what << ": residuals";
      EXPECT_TRUE(cuda.save() == emulated.save()) << what << ": saved states";
    }
  }
}

// PowerSGD on the GPU (its matrix products are kernels) against the emulated device, which runs
// the host's products: results, residuals and saved states (Q included) bit for bit, three
// steps. Shapes: one row block and several (kMtpRowBlock = 64), a row count that leaves a short
// last block, ranks 4 and 5 (the kernel's lane groups take 4 outputs of a row at a time), few
// rows and many columns; error feedback on and off, sums and averages; a bucket of tensors (the
// products at offsets into the bucket and its factors).
TEST(GpuDeviceCollectives, PowerSgdCudaEqualsHostEmulation) {
  using Shapes = std::vector<std::vector<size_t>>;
  const Communicator world = Communicator::world();
  struct Case {
    const char* spec;
    std::vector<size_t> shape;
    ReduceOp op;
    std::vector<std::vector<size_t>> pieces;  // a bucket (shape empty)
  };
  const Case cases[] = {
      {"powersgd:rank=4", {61, 37}, ReduceOp::kAverage, {}},
      {"powersgd:rank=5", {300, 77}, ReduceOp::kSum, {}},
      {"powersgd:rank=2,ef=off", {129, 64}, ReduceOp::kAverage, {}},
      {"powersgd:rank=3,warm_start=off", {7, 1001}, ReduceOp::kSum, {}},
      {"powersgd:rank=4", {}, ReduceOp::kAverage, {{61, 37}, {37}, {129, 64}, {5, 1}, {300, 77}}}};
  for (const Case& c : cases) {
    for (const DType d : {DType::kF32, DType::kBF16}) {
      DeviceGradCompressor emulated(c.spec), cuda(c.spec);
      DeviceCollectiveOptions o;
      o.transport = DeviceTransport::kStagedMpi;
      const GradTensor tensor =
          c.pieces.empty() ? GradTensor{2, c.shape} : GradTensor::bucket(2, c.pieces);
      size_t n = 0;
      for (const std::vector<size_t>& shape : c.pieces.empty() ? Shapes{c.shape} : c.pieces) {
        n += shape[0] * (shape.size() > 1 ? shape[1] : 1);
      }
      for (int step = 0; step < 3; ++step) {
        const Buffer g = input(d, n, 500 + static_cast<uint64_t>(world.rank() + 7 * step));
        Buffer want(d, n);
        o.backend = DeviceBackend::kHostEmulation;
        emulated.allreduce(world, tensor, g.view(), want.view(), c.op, o);
        OnDevice got(g);
        o.backend = DeviceBackend::kCuda;
        const GradStepStats s = cuda.allreduce(world, tensor, got.view(), got.view(), c.op, o);
        const std::string what = std::string(c.spec) + " " + std::to_string(n) + " elements " +
                                 std::string(dtype_name(d)) + " step " + std::to_string(step);
        EXPECT_TRUE(s.compressed) << what;
        EXPECT_TRUE(got.to_host().bits_equal(want)) << what;
        EXPECT_TRUE(cuda.residual(2) == emulated.residual(2)) << what << ": residuals";
      }
      EXPECT_TRUE(cuda.save() == emulated.save()) << c.spec << ": saved states (Q) differ";
    }
  }
}

// The collectives over NCCL, where every rank has a GPU of its own (a machine with one GPU per
// rank; the CUDA emulator, whose processes each have their own device); skipped otherwise.
TEST(GpuNccl, CollectivesEqualHostEmulation) {
  if (!comm::nccl_usable(Communicator::world())) {
    GTEST_SKIP() << "NCCL is not usable here (libnccl.so.2? ranks sharing a GPU?)";
  }
  expect_collectives_match(DeviceTransport::kNccl,
                           {"none", "quant:bits=4", "eb:abs=1e-3", "zfp:rate=8"},
                           {DType::kF32, DType::kBF16}, {1, 7, kLargeTensor});
}

// The same calls stream-ordered (NCCL's contract: they return once queued), fixed-size codecs
// (no host step at all; the casts' fused hop from 3 ranks on) and a data-dependent one: the same
// bits.
TEST(GpuNccl, StreamOrderedCollectivesEqualHostEmulation) {
  if (!comm::nccl_usable(Communicator::world())) {
    GTEST_SKIP() << "NCCL is not usable here (libnccl.so.2? ranks sharing a GPU?)";
  }
  expect_collectives_match(DeviceTransport::kNccl, {"bf16", "fp16", "quant:bits=4"},
                           {DType::kF32, DType::kBF16}, {1, 7, kLargeTensor}, true);
}

// Below the threshold, a call over NCCL runs NCCL's own collective on the device buffers
// (nccl_native.cc), with the values of the host emulation's native path (the MPI call): every
// collective x dtype x count, out of place and in place, sum and average. The data are small
// integers, whose float32 sums are exact in any order (NCCL sums in an order of its own).
TEST(GpuNccl, NativeCollectivesBelowThresholdEqualHostEmulation) {
  const Communicator world = Communicator::world();
  if (!comm::nccl_usable(world)) {
    GTEST_SKIP() << "NCCL is not usable here (libnccl.so.2? ranks sharing a GPU?)";
  }
  const int p = world.size(), r = world.rank();
  const auto integers = [&](DType d, size_t n, int salt) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = static_cast<float>(static_cast<int>((i * 7 + r * 5 + salt) % 17) - 8);
    return Buffer::from_floats(d, v);
  };
  enum class Call { kAllreduce, kReduceScatter, kAllgather, kBroadcast, kAlltoall };
  for (const Call call : {Call::kAllreduce, Call::kReduceScatter, Call::kAllgather,
                          Call::kBroadcast, Call::kAlltoall}) {
    for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
      const bool reduces = call == Call::kAllreduce || call == Call::kReduceScatter;
      if (!reduces && op == ReduceOp::kAverage) continue;
      for (const DType d : kDtypes) {
        for (const size_t base : {size_t{1}, size_t{7}, size_t{2 * 3 * 4 * 5}, size_t{1001}}) {
          for (const bool in_place : {false, true}) {
            const size_t n = call == Call::kAlltoall ? base * static_cast<size_t>(p) : base;
            const ChunkRange mine = chunk_range(n, p, r);
            const size_t out_n = call == Call::kReduceScatter ? mine.count
                                 : call == Call::kAllgather   ? n * static_cast<size_t>(p)
                                                              : n;
            const std::string what = std::to_string(static_cast<int>(call)) + " op " +
                                     std::to_string(static_cast<int>(op)) + " " +
                                     std::string(dtype_name(d)) + " n=" + std::to_string(n) +
                                     (in_place ? " in place" : "");
            const Buffer x = integers(d, n, static_cast<int>(base));
            // The host emulation on host buffers, then CUDA over NCCL on device buffers; the
            // buffer a call works in: in place, the input's (allgather: the output's).
            const auto run = [&](TensorView vin, TensorView vout,
                                 const DeviceCollectiveOptions& o) {
              const size_t w = dtype_size(d);
              TensorView send = vin, recv = vout;
              if (in_place && call == Call::kReduceScatter) {
                recv = {d, mine.count, static_cast<std::byte*>(vin.data) + mine.offset * w};
              } else if (in_place && call == Call::kAllgather) {
                send = {d, n, static_cast<std::byte*>(vout.data) + static_cast<size_t>(r) * n * w};
              } else if (in_place) {
                recv = send;
              }
              switch (call) {
                case Call::kAllreduce:
                  return allreduce_device(world, send, recv, op, o);
                case Call::kReduceScatter:
                  return reduce_scatter_device(world, send, recv, op, o);
                case Call::kAllgather:
                  return allgather_device(world, send, recv, o);
                case Call::kBroadcast:
                  return broadcast_device(world, send, p - 1, o);
                case Call::kAlltoall:
                  return alltoall_device(world, send, recv, o);
              }
            };
            // In-place allgather starts with the rank's block in its place in the output.
            Buffer hin = x, hout(d, out_n);
            if (in_place && call == Call::kAllgather) {
              std::memcpy(static_cast<std::byte*>(hout.view().data) +
                              static_cast<size_t>(r) * n * dtype_size(d),
                          x.view().data, n * dtype_size(d));
            }
            OnDevice din(hin), dout(hout);
            DeviceCollectiveOptions o;
            o.threshold_bytes = size_t{1} << 30;
            o.transport = DeviceTransport::kNccl;
            o.backend = DeviceBackend::kHostEmulation;
            run(hin.view(), hout.view(), o);
            CollectiveStats stats;
            o.stats = &stats;
            o.backend = DeviceBackend::kCuda;
            const size_t before = coll::device::testing::nccl_native_calls();
            run(din.view(), dout.view(), o);
            if (p > 1) {  // one rank only copies
              EXPECT_EQ(coll::device::testing::nccl_native_calls(), before + 1) << what;
              EXPECT_EQ(stats.algorithm, Algorithm::kNative) << what;
            }
            const bool result_in_input =
                call == Call::kBroadcast || (in_place && call != Call::kAllgather);
            const Buffer want = result_in_input ? hin : hout;
            const Buffer got = result_in_input ? din.to_host() : dout.to_host();
            EXPECT_TRUE(got.bits_equal(want)) << what;
          }
        }
      }
    }
  }
}

// NCCL cannot put two ranks on one GPU: its transport is checked on one rank, sending to
// itself (MPI_COMM_SELF): sizes over MPI, payloads in NCCL groups on the link stream.
TEST(GpuNccl, LoopbackRoundsDeliverEveryPayload) {
  const Communicator self = Communicator::wrap(MPI_COMM_SELF, "self");
  if (!comm::nccl_usable(self)) GTEST_SKIP() << "NCCL is not usable here (libnccl.so.2?)";
  const auto gpu = dev::make_cuda_ops(nullptr);
  DeviceCollectiveOptions o;
  o.backend = DeviceBackend::kCuda;
  const auto transport = comm::make_nccl_transport(self, *gpu, o, 1, true);
  uint64_t round = 0;
  for (const size_t bytes : {size_t{0}, size_t{1}, size_t{1000}, size_t{3} << 20}) {
    ++round;
    std::vector<std::byte> data(bytes);
    for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<std::byte>(i * 7 + 1);
    dev::Payload out;
    out.memory = gpu->allocate(bytes);
    out.size = bytes;
    copy_to_device(out.data(), data.data(), bytes);
    transport->post_recv(0, bytes + 16, round);
    transport->post_send(0, std::move(out), round);
    dev::Payload in;
    in.memory = gpu->allocate(bytes + 16);
    transport->wait_recv(in);
    ASSERT_EQ(in.size, bytes);
    EXPECT_TRUE(host_bytes(in.data(), bytes) == data) << bytes << " bytes";
    std::vector<dev::Payload> free;
    transport->reclaim(free, true);
    EXPECT_EQ(free.size(), 1u);
  }
}

}  // namespace
}  // namespace hycc::test

// The ring's per-hop work without the network, on one GPU: segment k of a float32 tensor is
// encoded (stream 1), its payload copied into a receive buffer (stream 2, standing for the
// transfer), then decoded and added to this rank's values into the partial sum (stream 3).
// Segments are pipelined through events, three payload slots deep: the encode of segment k + 1,
// the copy of segment k and the decode-and-add of segment k - 1 run at once. Each stage alone
// (every segment, one stream) gives its time; a chain that overlaps well takes little more than
// its slowest stage (the target: within 1.3x). The host's time to queue the whole chain is what
// a stream-ordered call costs its caller. Only codecs whose payload size needs no host
// (comm::fixed_payload_size: the casts and quant); the decoders' checks are deferred
// (DeviceOps::defer_decode_checks), as in a stream-ordered call, and read at the end.
#include "device_chain_bench.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "bench_util.h"
#include "comm/transport.h"
#include "device/device_ops.h"
#include "hycc/codec_device.h"
#include "hycc/error.h"

namespace hycc::bench {
namespace {

constexpr size_t kDepth = 3;                   // payload slots in flight
constexpr size_t kMaxSegment = (8 << 20) / 4;  // 8 MiB of float32 values
constexpr size_t kMinSegments = 8;

struct Segments {
  size_t length = 0;  // values per segment (the last may be shorter)
  size_t count = 0;
  size_t of(size_t k, size_t n) const { return std::min(length, n - k * length); }
};

Segments segments_for(size_t n) {
  Segments s;
  s.length = std::min(kMaxSegment, (n + kMinSegments - 1) / kMinSegments);
  s.length = std::max<size_t>(64, (s.length + 63) / 64 * 64);  // whole quant blocks
  s.count = (n + s.length - 1) / s.length;
  return s;
}

// One codec's chain: three streams, their device operations, payload buffers.
class Chain {
 public:
  Chain(const CodecConfig& config, const DeviceBuffer& d_in, size_t n)
      : config_(config), in_(static_cast<const float*>(d_in.data())), n_(n), seg_(segments_for(n)) {
    bound_ = config.codec().max_payload_bytes(DType::kF32, seg_.length);
    for (size_t i = 0; i < 3; ++i) ops_[i] = device::make_cuda_ops(streams_[i].get());
    failed_ = ops_[2]->allocate_pinned(sizeof(uint32_t));
    *static_cast<uint32_t*>(failed_.data()) = 0;
    ops_[2]->defer_decode_checks(static_cast<uint32_t*>(failed_.data()));
    for (size_t i = 0; i < kDepth; ++i) {
      send_[i] = DeviceBuffer(bound_);
      recv_[i] = DeviceBuffer(bound_);
    }
    all_ = DeviceBuffer(bound_ * seg_.count);
    partial_ = DeviceBuffer(n * sizeof(float));
  }
  ~Chain() { ops_[2]->defer_decode_checks(nullptr); }
  Chain(const Chain&) = delete;
  Chain& operator=(const Chain&) = delete;

  // The pipelined chain; returns the host's time to queue it (seconds). Ends at the device.
  double run() {
    const auto start = std::chrono::steady_clock::now();
    for (size_t k = 0; k < seg_.count; ++k) {
      const size_t slot = k % kDepth, len = seg_.of(k, n_);
      if (k >= kDepth) copied_[slot].wait(stream(0));  // the send slot was read
      const size_t bytes = ops_[0]->encode(config_, {DType::kF32, len, in_ + k * seg_.length},
                                           send_[slot].data(), bound_, k);
      encoded_[slot].record(stream(0));
      encoded_[slot].wait(stream(1));
      if (k >= kDepth) reduced_[slot].wait(stream(1));  // the receive slot was read
      ops_[1]->copy_device(recv_[slot].data(), send_[slot].data(), bytes);
      copied_[slot].record(stream(1));
      copied_[slot].wait(stream(2));
      reduce(k, recv_[slot].data(), bytes);
      reduced_[slot].record(stream(2));
    }
    const double queued =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    synchronize_device();
    return queued;
  }

  // The stages one after the other, each over every segment on one stream (own payloads).
  void encode_all() {
    for (size_t k = 0; k < seg_.count; ++k) {
      ops_[0]->encode(config_, {DType::kF32, seg_.of(k, n_), in_ + k * seg_.length}, payload(k),
                      bound_, k);
    }
    ops_[0]->synchronize();
  }
  void copy_all() {
    for (size_t k = 0; k < seg_.count; ++k) {
      ops_[1]->copy_device(recv_[k % kDepth].data(), payload(k), size_of(k));
    }
    ops_[1]->synchronize();
  }
  void reduce_all() {
    for (size_t k = 0; k < seg_.count; ++k) reduce(k, payload(k), size_of(k));
    ops_[2]->synchronize();
  }

  std::vector<std::byte> result() const {
    std::vector<std::byte> v(n_ * sizeof(float));
    copy_to_host(v.data(), partial_.data(), v.size());
    return v;
  }
  bool malformed() const { return *static_cast<const uint32_t*>(failed_.data()) != 0; }

 private:
  DeviceStream stream(size_t i) const { return streams_[i].get(); }
  void* payload(size_t k) const { return static_cast<std::byte*>(all_.data()) + k * bound_; }
  // Segment k's payload size (the codecs here have sizes that depend on the count alone).
  size_t size_of(size_t k) const {
    return config_.codec().max_payload_bytes(DType::kF32, seg_.of(k, n_));
  }
  void reduce(size_t k, const void* payload, size_t bytes) {
    const size_t len = seg_.of(k, n_);
    ops_[2]->decode_accumulate(config_, payload, bytes, DType::kF32,
                               {DType::kF32, len, in_ + k * seg_.length},
                               static_cast<float*>(partial_.data()) + k * seg_.length);
  }

  CodecConfig config_;
  const float* in_;
  size_t n_;
  Segments seg_;
  size_t bound_ = 0;
  std::array<OwnedDeviceStream, 3> streams_;
  std::array<std::unique_ptr<device::DeviceOps>, 3> ops_;
  std::array<DeviceEvent, kDepth> encoded_, copied_, reduced_;
  std::array<DeviceBuffer, kDepth> send_, recv_;
  DeviceBuffer all_, partial_;
  device::Memory failed_;
};

}  // namespace

bool print_chain_rows(const std::vector<CodecConfig>& configs, const DeviceBuffer& d_in, size_t n,
                      double min_seconds) {
  const Segments seg = segments_for(n);
  const Table table({{"chain codec", 36},
                     {"encode GB/s", 12},
                     {"copy GB/s", 10},
                     {"add GB/s", 9},
                     {"chain GB/s", 11},
                     {"x slowest", 10},
                     {"queue ms", 9},
                     {"same bits", 10}});
  std::printf(
      "\n# one-GPU chain of the ring's per-hop work: encode -> copy -> decode + add, %zu segments "
      "of %zu float32 values, %zu deep on three streams; GB/s of float32 values; x slowest: the "
      "chain's time over its slowest stage alone; queue ms: the host's time to queue the chain; "
      "same bits: the chain's sums against the stages run one after the other\n",
      seg.count, seg.length, kDepth);
  std::printf("%s\n", table.header().c_str());
  bool same_everywhere = true;
  const double bytes = double(n) * sizeof(float);
  for (const CodecConfig& config : configs) {
    if (!comm::fixed_payload_size(config) || config.id() == CodecId::kNone ||
        !device_supports(config)) {
      continue;
    }
    Chain chain(config, d_in, n);
    chain.encode_all();  // warm-up, and the payloads of the stages alone
    const double encode_s = best_time([&] { chain.encode_all(); }, 3, min_seconds);
    const double copy_s = best_time([&] { chain.copy_all(); }, 3, min_seconds);
    const double reduce_s = best_time([&] { chain.reduce_all(); }, 3, min_seconds);
    const std::vector<std::byte> steps = chain.result();
    double queued = 0;
    chain.run();  // warm-up
    const double chain_s = best_time([&] { queued = chain.run(); }, 3, min_seconds);
    const bool same = chain.result() == steps && !chain.malformed();
    same_everywhere = same_everywhere && same;
    const double slowest = std::max({encode_s, copy_s, reduce_s});
    std::printf(
        "%s\n",
        table
            .row({config.spec(), format("%.1f", gbps(bytes, encode_s)),
                  format("%.1f", gbps(bytes, copy_s)), format("%.1f", gbps(bytes, reduce_s)),
                  format("%.1f", gbps(bytes, chain_s)), format("%.2f", chain_s / slowest),
                  format("%.2f", queued * 1e3), same ? "yes" : "NO"})
            .c_str());
    std::fflush(stdout);
  }
  return same_everywhere;
}

}  // namespace hycc::bench

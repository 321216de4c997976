// Link and codec measurements for adaptive rules (see calibration.h).
#include "policy/calibration.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <vector>

#include "codec/float_io.h"
#include "comm/comm_attribute.h"
#include "comm/tags.h"
#include "comm/transport.h"
#include "device/device_ops.h"
#include "hycc/error.h"

namespace hycc::policy {
namespace {

constexpr size_t kSmallProbe = 8;
constexpr size_t kLargeProbe = size_t{1} << 20;
constexpr size_t kLargestProbe = size_t{16} << 20;
// A large probe faster than this grows 4x (up to kLargestProbe): links that absorb a burst
// (shapers, switch buffers) then show their sustained rate, and slow links pay one small probe.
constexpr double kProbeSeconds = 5e-3;
constexpr size_t kCodecSample = size_t{256} << 10;  // values

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The best of `tries` runs of `f` after one warmup run.
template <typename F>
double best_time(int tries, F&& f) {
  f();
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < tries; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    best = std::min(best, seconds_since(start));
  }
  return best;
}

}  // namespace

Calibration& calibration_of(const Communicator& comm) { return comm_attribute<Calibration>(comm); }

LinkFigures measure_link(const Communicator& comm) {
  const int p = comm.size();
  if (p < 2) return {};
  const int right = (comm.rank() + 1) % p, left = (comm.rank() + p - 1) % p;
  const int tag = comm::reserved_tag(comm);
  // Ring steps through the transport the algorithms use (comm/transport.h), one for the whole
  // measurement, so that a timed step holds only its transfers.
  const std::unique_ptr<comm::Transport> transport =
      comm::host_transport(comm, device::host_ops(), tag);
  std::vector<std::byte> out;
  device::Payload in;
  std::vector<device::Payload> sent;
  uint64_t round = 0;
  // One ring step of `bytes`: `out` lent to the transport until the send completes.
  const auto exchange = [&](size_t bytes) {
    transport->post_recv(left, bytes, round);
    transport->post_send(right, device::lent_payload(out.data(), bytes), round);
    ++round;
    transport->wait_recv(in);
    transport->reclaim(sent, true);
    sent.clear();
  };
  comm::barrier(comm);
  // The slowest rank's times decide, so every rank takes the same path through the loop.
  double t[2] = {0, 0};
  size_t probe = kLargeProbe;
  for (;; probe *= 4) {
    out.resize(probe);
    t[0] = best_time(5, [&] { exchange(kSmallProbe); });
    t[1] = best_time(3, [&] { exchange(probe); });
    comm::combine(comm, t, comm::Combine::kMax);
    if (t[1] >= kProbeSeconds || probe >= kLargestProbe) break;
  }
  LinkFigures link;
  link.latency = t[0];
  // A large exchange no slower than a small one: too fast to tell, as good as free.
  link.bandwidth = t[1] > t[0] ? double(probe - kSmallProbe) / (t[1] - t[0])
                               : std::numeric_limits<double>::infinity();
  return link;
}

std::string codec_key(const CodecConfig& codec, DType dtype, DataKind data) {
  return detail::concat(codec.spec(), " ", dtype_name(dtype), " ",
                        data == DataKind::kSmooth ? "smooth" : "gaussian");
}

CodecFigures measure_codec(const CodecConfig& codec, DType dtype, DataKind data) {
  const std::vector<float> values = make_data(data, kCodecSample);
  std::vector<std::byte> input(kCodecSample * dtype_size(dtype));
  const TensorView in{dtype, kCodecSample, input.data()};
  codec::store_from_float(values.data(), kCodecSample, in, 0);
  std::vector<std::byte> output(input.size());
  const TensorView decoded{dtype, kCodecSample, output.data()};
  CodecFigures f;
  std::vector<std::byte> stream;
  try {
    stream.resize(max_compressed_bytes(codec, in));
  } catch (const InvalidArgument&) {
    return f;  // the codec does not take this dtype
  }
  size_t size = 0;
  const double sample = double(input.size());
  f.compress = best_time(3, [&] { size = compress(codec, in, stream); }) / sample;
  f.decompress = best_time(3, [&] { decompress({stream.data(), size}, decoded); }) / sample;
  f.ratio = sample / double(size);
  f.usable = true;
  return f;
}

void agree(const Communicator& comm, std::span<CodecFigures> figures) {
  // Per figure: both times, the negated ratio and "unusable" (1) as maxima.
  std::vector<double> v;
  for (const CodecFigures& f : figures) {
    v.insert(v.end(), {f.compress, f.decompress, -f.ratio, f.usable ? 0.0 : 1.0});
  }
  comm::combine(comm, v, comm::Combine::kMax);
  for (size_t i = 0; i < figures.size(); ++i) {
    figures[i] = {v[4 * i], v[4 * i + 1], -v[4 * i + 2], v[4 * i + 3] == 0.0};
  }
}

}  // namespace hycc::policy

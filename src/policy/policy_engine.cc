// PolicyEngine: decisions, statistics, logging and the gradient compressors of a run (see
// hycc/policy_engine.h).
#include "hycc/policy_engine.h"

#include <array>
#include <cstdlib>
#include <fstream>

#include "comm/comm_attribute.h"
#include "comm/topology.h"
#include "common/buffer_pool.h"
#include "common/text_list.h"
#include "grad/engine.h"
#include "hycc/error.h"
#include "hycc/grad_device.h"
#include "policy/buffer_keys.h"
#include "policy/compressor_spec.h"
#include "policy/policy_calls.h"

namespace hycc {
namespace {

constexpr size_t kDimensions = 7;
constexpr size_t kOperations = 6;

int world_rank() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  int rank = 0;
  if (initialized != 0) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// Compressed calls per operation on one communicator, kept as an MPI attribute of it so that
// every rank of the communicator counts the same calls (and the count goes with the
// communicator when it is freed).
using CallCounts = std::array<uint64_t, kOperations>;

CallCounts& counts_of(const Communicator& comm) { return comm_attribute<CallCounts>(comm); }

uint64_t parse_count(const char* name, const char* text) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (*text == '\0' || *text == '-' || end == nullptr || *end != '\0') {
    throw InvalidArgument(tagged("policy", name, "='", text, "': expected a count >= 0"));
  }
  return v;
}

// The entry of `spec` in a map of compressors keyed by canonical spec (as the policies name
// them, and as load_state keys what it loads), made if missing. Another spelling of a spec
// finds the same compressor.
template <typename Compressor>
Compressor& find_or_make(std::map<std::string, std::unique_ptr<Compressor>>& compressors,
                         const std::string& spec) {
  auto it = compressors.find(spec);
  if (it != compressors.end()) return *it->second;
  // Made before it is inserted: a bad spec throws and leaves no empty entry behind.
  auto made = std::make_unique<Compressor>(spec);
  const std::string canonical = made->spec();
  return *compressors.try_emplace(canonical, std::move(made)).first->second;
}

}  // namespace

LogOptions LogOptions::parse(std::string_view spec) {
  LogOptions out;
  for (const std::string_view item : comma_items(spec)) {
    if (item.empty()) continue;
    if (item == "off") {
      out.warnings = false;
      continue;
    }
    if (item == "summary") {
      out.summary = true;
    } else if (item == "calls") {
      out.calls = true;
    } else if (item == "decisions") {
      out.decisions = true;
    } else if (item.starts_with("json=") && item.size() > 5) {
      out.json_path = std::string(item.substr(5));
    } else {
      throw InvalidArgument(tagged("policy", "HYCC_LOG: unknown item '", item,
                                   "'; expected off, summary, calls, decisions, json=FILE"));
    }
  }
  return out;
}

PolicyEngine::PolicyEngine(Policy policy, EngineOptions options)
    : policy_(std::move(policy)),
      options_(std::move(options)),
      mutex_(std::make_unique<std::mutex>()),
      grad_mutex_(std::make_unique<std::shared_mutex>()),
      buffer_keys_(std::make_unique<policy::BufferKeys>()) {
  if (options_.pool_limit_bytes) set_pool_limit(*options_.pool_limit_bytes);
}

PolicyEngine::~PolicyEngine() = default;
PolicyEngine::PolicyEngine(PolicyEngine&&) noexcept = default;
PolicyEngine& PolicyEngine::operator=(PolicyEngine&&) noexcept = default;

EngineOptions EngineOptions::from_environment() {
  EngineOptions options;
  if (const char* log = std::getenv("HYCC_LOG")) options.log = LogOptions::parse(log);
  if (const char* n = std::getenv("HYCC_SAMPLE_ERROR")) {
    options.sample_error_every = parse_count("HYCC_SAMPLE_ERROR", n);
  }
  if (const char* mib = std::getenv("HYCC_POOL_MIB")) {
    constexpr uint64_t kMostMiB = uint64_t{1} << 20;  // 1 TiB
    const uint64_t n = parse_count("HYCC_POOL_MIB", mib);
    if (n > kMostMiB) {
      throw InvalidArgument(tagged("policy", "HYCC_POOL_MIB='", mib, "': at most ", kMostMiB));
    }
    options.pool_limit_bytes = size_t(n) << 20;
  }
  return options;
}

PolicyEngine PolicyEngine::from_environment(std::string_view fallback) {
  EngineOptions options = EngineOptions::from_environment();
  return PolicyEngine(Policy::from_environment(fallback), std::move(options));
}

PolicyDecision PolicyEngine::decide(const Communicator& comm, Operation op, size_t bytes,
                                    DType dtype) const {
  return policy_.decide(dimension_of(comm, op), op, bytes, dtype);
}

CommStats PolicyEngine::stats() const {
  const std::lock_guard<std::mutex> lock(*mutex_);
  return stats_;
}

CommStats PolicyEngine::reduce_stats(const Communicator& comm) const {
  // Every (dimension, operation) cell as 12 sums, then the largest errors.
  constexpr size_t kSums = 12;
  std::vector<double> sums(kDimensions * kOperations * kSums, 0.0);
  std::vector<double> maxima(kDimensions * kOperations, 0.0);
  const CommStats mine = stats();
  for (size_t d = 0; d < kDimensions; ++d) {
    for (size_t o = 0; o < kOperations; ++o) {
      const StatsEntry* e = mine.find(static_cast<Dimension>(d), static_cast<Operation>(o));
      if (e == nullptr) continue;
      double* s = &sums[(d * kOperations + o) * kSums];
      s[0] = double(e->calls);
      s[1] = double(e->compressed_calls);
      s[2] = double(e->message_bytes);
      s[3] = double(e->raw_bytes);
      s[4] = double(e->wire_bytes);
      s[5] = e->codec_seconds;
      s[6] = e->seconds;
      s[7] = double(e->error_samples);
      s[8] = double(e->device_calls);
      s[9] = double(e->host_syncs);
      s[10] = double(e->two_level_calls);
      s[11] = double(e->topology_fallbacks);
      maxima[d * kOperations + o] = e->max_error;
    }
  }
  comm::combine(comm, sums, comm::Combine::kSum);
  comm::combine(comm, maxima, comm::Combine::kMax);
  CommStats out;
  for (size_t d = 0; d < kDimensions; ++d) {
    for (size_t o = 0; o < kOperations; ++o) {
      const double* s = &sums[(d * kOperations + o) * kSums];
      if (s[0] == 0 && s[7] == 0) continue;
      StatsEntry e;
      e.calls = uint64_t(s[0]);
      e.compressed_calls = uint64_t(s[1]);
      e.message_bytes = uint64_t(s[2]);
      e.raw_bytes = uint64_t(s[3]);
      e.wire_bytes = uint64_t(s[4]);
      e.codec_seconds = s[5];
      e.seconds = s[6];
      e.error_samples = uint64_t(s[7]);
      e.device_calls = uint64_t(s[8]);
      e.host_syncs = uint64_t(s[9]);
      e.two_level_calls = uint64_t(s[10]);
      e.topology_fallbacks = uint64_t(s[11]);
      e.max_error = maxima[d * kOperations + o];
      out.add(static_cast<Dimension>(d), static_cast<Operation>(o), e);
    }
  }
  return out;
}

GradientStates PolicyEngine::gradient_states() const {
  GradientStates s;
  const std::lock_guard<std::mutex> lock(*mutex_);
  for (const auto& [spec, c] : compressors_) {
    s.tensors += c->tensors();
    s.host_bytes += c->state_bytes();
  }
  for (const auto& [spec, c] : device_compressors_) {
    s.tensors += c->tensors();
    s.device_bytes += c->state_bytes();
  }
  s.dropped = dropped_states_;
  return s;
}

void PolicyEngine::finish(const Communicator& comm) const {
  const LogOptions& log = options_.log;
  if (!log.summary && log.json_path.empty()) return;
  const CommStats all = reduce_stats(comm);
  // The gradient compressors' states of the rank that holds the most of each.
  const GradientStates mine = gradient_states();
  std::array<int64_t, 4> most{int64_t(mine.tensors), int64_t(mine.host_bytes),
                              int64_t(mine.device_bytes), int64_t(mine.dropped)};
  comm::combine(comm, most, comm::Combine::kMax);
  // Collective on a communicator that has not needed its topology yet.
  const std::string topology = comm::topology(comm).describe();
  if (comm.rank() != 0) return;
  if (log.summary) {
    std::fprintf(options_.log_file, "hycc: policy '%s', statistics of %d ranks on %s\n%s",
                 policy_.name().c_str(), comm.size(), topology.c_str(), all.table().c_str());
    if (most[0] + most[3] > 0) {
      std::fprintf(options_.log_file,
                   "hycc: gradient compressor states: %llu tensors, %.1f MiB of host memory, "
                   "%.1f MiB of device memory, %llu dropped when their memory held another "
                   "buffer (the largest rank's)\n",
                   static_cast<unsigned long long>(most[0]), double(most[1]) / (1 << 20),
                   double(most[2]) / (1 << 20), static_cast<unsigned long long>(most[3]));
    }
    std::fflush(options_.log_file);
  }
  if (!log.json_path.empty()) {
    std::ofstream out(log.json_path);
    out << "{\"policy\": \"" << policy_.name() << "\", \"ranks\": " << comm.size()
        << ", \"statistics\": " << all.json() << ", \"gradient_states\": {\"tensors\": " << most[0]
        << ", \"host_bytes\": " << most[1] << ", \"device_bytes\": " << most[2]
        << ", \"dropped\": " << most[3] << "}}\n";
    if (!out) {
      throw IoError(tagged("policy", "HYCC_LOG: cannot write '", log.json_path, "'"));
    }
  }
}

GradCompressor& PolicyEngine::grad_compressor(const std::string& spec) {
  const std::lock_guard<std::mutex> lock(*mutex_);
  return find_or_make(compressors_, spec);
}

DeviceGradCompressor& PolicyEngine::device_grad_compressor(const std::string& spec) {
  const std::lock_guard<std::mutex> lock(*mutex_);
  return find_or_make(device_compressors_, spec);
}

uint64_t PolicyEngine::buffer_grad_key(const void* data, size_t count, size_t bytes,
                                       const Communicator& comm, Operation op) {
  const uint64_t key = policy::buffer_key(data, count, dimension_of(comm, op), op);
  const std::vector<uint64_t> stale = buffer_keys_->claim(data, bytes, key);
  if (stale.empty()) return key;
  const uint64_t dropped = drop_grad_states(stale);
  const std::lock_guard<std::mutex> lock(*mutex_);
  dropped_states_ += dropped;
  return key;
}

uint64_t PolicyEngine::drop_grad_states(std::span<const uint64_t> keys) {
  uint64_t n = 0;
  const std::lock_guard<std::mutex> lock(*mutex_);
  for (const uint64_t k : keys) {
    bool dropped = false;
    for (auto& [spec, c] : compressors_) dropped |= grad::EngineAccess::engine(*c).drop_if_idle(k);
    for (auto& [spec, c] : device_compressors_) dropped |= c->drop_if_idle(k);
    n += dropped ? 1 : 0;
  }
  return n;
}

uint64_t PolicyEngine::drop_buffer_states() { return drop_grad_states(buffer_keys_->release()); }

void PolicyEngine::record(const Communicator& comm, Operation op, const PolicyDecision& decision,
                          const CollectiveStats& call) {
  const Dimension d = dimension_of(comm, op);
  {
    const std::lock_guard<std::mutex> lock(*mutex_);
    stats_.record(d, op, call);
  }
  warn_if_costlier_than_ring(comm, op, decision, call);
  if (!options_.log.calls) return;
  const char* what = call.compressed
                         ? decision.compressor.c_str()
                         : (call.algorithm == Algorithm::kNative ? "native" : "uncompressed");
  const double ratio =
      call.wire_bytes == 0 ? 1.0 : double(call.raw_bytes) / double(call.wire_bytes);
  std::fprintf(options_.log_file, "[hycc] rank %d %s %s (%s) %zu B: %s, ratio %.2f, %.3f ms%s%s\n",
               world_rank(), operation_name(op), dimension_name(d),
               comm.name().empty() ? "unnamed" : comm.name().c_str(), call.message_bytes, what,
               ratio, call.seconds * 1e3, decision.rule < 0 ? ", no rule" : ", rule ",
               decision.rule < 0 ? "" : std::to_string(decision.rule + 1).c_str());
}

void PolicyEngine::warn_if_costlier_than_ring(const Communicator& comm, Operation op,
                                              const PolicyDecision& decision,
                                              const CollectiveStats& call) {
  const int p = comm.size();
  if (!options_.log.warnings || !decision.gradient || !call.compressed ||
      op != Operation::kAllreduce || p < 2) {
    return;
  }
  // The uncompressed ring's bytes per rank; 10% of slack for headers and length words.
  const double ring = 2.0 * double(p - 1) / double(p) * double(call.message_bytes);
  if (double(call.wire_bytes) <= 1.1 * ring) return;
  {
    const std::lock_guard<std::mutex> lock(*mutex_);
    if (!warned_.insert(decision.compressor + "@" + std::to_string(p)).second) return;
  }
  if (comm.rank() != 0) return;
  const policy::CompressorSpec spec = policy::parse_compressor(decision.compressor);
  const std::string hint =
      policy::error_feedback(spec) && !policy::two_stage(spec)
          ? "its two-stage form ef2+" + decision.compressor.substr(3) +
                " sends 2 (p-1)/p of the compressed tensor at any number of ranks"
          : "a compressor of higher ratio, or none, sends fewer";
  std::fprintf(options_.log_file,
               "[hycc] warning: %s on %s (%d ranks) sent %.1fx the bytes of an uncompressed ring "
               "allreduce (%zu B per rank against %.0f B); %s (docs/gradients.md)\n",
               decision.compressor.c_str(), comm.name().empty() ? "unnamed" : comm.name().c_str(),
               p, double(call.wire_bytes) / ring, call.wire_bytes, ring, hint.c_str());
}

void PolicyEngine::record_error(const Communicator& comm, Operation op, double max_abs_error) {
  const std::lock_guard<std::mutex> lock(*mutex_);
  stats_.record_error(dimension_of(comm, op), op, max_abs_error);
}

bool PolicyEngine::sample_error(const Communicator& comm, Operation op) {
  const uint64_t every = options_.sample_error_every;
  if (every == 0) return false;
  const std::lock_guard<std::mutex> lock(*mutex_);
  uint64_t& n = counts_of(comm)[static_cast<size_t>(op)];
  return ++n % every == 0;
}

void PolicyEngine::log_decision(const Communicator& comm, Operation op, size_t bytes,
                                const PolicyDecision& decision) {
  if (!options_.log.decisions) return;
  const Dimension d = dimension_of(comm, op);
  const std::string key = std::string(dimension_name(d)) + operation_name(op) + ":" +
                          std::to_string(decision.rule) + ":" + std::to_string(decision.candidate) +
                          (bytes < decision.threshold_bytes ? ":below" : ":above");
  {
    const std::lock_guard<std::mutex> lock(*mutex_);
    if (!explained_.insert(key).second) return;
  }
  std::fprintf(options_.log_file, "[hycc] rank %d %s%s", world_rank(),
               policy_.explain(d, op, bytes).c_str(), decision.choice.c_str());
}

}  // namespace hycc

// CommStats: per-dimension statistics, their table and JSON (see hycc/stats.h).
#include "hycc/stats.h"

#include <algorithm>
#include <cstdio>

namespace hycc {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

void accumulate(StatsEntry& to, const StatsEntry& e) {
  to.calls += e.calls;
  to.compressed_calls += e.compressed_calls;
  to.message_bytes += e.message_bytes;
  to.raw_bytes += e.raw_bytes;
  to.wire_bytes += e.wire_bytes;
  to.codec_seconds += e.codec_seconds;
  to.seconds += e.seconds;
  to.error_samples += e.error_samples;
  to.max_error = std::max(to.max_error, e.max_error);
  to.device_calls += e.device_calls;
  to.host_syncs += e.host_syncs;
  to.two_level_calls += e.two_level_calls;
  to.topology_fallbacks += e.topology_fallbacks;
}

std::string row(const std::string& dim, const std::string& op, const StatsEntry& e) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-11s %-15s %9llu %9llu %12.3f %12.3f %7.2f %10.4f %10.4f %10s\n",
                dim.c_str(), op.c_str(), static_cast<unsigned long long>(e.calls),
                static_cast<unsigned long long>(e.compressed_calls), double(e.raw_bytes) / 1e6,
                double(e.wire_bytes) / 1e6, e.ratio(), e.codec_seconds, e.transfer_seconds(),
                e.error_samples == 0 ? "-" : fmt("%.3e", e.max_error).c_str());
  return buf;
}

std::string json_entry(const StatsEntry& e) {
  return "\"calls\": " + std::to_string(e.calls) +
         ", \"compressed_calls\": " + std::to_string(e.compressed_calls) +
         ", \"message_bytes\": " + std::to_string(e.message_bytes) +
         ", \"raw_bytes\": " + std::to_string(e.raw_bytes) +
         ", \"wire_bytes\": " + std::to_string(e.wire_bytes) +
         ", \"ratio\": " + fmt("%.6g", e.ratio()) +
         ", \"codec_seconds\": " + fmt("%.6g", e.codec_seconds) +
         ", \"transfer_seconds\": " + fmt("%.6g", e.transfer_seconds()) +
         ", \"seconds\": " + fmt("%.6g", e.seconds) +
         ", \"error_samples\": " + std::to_string(e.error_samples) +
         ", \"max_error\": " + fmt("%.6g", e.max_error) +
         ", \"device_calls\": " + std::to_string(e.device_calls) +
         ", \"host_syncs\": " + std::to_string(e.host_syncs) +
         ", \"two_level_calls\": " + std::to_string(e.two_level_calls) +
         ", \"topology_fallbacks\": " + std::to_string(e.topology_fallbacks);
}

}  // namespace

void CommStats::record(Dimension d, Operation op, const CollectiveStats& call) {
  StatsEntry& e = entries_[{d, op}];
  ++e.calls;
  if (call.compressed) ++e.compressed_calls;
  e.message_bytes += call.message_bytes;
  e.raw_bytes += call.raw_bytes;
  e.wire_bytes += call.wire_bytes;
  e.codec_seconds += call.codec_seconds;
  e.seconds += call.seconds;
  if (call.algorithm == Algorithm::kTwoLevel) ++e.two_level_calls;
  if (call.topology_fallback) ++e.topology_fallbacks;
  if (call.on_device) {
    ++e.device_calls;
    e.host_syncs += call.host_syncs;
  }
}

void CommStats::record_error(Dimension d, Operation op, double max_abs_error) {
  StatsEntry& e = entries_[{d, op}];
  ++e.error_samples;
  e.max_error = std::max(e.max_error, max_abs_error);
}

void CommStats::add(Dimension d, Operation op, const StatsEntry& entry) {
  accumulate(entries_[{d, op}], entry);
}

const StatsEntry* CommStats::find(Dimension d, Operation op) const {
  const auto it = entries_.find({d, op});
  return it == entries_.end() ? nullptr : &it->second;
}

StatsEntry CommStats::total() const {
  StatsEntry t;
  for (const auto& [key, e] : entries_) accumulate(t, e);
  return t;
}

std::string CommStats::table() const {
  char head[256];
  std::snprintf(head, sizeof head, "%-11s %-15s %9s %9s %12s %12s %7s %10s %10s %10s\n",
                "#dimension", "operation", "calls", "compress", "before(MB)", "after(MB)", "ratio",
                "codec(s)", "transfer(s)", "max_error");
  std::string out = head;
  for (const auto& [key, e] : entries_) {
    out += row(dimension_name(key.first), operation_name(key.second), e);
  }
  out += row("total", "", total());
  // Device calls: what the host waited for (docs/gpu.md, "Stream-ordered calls").
  std::string waits;
  for (const auto& [key, e] : entries_) {
    if (e.device_calls == 0) continue;
    waits += std::string(waits.empty() ? "" : ", ") + dimension_name(key.first) + "/" +
             operation_name(key.second) + " " +
             fmt("%.1f", double(e.host_syncs) / double(e.device_calls)) + " (" +
             std::to_string(e.device_calls) + " calls)";
  }
  if (!waits.empty()) out += "#host syncs per device call: " + waits + "\n";
  // Two-level calls (docs/algorithms.md, "two-level"), and calls the topology kept on the ring.
  std::string levels;
  for (const auto& [key, e] : entries_) {
    if (e.two_level_calls + e.topology_fallbacks == 0) continue;
    levels +=
        std::string(levels.empty() ? "" : ", ") + dimension_name(key.first) + "/" +
        operation_name(key.second) + " " + std::to_string(e.two_level_calls) + " of " +
        std::to_string(e.calls) +
        (e.topology_fallbacks == 0 ? ""
                                   : " (" + std::to_string(e.topology_fallbacks) +
                                         " asked for and not possible on the topology: ring)");
  }
  if (!levels.empty()) out += "#two-level calls: " + levels + "\n";
  return out;
}

std::string CommStats::json() const {
  std::string out = "{\"entries\": [";
  bool first = true;
  for (const auto& [key, e] : entries_) {
    out += std::string(first ? "" : ", ") + "{\"dimension\": \"" + dimension_name(key.first) +
           "\", \"operation\": \"" + operation_name(key.second) + "\", " + json_entry(e) + "}";
    first = false;
  }
  return out + "], \"total\": {" + json_entry(total()) + "}}";
}

}  // namespace hycc

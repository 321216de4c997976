#include "tensor_dump.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hycc/error.h"

namespace hycc::train {

TensorDump::TensorDump(TensorDumpOptions options, int rank, int last_step)
    : options_(std::move(options)), rank_(rank) {
  if (options_.steps.empty()) options_.steps.insert(last_step);
  std::error_code error;
  std::filesystem::create_directories(options_.dir, error);
  if (error) {
    throw IoError(
        tagged("train", "cannot create --dump-tensors ", options_.dir, ": ", error.message()));
  }
}

void TensorDump::begin_step(int step) {
  step_ = step;
  active_ = options_.steps.count(step) != 0;
  done_.clear();
}

void TensorDump::record(std::string_view dimension, std::string_view kind, const float* data,
                        size_t count) {
  if (!active_ || count == 0 || written_ >= options_.max_bytes) return;
  const std::string key = std::string(dimension) + "-" + std::string(kind);
  if (!done_.insert(key).second) return;
  const size_t kept = std::min(count, (options_.max_bytes - written_) / sizeof(float));
  if (kept == 0) return;
  const std::string file =
      "rank" + std::to_string(rank_) + "-step" + std::to_string(step_) + "-" + key + ".f32";
  std::ofstream out(options_.dir + "/" + file, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(kept * 4));
  if (!out) throw IoError(tagged("train", "cannot write ", options_.dir, "/", file));
  written_ += kept * sizeof(float);
  entries_.push_back({file, std::string(dimension), std::string(kind), step_, kept, count});
  write_index();
}

void TensorDump::write_index() const {
  nlohmann::ordered_json index = nlohmann::ordered_json::array();
  for (const Entry& e : entries_) {
    index.push_back({{"file", e.file},
                     {"dimension", e.dimension},
                     {"kind", e.kind},
                     {"step", e.step},
                     {"rank", rank_},
                     {"count", e.count},
                     {"sent_count", e.total},
                     {"wire_dtype", options_.wire_dtype}});
  }
  const std::string path = options_.dir + "/index-rank" + std::to_string(rank_) + ".json";
  std::ofstream out(path);
  out << index.dump(1) << '\n';
  if (!out) throw IoError(tagged("train", "cannot write ", path));
}

}  // namespace hycc::train

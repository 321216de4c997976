#include "data.h"

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "rng.h"

namespace hycc::train {
namespace {

void copy_window(const TextData& text, size_t start, int T, int* tokens, int* targets) {
  for (int t = 0; t < T; ++t) {
    tokens[t] = text.bytes[start + t];
    targets[t] = text.bytes[start + t + 1];
  }
}

void check_length(const TextData& text, int T) {
  if (text.bytes.size() < static_cast<size_t>(T) + 1) {
    throw DataError(tagged("train:data", text.name, " has ", text.bytes.size(),
                           " bytes, fewer than a sequence of ", T + 1));
  }
}

}  // namespace

std::string default_data_dir() {
  if (const char* dir = std::getenv("HYCC_DATA_DIR"); dir != nullptr && *dir != '\0') {
    return std::string(dir) + "/corpus";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.cache/hycc/corpus";
}

TextData load_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw DataError(tagged("train:data", "cannot read ", path,
                           "; fetch the training text with scripts/fetch-data (or make data), "
                           "or point --data at a directory with train.txt and val.txt"));
  }
  TextData text;
  text.name = path;
  text.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (text.bytes.empty()) throw DataError(tagged("train:data", path, " is empty"));
  return text;
}

void sample_train_batch(const TextData& text, uint64_t seed, int64_t step, int first, int B, int T,
                        int* tokens, int* targets) {
  check_length(text, T);
  const uint64_t positions =
      text.bytes.size() - static_cast<size_t>(T);  // starts in [0, positions)
  for (int b = 0; b < B; ++b) {
    Rng rng(mix_seed(seed, 0x7261696EULL, static_cast<uint64_t>(step),
                     static_cast<uint64_t>(first + b)));
    copy_window(text, rng.below(positions), T, tokens + static_cast<size_t>(b) * T,
                targets + static_cast<size_t>(b) * T);
  }
}

void eval_batch(const TextData& text, int first, int B, int T, int total, int* tokens,
                int* targets) {
  check_length(text, T);
  const size_t positions = text.bytes.size() - static_cast<size_t>(T);
  for (int b = 0; b < B; ++b) {
    const size_t start = positions * static_cast<size_t>(first + b) / static_cast<size_t>(total);
    copy_window(text, start, T, tokens + static_cast<size_t>(b) * T,
                targets + static_cast<size_t>(b) * T);
  }
}

}  // namespace hycc::train

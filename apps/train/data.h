// Training text: bytes of a file (the text from scripts/fetch-data), sampled as
// (B, T+1) windows. Batches are a pure function of (seed, step, sequence index), so a resumed
// run sees the same batches, and any split of a step's sequences (data-parallel ranks,
// micro-batches) sees the same sequences as one rank would.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hycc/error.h"

namespace hycc::train {

// The data is missing or unusable; the message says how to get it.
class DataError : public Error {
 public:
  using Error::Error;
};

struct TextData {
  std::string name;  // file path or a label
  std::vector<uint8_t> bytes;
};

// ${HYCC_DATA_DIR:-$HOME/.cache/hycc}/corpus, where scripts/fetch-data writes.
std::string default_data_dir();

// Reads a whole file; DataError naming scripts/fetch-data when it is absent or too short.
TextData load_text(const std::string& path);

// Sequences [first, first + B) of optimizer step `step`: tokens (B, T) and targets (B, T), the
// window shifted by one. Sequence i starts at a position drawn from (seed, step, i).
void sample_train_batch(const TextData& text, uint64_t seed, int64_t step, int first, int B, int T,
                        int* tokens, int* targets);

// Validation sequences [first, first + B) of `total`, windows evenly spaced over the text.
void eval_batch(const TextData& text, int first, int B, int T, int total, int* tokens,
                int* targets);

}  // namespace hycc::train

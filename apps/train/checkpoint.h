// Checkpoints of one model part: parameters, AdamW moments of the optimizer's range, the step
// and the seed (batches are a function of seed and step, so nothing else is needed to resume
// exactly), plus opaque extra bytes for state kept elsewhere (e.g. gradient compressors).
//
// File format (little-endian, native floats): "HYCCCKPT", u32 version, i32 x 9 (max_seq_len,
// vocab_size, num_layers, num_heads, channels, tp_size, tp_rank, first_layer, last_layer),
// u64 seed, i64 step, u64 parameter count, u64 optimizer begin, u64 optimizer end, u64 extra
// bytes, then the parameters, m, v, the extra bytes, and a u64 checksum of everything before.
// Written to a temporary file and renamed, so a crash never leaves a half-written checkpoint.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "adamw.h"
#include "gpt_model.h"

namespace hycc::train {

// DIR/pp{first_layer}-tp{tp_rank}-dp{dp_rank}.ckpt: one file per model part and optimizer shard.
std::string checkpoint_path(const std::string& dir, const ModelPart& part, int dp_rank = 0);

void save_checkpoint(const std::string& path, const GPT& model, const AdamW& optimizer,
                     uint64_t seed, int64_t step, const std::vector<std::byte>& extra = {});

// Restores parameters and moments into model and optimizer, which must have the checkpoint's
// shape, part, optimizer range and seed (InvalidArgument naming the difference otherwise; a
// damaged file is a DataError). Returns the step; fills *extra when given.
int64_t load_checkpoint(const std::string& path, GPT& model, AdamW& optimizer, uint64_t seed,
                        std::vector<std::byte>* extra = nullptr);

}  // namespace hycc::train

// hycc-train's checkpoints hold the engine's gradient compressor state: PolicyEngine::save_state
// blobs, and the trainer's own format of checkpoints written before it.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "hycc/error.h"
#include "hycc/grad.h"
#include "hycc/policy_engine.h"
#include "parallel_trainer.h"

namespace hycc::train {
namespace {

template <typename T>
void put(std::vector<std::byte>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}

// The trainer's old blob: u32 count; per compressor u32 spec length, spec, u64 length, state.
std::vector<std::byte> legacy_blob(const std::string& spec, const std::vector<std::byte>& state) {
  std::vector<std::byte> out;
  put(out, uint32_t{1});
  put(out, static_cast<uint32_t>(spec.size()));
  for (const char c : spec) out.push_back(static_cast<std::byte>(c));
  put(out, static_cast<uint64_t>(state.size()));
  out.insert(out.end(), state.begin(), state.end());
  return out;
}

bool contains(const std::vector<std::byte>& blob, const std::string& text) {
  const std::string s(reinterpret_cast<const char*>(blob.data()), blob.size());
  return s.find(text) != std::string::npos;
}

TEST(TrainCompressorState, ReadsEngineBlobsAndTheOldFormat) {
  const std::string spec = "ef+quant:bits=4,block=64,round=nearest";
  const std::vector<std::byte> state = GradCompressor(spec).save();

  PolicyEngine old_format(Policy::preset("hybrid"));
  load_compressor_state(old_format, legacy_blob(spec, state));
  EXPECT_TRUE(contains(old_format.save_state(), spec)) << "the old blob's compressor was made";

  PolicyEngine saved(Policy::preset("hybrid"));
  saved.grad_compressor(spec);
  PolicyEngine loaded(Policy::preset("hybrid"));
  load_compressor_state(loaded, saved.save_state());
  EXPECT_EQ(loaded.save_state(), saved.save_state());

  PolicyEngine untouched(Policy::preset("hybrid"));
  load_compressor_state(untouched, {});  // a checkpoint without compressor state
  std::vector<std::byte> truncated = legacy_blob(spec, state);
  truncated.resize(truncated.size() - 3);
  EXPECT_THROW(load_compressor_state(untouched, truncated), Error);
}

}  // namespace
}  // namespace hycc::train

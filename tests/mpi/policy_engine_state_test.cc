// PolicyEngine::save_state / load_state: an engine loaded from another's blob continues with the
// same bits, host and device gradient compressors alike; a damaged blob is refused whole.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/xxh3.h"
#include "grad/state.h"
#include "hycc/collectives.h"
#include "hycc/collectives_device.h"
#include "hycc/error.h"
#include "hycc/grad.h"
#include "hycc/grad_device.h"
#include "hycc/policy_engine.h"

namespace hycc::test {
namespace {

std::vector<float> gradient(size_t n, int rank, int step) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = float(int((i * 7 + size_t(rank) * 3 + size_t(step) * 5) % 17) - 8) * 0.37f;
  }
  return v;
}

TensorView view(std::vector<float>& v) { return {DType::kF32, v.size(), v.data()}; }

DeviceCollectiveOptions emulated() {
  DeviceCollectiveOptions o;
  o.backend = DeviceBackend::kHostEmulation;
  return o;
}

// One step of `engine` on dp: a host allreduce (key 1) and a device one (key 2); the results.
std::vector<float> step(const Communicator& dp, PolicyEngine& engine, int s) {
  const size_t n = 1 << 17;
  std::vector<float> host = gradient(n, dp.rank(), s), device = gradient(n, dp.rank(), s + 9);
  CollectiveOptions o;
  o.policy = &engine;
  o.key = 1;
  allreduce(dp, view(host), view(host), ReduceOp::kAverage, o);
  DeviceCollectiveOptions d = emulated();
  d.policy = &engine;
  d.key = 2;
  allreduce_device(dp, view(device), view(device), ReduceOp::kAverage, d);
  host.insert(host.end(), device.begin(), device.end());
  return host;
}

TEST(PolicyEngineState, ALoadedEngineContinuesWithTheSameBits) {
  const Communicator dp = Communicator::world().dup("dp");
  PolicyEngine first(Policy::preset("hybrid"));
  step(dp, first, 0);
  step(dp, first, 1);
  const std::vector<std::byte> blob = first.save_state();

  PolicyEngine resumed(Policy::preset("hybrid"));
  resumed.load_state(blob, emulated());
  const std::string spec = "ef2+quant:bits=6,block=64,round=nearest";
  if (dp.size() > 1) {  // one rank runs natively: no compressor state
    EXPECT_EQ(resumed.grad_compressor(spec).residual(1), first.grad_compressor(spec).residual(1));
    EXPECT_EQ(resumed.device_grad_compressor(spec).residual(2),
              first.device_grad_compressor(spec).residual(2));
    EXPECT_FALSE(resumed.grad_compressor(spec).residual(1).empty());
  }
  for (int s = 2; s < 4; ++s) {
    const std::vector<float> want = step(dp, first, s), got = step(dp, resumed, s);
    EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << "step " << s;
  }
  // A fresh engine would not: its residuals start at zero.
  if (dp.size() > 1) {
    PolicyEngine fresh(Policy::preset("hybrid"));
    const std::vector<float> want = step(dp, first, 4), got = step(dp, fresh, 4);
    EXPECT_NE(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
  }
}

TEST(PolicyEngineState, DamagedBlobsAreRefusedWhole) {
  const Communicator dp = Communicator::world().dup("dp");
  PolicyEngine engine(Policy::preset("hybrid"));
  step(dp, engine, 0);
  const std::vector<std::byte> blob = engine.save_state();
  std::vector<std::vector<std::byte>> bad = {
      {}, {blob.begin(), blob.end() - 1}, {blob.begin(), blob.begin() + 12}};
  for (const size_t at : {size_t{0}, size_t{9}, blob.size() / 2, blob.size() - 1}) {
    bad.push_back(blob);
    bad.back()[at] ^= std::byte{0x40};
  }
  for (const std::vector<std::byte>& b : bad) {
    PolicyEngine other(Policy::preset("hybrid"));
    EXPECT_THROW(other.load_state(b, emulated()), CorruptStream) << b.size() << " bytes";
    // Nothing was loaded: the engine made no compressor.
    const std::vector<std::byte> empty = other.save_state();
    EXPECT_EQ(empty.size(), 4u + 4u + 4u + 8u);
  }
  // A blob whose framing is sound but whose second compressor's state is not: before, the
  // first compressor was loaded by then (found by tests/fuzz/fuzz_state).
  PolicyEngine two(Policy::preset("hybrid"));
  two.grad_compressor("ef+quant:bits=4");
  two.grad_compressor("sign");
  step(dp, two, 0);
  std::vector<std::byte> half_bad = two.save_state();
  const std::string sign_spec = two.grad_compressor("sign").spec();
  const auto at = std::search(half_bad.begin(), half_bad.end(), sign_spec.begin(), sign_spec.end(),
                              [](std::byte b, char c) { return b == std::byte(c); });
  ASSERT_NE(at, half_bad.end());
  *(at + std::ptrdiff_t(sign_spec.size()) + 8) ^= std::byte{1};  // the magic of sign's state
  const uint64_t sum = xxh3(half_bad.data(), half_bad.size() - 8);
  std::memcpy(half_bad.data() + half_bad.size() - 8, &sum, 8);
  PolicyEngine target(Policy::preset("hybrid"));
  step(dp, target, 1);
  const std::vector<std::byte> before = target.save_state();
  EXPECT_THROW(target.load_state(half_bad, emulated()), CorruptStream);
  EXPECT_EQ(target.save_state(), before);
  // A spec this build does not take is refused the same way; and an engine asked for a bad
  // compressor keeps no empty entry for it (save_state dereferenced it before).
  EXPECT_THROW(target.grad_compressor("ef+nonsense"), InvalidArgument);
  EXPECT_EQ(target.save_state(), before);

  // An engine without compressors saves and loads an empty state.
  PolicyEngine none(Policy::preset("baseline"));
  none.load_state(none.save_state());
}

// An engine blob of one host entry (the format of engine_state.cc, version 2 unless told), with a
// spec as an earlier hycc wrote it: the spec in the entry and in the compressor's own state.
std::vector<std::byte> engine_blob(const std::string& spec, const std::vector<std::byte>& state,
                                   uint32_t version = 2) {
  std::vector<std::byte> out;
  const auto put = [&](const void* p, size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    out.insert(out.end(), b, b + n);
  };
  const uint32_t entries = 1, spec_size = uint32_t(spec.size());
  const uint64_t state_size = state.size();
  const uint8_t host = 0;
  put("HYES", 4);
  put(&version, 4);
  put(&entries, 4);
  put(&host, 1);
  put(&spec_size, 4);
  put(spec.data(), spec.size());
  put(&state_size, 8);
  put(state.data(), state.size());
  const uint64_t sum = xxh3(out.data(), out.size());
  put(&sum, 8);
  return out;
}

// The engine keeps one compressor per canonical spec: another spelling finds it, and a blob
// saved when the canonical form lacked a parameter added since (powersgd's flat) loads into
// the compressor the policies name now, instead of one no call ever reaches.
TEST(PolicyEngineState, SpellingsAndOlderCanonicalSpecsFindTheSameCompressor) {
  const Communicator dp = Communicator::world().dup("dp");
  PolicyEngine engine(Policy::preset("hybrid"));
  EXPECT_EQ(&engine.grad_compressor("ef+quant:bits=4"),
            &engine.grad_compressor("ef+quant:bits=4,block=64,round=nearest"));
  EXPECT_EQ(&engine.device_grad_compressor("sign"), &engine.device_grad_compressor("sign:ef=on"));

  GradCompressor& powersgd = engine.grad_compressor("powersgd:rank=2");
  const std::string now = powersgd.spec();
  const std::string before = "powersgd:rank=2,min_compression=2,warm_start=on,ef=on,seed=0,start=0";
  ASSERT_NE(now, before);
  std::vector<float> g = gradient(64 * 48, dp.rank(), 0);
  grad_allreduce(dp, powersgd, {9, {64, 48}}, view(g));
  const grad::StateTable states = grad::deserialize_state(now, powersgd.save());
  PolicyEngine resumed(Policy::preset("hybrid"));
  resumed.load_state(engine_blob(before, grad::serialize_state(before, states)));
  EXPECT_FALSE(resumed.grad_compressor(now).residual(9).empty());
  EXPECT_EQ(resumed.grad_compressor(now).residual(9), powersgd.residual(9));

  // A blob of version 1 (before XXH3) is refused by its version.
  const auto old_blob = engine_blob(now, grad::serialize_state(now, states), 1);
  try {
    PolicyEngine(Policy::preset("hybrid")).load_state(old_blob);
    ADD_FAILURE() << "a version 1 engine state loaded";
  } catch (const CorruptStream& e) {
    EXPECT_NE(std::string(e.what()).find("version 1, this build reads version 2"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace hycc::test

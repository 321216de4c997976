// fuzz_state: checkpoints of gradient compressors and of a policy engine, read from arbitrary
// bytes (the harness recomputes the blob's checksum, so the parsers' own checks are what the input
// meets). The first byte picks the reader: a host compressor of one of kSpecs, or a
// PolicyEngine (host and host-emulated device compressors). Properties:
// - only CorruptStream or InvalidArgument, no memory errors, no allocation the blob's size does
//   not justify;
// - a compressor steps on what it loaded (1 rank) without memory errors;
// - PolicyEngine::load_state loads all or nothing: after a rejected blob the engine's state is
//   what it was; after an accepted one, save_state() reads back to the same bytes.
#include <cstring>

#include "common/xxh3.h"
#include "fuzz_target.h"
#include "grad/engine.h"
#include "grad/state.h"
#include "grad/thread_exchange.h"
#include "hycc/collectives_device.h"
#include "hycc/error.h"
#include "hycc/grad.h"
#include "hycc/policy_engine.h"

namespace hycc::fuzz {
namespace {

const char* const kSpecs[] = {
    "ef+quant:bits=4", "ef2+quant:bits=6",
    "powersgd:rank=2", "powersgd:rank=1,ef=off,warm_start=off,min_compression=1",
    "topk:ratio=0.1",  "sign",
    "sign:ef=off",     "none"};
constexpr size_t kSpecCount = sizeof kSpecs / sizeof kSpecs[0];
constexpr uint64_t kMaxStepCount = 1 << 14;

void reseal(Bytes& blob) {
  if (blob.size() < 8) return;
  const uint64_t sum = xxh3(blob.data(), blob.size() - 8);
  std::memcpy(blob.data() + blob.size() - 8, &sum, 8);
}

std::span<const std::byte> as_bytes(const Bytes& b) {
  return {reinterpret_cast<const std::byte*>(b.data()), b.size()};
}

// One step on 1 rank for every loaded key that belongs to 1 rank, shaped as a rows x cols matrix.
void step_loaded(grad::Engine& engine, uint8_t shape_byte) {
  grad::ThreadGroup group(1);
  grad::ThreadExchange ex(group, 0);
  std::vector<std::pair<uint64_t, uint64_t>> keys;
  for (const auto& [key, s] : engine.states()) {
    if (s.size == 1 && s.count > 0 && s.count <= kMaxStepCount) keys.emplace_back(key, s.count);
  }
  for (const auto& [key, count] : keys) {
    size_t rows = 1 + shape_byte % 16;
    while (count % rows != 0) --rows;
    std::vector<float> g(count);
    for (size_t i = 0; i < count; ++i) g[i] = static_cast<float>(i % 7) - 3.0f;
    engine.allreduce(ex, GradTensor(key, {rows, count / rows}), {DType::kF32, count, g.data()},
                     ReduceOp::kSum);
  }
}

DeviceCollectiveOptions emulated() {
  DeviceCollectiveOptions o;
  o.backend = DeviceBackend::kHostEmulation;
  return o;
}

Bytes engine_blob();

void fuzz_engine(const Bytes& blob) {
  PolicyEngine engine{Policy()};
  // A state to lose: host compressors and a device one, with keys.
  static const Bytes before_blob = engine_blob();
  engine.load_state(as_bytes(before_blob), emulated());
  const std::vector<std::byte> before = engine.save_state();
  try {
    engine.load_state(as_bytes(blob), emulated());
  } catch (const CorruptStream&) {
    check(engine.save_state() == before, "a rejected engine state changed the engine");
    return;
  } catch (const InvalidArgument&) {
    check(engine.save_state() == before, "a rejected engine state changed the engine");
    return;
  }
  const std::vector<std::byte> saved = engine.save_state();
  PolicyEngine again{Policy()};
  again.load_state(saved, emulated());
  check(again.save_state() == saved, "an engine state does not read back to the same bytes");
}

// A compressor's state after two steps on 1 rank, of a matrix and of a vector.
Bytes stepped_state(const char* spec) {
  grad::Engine engine(spec);
  grad::ThreadGroup group(1);
  grad::ThreadExchange ex(group, 0);
  for (int step = 0; step < 2; ++step) {
    std::vector<float> m(48), v(5);
    for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<float>((i * 7 + step) % 11) - 5;
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.5f * static_cast<float>(i);
    engine.allreduce(ex, GradTensor(3, {8, 6}), {DType::kF32, m.size(), m.data()}, ReduceOp::kSum);
    engine.allreduce(ex, GradTensor(9), {DType::kF32, v.size(), v.data()}, ReduceOp::kSum);
  }
  const std::vector<std::byte> blob =
      grad::serialize_state(engine.spec().canonical, engine.states());
  const auto* p = reinterpret_cast<const uint8_t*>(blob.data());
  return Bytes(p, p + blob.size());
}

// Every compressor of kSpecs with its stepped state, and a device compressor without keys.
Bytes engine_blob() {
  PolicyEngine engine{Policy()};
  for (const char* spec : kSpecs) {
    const Bytes b = stepped_state(spec);
    engine.grad_compressor(grad::Engine(spec).spec().canonical).load(as_bytes(b));
  }
  engine.device_grad_compressor(grad::Engine(kSpecs[0]).spec().canonical);
  const std::vector<std::byte> all = engine.save_state();
  const auto* p = reinterpret_cast<const uint8_t*>(all.data());
  return Bytes(p, p + all.size());
}

}  // namespace

std::vector<Bytes> seeds() {
  std::vector<Bytes> out;
  for (size_t i = 0; i < kSpecCount; ++i) {
    Bytes b = stepped_state(kSpecs[i]);
    b.insert(b.begin(), {static_cast<uint8_t>(i), 5});
    out.push_back(std::move(b));
  }
  Bytes e = engine_blob();
  e.insert(e.begin(), static_cast<uint8_t>(kSpecCount));
  out.push_back(std::move(e));
  return out;
}

}  // namespace hycc::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hycc;
  fuzz::Input input(data, size);
  const size_t target = input.byte() % (fuzz::kSpecCount + 1);
  if (target == fuzz::kSpecCount) {
    fuzz::Bytes blob = input.rest();
    fuzz::reseal(blob);
    fuzz::fuzz_engine(blob);
    return 0;
  }
  const uint8_t shape = input.byte();
  fuzz::Bytes blob = input.rest();
  fuzz::reseal(blob);
  grad::Engine engine(fuzz::kSpecs[target]);
  try {
    engine.states() = grad::deserialize_state(engine.spec().canonical, fuzz::as_bytes(blob));
  } catch (const CorruptStream&) {
    return 0;
  } catch (const InvalidArgument&) {
    return 0;
  }
  fuzz::step_loaded(engine, shape);
  return 0;
}

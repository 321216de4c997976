// PolicyEngine::save_state / load_state: every gradient compressor's state in one blob.
//
// Format: "HYES", u32 version, u32 entries; per entry u8 where (0 host, 1 device), u32 spec
// length, the spec, u64 state length, the compressor's save() blob; then a u64 checksum of all
// the bytes before it.
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/xxh3.h"
#include "hycc/collectives_device.h"
#include "hycc/error.h"
#include "hycc/grad_device.h"
#include "hycc/policy_engine.h"

namespace hycc {
namespace {

constexpr char kMagic[4] = {'H', 'Y', 'E', 'S'};
// Version 1 had a hand-written xxHash64-style checksum; 2 has XXH3 (libxxhash).
constexpr uint32_t kVersion = 2;

void put_bytes(std::vector<std::byte>& out, const void* p, size_t n) {
  if (n == 0) return;
  const size_t at = out.size();
  out.resize(at + n);
  std::memcpy(out.data() + at, p, n);
}
template <typename T>
void put(std::vector<std::byte>& out, T v) {
  put_bytes(out, &v, sizeof v);
}

struct Entry {
  bool device = false;
  std::string spec;
  std::span<const std::byte> state;
};

[[noreturn]] void corrupt(const std::string& why) {
  throw CorruptStream(tagged("policy", "bad engine state blob: ", why));
}

// The entries of a blob, checked whole before anything is loaded.
std::vector<Entry> parse(std::span<const std::byte> blob) {
  if (blob.size() < sizeof kMagic + 4 + 4 + 8) corrupt("shorter than a header");
  if (std::memcmp(blob.data(), kMagic, sizeof kMagic) != 0) corrupt("wrong magic");
  const size_t body = blob.size() - sizeof(uint64_t);
  uint64_t stored = 0;
  std::memcpy(&stored, blob.data() + body, sizeof stored);
  uint32_t saved_version = 0;
  std::memcpy(&saved_version, blob.data() + sizeof kMagic, sizeof saved_version);
  if (saved_version != kVersion) {
    corrupt(detail::concat("version ", saved_version, ", this build reads version ", kVersion,
                           saved_version < kVersion ? " (saved by an older hycc)" : ""));
  }
  if (xxh3(blob.data(), body) != stored) corrupt("checksum mismatch");
  size_t pos = sizeof kMagic;
  const auto take = [&](size_t n) {
    if (n > body - pos) corrupt("truncated");
    const std::byte* p = blob.data() + pos;
    pos += n;
    return p;
  };
  const auto get = [&]<typename T>(T) {
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  };
  get(uint32_t{});  // the version, checked above
  const uint32_t entries = get(uint32_t{});
  std::vector<Entry> out;
  for (uint32_t i = 0; i < entries; ++i) {
    Entry e;
    const uint8_t where = get(uint8_t{});
    if (where > 1) corrupt(detail::concat("entry ", i, " is neither host nor device"));
    e.device = where == 1;
    const uint32_t spec_size = get(uint32_t{});
    e.spec.assign(reinterpret_cast<const char*>(take(spec_size)), spec_size);
    const uint64_t state_size = get(uint64_t{});
    if (state_size > body - pos) corrupt("truncated");
    e.state = blob.subspan(pos, state_size);
    take(state_size);
    out.push_back(std::move(e));
  }
  if (pos != body) corrupt("bytes after the last entry");
  return out;
}

}  // namespace

std::vector<std::byte> PolicyEngine::save_state() const {
  // The compressors, taken under the lock (saved outside it: a device save waits for the GPU).
  struct Made {
    const std::string* spec;
    const GradCompressor* host;
    const DeviceGradCompressor* device;
  };
  std::vector<Made> made;
  {
    const std::lock_guard<std::mutex> lock(*mutex_);
    for (const auto& [spec, c] : compressors_) made.push_back({&spec, c.get(), nullptr});
    for (const auto& [spec, c] : device_compressors_) made.push_back({&spec, nullptr, c.get()});
  }
  std::vector<std::byte> out;
  put_bytes(out, kMagic, sizeof kMagic);
  put(out, kVersion);
  put(out, static_cast<uint32_t>(made.size()));
  for (const auto& [spec_of, host, device] : made) {
    const std::string& spec = *spec_of;
    const std::vector<std::byte> state = device != nullptr ? device->save() : host->save();
    put(out, static_cast<uint8_t>(device != nullptr ? 1 : 0));
    put(out, static_cast<uint32_t>(spec.size()));
    put_bytes(out, spec.data(), spec.size());
    put(out, static_cast<uint64_t>(state.size()));
    put_bytes(out, state.data(), state.size());
  }
  put(out, xxh3(out.data(), out.size()));
  return out;
}

void PolicyEngine::load_state(std::span<const std::byte> blob) {
  load_state(blob, DeviceCollectiveOptions{});
}

void PolicyEngine::load_state(std::span<const std::byte> blob,
                              const DeviceCollectiveOptions& device) {
  // All or nothing: every entry is loaded into a compressor of its own first (a bad spec or a
  // malformed state throws here, with the engine untouched), then moved into the engine's, so
  // that references from grad_compressor() stay valid.
  std::map<std::string, std::unique_ptr<GradCompressor>> host;
  std::map<std::string, std::unique_ptr<DeviceGradCompressor>> on_device;
  // Keyed by the compressor's canonical spec, as the policies name them: a spec saved by an
  // earlier version, whose canonical form lacked a parameter added since, lands where this
  // version's policies look for it.
  const auto add = [](auto& loaded, auto compressor) {
    const std::string spec = compressor->spec();
    if (!loaded.emplace(spec, std::move(compressor)).second) {
      corrupt(detail::concat("compressor '", spec, "' appears twice"));
    }
  };
  for (const Entry& e : parse(blob)) {
    if (e.device) {
      auto c = std::make_unique<DeviceGradCompressor>(e.spec);
      c->load(e.state, device);
      add(on_device, std::move(c));
    } else {
      auto c = std::make_unique<GradCompressor>(e.spec);
      c->load(e.state);
      add(host, std::move(c));
    }
  }
  const std::unique_lock<std::shared_mutex> calls(*grad_mutex_);  // no compressor mid-step
  const std::lock_guard<std::mutex> lock(*mutex_);
  const auto install = [](auto& loaded, auto& engines) {
    for (auto& [spec, c] : loaded) {
      auto& slot = engines[spec];
      if (slot == nullptr) {
        slot = std::move(c);
      } else {
        *slot = std::move(*c);
      }
    }
  };
  install(host, compressors_);
  install(on_device, device_compressors_);
}

}  // namespace hycc

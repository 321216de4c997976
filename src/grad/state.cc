#include "grad/state.h"

#include <cstring>

#include "common/xxh3.h"
#include "grad/grad_spec.h"
#include "hycc/error.h"

namespace hycc::grad {
namespace {

constexpr char kMagic[4] = {'H', 'Y', 'G', 'S'};
// Version 1 had a hand-written xxHash64-style checksum; 2 has XXH3 (libxxhash).
constexpr uint32_t kVersion = 2;

class Writer {
 public:
  template <typename T>
  void put(T v) {
    bytes(&v, sizeof v);
  }
  void bytes(const void* p, size_t n) {
    if (n == 0) return;
    const auto* b = static_cast<const std::byte*>(p);
    out.insert(out.end(), b, b + n);
  }
  void floats(const std::vector<float>& v) {
    put<uint64_t>(v.size());
    bytes(v.data(), v.size() * sizeof(float));
  }
  std::vector<std::byte> out;
};

class Reader {
 public:
  explicit Reader(std::span<const std::byte> in) : in_(in) {}
  template <typename T>
  T get() {
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
  const std::byte* take(size_t n) {
    if (n > in_.size() - pos_) corrupt("truncated");
    const std::byte* p = in_.data() + pos_;
    pos_ += n;
    return p;
  }
  std::vector<float> floats() {
    const uint64_t n = get<uint64_t>();
    if (n > (in_.size() - pos_) / sizeof(float)) corrupt("array longer than the blob");
    std::vector<float> v(n);
    const std::byte* data = take(n * sizeof(float));
    if (n > 0) std::memcpy(v.data(), data, n * sizeof(float));  // v.data() may be null for n 0
    return v;
  }
  size_t pos() const { return pos_; }
  [[noreturn]] static void corrupt(const std::string& why) {
    throw CorruptStream(tagged("grad", "bad state blob: ", why));
  }

 private:
  std::span<const std::byte> in_;
  size_t pos_ = 0;
};

// The canonical form of a spec saved by an earlier version (whose canonical form may lack a
// parameter added since, with its default), or "" if this version does not take it.
std::string canonical_or_empty(const std::string& saved) {
  try {
    return parse_grad_spec(saved).canonical;
  } catch (const InvalidArgument&) {
    return {};
  }
}

}  // namespace

std::vector<std::byte> serialize_state(const std::string& spec, const StateTable& table) {
  Writer w;
  w.bytes(kMagic, sizeof kMagic);
  w.put<uint32_t>(kVersion);
  w.put<uint32_t>(static_cast<uint32_t>(spec.size()));
  w.bytes(spec.data(), spec.size());
  w.put<uint64_t>(table.size());
  for (const auto& [key, s] : table) {
    w.put<uint64_t>(key);
    w.put<uint64_t>(s.steps);
    w.put<int32_t>(s.rank);
    w.put<int32_t>(s.size);
    w.put<uint64_t>(s.count);
    w.floats(s.residual);
    w.floats(s.aux);
  }
  w.put<uint64_t>(xxh3(w.out.data(), w.out.size()));
  return std::move(w.out);
}

StateTable deserialize_state(const std::string& spec, std::span<const std::byte> blob) {
  if (blob.size() < sizeof kMagic + 8 + 8 + 8) Reader::corrupt("shorter than a header");
  const size_t body = blob.size() - sizeof(uint64_t);
  uint64_t stored = 0;
  std::memcpy(&stored, blob.data() + body, sizeof stored);
  if (std::memcmp(blob.data(), kMagic, sizeof kMagic) != 0) Reader::corrupt("wrong magic");
  uint32_t version = 0;
  std::memcpy(&version, blob.data() + sizeof kMagic, sizeof version);
  if (version != kVersion) {
    Reader::corrupt(detail::concat("version ", version, ", this build reads version ", kVersion,
                                   version < kVersion ? " (saved by an older hycc)" : ""));
  }
  if (xxh3(blob.data(), body) != stored) Reader::corrupt("checksum mismatch");
  Reader r(blob.first(body));
  r.take(sizeof kMagic);
  r.get<uint32_t>();  // the version
  const auto spec_bytes = r.get<uint32_t>();
  const std::byte* spec_data = r.take(spec_bytes);
  const std::string saved(reinterpret_cast<const char*>(spec_data), spec_bytes);
  if (saved != spec && canonical_or_empty(saved) != spec) {
    throw InvalidArgument(
        tagged("grad", "state saved by '", saved, "' cannot be loaded into '", spec, "'"));
  }
  const auto entries = r.get<uint64_t>();
  StateTable table;
  for (uint64_t e = 0; e < entries; ++e) {
    const auto key = r.get<uint64_t>();
    TensorState s;
    s.steps = r.get<uint64_t>();
    s.rank = r.get<int32_t>();
    s.size = r.get<int32_t>();
    s.count = r.get<uint64_t>();
    s.residual = r.floats();
    s.aux = r.floats();
    if ((!s.residual.empty() && s.residual.size() != s.count) || s.size < 0 || s.rank >= s.size ||
        (s.rank < 0) != (s.size == 0)) {
      Reader::corrupt(detail::concat("inconsistent entry for key ", key));
    }
    if (!table.emplace(key, std::move(s)).second) {
      Reader::corrupt(detail::concat("key ", key, " appears twice"));
    }
  }
  if (r.pos() != body) Reader::corrupt("bytes after the last entry");
  return table;
}

}  // namespace hycc::grad

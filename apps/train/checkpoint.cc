#include "checkpoint.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/xxh3.h"
#include "data.h"
#include "hycc/error.h"

namespace hycc::train {
namespace {

constexpr char kMagic[8] = {'H', 'Y', 'C', 'C', 'C', 'K', 'P', 'T'};
// Version 1 had a hand-written xxHash64-style checksum; 2 has XXH3 (libxxhash).
constexpr uint32_t kVersion = 2;

class Writer {
 public:
  template <typename T>
  void put(const T& value) {
    bytes(&value, sizeof(T));
  }
  void bytes(const void* data, size_t n) {
    if (n == 0) return;
    const auto* p = static_cast<const char*>(data);
    buffer_.insert(buffer_.end(), p, p + n);
  }
  std::vector<char>& buffer() { return buffer_; }

 private:
  std::vector<char> buffer_;
};

class Reader {
 public:
  Reader(const std::vector<char>& buffer, const std::string& path) : buf_(buffer), path_(path) {}
  template <typename T>
  T get() {
    T value;
    bytes(&value, sizeof(T));
    return value;
  }
  void bytes(void* out, size_t n) {
    if (n == 0) return;  // out may be null (an empty vector's data())
    if (n > buf_.size() - pos_) throw DataError(tagged("train:checkpoint", path_, " is truncated"));
    std::memcpy(out, buf_.data() + pos_, n);
    pos_ += n;
  }
  size_t pos() const { return pos_; }

 private:
  const std::vector<char>& buf_;
  const std::string& path_;
  size_t pos_ = 0;
};

std::vector<int32_t> shape_fields(const GPT& m) {
  const GPTConfig& c = m.config;
  const ModelPart& p = m.part;
  return {c.max_seq_len, c.vocab_size, c.num_layers,  c.num_heads, c.channels,
          p.tp_size,     p.tp_rank,    p.first_layer, p.last_layer};
}

constexpr const char* kShapeNames[] = {"max_seq_len", "vocab_size",  "num_layers",
                                       "num_heads",   "channels",    "tp_size",
                                       "tp_rank",     "first_layer", "last_layer"};

}  // namespace

std::string checkpoint_path(const std::string& dir, const ModelPart& part, int dp_rank) {
  return detail::concat(dir, "/pp", part.first_layer, "-tp", part.tp_rank, "-dp", dp_rank, ".ckpt");
}

void save_checkpoint(const std::string& path, const GPT& model, const AdamW& optimizer,
                     uint64_t seed, int64_t step, const std::vector<std::byte>& extra) {
  Writer w;
  w.bytes(kMagic, sizeof(kMagic));
  w.put(kVersion);
  for (int32_t f : shape_fields(model)) w.put(f);
  w.put(seed);
  w.put(step);
  w.put(static_cast<uint64_t>(model.params_memory.size()));
  w.put(static_cast<uint64_t>(optimizer.begin()));
  w.put(static_cast<uint64_t>(optimizer.end()));
  w.put(static_cast<uint64_t>(extra.size()));
  w.bytes(model.params_memory.data(), model.params_memory.size() * sizeof(float));
  w.bytes(optimizer.m().data(), optimizer.m().size() * sizeof(float));
  w.bytes(optimizer.v().data(), optimizer.v().size() * sizeof(float));
  w.bytes(extra.data(), extra.size());
  w.put(xxh3(w.buffer().data(), w.buffer().size()));

  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(w.buffer().data(), static_cast<std::streamsize>(w.buffer().size()));
    if (!out) throw DataError(tagged("train:checkpoint", "cannot write ", tmp));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw DataError(tagged("train:checkpoint", "cannot rename ", tmp, ": ", ec.message()));
}

int64_t load_checkpoint(const std::string& path, GPT& model, AdamW& optimizer, uint64_t seed,
                        std::vector<std::byte>* extra) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(tagged("train:checkpoint", "cannot read ", path));
  const std::vector<char> buf((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
  if (buf.size() < sizeof(kMagic) + 8 || std::memcmp(buf.data(), kMagic, sizeof(kMagic)) != 0) {
    throw DataError(tagged("train:checkpoint", path, " is not a hycc-train checkpoint"));
  }
  uint32_t saved_version = 0;
  std::memcpy(&saved_version, buf.data() + sizeof(kMagic), sizeof(saved_version));
  if (saved_version != kVersion) {
    throw DataError(tagged("train:checkpoint", path, " has version ", saved_version,
                           ", this build reads version ", kVersion,
                           saved_version < kVersion ? " (written by an older hycc-train)" : ""));
  }
  uint64_t stored_sum = 0;
  std::memcpy(&stored_sum, buf.data() + buf.size() - 8, 8);
  if (xxh3(buf.data(), buf.size() - 8) != stored_sum) {
    throw DataError(tagged("train:checkpoint", path, " is damaged (checksum mismatch)"));
  }
  Reader r(buf, path);
  char magic[8];
  r.bytes(magic, sizeof(magic));
  r.get<uint32_t>();  // the version, checked above
  auto mismatch = [&](const char* what, auto stored, auto expected) {
    throw InvalidArgument(
        tagged("train:checkpoint", path, " has ", what, " ", stored, ", this run has ", expected));
  };
  const std::vector<int32_t> fields = shape_fields(model);
  for (size_t i = 0; i < fields.size(); ++i) {
    const auto stored = r.get<int32_t>();
    if (stored != fields[i]) mismatch(kShapeNames[i], stored, fields[i]);
  }
  if (const auto s = r.get<uint64_t>(); s != seed) mismatch("seed", s, seed);
  const auto step = r.get<int64_t>();
  const auto n = r.get<uint64_t>();
  if (n != model.params_memory.size()) mismatch("parameter count", n, model.params_memory.size());
  const auto begin = r.get<uint64_t>();
  const auto end = r.get<uint64_t>();
  if (begin != optimizer.begin() || end != optimizer.end()) {
    mismatch("optimizer range begin", begin, optimizer.begin());
  }
  const auto n_extra = r.get<uint64_t>();
  r.bytes(model.params_memory.data(), n * sizeof(float));
  r.bytes(optimizer.m().data(), optimizer.m().size() * sizeof(float));
  r.bytes(optimizer.v().data(), optimizer.v().size() * sizeof(float));
  std::vector<std::byte> extra_bytes(n_extra);
  r.bytes(extra_bytes.data(), n_extra);
  if (r.pos() + 8 != buf.size()) {
    throw DataError(tagged("train:checkpoint", path, " has trailing bytes"));
  }
  if (extra != nullptr) *extra = std::move(extra_bytes);
  return step;
}

}  // namespace hycc::train

// fuzz_text: the text users write: policy files (TOML), codec specs, gradient compressor specs,
// byte sizes ("64K", in policies and on command lines) and HYCC_LOG. The first byte picks the
// parser. Properties:
// - a bad text is an InvalidArgument, nothing else, and no memory error;
// - a policy that parses writes itself (to_toml) as a text that parses into the same policy,
//   which writes the same text again;
// - a spec that parses has a canonical spec that parses into the same canonical spec;
// - a byte size that parses is written (format_byte_size) as a text that parses to the same size.
#include <algorithm>
#include <string>

#include "common/byte_size.h"
#include "fuzz_target.h"
#include "hycc/codec.h"
#include "hycc/error.h"
#include "hycc/grad.h"
#include "hycc/policy.h"
#include "hycc/policy_engine.h"

namespace hycc::fuzz {
namespace {

enum Parser : uint8_t {
  kPolicy = 0,
  kCodecSpec = 1,
  kGradSpec = 2,
  kByteSize = 3,
  kLogSpec = 4,
  kParsers = 5
};

Bytes with_parser(Parser parser, const std::string& text) {
  Bytes b(1 + text.size());
  b[0] = parser;
  std::copy(text.begin(), text.end(), b.begin() + 1);
  return b;
}

void fuzz_policy(const std::string& text) {
  Policy policy;
  try {
    policy = Policy::parse_toml(text, "fuzz.toml");
  } catch (const InvalidArgument&) {
    return;
  }
  const std::string written = policy.to_toml();
  Policy again;
  try {
    again = Policy::parse_toml(written, "written.toml");
  } catch (const InvalidArgument& e) {
    fail(std::string("a parsed policy writes a text that does not parse: ") + e.what() +
         "\n--- written:\n" + written);
  }
  check(again.to_toml() == written, "a policy read back from its text writes another text:\n" +
                                        written + "\n--- then:\n" + again.to_toml());
}

void fuzz_codec_spec(const std::string& text) {
  std::string canonical;
  try {
    canonical = CodecConfig::parse(text).spec();
  } catch (const InvalidArgument&) {
    return;
  }
  std::string again;
  try {
    again = CodecConfig::parse(canonical).spec();
  } catch (const InvalidArgument& e) {
    fail("the canonical codec spec '" + canonical + "' does not parse: " + e.what());
  }
  check(again == canonical, "codec spec '" + canonical + "' reads back as '" + again + "'");
}

void fuzz_grad_spec(const std::string& text) {
  std::string canonical;
  try {
    canonical = GradCompressor(text).spec();
  } catch (const InvalidArgument&) {
    return;
  }
  std::string again;
  try {
    again = GradCompressor(canonical).spec();
  } catch (const InvalidArgument& e) {
    fail("the canonical compressor spec '" + canonical + "' does not parse: " + e.what());
  }
  check(again == canonical, "compressor spec '" + canonical + "' reads back as '" + again + "'");
}

void fuzz_byte_size(const std::string& text) {
  size_t bytes = 0;
  try {
    bytes = parse_byte_size(text, "fuzz");
  } catch (const InvalidArgument&) {
    return;
  }
  const std::string written = format_byte_size(bytes);
  size_t again = 0;
  try {
    again = parse_byte_size(written, "written");
  } catch (const InvalidArgument& e) {
    fail("the byte size " + std::to_string(bytes) + " is written as '" + written +
         "', which does not parse: " + e.what());
  }
  check(again == bytes, "byte size '" + text + "' = " + std::to_string(bytes) + " is written as '" +
                            written + "' = " + std::to_string(again));
}

void fuzz_log_spec(const std::string& text) {
  try {
    LogOptions::parse(text);
  } catch (const InvalidArgument&) {
  }
}

}  // namespace

std::vector<Bytes> seeds() {
  std::vector<Bytes> out;
  for (const std::string& name : Policy::preset_names()) {
    out.push_back(with_parser(kPolicy, Policy::preset(name).to_toml()));
  }
  out.push_back(with_parser(kPolicy,
                            "name = \"x\"\ndescription = \"a \\\"quoted\\\" one\"\n"
                            "[[rule]]\ndimension = \"dp\"\noperation = \"allreduce\"\n"
                            "min_bytes = 1024\ncompressor = \"ef+quant:bits=4\"\n"));
  for (const char* spec :
       {"none", "bf16", "fp16", "quant:bits=4,block=32,round=stochastic", "eb:abs=1e-4",
        "eb:rel=0.001", "zfp:rate=8", "zfp:accuracy=1e-5", "mpc:dim=2", "zstd:level=3"}) {
    out.push_back(with_parser(kCodecSpec, spec));
  }
  for (const char* spec : {"none", "ef+quant:bits=4", "ef2+zfp:rate=4", "ef+eb:rel=1e-3",
                           "powersgd:rank=8,min_compression=3,warm_start=off,seed=5,start=10",
                           "topk:ratio=0.05,ef=off", "topk:count=100", "sign:ef=on"}) {
    out.push_back(with_parser(kGradSpec, spec));
  }
  for (const char* size : {"0", "1024", "64K", "1m", "2G", "1099511627776", "1536K"}) {
    out.push_back(with_parser(kByteSize, size));
  }
  for (const char* log : {"off", "", "summary,calls", "decisions,json=/tmp/x.json", "warnings"}) {
    out.push_back(with_parser(kLogSpec, log));
  }
  return out;
}

}  // namespace hycc::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hycc::fuzz;
  Input input(data, size);
  const int parser = input.byte() % kParsers;
  const Bytes rest = input.rest();
  const std::string text(rest.begin(), rest.end());
  if (parser == kPolicy) {
    fuzz_policy(text);
  } else if (parser == kCodecSpec) {
    fuzz_codec_spec(text);
  } else if (parser == kGradSpec) {
    fuzz_grad_spec(text);
  } else if (parser == kByteSize) {
    fuzz_byte_size(text);
  } else {
    fuzz_log_spec(text);
  }
  return 0;
}

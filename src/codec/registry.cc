#include "codec/registry.h"

#include <array>

#include "hycc/error.h"

namespace hycc::codec {
namespace {

const std::array<const CodecEntry*, 9>& all_entries() {
  static const std::array<const CodecEntry*, 9> entries = {
      &none_entry(), &bf16_entry(), &fp16_entry(), &quant_entry(),   &eb_entry(),
      &zfp_entry(),  &mpc_entry(),  &zstd_entry(), &exphuff_entry(),
  };
  return entries;
}

}  // namespace

const CodecEntry* find_codec(std::string_view name) {
  if (name == "f16" || name == "half") name = "fp16";
  for (const CodecEntry* e : all_entries()) {
    if (e->name == name) return e;
  }
  return nullptr;
}

const CodecEntry* find_codec(CodecId id) {
  for (const CodecEntry* e : all_entries()) {
    if (e->id == id) return e;
  }
  return nullptr;
}

}  // namespace hycc::codec

namespace hycc {

CodecConfig CodecConfig::parse(std::string_view spec) {
  codec::SpecArgs args = codec::SpecArgs::parse(spec);
  const codec::CodecEntry* entry = codec::find_codec(args.name());
  if (entry == nullptr) {
    std::string names;
    for (const auto& n : codec_names()) names += (names.empty() ? "" : ", ") + n;
    throw InvalidArgument(tagged("codec", "unknown codec '", args.name(), "' in spec '", spec,
                                 "'; known codecs: ", names));
  }
  return CodecConfig(entry->from_spec(args));
}

std::vector<std::string> codec_names() {
  std::vector<std::string> names;
  for (const codec::CodecEntry* e : codec::all_entries()) names.emplace_back(e->name);
  return names;
}

std::string codec_help() {
  std::string help;
  for (const codec::CodecEntry* e : codec::all_entries()) {
    help += detail::concat("  ", e->name, e->help.empty() ? "" : ":", e->help, "\n");
  }
  return help;
}

}  // namespace hycc
